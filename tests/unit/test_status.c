/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for daemon/status: the ring's memory bound (the one iopulse(8)
 * states), its wrap-around, ticks caught up after a long gap, window quantiles against
 * hist_quantile_ns() of the same samples (within the 3 % stated in status.h), a series that
 * restarts, readiness, and the escaping of everything the pages show.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "lib/json.h"
#include "tests/unit/testutil.h"
#include "daemon/status/status.h"

#define US 1000ull
#define MS 1000000ull

/* A status fed by one latency series of a registry of its own, on a fake clock
 * (tick k at k * STATUS_STEP_NS). */
struct fixture {
	struct metrics *m;
	struct metric_series *lat;
	struct status *st;
	struct cfg_probe probe;
	struct status_op op; /* p1 on t1, read; the defaults of iopulse.yaml(5): 4x, 1ms, 10m */
	uint64_t k;	     /* the next tick */
};

static void fixture_init(struct fixture *f)
{
	static const char *const labels[] = {"probe", NULL};
	static const char *const values[] = {"p1", NULL};
	struct metric_family *fam;

	memset(f, 0, sizeof(*f));
	f->m = metrics_new();
	assert_non_null(f->m);
	fam = metrics_family(f->m, "lat_seconds", METRIC_HISTOGRAM, "h", labels, NULL, 0);
	assert_non_null(fam);
	f->lat = metrics_series(fam, values);
	assert_non_null(f->lat);
	f->st = status_new();
	assert_non_null(f->st);
	snprintf(f->probe.name, sizeof(f->probe.name), "p1");
	f->probe.kind = CFG_PROBE_PING;
	f->probe.interval_ns = 100 * MS;
	f->op = (struct status_op){
		.p = &f->probe, .target = "t1", .op = IO_READ, .j = tu_judging()};
}

static void fixture_free(struct fixture *f)
{
	status_free(f->st);
	metrics_free(f->m);
}

/* One tick of the scheduler's housekeeping. */
static void tick(struct fixture *f)
{
	uint64_t now = 1 + f->k++ * STATUS_STEP_NS;

	assert_true(status_tick_due(f->st, now));
	f->op.latency = f->lat; /* recreate() makes it anew */
	status_tick_op(f->st, &f->op, now);
	status_tick_end(f->st, now);
}

static struct status_series *series(struct fixture *f)
{
	assert_int_equal(f->st->n_series, 1);
	return f->st->series[0];
}

/* The @back-th newest record of a ring (0: the newest). */
static const struct status_rec *rec(const struct status_rec *recs, unsigned size, unsigned head,
				    unsigned back)
{
	return &recs[(head + size - 1 - back) % size];
}

static void assert_within(uint64_t got, uint64_t want, double rel)
{
	if (fabs((double)got - (double)want) > rel * (double)want)
		fail_msg("%llu is not within %.2f%% of %llu", (unsigned long long)got, rel * 100,
			 (unsigned long long)want);
}

/* ---- the bound ------------------------------------------------------------ */

static void test_memory_bound(void **state)
{
	size_t one = sizeof(struct status_series);
	size_t minutes = STATUS_MINUTES * STATUS_MINUTE * STATUS_STEP_NS / NSEC_PER_SEC;
	size_t blocks = (size_t)STATUS_BLOCKS * STATUS_BLOCK * STATUS_STEP_NS / NSEC_PER_SEC;

	(void)state;
	/* What iopulse(8) says: 64 probe ops, 24 hours, everything kept for them. */
	assert_int_equal(STATUS_BOUND_SERIES, 64);
	assert_int_equal(STATUS_BOUND_BYTES, 1168 * 1024);
	assert_true(STATUS_BOUND_SERIES * one <= STATUS_BOUND_BYTES);
	/* One record a minute for the last hour, one per 10 minutes for 24 hours. */
	assert_int_equal(minutes, 3600);
	assert_int_equal(blocks, 86400);
	assert_int_equal(sizeof(struct status_rec), 12);
	print_message("status: %zu bytes per probe op (ring %zu), %zu for %d (bound %d)\n", one,
		      sizeof(struct status_ring), STATUS_BOUND_SERIES * one, STATUS_BOUND_SERIES,
		      STATUS_BOUND_BYTES);
}

static void test_codes(void **state)
{
	/* 1 + round(1024 log2 v): half a step is 2^(1/2048) - 1 < 0.034 %. */
	(void)state;
	assert_int_equal(status_code(0), 0);
	assert_int_equal(status_decode(0), 0);
	for (uint64_t v = 1; v < HIST_MAX_NS; v = v * 1.07 + 1) {
		uint64_t back = status_decode(status_code(v));

		if (fabs((double)back - (double)v) > v * 0.00034 + 0.5)
			fail_msg("%llu comes back as %llu", (unsigned long long)v,
				 (unsigned long long)back);
	}
	assert_true(status_code(HIST_MAX_NS) < UINT16_MAX);
}

/* ---- the ring --------------------------------------------------------------- */

/* Minute m gets m + 1 samples of (m + 1) ms; 70 minutes: the minute ring wraps. */
static void test_minute_ring_wraps(void **state)
{
	struct fixture f;
	const struct status_series *ss;

	(void)state;
	fixture_init(&f);
	tick(&f); /* the series appears: its baseline is "nothing yet" */
	for (unsigned m = 0; m < 70; m++) {
		for (unsigned i = 0; i <= m; i++)
			metrics_observe_ns(f.lat, (m + 1) * MS);
		for (unsigned s = 0; s < STATUS_MINUTE; s++)
			tick(&f);
	}
	ss = series(&f);
	assert_int_equal(ss->v.ring.min_n, STATUS_MINUTES);
	for (unsigned back = 0; back < STATUS_MINUTES; back++) {
		const struct status_rec *r =
			rec(ss->v.ring.min, STATUS_MINUTES, ss->v.ring.min_head, back);
		uint64_t want = (70 - back) * MS;

		assert_int_equal(r->count, 70 - back);
		for (unsigned q = 0; q < STATUS_QUANTILES; q++)
			assert_within(status_decode(r->q[q]), want, 0.03);
	}
	/* The last minute: minute 69 alone (the ticks after its samples). */
	assert_int_equal(ss->v.minute.count, 70);
	assert_int_equal(ss->v.minute.span_ns, 60 * NSEC_PER_SEC);
	/* 7 of the 10-minute marks passed: one block record per mark after the first. */
	assert_int_equal(ss->v.ring.blk_n, 7);
	fixture_free(&f);
}

/* 25 hours of one sample per step: the 10-minute ring wraps and drops the oldest. */
static void test_block_ring_wraps(void **state)
{
	unsigned steps = 25 * 360;
	const struct status_series *ss;
	struct fixture f;

	(void)state;
	fixture_init(&f);
	tick(&f);
	for (unsigned s = 0; s < steps; s++) {
		/* 10-minute block b has latency (b % 50 + 1) * 100 us */
		metrics_observe_ns(f.lat, (s / STATUS_BLOCK % 50 + 1) * 100 * US);
		tick(&f);
	}
	ss = series(&f);
	assert_int_equal(ss->v.ring.blk_n, STATUS_BLOCKS);
	for (unsigned back = 0; back < STATUS_BLOCKS; back++) {
		const struct status_rec *r =
			rec(ss->v.ring.blk, STATUS_BLOCKS, ss->v.ring.blk_head, back);
		unsigned b = steps / STATUS_BLOCK - 1 - back;

		assert_int_equal(r->count, STATUS_BLOCK);
		assert_within(status_decode(r->q[0]), (b % 50 + 1) * 100 * US, 0.03);
	}
	assert_int_equal(ss->v.hour.count, 360); /* exactly the last hour at a mark */
	assert_int_equal(ss->v.hour.span_ns, 3600 * NSEC_PER_SEC);
	fixture_free(&f);
}

/* ---- catching up ------------------------------------------------------------ */

static void assert_fig_equal(const struct status_fig *a, const struct status_fig *b)
{
	assert_int_equal(a->count, b->count);
	assert_int_equal(a->span_ns, b->span_ns);
	for (unsigned q = 0; q < STATUS_QUANTILES; q++)
		assert_int_equal(a->q_ns[q], b->q_ns[q]);
}

