/* SPDX-License-Identifier: MIT */
/*
 * probe_metrics — the probe and burst families, declared by the tables below
 * (one row a family, which registration walks), and outcomes turned into their
 * series; the target families are in target_metrics.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/ioprio.h"
#include "daemon/probes/probe_metrics_int.h"

static const char *const error_names[PROBE_ERR_COUNT] = {
	[PROBE_ERR_IO] = "io_error",	 [PROBE_ERR_SHORT] = "short_io",
	[PROBE_ERR_TIMEOUT] = "timeout", [PROBE_ERR_TARGET_DOWN] = "target_down",
	[PROBE_ERR_SETUP] = "setup",
};

static const double burst_quantiles[PROBE_BURST_QUANTILES] = {0.5, 0.9, 0.99, 0.999};
static const char *const burst_percentiles[PROBE_BURST_QUANTILES] = {"50", "90", "99", "99.9"};

static const char *const wait_names[PROBE_WAIT_COUNT] = {
	[PROBE_WAIT_BUSY] = "busy",	[PROBE_WAIT_BURST] = "burst",
	[PROBE_WAIT_LAYOUT] = "layout", [PROBE_WAIT_DEVICE_BUSY] = "device_busy",
	[PROBE_WAIT_BUDGET] = "budget",
};

static const char *const mismatch_names[PROBE_MISMATCH_COUNT] = {
	[PROBE_MISMATCH_WRONG_DATA] = "wrong_data",
	[PROBE_MISMATCH_WRONG_OFFSET] = "wrong_offset",
	[PROBE_MISMATCH_STALE] = "stale",
};

/* ---------------------------------------------------------------- families */

static const char *const pt[] = {"probe", "target", NULL};
static const char *const pto[] = {"probe", "target", "op", NULL};
static const char *const ptr[] = {"probe", "target", "reason", NULL};
static const char *const ptk[] = {"probe", "target", "kind", NULL};
static const char *const ptoe[] = {"probe", "target", "type", "op", "engine", "io_priority", NULL};
/* "quantile" is reserved for summaries; these are plain gauges. */
static const char *const ptoq[] = {"probe", "target", "op", "percentile", NULL};
/* The quantiles a baseline and a recent figure have, as the burst gauges say
 * theirs (ptoq): p50 and p99. */
static const char *const regress_percentiles[PROBE_REGRESS_QUANTILES] = {"50", "99"};

/* The rows of probe_metric_defs[], as iopulse(8) lists them (a page sorts by name). */
enum {
	P_LATENCY,
	P_IOS,
	P_BYTES,
	P_WARMUP,
	P_ERRORS,
	P_RUNS,
	P_LAST_RUN,
	P_DEFERRED,
	P_SKIPPED,
	P_BUDGET_CUT,
	P_RUN_SECONDS,
	P_STEAL_SECONDS,
	P_CPU_WAIT,
	P_CPU_WAITED,
	P_BURST_CPU_WAIT,
	P_INFO,
	P_INTERVAL,
	P_VERIFY_CHECKED,
	P_VERIFY_MISMATCHES,
	P_BASELINE,
	P_RECENT,
	P_RATIO,
	P_SLOW_FLOOR,
	P_SLOW_IO_THRESHOLD,
	P_SLOW_IO_RATIO,
	P_LATENCY_MAX,
	P_STALLS,
	P_COUNT,
};

/* Every probe declares all of them (probe_metrics_init()): a family without a
 * series (no probe with 'warmup_after', none that verifies) is on no page. */
