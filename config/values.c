/* SPDX-License-Identifier: MIT */
/*
 * values — one scalar read as a boolean, a size, a rate, a count, a percentage,
 * a number, a duration, one of a list of names, a name or a signed number, with the
 * message for each way it can be wrong.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_int.h"

/* ---- typed values ----------------------------------------------------------- */

/* Whether @n carries one of YAML's tags for a number or a boolean ("!!int"). */
static bool tagged_scalar_type(const yaml_node_t *n)
{
	const char *tag = (const char *)n->tag;

	return tag && (!strcmp(tag, YAML_INT_TAG) || !strcmp(tag, YAML_FLOAT_TAG) ||
		       !strcmp(tag, YAML_BOOL_TAG));
}

/*
 * The text of @n, the value of @key read as a number, a size, a duration, a
 * percentage or a boolean (@what: "a whole number", ...): as cfg_get_scalar(), and
 * not a string in YAML's eyes. Quoted or tagged !!str, YAML makes it one, and
 * where the schema expects a number a string is an error, whatever it holds
 * (as a quoted "true" is); the message says how to write it. YAML's own tags
 * decide as YAML says: !!int "4" is a number. The one check of every
 * number-like type.
 */
int cfg_get_plain(struct parser *p, const yaml_node_t *n, const char *key, const char *what,
		  const char **out)
{
	int r = cfg_get_scalar(p, n, key, what, out);

	if (r < 0)
		return r;
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE && !tagged_scalar_type(n))
		return fail_at(p, n,
			       "'%s' must be %s, got the string '%s' (quoted): write it without "
			       "quotes",
			       key, what, *out);
	if (cfg_node_tagged_str(p, n))
		return fail_at(p, n,
			       "'%s' must be %s, got the string '%s' (tagged as a string): write "
			       "it without the tag",
			       key, what, *out);
	return 0;
}

int cfg_get_bool(struct parser *p, const yaml_node_t *n, const char *key, bool *out)
{
	const char *s = NULL;
	int r;

	r = cfg_get_plain(p, n, key, "true or false", &s);
	if (r < 0)
		return r;
	/* Only the two spellings everyone reads the same way: no yes/no/on/off. */
	if (cfg_scalar_is(n, "true"))
		*out = true;
	else if (cfg_scalar_is(n, "false"))
		*out = false;
	else
		return fail_at(p, n, "'%s' must be true or false, got '%s'", key, s);
	return 0;
}

/* "64MB", "1kb" in @s[0..len): a number, then a k/m/g/t and a B; in @unit the two letters. */
static bool size_is_ambiguous(const char *s, size_t len, char unit[3])
{
	if (len >= 3 && (s[len - 1] == 'B' || s[len - 1] == 'b') &&
	    strchr("kKmMgGtT", s[len - 2]) && s[len - 3] >= '0' && s[len - 3] <= '9') {
		unit[0] = s[len - 2];
		unit[1] = s[len - 1];
		unit[2] = '\0';
		return true;
	}
	return false;
}

/*
 * "4kib", "64MIB" in @s[0..n): a number, then k/m/g/t and "ib" in any case but
 * the IEC one; in @fixed the IEC spelling ("4KiB").
 */
static bool size_is_miscased(const char *s, size_t n, char *fixed, size_t len)
{
	size_t digits = strspn(s, "0123456789");

	if (!digits || n != digits + 3 || !strchr("kKmMgGtT", s[digits]) ||
	    (s[digits + 1] != 'i' && s[digits + 1] != 'I') ||
	    (s[digits + 2] != 'b' && s[digits + 2] != 'B'))
		return false;
	snprintf(fixed, len, "%.*s%ciB", (int)digits, s, s[digits] & ~0x20);
	return true;
}

/* How the messages of cfg_size_error() name a size-like value. */
struct size_words {
	const char *noun;      /* "invalid <noun> '64MB' for ...": "size", "rate" */
	const char *suffix;    /* after the number and unit: "" or "/s" */
	const char *per;       /* after "a number of bytes": "" or " per second" */
	const char *hint_noun; /* the noun when no unit is to blame */
	const char *hint;      /* then, what was expected */
};

const struct size_words words_size = {
	.noun = "size",
	.suffix = "",
	.per = "",
	.hint_noun = "size",
	.hint = "expected bytes or a number with a unit (k, m, g, t, KiB, MiB, GiB, TiB)",
};
static const struct size_words words_rate = {
	.noun = "rate",
	.suffix = "/s",
	.per = " per second",
	.hint_noun = "rate",
	.hint = "expected a size per second, as in 32MiB/s, or 0 for no limit",
};
/* 'keep_free' that is not a percentage: a size, or what the user meant. */
const struct size_words words_keep_free = {
	.noun = "size",
	.suffix = "",
	.per = "",
	.hint_noun = "value",
	.hint = "expected a size, as in 2GiB, or a percentage of the filesystem, as in 5%",
};

