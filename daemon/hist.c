/* SPDX-License-Identifier: MIT */
/*
 * hist — latency histogram.
 *
 * Design (in the spirit of fio's stat.h):
 *
 * Layout. Values are nanoseconds (uint64_t). The recording buckets ARE the
 * buckets of a Prometheus native histogram of schema 7 (HIST_NATIVE_SCHEMA) over
 * the value in seconds: native bucket i holds (2^((i-1)/128), 2^(i/128)] s,
 * upper bound inclusive, so a value exactly on a boundary belongs to the lower
 * bucket (1 s = 1e9 ns is in bucket 0, 1e9 + 1 ns in bucket 1). The fine array
 * holds:
 *
 *   fine[0]            value 0 (the native zero bucket at any threshold)
 *   fine[f], f >= 1    native bucket i = f - 1 + HIST_NATIVE_IDX_MIN
 *
 * HIST_NATIVE_IDX_MIN = -3826 is the bucket of 1 ns (it holds exactly that
 * integer); HIST_NATIVE_IDX_MAX = 1408 = 11 * 128 ends at 2^11 s = 2048 s
 * (34 min 8 s) = HIST_MAX_NS. HIST_N_FINE = 5236 buckets, 41 KiB (plus 5 KiB of
 * classic slots, below), inside the struct (one calloc in hist_new). Larger
 * values are clamped into the last bucket and counted in hist_overflow(); count,
 * sum, min and max stay exact for them.
 *
 * Index computation, exact in integers. With c = 128 * log2(1e9) = 3826.8611...,
 * the boundaries in nanoseconds are B_i = 1e9 * 2^(i/128) = 2^((i + c)/128): the
 * same 128 points in every binary octave of the ns value. For ns in
 * [2^o, 2^(o+1)) let m = ns << (63 - o) (the value as a 1.63 fixed-point
 * mantissa in [1, 2), exact) and let M_n = 2^((n + c - 3826)/128), n = 0..127, be
 * the boundary mantissas (all in (1, 2)). Then
 *
 *   i = 128 * o - 3826 + n,  n = #{ M_n < m }   (0..128),  fine index 128 * o + n + 1
 *
 * n is found with a 256-entry table indexed by the top 8 mantissa bits, giving n
 * for the low end of that cell, plus one comparison of m against the fixed-point
 * boundary floor(M_n * 2^63): a cell spans at most log2(1 + 1/256) = 0.0056
 * octave, less than a bucket (1/128 = 0.0078), so it holds at most one boundary.
 * Because m is an integer, "m > M_n" is the same as "m > floor(M_n * 2^63)", so
 * the comparison is exact; M_114 = 1e9 / 2^29 (the whole seconds) is represented
 * exactly, so 2^k s lands in the lower bucket as defined. The boundary table is
 * computed once (pthread_once) in long double (64-bit mantissa, relative error
 * ~1e-19). The closest any boundary in range comes to an integer is 1.05e-16
 * relative (B_1060 = 311103324155.00006 ns), so every integer ns gets the bucket
 * the definition over seconds gives, with no floating-point tie at all (a double,
 * with 1.1e-16 resolution, would not be enough; the 5235 integer boundaries
 * floor(B_i) this table yields were checked once against 60-digit arithmetic).
 * Recording is a clz, shifts, two table loads, a compare and an increment: no
 * allocation, lock, log() or pow().
 *
 * Error bound. Quantiles use the nearest rank (rank = ceil(q * n), at least 1);
 * rank 1 and rank n return the exact min and max. Otherwise the estimate is the
 * integer midpoint lo + (hi - lo) / 2 of the integers [lo, hi] the rank's bucket
 * holds, clamped to [min, max]. With r = 2^(1/128) (relative bucket width
 * r - 1 = 0.5429 %), hi - lo < (r - 1) * lo, so for the exact sample x:
 *
 *   |estimate - x| <= x * (r - 1) / 2 + 1/2 ns    ((r - 1) / 2 = 0.27142 %)
 *
 * and, since a bucket holds two integers or more only above 184 ns,
 *
 *   |estimate - x| < x * (r - 1) = 0.5429 % of x, and x itself below 185 ns.
 *
 * A rank that lands in the last bucket while it holds clamped values reports max
 * (an upper bound, no error bound).
 *
 * Native view. Downscaling to schema s maps bucket i to ((i - 1) >> (7 - s)) + 1
 * (floor shift, negative indexes included): every schema-s boundary is a schema-7
 * boundary, so the downscale is exact. The zero threshold is exact when it is a
 * schema-7 boundary (any power of two, e.g. 2^-128); otherwise the one recording
 * bucket straddling it counts above it. Clamped samples stay in bucket 1408 of
 * schema 7 (or its image).
 *
 * Classic "le" buckets: the bounds do not line up with fine buckets, so they are
 * counted exactly at record time, per interval (bounds[i-1], bounds[i]], and made
 * cumulative when read. The interval comes from the fine bucket: slot[f] (made
 * in hist_new, one byte per bucket) is the number of bounds below the bucket's
 * lowest integer, and a comparison with the next bound settles the value, so
 * only values in the few buckets a bound cuts take a branch that can go either
 * way (a binary search cost three times the rest of hist_record).
 *
 * The histogram is not thread-safe; callers serialise (lanes record into a local
 * histogram and merge it under the registry mutex).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"

#define SUB	  128  /* buckets per octave at schema 7 */
#define NS_SHIFT  3826 /* floor(128 * log2(1e9)) */
#define CELL_BITS 8    /* mantissa bits indexing cell_sub[] */
#define N_FINE	  (HIST_NATIVE_IDX_MAX - HIST_NATIVE_IDX_MIN + 2)

