/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "engines/engine.h"
#include "lib/ioprio.h"
#include "daemon/sched/lane.h"
#include "daemon/log.h"
#include "lib/stack.h"

#define LAYOUT_LOG_NS 5000000000ULL /* a layout's progress: a line this often */

/* Sets up a probe; a failure is kept and reported by each run. */
static void lane_probe_setup(struct lane *l, struct lane_probe *lp, const struct config *cfg)
{
	int r = probe_init(&lp->probe, lp->cfg, &l->target, cfg->buckets_ns, cfg->n_buckets);
	char why[256];

	if (lp->probe.engine)
		lp->engine = lp->probe.engine->name;
	lp->probe.timeout_claimed = &l->timeout_claimed;
	lp->ready = r == 0;
	lp->init_error = r;
	if (r == -ENOENT || r == -EOPNOTSUPP)
		log_error("Probe %s: engine '%s' is %s; the probe will not run", lp->cfg->name,
			  lp->cfg->engine,
			  r == -ENOENT ? "not built in" : "not available on this system");
	else if (r == -EPERM && ioprio_is_realtime(lp->cfg->io_priority))
		log_error("Probe %s: 'io_priority: %s' needs CAP_SYS_ADMIN (or CAP_SYS_NICE), "
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
	/* Shutdown waits on this with a CLOCK_MONOTONIC deadline: a wall-clock step
	 * must neither stretch the grace period nor cut it short. */
	r = pthread_condattr_init(&ca);
	if (!r)
		r = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!r)
		r = pthread_cond_init(&l->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (r)
		return -r;
	l->initialised = true;
	return 0;
}

/*
 * Counted on a running daemon (ls /proc/PID/fd, and under strace for what an
 * open holds on the way): a lane holds its watch timerfd and /proc/stat (CPU
 * steal); its target, its probe file and the descriptor holding the file's lock
 * (a directory no probe needs a probe file in: the directory; a file or a
 * device: itself); sysfs's block/ and its disk's stat once a burst checks
 * whether the disk is busy (one more per further disk behind an md or LVM).
 * On the way, one thing at a time on the lane's thread, but every lane at
 * once: a path walk holds the directory reached, a symlink and "/" (an absolute
 * symlink), or a probe's run holds what its row says.
 */
#define LANE_FDS	 2
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

int lane_init(struct lane *l, const struct config *cfg, unsigned ti, struct metrics *m)
{
	const struct cfg_target *tc = &cfg->targets[ti];
	unsigned n = 0;
	int r;

	memset(l, 0, sizeof(*l));
	l->cfg = tc;
	devbusy_init(&l->devbusy);
	l->steal.fd = -1;
	atomic_init(&l->inflight_ns, 0);
	atomic_init(&l->running, -1);
	atomic_init(&l->up, false);
	atomic_init(&l->timeout_claimed, 0);
	atomic_init(&l->stuck_logged, false);
	atomic_init(&l->run_mono_ns, 0);
	atomic_init(&l->stopping, false);
	atomic_init(&l->busy_ns, 0);
	l->notify_fd = -1;
	l->watch_fd = -1;
	l->check_step_ns = LAYOUT_LOG_NS; /* or the shortest timeout of its probes */
	target_init(&l->target, tc);
	r = lane_init_sync(l);
	if (r < 0)
		return r;
	l->watch_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (l->watch_fd < 0)
		return -errno;

	for (unsigned i = 0; i < cfg->n_probes; i++)
		n += cfg->probes[i].target == ti;
	l->probes = calloc(n ? n : 1, sizeof(*l->probes));
	l->queue = calloc(n ? n : 1, sizeof(*l->queue));
	if (!l->probes || !l->queue)
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

/* ---------------------------------------------------------------- running */

/*
 * Log lines about a target or a probe report changes of its state, one line per
 * change, and go through log_state_*() under the key "Target NAME" or "Probe
 * NAME": a target or probe that flaps logs at most LOG_RATELIMIT_BURST changes
 * per LOG_RATELIMIT_INTERVAL_NS, then one summary with the count and the state it
 * was left in.
 */
#define LOG_KEY_MAX (sizeof("Target ") + CFG_NAME_MAX) /* room for any name */

static const char *target_key(const struct lane *l, char *buf)
{
	snprintf(buf, LOG_KEY_MAX, "Target %s", l->cfg->name);
	return buf;
}

static const char *probe_key(const struct lane_probe *lp, char *buf)
{
	snprintf(buf, LOG_KEY_MAX, "Probe %s", lp->cfg->name);
	return buf;
}

/* 'up' for the scrapes and STATUS=; a change wakes the scheduler for STATUS=. */
static void set_up(struct lane *l, bool up)
{
	uint64_t one = 1;

	if (atomic_exchange(&l->up, up) != up && l->notify_fd >= 0) {
		ssize_t w = write(l->notify_fd, &one, sizeof(one));

		(void)w; /* only fails with the counter full: it is drained at each wake-up */
	}
}

/* The status page reads the reason from the HTTP thread: under the lane mutex,
 * which is never held across I/O. */
static void set_down_reason(struct lane *l, const char *why)
{
	pthread_mutex_lock(&l->mu);
	snprintf(l->down_reason, sizeof(l->down_reason), "%s", why);
	pthread_mutex_unlock(&l->mu);
}

/*
 * The target could not be checked or opened (@r, the reason in t->error). One
 * line per outage: the first failure is the event (an unmount, a removed
 * directory, the probe file deleted and not re-created) and says why; what the
 * attempts to open it again then run into (no such directory, a different
 * filesystem) is the same event seen from another side, and only logged at debug
 * level.
 */
static void target_down(struct lane *l, int r)
{
	char key[LOG_KEY_MAX];

	set_up(l, false);
	if (l->down_logged) {
		if (strcmp(l->down_reason, l->target.error) != 0) {
			set_down_reason(l, l->target.error);
			log_debug("Target %s is still down: %s", l->cfg->name, l->target.error);
		}
		return;
	}
	l->down_logged = true;
	set_down_reason(l, l->target.error);
	log_state_error_errno(target_key(l, key), r, "Target %s is down: %s", l->cfg->name,
			      l->target.error);
}

static void target_is_up(struct lane *l)
{
	char key[LOG_KEY_MAX];

	if (l->down_logged) {
		log_state_notice(target_key(l, key), "Target %s is up again (%s)", l->cfg->name,
				 l->target.file_path);
		l->down_logged = false;
		set_down_reason(l, "");
	}
	set_up(l, true);
}

/*
 * The lane thread writes the target's series under the lane mutex, and only
 * while the lane still owns them: a reload takes them from every old lane (it
 * frees them with a removed target, leaves them to the new lane otherwise), and
 * an old lane abandoned in the kernel whose I/O returns later must not write a
 * freed series. Returns with the mutex held, true when the series may be
 * written; series_end() unlocks.
 */
static bool series_begin(struct lane *l)
{
	pthread_mutex_lock(&l->mu);
	return !l->series_gone;
}

static void series_end(struct lane *l)
{
	pthread_mutex_unlock(&l->mu);
}

/*
 * A failed probe-file layout (no room, a write error) wrote up to the whole file
 * for nothing, and what it wrote is freed again: retried on every ping, it would
 * keep the disk busy writing it over and over. So the next target_open() waits
 * LAYOUT_BACKOFF_MIN_NS after the first failure, twice as long after each further
 * one in a row, at most LAYOUT_BACKOFF_MAX_NS (a disk that is full for a day is
 * still tried every hour); a successful open starts again from the minimum. Due
 * runs in between count as target_down without touching the disk.
 */
#define LAYOUT_BACKOFF_MIN_NS (10 * NSEC_PER_SEC)   /* 10 s */
#define LAYOUT_BACKOFF_MAX_NS (3600 * NSEC_PER_SEC) /* 1 h */

/* target_open() failed laying out the probe file (@r): count it, back off, and
 * say when it is tried again (one line per attempt). */
static void layout_failed(struct lane *l, int r)
{
	char key[LOG_KEY_MAX], when[32];

	if (!l->layout_backoff_ns)
		l->layout_backoff_ns = LAYOUT_BACKOFF_MIN_NS;
	else if (l->layout_backoff_ns < LAYOUT_BACKOFF_MAX_NS / 2)
		l->layout_backoff_ns *= 2;
	else
		l->layout_backoff_ns = LAYOUT_BACKOFF_MAX_NS;
	/* From the end of the attempt: a slow layout does not eat into the wait. */
	l->layout_retry_ns = eng_now_ns() + l->layout_backoff_ns;
	l->layout_error = r;
	if (series_begin(l))
		probe_metrics_layout_failed(&l->series);
	series_end(l);
	set_up(l, false);
	cfg_format_duration(l->layout_backoff_ns, when, sizeof(when));
	set_down_reason(l, l->target.error);
	log_state_error_errno(target_key(l, key), r, "Target %s is %sdown: %s, retrying in %s",
			      l->cfg->name, l->down_logged ? "still " : "", l->target.error, when);
	l->down_logged = true;
}

/*
 * iopulse_target_info after each open: what the target is on may be known for
 * the first time, or have changed (a directory re-created on another disk). It
 * reads sysfs, never the target's filesystem, so it cannot hang.
 */
static void lane_describe_target(struct lane *l)
{
	struct target_desc d;

	target_describe(&l->target, &d);
	if (series_begin(l) && probe_metrics_target_info(&l->series, &d) < 0)
		log_warning("Target %s: out of memory for iopulse_target_info, ignoring",
			    l->cfg->name);
	series_end(l);
}

/*
 * Before each run: checks the open target, or opens it (a deleted probe file is
 * re-created at once), and logs what it decides. Metadata calls (the checks,
 * opening) hang on a dead NFS or FUSE mount as readily as I/O does: they count as
 * in flight too; a layout then publishes each of its writes in the same place.
 * Returns 0 when the target is ready, or -errno (the run counts as target_down);
 * -ECANCELED from a layout abandoned at shutdown.
 */
static int lane_prepare_target(struct lane *l)
{
	char key[LOG_KEY_MAX], stale[sizeof(l->target.error)] = "";
	bool opening = l->target.fd < 0;
	int r;

	if (l->target.fd < 0 && l->layout_retry_ns && eng_now_ns() < l->layout_retry_ns)
		return l->layout_error; /* backing off after a failed layout */

	atomic_store(&l->inflight_ns, eng_now_ns());
	if (l->target.fd < 0) {
		r = target_open(&l->target);
	} else {
		r = target_check(&l->target);
		if (r == -ESTALE) { /* a deleted probe file may be re-created; anything else
				     * waits for the next run */
			snprintf(stale, sizeof(stale), "%s", l->target.error);
			opening = true;
			r = target_open(&l->target);
		}
	}
	atomic_store(&l->inflight_ns, 0);
	if (l->target.stale_removed) { /* files deleted, whatever came next: say so */
		log_notice("Target %s: removed %u temporary probe file(s) left by an iopulse "
			   "killed during a layout",
			   l->cfg->name, l->target.stale_removed);
		l->target.stale_removed = 0;
	}
	if (l->target.link_removed[0]) {
		log_notice("Target %s: removed %s, a second name of %s left by an iopulse killed "
			   "while naming it",
			   l->cfg->name, l->target.link_removed, l->target.file_path);
		l->target.link_removed[0] = '\0';
	}

	if (r == -ECANCELED && atomic_load(&l->stopping))
		return r; /* abandoned at shutdown: nothing is wrong with the target */
	if (r < 0) {
		if (l->target.layout_failed)
			layout_failed(l, r);
		else
			target_down(l, r);
		return r;
	}
	l->layout_backoff_ns = 0;
	l->layout_retry_ns = 0;
	if (stale[0] && !l->down_logged)
		log_state_warning(target_key(l, key), "Target %s: %s, re-opened", l->cfg->name,
				  stale);
	/* Up as soon as a layout is over (a scrape in between would see a target
	 * neither laid out nor up); describing it reads /proc and /sys. */
	target_is_up(l);
	if (opening) {
		lane_describe_target(l);
		l->devbusy_found = false; /* the disks are looked up again before a burst */
		/* Opening went ~30 KiB deep (mount check, path walk); runs need a
		 * quarter of it. */
		stack_release();
	}
	return 0;
}

static bool is_op_name(const char *what)
{
	for (int op = 0; op < IO_OP_COUNT; op++)
		if (strcmp(what, io_op_name(op)) == 0)
			return true;
	return false;
}

/*
 * The probe's state after a run: @err 0 (it ran without errors) or the -errno of
 * its first failure, @what failed (an io_op_name() or a literal), followed in
 * the log by what errno says unless @what says it already. Logs a line when it
 * changed: a write that keeps failing while the fdatasync after it succeeds is
 * one state, one line.
 */
static void probe_state_log(struct lane_probe *lp, int err, const char *what, bool add_errno)
{
	char key[LOG_KEY_MAX], was[sizeof(lp->state_what)];

	/* As stored: a long @what is kept cut short, and is still the same state. */
	if (err == lp->state_error &&
	    (!err || strncmp(what, lp->state_what, sizeof(lp->state_what) - 1) == 0))
		return;
	memcpy(was, lp->state_what, sizeof(was));
	lp->state_error = err;
	snprintf(lp->state_what, sizeof(lp->state_what), "%s", err ? what : "");
	if (err && add_errno)
		log_state_error_errno(probe_key(lp, key), err, "Probe %s: %s: %m", lp->cfg->name,
				      what);
	else if (err)
		log_state_error(probe_key(lp, key), "Probe %s: %s", lp->cfg->name, what);
	else if (is_op_name(was))
		log_state_notice(probe_key(lp, key), "Probe %s: %s succeeds again", lp->cfg->name,
				 was);
	else
		log_state_notice(probe_key(lp, key), "Probe %s: runs without errors again",
				 lp->cfg->name);
}

static void probe_state(struct lane_probe *lp, int err, const char *what)
{
	probe_state_log(lp, err, what, true);
}

/* probe_state() for a @why that says the error whole. */
static void probe_state_said(struct lane_probe *lp, int err, const char *why)
{
	probe_state_log(lp, err, why, false);
}

static uint64_t age(uint64_t now_ns, uint64_t since_ns)
{
	/* since may be newer than a clock read taken before it was stored */
	return since_ns && now_ns > since_ns ? now_ns - since_ns : 0;
}

/* @what, with the outcome's reason when it gives one, in @buf. */
static const char *with_why(const char *what, const char *why, char *buf, size_t len)
{
	if (!why)
		return what;
	snprintf(buf, len, "%s: %s", what, why);
	return buf;
}

/* The state a finished run leaves the probe in, logged when it changed. */
static void run_state(struct lane *l, struct lane_probe *lp, const struct probe_outcome *o)
{
	char what[sizeof(lp->state_what)], early[64];

	if (o->timed_out) {
		char key[LOG_KEY_MAX];

		/* Every time: each one is an event (and the limit per probe holds). */
		lp->state_error = -ETIME;
		snprintf(lp->state_what, sizeof(lp->state_what), "timeout");
		log_state_error(probe_key(lp, key),
				"Probe %s: I/O on target %s in flight for over %.3gs (timeout), "
				"%s aborted",
				lp->cfg->name, l->cfg->name, lp->cfg->timeout_ns / 1e9,
				cfg_probe_kind_name(lp->cfg->kind));
	} else if (o->error) {
		snprintf(early, sizeof(early), "%s stopped early",
			 cfg_probe_kind_name(lp->cfg->kind));
		probe_state(lp, o->error, with_why(early, o->why, what, sizeof(what)));
	} else if (o->io_error) {
		probe_state(lp, o->io_error, o->io_what);
	} else if (!o->incomplete) {
		probe_state(lp, 0, NULL);
	}
}

/* ---------------------------------------------------------------- budget */

#define BUDGET_DAY_NS (86400 * NSEC_PER_SEC)

/*
 * Starts the day's count of written bytes afresh when a new day began. A day is
 * 24h of the monotonic clock (eng_now_ns()), so that a wall-clock step neither
 * grants nor takes budget. Called only around writes: a lane of read probes
 * reads no clock for it.
 */
static void lane_budget_day(struct lane *l)
{
	uint64_t day = eng_now_ns() / BUDGET_DAY_NS;
	char key[LOG_KEY_MAX];

	if (day == l->budget_day)
		return;
	l->budget_day = day;
	l->written_today = 0;
	if (series_begin(l))
		probe_metrics_target_spent(&l->series, 0, 0, 0);
	series_end(l);
	if (l->budget_spent)
		log_state_notice(target_key(l, key), "Target %s: a new day, write probes run again",
				 l->cfg->name);
	l->budget_spent = false;
}

/*
 * Whether the target's write budget lets write probe @lp run, and what it may
 * write then (lp->probe.write_left): what is left of the day's budget. The
 * budget is spent for @lp once what is left would not hold one block of its
 * own: a probe that checks past the budget (a verify probe) then runs with
 * nothing to write, reading and checking only; any other is skipped, counted.
 * A probe that runs keeps within what is left: a ping writes one block (with
 * a warm-up only when both fit), a burst and a verify probe stop their writes
 * short themselves (PROBE_F_BUDGETED). One line when the budget is spent (and
 * one when a new day opens it again).
 */
static bool lane_budget_allows(struct lane *l, struct lane_probe *lp)
{
	uint64_t max = l->cfg->max_write_per_day, left;
	char key[LOG_KEY_MAX], size[32];

	lp->probe.write_left = UINT64_MAX;
	if (!max || !cfg_probe_writes(lp->cfg))
		return true;
	lane_budget_day(l);
	left = l->written_today < max ? max - l->written_today : 0;
	lp->probe.write_left = left;
	if (left >= lp->cfg->block_size)
		return true;
	if (!l->budget_spent) {
		cfg_format_size(max, size, sizeof(size));
		log_state_warning(target_key(l, key),
				  "Target %s: the probes wrote its max_write_per_day (%s) today: "
				  "write probes are skipped until the day is over, verify probes "
				  "check their blocks without rewriting them, reads go on",
				  l->cfg->name, size);
		l->budget_spent = true;
	}
	if (lp->probe.ops && lp->probe.ops->flags & PROBE_F_CHECKS_PAST_BUDGET) {
		lp->probe.write_left = 0;
		return true;
	}
	probe_metrics_skipped(&lp->series, PROBE_WAIT_BUDGET);
	return false;
}

/* What run @o cost the target: time busy and bytes written (today's too, on
 * a target without a budget as well), warm-up and ramp writes included: the
 * device wears the same. */
static void lane_account(struct lane *l, const struct probe_outcome *o)
{
	uint64_t written = o->op[IO_WRITE].bytes + o->op[IO_WRITE].warmup_bytes;

	if (written)
		lane_budget_day(l);
	l->written_today += written;
	atomic_fetch_add(&l->busy_ns, o->busy_ns);
	if (series_begin(l))
		probe_metrics_target_spent(&l->series, o->busy_ns / 1e9, written, l->written_today);
	series_end(l);
}

/* ------------------------------------------------- busy disks and CPU steal */

/* What the log last said about the target's disks: one line per change. */
enum { DEVBUSY_LOGGED_NOTHING, DEVBUSY_LOGGED_NONE, DEVBUSY_LOGGED_IDLE, DEVBUSY_LOGGED_BUSY };

/* The disks behind the target, looked up once after each open (sysfs only);
 * false when there are none to check. */
static bool lane_find_disks(struct lane *l)
{
	const char *sys = hostload_sys_root();
	char names[DEVBUSY_MAX_DEVS * (DEVBUSY_NAME_MAX + 1)] = "";
	int r;

	if (l->devbusy_found)
		return l->devbusy.n > 0;
	l->devbusy_found = true;
	r = devbusy_open(&l->devbusy, sys, l->target.dev);
	if (l->devbusy.n == 0) {
		if (l->devbusy_logged != DEVBUSY_LOGGED_NONE && r < 0)
			log_warning_errno(r,
					  "Target %s: cannot find its disks in %s: %m; bursts "
					  "run without checking whether they are busy, ignoring",
					  l->cfg->name, sys);
		else if (l->devbusy_logged != DEVBUSY_LOGGED_NONE)
			log_info("Target %s: no block device behind it (tmpfs, nfs, fuse...); "
				 "bursts run without checking whether it is busy",
				 l->cfg->name);
		l->devbusy_logged = DEVBUSY_LOGGED_NONE;
		return false;
	}
	for (unsigned i = 0; i < l->devbusy.n; i++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 i ? ", " : "", l->devbusy.name[i]);
	log_debug("Target %s: bursts wait while its disks are busy: %s", l->cfg->name, names);
	return true;
}

/* Sleeps one sampling window; false when a stop came first. */
static bool lane_sample_window(struct lane *l)
{
	struct timespec ts = eng_timespec(eng_mono_ns() + devbusy_window_ns);
	bool stop;

	pthread_mutex_lock(&l->mu);
	while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &ts) != ETIMEDOUT)
		; /* woken by a probe falling due: it waits its turn */
	stop = l->stop;
	pthread_mutex_unlock(&l->mu);
	return !stop;
}

