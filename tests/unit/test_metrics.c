/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for daemon/metrics: declaring families (one by one and by table),
 * series, values, and snapshots (sorted, deep copies, empty families omitted);
 * label values made valid UTF-8.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "daemon/metrics/metrics.h"

static const char *const no_labels[] = {NULL};
static const char *const pto[] = {"probe", "target", "op", NULL};
static const uint64_t bounds[] = {1000000, 10000000, 100000000}; /* 1 ms, 10 ms, 100 ms */

static void test_family_declare_and_redeclare(void **state)
{
	static const char *const other_labels[] = {"probe", "target", NULL};
	static const char *const reordered[] = {"target", "probe", "op", NULL};
	static const uint64_t other_bounds[] = {1000000, 20000000};
	struct metrics *m = metrics_new();
	struct metric_family *f, *g, *h;

	(void)state;
	assert_non_null(m);
	f = metrics_family(m, "test_runs_total", METRIC_COUNTER, "Runs.", pto, NULL, 0);
	assert_non_null(f);
	/* Same type and labels: the same family (help may differ, it is ignored). */
	assert_ptr_equal(
		metrics_family(m, "test_runs_total", METRIC_COUNTER, "Other help.", pto, NULL, 0),
		f);
	/* Different type, label set, or label order: refused. */
	assert_null(metrics_family(m, "test_runs_total", METRIC_GAUGE, "Runs.", pto, NULL, 0));
	assert_null(metrics_family(m, "test_runs_total", METRIC_COUNTER, "Runs.", other_labels,
				   NULL, 0));
	assert_null(
		metrics_family(m, "test_runs_total", METRIC_COUNTER, "Runs.", reordered, NULL, 0));
	assert_null(
		metrics_family(m, "test_runs_total", METRIC_COUNTER, "Runs.", no_labels, NULL, 0));

	/* Histograms: bounds are part of the family. */
	h = metrics_family(m, "test_latency_seconds", METRIC_HISTOGRAM, "Latency.", pto, bounds, 3);
	assert_non_null(h);
	assert_ptr_equal(metrics_family(m, "test_latency_seconds", METRIC_HISTOGRAM, "Latency.",
					pto, bounds, 3),
			 h);
	assert_null(metrics_family(m, "test_latency_seconds", METRIC_HISTOGRAM, "Latency.", pto,
				   other_bounds, 2));

	/* Labels may be NULL (none); bounds are ignored on non-histograms. */
	g = metrics_family(m, "test_up", METRIC_GAUGE, "Up.", NULL, bounds, 3);
	assert_non_null(g);
	assert_ptr_equal(metrics_family(m, "test_up", METRIC_GAUGE, "Up.", no_labels, NULL, 0), g);

	/* Invalid names and labels. */
	assert_null(metrics_family(m, "", METRIC_GAUGE, "x", NULL, NULL, 0));
	assert_null(metrics_family(m, "1abc", METRIC_GAUGE, "x", NULL, NULL, 0));
	assert_null(metrics_family(m, "a-b", METRIC_GAUGE, "x", NULL, NULL, 0));
	{
		static const char *const dup[] = {"a", "a", NULL};
		static const char *const reserved[] = {"__name", NULL};
		static const char *const le[] = {"le", NULL};
		static const char *const seven[] = {"a", "b", "c", "d", "e", "f", "g", NULL};
		static const char *const eight[] = {"a", "b", "c", "d", "e", "f", "g", "h", NULL};
		static const uint64_t unsorted[] = {5, 1};

		assert_null(metrics_family(m, "test_a", METRIC_GAUGE, "x", dup, NULL, 0));
		assert_null(metrics_family(m, "test_b", METRIC_GAUGE, "x", reserved, NULL, 0));
		assert_null(metrics_family(m, "test_c", METRIC_HISTOGRAM, "x", le, bounds, 3));
		assert_non_null(metrics_family(m, "test_d", METRIC_GAUGE, "x", le, NULL, 0));
		/* METRICS_MAX_LABELS (7: iopulse_target_info's) and no more. */
		assert_non_null(metrics_family(m, "test_g", METRIC_GAUGE, "x", seven, NULL, 0));
		assert_null(metrics_family(m, "test_e", METRIC_GAUGE, "x", eight, NULL, 0));
		assert_null(metrics_family(m, "test_f", METRIC_HISTOGRAM, "x", NULL, unsorted, 2));
	}
	metrics_free(m);
	metrics_free(NULL);
}

/* A table of rows: each declared as metrics_family() would, the bounds on
 * histograms only, the same families again; a row refused stops the walk. */
