/* SPDX-License-Identifier: MIT */
/*
 * hist — latency histogram: record, merge, quantiles, classic buckets.
 *
 * The full design comment (bucket layout, range, maximum relative error) is at
 * the top of hist.c. In short: values are nanoseconds; fine log-linear buckets
 * give quantiles with a bounded relative error; classic "le" buckets, whose
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
 * buckets: HIST_N_FINE buckets; hist_fine_index() maps a value to its bucket
 * (values past the range map to the last one), hist_fine_range() gives a
 * bucket's inclusive value range, hist_fine_count() its count. */
#define HIST_N_FINE 4480
unsigned hist_fine_index(uint64_t ns);
void hist_fine_range(unsigned idx, uint64_t *lo, uint64_t *hi);
uint64_t hist_fine_count(const struct hist *h, unsigned idx);
/* Samples too large for the fine buckets (>= 2^41 ns), clamped into the last. */
uint64_t hist_overflow(const struct hist *h);

#endif
