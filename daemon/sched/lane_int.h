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

/* The probe whose I/O is in flight (or whose run opens or checks the target)
 * and since when (eng_now_ns()) in *@since; NULL when idle. Reads each atomic
 * once, so the probe and its timeout belong together. */
struct lane_probe *lane_inflight(struct lane *l, uint64_t *since);

/* lane_reload.c: the claim of @t's place, shared by its lanes (NULL: out of
 * memory); a stop that
 * wakes the lane's wait for its claim (lane_claim()); the lane's claim let go
 * of, at its destruction, after its target is closed (the next lane may go
 * on); and the end of a lane let go of in the kernel, on its own thread as it
 * exits (nobody else frees it). */
struct lane_claim *lane_claim_of(const struct cfg_target *t);
void lane_claim_wake(struct lane *l);
void lane_claim_release(struct lane *l);
void lane_gone(struct lane *l);

/* Lane thread, before its first I/O on the target: take the target's claim,
 * waiting while the lane before it (a reload's) is still in the kernel. 0, or
 * -ECANCELED when the lane stops first. */
int lane_claim(struct lane *l);

/*
 * The gate of what the lane thread writes that is not its own: series, the
 * status page's figures (before_publish), the scheduler's wake-ups. Returns with
 * pub_mu held, true while the lane is not retired; lane_pub_end() unlocks.
 * Never held across I/O.
 */
static inline bool lane_pub_begin(struct lane *l)
{
	pthread_mutex_lock(&l->pub_mu);
	return !atomic_load(&l->retired);
}

static inline void lane_pub_end(struct lane *l)
{
	pthread_mutex_unlock(&l->pub_mu);
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