static void test_declare_table(void **state)
{
	static const char *const t[] = {"target", NULL};
	static const struct metric_def defs[] = {
		{"test_ios_total", METRIC_COUNTER, pto, "I/Os."},
		{"test_latency_seconds", METRIC_HISTOGRAM, pto, "Latency."},
		{"test_up", METRIC_GAUGE, NULL, "Up."},
	};
	static const struct metric_def bad[] = {
		{"test_ok", METRIC_GAUGE, t, "Fine."},
		{"test_up", METRIC_COUNTER, NULL, "Another type."},
		{"test_never", METRIC_GAUGE, NULL, "After the refused row."},
	};
	struct metrics *m = metrics_new();
	struct metric_family *f[3], *g[3] = {NULL, NULL, NULL};
	struct metrics_snapshot *snap;

	(void)state;
	assert_non_null(m);
	assert_int_equal(metrics_declare(m, defs, 3, bounds, 3, f), 0);
	assert_ptr_equal(metrics_family(m, "test_ios_total", METRIC_COUNTER, "", pto, NULL, 0),
			 f[0]);
	assert_ptr_equal(
		metrics_family(m, "test_latency_seconds", METRIC_HISTOGRAM, "", pto, bounds, 3),
		f[1]);
	assert_ptr_equal(metrics_family(m, "test_up", METRIC_GAUGE, "", no_labels, NULL, 0), f[2]);
	assert_int_equal(metrics_declare(m, defs, 3, bounds, 3, g), 0);
	assert_memory_equal(f, g, sizeof(f));
	metrics_set(metrics_series(f[2], no_labels), 1);
	snap = metrics_snapshot(m);
	assert_non_null(snap);
	assert_int_equal(snap->n_families, 1);
	assert_string_equal(snap->families[0].name, "test_up");
	assert_string_equal(snap->families[0].help, "Up.");
	metrics_snapshot_free(snap);

	g[1] = g[2] = NULL;
	assert_int_equal(metrics_declare(m, bad, 3, NULL, 0, g), -ENOMEM);
	assert_non_null(g[0]);
	assert_null(g[1]);
	/* test_never was not declared: any type may still have the name. */
	assert_non_null(metrics_family(m, "test_never", METRIC_COUNTER, "", NULL, NULL, 0));
	metrics_free(m);
}

static void test_series_counter_gauge(void **state)
{
	static const char *const v1[] = {"ping", "/dev/sda", "read"};
	static const char *const v1_copy[] = {"ping", "/dev/sda", "read"};
	static const char *const v2[] = {"ping", "/dev/sda", "write"};
	struct metrics *m = metrics_new();
	struct metric_family *c, *g;
	struct metric_series *s1, *s2, *s3, *gs;
	struct metrics_snapshot *snap;
	const struct snap_family *sf;

	(void)state;
	assert_non_null(m);
	c = metrics_family(m, "test_runs_total", METRIC_COUNTER, "Runs.", pto, NULL, 0);
	g = metrics_family(m, "test_temperature_celsius", METRIC_GAUGE, "T.", NULL, NULL, 0);
	assert_non_null(c);
	assert_non_null(g);

	s1 = metrics_series(c, v1);
	s2 = metrics_series(c, v2);
	s3 = metrics_series(c, v1_copy);
	assert_non_null(s1);
	assert_non_null(s2);
	assert_ptr_equal(s1, s3); /* same label values, same series */
	assert_ptr_not_equal(s1, s2);
	gs = metrics_series(g, NULL);
	assert_non_null(gs);
	assert_ptr_equal(metrics_series(g, no_labels), gs);

	metrics_add(s1, 1);
	metrics_add(s1, 2.5);
	metrics_add(s1, -1);  /* counters never go down */
	metrics_add(s1, NAN); /* nor become NaN */
	metrics_add(s2, 1);
	metrics_set(gs, 21.5);
	metrics_set(gs, -3);
	metrics_add(gs, 1);	   /* gauges may add */
	metrics_observe_ns(s1, 5); /* not a histogram: ignored */
	metrics_add(NULL, 1);
	metrics_set(NULL, 1);

	snap = metrics_snapshot(m);
	assert_non_null(snap);
	sf = tu_find_family(snap, "test_runs_total");
	assert_non_null(sf);
	assert_int_equal(sf->type, METRIC_COUNTER);
	assert_string_equal(sf->help, "Runs.");
	assert_int_equal(sf->n_labels, 3);
	assert_string_equal(sf->labels[0], "probe");
	assert_string_equal(sf->labels[2], "op");
	assert_int_equal(sf->n_series, 2);
	assert_string_equal(sf->series[0].values[2], "read");
	assert_true(sf->series[0].value == 3.5);
	assert_string_equal(sf->series[1].values[2], "write");
	assert_true(sf->series[1].value == 1);
	sf = tu_find_family(snap, "test_temperature_celsius");
	assert_non_null(sf);
	assert_int_equal(sf->n_labels, 0);
	assert_int_equal(sf->n_series, 1);
	assert_true(sf->series[0].value == -2);
	metrics_snapshot_free(snap);
	metrics_snapshot_free(NULL);
	metrics_free(m);
}