static void assert_recs_equal(const struct status_rec *a, const struct status_rec *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(a[i].count, b[i].count);
		assert_memory_equal(a[i].q, b[i].q, sizeof(a[i].q));
	}
}

/* What the page shows of @a's series and of @b's is the same. */
static void assert_views_equal(struct fixture *a, struct fixture *b)
{
	const struct status_view *x = &series(a)->v, *y = &series(b)->v;

	assert_fig_equal(&x->minute, &y->minute);
	assert_fig_equal(&x->hour, &y->hour);
	assert_int_equal(x->hour_bars.first, y->hour_bars.first);
	assert_int_equal(x->hour_bars.per, y->hour_bars.per);
	assert_int_equal(x->hour_bars.n, y->hour_bars.n);
	assert_memory_equal(x->hour_bars.c, y->hour_bars.c, sizeof(x->hour_bars.c));
	assert_int_equal(x->ring.min_head, y->ring.min_head);
	assert_int_equal(x->ring.min_n, y->ring.min_n);
	assert_int_equal(x->ring.blk_head, y->ring.blk_head);
	assert_int_equal(x->ring.blk_n, y->ring.blk_n);
	assert_recs_equal(x->ring.min, y->ring.min, STATUS_MINUTES);
	assert_recs_equal(x->ring.blk, y->ring.blk, STATUS_BLOCKS);
	assert_memory_equal(x->ring.min_slow, y->ring.min_slow, sizeof(x->ring.min_slow));
	assert_memory_equal(x->ring.blk_slow, y->ring.blk_slow, sizeof(x->ring.blk_slow));
	assert_int_equal(x->base_minutes, y->base_minutes);
	assert_int_equal(x->regress.have_baseline, y->regress.have_baseline);
	assert_memory_equal(x->regress.baseline_ns, y->regress.baseline_ns,
			    sizeof(x->regress.baseline_ns));
	assert_int_equal(x->regress.have_recent, y->regress.have_recent);
	assert_memory_equal(x->regress.recent_ns, y->regress.recent_ns,
			    sizeof(x->regress.recent_ns));
	assert_int_equal(x->regress.slow, y->regress.slow);
	assert_int_equal(series(a)->steps, series(b)->steps);
	assert_int_equal(status_next_tick_ns(a->st), status_next_tick_ns(b->st));
}

/*
 * A lane publishes after a long idle time (no run, no page): status_tick_until()
 * takes every tick due since at once, with the same figures and records as a
 * tick at each 10-second mark would have left, and the ticks that read the
 * histograms stop once its windows are empty (STATUS_QUIET_STEPS), however
 * long the gap: a day, and more.
 */
static void test_catch_up_gap(void **state)
{
	static const unsigned gaps[] = {1,   2,	  5,	59,	    61,	   100, 421,
					450, 977, 8640, 8640 + 367, 30011, 3};
	struct fixture ref, cu;
	struct status_op op;

	(void)state;
	fixture_init(&ref);
	fixture_init(&cu);
	op = cu.op;
	op.latency = cu.lat;
	tick(&ref);
	assert_int_equal(status_tick_until(cu.st, &op, 1, 1), 1);
	for (unsigned g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++) {
		unsigned calls;

		/* One run's samples, published before the gap's first tick. */
		for (unsigned i = 0; i <= g; i++) {
			metrics_observe_ns(ref.lat, (g + 1) * 100 * US + i * US);
			metrics_observe_ns(cu.lat, (g + 1) * 100 * US + i * US);
		}
		for (unsigned k = 0; k < gaps[g]; k++)
			tick(&ref);
		calls = status_tick_until(cu.st, &op, 1, 1 + (ref.k - 1) * STATUS_STEP_NS);
		assert_true(calls >= 1);
		assert_true(calls <=
			    (gaps[g] < STATUS_QUIET_STEPS + 1 ? gaps[g] : STATUS_QUIET_STEPS + 1));
		assert_views_equal(&ref, &cu);
	}
	fixture_free(&ref);
	fixture_free(&cu);
}

/* ---- windows ----------------------------------------------------------------- */

static uint64_t sample(unsigned i)
{
	/* spread over 50 us .. ~20 ms, a few far out */
	return 50 * US + (uint64_t)i * i % 20000 * US + (i % 97 == 0 ? 300 * MS : 0);
}

/* Window quantiles against the quantiles of the same samples in a histogram
 * of their own, and samples that left the window no longer count. */
static void test_window_quantiles(void **state)
{
	static const double qs[STATUS_QUANTILES] = {0.5, 0.9, 0.99, 1.0};
	struct hist *ref = hist_new(NULL, 0);
	const struct status_series *ss;
	struct fixture f;

	(void)state;
	assert_non_null(ref);
	fixture_init(&f);
	tick(&f);
	for (unsigned i = 0; i < 5000; i++) {
		metrics_observe_ns(f.lat, sample(i));
		hist_record(ref, sample(i));
	}
	tick(&f);
	ss = series(&f);
	assert_int_equal(ss->v.minute.count, 5000);
	for (unsigned q = 0; q < STATUS_QUANTILES; q++) {
		assert_within(ss->v.minute.q_ns[q], hist_quantile_ns(ref, qs[q]), 0.03);
		assert_within(ss->v.hour.q_ns[q], hist_quantile_ns(ref, qs[q]), 0.03);
	}
	/* A minute of fast samples only: the slow ones leave the minute window and
	 * stay in the hour's. */
	for (unsigned s = 0; s < STATUS_MINUTE; s++) {
		metrics_observe_ns(f.lat, 20 * US);
		tick(&f);
	}
	assert_int_equal(ss->v.minute.count, STATUS_MINUTE);
	assert_within(ss->v.minute.q_ns[3], 20 * US, 0.03);
	assert_int_equal(ss->v.hour.count, 5000 + STATUS_MINUTE);
	assert_within(ss->v.hour.q_ns[3], hist_quantile_ns(ref, 1.0), 0.03);
	hist_free(ref);
	fixture_free(&f);
}

/* A changed probe's histogram starts again from zero: so do its figures. */
static void test_series_restart(void **state)
{
	static const char *const labels[] = {"probe", NULL};
	static const char *const values[] = {"p1", NULL};
	struct metric_family *fam;
	struct fixture f;

	(void)state;
	fixture_init(&f);
	tick(&f);
	for (unsigned i = 0; i < 100; i++)
		metrics_observe_ns(f.lat, 5 * MS);
	for (unsigned s = 0; s < STATUS_MINUTE; s++)
		tick(&f);
	assert_int_equal(series(&f)->v.ring.min_n, 1);
	metrics_series_drop(f.lat);
	fam = metrics_family(f.m, "lat_seconds", METRIC_HISTOGRAM, "h", labels, NULL, 0);
	f.lat = metrics_series(fam, values);
	metrics_observe_ns(f.lat, 1 * MS);
	tick(&f);
	assert_int_equal(series(&f)->v.ring.min_n, 0);
	assert_int_equal(series(&f)->v.minute.count, 1);
	assert_within(series(&f)->v.minute.q_ns[3], 1 * MS, 0.03);
	/* A probe no longer in the schedule is dropped at the next tick. */
	assert_true(status_tick_due(f.st, 1 + f.k++ * STATUS_STEP_NS));
	status_tick_end(f.st, 0);
	assert_int_equal(f.st->n_series, 0);
	fixture_free(&f);
}

/* ---- the baseline and the slow judgement ------------------------------------- */

/* One minute of @n I/Os of @ns each (published in its first step), up to and
 * with its minute mark. */
static void minute(struct fixture *f, uint64_t ns, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		metrics_observe_ns(f->lat, ns);
	for (unsigned s = 0; s < STATUS_MINUTE; s++)
		tick(f);
}

/* @count minutes of 20 I/Os of @ns each; @ns 0: without I/O. */
static void minutes(struct fixture *f, unsigned count, uint64_t ns)
{
	for (unsigned m = 0; m < count; m++)
		minute(f, ns, ns ? 20 : 0);
}

/* What a request makes of p1's read op, waiting on an I/O for @waited_ns. */
static struct status_regress regress(struct fixture *f, uint64_t waited_ns)
{
	struct status_burst b = {0};
	struct status_regress r;

