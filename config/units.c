/* SPDX-License-Identifier: MIT */
/*
 * Units: sizes ("4KiB"), durations ("1m30s"), percentages ("12.5%"), plain
 * counts ("32") and plain numbers ("2.5").
 *
 * Every parser takes the whole string or fails, without locale (strtod and
 * friends read "1,5" in some locales and skip leading blanks), and checks
 * every multiplication for overflow. Formatters print the exact value in a
 * form the parsers read back.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"

#define NS_PER_US 1000ULL
#define NS_PER_MS 1000000ULL
#define NS_PER_S  1000000000ULL
#define NS_PER_M  (60ULL * NS_PER_S)
#define NS_PER_H  (60ULL * NS_PER_M)
#define NS_PER_D  (24ULL * NS_PER_H)

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Reads decimal digits at *s into *out; -EINVAL without digits, -ERANGE on overflow. */
static int parse_uint(const char **s, uint64_t *out)
{
	const char *p = *s;
	uint64_t v = 0;

	if (!is_digit(*p))
		return -EINVAL;
	for (; is_digit(*p); p++) {
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p - '0', &v))
			return -ERANGE;
	}
	*s = p;
	*out = v;
	return 0;
}

static int size_multiplier(char c, uint64_t *mult)
{
	switch (c) {
	case 'k':
	case 'K':
		*mult = 1ULL << 10;
		return 0;
	case 'm':
	case 'M':
		*mult = 1ULL << 20;
		return 0;
	case 'g':
	case 'G':
		*mult = 1ULL << 30;
		return 0;
	case 't':
	case 'T':
		*mult = 1ULL << 40;
		return 0;
	default:
		return -EINVAL;
	}
}

int cfg_parse_uint(const char *s, uint64_t *out)
{
	uint64_t v;
	int r;

	if (!s)
		return -EINVAL;
	r = parse_uint(&s, &v);
	if (r < 0)
		return r;
	if (*s)
		return -EINVAL;
	*out = v;
	return 0;
}

int cfg_parse_size(const char *s, uint64_t *out)
{
	uint64_t v, mult = 1;
	int r;

	if (!s)
		return -EINVAL;
	r = parse_uint(&s, &v);
	if (r < 0)
		return r;

	if (*s == 'B' && s[1] == '\0') {
		s++;
	} else if (*s) {
		char unit = *s;

		if (size_multiplier(unit, &mult) < 0)
			return -EINVAL;
		s++;
		/*
		 * "k", "K" or "KiB" spelt as IEC 80000-13 does; "KB" is rejected:
		 * 1000 or 1024 is anyone's guess. So are "kib", "KIB", "kiB": one
		 * spelling per unit, so that a grep for "MiB" finds them all.
		 */
		if (unit >= 'A' && unit <= 'Z' && s[0] == 'i' && s[1] == 'B')
			s += 2;
	}
	if (*s)
		return -EINVAL;
	if (__builtin_mul_overflow(v, mult, &v))
		return -ERANGE;
	*out = v;
	return 0;
}

static int duration_unit(const char *u, size_t n, uint64_t *mult)
{
	static const struct {
		const char *name;
		uint64_t ns;
	} units[] = {
		{"ns", 1},	 {"us", NS_PER_US}, {"ms", NS_PER_MS}, {"s", NS_PER_S},
		{"m", NS_PER_M}, {"h", NS_PER_H},   {"d", NS_PER_D},
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strlen(units[i].name) == n && memcmp(units[i].name, u, n) == 0) {
			*mult = units[i].ns;
			return 0;
		}
	}
	return -EINVAL;
}

int cfg_parse_duration(const char *s, uint64_t *out_ns)
{
	uint64_t total = 0, prev = UINT64_MAX;
	bool misordered = false;
	int r;

	if (!s || !*s)
		return -EINVAL;
	while (*s) {
		uint64_t whole, mult, v;
		unsigned __int128 frac = 0, scale = 1;
		const char *unit;

		r = parse_uint(&s, &whole);
		if (r < 0)
			return r;
		if (*s == '.') {
			s++;
			if (!is_digit(*s))
				return -EINVAL;
			/* Digits past nanosecond resolution are read and dropped. */
			for (; is_digit(*s); s++) {
				if (scale < 1000000000000000000ULL) {
					frac = frac * 10 + (unsigned)(*s - '0');
					scale *= 10;
				}
			}
		}
		unit = s;
		while ((*s >= 'a' && *s <= 'z'))
			s++;
		if (s == unit || duration_unit(unit, (size_t)(s - unit), &mult) < 0)
			return -EINVAL;
		/* "1s1s", "30s1m": each unit once, largest first, as we print them. */
		if (mult >= prev)
			misordered = true;
		prev = mult;
		if (misordered)
			continue;
		if (__builtin_mul_overflow(whole, mult, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(frac * mult / scale), &v) ||
		    __builtin_add_overflow(total, v, &total))
			return -ERANGE;
	}
	if (misordered)
		return -EDOM;
	*out_ns = total;
	return 0;
}