static void test_histogram_observe_merge(void **state)
{
	static const char *const v[] = {"ping", "/srv", "read"};
	static const uint64_t other[] = {1, 2};
	struct metrics *m = metrics_new();
	struct metric_family *f;
	struct metric_series *s;
	struct hist *local = hist_new(bounds, 3), *wrong = hist_new(other, 2);
	struct metrics_snapshot *snap;
	const struct snap_family *sf;

	(void)state;
	assert_non_null(m);
	assert_non_null(local);
	assert_non_null(wrong);
	f = metrics_family(m, "test_latency_seconds", METRIC_HISTOGRAM, "Latency.", pto, bounds, 3);
	s = metrics_series(f, v);
	assert_non_null(s);

	metrics_observe_ns(s, 500000);	   /* 0.5 ms */
	metrics_observe_ns(s, 1000000);	   /* 1 ms: le="0.001" */
	hist_record(local, 10000000);	   /* 10 ms */
	hist_record(local, 2000000000ull); /* 2 s: only +Inf */
	assert_int_equal(metrics_merge_hist(s, local), 0);
	assert_int_equal(metrics_merge_hist(s, wrong), -EINVAL);
	assert_int_equal(metrics_merge_hist(NULL, local), -EINVAL);
	metrics_set(s, 5); /* not a counter/gauge: ignored */

	snap = metrics_snapshot(m);
	assert_non_null(snap);
	sf = tu_find_family(snap, "test_latency_seconds");
	assert_non_null(sf);
	assert_int_equal(sf->type, METRIC_HISTOGRAM);
	assert_int_equal(sf->n_bounds, 3);
	assert_true(sf->bounds[0] == 0.001);
	assert_true(sf->bounds[1] == 0.01);
	assert_true(sf->bounds[2] == 0.1);
	assert_int_equal(sf->n_series, 1);
	assert_int_equal(sf->series[0].count, 4);
	assert_true(fabs(sf->series[0].sum - 2.0115) < 1e-12);
	assert_int_equal(sf->series[0].cumulative[0], 2);
	assert_int_equal(sf->series[0].cumulative[1], 3);
	assert_int_equal(sf->series[0].cumulative[2], 3);
	metrics_snapshot_free(snap);
	hist_free(local);
	hist_free(wrong);
	metrics_free(m);
}

static void test_snapshot_sorted_deep_copy(void **state)
{
	static const char *const lab[] = {"a", "b", NULL};
	static const char *const vals[][2] = {
		{"y", "1"}, {"x", "2"}, {"x", "10"}, {"", "z"}, {"y", "0"},
	};
	static const char *const want[][2] = {
		{"", "z"}, {"x", "10"}, {"x", "2"}, {"y", "0"}, {"y", "1"},
	};
	struct metrics *m = metrics_new();
	struct metric_family *f;
	struct metric_series *s[5], *z;
	struct metrics_snapshot *snap, *snap2;
	const struct snap_family *sf;
	unsigned i;

	(void)state;
	assert_non_null(m);
	/* Declared out of order; "test_empty" never gets a series. */
	assert_non_null(metrics_family(m, "test_zeta", METRIC_GAUGE, "Z.", NULL, NULL, 0));
	assert_non_null(metrics_family(m, "test_empty", METRIC_GAUGE, "E.", NULL, NULL, 0));
	f = metrics_family(m, "test_beta", METRIC_GAUGE, "B.", lab, NULL, 0);
	assert_non_null(metrics_family(m, "test_alpha_total", METRIC_COUNTER, "A.", NULL, NULL, 0));
	for (i = 0; i < 5; i++) {
		s[i] = metrics_series(f, vals[i]);
		assert_non_null(s[i]);
		metrics_set(s[i], i);
	}
	z = metrics_series(metrics_family(m, "test_zeta", METRIC_GAUGE, "Z.", NULL, NULL, 0), NULL);
	metrics_set(z, 7);
	metrics_add(metrics_series(metrics_family(m, "test_alpha_total", METRIC_COUNTER, "A.", NULL,
						  NULL, 0),
				   NULL),
		    1);

	snap = metrics_snapshot(m);
	assert_non_null(snap);
	assert_int_equal(snap->n_families, 3); /* test_empty omitted */
	assert_string_equal(snap->families[0].name, "test_alpha_total");
	assert_string_equal(snap->families[1].name, "test_beta");
	assert_string_equal(snap->families[2].name, "test_zeta");
	sf = &snap->families[1];
	assert_int_equal(sf->n_series, 5);
	for (i = 0; i < 5; i++) {
		assert_string_equal(sf->series[i].values[0], want[i][0]);
		assert_string_equal(sf->series[i].values[1], want[i][1]);
	}
	/* A cached snapshot (the registry's strings, not copies) is in order too. */
	snap2 = metrics_snapshot_cached(m, 0, 0);
	assert_non_null(snap2);
	assert_int_equal(snap2->n_families, 3);
	assert_string_equal(snap2->families[0].name, "test_alpha_total");
	assert_string_equal(snap2->families[1].name, "test_beta");
	assert_string_equal(snap2->families[1].labels[1], "b");
	assert_string_equal(snap2->families[1].help, "B.");
	assert_string_equal(snap2->families[2].name, "test_zeta");
	metrics_snapshot_free(snap2);

	/* Mutating, dropping, even freeing the registry leaves the snapshot intact. */
	metrics_set(z, 99);
	metrics_series_drop(s[0]);
	metrics_series_drop(NULL);
	snap2 = metrics_snapshot(m);
	assert_non_null(snap2);
	assert_int_equal(tu_find_family(snap2, "test_beta")->n_series, 4);
	assert_true(tu_find_family(snap2, "test_zeta")->series[0].value == 99);
	metrics_series_drop(z); /* the family's last series: the family disappears */
	metrics_snapshot_free(snap2);
	snap2 = metrics_snapshot(m);
	assert_non_null(snap2);
	assert_int_equal(snap2->n_families, 2);
	assert_null(tu_find_family(snap2, "test_zeta"));
	metrics_snapshot_free(snap2);

	metrics_free(m);
	assert_true(snap->families[2].series[0].value == 7);
	assert_int_equal(snap->families[1].n_series, 5);
	assert_string_equal(snap->families[1].series[4].values[0], "y");
	assert_string_equal(snap->families[1].series[4].values[1], "1");
	assert_true(snap->families[1].series[4].value == 0);
	metrics_snapshot_free(snap);
}

