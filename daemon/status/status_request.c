/* SPDX-License-Identifier: MIT */
/*
 * The requests' side of the status (status.h): the HTTP thread's targets and
 * counters in, readiness and the snapshot the pages format out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "daemon/status/status.h"
#include "daemon/status/status_int.h"

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

void status_set_probe(struct status *st, const char *probe, const char *target, enum io_op op,
		      double runs, double errors, double interval_s,
		      const struct status_burst *burst, uint64_t waited_ns,
		      struct status_regress *out)
{
	struct status_series *ss;
	int i;

	pthread_mutex_lock(&st->mu);
	i = status_find_series(st, probe, target, op);
	ss = i >= 0 ? st->series[i] : NULL;
	if (ss) {
		ss->v.runs = runs;
		ss->v.errors = errors;
		ss->v.interval_s = interval_s;
		ss->v.burst = *burst;
		ss->waited_ns = waited_ns;
		status_regress_update(&ss->v, waited_ns);
	}
	if (out)
		*out = ss ? ss->v.regress : (struct status_regress){0};
	pthread_mutex_unlock(&st->mu);
}

bool status_targets_ready(const struct status_target *t, unsigned n, struct buf *why)
{
	bool ready = true;

	for (unsigned i = 0; i < n; i++) {
		if (t[i].state == STATUS_UP || t[i].state == STATUS_SLOW)
			continue; /* slow is up: measured, only slower than its baseline */
		ready = false;
		if (!why)
			continue;
		/* One line per target: a reason quotes paths, which may hold a newline. */
		esc_buf(why, t[i].name);
		buf_printf(why, ": %s: ", status_state_name(t[i].state));
		esc_buf(why, t[i].reason[0] ? t[i].reason : "no reason known");
		buf_puts(why, "\n");
	}
	return ready;
}

bool status_ready(struct status *st, struct buf *why)
{
	bool ready;

	pthread_mutex_lock(&st->mu);
	ready = status_targets_ready(st->targets, st->n_targets, why);
	pthread_mutex_unlock(&st->mu);
	return ready;
}

int status_snapshot(struct status *st, struct status_snap *snap)
{
	int r = 0;

	memset(snap, 0, sizeof(*snap));
	pthread_mutex_lock(&st->mu);
	snap->targets = malloc((st->n_targets ? st->n_targets : 1) * sizeof(*snap->targets));
	snap->views = malloc((st->n_series ? st->n_series : 1) * sizeof(*snap->views));
	if (!snap->targets || !snap->views) {
		r = -ENOMEM;
	} else {
		/* Before the first status_targets_begin() there is no array. */
		if (st->n_targets)
			memcpy(snap->targets, st->targets, st->n_targets * sizeof(*snap->targets));
		snap->n_targets = st->n_targets;
		for (unsigned i = 0; i < st->n_series; i++)
			snap->views[i] = st->series[i]->v;
		snap->n_views = st->n_series;
	}
	memcpy(snap->source, st->source, sizeof(snap->source));
	snap->reload_ok = st->reload_ok;
	memcpy(snap->reload_error, st->reload_error, sizeof(snap->reload_error));
	snap->reload_wall_s = st->reload_wall_s;
	pthread_mutex_unlock(&st->mu);
	snap->uptime_s = (eng_now_ns() - st->start_ns) / 1e9;
	if (r < 0)
		status_snap_free(snap);
	return r;
}

void status_snap_free(struct status_snap *snap)
{
	free(snap->targets);
	free(snap->views);
	snap->targets = NULL;
	snap->views = NULL;
	snap->n_targets = snap->n_views = 0;
}
