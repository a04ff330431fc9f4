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

/* status_restore.c: the ring restored for the new series @ss (its probe, target,
 * op and fingerprint set), taken into it and aged to now; whether there was
 * one. The tick calls it, after the series is reset. */
bool status_restore_ring(struct status *st, struct status_series *ss);
/* The tick: what @o's target is (its path and identity, once known), noted
 * for the state file; targets no series measures any more forgotten. */
void status_keep_note(struct status *st, const struct status_op *o);
void status_keep_prune(struct status *st);
/* Frees the state file's share of the status (NULL: nothing). */
void status_keep_free(struct status_keep *k);

#endif
