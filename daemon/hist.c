/* SPDX-License-Identifier: MIT */
/*
 * hist — latency histogram.
 *
 * Design (in the spirit of fio's stat.h):
 *
 * Values are nanoseconds (uint64_t). The fine buckets are log-linear with
 * S = HIST_SUB_BITS = 7 sub-bucket bits, i.e. 2^S = 128 sub-buckets per octave:
 *
 *   v < 128:      index = v                          (unit buckets, exact)
 *   v >= 128:     o     = 63 - clz(v)                (octave: position of the top bit)
 *                 sub   = (v >> (o - S)) & (2^S - 1) (the S bits below the top bit)
 *                 index = (o - S + 1) * 2^S + sub
 *
 * Bucket index i = g * 128 + sub holds, for g = 0, the single value i, and for
 * g >= 1 the values [(128 + sub) << (g - 1), (129 + sub) << (g - 1)): width
 * w = 2^(g-1). Octave 7 (128..255) still has width 1, so every value below 256 ns
 * is exact. Octaves 7..HIST_MAX_OCTAVE (40) are covered, so values up to
 * 2^41 - 1 ns (~36.6 minutes) are bucketed: (40 - 7 + 2) * 128 = 4480 buckets,
 * 35 KiB per histogram, allocated inside the struct (one calloc in hist_new).
 * Larger values are clamped into the last bucket and counted in hist_overflow();
 * count, sum, min and max stay exact for them.
 *
 * Quantiles: nearest rank (rank = ceil(q * n), at least 1) over the fine buckets.
 * Rank 1 and rank n return the exact min and max. Otherwise the estimate is the
 * integer midpoint of the bucket holding that rank, lo + w/2 (lo for w = 1),
 * clamped to [min, max]. Every value x in that bucket satisfies x >= lo >= 128 * w
 * and |x - estimate| <= w / 2, so
 *
 *   |estimate - exact| <= exact * 2^-(S+1) = exact / 256  (0.390625 %)
 *
 * for values below 2^41 ns (exact below 256 ns). A rank that lands in the last
 * bucket while it holds clamped values reports max (an upper bound, no error
 * bound).
 *
 * Classic "le" buckets: the bounds do not line up with fine buckets, so they are
 * counted exactly at record time, per interval (bounds[i-1], bounds[i]], and made
 * cumulative when read. The interval is found by binary search over at most
 * HIST_MAX_BOUNDS = 64 bounds: at most 7 comparisons whatever the number of
 * bounds or where the latency falls, where a linear scan costs up to 64.
 *
 * Recording is index arithmetic and a few increments: no allocation, lock, log
 * or floating point. The histogram is not thread-safe; callers serialise (lanes
 * record into a local histogram and merge it under the registry mutex).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"

#define HIST_SUB_BITS	 7
#define HIST_SUB	 (1u << HIST_SUB_BITS)
#define HIST_MAX_OCTAVE	 40
#define HIST_N_FINE_IMPL ((HIST_MAX_OCTAVE - HIST_SUB_BITS + 2) * HIST_SUB)

_Static_assert(HIST_N_FINE_IMPL == HIST_N_FINE, "hist.h HIST_N_FINE out of date");

struct hist {
	uint64_t count;			  /* samples recorded */
	uint64_t sum_ns;		  /* saturating sum */
	uint64_t min_ns;		  /* UINT64_MAX while empty */
	uint64_t max_ns;		  /* 0 while empty */
	uint64_t overflow;		  /* samples >= 2^(HIST_MAX_OCTAVE+1), in the last bucket */
	unsigned n_bounds;		  /* classic bounds in use */
	uint64_t bounds[HIST_MAX_BOUNDS]; /* classic bounds, strictly ascending */
	uint64_t classic[HIST_MAX_BOUNDS]; /* samples in (bounds[i-1], bounds[i]] */
	uint64_t fine[HIST_N_FINE_IMPL];   /* log-linear buckets, see above */
};

static inline unsigned fine_index(uint64_t v)
{
	unsigned o;

	if (v < HIST_SUB)
		return (unsigned)v;
	o = 63u - (unsigned)__builtin_clzll(v);
	if (o > HIST_MAX_OCTAVE)
		return HIST_N_FINE_IMPL - 1;
	return (o - HIST_SUB_BITS + 1) * HIST_SUB +
	       (unsigned)((v >> (o - HIST_SUB_BITS)) & (HIST_SUB - 1));
}

unsigned hist_fine_index(uint64_t ns)
{
	return fine_index(ns);
}

void hist_fine_range(unsigned idx, uint64_t *lo, uint64_t *hi)
{
	unsigned g = idx / HIST_SUB, sub = idx % HIST_SUB;

	if (idx >= HIST_N_FINE_IMPL) {
		*lo = *hi = 0;
		return;
	}
	if (g == 0) {
		*lo = *hi = idx;
		return;
	}
	*lo = (uint64_t)(HIST_SUB + sub) << (g - 1);
	*hi = *lo + ((uint64_t)1 << (g - 1)) - 1;
}

