/* SPDX-License-Identifier: MIT */
/*
 * metrics_int — what the registry (metrics.c) and its snapshots (snapshot.c)
 * share: the registry's structures and the reference counts of what snapshots
 * hold; not used elsewhere. The locking is described atop metrics.c.
 */
#ifndef IOPULSE_METRICS_INT_H
#define IOPULSE_METRICS_INT_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon/metrics/metrics.h"

struct metrics {
	pthread_mutex_t lock;		 /* guards everything below and in families/series */
	struct metric_family **families; /* sorted by name, as snapshots are */
	unsigned n_families;
	size_t cap_families;
	int native_schema;	      /* native view: schema */
	double native_zero_threshold; /* native view: zero bucket width, seconds (> 0) */
};

struct metric_family {
	struct metrics *reg; /* owner */
	char *name;
	char *help;
	enum metric_type type;
	unsigned n_labels;
	char *labels[METRICS_MAX_LABELS];
	unsigned n_bounds;	       /* histogram */
	double *bounds_s;	       /* bounds_ns[] in seconds, stored after it */
	struct metric_series **series; /* sorted by label values */
	unsigned n_series;
	size_t cap_series;
	uint64_t bounds_ns[]; /* histogram: its classic bounds, n_bounds of them */
};

/* Immutable bytes, shared by a cache slot and the snapshots that use them. */
struct metrics_blob {
	unsigned refs; /* under the registry mutex */
	size_t len;
	char data[];
};

/* What a series shares with snapshots: its label values (immutable) and its cache
 * slots (guarded by the registry mutex). */
struct metrics_shared {
	unsigned refs; /* under the registry mutex */
	char *values[METRICS_MAX_LABELS];
	unsigned n_extra;			   /* labels of this series only */
	char *extra[2 * METRICS_MAX_EXTRA_LABELS]; /* their names and values, in pairs */
	struct metrics_blob *slot[METRICS_CACHE_SLOTS];
	uint64_t slot_gen[METRICS_CACHE_SLOTS]; /* the series generation slot[] renders */
};

struct metric_series {
	struct metric_family *family; /* owner */
	struct metrics_shared *shared;
	uint64_t gen;	   /* bumped by every update; starts at 1 */
	double value;	   /* counter / gauge */
	struct hist *hist; /* histogram series */
};

/* Reference counts: called with the registry mutex held (or with no other
 * thread left, in metrics_free()). */
static inline void blob_unref(struct metrics_blob *b)
{
	if (b && --b->refs == 0)
		free(b);
}

static inline void shared_unref(struct metrics_shared *sh)
{
	unsigned i;

	if (!sh || --sh->refs != 0)
		return;
	for (i = 0; i < METRICS_MAX_LABELS; i++)
		free(sh->values[i]);
	for (i = 0; i < 2 * sh->n_extra; i++)
		free(sh->extra[i]);
	for (i = 0; i < METRICS_CACHE_SLOTS; i++)
		blob_unref(sh->slot[i]);
	free(sh);
}

#endif
