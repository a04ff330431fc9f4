/* SPDX-License-Identifier: MIT */
/*
 * lane — see lane.h: a lane set up for its target and probes, its thread and
 * the queue it runs from (due times, hand-over, retries, the watch timer armed
 * for a run), stopped and destroyed. One run is lane_run.c's; what the
 * scheduler and the scrapes see of a lane, lane_watch.c's; what of it outlives
 * a reload (retired lanes, the target's claim), lane_reload.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "engines/engine.h"
#include "lib/fd.h"
#include "lib/ioprio.h"
#include "daemon/sched/lane_int.h"
#include "daemon/log.h"

/* ---------------------------------------------------------------- set-up */

/* Sets up a probe; a failure is kept and reported by each run. */
static void lane_probe_setup(struct lane *l, struct lane_probe *lp, const struct config *cfg)
{
	int r = probe_init(&lp->probe, lp->cfg, &l->target, cfg->buckets_ns, cfg->n_buckets);
	char why[256];

	if (lp->probe.engine)
		lp->engine = lp->probe.engine->name;
	lp->probe.timeout_claimed = &l->timeout_claimed;
	lp->probe.say = probe_note_log; /* what a run finds, logged as it is found */
	lp->ready = r == 0;
	lp->init_error = r;
	if (r == -ENOENT || r == -EOPNOTSUPP)
		log_error("Probe %s: engine '%s' is %s; the probe will not run", lp->cfg->name,
			  lp->cfg->engine,
			  r == -ENOENT ? "not built in" : "not available on this system");
	else if (r == -EPERM && ioprio_is_realtime(lp->cfg->io_priority))
		log_error("Probe %s: 'io_priority: %s' " IOPRIO_RT_NEEDS ", "
			  "which iopulse lacks; the probe will not run",
			  lp->cfg->name, ioprio_format(lp->cfg->io_priority, why, sizeof(why)));
	else if (r < 0)
		log_error_errno(r, "Probe %s: cannot be set up: %m", lp->cfg->name);
	else if (strcmp(lp->cfg->engine, "auto") == 0) /* which engine, and why that one */
		log_info("Probe %s: engine auto -> %s (%s)", lp->cfg->name, lp->engine,
			 probe_engine_why(lp->cfg));
	else
		log_debug("Probe %s: %s on target %s, engine %s", lp->cfg->name,
			  cfg_probe_kind_name(lp->cfg->kind), l->cfg->name, lp->engine);
	if (r == 0 && probe_depth_ignored(lp->cfg, lp->engine, why, sizeof(why)))
		log_warning("%s", why);
}

/* The lane's mutex and condition variable. 0 or -errno. */
static int lane_init_sync(struct lane *l)
{
	pthread_condattr_t ca;
	int r = pthread_mutex_init(&l->mu, NULL);

	if (r)
		return -r;
	r = pthread_mutex_init(&l->pub_mu, NULL);
	if (r) {
		pthread_mutex_destroy(&l->mu);
		return -r;
	}
	/* Shutdown waits on this with a CLOCK_MONOTONIC deadline: a wall-clock step
	 * must neither stretch the grace period nor cut it short. */
	r = pthread_condattr_init(&ca);
	if (!r)
		r = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!r)
		r = pthread_cond_init(&l->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (r) {
		pthread_mutex_destroy(&l->pub_mu);
		pthread_mutex_destroy(&l->mu);
		return -r;
	}
	l->initialised = true;
	return 0;
}

/*
 * Counted on a running daemon (ls /proc/PID/fd, and under strace for what an
 * open holds on the way): a lane holds its watch timerfd, /proc/stat (CPU
 * steal) and its thread's schedstat (CPU wait, cpu_wait.h); its target, its
 * probe file and the descriptor holding the file's lock (a directory no probe
 * needs a probe file in: the directory; a file or a device: itself); sysfs's
 * block/ and its disk's stat once a burst checks whether the disk is busy (one
 * more per further disk behind an md or LVM). On the way, one thing at a time
 * on the lane's thread, but every lane at once: a path walk holds the directory
 * reached, a symlink and "/" (an absolute symlink), or a probe's run holds what
 * its row says.
 */
#define LANE_FDS	 3
#define LANE_FDS_DISKS	 2
#define LANE_FDS_WALKING 3

