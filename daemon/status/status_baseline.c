/* SPDX-License-Identifier: MIT */
/*
 * A probe op's baseline and its slow judgement (status.h says what they are;
 * docs/measurement.md, "Baseline and the slow state", why). The tick calls
 * status_baseline() once a minute per probe op: a weighted median by
 * bisection over the 16-bit codes of at most 204 records, 17 passes, no sort
 * and no allocation; then status_minute() judges the minute that ended (its
 * median, and the tail and the stalls of the last STATUS_JUDGE_MINUTES), and
 * status_op_slow() the op, from its minutes' slow bits.
 */
#include <string.h>

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

		if (r->min[s].count && !status_bit(r->min_slow, s) && !status_bit(r->min_held, s) &&
		    r->min[s].q[j] <= upto)
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

const char *status_shape_code(enum status_shape s)
{
	switch (s) {
	case STATUS_SHAPE_NONE:
		return "none";
	case STATUS_SHAPE_TAIL:
		return "tail";
	case STATUS_SHAPE_STALLS:
		return "stalls";
	case STATUS_SHAPE_MEDIAN:
		return "slow";
	}
	return "none";
}

void status_judging_of(const struct cfg_target *t, struct status_judging *j)
{
	*j = (struct status_judging){
		.slow_factor = t->slow_factor,
		.slow_floor_ns = t->slow_floor_ns,
		.warmup_minutes = (unsigned)(t->baseline_warmup_ns / (60 * NSEC_PER_SEC)),
		.tail_factor = t->tail_factor,
		.tail_share = t->tail_share,
		.stall_ns = t->stall_ns,
		.slow_minutes = t->slow_minutes,
		.ok_minutes = t->ok_minutes,
	};
}

static uint64_t at_least(uint64_t v, uint64_t min)
{
	return v > min ? v : min;
}

uint64_t status_floor_ns(const struct status_judging *j, const uint64_t base_ns[2])
{
	if (j->slow_floor_ns == CFG_SLOW_FLOOR_AUTO)
		return at_least(base_ns[1], STATUS_FLOOR_NS);
	return j->slow_floor_ns;
}

/* A p50 over slow_factor x the baseline p50, whatever the floor. */
static bool over_factor(uint64_t p50_ns, const uint64_t base_ns[2], const struct status_judging *j)
{
	return j->slow_factor > 0 && (double)p50_ns > j->slow_factor * (double)base_ns[0];
}

/* @over I/Os of @count over the slow-I/O threshold are a tail's share. */
static bool tail_share_of(const struct status_judging *j, uint64_t over, uint64_t count)
{
	return j->tail_share > 0 && (double)over >= j->tail_share * (double)count;
}

bool status_is_slow(uint64_t p50_ns, const uint64_t base_ns[2], const struct status_judging *j)
{
	return over_factor(p50_ns, base_ns, j) && p50_ns > status_floor_ns(j, base_ns);
}

uint64_t status_slow_io_ns(const struct status_judging *j, const uint64_t base_ns[2])
{
	uint64_t floor =
		j->slow_floor_ns == CFG_SLOW_FLOOR_AUTO ? STATUS_FLOOR_NS : j->slow_floor_ns;

	return at_least((uint64_t)(j->tail_factor * (double)base_ns[1]), floor);
}

/* The I/Os of the bucket counts @dense over @ns: those of the stored buckets
 * whose values are all over it (a bucket holding @ns is not counted: at most
 * one bucket, 4.4 %, of the threshold is lost). */