const struct metric_def probe_metric_defs[P_COUNT + 1] = {
	[P_LATENCY] = {"iopulse_probe_latency_seconds", METRIC_HISTOGRAM, pto,
		       "Latency of each probe I/O, by operation: a ping's and a verify "
		       "probe's net of the time its thread waited for a CPU "
		       "(iopulse_probe_cpu_wait_seconds_total) while "
		       "iopulse_cpu_wait_measured is 1."},
	[P_IOS] = {"iopulse_probe_ios_total", METRIC_COUNTER, pto,
		   "I/Os completed without error, by operation."},
	[P_BYTES] = {"iopulse_probe_bytes_total", METRIC_COUNTER, pto,
		     "Bytes transferred by I/Os completed without error."},
	[P_WARMUP] = {"iopulse_probe_warmup_ios_total", METRIC_COUNTER, pto,
		      "Unmeasured warm-up I/Os completed without error, by operation: "
		      "made before a ping whose target had been idle longer than its "
		      "warmup_after, and kept out of the latency histogram."},
	[P_ERRORS] = {"iopulse_probe_errors_total", METRIC_COUNTER, ptr,
		      "Probe failures, by reason."},
	[P_RUNS] = {"iopulse_probe_runs_total", METRIC_COUNTER, pt,
		    "Probe runs started, successful or not."},
	[P_LAST_RUN] = {"iopulse_probe_last_run_timestamp_seconds", METRIC_GAUGE, pt,
			"Unix time the probe last started a run."},
	[P_DEFERRED] = {"iopulse_probe_deferred_total", METRIC_COUNTER, ptr,
			"Runs that fell due while another probe had the target and "
			"waited their turn, by what held it (burst: a burst, which owns "
			"it by design; layout: the probe file being laid out; busy: "
			"other probes)."},
	[P_SKIPPED] = {"iopulse_probe_skipped_total", METRIC_COUNTER, ptr,
		       "Runs not made, by reason (burst: the previous run still waited "
		       "behind a burst, as expected; layout: behind the probe file's "
		       "layout, as expected; busy: it waited behind other probes, or a "
		       "burst's previous run was still going: the storage is slow for the "
		       "schedule; device_busy: a burst held back while other work kept "
		       "the target's disk busy; budget: a ping or burst that writes, once "
		       "the target's max_write_per_day is written)."},
	[P_BUDGET_CUT] = {"iopulse_probe_budget_cut_total", METRIC_COUNTER, pt,
			  "Runs cut short to keep within the target's max_write_per_day: a "
			  "burst that stopped where its writes reached the day's budget, a "
			  "verify probe that checked its blocks and rewrote none."},
	[P_RUN_SECONDS] = {"iopulse_probe_run_seconds_total", METRIC_COUNTER, pt,
			   "Wall time of the probe's runs, from before its first I/O to "
			   "after its last."},
	[P_STEAL_SECONDS] = {"iopulse_probe_cpu_steal_seconds_total", METRIC_COUNTER, pt,
			     "CPU time the hypervisor stole during the probe's runs, per "
			     "CPU (/proc/stat); divided by "
			     "iopulse_probe_run_seconds_total, the share of its run time."},
	[P_CPU_WAIT] = {"iopulse_probe_cpu_wait_seconds_total", METRIC_COUNTER, pto,
			"Time the thread of a ping or a verify probe waited for a CPU "
			"(runnable, not running) during the I/Os counted in "
			"iopulse_probe_ios_total, by operation: taken out of their "
			"latencies, so that the histogram's sum plus this is what a "
			"clock around them read."},
	[P_CPU_WAITED] = {"iopulse_probe_cpu_waited_ios_total", METRIC_COUNTER, pto,
			  "I/Os counted in iopulse_probe_ios_total during which the "
			  "probe's thread waited 1us or more for a CPU, by operation; "
			  "divided by iopulse_probe_ios_total, the share that did."},
	[P_BURST_CPU_WAIT] = {"iopulse_burst_cpu_wait_seconds_total", METRIC_COUNTER, pt,
			      "Time the job threads of a burst's runs waited for a CPU "
			      "(runnable, not running), all jobs together; its latencies "
			      "include it."},
	[P_INFO] = {"iopulse_probe_info", METRIC_GAUGE, ptoe,
		    "Always 1: what the probe is (type ping, burst or verify, its op or rw, "
		    "the engine in use, its io_priority)."},
	[P_INTERVAL] = {"iopulse_probe_interval_seconds", METRIC_GAUGE, pt,
			"Time between two runs of the probe: a ping's interval, a "
			"burst's every."},
	[P_VERIFY_CHECKED] = {"iopulse_verify_blocks_checked_total", METRIC_COUNTER, pt,
			      "Blocks a verify probe read back and checked (blocks of its own "
			      "found in place, whether right or wrong)."},
	[P_VERIFY_MISMATCHES] = {"iopulse_verify_mismatches_total", METRIC_COUNTER, ptk,
				 "Blocks a verify probe found wrong, by kind (wrong_data: the "
				 "checksum fails; wrong_offset: a block written for another "
				 "offset, a misdirected write; stale: an older generation than "
				 "the last one synced, a lost write)."},
	[P_BASELINE] = {"iopulse_probe_latency_baseline_seconds", METRIC_GAUGE, ptoq,
			"The op's usual latency: the weighted median of the last day's "
			"per-minute and per-10-minute quantiles (percentile 50: of the "
			"p50s, 99: of the p99s), slow minutes left out; absent while "
			"the baseline warms up."},
	[P_RECENT] = {"iopulse_probe_latency_recent_seconds", METRIC_GAUGE, ptoq,
		      "The op's latency over the last minute (percentile 50 or 99), at "
		      "least the age of the I/O in flight once the target is stuck; "
		      "absent with no I/O in the last minute on a target not stuck."},
	[P_RATIO] = {"iopulse_probe_latency_ratio", METRIC_GAUGE, pto,
		     "Recent p50 over baseline p50; absent unless both are there. Over the "
		     "target's slow_factor (and the recent p50 over its slow_floor) for "
		     "slow_minutes minutes, the target is slow (reason slow)."},
	[P_SLOW_FLOOR] = {"iopulse_probe_slow_floor_seconds", METRIC_GAUGE, pto,
			  "The op's floor: the latency its recent p50 must be over, besides "
			  "slow_factor times its baseline, for a minute to be slow (the target's "
			  "slow_floor; with auto the baseline p99, at least 100us); absent while "
			  "the baseline warms up."},
	[P_SLOW_IO_THRESHOLD] = {"iopulse_probe_slow_io_threshold_seconds", METRIC_GAUGE, pto,
				 "The op's slow-I/O threshold: its target's tail_factor times "
				 "the baseline p99 (at least the floor); absent while the "
				 "baseline warms up."},
	[P_SLOW_IO_RATIO] = {"iopulse_probe_slow_io_ratio", METRIC_GAUGE, pto,
			     "Share of the op's I/Os of the last 5 minutes over its slow-I/O "
			     "threshold (usually under 0.01: the threshold is over the "
			     "baseline p99); over the target's tail_share (with 100 I/Os in the "
			     "window), the target is slow (reason tail). Absent without a "
			     "baseline or I/O."},
	[P_LATENCY_MAX] = {"iopulse_probe_latency_max_seconds", METRIC_GAUGE, pto,
			   "The op's longest I/O of the last 5 minutes, at least the age of the "
			   "I/O in flight once the target is stuck; absent without I/O."},
	[P_STALLS] = {"iopulse_probe_stalls", METRIC_GAUGE, pto,
		      "I/Os of the op of the last 5 minutes over its target's stall (and over "
		      "its slow-I/O threshold); when they came in 2 or more of those minutes, "
		      "the target is slow (reason stalls). Absent without a baseline."},
	[P_COUNT] = {NULL},
};

