/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for daemon/expose and daemon/protobuf: float formatting against Go's
 * strconv output, and one registry rendered in each format and compared byte for
 * byte with the golden files:
 *
 *   tests/golden/text.prom        text 0.0.4
 *   tests/golden/openmetrics.txt  OpenMetrics 1.0
 *   tests/golden/protobuf.bin     delimited MetricFamily protobuf, native histograms
 *   tests/golden/protobuf.txt     protobuf.bin decoded by the decoder below, for review
 *
 * The registry is filled through the real metrics and hist code with a fixed
 * sequence of values (no clock, no engine), so the pages are reproducible. The
 * protobuf bytes are also decoded back and compared field by field with the
 * snapshot they came from, and the encoder is checked against a byte string
 * Prometheus 2.42 is known to ingest (test_protobuf_known_vector).
 *
 * To regenerate the golden files after an intended change in the output:
 *
 *     UPDATE_GOLDEN=1 ./test_expose
 *
 * then inspect the diff (git diff tests/golden; protobuf.txt shows what changed
 * in protobuf.bin) and lint the text page: promtool check metrics < tests/golden/text.prom
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "lib/utf8.h"
#include "daemon/expose/expose.h"

#define GOLDEN	    TEST_GOLDEN_DIR "/text.prom"
#define GOLDEN_OM   TEST_GOLDEN_DIR "/openmetrics.txt"
#define GOLDEN_PB   TEST_GOLDEN_DIR "/protobuf.bin"
#define GOLDEN_PBTX TEST_GOLDEN_DIR "/protobuf.txt"

/* ---- expose_format_double ---- */

/* @format writes @v as @want. */
static void check_format(void (*format)(double, char *, size_t), double v, const char *want)
{
	char got[32];

	format(v, got, sizeof(got));
	if (strcmp(got, want) != 0)
		fail_msg("%.17g: got \"%s\", want \"%s\"", v, got, want);
}

#define check_double(v, want)	 check_format(expose_format_double, v, want)
#define check_canonical(v, want) check_format(expose_format_canonical, v, want)

static void test_format_double(void **state)
{
	(void)state;
	/* Expected strings are Go's strconv.FormatFloat(v, 'g', -1, 64), with
	 * client_golang's spellings of 0, Inf and NaN. */
	check_double(1, "1");
	check_double(-1, "-1");
	check_double(0, "0");
	check_double(-0.0, "0");
	check_double(3, "3");
	check_double(0.25, "0.25");
	check_double(0.1, "0.1");
	check_double(0.001, "0.001");
	check_double(0.0001, "0.0001");
	check_double(1e-05, "1e-05");
	check_double(2.5e-05, "2.5e-05");
	check_double(1.0 / 3.0, "0.3333333333333333");
	check_double(2.0 / 3.0, "0.6666666666666666");
	check_double(100000, "100000");
	check_double(123456, "123456");
	check_double(999999, "999999");
	check_double(1e+06, "1e+06");
	check_double(1234567, "1.234567e+06");
	check_double(123456789, "1.23456789e+08");
	check_double(-123456789, "-1.23456789e+08");
	check_double(1e21, "1e+21");
	check_double(1e100, "1e+100");
	check_double(1.5, "1.5");
	check_double(-2.75, "-2.75");
	check_double(12345.678, "12345.678");
	check_double(0.000123, "0.000123");
	check_double(9007199254740993.0, "9.007199254740992e+15");
	check_double(1.7976931348623157e308, "1.7976931348623157e+308");
	check_double(2.2250738585072014e-308, "2.2250738585072014e-308");
	check_double(5e-324, "5e-324");
	check_double(INFINITY, "+Inf");
	check_double(-INFINITY, "-Inf");
	check_double(NAN, "NaN");
}

/* OpenMetrics "Canonical Numbers", the spec's own examples and what Prometheus 2.42
 * made of protobuf upper bounds, so every format yields the same le series. */
static void test_format_canonical(void **state)
{
	(void)state;
	check_canonical(0, "0.0");
	check_canonical(0.001, "0.001");
	check_canonical(0.01, "0.01");
	check_canonical(0.1, "0.1");
	check_canonical(0.9, "0.9");
	check_canonical(0.95, "0.95");
	check_canonical(0.999, "0.999");
	check_canonical(1, "1.0");
	check_canonical(1.7, "1.7");
	check_canonical(10, "10.0");
	check_canonical(1e-10, "1e-10");
	check_canonical(1e-09, "1e-09");
	check_canonical(1e-05, "1e-05");
	check_canonical(0.0001, "0.0001");
	check_canonical(100000, "100000.0");
	check_canonical(123456, "123456.0");
	check_canonical(1e+06, "1e+06");
	check_canonical(1234567, "1.234567e+06");
	check_canonical(1e+10, "1e+10");
	check_canonical(2.5e-07, "2.5e-07");
	check_canonical(INFINITY, "+Inf");
	check_canonical(-INFINITY, "-Inf");
	check_canonical(NAN, "NaN");
}