enum disks_measured {
	DISKS_MEASURED,
	DISKS_UNKNOWN, /* they cannot be measured: the burst runs unchecked */
	DISKS_STOPPED, /* a stop came during the window: nothing runs */
};

/* Measures the target's disks over a window into @load and exports it. */
static enum disks_measured lane_measure_disks(struct lane *l, struct devbusy_load *load)
{
	struct devbusy_sample a, b;
	int r;

	r = devbusy_sample(&l->devbusy, eng_mono_ns(), &a);
	if (r == 0 && !lane_sample_window(l))
		return DISKS_STOPPED;
	if (r == 0)
		r = devbusy_sample(&l->devbusy, eng_mono_ns(), &b);
	if (r < 0) {
		log_debug("Target %s: cannot read the statistics of %s: %s; looking again",
			  l->cfg->name, l->devbusy.name[0], strerror(-r));
		l->devbusy_found = false; /* a disk went away: look them up again next time */
		return DISKS_UNKNOWN;
	}
	devbusy_load(l->devbusy.n, &a, &b, load);
	if (series_begin(l) &&
	    probe_metrics_target_device(&l->series, load->utilization, load->queue_depth) < 0)
		log_warning("Target %s: out of memory for the device gauges, ignoring",
			    l->cfg->name);
	series_end(l);
	return DISKS_MEASURED;
}