/* The rows of burst_metric_defs[]. */
enum {
	B_IOPS,
	B_BANDWIDTH,
	B_LATENCY,
	B_LATENCY_MAX,
	B_DURATION,
	B_CPU_WAIT_RATIO,
	B_COUNT,
};

/* The last-burst gauges: declared when a burst first has something to show. */
const struct metric_def burst_metric_defs[B_COUNT + 1] = {
	[B_IOPS] = {"iopulse_burst_iops", METRIC_GAUGE, pto,
		    "I/Os per second of the last finished burst, by operation."},
	[B_BANDWIDTH] = {"iopulse_burst_bandwidth_bytes", METRIC_GAUGE, pto,
			 "Bytes per second of the last finished burst, by operation."},
	[B_LATENCY] = {"iopulse_burst_latency_seconds", METRIC_GAUGE, ptoq,
		       "Latency quantiles of the last finished burst, by operation."},
	[B_LATENCY_MAX] = {"iopulse_burst_latency_max_seconds", METRIC_GAUGE, pto,
			   "Largest latency of the last finished burst, by operation."},
	[B_DURATION] = {"iopulse_burst_duration_seconds", METRIC_GAUGE, pt,
			"Measured time of the last finished burst (after its ramp)."},
	[B_CPU_WAIT_RATIO] = {"iopulse_burst_cpu_wait_ratio", METRIC_GAUGE, pt,
			      "Share (0 to 1) of the last finished burst's job thread time "
			      "spent waiting for a CPU; over 0.5 the run measured the CPU "
			      "more than the storage and is left out of the baseline. "
			      "Absent while iopulse_cpu_wait_measured is 0."},
	[B_COUNT] = {NULL},
};

