/* SPDX-License-Identifier: MIT */
/*
 * lane_run — one run of a probe on its lane's thread (lane.h): the target
 * checked or opened, the write budget, the busy-disk check and the CPU steal
 * around it, and the state it leaves the target and the probe in, logged.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engines/engine.h"
#include "daemon/log.h"
#include "daemon/sched/lane_int.h"
#include "lib/stack.h"

/* ---------------------------------------------------------------- running */

static const char *probe_key(const struct lane_probe *lp, char *buf)
{
	snprintf(buf, LOG_KEY_MAX, "Probe %s", lp->cfg->name);
	return buf;
}

/* 'up' for the scrapes and STATUS=; a change wakes the scheduler for STATUS=. */
static void set_up(struct lane *l, bool up)
{
	uint64_t one = 1;

	if (atomic_exchange(&l->up, up) == up || l->notify_fd < 0)
		return;
	if (lane_pub_begin(l)) {
		ssize_t w = write(l->notify_fd, &one, sizeof(one));

		(void)w; /* only fails with the counter full: it is drained at each wake-up */
	}
	lane_pub_end(l);
}

/* The probe's run, error and skip counters, through the gate (lane_pub_begin()). */
static void count_run(struct lane *l, struct lane_probe *lp, double wall_s)
{
	if (lane_pub_begin(l))
		probe_metrics_run(&lp->series, wall_s);
	lane_pub_end(l);
}

static void count_error(struct lane *l, struct lane_probe *lp, enum probe_err why)
{
	if (lane_pub_begin(l))
		probe_metrics_error(&lp->series, why);
	lane_pub_end(l);
}

static void count_skipped(struct lane *l, struct lane_probe *lp, enum probe_wait why)
{
	if (lane_pub_begin(l))
		probe_metrics_skipped(&lp->series, why);
	lane_pub_end(l);
}

/* The status page reads the reason from the HTTP thread: under the lane mutex,
 * which is never held across I/O. The target is down for @why, its bounded
 * @code (target_reason_code()); the time it went down is its first reason's. */
static void set_down_reason(struct lane *l, const char *why, const char *code)
{
	double now = l->down_wall_s ? 0 : wall_now_s(); /* (only this thread writes it) */

	pthread_mutex_lock(&l->mu);
	snprintf(l->down_reason, sizeof(l->down_reason), "%s", why);
	snprintf(l->down_code, sizeof(l->down_code), "%s", code);
	if (!l->down_wall_s)
		l->down_wall_s = now;
	pthread_mutex_unlock(&l->mu);
}

/* Up: no reason, and since when, when it was not up (the first open, back up
 * after an outage). Only then: a run that finds it up as it was takes no lock. */