static uint32_t count_over(const uint64_t *dense, uint64_t ns)
{
	uint64_t n = 0;

	for (unsigned g = 1; g < STATUS_N_GROUPS; g++) {
		uint64_t lo, hi;

		hist_fine_range(1 + (g - 1) * STATUS_GROUP, &lo, &hi);
		if (dense[g] && lo > ns)
			n += dense[g];
	}
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* The tally's sums over its minutes: I/Os, over the threshold, minutes with a
 * stall, the longest. */
struct tally_sums {
	uint64_t count, over;
	unsigned stall_minutes;
	uint64_t stalls, max_ns;
};

static void tally_sums(const struct status_tally *t, struct tally_sums *s)
{
	memset(s, 0, sizeof(*s));
	for (unsigned i = 0; i < t->n; i++) {
		uint64_t max = status_decode(t->max[i]);

		s->max_ns = max > s->max_ns ? max : s->max_ns;
		/* A minute whose median was slow is not a tail or a stall: when a
		 * slowdown of every I/O ends, its minutes must not keep the next
		 * ones slow. */
		if (t->median[i])
			continue;
		s->count += t->count[i];
		s->over += t->over[i];
		s->stall_minutes += t->stalls[i] > 0;
		s->stalls += t->stalls[i];
	}
}

/* Push one minute into @t (the oldest goes when it is full). */
static void tally_push(struct status_tally *t, uint32_t count, uint32_t over, uint32_t stalls,
		       uint64_t max_ns)
{
	if (t->n == STATUS_JUDGE_MINUTES) {
		memmove(t->count, t->count + 1, sizeof(t->count[0]) * (STATUS_JUDGE_MINUTES - 1));
		memmove(t->over, t->over + 1, sizeof(t->over[0]) * (STATUS_JUDGE_MINUTES - 1));
		memmove(t->stalls, t->stalls + 1,
			sizeof(t->stalls[0]) * (STATUS_JUDGE_MINUTES - 1));
		memmove(t->max, t->max + 1, sizeof(t->max[0]) * (STATUS_JUDGE_MINUTES - 1));
		memmove(t->median, t->median + 1,
			sizeof(t->median[0]) * (STATUS_JUDGE_MINUTES - 1));
		t->n--;
	}
	t->count[t->n] = count;
	t->over[t->n] = over;
	t->stalls[t->n] = stalls;
	t->max[t->n] = status_code(max_ns);
	t->median[t->n] = false;
	t->n++;
}

void status_tally_age(struct status_tally *t, double seconds)
{
	for (double m = 60; m <= seconds && m <= 60 * STATUS_JUDGE_MINUTES; m += 60)
		tally_push(t, 0, 0, 0, 0);
}

bool status_minute_held(const struct status_view *v, const struct status_fig *minute)
{
	const struct status_tally *t = &v->tally;
	const struct status_regress *g = &v->regress;
	unsigned last = t->n - 1;

	if (!g->have_baseline || !t->n)
		return false;
	/* A median over slow_factor x its baseline, under the floor. */
	if (minute->count && g->baseline_ns[0] > 0 &&
	    over_factor(minute->q_ns[0], g->baseline_ns, &v->j))
		return true;
	/* A tail's share of its own I/Os over the slow-I/O threshold. */
	return t->over[last] >= STATUS_HELD_MIN_IOS &&
	       tail_share_of(&v->j, t->over[last], t->count[last]);
}

enum status_shape status_minute(struct status_view *v, const struct status_fig *minute,
				const uint64_t *dense)
{
	const struct status_judging *j = &v->j;
	const struct status_regress *g = &v->regress;
	uint64_t slow_io = status_slow_io_ns(j, g->baseline_ns);
	uint64_t count = minute->count > UINT32_MAX ? UINT32_MAX : minute->count;
	struct tally_sums sum;
	unsigned last;

	/* Without a baseline there is no threshold: the minute still counts its
	 * I/Os and its longest, for the figures. */
	tally_push(&v->tally, (uint32_t)count, g->have_baseline ? count_over(dense, slow_io) : 0,
		   j->stall_ns ? count_over(dense, j->stall_ns > slow_io ? j->stall_ns : slow_io)
			       : 0,
		   minute->count ? minute->q_ns[3] : 0);
	if (!g->have_baseline)
		return STATUS_SHAPE_NONE;
	if (minute->count && status_is_slow(minute->q_ns[0], g->baseline_ns, j)) {
		v->tally.median[v->tally.n - 1] = true;
		return STATUS_SHAPE_MEDIAN;
	}
	/* The minute after a slow median holds the end of that slowdown (a
	 * minute that began slow and ended fast, its median fast): its slow
	 * I/Os are the median's too, not a tail's. Left out the same way. */
	if (v->tally.n >= 2 && v->tally.median[v->tally.n - 2]) {
		v->tally.median[v->tally.n - 1] = true;
		return STATUS_SHAPE_NONE;
	}
	/* The window gathers enough I/Os to judge a share; the minute itself must
	 * show the shape too, so that a minute after the tail or the stalls ended
	 * is a good one (not four more of the window's). */
	tally_sums(&v->tally, &sum);
	last = v->tally.n - 1;
	if (j->stall_ns && v->tally.stalls[last] && sum.stall_minutes >= STATUS_STALL_MINUTES)
		return STATUS_SHAPE_STALLS;
	if (v->tally.over[last] && sum.count >= STATUS_TAIL_WINDOW &&
	    sum.over >= STATUS_TAIL_MIN_IOS && tail_share_of(j, sum.over, sum.count))
		return STATUS_SHAPE_TAIL;
	return STATUS_SHAPE_NONE;
}

bool status_op_slow(const struct status_ring *r, const struct status_judging *j)
{
	unsigned slow_run = 0, ok_run = 0;
	uint64_t slow_ios = 0, ok_ios = 0;
	bool slow = false;

	for (unsigned i = 0; i < r->min_n; i++) {
		unsigned s = (r->min_head + STATUS_MINUTES - r->min_n + i) % STATUS_MINUTES;
		uint32_t count = r->min[s].count;

		if (status_bit(r->min_slow, s)) {
			ok_run = 0;
			ok_ios = 0;
			slow_run++;
			slow_ios += count;
			slow = slow ||
			       (slow_run >= j->slow_minutes && slow_ios >= STATUS_JUDGE_MIN_IOS);
		} else if (count) {
			slow_run = 0;
			slow_ios = 0;
			ok_run++;
			ok_ios += count;
			slow = slow && !(ok_run >= j->ok_minutes && ok_ios >= STATUS_JUDGE_MIN_IOS);
		}
	}
	return slow;
}

void status_regress_update(struct status_view *v, uint64_t waited_ns)
{
	struct status_regress *g = &v->regress;
	bool io = v->minute.count > 0;
	struct tally_sums sum;

	/* Field by field: the baseline and judgement ones are the tick's. */
	g->have_recent = io || waited_ns > 0;
	g->recent_ns[0] = at_least(io ? v->minute.q_ns[0] : 0, waited_ns);
	g->recent_ns[1] = at_least(io ? v->minute.q_ns[2] : 0, waited_ns);
	g->ratio = g->have_recent && g->have_baseline && g->baseline_ns[0]
			   ? (double)g->recent_ns[0] / (double)g->baseline_ns[0]
			   : 0;
	tally_sums(&v->tally, &sum);
	/* The minute in progress too: its longest I/O is known before it ends. */
	if (io)
		sum.max_ns = at_least(sum.max_ns, v->minute.q_ns[3]);
	g->have_max = sum.count > 0 || io || waited_ns > 0;
	g->max_ns = at_least(sum.max_ns, waited_ns);
	g->stall_minutes = sum.stall_minutes;
	g->stalls = sum.stalls > UINT32_MAX ? UINT32_MAX : (unsigned)sum.stalls;
	g->have_tail = g->have_baseline && sum.count > 0;
	g->threshold_ns = g->have_baseline ? status_slow_io_ns(&v->j, g->baseline_ns) : 0;
	g->slow_io_ratio = g->have_tail ? (double)sum.over / (double)sum.count : 0;
}