/* ---------------------------------------------------------------- probes */

/* Latency, I/Os and bytes of each op the probe issues. */
static int op_series(struct probe_series *s, struct metric_family *const *f, unsigned io_ops)
{
	const char *v[4] = {s->cfg->name, s->target, NULL, NULL};

	for (int op = 0; op < IO_OP_COUNT; op++) {
		if (!(io_ops & 1u << op))
			continue;
		v[2] = io_op_name(op);
		s->latency[op] = metrics_series(f[P_LATENCY], v);
		s->ios[op] = metrics_series(f[P_IOS], v);
		s->bytes[op] = metrics_series(f[P_BYTES], v);
		if (!s->latency[op] || !s->ios[op] || !s->bytes[op])
			return -ENOMEM;
	}
	return 0;
}

/* Warm-up I/Os of each op, for a ping that may make them ('warmup_after'): a
 * series that could only ever say 0 is left out. Pings only, without asking
 * the kind: 'warmup_after' is a ping key, which the configuration refuses on
 * any other probe, so that theirs is always 0. */
static int warmup_series(struct probe_series *s, struct metric_family *const *f, unsigned io_ops)
{
	const char *v[4] = {s->cfg->name, s->target, NULL, NULL};

	if (!s->cfg->warmup_idle_ns)
		return 0;
	for (int op = 0; op < IO_OP_COUNT; op++) {
		if (!(io_ops & 1u << op))
			continue;
		v[2] = io_op_name(op);
		s->warmup[op] = metrics_series(f[P_WARMUP], v);
		if (!s->warmup[op])
			return -ENOMEM;
	}
	return 0;
}

/* What the probe is (type, op, engine, io_priority) and how often it runs. */
static int info_series(struct probe_series *s, struct metric_family *const *f, const char *engine)
{
	const struct probe_ops *ops = probe_ops_of(s->cfg->kind);
	char prio[IOPRIO_TEXT_MAX];
	const char *v[] = {s->cfg->name,
			   s->target,
			   cfg_probe_kind_name(s->cfg->kind),
			   ops->op_name(s->cfg),
			   engine,
			   ioprio_format(s->cfg->io_priority, prio, sizeof(prio)),
			   NULL};

	s->info = metrics_series(f[P_INFO], v);
	v[2] = NULL;
	s->interval = metrics_series(f[P_INTERVAL], v);
	if (!s->info || !s->interval)
		return -ENOMEM;
	metrics_set(s->info, 1);
	metrics_set(s->interval, s->cfg->interval_ns / 1e9);
	return 0;
}

/* Runs that waited their turn (pings) or were not made, by what held the target. */
static int wait_series(struct probe_series *s, struct metric_family *const *f)
{
	const char *v[] = {s->cfg->name, s->target, NULL, NULL};

	for (int w = 0; w < PROBE_WAIT_BUDGET; w++) {
		v[2] = wait_names[w];
		s->skipped[w] = metrics_series(f[P_SKIPPED], v);
		if (w != PROBE_WAIT_DEVICE_BUSY)
			s->deferred[w] = metrics_series(f[P_DEFERRED], v);
		if (!s->skipped[w] || (w != PROBE_WAIT_DEVICE_BUSY && !s->deferred[w]))
			return -ENOMEM;
	}
	/* Nothing waits for the budget, and only writes are skipped for it (a
	 * verify probe goes on checking: budget_series()). */
	if (!cfg_probe_writes(s->cfg) ||
	    probe_ops_of(s->cfg->kind)->flags & PROBE_F_CHECKS_PAST_BUDGET)
		return 0;
	v[2] = wait_names[PROBE_WAIT_BUDGET];
	s->skipped[PROBE_WAIT_BUDGET] = metrics_series(f[P_SKIPPED], v);
	return s->skipped[PROBE_WAIT_BUDGET] ? 0 : -ENOMEM;
}

