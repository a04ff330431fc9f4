/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for daemon/hist: the bucket layout against its definition over
 * seconds (native schema 7), classic buckets, merge, quantiles checked against
 * exact nearest-rank quantiles of the same samples within the bound stated in
 * hist.c (|estimate - exact| <= exact * (2^(1/128) - 1) / 2 + 1/2 ns, hence
 * < 0.543 %), and the native view: exact downscale to every schema, spans and
 * deltas, zero bucket.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "daemon/metrics/hist.h"
#include "tests/samples.h"

#define MS 1000000ull
#define US 1000ull
#define S  1000000000ull

static const uint64_t bounds[] = {100 * US, 500 * US, 1 * MS, 5 * MS, 10 * MS, 100 * MS, 1000 * MS};
#define N_BOUNDS (sizeof(bounds) / sizeof(bounds[0]))

/* ---- helpers (samples: tests/samples.h) ---- */

/* The definition, computed independently of hist.c: the native bucket of
 * @ns > 0 at @schema is ceil(2^schema * log2(ns / 1e9)). long double: the closest
 * an in-range boundary comes to an integer ns is ~1e-16 relative, far above its
 * ~1e-19 error; exact powers of two come out exact. */
static int native_index_def(uint64_t ns, int schema)
{
	return (int)ceill(ldexpl(log2l((long double)ns / 1e9L), schema));
}

/* Schema-7 native index of a fine bucket f >= 1. */
static int fine_native(unsigned f)
{
	return (int)f - 1 + HIST_NATIVE_IDX_MIN;
}

/* ---- bucket layout ---- */

static void test_bucket_edges(void **state)
{
	uint64_t lo, hi, plo, phi;
	unsigned f;
	int i;

	(void)state;
	assert_int_equal(HIST_N_FINE, HIST_NATIVE_IDX_MAX - HIST_NATIVE_IDX_MIN + 2);
	/* Zero has its own bucket. */
	assert_int_equal(hist_fine_index(0), 0);
	hist_fine_range(0, &lo, &hi);
	assert_int_equal(lo, 0);
	assert_int_equal(hi, 0);

	/* Buckets tile the integers with no gap and no overlap; each integer they hold
	 * maps back to them. */
	for (f = 1; f < HIST_N_FINE; f++) {
		hist_fine_range(f - 1, &plo, &phi);
		hist_fine_range(f, &lo, &hi);
		assert_int_equal(lo, phi + 1);
		if (lo <= hi) {
			assert_int_equal(hist_fine_index(lo), f);
			assert_int_equal(hist_fine_index(hi), f);
		}
	}
	hist_fine_range(HIST_N_FINE - 1, &lo, &hi);
	assert_int_equal(hi, HIST_MAX_NS);

	/* Every boundary B_i = 1e9 * 2^(i/128) ns, computed here with powl: floor(B_i)
	 * is the last integer of bucket i, the next one starts bucket i + 1 (upper
	 * bound inclusive, so exact 2^k s stay in the lower bucket). */
	for (i = HIST_NATIVE_IDX_MIN; i <= HIST_NATIVE_IDX_MAX; i++) {
		long double b = 1e9L * powl(2.0L, (long double)i / 128.0L);
		uint64_t t = (uint64_t)floorl(b);

		uint64_t t0 = (uint64_t)floorl(1e9L * powl(2.0L, (long double)(i - 1) / 128.0L));
		uint64_t t1 = (uint64_t)floorl(1e9L * powl(2.0L, (long double)(i + 1) / 128.0L));

		/* Bucket i holds the integers t0 + 1 .. t, none when t0 == t. */
		if (t > t0) {
			assert_int_equal(fine_native(hist_fine_index(t)), i);
			assert_int_equal(fine_native(hist_fine_index(t0 + 1)), i);
		} else if (t >= 1) {
			assert_true(fine_native(hist_fine_index(t)) < i);
		}
		if (i == HIST_NATIVE_IDX_MAX)
			break;
		/* t + 1 is in bucket i + 1, or further up when i + 1 holds no integer
		 * (below ~185 ns buckets are narrower than 1 ns). */
		if (t1 > t)
			assert_int_equal(fine_native(hist_fine_index(t + 1)), i + 1);
		else
			assert_true(fine_native(hist_fine_index(t + 1)) > i + 1);
	}

	/* Whole seconds and exact powers of two of them. */
	assert_int_equal(fine_native(hist_fine_index(1 * S)), 0);
	assert_int_equal(fine_native(hist_fine_index(1 * S + 1)), 1);
	assert_int_equal(fine_native(hist_fine_index(1 * S - 1)), 0);
	assert_int_equal(fine_native(hist_fine_index(S / 2)), -128);
	assert_int_equal(fine_native(hist_fine_index(S / 2 + 1)), -127);
	assert_int_equal(fine_native(hist_fine_index(2 * S)), 128);
	assert_int_equal(fine_native(hist_fine_index(2 * S + 1)), 129);
	assert_int_equal(fine_native(hist_fine_index(S >> 9)), -9 * 128); /* 2^-9 s = 1953125 ns */
	assert_int_equal(fine_native(hist_fine_index((S >> 9) + 1)), -9 * 128 + 1);
	assert_int_equal(fine_native(hist_fine_index(1024 * S)), 10 * 128);
	assert_int_equal(fine_native(hist_fine_index(1024 * S + 1)), 10 * 128 + 1);
	/* 1 ns: ceil(128 * log2(1e-9)) = ceil(-3826.86) */
	assert_int_equal(hist_fine_index(1), 1);
	assert_int_equal(fine_native(1), -3826);
	hist_fine_range(1, &lo, &hi);
	assert_int_equal(lo, 1);
	assert_int_equal(hi, 1);

	/* Clamping: the top of the range is the last bucket, past it too. */
	assert_int_equal(hist_fine_index(HIST_MAX_NS), HIST_N_FINE - 1);
	assert_int_equal(hist_fine_index(HIST_MAX_NS - 1), HIST_N_FINE - 1);
	assert_int_equal(hist_fine_index(HIST_MAX_NS + 1), HIST_N_FINE - 1);
	assert_int_equal(hist_fine_index(UINT64_MAX), HIST_N_FINE - 1);
	assert_int_equal(fine_native(HIST_N_FINE - 1), HIST_NATIVE_IDX_MAX);
	/* Out-of-range indexes read as nothing. */
	hist_fine_range(HIST_N_FINE, &lo, &hi);
	assert_int_equal(lo, 0);
	assert_int_equal(hi, 0);
}

