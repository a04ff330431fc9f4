/* SPDX-License-Identifier: MIT */
/*
 * cpu_wait — the time a thread that times probe I/O spent waiting for a CPU
 * (runnable, not running: the kernel's run-queue delay, lib/schedstat.h), so
 * that a probe's latencies are the storage's: a ping's and a verify probe's
 * I/Os net of it (qd1.h), a burst's run with its share (burst_job.c).
 *
 * cpu_wait_setup() turns it on once for the process (the daemon's `run`,
 * `iopulse probe`); from then on each thread opens its own schedstat file at
 * its first cpu_wait_now(), keeps it until it ends (a key's destructor closes
 * it) and reads it with one pread() per call: one descriptor per lane thread,
 * and per extra job thread of a burst during its run. Nothing but
 * cpu_wait_start() logs.
 */
#ifndef IOPULSE_CPU_WAIT_H
#define IOPULSE_CPU_WAIT_H

#include <stdbool.h>
#include <stdint.h>

/* An I/O that waited at least this long for a CPU counts as having waited
 * (iopulse_probe_cpu_waited_ios_total): the kernel counts in nanoseconds, and
 * an I/O whose wake-up found a CPU free counts 0. */
#define CPU_WAIT_MIN_NS 1000ULL

/* A burst run whose jobs spent more than this share of their time waiting for
 * a CPU measured the CPU more than the storage (probe_outcome.cpu_bound). */
#define CPU_WAIT_BOUND_RATIO 0.5

/*
 * From now on, each thread that times probe I/O measures its run-queue wait,
 * when the calling thread finds the figure under @proc ("/proc", or a test's
 * stand-in). 0, or -errno as schedstat_open(): not measured, the latencies
 * stay raw. Before any thread times I/O (a unit test may call it again
 * between runs: every thread then opens its file again).
 */
int cpu_wait_setup(const char *proc);

/* Whether the latencies are net of the CPU wait (cpu_wait_setup() found it). */
bool cpu_wait_measured(void);

/*
 * The calling thread's run-queue wait so far, in *@ns: true; false when it is
 * not measured (not set up, or this thread's file could not be opened or read:
 * its I/O counts whole). A thread's first call after cpu_wait_setup() opens
 * its file. No allocation, lock or log after that: one pread().
 */
bool cpu_wait_now(uint64_t *ns);

/* ---- as the commands start it (cpu_wait_start.c) ---- */

struct metrics;

/*
 * cpu_wait_setup() on /proc (hostload_proc_root(): IOPULSE_PROCFS in tests),
 * before any probe thread starts; said in the log once: a figure missing at
 * warning level; and, with @m (the daemon's registry), what there is at info
 * level and iopulse_cpu_wait_measured. @m NULL (`iopulse probe`): only a
 * missing figure is said. 0 or -ENOMEM.
 */
int cpu_wait_start(struct metrics *m);

#endif