/* One log line when the disks turn busy or idle; @retry_at 0: no retry. */
static void log_disk_state(struct lane *l, struct lane_probe *lp, const struct devbusy_load *d,
			   bool busy, uint64_t retry_at)
{
	char key[LOG_KEY_MAX], when[48] = "at its next run";
	const char *disk = l->devbusy.name[d->dev];

	if (busy && l->devbusy_logged != DEVBUSY_LOGGED_BUSY) {
		if (retry_at) {
			memcpy(when, "in ", 4);
			cfg_format_duration(lp->busy_delay_ns, when + 3, sizeof(when) - 3);
		}
		log_state_notice(target_key(l, key),
				 "Target %s: %s is busy (%.0f%% utilised, queue depth %.1f): burst "
				 "%s held back, trying again %s",
				 l->cfg->name, disk, 100 * d->utilization, d->queue_depth,
				 lp->cfg->name, when);
	} else if (!busy && l->devbusy_logged == DEVBUSY_LOGGED_BUSY) {
		log_state_notice(target_key(l, key),
				 "Target %s: %s is no longer busy (%.0f%% utilised, queue depth "
				 "%.1f): bursts run again",
				 l->cfg->name, disk, 100 * d->utilization, d->queue_depth);
	}
	l->devbusy_logged = busy ? DEVBUSY_LOGGED_BUSY : DEVBUSY_LOGGED_IDLE;
}

