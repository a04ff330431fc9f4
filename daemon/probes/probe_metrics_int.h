/* SPDX-License-Identifier: MIT */
/*
 * probe_metrics_int — what the files of the probe and target families
 * (probe_metrics.c, target_metrics.c) share; probe_metrics.h is the interface.
 */
#ifndef IOPULSE_PROBE_METRICS_INT_H
#define IOPULSE_PROBE_METRICS_INT_H

#include <stddef.h>

#include "daemon/probes/probe_metrics.h"

/* The family of row @def, declared if it is not yet: NULL when out of memory. */
static inline struct metric_family *family_of(struct metrics *m, const struct metric_def *def)
{
	struct metric_family *f;

	return metrics_declare(m, def, 1, NULL, 0, &f) == 0 ? f : NULL;
}

/* Removes *@s from the registry (NULL: nothing) and forgets it. */
static inline void drop(struct metric_series **s)
{
	metrics_series_drop(*s);
	*s = NULL;
}

#endif
