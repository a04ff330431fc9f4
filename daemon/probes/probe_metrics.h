/* SPDX-License-Identifier: MIT */
/*
 * probe_metrics — the probe and target families, and outcomes turned into
 * their series. Series are made get-or-create, so a reloaded probe that did not
 * change finds its own again.
 */
#ifndef IOPULSE_PROBE_METRICS_H
#define IOPULSE_PROBE_METRICS_H

#include <stdatomic.h>

#include "config/config.h"
#include "daemon/metrics/metrics.h"
#include "daemon/probes/probe.h"

/*
 * The families, one row each (probe_metrics.c): those of every probe (the
 * verify ones included), the last-burst gauges (declared at a burst's first
 * publication) and those of every target. Registration walks them;
 * test_man_metrics compares them with iopulse(8) METRICS. Each table ends
 * with a row whose name is NULL.
 */
extern const struct metric_def probe_metric_defs[];
extern const struct metric_def burst_metric_defs[];
extern const struct metric_def target_metric_defs[];

/* Why a probe waited its turn or was skipped, as the reason label says it: what
 * held the target then. */
enum probe_wait {
	PROBE_WAIT_BUSY,   /* other probes: the storage is slow for the schedule */
	PROBE_WAIT_BURST,  /* a burst, which owns the target for its duration by design */
	PROBE_WAIT_LAYOUT, /* the probe file being laid out (first start, a new file) */
	/* Skipped only, never deferred: other work kept the target's disk busy (a
	 * burst's check before it starts, see lane.h). */
	PROBE_WAIT_DEVICE_BUSY,
	/* Skipped only, pings and bursts that write only: the day's write budget
	 * is spent (a verify probe runs on, checking only). */
	PROBE_WAIT_BUDGET,
	PROBE_WAIT_COUNT,
};

/* The quantiles of the last burst exported as gauges. */
#define PROBE_BURST_QUANTILES 4
/* Of a probe op's baseline and recent latency: p50 and p99. */
#define PROBE_REGRESS_QUANTILES 2
/* The states of a target, as iopulse_target_state's state label says them
 * (NULL-terminated): status_state_name()'s words. */
#define PROBE_TARGET_STATES 5
extern const char *const probe_target_states[PROBE_TARGET_STATES + 1];
/* The longest reason code, with its NUL (target_reason_code(), the lane's). */
#define PROBE_REASON_MAX 16

struct probe_series {
	struct metrics *m;
	const struct cfg_probe *cfg;
	const char *target;
	struct metric_series *latency[IO_OP_COUNT];
	struct metric_series *ios[IO_OP_COUNT];
	struct metric_series *bytes[IO_OP_COUNT];
	struct metric_series *warmup[IO_OP_COUNT]; /* pings with 'warmup_after' only */
	struct metric_series *errors[PROBE_ERR_COUNT];
	struct metric_series *runs, *last_run;
	/* By enum probe_wait; every reason exists for every probe from the start
	 * (deferred: all but device_busy, which never defers a run; budget: a
	 * skipped series for write probes only). */
	struct metric_series *deferred[PROBE_WAIT_COUNT], *skipped[PROBE_WAIT_COUNT];
	/* Runs cut short by the write budget: probes that write and cut their own
	 * runs (PROBE_F_BUDGETED) only. */
	struct metric_series *budget_cut;
	/* Wall time of its runs, and the CPU time stolen from this guest meanwhile. */
	struct metric_series *run_seconds, *steal_seconds;
	/* The time its thread waited for a CPU: per op for a kind that times each
	 * I/O on its own (PROBE_F_NET_LATENCY), and the I/Os that waited; for the
	 * others (a burst) its runs' as a whole, and the last run's share (made
	 * at the first run that measured it). */
	struct metric_series *cpu_wait[IO_OP_COUNT], *cpu_waited[IO_OP_COUNT];
	struct metric_series *burst_cpu_wait, *burst_cpu_ratio;
	/* Runs published with outcome cpu_bound (under the registry's mutex, as
	 * the histograms: the status tick reads both at once and leaves such a
	 * run's I/Os out of what it judges, struct status_op). */
	uint64_t cpu_bound_runs;
	struct metric_series *info, *interval;
	/* Probes that verify data (PROBE_F_VERIFIES) only; every kind from the start. */
	struct metric_series *verify_checked, *verify_mismatches[PROBE_MISMATCH_COUNT];
	/* Last finished burst, created at its first publication (no zeros before). */
	struct metric_series *burst_iops[IO_OP_COUNT], *burst_bw[IO_OP_COUNT];
	struct metric_series *burst_q[IO_OP_COUNT][PROBE_BURST_QUANTILES];
	struct metric_series *burst_max[IO_OP_COUNT];
	/* Made last (release): a reader on another thread (the status page) that
	 * loads it non-NULL (acquire) sees the gauges above made too. */
	_Atomic(struct metric_series *) burst_seconds;
	/* Scrape time: the op against its own baseline (p50, p99), each there only
	 * while it has a value (probe_metrics_regress()). */
	struct metric_series *baseline[IO_OP_COUNT][PROBE_REGRESS_QUANTILES];
	struct metric_series *recent[IO_OP_COUNT][PROBE_REGRESS_QUANTILES];
	struct metric_series *ratio[IO_OP_COUNT];
	struct metric_series *slow_floor[IO_OP_COUNT];
	struct metric_series *slow_io_threshold[IO_OP_COUNT], *slow_io_ratio[IO_OP_COUNT];
	struct metric_series *latency_max[IO_OP_COUNT], *stalls[IO_OP_COUNT];
};

