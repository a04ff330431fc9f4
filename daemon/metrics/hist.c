/* SPDX-License-Identifier: MIT */
/*
 * hist — latency histogram. The design, and the proof of its error bound, are in
 * docs/histogram.md; in short:
 *
 * The recording buckets are those of a native histogram of schema 7 over the
 * value in seconds, upper bound inclusive: fine[0] holds the value 0 and fine[f],
 * f >= 1, native bucket f - 1 + HIST_NATIVE_IDX_MIN (1 ns) up to
 * HIST_NATIVE_IDX_MAX (2048 s); larger values are clamped into the last one.
 * For ns in [2^o, 2^(o+1)), with m its 1.63 fixed-point mantissa, the index is
 * 128 * o + n + 1, n = #{boundary mantissas < m}: a 256-entry table on the top 8
 * bits of m gives n at the cell's low end, and one integer compare settles the
 * one boundary a cell can hold. Exact, with no floating point on the hot path.
 * Quantile estimates are within 0.55% of the exact sample (nearest rank).
 *
 * Not thread-safe; callers serialise (lanes record into a local histogram and
 * merge it under the registry mutex).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "daemon/metrics/hist.h"

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
	unsigned added_lo, added_hi;	       /* fine buckets hist_add_fine() wrote (lo > hi:
						* none), where min..max may not reach */
	const struct slots *slots;	       /* shared by every histogram with these bounds */
	uint64_t *fine; /* N_FINE, mapped alone: [0]: zeros; [f]: native bucket, see above */
};

/* slot[f]: the classic bounds below the lowest integer of fine[f]. It depends on
 * the bounds alone, and every probe-op of a config has the same ones, so
 * histograms share one table (5 KiB) per set of bounds, counted by reference. */
struct slots {
	struct slots *next;
	unsigned refs, n_bounds;
	uint64_t bounds[HIST_MAX_BOUNDS];
	uint8_t slot[N_FINE];
};

/* ---- bucket tables ---------------------------------------------------------- */

static uint64_t sub_bound[SUB];		  /* floor(M_n * 2^63), ascending */
static uint8_t cell_sub[1u << CELL_BITS]; /* #{ M_n < low end of the cell } */
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slots *slots_list; /* under slots_lock */

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

/* fine[] is 41 KiB, and a latency distribution fills a few octaves of its 5236
 * buckets: a ping's sit in one or two of its eleven pages. Fresh anonymous
 * pages stay off RSS until written (reads see the shared zero page), and nothing
 * below writes a count that is zero (merge, clear and add_fine touch only the
 * range that holds samples), so a histogram costs the pages its samples reach,
 * not all 41 KiB. malloc could not give that: heap memory is reused, calloc()
 * clears it, and every page would stay resident. The rest of the struct (1 KiB,
 * written at once) is malloc'd: mapped with fine[] it made one more resident
 * page per histogram (issue 15: 6 of them on the default config). */
static struct hist *hist_alloc(void)
{
	struct hist *h = calloc(1, sizeof(*h));
	void *p;

	if (!h)
		return NULL;
	p = mmap(NULL, N_FINE * sizeof(*h->fine), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		free(h);
		return NULL;
	}
	/* The kernel merges neighbouring histograms into one mapping; with
	 * transparent huge pages "always", a write into one 2 MiB-aligned stretch
	 * of it would make all 2 MiB resident. Advice only: an old kernel without
	 * it changes nothing else. */
	(void)madvise(p, N_FINE * sizeof(*h->fine), MADV_NOHUGEPAGE);
	h->fine = p;
	return h;
}

static void hist_release(struct hist *h)
{
	(void)munmap(h->fine, N_FINE * sizeof(*h->fine));
	free(h);
}

/* The shared slot table for these bounds, with a reference taken; NULL when out
 * of memory. */
static const struct slots *slots_get(const uint64_t *bounds_ns, unsigned n)
{
	struct slots *t;
	unsigned i, f;

	pthread_mutex_lock(&slots_lock);
	for (t = slots_list; t; t = t->next)
		if (t->n_bounds == n &&
		    (n == 0 || memcmp(t->bounds, bounds_ns, n * sizeof(*bounds_ns)) == 0))
			break;
	if (!t && (t = calloc(1, sizeof(*t)))) {
		t->n_bounds = n;
		if (n)
			memcpy(t->bounds, bounds_ns, n * sizeof(*bounds_ns));
		for (f = 0, i = 0; f < N_FINE; f++) {
			uint64_t lo, hi;

			hist_fine_range(f, &lo, &hi);
			while (i < n && bounds_ns[i] < lo)
				i++;
			t->slot[f] = (uint8_t)i;
		}
		t->next = slots_list;
		slots_list = t;
	}
	if (t)
		t->refs++;
	pthread_mutex_unlock(&slots_lock);
	return t;
}

