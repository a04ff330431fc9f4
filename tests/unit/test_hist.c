/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for daemon/hist: bucket layout, classic buckets, merge, and
 * quantiles checked against exact nearest-rank quantiles of the same samples
 * within the bound stated in hist.c (|estimate - exact| <= exact / 256).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "daemon/hist.h"

#define MS 1000000ull
#define US 1000ull

static const uint64_t bounds[] = {100 * US, 500 * US, 1 * MS, 5 * MS, 10 * MS, 100 * MS, 1000 * MS};
#define N_BOUNDS (sizeof(bounds) / sizeof(bounds[0]))

/* ---- bucket layout ---- */

static void check_in_bucket(uint64_t v)
{
	unsigned idx = hist_fine_index(v);
	uint64_t lo, hi;

	assert_true(idx < HIST_N_FINE);
	hist_fine_range(idx, &lo, &hi);
	if (idx < HIST_N_FINE - 1) {
		assert_true(lo <= v);
		assert_true(v <= hi);
	}
}

static void test_bucket_edges(void **state)
{
	uint64_t lo, hi;
	unsigned i, k;

	(void)state;
	/* Unit buckets below 256. */
	for (i = 0; i < 256; i++) {
		assert_int_equal(hist_fine_index(i), i);
		hist_fine_range(i, &lo, &hi);
		assert_int_equal(lo, i);
		assert_int_equal(hi, i);
	}
	assert_int_equal(hist_fine_index(0), 0);
	assert_int_equal(hist_fine_index(1), 1);
	assert_int_equal(hist_fine_index(127), 127);
	assert_int_equal(hist_fine_index(128), 128);
	assert_int_equal(hist_fine_index(129), 129);
	/* 256 and 257 share a width-2 bucket. */
	assert_int_equal(hist_fine_index(256), 256);
	assert_int_equal(hist_fine_index(257), 256);
	assert_int_equal(hist_fine_index(258), 257);

	/* Each power of two starts a group; the value below ends the previous one. */
	for (k = 8; k <= 40; k++) {
		uint64_t p = 1ull << k;
		unsigned idx = hist_fine_index(p);

		assert_int_equal(idx, (k - 7 + 1) * 128);
		assert_int_equal(hist_fine_index(p - 1), idx - 1);
		hist_fine_range(idx, &lo, &hi);
		assert_int_equal(lo, p);
		assert_int_equal(hi - lo + 1, 1ull << (k - 7));
		check_in_bucket(p - 1);
		check_in_bucket(p);
		check_in_bucket(p + 1);
		check_in_bucket(p + p / 3);
	}

	/* Buckets tile the range with no gap and no overlap. */
	for (i = 1; i < HIST_N_FINE; i++) {
		uint64_t plo, phi;

		hist_fine_range(i - 1, &plo, &phi);
		hist_fine_range(i, &lo, &hi);
		assert_int_equal(lo, phi + 1);
	}
	hist_fine_range(HIST_N_FINE - 1, &lo, &hi);
	assert_int_equal(hi, (1ull << 41) - 1);

	/* Past the range: clamped into the last bucket. */
	assert_int_equal(hist_fine_index((1ull << 41) - 1), HIST_N_FINE - 1);
	assert_int_equal(hist_fine_index(1ull << 41), HIST_N_FINE - 1);
	assert_int_equal(hist_fine_index(UINT64_MAX), HIST_N_FINE - 1);
}

static void test_overflow_clamped(void **state)
{
	struct hist *h = hist_new(bounds, N_BOUNDS);

	(void)state;
	assert_non_null(h);
	hist_record(h, 1ull << 40);
	assert_int_equal(hist_overflow(h), 0);
	hist_record(h, 1ull << 41);
	hist_record(h, UINT64_MAX);
	assert_int_equal(hist_overflow(h), 2);
	assert_int_equal(hist_count(h), 3);
	assert_int_equal(hist_fine_count(h, HIST_N_FINE - 1), 2);
	assert_int_equal(hist_max_ns(h), UINT64_MAX);
	assert_int_equal(hist_min_ns(h), 1ull << 40);
	assert_int_equal(hist_sum_ns(h), UINT64_MAX); /* saturated */
	/* The median landed in the clamp bucket: reported as max. */
	assert_int_equal(hist_quantile_ns(h, 0.5), UINT64_MAX);
	hist_free(h);
}

/* ---- classic buckets ---- */