	r = (struct status_regress){.have_baseline = true,
				    .baseline_ns = {1, 1},
				    .have_recent = true,
				    .recent_ns = {1, 1},
				    .ratio = 7,
				    .slow = true}; /* what must go */
	status_set_probe(f->st, "p1", "t1", IO_READ, 1, 0, 0.1, &b, waited_ns, &r);
	return r;
}

/* A fixture whose series has appeared (its first tick taken). */
static void fixture_started(struct fixture *f)
{
	fixture_init(f);
	tick(f);
}

/* No baseline before warmup minutes with I/O; one after, with their p50 and p99.
 * Minutes without I/O do not count. */
static void test_baseline_warmup(void **state)
{
	struct status_regress r;
	struct fixture f;

	(void)state;
	fixture_started(&f);
	for (unsigned m = 0; m < 9; m++) {
		metrics_observe_ns(f.lat, 8 * MS);
		metrics_observe_ns(f.lat, 8 * MS);
		minute(&f, 2 * MS, 98); /* p50 2 ms, p99 8 ms */
	}
	minutes(&f, 3, 0);
	for (unsigned k = 0; k < 3; k++)
		tick(&f);
	r = regress(&f, 0);
	assert_false(r.have_baseline);
	assert_int_equal(r.baseline_ns[0], 0);
	assert_false(r.slow);
	assert_int_equal(r.ratio, 0);
	assert_int_equal(series(&f)->v.base_minutes, 9);
	for (unsigned k = 3; k < STATUS_MINUTE; k++)
		tick(&f);
	metrics_observe_ns(f.lat, 8 * MS);
	metrics_observe_ns(f.lat, 8 * MS);
	minute(&f, 2 * MS, 98);
	r = regress(&f, 0);
	assert_true(r.have_baseline);
	assert_int_equal(series(&f)->v.base_minutes, 10);
	assert_within(r.baseline_ns[0], 2 * MS, 0.03);
	assert_within(r.baseline_ns[1], 8 * MS, 0.03);
	assert_true(r.have_recent);
	assert_within(r.recent_ns[0], 2 * MS, 0.03);
	assert_true(r.ratio > 0.97 && r.ratio < 1.03);
	assert_false(r.slow);
	fixture_free(&f);
}

/* The median of the minutes, not their mean: with no record left out (factor 0),
 * one minute at 500 ms among twenty at 2 to 4 ms does not move it. */
static void test_baseline_median_not_mean(void **state)
{
	struct status_regress r;
	struct fixture f;

	(void)state;
	fixture_started(&f);
	f.op.j.slow_factor = 0;
	for (unsigned m = 0; m < 21; m++)
		minute(&f, m == 10 ? 500 * MS : (2 + m % 3) * MS, 20);
	r = regress(&f, 0);
	assert_true(r.have_baseline);
	/* 7 minutes at 2 ms, 6 at 3, 7 at 4 and one at 500: the median is 3 ms
	 * (the mean would be 27 ms). */
	assert_within(r.baseline_ns[0], 3 * MS, 0.03);
	assert_within(r.baseline_ns[1], 3 * MS, 0.03);
	fixture_free(&f);
}

/* 15 good minutes, then 30 at 10x: the slow minutes are left out of the
 * baseline, which stays at the good level, and the series is slow throughout. */
static void test_baseline_robust_to_regression(void **state)
{
	const struct status_series *ss;
	struct status_regress r;
	struct fixture f;

	(void)state;
	fixture_started(&f);
	minutes(&f, 15, 2 * MS);
	ss = series(&f);
	for (unsigned m = 0; m < 30; m++) {
		minute(&f, 20 * MS, 20);
		r = regress(&f, 0);
		if (!r.have_baseline)
			fail_msg("no baseline at held minute %u (%u minutes kept)", m,
				 series(&f)->v.base_minutes);
		assert_within(r.baseline_ns[0], 2 * MS, 0.03);
		assert_within(r.recent_ns[0], 20 * MS, 0.03);
		assert_true(r.ratio > 9.5 && r.ratio < 10.5);
		/* Slow from its second slow minute on (slow_minutes), the median's. */
		assert_true(r.slow == (m >= 1));
		assert_int_equal(r.shape, m >= 1 ? STATUS_SHAPE_MEDIAN : STATUS_SHAPE_NONE);
		assert_true(status_bit(ss->v.ring.min_slow, (ss->v.ring.min_head + STATUS_MINUTES -
							     1) % STATUS_MINUTES));
		assert_int_equal(ss->v.base_minutes, 15);
	}
	/* Back to normal: slow still for two good minutes, good at the third
	 * (ok_minutes). */
	for (unsigned m = 0; m < 3; m++) {
		minute(&f, 2 * MS, 20);
		r = regress(&f, 0);
		assert_true(r.slow == (m < 2));
	}
	assert_int_equal(r.shape, STATUS_SHAPE_NONE);
	assert_within(r.baseline_ns[0], 2 * MS, 0.03);
	fixture_free(&f);
}

/* 40 us to 400 us (tmpfs and the like): 10x, under the 1 ms floor, not slow;
 * with no floor, slow. */
/* A burst run marked cpu_bound (its jobs mostly waited for a CPU: struct
 * status_op's cpu_bound_runs moved with its histogram) measured the CPU, not
 * the storage: neither the windows nor the judgement nor the baseline take its
 * I/Os, however many such minutes; the next run not so marked counts. */
static void test_cpu_bound_left_out(void **state)
{
	struct status_regress r;
	struct fixture f;
	uint64_t cpu_bound = 0;

	(void)state;
	fixture_started(&f);
	f.probe.kind = CFG_PROBE_BURST;
	f.op.cpu_bound_runs = &cpu_bound;
	minutes(&f, 10, 2 * MS);
	for (unsigned m = 0; m < 20; m++) { /* 40 ms, CPU-bound: over 4x */
		for (unsigned i = 0; i < 20; i++)
			metrics_observe_ns(f.lat, 40 * MS);
		metrics_lock(f.m); /* as probe_metrics_publish() does */
		cpu_bound++;
		metrics_unlock(f.m);
		minute(&f, 0, 0);
		assert_int_equal(series(&f)->v.minute.count, 0);
	}
	r = regress(&f, 0);
	assert_true(r.have_baseline);
	assert_within(r.baseline_ns[0], 2 * MS, 0.03);
	assert_false(r.slow);
	assert_int_equal(series(&f)->v.hour.count, 200); /* the 10 good minutes alone */

	/* The same runs not so marked: counted, and slow after two minutes. */
	minute(&f, 40 * MS, 20);
	assert_int_equal(series(&f)->v.minute.count, 20);
	minute(&f, 40 * MS, 20);
	r = regress(&f, 0);
	assert_true(r.slow);
	fixture_free(&f);
}

static void test_slow_floor(void **state)
{
	struct status_regress r;
	struct fixture f;

	(void)state;
	fixture_started(&f);
	minutes(&f, 10, 40 * US);
	minutes(&f, 2, 400 * US);
	r = regress(&f, 0);
	assert_within(r.baseline_ns[0], 40 * US, 0.03);
	assert_true(r.ratio > 9.5 && r.ratio < 10.5);
	assert_false(r.slow);
	f.op.j.slow_floor_ns = 0;
	minutes(&f, 2, 400 * US);
	assert_true(regress(&f, 0).slow);
	fixture_free(&f);
}

/* A factor of 0, a tail share of 0 and a stall of 0: never slow, whatever the
 * ratio and the tail. */
static void test_factor_zero_never_slow(void **state)
{
	struct status_regress r;
	struct fixture f;

	(void)state;
	fixture_started(&f);
	f.op.j.slow_factor = 0;
	f.op.j.tail_share = 0;
	f.op.j.stall_ns = 0;
	minutes(&f, 10, 2 * MS);
	minutes(&f, 3, 200 * MS);
	r = regress(&f, 5 * NSEC_PER_SEC);
	assert_true(r.have_baseline);
	assert_true(r.ratio > 2000);
	assert_false(r.slow);
	assert_false(status_is_slow(UINT64_MAX / 2, (const uint64_t[]){1, 1}, &f.op.j));
	fixture_free(&f);
}

/* An I/O waited on raises the recent figures and the longest: a probe with
 * no I/O in the minute but one in flight for 5 s shows 5 s (its target is
 * stuck); one that completes some is raised to the age of the one it waits on.
 * An op the tick has not seen: zeros. */