static void test_buf(void **state)
{
	struct buf b;
	size_t len;
	char *s;
	int i;

	(void)state;
	buf_init(&b);
	for (i = 0; i < 1000; i++)
		buf_printf(&b, "%d,", i);
	buf_puts(&b, "end");
	buf_append(&b, "xyz", 1);
	assert_false(b.oom);
	s = buf_steal(&b, &len);
	assert_non_null(s);
	assert_int_equal(len, strlen(s));
	assert_memory_equal(s, "0,1,2,", 6);
	assert_string_equal(s + len - 5, ",endx");
	free(s);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	s = buf_steal(&b, &len); /* empty: "", not NULL */
	assert_non_null(s);
	assert_int_equal(len, 0);
	free(s);
	buf_free(&b);
}

/* ---- the golden page ---- */

static struct metrics *build_registry(void)
{
	static const char *const req_labels[] = {"method", "path", NULL};
	static const char *const case_label[] = {"case", NULL};
	static const char *const lat_labels[] = {"target", "op", NULL};
	static const uint64_t bounds[] = {
		100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 100000000, 1000000000,
	};
	static const struct {
		const char *name;
		double v;
	} cases[] = {
		{"zero", 0},	     {"one", 1},
		{"negative", -42.5}, {"tiny", 1e-05},
		{"small", 2.5e-05},  {"third", 1.0 / 3.0},
		{"huge", 1.797e308}, {"big", 123456789},
		{"inf", INFINITY},   {"minus_inf", -INFINITY},
		{"nan", NAN},	     {"hundred_thousand", 100000},
		{"million", 1e6},
	};
	struct metrics *m = metrics_new();
	struct metric_family *f;
	struct metric_series *s;
	unsigned i;

	assert_non_null(m);

	/* A counter with label values that need escaping, and UTF-8. */
	f = metrics_family(m, "test_requests_total", METRIC_COUNTER,
			   "Requests handled, by method and path.", req_labels, NULL, 0);
	assert_non_null(f);
	{
		static const char *const v1[] = {"GET", "/metrics"};
		static const char *const v2[] = {"GET", "C:\\dir\\file"};
		static const char *const v3[] = {"POST", "say \"hi\""};
		static const char *const v4[] = {"PUT", "two\nlines"};
		static const char *const v5[] = {"GET", "/caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac"};

		metrics_add(metrics_series(f, v1), 1027);
		metrics_add(metrics_series(f, v2), 3);
		metrics_add(metrics_series(f, v3), 0.5);
		metrics_add(metrics_series(f, v4), 1);
		metrics_add(metrics_series(f, v5), 12345678901234.0);
	}

	/* Gauges with every kind of value. */
	f = metrics_family(m, "test_value_ratio", METRIC_GAUGE,
			   "Values exercising float formatting.", case_label, NULL, 0);
	assert_non_null(f);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *v[] = {cases[i].name};

		s = metrics_series(f, v);
		assert_non_null(s);
		metrics_set(s, cases[i].v);
	}

	/* A histogram family with two series. */
	f = metrics_family(m, "test_latency_seconds", METRIC_HISTOGRAM, "Latency of test I/O.",
			   lat_labels, bounds, sizeof(bounds) / sizeof(bounds[0]));
	assert_non_null(f);
	{
		static const char *const va[] = {"/dev/sdb", "write"};
		static const char *const vb[] = {"/dev/sda", "read"};
		struct metric_series *a = metrics_series(f, va), *b = metrics_series(f, vb);

		assert_non_null(a);
		assert_non_null(b);
		for (i = 0; i < 100; i++)
			metrics_observe_ns(b, 50000 + i * 20000); /* 50 us .. 2.03 ms */
		metrics_observe_ns(a, 1000000);			  /* exactly on a bound */
		metrics_observe_ns(a, 7000000);
		metrics_observe_ns(a, 3000000000ull); /* above every bound */
	}
	{
		/* Native corner cases: no sample at all (one empty span), and the
		 * zero bucket, a lone bucket far from the others (a new span), a
		 * run with empty buckets inside, and 2^k s exactly on a boundary. */
		static const char *const vc[] = {"/dev/sdc", "read"};
		static const char *const vd[] = {"/dev/sdd", "read"};
		struct metric_series *d = metrics_series(f, vd);

		assert_non_null(metrics_series(f, vc));
		assert_non_null(d);
		metrics_observe_ns(d, 0);
		metrics_observe_ns(d, 1);
		for (i = 0; i < 5; i++)
			metrics_observe_ns(d, 1000000);
		metrics_observe_ns(d, 1100000);
		metrics_observe_ns(d, 1500000);
		metrics_observe_ns(d, 1953125);		/* 2^-9 s */
		metrics_observe_ns(d, 600000000000ull); /* 10 min */
	}

	/* HELP that needs escaping, no labels. */
	f = metrics_family(m, "test_escaped_help_info", METRIC_GAUGE,
			   "Help with a backslash \\ and a\nnewline.", NULL, NULL, 0);
	assert_non_null(f);
	metrics_set(metrics_series(f, NULL), 1);

	/* No labels. */
	f = metrics_family(m, "test_up", METRIC_GAUGE, "Whether the test target is up.", NULL, NULL,
			   0);
	assert_non_null(f);
	metrics_set(metrics_series(f, NULL), 1);

	/* Declared, never used: not on the page. */
	assert_non_null(
		metrics_family(m, "test_unused_total", METRIC_COUNTER, "Unused.", NULL, NULL, 0));
	return m;
}

