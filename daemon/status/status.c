/* SPDX-License-Identifier: MIT */
/*
 * status — the store behind the status page and /status.json (status.h): its
 * life, the configuration's verdict, the 16-bit latency codes, and the ticks
 * that copy each op's histogram out of the registry into its windows and ring
 * (and age the rings of quiet ops). The baseline and the shapes are
 * status_baseline.c's, the judgement status_judge.c's, what a page asks
 * status_request.c's, the pages status_html.c's and status_json.c's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/probes/probe.h"
#include "daemon/status/status.h"
#include "daemon/status/status_int.h"
#include "daemon/status/status_persist.h"

_Static_assert(STATUS_BOUND_SERIES * sizeof(struct status_series) <= STATUS_BOUND_BYTES,
	       "a probe op's status must keep the bound stated in iopulse(8)");
_Static_assert(STATUS_N_GROUPS <= UINT16_MAX, "stored buckets fit a sparse index");
_Static_assert(STATUS_MINUTES *STATUS_MINUTE *STATUS_STEP_NS == 3600 * NSEC_PER_SEC,
	       "the minute records cover an hour");
_Static_assert(STATUS_BLOCKS *STATUS_BLOCK *STATUS_STEP_NS == 86400 * NSEC_PER_SEC,
	       "the 10-minute records cover 24 hours");

#define CODE_SCALE 1024.0

uint16_t status_code(uint64_t ns)
{
	double c;

	if (!ns)
		return 0;
	c = 1 + round(CODE_SCALE * log2((double)ns));
	return c > UINT16_MAX ? UINT16_MAX : (uint16_t)c;
}

uint64_t status_decode(uint16_t code)
{
	return code ? (uint64_t)llround(exp2((code - 1) / CODE_SCALE)) : 0;
}

const char *status_state_name(enum status_state s)
{
	static const char *const names[] = {
		[STATUS_STARTING] = "starting", /* as /status.json and the metrics name them */
		[STATUS_UP] = "up",
		[STATUS_DOWN] = "down",
		[STATUS_STUCK] = "stuck",
		[STATUS_SLOW] = "slow",
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

/* ---------------------------------------------------------------- lifetime */

struct status *status_new(void)
{
	struct status *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->scratch = hist_new(NULL, 0);
	if (!st->scratch || pthread_mutex_init(&st->mu, NULL) != 0) {
		hist_free(st->scratch);
		free(st);
		return NULL;
	}
	st->reload_ok = true;
	st->start_ns = eng_now_ns();
	return st;
}

void status_free(struct status *st)
{
	if (!st)
		return;
	for (unsigned i = 0; i < st->n_series; i++)
		free(st->series[i]);
	free(st->series);
	free(st->targets);
	status_keep_free(st->keep);
	hist_free(st->scratch);
	pthread_mutex_destroy(&st->mu);
	free(st);
}

void status_config(struct status *st, const char *source, bool ok, const char *error)
{
	struct timespec ts = {0};

	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&st->mu);
	snprintf(st->source, sizeof(st->source), "%s", source);
	st->reload_ok = ok;
	snprintf(st->reload_error, sizeof(st->reload_error), "%s", ok || !error ? "" : error);
	st->reload_wall_s = ts.tv_sec + ts.tv_nsec / 1e9;
	pthread_mutex_unlock(&st->mu);
}

/* ---------------------------------------------------------------- windows */

static unsigned group_of(unsigned fine)
{
	return fine ? 1 + (fine - 1) / STATUS_GROUP : 0;
}

/* The fine bucket a stored bucket's samples are put back in: its middle one. */
static unsigned group_fine(unsigned g)
{
	unsigned f = g ? 1 + (g - 1) * STATUS_GROUP + STATUS_GROUP / 2 : 0;

	return f < HIST_N_FINE ? f : HIST_N_FINE - 1;
}

struct groups_read {
	uint32_t *c;
	uint64_t total;
	const uint64_t *cpu_bound; /* status_op's cpu_bound_runs, or NULL */
	uint64_t cpu_bound_now;	   /* its value, read with the histogram */
};