static void test_batch_locked(void **state)
{
	static const char *const v[] = {"p", "t", "o"};
	struct metrics *m = metrics_new();
	struct metric_series *c, *g, *h;
	struct hist *local = hist_new(bounds, 3);
	struct metrics_snapshot *snap;

	(void)state;
	assert_non_null(m);
	assert_non_null(local);
	c = metrics_series(metrics_family(m, "test_ops_total", METRIC_COUNTER, "O.", pto, NULL, 0),
			   v);
	g = metrics_series(metrics_family(m, "test_level_ratio", METRIC_GAUGE, "L.", pto, NULL, 0),
			   v);
	h = metrics_series(
		metrics_family(m, "test_latency_seconds", METRIC_HISTOGRAM, "L.", pto, bounds, 3),
		v);
	hist_record(local, 2000000);

	metrics_lock(m);
	metrics_add_locked(c, 2);
	metrics_add_locked(c, -5); /* refused, as unlocked */
	metrics_set_locked(g, 0.75);
	metrics_observe_ns_locked(h, 500);
	assert_int_equal(metrics_merge_hist_locked(h, local), 0);
	assert_int_equal(metrics_merge_hist_locked(c, local), -EINVAL);
	metrics_add_locked(NULL, 1);
	metrics_observe_ns_locked(NULL, 1);
	metrics_unlock(m);

	snap = metrics_snapshot(m);
	assert_non_null(snap);
	assert_true(tu_find_family(snap, "test_ops_total")->series[0].value == 2);
	assert_true(tu_find_family(snap, "test_level_ratio")->series[0].value == 0.75);
	assert_int_equal(tu_find_family(snap, "test_latency_seconds")->series[0].count, 2);
	assert_int_equal(tu_find_family(snap, "test_latency_seconds")->series[0].cumulative[0], 1);
	metrics_snapshot_free(snap);
	hist_free(local);
	metrics_free(m);
}

static void test_empty_registry(void **state)
{
	struct metrics *m = metrics_new();
	struct metrics_snapshot *snap;

	(void)state;
	assert_non_null(m);
	snap = metrics_snapshot(m);
	assert_non_null(snap);
	assert_int_equal(snap->n_families, 0);
	metrics_snapshot_free(snap);
	metrics_free(m);
}

/* Writers and a snapshotter at once: under ASan/TSan this catches missing locking. */
struct writer_arg {
	struct metrics *m;
	struct metric_series *counter;
	struct metric_series *hist;
};

static void *writer(void *p)
{
	struct writer_arg *a = p;
	unsigned i;

	for (i = 0; i < 20000; i++) {
		if (i % 2) {
			metrics_add(a->counter, 1);
			metrics_observe_ns(a->hist, i);
			continue;
		}
		/* A batch: the snapshotter sees both or neither. */
		metrics_lock(a->m);
		metrics_add_locked(a->counter, 1);
		metrics_observe_ns_locked(a->hist, i);
		metrics_unlock(a->m);
	}
	return NULL;
}