/*
 * A decimal at *s, "12" or "12.5" (no sign, no exponent), as the exact
 * quotient *mant / *div, *div being @scale times a power of ten: one division
 * of two exact integers makes the double ("12.5%" is exactly 0.125). At most
 * 18 digits (-ERANGE); -EINVAL without a digit first or after the point.
 */
static int parse_decimal(const char **s, uint64_t scale, uint64_t *mant, uint64_t *div)
{
	const char *p = *s;
	unsigned digits = 0;
	bool seen_dot = false;

	*mant = 0;
	*div = scale;
	if (!is_digit(*p))
		return -EINVAL;
	for (; is_digit(*p) || (*p == '.' && !seen_dot); p++) {
		if (*p == '.') {
			seen_dot = true;
			if (!is_digit(p[1]))
				return -EINVAL;
			continue;
		}
		if (++digits > 18)
			return -ERANGE;
		*mant = *mant * 10 + (uint64_t)(*p - '0');
		if (seen_dot)
			*div *= 10;
	}
	*s = p;
	return 0;
}

int cfg_parse_percent(const char *s, double *out)
{
	uint64_t mant, div;
	int r;

	if (!s)
		return -EINVAL;
	r = parse_decimal(&s, 100, &mant, &div);
	if (r < 0)
		return r;
	if (*s != '%' || s[1] != '\0')
		return -EINVAL;
	if (mant > div)
		return -ERANGE;
	*out = (double)mant / (double)div;
	return 0;
}

int cfg_parse_number(const char *s, double *out)
{
	uint64_t mant, div;
	int r;

	if (!s)
		return -EINVAL;
	r = parse_decimal(&s, 1, &mant, &div);
	if (r < 0)
		return r;
	if (*s != '\0')
		return -EINVAL;
	*out = (double)mant / (double)div;
	return 0;
}

/*
 * @shown (@value as written, before @suffix) with the fewest decimals that
 * @parse reads back to the very same @value: "12.5%", not
 * "12.500000000000002%". A value that came from the parser always has such a
 * form, the one it was written in.
 */
static void format_shortest(double value, double shown, const char *suffix,
			    int (*parse)(const char *, double *), char *buf, size_t len)
{
	for (int decimals = 0; decimals <= 16; decimals++) {
		double back;

		snprintf(buf, len, "%.*f%s", decimals, shown, suffix);
		if (parse(buf, &back) == 0 && back == value)
			return;
	}
	snprintf(buf, len, "%.16f%s", shown, suffix);
}

void cfg_format_percent(double fraction, char *buf, size_t len)
{
	double pct = fraction * 100.0;

	if (!buf || !len)
		return;
	if (!(fraction >= 0.0 && fraction <= 1.0)) {
		snprintf(buf, len, "%g%%", pct);
		return;
	}
	/* fraction * 100 is rarely exact: what reads back to @fraction itself. */
	format_shortest(fraction, pct, "%", cfg_parse_percent, buf, len);
}

void cfg_format_number(double v, char *buf, size_t len)
{
	if (!buf || !len)
		return;
	if (!(v >= 0.0 && v < 1e18)) {
		snprintf(buf, len, "%g", v);
		return;
	}
	format_shortest(v, v, "", cfg_parse_number, buf, len);
}

void cfg_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const names[] = {"TiB", "GiB", "MiB", "KiB"};
	static const unsigned shifts[] = {40, 30, 20, 10};

	if (!buf || !len)
		return;
	for (size_t i = 0; bytes && i < sizeof(shifts) / sizeof(shifts[0]); i++) {
		uint64_t unit = 1ULL << shifts[i];

		if (bytes % unit == 0) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(bytes / unit), names[i]);
			return;
		}
	}
	snprintf(buf, len, "%llu", (unsigned long long)bytes);
}

void cfg_format_bytes(double bytes, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	unsigned u = 0;

	while (bytes >= 1024 && u < 4) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

void cfg_format_duration(uint64_t ns, char *buf, size_t len)
{
	static const struct {
		const char *name;
		uint64_t ns;
	} units[] = {
		{"h", NS_PER_H},   {"m", NS_PER_M},   {"s", NS_PER_S},
		{"ms", NS_PER_MS}, {"us", NS_PER_US}, {"ns", 1},
	};
	size_t used = 0;

	if (!buf || !len)
		return;
	if (ns == 0) {
		snprintf(buf, len, "0s");
		return;
	}
	buf[0] = '\0';
	/* Exact compound form: 1.5s prints as "1s500ms", which reads back the same. */
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]) && used < len; i++) {
		uint64_t n = ns / units[i].ns;
		int w;

		if (!n)
			continue;
		ns %= units[i].ns;
		w = snprintf(buf + used, len - used, "%llu%s", (unsigned long long)n,
			     units[i].name);
		if (w < 0)
			return;
		used += (size_t)w;
	}
}
