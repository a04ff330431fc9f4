/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for daemon/expose: float formatting against Go's strconv output,
 * and a whole text-format page compared byte for byte with
 * tests/golden/text.prom.
 *
 * To regenerate the golden file after an intended change in the output:
 *
 *     UPDATE_GOLDEN=1 ./test_expose
 *
 * then inspect the diff and lint it: promtool check metrics < tests/golden/text.prom
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/expose.h"

#define GOLDEN TEST_GOLDEN_DIR "/text.prom"

/* ---- expose_format_double ---- */

static void check_double(double v, const char *want)
{
	char got[32];

	expose_format_double(v, got, sizeof(got));
	if (strcmp(got, want) != 0)
		fail_msg("%.17g: got \"%s\", want \"%s\"", v, got, want);
}

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

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *data;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = malloc((size_t)n + 1);
	if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
		free(data);
		data = NULL;
	}
	fclose(f);
	if (data) {
		data[n] = '\0';
		*len = (size_t)n;
	}
	return data;
}

static void test_text_golden(void **state)
{
	struct metrics *m = build_registry();
	struct metrics_snapshot *snap = metrics_snapshot(m);
	const char *update = getenv("UPDATE_GOLDEN");
	char *want;
	size_t want_len = 0;
	struct buf out;

	(void)state;
	assert_non_null(snap);
	buf_init(&out);
	assert_int_equal(expose_text(snap, &out), 0);
	assert_non_null(out.data);

	if (update && strcmp(update, "1") == 0) {
		FILE *f = fopen(GOLDEN, "wb");

		assert_non_null(f);
		assert_int_equal(fwrite(out.data, 1, out.len, f), out.len);
		assert_int_equal(fclose(f), 0);
		print_message("wrote %s\n", GOLDEN);
	} else {
		want = read_all(GOLDEN, &want_len);
		if (!want)
			fail_msg("cannot read %s (UPDATE_GOLDEN=1 writes it)", GOLDEN);
		if (want_len != out.len || memcmp(want, out.data, out.len) != 0) {
			print_error("--- got ---\n%s--- end ---\n", out.data);
			fail_msg("rendered page differs from %s", GOLDEN);
		}
		free(want);
	}

	/* The same snapshot renders to the same bytes. */
	{
		struct buf again;

		buf_init(&again);
		assert_int_equal(expose_text(snap, &again), 0);
		assert_int_equal(again.len, out.len);
		assert_memory_equal(again.data, out.data, out.len);
		buf_free(&again);
	}
	buf_free(&out);
	metrics_snapshot_free(snap);
	metrics_free(m);
}

static void test_text_empty(void **state)
{
	struct metrics *m = metrics_new();
	struct metrics_snapshot *snap = metrics_snapshot(m);
	struct buf out;

	(void)state;
	buf_init(&out);
	assert_int_equal(expose_text(snap, &out), 0);
	assert_int_equal(out.len, 0);
	buf_free(&out);
	metrics_snapshot_free(snap);
	metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_double),
		cmocka_unit_test(test_buf),
		cmocka_unit_test(test_text_golden),
		cmocka_unit_test(test_text_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
