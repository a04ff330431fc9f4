/* SPDX-License-Identifier: MIT */
/*
 * scheduler_int — what scheduler.c (setup, status, the loop) and reload.c
 * (SIGHUP: a new configuration swapped in) share; not used elsewhere.
 */
#ifndef IOPULSE_SCHEDULER_INT_H
#define IOPULSE_SCHEDULER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "config/config.h"
#include "daemon/sched/lane.h"
#include "daemon/sched/scheduler.h"
#include "daemon/sched/splay.h"

#define STATUS_LEN 384 /* the counts, and the last error whole (log.c keeps 256 bytes of it) */

struct reload_job;

struct sched {
	const struct config *cfg; /* the schedule in force (a reference, cfg_ref()) */
	char *path;		  /* what a reload re-reads; NULL: the embedded default */
	struct metrics *metrics;
	/* lanes and n_lanes change only on reload (scheduler thread); scrapes read them
	 * under lanes_mu. */
	pthread_mutex_t lanes_mu;
	bool lanes_mu_init;
	struct lane **lanes; /* one per target of cfg, in its order (lane_new()) */
	unsigned n_lanes;
	bool reloading; /* old lanes unpublished, new ones not yet (lanes_mu) */
	struct metric_series *m_reload_ok, *m_reload_time;
	int epoll_fd, timer_fd, signal_fd;
	int wake_fd;		   /* eventfd: a lane's 'up' changed, the log has news */
	bool woken;		   /* wake_fd was read: STATUS= may have changed */
	uint64_t status_due_ns;	   /* a held-back STATUS= change goes out then; 0: none */
	int watchdog_fd;	   /* timerfd at half WATCHDOG_USEC; -1 without a watchdog */
	int reload_fd;		   /* eventfd: the reload in flight has its result */
	uint64_t nofile_room;	   /* descriptors a reload's schedule may need; 0: any */
	uint64_t nofile;	   /* RLIMIT_NOFILE, for the message */
	struct reload_job *reload; /* the reload in flight, or NULL */
	bool reload_again;	   /* SIGHUP during it: reload once more after it */
	void (*hup_fn)(void *);	   /* also called on SIGHUP (sched_on_sighup()) */
	void *hup_data;
	char status[STATUS_LEN]; /* the STATUS= line the service manager has */
	uint64_t status_sent_ns; /* when it was sent */
	struct status *st;	 /* what the status page shows */
	/* Its figures (status_catch_up()), taken on whichever thread comes first:
	 * tick_mu serialises the ticks, status_next_ns is when the next one is due. */
	pthread_mutex_t tick_mu;
	bool tick_mu_init;
	_Atomic uint64_t status_next_ns;
	struct status_op *tick_ops; /* (tick_mu) the lanes' probe ops, copied for the ticks */
	size_t tick_ops_cap;
	char host_id[SPLAY_HOST_ID_MAX]; /* what the probes' phases derive from (splay.h) */
};

/* scheduler.c */
/* 0, or -EINVAL (logged) when two targets of @cfg are one directory, file or
 * device; -ENOMEM. */
int sched_check_distinct_targets(const struct config *cfg);
/* Free the lanes of @lanes[0..n) that are there (NULL: none) and the array. */
void sched_free_lanes(struct lane **lanes, unsigned n);
/* Schedule the probes of the lanes not started yet, then start them, each with
 * its watch timer in the loop. */
int sched_start_lanes(struct sched *s);

/* A timerfd or eventfd: one read takes the whole count. */
static inline void drain(int fd)
{
	uint64_t ticks;
	ssize_t r = read(fd, &ticks, sizeof(ticks));

	(void)r; /* nothing to read (a spurious wake-up) is fine too */
}

/* reload.c */
/* iopulse_config_last_reload_successful and _success_timestamp_seconds. 0 or -ENOMEM. */
int reload_series(struct sched *s);
/* What a reload reads, for messages. */
const char *sched_source(const struct sched *s);
/* SIGHUP: start a reload (@again: the one a SIGHUP during the last asked for). */
void reload_start(struct sched *s, bool again);
/* reload_fd: the reload thread is done. 0, or -errno when no schedule runs. */
int reload_finish(struct sched *s);
/* At exit, a reload still in flight: its thread frees @j whenever its read
 * returns, and no longer writes the scheduler's reload_fd. */
void reload_abandon(struct reload_job *j);

#endif
