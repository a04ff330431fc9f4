/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe.h"
#include "status.h"

_Static_assert(STATUS_BOUND_SERIES * sizeof(struct status_ring) <= STATUS_BOUND_BYTES,
	       "the ring must keep the bound stated in iopulse(8)");
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
		[STATUS_STARTING] = "starting",
		[STATUS_UP] = "up",
		[STATUS_DOWN] = "down",
		[STATUS_STUCK] = "stuck",
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
};

/* Under the registry mutex: a few thousand additions, no lock, no allocation. */
static void read_groups(const struct hist *h, void *arg)
{
	struct groups_read *g = arg;

	memset(g->c, 0, STATUS_N_GROUPS * sizeof(*g->c));
	g->total = hist_count(h);
	if (!g->total)
		return;
	for (unsigned f = 0; f < HIST_N_FINE; f++) {
		uint64_t n = hist_fine_count(h, f);

		if (n)
			g->c[group_of(f)] += (uint32_t)n;
	}
}

/* Baseline @back steps before the newest (0: the newest); NULL when there is
 * none that old yet: then the window starts with the series (zero counts at
 * its creation, which *@at already holds). */
static const uint32_t *base_at(const struct status_bases *b, unsigned back, uint64_t *at)
{
	unsigned i;

	if (back >= b->n)
		return NULL;
	i = (b->head + STATUS_BASES - 1 - back) % STATUS_BASES;
	*at = b->at_ns[i];
	return b->c[i];
}

static void base_push(struct status_bases *b, const uint32_t *c, uint64_t total, uint64_t now)
{
	memcpy(b->c[b->head], c, sizeof(b->c[0]));
	b->total[b->head] = total;
	b->at_ns[b->head] = now;
	b->head = (b->head + 1) % STATUS_BASES;
	if (b->n < STATUS_BASES)
		b->n++;
}

/* The figures of @cur minus @base (NULL: zeros) into @fig, and the window's
 * bucket counts into @groups unless NULL. */
static void window(struct status *st, const uint32_t *base, uint64_t since, uint64_t now,
		   struct status_fig *fig, uint32_t *groups)
{
	static const double qs[STATUS_QUANTILES] = {0.5, 0.9, 0.99, 1.0};
	struct hist *h = st->scratch;

	hist_clear(h);
	for (unsigned g = 0; g < STATUS_N_GROUPS; g++) {
		uint32_t d = st->cur[g] - (base ? base[g] : 0); /* modulo 2^32 */

		if (groups)
			groups[g] = d;
		if (d)
			hist_add_fine(h, group_fine(g), d);
	}
	fig->count = hist_count(h);
	for (unsigned i = 0; i < STATUS_QUANTILES; i++)
		fig->q_ns[i] = hist_quantile_ns(h, qs[i]);
	fig->span_ns = now > since ? now - since : 0;
}

static struct status_rec fig_rec(const struct status_fig *f)
{
	struct status_rec r = {.count = f->count > UINT32_MAX ? UINT32_MAX : (uint32_t)f->count};

	for (unsigned i = 0; i < STATUS_QUANTILES; i++)
		r.q[i] = status_code(f->q_ns[i]);
	return r;
}

static void ring_push(struct status_rec *recs, unsigned size, uint16_t *head, uint16_t *n,
		      struct status_rec r)
{
	recs[*head] = r;
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
	for (unsigned i = 0; i < st->n_series; i++)
		st->series[i]->seen = false;
	return true;
}

static int find_series(const struct status *st, const char *probe, enum io_op op)
{
	for (unsigned i = 0; i < st->n_series; i++)
		if (st->series[i]->op == op && strcmp(st->series[i]->probe, probe) == 0)
			return (int)i;
	return -1;
}

/* A new series for probe op @p / @op (the scheduler thread calls; the mutex
 * guards the array for readers). NULL when out of memory (retried next tick). */
