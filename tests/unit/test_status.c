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

#include <cmocka.h>

#include "lib/json.h"
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
	uint64_t k; /* the next tick */
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
	status_tick_op(f->st, &f->probe, "t1", IO_READ, f->lat, now);
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
	assert_int_equal(STATUS_BOUND_BYTES, 1152 * 1024);
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
	op = (struct status_op){.p = &cu.probe, .target = "t1", .op = IO_READ, .latency = cu.lat};
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
				     "\"max_seconds\":null}"));
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
	status_tick_op(f.st, &f.probe, "t2", IO_READ, f.lat, now);
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
		cmocka_unit_test(test_ready),
		cmocka_unit_test(test_html_escape),
		cmocka_unit_test(test_json_string),
		cmocka_unit_test(test_page_escapes),
		cmocka_unit_test(test_json_no_io_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