static void test_waited_raises_recent(void **state)
{
	struct status_burst b = {0};
	struct status_regress r;
	struct fixture f;

	(void)state;
	fixture_started(&f);
	minutes(&f, 10, 2 * MS);
	minutes(&f, 1, 0);
	r = regress(&f, 0);
	assert_true(r.have_baseline);
	assert_false(r.have_recent);
	assert_int_equal(r.recent_ns[0], 0);
	assert_int_equal(r.ratio, 0);
	assert_false(r.slow);
	r = regress(&f, 5 * NSEC_PER_SEC);
	assert_true(r.have_recent);
	assert_int_equal(r.recent_ns[0], 5 * NSEC_PER_SEC);
	assert_int_equal(r.recent_ns[1], 5 * NSEC_PER_SEC);
	assert_true(r.ratio > 2400 && r.ratio < 2600);
	assert_true(r.have_max);
	assert_int_equal(r.max_ns, 5 * NSEC_PER_SEC);
	/* The I/O waited on is the target's (stuck: the judge), not the op's
	 * minutes: it makes no minute slow. */
	assert_false(r.slow);
	assert_within(series(&f)->v.regress.recent_ns[0], 5 * NSEC_PER_SEC, 0.001);
	minute(&f, 2 * MS, 20);
	r = regress(&f, 3 * MS);
	assert_int_equal(r.recent_ns[0], 3 * MS);
	assert_int_equal(r.recent_ns[1], 3 * MS);
	assert_false(r.slow); /* 1.5x */
	r = regress(&f, 0);
	assert_within(r.recent_ns[0], 2 * MS, 0.03);
	r = (struct status_regress){.have_baseline = true,
				    .baseline_ns = {1, 1},
				    .have_recent = true,
				    .recent_ns = {1, 1},
				    .ratio = 7,
				    .slow = true}; /* what must go */
	status_set_probe(f.st, "p1", "t1", IO_WRITE, 1, 0, 0.1, &b, 5 * NSEC_PER_SEC, &r);
	assert_false(r.have_baseline);
	assert_false(r.have_recent);
	assert_false(r.slow);
	assert_int_equal(r.ratio, 0);
	assert_int_equal(r.recent_ns[0], 0);
	status_set_probe(f.st, "p1", "t1", IO_READ, 1, 0, 0.1, &b, 0, NULL);
	fixture_free(&f);
}

/* 2 hours good, then an hour at 10x: the minute records are all slow, the
 * 10-minute records of the good hours keep the baseline where it was; and 2
 * hours more, when the slow blocks outweigh the good ones but are left out. */
static void test_baseline_blocks_keep_it(void **state)
{
	struct status_regress r;
	struct fixture f;

	(void)state;
	fixture_started(&f);
	minutes(&f, 120, 2 * MS);
	for (unsigned m = 1; m <= 180; m++) {
		minute(&f, 20 * MS, 20);
		r = regress(&f, 0);
		assert_true(r.slow == (m >= 2));
		assert_within(r.baseline_ns[0], 2 * MS, 0.03);
		/* 12 good blocks, none of them in the last hour. */
		if (m == 60)
			assert_int_equal(series(&f)->v.ring.blk_n, 18);
		if (m >= 60)
			assert_int_equal(series(&f)->v.base_minutes, 120);
	}
	assert_true(status_bit(series(&f)->v.ring.blk_slow, 29));
	assert_false(status_bit(series(&f)->v.ring.blk_slow, 11));
	fixture_free(&f);
}

/* After more than a day slow, the good records have all left the ring: the
 * baseline warms up again on the new level, which becomes the normal. */
static void test_baseline_relearns_after_a_day_slow(void **state)
{
	unsigned gone = 0, learnt = 0;
	struct status_regress r;
	struct fixture f;

	(void)state;
	fixture_started(&f);
	minutes(&f, 120, 2 * MS);
	for (unsigned m = 1; m <= 24 * 60 + 30; m++) {
		minute(&f, 20 * MS, 1);
		r = regress(&f, 0);
		if (!r.have_baseline && !gone)
			gone = m;
		if (gone && r.have_baseline && !learnt)
			learnt = m;
		if (!gone) {
			/* One I/O a minute: slow once a run of slow minutes holds
			 * STATUS_JUDGE_MIN_IOS of them. */
			assert_true(r.slow == (m >= STATUS_JUDGE_MIN_IOS));
			assert_within(r.baseline_ns[0], 2 * MS, 0.03);
		}
	}
	/* The last good block (the 10 minutes before the slowdown) leaves the
	 * 24-hour ring after 24 hours; 10 minutes of warm-up later, the new level. */
	assert_int_equal(gone, 24 * 60);
	assert_int_equal(learnt, 24 * 60 + 10);
	assert_within(r.baseline_ns[0], 20 * MS, 0.03);
	assert_false(r.slow);
	fixture_free(&f);
}

/* One minute of @n I/Os of @ns and @m of @slow_ns (published in its first step). */
static void minute_mix(struct fixture *f, uint64_t ns, unsigned n, uint64_t slow_ns, unsigned m)
{
	for (unsigned i = 0; i < m; i++)
		metrics_observe_ns(f->lat, slow_ns);
	minute(f, ns, n);
}

/* 15 minutes of 96 I/Os at 1 ms and 4 at 2 ms (p50 1 ms, p99 2 ms): the
 * baseline of the tests of the shapes. */
static void healthy(struct fixture *f)
{
	for (unsigned m = 0; m < 15; m++)
		minute_mix(f, 1 * MS, 96, 2 * MS, 4);
}

/*
 * A slow tail: 5 % of the I/Os at 30 ms, the median unchanged. Slow once the
 * window's share reaches tail_share, 2 % (the second minute: 10 of 500) with
 * STATUS_TAIL_MIN_IOS over 4x the p99, and that minute is the second slow one
 * in a row: the third; its figures are there; the baseline's p99 does not take
 * the tail in. Back to normal: a minute without a slow I/O is a good one,
 * whatever the window still holds: good at the third.
 */
static void test_tail(void **state)
{
	struct status_regress r;
	struct fixture f;
	unsigned m;

	(void)state;
	fixture_started(&f);
	healthy(&f);
	r = regress(&f, 0);
	assert_within(r.baseline_ns[1], 2 * MS, 0.03);
	assert_within(r.threshold_ns, 8 * MS, 0.03);
	for (m = 1; m <= 30; m++) {
		minute_mix(&f, 1 * MS, 95, 30 * MS, 5);
		r = regress(&f, 0);
		assert_true(r.slow == (m >= 3));
		assert_int_equal(r.shape, m >= 3 ? STATUS_SHAPE_TAIL : STATUS_SHAPE_NONE);
		assert_true(r.ratio < 1.1); /* the median is as it was */
		assert_within(r.baseline_ns[1], 2 * MS, 0.03);
	}
	assert_true(r.have_tail);
	assert_true(r.slow_io_ratio > 0.049 && r.slow_io_ratio < 0.051);
	assert_within(r.max_ns, 30 * MS, 0.03);
	assert_int_equal(r.stall_minutes, 0);
	for (m = 1; m <= 3; m++) {
		minute_mix(&f, 1 * MS, 96, 2 * MS, 4);
		r = regress(&f, 0);
		assert_true(r.slow == (m < 3));
		assert_true(r.slow_io_ratio > 0); /* the window still has the tail */
	}
	fixture_free(&f);

	/* An op of 6 I/Os a minute (a ping every 10 s): 30 in the window, too few
	 * for a share (one I/O is 3 %): 17 % over the threshold is no tail. */
	fixture_started(&f);
	for (m = 0; m < 15; m++)
		minute_mix(&f, 1 * MS, 5, 2 * MS, 1);
	for (m = 1; m <= 10; m++) {
		minute_mix(&f, 1 * MS, 5, 30 * MS, 1);
		r = regress(&f, 0);
		assert_false(r.slow);
	}
	assert_true(r.slow_io_ratio > 0.16);
	fixture_free(&f);
}

/*
 * A tail from the third minute of a baseline's life (baseline_warmup 2m): 60
 * reads a minute (p99 2 ms), then 2 to 3 % of them at 40 ms, the median
 * unchanged. The window (5 minutes, most of them healthy) reaches 2 % only at
 * the tail's fourth minute; its first three were learnt, and three tail p99s
 * outnumbered the two healthy ones: the threshold rose to 160 ms, over the
 * tail, and the tail was never told (bench/alerting.sh, run A). A minute with
 * two I/Os over the threshold and a tail's share of its own is held out of the
 * baseline, not judged slow: the p99 stays 2 ms, the tail is slow at its
 * fifth minute. A minute with one such I/O is learnt as before.
 */