static void test_concurrent_writers(void **state)
{
	static const char *const v[] = {"p", "t", "o"};
	struct metrics *m = metrics_new();
	struct writer_arg a;
	pthread_t th[4];
	struct metrics_snapshot *snap;
	unsigned i;

	(void)state;
	assert_non_null(m);
	a.m = m;
	a.counter = metrics_series(
		metrics_family(m, "test_ops_total", METRIC_COUNTER, "Ops.", pto, NULL, 0), v);
	a.hist = metrics_series(
		metrics_family(m, "test_latency_seconds", METRIC_HISTOGRAM, "L.", pto, bounds, 3),
		v);
	assert_non_null(a.counter);
	assert_non_null(a.hist);
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, writer, &a), 0);
	for (i = 0; i < 50; i++)
		metrics_snapshot_free(metrics_snapshot(m));
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	snap = metrics_snapshot(m);
	assert_non_null(snap);
	assert_true(tu_find_family(snap, "test_ops_total")->series[0].value == 80000);
	assert_int_equal(tu_find_family(snap, "test_latency_seconds")->series[0].count, 80000);
	metrics_snapshot_free(snap);
	metrics_free(m);
}

/* The native view: only with METRICS_SNAP_NATIVE, at the registry's settings
 * (clamped), equal to hist_native() of the same samples. */
/*
 * The render cache: a stored piece comes back while the series is unchanged;
 * any update (a value, a histogram sample or merge, the native settings)
 * makes the series be copied again; older pieces never replace newer ones; a
 * snapshot keeps its pieces and label values when the series is dropped and the
 * registry freed.
 */
static void test_snapshot_cached(void **state)
{
	static const char *const l[] = {"op", NULL};
	static const char *const va[] = {"a", NULL}, *const vb[] = {"b", NULL};
	struct metrics *m = metrics_new();
	struct metric_family *c, *h;
	struct metric_series *ca, *cb, *ha;
	struct metrics_snapshot *snap, *old;
	const struct snap_family *sf;
	struct hist *lane = hist_new(bounds, 3);

	(void)state;
	assert_non_null(m);
	assert_non_null(lane);
	c = metrics_family(m, "c_total", METRIC_COUNTER, "", l, NULL, 0);
	h = metrics_family(m, "h_seconds", METRIC_HISTOGRAM, "", l, bounds, 3);
	cb = metrics_series(c, vb); /* created out of order: snapshots still sort */
	ca = metrics_series(c, va);
	ha = metrics_series(h, va);
	assert_non_null(ca);
	assert_non_null(cb);
	assert_non_null(ha);
	metrics_add(ca, 1);
	metrics_observe_ns(ha, 5000000);

	assert_null(metrics_snapshot_cached(m, 0, METRICS_CACHE_SLOTS));
	snap = metrics_snapshot_cached(m, 0, 1);
	assert_non_null(snap);
	sf = tu_find_family(snap, "c_total");
	assert_int_equal(sf->n_series, 2);
	assert_string_equal(sf->series[0].values[0], "a");
	assert_string_equal(sf->series[1].values[0], "b");
	assert_null(sf->series[0].cached);
	assert_true(sf->series[0].value == 1);
	assert_int_equal(metrics_cache_store(m, &sf->series[0], 1, "A1", 2), 0);
	assert_int_equal(metrics_cache_store(m, &sf->series[1], 1, "B0", 2), 0);
	assert_int_equal(metrics_cache_store(m, &sf->series[1], METRICS_CACHE_SLOTS, "x", 1),
			 -EINVAL);
	sf = tu_find_family(snap, "h_seconds");
	assert_int_equal(sf->series[0].count, 1);
	assert_int_equal(metrics_cache_store(m, &sf->series[0], 1, "H1", 2), 0);
	old = snap;

	/* Everything unchanged: all pieces come back, in slot 1 only. */
	snap = metrics_snapshot_cached(m, 0, 1);
	assert_non_null(snap);
	sf = tu_find_family(snap, "c_total");
	assert_int_equal(sf->series[0].cached_len, 2);
	assert_memory_equal(sf->series[0].cached, "A1", 2);
	assert_string_equal(sf->series[0].values[0], "a");
	assert_memory_equal(sf->series[1].cached, "B0", 2);
	assert_memory_equal(tu_find_family(snap, "h_seconds")->series[0].cached, "H1", 2);
	metrics_snapshot_free(snap);
	snap = metrics_snapshot_cached(m, 0, 0);
	assert_null(tu_find_family(snap, "c_total")->series[0].cached);
	metrics_snapshot_free(snap);
	snap = metrics_snapshot(m);
	assert_null(tu_find_family(snap, "c_total")->series[0].cached);
	metrics_snapshot_free(snap);

	/* Updates: the changed series only. */
	metrics_add(ca, 2);
	metrics_observe_ns(ha, 50000000);
	snap = metrics_snapshot_cached(m, 0, 1);
	sf = tu_find_family(snap, "c_total");
	assert_null(sf->series[0].cached);
	assert_true(sf->series[0].value == 3);
	assert_non_null(sf->series[1].cached);
	sf = tu_find_family(snap, "h_seconds");
	assert_null(sf->series[0].cached);
	assert_int_equal(sf->series[0].count, 2);
	assert_int_equal(sf->series[0].cumulative[1], 1);
	/* A piece of an older snapshot does not replace a newer one. */
	assert_int_equal(metrics_cache_store(m, &sf->series[0], 1, "H2", 2), 0);
	assert_int_equal(
		metrics_cache_store(m, &tu_find_family(old, "h_seconds")->series[0], 1, "H1", 2),
		0);
	metrics_snapshot_free(snap);
	snap = metrics_snapshot_cached(m, 0, 1);
	assert_memory_equal(tu_find_family(snap, "h_seconds")->series[0].cached, "H2", 2);
	metrics_snapshot_free(snap);

	/* A merge, a set, a batch and new native settings are updates too. */
	hist_record(lane, 1);
	assert_int_equal(metrics_merge_hist(ha, lane), 0);
	metrics_set(cb, 0); /* same value: still an update */
	snap = metrics_snapshot_cached(m, 0, 1);
	assert_null(tu_find_family(snap, "h_seconds")->series[0].cached);
	assert_int_equal(tu_find_family(snap, "h_seconds")->series[0].count, 3);
	assert_null(tu_find_family(snap, "c_total")->series[1].cached);
	assert_null(tu_find_family(snap, "c_total")->series[0].cached); /* "A1" is stale */
	metrics_snapshot_free(snap);
	snap = metrics_snapshot_cached(m, METRICS_SNAP_NATIVE, 1);
	sf = tu_find_family(snap, "h_seconds");
	assert_int_equal(metrics_cache_store(m, &sf->series[0], 1, "N3", 2), 0);
	assert_int_equal(sf->series[0].native.schema, METRICS_NATIVE_SCHEMA);
	metrics_snapshot_free(snap);
	metrics_set_native(m, 2, 0);
	snap = metrics_snapshot_cached(m, METRICS_SNAP_NATIVE, 1);
	sf = tu_find_family(snap, "h_seconds");
	assert_null(sf->series[0].cached);
	assert_int_equal(sf->series[0].native.schema, 2);
	metrics_snapshot_free(snap);

	/* Dropped series: the snapshots keep their bytes and label values (a cached
	 * snapshot is freed before the registry), and a late store is harmless. */
	snap = metrics_snapshot_cached(m, 0, 1);
	assert_int_equal(
		metrics_cache_store(m, &tu_find_family(snap, "c_total")->series[0], 1, "A3", 2), 0);
	metrics_snapshot_free(snap);
	snap = metrics_snapshot_cached(m, 0, 1);
	metrics_series_drop(ca);
	metrics_series_drop(ha);
	sf = tu_find_family(snap, "c_total");
	assert_string_equal(sf->series[0].values[0], "a");
	assert_memory_equal(sf->series[0].cached, "A3", 2);
	assert_string_equal(tu_find_family(old, "h_seconds")->series[0].values[0], "a");
	assert_int_equal(
		metrics_cache_store(m, &tu_find_family(old, "h_seconds")->series[0], 1, "X", 1), 0);
	metrics_snapshot_free(snap);
	metrics_snapshot_free(old);
	snap = metrics_snapshot_cached(m, 0, 1);
	assert_int_equal(tu_find_family(snap, "c_total")->n_series, 1);
	assert_null(tu_find_family(snap, "h_seconds"));
	metrics_snapshot_free(snap);
	metrics_free(m);
	hist_free(lane);
}