static void test_index_matches_definition(void **state)
{
	uint64_t s = 12345;
	unsigned n;

	(void)state;
	/* Log-uniform over the whole range, and every integer up to 100000. */
	for (n = 0; n < 1000000; n++) {
		uint64_t v = (uint64_t)exp2(sample_uniform01(&s) * 41.0);

		if (v < 1 || v > HIST_MAX_NS)
			continue;
		assert_int_equal(fine_native(hist_fine_index(v)), native_index_def(v, 7));
	}
	for (n = 1; n <= 100000; n++)
		assert_int_equal(fine_native(hist_fine_index(n)), native_index_def(n, 7));
}

static void test_overflow_clamped(void **state)
{
	struct hist *h = hist_new(bounds, N_BOUNDS);

	(void)state;
	assert_non_null(h);
	hist_record(h, 1ull << 40);
	hist_record(h, HIST_MAX_NS);
	assert_int_equal(hist_overflow(h), 0);
	assert_int_equal(hist_fine_count(h, HIST_N_FINE - 1), 1);
	hist_record(h, HIST_MAX_NS + 1);
	hist_record(h, UINT64_MAX);
	assert_int_equal(hist_overflow(h), 2);
	assert_int_equal(hist_count(h), 4);
	assert_int_equal(hist_fine_count(h, HIST_N_FINE - 1), 3);
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
	assert_int_equal(hist_fine_count(h, 0), 1); /* the zero bucket */
	assert_int_equal(hist_count(h), 1);
	assert_int_equal(hist_min_ns(h), 0);
	assert_int_equal(hist_max_ns(h), 0);
	hist_free(h);
}