/* Under the registry mutex: a few thousand additions, no lock, no allocation. */
static void read_groups(const struct hist *h, void *arg)
{
	struct groups_read *g = arg;

	memset(g->c, 0, STATUS_N_GROUPS * sizeof(*g->c));
	g->cpu_bound_now = g->cpu_bound ? *g->cpu_bound : 0;
	g->total = hist_count(h);
	if (!g->total)
		return;
	for (unsigned f = 0; f < HIST_N_FINE; f++) {
		uint64_t n = hist_fine_count(h, f);

		if (n)
			g->c[group_of(f)] += (uint32_t)n;
	}
}

static uint32_t sat32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* Merge the entries [lo, hi) of @g/@c (ascending) into one per aligned run of
 * @width stored buckets, at the run's most frequent bucket; returns the new end. */
static unsigned merge_runs(uint16_t *g, uint32_t *c, unsigned lo, unsigned hi, unsigned width)
{
	unsigned out = lo;

	for (unsigned i = lo; i < hi;) {
		unsigned run = g[i] / width, best = g[i];
		uint64_t sum = 0, top = 0;

		for (; i < hi && g[i] / width == run; i++) {
			sum += c[i];
			if (c[i] > top)
				top = c[i], best = g[i];
		}
		g[out] = (uint16_t)best;
		c[out++] = sat32(sum);
	}
	return out;
}

/* The non-zero counts of @dense into @s, coarsened as status.h says when
 * there are more than STATUS_SPARSE. */
static void sparse_from(struct status_sparse *s, const uint64_t *dense)
{
	uint16_t g[STATUS_N_GROUPS]; /* every bucket first: 4 KiB of stack */
	uint32_t c[STATUS_N_GROUPS];
	unsigned n = 0;

	for (unsigned i = 0; i < STATUS_N_GROUPS; i++)
		if (dense[i]) {
			g[n] = (uint16_t)i;
			c[n++] = sat32(dense[i]);
		}
	/* The smallest and the largest stay as they are: the max is exact. */
	for (unsigned width = 2; n > STATUS_SPARSE; width *= 2) {
		unsigned end = merge_runs(g, c, 1, n - 1, width);

		g[end] = g[n - 1];
		c[end] = c[n - 1];
		n = end + 1;
	}
	s->n = (uint16_t)n;
	memcpy(s->g, g, n * sizeof(g[0]));
	memcpy(s->c, c, n * sizeof(c[0]));
}

static void sparse_add_to(uint64_t *dense, const struct status_sparse *s)
{
	for (unsigned i = 0; i < s->n; i++)
		dense[s->g[i]] += s->c[i];
}

/* The figures of the bucket counts @dense, which began at @since, into @fig. */
static void window(struct status *st, const uint64_t *dense, uint64_t since, uint64_t now,
		   struct status_fig *fig)
{
	static const double qs[STATUS_QUANTILES] = {0.5, 0.9, 0.99, 1.0};
	struct hist *h = st->scratch;

	hist_clear(h);
	for (unsigned g = 0; g < STATUS_N_GROUPS; g++)
		if (dense[g])
			hist_add_fine(h, group_fine(g), dense[g]);
	fig->count = hist_count(h);
	for (unsigned i = 0; i < STATUS_QUANTILES; i++)
		fig->q_ns[i] = hist_quantile_ns(h, qs[i]);
	fig->span_ns = now > since ? now - since : 0;
}

/* The page's bars of the bucket counts @dense. */
static void bars_of(const uint64_t *dense, struct status_bars *b)
{
	unsigned first = STATUS_N_GROUPS, last = 0;

	memset(b, 0, sizeof(*b));
	for (unsigned g = 1; g < STATUS_N_GROUPS; g++)
		if (dense[g]) {
			first = first < g ? first : g;
			last = g;
		}
	if (first > last)
		return;
	b->first = (uint16_t)first;
	b->per = (uint16_t)((last - first + STATUS_BARS) / STATUS_BARS);
	b->n = (uint16_t)((last - first) / b->per + 1);
	for (unsigned g = first; g <= last; g++)
		b->c[(g - first) / b->per] = sat32((uint64_t)b->c[(g - first) / b->per] + dense[g]);
}

