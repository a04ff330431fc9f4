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

/* The larger of two counts, at least 1 (calloc(0) may return NULL). */
static unsigned room(unsigned a, unsigned b)
{
	unsigned m = a > b ? a : b;

	return m ? m : 1;
}

/* A probe of the old schedule that is gone or different in @nc. */
static bool probe_changed(const struct config *oc, const struct cfg_probe *op,
			  const struct config *nc)
{
	int ni = cfg_probe_index(nc, op->name);

	return ni < 0 || !cfg_probe_same(oc, op, nc, &nc->probes[ni]);
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
		r = check_distinct_targets(nc); /* logs what it refuses */
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

/* What a reload allocates before it stops anything: room for either schedule,
 * so that a failure later can fall back to the old one. */
struct reload_room {
	bool *abandoned;
	bool *gone; /* old lanes abandoned in the kernel */
};

static void reload_room_free(struct reload_room *rr)
{
	free(rr->abandoned);
	free(rr->gone);
}

static int reload_room_alloc(struct reload_room *rr, const struct config *oc,
			     const struct config *nc, unsigned n_old)
{
	rr->abandoned = calloc(room(nc->n_targets, oc->n_targets), sizeof(*rr->abandoned));
	rr->gone = calloc(n_old ? n_old : 1, sizeof(*rr->gone));
	return rr->abandoned && rr->gone ? 0 : -ENOMEM;
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
}

/* Stop the old lanes within RELOAD_GRACE_NS, all together; those still in the
 * kernel then are marked in @gone and counted. */
static unsigned stop_old_lanes(struct lane *old, unsigned n_old, bool *gone)
{
	uint64_t deadline = eng_now_ns() + RELOAD_GRACE_NS;
	unsigned stuck = 0;

	for (unsigned li = 0; li < n_old; li++)
		lane_request_stop(&old[li]);
	for (unsigned li = 0; li < n_old; li++) {
		if (lane_wait(&old[li], deadline))
			continue;
		gone[li] = true;
		stuck++;
		log_warning("Target %s: its lane is stuck in the kernel, abandoning it (its "
			    "series stay as they are)",
			    old[li].cfg->name);
	}
	return stuck;
}

/* Series of removed targets, and of removed or changed probes, leave the registry.
 * Scrapes no longer see the old lanes; under tick_mu. */
static void drop_stale_series(struct sched *s, const struct config *oc, const struct config *nc,
			      struct lane *old, unsigned n_old, const bool *gone)
{
	for (unsigned li = 0; li < n_old; li++) {
		struct lane *l = &old[li];

		if (cfg_target_index(nc, l->cfg->name) < 0)
			lane_drop_target_series(l);
		/* The new lane of the target has its own (retire_old_lanes()). */
		lane_drop_target_info(l);
		/* An abandoned lane may still write its probes' series: they stay. */
		for (unsigned pi = 0; !gone[li] && pi < l->n_probes; pi++)
			if (probe_changed(oc, l->probes[pi].cfg, nc)) {
				log_debug("Probe %s: removed or changed, dropping its series",
					  l->probes[pi].cfg->name);
				lane_drop_probe_series(&l->probes[pi]);
				/* Its histogram is made anew: the page's figures too. */
				status_probe_changed(s->st, l->probes[pi].cfg->name);
			}
	}
}

/* The lanes of *@ncp or, failing that (out of memory, practically), of the
 * running schedule again, in which case *@ncp is freed and NULL. */
static int build_new_lanes(struct sched *s, struct config **ncp, struct lane **lanes, unsigned *n)
{
	int r = build_lanes(*ncp, s->metrics, lanes, n);

	if (r == 0)
		return 0;
	log_error_errno(r, "Failed to set up the reloaded probes: %m; restarting the "
			   "previous schedule");
	cfg_free(*ncp);
	*ncp = NULL;
	r = build_lanes(s->cfg, s->metrics, lanes, n);
	if (r < 0)
		return log_error_errno(r, "Failed to restart the previous schedule: %m");
	return 0;
}

/* Destroy the old lanes that exited, handing what they know of their target to
 * the new lane of the same target (lane_take_over()). */
static void retire_old_lanes(struct lane *old, unsigned n_old, const bool *gone, struct lane *lanes,
			     unsigned n)
{
	for (unsigned li = 0; li < n_old; li++) {
		if (gone[li])
			continue;
		/* An unchanged target stays up (target_up, STATUS=) until its next run
		 * says otherwise, and keeps its day's write budget. */
		for (unsigned i = 0; i < n; i++)
			if (cfg_target_same(old[li].cfg, lanes[i].cfg))
				lane_take_over(&lanes[i], &old[li]);
		/* Closes the target (and its probe-file lock) for the new lane. */
		lane_destroy(&old[li]);
	}
}

/* Publish the new lanes (and @nc, unless NULL) to scrapes, and take @rr's
 * arrays; @rr->gone is freed. */
static void publish_lanes(struct sched *s, struct lane *lanes, unsigned n, const struct config *nc,
			  struct reload_room *rr)
{
	pthread_mutex_lock(&s->lanes_mu);
	s->lanes = lanes;
	s->n_lanes = n;
	s->reloading = false;
	if (nc)
		s->cfg = nc;
	pthread_mutex_unlock(&s->lanes_mu);
	free(s->abandoned);
	s->abandoned = rr->abandoned;
	free(rr->gone);
}

/* The end of an applied reload: @nc runs (NULL: the old schedule runs again). */
static void reload_done(struct sched *s, struct config *nc, unsigned stuck)
{
	if (!nc) {
		set_reload_gauges(s, false);
		status_config(
			s->st, s->cfg->source, false,
			"out of memory setting up the new probes; the previous ones run again");
		sched_notify_ready(s);
		return;
	}
	/* The old configuration: main's (freed at exit) or a reload's; a lane
	 * abandoned in the kernel may still read it. */
	if (s->owned && !stuck)
		cfg_free(s->owned);
	s->owned = nc;
	metrics_set_native(s->metrics, nc->native_schema, nc->native_zero_threshold_ns / 1e9);
	set_reload_gauges(s, true);
	status_config(s->st, nc->source, true, NULL);
	log_info("Configuration reloaded: %u probe(s) on %u target(s) from %s", nc->n_probes,
		 nc->n_targets, nc->source);
	sched_notify_ready(s);
}

/*
 * Swap in @nc, checked completely by the reload thread: stop the old lanes, drop
 * the series of removed and changed probes and of removed targets, and start
 * lanes for the new schedule. Unchanged probes get their series back from the
 * registry (get-or-create): their counters go on. Takes @nc. Returns 0 (also
 * when it was refused after all), -errno when no schedule could be started.
 */
static int reload_apply(struct sched *s, struct config *nc)
{
	const struct config *oc = s->cfg;
	struct lane *old = s->lanes, *lanes = NULL;
	unsigned n_old = s->n_lanes, n = 0, stuck;
	struct reload_room rr = {0};
	int r;

	if (reload_room_alloc(&rr, oc, nc, n_old) < 0) {
		log_error("Out of memory");
		cfg_free(nc);
		reload_room_free(&rr);
		reload_refused(s, "out of memory");
		return 0;
	}
	reload_keep_fixed(s, oc, nc);

	/* Valid: from here on the new schedule goes in. */
	stuck = stop_old_lanes(old, n_old, rr.gone);
	/* An abandoned lane keeps its timer (and may still arm it): not ours now. */
	for (unsigned li = 0; li < n_old; li++)
		epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, old[li].watch_fd, NULL);
	/* Scrapes and ticks stop looking at the old lanes before their series go
	 * (a tick in progress has copied their probe ops: it ends first). */
	pthread_mutex_lock(&s->tick_mu);
	pthread_mutex_lock(&s->lanes_mu);
	s->lanes = NULL;
	s->n_lanes = 0;
	s->reloading = true;
	pthread_mutex_unlock(&s->lanes_mu);
	drop_stale_series(s, oc, nc, old, n_old, rr.gone);
	pthread_mutex_unlock(&s->tick_mu);
	s->stuck_before += stuck;

	r = build_new_lanes(s, &nc, &lanes, &n);
	if (r < 0) {
		reload_room_free(&rr);
		return r;
	}
	retire_old_lanes(old, n_old, rr.gone, lanes, n);
	if (!stuck)
		free(old); /* else abandoned lanes keep using the array and their config */
	publish_lanes(s, lanes, n, nc, &rr);
	r = start_lanes(s);
	if (r < 0)
		return r;
	reload_done(s, nc, stuck);
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
		if (!err.msg[0] && r != -EINVAL) /* check_distinct_targets() logged -EINVAL */
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
