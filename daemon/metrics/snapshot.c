/* SPDX-License-Identifier: MIT */
/*
 * snapshot — consistent snapshots of the registry, plain or cached, and the
 * render cache's store: the locking and the sharing are described atop
 * metrics.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/metrics/metrics_int.h"

/* @own: the family's strings and bounds are the snapshot's own copies (a plain
 * snapshot), not the registry's (a cached one). */
static void snap_family_free(struct snap_family *sf, bool own)
{
	unsigned i, j;

	for (i = 0; i < sf->n_series; i++) {
		struct snap_series *ss = &sf->series[i];

		if (!ss->shared) { /* a plain snapshot's own copies */
			for (j = 0; j < METRICS_MAX_LABELS; j++)
				free((char *)ss->values[j]);
			for (j = 0; j < 2 * METRICS_MAX_EXTRA_LABELS; j++)
				free((char *)ss->extra[j]);
		}
		if (ss->cached)
			continue;
		free(ss->cumulative);
		hist_native_free(&ss->native);
	}
	free(sf->series);
	if (!own)
		return;
	for (j = 0; j < METRICS_MAX_LABELS; j++)
		free((char *)sf->labels[j]);
	free((char *)sf->name);
	free((char *)sf->help);
	free((double *)sf->bounds);
}

void metrics_snapshot_free(struct metrics_snapshot *s)
{
	unsigned i, j;

	if (!s)
		return;
	if (s->reg) {
		/* A cached snapshot: its references, in one hold of the mutex. */
		pthread_mutex_lock(&s->reg->lock);
		for (i = 0; i < s->n_families; i++) {
			for (j = 0; j < s->families[i].n_series; j++) {
				struct snap_series *ss = &s->families[i].series[j];

				shared_unref(ss->shared);
				blob_unref(ss->blob);
				ss->blob = NULL;
			}
		}
		pthread_mutex_unlock(&s->reg->lock);
	}
	for (i = 0; i < s->n_families; i++)
		snap_family_free(&s->families[i], !s->reg);
	free(s->families);
	free(s);
}

/* Called with the lock held. With @hcopy, also a copy of the series' histogram in
 * *hcopy (for the native view, computed after the lock is released). */
static int snap_series_copy(const struct metric_family *f, const struct metric_series *s,
			    struct snap_series *ss, struct hist **hcopy, int slot)
{
	unsigned i;

	ss->gen = s->gen;
	if (slot < 0) {
		/* A plain snapshot: copies, no references (it may outlive the registry). */
		for (i = 0; i < f->n_labels; i++) {
			ss->values[i] = strdup(s->shared->values[i]);
			if (!ss->values[i])
				return -ENOMEM;
		}
		for (i = 0; i < 2 * s->shared->n_extra; i++) {
			ss->extra[i] = strdup(s->shared->extra[i]);
			if (!ss->extra[i])
				return -ENOMEM;
		}
	} else {
		ss->shared = s->shared;
		ss->shared->refs++;
		for (i = 0; i < f->n_labels; i++)
			ss->values[i] = s->shared->values[i];
		for (i = 0; i < 2 * s->shared->n_extra; i++)
			ss->extra[i] = s->shared->extra[i];
	}
	ss->n_extra = s->shared->n_extra;
	if (slot >= 0 && s->shared->slot[slot] && s->shared->slot_gen[slot] == s->gen) {
		ss->blob = s->shared->slot[slot];
		ss->blob->refs++;
		ss->cached = ss->blob->data;
		ss->cached_len = ss->blob->len;
		return 0;
	}
	if (f->type != METRIC_HISTOGRAM) {
		ss->value = s->value;
		return 0;
	}
	ss->count = hist_count(s->hist);
	ss->sum = (double)hist_sum_ns(s->hist) / 1e9;
	if (f->n_bounds) {
		ss->cumulative = calloc(f->n_bounds, sizeof(*ss->cumulative));
		if (!ss->cumulative)
			return -ENOMEM;
		hist_cumulative(s->hist, ss->cumulative);
	}
	if (hcopy) {
		*hcopy = hist_new(f->bounds_ns, f->n_bounds);
		if (!*hcopy)
			return -ENOMEM;
		return hist_merge(*hcopy, s->hist);
	}
	return 0;
}

/* A plain snapshot's own copies of @f's name, help, labels and bounds in @sf
 * (which is freed on failure too). 0 or -ENOMEM. */
static int snap_family_strdup(const struct metric_family *f, struct snap_family *sf)
{
	double *bounds;
	unsigned i;

	sf->name = strdup(f->name);
	sf->help = strdup(f->help);
	if (!sf->name || !sf->help)
		return -ENOMEM;
	for (i = 0; i < f->n_labels; i++) {
		sf->labels[i] = strdup(f->labels[i]);
		if (!sf->labels[i])
			return -ENOMEM;
	}
	if (sf->n_bounds) {
		sf->bounds = bounds = calloc(sf->n_bounds, sizeof(*bounds));
		if (!bounds)
			return -ENOMEM;
		memcpy(bounds, f->bounds_s, sf->n_bounds * sizeof(*bounds));
	}
	return 0;
}

/* Called with the lock held; on failure the caller frees @sf. With @native, a
 * histogram family's series get a histogram copy each in *copies (allocated here,
 * n_series entries; the caller frees them). */
static int snap_family_copy(const struct metric_family *f, struct snap_family *sf, bool native,
			    struct hist ***copies, int slot)
{
	unsigned i;
	int r;