static struct status_rec fig_rec(const struct status_fig *f)
{
	struct status_rec r = {.count = sat32(f->count)};

	for (unsigned i = 0; i < STATUS_QUANTILES; i++)
		r.q[i] = status_code(f->q_ns[i]);
	return r;
}

/* Bit @i of @bits set to @on. */
static void ring_bit(uint8_t *bits, unsigned i, bool on)
{
	uint8_t bit = (uint8_t)(1u << (i % 8));

	bits[i / 8] = (uint8_t)(on ? bits[i / 8] | bit : bits[i / 8] & ~bit);
}

/* Record @r, taken while the series was @slow or not, into a ring and its bits. */
static void ring_push(struct status_rec *recs, uint8_t *bits, unsigned size, uint16_t *head,
		      uint16_t *n, struct status_rec r, bool slow)
{
	recs[*head] = r;
	ring_bit(bits, *head, slow);
	*head = (uint16_t)((*head + 1) % size);
	if (*n < size)
		(*n)++;
}

/* ---------------------------------------------------------------- tick */

bool status_tick_due(struct status *st, uint64_t now_ns)
{
	if (st->next_tick_ns && now_ns < st->next_tick_ns)
		return false;
	/* Fixed rate; after a stall, from now (the spans say what was covered). */
	st->next_tick_ns = st->next_tick_ns && now_ns - st->next_tick_ns < STATUS_STEP_NS
				   ? st->next_tick_ns + STATUS_STEP_NS
				   : now_ns + STATUS_STEP_NS;
	st->last_tick_ns = st->tick_ns;
	st->tick_ns = now_ns;
	for (unsigned i = 0; i < st->n_series; i++)
		st->series[i]->seen = false;
	return true;
}

uint64_t status_next_tick_ns(const struct status *st)
{
	return st->next_tick_ns;
}

int status_find_series(const struct status *st, const char *probe, const char *target,
		       enum io_op op)
{
	for (unsigned i = 0; i < st->n_series; i++)
		if (st->series[i]->v.op == op && strcmp(st->series[i]->v.probe, probe) == 0 &&
		    strcmp(st->series[i]->v.target, target) == 0)
			return (int)i;
	return -1;
}

/* A new series for probe op @p / @op on @target (the tick calls;
 * the mutex guards the array for readers). NULL when out of memory (retried
 * next tick). */
static struct status_series *series_add(struct status *st, const struct status_op *o)
{
	const struct cfg_probe *p = o->p;
	struct status_series *ss = calloc(1, sizeof(*ss));
	int r;

	if (!ss)
		return NULL;
	snprintf(ss->v.probe, sizeof(ss->v.probe), "%s", p->name);
	snprintf(ss->v.target, sizeof(ss->v.target), "%s", o->target);
	snprintf(ss->v.kind, sizeof(ss->v.kind), "%s", cfg_probe_kind_name(p->kind));
	ss->v.run_figures = probe_ops_of(p->kind)->flags & PROBE_F_RUN_FIGURES;
	ss->v.op = o->op;
	ss->v.interval_s = p->interval_ns / 1e9;
	ss->v.j = o->j;
	ss->v.fingerprint = o->fingerprint;
	pthread_mutex_lock(&st->mu);
	r = mem_grow(&st->series, &st->cap_series, st->n_series + 1, sizeof(*st->series));
	if (r == 0)
		st->series[st->n_series++] = ss;
	pthread_mutex_unlock(&st->mu);
	if (r < 0) {
		free(ss);
		return NULL;
	}
	return ss;
}

