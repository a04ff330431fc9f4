/* SPDX-License-Identifier: MIT */
/* Units: sizes, durations, percentages, counts; parse, format, round trip. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"

#define KIB 1024ULL
#define MIB (1024ULL * KIB)
#define GIB (1024ULL * MIB)
#define TIB (1024ULL * GIB)
#define MS  1000000ULL
#define S   1000000000ULL

typedef int (*parse_fn)(const char *s, uint64_t *out);

/* @parse (named @name in messages) reads @s as @want. */
static void assert_parses(parse_fn parse, const char *name, const char *s, uint64_t want)
{
	uint64_t v = 0;

	if (parse(s, &v) != 0)
		fail_msg("%s(\"%s\") failed", name, s);
	if (v != want)
		fail_msg("%s(\"%s\") = %llu, want %llu", name, s, (unsigned long long)v,
			 (unsigned long long)want);
}

/* @parse refuses @s with @want, leaving its output untouched. */
static void assert_refuses(parse_fn parse, const char *name, const char *s, int want)
{
	uint64_t v = 12345;
	int r = parse(s, &v);

	if (r != want)
		fail_msg("%s(\"%s\") = %d, want %d", name, s, r, want);
	assert_int_equal(v, 12345); /* untouched on failure */
}

/* A parser and its name, for the messages. */
#define PARSER(f) f, #f

#define assert_size(s, want)	     assert_parses(PARSER(cfg_parse_size), s, want)
#define assert_size_err(s, want)     assert_refuses(PARSER(cfg_parse_size), s, want)
#define assert_duration(s, want)     assert_parses(PARSER(cfg_parse_duration), s, want)
#define assert_duration_err(s, want) assert_refuses(PARSER(cfg_parse_duration), s, want)

static void test_size_valid(void **state)
{
	(void)state;
	assert_size("0", 0);
	assert_size("4096", 4096);
	assert_size("512B", 512);
	assert_size("4k", 4 * KIB);
	assert_size("4K", 4 * KIB);
	assert_size("4KiB", 4 * KIB);
	assert_size("1m", MIB);
	assert_size("64MiB", 64 * MIB);
	assert_size("1g", GIB);
	assert_size("1GiB", GIB);
	assert_size("1t", TIB);
	assert_size("1TiB", TIB);
	assert_size("16777215T", 16777215ULL * TIB);
	assert_size("18446744073709551615", UINT64_MAX);
}

static void test_size_invalid(void **state)
{
	(void)state;
	assert_size_err("", -EINVAL);
	assert_size_err("k", -EINVAL);
	assert_size_err("4KB", -EINVAL); /* ambiguous: 1000 or 1024? */
	assert_size_err("4kB", -EINVAL);
	assert_size_err("4MB", -EINVAL);
	assert_size_err("1GB", -EINVAL);
	assert_size_err("4Ki", -EINVAL);
	/* One spelling per IEC unit: KiB, never kib, KIB, kiB or Kib. */
	assert_size_err("4kib", -EINVAL);
	assert_size_err("4kiB", -EINVAL);
	assert_size_err("4KIB", -EINVAL);
	assert_size_err("4Kib", -EINVAL);
	assert_size_err("4KIb", -EINVAL);
	assert_size_err("1mib", -EINVAL);
	assert_size_err("1gib", -EINVAL);
	assert_size_err("1TIB", -EINVAL);
	assert_size_err("4 KiB", -EINVAL);
	assert_size_err(" 4k", -EINVAL);
	assert_size_err("4k ", -EINVAL);
	assert_size_err("-4k", -EINVAL);
	assert_size_err("+4k", -EINVAL);
	assert_size_err("1.5GiB", -EINVAL);
	assert_size_err("0x1000", -EINVAL);
	assert_size_err("4x", -EINVAL);
	assert_size_err("4BB", -EINVAL);
	assert_size_err("1P", -EINVAL);
	assert_size_err("18446744073709551616", -ERANGE);
	assert_size_err("16777216T", -ERANGE);
	assert_size_err("99999999999999999999999k", -ERANGE);
	assert_int_equal(cfg_parse_size(NULL, &(uint64_t){0}), -EINVAL);
}