_Static_assert(N_FINE == HIST_N_FINE, "hist.h HIST_N_FINE out of date");
_Static_assert(HIST_NATIVE_IDX_MIN == -NS_SHIFT, "the first bucket must hold 1 ns");
_Static_assert(HIST_MAX_NS == 1000000000ull << 11, "HIST_MAX_NS must be 2^11 s");

struct hist {
	uint64_t count;			       /* samples recorded */
	uint64_t sum_ns;		       /* saturating sum */
	uint64_t min_ns;		       /* UINT64_MAX while empty */
	uint64_t max_ns;		       /* 0 while empty */
	uint64_t overflow;		       /* samples > HIST_MAX_NS, in the last bucket */
	unsigned n_bounds;		       /* classic bounds in use */
	uint64_t bounds[HIST_MAX_BOUNDS];      /* classic bounds, strictly ascending */
	uint64_t classic[HIST_MAX_BOUNDS + 1]; /* samples in (bounds[i-1], bounds[i]]; the
						* last used slot counts those above all */
	uint64_t fine[N_FINE];		       /* [0]: zeros; [f]: native bucket, see above */
	uint8_t slot[N_FINE];		       /* bounds below the lowest integer of fine[f] */
};

/* ---- bucket tables ---------------------------------------------------------- */

static uint64_t sub_bound[SUB];		  /* floor(M_n * 2^63), ascending */
static uint8_t cell_sub[1u << CELL_BITS]; /* #{ M_n < low end of the cell } */
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void tables_init(void)
{
	unsigned n, j;

	for (n = 0; n < SUB; n++) {
		/* 1e9 * 2^((n - 3826)/128): the exponent is exact in binary, and so is
		 * the result for n = 114 (1e9 / 2^29). */
		long double m = 1e9L * exp2l(((long double)n - NS_SHIFT) / SUB);

		sub_bound[n] = (uint64_t)ldexpl(m, 63); /* truncation = floor */
	}
	for (j = 0; j < (1u << CELL_BITS); j++) {
		uint64_t low = (1ull << 63) | ((uint64_t)j << (63 - CELL_BITS));

		for (n = 0; n < SUB && sub_bound[n] < low; n++)
			;
		cell_sub[j] = (uint8_t)n;
	}
}

static inline void tables_ready(void)
{
	(void)pthread_once(&tables_once, tables_init);
}

/* Fine index of 1 <= ns <= HIST_MAX_NS. */
static inline unsigned fine_index_in_range(uint64_t ns)
{
	unsigned o = 63u - (unsigned)__builtin_clzll(ns);
	uint64_t m = ns << (63u - o);
	unsigned n = cell_sub[(m >> (63 - CELL_BITS)) & ((1u << CELL_BITS) - 1)];

	n += m > sub_bound[n];
	return o * SUB + n + 1;
}

/* floor(B_i) = floor(1e9 * 2^(i/128)) ns, the largest integer in native bucket i. */
static uint64_t native_floor_bound(int i)
{
	int j = i + NS_SHIFT; /* = 128 * o + n */

	if (j < 0)
		return 0;
	/* floor(floor(M * 2^63) / 2^(63-o)) = floor(M * 2^o) */
	return sub_bound[j % SUB] >> (63 - j / SUB);
}