/* Random values against a linear count, for every number of bounds 1..64 (the
 * binary search's shape depends on it), with values at and around each bound. */
static void test_classic_random_against_linear(void **state)
{
	uint64_t b[HIST_MAX_BOUNDS], cum[HIST_MAX_BOUNDS], want[HIST_MAX_BOUNDS];
	uint64_t s = 99;
	unsigned n, i, k, j;

	(void)state;
	for (n = 1; n <= HIST_MAX_BOUNDS; n++) {
		struct hist *h;
		uint64_t prev = 0;

		for (i = 0; i < n; i++) {
			prev += 1 + sample_xorshift(&s) % (1 + (prev >> 1)) + 5;
			b[i] = prev;
		}
		h = hist_new(b, n);
		assert_non_null(h);
		for (i = 0; i < n; i++)
			want[i] = 0;
		for (k = 0; k < 2000 + 5 * n; k++) {
			uint64_t v;

			if (k < 5 * n)
				v = b[k / 5] + (k % 5) - 2; /* b - 2 .. b + 2 */
			else
				v = sample_xorshift(&s) % (b[n - 1] + b[n - 1] / 4 + 2);
			hist_record(h, v);
			for (j = 0; j < n; j++)
				want[j] += v <= b[j];
		}
		hist_cumulative(h, cum);
		for (i = 0; i < n; i++)
			assert_int_equal(cum[i], want[i]);
		hist_free(h);
	}
}

/* Several bounds inside one fine bucket, and bounds past the clamp. */
static void test_classic_bounds_inside_one_bucket(void **state)
{
	static const uint64_t b[] = {1000000, 1000001,	       1000002,
				     1000004, HIST_MAX_NS + 5, HIST_MAX_NS + 10};
	uint64_t cum[6];
	struct hist *h = hist_new(b, 6);
	uint64_t v;
	unsigned k;

	(void)state;
	assert_non_null(h);
	assert_int_equal(hist_fine_index(1000000), hist_fine_index(1000004));
	for (v = 999990; v <= 1000010; v++)
		hist_record(h, v);
	for (v = HIST_MAX_NS; v <= HIST_MAX_NS + 12; v++)
		hist_record(h, v);
	hist_cumulative(h, cum);
	assert_int_equal(cum[0], 11); /* 999990 .. 1000000 */
	assert_int_equal(cum[1], 12);
	assert_int_equal(cum[2], 13);
	assert_int_equal(cum[3], 15);
	assert_int_equal(cum[4], 21 + 6); /* HIST_MAX_NS .. + 5 */
	assert_int_equal(cum[5], 21 + 11);
	for (k = 0; k < 6; k++)
		assert_true(cum[k] <= hist_count(h));
	assert_int_equal(hist_count(h), 21 + 13);
	hist_free(h);
}

/* ---- merge ---- */