/* Start @ss over from bucket counts @base (NULL: zeros) taken at @at. */
static void series_reset(struct status *st, struct status_series *ss, const uint32_t *base,
			 uint64_t total, uint64_t at)
{
	if (base)
		memcpy(ss->prev, base, sizeof(ss->prev));
	else
		memset(ss->prev, 0, sizeof(ss->prev));
	ss->prev_total = total;
	ss->prev_cpu_bound = 0; /* the caller's, when it knows better */
	ss->prev_at = ss->acc_at = at;
	memset(ss->step, 0, sizeof(ss->step));
	memset(ss->blk, 0, sizeof(ss->blk));
	memset(&ss->acc, 0, sizeof(ss->acc));
	ss->steps = 0;
	ss->blk_io = ss->blk_slow = 0;
	ss->restart = false;
	pthread_mutex_lock(&st->mu);
	memset(&ss->v.regress, 0, sizeof(ss->v.regress));
	memset(&ss->v.tally, 0, sizeof(ss->v.tally));
	ss->shape = STATUS_SHAPE_NONE;
	ss->v.base_minutes = 0;
	memset(&ss->v.ring, 0, sizeof(ss->v.ring));
	memset(&ss->v.minute, 0, sizeof(ss->v.minute));
	memset(&ss->v.hour, 0, sizeof(ss->v.hour));
	memset(&ss->v.hour_bars, 0, sizeof(ss->v.hour_bars));
	pthread_mutex_unlock(&st->mu);
}

/* Did the histogram start again since the last tick? Its total went down, or
 * one bucket gained more than the total did (it went down, modulo 2^32). */
static bool went_down(const struct status_series *ss, const uint32_t *cur, uint64_t total)
{
	uint64_t gained = total - ss->prev_total;

	if (total < ss->prev_total)
		return true;
	for (unsigned g = 0; g < STATUS_N_GROUPS; g++)
		if ((uint32_t)(cur[g] - ss->prev[g]) > gained)
			return true;
	return false;
}

/* The last minute: the steps kept (all 6 once there are), into st->sum. */
static void minute_window(struct status *st, const struct status_series *ss, uint64_t now,
			  struct status_fig *fig)
{
	unsigned n = ss->steps < STATUS_MINUTE ? ss->steps : STATUS_MINUTE;
	uint64_t since = now;

	memset(st->sum, 0, sizeof(st->sum));
	for (unsigned i = 0; i < n; i++) {
		sparse_add_to(st->sum, &ss->step[i]);
		since = ss->step_at[i] < since ? ss->step_at[i] : since;
	}
	window(st, st->sum, since, now, fig);
}

/* The last hour: the block in progress and the whole blocks kept, into st->sum. */
static void hour_window(struct status *st, const struct status_series *ss, uint64_t now,
			struct status_fig *fig)
{
	unsigned n = ss->steps / STATUS_BLOCK;
	uint64_t since = ss->acc_at;

	n = n < STATUS_HOUR ? n : STATUS_HOUR;
	memset(st->sum, 0, sizeof(st->sum));
	sparse_add_to(st->sum, &ss->acc);
	for (unsigned i = 0; i < n; i++) {
		sparse_add_to(st->sum, &ss->blk[i]);
		since = ss->blk_at[i] < since ? ss->blk_at[i] : since;
	}
	window(st, st->sum, since, now, fig);
}

/* What the step that ends now added (st->cur minus the last tick's counts):
 * into the last minute's steps and the block in progress; nothing when
 * @cpu_bound (a burst run that measured the CPU more than the storage). */
static void step_in(struct status *st, struct status_series *ss, uint64_t now, uint64_t total,
		    bool cpu_bound)
{
	unsigned slot = ss->steps % STATUS_MINUTE;

	for (unsigned g = 0; g < STATUS_N_GROUPS; g++) /* modulo 2^32 */
		st->sum[g] = cpu_bound ? 0 : (uint32_t)(st->cur[g] - ss->prev[g]);
	sparse_from(&ss->step[slot], st->sum);
	ss->step_at[slot] = ss->prev_at;
	memset(st->sum, 0, sizeof(st->sum));
	sparse_add_to(st->sum, &ss->acc);
	sparse_add_to(st->sum, &ss->step[slot]);
	sparse_from(&ss->acc, st->sum);
	memcpy(ss->prev, st->cur, sizeof(ss->prev));
	ss->prev_total = total;
	ss->prev_at = now;
	ss->steps++;
}

