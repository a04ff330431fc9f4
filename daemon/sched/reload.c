/* SPDX-License-Identifier: MIT */
/*
 * reload — SIGHUP (scheduler.h): the new configuration read and checked on a
 * thread of its own, then swapped in on the scheduler's: the old lanes
 * stopped, the series of what changed or went dropped, the new lanes started;
 * and the gauges that say how the last load went.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "engines/engine.h"
#include "daemon/log.h"
#include "daemon/sched/scheduler_int.h"

#define RELOAD_GRACE_NS 500000000ULL /* old lanes get this long to finish on reload */

static void set_reload_gauges(struct sched *s, bool ok)
{
	struct timespec ts;

	metrics_set(s->m_reload_ok, ok ? 1 : 0);
	if (ok && clock_gettime(CLOCK_REALTIME, &ts) == 0)
		metrics_set(s->m_reload_time, ts.tv_sec + ts.tv_nsec / 1e9);
}

/* iopulse_config_last_reload_successful and _success_timestamp_seconds, as
 * Prometheus exports them. */
const struct metric_def reload_metric_defs[] = {
	{"iopulse_config_last_reload_successful", METRIC_GAUGE, NULL,
	 "1 if the last configuration load (start-up or SIGHUP) succeeded, 0 if it failed and "
	 "the previous schedule kept running."},
	{"iopulse_config_last_reload_success_timestamp_seconds", METRIC_GAUGE, NULL,
	 "Unix time of the last successful configuration load (start-up or SIGHUP)."},
	{NULL},
};

int reload_series(struct sched *s)
{
	static const char *const none[] = {NULL};
	struct metric_family *f[2];

	if (metrics_declare(s->metrics, reload_metric_defs, 2, NULL, 0, f) < 0)
		return -ENOMEM;
	s->m_reload_ok = metrics_series(f[0], none);
	s->m_reload_time = metrics_series(f[1], none);
	if (!s->m_reload_ok || !s->m_reload_time)
		return -ENOMEM;
	set_reload_gauges(s, true);
	return 0;
}

/* A count for calloc(), at least 1 (calloc(0) may return NULL). */
static unsigned room(unsigned n)
{
	return n ? n : 1;
}

/* What a reload reads, for messages. */
const char *sched_source(const struct sched *s)
{
	return s->path ? s->path : CFG_EMBEDDED_NAME;
}

/*
 * A reload reads and checks the new file on a thread of its own: reading may take
 * as long as the file's filesystem likes (a hung NFS mount), and checking the
 * targets stats each of them (STAT_WAIT_MS apiece), while this loop must go on
 * running probes, feeding the watchdog and acting on SIGTERM. The thread hands
 * its result back through reload_fd and the swap happens here. One reload is in
 * flight at a time; a SIGHUP meanwhile is remembered and starts one more when it
 * is done. On exit, a reload still in flight is abandoned like a lane stuck in
 * the kernel: its thread frees the job whenever the read returns.
 */
struct reload_job {
	pthread_mutex_t mu;   /* guards everything below */
	unsigned refs;	      /* the scheduler's and the thread's */
	bool abandoned;	      /* the scheduler is gone: event_fd is no longer ours */
	int event_fd;	      /* the scheduler's reload_fd, written once when done */
	uint64_t nofile_room; /* the scheduler's, copied: refused past it */
	uint64_t nofile;
	int r;		      /* 0, or -errno from the load or the target check */
	struct config *cfg;   /* the new configuration when r == 0 */
	struct cfg_error err; /* the load's error, "" when it was the target check */
	char path[];	      /* what to read; "": the embedded default */
};

/* Drop one reference, under j->mu; frees @j (and a result nobody took) with the
 * last. */
static void reload_job_put(struct reload_job *j)
{
	bool last = --j->refs == 0;

	pthread_mutex_unlock(&j->mu);
	if (last) {
		cfg_free(j->cfg);
		pthread_mutex_destroy(&j->mu);
		free(j);
	}
}

/*
 * Whether @nc's schedule fits in the descriptors @j leaves it: the start checked
 * the first one (main.c) and sized the HTTP server's connection limit on what
 * was left, which stays; a reload that needs more would fail target by target
 * ("Too many open files") or starve a scrape. 0, or -EMFILE with the why in @err.
 */
