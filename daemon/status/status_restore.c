/* SPDX-License-Identifier: MIT */
/*
 * status_restore — what a state file brought back waits here until the status
 * takes it (status_persist.h): a ring until the first tick makes its series, a
 * judgement until its target is judged past starting (status_judge()); what each target was
 * when its lane last had it open, as the ticks see it; and what the state file
 * is to keep, collected. All under the status mutex, none of it I/O.
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

/* A target as its lane had it open, from the ticks. */
struct known_target {
	char name[CFG_NAME_MAX];
	char path[STATUS_STATE_PATH_MAX];
	struct status_identity id;
};

struct status_keep {
	struct pending_series *series;
	unsigned n_series;
	size_t cap_series;
	struct pending_target *targets;
	unsigned n_targets;
	size_t cap_targets;
	struct known_target *known;
	unsigned n_known;
	size_t cap_known;
};

void status_keep_free(struct status_keep *k)
{
	if (!k)
		return;
	free(k->series);
	free(k->targets);
	free(k->known);
	free(k);
}

/* The table of @st, made on first use (under the mutex); NULL: out of memory. */
static struct status_keep *pending(struct status *st)
{
	if (!st->keep)
		st->keep = calloc(1, sizeof(*st->keep));
	return st->keep;
}

static double wall_s(void)
{
	struct timespec ts = {0};

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int status_restore_series(struct status *st, const struct status_saved_series *s, double saved_s)
{
	struct status_keep *p;
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
	struct status_keep *p;
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
static struct pending_target *find_target(const struct status *st, const char *name)
{
	const struct status_keep *p = st->keep;

	for (unsigned i = 0; p && i < p->n_targets; i++)
		if (strcmp(p->targets[i].t.name, name) == 0)
			return &p->targets[i];
	return NULL;
}

bool status_restored_judgement(struct status *st, const char *target, struct status_judgement *out)
{
	struct pending_target *pt;

	pthread_mutex_lock(&st->mu);
	pt = find_target(st, target);
	if (pt && wall_s() - pt->restored_s > STATUS_RESTORE_HOLD_S) {
		*pt = st->keep->targets[--st->keep->n_targets];
		pt = NULL;
	}
	if (pt)
		*out = pt->t.j;
	pthread_mutex_unlock(&st->mu);
	return pt != NULL;
}

bool status_restore_ring(struct status *st, struct status_series *ss)
{
	struct status_keep *p;
	bool taken = false;

	pthread_mutex_lock(&st->mu);
	p = st->keep;
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
			ss->shape = (enum status_shape)e->s.shape;
			ss->v.tally = e->s.tally;
			status_tally_age(&ss->v.tally, wall_s() - e->saved_s);
		}
		*e = p->series[--p->n_series];
		break;
	}
	pthread_mutex_unlock(&st->mu);
	return taken;
}

void status_restore_done(struct status *st, const char *target)
{
	struct pending_target *pt;

	pthread_mutex_lock(&st->mu);
	pt = find_target(st, target);
	if (pt)
		*pt = st->keep->targets[--st->keep->n_targets];
	pthread_mutex_unlock(&st->mu);
}

/* ---------------------------------------------------------------- what targets are */

/* The known target @name (under the mutex, or the tick's), or NULL. */
static struct known_target *find_known(const struct status_keep *k, const char *name)
{
	for (unsigned i = 0; k && i < k->n_known; i++)
		if (strcmp(k->known[i].name, name) == 0)
			return &k->known[i];
	return NULL;
}

void status_keep_note(struct status *st, const struct status_op *o)
{
	struct known_target *kt = find_known(st->keep, o->target);
	struct status_keep *k;

	/* The tick's only, and it alone adds: unchanged is read without the lock. */
	if (!o->target_id.known ||
	    (kt && !memcmp(&kt->id, &o->target_id, sizeof(kt->id)) &&
	     !strncmp(kt->path, o->target_path ? o->target_path : "", sizeof(kt->path) - 1)))
		return;
	pthread_mutex_lock(&st->mu);
	k = pending(st);
	if (!kt && k &&
	    mem_grow(&k->known, &k->cap_known, k->n_known + 1, sizeof(*k->known)) == 0) {
		kt = &k->known[k->n_known++];
		snprintf(kt->name, sizeof(kt->name), "%s", o->target);
	}
	if (kt) {
		kt->id = o->target_id;
		snprintf(kt->path, sizeof(kt->path), "%s", o->target_path ? o->target_path : "");
	}
	pthread_mutex_unlock(&st->mu);
}

