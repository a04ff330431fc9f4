/* SPDX-License-Identifier: MIT */
/*
 * lane — one thread per target; the only threads that do I/O.
 *
 * Probes on one target never overlap: the scheduler hands due probes to the
 * target's lane, which runs them one at a time in the order they fell due. A
 * probe that falls due while the lane is busy waits its turn (counted as
 * deferred); one that falls due again before its previous turn came is
 * coalesced (counted as skipped). Both by reason: "burst" when a burst holds the
 * target (expected: it owns the disk for its run), "busy" for anything else (the
 * storage is slow for the schedule). A burst whose target's disk is busy with
 * other work when it falls due is held back (skipped, "device_busy") and tried
 * again after a backoff (hostload.h); pings always run. Each run of a probe
 * that writes keeps within what is left of the target's 'max_write_per_day'
 * (a burst stops where its writes reach it); once that would not hold one more
 * block, write probes are skipped ("budget") until the day is over, but for
 * verify probes, which go on checking their blocks without rewriting them. A
 * lane stuck in the kernel blocks only itself: the scheduler and the HTTP
 * thread read its state from atomics.
 *
 * A reload keeps the lane of a target whose definition and probes did not
 * change, stuck or not. It stops the others; one that stays in the kernel is
 * retired (lane_retire()): from then on nothing it finishes reaches shared
 * state (series, the status page, the scheduler: what it would write goes
 * through a gate, pub_mu, that retiring closes), and whatever it still
 * touches is its own or held by a reference (its configuration, the target's
 * claim); it lets go of everything, the probe file and its lock first, and
 * frees itself when its I/O returns. The right to do I/O on a place (a
 * target's path) is its claim (struct lane_claim, lane_reload.c), one per
 * place and shared by every lane of it: a lane waits for the one before it to
 * let go before it touches the place (meanwhile the target shows stuck, for as
 * long as the old I/O has been in flight), so at most one lane per place is
 * ever in the kernel, whatever the reloads in between.
 *
 * Each lane keeps its probes' due times and sleeps until the earliest itself
 * (one wake-up runs everything due then); the scheduler does not wake for due
 * runs. While a run goes on, the lane keeps a timerfd of its own armed for the
 * earliest of the next due time and its housekeeping (lane_watch()): the
 * scheduler's loop watches it and, when it fires, counts what fell due behind
 * the run and checks for a hung I/O. It fires only while a run goes on: when
 * the run outlasts the next due time, and every check_step_ns (the shortest
 * timeout of its probes, 5 s at most) of a long run, a burst's for one, so that
 * no I/O outlives its timeout unseen. A run that ends sooner pushes it forward,
 * and an idle lane disarms it: short runs that keep to their schedule never
 * wake the scheduler. Its times are on CLOCK_MONOTONIC, the timer's clock,
 * whatever clock the probes read (engines/clock.h).
 */
#ifndef IOPULSE_LANE_H
#define IOPULSE_LANE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "daemon/targets/hostload.h"
#include "daemon/metrics/metrics.h"
#include "daemon/probes/probe.h"
#include "daemon/probes/probe_metrics.h"
#include "daemon/status/status.h"
#include "daemon/targets/target.h"

/* Scrape time: the lane's busy time when a minute's first scrape came
 * (iopulse_target_duty_cycle_ratio, lane_watch.c). */
#define LANE_REASON_MAX 512 /* why a target is down, as the lane keeps it */
#define LANE_DUTY_SLOTS 61  /* an hour of minutes, and the one leaving it */
struct lane_duty_sample {
	uint64_t t_ns;	  /* eng_now_ns() of the scrape; 0: none */
	uint64_t busy_ns; /* lane busy_ns then */
};

struct lane_probe {
	const struct cfg_probe *cfg;
	uint32_t fingerprint; /* cfg_probe_fingerprint(): what its figures are of */
	struct probe probe;
	bool ready;	    /* the probe is set up */
	int init_error;	    /* its error otherwise */
	const char *engine; /* the engine in use (auto resolved) */
	bool queued;	    /* waiting in the lane's queue (lane mutex) */
	uint64_t due_ns;    /* (lane mutex) next due, eng_mono_ns(); 0: not scheduled */
	/* The probe's state as last logged (one line per change, rate-limited per
	 * probe): 0 or the -errno of the first failure of its last run, and what
	 * failed (an op name, or "cannot run on this target"...). */
	int state_error;
	char state_what[384]; /* "" while it runs without errors */
	struct probe_series series;
	/* Scrape time: each op against its baseline, as the last request found. */
	struct status_regress regress[IO_OP_COUNT];
	/* A burst held back while the target's disk is busy (lane_run.c): */
	uint64_t busy_due_ns;	/* lane thread: start of its last regular (not retried) run */
	uint64_t busy_delay_ns; /* lane thread: the last retry delay since then, 0: none */
	uint64_t busy_retry_ns; /* (lane mutex) eng_now_ns() to try again at; 0: none */
};