/*
 * Before a burst: whether other work keeps the target's disks busy, so that the
 * burst is held back (counted as skipped, "device_busy") and tried again later
 * (devbusy_retry_at()); @retry: this run is such a retry. Pings are never held
 * back: they are the canary, one I/O each. Also true, not counted, when a stop
 * came while the disks were measured: a burst starting at shutdown would only
 * be aborted.
 */
static bool lane_disk_busy(struct lane *l, struct lane_probe *lp, bool retry)
{
	enum disks_measured m;
	struct devbusy_load d;
	uint64_t at = 0;
	bool busy;

	if (lp->cfg->kind != CFG_PROBE_BURST || !lp->cfg->busy_backoff || !lp->ready)
		return false;
	if (!retry) {
		lp->busy_due_ns = eng_now_ns();
		lp->busy_delay_ns = 0;
	}
	if (!lane_find_disks(l))
		return false;
	m = lane_measure_disks(l, &d);
	if (m != DISKS_MEASURED)
		return m == DISKS_STOPPED;
	busy = devbusy_is_busy(&d, lp->cfg->busy_utilization, lp->cfg->busy_depth, retry);
	if (busy) {
		probe_metrics_skipped(&lp->series, PROBE_WAIT_DEVICE_BUSY);
		at = devbusy_retry_at(eng_now_ns(), lp->busy_due_ns, lp->cfg->interval_ns,
				      &lp->busy_delay_ns);
		pthread_mutex_lock(&l->mu);
		lp->busy_retry_ns = at;
		pthread_mutex_unlock(&l->mu);
	}
	log_disk_state(l, lp, &d, busy, at);
	return busy;
}