static inline int fine_to_native(unsigned f)
{
	return (int)f - 1 + HIST_NATIVE_IDX_MIN;
}

unsigned hist_fine_index(uint64_t ns)
{
	tables_ready();
	if (ns == 0)
		return 0;
	if (ns > HIST_MAX_NS)
		return N_FINE - 1;
	return fine_index_in_range(ns);
}

void hist_fine_range(unsigned idx, uint64_t *lo, uint64_t *hi)
{
	tables_ready();
	if (idx == 0 || idx >= N_FINE) {
		*lo = *hi = 0;
		return;
	}
	*lo = native_floor_bound(fine_to_native(idx) - 1) + 1;
	*hi = native_floor_bound(fine_to_native(idx));
}

/* ---- lifetime --------------------------------------------------------------- */

struct hist *hist_new(const uint64_t *bounds_ns, unsigned n)
{
	struct hist *h;
	unsigned i, f;

	if (n > HIST_MAX_BOUNDS || (n > 0 && !bounds_ns))
		return NULL;
	for (i = 1; i < n; i++)
		if (bounds_ns[i] <= bounds_ns[i - 1])
			return NULL;

	tables_ready();
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->n_bounds = n;
	if (n)
		memcpy(h->bounds, bounds_ns, n * sizeof(*bounds_ns));
	for (f = 0, i = 0; f < N_FINE; f++) {
		uint64_t lo, hi;

		hist_fine_range(f, &lo, &hi);
		while (i < n && bounds_ns[i] < lo)
			i++;
		h->slot[f] = (uint8_t)i;
	}
	h->min_ns = UINT64_MAX;
	return h;
}

void hist_free(struct hist *h)
{
	free(h);
}

/* ---- recording -------------------------------------------------------------- */

/* Number of bounds < v, i.e. the classic slot of v (n_bounds: above them all),
 * for v in fine bucket f. slot[f] counts the bounds below every value of the
 * bucket; only a bound inside the bucket (a few of the 5236 buckets) takes a
 * comparison that can go either way, so the loop is one predictable test for
 * almost every sample. A binary search over the 19 default bounds cost
 * 12.6 ns/sample in bench/hist.sh against 3.9 for this, its branches
 * mispredicting on a latency stream centred between two bounds. */
static inline unsigned classic_index(const struct hist *h, unsigned f, uint64_t v)
{
	unsigned c = h->slot[f];

	while (c < h->n_bounds && h->bounds[c] < v)
		c++;
	return c;
}

void hist_record(struct hist *h, uint64_t ns)
{
	unsigned f;

	if (__builtin_expect(ns - 1 >= HIST_MAX_NS, 0)) { /* 0, or past the range */
		if (ns) {
			f = N_FINE - 1;
			h->overflow++;
		} else {
			f = 0;
		}
	} else {
		f = fine_index_in_range(ns);
	}
	h->fine[f]++;
	h->classic[classic_index(h, f, ns)]++;
	h->count++;
	if (__builtin_add_overflow(h->sum_ns, ns, &h->sum_ns))
		h->sum_ns = UINT64_MAX;
	h->min_ns = ns < h->min_ns ? ns : h->min_ns;
	h->max_ns = ns > h->max_ns ? ns : h->max_ns;
}