/* The right to do I/O on one target (lane.h, top); defined in lane.c. */
struct lane_claim;

struct lane {
	const struct config *config; /* what cfg and the probes' cfg point into (cfg_ref()) */
	const struct cfg_target *cfg;
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
	bool joined; /* lane_wait() joined the thread */
	bool let_go; /* (mutex) lane_let_go(): the thread frees the lane as it exits */
	/* The lane thread writes series, and calls before_publish, only under
	 * pub_mu and while not retired: lane_retire() takes it to close the gate
	 * (pub_mu, then mu: retired is also read under mu, by lane_hand()). */
	pthread_mutex_t pub_mu;
	_Atomic bool retired;	  /* left in the kernel by a reload or a stop: frees itself */
	struct lane_claim *claim; /* its place's (a reference) */
	bool claimed;		  /* lane thread: it holds the claim (from its first run on) */
	/* (scheduler's lanes mutex) how the target's figures are judged: its keys,
	 * which a reload applies to a lane it keeps. */
	struct status_judging judge;

	_Atomic uint64_t inflight_ns; /* start of a target check or open, 0 when none */
	_Atomic int running;	      /* index of the probe running, -1 when idle */
	_Atomic bool up;	      /* target open and checked by the last run */
	/* l->target's identity (dev, fs_type) is set, by the lane thread's first
	 * open that pinned it, and stays: stored (release) after it, read
	 * (acquire) by the status before the identity. Not 'up', which a reload
	 * hands over to a lane that has not opened its target yet. */
	_Atomic bool pinned;
	_Atomic bool stopping;		   /* shutdown: bursts and layouts give up */
	_Atomic uint64_t timeout_claimed;  /* submit time of the last I/O counted as timed out */
	_Atomic bool stuck_logged;	   /* scheduler logged "stuck"; the lane logs the end */
	_Atomic uint64_t run_mono_ns;	   /* CLOCK_MONOTONIC: the run in progress began */
	bool down_logged;		   /* lane thread: "is down" logged, "up again" not yet */
	char down_reason[LANE_REASON_MAX]; /* the target's last error while down (lane mutex) */
	char down_code[PROBE_REASON_MAX];  /* its bounded code (target_reason_code(); lane mutex) */
	double down_wall_s;		   /* Unix time it went down, 0 while not (lane mutex) */
	double up_wall_s;		   /* Unix time it last turned up (lane mutex) */
	double start_wall_s;		   /* Unix time the lane (or its first) started */
	/* Scrape time (under the scheduler's lanes mutex), lane_status(): the
	 * target's last judgement (status_judge()). */
	struct status_judgement judgement;
	struct status_judge_op *judge_ops; /* room for each probe op, for the judge */
	/* Lane thread: backing off after a failed probe-file layout (lane_run.c). */
	uint64_t layout_backoff_ns; /* wait after the last failure; 0: none failed since success */
	uint64_t layout_retry_ns;   /* eng_now_ns() before which target_open() is not tried */
	int layout_error;	    /* -errno of the last failed layout */
	/* Lane thread: the daily write budget ('max_write_per_day', lane_run.c). */
	uint64_t budget_day;	/* eng_now_ns() / 24h of the day being counted */
	uint64_t written_today; /* bytes the probes wrote in it */
	bool budget_spent; /* write probes skipped (or only checking) until the next day (logged) */
	_Atomic uint64_t busy_ns; /* time the probes kept the target busy, in all */
	/* Scrape time (under the scheduler's lanes mutex): samples of busy_ns. */
	struct lane_duty_sample duty[LANE_DUTY_SLOTS];

	/* Lane thread: the disks behind the target (found again after each open),
	 * what the log last said about them (lane_run.c), and /proc/stat. */
	struct devbusy devbusy;
	bool devbusy_found;
	int devbusy_logged;
	struct cpusteal steal;

	struct probe_outcome outcome; /* lane thread: the run being published */
	struct target_series series;
	int notify_fd; /* eventfd written when 'up' changes (STATUS=), -1: none; set before start */
	int watch_fd;  /* timerfd the scheduler watches (lane_watch()), -1: none */
	uint64_t watch_at; /* (lane mutex) what it is armed for (eng_mono_ns()); 0: disarmed */
	/* Called by the lane thread just before a run publishes its latencies (the
	 * status page's figures are taken then, status_tick_until()); set before start. */
	void (*before_publish)(void *arg);
	void *before_publish_arg;
	/* Scheduler: */
	uint64_t layout_logged_ns; /* last layout progress line */
	uint64_t check_step_ns;	   /* while busy, look at least this often (lane_watch()) */
};

