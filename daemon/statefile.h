/* SPDX-License-Identifier: MIT */
/*
 * statefile — the daemon's state file across restarts (issue 29; iopulse(8),
 * FILES): read at start, before the lanes, with a deadline, and what still
 * fits the configuration and the targets handed to the status; written by a
 * thread of its own, at most once a minute, when a minute of the status's
 * ticks went by (no wake-up of its own), each write with a deadline so that a
 * hung state directory holds up nothing else. It decides and logs; the format
 * is daemon/status/status_persist.h's, the file's safety
 * daemon/targets/statefile.h's.
 */
#ifndef IOPULSE_DAEMON_STATEFILE_H
#define IOPULSE_DAEMON_STATEFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "daemon/status/status.h"

struct statefile;

/*
 * Start-up, before the lanes start: reads the state file of
 * @cfg->state_directory and restores into @st what matches (logged), then
 * returns the writer, not yet started. NULL when there is no state directory
 * (logged once) or out of memory (logged): the daemon runs without one.
 */
struct statefile *statefile_open(const struct config *cfg, struct status *st);

/* Starts the writer thread. 0, or -errno (logged; nothing is saved then). */
int statefile_start(struct statefile *sf);

/*
 * Shutdown, before @st is freed: from here on the writer touches nothing of
 * the status; it is waited for a little, and a writer still in a hung state
 * directory is left to the end of the process. NULL: nothing.
 */
void statefile_stop(struct statefile *sf);

/*
 * `iopulse check`: says on @out which state file run would read (nothing with
 * @quiet), and unless @file_only what is there, within @timeout_ns: a warning
 * on stderr for a state directory run could not use or a file it would
 * ignore. Never changes the check's exit status: run starts without it.
 */
void statefile_check(const struct config *cfg, uint64_t timeout_ns, bool quiet, bool file_only,
		     FILE *out);

#endif
