/* SPDX-License-Identifier: MIT */
/*
 * lane — one thread per target; the only threads that do I/O.
 *
 * Probes on one target never overlap: the scheduler hands due probes to the
 * target's lane, which runs them one at a time in the order they fell due. A
 * probe that falls due while the lane is busy waits its turn (counted as
 * deferred); one that falls due again before its previous turn came is
 * coalesced (counted as skipped, reason "busy"). A lane stuck in the kernel
 * blocks only itself: the scheduler and the HTTP thread read its state from
 * atomics.
 */
#ifndef IOPULSE_LANE_H
#define IOPULSE_LANE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../config/config.h"
#include "burst.h"
#include "metrics.h"
#include "probe.h"
#include "target.h"

enum lane_error {
	LANE_ERR_IO,	      /* the I/O returned -errno */
	LANE_ERR_SHORT,	      /* fewer bytes than asked */
	LANE_ERR_TIMEOUT,     /* in flight longer than the probe's timeout */
	LANE_ERR_TARGET_DOWN, /* the target could not be opened or changed under us */
	LANE_ERR_SETUP,	      /* the probe cannot run on this target (engine, sizes) */
	_LANE_ERR_MAX,
};

/* The quantiles of the last burst exported as gauges. */
#define LANE_BURST_QUANTILES 4

struct lane_probe {
	const struct cfg_probe *cfg;
	struct ping ping;	      /* ping probes */
	struct burst *burst;	      /* burst probes */
	bool ready;		      /* the ping or burst is set up */
	int init_error;		      /* its error otherwise */
	const char *engine;	      /* the engine in use (auto resolved) */
	const struct engine_ops *ops; /* bursts: the resolved engine */
	bool queued;		      /* waiting in the lane's queue (lane mutex) */
	/* The probe's state as last logged (one line per change, rate-limited per
	 * probe): 0 or the -errno of the first failure of its last run, and what
	 * failed (an op name, or "cannot run on this target"...). */
	int state_error;
	char state_what[384]; /* "" while it runs without errors */
	struct metric_series *latency[IO_OP_COUNT];
	struct metric_series *ios[IO_OP_COUNT];
	struct metric_series *bytes[IO_OP_COUNT];
	struct metric_series *errors[_LANE_ERR_MAX];
	struct metric_series *runs, *last_run, *deferred, *skipped;
	/* Last finished burst, created at its first publication (no zeros before). */
	struct metric_series *burst_iops[IO_OP_COUNT], *burst_bw[IO_OP_COUNT];
	struct metric_series *burst_q[IO_OP_COUNT][LANE_BURST_QUANTILES];
	struct metric_series *burst_max[IO_OP_COUNT];
	struct metric_series *burst_seconds;
};

struct lane {
	const struct cfg_target *cfg;
	const struct config *config; /* the whole schedule (buckets, for a fresh burst) */
	struct target target;
	struct lane_probe *probes;
	unsigned n_probes;

	pthread_mutex_t mu; /* guards queue, busy, stop, queued flags */
	pthread_cond_t cv;
	unsigned *queue; /* ring of probe indices, capacity n_probes */
	unsigned q_head, q_len;
	bool busy, stop, exited;
	pthread_t thread;
	bool initialised; /* mutex and condition variable exist */
	bool started;

	_Atomic uint64_t inflight_ns;	  /* submit time of the I/O in flight, 0 when idle */
	_Atomic int running;		  /* index of the probe running, -1 when idle */
	_Atomic bool up;		  /* target open and checked by the last run */
	_Atomic bool stopping;		  /* shutdown: bursts and layouts give up */
	_Atomic uint64_t timeout_claimed; /* submit time of the last I/O counted as timed out */
	_Atomic bool stuck_logged;	  /* scheduler logged "stuck"; the lane logs the end */
	bool down_logged;		  /* lane thread: "is down" logged, "up again" not yet */
	char down_reason[512];		  /* lane thread: the target's last error while down */
	/* Lane thread: backing off after a failed probe-file layout (lane.c). */
	uint64_t layout_backoff_ns; /* wait after the last failure; 0: none failed since success */
	uint64_t layout_retry_ns;   /* eng_now_ns() before which target_open() is not tried */
	int layout_error;	    /* -errno of the last failed layout */

	struct metrics *metrics;
	struct metric_series *m_up, *m_inflight, *m_layout, *m_layout_failures;
	uint64_t layout_logged_ns; /* scheduler: last layout progress line */
};

/* Prepare the lane of target @ti in @cfg and its probes' series. 0 or -errno. */
int lane_init(struct lane *l, const struct config *cfg, unsigned ti, struct metrics *m);
/* Start the thread. 0 or -errno. */
int lane_start(struct lane *l);
/* Hand probe @pi (index into l->probes) to the lane; never blocks on I/O. A ping
 * that finds the lane busy waits its turn (deferred); a burst is skipped (a burst
 * late by a whole other probe would measure at the wrong time, and queueing bursts
 * behind each other would hog the disk). */
void lane_enqueue(struct lane *l, unsigned pi);
/* Ask the thread to finish after the probe it is running. */
void lane_request_stop(struct lane *l);
/* Wait until the thread exited or @deadline_ns (CLOCK_MONOTONIC); true if it did. */
bool lane_wait(struct lane *l, uint64_t deadline_ns);
/* Scheduler: count an I/O in flight longer than its probe's timeout. The lane counts
 * one that completes late itself; whichever sees it first claims it, so each slow
 * I/O is counted exactly once. */
void lane_check_timeout(struct lane *l, uint64_t now_ns);
/* Scrape time: refresh target_up, in-flight age and layout progress. */
void lane_collect(struct lane *l, uint64_t now_ns);
/* Scheduler: log the progress of a probe-file layout every few seconds. */
void lane_log_layout(struct lane *l, uint64_t now_ns);
/* Reload: remove the series of probe @lp from the registry (a removed or changed
 * probe; a re-created one starts from zero). Its lane's thread must have exited. */
void lane_drop_probe_series(struct lane_probe *lp);
/* Reload: remove the target's series (target_up, inflight, layout progress and
 * failures) of a removed target. Only scrape time touches them: the caller keeps
 * sched_collect() off the lane first. */
void lane_drop_target_series(struct lane *l);
/* Free what lane_init() allocated; the thread must have exited (or never started). */
void lane_destroy(struct lane *l);

#endif
