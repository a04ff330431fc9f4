/* SPDX-License-Identifier: MIT */
/*
 * expose — pure renderers: registry snapshot in, bytes out.
 *
 * The text format follows Prometheus exposition format 0.0.4 as client_golang's
 * expfmt writes it, so that our pages look like every other exporter's and
 * compare byte for byte against golden files — with one exception: le values
 * are OpenMetrics' canonical numbers ("1.0", not "1"). Prometheus 2.x does not
 * normalise le, and takes "1.0" from OpenMetrics and protobuf scrapes: a text
 * scrape with "1" would start different series whenever negotiation changes.
 *
 * The OpenMetrics renderer shares the series and escaping code; the protobuf
 * renderer is in protobuf.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/expose/expose.h"

/* ---- floats ---- */

/*
 * Go's strconv.FormatFloat(v, 'g', -1, 64), as client_golang writes values, so
 * our pages read like theirs. Shortest digits: the fewest (1..17) whose "%.*e"
 * reads back as @v; at an exact power of two this may give one digit more than
 * Go, for no value we export. Layout as ftoa.go's shortest %g: with exponent x,
 * %e (two-digit exponent at least) when x < -4 || x >= 6, else %f.
 */
/* Lay out significant digits @digits[0..nd) (no trailing zeros, nd >= 1) with
 * decimal exponent @x (v = d1.d2...dn x 10^x) as Go's shortest %g does. */
static void layout_digits(int neg, const char *digits, int nd, int x, char *out, size_t len)
{
	char res[48];
	int dp = x + 1, i, pos = 0;

	if (neg)
		res[pos++] = '-';
	if (x < -4 || x >= 6) {
		int ax = x < 0 ? -x : x;

		res[pos++] = digits[0];
		if (nd > 1) {
			res[pos++] = '.';
			for (i = 1; i < nd; i++)
				res[pos++] = digits[i];
		}
		res[pos++] = 'e';
		res[pos++] = x < 0 ? '-' : '+';
		if (ax >= 100)
			res[pos++] = (char)('0' + ax / 100);
		res[pos++] = (char)('0' + ax / 10 % 10);
		res[pos++] = (char)('0' + ax % 10);
	} else {
		if (dp > 0) {
			for (i = 0; i < dp; i++)
				res[pos++] = i < nd ? digits[i] : '0';
		} else {
			res[pos++] = '0';
		}
		if (nd > dp) {
			res[pos++] = '.';
			for (i = dp; i < nd; i++)
				res[pos++] = i >= 0 ? digits[i] : '0';
		}
	}
	if (len) {
		if ((size_t)pos >= len)
			pos = (int)len - 1;
		memcpy(out, res, (size_t)pos);
		out[pos] = '\0';
	}
}

/*
 * The fast path: @v (finite, > 0) is m x 10^-e exactly as a double division
 * rounds it, for an integer m < 10^15 and e in {0, 9} — every integer below
 * 10^15 and every whole number of nanoseconds in seconds (classic bounds, sums).
 * Then the decimal m x 10^-e read back gives @v (the division is correctly
 * rounded, so @v is the double nearest to it), and no shorter decimal does: two
 * different decimals of at most 15 significant digits never round to the same
 * double (DBL_DIG), so the shortest round trip is m's digits. 0 when @v is not
 * of that form (the slow path decides).
 */
static int format_exact_decimal(double v, int neg, char *out, size_t len)
{
	static const double scale[] = {1, 1e9};
	char tmp[24], *digits;
	unsigned k;

	for (k = 0; k < sizeof(scale) / sizeof(scale[0]); k++) {
		double t = v * scale[k];
		uint64_t mant;
		int nd = 0, x, e = k ? 9 : 0;

		if (!(t < 1e15) || t < 0.5)
			continue;
		mant = (uint64_t)(t + 0.5);
		if ((double)mant / scale[k] != v)
			continue;
		/* digits of mant, most significant first */
		digits = tmp + sizeof(tmp);
		while (mant) {
			*--digits = (char)('0' + mant % 10);
			mant /= 10;
			nd++;
		}
		x = nd - 1 - e;
		while (nd > 1 && digits[nd - 1] == '0')
			nd--;
		layout_digits(neg, digits, nd, x, out, len);
		return 1;
	}
	return 0;
}

/* The general case: the fewest digits p whose correctly rounded "%.*e" reads back. */
static void format_shortest(double v, char *out, size_t len)
{
	char tmp[40], digits[20];
	int p, nd = 0, x, neg = 0;
	const char *c;
	char *end;

	for (p = 1; p <= 17; p++) {
		snprintf(tmp, sizeof(tmp), "%.*e", p - 1, v);
		if (strtod(tmp, NULL) == v)
			break;
	}

	/* tmp is "[-]d[.ddd]e[+-]xx" */
	c = tmp;
	if (*c == '-') {
		neg = 1;
		c++;
	}
	for (; *c && *c != 'e'; c++)
		if (*c >= '0' && *c <= '9' && nd < (int)sizeof(digits))
			digits[nd++] = *c;
	x = (int)strtol(c + 1, &end, 10);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	layout_digits(neg, digits, nd, x, out, len);
}

