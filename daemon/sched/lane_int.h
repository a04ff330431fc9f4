/* SPDX-License-Identifier: MIT */
/*
 * lane_int — what the lane's files share (lane.h is the lane): lane.c, the
 * thread and its queue, lane_run.c, one run, and lane_watch.c, what the
 * scheduler and the scrapes see of a lane; not used elsewhere.
 */
#ifndef IOPULSE_LANE_INT_H
#define IOPULSE_LANE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "daemon/sched/lane.h"

#define LAYOUT_LOG_NS 5000000000ULL /* a layout's progress: a line this often */

/*
 * Log lines about a target or a probe report changes of its state, one line per
 * change, and go through log_state_*() under the key "Target NAME" or "Probe
 * NAME": a target or probe that flaps logs at most LOG_RATELIMIT_BURST changes
 * per LOG_RATELIMIT_INTERVAL_NS, then one summary with the count and the state it
 * was left in.
 */
#define LOG_KEY_MAX (sizeof("Target ") + CFG_NAME_MAX) /* room for any name */

static inline const char *target_key(const struct lane *l, char *buf)
{
	snprintf(buf, LOG_KEY_MAX, "Target %s", l->cfg->name);
	return buf;
}

/* One run of @lp; @retry: a burst held back earlier, tried again (lane_disk_busy()). */
void lane_run_probe(struct lane *l, struct lane_probe *lp, bool retry);

/* Unix time now, for the times a state began: read when a state changes and
 * at scrape time, never per I/O. */
static inline double wall_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline uint64_t earliest(uint64_t a, uint64_t b)
{
	return a && (!b || a < b) ? a : b;
}

/* @at on eng_now_ns()'s clock, which read @now_ns, on CLOCK_MONOTONIC, which
 * read @mono_ns (what timers and timed waits use): as far ahead of it. Where
 * the TSC lags the monotonic clock, arming @at itself would fire early, find
 * nothing due and re-arm in the past: a spin until the TSC caught up. */
static inline uint64_t mono_at(uint64_t at, uint64_t now_ns, uint64_t mono_ns)
{
	return mono_ns + (at > now_ns ? at - now_ns : 0);
}

/* Under the lane mutex: arm watch_fd for @at (eng_mono_ns()), 0 disarms. One
 * system call, no wake-up: only when it changes. */
void lane_arm(struct lane *l, uint64_t at);

#endif