/* The page's windows of @ss at @now: @minute, and the hour's figures and bars. */
static void set_windows(struct status *st, struct status_series *ss, uint64_t now,
			const struct status_fig *minute)
{
	struct status_fig hour;
	struct status_bars bars;

	hour_window(st, ss, now, &hour);
	bars_of(st->sum, &bars);
	pthread_mutex_lock(&st->mu);
	ss->v.minute = *minute;
	ss->v.hour = hour;
	ss->v.hour_bars = bars;
	status_regress_update(&ss->v, ss->waited_ns);
	pthread_mutex_unlock(&st->mu);
}

/* At a minute mark: the baseline of @ss's records, for the pages and for the
 * judgement of the next minute, and the op's judgement (the ring is the tick's
 * to write: read as is). */
static void baseline_update(struct status *st, struct status_series *ss)
{
	uint64_t ns[2];
	unsigned minutes;
	bool have = status_baseline(&ss->v.ring, ss->v.j.warmup_minutes, ns, &minutes);
	bool slow = status_op_slow(&ss->v.ring, &ss->v.j);

	pthread_mutex_lock(&st->mu);
	ss->v.regress.have_baseline = have;
	ss->v.regress.baseline_ns[0] = ns[0];
	ss->v.regress.baseline_ns[1] = ns[1];
	ss->v.base_minutes = minutes;
	ss->v.regress.slow = slow;
	ss->v.regress.shape = slow ? ss->shape : STATUS_SHAPE_NONE;
	status_regress_update(&ss->v, ss->waited_ns);
	pthread_mutex_unlock(&st->mu);
}

/* One step of @ss with st->cur holding its histogram's bucket counts now (left
 * out when @cpu_bound). */
static void series_step(struct status *st, struct status_series *ss, uint64_t now, uint64_t total,
			bool cpu_bound)
{
	struct status_fig minute, block = {0};
	bool minute_mark, block_mark, min_slow = false, min_held = false, blk_slow = false;

	step_in(st, ss, now, total, cpu_bound);
	minute_mark = ss->steps % STATUS_MINUTE == 0; /* the minute window is then exactly one */
	block_mark = ss->steps % STATUS_BLOCK == 0;
	minute_window(st, ss, now, &minute);
	if (minute_mark) {
		/* Judged against the baseline before it (st->sum: its counts). */
		enum status_shape shape;

		pthread_mutex_lock(&st->mu);
		shape = status_minute(&ss->v, &minute, st->sum);
		min_held = shape == STATUS_SHAPE_NONE && status_minute_held(&ss->v, &minute);
		pthread_mutex_unlock(&st->mu);
		min_slow = shape != STATUS_SHAPE_NONE;
		if (min_slow)
			ss->shape = shape;
		/* A block is left out of the baseline as its minutes were, held
		 * ones included: else a regression held for an hour was learnt
		 * through its blocks. */
		ss->blk_io += minute.count > 0 || min_slow;
		ss->blk_slow += min_slow || min_held;
	}
	if (block_mark) { /* the block in progress is whole: it joins the hour's */
		unsigned slot = (ss->steps / STATUS_BLOCK - 1) % STATUS_HOUR;

		memset(st->sum, 0, sizeof(st->sum));
		sparse_add_to(st->sum, &ss->acc);
		window(st, st->sum, ss->acc_at, now, &block);
		ss->blk[slot] = ss->acc;
		ss->blk_at[slot] = ss->acc_at;
		memset(&ss->acc, 0, sizeof(ss->acc));
		ss->acc_at = now;
		/* Slow when more than half of its minutes with I/O were. */
		blk_slow = 2 * ss->blk_slow > ss->blk_io;
		ss->blk_io = ss->blk_slow = 0;
	}
	set_windows(st, ss, now, &minute);
	pthread_mutex_lock(&st->mu);
	if (minute_mark) {
		ring_bit(ss->v.ring.min_held, ss->v.ring.min_head, min_held);
		ring_push(ss->v.ring.min, ss->v.ring.min_slow, STATUS_MINUTES, &ss->v.ring.min_head,
			  &ss->v.ring.min_n, fig_rec(&minute), min_slow);
	}
	if (block_mark)
		ring_push(ss->v.ring.blk, ss->v.ring.blk_slow, STATUS_BLOCKS, &ss->v.ring.blk_head,
			  &ss->v.ring.blk_n, fig_rec(&block), blk_slow);
	pthread_mutex_unlock(&st->mu);
	if (minute_mark)
		baseline_update(st, ss);
}