void lane_descriptors(const struct config *cfg, unsigned ti, struct lane_fds *out)
{
	const struct cfg_target *tc = &cfg->targets[ti];
	unsigned opening = LANE_FDS_WALKING, disks = 0, target = 1;

	out->probes = 0;
	for (unsigned i = 0; i < cfg->n_probes; i++) {
		const struct cfg_probe *c = &cfg->probes[i];
		struct probe_fds f;

		if (c->target != ti)
			continue;
		probe_descriptors(c, &f);
		out->probes += f.held;
		if (f.run > opening)
			opening = f.run;
		if (tc->kind == CFG_TARGET_DIRECTORY && probe_uses_probe_file(c))
			target = 2;
		if (c->busy_backoff)
			disks = LANE_FDS_DISKS;
	}
	out->lane = LANE_FDS + target + disks + opening;
}

/* The lane's probes (those of target @ti in @cfg), set up, and their series and
 * the target's. 0 or -errno. */
static int lane_probes_init(struct lane *l, const struct config *cfg, unsigned ti,
			    struct metrics *m)
{
	const struct cfg_target *tc = &cfg->targets[ti];
	unsigned n = 0;
	int r;

	for (unsigned i = 0; i < cfg->n_probes; i++)
		n += cfg->probes[i].target == ti;
	l->probes = calloc(n ? n : 1, sizeof(*l->probes));
	l->queue = calloc(n ? n : 1, sizeof(*l->queue));
	l->judge_ops = calloc(n ? n * IO_OP_COUNT : 1, sizeof(*l->judge_ops));
	if (!l->probes || !l->queue || !l->judge_ops)
		return -ENOMEM;

	r = probe_outcome_init(&l->outcome, cfg->buckets_ns, cfg->n_buckets);
	if (r < 0)
		return r;
	r = probe_metrics_target_init(&l->series, m, tc);
	if (r < 0)
		return r;

	/* No probe file where no probe would use it: verify probes keep their own. */
	l->target.dir_only = tc->kind == CFG_TARGET_DIRECTORY;
	for (unsigned i = 0; i < cfg->n_probes; i++) {
		struct lane_probe *lp;

		if (cfg->probes[i].target != ti)
			continue;
		if (probe_uses_probe_file(&cfg->probes[i]))
			l->target.dir_only = false;
		lp = &l->probes[l->n_probes++];
		lp->cfg = &cfg->probes[i];
		lp->fingerprint = cfg_probe_fingerprint(cfg, lp->cfg);
		lane_probe_setup(l, lp, cfg);
		r = probe_metrics_init(&lp->series, m, cfg, lp->cfg, tc->name,
				       lp->engine ? lp->engine : lp->cfg->engine);
		if (r < 0)
			return r;
		if (cfg_probe_writes(lp->cfg))
			l->target.want_write = true;
		if (lp->cfg->timeout_ns < l->check_step_ns)
			l->check_step_ns = lp->cfg->timeout_ns;
	}
	return 0;
}

int lane_init(struct lane *l, const struct config *cfg, unsigned ti, struct metrics *m)
{
	const struct cfg_target *tc = &cfg->targets[ti];
	int r;

	memset(l, 0, sizeof(*l));
	l->config = cfg_ref(cfg);
	l->cfg = tc;
	status_judging_of(tc, &l->judge);
	devbusy_init(&l->devbusy);
	l->steal.fd = -1;
	atomic_init(&l->inflight_ns, 0);
	atomic_init(&l->running, -1);
	atomic_init(&l->up, false);
	atomic_init(&l->pinned, false);
	atomic_init(&l->timeout_claimed, 0);
	atomic_init(&l->stuck_logged, false);
	atomic_init(&l->run_mono_ns, 0);
	atomic_init(&l->stopping, false);
	atomic_init(&l->busy_ns, 0);
	atomic_init(&l->retired, false);
	l->notify_fd = -1;
	l->watch_fd = -1;
	l->check_step_ns = LAYOUT_LOG_NS; /* or the shortest timeout of its probes */
	l->start_wall_s = wall_now_s();	  /* starting since (before any scrape sees it) */
	target_init(&l->target, tc);
	r = lane_init_sync(l);
	if (r < 0)
		return r;
	l->claim = lane_claim_of(tc);
	if (!l->claim)
		return -ENOMEM;
	l->watch_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (l->watch_fd < 0)
		return -errno;

	r = lane_probes_init(l, cfg, ti, m);
	if (r < 0)
		return r;
	l->target.stop = &l->stopping;
	l->target.inflight_ns = &l->inflight_ns;
	/* Read before and after each run: a failure costs only the steal counter. */
	r = cpusteal_open(&l->steal, hostload_proc_root());
	if (r < 0)
		log_warning_errno(r,
				  "Target %s: cannot open %s/stat: %m; CPU steal is not counted, "
				  "ignoring",
				  tc->name, hostload_proc_root());
	return 0;
}