static int strcmp_ptr(const char *const *a, const char *const *b)
{
	return strcmp(*a, *b);
}

typedef int (*render_fn)(const struct metrics_snapshot *, struct buf *);

/* Render the golden registry with @render; the same snapshot twice gives the
 * same bytes. */
static void render_golden(render_fn render, unsigned flags, struct buf *out)
{
	struct metrics *m = build_registry();
	struct metrics_snapshot *snap = metrics_snapshot_ex(m, flags);
	struct buf again;

	assert_non_null(snap);
	buf_init(out);
	assert_int_equal(render(snap, out), 0);
	assert_non_null(out->data);
	buf_init(&again);
	assert_int_equal(render(snap, &again), 0);
	assert_int_equal(again.len, out->len);
	assert_memory_equal(again.data, out->data, out->len);
	buf_free(&again);
	metrics_snapshot_free(snap);
	metrics_free(m);
}

static void test_text_golden(void **state)
{
	struct buf out;

	(void)state;
	render_golden(expose_text, 0, &out);
	tu_check_golden(GOLDEN, out.data, out.len, 0);
	buf_free(&out);
}

/* The sample lines of a page (not comments), sorted, one string. */
static char *sample_lines(const char *page)
{
	char *copy = strdup(page), *save = NULL, *line, **lines = NULL, *res;
	size_t n = 0, total = 1, i;

	assert_non_null(copy);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		lines = realloc(lines, (n + 1) * sizeof(*lines));
		assert_non_null(lines);
		lines[n++] = line;
		total += strlen(line) + 1;
	}
	qsort(lines, n, sizeof(*lines), (int (*)(const void *, const void *))strcmp_ptr);
	res = calloc(1, total);
	assert_non_null(res);
	for (i = 0; i < n; i++) {
		strcat(res, lines[i]);
		strcat(res, "\n");
	}
	free(lines);
	free(copy);
	return res;
}

static void test_openmetrics_golden(void **state)
{
	struct buf out, text;
	const char *p;
	char *a, *b;

	(void)state;
	render_golden(expose_openmetrics, 0, &out);
	tu_check_golden(GOLDEN_OM, out.data, out.len, 0);

	/* "# EOF\n" once, at the very end; no blank line; only TYPE, UNIT, HELP
	 * comments; no "untyped". */
	assert_true(out.len >= 6);
	assert_string_equal(out.data + out.len - 6, "# EOF\n");
	assert_ptr_equal(strstr(out.data, "# EOF"), out.data + out.len - 6);
	assert_null(strstr(out.data, "\n\n"));
	assert_true(out.data[0] != '\n');
	assert_null(strstr(out.data, "untyped"));
	for (p = out.data; *p; p = strchr(p, '\n') + 1)
		if (*p == '#')
			assert_true(strncmp(p, "# TYPE ", 7) == 0 ||
				    strncmp(p, "# UNIT ", 7) == 0 ||
				    strncmp(p, "# HELP ", 7) == 0 || strcmp(p, "# EOF\n") == 0);
	/* Counters: family without _total, sample with it; a unit only as a suffix. */
	assert_non_null(strstr(out.data, "# TYPE test_requests counter\n"));
	assert_non_null(strstr(out.data, "# HELP test_requests "));
	assert_non_null(strstr(out.data, "\ntest_requests_total{"));
	assert_non_null(strstr(out.data, "# UNIT test_latency_seconds seconds\n"));

	/* The same samples as the text page, le values included: Prometheus stores
	 * the same series whichever format it negotiated. */
	render_golden(expose_text, 0, &text);
	a = sample_lines(out.data);
	b = sample_lines(text.data);
	assert_string_equal(a, b);
	free(a);
	free(b);
	buf_free(&text);
	buf_free(&out);
}

/* A counter without "_total" has no OpenMetrics counter form (its sample would be
 * renamed): it is "unknown", under its own name. Quotes in HELP are escaped. */
static void test_openmetrics_counter_without_total(void **state)
{
	struct metrics *m = metrics_new();
	struct metric_family *f;
	struct metrics_snapshot *snap;
	struct buf out;

	(void)state;
	f = metrics_family(m, "legacy_errors", METRIC_COUNTER, "Named \"the old way\".", NULL, NULL,
			   0);
	assert_non_null(f);
	metrics_add(metrics_series(f, NULL), 2);
	f = metrics_family(m, "total", METRIC_COUNTER, "", NULL, NULL, 0);
	metrics_add(metrics_series(f, NULL), 1);
	f = metrics_family(m, "x_bytes_total", METRIC_COUNTER, "", NULL, NULL, 0);
	metrics_add(metrics_series(f, NULL), 1);
	snap = metrics_snapshot(m);
	assert_non_null(snap);
	buf_init(&out);
	assert_int_equal(expose_openmetrics(snap, &out), 0);
	assert_string_equal(out.data, "# TYPE legacy_errors unknown\n"
				      "# HELP legacy_errors Named \\\"the old way\\\".\n"
				      "legacy_errors 2\n"
				      "# TYPE total unknown\n"
				      "total 1\n"
				      "# TYPE x_bytes counter\n"
				      "# UNIT x_bytes bytes\n"
				      "x_bytes_total 1\n"
				      "# EOF\n");
	buf_free(&out);
	metrics_snapshot_free(snap);
	metrics_free(m);
}

