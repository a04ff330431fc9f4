/* SPDX-License-Identifier: MIT */
/*
 * scheduler — see scheduler.h: the lanes set up and started with their first
 * due times, STATUS= and the status page's figures, and the epoll loop on the
 * main thread. A reload is reload.c's.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "engines/engine.h"
#include "daemon/sched/lane.h"
#include "daemon/log.h"
#include "daemon/probes/probe.h"
#include "daemon/sched/scheduler_int.h"
#include "daemon/sched/splay.h"
#include "daemon/status/status_persist.h"
#include "daemon/targets/target.h"
#include "lib/fd.h"
#include "lib/path.h"

#define STATUS_MIN_NS NSEC_PER_SEC /* STATUS= at most once a second */

/* ---------------------------------------------------------------- setup */

/*
 * Two targets naming one directory, file or device would run two lanes on one
 * disk at once and fight over one probe file. Two spellings of one path are
 * always the same (path_lexical(): no system call); otherwise the paths' stat
 * is compared, but not for paths that do not exist yet or whose stat hangs past
 * STAT_WAIT_MS (a dead mount would hold up start-up or the reload thread): the
 * probe file's lock catches those later.
 */
#define STAT_WAIT_MS 500

/* Whether @a and @b spell one path (path_lexical()). */
static bool same_spelling(const char *a, const char *b)
{
	char la[PATH_MAX], lb[PATH_MAX];

	return path_lexical(a, la, sizeof(la)) == 0 && path_lexical(b, lb, sizeof(lb)) == 0 &&
	       strcmp(la, lb) == 0;
}

int sched_check_distinct_targets(const struct config *cfg)
{
	struct stat *st;
	bool *known;
	int r = 0;

	if (cfg->n_targets < 2)
		return 0;
	st = calloc(cfg->n_targets, sizeof(*st));
	known = calloc(cfg->n_targets, sizeof(*known));
	if (!st || !known) {
		free(st);
		free(known);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < cfg->n_targets; i++) {
		const struct cfg_target *t = &cfg->targets[i];
		int e = target_stat_within(t->path, &st[i], STAT_WAIT_MS);

		known[i] = e == 0;
		if (e == -ETIMEDOUT)
			log_warning("Target '%s': stat(%s) did not return within %d ms (a hung "
				    "filesystem?); not compared with the other targets",
				    t->name, t->path, STAT_WAIT_MS);
	}
	for (unsigned i = 0; i < cfg->n_targets && r == 0; i++) {
		for (unsigned j = i + 1; j < cfg->n_targets && r == 0; j++) {
			const struct stat *a = &st[i], *b = &st[j];
			bool same;

			if (same_spelling(cfg->targets[i].path, cfg->targets[j].path))
				same = true;
			else if (!known[i] || !known[j])
				continue;
			else
				same = S_ISBLK(a->st_mode) && S_ISBLK(b->st_mode)
					       ? a->st_rdev == b->st_rdev
					       : a->st_dev == b->st_dev && a->st_ino == b->st_ino;
			if (same)
				r = log_error_errno(-EINVAL,
						    "%s:%u:%u: targets '%s' and '%s' are the same "
						    "%s (%s): probes on one disk must share one "
						    "target so they never overlap",
						    cfg->source, cfg->targets[j].pos.line,
						    cfg->targets[j].pos.col, cfg->targets[i].name,
						    cfg->targets[j].name,
						    cfg_target_kind_name(cfg->targets[j].kind),
						    cfg->targets[j].path);
		}
	}
	free(st);
	free(known);
	return r;
}

void sched_free_lanes(struct lane **lanes, unsigned n)
{
	for (unsigned i = 0; lanes && i < n; i++)
		lane_free(lanes[i]);
	free(lanes);
}

/* The lanes of @cfg, not started: their series exist (get-or-create). 0 or -errno. */
static int build_lanes(const struct config *cfg, struct metrics *m, struct lane ***out,
		       unsigned *n_out)
{
	struct lane **lanes = calloc(cfg->n_targets ? cfg->n_targets : 1, sizeof(*lanes));
	int r = 0;

	if (!lanes)
		return -ENOMEM;
	for (unsigned i = 0; i < cfg->n_targets; i++) {
		lanes[i] = lane_new(cfg, i, m, &r);
		if (!lanes[i]) {
			sched_free_lanes(lanes, i);
			return r;
		}
	}
	*out = lanes;
	*n_out = cfg->n_targets;
	return 0;
}