static void clear_down_reason(struct lane *l)
{
	if (atomic_load(&l->up) && !l->down_reason[0])
		return;
	pthread_mutex_lock(&l->mu);
	l->down_reason[0] = '\0';
	l->down_code[0] = '\0';
	l->down_wall_s = 0;
	if (!atomic_load(&l->up))
		l->up_wall_s = wall_now_s();
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
	const char *code = target_reason_code(&l->target, r);
	char key[LOG_KEY_MAX];

	/* The reason first, then down: a request in between must not see the
	 * target down without one (it would say "starting"). */
	if (l->down_logged) {
		if (strcmp(l->down_reason, l->target.error) != 0 || strcmp(l->down_code, code)) {
			set_down_reason(l, l->target.error, code);
			log_debug("Target %s is still down: %s", l->cfg->name, l->target.error);
		}
		set_up(l, false);
		return;
	}
	l->down_logged = true;
	set_down_reason(l, l->target.error, code);
	set_up(l, false);
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
	}
	clear_down_reason(l);
	set_up(l, true);
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
	if (lane_pub_begin(l))
		probe_metrics_layout_failed(&l->series);
	lane_pub_end(l);
	cfg_format_duration(l->layout_backoff_ns, when, sizeof(when));
	set_down_reason(l, l->target.error, target_reason_code(&l->target, r));
	set_up(l, false); /* after the reason, as in target_down() */
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
	if (lane_pub_begin(l) && probe_metrics_target_info(&l->series, &d) < 0)
		log_warning("Target %s: out of memory for iopulse_target_info, ignoring",
			    l->cfg->name);
	lane_pub_end(l);
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
	/* Not before a reload's old lane of the target has let go of it. */
	r = lane_claim(l);
	if (r < 0)
		return r;

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
	if (l->target.pinned && !atomic_load_explicit(&l->pinned, memory_order_relaxed))
		atomic_store_explicit(&l->pinned, true, memory_order_release);
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
	if (atomic_load(&l->retired))
		return -ECANCELED; /* what it found is its successor's to find and say */
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
	if (!lane_pub_begin(l)) { /* retired: its count is handed over as it is */
		lane_pub_end(l);
		return;
	}
	l->budget_day = day;
	l->written_today = 0;
	probe_metrics_target_spent(&l->series, 0, 0, 0);
	lane_pub_end(l);
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
	count_skipped(l, lp, PROBE_WAIT_BUDGET);
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
	/* Under the gate: lane_hand_over() reads the day's count under it, and a
	 * lane retired since lane_run_probe() looked hands over what it had. */
	if (lane_pub_begin(l)) {
		l->written_today += written;
		atomic_fetch_add(&l->busy_ns, o->busy_ns);
		probe_metrics_target_spent(&l->series, o->busy_ns / 1e9, written, l->written_today);
	}
	lane_pub_end(l);
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
	if (lane_pub_begin(l) &&
	    probe_metrics_target_device(&l->series, load->utilization, load->queue_depth) < 0)
		log_warning("Target %s: out of memory for the device gauges, ignoring",
			    l->cfg->name);
	lane_pub_end(l);
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
 * Before a burst (a kind with PROBE_F_BUSY_BACKOFF): whether other work keeps
 * the target's disks busy, so that the burst is held back (counted as skipped,
 * "device_busy") and tried again later (devbusy_retry_at()); @retry: this run
 * is such a retry. Pings are never held back: they are the canary, one I/O
 * each. Also true, not counted, when a stop came while the disks were
 * measured: a burst starting at shutdown would only be aborted.
 */
static bool lane_disk_busy(struct lane *l, struct lane_probe *lp, bool retry)
{
	enum disks_measured m;
	struct devbusy_load d;
	uint64_t at = 0;
	bool busy;

	if (!(probe_ops_of(lp->cfg->kind)->flags & PROBE_F_BUSY_BACKOFF) ||
	    !lp->cfg->busy_backoff || !lp->ready)
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
		count_skipped(l, lp, PROBE_WAIT_DEVICE_BUSY);
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
	if (r < 0 || o->discard)
		return r;
	if (lane_pub_begin(l)) {
		/* The status page's figures due before this run see the histograms
		 * as they were then: nothing else changes them. */
		if (l->before_publish)
			l->before_publish(l->before_publish_arg);
		probe_metrics_publish(&lp->series, o);
		probe_metrics_window(&lp->series, t1 > t0 ? (t1 - t0) / 1e9 : 0,
				     steal ? cpusteal_seconds(&l->steal, steal0, steal1) : 0);
	}
	lane_pub_end(l);
	return r;
}

/* One run of @lp; @retry: a burst held back earlier, tried again (lane_disk_busy()). */
void lane_run_probe(struct lane *l, struct lane_probe *lp, bool retry)
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
	count_run(l, lp, (double)wall.tv_sec + wall.tv_nsec / 1e9);
	if (r < 0) {
		count_error(l, lp, PROBE_ERR_TARGET_DOWN);
		return;
	}
	if (!lp->ready) {
		count_error(l, lp, PROBE_ERR_SETUP);
		probe_state(lp, lp->init_error, "cannot set up");
		return;
	}
	probe_outcome_clear(o);
	r = lane_measure_run(l, lp, o);
	/* Left in the kernel by a reload and back: nothing it found is anyone's. */
	if (atomic_load(&l->retired))
		return;
	lane_account(l, o); /* the I/O happened, whatever becomes of the results */
	if (o->discard)
		return;
	if (r < 0 && o->target_down) {
		count_error(l, lp, PROBE_ERR_TARGET_DOWN);
		probe_state_said(lp, r, o->why);
		return;
	}
	if (r < 0) {
		count_error(l, lp, PROBE_ERR_SETUP);
		probe_state(lp, r,
			    with_why("cannot run on this target", o->why, what, sizeof(what)));
		return;
	}
	run_state(l, lp, o);
}