static void test_text_empty(void **state)
{
	struct metrics *m = metrics_new();
	struct metrics_snapshot *snap = metrics_snapshot_ex(m, METRICS_SNAP_NATIVE);
	struct buf out;

	(void)state;
	buf_init(&out);
	assert_int_equal(expose_text(snap, &out), 0);
	assert_int_equal(out.len, 0);
	assert_int_equal(expose_protobuf(snap, &out), 0);
	assert_int_equal(out.len, 0);
	assert_int_equal(expose_openmetrics(snap, &out), 0);
	assert_string_equal(out.data, "# EOF\n");
	buf_free(&out);
	metrics_snapshot_free(snap);
	metrics_free(m);
}

/* ---- protobuf: a small decoder, independent of the encoder ---- */

/*
 * Decodes the delimited MetricFamily stream into protoc-like text, one field per
 * line in wire order: varints, zigzag, little-endian doubles, nested messages,
 * and repeated sint64 both packed (wire type 2) and unpacked (wire type 0).
 * Unknown fields, wrong wire types, truncation and trailing bytes fail the test.
 */
enum pb_kind { K_STRING, K_UINT, K_SINT, K_DOUBLE, K_TYPE, K_MSG, K_DELTAS };
enum pb_msg { M_FAMILY, M_METRIC, M_LABEL, M_VALUE, M_HIST, M_BUCKET, M_SPAN };

static const struct pb_field {
	enum pb_msg msg;
	unsigned num;
	const char *name;
	enum pb_kind kind;
	enum pb_msg sub;
} pb_fields[] = {
	{M_FAMILY, 1, "name", K_STRING, 0},
	{M_FAMILY, 2, "help", K_STRING, 0},
	{M_FAMILY, 3, "type", K_TYPE, 0},
	{M_FAMILY, 4, "metric", K_MSG, M_METRIC},
	{M_METRIC, 1, "label", K_MSG, M_LABEL},
	{M_METRIC, 2, "gauge", K_MSG, M_VALUE},
	{M_METRIC, 3, "counter", K_MSG, M_VALUE},
	{M_METRIC, 7, "histogram", K_MSG, M_HIST},
	{M_LABEL, 1, "name", K_STRING, 0},
	{M_LABEL, 2, "value", K_STRING, 0},
	{M_VALUE, 1, "value", K_DOUBLE, 0},
	{M_HIST, 1, "sample_count", K_UINT, 0},
	{M_HIST, 2, "sample_sum", K_DOUBLE, 0},
	{M_HIST, 3, "bucket", K_MSG, M_BUCKET},
	{M_HIST, 5, "schema", K_SINT, 0},
	{M_HIST, 6, "zero_threshold", K_DOUBLE, 0},
	{M_HIST, 7, "zero_count", K_UINT, 0},
	{M_HIST, 12, "positive_span", K_MSG, M_SPAN},
	{M_HIST, 13, "positive_delta", K_DELTAS, 0},
	{M_BUCKET, 1, "cumulative_count", K_UINT, 0},
	{M_BUCKET, 2, "upper_bound", K_DOUBLE, 0},
	{M_SPAN, 1, "offset", K_SINT, 0},
	{M_SPAN, 2, "length", K_UINT, 0},
};

static uint64_t rd_varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	unsigned shift;

	for (shift = 0; shift < 64; shift += 7) {
		if (*p >= end)
			fail_msg("truncated varint");
		v |= (uint64_t)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80))
			return v;
	}
	fail_msg("varint longer than 10 bytes");
	return 0;
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static void dump_indent(struct buf *o, unsigned depth)
{
	while (depth--)
		buf_puts(o, "  ");
}

/* @s[0..n) in quotes: quotes and backslashes escaped, control bytes in octal. */
static void dump_quoted(struct buf *o, const char *s, size_t n)
{
	buf_puts(o, "\"");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			buf_printf(o, "\\%c", c);
		else if (c < 0x20)
			buf_printf(o, "\\%03o", c);
		else
			buf_append(o, &s[i], 1);
	}
	buf_puts(o, "\"");
}

static void dump_double(struct buf *o, double v)
{
	char tmp[32];

	expose_format_double(v, tmp, sizeof(tmp));
	buf_puts(o, tmp);
}

static void dump_msg(const uint8_t *p, const uint8_t *end, enum pb_msg msg, unsigned depth,
		     struct buf *o)
{
	static const char *const types[] = {"COUNTER", "GAUGE", "SUMMARY", "UNTYPED", "HISTOGRAM"};