/* The host id for splay. Without a machine id the host name serves (a fleet
 * cloned without one may share it, hence the note); without either, one fixed
 * phase per probe name, as if every host were the same. */
static void read_host_id(struct sched *s)
{
	bool from_hostname;
	int r = splay_host_id(s->host_id, sizeof(s->host_id), &from_hostname);

	if (r < 0) {
		log_warning_errno(r, "Cannot read the machine id or the host name for splay, "
				     "using a fixed phase: %m");
		s->host_id[0] = '\0';
	} else if (from_hostname) {
		log_debug("No machine id (/etc/machine-id), splay derives from the host name %s",
			  s->host_id);
	}
}

struct sched *sched_new(const struct config *cfg, struct metrics *m, int *err)
{
	struct sched *s = calloc(1, sizeof(*s));
	int r = -ENOMEM;

	if (!s)
		goto fail;
	s->epoll_fd = s->timer_fd = s->wake_fd = s->signal_fd = s->watchdog_fd = s->reload_fd = -1;
	r = sched_check_distinct_targets(cfg);
	if (r < 0)
		goto fail;
	r = -ENOMEM;
	s->cfg = cfg_ref(cfg);
	s->metrics = m;
	if (pthread_mutex_init(&s->lanes_mu, NULL) != 0)
		goto fail;
	s->lanes_mu_init = true;
	if (pthread_mutex_init(&s->tick_mu, NULL) != 0)
		goto fail;
	s->tick_mu_init = true;
	atomic_init(&s->status_next_ns, 0);
	r = reload_series(s);
	if (r < 0)
		goto fail;
	s->st = status_new();
	if (!s->st) {
		r = -ENOMEM;
		goto fail;
	}
	status_config(s->st, cfg->source, true, NULL);
	r = build_lanes(cfg, m, &s->lanes, &s->n_lanes);
	if (r < 0)
		goto fail;
	read_host_id(s);
	return s;
fail:
	sched_free(s);
	*err = r;
	return NULL;
}

int sched_set_config_path(struct sched *s, const char *path)
{
	free(s->path);
	s->path = NULL;
	if (path && !(s->path = strdup(path)))
		return -ENOMEM;
	return 0;
}

static int add_fd(struct sched *s, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

	return epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/*
 * The service manager's watchdog (WATCHDOG_USEC, for this pid) is fed from this
 * loop and nowhere else: a lane hung on a dead disk does not stop it (the disk's
 * trouble shows in the metrics), a wedged scheduler does, and then restarting
 * is the right thing.
 */
static int watchdog_start(struct sched *s)
{
	struct itimerspec its = {0};
	uint64_t usec = 0, half_ns;
	int r = sd_watchdog_enabled(0, &usec);

	if (r < 0) {
		log_warning_errno(r, "Invalid watchdog settings from the service manager: %m, "
				     "ignoring");
		return 0;
	}
	if (r == 0)
		return 0;
	half_ns = usec * 1000 / 2;
	if (half_ns == 0)
		half_ns = 1;
	its.it_interval = its.it_value = eng_timespec(half_ns);
	s->watchdog_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->watchdog_fd < 0 || timerfd_settime(s->watchdog_fd, 0, &its, NULL) < 0)
		return log_error_errno(-errno, "Failed to arm the watchdog timer: %m");
	r = add_fd(s, s->watchdog_fd);
	if (r < 0)
		return log_error_errno(r, "Failed to watch the watchdog timer: %m");
	log_info("Watchdog enabled: keep-alive every %.3gs", half_ns / 1e9);
	return 0;
}