static int check_reload_nofile(const struct reload_job *j, const struct config *nc,
			       struct cfg_error *err)
{
	struct sched_fds f;

	if (!j->nofile_room)
		return 0;
	sched_descriptors(nc, &f);
	if (f.lanes + f.probes <= j->nofile_room)
		return 0;
	snprintf(err->msg, sizeof(err->msg),
		 "%s: RLIMIT_NOFILE is %llu: the new schedule needs %llu descriptors (%llu for "
		 "%u target%s, %llu for %u probe%s), %llu are left to it besides the daemon's "
		 "own and its HTTP connections'; raise it (LimitNOFILE=, ulimit -n) and restart",
		 nc->source, (unsigned long long)j->nofile,
		 (unsigned long long)(f.lanes + f.probes), (unsigned long long)f.lanes,
		 nc->n_targets, nc->n_targets == 1 ? "" : "s", (unsigned long long)f.probes,
		 nc->n_probes, nc->n_probes == 1 ? "" : "s", (unsigned long long)j->nofile_room);
	return -EMFILE;
}

static void *reload_thread(void *arg)
{
	struct reload_job *j = arg;
	struct cfg_error err = {0};
	struct config *nc = NULL;
	uint64_t one = 1;
	int r;

	r = j->path[0] ? cfg_load_file(j->path, &nc, &err) : cfg_load_default(&nc, &err);
	if (r == 0) /* over budget: refused as a bad file is, the message in err */
		r = cfg_check_budget(nc, &err);
	if (r == 0)
		r = sched_check_distinct_targets(nc); /* logs what it refuses */
	if (r == 0)
		r = check_reload_nofile(j, nc, &err);
	if (r < 0) {
		cfg_free(nc);
		nc = NULL;
	}
	pthread_mutex_lock(&j->mu);
	j->r = r;
	j->cfg = nc;
	j->err = err;
	if (!j->abandoned) {
		ssize_t w = write(j->event_fd, &one, sizeof(one));

		(void)w; /* cannot fail: the counter is read after every reload */
	}
	reload_job_put(j);
	return NULL;
}

/* The end of a reload that changed nothing, because of @why: one error line
 * that says why (a bad file's file:line:column included), which is also the last
 * error STATUS= carries, so `systemctl status` shows where the file is wrong. */
static void reload_refused(struct sched *s, const char *why)
{
	set_reload_gauges(s, false);
	status_config(s->st, s->cfg->source, false, why);
	log_error("Configuration reload failed, the running schedule is unchanged: %s", why);
	sched_notify_ready(s);
}

/*
 * SIGHUP: tell the service manager RELOADING=1 and start the reload thread
 * (READY=1 follows when the reload is done, applied or refused); with a reload
 * in flight, only remember to reload again after it. A reload that cannot start
 * is refused like a bad file.
 */
void reload_start(struct sched *s, bool again)
{
	const char *src = sched_source(s);
	size_t n = s->path ? strlen(s->path) + 1 : 1;
	struct reload_job *j;
	struct timespec mono;
	pthread_attr_t attr;
	pthread_t thread;
	int r;

	if (s->reload) {
		s->reload_again = true;
		log_info("Received SIGHUP during a reload: reloading again when it is done");
		return;
	}
	if (again)
		log_info("Reloading the configuration from %s again, for the SIGHUP received "
			 "during the last reload",
			 src);
	else
		log_info("Received SIGHUP, reloading the configuration from %s", src);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
		   (unsigned long long)mono.tv_sec * 1000000ULL +
			   (unsigned long long)mono.tv_nsec / 1000ULL);
	j = calloc(1, sizeof(*j) + n);
	if (!j) {
		log_error("Out of memory");
		reload_refused(s, "out of memory");
		return;
	}
	memcpy(j->path, s->path ? s->path : "", n);
	j->event_fd = s->reload_fd;
	j->nofile_room = s->nofile_room;
	j->nofile = s->nofile;
	j->refs = 2;
	pthread_mutex_init(&j->mu, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = -pthread_create(&thread, &attr, reload_thread, j);
	pthread_attr_destroy(&attr);
	if (r < 0) {
		pthread_mutex_destroy(&j->mu);
		free(j);
		log_error_errno(r, "Failed to start the reload: %m");
		reload_refused(s, "the reload could not start");
		return;
	}
	s->reload = j;
}