/* What the lane of a target holds open, for RLIMIT_NOFILE (iopulse(8)
 * Descriptors). */
struct lane_fds {
	unsigned lane;	 /* itself, its target's files, room for the most it opens at once */
	unsigned probes; /* what its probes hold between runs (probe_descriptors()) */
};

/* The descriptors the lane of target @ti in @cfg would need, in @out. */
void lane_descriptors(const struct config *cfg, unsigned ti, struct lane_fds *out);
/* Prepare the lane of target @ti in @cfg and its probes' series. 0 or -errno. */
int lane_init(struct lane *l, const struct config *cfg, unsigned ti, struct metrics *m);
/* Start the thread. 0 or -errno. */
int lane_start(struct lane *l);
/* Hand probe @pi (index into l->probes) to the lane now, whatever its due time
 * (the tests use it: the daemon's lanes keep their own due times, below);
 * never blocks on I/O. A probe that finds the lane busy waits its turn (deferred);
 * one still waiting from its last due time, or a burst due while it runs itself,
 * is skipped (lane_due() does the same for each due time). */
void lane_enqueue(struct lane *l, unsigned pi);
/* Before the thread starts: probe @pi falls due first at @due_ns (eng_mono_ns()),
 * then every interval of it. A probe never scheduled runs only when enqueued. */
void lane_schedule(struct lane *l, unsigned pi, uint64_t due_ns);
/*
 * Hand the lane each probe due at @now_ns (eng_mono_ns()) as lane_enqueue() does,
 * earliest first, and move its due time on by its interval; one that fell behind
 * drops its missed slots and keeps its phase. Whoever notices a due time, the lane
 * thread or the scheduler (lane_watch()), counts it here, once. Returns the next
 * due time of the lane's probes, 0 when none is scheduled.
 */
uint64_t lane_due(struct lane *l, uint64_t now_ns);
/* Ask the thread to finish after the probe it is running. */
void lane_request_stop(struct lane *l);
/* Wait until the thread exited or @deadline_ns (CLOCK_MONOTONIC); true if it did. */
bool lane_wait(struct lane *l, uint64_t deadline_ns);
/* Scheduler: count an I/O in flight longer than its probe's timeout. The lane counts
 * one that completes late itself; whichever sees it first claims it, so each slow
 * I/O is counted exactly once. */
void lane_check_timeout(struct lane *l, uint64_t now_ns);
/*
 * Scheduler, when watch_fd is readable: lane_check_timeout(), lane_log_layout()
 * and lane_due() while a run goes on, then arm watch_fd again for the earliest of
 * the next due time, the timeout of the I/O in flight, the next layout progress
 * line and now + check_step_ns: an I/O that starts after this call cannot time
 * out before that last one, so none outlives its timeout unseen. An idle lane
 * leaves it disarmed (its thread wakes itself for its next due time).
 */
void lane_watch(struct lane *l);
/*
 * A request (HTTP thread, under the scheduler's lanes mutex), in this order,
 * so that the page and /metrics say the same: lane_status_probes(), then
 * lane_status(), then lane_collect_target() with its @t. None blocks on I/O
 * (atomics, and the lane mutex, which no I/O holds).
 *
 * lane_status_probes(): each probe op's counters, last burst and what it waits
 * on into @st, and its figures against its baseline back (lp->regress, and
 * whether one is slow): a probe waits on the target's I/O in flight when it is
 * its own, and every probe of the target once that is stuck (a burst or a
 * layout in progress does not make the others slow).
 */
void lane_status_probes(struct lane *l, struct status *st, uint64_t now_ns);
/* The target's state (slow: up, and a probe op slow at the last
 * lane_status_probes()), its reason and bounded code, and since when: the
 * time it began where known (stuck: its I/O's start plus its timeout; down:
 * when it went down; up: when it came up), else the first request that saw it.
 * @restored (or NULL): the judgement a state file brought back for it, taken
 * as its last one while the lane has judged nothing past starting
 * (status_judge_in). */
void lane_status(struct lane *l, uint64_t now_ns, const struct status_judgement *restored,
		 struct status_target *t);
/* The target's series from @t (lane_status()'s): up, in-flight age, layout
 * progress, duty cycle, state, since and reason; and each probe op's baseline,
 * recent and ratio gauges from lp->regress. */
void lane_collect_target(struct lane *l, uint64_t now_ns, const struct status_target *t);
/* Scrape time without a status page: lane_status(), then lane_collect_target(). */
void lane_collect(struct lane *l, uint64_t now_ns);
/* The status page's ticks: each probe op (at most n_probes * IO_OP_COUNT) into
 * @out, for status_tick_until(); how many. Valid until the lane is destroyed
 * or a reload drops its series. */