	sf->type = f->type;
	sf->n_labels = f->n_labels;
	if (f->type == METRIC_HISTOGRAM)
		sf->n_bounds = f->n_bounds;
	if (slot >= 0) {
		/* A cached snapshot is freed before the registry, and a family's
		 * name, help, labels and bounds never change nor go away before it:
		 * point at them. */
		sf->name = f->name;
		sf->help = f->help;
		for (i = 0; i < f->n_labels; i++)
			sf->labels[i] = f->labels[i];
		sf->bounds = sf->n_bounds ? f->bounds_s : NULL;
	} else if (snap_family_strdup(f, sf) < 0) {
		return -ENOMEM;
	}
	sf->series = calloc(f->n_series, sizeof(*sf->series));
	if (!sf->series)
		return -ENOMEM;
	if (native && f->type == METRIC_HISTOGRAM) {
		*copies = calloc(f->n_series, sizeof(**copies));
		if (!*copies)
			return -ENOMEM;
	}
	for (i = 0; i < f->n_series; i++) {
		/* Count it first so a partial copy is freed too. */
		sf->n_series = i + 1;
		r = snap_series_copy(f, f->series[i], &sf->series[i],
				     *copies ? &(*copies)[i] : NULL, slot);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The native view of every histogram series, from the copies taken under the lock
 * (@copies[i] belongs to snap->families[i]); frees the copies. With @r < 0 (the
 * copy failed) only frees them and returns @r. */
static int snap_native(struct metrics_snapshot *snap, struct hist ***copies, unsigned n_copies,
		       int schema, double zero_threshold, int r)
{
	unsigned i, j;

	for (i = 0; i < n_copies; i++) {
		struct snap_family *sf = &snap->families[i];

		if (!copies[i])
			continue;
		for (j = 0; j < sf->n_series; j++) {
			if (sf->series[j].cached)
				continue; /* not copied: nothing to compute */
			if (r == 0 && copies[i][j])
				r = hist_native(copies[i][j], schema, zero_threshold,
						&sf->series[j].native);
			else if (r == 0)
				r = -ENOMEM; /* a partial copy */
			hist_free(copies[i][j]);
		}
		free(copies[i]);
	}
	free(copies);
	return r;
}

static struct metrics_snapshot *snapshot(struct metrics *m, unsigned flags, int slot)
{
	bool native = flags & METRICS_SNAP_NATIVE;
	struct metrics_snapshot *snap;
	struct hist ***copies = NULL; /* native: per snapshot family, per series */
	double zero_threshold = 0;
	unsigned i, n = 0;
	int r = 0, schema = 0;

	if (!m)
		return NULL;
	snap = calloc(1, sizeof(*snap));
	if (!snap)
		return NULL;
	snap->has_native = native;
	if (slot >= 0)
		snap->reg = m;

	pthread_mutex_lock(&m->lock);
	schema = m->native_schema;
	zero_threshold = m->native_zero_threshold;
	for (i = 0; i < m->n_families; i++)
		if (m->families[i]->n_series)
			n++;
	if (n) {
		snap->families = calloc(n, sizeof(*snap->families));
		if (!snap->families)
			r = -ENOMEM;
		if (native && r == 0) {
			copies = calloc(n, sizeof(*copies));
			if (!copies)
				r = -ENOMEM;
		}
	}
	for (i = 0; r == 0 && i < m->n_families; i++) {
		unsigned k = snap->n_families;

		if (!m->families[i]->n_series)
			continue;
		snap->n_families++;
		r = snap_family_copy(m->families[i], &snap->families[k], native,
				     copies ? &copies[k] : &(struct hist **){NULL}, slot);
	}
	pthread_mutex_unlock(&m->lock);

	/* Before sorting: copies[] is indexed like snap->families[] still. */
	if (copies)
		r = snap_native(snap, copies, snap->n_families, schema, zero_threshold, r);
	if (r < 0) {
		metrics_snapshot_free(snap);
		return NULL;
	}

	/* Families and series are in order already: the registry keeps them sorted. */
	return snap;
}

struct metrics_snapshot *metrics_snapshot_ex(struct metrics *m, unsigned flags)
{
	return snapshot(m, flags, -1);
}

struct metrics_snapshot *metrics_snapshot_cached(struct metrics *m, unsigned flags, unsigned slot)
{
	if (slot >= METRICS_CACHE_SLOTS)
		return NULL;
	return snapshot(m, flags, (int)slot);
}

int metrics_cache_store(struct metrics *m, const struct snap_series *ss, unsigned slot,
			const void *data, size_t len)
{
	struct metrics_blob *b, *old = NULL;
	struct metrics_shared *sh;

	if (!m || !ss || !ss->shared || slot >= METRICS_CACHE_SLOTS || (len && !data))
		return -EINVAL;
	if (ss->cached)
		return 0;
	if (len > SIZE_MAX - sizeof(*b))
		return -ENOMEM;
	b = malloc(sizeof(*b) + len);
	if (!b)
		return -ENOMEM;
	b->refs = 1;
	b->len = len;
	if (len)
		memcpy(b->data, data, len);
	sh = ss->shared;
	pthread_mutex_lock(&m->lock);
	/* Generations only grow: never replace a newer rendering with an older one. */
	if (!sh->slot[slot] || ss->gen >= sh->slot_gen[slot]) {
		old = sh->slot[slot];
		sh->slot[slot] = b;
		sh->slot_gen[slot] = ss->gen;
		b = NULL;
	}
	blob_unref(old); /* snapshots may still hold it */
	pthread_mutex_unlock(&m->lock);
	free(b);
	return 0;
}

struct metrics_snapshot *metrics_snapshot(struct metrics *m)
{
	return metrics_snapshot_ex(m, 0);
}