/* Runs cut short by the budget, for a probe that writes and cuts its own runs
 * (PROBE_F_BUDGETED): a ping never is, it runs whole or not at all. */
static int budget_series(struct probe_series *s, struct metric_family *const *f)
{
	const char *v[] = {s->cfg->name, s->target, NULL};

	if (!cfg_probe_writes(s->cfg) || !(probe_ops_of(s->cfg->kind)->flags & PROBE_F_BUDGETED))
		return 0;
	s->budget_cut = metrics_series(f[P_BUDGET_CUT], v);
	return s->budget_cut ? 0 : -ENOMEM;
}

/* The run windows and the CPU steal in them: steal inflates latency on a VM. */
static int window_series(struct probe_series *s, struct metric_family *const *f)
{
	const char *v[] = {s->cfg->name, s->target, NULL};

	s->run_seconds = metrics_series(f[P_RUN_SECONDS], v);
	s->steal_seconds = metrics_series(f[P_STEAL_SECONDS], v);
	return s->run_seconds && s->steal_seconds ? 0 : -ENOMEM;
}

/* The time its thread waited for a CPU: per op for a probe whose latencies are
 * net of it, as a whole for the others (a burst). */
static int cpu_wait_series(struct probe_series *s, struct metric_family *const *f, unsigned io_ops)
{
	const char *v[4] = {s->cfg->name, s->target, NULL, NULL};

	if (!(probe_ops_of(s->cfg->kind)->flags & PROBE_F_NET_LATENCY)) {
		s->burst_cpu_wait = metrics_series(f[P_BURST_CPU_WAIT], v);
		return s->burst_cpu_wait ? 0 : -ENOMEM;
	}
	for (int op = 0; op < IO_OP_COUNT; op++) {
		if (!(io_ops & 1u << op))
			continue;
		v[2] = io_op_name(op);
		s->cpu_wait[op] = metrics_series(f[P_CPU_WAIT], v);
		s->cpu_waited[op] = metrics_series(f[P_CPU_WAITED], v);
		if (!s->cpu_wait[op] || !s->cpu_waited[op])
			return -ENOMEM;
	}
	return 0;
}

/* Blocks a verifying probe checked and the mismatches it found, by kind. */
static int verify_series(struct probe_series *s, struct metric_family *const *f)
{
	const char *v[] = {s->cfg->name, s->target, NULL, NULL};

	s->verify_checked = metrics_series(f[P_VERIFY_CHECKED], v);
	if (!s->verify_checked)
		return -ENOMEM;
	for (int k = 0; k < PROBE_MISMATCH_COUNT; k++) {
		v[2] = mismatch_names[k];
		s->verify_mismatches[k] = metrics_series(f[P_VERIFY_MISMATCHES], v);
		if (!s->verify_mismatches[k])
			return -ENOMEM;
	}
	return 0;
}

