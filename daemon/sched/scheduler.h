/* SPDX-License-Identifier: MIT */
/*
 * scheduler — timers, lanes, timeouts. It owns when things run, never does I/O.
 *
 * It gives each probe its first due time (splay.h) and starts the lanes; each
 * lane then keeps its probes' due times on CLOCK_MONOTONIC and sleeps until
 * the earliest itself (lane.h). The scheduler's loop does not wake for due
 * runs: it watches one timerfd per lane, which the lane arms while a run goes
 * on (for the next due time, the timeout of the I/O in flight and a periodic
 * look) and which fires only when a run outlasts one of them: then the loop
 * counts what fell due behind the run and a hung I/O. Its own timerfd is armed only for a
 * held-back STATUS= or log summary. The status page's figures are taken when
 * a run publishes or a page is asked for (status.h). Idle, the loop sleeps.
 * A signalfd carries SIGTERM/SIGINT/SIGHUP;
 * an eventfd says the reload thread is done; another, written by the lanes
 * (a target up or down) and the log (an error, a line suppressed), brings news
 * for STATUS= and the log's summaries; a watchdog timerfd feeds systemd's
 * watchdog. All of it is one epoll loop on the main thread. Timing is
 * fixed-rate: next = previous + interval; after a stall (suspend, overload)
 * missed slots are dropped, keeping the phase.
 */
#ifndef IOPULSE_SCHEDULER_H
#define IOPULSE_SCHEDULER_H

#include <stdint.h>

#include "config/config.h"
#include "daemon/metrics/metrics.h"

/* The reload's families (iopulse(8) METRICS), NULL-terminated. */
extern const struct metric_def reload_metric_defs[];

struct sched;

/* Lanes and series for @cfg (the scheduler and its lanes take references).
 * NULL on failure with *err set to -errno. Signals SIGTERM, SIGINT, SIGHUP must
 * already be blocked in every thread (main does it before creating any). */
struct sched *sched_new(const struct config *cfg, struct metrics *m, int *err);

/* What SIGHUP re-reads: the file @path (copied), or with NULL the embedded
 * default. 0 or -ENOMEM. */
int sched_set_config_path(struct sched *s, const char *path);

/* Start the lanes; first runs fall due at once. 0 or -errno. */
int sched_start(struct sched *s);

/* Tell the service manager READY=1 with a STATUS= summary (probes, targets up,
 * the last error logged). The loop then sends STATUS= when the summary changes
 * (at most once a second) and, when the service manager asks for it
 * (WATCHDOG_USEC), WATCHDOG=1 at half its interval. No-op outside a service. */
void sched_notify_ready(struct sched *s);

/*
 * The event loop; returns 0 after SIGTERM/SIGINT, -errno on failure.
 *
 * SIGHUP reloads the configuration: the new file is loaded and checked completely
 * first, on a thread of its own (probes, the watchdog and SIGTERM never wait for
 * it; one reload at a time, a SIGHUP during one asks for one more after it; one
 * still running at SIGTERM is abandoned). RELOADING=1 goes to the service manager
 * when it starts, READY=1 when it is done. A bad file changes nothing (the error
 * is logged with file:line:column and iopulse_config_last_reload_successful goes
 * to 0). A good one is swapped in at once: the lane of a target whose
 * definition and probes did not change is kept as it runs, stuck or not; the
 * others are replaced (lane.h: one left in the kernel is retired, and the
 * target's new lane waits for it). Probes whose definition (and target's) did
 * not change keep their series and counters, changed probes start from zero,
 * removed probes and targets lose their series.
 * 'listen:' and 'buckets:' take a restart (a change is logged and ignored).
 */
int sched_run(struct sched *s);

/* The descriptors a schedule needs (iopulse(8) Descriptors). */
struct sched_fds {
	uint64_t lanes;	 /* its targets': lanes, files, room to open (lane_descriptors()) */
	uint64_t probes; /* what its probes hold (probe_descriptors()) */
};

/* What @cfg's schedule needs, in @out. */
void sched_descriptors(const struct config *cfg, struct sched_fds *out);

/* A reload whose schedule needs more than @room descriptors is refused, with
 * @nofile (the RLIMIT_NOFILE that leaves @room after the daemon's own and what
 * its HTTP connections may hold) in the message. 0 (the default): no check. */
void sched_set_nofile(struct sched *s, uint64_t room, uint64_t nofile);

/* Also call @fn(@userdata) on the scheduler's thread at each SIGHUP (before the
 * configuration reload starts); it must not block. */
void sched_on_sighup(struct sched *s, void (*fn)(void *userdata), void *userdata);

/* Scrape time (HTTP thread): refresh per-target gauges and the status page's
 * live state. Never blocks on I/O. */
void sched_collect(struct sched *s);

/* What the status page shows (the scheduler's; freed with it). */
struct status *sched_status(struct sched *s);

/* Stop lanes: wait until @grace_ns for them, retire those stuck in the kernel
 * (they reach nothing of the scheduler's any more, lane.h). Returns how many
 * retired lanes are still in the kernel (any a reload retired included). */
unsigned sched_stop(struct sched *s, uint64_t grace_ns);

/* Free (after sched_stop()); a retired lane frees itself whenever its I/O
 * returns. NULL is a no-op. */
void sched_free(struct sched *s);

#endif
