/* SPDX-License-Identifier: MIT */
/*
 * target_metrics — the target families, declared by the table below (one row
 * a family, which registration walks), and what a lane and a scrape know of a
 * target turned into their series.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/probes/probe_metrics_int.h"

/* ---------------------------------------------------------------- families */

static const char *const t_labels[] = {"target", NULL};
static const char *const t_state[] = {"target", "state", NULL};
static const char *const t_reason[] = {"target", "reason", NULL};

const char *const probe_target_states[PROBE_TARGET_STATES + 1] = {"starting", "up",   "slow",
								  "stuck",    "down", NULL};
static const char *const t_info[] = {"target", "kind",	"path",	  "fstype",
				     "device", "model", "source", NULL};

/* The rows of target_metric_defs[], as iopulse(8) lists them. */
enum {
	T_INFO,
	T_UP,
	T_INFLIGHT,
	T_LAYOUT,
	T_DEVICE_UTILIZATION,
	T_DEVICE_QUEUE,
	T_LAYOUT_FAILURES,
	T_IO_SECONDS,
	T_DUTY,
	T_WRITTEN,
	T_WRITTEN_TODAY,
	T_STATE,
	T_STATE_SINCE,
	T_REASON,
	T_SLOW_FACTOR,
	T_SLOW_FLOOR,
	T_COUNT,
};

/* Every target declares all of them (probe_metrics_target_init()); the info and
 * device series are made later too, and find their families by row. */
const struct metric_def target_metric_defs[T_COUNT + 1] = {
	[T_INFO] = {"iopulse_target_info", METRIC_GAUGE, t_info,
		    "Always 1: what the target is and is on (filesystem type, block "
		    "device and its disk's model, the source of its mount, empty where "
		    "not known), with its configured labels."},
	[T_UP] = {"iopulse_target_up", METRIC_GAUGE, t_labels,
		  "1 if the target is open and checked by its last run and no I/O on "
		  "it is in flight past its timeout; 0 otherwise."},
	[T_INFLIGHT] = {"iopulse_target_inflight_seconds", METRIC_GAUGE, t_labels,
			"Age of the I/O in flight on the target, 0 when idle."},
	[T_LAYOUT] = {"iopulse_target_layout_progress_ratio", METRIC_GAUGE, t_labels,
		      "Progress of the probe-file layout in progress on a directory "
		      "target (0 to 1); 1 when none is in progress."},
	[T_DEVICE_UTILIZATION] = {"iopulse_target_device_utilization_ratio", METRIC_GAUGE, t_labels,
				  "Share of time the target's disk had I/O in flight, as "
				  "last measured before a burst (the busiest disk under it)."},
	[T_DEVICE_QUEUE] = {"iopulse_target_device_queue_depth", METRIC_GAUGE, t_labels,
			    "Average number of requests in flight on the target's "
			    "disk, as last measured before a burst (the busiest disk "
			    "under it)."},
	[T_LAYOUT_FAILURES] = {"iopulse_target_layout_failures_total", METRIC_COUNTER, t_labels,
			       "Probe-file layouts on the target that failed (no room, a "
			       "write error); the next is tried 10s later, doubling up "
			       "to 1h."},
	[T_IO_SECONDS] = {"iopulse_target_io_seconds_total", METRIC_COUNTER, t_labels,
			  "Time the probes kept the target busy: pings' I/O latencies, "
			  "bursts' whole runs; rate() is the measured duty cycle."},
	[T_DUTY] = {"iopulse_target_duty_cycle_ratio", METRIC_GAUGE, t_labels,
		    "Share of the time the probes kept the target busy over the last "
		    "hour (or since the first scrape, when more recent), against its "
		    "max_duty_cycle."},
	[T_WRITTEN] = {"iopulse_target_written_bytes_total", METRIC_COUNTER, t_labels,
		       "Bytes the probes wrote to the target (the probe file's layout "
		       "not included)."},
	[T_WRITTEN_TODAY] = {"iopulse_target_written_today_bytes", METRIC_GAUGE, t_labels,
			     "Bytes the probes wrote to the target in the current day "
			     "(24h of the monotonic clock), against its "
			     "max_write_per_day."},
	[T_STATE] = {"iopulse_target_state", METRIC_GAUGE, t_state,
		     "1 for the target's state (starting, up, slow, stuck or down), 0 for "
		     "the others."},
	[T_STATE_SINCE] = {"iopulse_target_state_since_timestamp_seconds", METRIC_GAUGE, t_labels,
			   "Unix time the target's current state began."},
	[T_REASON] = {"iopulse_target_reason_info", METRIC_GAUGE, t_reason,
		      "Always 1, one series a target: the bounded code of why it is in its "
		      "state (none when up)."},
	[T_SLOW_FACTOR] = {"iopulse_target_slow_factor", METRIC_GAUGE, t_labels,
			   "The target's slow_factor: how many times its baseline a probe "
			   "op's recent latency must be for the target to be slow."},
	[T_SLOW_FLOOR] = {"iopulse_target_slow_floor_seconds", METRIC_GAUGE, t_labels,
			  "The target's slow_floor: the latency a probe op's recent p50 must "
			  "be over, too, for the target to be slow; absent with slow_floor "
			  "auto (each op's baseline p99, at least 100us)."},
	[T_COUNT] = {NULL},
};