static bool judging_same(const struct status_judging *a, const struct status_judging *b)
{
	return a->slow_factor == b->slow_factor && a->slow_floor_ns == b->slow_floor_ns &&
	       a->warmup_minutes == b->warmup_minutes && a->tail_factor == b->tail_factor &&
	       a->tail_share == b->tail_share && a->stall_ns == b->stall_ns &&
	       a->slow_minutes == b->slow_minutes && a->ok_minutes == b->ok_minutes;
}

/* A reload may have changed a probe's kind or interval under the same name, or
 * its target's slow settings. */
static void series_describe(struct status *st, struct status_series *ss, const struct status_op *o)
{
	const struct cfg_probe *p = o->p;
	const char *kind = cfg_probe_kind_name(p->kind);
	struct status_view *v = &ss->v;

	if (strcmp(v->kind, kind) == 0 && v->interval_s == p->interval_ns / 1e9 &&
	    judging_same(&v->j, &o->j) && v->fingerprint == o->fingerprint)
		return;
	pthread_mutex_lock(&st->mu);
	snprintf(v->kind, sizeof(v->kind), "%s", kind);
	v->run_figures = probe_ops_of(p->kind)->flags & PROBE_F_RUN_FIGURES;
	v->interval_s = p->interval_ns / 1e9;
	v->j = o->j;
	v->fingerprint = o->fingerprint;
	pthread_mutex_unlock(&st->mu);
}

void status_tick_op(struct status *st, const struct status_op *o, uint64_t now_ns)
{
	struct groups_read g = {.c = st->cur, .cpu_bound = o->cpu_bound_runs};
	bool cpu_bound;
	struct status_series *ss;
	int i = status_find_series(st, o->p->name, o->target, o->op);

	status_keep_note(st, o);
	ss = i >= 0 ? st->series[i] : series_add(st, o);
	if (!ss)
		return;
	ss->seen = true;
	if (metrics_read_hist(o->latency, read_groups, &g) < 0)
		return;
	series_describe(st, ss, o);
	if (i < 0 && !st->last_tick_ns) {
		/* The daemon's first tick: the windows start here, the records where
		 * a state file left them (a baseline at once). */
		series_reset(st, ss, st->cur, g.total, now_ns);
		ss->prev_cpu_bound = g.cpu_bound_now;
		if (status_restore_ring(st, ss))
			baseline_update(st, ss);
		return;
	}
	/* A probe op that appeared since the last tick, or whose histogram was
	 * made anew since (a changed probe): its histogram began after that tick. */
	if (i < 0) {
		series_reset(st, ss, NULL, 0, st->last_tick_ns);
		if (status_restore_ring(st, ss))
			baseline_update(st, ss);
	} else if (ss->restart || went_down(ss, st->cur, g.total))
		series_reset(st, ss, NULL, 0, ss->prev_at);
	/* A burst run marked cpu_bound was published since the last tick: the
	 * step's I/Os are its (a burst probe's histogram has its runs alone), and
	 * neither the windows, nor the judgement, nor the baseline take them. */
	cpu_bound = g.cpu_bound_now != ss->prev_cpu_bound;
	ss->prev_cpu_bound = g.cpu_bound_now;
	series_step(st, ss, now_ns, g.total, cpu_bound);
}