struct target_series {
	struct metrics *m;
	const struct cfg_target *cfg;
	struct metric_series *up, *inflight, *layout, *layout_failures;
	struct metric_series *io_seconds, *written, *written_today; /* what the probes cost */
	struct metric_series *duty;
	struct metric_series *info; /* iopulse_target_info, saying desc */
	/* Scrape time: its state (one series per probe_target_states[]), since
	 * when, why (one series, saying reason_code), how it is judged. */
	struct metric_series *state[PROBE_TARGET_STATES], *since;
	struct metric_series *reason;
	char reason_code[PROBE_REASON_MAX];
	struct metric_series *slow_factor, *slow_floor;
	/* The target's disk as last measured before a burst; made at the first
	 * measurement (none on a target without a block device). */
	struct metric_series *dev_util, *dev_queue;
	struct target_desc desc;
};

/* The series of probe @p on target @target (both outlive @s), @engine the one
 * it runs on ("auto" resolved; the configured name when it could not be). 0 or
 * -ENOMEM. */
int probe_metrics_init(struct probe_series *s, struct metrics *m, const struct config *cfg,
		       const struct cfg_probe *p, const char *target, const char *engine);
/* A run started at Unix time @wall_s. */
void probe_metrics_run(struct probe_series *s, double wall_s);
void probe_metrics_error(struct probe_series *s, enum probe_err reason);
void probe_metrics_deferred(struct probe_series *s, enum probe_wait reason);
void probe_metrics_skipped(struct probe_series *s, enum probe_wait reason);
/* A run that took @run_s seconds (wall) while @steal_s seconds of CPU were stolen. */
void probe_metrics_window(struct probe_series *s, double run_s, double steal_s);
/* One run's outcome: histograms, counters and burst gauges move together. */
void probe_metrics_publish(struct probe_series *s, const struct probe_outcome *o);
/* Removes the series from the registry (a removed or changed probe). */
void probe_metrics_drop(struct probe_series *s);
/*
 * Scrape time: op @op (enum io_op) against its baseline: the baseline and the
 * recent latency, p50 and p99 in ns (NULL: none), and the recent p50 over the
 * baseline's (<= 0: none). What has no value has no series (made and dropped
 * here): never a NaN, never a 0 that reads as a latency. 0 or -ENOMEM (then
 * some are missing until the next call).
 */
struct probe_regress {
	const uint64_t *baseline_ns, *recent_ns; /* p50, p99 in ns; NULL: none */
	double ratio;				 /* recent p50 / baseline p50; <= 0: none */
	uint64_t floor_ns;			 /* the op's floor (with a baseline) */
	/* Over the last 5 minutes: the slow-I/O threshold and the share of I/Os
	 * over it (have_tail: a baseline and I/Os), the longest I/O (have_max),
	 * the stalls (with a baseline). */
	bool have_tail;
	uint64_t threshold_ns;
	double slow_io_ratio;
	bool have_max;
	uint64_t max_ns;
	unsigned stalls;
};
int probe_metrics_regress(struct probe_series *s, int op, const struct probe_regress *g);
/* Removes those series (a reload: the probe's next lane makes its own). */
void probe_metrics_regress_drop(struct probe_series *s);

/* The series of target @t (outlives @s); its info series says nothing is known
 * of what it is on yet. 0 or -ENOMEM. */
int probe_metrics_target_init(struct target_series *s, struct metrics *m,
			      const struct cfg_target *t);
/* iopulse_target_info says @d from now on: when it differs from what it said, the
 * series is replaced (one per target at any time). 0 or -ENOMEM (then there is
 * none until the next call). The caller serialises calls with the drops. */
int probe_metrics_target_info(struct target_series *s, const struct target_desc *d);
/* Removes the series each lane of the target makes its own (a reload: the next
 * lane makes them anew): iopulse_target_info and iopulse_target_reason_info. */
void probe_metrics_target_info_drop(struct target_series *s);
/*
 * Scrape time: the target is in @state (one of probe_target_states[]: its
 * series 1, the others 0) since Unix time @since_s, for the bounded reason
 * @reason (at most PROBE_REASON_MAX - 1 bytes): its one reason series is
 * replaced when that changes. 0 or -ENOMEM (then there is no reason series
 * until the next call).
 */
int probe_metrics_target_state(struct target_series *s, const char *state, double since_s,
			       const char *reason);
/* How the target's figures are judged, as @t says: its slow_factor and
 * slow_floor gauges (a reload may change them on a kept lane; no floor gauge
 * with slow_floor auto). 0 or -ENOMEM (then the floor gauge is missing). */
int probe_metrics_target_judge(struct target_series *s, const struct cfg_target *t);
/* Scrape time: up (0/1), age of the I/O in flight, layout progress (0 to 1). */
void probe_metrics_target_set(struct target_series *s, bool up, double inflight_s,
			      double layout_ratio);
void probe_metrics_layout_failed(struct target_series *s);
/* The target's disk before a burst: utilisation (0 to 1) and average queue depth.
 * 0 or -ENOMEM. The caller serialises calls with the drops. */
int probe_metrics_target_device(struct target_series *s, double utilization, double queue_depth);
/* A run on the target kept it busy @busy_s and wrote @written bytes; the
 * day's writes are @written_today. */
void probe_metrics_target_spent(struct target_series *s, double busy_s, uint64_t written,
				uint64_t written_today);
/* Scrape time: the measured duty cycle (0 to 1). */
void probe_metrics_target_duty(struct target_series *s, double ratio);
void probe_metrics_target_drop(struct target_series *s);

#endif
