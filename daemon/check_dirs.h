/* SPDX-License-Identifier: MIT */
/*
 * check_dirs — `iopulse check`'s look at the directory targets on this machine:
 * each must exist and be writable by the user running the check (the service's
 * user when run as it: runuser -u iopulse -- iopulse check ...).
 */
#ifndef IOPULSE_CHECK_DIRS_H
#define IOPULSE_CHECK_DIRS_H

#include <sysexits.h>

#include "../config/config.h"

#define CHECK_EX_MISSING      EX_NOINPUT   /* 66: a target directory does not exist */
#define CHECK_EX_NOT_WRITABLE EX_CANTCREAT /* 73: one exists but cannot hold a probe file */

/* Prints one "file:line:column: message" line on stderr per directory target
 * that is missing or not writable. Returns EX_OK, CHECK_EX_MISSING when any is
 * missing, else CHECK_EX_NOT_WRITABLE when any is not writable. */
int check_dirs(const struct config *cfg);

#endif