static void test_snapshot_native(void **state)
{
	static const uint64_t nbounds[] = {1000000};
	struct metrics *m = metrics_new();
	struct metric_family *f;
	struct metric_series *s;
	struct metrics_snapshot *snap;
	struct hist *h = hist_new(nbounds, 1);
	struct hist_native want;
	const struct hist_native *got;
	unsigned i;

	(void)state;
	assert_non_null(m);
	assert_non_null(h);
	f = metrics_family(m, "lat_seconds", METRIC_HISTOGRAM, "", NULL, nbounds, 1);
	s = metrics_series(f, NULL);
	assert_non_null(s);
	for (i = 1; i <= 1000; i++) {
		metrics_observe_ns(s, i * 7919);
		hist_record(h, i * 7919);
	}

	snap = metrics_snapshot(m);
	assert_non_null(snap);
	assert_false(snap->has_native);
	assert_int_equal(snap->families[0].series[0].native.n_spans, 0);
	assert_null(snap->families[0].series[0].native.deltas);
	metrics_snapshot_free(snap);

	/* Defaults: schema 3, zero threshold 2^-128 s. */
	snap = metrics_snapshot_ex(m, METRICS_SNAP_NATIVE);
	assert_non_null(snap);
	assert_true(snap->has_native);
	got = &snap->families[0].series[0].native;
	assert_int_equal(got->schema, METRICS_NATIVE_SCHEMA);
	assert_true(got->zero_threshold == 0x1p-128);
	assert_int_equal(hist_native(h, METRICS_NATIVE_SCHEMA, 0x1p-128, &want), 0);
	assert_int_equal(got->zero_count, want.zero_count);
	assert_int_equal(got->n_spans, want.n_spans);
	assert_memory_equal(got->spans, want.spans, want.n_spans * sizeof(*want.spans));
	assert_int_equal(got->n_deltas, want.n_deltas);
	assert_memory_equal(got->deltas, want.deltas, want.n_deltas * sizeof(*want.deltas));
	hist_native_free(&want);
	metrics_snapshot_free(snap);

	/* Out-of-range settings are clamped; a threshold <= 0 or NaN is the default. */
	metrics_set_native(m, 42, -1);
	snap = metrics_snapshot_ex(m, METRICS_SNAP_NATIVE);
	assert_non_null(snap);
	assert_int_equal(snap->families[0].series[0].native.schema, HIST_NATIVE_SCHEMA);
	assert_true(snap->families[0].series[0].native.zero_threshold == 0x1p-128);
	metrics_snapshot_free(snap);
	metrics_set_native(m, -42, NAN);
	snap = metrics_snapshot_ex(m, METRICS_SNAP_NATIVE);
	assert_non_null(snap);
	assert_int_equal(snap->families[0].series[0].native.schema, HIST_NATIVE_MIN);
	metrics_snapshot_free(snap);

	/* A real threshold: everything at or below 1 ms is in the zero bucket. */
	metrics_set_native(m, 0, 0.001);
	snap = metrics_snapshot_ex(m, METRICS_SNAP_NATIVE);
	assert_non_null(snap);
	got = &snap->families[0].series[0].native;
	assert_int_equal(got->schema, 0);
	assert_true(got->zero_threshold == 0.001);
	assert_int_equal(hist_native(h, 0, 0.001, &want), 0);
	assert_int_equal(got->zero_count, want.zero_count);
	assert_true(got->zero_count >= 126); /* 126 * 7919 ns < 1 ms */
	hist_native_free(&want);
	metrics_snapshot_free(snap);

	metrics_set_native(NULL, 3, 0); /* no-op */
	hist_free(h);
	metrics_free(m);
}

