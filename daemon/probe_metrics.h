/* SPDX-License-Identifier: MIT */
/*
 * probe_metrics — the probe and target families, and outcomes turned into
 * their series. Series are made get-or-create, so a reloaded probe that did not
 * change finds its own again.
 */
#ifndef IOPULSE_PROBE_METRICS_H
#define IOPULSE_PROBE_METRICS_H

#include "../config/config.h"
#include "metrics.h"
#include "probe.h"

/* The quantiles of the last burst exported as gauges. */
#define PROBE_BURST_QUANTILES 4

struct probe_series {
	struct metrics *m;
	const struct cfg_probe *cfg;
	const char *target;
	struct metric_series *latency[IO_OP_COUNT];
	struct metric_series *ios[IO_OP_COUNT];
	struct metric_series *bytes[IO_OP_COUNT];
	struct metric_series *errors[PROBE_ERR_COUNT];
	struct metric_series *runs, *last_run, *deferred, *skipped;
	/* Last finished burst, created at its first publication (no zeros before). */
	struct metric_series *burst_iops[IO_OP_COUNT], *burst_bw[IO_OP_COUNT];
	struct metric_series *burst_q[IO_OP_COUNT][PROBE_BURST_QUANTILES];
	struct metric_series *burst_max[IO_OP_COUNT];
	struct metric_series *burst_seconds;
};

struct target_series {
	struct metric_series *up, *inflight, *layout, *layout_failures;
};

/* The series of probe @p on target @target (both outlive @s). 0 or -ENOMEM. */
int probe_metrics_init(struct probe_series *s, struct metrics *m, const struct config *cfg,
		       const struct cfg_probe *p, const char *target);
/* A run started at Unix time @wall_s. */
void probe_metrics_run(struct probe_series *s, double wall_s);
void probe_metrics_error(struct probe_series *s, enum probe_err reason);
void probe_metrics_deferred(struct probe_series *s);
void probe_metrics_skipped(struct probe_series *s);
/* One run's outcome: histograms, counters and burst gauges move together. */
void probe_metrics_publish(struct probe_series *s, const struct probe_outcome *o);
/* Removes the series from the registry (a removed or changed probe). */
void probe_metrics_drop(struct probe_series *s);

int probe_metrics_target_init(struct target_series *s, struct metrics *m, const char *target);
/* Scrape time: up (0/1), age of the I/O in flight, layout progress (0 to 1). */
void probe_metrics_target_set(struct target_series *s, bool up, double inflight_s,
			      double layout_ratio);
void probe_metrics_layout_failed(struct target_series *s);
void probe_metrics_target_drop(struct target_series *s);

#endif