static void test_tail_young_baseline(void **state)
{
	static const unsigned over[] = {1, 1, 2, 2, 2, 3, 2, 2, 3, 2};
	const struct status_ring *r;
	struct status_regress reg;
	struct fixture f;

	(void)state;
	fixture_init(&f);
	f.op.j.warmup_minutes = 2;
	tick(&f);
	for (unsigned m = 0; m < 2; m++)
		minute_mix(&f, 1 * MS, 59, 2 * MS, 1);
	reg = regress(&f, 0);
	assert_true(reg.have_baseline);
	assert_within(reg.baseline_ns[1], 2 * MS, 0.03);
	for (unsigned m = 0; m < sizeof(over) / sizeof(over[0]); m++) {
		minute_mix(&f, 1 * MS, 60 - over[m], 40 * MS, over[m]);
		reg = regress(&f, 0);
		assert_within(reg.baseline_ns[1], 2 * MS, 0.03);
		assert_true(reg.slow == (m >= 4));
		r = &series(&f)->v.ring;
		/* The minute just taken: held when not slow with 2 over. */
		assert_int_equal(status_bit(r->min_held,
					    (r->min_head + STATUS_MINUTES - 1) % STATUS_MINUTES),
				 m == 2);
	}
	assert_int_equal(reg.shape, STATUS_SHAPE_TAIL);
	fixture_free(&f);
}

/* Stalls: one I/O of 3 s a minute, the rest as usual. Slow once two minutes of
 * the window had one (the second) and that is the second slow minute in a row
 * (the third), as stalls; figures: the longest I/O and the minutes. Stalls of
 * 0s are not judged. */
static void test_stalls(void **state)
{
	struct status_regress r;
	struct fixture f;
	unsigned m;

	(void)state;
	fixture_started(&f);
	healthy(&f);
	for (m = 1; m <= 5; m++) {
		minute_mix(&f, 1 * MS, 99, 3 * NSEC_PER_SEC, 1);
		r = regress(&f, 0);
		assert_true(r.slow == (m >= 3));
		assert_int_equal(r.shape, m >= 3 ? STATUS_SHAPE_STALLS : STATUS_SHAPE_NONE);
		assert_int_equal(r.stall_minutes, m);
		assert_int_equal(r.stalls, m);
	}
	assert_within(r.max_ns, 3 * NSEC_PER_SEC, 0.03);
	fixture_free(&f);

	fixture_started(&f);
	f.op.j.stall_ns = 0;
	f.op.j.tail_share = 0;
	healthy(&f);
	for (m = 1; m <= 5; m++)
		minute_mix(&f, 1 * MS, 99, 3 * NSEC_PER_SEC, 1);
	r = regress(&f, 0);
	assert_false(r.slow);
	assert_int_equal(r.stall_minutes, 0);
	fixture_free(&f);
}

/* Every I/O 10x slower is the median's, not a tail (though every I/O is over
 * the tail's threshold) nor stalls: "slow"; and its minutes do not keep the
 * tail's window slow once it ends. */
static void test_median_not_tail(void **state)
{
	struct status_regress r;
	struct fixture f;

	(void)state;
	fixture_started(&f);
	healthy(&f);
	minutes(&f, 3, 10 * MS);
	r = regress(&f, 0);
	assert_true(r.slow);
	assert_int_equal(r.shape, STATUS_SHAPE_MEDIAN);
	for (unsigned m = 1; m <= 3; m++) {
		minute_mix(&f, 1 * MS, 96, 2 * MS, 4);
		assert_true(regress(&f, 0).slow == (m < 3));
	}
	fixture_free(&f);
}

/*
 * A slowdown of every I/O that ends in the middle of a minute: that minute's
 * median is fast again, but a third of its I/Os are the slowdown's. They are
 * the median's, not a tail: the next minutes, each with the one I/O over the
 * threshold a busy machine gives (1 %), are good ones, and the op is good
 * again after ok_minutes.
 */
static void test_median_end_not_tail(void **state)
{
	struct fixture f;

	(void)state;
	fixture_started(&f);
	healthy(&f);
	minutes(&f, 3, 10 * MS);
	assert_int_equal(regress(&f, 0).shape, STATUS_SHAPE_MEDIAN);
	minute_mix(&f, 1 * MS, 40, 10 * MS, 20); /* the slowdown ends */
	for (unsigned m = 1; m <= 4; m++) {
		struct status_regress r;

		minute_mix(&f, 1 * MS, 99, 10 * MS, 1);
		r = regress(&f, 0);
		assert_true(r.slow == (m < 2)); /* good at the third good minute */
		assert_int_not_equal(r.shape, STATUS_SHAPE_TAIL);
	}
	fixture_free(&f);
}

/* A fixture with slow_floor auto and a baseline of 15 minutes of 97 I/Os at
 * @p50 and 3 at @p99. */
static void auto_floor_started(struct fixture *f, uint64_t p50, uint64_t p99)
{
	fixture_started(f);
	f->op.j.slow_floor_ns = CFG_SLOW_FLOOR_AUTO;
	for (unsigned m = 0; m < 15; m++)
		minute_mix(f, p50, 97, p99, 3);
}

/*
 * slow_floor auto: a fast device (p50 130 us, p99 250 us) 4x slower is slow,
 * its floor being its p99; tmpfs-fast noise (p50 9 us, p99 30 us, then a
 * minute 10x) is not: the floor is at least 100 us.
 */
static void test_floor_auto(void **state)
{
	const uint64_t us = 1000;
	struct status_regress r;
	struct fixture f;

	(void)state;
	auto_floor_started(&f, 130 * us, 250 * us);
	assert_int_equal(status_floor_ns(&f.op.j, regress(&f, 0).baseline_ns),
			 regress(&f, 0).baseline_ns[1]);
	minutes(&f, 2, 4 * 130 * us + 20 * us);
	r = regress(&f, 0);
	assert_true(r.slow);
	assert_int_equal(r.shape, STATUS_SHAPE_MEDIAN);
	fixture_free(&f);

	auto_floor_started(&f, 9 * us, 30 * us);
	f.op.j.tail_share = 0; /* the median alone: 90 us noise is under the floor */
	minutes(&f, 3, 90 * us);
	r = regress(&f, 0);
	assert_true(r.ratio > 9);
	assert_false(r.slow);
	assert_int_equal(status_floor_ns(&f.op.j, r.baseline_ns), STATUS_FLOOR_NS);
	/* The tail's threshold: 4x the p99, over 100 us already. */
	assert_within(status_slow_io_ns(&f.op.j, r.baseline_ns), 4 * r.baseline_ns[1], 0.001);
	fixture_free(&f);
}

/*
 * A noisy op (p50 100 us, p99 5 ms: its floor) whose median goes 20x, to 2 ms,
 * under the floor: not slow, but no normal minute either. Held out of the
 * baseline, so that 20 minutes of it leave the baseline at 100 us and the
 * ratio at 20 (learnt, they outnumbered the 15 healthy minutes and made the
 * regression the baseline: test_alerting saw the read ratio of a FUSE target
 * under load stay under 10 for want of this). And 100 of them after 30 healthy
 * minutes, past the hour the minute records cover: the 10-minute records of the
 * held minutes are left out too (else they brought the regression in after the
 * hour), and the healthy ones keep the baseline.
 */
static void test_floor_hides_not_learnt(void **state)
{
	struct status_regress r;
	struct fixture f;

	(void)state;
	auto_floor_started(&f, 100 * US, 5 * MS);
	r = regress(&f, 0);
	assert_within(r.baseline_ns[1], 5 * MS, 0.03);
	for (unsigned m = 0; m < 20; m++) {
		minute_mix(&f, 2 * MS, 97, 7 * MS, 3);
		r = regress(&f, 0);
		assert_false(r.slow);
		assert_within(r.baseline_ns[0], 100 * US, 0.03);
		assert_true(r.ratio > 19 && r.ratio < 21);
	}
	fixture_free(&f);

	/* Past the hour of minute records, on a baseline of 30 minutes (whole
	 * 10-minute records): those of the held minutes are left out too. */
	auto_floor_started(&f, 100 * US, 5 * MS);
	for (unsigned m = 0; m < 15; m++)
		minute_mix(&f, 100 * US, 97, 5 * MS, 3);
	for (unsigned m = 0; m < 100; m++) {
		minute_mix(&f, 2 * MS, 97, 7 * MS, 3);
		r = regress(&f, 0);
		assert_false(r.slow);
		assert_within(r.baseline_ns[0], 100 * US, 0.03);
	}
	fixture_free(&f);
}