void status_probe_changed(struct status *st, const char *probe)
{
	for (unsigned i = 0; i < st->n_series; i++)
		if (strcmp(st->series[i]->v.probe, probe) == 0)
			st->series[i]->restart = true;
}

void status_tick_end(struct status *st, uint64_t now_ns)
{
	struct status_series *gone[8];
	unsigned n_gone;

	/* Every minute of ticks, whoever keeps the state file hears of it, once
	 * the targets are judged on these figures (status_tell_minute()). */
	if (st->minute_fn &&
	    (!st->minute_told_ns || now_ns - st->minute_told_ns >= 60 * NSEC_PER_SEC)) {
		st->minute_told_ns = now_ns;
		st->minute_due_ns = now_ns;
	}
	do { /* a few at a time: freed outside the mutex */
		n_gone = 0;
		pthread_mutex_lock(&st->mu);
		for (unsigned i = 0; i < st->n_series && n_gone < 8;) {
			if (st->series[i]->seen) {
				i++;
				continue;
			}
			gone[n_gone++] = st->series[i];
			memmove(&st->series[i], &st->series[i + 1],
				(st->n_series - i - 1) * sizeof(st->series[0]));
			st->n_series--;
		}
		pthread_mutex_unlock(&st->mu);
		for (unsigned i = 0; i < n_gone; i++)
			free(gone[i]);
	} while (n_gone == 8);
	status_keep_prune(st);
}

/* ---------------------------------------------------------------- catching up */

/* Nothing in any window of @ss, nor a restart pending: a step that adds
 * nothing changes only its times and records. */
static bool series_quiet(const struct status_series *ss)
{
	if (ss->restart || ss->acc.n)
		return false;
	for (unsigned i = 0; i < STATUS_MINUTE; i++)
		if (ss->step[i].n)
			return false;
	for (unsigned i = 0; i < STATUS_HOUR; i++)
		if (ss->blk[i].n)
			return false;
	return true;
}

/* Marks of every @every steps from step @from (exclusive) to @to (inclusive). */
static uint64_t marks(uint64_t from, uint64_t to, unsigned every)
{
	return to / every - from / every;
}

/* @count empty records into a ring: only the last @size are written (the
 * others would be overwritten), the head moves by all of them. */
static void ring_push_empty(struct status_rec *recs, uint8_t *bits, unsigned size, uint16_t *head,
			    uint16_t *n, uint64_t count)
{
	const struct status_rec none = fig_rec(&(struct status_fig){0});

	if (count > size) {
		*head = (uint16_t)((*head + (count - size) % size) % size);
		count = size;
	}
	for (uint64_t i = 0; i < count; i++)
		ring_push(recs, bits, size, head, n, none, false);
}

void status_ring_age(struct status_ring *r, double seconds)
{
	/* At most a ring of each: the others would be overwritten. */
	uint64_t minutes = seconds >= 60 ? (uint64_t)fmin(seconds / 60, 2 * STATUS_BLOCKS * 10) : 0;

	ring_push_empty(r->min, r->min_slow, STATUS_MINUTES, &r->min_head, &r->min_n, minutes);
	ring_push_empty(r->blk, r->blk_slow, STATUS_BLOCKS, &r->blk_head, &r->blk_n, minutes / 10);
}

/* What series_step() does for a step that added nothing to a quiet series,
 * ending at @now: times and empty records, no figures. */
static void quiet_step(struct status *st, struct status_series *ss, uint64_t now)
{
	unsigned slot = ss->steps % STATUS_MINUTE;

	ss->step[slot].n = 0;
	ss->step_at[slot] = ss->prev_at;
	ss->prev_at = now;
	ss->steps++;
	if (ss->steps % STATUS_BLOCK == 0) {
		slot = (ss->steps / STATUS_BLOCK - 1) % STATUS_HOUR;
		ss->blk_io = ss->blk_slow = 0; /* 0 already: a quiet block has no I/O */
		ss->blk[slot].n = 0;
		ss->blk_at[slot] = ss->acc_at;
		ss->acc_at = now;
	}
	pthread_mutex_lock(&st->mu);
	ring_push_empty(ss->v.ring.min, ss->v.ring.min_slow, STATUS_MINUTES, &ss->v.ring.min_head,
			&ss->v.ring.min_n, ss->steps % STATUS_MINUTE == 0);
	ring_push_empty(ss->v.ring.blk, ss->v.ring.blk_slow, STATUS_BLOCKS, &ss->v.ring.blk_head,
			&ss->v.ring.blk_n, ss->steps % STATUS_BLOCK == 0);
	pthread_mutex_unlock(&st->mu);
}