/* ---------------------------------------------------------------- targets */

_Static_assert(CFG_MAX_LABELS <= METRICS_MAX_EXTRA_LABELS, "a target's labels must fit");

/* iopulse_target_info for s->desc, with the target's user labels. */
static int target_info_series(struct target_series *s)
{
	const struct cfg_target *t = s->cfg;
	const char *v[] = {t->name,	   cfg_target_kind_name(t->kind),
			   t->path,	   s->desc.fstype,
			   s->desc.device, s->desc.model,
			   s->desc.source, NULL};
	const char *extra[2 * CFG_MAX_LABELS];
	struct metric_family *f;

	f = family_of(s->m, &target_metric_defs[T_INFO]);
	if (!f)
		return -ENOMEM;
	for (unsigned i = 0; i < t->n_labels; i++) {
		extra[2 * i] = t->labels[i].name;
		extra[2 * i + 1] = t->labels[i].value;
	}
	s->info = metrics_series_extra(f, v, extra, t->n_labels);
	if (!s->info)
		return -ENOMEM;
	metrics_set(s->info, 1);
	return 0;
}

int probe_metrics_target_init(struct target_series *s, struct metrics *m,
			      const struct cfg_target *t)
{
	const char *tv[] = {t->name, NULL};
	struct metric_family *f[T_COUNT];

	if (metrics_declare(m, target_metric_defs, T_COUNT, NULL, 0, f) < 0)
		return -ENOMEM;
	s->up = metrics_series(f[T_UP], tv);
	s->inflight = metrics_series(f[T_INFLIGHT], tv);
	s->layout = metrics_series(f[T_LAYOUT], tv);
	s->layout_failures = metrics_series(f[T_LAYOUT_FAILURES], tv);
	/* What the probes cost the target: time busy, bytes written, ever and today. */
	s->io_seconds = metrics_series(f[T_IO_SECONDS], tv);
	s->written = metrics_series(f[T_WRITTEN], tv);
	s->written_today = metrics_series(f[T_WRITTEN_TODAY], tv);
	s->duty = metrics_series(f[T_DUTY], tv);
	/* How it is judged, and in what state it is: every state from the start. */
	s->since = metrics_series(f[T_STATE_SINCE], tv);
	s->slow_factor = metrics_series(f[T_SLOW_FACTOR], tv);
	if (!s->up || !s->inflight || !s->layout || !s->layout_failures || !s->io_seconds ||
	    !s->written || !s->written_today || !s->duty || !s->since || !s->slow_factor)
		return -ENOMEM;
	for (int i = 0; i < PROBE_TARGET_STATES; i++) {
		const char *sv[] = {t->name, probe_target_states[i], NULL};

		s->state[i] = metrics_series(f[T_STATE], sv);
		if (!s->state[i])
			return -ENOMEM;
	}
	s->m = m;
	s->cfg = t;
	s->slow_floor = NULL;
	if (probe_metrics_target_judge(s, t) < 0)
		return -ENOMEM;
	s->reason = NULL;
	s->reason_code[0] = '\0';
	s->dev_util = s->dev_queue = NULL;
	memset(&s->desc, 0, sizeof(s->desc));
	return target_info_series(s);
}