/* The op's state from its ring's slow bits alone (so a restored ring brings it
 * back): slow after slow_minutes slow minutes in a row holding 5 I/Os, good
 * after ok_minutes good ones holding 5; minutes without I/O count as neither. */
static void test_op_slow_replay(void **state)
{
	struct status_judging j = {.slow_minutes = 2, .ok_minutes = 3};
	struct status_ring *r = calloc(1, sizeof(*r));
	/* count, slow: one minute each */
	static const struct {
		uint32_t count;
		bool slow;
		bool want;
	} seq[] = {
		{20, false, false}, {20, true, false},	{20, true, true}, {0, false, true},
		{20, false, true},  {20, false, true},	{20, true, true}, {20, false, true},
		{20, false, true},  {20, false, false}, {1, true, false}, {1, true, false},
		{1, true, false},   {1, true, false},	{1, true, true},  {1, false, true},
		{1, false, true},   {1, false, true},	{1, false, true}, {1, false, false},
	};

	(void)state;
	assert_non_null(r);
	for (unsigned i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		unsigned s = r->min_head;

		r->min[s] = (struct status_rec){.count = seq[i].count};
		if (seq[i].slow)
			r->min_slow[s / 8] |= (uint8_t)(1u << (s % 8));
		r->min_head = (uint16_t)((s + 1) % STATUS_MINUTES);
		r->min_n++;
		if (status_op_slow(r, &j) != seq[i].want)
			fail_msg("minute %u: slow %d, want %d", i, !seq[i].want, seq[i].want);
	}
	free(r);
}

/* The baseline's median by itself: weights 1 and 10, blocks of the last hour
 * left out, records without I/O and slow ones too. */
static void test_baseline_weights(void **state)
{
	struct status_ring *r = calloc(1, sizeof(*r));
	unsigned minutes_worth;
	uint64_t ns[2];

	(void)state;
	assert_non_null(r);
	/* 60 minutes at 1 ms; 7 blocks: the 6 newest (the hour) at 1 s, the oldest at 8 ms. */
	for (unsigned i = 0; i < STATUS_MINUTES; i++)
		r->min[i] = (struct status_rec){
			.count = 5, .q = {status_code(1 * MS), 0, status_code(1 * MS), 0}};
	r->min_n = STATUS_MINUTES;
	for (unsigned i = 0; i < 7; i++)
		r->blk[i] = (struct status_rec){.count = 50,
						.q = {status_code(i ? 1000 * MS : 8 * MS), 0,
						      status_code(i ? 1000 * MS : 8 * MS), 0}};
	r->blk_n = 7;
	r->blk_head = 7;
	assert_true(status_baseline(r, 10, ns, &minutes_worth));
	assert_int_equal(minutes_worth, 70);
	assert_within(ns[0], 1 * MS, 0.001);
	/* 6 more old blocks at 8 ms: 70 minutes at 8 ms against 60 at 1 ms. */
	for (unsigned i = 7; i < 13; i++)
		r->blk[i] = r->blk[0];
	r->blk_n = r->blk_head = 13;
	/* the 6 newest are now 8 ms ones: make them the 1 s ones again */
	for (unsigned i = 7; i < 13; i++)
		r->blk[i] = r->blk[1];
	for (unsigned i = 1; i < 7; i++)
		r->blk[i] = r->blk[0];
	assert_true(status_baseline(r, 10, ns, &minutes_worth));
	assert_int_equal(minutes_worth, 130);
	assert_within(ns[0], 8 * MS, 0.001);
	/* Half of those slow: 30 minutes at 8 ms against 60 at 1 ms. */
	for (unsigned i = 0; i < 4; i++)
		r->blk_slow[0] |= (uint8_t)(1u << i);
	assert_true(status_baseline(r, 10, ns, &minutes_worth));
	assert_int_equal(minutes_worth, 90);
	assert_within(ns[0], 1 * MS, 0.001);
	/* Minutes without I/O or slow are out too; the warm-up counts what is left. */
	for (unsigned i = 0; i < STATUS_MINUTES; i++)
		r->min[i].count = 0;
	assert_false(status_baseline(r, 40, ns, &minutes_worth));
	assert_int_equal(minutes_worth, 30);
	assert_int_equal(ns[0], 0);
	assert_true(status_baseline(r, 30, ns, &minutes_worth));
	assert_within(ns[0], 8 * MS, 0.001);
	memset(r->blk_slow, 0xff, sizeof(r->blk_slow));
	assert_false(status_baseline(r, 0, ns, &minutes_worth)); /* nothing at all */
	assert_int_equal(minutes_worth, 0);
	free(r);
}

/* ---- readiness and pages ------------------------------------------------------ */

static void set_target(struct status *st, unsigned i, const char *name, enum status_state s,
		       const char *path, const char *reason)
{
	struct status_target t = {.state = s};

	snprintf(t.name, sizeof(t.name), "%s", name);
	snprintf(t.path, sizeof(t.path), "%s", path);
	snprintf(t.reason, sizeof(t.reason), "%s", reason);
	status_set_target(st, i, &t);
}

static void test_ready(void **state)
{
	struct status *st = status_new();
	struct buf why;

	(void)state;
	buf_init(&why);
	assert_true(status_ready(st, &why)); /* no targets */
	assert_int_equal(status_targets_begin(st, 3), 0);
	set_target(st, 0, "a", STATUS_UP, "/a", "");
	set_target(st, 1, "b", STATUS_DOWN, "/b", "/b: no such directory");
	set_target(st, 2, "c", STATUS_STUCK, "/c", "I/O in flight for 3.0s");
	assert_false(status_ready(st, &why));
	buf_append(&why, "", 1);
	assert_string_equal(why.data, "b: down: /b: no such directory\n"
				      "c: stuck: I/O in flight for 3.0s\n");
	assert_int_equal(status_targets_begin(st, 1), 0);
	assert_true(status_ready(st, NULL));
	set_target(st, 0, "a", STATUS_SLOW, "/a", ""); /* up, only slower */
	assert_true(status_ready(st, NULL));
	buf_free(&why);
	status_free(st);
}

static int render_html(struct status *st, struct buf *out)
{
	struct status_snap snap;
	int r = status_snapshot(st, &snap);

	assert_int_equal(r, 0);
	r = status_render_html(&snap, out);
	status_snap_free(&snap);
	return r;
}

static char *escaped(void (*fn)(struct buf *, const char *), const char *s)
{
	struct buf b;

	buf_init(&b);
	fn(&b, s);
	buf_append(&b, "", 1);
	assert_false(b.oom);
	return b.data;
}