/* Runs @lp (its target open) and publishes what it measured, with the CPU time
 * stolen meanwhile: /proc/stat read before and after, outside any timed I/O. */
static int lane_measure_run(struct lane *l, struct lane_probe *lp, struct probe_outcome *o)
{
	uint64_t steal0 = 0, steal1 = 0, t0, t1;
	bool steal = cpusteal_read(&l->steal, &steal0) == 0;
	int r;

	t0 = eng_now_ns();
	r = probe_run(&lp->probe, &l->stopping, o);
	t1 = eng_now_ns();
	steal = steal && cpusteal_read(&l->steal, &steal1) == 0;
	if (r == 0 && !o->discard) {
		/* The status page's figures due before this run see the histograms
		 * as they were then: nothing else changes them. */
		if (l->before_publish && !atomic_load(&l->stopping)) /* (its owner may be gone) */
			l->before_publish(l->before_publish_arg);
		probe_metrics_publish(&lp->series, o);
		probe_metrics_window(&lp->series, t1 > t0 ? (t1 - t0) / 1e9 : 0,
				     steal ? cpusteal_seconds(&l->steal, steal0, steal1) : 0);
	}
	return r;
}

/* One run of @lp; @retry: a burst held back earlier, tried again (lane_disk_busy()). */
static void lane_run_probe(struct lane *l, struct lane_probe *lp, bool retry)
{
	char what[sizeof(lp->state_what)];
	struct probe_outcome *o = &l->outcome;
	struct timespec wall;
	int r;

	if (!lane_budget_allows(l, lp))
		return;
	clock_gettime(CLOCK_REALTIME, &wall);
	r = lane_prepare_target(l);
	if (r == -ECANCELED && atomic_load(&l->stopping))
		return;
	if (r == 0 && lane_disk_busy(l, lp, retry))
		return; /* not a run: held back (counted as skipped), or stopping */
	probe_metrics_run(&lp->series, (double)wall.tv_sec + wall.tv_nsec / 1e9);
	if (r < 0) {
		probe_metrics_error(&lp->series, PROBE_ERR_TARGET_DOWN);
		return;
	}
	if (!lp->ready) {
		probe_metrics_error(&lp->series, PROBE_ERR_SETUP);
		probe_state(lp, lp->init_error, "cannot set up");
		return;
	}
	probe_outcome_clear(o);
	r = lane_measure_run(l, lp, o);
	/* What the probe found, for the log: probes never log themselves. */
	probe_outcome_say(o);
	lane_account(l, o); /* the I/O happened, whatever becomes of the results */
	if (o->discard)
		return;
	if (r < 0 && o->target_down) {
		probe_metrics_error(&lp->series, PROBE_ERR_TARGET_DOWN);
		probe_state_said(lp, r, o->why);
		return;
	}
	if (r < 0) {
		probe_metrics_error(&lp->series, PROBE_ERR_SETUP);
		probe_state(lp, r,
			    with_why("cannot run on this target", o->why, what, sizeof(what)));
		return;
	}
	run_state(l, lp, o);
}