	while (p < end) {
		uint64_t key = rd_varint(&p, end), v, len;
		unsigned num = (unsigned)(key >> 3), wt = (unsigned)(key & 7), i;
		const struct pb_field *f = NULL;

		for (i = 0; i < sizeof(pb_fields) / sizeof(pb_fields[0]); i++)
			if (pb_fields[i].msg == msg && pb_fields[i].num == num)
				f = &pb_fields[i];
		if (!f)
			fail_msg("unknown field %u (wire type %u) in message %d", num, wt, msg);
		dump_indent(o, depth);
		if (f->kind == K_DELTAS && wt == 0) { /* unpacked: one element */
			buf_printf(o, "%s: %" PRId64 "\n", f->name, unzigzag(rd_varint(&p, end)));
			continue;
		}
		switch (f->kind) {
		case K_UINT:
		case K_SINT:
		case K_TYPE:
			if (wt != 0)
				fail_msg("%s: wire type %u, want 0", f->name, wt);
			v = rd_varint(&p, end);
			if (f->kind == K_UINT)
				buf_printf(o, "%s: %" PRIu64 "\n", f->name, v);
			else if (f->kind == K_SINT)
				buf_printf(o, "%s: %" PRId64 "\n", f->name, unzigzag(v));
			else
				buf_printf(o, "%s: %s\n", f->name, v < 5 ? types[v] : "?");
			break;
		case K_DOUBLE: {
			uint64_t bits = 0;
			double d;

			if (wt != 1 || end - p < 8)
				fail_msg("%s: wire type %u or truncated double", f->name, wt);
			for (i = 0; i < 8; i++)
				bits |= (uint64_t)p[i] << (8 * i);
			p += 8;
			memcpy(&d, &bits, sizeof(d));
			buf_printf(o, "%s: ", f->name);
			dump_double(o, d);
			buf_puts(o, "\n");
			break;
		}
		default: /* length-delimited */
			if (wt != 2)
				fail_msg("%s: wire type %u, want 2", f->name, wt);
			len = rd_varint(&p, end);
			if (len > (uint64_t)(end - p))
				fail_msg("%s: length %" PRIu64 " past the end", f->name, len);
			if (f->kind == K_STRING) {
				buf_printf(o, "%s: ", f->name);
				dump_quoted(o, (const char *)p, len);
				buf_puts(o, "\n");
			} else if (f->kind == K_DELTAS) { /* packed */
				const uint8_t *q = p;
				int first = 1;

				buf_printf(o, "%s: [", f->name);
				while (q < p + len) {
					buf_printf(o, "%s%" PRId64, first ? "" : ", ",
						   unzigzag(rd_varint(&q, p + len)));
					first = 0;
				}
				buf_puts(o, "]\n");
			} else {
				buf_printf(o, "%s {\n", f->name);
				dump_msg(p, p + len, f->sub, depth + 1, o);
				dump_indent(o, depth);
				buf_puts(o, "}\n");
			}
			p += len;
		}
	}
}

/* A whole delimited stream. */
static void dump_stream(const char *data, size_t n, struct buf *o)
{
	const uint8_t *p = (const uint8_t *)data, *end = p + n;

	buf_init(o);
	while (p < end) {
		const uint8_t *start = p;
		uint64_t len = rd_varint(&p, end);

		if (p - start > 5)
			fail_msg("record length varint over 5 bytes (Prometheus refuses it)");
		if (len > (uint64_t)(end - p))
			fail_msg("record length %" PRIu64 " past the end", len);
		buf_puts(o, "family {\n");
		dump_msg(p, p + len, M_FAMILY, 1, o);
		buf_puts(o, "}\n");
		p += len;
	}
	assert_false(o->oom);
}

/* What dump_stream() must print for @snap: written from the snapshot, field by
 * field, with no help from the encoder. */