static void test_html_escape(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"plain /srv/data", "plain /srv/data"},
		{"<script>alert('x')</script>", "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"},
		{"a&b \"q\"", "a&amp;b &quot;q&quot;"},
		{"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x92\xbe",
		 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x92\xbe"},
		{"bad\xff\xc3(", "bad\xef\xbf\xbd\xef\xbf\xbd("},	  /* not UTF-8 */
		{"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* a surrogate */
		{"ctl\x01\x7f\tok\n", "ctl\xef\xbf\xbd\xef\xbf\xbd\tok\n"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = escaped(status_html_escape, cases[i].in);

		assert_string_equal(got, cases[i].out);
		free(got);
	}
}

static void test_json_string(void **state)
{
	char *got;

	(void)state;
	got = escaped(json_string, "a\"b\\c\n\x01 \xc3\xa9 \xff");
	assert_string_equal(got, "\"a\\\"b\\\\c\\u000a\\u0001 \xc3\xa9 \\ufffd\"");
	free(got);
}

/* Whatever a target's path or reason holds, the page shows it as text. */
static void test_page_escapes(void **state)
{
	struct status *st = status_new();
	struct buf page;

	(void)state;
	buf_init(&page);
	status_config(st, "/etc/<iopulse>.yaml", false, "line 3: \"bad\" & <worse>");
	assert_int_equal(status_targets_begin(st, 1), 0);
	set_target(st, 0, "t1", STATUS_DOWN, "/srv/<img src=x>", "<b>gone</b>");
	assert_int_equal(render_html(st, &page), 0);
	buf_append(&page, "", 1);
	assert_null(strstr(page.data, "<img"));
	assert_null(strstr(page.data, "<b>"));
	assert_null(strstr(page.data, "<iopulse>"));
	assert_null(strstr(page.data, "<worse>"));
	assert_non_null(strstr(page.data, "/srv/&lt;img src=x&gt;"));
	assert_non_null(strstr(page.data, "&lt;b&gt;gone&lt;/b&gt;"));
	assert_non_null(strstr(page.data, "line 3: &quot;bad&quot; &amp; &lt;worse&gt;"));
	assert_non_null(strstr(page.data, "data-state=\"down\""));
	buf_free(&page);
	status_free(st);
}

static char *render_json(struct status *st, bool history)
{
	struct status_snap snap;
	struct buf out;

	buf_init(&out);
	assert_int_equal(status_snapshot(st, &snap), 0);
	assert_int_equal(status_render_json(&snap, &out, history), 0);
	status_snap_free(&snap);
	buf_append(&out, "", 1);
	assert_false(out.oom);
	return out.data;
}

/* The status page of @st, NUL-terminated; free() it. */
static char *render_page(struct status *st)
{
	struct buf b;

	buf_init(&b);
	assert_int_equal(render_html(st, &b), 0);
	buf_append(&b, "", 1);
	assert_false(b.oom);
	return b.data;
}

/* The status page and /status.json of an op against its baseline: warming up
 * (nulls), then slow (figures, the ratio, the state and since), and the
 * headline: Degraded while one is slow and none down or stuck, never Healthy. */
static void test_pages_slow(void **state)
{
	struct status_target t = {.state = STATUS_SLOW};
	char *json, *page, *cell, when[32], want[96];
	double ms;
	struct timespec now;
	struct tm then, today;
	struct fixture f;
	time_t since;

	(void)state;
	fixture_started(&f);
	assert_int_equal(status_targets_begin(f.st, 2), 0);
	set_target(f.st, 0, "t1", STATUS_UP, "/srv", "");
	set_target(f.st, 1, "t2", STATUS_UP, "/srv2", "");
	minutes(&f, 3, 2 * MS);
	regress(&f, 0);
	json = render_json(f.st, false);
	assert_non_null(strstr(json, "\"baseline\":null,\"recent\":{\"p50_seconds\":0.00"));
	assert_non_null(strstr(json, "\"ratio\":null,\"slow\":false,\"shape\":\"none\","
				     "\"slow_io\":null,\"longest_seconds\":0.00"));
	assert_non_null(strstr(json, ",\"stall_minutes\":null}"));
	assert_non_null(strstr(json, "\"state\":\"up\",\"since\":0.000,\"reason\":\"\","
				     "\"reason_code\":\"none\""));
	free(json);
	page = render_page(f.st);
	assert_non_null(strstr(page, "<td class=\"ratio\" data-slow=\"false\">warming up (3 of "
				     "10 min)</td>"));
	assert_non_null(strstr(page, "Healthy: 2 of 2 targets up"));
	free(page);

	minutes(&f, 7, 2 * MS);
	minutes(&f, 2, 25 * MS);
	assert_true(regress(&f, 0).slow);
	clock_gettime(CLOCK_REALTIME, &now);
	t.since_s = now.tv_sec - 725.5;
	snprintf(t.name, sizeof(t.name), "t1");
	snprintf(t.path, sizeof(t.path), "/srv");
	snprintf(t.reason_code, sizeof(t.reason_code), "slow");
	status_set_target(f.st, 0, &t);
	json = render_json(f.st, true);
	assert_non_null(strstr(json, "\"baseline\":{\"p50_seconds\":0.00"));
	assert_non_null(strstr(json, "\"ratio\":12.")); /* 25 / 2 */
	assert_non_null(strstr(json, "\"slow\":true,\"shape\":\"slow\","));
	assert_non_null(strstr(json, ",\"stall_minutes\":0,\"minutes\":"));
	assert_non_null(strstr(json, "\"max_seconds\":0.025")); /* the slow minute's record */
	assert_non_null(strstr(json, ",\"slow\":true}],\"ten_minutes\":"));
	assert_non_null(strstr(json, "\"state\":\"slow\",\"since\":"));
	assert_non_null(strstr(json, ".500,\"reason\":\"\",\"reason_code\":\"slow\""));
	assert_null(strstr(json, ":nan"));
	assert_null(strstr(json, ":-nan"));
	assert_null(strstr(json, ":inf"));
	free(json);

	page = render_page(f.st);
	assert_non_null(strstr(page, "<p class=\"overall degraded\" data-ready=\"true\">Degraded: "
				     "1 of 2 targets slow</p>"));
	assert_null(strstr(page, "Healthy"));
	assert_non_null(strstr(page, "data-target=\"t1\" data-state=\"slow\""));
	/* The time of day, with the date when it was not today (UTC). */
	since = (time_t)t.since_s;
	gmtime_r(&since, &then);
	gmtime_r(&now.tv_sec, &today);
	strftime(when, sizeof(when),
		 then.tm_yday == today.tm_yday ? "%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &then);
	snprintf(want, sizeof(want), "<p class=\"since\">slow since %s UTC, for 12 min</p>", when);
	assert_non_null(strstr(page, want));
	cell = strstr(page, "<td class=\"baseline-p50\">");
	assert_non_null(cell);
	assert_int_equal(sscanf(cell, "<td class=\"baseline-p50\">%lf ms<", &ms), 1);
	assert_true(ms > 1.9 && ms < 2.1);
	assert_non_null(strstr(page, "<td class=\"ratio\" data-slow=\"true\">12."));
	assert_non_null(strstr(page, "\xc3\x97 slow</td>"));
	free(page);

	/* One down besides: Not healthy, and the slow one still counted; the
	 * lane's reason code as it says. */
	t = (struct status_target){.state = STATUS_DOWN};
	snprintf(t.name, sizeof(t.name), "t2");
	snprintf(t.reason, sizeof(t.reason), "/srv2: no such directory");
	snprintf(t.reason_code, sizeof(t.reason_code), "missing");
	status_set_target(f.st, 1, &t);
	json = render_json(f.st, false);
	assert_non_null(strstr(json, "\"reason\":\"/srv2: no such directory\",\"reason_code\":"
				     "\"missing\""));
	free(json);
	page = render_page(f.st);
	assert_non_null(strstr(page, "<p class=\"overall bad\" data-ready=\"false\">Not healthy: "
				     "1 of 2 targets up, 1 slow</p>"));
	free(page);
	fixture_free(&f);
}

/* A window or record without I/O has no latency: null, not 0 (a 0 would read as
 * an instant disk); with I/O, numbers again. */
static void test_json_no_io_null(void **state)
{
	struct fixture f;
	char *json;

	(void)state;
	fixture_init(&f);
	assert_int_equal(status_targets_begin(f.st, 1), 0);
	set_target(f.st, 0, "t1", STATUS_UP, "/srv", "");
	/* Past a minute mark with no I/O at all: an empty minute record too. */
	for (unsigned k = 0; k <= 6; k++)
		tick(&f);
	json = render_json(f.st, true);
	assert_non_null(strstr(json, "\"last_minute\":{\"window_seconds\":60.000,\"count\":0,"
				     "\"p50_seconds\":null,\"p90_seconds\":null,"
				     "\"p99_seconds\":null,\"max_seconds\":null}"));
	assert_non_null(strstr(json, "\"last_hour\":{\"window_seconds\":"));
	assert_non_null(strstr(json, "\"minutes\":[{\"count\":0,\"p50_seconds\":null,"
				     "\"p90_seconds\":null,\"p99_seconds\":null,"
				     "\"max_seconds\":null,\"slow\":false}"));
	assert_null(strstr(json, "\"p50_seconds\":0,"));
	assert_null(strstr(json, "\"p50_seconds\":0}"));
	free(json);

	metrics_observe_ns(f.lat, 2 * MS);
	tick(&f);
	json = render_json(f.st, false);
	assert_non_null(strstr(json, "\"last_minute\":{\"window_seconds\":60.000,\"count\":1,"
				     "\"p50_seconds\":0.00"));
	assert_null(strstr(json, "\"last_minute\":{\"window_seconds\":60.000,\"count\":1,"
				 "\"p50_seconds\":null"));
	free(json);
	fixture_free(&f);
}

/* The hour window covers what it says from the first ticks on (60 to 70
 * minutes once there is an hour). */
static void test_hour_span(void **state)
{
	struct fixture f;

	(void)state;
	fixture_init(&f);
	tick(&f);
	for (unsigned k = 1; k <= 480; k++) {
		metrics_observe_ns(f.lat, 1 * MS);
		tick(&f);
		if (k >= 7 && k <= 300)
			assert_int_equal(series(&f)->v.hour.span_ns, k * STATUS_STEP_NS);
		if (k >= 6)
			assert_int_equal(series(&f)->v.minute.span_ns, 60 * NSEC_PER_SEC);
		assert_int_equal(series(&f)->v.hour.count,
				 series(&f)->v.hour.span_ns / STATUS_STEP_NS);
	}
	/* 480 steps: 6 whole blocks and none in progress, then 61 to 70 minutes. */
	assert_int_equal(series(&f)->v.hour.span_ns, 3600 * NSEC_PER_SEC);
	metrics_observe_ns(f.lat, 1 * MS);
	tick(&f);
	assert_int_equal(series(&f)->v.hour.span_ns, 3610 * NSEC_PER_SEC);
	fixture_free(&f);
}

static void recreate(struct fixture *f)
{
	static const char *const labels[] = {"probe", NULL};
	static const char *const values[] = {"p1", NULL};
	struct metric_family *fam;

	metrics_series_drop(f->lat);
	fam = metrics_family(f->m, "lat_seconds", METRIC_HISTOGRAM, "h", labels, NULL, 0);
	f->lat = metrics_series(fam, values);
	assert_non_null(f->lat);
}

/* A fixture whose probe ran 100 I/Os at 5ms over 8 steps, then was changed by a
 * reload: its histogram series recreated, empty. */
static void old_probe_recreated(struct fixture *f)
{
	fixture_init(f);
	tick(f);
	for (unsigned i = 0; i < 100; i++)
		metrics_observe_ns(f->lat, 5 * MS);
	for (unsigned s = 0; s < 8; s++)
		tick(f);
	recreate(f);
}

/* A changed probe whose new histogram passes the old total within a step: a
 * bucket went down, so the series starts over (no counts modulo 2^32). */
static void test_restart_past_old_total(void **state)
{
	struct fixture f;

	(void)state;
	old_probe_recreated(&f);
	for (unsigned i = 0; i < 200; i++)
		metrics_observe_ns(f.lat, 1 * MS);
	tick(&f);
	assert_int_equal(series(&f)->v.minute.count, 200);
	assert_int_equal(series(&f)->v.hour.count, 200);
	assert_within(series(&f)->v.minute.q_ns[0], 1 * MS, 0.03);
	assert_within(series(&f)->v.minute.q_ns[3], 1 * MS, 0.03);
	fixture_free(&f);
}

/* The scheduler names a changed probe: its series starts over even when no
 * bucket went down (same latencies, more of them). */
static void test_restart_named(void **state)
{
	struct fixture f;

	(void)state;
	old_probe_recreated(&f);
	for (unsigned i = 0; i < 300; i++)
		metrics_observe_ns(f.lat, 5 * MS);
	status_probe_changed(f.st, "p1");
	tick(&f);
	assert_int_equal(series(&f)->v.minute.count, 300);
	assert_int_equal(series(&f)->v.ring.min_n, 0);
	fixture_free(&f);
}

/* A probe moved to another target (or made a burst) by a reload is listed
 * under its new target, with its new type. */
static void test_probe_moves(void **state)
{
	struct fixture f;
	uint64_t now;

	(void)state;
	fixture_init(&f);
	tick(&f);
	tick(&f);
	assert_string_equal(series(&f)->v.target, "t1");
	now = 1 + f.k++ * STATUS_STEP_NS;
	f.probe.kind = CFG_PROBE_BURST;
	assert_true(status_tick_due(f.st, now));
	f.op.latency = f.lat;
	f.op.target = "t2";
	status_tick_op(f.st, &f.op, now);
	status_tick_end(f.st, now);
	assert_string_equal(series(&f)->v.target, "t2");
	assert_string_equal(series(&f)->v.kind, "burst");
	fixture_free(&f);
}

/* A step with more distinct buckets than a step keeps: counts and the max stay
 * exact, the median close. */
static void test_coarsened_step(void **state)
{
	struct hist *ref = hist_new(NULL, 0);
	struct fixture f;

	(void)state;
	fixture_init(&f);
	tick(&f);
	for (unsigned i = 0; i < 3200; i++) { /* 400 buckets, 2^(1/16) apart */
		uint64_t ns = (uint64_t)(10 * US * exp2(i / 8 / 16.0));

		metrics_observe_ns(f.lat, ns);
		hist_record(ref, ns);
	}
	tick(&f);
	assert_int_equal(series(&f)->v.minute.count, 3200);
	assert_within(series(&f)->v.minute.q_ns[3], hist_quantile_ns(ref, 1.0), 0.03);
	assert_within(series(&f)->v.minute.q_ns[0], hist_quantile_ns(ref, 0.5), 0.5);
	hist_free(ref);
	fixture_free(&f);
}

static char *latency_str(uint64_t ns)
{
	struct buf b;

	buf_init(&b);
	status_latency(&b, ns, true);
	buf_append(&b, "", 1);
	return b.data;
}

/* Three significant digits, carried into the next unit, never "1e+03". */
static void test_latency_format(void **state)
{
	static const struct {
		uint64_t ns;
		const char *out;
	} cases[] = {
		{999, "999 ns"},    {999499, "999 \xc2\xb5s"}, {999500, "1 ms"},
		{999999, "1 ms"},   {1000, "1 \xc2\xb5s"},     {123456, "123 \xc2\xb5s"},
		{999600000, "1 s"}, {4560000, "4.56 ms"},      {1500000000000, "1500 s"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = latency_str(cases[i].ns);

		assert_string_equal(got, cases[i].out);
		free(got);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_bound),
		cmocka_unit_test(test_codes),
		cmocka_unit_test(test_minute_ring_wraps),
		cmocka_unit_test(test_block_ring_wraps),
		cmocka_unit_test(test_catch_up_gap),
		cmocka_unit_test(test_window_quantiles),
		cmocka_unit_test(test_series_restart),
		cmocka_unit_test(test_hour_span),
		cmocka_unit_test(test_restart_past_old_total),
		cmocka_unit_test(test_restart_named),
		cmocka_unit_test(test_probe_moves),
		cmocka_unit_test(test_coarsened_step),
		cmocka_unit_test(test_latency_format),
		cmocka_unit_test(test_baseline_warmup),
		cmocka_unit_test(test_baseline_median_not_mean),
		cmocka_unit_test(test_baseline_robust_to_regression),
		cmocka_unit_test(test_cpu_bound_left_out),
		cmocka_unit_test(test_slow_floor),
		cmocka_unit_test(test_factor_zero_never_slow),
		cmocka_unit_test(test_waited_raises_recent),
		cmocka_unit_test(test_baseline_blocks_keep_it),
		cmocka_unit_test(test_baseline_relearns_after_a_day_slow),
		cmocka_unit_test(test_baseline_weights),
		cmocka_unit_test(test_tail),
		cmocka_unit_test(test_tail_young_baseline),
		cmocka_unit_test(test_stalls),
		cmocka_unit_test(test_median_not_tail),
		cmocka_unit_test(test_median_end_not_tail),
		cmocka_unit_test(test_floor_auto),
		cmocka_unit_test(test_floor_hides_not_learnt),
		cmocka_unit_test(test_op_slow_replay),
		cmocka_unit_test(test_ready),
		cmocka_unit_test(test_html_escape),
		cmocka_unit_test(test_json_string),
		cmocka_unit_test(test_page_escapes),
		cmocka_unit_test(test_json_no_io_null),
		cmocka_unit_test(test_pages_slow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