static void assert_native_equal(const struct hist *a, const struct hist *b, int schema)
{
	struct hist_native na, nb;
	unsigned i;

	assert_int_equal(hist_native(a, schema, 0x1p-128, &na), 0);
	assert_int_equal(hist_native(b, schema, 0x1p-128, &nb), 0);
	assert_int_equal(na.zero_count, nb.zero_count);
	assert_int_equal(na.n_spans, nb.n_spans);
	assert_int_equal(na.n_deltas, nb.n_deltas);
	for (i = 0; i < na.n_spans; i++) {
		assert_int_equal(na.spans[i].offset, nb.spans[i].offset);
		assert_int_equal(na.spans[i].length, nb.spans[i].length);
	}
	for (i = 0; i < na.n_deltas; i++)
		assert_int_equal(na.deltas[i], nb.deltas[i]);
	hist_native_free(&na);
	hist_native_free(&nb);
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
	assert_native_equal(a, b, 7);
	assert_native_equal(a, b, 3);
	assert_native_equal(a, b, -4);
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
	for (i = 0; i < 20000; i++) {
		uint64_t v = i % 1000 == 0 ? 0 : (uint64_t)exp2(sample_uniform01(&s) * 36.0);

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

/* merge and clear write only the buckets that can hold samples (hist.c keeps
 * the rest of its pages untouched): buckets that hist_add_fine() fills outside
 * min..max (those holding no integer widen min and max to a neighbour) must
 * still travel in a merge and go in a clear. */
static void test_merge_clear_added_buckets(void **state)
{
	static const uint64_t other[] = {1 * US, 2 * MS, 1 * S};
	struct hist *a = hist_new(bounds, N_BOUNDS), *b = hist_new(bounds, N_BOUNDS);
	struct hist *c = hist_new(other, 3); /* after a and b: its slots are not theirs */
	uint64_t lo, hi;
	unsigned f;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	for (f = 1;; f++) { /* the first bucket holding no integer */
		hist_fine_range(f, &lo, &hi);
		if (lo > hi)
			break;
	}
	hist_add_fine(a, f, 3); /* min = max = an integer of a bucket below f */
	assert_int_equal(hist_merge(b, a), 0);
	assert_hist_equal(b, a);
	hist_clear(a);
	assert_int_equal(hist_fine_count(a, f), 0);
	hist_add_fine(a, f, 3);
	hist_add_fine(a, hist_fine_index(7 * MS), 2);
	hist_clear(b);
	assert_int_equal(hist_merge(b, a), 0);
	assert_hist_equal(b, a);
	hist_clear(a);
	assert_int_equal(hist_fine_count(a, f), 0);
	assert_int_equal(hist_fine_count(a, hist_fine_index(7 * MS)), 0);
	hist_record(a, 5);
	assert_int_equal(hist_count(a), 1);
	assert_int_equal(hist_fine_count(a, f), 0);
	/* Histograms of other bounds, made and freed in between, share nothing. */
	hist_record(c, 5 * MS); /* bounds' slots would put it above all of c's */
	{
		uint64_t cum[3];

		hist_cumulative(c, cum);
		assert_int_equal(cum[0], 0);
		assert_int_equal(cum[1], 0);
		assert_int_equal(cum[2], 1);
	}
	hist_free(c);
	hist_record(b, 3 * US);
	assert_int_equal(hist_count(b), 6);
	{
		uint64_t cum[N_BOUNDS];

		hist_cumulative(b, cum);
		assert_int_equal(cum[0], 4); /* 3 tiny ones and 3 us under 100 us */
		assert_int_equal(cum[3], 4); /* 7 ms is above 5 ms */
		assert_int_equal(cum[4], 6);
	}
	hist_free(a);
	hist_free(b);
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
	assert_int_equal(hist_fine_count(a, hist_fine_index(7)), 0);
	hist_free(a);
	hist_free(b);
	hist_free(c);
}

/* ---- quantiles ---- */

/* The bound hist.c states: |est - x| <= x * (2^(1/128) - 1) / 2 + 1/2 ns, and
 * < x * (2^(1/128) - 1) (0.543 %, under the 1 % the issue asks for). */
static void check_bound(uint64_t exact, uint64_t est, double q)
{
	double r1 = exp2(1.0 / 128) - 1, err = fabs((double)est - (double)exact);

	if (err > (double)exact * r1 / 2 + 0.5 || (err > 0 && err >= (double)exact * r1) ||
	    err > (double)exact * 0.01)
		fail_msg("q=%g exact=%llu est=%llu", q, (unsigned long long)exact,
			 (unsigned long long)est);
}

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

		check_bound(exact, est, qs[i]);
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

static void test_quantiles_uniform(void **state)
{
	uint64_t *v = malloc(N_SAMPLES * sizeof(*v)), s = 1;
	size_t i;

	(void)state;
	assert_non_null(v);
	for (i = 0; i < N_SAMPLES; i++)
		v[i] = sample_xorshift(&s) % (50 * MS);
	check_quantiles(v, N_SAMPLES);
	/* Small values: exact below 185 ns, within the bound above. */
	for (i = 0; i < N_SAMPLES; i++)
		v[i] = sample_xorshift(&s) % 256;
	check_quantiles(v, N_SAMPLES);
	for (i = 0; i < N_SAMPLES; i++)
		v[i] = sample_xorshift(&s) % 185;
	check_quantiles(v, N_SAMPLES); /* the bound's 1/2 ns term is 0 here */
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
		v[i] = (uint64_t)exp(log(200e3) + 1.5 * sample_gaussian(&s));
	check_quantiles(v, N_SAMPLES);
	/* median ~ 100 us, sigma 0.3: a healthy SSD */
	for (i = 0; i < N_SAMPLES; i++)
		v[i] = (uint64_t)exp(log(100e3) + 0.3 * sample_gaussian(&s));
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
		double mean = sample_xorshift(&s) % 100 < 95 ? 80e3 : 8e6;
		double x = mean * (1.0 + 0.1 * sample_gaussian(&s));

		v[i] = x < 1 ? 1 : (uint64_t)x;
	}
	check_quantiles(v, N_SAMPLES);
	free(v);
}

static void test_quantiles_constant(void **state)
{
	static const uint64_t values[] = {0,   1,	184, 185,   255,	256,
					  257, 1234567, S,   S + 1, 1ull << 40, HIST_MAX_NS};
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

/* The worst cases of the bound: for every bucket, its lowest and highest integer
 * as the middle of {0, x, HIST_MAX_NS}, so the min/max clamp does not help. */
static void test_quantile_bound_every_bucket(void **state)
{
	struct hist *h = hist_new(NULL, 0);
	double worst = 0;
	unsigned f, e;

	(void)state;
	assert_non_null(h);
	for (f = 1; f < HIST_N_FINE - 1; f++) {
		uint64_t lo, hi, xs[2];

		hist_fine_range(f, &lo, &hi);
		if (lo > hi)
			continue;
		xs[0] = lo;
		xs[1] = hi;
		for (e = 0; e < 2; e++) {
			uint64_t est;

			hist_clear(h);
			hist_record(h, 0);
			hist_record(h, xs[e]);
			hist_record(h, HIST_MAX_NS);
			est = hist_quantile_ns(h, 0.5);
			check_bound(xs[e], est, 0.5);
			if (fabs((double)est - (double)xs[e]) / (double)xs[e] > worst)
				worst = fabs((double)est - (double)xs[e]) / (double)xs[e];
		}
	}
	/* The stated bound is reached, not just respected: the worst case is an
	 * integer rounding step just above 184 ns. */
	assert_true(worst > 0.005 && worst < exp2(1.0 / 128) - 1);
	hist_free(h);
}

/* ---- native view ---- */

#define NAT_BASE 4000 /* decoded index i lives at counts[i + NAT_BASE] */
#define NAT_SIZE 6000

/* Decode spans and deltas into absolute per-index counts, checking the encoding:
 * lengths add up to the deltas, no count goes negative, spans are separated by
 * more than two empty buckets, begin and end with a non-empty bucket and hold
 * at most two empty buckets in a row. Returns the total of the buckets. */
static uint64_t native_decode(const struct hist_native *n, uint64_t *counts)
{
	int64_t c = 0;
	uint64_t total = 0;
	unsigned s, k, d = 0, run;
	int idx = 0;

	for (s = 0; s < NAT_SIZE; s++)
		counts[s] = 0;
	for (s = 0; s < n->n_spans; s++) {
		idx += n->spans[s].offset;
		if (s > 0)
			assert_true(n->spans[s].offset > 2);
		assert_true(n->spans[s].length > 0);
		run = 0;
		for (k = 0; k < n->spans[s].length; k++, idx++, d++) {
			assert_true(d < n->n_deltas);
			c += n->deltas[d];
			assert_true(c >= 0);
			if (k == 0 || k == n->spans[s].length - 1)
				assert_true(c > 0);
			run = c ? 0 : run + 1;
			assert_true(run <= 2);
			assert_true(idx + NAT_BASE >= 0 && idx + NAT_BASE < NAT_SIZE);
			counts[idx + NAT_BASE] = (uint64_t)c;
			total += (uint64_t)c;
		}
	}
	assert_int_equal(d, n->n_deltas);
	return total;
}

static void test_native_empty_and_invalid(void **state)
{
	struct hist *h = hist_new(bounds, N_BOUNDS);
	struct hist_native n;
	int s;

	(void)state;
	assert_non_null(h);
	for (s = HIST_NATIVE_MIN; s <= HIST_NATIVE_SCHEMA; s++) {
		assert_int_equal(hist_native(h, s, 0x1p-128, &n), 0);
		assert_int_equal(n.schema, s);
		assert_true(n.zero_threshold == 0x1p-128);
		assert_int_equal(n.zero_count, 0);
		assert_int_equal(n.n_spans, 0);
		assert_int_equal(n.n_deltas, 0);
		assert_null(n.spans);
		assert_null(n.deltas);
		hist_native_free(&n);
	}
	assert_int_equal(hist_native(h, HIST_NATIVE_MIN - 1, 0, &n), -EINVAL);
	assert_int_equal(hist_native(h, HIST_NATIVE_SCHEMA + 1, 0, &n), -EINVAL);
	assert_int_equal(hist_native(h, 3, -1.0, &n), -EINVAL);
	assert_int_equal(hist_native(h, 3, NAN, &n), -EINVAL);
	assert_int_equal(hist_native(h, 3, INFINITY, &n), -EINVAL);
	hist_native_free(&n); /* safe after a failure */
	hist_native_free(NULL);

	/* Only zeros: zero bucket, no spans. */
	hist_record(h, 0);
	hist_record(h, 0);
	assert_int_equal(hist_native(h, 3, 0, &n), 0);
	assert_int_equal(n.zero_count, 2);
	assert_int_equal(n.n_spans, 0);
	assert_int_equal(n.n_deltas, 0);
	hist_native_free(&n);
	hist_free(h);
}

/* Every sample in the bucket the definition gives, at every schema 7..-4. */
static void test_native_downscale_exact(void **state)
{
	struct hist *h = hist_new(bounds, N_BOUNDS);
	uint64_t *v = malloc(N_SAMPLES * sizeof(*v)), *got = malloc(NAT_SIZE * sizeof(*got));
	uint64_t *want = malloc(NAT_SIZE * sizeof(*want)), s = 2024;
	size_t n = 0, i;
	int schema, k;

	(void)state;
	assert_non_null(h);
	assert_non_null(v);
	assert_non_null(got);
	assert_non_null(want);
	/* Exact powers of two of a second and their neighbours: boundaries at every
	 * schema. */
	for (k = -9; k <= 10; k++) {
		uint64_t p = k < 0 ? S >> -k : S << k;

		v[n++] = p - 1;
		v[n++] = p;
		v[n++] = p + 1;
	}
	for (k = 0; k < 50; k++)
		v[n++] = 0;
	/* Log-uniform over the range, and a wide lognormal. */
	while (n < N_SAMPLES / 2)
		v[n++] = 1 + (uint64_t)exp2(sample_uniform01(&s) * 40.8);
	while (n < N_SAMPLES)
		v[n++] = 1 + (uint64_t)exp(log(200e3) + 3.0 * sample_gaussian(&s));
	for (i = 0; i < n; i++) {
		assert_true(v[i] <= HIST_MAX_NS);
		hist_record(h, v[i]);
	}

	for (schema = HIST_NATIVE_SCHEMA; schema >= HIST_NATIVE_MIN; schema--) {
		struct hist_native nat;
		uint64_t total, zeros = 0;

		for (i = 0; i < NAT_SIZE; i++)
			want[i] = 0;
		for (i = 0; i < n; i++) {
			if (!v[i]) {
				zeros++;
				continue;
			}
			k = native_index_def(v[i], schema);
			assert_true(k + NAT_BASE >= 0 && k + NAT_BASE < NAT_SIZE);
			want[k + NAT_BASE]++;
		}
		assert_int_equal(hist_native(h, schema, 0x1p-128, &nat), 0);
		assert_int_equal(nat.schema, schema);
		total = native_decode(&nat, got);
		assert_int_equal(nat.zero_count, zeros);
		assert_int_equal(nat.zero_count + total, hist_count(h));
		for (i = 0; i < NAT_SIZE; i++)
			if (got[i] != want[i])
				fail_msg("schema %d index %d: got %llu want %llu", schema,
					 (int)i - NAT_BASE, (unsigned long long)got[i],
					 (unsigned long long)want[i]);
		hist_native_free(&nat);
	}
	free(v);
	free(got);
	free(want);
	hist_free(h);
}

/* One sample at the top of native buckets 0, 2, 5 and 9 (gaps of 1, 2 and 3). */
static void test_native_spans_and_gaps(void **state)
{
	static const int idx[] = {0, 2, 5, 9};
	static const int32_t want_off[] = {0, 3};
	static const uint32_t want_len[] = {6, 1};
	/* counts 1, 0, 2, 0, 0, 3 | 4 */
	static const int64_t want_delta[] = {1, -1, 2, -2, 0, 3, 1};
	struct hist *h = hist_new(NULL, 0);
	struct hist_native n;
	unsigned i, j;

	(void)state;
	assert_non_null(h);
	for (i = 0; i < 4; i++) {
		uint64_t lo, hi;

		hist_fine_range((unsigned)(idx[i] - HIST_NATIVE_IDX_MIN + 1), &lo, &hi);
		assert_int_equal(native_index_def(hi, 7), idx[i]);
		for (j = 0; j <= i; j++)
			hist_record(h, hi);
	}
	assert_int_equal(hist_native(h, 7, 0, &n), 0);
	assert_int_equal(n.zero_count, 0);
	assert_int_equal(n.n_spans, 2);
	assert_int_equal(n.n_deltas, 7);
	for (i = 0; i < 2; i++) {
		assert_int_equal(n.spans[i].offset, want_off[i]);
		assert_int_equal(n.spans[i].length, want_len[i]);
	}
	for (i = 0; i < 7; i++)
		assert_int_equal(n.deltas[i], want_delta[i]);
	hist_native_free(&n);

	/* Schema 0: 1 s and everything up to 2^(9/128) s are in bucket 0 and 1 of
	 * schema 0: (0.5, 1] and (1, 2]. */
	assert_int_equal(hist_native(h, 0, 0, &n), 0);
	assert_int_equal(n.n_spans, 1);
	assert_int_equal(n.spans[0].offset, 0);
	assert_int_equal(n.spans[0].length, 2);
	assert_int_equal(n.n_deltas, 2);
	assert_int_equal(n.deltas[0], 1);
	assert_int_equal(n.deltas[1], 9 - 1);
	hist_native_free(&n);
	hist_free(h);
}

/* Negative indexes: floor, not truncation, in ((i - 1) >> k) + 1. */
static void test_native_negative_indexes(void **state)
{
	struct hist *h = hist_new(NULL, 0);
	struct hist_native n;

	(void)state;
	assert_non_null(h);
	hist_record(h, S / 2);	   /* 0.5 s: schema 0 bucket -1 = (0.25, 0.5] */
	hist_record(h, S / 2 + 1); /* schema 0 bucket 0 = (0.5, 1] */
	hist_record(h, S / 4);	   /* 0.25 s: schema -1 bucket -1 = (0.0625, 0.25] */
	assert_int_equal(hist_native(h, 0, 0, &n), 0);
	/* buckets -2, -1, 0 with 1, 1, 1 */
	assert_int_equal(n.n_spans, 1);
	assert_int_equal(n.spans[0].offset, -2);
	assert_int_equal(n.spans[0].length, 3);
	assert_int_equal(n.deltas[0], 1);
	assert_int_equal(n.deltas[1], 0);
	assert_int_equal(n.deltas[2], 0);
	hist_native_free(&n);

	/* schema -1 (factor 4): 0.25 s in (1/16, 1/4] = -1; 0.5 s and 0.5 s + 1 ns
	 * in (1/4, 1] = 0. */
	assert_int_equal(hist_native(h, -1, 0, &n), 0);
	assert_int_equal(n.n_spans, 1);
	assert_int_equal(n.spans[0].offset, -1);
	assert_int_equal(n.spans[0].length, 2);
	assert_int_equal(n.deltas[0], 1);
	assert_int_equal(n.deltas[1], 1);
	hist_native_free(&n);

	/* schema -4 (factor 2^16): 1 ns .. 1 s all in (2^-16, 1] = 0 except 1 ns
	 * (2^-29.9 s) in (2^-32, 2^-16] = -1. */
	hist_record(h, 1);
	assert_int_equal(hist_native(h, -4, 0, &n), 0);
	assert_int_equal(n.n_spans, 1);
	assert_int_equal(n.spans[0].offset, -1);
	assert_int_equal(n.spans[0].length, 2);
	assert_int_equal(n.deltas[0], 1);
	assert_int_equal(n.deltas[1], 2);
	hist_native_free(&n);
	hist_free(h);
}

static void test_native_zero_threshold(void **state)
{
	static const double zts[] = {0, 0x1p-128, 0x1p-20, 1.0, 1e-6, 3.0, 0x1p-40, 1e-3};
	struct hist *h = hist_new(NULL, 0);
	uint64_t *v = malloc(20000 * sizeof(*v)), *got = malloc(NAT_SIZE * sizeof(*got));
	uint64_t s = 77;
	unsigned i, z;

	(void)state;
	assert_non_null(h);
	assert_non_null(v);
	assert_non_null(got);
	for (i = 0; i < 20000; i++) {
		v[i] = i < 10 ? 0 : (uint64_t)exp2(sample_uniform01(&s) * 33.0);
		if (i == 10)
			v[i] = S; /* exactly 1 s: <= a 1.0 threshold */
		if (i == 11)
			v[i] = S + 1;
		hist_record(h, v[i]);
	}
	for (z = 0; z < sizeof(zts) / sizeof(zts[0]); z++) {
		struct hist_native n;
		uint64_t zeros = 0, total, cut;
		long double zcut;

		/* Everything up to the last schema-7 boundary at or below zt: all of
		 * "<= zt" when zt is a boundary (a power of two is). */
		zcut = zts[z] > 0 ? floorl(ldexpl(log2l(zts[z]), 7)) : -1e9L;
		cut = zts[z] > 0 ? (uint64_t)floorl(1e9L * exp2l(zcut / 128)) : 0;
		if (zts[z] > 0 && ldexpl(log2l(zts[z]), 7) == zcut)
			assert_int_equal(cut, (uint64_t)floorl(zts[z] * 1e9L));
		for (i = 0; i < 20000; i++)
			zeros += v[i] <= cut;
		assert_int_equal(hist_native(h, 2, zts[z], &n), 0);
		assert_true(n.zero_threshold == zts[z]);
		assert_int_equal(n.zero_count, zeros);
		total = native_decode(&n, got);
		assert_int_equal(n.zero_count + total, hist_count(h));
		hist_native_free(&n);
	}
	free(v);
	free(got);
	hist_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket_edges),
		cmocka_unit_test(test_index_matches_definition),
		cmocka_unit_test(test_overflow_clamped),
		cmocka_unit_test(test_new_rejects_bad_bounds),
		cmocka_unit_test(test_classic_exact_at_bounds),
		cmocka_unit_test(test_classic_cumulative),
		cmocka_unit_test(test_classic_random_against_linear),
		cmocka_unit_test(test_classic_bounds_inside_one_bucket),
		cmocka_unit_test(test_count_sum_min_max),
		cmocka_unit_test(test_merge_equals_recording_both),
		cmocka_unit_test(test_merge_clear_added_buckets),
		cmocka_unit_test(test_merge_different_bounds_fails),
		cmocka_unit_test(test_quantiles_uniform),
		cmocka_unit_test(test_quantiles_lognormal),
		cmocka_unit_test(test_quantiles_bimodal),
		cmocka_unit_test(test_quantiles_constant),
		cmocka_unit_test(test_quantile_single_and_pair),
		cmocka_unit_test(test_quantile_bound_every_bucket),
		cmocka_unit_test(test_native_empty_and_invalid),
		cmocka_unit_test(test_native_downscale_exact),
		cmocka_unit_test(test_native_spans_and_gaps),
		cmocka_unit_test(test_native_negative_indexes),
		cmocka_unit_test(test_native_zero_threshold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