unsigned lane_status_ops(const struct lane *l, struct status_op *out);
/* Scheduler: log the progress of a probe-file layout every few seconds. */
void lane_log_layout(struct lane *l, uint64_t now_ns);
/* Reload: remove the series of probe @lp from the registry (a removed or changed
 * probe; a re-created one starts from zero). Its lane's thread must have exited
 * or its lane be retired. */
void lane_drop_probe_series(struct lane_probe *lp);
/* Reload: remove the target's series (target_up, inflight, layout progress and
 * failures) of a removed target. Only scrape time touches them: the caller keeps
 * sched_collect() off the lane first; its thread exited or it is retired. */
void lane_drop_target_series(struct lane *l);
/* Reload: remove what each lane of the target makes its own (every replaced
 * lane's: each new lane has its own): iopulse_target_info,
 * iopulse_target_reason_info and its probes' baseline, recent and ratio gauges.
 * Its thread exited or it is retired. */
void lane_drop_target_info(struct lane *l);

/* What a lane that a reload replaces leaves the target's next lane
 * (lane_let_go()). */
struct lane_handover {
	const struct config *config;  /* what cfg points into (a reference) */
	const struct cfg_target *cfg; /* the old lane's target */
	struct lane_claim *claim;     /* its place's (a reference: it stays the place's) */
	uint64_t timeout_claimed;     /* the I/O in flight already counted as timed out */
	bool stuck_logged;	      /* and logged as stuck */
	/* Its state, for a lane of the same definition (lane_take_over()): */
	bool up;
	uint64_t budget_day, written_today;
	bool budget_spent;
	uint64_t busy_ns;
	struct lane_duty_sample duty[LANE_DUTY_SLOTS];
	double start_wall_s;
	struct status_judgement judgement;
	char down_reason[LANE_REASON_MAX];
	char down_code[PROBE_REASON_MAX];
	double down_wall_s, up_wall_s;
	struct target_desc desc;
};

/* A lane of its own allocation (the scheduler's), lane_init() in it. NULL with
 * -errno in *@err. */
struct lane *lane_new(const struct config *cfg, unsigned ti, struct metrics *m, int *err);
/* lane_destroy() and free a lane of lane_new() that never started or whose
 * thread exited; NULL is a no-op. */
void lane_free(struct lane *l);
/*
 * A lane whose thread did not exit in time after lane_request_stop() (left in
 * the kernel): close its gate. From here on nothing it finishes reaches shared
 * state (series, the status page's figures, the scheduler's wake-ups); the
 * caller may drop its series. Whoever waits for the target's claim learns how
 * long its I/O has been in flight. Scheduler thread; lane_let_go() next.
 */
void lane_retire(struct lane *l);
/*
 * Done with lane @l (of lane_new()), after lane_request_stop() and lane_wait():
 * what it knows of its target into @h (NULL: not wanted), with a reference to
 * its claim (lane_handover_release()). Frees @l now when its thread has exited,
 * and returns false; else @l must be retired (lane_retire()): its thread frees
 * it when its I/O returns, letting go of the probe file and its lock first, then
 * of the claim; returns true. The caller must not touch @l again either way.
 */
bool lane_let_go(struct lane *l, struct lane_handover *h);
/* What lane @l knows of its target into @h, as lane_let_go() hands it over
 * (for a lane not of lane_new(), whose thread exited or that is retired). */
void lane_hand_over(struct lane *l, struct lane_handover *h);
/* Lanes let go of while left in the kernel and not gone yet, process-wide. */
unsigned lane_retired_count(void);
/* Reload: whether new lane @l (not started) is of the same place (directory,
 * file or device path) as the lane @h came from; then it goes on from what was
 * counted and logged of that lane's I/O in flight. (It shares that lane's claim
 * anyway: it touches the place only once that lane has let go of it, showing
 * that lane's I/O in flight meanwhile.) */
bool lane_follow(struct lane *l, const struct lane_handover *h);
/* Reload: new lane @l (not started) of a target of the same definition goes on
 * from @h: the target's health, its state and since when, why it is down,
 * what it is on (until its own first open), the day's write count and the
 * duty cycle's window. */
void lane_take_over(struct lane *l, const struct lane_handover *h);
/* Drop what @h holds: its configuration and claim. */
void lane_handover_release(struct lane_handover *h);
/* Reload: a kept lane judges its figures as @t says (its judgement keys, the
 * only ones by which a kept lane's target may differ): its status ops and its
 * slow_factor and slow_floor gauges. Under the scheduler's lanes mutex. */
void lane_rejudge(struct lane *l, const struct cfg_target *t);
/* Free what lane_init() allocated; the thread must have exited (or never
 * started). It lets go of the target's claim last. */
void lane_destroy(struct lane *l);

#endif
