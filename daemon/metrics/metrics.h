/* SPDX-License-Identifier: MIT */
/*
 * metrics — the registry of metric families and series, and consistent snapshots.
 *
 * Families are declared at start-up; series are created on first use and may be
 * dropped (a removed target). Writers (lanes, the scheduler, scrape-time
 * collectors) update values under one short registry mutex; the HTTP thread takes
 * a snapshot (a deep copy, families sorted by name, series by label values) and
 * renders it outside the lock. Nothing here formats text; the render cache
 * (metrics_snapshot_cached()) only keeps bytes it is given.
 */
#ifndef IOPULSE_METRICS_H
#define IOPULSE_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/metrics/hist.h"

#define METRICS_MAX_LABELS	 7 /* iopulse_target_info has 7 */
#define METRICS_MAX_EXTRA_LABELS 8 /* of one series, metrics_series_extra() */

enum metric_type {
	METRIC_COUNTER,
	METRIC_GAUGE,
	METRIC_HISTOGRAM,
};

struct metrics;
struct metric_family;
struct metric_series;

struct metrics *metrics_new(void);
/* Frees the registry, its families and series; NULL is a no-op. */
void metrics_free(struct metrics *m);

/* Defaults of the native-histogram view (see metrics_set_native()). */
#define METRICS_NATIVE_SCHEMA	      3
#define METRICS_NATIVE_ZERO_THRESHOLD 0x1p-128 /* seconds, as client_golang's default */

/*
 * The native (sparse exponential) view that snapshots taken with
 * METRICS_SNAP_NATIVE give histogram series: @schema (clamped to
 * HIST_NATIVE_MIN..HIST_NATIVE_SCHEMA) and the zero bucket's width
 * @zero_threshold_s in seconds (<= 0 or NaN: METRICS_NATIVE_ZERO_THRESHOLD —
 * Prometheus 2.42 only treats a histogram as native when it is > 0).
 * Default: METRICS_NATIVE_SCHEMA and METRICS_NATIVE_ZERO_THRESHOLD.
 */
void metrics_set_native(struct metrics *m, int schema, double zero_threshold_s);

/*
 * Declare a family. @name and @help are copied (@help made valid UTF-8 as label
 * values are, see metrics_series()); @labels is a NULL-terminated list
 * of label names (at most METRICS_MAX_LABELS, may be empty). For METRIC_HISTOGRAM,
 * @bounds_ns[0..n_bounds) are the classic bucket bounds of every series (ignored
 * otherwise). Declaring the same name again returns the existing family when the
 * type and labels match, NULL otherwise. NULL on allocation failure.
 * (Also NULL for an invalid metric or label name, a duplicate or reserved label
 * name — "__*", "le" on histograms —, bounds hist_new() refuses, or, on a
 * redeclared histogram, different bounds; the help of a redeclaration is ignored.)
 */
struct metric_family *metrics_family(struct metrics *m, const char *name, enum metric_type type,
				     const char *help, const char *const *labels,
				     const uint64_t *bounds_ns, unsigned n_bounds);

/*
 * A family as a module's table declares it, one row per family (probe_metrics.c,
 * process.c): what metrics_declare() registers, and what the unit test of
 * iopulse(8) METRICS compares with the manual. @labels as metrics_family()'s.
 */
struct metric_def {
	const char *name;
	enum metric_type type;
	const char *const *labels; /* NULL-terminated; NULL: none */
	const char *help;
};

/*
 * Declares the family of each row of @defs[0..n) in @m, as metrics_family(), into
 * @f[0..n): the histogram rows with the bounds @bounds_ns[0..n_bounds) (the
 * configured buckets), the others without. 0, or -ENOMEM at the first row that
 * could not be declared (@f past it unset).
 */
int metrics_declare(struct metrics *m, const struct metric_def *defs, unsigned n,
		    const uint64_t *bounds_ns, unsigned n_bounds, struct metric_family **f);

/* Get or create the series with these label values (one per label name; copied).
 * The pointer stays valid until metrics_series_drop() or metrics_free(). NULL on
 * allocation failure.
 * Every page must carry valid UTF-8: a value that is not is kept with each byte
 * that does not begin a valid sequence replaced by U+FFFD (lib/utf8.h, the rule
 * of /status.json), so values that differ only in such bytes name one series. */
struct metric_series *metrics_series(struct metric_family *f, const char *const *values);

/*
 * As metrics_series(), with @n_extra (at most METRICS_MAX_EXTRA_LABELS) labels
 * of this series only, after the family's: @extra holds their names and values
 * in pairs (copied; the values made valid UTF-8 as metrics_series() does). For
 * an info series whose label set differs from one series to the next (a
 * target's user labels). Series sort by the family's labels, then by these.
 * NULL also for an invalid, reserved ("__*", "le" on histograms) or duplicate
 * name, or one of the family's.
 */
struct metric_series *metrics_series_extra(struct metric_family *f, const char *const *values,
					   const char *const *extra, unsigned n_extra);

/* Remove a series from the registry and free it; NULL is a no-op. */
void metrics_series_drop(struct metric_series *s);

/* Counter: add @v (>= 0). Gauge: set to @v.
 * (Also: metrics_add() on a gauge adds, metrics_set() on a counter sets — for
 * counters read from elsewhere, like process_cpu_seconds_total; a negative or
 * NaN add to a counter is ignored; both are no-ops on a NULL or histogram series.) */
void metrics_add(struct metric_series *s, double v);
void metrics_set(struct metric_series *s, double v);

