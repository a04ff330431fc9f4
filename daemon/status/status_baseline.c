/* SPDX-License-Identifier: MIT */
/*
 * A probe op's baseline and its slow judgement (status.h says what they are;
 * docs/measurement.md, "Baseline and the slow state", why). The tick calls
 * status_baseline() once a minute per probe op: a weighted median by
 * bisection over the 16-bit codes of at most 204 records, 17 passes, no sort
 * and no allocation.
 */
#include "daemon/status/status.h"

#define BLOCK_MINUTES (STATUS_BLOCK / STATUS_MINUTE) /* what a 10-minute record is worth */

/* Minutes' worth of the records kept whose quantile @j has a code of at most
 * @upto (UINT16_MAX: all of them). */
static unsigned kept_minutes(const struct status_ring *r, unsigned j, unsigned upto)
{
	/* The newest blocks lie in the hour the minute records cover: count it once. */
	unsigned skip = r->blk_n < STATUS_HOUR ? r->blk_n : STATUS_HOUR;
	unsigned w = 0;

	for (unsigned i = 0; i < r->min_n; i++) {
		unsigned s = (r->min_head + STATUS_MINUTES - 1 - i) % STATUS_MINUTES;

		if (r->min[s].count && !status_bit(r->min_slow, s) && r->min[s].q[j] <= upto)
			w++;
	}
	for (unsigned i = skip; i < r->blk_n; i++) {
		unsigned s = (r->blk_head + STATUS_BLOCKS - 1 - i) % STATUS_BLOCKS;

		if (r->blk[s].count && !status_bit(r->blk_slow, s) && r->blk[s].q[j] <= upto)
			w += BLOCK_MINUTES;
	}
	return w;
}

/* The smallest code with at least half of the @total minutes at or under it. */
static uint16_t weighted_median(const struct status_ring *r, unsigned j, unsigned total)
{
	unsigned lo = 0, hi = UINT16_MAX;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (2 * kept_minutes(r, j, mid) >= total)
			hi = mid;
		else
			lo = mid + 1;
	}
	return (uint16_t)lo;
}

bool status_baseline(const struct status_ring *r, unsigned warmup_minutes, uint64_t ns[2],
		     unsigned *minutes)
{
	static const unsigned quantile[2] = {0, 2}; /* p50 and p99 of a record */
	unsigned total = kept_minutes(r, 0, UINT16_MAX);

	if (minutes)
		*minutes = total;
	ns[0] = ns[1] = 0;
	if (!total || total < warmup_minutes)
		return false;
	for (unsigned i = 0; i < 2; i++)
		ns[i] = status_decode(weighted_median(r, quantile[i], total));
	return true;
}

bool status_is_slow(uint64_t p50_ns, uint64_t base_ns, double factor, uint64_t floor_ns)
{
	return factor > 0 && (double)p50_ns > factor * (double)base_ns && p50_ns > floor_ns;
}

static uint64_t at_least(uint64_t v, uint64_t min)
{
	return v > min ? v : min;
}

void status_regress_update(struct status_view *v, uint64_t waited_ns)
{
	struct status_regress *g = &v->regress;
	bool io = v->minute.count > 0;

	/* Field by field: the baseline ones are the tick's. */
	g->have_recent = io || waited_ns > 0;
	g->recent_ns[0] = at_least(io ? v->minute.q_ns[0] : 0, waited_ns);
	g->recent_ns[1] = at_least(io ? v->minute.q_ns[2] : 0, waited_ns);
	g->ratio = g->have_recent && g->have_baseline && g->baseline_ns[0]
			   ? (double)g->recent_ns[0] / (double)g->baseline_ns[0]
			   : 0;
	g->slow = g->have_recent && g->have_baseline &&
		  status_is_slow(g->recent_ns[0], g->baseline_ns[0], v->slow_factor,
				 v->slow_floor_ns);
}