static void test_new_rejects_bad_bounds(void **state)
{
	static const uint64_t unsorted[] = {5, 3};
	static const uint64_t dup[] = {5, 5};
	uint64_t many[HIST_MAX_BOUNDS + 1];
	struct hist *h;
	unsigned i;

	(void)state;
	for (i = 0; i <= HIST_MAX_BOUNDS; i++)
		many[i] = i + 1;
	assert_null(hist_new(unsorted, 2));
	assert_null(hist_new(dup, 2));
	assert_null(hist_new(many, HIST_MAX_BOUNDS + 1));
	assert_null(hist_new(NULL, 3));
	h = hist_new(many, HIST_MAX_BOUNDS);
	assert_non_null(h);
	hist_free(h);
	h = hist_new(NULL, 0);
	assert_non_null(h);
	assert_int_equal(hist_n_bounds(h), 0);
	hist_record(h, 42);
	assert_int_equal(hist_count(h), 1);
	hist_free(h);
	hist_free(NULL);
}

static void test_classic_exact_at_bounds(void **state)
{
	uint64_t cum[N_BOUNDS];
	unsigned i, j;

	(void)state;
	/* For each bound b: b - 1 and b count in b's bucket ("le" is <=), b + 1 does not. */
	for (i = 0; i < N_BOUNDS; i++) {
		const int64_t deltas[] = {-1, 0, 1};

		for (j = 0; j < 3; j++) {
			struct hist *h = hist_new(bounds, N_BOUNDS);
			uint64_t v = bounds[i] + (uint64_t)deltas[j];
			unsigned k;

			assert_non_null(h);
			hist_record(h, v);
			hist_cumulative(h, cum);
			for (k = 0; k < N_BOUNDS; k++)
				assert_int_equal(cum[k], v <= bounds[k] ? 1 : 0);
			hist_free(h);
		}
	}
}

static void test_classic_cumulative(void **state)
{
	struct hist *h = hist_new(bounds, N_BOUNDS);
	uint64_t cum[N_BOUNDS], v;
	unsigned k, i;

	(void)state;
	assert_non_null(h);
	assert_int_equal(hist_n_bounds(h), N_BOUNDS);
	for (k = 0; k < N_BOUNDS; k++)
		assert_int_equal(hist_bounds_ns(h)[k], bounds[k]);
	/* 0, then every 7 us up to 2 s */
	for (v = 0; v <= 2000 * MS; v += 7 * US)
		hist_record(h, v);
	hist_cumulative(h, cum);
	for (k = 0; k < N_BOUNDS; k++) {
		uint64_t want = bounds[k] / (7 * US) + 1;

		assert_int_equal(cum[k], want);
	}
	assert_int_equal(hist_count(h), 2000 * MS / (7 * US) + 1);
	for (i = 1; i < N_BOUNDS; i++)
		assert_true(cum[i] >= cum[i - 1]);
	hist_free(h);
}

static void test_count_sum_min_max(void **state)
{
	struct hist *h = hist_new(bounds, N_BOUNDS);

	(void)state;
	assert_non_null(h);
	assert_int_equal(hist_count(h), 0);
	assert_int_equal(hist_sum_ns(h), 0);
	assert_int_equal(hist_min_ns(h), 0);
	assert_int_equal(hist_max_ns(h), 0);
	assert_int_equal(hist_quantile_ns(h, 0.5), 0);

	hist_record(h, 300);
	hist_record(h, 7);
	hist_record(h, 123456789);
	assert_int_equal(hist_count(h), 3);
	assert_int_equal(hist_sum_ns(h), 300 + 7 + 123456789);
	assert_int_equal(hist_min_ns(h), 7);
	assert_int_equal(hist_max_ns(h), 123456789);

	hist_clear(h);
	assert_int_equal(hist_count(h), 0);
	assert_int_equal(hist_min_ns(h), 0);
	assert_int_equal(hist_max_ns(h), 0);
	hist_record(h, 0);
	assert_int_equal(hist_count(h), 1);
	assert_int_equal(hist_min_ns(h), 0);
	assert_int_equal(hist_max_ns(h), 0);
	hist_free(h);
}

/* ---- merge ---- */

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