/* Settings a reload cannot change: warn, and keep the running ones. */
static void reload_keep_fixed(const struct sched *s, const struct config *oc, struct config *nc)
{
	const char *src = sched_source(s);

	if (strcmp(oc->listen_host, nc->listen_host) != 0 || oc->listen_port != nc->listen_port)
		log_warning("%s: 'listen:' changed; the listener stays where it is until a "
			    "restart, ignoring",
			    src);
	if (oc->n_buckets != nc->n_buckets ||
	    memcmp(oc->buckets_ns, nc->buckets_ns, sizeof(oc->buckets_ns[0]) * oc->n_buckets)) {
		/* Every latency histogram shares them: new bounds need a restart. */
		log_warning("%s: 'buckets:' changed; the histograms keep their buckets until a "
			    "restart, ignoring",
			    src);
		memcpy(nc->buckets_ns, oc->buckets_ns, sizeof(oc->buckets_ns));
		nc->n_buckets = oc->n_buckets;
	}
	if (strcmp(oc->state_directory ? oc->state_directory : "",
		   nc->state_directory ? nc->state_directory : "") != 0)
		log_warning("%s: 'state_directory:' changed; the state file stays where it is "
			    "until a restart, ignoring",
			    src);
}

/* Whether lane @l runs target @ti of @nc as it is: the same definition (its
 * judgement keys aside, lane_rejudge()) and the same probes in the same order.
 * Such a lane is kept, stuck in the kernel or not. */
static bool lane_unchanged(const struct lane *l, const struct config *nc, unsigned ti)
{
	unsigned k = 0;

	if (!cfg_target_same(l->cfg, &nc->targets[ti]))
		return false;
	for (unsigned i = 0; i < nc->n_probes; i++) {
		if (nc->probes[i].target != ti)
			continue;
		if (k == l->n_probes ||
		    !cfg_probe_same(l->config, l->probes[k].cfg, nc, &nc->probes[i]))
			return false;
		k++;
	}
	return k == l->n_probes;
}

/*
 * A reload's plan, made before anything stops: for each target of the new
 * schedule the old lane it keeps (NULL: a new one), and for each old lane
 * whether it is replaced (stopped, its place taken or gone) and what it hands
 * over.
 */
struct reload_plan {
	struct lane **lanes;		/* the new schedule's, in its order */
	bool *replaced;			/* per old lane */
	struct lane_handover *handover; /* per old lane, when replaced */
};

/* The claims and configurations the handovers hold (what lane_follow() did
 * not take). */
static void reload_plan_free_handovers(struct reload_plan *p, unsigned n_old)
{
	for (unsigned li = 0; p->handover && li < n_old; li++)
		lane_handover_release(&p->handover[li]);
}

static void reload_plan_free(struct reload_plan *p, unsigned n_old)
{
	reload_plan_free_handovers(p, n_old);
	free(p->lanes);
	free(p->replaced);
	free(p->handover);
}

static int reload_plan_make(struct reload_plan *p, struct lane **old, unsigned n_old,
			    const struct config *nc)
{
	p->lanes = calloc(room(nc->n_targets), sizeof(*p->lanes));
	p->replaced = calloc(room(n_old), sizeof(*p->replaced));
	p->handover = calloc(room(n_old), sizeof(*p->handover));
	if (!p->lanes || !p->replaced || !p->handover)
		return -ENOMEM;
	for (unsigned li = 0; li < n_old; li++) {
		int ti = cfg_target_index(nc, old[li]->cfg->name);

		if (ti >= 0 && lane_unchanged(old[li], nc, (unsigned)ti))
			p->lanes[ti] = old[li];
		else
			p->replaced[li] = true;
	}
	return 0;
}

/* Stop the replaced lanes within RELOAD_GRACE_NS, all together; retire those
 * still in the kernel then (lane_retire()). */
static void stop_replaced(struct lane **old, unsigned n_old, const bool *replaced)
{
	uint64_t deadline = eng_now_ns() + RELOAD_GRACE_NS;

	for (unsigned li = 0; li < n_old; li++)
		if (replaced[li])
			lane_request_stop(old[li]);
	for (unsigned li = 0; li < n_old; li++) {
		if (!replaced[li] || lane_wait(old[li], deadline))
			continue;
		lane_retire(old[li]);
		log_warning("Target %s: its lane is stuck in the kernel; its replacement takes the "
			    "target once that I/O returns",
			    old[li]->cfg->name);
	}
}