static uint64_t earliest(uint64_t a, uint64_t b)
{
	return a && (!b || a < b) ? a : b;
}

/* @at on eng_now_ns()'s clock, which read @now_ns, on CLOCK_MONOTONIC, which
 * read @mono_ns (what timers and timed waits use): as far ahead of it. Where
 * the TSC lags the monotonic clock, arming @at itself would fire early, find
 * nothing due and re-arm in the past: a spin until the TSC caught up. */
static uint64_t mono_at(uint64_t at, uint64_t now_ns, uint64_t mono_ns)
{
	return mono_ns + (at > now_ns ? at - now_ns : 0);
}

/* Under the lane mutex: arm watch_fd for @at (eng_mono_ns()), 0 disarms. One
 * system call, no wake-up: only when it changes. */
static void lane_arm(struct lane *l, uint64_t at)
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
		/* The I/O the scheduler reported stuck has come back: say so once. */
		if (atomic_exchange(&l->stuck_logged, false)) {
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
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
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
		probe_metrics_skipped(&lp->series,
				      self && why == PROBE_WAIT_BURST ? PROBE_WAIT_BUSY : why);
		return;
	}
	if (l->busy || l->q_len)
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
	if (done)
		pthread_join(l->thread, NULL);
	return done;
}

/* The probe whose I/O is in flight and since when; NULL when idle. Reads each
 * atomic once, so the probe and its timeout belong together. */
static struct lane_probe *inflight_probe(struct lane *l, uint64_t *since)
{
	int pi = atomic_load(&l->running);
	struct lane_probe *lp = pi < 0 ? NULL : &l->probes[pi];

	*since = atomic_load(&l->inflight_ns);
	if (lp && !*since)
		*since = probe_inflight_since(&lp->probe);
	return lp && *since ? lp : NULL;
}

void lane_check_timeout(struct lane *l, uint64_t now_ns)
{
	uint64_t since;
	struct lane_probe *lp = inflight_probe(l, &since);
	char key[LOG_KEY_MAX];

	/* A burst counts its own timeouts (and aborts). */
	if (!lp || (lp->ready && lp->probe.ops->flags & PROBE_F_OWN_TIMEOUTS) ||
	    age(now_ns, since) < lp->cfg->timeout_ns ||
	    !probe_claim_timeout(&l->timeout_claimed, since))
		return;
	probe_metrics_error(&lp->series, PROBE_ERR_TIMEOUT);
	atomic_store(&l->stuck_logged, true);
	log_state_error(target_key(l, key),
			"Probe %s: I/O on target %s in flight for over %.3gs (timeout), target is "
			"stuck",
			lp->cfg->name, l->cfg->name, lp->cfg->timeout_ns / 1e9);
}

