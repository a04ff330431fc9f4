/* SPDX-License-Identifier: MIT */
/*
 * target_int — what the files of daemon/targets/ that implement target.h share;
 * not used elsewhere. Each function is described where it is defined.
 */
#ifndef IOPULSE_TARGET_INT_H
#define IOPULSE_TARGET_INT_H

#include <stdint.h>
#include <sys/types.h>

#include "daemon/targets/target.h"

/* target.c */
__attribute__((format(printf, 3, 4))) int terr(struct target *t, int r, const char *fmt, ...);

/* blockdev.c */
uint64_t device_sysfs_size(dev_t rdev);
int device_in_use(struct target *t, dev_t rdev, const char *name);

#endif