/* A probe of lane @l that is gone or different in @nc. */
static bool probe_changed(const struct lane *l, const struct cfg_probe *op, const struct config *nc)
{
	int ni = cfg_probe_index(nc, op->name);

	return ni < 0 || !cfg_probe_same(l->config, op, nc, &nc->probes[ni]);
}

/* The series of the replaced lanes (stopped or retired: none writes them any
 * more) that the new schedule has no use for leave the registry: a removed
 * target's, removed or changed probes', and what each lane makes its own.
 * Scrapes no longer see the old lanes; under tick_mu. */
static void drop_stale_series(struct sched *s, const struct config *nc, struct lane **old,
			      unsigned n_old, const bool *replaced)
{
	for (unsigned li = 0; li < n_old; li++) {
		struct lane *l = old[li];

		if (!replaced[li])
			continue;
		if (cfg_target_index(nc, l->cfg->name) < 0)
			lane_drop_target_series(l);
		lane_drop_target_info(l);
		for (unsigned pi = 0; pi < l->n_probes; pi++)
			if (probe_changed(l, l->probes[pi].cfg, nc)) {
				log_debug("Probe %s: removed or changed, dropping its series",
					  l->probes[pi].cfg->name);
				lane_drop_probe_series(&l->probes[pi]);
				/* Its histogram is made anew: the page's figures too. */
				status_probe_changed(s->st, l->probes[pi].cfg->name);
			}
	}
}

/* A new lane for each target of @nc the plan keeps none for; one that replaces
 * the old lane of the same place goes on from what it counted of its I/O
 * (lane_follow()), and from its state when its definition is the same. 0 or
 * -errno. */
static int build_new_lanes(struct sched *s, const struct config *nc, struct reload_plan *p,
			   unsigned n_old)
{
	int r = 0;

	for (unsigned ti = 0; ti < nc->n_targets; ti++) {
		const struct cfg_target *t = &nc->targets[ti];

		if (p->lanes[ti])
			continue;
		p->lanes[ti] = lane_new(nc, ti, s->metrics, &r);
		if (!p->lanes[ti])
			return r;
		for (unsigned li = 0; li < n_old; li++)
			if (p->replaced[li] && lane_follow(p->lanes[ti], &p->handover[li]) &&
			    cfg_target_same(p->handover[li].cfg, t))
				lane_take_over(p->lanes[ti], &p->handover[li]);
	}
	return 0;
}

/* The end of an applied reload: @nc runs. */
static void reload_done(struct sched *s, const struct config *nc, unsigned kept)
{
	metrics_set_native(s->metrics, nc->native_schema, nc->native_zero_threshold_ns / 1e9);
	set_reload_gauges(s, true);
	status_config(s->st, nc->source, true, NULL);
	log_info("Configuration reloaded: %u probe(s) on %u target(s) from %s (%u lane(s) kept as "
		 "they were)",
		 nc->n_probes, nc->n_targets, nc->source, kept);
	sched_notify_ready(s);
}

/*
 * Swap in @nc, checked completely by the reload thread. The lane of a target
 * whose definition and probes did not change is kept as it runs, stuck in the
 * kernel or not (at most one lane per target is ever in the kernel). The
 * others are stopped (retired if they stay in the kernel, lane.h) and their
 * series that the new schedule has no use for dropped; new lanes start for
 * the targets that have none, each following the old lane of its place.
 * Unchanged probes of a new lane get their series back from the registry
 * (get-or-create): their counters go on. Takes @nc. Returns 0 (also when it
 * was refused after all), -errno when the new schedule could not be set up
 * (out of memory: the daemon stops, its service manager restarts it).
 */