int hist_merge(struct hist *dst, const struct hist *src)
{
	unsigned i;

	if (dst->n_bounds != src->n_bounds ||
	    memcmp(dst->bounds, src->bounds, src->n_bounds * sizeof(src->bounds[0])) != 0)
		return -EINVAL;
	if (!src->count)
		return 0;

	for (i = 0; i < N_FINE; i++)
		dst->fine[i] += src->fine[i];
	for (i = 0; i <= src->n_bounds; i++)
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

/* ---- reading ---------------------------------------------------------------- */

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
	return idx < N_FINE ? h->fine[idx] : 0;
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

	for (i = 0; i < N_FINE - 1; i++) {
		seen += h->fine[i];
		if (seen >= rank)
			break;
	}
	if (i == N_FINE - 1 && h->overflow)
		return h->max_ns;

	hist_fine_range(i, &lo, &hi);
	est = lo + (hi - lo) / 2;
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

/* ---- native view ------------------------------------------------------------ */

/* floor(x / 2^k), also for negative x (no reliance on >> of negative values). */
static inline int floor_shift(int x, unsigned k)
{
	return x >= 0 ? x >> k : -(int)(((unsigned)(-(x + 1))) >> k) - 1;
}

/* Highest native index of schema 7 whose upper bound 2^(i/128) s is <= zt, or
 * HIST_NATIVE_IDX_MIN - 1 when none is: the buckets that go to the zero bucket. */
static int zero_cut(double zt)
{
	double z;
	int i;

	if (zt < exp2((double)HIST_NATIVE_IDX_MIN / SUB))
		return HIST_NATIVE_IDX_MIN - 1;
	z = floor(log2(zt) * SUB);
	if (z >= HIST_NATIVE_IDX_MAX)
		return HIST_NATIVE_IDX_MAX;
	i = (int)z;
	/* log2() may be off by an ulp next to a boundary: settle it on exp2(). */
	while (i < HIST_NATIVE_IDX_MAX && exp2((double)(i + 1) / SUB) <= zt)
		i++;
	while (i >= HIST_NATIVE_IDX_MIN && exp2((double)i / SUB) > zt)
		i--;
	return i;
}

/* Span/delta writer; counts only while spans/deltas are NULL. */
struct native_out {
	struct hist_span *spans;
	int64_t *deltas;
	unsigned n_spans, n_deltas;
	int next;      /* index after the last bucket written */
	uint64_t prev; /* count of the last bucket written */
};

static void native_put(struct native_out *o, int idx, uint64_t c)
{
	int gap = idx - o->next;

	if (o->n_spans == 0 || gap > 2) {
		if (o->spans) {
			o->spans[o->n_spans].offset = o->n_spans ? gap : idx;
			o->spans[o->n_spans].length = 0;
		}
		o->n_spans++;
	} else {
		/* Up to two empty buckets stay inside the span, as client_golang does:
		 * cheaper than a new span (two varints). */
		for (; gap > 0; gap--) {
			if (o->deltas) {
				o->deltas[o->n_deltas] = -(int64_t)o->prev;
				o->spans[o->n_spans - 1].length++;
			}
			o->n_deltas++;
			o->prev = 0;
		}
	}
	if (o->deltas) {
		o->deltas[o->n_deltas] = (int64_t)c - (int64_t)o->prev;
		o->spans[o->n_spans - 1].length++;
	}
	o->n_deltas++;
	o->prev = c;
	o->next = idx + 1;
}

static void native_walk(const struct hist *h, unsigned shift, int zcut, struct native_out *o)
{
	uint64_t acc = 0;
	int cur = 0;
	unsigned f;

	for (f = 1; f < N_FINE; f++) {
		int i = fine_to_native(f), t;

		if (!h->fine[f] || i <= zcut)
			continue;
		t = floor_shift(i - 1, shift) + 1;
		if (acc && t != cur) {
			native_put(o, cur, acc);
			acc = 0;
		}
		cur = t;
		acc += h->fine[f];
	}
	if (acc)
		native_put(o, cur, acc);
}

int hist_native(const struct hist *h, int schema, double zero_threshold_s, struct hist_native *out)
{
	struct native_out o = {0};
	unsigned shift, f;
	int zcut;

	memset(out, 0, sizeof(*out));
	if (schema < HIST_NATIVE_MIN || schema > HIST_NATIVE_SCHEMA)
		return -EINVAL;
	if (!(zero_threshold_s >= 0.0) || isinf(zero_threshold_s)) /* also NaN */
		return -EINVAL;
	shift = (unsigned)(HIST_NATIVE_SCHEMA - schema);
	zcut = zero_cut(zero_threshold_s);

	out->schema = schema;
	out->zero_threshold = zero_threshold_s;
	out->zero_count = h->fine[0];
	for (f = 1; f < N_FINE && fine_to_native(f) <= zcut; f++)
		out->zero_count += h->fine[f];

	native_walk(h, shift, zcut, &o); /* count */
	if (!o.n_deltas)
		return 0;
	out->spans = malloc(o.n_spans * sizeof(*out->spans));
	out->deltas = malloc(o.n_deltas * sizeof(*out->deltas));
	if (!out->spans || !out->deltas) {
		hist_native_free(out);
		return -ENOMEM;
	}
	o = (struct native_out){.spans = out->spans, .deltas = out->deltas};
	native_walk(h, shift, zcut, &o); /* fill */
	out->n_spans = o.n_spans;
	out->n_deltas = o.n_deltas;
	return 0;
}

void hist_native_free(struct hist_native *n)
{
	if (!n)
		return;
	free(n->spans);
	free(n->deltas);
	n->spans = NULL;
	n->deltas = NULL;
	n->n_spans = 0;
	n->n_deltas = 0;
}
