/* SPDX-License-Identifier: MIT */
/*
 * lane_int — what the lane's files share (lane.h is the lane): lane.c, the
 * thread and its queue, and lane_run.c, one run; not used elsewhere.
 */
#ifndef IOPULSE_LANE_INT_H
#define IOPULSE_LANE_INT_H

#include <stdbool.h>
#include <stdio.h>

#include "daemon/sched/lane.h"

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

#endif