int probe_metrics_init(struct probe_series *s, struct metrics *m, const struct config *cfg,
		       const struct cfg_probe *p, const char *target, const char *engine)
{
	const struct probe_ops *ops = probe_ops_of(p->kind);
	struct metric_family *f[P_COUNT];
	const char *v[4] = {p->name, target, NULL, NULL};
	int r;

	*s = (struct probe_series){.m = m, .cfg = p, .target = target};
	r = metrics_declare(m, probe_metric_defs, P_COUNT, cfg->buckets_ns, cfg->n_buckets, f);
	if (r == 0)
		r = op_series(s, f, ops->io_ops(p));
	if (r == 0)
		r = warmup_series(s, f, ops->io_ops(p));
	if (r == 0)
		r = info_series(s, f, engine);
	if (r == 0)
		r = wait_series(s, f);
	if (r == 0)
		r = budget_series(s, f);
	if (r == 0)
		r = cpu_wait_series(s, f, ops->io_ops(p));
	if (r == 0 && (ops->flags & PROBE_F_VERIFIES))
		r = verify_series(s, f);
	if (r < 0)
		return r;
	for (int e = 0; e < PROBE_ERR_COUNT; e++) {
		v[2] = error_names[e];
		s->errors[e] = metrics_series(f[P_ERRORS], v);
		if (!s->errors[e])
			return -ENOMEM;
	}
	v[2] = NULL;
	s->runs = metrics_series(f[P_RUNS], v);
	s->last_run = metrics_series(f[P_LAST_RUN], v);
	if (!s->runs || !s->last_run)
		return -ENOMEM;
	return window_series(s, f);
}

/* The last-burst gauges, made when a burst first has something to show. */
static int burst_series(struct probe_series *s)
{
	const char *v[5] = {s->cfg->name, s->target, NULL, NULL, NULL};
	unsigned io_ops = probe_ops_of(s->cfg->kind)->io_ops(s->cfg);
	struct metric_family *f[B_COUNT];
	struct metric_series *done;

	if (atomic_load_explicit(&s->burst_seconds, memory_order_relaxed))
		return 0;
	if (metrics_declare(s->m, burst_metric_defs, B_COUNT, NULL, 0, f) < 0)
		return -ENOMEM;
	for (int op = 0; op < IO_OP_COUNT; op++) {
		if (!(io_ops & 1u << op))
			continue;
		v[2] = io_op_name(op);
		s->burst_iops[op] = metrics_series(f[B_IOPS], v);
		s->burst_bw[op] = metrics_series(f[B_BANDWIDTH], v);
		s->burst_max[op] = metrics_series(f[B_LATENCY_MAX], v);
		if (!s->burst_iops[op] || !s->burst_bw[op] || !s->burst_max[op])
			return -ENOMEM;
		for (int i = 0; i < PROBE_BURST_QUANTILES; i++) {
			v[3] = burst_percentiles[i];
			s->burst_q[op][i] = metrics_series(f[B_LATENCY], v);
			if (!s->burst_q[op][i])
				return -ENOMEM;
		}
		v[3] = NULL;
	}
	v[2] = NULL;
	done = metrics_series(f[B_DURATION], v);
	atomic_store_explicit(&s->burst_seconds, done, memory_order_release);
	return done ? 0 : -ENOMEM;
}

/* The last burst's share of CPU wait: made at the first run that measured it,
 * dropped after one that did not (absent rather than a 0 that reads as none).
 * Whether there is one to set. */
static bool burst_ratio_series(struct probe_series *s, const struct probe_outcome *o)
{
	const char *v[] = {s->cfg->name, s->target, NULL};
	struct metric_family *f;

	if (!o->cpu_wait_known || !o->cpu_thread_ns) {
		drop(&s->burst_cpu_ratio);
		return false;
	}
	if (!s->burst_cpu_ratio) {
		f = family_of(s->m, &burst_metric_defs[B_CPU_WAIT_RATIO]);
		s->burst_cpu_ratio = f ? metrics_series(f, v) : NULL;
	}
	return s->burst_cpu_ratio != NULL;
}

void probe_metrics_run(struct probe_series *s, double wall_s)
{
	metrics_add(s->runs, 1);
	metrics_set(s->last_run, wall_s);
}

void probe_metrics_error(struct probe_series *s, enum probe_err reason)
{
	metrics_add(s->errors[reason], 1);
}

void probe_metrics_deferred(struct probe_series *s, enum probe_wait reason)
{
	metrics_add(s->deferred[reason], 1);
}

void probe_metrics_skipped(struct probe_series *s, enum probe_wait reason)
{
	metrics_add(s->skipped[reason], 1);
}