/* The length of @s without @suffix where it ends in it: 4 for "32MB/s" and "/s". */
static size_t len_without(const char *s, const char *suffix)
{
	size_t len = strlen(s), sl = strlen(suffix);

	return len >= sl && !strcmp(s + len - sl, suffix) ? len - sl : len;
}

/*
 * The message for cfg_parse_size() failing with @r on @s, less the suffix of
 * @w where @s ends in it: @s is the value of @key, or a size of the block size
 * range @range (NULL when none). Every value is quoted in the format itself,
 * so that a long one is shortened there (elide.c), not the reason.
 */
int cfg_size_error(struct parser *p, const yaml_node_t *n, const char *key, const char *range,
		   const char *s, int r, const struct size_words *w)
{
	size_t len = len_without(s, w->suffix);
	const char *noun = w->noun;
	char unit[3], fixed[64], why[256];

	if (r == -ERANGE) {
		snprintf(why, sizeof(why), "too large");
	} else if (size_is_ambiguous(s, len, unit)) {
		snprintf(why, sizeof(why),
			 "'%s' is ambiguous, write '%ciB%s' (binary, 1024-based) or a number of "
			 "bytes%s",
			 unit, unit[0] & ~0x20, w->suffix, w->per);
	} else if (size_is_miscased(s, len, fixed, sizeof(fixed))) {
		snprintf(why, sizeof(why),
			 "write '%s%s' (binary units are KiB, MiB, GiB and TiB, or k, m, g and t)",
			 fixed, w->suffix);
	} else {
		noun = w->hint_noun;
		snprintf(why, sizeof(why), "%s", w->hint);
	}
	if (range)
		return fail_at(p, n, "invalid %s '%s' for '%s' range '%s': %s", noun, s, key, range,
			       why);
	return fail_at(p, n, "invalid %s '%s' for '%s': %s", noun, s, key, why);
}

/* A size; @w names it in messages (&words_size but for 'keep_free'). */
int cfg_get_size(struct parser *p, const yaml_node_t *n, const char *key,
		 const struct size_words *w, uint64_t *out)
{
	const char *s = NULL;
	int r;

	r = cfg_get_plain(p, n, key, "a size", &s);
	if (r < 0)
		return r;
	r = cfg_parse_size(s, out);
	return r < 0 ? cfg_size_error(p, n, key, NULL, s, r, w) : 0;
}

/* A size per second: "32MiB/s", or a size alone ("32MiB", "0"). */
int cfg_get_rate(struct parser *p, const yaml_node_t *n, const char *key, uint64_t *out)
{
	const char *s = NULL;
	char *num;
	int r;

	r = cfg_get_plain(p, n, key, "a size per second", &s);
	if (r < 0)
		return r;
	num = strndup(s, len_without(s, words_rate.suffix));
	if (!num)
		return -ENOMEM;
	r = cfg_parse_size(num, out);
	free(num);
	return r < 0 ? cfg_size_error(p, n, key, NULL, s, r, &words_rate) : 0;
}