/* Under the lane mutex: arm watch_fd for @at (eng_mono_ns()), 0 disarms. One
 * system call, no wake-up: only when it changes. */
void lane_arm(struct lane *l, uint64_t at)
{
	struct itimerspec its = {0};

	if (at == l->watch_at || l->watch_fd < 0)
		return;
	if (at)
		its.it_value = eng_timespec(at);
	/* Cannot fail with a valid descriptor and time; a timer left as it was
	 * would only wake the scheduler for nothing. */
	(void)timerfd_settime(l->watch_fd, TFD_TIMER_ABSTIME, &its, NULL);
	l->watch_at = at;
}

/* Under the lane mutex: the earliest retry time of a held-back burst (eng_now_ns()),
 * its probe in *@pi; 0 and -1 when none. */
static uint64_t lane_next_retry(const struct lane *l, int *pi)
{
	uint64_t at = 0;

	*pi = -1;
	for (unsigned i = 0; i < l->n_probes; i++)
		if (l->probes[i].busy_retry_ns && (!at || l->probes[i].busy_retry_ns < at)) {
			at = l->probes[i].busy_retry_ns;
			*pi = (int)i;
		}
	return at;
}

/*
 * Under the lane mutex, with nothing queued: hands the lane what is due, and
 * returns the index of a held-back burst whose retry is due (its retry cleared),
 * or -1 with work queued, or after sleeping until the next due time or retry or
 * a wake-up (a probe enqueued, a stop: the caller looks again). The watch timer
 * is disarmed meanwhile: nothing runs. Due times are on CLOCK_MONOTONIC, which
 * the wait uses too, so a wake-up for one finds it due.
 */
static int lane_wait_work(struct lane *l)
{
	uint64_t due = lane_due(l, eng_mono_ns()), retry, at;
	int pi;

	if (l->q_len)
		return -1;
	retry = lane_next_retry(l, &pi);
	if (pi >= 0 && eng_now_ns() >= retry) {
		l->probes[pi].busy_retry_ns = 0;
		return pi;
	}
	lane_arm(l, 0);
	/* The wait is on CLOCK_MONOTONIC: the retry time (the probes' clock, which
	 * may lag it) becomes as far from it as from that clock. */
	at = earliest(due, retry ? mono_at(retry, eng_now_ns(), eng_mono_ns()) : 0);
	if (!at) {
		pthread_cond_wait(&l->cv, &l->mu);
	} else {
		struct timespec ts = eng_timespec(at);

		pthread_cond_timedwait(&l->cv, &l->mu, &ts);
	}
	return -1;
}

/* Under the lane mutex: the next probe to run (queued work first, then a retry
 * due, @retry), marked running; the watch timer armed for the run. */
static struct lane_probe *lane_begin_run(struct lane *l, int retry)
{
	uint64_t now;
	unsigned pi;

	if (l->q_len) {
		pi = l->queue[l->q_head];
		l->q_head = (l->q_head + 1) % l->n_probes;
		l->q_len--;
		l->probes[pi].queued = false;
	} else {
		pi = (unsigned)retry;
	}
	l->busy = true;
	atomic_store(&l->running, (int)pi);
	/* CLOCK_MONOTONIC itself: what the timer runs on (and no read of the
	 * probes' clock, which a test may count). */
	now = eng_mono_ns();
	atomic_store(&l->run_mono_ns, now);
	lane_arm(l, earliest(lane_due(l, now), now + l->check_step_ns));
	return &l->probes[pi];
}