void probe_metrics_window(struct probe_series *s, double run_s, double steal_s)
{
	metrics_lock(s->m);
	metrics_add_locked(s->run_seconds, run_s);
	metrics_add_locked(s->steal_seconds, steal_s);
	metrics_unlock(s->m);
}

/* Under the registry lock: the last-burst gauges of op @op. */
static void burst_gauges_locked(struct probe_series *s, int op, const struct probe_op_outcome *o,
				double secs)
{
	if (!s->burst_iops[op])
		return;
	metrics_set_locked(s->burst_iops[op], secs > 0 ? o->ios / secs : 0);
	metrics_set_locked(s->burst_bw[op], secs > 0 ? o->bytes / secs : 0);
	for (int i = 0; i < PROBE_BURST_QUANTILES; i++)
		metrics_set_locked(s->burst_q[op][i],
				   hist_quantile_ns(o->hist, burst_quantiles[i]) / 1e9);
	metrics_set_locked(s->burst_max[op], hist_max_ns(o->hist) / 1e9);
}

void probe_metrics_publish(struct probe_series *s, const struct probe_outcome *o)
{
	double secs = o->elapsed_ns / 1e9;
	uint64_t errors = 0, shorts = 0;
	bool gauges = o->burst && burst_series(s) == 0;
	bool ratio = gauges && burst_ratio_series(s, o);

	metrics_lock(s->m);
	for (int op = 0; op < IO_OP_COUNT; op++) {
		const struct probe_op_outcome *oo = &o->op[op];

		errors += oo->errors;
		shorts += oo->short_ios;
		if (!s->latency[op])
			continue;
		if (hist_count(oo->hist))
			(void)metrics_merge_hist_locked(s->latency[op], oo->hist);
		metrics_add_locked(s->ios[op], (double)oo->ios);
		metrics_add_locked(s->bytes[op], (double)oo->bytes);
		if (s->warmup[op])
			metrics_add_locked(s->warmup[op], (double)oo->warmup_ios);
		if (s->cpu_wait[op]) {
			metrics_add_locked(s->cpu_wait[op], oo->cpu_wait_ns / 1e9);
			metrics_add_locked(s->cpu_waited[op], (double)oo->waited_ios);
		}
		if (gauges)
			burst_gauges_locked(s, op, oo, secs);
	}
	if (gauges)
		metrics_set_locked(atomic_load_explicit(&s->burst_seconds, memory_order_relaxed),
				   secs);
	if (ratio)
		metrics_set_locked(s->burst_cpu_ratio,
				   (double)o->cpu_wait_ns / (double)o->cpu_thread_ns);
	if (s->burst_cpu_wait)
		metrics_add_locked(s->burst_cpu_wait, o->cpu_wait_ns / 1e9);
	s->cpu_bound_runs += o->cpu_bound;
	metrics_add_locked(s->errors[PROBE_ERR_IO], (double)errors);
	metrics_add_locked(s->errors[PROBE_ERR_SHORT], (double)shorts);
	metrics_add_locked(s->errors[PROBE_ERR_TIMEOUT], (double)o->timeouts);
	if (s->budget_cut && o->budget_cut)
		metrics_add_locked(s->budget_cut, 1);
	if (s->verify_checked) {
		metrics_add_locked(s->verify_checked, (double)o->blocks_checked);
		for (int k = 0; k < PROBE_MISMATCH_COUNT; k++)
			metrics_add_locked(s->verify_mismatches[k], (double)o->mismatches[k]);
	}
	metrics_unlock(s->m);
}