void status_keep_prune(struct status *st)
{
	struct status_keep *k = st->keep;

	pthread_mutex_lock(&st->mu);
	for (unsigned i = 0; k && i < k->n_known;) {
		bool used = false;

		for (unsigned j = 0; j < st->n_series && !used; j++)
			used = strcmp(st->series[j]->v.target, k->known[i].name) == 0;
		if (used)
			i++;
		else
			k->known[i] = k->known[--k->n_known];
	}
	pthread_mutex_unlock(&st->mu);
}

/* ---------------------------------------------------------------- saving */

/* The series of @st and the rings still pending, into @out (room for them). */
static void collect_series(const struct status *st, double now_s, struct status_saved *out)
{
	const struct status_keep *p = st->keep;

	for (unsigned i = 0; i < st->n_series && out->n_series < STATUS_STATE_MAX_SERIES; i++) {
		const struct status_view *v = &st->series[i]->v;
		struct status_saved_series *e = &out->series[out->n_series++];

		snprintf(e->probe, sizeof(e->probe), "%s", v->probe);
		snprintf(e->target, sizeof(e->target), "%s", v->target);
		e->op = (uint8_t)v->op;
		e->fingerprint = v->fingerprint;
		e->ring = v->ring;
		e->shape = (uint8_t)st->series[i]->shape;
		e->tally = v->tally;
	}
	/* Not taken yet (no tick since the start): kept, aged to now. */
	for (unsigned i = 0; p && i < p->n_series && out->n_series < STATUS_STATE_MAX_SERIES; i++) {
		struct status_saved_series *e = &out->series[out->n_series++];

		*e = p->series[i].s;
		status_ring_age(&e->ring, now_s - p->series[i].saved_s);
		status_tally_age(&e->tally, now_s - p->series[i].saved_s);
	}
}

/* The last request's judgement of target @name, or NULL. */
static const struct status_target *judged(const struct status *st, const char *name)
{
	for (unsigned i = 0; i < st->n_targets; i++)
		if (strcmp(st->targets[i].name, name) == 0)
			return &st->targets[i];
	return NULL;
}

/*
 * Every target whose lane had it open, with what it was then and its
 * judgement: the last request's, else the one restored, else none (starting,
 * which is never restored); then the restored ones no tick has seen yet, as
 * they were restored. Into @out (room for them).
 */
static void collect_targets(const struct status *st, struct status_saved *out)
{
	const struct status_keep *k = st->keep;

	for (unsigned i = 0; k && i < k->n_known && out->n_targets < CFG_MAX_TARGETS; i++) {
		const struct known_target *kt = &k->known[i];
		const struct status_target *t = judged(st, kt->name);
		const struct pending_target *pt = find_target(st, kt->name);
		struct status_saved_target *e = &out->targets[out->n_targets++];

		*e = (struct status_saved_target){.id = kt->id, .j.state = STATUS_STARTING};
		snprintf(e->name, sizeof(e->name), "%s", kt->name);
		snprintf(e->path, sizeof(e->path), "%s", kt->path);
		if (t && (t->state != STATUS_STARTING || !pt)) {
			e->j.state = t->state;
			e->j.since_s = t->since_s;
			snprintf(e->j.reason_code, sizeof(e->j.reason_code), "%s", t->reason_code);
		} else if (pt) {
			e->j = pt->t.j;
		}
	}
	for (unsigned i = 0; k && i < k->n_targets && out->n_targets < CFG_MAX_TARGETS; i++)
		if (!find_known(k, k->targets[i].t.name))
			out->targets[out->n_targets++] = k->targets[i].t;
}

int status_save_collect(struct status *st, double now_s, struct status_saved *out)
{
	size_t n_series, n_targets;
	int r = 0;

	memset(out, 0, sizeof(*out));
	out->written_s = now_s;
	pthread_mutex_lock(&st->mu);
	n_series = st->n_series + (st->keep ? st->keep->n_series : 0);
	n_targets = st->keep ? st->keep->n_known + st->keep->n_targets : 0;
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

void status_tell_minute(struct status *st)
{
	uint64_t due = st->minute_due_ns;

	st->minute_due_ns = 0;
	if (due && st->minute_fn)
		st->minute_fn(st->minute_arg, due);
}

void status_on_minute(struct status *st, void (*fn)(void *arg, uint64_t tick_ns), void *arg)
{
	st->minute_fn = fn;
	st->minute_arg = arg;
}