static void expected_dump(const struct metrics_snapshot *snap, struct buf *o)
{
	static const char *const types[] = {"COUNTER", "GAUGE", "HISTOGRAM"};
	unsigned i, j, k;

	buf_init(o);
	for (i = 0; i < snap->n_families; i++) {
		const struct snap_family *f = &snap->families[i];

		buf_printf(o, "family {\n  name: \"%s\"\n", f->name);
		if (f->help && *f->help) {
			buf_puts(o, "  help: ");
			dump_quoted(o, f->help, strlen(f->help));
			buf_puts(o, "\n");
		}
		buf_printf(o, "  type: %s\n", types[f->type]);
		for (j = 0; j < f->n_series; j++) {
			const struct snap_series *s = &f->series[j];

			buf_puts(o, "  metric {\n");
			for (k = 0; k < f->n_labels; k++) {
				buf_printf(o, "    label {\n      name: \"%s\"\n      value: ",
					   f->labels[k]);
				dump_quoted(o, s->values[k], strlen(s->values[k]));
				buf_puts(o, "\n    }\n");
			}
			if (f->type != METRIC_HISTOGRAM) {
				buf_printf(o, "    %s {\n      value: ",
					   f->type == METRIC_COUNTER ? "counter" : "gauge");
				dump_double(o, s->value);
				buf_puts(o, "\n    }\n  }\n");
				continue;
			}
			buf_printf(o, "    histogram {\n      sample_count: %" PRIu64 "\n",
				   s->count);
			buf_puts(o, "      sample_sum: ");
			dump_double(o, s->sum);
			buf_puts(o, "\n");
			for (k = 0; k < f->n_bounds; k++) {
				buf_printf(o,
					   "      bucket {\n        cumulative_count: %" PRIu64
					   "\n        upper_bound: ",
					   s->cumulative[k]);
				dump_double(o, f->bounds[k]);
				buf_puts(o, "\n      }\n");
			}
			if (snap->has_native) {
				const struct hist_native *n = &s->native;

				buf_printf(o,
					   "      schema: %d\n      zero_threshold: ", n->schema);
				dump_double(o, n->zero_threshold);
				buf_printf(o, "\n      zero_count: %" PRIu64 "\n", n->zero_count);
				if (!n->n_spans)
					buf_puts(o, "      positive_span {\n        offset: 0\n"
						    "        length: 0\n      }\n");
				for (k = 0; k < n->n_spans; k++)
					buf_printf(o,
						   "      positive_span {\n        offset: %d\n"
						   "        length: %u\n      }\n",
						   (int)n->spans[k].offset,
						   (unsigned)n->spans[k].length);
				if (n->n_deltas) {
					buf_puts(o, "      positive_delta: [");
					for (k = 0; k < n->n_deltas; k++)
						buf_printf(o, "%s%" PRId64, k ? ", " : "",
							   n->deltas[k]);
					buf_puts(o, "]\n");
				}
			}
			buf_puts(o, "    }\n  }\n");
		}
		buf_puts(o, "}\n");
	}
	assert_false(o->oom);
}

static void test_protobuf_golden(void **state)
{
	struct buf out, dump;

	(void)state;
	render_golden(expose_protobuf, METRICS_SNAP_NATIVE, &out);
	tu_check_golden(GOLDEN_PB, out.data, out.len, 1);
	dump_stream(out.data, out.len, &dump);
	tu_check_golden(GOLDEN_PBTX, dump.data, dump.len, 0);
	buf_free(&dump);
	buf_free(&out);
}

/* The protobuf page of @snap decodes to what the snapshot holds, field by field;
 * the decoded text in @got. */
static void check_decodes_to(const struct metrics_snapshot *snap, struct buf *got)
{
	struct buf out, want;

	buf_init(&out);
	assert_int_equal(expose_protobuf(snap, &out), 0);
	dump_stream(out.data, out.len, got);
	expected_dump(snap, &want);
	assert_string_equal(got->data, want.data);
	buf_free(&out);
	buf_free(&want);
}

/* Every field decoded from the bytes is the snapshot's; the native views are
 * consistent (zero_count + buckets == sample_count) and at the default schema. */
static void test_protobuf_decodes_to_snapshot(void **state)
{
	struct metrics *m = build_registry();
	struct metrics_snapshot *snap;
	struct buf got;
	unsigned i, j, k, natives = 0;

	(void)state;
	snap = metrics_snapshot_ex(m, METRICS_SNAP_NATIVE);
	assert_non_null(snap);
	check_decodes_to(snap, &got);

	for (i = 0; i < snap->n_families; i++) {
		const struct snap_family *f = &snap->families[i];

		if (f->type != METRIC_HISTOGRAM)
			continue;
		for (j = 0; j < f->n_series; j++) {
			const struct hist_native *n = &f->series[j].native;
			uint64_t total = n->zero_count, len = 0;
			int64_t c = 0;

			assert_int_equal(n->schema, METRICS_NATIVE_SCHEMA);
			assert_true(n->zero_threshold == 0x1p-128);
			for (k = 0; k < n->n_spans; k++)
				len += n->spans[k].length;
			assert_int_equal(len, n->n_deltas);
			for (k = 0; k < n->n_deltas; k++) {
				c += n->deltas[k];
				assert_true(c >= 0);
				total += (uint64_t)c;
			}
			assert_int_equal(total, f->series[j].count);
			natives++;
		}
	}
	assert_int_equal(natives, 4);

	/* Without METRICS_SNAP_NATIVE: classic buckets only, still decodable. */
	metrics_snapshot_free(snap);
	snap = metrics_snapshot(m);
	assert_non_null(snap);
	buf_free(&got);
	check_decodes_to(snap, &got);
	assert_null(strstr(got.data, "schema"));

	buf_free(&got);
	metrics_snapshot_free(snap);
	metrics_free(m);
}

static size_t unhex(const char *hex, uint8_t *out)
{
	size_t n = 0;
	unsigned v;

	for (; hex[0] && hex[1]; hex += 2) {
		assert_int_equal(sscanf(hex, "%2x", &v), 1);
		out[n++] = (uint8_t)v;
	}
	return n;
}

/* A classic + native histogram and a counter, built by hand and encoded by us, in
 * the bytes a real Prometheus 2.42 was seen to ingest when the encoder was
 * written (test_prometheus.sh checks a live one still does). */