#define DUTY_MINUTE_NS (60 * NSEC_PER_SEC)
#define DUTY_WINDOW_NS (3600 * NSEC_PER_SEC)

/*
 * The share of the time the probes kept the target busy over the last hour
 * (or since the first scrape, when that is more recent): from the lane's busy
 * time at the first scrape of each minute, kept for an hour, to now. Between
 * scrapes, so without a clock read on the lane thread. 0 at the first scrape.
 */
static double lane_duty(struct lane *l, uint64_t now_ns)
{
	struct lane_duty_sample *s = &l->duty[now_ns / DUTY_MINUTE_NS % LANE_DUTY_SLOTS];
	uint64_t busy = atomic_load(&l->busy_ns);
	const struct lane_duty_sample *oldest = NULL;

	if (!s->t_ns || s->t_ns / DUTY_MINUTE_NS != now_ns / DUTY_MINUTE_NS)
		*s = (struct lane_duty_sample){.t_ns = now_ns, .busy_ns = busy};
	for (unsigned i = 0; i < LANE_DUTY_SLOTS; i++) {
		const struct lane_duty_sample *d = &l->duty[i];

		if (d->t_ns && d->t_ns <= now_ns && now_ns - d->t_ns <= DUTY_WINDOW_NS &&
		    (!oldest || d->t_ns < oldest->t_ns))
			oldest = d;
	}
	if (!oldest || oldest->t_ns == now_ns || busy < oldest->busy_ns)
		return 0;
	return (double)(busy - oldest->busy_ns) / (double)(now_ns - oldest->t_ns);
}

void lane_collect(struct lane *l, uint64_t now_ns)
{
	uint64_t since;
	struct lane_probe *lp = inflight_probe(l, &since);
	bool stuck = lp && age(now_ns, since) >= lp->cfg->timeout_ns;

	probe_metrics_target_set(&l->series, atomic_load(&l->up) && !stuck,
				 age(now_ns, since) / 1e9,
				 target_layout_progress(&l->target, NULL, NULL));
	probe_metrics_target_duty(&l->series, lane_duty(l, now_ns));
}

/* Why the target is not up, for the status page; @lp/@a: the I/O in flight. */
static void status_reason(struct lane *l, struct status_target *t, const struct lane_probe *lp,
			  uint64_t a)
{
	uint64_t total;
	double share = target_layout_progress(&l->target, NULL, &total);

	if (t->state == STATUS_STUCK) {
		snprintf(t->reason, sizeof(t->reason),
			 "I/O of probe %s in flight for %.1fs, past its %.3gs timeout",
			 lp->cfg->name, a / 1e9, lp->cfg->timeout_ns / 1e9);
	} else if (t->state == STATUS_DOWN) {
		pthread_mutex_lock(&l->mu);
		snprintf(t->reason, sizeof(t->reason), "%s", l->down_reason);
		pthread_mutex_unlock(&l->mu);
		if (!t->reason[0])
			t->state = STATUS_STARTING;
	}
	if (t->state != STATUS_STARTING)
		return;
	if (total)
		snprintf(t->reason, sizeof(t->reason), "laying out the probe file, %.0f%% done",
			 100.0 * share);
	else
		snprintf(t->reason, sizeof(t->reason), "not checked yet");
}

void lane_status(struct lane *l, uint64_t now_ns, struct status_target *t)
{
	uint64_t since;
	struct lane_probe *lp = inflight_probe(l, &since);
	uint64_t a = age(now_ns, since);

	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", l->cfg->name);
	snprintf(t->path, sizeof(t->path), "%s", l->cfg->path);
	t->inflight_s = lp ? a / 1e9 : 0;
	if (lp)
		snprintf(t->inflight_probe, sizeof(t->inflight_probe), "%s", lp->cfg->name);
	if (lp && a >= lp->cfg->timeout_ns)
		t->state = STATUS_STUCK;
	else if (atomic_load(&l->up))
		t->state = STATUS_UP;
	else
		t->state = STATUS_DOWN; /* or starting, when no reason is known */
	status_reason(l, t, lp, a);
}

void lane_status_probes(struct lane *l, struct status *st)
{
	for (unsigned pi = 0; pi < l->n_probes; pi++) {
		const struct probe_series *s = &l->probes[pi].series;
		/* Made lazily by the lane thread, last: acquire, then the rest is there. */
		struct metric_series *secs =
			atomic_load_explicit(&s->burst_seconds, memory_order_acquire);
		double errors = 0;

		for (int e = 0; e < PROBE_ERR_COUNT; e++)
			errors += metrics_value(s->errors[e]);

		for (int op = 0; op < IO_OP_COUNT; op++) {
			struct status_burst b = {.valid = secs != NULL};

			if (!s->latency[op])
				continue;
			if (b.valid) {
				b.iops = metrics_value(s->burst_iops[op]);
				b.bw = metrics_value(s->burst_bw[op]);
				for (int i = 0; i < 4; i++)
					b.q_s[i] = metrics_value(s->burst_q[op][i]);
				b.max_s = metrics_value(s->burst_max[op]);
				b.seconds = metrics_value(secs);
			}
			status_set_probe(st, l->probes[pi].cfg->name, l->cfg->name, op,
					 metrics_value(s->runs), errors,
					 l->probes[pi].cfg->interval_ns / 1e9, &b);
		}
	}
}