int sched_start(struct sched *s)
{
	sigset_t mask;
	int r;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	s->reload_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->epoll_fd < 0 || s->timer_fd < 0 || s->wake_fd < 0 || s->signal_fd < 0 ||
	    s->reload_fd < 0)
		return log_error_errno(-errno, "Failed to set up the scheduler's event loop: %m");
	if ((r = add_fd(s, s->timer_fd)) < 0 || (r = add_fd(s, s->wake_fd)) < 0 ||
	    (r = add_fd(s, s->signal_fd)) < 0 || (r = add_fd(s, s->reload_fd)) < 0)
		return log_error_errno(r, "Failed to watch the scheduler's descriptors: %m");
	log_set_notify_fd(s->wake_fd);

	r = watchdog_start(s);
	if (r < 0)
		return r;
	return sched_start_lanes(s);
}

/* One line per splayed burst: a host's first burst may come up to an 'every'
 * after start, and whoever waits for it should not have to guess when. The
 * phase is in ms, the hash's own figure rounded, so a test can recompute it. */
static void log_splay(const struct sched *s, const struct cfg_probe *p, uint64_t due, uint64_t now)
{
	char phase[48], every[48], in[48];
	uint64_t ms = NSEC_PER_SEC / 1000;

	if (!s->cfg->splay || !(probe_ops_of(p->kind)->flags & PROBE_F_SPLAY))
		return;
	cfg_format_duration(splay_offset(s->host_id, p->name, p->interval_ns) / ms * ms, phase,
			    sizeof(phase));
	cfg_format_duration(p->interval_ns, every, sizeof(every));
	cfg_format_duration((due - now) / NSEC_PER_SEC * NSEC_PER_SEC, in, sizeof(in));
	log_info("Burst %s runs at %s past each %s of the wall clock (splay), first in %s", p->name,
		 phase, every, in);
}

/* Give the probes of the lanes not started yet their first due times
 * (splay.h), on the lanes' clock (CLOCK_MONOTONIC): those are the lanes of
 * s->cfg (a lane a reload kept runs on as it was). 0 or -ENOMEM. */
static int schedule_first_runs(struct sched *s)
{
	uint64_t *due = calloc(s->cfg->n_probes ? s->cfg->n_probes : 1, sizeof(*due));
	struct timespec real;
	uint64_t now;

	if (!due)
		return log_error_errno(-ENOMEM, "Failed to schedule the probes: %m");
	if (clock_gettime(CLOCK_REALTIME, &real) < 0)
		real = (struct timespec){0}; /* cannot fail with a valid clock id */
	now = eng_mono_ns();
	splay_first_due(s->cfg, s->host_id, now,
			(uint64_t)real.tv_sec * NSEC_PER_SEC + (uint64_t)real.tv_nsec, due);
	for (unsigned li = 0; li < s->n_lanes; li++) {
		struct lane *l = s->lanes[li];

		for (unsigned pi = 0; !l->started && pi < l->n_probes; pi++) {
			const struct cfg_probe *p = l->probes[pi].cfg;

			lane_schedule(l, pi, due[p - s->cfg->probes]);
			log_splay(s, p, due[p - s->cfg->probes], now);
		}
	}
	free(due);
	return 0;
}

static void status_catch_up(void *arg);

int sched_start_lanes(struct sched *s)
{
	int r = schedule_first_runs(s);

	if (r < 0)
		return r;
	for (unsigned li = 0; li < s->n_lanes; li++) {
		struct lane *l = s->lanes[li];

		if (l->started)
			continue;
		l->notify_fd = s->wake_fd;
		l->before_publish = status_catch_up;
		l->before_publish_arg = s;
		r = add_fd(s, l->watch_fd);
		if (r < 0)
			return log_error_errno(r, "Failed to watch the lane of target %s: %m",
					       l->cfg->name);
		r = lane_start(l);
		if (r < 0)
			return log_error_errno(r, "Failed to start the lane of target %s: %m",
					       l->cfg->name);
	}
	return 0;
}

/* ---------------------------------------------------------------- status */