static void test_protobuf_known_vector(void **state)
{
	static const char hex[] =
		"570a06685f626f74681204626f7468180422453a430804110000000000001e401a0b08021100"
		"0000000000f03f1a0b0804110000000000001440280031000000000000f03738006204080110"
		"026204080210016a03020002290a05635f6f6e6512096120636f756e74657218002213"
		"0a060a01611201621a09090000000000001440";
	uint64_t cumulative[] = {2, 4};
	double bounds[] = {1.0, 5.0};
	struct hist_span spans[] = {{-1, 2}, {1, 1}};
	int64_t deltas[] = {1, 0, 1};
	struct snap_series hs = {
		.count = 4,
		.sum = 7.5,
		.cumulative = cumulative,
		.native = {.schema = 0,
			   .zero_threshold = 0x1p-128,
			   .zero_count = 0,
			   .n_spans = 2,
			   .spans = spans,
			   .n_deltas = 3,
			   .deltas = deltas},
	};
	struct snap_series cs = {.values = {"b"}, .value = 5};
	struct snap_family fams[] = {
		{.name = "h_both",
		 .help = "both",
		 .type = METRIC_HISTOGRAM,
		 .n_bounds = 2,
		 .bounds = bounds,
		 .n_series = 1,
		 .series = &hs},
		{.name = "c_one",
		 .help = "a counter",
		 .type = METRIC_COUNTER,
		 .n_labels = 1,
		 .labels = {"a"},
		 .n_series = 1,
		 .series = &cs},
	};
	struct metrics_snapshot snap = {.n_families = 2, .families = fams, .has_native = 1};
	uint8_t want[256];
	size_t n = unhex(hex, want);
	struct buf out;

	(void)state;
	buf_init(&out);
	assert_int_equal(expose_protobuf(&snap, &out), 0);
	assert_int_equal(out.len, n);
	assert_memory_equal(out.data, want, n);
	buf_free(&out);
}

/* More samples in the native buckets than sample_count: Prometheus would drop the
 * whole scrape, so the renderer refuses. */
static void test_protobuf_inconsistent_native(void **state)
{
	struct hist_span span = {0, 1};
	int64_t delta = 3;
	struct snap_series hs = {
		.count = 2,
		.native = {.schema = 3,
			   .zero_threshold = 0x1p-128,
			   .n_spans = 1,
			   .spans = &span,
			   .n_deltas = 1,
			   .deltas = &delta},
	};
	struct snap_family fam = {
		.name = "h", .type = METRIC_HISTOGRAM, .n_series = 1, .series = &hs};
	struct metrics_snapshot snap = {.n_families = 1, .families = &fam, .has_native = 1};
	struct buf out;

	(void)state;
	buf_init(&out);
	assert_int_equal(expose_protobuf(&snap, &out), -ERANGE);
	buf_free(&out);
}

/*
 * A label value from a hostile path (bytes that are not UTF-8, controls, a
 * quote, a backslash, a newline) reaches every format as the registry made it
 * (U+FFFD for each byte that does not begin a valid sequence), escaped as each
 * format requires — text and OpenMetrics: \\, \" and \n, everything else as it
 * is; protobuf: the bytes themselves — and every page is valid UTF-8.
 */
#define R "\xef\xbf\xbd" /* U+FFFD */
/* Its line on the text and OpenMetrics pages. */
#define HOSTILE_SERIES "x_info{path=\"/d" R R "\\\"q\\\\b\\n\r\t\x01\x1b\xc3\xa9" R R "\"} 1\n"
static void test_hostile_label_every_format(void **state)
{
	static const char *const labels[] = {"path", NULL};
	static const char *const raw[] = {"/d\x9b\xff\"q\\b\n\r\t\x01\x1b\xc3\xa9\xe2\x82", NULL};
	static const char want[] = "/d" R R "\"q\\b\n\r\t\x01\x1b\xc3\xa9" R R;
	struct metrics *m = metrics_new();
	struct metric_family *f;
	struct metrics_snapshot *snap;
	struct buf text, om, got;

	(void)state;
	assert_non_null(m);
	f = metrics_family(m, "x_info", METRIC_GAUGE, "Path.", labels, NULL, 0);
	assert_non_null(f);
	metrics_set(metrics_series(f, raw), 1);
	snap = metrics_snapshot(m);
	assert_non_null(snap);
	assert_string_equal(snap->families[0].series[0].values[0], want);

	buf_init(&text);
	assert_int_equal(expose_text(snap, &text), 0);
	assert_string_equal(text.data, "# HELP x_info Path.\n# TYPE x_info gauge\n" HOSTILE_SERIES);
	buf_init(&om);
	assert_int_equal(expose_openmetrics(snap, &om), 0);
	assert_string_equal(om.data,
			    "# TYPE x_info gauge\n# HELP x_info Path.\n" HOSTILE_SERIES "# EOF\n");
	assert_true(utf8_valid(text.data));
	assert_true(utf8_valid(om.data));
	/* Protobuf: the label's bytes are the snapshot's (check_decodes_to()). */
	check_decodes_to(snap, &got);

	buf_free(&got);
	buf_free(&om);
	buf_free(&text);
	metrics_snapshot_free(snap);
	metrics_free(m);
}
#undef HOSTILE_SERIES
#undef R