/* A count: plain decimal digits, as "iodepth: 32". */
int cfg_get_uint(struct parser *p, const yaml_node_t *n, const char *key, uint64_t *out)
{
	const char *s = NULL, *q;
	int r;

	r = cfg_get_plain(p, n, key, "a whole number", &s);
	if (r < 0)
		return r;
	r = cfg_parse_uint(s, out);
	if (r == -ERANGE)
		return fail_at(p, n, "invalid number '%s' for '%s': too large", s, key);
	if (r == 0)
		return 0;
	if (s[0] == '-' || s[0] == '+')
		return fail_at(p, n,
			       "invalid number '%s' for '%s': write a whole number without "
			       "a sign, as in 32",
			       s, key);
	for (q = s; *q >= '0' && *q <= '9'; q++)
		;
	if (q > s && *q == '.')
		return fail_at(p, n,
			       "invalid number '%s' for '%s': must be a whole number, not a "
			       "fraction",
			       s, key);
	if (q > s && strspn(q, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == strlen(q))
		return fail_at(p, n,
			       "invalid number '%s' for '%s': write a plain number, without "
			       "a unit",
			       s, key);
	return fail_at(p, n, "invalid number '%s' for '%s': expected a whole number, as in 32", s,
		       key);
}

/* As cfg_check_range(), for counts: printed as plain numbers. */
int cfg_check_count(struct parser *p, const yaml_node_t *n, const char *key, uint64_t v,
		    uint64_t lo, uint64_t hi)
{
	if (v >= lo && v <= hi)
		return 0;
	return fail_at(p, n, "'%s' must be between %llu and %llu, got %llu", key,
		       (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)v);
}

/* A percentage from 0% to @max (a fraction); @example ("70%") is for the message. */
int cfg_get_percent(struct parser *p, const yaml_node_t *n, const char *key, double max,
		    const char *example, double *out)
{
	char max_s[32];
	const char *s = NULL;
	int r;

	r = cfg_get_plain(p, n, key, "a percentage", &s);
	if (r < 0)
		return r;
	r = cfg_parse_percent(s, out);
	if (r == 0 && *out > max)
		r = -ERANGE;
	if (r == -ERANGE) {
		cfg_format_percent(max, max_s, sizeof(max_s));
		return fail_at(p, n, "invalid percentage '%s' for '%s': must be between 0%% and %s",
			       s, key, max_s);
	}
	if (r < 0)
		return fail_at(p, n,
			       "invalid percentage '%s' for '%s': expected a number and %%, "
			       "as in %s or 12.5%%",
			       s, key, example);
	return 0;
}

/* A plain number, as "slow_factor: 2.5". */
int cfg_get_number(struct parser *p, const yaml_node_t *n, const char *key, double *out)
{
	const char *s = NULL;
	int r;

	r = cfg_get_plain(p, n, key, "a number", &s);
	if (r < 0)
		return r;
	r = cfg_parse_number(s, out);
	if (r == -ERANGE)
		return fail_at(p, n, "invalid number '%s' for '%s': too many digits", s, key);
	if (r < 0)
		return fail_at(p, n,
			       "invalid number '%s' for '%s': expected a plain number, as in 4 or "
			       "2.5",
			       s, key);
	return 0;
}

int cfg_get_duration(struct parser *p, const yaml_node_t *n, const char *key, uint64_t *out)
{
	const char *s = NULL;
	bool number = true;
	int r;

	r = cfg_get_plain(p, n, key, "a duration", &s);
	if (r < 0)
		return r;
	r = cfg_parse_duration(s, out);
	if (r == -ERANGE)
		return fail_at(p, n, "invalid duration '%s' for '%s': too large", s, key);
	if (r == -EDOM)
		return fail_at(p, n,
			       "invalid duration '%s' for '%s': write each unit once, largest "
			       "first, as in 1h30m or 1s500ms",
			       s, key);
	if (r < 0) {
		for (const char *q = s; *q; q++)
			if (!((*q >= '0' && *q <= '9') || *q == '.'))
				number = false;
		return fail_at(p, n, "invalid duration '%s' for '%s': %s", s, key,
			       number ? "missing unit (ns, us, ms, s, m, h, d)"
				      : "expected a number and a unit, as in 500ms, 10s or 1m30s "
					"(units: ns, us, ms, s, m, h, d)");
	}
	return 0;
}

int cfg_check_range(struct parser *p, const yaml_node_t *n, const char *key, uint64_t v,
		    uint64_t lo, uint64_t hi, bool is_duration)
{
	char a[32], b[32], c[32];
	void (*fmt)(uint64_t, char *, size_t) = is_duration ? cfg_format_duration : cfg_format_size;

	if (v >= lo && v <= hi)
		return 0;
	fmt(lo, a, sizeof(a));
	fmt(hi, b, sizeof(b));
	fmt(v, c, sizeof(c));
	return fail_at(p, n, "'%s' must be between %s and %s, got %s", key, a, b, c);
}

/* One of @names (NULL-terminated); @expect is the list for the message. */
int cfg_get_enum(struct parser *p, const yaml_node_t *n, const char *key, const char *const *names,
		 const char *expect, unsigned *out)
{
	const char *s = NULL;
	int r;

	r = cfg_get_scalar(p, n, key, "a string", &s);
	if (r < 0)
		return r;
	for (unsigned i = 0; names[i]; i++) {
		if (cfg_scalar_is(n, names[i])) {
			*out = i;
			return 0;
		}
	}
	return fail_at(p, n, "invalid value '%s' for '%s': expected %s", s, key, expect);
}

static bool name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n >= CFG_NAME_MAX)
		return false;
	for (; *s; s++) {
		char c = *s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

int cfg_get_name(struct parser *p, const yaml_node_t *n, const char *what, char *out)
{
	const char *s = NULL;
	int r;

	r = cfg_get_scalar(p, n, "name", "a string", &s);
	if (r < 0)
		return r;
	if (!name_valid(s))
		return fail_at(
			p, n, "invalid %s name '%s': use 1 to %d characters from A-Z a-z 0-9 _ . -",
			what, s, CFG_NAME_MAX - 1);
	strcpy(out, s);
	return 0;
}

/* ---- signed numbers ----------------------------------------------------------- */

/* A signed whole number, as "native_histogram_schema: -2", within [lo, hi]. */
int cfg_get_int(struct parser *p, const yaml_node_t *n, const char *key, long lo, long hi, int *out)
{
	const char *s = NULL;
	char *end;
	long v;
	int r;

	r = cfg_get_plain(p, n, key, "a whole number", &s);
	if (r < 0)
		return r;
	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || !((s[0] >= '0' && s[0] <= '9') || s[0] == '-' || s[0] == '+'))
		return fail_at(p, n,
			       "invalid number '%s' for '%s': expected a whole number, as in %ld",
			       s, key, hi);
	if (errno == ERANGE || v < lo || v > hi)
		return fail_at(p, n, "'%s' must be between %ld and %ld, got %s", key, lo, hi, s);
	*out = (int)v;
	return 0;
}