struct hist *hist_new(const uint64_t *bounds_ns, unsigned n)
{
	struct hist *h;
	unsigned i;

	if (n > HIST_MAX_BOUNDS || (n > 0 && !bounds_ns))
		return NULL;
	for (i = 1; i < n; i++)
		if (bounds_ns[i] <= bounds_ns[i - 1])
			return NULL;

	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->n_bounds = n;
	if (n)
		memcpy(h->bounds, bounds_ns, n * sizeof(*bounds_ns));
	h->min_ns = UINT64_MAX;
	return h;
}

void hist_free(struct hist *h)
{
	free(h);
}

/* Index of the first bound >= v, or n_bounds when v is above them all. */
static inline unsigned classic_index(const struct hist *h, uint64_t v)
{
	unsigned lo = 0, hi = h->n_bounds;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (h->bounds[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void hist_record(struct hist *h, uint64_t ns)
{
	unsigned c = classic_index(h, ns);

	h->fine[fine_index(ns)]++;
	if (ns >> (HIST_MAX_OCTAVE + 1))
		h->overflow++;
	if (c < h->n_bounds)
		h->classic[c]++;
	h->count++;
	if (__builtin_add_overflow(h->sum_ns, ns, &h->sum_ns))
		h->sum_ns = UINT64_MAX;
	if (ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
}

int hist_merge(struct hist *dst, const struct hist *src)
{
	unsigned i;

	if (dst->n_bounds != src->n_bounds ||
	    memcmp(dst->bounds, src->bounds, src->n_bounds * sizeof(src->bounds[0])) != 0)
		return -EINVAL;
	if (!src->count)
		return 0;

	for (i = 0; i < HIST_N_FINE_IMPL; i++)
		dst->fine[i] += src->fine[i];
	for (i = 0; i < src->n_bounds; i++)
		dst->classic[i] += src->classic[i];
	dst->count += src->count;
	dst->overflow += src->overflow;
	if (__builtin_add_overflow(dst->sum_ns, src->sum_ns, &dst->sum_ns))
		dst->sum_ns = UINT64_MAX;
	if (src->min_ns < dst->min_ns)
		dst->min_ns = src->min_ns;
	if (src->max_ns > dst->max_ns)
		dst->max_ns = src->max_ns;
	return 0;
}

void hist_clear(struct hist *h)
{
	memset(h->fine, 0, sizeof(h->fine));
	memset(h->classic, 0, sizeof(h->classic));
	h->count = 0;
	h->sum_ns = 0;
	h->overflow = 0;
	h->min_ns = UINT64_MAX;
	h->max_ns = 0;
}

uint64_t hist_count(const struct hist *h)
{
	return h->count;
}

uint64_t hist_sum_ns(const struct hist *h)
{
	return h->sum_ns;
}

uint64_t hist_min_ns(const struct hist *h)
{
	return h->count ? h->min_ns : 0;
}

uint64_t hist_max_ns(const struct hist *h)
{
	return h->max_ns;
}

uint64_t hist_overflow(const struct hist *h)
{
	return h->overflow;
}

uint64_t hist_fine_count(const struct hist *h, unsigned idx)
{
	return idx < HIST_N_FINE_IMPL ? h->fine[idx] : 0;
}

uint64_t hist_quantile_ns(const struct hist *h, double q)
{
	uint64_t rank, seen = 0, lo, hi, est;
	double r;
	unsigned i;

	if (!h->count)
		return 0;
	if (!(q > 0.0)) /* also NaN */
		return h->min_ns;
	if (q >= 1.0)
		return h->max_ns;

	r = ceil(q * (double)h->count);
	rank = r < 1.0 ? 1 : (r >= (double)h->count ? h->count : (uint64_t)r);
	if (rank == 1)
		return h->min_ns;
	if (rank == h->count)
		return h->max_ns;

	for (i = 0; i < HIST_N_FINE_IMPL; i++) {
		seen += h->fine[i];
		if (seen >= rank)
			break;
	}
	if (i >= HIST_N_FINE_IMPL - 1 && h->overflow)
		return h->max_ns;

	hist_fine_range(i, &lo, &hi);
	est = lo + (hi - lo + 1) / 2;
	if (est < h->min_ns)
		est = h->min_ns;
	if (est > h->max_ns)
		est = h->max_ns;
	return est;
}

unsigned hist_n_bounds(const struct hist *h)
{
	return h->n_bounds;
}

const uint64_t *hist_bounds_ns(const struct hist *h)
{
	return h->bounds;
}

void hist_cumulative(const struct hist *h, uint64_t *counts)
{
	uint64_t acc = 0;
	unsigned i;

	for (i = 0; i < h->n_bounds; i++) {
		acc += h->classic[i];
		counts[i] = acc;
	}
}