static void test_duration_valid(void **state)
{
	(void)state;
	assert_duration("0s", 0);
	assert_duration("1ns", 1);
	assert_duration("250us", 250000);
	assert_duration("500ms", 500 * MS);
	assert_duration("10s", 10 * S);
	assert_duration("1m", 60 * S);
	assert_duration("1m30s", 90 * S);
	assert_duration("1h", 3600 * S);
	assert_duration("1d", 86400 * S);
	assert_duration("1h2m3s4ms5us6ns", 3723004005006ULL);
	assert_duration("1.5s", 1500 * MS);
	assert_duration("2.5ms", 2500000);
	assert_duration("0.5m", 30 * S);
	assert_duration("1.000000001s", S + 1);
	assert_duration("1.0000000019s", S + 1); /* below a nanosecond: dropped */
	assert_duration("1s500ms", 1500 * MS);
	assert_duration("1d1h1m1s1ms1us1ns", 90061001001001ULL);
	assert_duration("0h0s", 0);
	assert_duration("18446744073709551615ns", UINT64_MAX);
}

static void test_duration_invalid(void **state)
{
	(void)state;
	assert_duration_err("", -EINVAL);
	assert_duration_err("10", -EINVAL); /* a bare number has no unit */
	assert_duration_err("0", -EINVAL);
	assert_duration_err("1.5", -EINVAL);
	assert_duration_err("s", -EINVAL);
	assert_duration_err("1m30", -EINVAL);
	assert_duration_err("1x", -EINVAL);
	assert_duration_err("1S", -EINVAL);
	assert_duration_err("1 s", -EINVAL);
	assert_duration_err("-1s", -EINVAL);
	assert_duration_err("1.s", -EINVAL);
	assert_duration_err(".5s", -EINVAL);
	assert_duration_err("1sec", -EINVAL);
	assert_duration_err("1µs", -EINVAL);
	/* Each unit once, largest first. */
	assert_duration_err("1s1s", -EDOM);
	assert_duration_err("30s1m", -EDOM);
	assert_duration_err("1ms1s", -EDOM);
	assert_duration_err("1m1m30s", -EDOM);
	assert_duration_err("1h30m1h", -EDOM);
	assert_duration_err("0s0s", -EDOM);
	assert_duration_err("1s1s1x", -EINVAL); /* malformed wins */
	assert_duration_err("1s1s1", -EINVAL);
	assert_duration_err("18446744073709551616ns", -ERANGE);
	assert_duration_err("213504d", -ERANGE);
	assert_duration_err("1s18446744073709551615ns", -ERANGE); /* the sum overflows */
	assert_int_equal(cfg_parse_duration(NULL, &(uint64_t){0}), -EINVAL);
}

static void test_percent(void **state)
{
	double v = -1;

	(void)state;
	assert_int_equal(cfg_parse_percent("75%", &v), 0);
	assert_true(v == 0.75);
	assert_int_equal(cfg_parse_percent("12.5%", &v), 0);
	assert_true(v == 0.125);
	assert_int_equal(cfg_parse_percent("0%", &v), 0);
	assert_true(v == 0.0);
	assert_int_equal(cfg_parse_percent("100%", &v), 0);
	assert_true(v == 1.0);
	assert_int_equal(cfg_parse_percent("100.0%", &v), 0);
	assert_true(v == 1.0);
	assert_int_equal(cfg_parse_percent("100.1%", &v), -ERANGE);
	assert_int_equal(cfg_parse_percent("200%", &v), -ERANGE);
	assert_int_equal(cfg_parse_percent("75", &v), -EINVAL);
	assert_int_equal(cfg_parse_percent("", &v), -EINVAL);
	assert_int_equal(cfg_parse_percent("%", &v), -EINVAL);
	assert_int_equal(cfg_parse_percent("-5%", &v), -EINVAL);
	assert_int_equal(cfg_parse_percent("1.%", &v), -EINVAL);
	assert_int_equal(cfg_parse_percent("1.2.3%", &v), -EINVAL);
	assert_int_equal(cfg_parse_percent("50%%", &v), -EINVAL);
	assert_int_equal(cfg_parse_percent(" 50%", &v), -EINVAL);
}