/* Labels of one series only: checked, part of its identity and order, copied by
 * plain and cached snapshots, freed with the series. */
static void test_series_extra_labels(void **state)
{
	static const char *const labels[] = {"target", NULL};
	static const char *const t1[] = {"t1", NULL};
	static const char *const zr[] = {"zone", "eu-1", "rack", "r1"};
	static const char *const zone_b[] = {"zone", "eu-2"};
	static const char *const bad[][4] = {
		{"zone", "a", "zone", "b"},  /* twice */
		{"target", "x", NULL, NULL}, /* the family's */
		{"__zone", "a", NULL, NULL}, /* reserved */
		{"1zone", "a", NULL, NULL},  {"zone", NULL, NULL, NULL},
	};
	static const unsigned bad_n[] = {2, 1, 1, 1, 1};
	const char *nine[18];
	struct metrics *m = metrics_new();
	struct metric_family *f;
	struct metric_series *plain, *a, *b;
	struct metrics_snapshot *snap;
	const struct snap_family *sf;

	(void)state;
	assert_non_null(m);
	f = metrics_family(m, "x_info", METRIC_GAUGE, "help", labels, NULL, 0);
	assert_non_null(f);
	for (unsigned i = 0; i < sizeof(bad_n) / sizeof(bad_n[0]); i++)
		assert_null(metrics_series_extra(f, t1, bad[i], bad_n[i]));
	for (unsigned i = 0; i < 9; i++) {
		nine[2 * i] = (const char *[]){"a", "b", "c", "d", "e", "f", "g", "h", "i"}[i];
		nine[2 * i + 1] = "v";
	}
	assert_null(metrics_series_extra(f, t1, nine, 9));
	assert_non_null(metrics_series_extra(f, t1, nine, 8));
	metrics_series_drop(metrics_series_extra(f, t1, nine, 8));

	a = metrics_series_extra(f, t1, zr, 2);
	b = metrics_series_extra(f, t1, zone_b, 1);
	plain = metrics_series(f, t1);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(plain);
	assert_ptr_equal(metrics_series_extra(f, t1, zr, 2), a); /* get-or-create */
	assert_ptr_not_equal(a, b);
	assert_ptr_not_equal(a, plain);
	metrics_set(a, 1);
	metrics_set(b, 2);
	metrics_set(plain, 3);

	for (unsigned cached = 0; cached < 2; cached++) {
		snap = cached ? metrics_snapshot_cached(m, 0, 0) : metrics_snapshot(m);
		assert_non_null(snap);
		sf = tu_find_family(snap, "x_info");
		assert_non_null(sf);
		assert_int_equal(sf->n_series, 3);
		/* Fewer extra labels first. */
		assert_int_equal(sf->series[0].n_extra, 0);
		assert_true(sf->series[0].value == 3);
		assert_int_equal(sf->series[1].n_extra, 1);
		assert_string_equal(sf->series[1].extra[0], "zone");
		assert_string_equal(sf->series[1].extra[1], "eu-2");
		assert_int_equal(sf->series[2].n_extra, 2);
		assert_string_equal(sf->series[2].extra[2], "rack");
		assert_string_equal(sf->series[2].extra[3], "r1");
		assert_true(sf->series[2].value == 1);
		if (cached)
			metrics_series_drop(a); /* the snapshot keeps what it shows */
		assert_string_equal(sf->series[2].extra[1], "eu-1");
		metrics_snapshot_free(snap);
	}
	metrics_free(m);
}