static int reload_apply(struct sched *s, struct config *nc)
{
	const struct config *oc = s->cfg;
	struct lane **old = s->lanes;
	unsigned n_old = s->n_lanes, kept = 0;
	struct reload_plan p = {0};
	int r;

	if (reload_plan_make(&p, old, n_old, nc) < 0) {
		log_error("Out of memory");
		cfg_free(nc);
		reload_plan_free(&p, n_old);
		reload_refused(s, "out of memory");
		return 0;
	}
	reload_keep_fixed(s, oc, nc);

	/* Valid: from here on the new schedule goes in. */
	stop_replaced(old, n_old, p.replaced);
	/* A replaced lane's timer is not ours now (a retired one may still arm it). */
	for (unsigned li = 0; li < n_old; li++)
		if (p.replaced[li])
			epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, old[li]->watch_fd, NULL);
	/* Scrapes and ticks stop looking at the old lanes before their series go
	 * (a tick in progress has copied their probe ops: it ends first). */
	pthread_mutex_lock(&s->tick_mu);
	pthread_mutex_lock(&s->lanes_mu);
	s->lanes = NULL;
	s->n_lanes = 0;
	s->reloading = true;
	pthread_mutex_unlock(&s->lanes_mu);
	drop_stale_series(s, nc, old, n_old, p.replaced);
	pthread_mutex_unlock(&s->tick_mu);
	/* Done with the replaced lanes: each hands over and is freed, now or by
	 * its own thread when its I/O returns (then it lets go of the target). */
	for (unsigned li = 0; li < n_old; li++)
		if (p.replaced[li])
			lane_let_go(old[li], &p.handover[li]);
	free(old);

	r = build_new_lanes(s, nc, &p, n_old);
	reload_plan_free_handovers(&p, n_old);
	if (r < 0) {
		unsigned n = 0;

		/* The lanes there are run until sched_stop() stops them all. */
		for (unsigned ti = 0; ti < nc->n_targets; ti++)
			if (p.lanes[ti])
				p.lanes[n++] = p.lanes[ti];
		pthread_mutex_lock(&s->lanes_mu);
		s->lanes = p.lanes;
		s->n_lanes = n;
		s->reloading = false;
		pthread_mutex_unlock(&s->lanes_mu);
		p.lanes = NULL;
		reload_plan_free(&p, n_old);
		cfg_free(nc);
		return log_error_errno(r, "Failed to set up the reloaded probes: %m; stopping");
	}
	/* Publish the new lanes; a kept lane judges as the new file says. */
	pthread_mutex_lock(&s->lanes_mu);
	for (unsigned ti = 0; ti < nc->n_targets; ti++)
		if (p.lanes[ti]->started) {
			lane_rejudge(p.lanes[ti], &nc->targets[ti]);
			kept++;
		}
	s->lanes = p.lanes;
	s->n_lanes = nc->n_targets;
	s->reloading = false;
	s->cfg = nc;
	pthread_mutex_unlock(&s->lanes_mu);
	p.lanes = NULL;
	reload_plan_free(&p, n_old);
	cfg_free(oc); /* the lanes that still run from it hold it */
	r = sched_start_lanes(s);
	if (r < 0)
		return r;
	reload_done(s, nc, kept);
	return 0;
}

void reload_abandon(struct reload_job *j)
{
	pthread_mutex_lock(&j->mu);
	j->abandoned = true;
	reload_job_put(j);
}

/* reload_fd: the reload thread is done. Apply or refuse its result, then start
 * the reload a SIGHUP asked for meanwhile. 0, or -errno when no schedule runs. */
int reload_finish(struct sched *s)
{
	struct reload_job *j = s->reload;
	struct config *nc = NULL;
	struct cfg_error err;
	int r;

	drain(s->reload_fd); /* written by the thread of s->reload, once its result is in */
	pthread_mutex_lock(&j->mu);
	r = j->r;
	nc = j->cfg;
	j->cfg = NULL;
	err = j->err;
	reload_job_put(j);
	s->reload = NULL;
	if (r < 0) {
		char why[256];

		/* err.msg, the file's own error, is said by reload_refused(). */
		if (!err.msg[0] && r != -EINVAL) /* sched_check_distinct_targets() logged -EINVAL */
			log_error_errno(r, "Failed to check the targets of %s: %m",
					sched_source(s));
		snprintf(why, sizeof(why), "%s: %s", sched_source(s),
			 r == -EINVAL ? "two targets are the same (see the log)" : strerror(-r));
		reload_refused(s, err.msg[0] ? err.msg : why);
	} else {
		r = reload_apply(s, nc);
		if (r < 0)
			return r;
	}
	if (s->reload_again) {
		s->reload_again = false;
		reload_start(s, true);
	}
	return 0;
}
