/* SPDX-License-Identifier: MIT */
/*
 * check_dirs — `iopulse check`'s look at the targets on this machine: each must
 * exist and pass what run checks when it opens it, and a directory must be
 * writable by the user running the check (the service's user when run as it:
 * runuser -u iopulse -- iopulse check ...).
 */
#ifndef IOPULSE_CHECK_DIRS_H
#define IOPULSE_CHECK_DIRS_H

#include <sysexits.h>

#include "config/config.h"

/* 66: a target does not exist; 73: one exists but run refuses it, or a
 * directory cannot hold a probe file */
#define CHECK_EX_MISSING      EX_NOINPUT
#define CHECK_EX_NOT_WRITABLE EX_CANTCREAT

/* Prints one "file:line:column: message" line on stderr per target that is
 * missing or refused. Returns EX_OK, CHECK_EX_MISSING when any is missing, else
 * CHECK_EX_NOT_WRITABLE when any is refused (EX_OSERR out of memory). */
int check_dirs(const struct config *cfg);

#endif
