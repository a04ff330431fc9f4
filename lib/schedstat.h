/* SPDX-License-Identifier: MIT */
/*
 * schedstat — what the CPU scheduler tells of a thread: the time it spent
 * runnable but not running (its run-queue wait). A leaf: no state, no log;
 * errors come back as -errno.
 *
 * The wait is the second field of /proc/thread-self/schedstat (the kernel's
 * sched_info.run_delay, in nanoseconds): a thread that sleeps in an I/O and is
 * woken by its completion is runnable from then on, and waits in the run queue
 * while CPU-bound neighbours hold every CPU. That wait ends up in any clock read
 * around the call, though the storage had answered. The file is opened once and
 * read with pread(): one system call of about 2 us here (bench/cpu_wait.sh),
 * against ~100 us and more for the I/O it brackets.
 */
#ifndef IOPULSE_SCHEDSTAT_H
#define IOPULSE_SCHEDSTAT_H

#include <stdint.h>

/*
 * Opens <@proc>/thread-self/schedstat (@proc: "/proc", or a test's stand-in)
 * of the CALLING thread: the descriptor stays bound to that thread, whichever
 * thread reads it later. Checks with one read that the kernel keeps the figure.
 * The descriptor (O_CLOEXEC), or -errno: the open's or the read's (-ENOENT: a
 * kernel without CONFIG_SCHED_INFO, or a /proc that hides it), -EINVAL: text
 * that is not three numbers, -ENODATA: the kernel collects no scheduler
 * statistics (it says "0 0 0": not even the one time the thread reading was
 * put on a CPU).
 */
int schedstat_open(const char *proc);

/* The run-queue wait of the thread @fd was opened for, so far, in *@wait_ns:
 * one pread(). 0 or -errno (-EINVAL: unparsable text). */
int schedstat_read(int fd, uint64_t *wait_ns);

/* Parses the text of a schedstat file: "RUN_NS WAIT_NS TIMESLICES\n". 0 with
 * the time on a CPU in *@run_ns, the run-queue wait in *@wait_ns and the times
 * the thread was put on a CPU in *@slices; or -EINVAL. */
int schedstat_parse(const char *text, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *slices);

#endif
