/* SPDX-License-Identifier: MIT */
/*
 * ioprio — a probe's 'io_priority': the I/O scheduling class and level of
 * ioprio_set(2), as the configuration writes it and as the lane threads apply it.
 *
 * The value is the kernel's own encoding (IOPRIO_PRIO_VALUE(class, level)), so
 * that 0 is "none": the thread's default, which follows its CPU nice value.
 *
 * Why per thread and not per request: io_uring (sqe->ioprio) and libaio
 * (IOCB_FLAG_IOPRIO) could carry a priority in each request, but the sync engine
 * cannot, and both of them take the submitting thread's priority when the request
 * has none (the kernel's get_current_ioprio() at prep time). Setting the thread's
 * priority around the probe's run therefore covers all three engines with one
 * mechanism, and the engines stay unaware of it.
 */
#ifndef IOPULSE_IOPRIO_H
#define IOPULSE_IOPRIO_H

#include <stddef.h>

#define IOPRIO_TEXT_MAX 16 /* "best-effort:7" and its NUL, with room */

/*
 * "none", "idle", "best-effort:N" or "realtime:N" (N 0 to 7, 0 the highest) into
 * *@out. 0; -ERANGE when N is out of range; -EINVAL for anything else.
 */
int ioprio_parse(const char *s, int *out);

/* @prio as ioprio_parse() reads it, into @buf; returns @buf. */
const char *ioprio_format(int prio, char *buf, size_t len);

/* What a realtime 'io_priority' needs, as every message that refuses one says
 * it: "'io_priority: rt/0' " IOPRIO_RT_NEEDS ", which ...". */
#define IOPRIO_RT_NEEDS "needs CAP_SYS_ADMIN (or CAP_SYS_NICE)"

/* Whether @prio is of the realtime class, which needs CAP_SYS_ADMIN (or, since
 * Linux 5.x, CAP_SYS_NICE) to set. */
int ioprio_is_realtime(int prio);

/* The calling thread's priority (ioprio_get(IOPRIO_WHO_PROCESS, 0)), or -errno. */
int ioprio_thread_get(void);

/* Sets the calling thread's (not the process's) priority. 0 or -errno (-EPERM for
 * realtime without the capability). */
int ioprio_thread_set(int prio);

/*
 * Whether this process may set @prio at all, found by trying it on the calling
 * thread and putting its priority back. 0 or -errno.
 */
int ioprio_check_allowed(int prio);

#endif