int probe_metrics_target_judge(struct target_series *s, const struct cfg_target *t)
{
	const char *tv[] = {t->name, NULL};
	struct metric_family *f;

	metrics_set(s->slow_factor, t->slow_factor);
	if (t->slow_floor_ns == CFG_SLOW_FLOOR_AUTO) {
		drop(&s->slow_floor);
		return 0;
	}
	if (!s->slow_floor) {
		f = family_of(s->m, &target_metric_defs[T_SLOW_FLOOR]);
		s->slow_floor = f ? metrics_series(f, tv) : NULL;
		if (!s->slow_floor)
			return -ENOMEM;
	}
	metrics_set(s->slow_floor, t->slow_floor_ns / 1e9);
	return 0;
}

void probe_metrics_target_set(struct target_series *s, bool up, double inflight_s,
			      double layout_ratio)
{
	metrics_set(s->up, up ? 1 : 0);
	metrics_set(s->inflight, inflight_s);
	metrics_set(s->layout, layout_ratio);
}

int probe_metrics_target_state(struct target_series *s, const char *state, double since_s,
			       const char *reason)
{
	const char *rv[] = {s->cfg->name, reason, NULL};
	struct metric_family *f;

	metrics_lock(s->m);
	for (int i = 0; i < PROBE_TARGET_STATES; i++)
		metrics_set_locked(s->state[i], !strcmp(state, probe_target_states[i]));
	metrics_set_locked(s->since, since_s);
	metrics_unlock(s->m);
	if (s->reason && !strcmp(s->reason_code, reason))
		return 0;
	/* Replaced, the old one first: never two to join on. */
	drop(&s->reason);
	snprintf(s->reason_code, sizeof(s->reason_code), "%s", reason);
	f = family_of(s->m, &target_metric_defs[T_REASON]);
	s->reason = f ? metrics_series(f, rv) : NULL;
	if (!s->reason)
		return -ENOMEM;
	metrics_set(s->reason, 1);
	return 0;
}

void probe_metrics_layout_failed(struct target_series *s)
{
	metrics_add(s->layout_failures, 1);
}

void probe_metrics_target_duty(struct target_series *s, double ratio)
{
	metrics_set(s->duty, ratio);
}

void probe_metrics_target_spent(struct target_series *s, double busy_s, uint64_t written,
				uint64_t written_today)
{
	metrics_lock(s->m);
	metrics_add_locked(s->io_seconds, busy_s);
	metrics_add_locked(s->written, (double)written);
	metrics_set_locked(s->written_today, (double)written_today);
	metrics_unlock(s->m);
}

int probe_metrics_target_info(struct target_series *s, const struct target_desc *d)
{
	if (s->info && !memcmp(d, &s->desc, sizeof(*d)))
		return 0;
	/* Removed first: a scrape may see none for a moment, never two to join on. */
	drop(&s->info);
	s->desc = *d;
	return target_info_series(s);
}

void probe_metrics_target_info_drop(struct target_series *s)
{
	drop(&s->info);
	drop(&s->reason);
}

int probe_metrics_target_device(struct target_series *s, double utilization, double queue_depth)
{
	const char *tv[] = {s->cfg->name, NULL};

	if (!s->dev_util)
		s->dev_util = metrics_series(
			family_of(s->m, &target_metric_defs[T_DEVICE_UTILIZATION]), tv);
	if (!s->dev_queue)
		s->dev_queue =
			metrics_series(family_of(s->m, &target_metric_defs[T_DEVICE_QUEUE]), tv);
	if (!s->dev_util || !s->dev_queue)
		return -ENOMEM;
	metrics_set(s->dev_util, utilization);
	metrics_set(s->dev_queue, queue_depth);
	return 0;
}

void probe_metrics_target_drop(struct target_series *s)
{
	drop(&s->info);
	drop(&s->dev_util);
	drop(&s->dev_queue);
	drop(&s->up);
	drop(&s->inflight);
	drop(&s->layout);
	drop(&s->layout_failures);
	drop(&s->io_seconds);
	drop(&s->written);
	drop(&s->written_today);
	drop(&s->duty);
	drop(&s->reason);
	drop(&s->since);
	drop(&s->slow_factor);
	drop(&s->slow_floor);
	for (int i = 0; i < PROBE_TARGET_STATES; i++)
		drop(&s->state[i]);
}