/* One line: "3 probes on 2 targets, 2 up; last error: ...". */
static void format_status(const struct sched *s, char *buf, size_t n)
{
	char err[STATUS_LEN - 64]; /* leaves room for the counts */
	unsigned up = 0;
	int len;

	for (unsigned li = 0; li < s->n_lanes; li++)
		up += atomic_load(&s->lanes[li]->up);
	len = snprintf(buf, n, "%u probe%s on %u target%s, %u up", s->cfg->n_probes,
		       s->cfg->n_probes == 1 ? "" : "s", s->n_lanes, s->n_lanes == 1 ? "" : "s",
		       up);
	log_last_error(err, sizeof(err));
	if (err[0] && len >= 0 && (size_t)len + 16 < n) {
		size_t room = n - (size_t)len - 15, elen = strnlen(err, room - 1);

		memcpy(buf + len, "; last error: ", 15);
		memcpy(buf + len + 14, err, elen);
		buf[len + 14 + elen] = '\0';
	}
	for (char *p = buf; *p; p++) /* STATUS= is one line */
		if (*p == '\n')
			*p = ' ';
}

void sched_notify_ready(struct sched *s)
{
	format_status(s, s->status, sizeof(s->status));
	s->status_sent_ns = eng_now_ns();
	sd_notifyf(0, "READY=1\nSTATUS=%s", s->status);
}

/* Send STATUS= when it changed, at most once per STATUS_MIN_NS. Returns when to
 * look again for a change held back, 0 when none is. */
static uint64_t update_status(struct sched *s, uint64_t now)
{
	char cur[STATUS_LEN];

	/* During a reload, READY=1 brings the new STATUS= when it is done. */
	if (s->reload)
		return 0;
	format_status(s, cur, sizeof(cur));
	if (strcmp(cur, s->status) == 0)
		return 0;
	if (now - s->status_sent_ns < STATUS_MIN_NS)
		return s->status_sent_ns + STATUS_MIN_NS;
	memcpy(s->status, cur, sizeof(cur));
	s->status_sent_ns = now;
	sd_notifyf(0, "STATUS=%s", s->status);
	return 0;
}

/* ---------------------------------------------------------------- loop */

static uint64_t earliest(uint64_t a, uint64_t b)
{
	return a && (!b || a < b) ? a : b;
}

/* The loop's own timer: @at, its next housekeeping (0: none). Due runs are
 * the lanes' own business (lane.h). */
