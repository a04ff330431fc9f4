/* SPDX-License-Identifier: MIT */
/*
 * status_int — what the files of daemon/status share; not used elsewhere.
 */
#ifndef IOPULSE_STATUS_INT_H
#define IOPULSE_STATUS_INT_H

#include "daemon/status/status.h"

/* The index of the series of @probe's @op on @target, or -1 (the caller holds
 * the mutex, or is the tick: the only one to change the array). */
int status_find_series(const struct status *st, const char *probe, const char *target,
		       enum io_op op);

#endif
