/* SPDX-License-Identifier: MIT */
/*
 * hist — latency histogram: record, merge, quantiles, classic buckets.
 *
 * The design (bucket layout, range, maximum relative error) is in
 * docs/histogram.md. In short: values are nanoseconds; fine buckets, which are
 * the buckets of a native histogram of schema 7 over seconds, give quantiles
 * within 0.55 % relative error; classic "le" buckets, whose
 * bounds are fixed when the histogram is made, are counted exactly at record
 * time. No allocation, lock or floating-point log() on record.
 * Never resets; never rescales. Knows nothing of Prometheus text.
 */
#ifndef IOPULSE_HIST_H
#define IOPULSE_HIST_H

#include <stdint.h>

#define HIST_MAX_BOUNDS 64

struct hist;

/* A new, empty histogram whose classic bounds are @bounds_ns[0..n) (strictly
 * ascending, n <= HIST_MAX_BOUNDS; copied). NULL on allocation failure or bad
 * bounds. */
struct hist *hist_new(const uint64_t *bounds_ns, unsigned n);

/* NULL is a no-op. */
void hist_free(struct hist *h);

/* Record one value. */
void hist_record(struct hist *h, uint64_t ns);

/* Add @src into @dst. Both must have the same classic bounds: returns 0, or
 * -EINVAL when they differ (nothing changed). */
int hist_merge(struct hist *dst, const struct hist *src);

/* Add @n samples to fine bucket @idx (see below) whose exact values are not
 * known: a window rebuilt from stored bucket counts (the status page). Each
 * counts as the middle of the bucket for the classic buckets and the sum; min
 * and max widen to the bucket's bounds, so quantiles keep the stated error. */
void hist_add_fine(struct hist *h, unsigned idx, uint64_t n);

/* Back to empty (for lane-local scratch histograms, never for exported ones). */
void hist_clear(struct hist *h);

uint64_t hist_count(const struct hist *h);
uint64_t hist_sum_ns(const struct hist *h); /* saturates at UINT64_MAX */
uint64_t hist_min_ns(const struct hist *h); /* 0 when empty */
uint64_t hist_max_ns(const struct hist *h); /* 0 when empty */

/* Estimate of quantile @q in [0,1]; 0 when empty. Within the relative error stated
 * in hist.c of the exact sample quantile (nearest-rank definition), clamped to
 * [min, max]. */
uint64_t hist_quantile_ns(const struct hist *h, double q);

/* Classic buckets: number of bounds, the bounds, and cumulative counts
 * (counts[i] = samples <= bounds[i]; the +Inf bucket is hist_count()). */
unsigned hist_n_bounds(const struct hist *h);
const uint64_t *hist_bounds_ns(const struct hist *h);
void hist_cumulative(const struct hist *h, uint64_t *counts);

/* Fine-bucket layout (see hist.c), for tests and for exporters that walk the
 * buckets: HIST_N_FINE buckets; bucket 0 holds the value 0, bucket f >= 1 is the
 * schema-7 native bucket f - 1 + HIST_NATIVE_IDX_MIN, i.e. the values in
 * (2^((i-1)/128), 2^(i/128)] seconds. hist_fine_index() maps a value to its
 * bucket (values past HIST_MAX_NS map to the last one), hist_fine_range() gives
 * the integers a bucket holds ([lo, hi]; lo > hi when it holds none: below
 * ~185 ns buckets are narrower than 1 ns), hist_fine_count() its count. */
#define HIST_N_FINE	    5236
#define HIST_NATIVE_IDX_MIN (-3826)	     /* schema-7 bucket of 1 ns */
#define HIST_NATIVE_IDX_MAX 1408	     /* ends at 2^11 s */
#define HIST_MAX_NS	    2048000000000ull /* 2^11 s: larger values are clamped */
unsigned hist_fine_index(uint64_t ns);
void hist_fine_range(unsigned idx, uint64_t *lo, uint64_t *hi);
uint64_t hist_fine_count(const struct hist *h, unsigned idx);
/* Samples too large for the fine buckets (> HIST_MAX_NS), clamped into the last. */
uint64_t hist_overflow(const struct hist *h);

/*
 * Native (sparse exponential) histogram view, as Prometheus' protobuf format
 * carries it: for schema s, bucket i holds values in (2^((i-1)/2^s), 2^(i/2^s)]
 * seconds; values <= zero_threshold go to the zero bucket. Buckets come as spans
 * of consecutive indexes (a gap of up to two empty buckets stays inside a span)
 * and delta-encoded counts (each count minus the previous one, the first minus 0).
 * The recording layout is a native schema itself (HIST_NATIVE_SCHEMA), so any
 * coarser schema is an exact downscale: no sample changes bucket.
 */
#define HIST_NATIVE_SCHEMA 7  /* recording resolution; downscale to any s <= 7 */
#define HIST_NATIVE_MIN	   -4 /* Prometheus' smallest schema */

struct hist_span {
	int32_t offset;	 /* from the end of the previous span (first: absolute index) */
	uint32_t length; /* buckets in the span */
};

struct hist_native {
	int schema;
	double zero_threshold; /* seconds */
	uint64_t zero_count;
	unsigned n_spans;
	struct hist_span *spans; /* allocated; free with hist_native_free() */
	unsigned n_deltas;
	int64_t *deltas; /* allocated; one per bucket in the spans */
};

/*
 * The native view of @h at @schema (HIST_NATIVE_MIN..HIST_NATIVE_SCHEMA) with
 * @zero_threshold_s (seconds, >= 0: samples at or below it count in the zero
 * bucket; only thresholds at or below a bucket boundary of the recording layout
 * are exact). 0 or -errno (-EINVAL: bad schema or threshold; -ENOMEM). An
 * empty histogram gives no spans and no deltas (both NULL). @out is always
 * initialised, so hist_native_free() is safe after a failure; NULL is a no-op.
 */
int hist_native(const struct hist *h, int schema, double zero_threshold_s, struct hist_native *out);
void hist_native_free(struct hist_native *n);

#endif
