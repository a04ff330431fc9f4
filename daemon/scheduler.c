/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "../engines/engine.h"
#include "lane.h"
#include "log.h"
#include "scheduler.h"

#define HOUSEKEEPING_NS 250000000ULL  /* timeout checks: 4 per second */
#define STATUS_MIN_NS	1000000000ULL /* STATUS= at most once a second */
#define STATUS_LEN	256

struct slot {
	uint64_t due_ns;
	unsigned lane;
	unsigned probe; /* index into the lane's probes */
};

struct sched {
	const struct config *cfg;
	struct metrics *metrics;
	struct lane *lanes;
	unsigned n_lanes;
	bool *abandoned;   /* lanes whose thread did not exit in time */
	struct slot *heap; /* min-heap on due_ns */
	unsigned n_heap;
	int epoll_fd, timer_fd, hk_fd, signal_fd;
	int watchdog_fd;	 /* timerfd at half WATCHDOG_USEC; -1 without a watchdog */
	char status[STATUS_LEN]; /* the STATUS= line the service manager has */
	uint64_t status_sent_ns; /* when it was sent */
};

/* ---------------------------------------------------------------- heap */

static void heap_swap(struct slot *a, struct slot *b)
{
	struct slot t = *a;

	*a = *b;
	*b = t;
}

static void heap_push(struct sched *s, struct slot v)
{
	unsigned i = s->n_heap++;

	s->heap[i] = v;
	while (i > 0 && s->heap[(i - 1) / 2].due_ns > s->heap[i].due_ns) {
		heap_swap(&s->heap[(i - 1) / 2], &s->heap[i]);
		i = (i - 1) / 2;
	}
}

static struct slot heap_pop(struct sched *s)
{
	struct slot top = s->heap[0];
	unsigned i = 0;

	s->heap[0] = s->heap[--s->n_heap];
	for (;;) {
		unsigned l = 2 * i + 1, r = l + 1, m = i;

		if (l < s->n_heap && s->heap[l].due_ns < s->heap[m].due_ns)
			m = l;
		if (r < s->n_heap && s->heap[r].due_ns < s->heap[m].due_ns)
			m = r;
		if (m == i)
			break;
		heap_swap(&s->heap[m], &s->heap[i]);
		i = m;
	}
	return top;
}

/* ---------------------------------------------------------------- setup */

/*
 * Two targets naming one directory, file or device would run two lanes on one
 * disk at once (the overlap lanes exist to prevent) and, for directories, fight
 * over one probe file. Paths that do not exist yet cannot be compared; the probe
 * file's lock catches those later.
 */