static void assert_hist_equal(const struct hist *a, const struct hist *b)
{
	uint64_t ca[N_BOUNDS], cb[N_BOUNDS];
	unsigned i;

	assert_int_equal(hist_count(a), hist_count(b));
	assert_int_equal(hist_sum_ns(a), hist_sum_ns(b));
	assert_int_equal(hist_min_ns(a), hist_min_ns(b));
	assert_int_equal(hist_max_ns(a), hist_max_ns(b));
	assert_int_equal(hist_overflow(a), hist_overflow(b));
	for (i = 0; i < HIST_N_FINE; i++)
		assert_int_equal(hist_fine_count(a, i), hist_fine_count(b, i));
	hist_cumulative(a, ca);
	hist_cumulative(b, cb);
	for (i = 0; i < N_BOUNDS; i++)
		assert_int_equal(ca[i], cb[i]);
	assert_int_equal(hist_quantile_ns(a, 0.99), hist_quantile_ns(b, 0.99));
}

static void test_merge_equals_recording_both(void **state)
{
	struct hist *a = hist_new(bounds, N_BOUNDS), *b = hist_new(bounds, N_BOUNDS);
	struct hist *both = hist_new(bounds, N_BOUNDS), *empty = hist_new(bounds, N_BOUNDS);
	uint64_t s = 0x9e3779b97f4a7c15ull;
	unsigned i;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(both);
	assert_non_null(empty);
	for (i = 0; i < 5000; i++) {
		uint64_t v = xorshift(&s) % (3000 * MS);

		hist_record(i % 3 ? a : b, v);
		hist_record(both, v);
	}
	hist_record(b, 1ull << 42); /* an overflow travels too */
	hist_record(both, 1ull << 42);

	assert_int_equal(hist_merge(a, b), 0);
	assert_hist_equal(a, both);
	/* Merging an empty histogram changes nothing, in either direction. */
	assert_int_equal(hist_merge(a, empty), 0);
	assert_hist_equal(a, both);
	assert_int_equal(hist_merge(empty, both), 0);
	assert_hist_equal(empty, both);
	hist_free(a);
	hist_free(b);
	hist_free(both);
	hist_free(empty);
}

static void test_merge_different_bounds_fails(void **state)
{
	static const uint64_t other[] = {100 * US, 500 * US, 2 * MS};
	struct hist *a = hist_new(bounds, N_BOUNDS), *b = hist_new(other, 3);
	struct hist *c = hist_new(bounds, N_BOUNDS - 1);

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	hist_record(a, 5);
	hist_record(b, 7);
	hist_record(c, 9);
	assert_int_equal(hist_merge(a, b), -EINVAL);
	assert_int_equal(hist_merge(a, c), -EINVAL);
	assert_int_equal(hist_count(a), 1); /* nothing changed */
	assert_int_equal(hist_sum_ns(a), 5);
	hist_free(a);
	hist_free(b);
	hist_free(c);
}

/* ---- quantiles ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Exact nearest-rank quantile of sorted samples, with hist.c's rank rule. */
static uint64_t exact_quantile(const uint64_t *sorted, size_t n, double q)
{
	double r = ceil(q * (double)n);
	size_t rank = r < 1 ? 1 : (r > (double)n ? n : (size_t)r);

	return sorted[rank - 1];
}

static void check_quantiles(uint64_t *samples, size_t n)
{
	static const double qs[] = {0.5, 0.9, 0.99, 0.999};
	struct hist *h = hist_new(bounds, N_BOUNDS);
	unsigned i;

	assert_non_null(h);
	for (i = 0; i < n; i++)
		hist_record(h, samples[i]);
	qsort(samples, n, sizeof(*samples), cmp_u64);

	for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t exact = exact_quantile(samples, n, qs[i]);
		uint64_t est = hist_quantile_ns(h, qs[i]);
		uint64_t err = est > exact ? est - exact : exact - est;

		/* |est - exact| <= exact / 256, in integers: 256 * err <= exact */
		if (err * 256 > exact)
			fail_msg("q=%g exact=%llu est=%llu", qs[i], (unsigned long long)exact,
				 (unsigned long long)est);
		assert_true(est >= samples[0] && est <= samples[n - 1]);
	}
	assert_int_equal(hist_quantile_ns(h, 0), samples[0]);
	assert_int_equal(hist_quantile_ns(h, 1), samples[n - 1]);
	assert_int_equal(hist_quantile_ns(h, -1), samples[0]);
	assert_int_equal(hist_quantile_ns(h, 2), samples[n - 1]);
	assert_int_equal(hist_min_ns(h), samples[0]);
	assert_int_equal(hist_max_ns(h), samples[n - 1]);
	hist_free(h);
}