unsigned lane_status_ops(const struct lane *l, struct status_op *out)
{
	unsigned n = 0;

	for (unsigned pi = 0; pi < l->n_probes; pi++)
		for (int op = 0; op < IO_OP_COUNT; op++)
			if (l->probes[pi].series.latency[op])
				out[n++] = (struct status_op){
					.p = l->probes[pi].cfg,
					.target = l->cfg->name,
					.op = op,
					.latency = l->probes[pi].series.latency[op]};
	return n;
}

void lane_log_layout(struct lane *l, uint64_t now_ns)
{
	uint64_t done, total;
	double share = target_layout_progress(&l->target, &done, &total);

	if (!total) {
		l->layout_logged_ns = 0;
		return;
	}
	if (!l->layout_logged_ns) { /* first sight: wait a period, short layouts stay quiet */
		l->layout_logged_ns = now_ns;
		return;
	}
	if (now_ns - l->layout_logged_ns < LAYOUT_LOG_NS)
		return;
	l->layout_logged_ns = now_ns;
	log_info("Target %s: laying out the probe file, %.0f%% (%" PRIu64 " of %" PRIu64 " MiB)",
		 l->cfg->name, 100.0 * share, done >> 20, total >> 20);
}

/* When the scheduler looks at a running lane next (lane_watch()), on
 * CLOCK_MONOTONIC (@mono_ns, like @due_ns): the timeout and the layout line are
 * on the probes' clock (@now_ns), converted by what is left of them. */
static uint64_t lane_watch_next(struct lane *l, uint64_t now_ns, uint64_t mono_ns, uint64_t due_ns)
{
	uint64_t since, next = earliest(due_ns, mono_ns + l->check_step_ns);
	struct lane_probe *lp = inflight_probe(l, &since);

	/* Not yet timed out (else it was counted just now): look again when it is. */
	if (lp && age(now_ns, since) < lp->cfg->timeout_ns)
		next = earliest(next, mono_at(since + lp->cfg->timeout_ns, now_ns, mono_ns));
	if (l->layout_logged_ns)
		next = earliest(next,
				mono_at(l->layout_logged_ns + LAYOUT_LOG_NS, now_ns, mono_ns));
	return next;
}

void lane_watch(struct lane *l)
{
	uint64_t ticks, now = eng_now_ns(), due;

	if (read(l->watch_fd, &ticks, sizeof(ticks)) != (ssize_t)sizeof(ticks))
		return; /* armed anew since it fired: not due yet */
	lane_check_timeout(l, now);
	lane_log_layout(l, now);
	pthread_mutex_lock(&l->mu);
	l->watch_at = 0; /* fired: disarmed */
	/* Idle, its thread wakes for its next due time itself (and re-arms the
	 * timer when a run starts). */
	if (l->busy) {
		uint64_t mono = eng_mono_ns();

		due = lane_due(l, mono);
		lane_arm(l, lane_watch_next(l, now, mono, due));
	}
	pthread_mutex_unlock(&l->mu);
}

void lane_drop_probe_series(struct lane_probe *lp)
{
	probe_metrics_drop(&lp->series);
}

void lane_drop_target_series(struct lane *l)
{
	pthread_mutex_lock(&l->mu);
	l->series_gone = true;
	probe_metrics_target_drop(&l->series);
	pthread_mutex_unlock(&l->mu);
}

void lane_drop_target_info(struct lane *l)
{
	pthread_mutex_lock(&l->mu);
	l->series_gone = true;
	probe_metrics_target_info_drop(&l->series);
	pthread_mutex_unlock(&l->mu);
}

void lane_take_over(struct lane *l, struct lane *old)
{
	atomic_store(&l->up, atomic_load(&old->up));
	/* The same day's count: a reload is no reason to write more than the budget
	 * (nor to log that it is spent again). */
	l->budget_day = old->budget_day;
	l->written_today = old->written_today;
	l->budget_spent = old->budget_spent;
	/* The duty cycle's window goes on from the same busy time. */
	atomic_store(&l->busy_ns, atomic_load(&old->busy_ns));
	memcpy(l->duty, old->duty, sizeof(l->duty));
	pthread_mutex_lock(&l->mu);
	if (!l->series_gone && probe_metrics_target_info(&l->series, &old->series.desc) < 0)
		log_warning("Target %s: out of memory for iopulse_target_info, ignoring",
			    l->cfg->name);
	pthread_mutex_unlock(&l->mu);
}

void lane_destroy(struct lane *l)
{
	if (!l->initialised)
		return;
	for (unsigned i = 0; l->probes && i < l->n_probes; i++)
		probe_free(&l->probes[i].probe);
	probe_outcome_free(&l->outcome);
	devbusy_close(&l->devbusy);
	cpusteal_close(&l->steal);
	target_close(&l->target);
	free(l->probes);
	free(l->queue);
	if (l->watch_fd >= 0)
		close(l->watch_fd);
	l->watch_fd = -1;
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	l->probes = NULL;
	l->queue = NULL;
}