static int check_distinct_targets(const struct config *cfg)
{
	for (unsigned i = 0; i < cfg->n_targets; i++) {
		struct stat a, b;

		if (stat(cfg->targets[i].path, &a) < 0)
			continue;
		for (unsigned j = i + 1; j < cfg->n_targets; j++) {
			bool same;

			if (stat(cfg->targets[j].path, &b) < 0)
				continue;
			same = S_ISBLK(a.st_mode) && S_ISBLK(b.st_mode)
				       ? a.st_rdev == b.st_rdev
				       : a.st_dev == b.st_dev && a.st_ino == b.st_ino;
			if (same)
				return log_error_errno(
					-EINVAL,
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
	return 0;
}

struct sched *sched_new(const struct config *cfg, struct metrics *m, int *err)
{
	struct sched *s = calloc(1, sizeof(*s));
	int r = -ENOMEM;

	if (!s)
		goto fail;
	r = check_distinct_targets(cfg);
	if (r < 0)
		goto fail;
	r = -ENOMEM;
	s->epoll_fd = s->timer_fd = s->hk_fd = s->signal_fd = s->watchdog_fd = -1;
	s->cfg = cfg;
	s->metrics = m;
	s->lanes = calloc(cfg->n_targets, sizeof(*s->lanes));
	s->abandoned = calloc(cfg->n_targets, sizeof(*s->abandoned));
	s->heap = calloc(cfg->n_probes ? cfg->n_probes : 1, sizeof(*s->heap));
	if (!s->lanes || !s->abandoned || !s->heap)
		goto fail;
	for (unsigned i = 0; i < cfg->n_targets; i++) {
		s->n_lanes++;
		r = lane_init(&s->lanes[i], cfg, i, m);
		if (r < 0)
			goto fail;
	}
	return s;
fail:
	sched_free(s);
	*err = r;
	return NULL;
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
	its.it_interval.tv_sec = its.it_value.tv_sec = (time_t)(half_ns / 1000000000ULL);
	its.it_interval.tv_nsec = its.it_value.tv_nsec = (long)(half_ns % 1000000000ULL);
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
	struct itimerspec hk = {
		.it_interval = {.tv_nsec = HOUSEKEEPING_NS},
		.it_value = {.tv_nsec = HOUSEKEEPING_NS},
	};
	uint64_t now = eng_now_ns();
	sigset_t mask;
	int r;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	s->hk_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	s->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->epoll_fd < 0 || s->timer_fd < 0 || s->hk_fd < 0 || s->signal_fd < 0)
		return log_error_errno(-errno, "Failed to set up the scheduler's event loop: %m");
	if (timerfd_settime(s->hk_fd, 0, &hk, NULL) < 0)
		return log_error_errno(-errno, "Failed to arm the housekeeping timer: %m");
	if ((r = add_fd(s, s->timer_fd)) < 0 || (r = add_fd(s, s->hk_fd)) < 0 ||
	    (r = add_fd(s, s->signal_fd)) < 0)
		return log_error_errno(r, "Failed to watch the scheduler's descriptors: %m");

	r = watchdog_start(s);
	if (r < 0)
		return r;

	for (unsigned li = 0; li < s->n_lanes; li++) {
		r = lane_start(&s->lanes[li]);
		if (r < 0)
			return log_error_errno(r, "Failed to start the lane of target %s: %m",
					       s->lanes[li].cfg->name);
		struct lane *l = &s->lanes[li];
		uint64_t spread = 1000000000ULL; /* first runs within a second of start */

		/* Splay: a lane's probes start evenly spread over the shortest interval
		 * (at most a second), so that probes with multiple intervals do not fall
		 * due together forever and defer each other. */
		for (unsigned pi = 0; pi < l->n_probes; pi++)
			if (l->probes[pi].cfg->interval_ns < spread)
				spread = l->probes[pi].cfg->interval_ns;
		for (unsigned pi = 0; pi < l->n_probes; pi++)
			heap_push(s, (struct slot){.due_ns = now + spread * pi / l->n_probes,
						   .lane = li,
						   .probe = pi});
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
		up += atomic_load(&s->lanes[li].up);
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

/* Housekeeping: send STATUS= when it changed, at most once per STATUS_MIN_NS (a
 * change held back goes out at a later tick). */
static void update_status(struct sched *s, uint64_t now)
{
	char cur[STATUS_LEN];

	if (now - s->status_sent_ns < STATUS_MIN_NS)
		return;
	format_status(s, cur, sizeof(cur));
	if (strcmp(cur, s->status) == 0)
		return;
	memcpy(s->status, cur, sizeof(cur));
	s->status_sent_ns = now;
	sd_notifyf(0, "STATUS=%s", s->status);
}

/* ---------------------------------------------------------------- loop */

static int arm_timer(struct sched *s)
{
	struct itimerspec its = {0};
	uint64_t due;

	if (s->n_heap == 0)
		return 0;
	due = s->heap[0].due_ns ? s->heap[0].due_ns : 1; /* 0 would disarm */
	its.it_value.tv_sec = due / 1000000000ULL;
	its.it_value.tv_nsec = due % 1000000000ULL;
	return timerfd_settime(s->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0 ? -errno : 0;
}

static void run_due(struct sched *s)
{
	uint64_t now = eng_now_ns();

	while (s->n_heap && s->heap[0].due_ns <= now) {
		struct slot v = heap_pop(s);
		struct lane *l = &s->lanes[v.lane];
		uint64_t interval = l->probes[v.probe].cfg->interval_ns;

		lane_enqueue(l, v.probe);
		v.due_ns += interval;
		if (v.due_ns <= now) /* fell behind: drop missed slots, keep the phase */
			v.due_ns += ((now - v.due_ns) / interval + 1) * interval;
		heap_push(s, v);
	}
}

static void drain(int fd)
{
	uint64_t ticks;

	while (read(fd, &ticks, sizeof(ticks)) > 0)
		;
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
			log_warning("Received SIGHUP: configuration reload is not implemented yet, "
				    "ignoring");
			break;
		}
	}
	return 0;
}

int sched_run(struct sched *s)
{
	for (;;) {
		struct epoll_event ev[8];
		int n, r;

		r = arm_timer(s);
		if (r < 0)
			return log_error_errno(r, "Failed to arm the probe timer: %m");
		n = epoll_wait(s->epoll_fd, ev, 8, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return log_error_errno(-errno, "Scheduler wait failed: %m");
		}
		for (int i = 0; i < n; i++) {
			int fd = ev[i].data.fd;

			if (fd == s->signal_fd) {
				if (handle_signal(s))
					return 0;
			} else if (fd == s->timer_fd) {
				drain(fd);
			} else if (fd == s->hk_fd) {
				uint64_t now = eng_now_ns();

				drain(fd);
				for (unsigned li = 0; li < s->n_lanes; li++) {
					lane_check_timeout(&s->lanes[li], now);
					lane_log_layout(&s->lanes[li], now);
				}
				log_flush_suppressed();
				update_status(s, now);
			} else if (fd == s->watchdog_fd) {
				drain(fd);
				sd_notify(0, "WATCHDOG=1");
			}
		}
		run_due(s);
	}
}

void sched_collect(struct sched *s)
{
	uint64_t now = eng_now_ns();

	for (unsigned li = 0; li < s->n_lanes; li++)
		lane_collect(&s->lanes[li], now);
}

unsigned sched_stop(struct sched *s, uint64_t grace_ns)
{
	uint64_t deadline = eng_now_ns() + grace_ns;
	unsigned stuck = 0;

	for (unsigned li = 0; li < s->n_lanes; li++)
		lane_request_stop(&s->lanes[li]);
	for (unsigned li = 0; li < s->n_lanes; li++) {
		if (lane_wait(&s->lanes[li], deadline))
			continue;
		s->abandoned[li] = true;
		stuck++;
		log_warning("Target %s: its lane is stuck in the kernel, abandoning it",
			    s->lanes[li].cfg->name);
	}
	return stuck;
}

void sched_free(struct sched *s)
{
	bool leak = false;

	if (!s)
		return;
	for (unsigned li = 0; li < s->n_lanes; li++) {
		if (s->abandoned && s->abandoned[li])
			leak = true;
		else
			lane_destroy(&s->lanes[li]);
	}
	if (!leak)
		free(s->lanes);
	free(s->abandoned);
	free(s->heap);
	if (s->epoll_fd >= 0)
		close(s->epoll_fd);
	if (s->timer_fd >= 0)
		close(s->timer_fd);
	if (s->hk_fd >= 0)
		close(s->hk_fd);
	if (s->signal_fd >= 0)
		close(s->signal_fd);
	if (s->watchdog_fd >= 0)
		close(s->watchdog_fd);
	free(s);
}