static struct status_series *series_add(struct status *st, const struct cfg_probe *p,
					const char *target, enum io_op op, uint64_t now)
{
	struct status_series *ss = calloc(1, sizeof(*ss));
	int r;

	if (!ss)
		return NULL;
	snprintf(ss->probe, sizeof(ss->probe), "%s", p->name);
	snprintf(ss->target, sizeof(ss->target), "%s", target);
	snprintf(ss->kind, sizeof(ss->kind), "%s", cfg_probe_kind_name(p->kind));
	ss->op = op;
	ss->created_ns = now;
	ss->interval_s = p->interval_ns / 1e9;
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

/* The series' histogram restarted from zero (a changed probe): so does it. */
static void series_restart(struct status *st, struct status_series *ss, uint64_t now)
{
	memset(&ss->minute_b, 0, sizeof(ss->minute_b));
	memset(&ss->block_b, 0, sizeof(ss->block_b));
	ss->steps = 0;
	ss->created_ns = now;
	pthread_mutex_lock(&st->mu);
	memset(&ss->ring, 0, sizeof(ss->ring));
	pthread_mutex_unlock(&st->mu);
}

/* One step of @ss with st->cur holding its histogram's bucket counts now. */
static void series_step(struct status *st, struct status_series *ss, uint64_t now, uint64_t total)
{
	bool minute_mark = ss->steps && ss->steps % STATUS_MINUTE == 0;
	bool block_mark = ss->steps && ss->steps % STATUS_BLOCK == 0;
	uint64_t at = ss->created_ns, blk_at = ss->created_ns;
	uint32_t groups[STATUS_N_GROUPS];
	struct status_fig minute, hour, block;
	const uint32_t *b;

	b = base_at(&ss->minute_b, STATUS_BASES - 1, &at);
	window(st, b, at, now, &minute, NULL);
	b = base_at(&ss->block_b, STATUS_BASES - 1, &at);
	window(st, b, at, now, &hour, groups);
	if (block_mark) {
		b = base_at(&ss->block_b, 0, &blk_at);
		window(st, b, blk_at, now, &block, NULL);
	}
	pthread_mutex_lock(&st->mu);
	ss->minute = minute;
	ss->hour = hour;
	memcpy(ss->hour_groups, groups, sizeof(groups));
	if (minute_mark) /* the minute window is then exactly the last minute */
		ring_push(ss->ring.min, STATUS_MINUTES, &ss->ring.min_head, &ss->ring.min_n,
			  fig_rec(&minute));
	if (block_mark)
		ring_push(ss->ring.blk, STATUS_BLOCKS, &ss->ring.blk_head, &ss->ring.blk_n,
			  fig_rec(&block));
	pthread_mutex_unlock(&st->mu);
	base_push(&ss->minute_b, st->cur, total, now);
	if (ss->steps % STATUS_BLOCK == 0)
		base_push(&ss->block_b, st->cur, total, now);
	ss->steps++;
}

void status_tick_op(struct status *st, const struct cfg_probe *p, const char *target, enum io_op op,
		    struct metric_series *latency, uint64_t now_ns)
{
	struct groups_read g = {.c = st->cur};
	struct status_series *ss;
	int i = find_series(st, p->name, op);
	uint64_t newest = 0;

	ss = i >= 0 ? st->series[i] : series_add(st, p, target, op, now_ns);
	if (!ss)
		return;
	ss->seen = true;
	if (metrics_read_hist(latency, read_groups, &g) < 0)
		return;
	if (ss->minute_b.n)
		newest = ss->minute_b.total[(ss->minute_b.head + STATUS_BASES - 1) % STATUS_BASES];
	if (g.total < newest)
		series_restart(st, ss, now_ns);
	series_step(st, ss, now_ns, g.total);
}

void status_tick_end(struct status *st, uint64_t now_ns)
{
	struct status_series *gone[8];
	unsigned n_gone;

	(void)now_ns;
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
}

/* ---------------------------------------------------------------- requests */

int status_targets_begin(struct status *st, unsigned n)
{
	int r;

	pthread_mutex_lock(&st->mu);
	r = mem_grow(&st->targets, &st->cap_targets, n ? n : 1, sizeof(*st->targets));
	st->n_targets = r == 0 ? n : 0;
	pthread_mutex_unlock(&st->mu);
	return r;
}

void status_set_target(struct status *st, unsigned i, const struct status_target *t)
{
	pthread_mutex_lock(&st->mu);
	if (i < st->n_targets)
		st->targets[i] = *t;
	pthread_mutex_unlock(&st->mu);
}

void status_set_probe(struct status *st, const char *probe, enum io_op op, double runs,
		      double errors, double interval_s, const struct status_burst *burst)
{
	int i;

	pthread_mutex_lock(&st->mu);
	i = find_series(st, probe, op);
	if (i >= 0) {
		st->series[i]->runs = runs;
		st->series[i]->errors = errors;
		st->series[i]->interval_s = interval_s;
		st->series[i]->burst = *burst;
	}
	pthread_mutex_unlock(&st->mu);
}

bool status_ready_locked(const struct status *st, struct buf *why)
{
	bool ready = true;

	for (unsigned i = 0; i < st->n_targets; i++) {
		const struct status_target *t = &st->targets[i];

		if (t->state == STATUS_UP)
			continue;
		ready = false;
		if (why)
			buf_printf(why, "%s: %s: %s\n", t->name, status_state_name(t->state),
				   t->reason[0] ? t->reason : "no reason known");
	}
	return ready;
}

bool status_ready(struct status *st, struct buf *why)
{
	bool ready;

	pthread_mutex_lock(&st->mu);
	ready = status_ready_locked(st, why);
	pthread_mutex_unlock(&st->mu);
	return ready;
}

size_t status_utf8_len(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n;
	uint32_t cp;

	if (u[0] < 0x80)
		return 1;
	if (u[0] >= 0xc2 && u[0] <= 0xdf)
		n = 2, cp = u[0] & 0x1f;
	else if (u[0] >= 0xe0 && u[0] <= 0xef)
		n = 3, cp = u[0] & 0x0f;
	else if (u[0] >= 0xf0 && u[0] <= 0xf4)
		n = 4, cp = u[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (u[i] & 0x3f);
	}
	/* overlong forms, surrogates, past U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}