void expose_format_double(double v, char *out, size_t len)
{
	if (isnan(v)) {
		snprintf(out, len, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(out, len, "%s", v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (v == 0) {
		snprintf(out, len, "0");
		return;
	}
	if (format_exact_decimal(fabs(v), v < 0, out, len))
		return;
	format_shortest(v, out, len);
}

void expose_format_canonical(double v, char *out, size_t len)
{
	expose_format_double(v, out, len);
	if (isfinite(v) && !strpbrk(out, ".e"))
		strncat(out, ".0", len - strlen(out) - 1);
}

/* ---- text format 0.0.4 ---- */

/* @s with \\ and newline escaped, and with @quote '"' too. The runs between
 * escapes are found with strcspn(), which scans many bytes at a time: help texts
 * are long, and a scrape writes every family's. */
static void put_escaped(struct buf *b, const char *s, int quote)
{
	const char *special = quote ? "\\\n\"" : "\\\n";

	for (;;) {
		size_t run = strcspn(s, special);

		buf_append(b, s, run);
		s += run;
		if (!*s)
			return;
		buf_append(b, *s == '\n' ? "\\n" : *s == '"' ? "\\\"" : "\\\\", 2);
		s++;
	}
}

/* " <v>\n", without printf. */
static void put_u64_line(struct buf *b, uint64_t v)
{
	char tmp[24], *p = tmp + sizeof(tmp);

	*--p = '\n';
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	*--p = ' ';
	buf_append(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

static void put_double(struct buf *b, double v)
{
	char tmp[32];

	expose_format_double(v, tmp, sizeof(tmp));
	buf_puts(b, tmp);
}

/* The le label values of a histogram family, formatted once per family. */
struct le_labels {
	char s[HIST_MAX_BOUNDS + 1][32]; /* bounds, then +Inf */
	unsigned char len[HIST_MAX_BOUNDS + 1];
};

static void le_labels_init(struct le_labels *le, const struct snap_family *f)
{
	unsigned i, n = f->n_bounds < HIST_MAX_BOUNDS ? f->n_bounds : HIST_MAX_BOUNDS;

	for (i = 0; i <= n; i++) {
		expose_format_canonical(i < n ? f->bounds[i] : INFINITY, le->s[i],
					sizeof(le->s[i]));
		le->len[i] = (unsigned char)strlen(le->s[i]);
	}
}

/* name[suffix]{labels[,le="..."]}; @le: the label value, or NULL for none. */
static void put_series_name(struct buf *b, const struct snap_family *f, const struct snap_series *s,
			    const char *suffix, const char *le, size_t le_len)
{
	unsigned i;

	buf_puts(b, f->name);
	buf_puts(b, suffix);
	if (!f->n_labels && !s->n_extra && !le)
		return;
	buf_append(b, "{", 1);
	for (i = 0; i < f->n_labels + s->n_extra; i++) {
		bool own = i < f->n_labels;

		if (i)
			buf_append(b, ",", 1);
		buf_puts(b, own ? f->labels[i] : s->extra[2 * (i - f->n_labels)]);
		buf_append(b, "=\"", 2);
		put_escaped(b, own ? s->values[i] : s->extra[2 * (i - f->n_labels) + 1], 1);
		buf_append(b, "\"", 1);
	}
	if (le) {
		if (f->n_labels + s->n_extra)
			buf_append(b, ",", 1);
		buf_append(b, "le=\"", 4);
		buf_append(b, le, le_len);
		buf_append(b, "\"", 1);
	}
	buf_append(b, "}", 1);
}

static const char *type_name(enum metric_type t)
{
	switch (t) {
	case METRIC_COUNTER:
		return "counter";
	case METRIC_GAUGE:
		return "gauge";
	case METRIC_HISTOGRAM:
		return "histogram";
	}
	return "untyped";
}

/* Classic buckets, then _sum and _count (text) or _count and _sum (OpenMetrics).
 * The family has at most HIST_MAX_BOUNDS bounds (the registry's limit). */
static void put_histogram(struct buf *b, const struct snap_family *f, const struct snap_series *s,
			  int om, const struct le_labels *le)
{
	unsigned i, n = f->n_bounds < HIST_MAX_BOUNDS ? f->n_bounds : HIST_MAX_BOUNDS;

	for (i = 0; i < n; i++) {
		put_series_name(b, f, s, "_bucket", le->s[i], le->len[i]);
		put_u64_line(b, s->cumulative[i]);
	}
	put_series_name(b, f, s, "_bucket", le->s[n], le->len[n]);
	put_u64_line(b, s->count);
	if (om) {
		put_series_name(b, f, s, "_count", NULL, 0);
		put_u64_line(b, s->count);
	}
	put_series_name(b, f, s, "_sum", NULL, 0);
	buf_append(b, " ", 1);
	put_double(b, s->sum);
	buf_append(b, "\n", 1);
	if (!om) {
		put_series_name(b, f, s, "_count", NULL, 0);
		put_u64_line(b, s->count);
	}
}

/* Counter, gauge or unknown: one sample, under the family's own name. */
static void put_value(struct buf *b, const struct snap_family *f, const struct snap_series *s)
{
	put_series_name(b, f, s, "", NULL, 0);
	buf_append(b, " ", 1);
	put_double(b, s->value);
	buf_append(b, "\n", 1);
}

/* One series' lines, in text (@om 0) or OpenMetrics (@om 1). @le: the family's
 * le labels, or NULL to format them here. */
static void put_series(struct buf *b, const struct snap_family *f, const struct snap_series *s,
		       int om, const struct le_labels *le)
{
	struct le_labels own;

	if (f->type != METRIC_HISTOGRAM) {
		put_value(b, f, s);
		return;
	}
	if (!le) {
		le_labels_init(&own, f);
		le = &own;
	}
	put_histogram(b, f, s, om, le);
}

void expose_text_head(const struct snap_family *f, struct buf *out)
{
	if (f->help && *f->help) {
		buf_append(out, "# HELP ", 7);
		buf_puts(out, f->name);
		buf_append(out, " ", 1);
		put_escaped(out, f->help, 0);
		buf_append(out, "\n", 1);
	}
	buf_append(out, "# TYPE ", 7);
	buf_puts(out, f->name);
	buf_append(out, " ", 1);
	buf_puts(out, type_name(f->type));
	buf_append(out, "\n", 1);
}

void expose_text_series(const struct snap_family *f, const struct snap_series *s, struct buf *out)
{
	put_series(out, f, s, 0, NULL);
}

/* A whole page: each family's head and series; @om selects OpenMetrics. */
static int put_page(const struct metrics_snapshot *snap, struct buf *out, int om)
{
	struct le_labels le;
	unsigned i, j;

	for (i = 0; snap && i < snap->n_families; i++) {
		const struct snap_family *f = &snap->families[i];

		if (om)
			expose_openmetrics_head(f, out);
		else
			expose_text_head(f, out);
		if (f->type == METRIC_HISTOGRAM)
			le_labels_init(&le, f);
		for (j = 0; j < f->n_series; j++)
			put_series(out, f, &f->series[j], om, &le);
	}
	if (om)
		expose_openmetrics_tail(out);
	return out->oom ? -ENOMEM : 0;
}

int expose_text(const struct metrics_snapshot *snap, struct buf *out)
{
	return put_page(snap, out, 0);
}

/* ---- OpenMetrics 1.0 ---- */

static int has_suffix(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len > n && memcmp(s + len - n, suffix, n) == 0;
}

void expose_openmetrics_head(const struct snap_family *f, struct buf *out)
{
	/* Each unit, and the name suffix that declares it. */
	static const char *const units[][2] = {{"seconds", "_seconds"}, {"bytes", "_bytes"}};
	unsigned j;

	{
		size_t flen = strlen(f->name); /* the family name: f->name[0..flen) */
		const char *type = type_name(f->type);

		if (strcmp(type, "untyped") == 0) /* no such type in OpenMetrics */
			type = "unknown";
		if (f->type == METRIC_COUNTER) {
			if (has_suffix(f->name, flen, "_total"))
				flen -= strlen("_total");
			else
				type = "unknown";
		}
		buf_append(out, "# TYPE ", 7);
		buf_append(out, f->name, flen);
		buf_append(out, " ", 1);
		buf_puts(out, type);
		buf_append(out, "\n", 1);
		for (j = 0; j < sizeof(units) / sizeof(units[0]); j++) {
			if (!has_suffix(f->name, flen, units[j][1]))
				continue;
			buf_append(out, "# UNIT ", 7);
			buf_append(out, f->name, flen);
			buf_append(out, " ", 1);
			buf_puts(out, units[j][0]);
			buf_append(out, "\n", 1);
		}
		if (f->help && *f->help) {
			buf_puts(out, "# HELP ");
			buf_append(out, f->name, flen);
			buf_append(out, " ", 1);
			put_escaped(out, f->help, 1);
			buf_append(out, "\n", 1);
		}
	}
}

void expose_openmetrics_series(const struct snap_family *f, const struct snap_series *s,
			       struct buf *out)
{
	put_series(out, f, s, 1, NULL);
}

void expose_openmetrics_tail(struct buf *out)
{
	buf_append(out, "# EOF\n", 6);
}

int expose_openmetrics(const struct metrics_snapshot *snap, struct buf *out)
{
	return put_page(snap, out, 1);
}