#define N_SAMPLES 200000

static double uniform01(uint64_t *s)
{
	/* (0, 1]: never 0, so log() is safe */
	return ((double)(xorshift(s) >> 11) + 1.0) / 9007199254740992.0;
}

static double gaussian(uint64_t *s)
{
	double u1 = uniform01(s), u2 = uniform01(s);

	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static void test_quantiles_uniform(void **state)
{
	uint64_t *v = malloc(N_SAMPLES * sizeof(*v)), s = 1;
	size_t i;

	(void)state;
	assert_non_null(v);
	for (i = 0; i < N_SAMPLES; i++)
		v[i] = xorshift(&s) % (50 * MS);
	check_quantiles(v, N_SAMPLES);
	/* Small values are exact. */
	for (i = 0; i < N_SAMPLES; i++)
		v[i] = xorshift(&s) % 256;
	check_quantiles(v, N_SAMPLES);
	free(v);
}

static void test_quantiles_lognormal(void **state)
{
	uint64_t *v = malloc(N_SAMPLES * sizeof(*v)), s = 42;
	size_t i;

	(void)state;
	assert_non_null(v);
	/* median ~ 200 us, sigma 1.5: spans ns to seconds */
	for (i = 0; i < N_SAMPLES; i++)
		v[i] = (uint64_t)exp(log(200e3) + 1.5 * gaussian(&s));
	check_quantiles(v, N_SAMPLES);
	free(v);
}

static void test_quantiles_bimodal(void **state)
{
	uint64_t *v = malloc(N_SAMPLES * sizeof(*v)), s = 7;
	size_t i;

	(void)state;
	assert_non_null(v);
	/* 95% cache hits around 80 us, 5% seeks around 8 ms */
	for (i = 0; i < N_SAMPLES; i++) {
		double mean = xorshift(&s) % 100 < 95 ? 80e3 : 8e6;
		double x = mean * (1.0 + 0.1 * gaussian(&s));

		v[i] = x < 1 ? 1 : (uint64_t)x;
	}
	check_quantiles(v, N_SAMPLES);
	free(v);
}

static void test_quantiles_constant(void **state)
{
	static const uint64_t values[] = {0, 1, 255, 256, 257, 1234567, 1ull << 40};
	uint64_t *v = malloc(1000 * sizeof(*v));
	unsigned i, j;

	(void)state;
	assert_non_null(v);
	for (j = 0; j < sizeof(values) / sizeof(values[0]); j++) {
		struct hist *h = hist_new(bounds, N_BOUNDS);

		assert_non_null(h);
		for (i = 0; i < 1000; i++) {
			v[i] = values[j];
			hist_record(h, values[j]);
		}
		/* Clamped to [min, max] == the value itself: exact. */
		assert_int_equal(hist_quantile_ns(h, 0.5), values[j]);
		assert_int_equal(hist_quantile_ns(h, 0.999), values[j]);
		hist_free(h);
		check_quantiles(v, 1000);
	}
	free(v);
}

static void test_quantile_single_and_pair(void **state)
{
	struct hist *h = hist_new(bounds, N_BOUNDS);

	(void)state;
	assert_non_null(h);
	hist_record(h, 987654321);
	assert_int_equal(hist_quantile_ns(h, 0.5), 987654321);
	hist_record(h, 5);
	assert_int_equal(hist_quantile_ns(h, 0.5), 5);		/* rank 1 of 2 */
	assert_int_equal(hist_quantile_ns(h, 0.51), 987654321); /* rank 2 of 2 */
	hist_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket_edges),
		cmocka_unit_test(test_overflow_clamped),
		cmocka_unit_test(test_new_rejects_bad_bounds),
		cmocka_unit_test(test_classic_exact_at_bounds),
		cmocka_unit_test(test_classic_cumulative),
		cmocka_unit_test(test_count_sum_min_max),
		cmocka_unit_test(test_merge_equals_recording_both),
		cmocka_unit_test(test_merge_different_bounds_fails),
		cmocka_unit_test(test_quantiles_uniform),
		cmocka_unit_test(test_quantiles_lognormal),
		cmocka_unit_test(test_quantiles_bimodal),
		cmocka_unit_test(test_quantiles_constant),
		cmocka_unit_test(test_quantile_single_and_pair),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
