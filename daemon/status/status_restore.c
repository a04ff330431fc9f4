/* SPDX-License-Identifier: MIT */
/*
 * status_restore — what a state file brought back waits here until the status
 * takes it (status_persist.h): a ring until the first tick makes its series, a
 * judgement until a request judges its target otherwise; and what the state
 * file is to keep, collected. All under the status mutex, none of it I/O.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/status/status_int.h"
#include "daemon/status/status_persist.h"

struct pending_series {
	struct status_saved_series s;
	double saved_s; /* Unix time the ring was saved */
};

struct pending_target {
	struct status_saved_target t;
	double restored_s; /* Unix time it was restored */
};

struct status_pending {
	struct pending_series *series;
	unsigned n_series;
	size_t cap_series;
	struct pending_target *targets;
	unsigned n_targets;
	size_t cap_targets;
};

void status_pending_free(struct status_pending *p)
{
	if (!p)
		return;
	free(p->series);
	free(p->targets);
	free(p);
}

/* The pending table of @st, made on first use (under the mutex); NULL: out of memory. */
static struct status_pending *pending(struct status *st)
{
	if (!st->pending)
		st->pending = calloc(1, sizeof(*st->pending));
	return st->pending;
}

static double wall_s(void)
{
	struct timespec ts = {0};

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int status_restore_series(struct status *st, const struct status_saved_series *s, double saved_s)
{
	struct status_pending *p;
	int r = -ENOMEM;

	pthread_mutex_lock(&st->mu);
	p = pending(st);
	if (p && mem_grow(&p->series, &p->cap_series, p->n_series + 1, sizeof(*p->series)) == 0) {
		p->series[p->n_series++] = (struct pending_series){.s = *s, .saved_s = saved_s};
		r = 0;
	}
	pthread_mutex_unlock(&st->mu);
	return r;
}

int status_restore_judgement(struct status *st, const struct status_saved_target *t, double now_s)
{
	struct status_pending *p;
	int r = -ENOMEM;

	pthread_mutex_lock(&st->mu);
	p = pending(st);
	if (p &&
	    mem_grow(&p->targets, &p->cap_targets, p->n_targets + 1, sizeof(*p->targets)) == 0) {
		p->targets[p->n_targets++] = (struct pending_target){.t = *t, .restored_s = now_s};
		r = 0;
	}
	pthread_mutex_unlock(&st->mu);
	return r;
}

/* The pending judgement of target @name (under the mutex), or NULL. */
static struct pending_target *find_target(struct status *st, const char *name)
{
	struct status_pending *p = st->pending;

	for (unsigned i = 0; p && i < p->n_targets; i++)
		if (strcmp(p->targets[i].t.name, name) == 0)
			return &p->targets[i];
	return NULL;
}

bool status_restored_judgement(struct status *st, const char *target, struct status_judgement *out)
{
	const struct pending_target *pt;

	pthread_mutex_lock(&st->mu);
	pt = find_target(st, target);
	if (pt)
		*out = pt->t.j;
	pthread_mutex_unlock(&st->mu);
	return pt != NULL;
}

bool status_restore_ring(struct status *st, struct status_series *ss)
{
	struct status_pending *p;
	bool taken = false;

	pthread_mutex_lock(&st->mu);
	p = st->pending;
	for (unsigned i = 0; p && i < p->n_series; i++) {
		struct pending_series *e = &p->series[i];

		if (e->s.op != ss->v.op || strcmp(e->s.probe, ss->v.probe) != 0 ||
		    strcmp(e->s.target, ss->v.target) != 0)
			continue;
		/* Another probe under the same name measures something else. */
		taken = e->s.fingerprint && e->s.fingerprint == ss->v.fingerprint;
		if (taken) {
			ss->v.ring = e->s.ring;
			status_ring_age(&ss->v.ring, wall_s() - e->saved_s);
		}
		*e = p->series[--p->n_series];
		break;
	}
	pthread_mutex_unlock(&st->mu);
	return taken;
}

/* Whether some probe op of @target has judged a minute (under the mutex): a
 * baseline and a last minute to compare with it. */
static bool has_verdict(const struct status *st, const char *target)
{
	for (unsigned i = 0; i < st->n_series; i++) {
		const struct status_view *v = &st->series[i]->v;

		if (strcmp(v->target, target) == 0 && v->regress.have_baseline &&
		    v->regress.have_recent)
			return true;
	}
	return false;
}

void status_restore_apply(struct status *st, struct status_target *t)
{
	struct pending_target *pt;
	const struct status_judgement *j;

	pthread_mutex_lock(&st->mu);
	pt = find_target(st, t->name);
	if (!pt || t->state == STATUS_STARTING)
		goto out;
	j = &pt->t.j;
	if (t->state == j->state) {
		t->since_s = j->since_s;
		goto out;
	}
	/* Up, but not judged yet: the slow it was restarted in still stands. */
	if (t->state == STATUS_UP && j->state == STATUS_SLOW &&
	    wall_s() - pt->restored_s < STATUS_RESTORE_HOLD_S && !has_verdict(st, t->name)) {
		t->state = STATUS_SLOW;
		t->since_s = j->since_s;
		snprintf(t->reason_code, sizeof(t->reason_code), "%s",
			 j->reason_code[0] ? j->reason_code : "slow");
		goto out;
	}
	*pt = st->pending->targets[--st->pending->n_targets];
out:
	pthread_mutex_unlock(&st->mu);
}

/* ---------------------------------------------------------------- saving */

/* The series of @st and the rings still pending, into @out (room for them). */
static void collect_series(const struct status *st, double now_s, struct status_saved *out)
{
	const struct status_pending *p = st->pending;

	for (unsigned i = 0; i < st->n_series && out->n_series < STATUS_STATE_MAX_SERIES; i++) {
		const struct status_view *v = &st->series[i]->v;
		struct status_saved_series *e = &out->series[out->n_series++];

		snprintf(e->probe, sizeof(e->probe), "%s", v->probe);
		snprintf(e->target, sizeof(e->target), "%s", v->target);
		e->op = (uint8_t)v->op;
		e->fingerprint = v->fingerprint;
		e->ring = v->ring;
	}
	/* Not taken yet (no tick since the start): kept, aged to now. */
	for (unsigned i = 0; p && i < p->n_series && out->n_series < STATUS_STATE_MAX_SERIES; i++) {
		out->series[out->n_series] = p->series[i].s;
		status_ring_age(&out->series[out->n_series++].ring, now_s - p->series[i].saved_s);
	}
}

/* Whether @st's last request judged a target @name. */
static bool judged(const struct status *st, const char *name)
{
	for (unsigned i = 0; i < st->n_targets; i++)
		if (strcmp(st->targets[i].name, name) == 0)
			return true;
	return false;
}

/* The targets the last request judged, with their identity, and the pending
 * ones it did not, into @out (room for them). */
static void collect_targets(const struct status *st, struct status_saved *out)
{
	const struct status_pending *p = st->pending;

	for (unsigned i = 0; i < st->n_targets && out->n_targets < CFG_MAX_TARGETS; i++) {
		const struct status_target *t = &st->targets[i];
		struct status_saved_target *e = &out->targets[out->n_targets];

		if (!t->id.known)
			continue; /* never opened: nothing to tie a state to */
		snprintf(e->name, sizeof(e->name), "%s", t->name);
		snprintf(e->path, sizeof(e->path), "%s", t->path);
		e->id = t->id;
		e->j = (struct status_judgement){.state = t->state, .since_s = t->since_s};
		snprintf(e->j.reason_code, sizeof(e->j.reason_code), "%s", t->reason_code);
		out->n_targets++;
	}
	for (unsigned i = 0; p && i < p->n_targets && out->n_targets < CFG_MAX_TARGETS; i++)
		if (!judged(st, p->targets[i].t.name))
			out->targets[out->n_targets++] = p->targets[i].t;
}

int status_save_collect(struct status *st, double now_s, struct status_saved *out)
{
	size_t n_series, n_targets;
	int r = 0;

	memset(out, 0, sizeof(*out));
	out->written_s = now_s;
	pthread_mutex_lock(&st->mu);
	n_series = st->n_series + (st->pending ? st->pending->n_series : 0);
	n_targets = st->n_targets + (st->pending ? st->pending->n_targets : 0);
	n_series = n_series < STATUS_STATE_MAX_SERIES ? n_series : STATUS_STATE_MAX_SERIES;
	out->series = calloc(n_series ? n_series : 1, sizeof(*out->series));
	out->targets = calloc(n_targets ? n_targets : 1, sizeof(*out->targets));
	if (out->series && out->targets) {
		collect_series(st, now_s, out);
		collect_targets(st, out);
	} else {
		r = -ENOMEM;
	}
	pthread_mutex_unlock(&st->mu);
	if (r < 0)
		status_saved_free(out);
	return r;
}

void status_on_minute(struct status *st, void (*fn)(void *arg), void *arg)
{
	st->minute_fn = fn;
	st->minute_arg = arg;
}