/* Histogram series: record one value / merge a lane-local histogram (same bounds). */
void metrics_observe_ns(struct metric_series *s, uint64_t ns);
int metrics_merge_hist(struct metric_series *s, const struct hist *h);

/* Reading single series (the status page): a counter's or gauge's value (0 for
 * NULL); @fn called with a histogram series' histogram under the registry mutex
 * (so it must be quick and take no lock of its own). 0, or -EINVAL (NULL or not
 * a histogram). */
double metrics_value(struct metric_series *s);
int metrics_read_hist(struct metric_series *s, void (*fn)(const struct hist *h, void *arg),
		      void *arg);

/*
 * Batches: several updates under one hold of the registry mutex, so that a
 * snapshot sees all of them or none (a latency sample with its I/O and byte
 * counts). Between metrics_lock() and metrics_unlock() call only the _locked
 * variants (the others take the mutex and would deadlock); same semantics as
 * the unlocked ones (NULL series: no-ops; a merge into one returns -EINVAL).
 */
void metrics_lock(struct metrics *m);
void metrics_unlock(struct metrics *m);
void metrics_add_locked(struct metric_series *s, double v);
void metrics_set_locked(struct metric_series *s, double v);
void metrics_observe_ns_locked(struct metric_series *s, uint64_t ns);
int metrics_merge_hist_locked(struct metric_series *s, const struct hist *h);

/* ---- snapshots: plain data for the renderers ---- */

struct metrics_shared;
struct metrics_blob;

struct snap_series {
	const char *values[METRICS_MAX_LABELS]; /* label values, as many as the family's labels */
	unsigned n_extra;			/* labels of this series only, after those */
	const char *extra[2 * METRICS_MAX_EXTRA_LABELS]; /* their names and values, in pairs */
	double value;					 /* counter / gauge */
	uint64_t count;					 /* histogram: number of samples */
	double sum;					 /* histogram: sum, in seconds */
	uint64_t *cumulative;				 /* histogram: n_bounds cumulative counts */
	struct hist_native native; /* histogram, METRICS_SNAP_NATIVE only: the native view */
	/* metrics_snapshot_cached() only: the bytes last stored for this series in the
	 * snapshot's cache slot, still current (the series has not changed since);
	 * then only values[] is filled, not the fields above. NULL otherwise. */
	const char *cached;
	size_t cached_len;
	/* Internal (what metrics_cache_store() needs): the series' generation at the
	 * snapshot and its shared part (label values, cache slots). */
	uint64_t gen;
	struct metrics_shared *shared;
	struct metrics_blob *blob;
};

struct snap_family {
	const char *name;
	const char *help;
	enum metric_type type;
	unsigned n_labels;
	const char *labels[METRICS_MAX_LABELS];
	unsigned n_bounds;    /* histogram */
	const double *bounds; /* histogram: classic bounds in seconds */
	unsigned n_series;
	struct snap_series *series; /* sorted by label values */
};

struct metrics_snapshot {
	unsigned n_families;
	struct snap_family *families; /* sorted by name; families without series omitted */
	int has_native;		      /* taken with METRICS_SNAP_NATIVE */
	struct metrics *reg;	      /* internal: the registry of a cached snapshot */
};

/* A deep copy of the registry at one instant. NULL on allocation failure. */
struct metrics_snapshot *metrics_snapshot(struct metrics *m);

/*
 * As metrics_snapshot(); with METRICS_SNAP_NATIVE in @flags, histogram series also
 * carry their native view (snap_series.native) at the registry's schema and zero
 * threshold. Under the registry mutex each histogram is only copied (a flat
 * array copy); the native view is computed from the copies after the mutex is
 * released, so writers never wait for it. NULL on allocation failure.
 */
#define METRICS_SNAP_NATIVE 0x1u
struct metrics_snapshot *metrics_snapshot_ex(struct metrics *m, unsigned flags);
void metrics_snapshot_free(struct metrics_snapshot *s);

/*
 * Render cache. Every series has METRICS_CACHE_SLOTS slots of opaque bytes (the
 * HTTP layer keeps one rendering per exposition format in them; nothing here
 * knows what they hold) and a generation, bumped by every update of the series
 * (under the registry mutex, which writers hold anyway) and by
 * metrics_set_native(). A slot's bytes are "current" while the series'
 * generation is the one they were stored for.
 *
 * metrics_snapshot_cached() is metrics_snapshot_ex() for slot @slot, except that
 * a series whose slot is current is not copied: its snap_series has only its
 * label values and @cached / @cached_len, the stored bytes (held by the snapshot
 * until metrics_snapshot_free(), whatever happens to the series meanwhile). The
 * other series are copied as usual; after rendering one, give the bytes back with
 * metrics_cache_store(), for the generation the snapshot saw. Unlike a plain
 * snapshot, a cached one shares the label values and bytes with the registry
 * (counted under its mutex): free it before the registry. Memory: at most one
 * stored rendering per series per slot; a dropped series frees its slots once the
 * last snapshot that holds it is freed.
 */
#define METRICS_CACHE_SLOTS 3
struct metrics_snapshot *metrics_snapshot_cached(struct metrics *m, unsigned flags, unsigned slot);

/* Store @data[0..len) (copied) as the rendering of snapshot series @ss in @slot.
 * Ignored when @ss has cached bytes or a newer rendering is stored already.
 * 0, -EINVAL (bad slot, no series) or -ENOMEM. */
int metrics_cache_store(struct metrics *m, const struct snap_series *ss, unsigned slot,
			const void *data, size_t len);

#endif