void probe_metrics_drop(struct probe_series *s)
{
	for (int op = 0; op < IO_OP_COUNT; op++) {
		drop(&s->latency[op]);
		drop(&s->ios[op]);
		drop(&s->bytes[op]);
		drop(&s->warmup[op]);
		drop(&s->cpu_wait[op]);
		drop(&s->cpu_waited[op]);
		drop(&s->burst_iops[op]);
		drop(&s->burst_bw[op]);
		drop(&s->burst_max[op]);
		for (int i = 0; i < PROBE_BURST_QUANTILES; i++)
			drop(&s->burst_q[op][i]);
	}
	for (int e = 0; e < PROBE_ERR_COUNT; e++)
		drop(&s->errors[e]);
	drop(&s->runs);
	drop(&s->last_run);
	for (int w = 0; w < PROBE_WAIT_COUNT; w++) {
		drop(&s->deferred[w]);
		drop(&s->skipped[w]);
	}
	drop(&s->budget_cut);
	drop(&s->info);
	drop(&s->interval);
	drop(&s->run_seconds);
	drop(&s->steal_seconds);
	drop(&s->burst_cpu_wait);
	drop(&s->burst_cpu_ratio);
	drop(&s->verify_checked);
	for (int k = 0; k < PROBE_MISMATCH_COUNT; k++)
		drop(&s->verify_mismatches[k]);
	metrics_series_drop(atomic_exchange(&s->burst_seconds, NULL));
	probe_metrics_regress_drop(s);
}

/* Gauge @row of @s with @v (label values: the probe's, op @op, then @q), made
 * when @have, set to @v, or dropped when not: absent rather than a 0 or a NaN
 * that would read as a figure. 0 or -ENOMEM. */
static int regress_gauge(struct probe_series *s, struct metric_series **g, int row, int op,
			 const char *q, bool have, double v)
{
	const char *vals[] = {s->cfg->name, s->target, io_op_name(op), q, NULL};

	if (!have || !(v >= 0 && v < 1e300)) {
		drop(g);
		return 0;
	}
	if (!*g) {
		struct metric_family *f = family_of(s->m, &probe_metric_defs[row]);

		*g = f ? metrics_series(f, vals) : NULL;
		if (!*g)
			return -ENOMEM;
	}
	metrics_set(*g, v);
	return 0;
}

int probe_metrics_regress(struct probe_series *s, int op, const struct probe_regress *g)
{
	int r = regress_gauge(s, &s->ratio[op], P_RATIO, op, NULL, g->ratio > 0, g->ratio);

	for (int i = 0; i < PROBE_REGRESS_QUANTILES; i++) {
		if (regress_gauge(s, &s->baseline[op][i], P_BASELINE, op, regress_percentiles[i],
				  g->baseline_ns != NULL,
				  g->baseline_ns ? g->baseline_ns[i] / 1e9 : 0) < 0)
			r = -ENOMEM;
		if (regress_gauge(s, &s->recent[op][i], P_RECENT, op, regress_percentiles[i],
				  g->recent_ns != NULL,
				  g->recent_ns ? g->recent_ns[i] / 1e9 : 0) < 0)
			r = -ENOMEM;
	}
	if (regress_gauge(s, &s->slow_floor[op], P_SLOW_FLOOR, op, NULL, g->baseline_ns != NULL,
			  g->floor_ns / 1e9) < 0 ||
	    regress_gauge(s, &s->slow_io_threshold[op], P_SLOW_IO_THRESHOLD, op, NULL,
			  g->baseline_ns != NULL, g->threshold_ns / 1e9) < 0 ||
	    regress_gauge(s, &s->slow_io_ratio[op], P_SLOW_IO_RATIO, op, NULL, g->have_tail,
			  g->slow_io_ratio) < 0 ||
	    regress_gauge(s, &s->latency_max[op], P_LATENCY_MAX, op, NULL, g->have_max,
			  g->max_ns / 1e9) < 0 ||
	    regress_gauge(s, &s->stalls[op], P_STALLS, op, NULL, g->baseline_ns != NULL,
			  g->stalls) < 0)
		r = -ENOMEM;
	return r;
}

void probe_metrics_regress_drop(struct probe_series *s)
{
	for (int op = 0; op < IO_OP_COUNT; op++) {
		for (int i = 0; i < PROBE_REGRESS_QUANTILES; i++) {
			drop(&s->baseline[op][i]);
			drop(&s->recent[op][i]);
		}
		drop(&s->ratio[op]);
		drop(&s->slow_floor[op]);
		drop(&s->slow_io_threshold[op]);
		drop(&s->slow_io_ratio[op]);
		drop(&s->latency_max[op]);
		drop(&s->stalls[op]);
	}
}