static int arm_timer(struct sched *s, uint64_t at)
{
	struct itimerspec its = {0};

	if (!at)
		return 0; /* nothing to wait for but signals and wake-ups */
	its.it_value = eng_timespec(at);
	return timerfd_settime(s->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0 ? -errno : 0;
}

/* Under tick_mu and lanes_mu: the running lanes' probe ops into s->tick_ops.
 * How many, or -ENOMEM (the ticks wait for the next try). */
static int status_ops(struct sched *s)
{
	size_t need = 0;
	unsigned n = 0;

	for (unsigned li = 0; li < s->n_lanes; li++)
		need += (size_t)s->lanes[li]->n_probes * IO_OP_COUNT;
	if (mem_grow(&s->tick_ops, &s->tick_ops_cap, need ? need : 1, sizeof(*s->tick_ops)) < 0)
		return -ENOMEM;
	for (unsigned li = 0; li < s->n_lanes; li++)
		n += lane_status_ops(s->lanes[li], s->tick_ops + n);
	return (int)n;
}

/*
 * The status page's figures, every STATUS_STEP_NS: a few copies of bucket
 * counts per probe op. No thread wakes for them: a histogram changes only when
 * its lane publishes a run, so a lane about to publish (before_publish) and a
 * request for a page take the ticks due by then, each at its own time, with the
 * counts it would have seen (status_tick_until(): what a long idle time adds
 * costs nothing). Under tick_mu; lanes_mu only to copy the probe ops (never
 * during a reload: the lanes are being swapped). A reload takes tick_mu before
 * it drops series or frees lanes, so the copy stays valid while ticks use it.
 */
static void judge_lanes(struct sched *s, uint64_t now, bool collect);

static void status_catch_up(void *arg)
{
	struct sched *s = arg;
	uint64_t now = eng_now_ns();
	int n = -EAGAIN;
	bool ok;

	if (atomic_load(&s->status_next_ns) > now)
		return;
	pthread_mutex_lock(&s->tick_mu);
	pthread_mutex_lock(&s->lanes_mu);
	if (!s->reloading)
		n = status_ops(s);
	pthread_mutex_unlock(&s->lanes_mu);
	ok = n >= 0;
	if (ok)
		status_tick_until(s->st, s->tick_ops, (unsigned)n, now);
	atomic_store(&s->status_next_ns, ok ? status_next_tick_ns(s->st) : 0);
	pthread_mutex_unlock(&s->tick_mu);
	/* The judgement follows the figures at once, scraped or not: a target that
	 * turns slow is logged when it does, not at the next request. */
	if (ok) {
		judge_lanes(s, now, false);
		status_tell_minute(s->st); /* the state file's save: after the judgement */
	}
}

/*
 * What the loop does at its own deadlines: summaries of suppressed log lines and
 * a STATUS= change held back. Runs what is due; returns when the next thing is,
 * 0 for nothing. What the lanes and the log change meanwhile comes through
 * wake_fd; a lane's runs and timeouts through its watch timer (lane_watch()).
 */
static uint64_t housekeeping(struct sched *s, uint64_t now)
{
	uint64_t next = 0, t;

	t = log_next_flush_ns();
	if (t && t <= now) {
		log_flush_suppressed();
		t = log_next_flush_ns();
	}
	next = earliest(next, t);
	if (s->woken || (s->status_due_ns && s->status_due_ns <= now)) {
		s->woken = false;
		s->status_due_ns = update_status(s, now);
	}
	return earliest(next, s->status_due_ns);
}

/* Returns 1 to stop, 0 to go on. */
static int handle_signal(struct sched *s)
{
	struct signalfd_siginfo si;

	while (read(s->signal_fd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGTERM:
		case SIGINT:
			log_info("Received SIG%s, stopping", sigabbrev_np((int)si.ssi_signo));
			return 1;
		case SIGHUP:
			if (s->hup_fn)
				s->hup_fn(s->hup_data);
			reload_start(s, false);
			break;
		}
	}
	return 0;
}

void sched_descriptors(const struct config *cfg, struct sched_fds *out)
{
	*out = (struct sched_fds){0};
	for (unsigned ti = 0; ti < cfg->n_targets; ti++) {
		struct lane_fds f;

		lane_descriptors(cfg, ti, &f);
		out->lanes += f.lane;
		out->probes += f.probes;
	}
}

void sched_set_nofile(struct sched *s, uint64_t room, uint64_t nofile)
{
	s->nofile_room = room;
	s->nofile = nofile;
}

void sched_on_sighup(struct sched *s, void (*fn)(void *userdata), void *userdata)
{
	s->hup_fn = fn;
	s->hup_data = userdata;
}

#define EVENTS_STALE 2 /* handle_event(): the rest of the batch may name closed fds */

/*
 * The events of one wake-up. Returns 1 to stop, 0 to go on, EVENTS_STALE after
 * a reload (it closed the old lanes' timers, and new lanes and targets may have
 * their numbers now: the batch's other events wait for the next epoll_wait(),
 * which reports what is still pending), -errno on failure. Reads only the
 * scheduler's own descriptors: a number it does not know is left alone.
 */
static int handle_event(struct sched *s, int fd)
{
	int r;

	if (fd == s->signal_fd)
		return handle_signal(s);
	if (fd == s->reload_fd) {
		r = reload_finish(s);
		return r < 0 ? r : EVENTS_STALE;
	}
	for (unsigned li = 0; li < s->n_lanes; li++)
		if (fd == s->lanes[li]->watch_fd) {
			lane_watch(s->lanes[li]); /* reads it */
			return 0;
		}
	if (fd == s->wake_fd)
		s->woken = true;
	else if (fd == s->watchdog_fd)
		sd_notify(0, "WATCHDOG=1");
	else if (fd != s->timer_fd) /* timer_fd: the loop looks at the clock */
		return 0;
	drain(fd);
	return 0;
}

int sched_run(struct sched *s)
{
	for (;;) {
		struct epoll_event ev[8];
		uint64_t now = eng_now_ns();
		int n, r;

		r = arm_timer(s, housekeeping(s, now));
		if (r < 0)
			return log_error_errno(r, "Failed to arm the scheduler's timer: %m");
		n = epoll_wait(s->epoll_fd, ev, 8, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return log_error_errno(-errno, "Scheduler wait failed: %m");
		}
		for (int i = 0; i < n; i++) {
			r = handle_event(s, ev[i].data.fd);
			if (r == EVENTS_STALE)
				break;
			if (r != 0)
				return r > 0 ? 0 : r;
		}
	}
}

/* Under nothing: each lane's probe ops, then its state from them (judged and
 * logged when it changed), and with @collect its series from that same
 * state, so that the page and /metrics agree. Not during a reload: the page
 * and /readyz keep the targets' states from before it (readiness does not
 * flap). */
static void judge_lanes(struct sched *s, uint64_t now, bool collect)
{
	bool room;

	pthread_mutex_lock(&s->lanes_mu);
	if (s->reloading) {
		pthread_mutex_unlock(&s->lanes_mu);
		return;
	}
	room = status_targets_begin(s->st, s->n_lanes) == 0;
	for (unsigned li = 0; li < s->n_lanes; li++) {
		struct status_target t;
		struct status_judgement r;
		/* A state file's, across a restart: until the target is judged
		 * other than starting or slow (or its hold ends). */
		bool restored = status_restored_judgement(s->st, s->lanes[li]->cfg->name, &r);

		lane_status_probes(s->lanes[li], s->st, now);
		lane_status(s->lanes[li], now, restored ? &r : NULL, &t);
		if (restored && t.state != STATUS_STARTING && t.state != STATUS_SLOW)
			status_restore_done(s->st, t.name);
		if (collect)
			lane_collect_target(s->lanes[li], now, &t);
		if (room)
			status_set_target(s->st, li, &t);
	}
	pthread_mutex_unlock(&s->lanes_mu);
}

void sched_collect(struct sched *s)
{
	status_catch_up(s); /* the figures due since the last run published */
	judge_lanes(s, eng_now_ns(), true);
}

struct status *sched_status(struct sched *s)
{
	return s->st;
}

unsigned sched_stop(struct sched *s, uint64_t grace_ns)
{
	uint64_t deadline = eng_now_ns() + grace_ns;

	if (s->reload)
		log_warning("The configuration reload from %s has not finished, abandoning it",
			    sched_source(s));
	for (unsigned li = 0; li < s->n_lanes; li++)
		lane_request_stop(s->lanes[li]);
	/* A lane that finishes a run meanwhile still takes the status page's
	 * figures (status_catch_up(), which walks s->lanes under lanes_mu): from
	 * here on it walks none, so that the entries of retired lanes may go. */
	pthread_mutex_lock(&s->lanes_mu);
	s->reloading = true;
	pthread_mutex_unlock(&s->lanes_mu);
	for (unsigned li = 0; li < s->n_lanes; li++) {
		struct lane *l = s->lanes[li];

		if (lane_wait(l, deadline))
			continue;
		log_warning("Target %s: its lane is stuck in the kernel, abandoning it",
			    l->cfg->name);
		/* It reaches nothing of ours from here on, and frees itself if its
		 * I/O ever returns before the process is gone. */
		lane_retire(l);
		lane_let_go(l, NULL);
		s->lanes[li] = NULL;
	}
	return lane_retired_count();
}

void sched_free(struct sched *s)
{
	if (!s)
		return;
	sched_free_lanes(s->lanes, s->n_lanes);
	cfg_free(s->cfg);
	if (s->reload) {
		/* Its thread may never return: it frees the job, and must not write
		 * reload_fd after it is closed (below) and its number reused. */
		reload_abandon(s->reload);
	}
	if (s->lanes_mu_init)
		pthread_mutex_destroy(&s->lanes_mu);
	if (s->tick_mu_init)
		pthread_mutex_destroy(&s->tick_mu);
	status_free(s->st);
	free(s->tick_ops);
	free(s->path);
	s->epoll_fd = safe_close(s->epoll_fd);
	s->timer_fd = safe_close(s->timer_fd);
	/* Lanes left in the kernel are retired: they no longer write wake_fd. */
	log_set_notify_fd(-1);
	s->wake_fd = safe_close(s->wake_fd);
	s->signal_fd = safe_close(s->signal_fd);
	s->watchdog_fd = safe_close(s->watchdog_fd);
	s->reload_fd = safe_close(s->reload_fd);
	free(s);
}
