/* SPDX-License-Identifier: MIT */
/*
 * check_dirs — `iopulse check`'s look at the targets on this machine: each must
 * exist and pass what run checks when it opens it, and a directory must be
 * writable by the user running the check (the service's user when run as it:
 * runuser -u iopulse -- iopulse check ...). Each within a deadline: a target
 * on a hung filesystem is reported stuck, never waited for.
 */
#ifndef IOPULSE_CHECK_DIRS_H
#define IOPULSE_CHECK_DIRS_H

#include <stdint.h>
#include <sysexits.h>

#include "config/config.h"

/* 66: a target does not exist; 73: one exists but run refuses it, or a
 * directory cannot hold a probe file; 75: one did not answer in time */
#define CHECK_EX_MISSING      EX_NOINPUT
#define CHECK_EX_NOT_WRITABLE EX_CANTCREAT
#define CHECK_EX_STUCK	      EX_TEMPFAIL

/*
 * How long a target has to answer by default: a probe's default 'timeout',
 * after which run counts an I/O as timed out, so that check calls stuck what
 * run would. A healthy target answers in milliseconds (a few metadata calls
 * and one 4 KiB read); 10 s also leaves most disks in standby the time to spin
 * up.
 * --timeout takes what 'timeout' takes, CFG_MIN_TIMEOUT_NS to CFG_MAX_TIMEOUT_NS.
 */
#define CHECK_TIMEOUT_DEFAULT_NS CFG_DEFAULT_TIMEOUT_NS

/* Prints one "file:line:column: message" line on stderr per target that is
 * missing, refused or, after @timeout_ns, stuck; the other targets are checked
 * all the same. Returns EX_OK, CHECK_EX_STUCK when any is stuck, else
 * CHECK_EX_MISSING when any is missing, else the first other problem's:
 * CHECK_EX_NOT_WRITABLE for one refused, EX_OSERR for one not checked (out of
 * memory or threads). */
int check_dirs(const struct config *cfg, uint64_t timeout_ns);

#endif