static void test_uint(void **state)
{
	static const char *const bad[] = {
		"",    "-1", "+1", "1.5",  "1.",    ".5",    "32k",
		"1e6", " 1", "1 ", "0x10", "1_000", "1,000",
	};
	uint64_t v = 0;

	(void)state;
	assert_int_equal(cfg_parse_uint("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(cfg_parse_uint("32", &v), 0);
	assert_int_equal(v, 32);
	assert_int_equal(cfg_parse_uint("007", &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(cfg_parse_uint("18446744073709551615", &v), 0);
	assert_int_equal(v, UINT64_MAX);
	v = 12345;
	assert_int_equal(cfg_parse_uint("18446744073709551616", &v), -ERANGE);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (cfg_parse_uint(bad[i], &v) != -EINVAL)
			fail_msg("cfg_parse_uint(\"%s\") accepted", bad[i]);
	assert_int_equal(cfg_parse_uint(NULL, &v), -EINVAL);
	assert_int_equal(v, 12345); /* untouched on failure */
}

static void assert_fmt_percent(double v, const char *want)
{
	char buf[32];

	cfg_format_percent(v, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

/* The shortest form that reads back exactly, for what users write. */
static void test_format_percent(void **state)
{
	static const char *const written[] = {
		"0%",	"100%",	  "50%",    "70%",	   "12.5%",	      "33.333%",
		"0.1%", "99.99%", "0.001%", "66.6666666%", "12.34567890123%", "1.000000000000001%",
	};
	char buf[32];
	double v, back;

	(void)state;
	assert_fmt_percent(0.0, "0%");
	assert_fmt_percent(1.0, "100%");
	assert_fmt_percent(0.5, "50%");
	assert_fmt_percent(0.7, "70%");
	assert_fmt_percent(0.125, "12.5%");
	assert_fmt_percent(0.001, "0.1%");
	for (size_t i = 0; i < sizeof(written) / sizeof(written[0]); i++) {
		assert_int_equal(cfg_parse_percent(written[i], &v), 0);
		cfg_format_percent(v, buf, sizeof(buf));
		assert_int_equal(cfg_parse_percent(buf, &back), 0);
		if (back != v)
			fail_msg("'%s' printed as '%s', which reads back differently", written[i],
				 buf);
	}
	/* "70.0%" is the same value as "70%": printed the short way. */
	assert_int_equal(cfg_parse_percent("70.000%", &v), 0);
	assert_fmt_percent(v, "70%");
}

/* @format prints @v as @want. */
static void assert_formats(void (*format)(uint64_t, char *, size_t), uint64_t v, const char *want)
{
	char buf[64];

	format(v, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

#define assert_fmt_size(v, want)     assert_formats(cfg_format_size, v, want)
#define assert_fmt_duration(v, want) assert_formats(cfg_format_duration, v, want)

static void test_format(void **state)
{
	char small[4];

	(void)state;
	assert_fmt_size(0, "0");
	assert_fmt_size(512, "512");
	assert_fmt_size(4096, "4KiB");
	assert_fmt_size(4097, "4097");
	assert_fmt_size(6 * KIB, "6KiB");
	assert_fmt_size(64 * MIB, "64MiB");
	assert_fmt_size(1536 * KIB, "1536KiB");
	assert_fmt_size(GIB, "1GiB");
	assert_fmt_size(TIB, "1TiB");
	assert_fmt_size(2048 * TIB, "2048TiB");

	assert_fmt_duration(0, "0s");
	assert_fmt_duration(1, "1ns");
	assert_fmt_duration(250000, "250us");
	assert_fmt_duration(500 * MS, "500ms");
	assert_fmt_duration(10 * S, "10s");
	assert_fmt_duration(90 * S, "1m30s");
	assert_fmt_duration(3600 * S, "1h");
	assert_fmt_duration(86400 * S, "24h");
	assert_fmt_duration(1500 * MS, "1s500ms");
	assert_fmt_duration(2500000, "2ms500us");
	assert_fmt_duration(3723004005006ULL, "1h2m3s4ms5us6ns");

	/* Truncated, always terminated. */
	cfg_format_size(64 * MIB, small, sizeof(small));
	assert_string_equal(small, "64M");
	cfg_format_duration(90 * S, small, sizeof(small));
	assert_int_equal(strlen(small), 3);
}

/* Everything we print reads back to the same value. */
static void test_round_trip(void **state)
{
	static const uint64_t sizes[] = {0,    1,	511,	   512,	     4096,
					 4097, 65536,	3 * MIB,   64 * MIB, 5 * GIB + 4096,
					 TIB,  7 * TIB, UINT64_MAX};
	static const uint64_t durs[] = {1,	   999,	      1000,
					10000,	   1500 * MS, 90 * S,
					3599 * S,  86400 * S, 123456789012345ULL,
					UINT64_MAX};
	char buf[64];
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		cfg_format_size(sizes[i], buf, sizeof(buf));
		assert_int_equal(cfg_parse_size(buf, &v), 0);
		assert_int_equal(v, sizes[i]);
	}
	for (size_t i = 0; i < sizeof(durs) / sizeof(durs[0]); i++) {
		cfg_format_duration(durs[i], buf, sizeof(buf));
		assert_int_equal(cfg_parse_duration(buf, &v), 0);
		assert_int_equal(v, durs[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_valid),     cmocka_unit_test(test_size_invalid),
		cmocka_unit_test(test_duration_valid), cmocka_unit_test(test_duration_invalid),
		cmocka_unit_test(test_percent),	       cmocka_unit_test(test_format),
		cmocka_unit_test(test_round_trip),     cmocka_unit_test(test_uint),
		cmocka_unit_test(test_format_percent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