static void *lane_main(void *arg)
{
	struct lane *l = arg;
	bool let_go;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct lane_probe *lp;
		int retry = -1;

		while (!l->stop && l->q_len == 0 && retry < 0)
			retry = lane_wait_work(l);
		if (l->stop)
			break;
		/* lane_wait_work() returns a retry only while nothing is queued (under
		 * this mutex): queued work always goes first. */
		lp = lane_begin_run(l, retry);
		pthread_mutex_unlock(&l->mu);

		lane_run_probe(l, lp, retry >= 0);
		/* The I/O the scheduler reported stuck has come back: say so once
		 * (a retired lane's target is its successor's to speak of). */
		if (!atomic_load(&l->retired) && atomic_exchange(&l->stuck_logged, false)) {
			char key[LOG_KEY_MAX];

			log_state_notice(target_key(l, key),
					 "Target %s: the stuck I/O finished, target is up again",
					 l->cfg->name);
		}

		pthread_mutex_lock(&l->mu);
		/* Still busy: what fell due during the run waited for it, whether the
		 * scheduler saw it then or not. Not when stopping: those runs never
		 * come, and a lane abandoned at a reload would count them late in the
		 * series its successor shares. */
		if (!l->stop)
			lane_due(l, eng_mono_ns());
		atomic_store(&l->running, -1);
		l->busy = false;
	}
	lane_arm(l, 0);
	l->exited = true;
	let_go = l->let_go;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	if (let_go)
		lane_gone(l);
	return NULL;
}

int lane_start(struct lane *l)
{
	int r = pthread_create(&l->thread, NULL, lane_main, l);

	if (r)
		return -r;
	l->started = true;
	return 0;
}

/* Under the lane mutex: what a probe handed to the lane, due at @due_ns (0:
 * now), waits behind: the probe running or, while none runs, the first in the
 * queue. A probe-file layout (in whichever probe's run opened the target) and a
 * burst hold the target for their whole run by design; anything else means slow
 * storage. A slot counted after the run that laid out waited for the layout if
 * it fell due before the layout ended. */
static enum probe_wait lane_held_by(const struct lane *l, int *holder, uint64_t due_ns)
{
	int pi = atomic_load(&l->running);
	uint64_t ended = atomic_load(&l->target.layout_ended_ns);
	/* The run in progress made a layout, over now, and @due_ns came before its end. */
	bool laid_out = due_ns && ended >= atomic_load(&l->run_mono_ns) && due_ns <= ended;

	if (pi < 0 && l->q_len)
		pi = (int)l->queue[l->q_head];
	*holder = pi;
	if (pi >= 0 && (atomic_load(&l->target.layout_total) || laid_out))
		return PROBE_WAIT_LAYOUT;
	if (pi >= 0 && l->probes[pi].probe.ops->flags & PROBE_F_EXCLUSIVE)
		return PROBE_WAIT_BURST;
	return PROBE_WAIT_BUSY;
}

/* Under the lane mutex: probe @pi fell due at @due_ns (0: now, lane_enqueue()). */
static void lane_hand(struct lane *l, unsigned pi, uint64_t due_ns)
{
	struct lane_probe *lp = &l->probes[pi];
	enum probe_wait why;
	int holder;
	bool self;

	why = lane_held_by(l, &holder, due_ns);
	self = holder == (int)pi;
	/* Due while its previous run still waits in the queue: skipped. A burst due
	 * while its own previous run is still going too: the run is longer than its
	 * schedule, the storage is slow (unless that run is laying out the probe
	 * file). Anything else waits its turn, a burst included: behind pings (a few
	 * I/Os), another burst (schedules like 15m and 1h fall due together every
	 * time, and the later one would never run) or a layout (a new host's first
	 * bursts would otherwise wait a whole interval). */
	if (lp->queued || (self && lp->probe.ops->flags & PROBE_F_SKIP_IF_RUNNING)) {
		if (!atomic_load(&l->retired)) /* (set under this mutex too) */
			probe_metrics_skipped(&lp->series, self && why == PROBE_WAIT_BURST
								   ? PROBE_WAIT_BUSY
								   : why);
		return;
	}
	if ((l->busy || l->q_len) && !atomic_load(&l->retired))
		probe_metrics_deferred(&lp->series, why);
	l->queue[(l->q_head + l->q_len) % l->n_probes] = pi;
	l->q_len++;
	lp->queued = true;
	lp->busy_retry_ns = 0;	     /* its regular run comes first and checks again */
	pthread_cond_signal(&l->cv); /* no-op for the lane thread itself */
}