/* The decoder reads unpacked deltas too (as client_golang 1.14 writes them). */
static void test_decoder_unpacked(void **state)
{
	/* family { name "h" type HISTOGRAM metric { histogram { positive_delta 1,
	 * positive_delta -1 (unpacked), positive_delta [2] (packed) } } } */
	static const uint8_t msg[] = {0x16, 0x0a, 0x01, 'h',  0x18, 0x04, 0x22, 0x0f,
				      0x3a, 0x0d, 0x68, 0x02, 0x68, 0x01, 0x6a, 0x01,
				      0x04, 0x62, 0x04, 0x08, 0x00, 0x10, 0x03};
	struct buf got;

	(void)state;
	dump_stream((const char *)msg, sizeof(msg), &got);
	assert_string_equal(got.data,
			    "family {\n  name: \"h\"\n  type: HISTOGRAM\n  metric {\n"
			    "    histogram {\n      positive_delta: 1\n"
			    "      positive_delta: -1\n      positive_delta: [2]\n"
			    "      positive_span {\n        offset: 0\n        length: 3\n"
			    "      }\n    }\n  }\n}\n");
	buf_free(&got);
}

/*
 * expose_format_double() before its fast path (integers and whole nanoseconds
 * written from their digits): the round-trip search over "%.*e" for every value.
 * The fast path must give the same bytes.
 */
static void reference_format_double(double v, char *out, size_t len)
{
	char tmp[40], digits[20], res[40];
	int p, nd = 0, x, dp, i, pos = 0;
	const char *c;
	char *end;

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
	for (p = 1; p <= 17; p++) {
		snprintf(tmp, sizeof(tmp), "%.*e", p - 1, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	c = tmp;
	if (*c == '-')
		res[pos++] = *c++;
	for (; *c && *c != 'e'; c++)
		if (*c >= '0' && *c <= '9' && nd < (int)sizeof(digits))
			digits[nd++] = *c;
	x = (int)strtol(c + 1, &end, 10);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	dp = x + 1;
	if (x < -4 || x >= 6) {
		res[pos++] = digits[0];
		if (nd > 1) {
			res[pos++] = '.';
			for (i = 1; i < nd; i++)
				res[pos++] = digits[i];
		}
		pos += snprintf(res + pos, sizeof(res) - (size_t)pos, "e%c%02d", x < 0 ? '-' : '+',
				x < 0 ? -x : x);
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
		res[pos] = '\0';
	}
	snprintf(out, len, "%s", res);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void check_against_reference(double v)
{
	char got[32], want[32];

	expose_format_double(v, got, sizeof(got));
	reference_format_double(v, want, sizeof(want));
	if (strcmp(got, want) != 0)
		fail_msg("%a: got %s, want %s", v, got, want);
}

static void test_format_double_fast_path(void **state)
{
	static const double edges[] = {
		1,
		-1,
		0.5,
		0.1,
		1e-9,
		1e-10,
		999999,
		1e6,
		1e15,
		1e15 - 1,
		1e15 + 1,
		9007199254740992.0,
		123456789012345.0,
		1e21,
		1e-5,
		1.5e-05,
		0.0001,
		2.5e-05,
		1e300,
		1e-300,
		5e-324,
		0.3,
		2.0 / 3.0,
		1e9,
		4.5e-10,
		0.000999999,
		1e-4,
		HUGE_VAL,
		-HUGE_VAL,
		NAN,
		0.0,
		-0.0,
	};
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		check_against_reference(edges[i]);
		check_against_reference(-edges[i]);
	}
	for (i = 0; i < 200000; i++) {
		uint64_t r = xorshift(&seed), bits;
		double v;

		switch (i % 6) {
		case 0: /* whole nanoseconds, as bounds and sums are */
			v = (double)(r >> (r % 64)) / 1e9;
			break;
		case 1: /* integers */
			v = (double)(r >> (r % 64));
			break;
		case 2: /* arbitrary doubles */
			bits = r;
			memcpy(&v, &bits, sizeof(v));
			break;
		case 3: /* short decimals */
			v = (double)(r % 100000) / pow(10, (double)((r >> 40) % 20));
			break;
		case 4: /* near the 1e15 limit */
			v = 1e15 + (double)(int64_t)(r % 2001) - 1000;
			break;
		default: /* lognormal-ish latencies in seconds */
			v = exp((double)(int64_t)(r % 40000) / 1000.0 - 25.0);
			break;
		}
		check_against_reference(v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_double),
		cmocka_unit_test(test_format_double_fast_path),
		cmocka_unit_test(test_format_canonical),
		cmocka_unit_test(test_buf),
		cmocka_unit_test(test_text_golden),
		cmocka_unit_test(test_openmetrics_golden),
		cmocka_unit_test(test_openmetrics_counter_without_total),
		cmocka_unit_test(test_protobuf_golden),
		cmocka_unit_test(test_protobuf_decodes_to_snapshot),
		cmocka_unit_test(test_protobuf_known_vector),
		cmocka_unit_test(test_protobuf_inconsistent_native),
		cmocka_unit_test(test_decoder_unpacked),
		cmocka_unit_test(test_hostile_label_every_format),
		cmocka_unit_test(test_text_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