/* Label values (and help) that are not UTF-8 are kept with each byte that does
 * not begin a valid sequence replaced by U+FFFD, /status.json's rule: one per
 * byte, whatever the sequence was meant to be. Valid text, odd or not (quotes,
 * controls: the renderers escape them), is kept byte for byte. */
#define R "\xef\xbf\xbd" /* U+FFFD */
static void test_series_utf8(void **state)
{
	static const char *const labels[] = {"path", NULL};
	static const struct {
		const char *in, *want;
	} cases[] = {
		/* valid: kept, multi-byte and boundaries of each length included */
		{"caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x92\xbe", NULL},
		{"\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xf0\x90\x80\x80\xf4\x8f\xbf"
		 "\xbf",
		 NULL},
		{"a\"b\\c\nd\re\tf\x01g\x7f\xc2\x9b" R, NULL},
		/* stray continuation bytes, bytes that begin nothing */
		{"dir\x9b\xff", "dir" R R},
		{"\x80\xbf\xc0\xc1\xf5\xfe", R R R R R R},
		/* truncated: at the end, before ASCII, before another lead byte */
		{"a\xe2\x82", "a" R R},
		{"\xe2\x82x", R R "x"},
		{"\xf0\x9f\x92\xc3\xa9", R R R "\xc3\xa9"},
		/* overlong forms of '/' and U+0000 */
		{"\xc0\xaf|\xe0\x80\xaf|\xf0\x80\x80\xaf", R R "|" R R R "|" R R R R},
		{"\xc0\x80", R R},
		/* UTF-16 surrogates, past U+10FFFF */
		{"\xed\xa0\x80 \xed\xbf\xbf", R R R " " R R R},
		{"\xf4\x90\x80\x80", R R R R},
	};
	static const char *const extra_raw[] = {"zone", "eu\xff"};
	const unsigned n = sizeof(cases) / sizeof(cases[0]);
	struct metrics *m = metrics_new();
	struct metric_family *f;
	struct metrics_snapshot *snap;
	const struct snap_family *sf;

	(void)state;
	assert_non_null(m);
	f = metrics_family(m, "x_info", METRIC_GAUGE, "help \xff", labels, NULL, 0);
	assert_non_null(f);
	for (unsigned i = 0; i < n; i++) {
		const char *raw[] = {cases[i].in, NULL};
		const char *want[] = {cases[i].want ? cases[i].want : cases[i].in, NULL};
		struct metric_series *s = metrics_series(f, raw);

		assert_non_null(s);
		metrics_set(s, i);
		/* The replaced value names the same series: no two with one label set. */
		assert_ptr_equal(metrics_series(f, want), s);
		assert_ptr_equal(metrics_series(f, raw), s);
	}
	/* Labels of one series only: their values too. */
	assert_non_null(metrics_series_extra(f, (const char *[]){"x", NULL}, extra_raw, 1));

	snap = metrics_snapshot(m);
	assert_non_null(snap);
	sf = tu_find_family(snap, "x_info");
	assert_non_null(sf);
	assert_string_equal(sf->help, "help " R);
	assert_int_equal(sf->n_series, n + 1);
	for (unsigned i = 0; i < sf->n_series; i++) {
		const struct snap_series *ss = &sf->series[i];
		unsigned c = (unsigned)ss->value; /* the case that made it */

		if (ss->n_extra) {
			assert_string_equal(ss->extra[1], "eu" R);
			continue;
		}
		assert_true(c < n);
		assert_string_equal(ss->values[0], cases[c].want ? cases[c].want : cases[c].in);
	}
	metrics_snapshot_free(snap);
	metrics_free(m);
}
#undef R

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_family_declare_and_redeclare),
		cmocka_unit_test(test_declare_table),
		cmocka_unit_test(test_series_counter_gauge),
		cmocka_unit_test(test_histogram_observe_merge),
		cmocka_unit_test(test_snapshot_sorted_deep_copy),
		cmocka_unit_test(test_snapshot_native),
		cmocka_unit_test(test_batch_locked),
		cmocka_unit_test(test_empty_registry),
		cmocka_unit_test(test_concurrent_writers),
		cmocka_unit_test(test_snapshot_cached),
		cmocka_unit_test(test_series_extra_labels),
		cmocka_unit_test(test_series_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