static void slots_put(const struct slots *s)
{
	struct slots **p;

	pthread_mutex_lock(&slots_lock);
	for (p = &slots_list; *p; p = &(*p)->next) {
		if (*p != s)
			continue;
		if (--(*p)->refs == 0) {
			struct slots *dead = *p;

			*p = dead->next;
			free(dead);
		}
		break;
	}
	pthread_mutex_unlock(&slots_lock);
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

	tables_ready();
	h = hist_alloc(); /* zero-filled */
	if (!h)
		return NULL;
	h->slots = slots_get(bounds_ns, n);
	if (!h->slots) {
		hist_release(h);
		return NULL;
	}
	h->n_bounds = n;
	if (n)
		memcpy(h->bounds, bounds_ns, n * sizeof(*bounds_ns));
	h->min_ns = UINT64_MAX;
	h->added_lo = N_FINE;
	return h;
}

void hist_free(struct hist *h)
{
	if (!h)
		return;
	slots_put(h->slots);
	hist_release(h);
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
	unsigned c = h->slots->slot[f];

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

/* The fine buckets that can hold samples, [*lo, *hi] (count > 0): those between
 * min and max (the overflow bucket is max's), and those hist_add_fine() wrote
 * (a bucket with no integer in it widens min and max to a neighbour). Nothing
 * outside is ever written, so those pages stay untouched, off RSS. */
static void used_range(const struct hist *h, unsigned *lo, unsigned *hi)
{
	*lo = hist_fine_index(h->min_ns);
	*hi = hist_fine_index(h->max_ns);
	if (h->added_lo <= h->added_hi) {
		*lo = h->added_lo < *lo ? h->added_lo : *lo;
		*hi = h->added_hi > *hi ? h->added_hi : *hi;
	}
}

int hist_merge(struct hist *dst, const struct hist *src)
{
	unsigned lo, hi, i;

	if (dst->n_bounds != src->n_bounds ||
	    memcmp(dst->bounds, src->bounds, src->n_bounds * sizeof(src->bounds[0])) != 0)
		return -EINVAL;
	if (!src->count)
		return 0;

	used_range(src, &lo, &hi);
	for (i = lo; i <= hi; i++)
		dst->fine[i] += src->fine[i];
	if (src->added_lo <= src->added_hi) {
		dst->added_lo = src->added_lo < dst->added_lo ? src->added_lo : dst->added_lo;
		dst->added_hi = src->added_hi > dst->added_hi ? src->added_hi : dst->added_hi;
	}
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

void hist_add_fine(struct hist *h, unsigned idx, uint64_t n)
{
	uint64_t lo, hi, mid;

	if (!n || idx >= N_FINE)
		return;
	hist_fine_range(idx, &lo, &hi);
	if (lo > hi) /* no integer in it (below ~185 ns): its upper bound */
		lo = hi;
	mid = lo + (hi - lo) / 2;
	h->fine[idx] += n;
	h->added_lo = idx < h->added_lo ? idx : h->added_lo;
	h->added_hi = idx > h->added_hi ? idx : h->added_hi;
	h->classic[classic_index(h, idx, mid)] += n;
	h->count += n;
	if (__builtin_mul_overflow(mid, n, &mid) ||
	    __builtin_add_overflow(h->sum_ns, mid, &h->sum_ns))
		h->sum_ns = UINT64_MAX;
	h->min_ns = lo < h->min_ns ? lo : h->min_ns;
	h->max_ns = hi > h->max_ns ? hi : h->max_ns;
}

void hist_clear(struct hist *h)
{
	unsigned lo, hi;

	if (h->count) { /* only where samples can be (used_range) */
		used_range(h, &lo, &hi);
		memset(&h->fine[lo], 0, (hi - lo + 1) * sizeof(h->fine[0]));
	}
	h->added_lo = N_FINE;
	h->added_hi = 0;
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