/*
 * @k quiet steps of @ss, the first ending at @at, one every STATUS_STEP_NS.
 * Only the last hour of steps (STATUS_HOUR whole blocks: every step slot and
 * block slot) shapes what is kept; the ones before it only push empty records
 * and move the block in progress on.
 */
static void series_skip(struct status *st, struct status_series *ss, uint64_t at, uint64_t k)
{
	const uint64_t keep = STATUS_HOUR * STATUS_BLOCK;
	struct status_fig minute;

	if (k > keep) {
		uint64_t m = k - keep, from = ss->steps, to = from + m, last_block;

		pthread_mutex_lock(&st->mu);
		ring_push_empty(ss->v.ring.min, ss->v.ring.min_slow, STATUS_MINUTES,
				&ss->v.ring.min_head, &ss->v.ring.min_n,
				marks(from, to, STATUS_MINUTE));
		ring_push_empty(ss->v.ring.blk, ss->v.ring.blk_slow, STATUS_BLOCKS,
				&ss->v.ring.blk_head, &ss->v.ring.blk_n,
				marks(from, to, STATUS_BLOCK));
		pthread_mutex_unlock(&st->mu);
		last_block = to / STATUS_BLOCK * STATUS_BLOCK;
		if (last_block > from)
			ss->acc_at = at + (last_block - from - 1) * STATUS_STEP_NS;
		ss->steps = (unsigned)to;
		ss->prev_at = at + (m - 1) * STATUS_STEP_NS;
		at += m * STATUS_STEP_NS;
		k = keep;
	}
	for (uint64_t i = 0; i < k; i++)
		quiet_step(st, ss, at + i * STATUS_STEP_NS);
	at += (k - 1) * STATUS_STEP_NS;
	minute_window(st, ss, at, &minute);
	set_windows(st, ss, at, &minute);
	baseline_update(st, ss); /* the records moved on: as at each minute mark on the way */
}

/* The @k ticks due from st->next_tick_ns on, at once, when every series is
 * quiet; false (nothing done) when one is not. */
static bool skip_quiet(struct status *st, uint64_t k)
{
	uint64_t at = st->next_tick_ns;

	for (unsigned i = 0; i < st->n_series; i++)
		if (!series_quiet(st->series[i]))
			return false;
	for (unsigned i = 0; i < st->n_series; i++)
		series_skip(st, st->series[i], at, k);
	st->last_tick_ns = k > 1 ? at + (k - 2) * STATUS_STEP_NS : st->tick_ns;
	st->tick_ns = at + (k - 1) * STATUS_STEP_NS;
	st->next_tick_ns = at + k * STATUS_STEP_NS;
	return true;
}

unsigned status_tick_until(struct status *st, const struct status_op *ops, unsigned n,
			   uint64_t now_ns)
{
	unsigned ticks = 0, calls = 0;
	uint64_t at;

	while ((at = st->next_tick_ns) <= now_ns) {
		if (!at || ticks >= STATUS_CATCH_UP_MAX)
			at = now_ns; /* the first tick, or a safety net */
		else if (ticks && skip_quiet(st, (now_ns - at) / STATUS_STEP_NS + 1))
			break;
		status_tick_due(st, at);
		for (unsigned i = 0; i < n; i++)
			status_tick_op(st, &ops[i], at);
		status_tick_end(st, at);
		ticks++;
		calls += n;
	}
	return calls;
}