void lane_enqueue(struct lane *l, unsigned pi)
{
	pthread_mutex_lock(&l->mu);
	lane_hand(l, pi, 0);
	pthread_mutex_unlock(&l->mu);
}

void lane_schedule(struct lane *l, unsigned pi, uint64_t due_ns)
{
	l->probes[pi].due_ns = due_ns;
}

/* Under the lane mutex: the probe due earliest, at @now_ns or before; -1: none.
 * Ties go in the configuration's order. */
static int lane_first_due(const struct lane *l, uint64_t now_ns)
{
	int first = -1;

	for (unsigned i = 0; i < l->n_probes; i++) {
		uint64_t d = l->probes[i].due_ns;

		if (d && d <= now_ns && (first < 0 || d < l->probes[first].due_ns))
			first = (int)i;
	}
	return first;
}

uint64_t lane_due(struct lane *l, uint64_t now_ns)
{
	uint64_t next = 0;
	int pi;

	while ((pi = lane_first_due(l, now_ns)) >= 0) {
		struct lane_probe *lp = &l->probes[pi];
		uint64_t interval = lp->cfg->interval_ns;

		lane_hand(l, (unsigned)pi, lp->due_ns);
		lp->due_ns += interval;
		if (lp->due_ns <= now_ns) /* fell behind: drop missed slots, keep the phase */
			lp->due_ns += ((now_ns - lp->due_ns) / interval + 1) * interval;
	}
	for (unsigned i = 0; i < l->n_probes; i++)
		next = earliest(next, l->probes[i].due_ns);
	return next;
}

void lane_request_stop(struct lane *l)
{
	atomic_store(&l->stopping, true);
	pthread_mutex_lock(&l->mu);
	l->stop = true;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	lane_claim_wake(l); /* a lane waiting for its target's claim stops waiting */
}

bool lane_wait(struct lane *l, uint64_t deadline_ns)
{
	struct timespec ts = eng_timespec(deadline_ns);
	bool done;

	if (!l->started)
		return true;
	pthread_mutex_lock(&l->mu);
	while (!l->exited)
		if (pthread_cond_timedwait(&l->cv, &l->mu, &ts) == ETIMEDOUT)
			break;
	done = l->exited;
	pthread_mutex_unlock(&l->mu);
	if (done && !l->joined)
		pthread_join(l->thread, NULL);
	l->joined = l->joined || done;
	return done;
}

void lane_drop_probe_series(struct lane_probe *lp)
{
	probe_metrics_drop(&lp->series);
}

void lane_drop_target_series(struct lane *l)
{
	probe_metrics_target_drop(&l->series);
}

void lane_drop_target_info(struct lane *l)
{
	probe_metrics_target_info_drop(&l->series);
	for (unsigned pi = 0; pi < l->n_probes; pi++)
		probe_metrics_regress_drop(&l->probes[pi].series);
}

void lane_rejudge(struct lane *l, const struct cfg_target *t)
{
	status_judging_of(t, &l->judge);
	if (probe_metrics_target_judge(&l->series, t) < 0)
		log_warning("Target %s: out of memory for iopulse_target_slow_floor_seconds, "
			    "ignoring",
			    l->cfg->name);
}

void lane_destroy(struct lane *l)
{
	if (!l->initialised) {
		cfg_free(l->config);
		l->config = NULL;
		return;
	}
	for (unsigned i = 0; l->probes && i < l->n_probes; i++)
		probe_free(&l->probes[i].probe);
	probe_outcome_free(&l->outcome);
	devbusy_close(&l->devbusy);
	cpusteal_close(&l->steal);
	/* The probe file and its lock first, then the claim: the target's next
	 * lane opens it as soon as it has the claim. */
	target_close(&l->target);
	lane_claim_release(l);
	free(l->probes);
	free(l->queue);
	free(l->judge_ops);
	l->watch_fd = safe_close(l->watch_fd);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->pub_mu);
	pthread_mutex_destroy(&l->mu);
	l->probes = NULL;
	l->queue = NULL;
	l->initialised = false;
	cfg_free(l->config);
	l->config = NULL;
}
