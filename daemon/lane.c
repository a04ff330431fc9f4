/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../engines/engine.h"
#include "lane.h"
#include "log.h"

static const char *const error_names[_LANE_ERR_MAX] = {
	[LANE_ERR_IO] = "io_error",	[LANE_ERR_SHORT] = "short_io",
	[LANE_ERR_TIMEOUT] = "timeout", [LANE_ERR_TARGET_DOWN] = "target_down",
	[LANE_ERR_SETUP] = "setup",
};

/* ---------------------------------------------------------------- series */

static bool probe_uses_op(const struct cfg_probe *p, int op)
{
	if (p->kind == CFG_PROBE_PING)
		return op == IO_FDATASYNC ? p->sync == CFG_SYNC_FDATASYNC
					  : (op == IO_WRITE) == (p->op == IO_WRITE);
	switch (op) {
	case IO_READ:
		return p->rw == CFG_RW_RANDREAD || p->rw == CFG_RW_READ || p->rw == CFG_RW_RANDRW;
	case IO_WRITE:
		return p->rw == CFG_RW_RANDWRITE || p->rw == CFG_RW_WRITE || p->rw == CFG_RW_RANDRW;
	default:
		return false;
	}
}

static int lane_probe_series(struct lane_probe *lp, const char *target, const struct config *cfg,
			     struct metrics *m)
{
	static const char *const pto[] = {"probe", "target", "op", NULL};
	static const char *const ptr[] = {"probe", "target", "reason", NULL};
	static const char *const pt[] = {"probe", "target", NULL};
	const struct cfg_probe *p = lp->cfg;
	struct metric_family *lat, *ios, *bytes, *errs, *runs, *last, *deferred, *skipped;
	const char *v[4] = {p->name, target, NULL, NULL};

	lat = metrics_family(m, "iopulse_probe_latency_seconds", METRIC_HISTOGRAM,
			     "Latency of each probe I/O, by operation.", pto, cfg->buckets_ns,
			     cfg->n_buckets);
	ios = metrics_family(m, "iopulse_probe_ios_total", METRIC_COUNTER,
			     "I/Os completed without error, by operation.", pto, NULL, 0);
	bytes = metrics_family(m, "iopulse_probe_bytes_total", METRIC_COUNTER,
			       "Bytes transferred by I/Os completed without error.", pto, NULL, 0);
	errs = metrics_family(m, "iopulse_probe_errors_total", METRIC_COUNTER,
			      "Probe failures, by reason.", ptr, NULL, 0);
	runs = metrics_family(m, "iopulse_probe_runs_total", METRIC_COUNTER,
			      "Probe runs started, successful or not.", pt, NULL, 0);
	last = metrics_family(m, "iopulse_probe_last_run_timestamp_seconds", METRIC_GAUGE,
			      "Unix time the probe last started a run.", pt, NULL, 0);
	deferred =
		metrics_family(m, "iopulse_probe_deferred_total", METRIC_COUNTER,
			       "Runs that fell due while another probe had the target and waited "
			       "their turn.",
			       pt, NULL, 0);
	skipped = metrics_family(m, "iopulse_probe_skipped_total", METRIC_COUNTER,
				 "Runs not made, by reason (busy: still waiting from the previous "
				 "interval).",
				 ptr, NULL, 0);
	if (!lat || !ios || !bytes || !errs || !runs || !last || !deferred || !skipped)
		return -ENOMEM;

	for (int op = 0; op < IO_OP_COUNT; op++) {
		if (!probe_uses_op(p, op))
			continue;
		v[2] = io_op_name(op);
		lp->latency[op] = metrics_series(lat, v);
		lp->ios[op] = metrics_series(ios, v);
		lp->bytes[op] = metrics_series(bytes, v);
		if (!lp->latency[op] || !lp->ios[op] || !lp->bytes[op])
			return -ENOMEM;
	}
	for (int e = 0; e < _LANE_ERR_MAX; e++) {
		v[2] = error_names[e];
		lp->errors[e] = metrics_series(errs, v);
		if (!lp->errors[e])
			return -ENOMEM;
	}
	v[2] = "busy";
	lp->skipped = metrics_series(skipped, v);
	v[2] = NULL;
	lp->runs = metrics_series(runs, v);
	lp->last_run = metrics_series(last, v);
	if (p->kind == CFG_PROBE_PING) /* bursts are skipped, never deferred */
		lp->deferred = metrics_series(deferred, v);
	if (!lp->skipped || !lp->runs || !lp->last_run ||
	    (p->kind == CFG_PROBE_PING && !lp->deferred))
		return -ENOMEM;
	return 0;
}

static const double burst_quantiles[LANE_BURST_QUANTILES] = {0.5, 0.9, 0.99, 0.999};
static const char *const burst_percentiles[LANE_BURST_QUANTILES] = {"50", "90", "99", "99.9"};

/* The last-burst gauges, made when a burst first has something to show. */
static int burst_series(struct lane_probe *lp, const char *target, struct metrics *m)
{
	static const char *const pto[] = {"probe", "target", "op", NULL};
	/* "quantile" is reserved for summaries; these are plain gauges. */
	static const char *const ptoq[] = {"probe", "target", "op", "percentile", NULL};
	static const char *const pt[] = {"probe", "target", NULL};
	const char *v[5] = {lp->cfg->name, target, NULL, NULL, NULL};
	struct metric_family *iops, *bw, *q, *max, *secs;

	if (lp->burst_seconds)
		return 0;
	iops = metrics_family(m, "iopulse_burst_iops", METRIC_GAUGE,
			      "I/Os per second of the last finished burst, by operation.", pto,
			      NULL, 0);
	bw = metrics_family(m, "iopulse_burst_bandwidth_bytes", METRIC_GAUGE,
			    "Bytes per second of the last finished burst, by operation.", pto, NULL,
			    0);
	q = metrics_family(m, "iopulse_burst_latency_seconds", METRIC_GAUGE,
			   "Latency quantiles of the last finished burst, by operation.", ptoq,
			   NULL, 0);
	max = metrics_family(m, "iopulse_burst_latency_max_seconds", METRIC_GAUGE,
			     "Largest latency of the last finished burst, by operation.", pto, NULL,
			     0);
	secs = metrics_family(m, "iopulse_burst_duration_seconds", METRIC_GAUGE,
			      "Measured time of the last finished burst (after its ramp).", pt,
			      NULL, 0);
	if (!iops || !bw || !q || !max || !secs)
		return -ENOMEM;
	for (int op = 0; op < IO_OP_COUNT; op++) {
		if (!probe_uses_op(lp->cfg, op))
			continue;
		v[2] = io_op_name(op);
		lp->burst_iops[op] = metrics_series(iops, v);
		lp->burst_bw[op] = metrics_series(bw, v);
		lp->burst_max[op] = metrics_series(max, v);
		if (!lp->burst_iops[op] || !lp->burst_bw[op] || !lp->burst_max[op])
			return -ENOMEM;
		for (int i = 0; i < LANE_BURST_QUANTILES; i++) {
			v[3] = burst_percentiles[i];
			lp->burst_q[op][i] = metrics_series(q, v);
			if (!lp->burst_q[op][i])
				return -ENOMEM;
		}
		v[3] = NULL;
	}
	v[2] = NULL;
	lp->burst_seconds = metrics_series(secs, v);
	return lp->burst_seconds ? 0 : -ENOMEM;
}

/* Sets up a probe's ping or burst; a failure is kept and reported by each run. */
static void lane_probe_setup(struct lane *l, struct lane_probe *lp, const struct config *cfg)
{
	const struct engine_ops *ops;
	int r;

	if (lp->cfg->kind == CFG_PROBE_PING) {
		r = probe_ping_init(&lp->ping, lp->cfg);
		if (r == 0) {
			lp->ping.inflight_ns = &l->inflight_ns;
			lp->ping.stop = &l->stopping;
			lp->engine = lp->ping.ops->name;
		}
	} else {
		ops = eng_resolve(lp->cfg->engine, &r);
		if (ops) {
			lp->ops = ops;
			lp->engine = ops->name;
			lp->burst = burst_new(lp->cfg, ops, cfg->buckets_ns, cfg->n_buckets, &r);
			r = lp->burst ? 0 : r;
		}
	}
	lp->ready = r == 0;
	lp->init_error = r;
	if (r == -ENOENT || r == -EOPNOTSUPP)
		log_error("Probe %s: engine '%s' is %s; the probe will not run", lp->cfg->name,
			  lp->cfg->engine,
			  r == -ENOENT ? "not built in" : "not available on this system");
	else if (r < 0)
		log_error_errno(r, "Probe %s: cannot be set up: %m", lp->cfg->name);
	else
		log_debug("Probe %s: %s on target %s, engine %s", lp->cfg->name,
			  cfg_probe_kind_name(lp->cfg->kind), l->cfg->name, lp->engine);
}

/* The target's own series: up, in flight, layout progress and failures. */
static int lane_target_series(struct lane *l, struct metrics *m)
{
	static const char *const t_labels[] = {"target", NULL};
	const char *tv[] = {l->cfg->name, NULL};
	struct metric_family *up, *inflight, *layout, *layout_failures;

	up = metrics_family(m, "iopulse_target_up", METRIC_GAUGE,
			    "1 if the target is open and checked by its last run and no I/O on "
			    "it is in flight past its timeout; 0 otherwise.",
			    t_labels, NULL, 0);
	inflight = metrics_family(m, "iopulse_target_inflight_seconds", METRIC_GAUGE,
				  "Age of the I/O in flight on the target, 0 when idle.", t_labels,
				  NULL, 0);
	layout = metrics_family(m, "iopulse_target_layout_progress_ratio", METRIC_GAUGE,
				"Progress of the probe-file layout in progress on a directory "
				"target (0 to 1); 1 when none is in progress.",
				t_labels, NULL, 0);
	layout_failures = metrics_family(m, "iopulse_target_layout_failures_total", METRIC_COUNTER,
					 "Probe-file layouts on the target that failed (no room, a "
					 "write error); the next is tried 10s later, doubling up "
					 "to 1h.",
					 t_labels, NULL, 0);
	if (!up || !inflight || !layout || !layout_failures)
		return -ENOMEM;
	l->m_up = metrics_series(up, tv);
	l->m_inflight = metrics_series(inflight, tv);
	l->m_layout = metrics_series(layout, tv);
	l->m_layout_failures = metrics_series(layout_failures, tv);
	if (!l->m_up || !l->m_inflight || !l->m_layout || !l->m_layout_failures)
		return -ENOMEM;
	return 0;
}

int lane_init(struct lane *l, const struct config *cfg, unsigned ti, struct metrics *m)
{
	const struct cfg_target *tc = &cfg->targets[ti];
	pthread_condattr_t ca;
	unsigned n = 0;
	int r;

	memset(l, 0, sizeof(*l));
	l->cfg = tc;
	l->config = cfg;
	l->metrics = m;
	atomic_init(&l->inflight_ns, 0);
	atomic_init(&l->running, -1);
	atomic_init(&l->up, false);
	atomic_init(&l->timeout_claimed, 0);
	atomic_init(&l->stuck_logged, false);
	atomic_init(&l->stopping, false);
	target_init(&l->target, tc);
	r = pthread_mutex_init(&l->mu, NULL);
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

	for (unsigned i = 0; i < cfg->n_probes; i++)
		n += cfg->probes[i].target == ti;
	l->probes = calloc(n ? n : 1, sizeof(*l->probes));
	l->queue = calloc(n ? n : 1, sizeof(*l->queue));
	if (!l->probes || !l->queue)
		return -ENOMEM;

	r = lane_target_series(l, m);
	if (r < 0)
		return r;

	for (unsigned i = 0; i < cfg->n_probes; i++) {
		struct lane_probe *lp;

		if (cfg->probes[i].target != ti)
			continue;
		lp = &l->probes[l->n_probes++];
		lp->cfg = &cfg->probes[i];
		r = lane_probe_series(lp, tc->name, cfg, m);
		if (r < 0)
			return r;
		lane_probe_setup(l, lp, cfg);
		if (cfg_probe_writes(lp->cfg))
			l->target.want_write = true;
	}
	l->target.stop = &l->stopping;
	l->target.inflight_ns = &l->inflight_ns;
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

	atomic_store(&l->up, false);
	if (l->down_logged) {
		if (strcmp(l->down_reason, l->target.error) != 0) {
			snprintf(l->down_reason, sizeof(l->down_reason), "%s", l->target.error);
			log_debug("Target %s is still down: %s", l->cfg->name, l->target.error);
		}
		return;
	}
	l->down_logged = true;
	snprintf(l->down_reason, sizeof(l->down_reason), "%s", l->target.error);
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
		l->down_reason[0] = '\0';
	}
	atomic_store(&l->up, true);
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
	metrics_add(l->m_layout_failures, 1);
	atomic_store(&l->up, false);
	cfg_format_duration(l->layout_backoff_ns, when, sizeof(when));
	snprintf(l->down_reason, sizeof(l->down_reason), "%s", l->target.error);
	log_state_error_errno(target_key(l, key), r, "Target %s is %sdown: %s, retrying in %s",
			      l->cfg->name, l->down_logged ? "still " : "", l->target.error, when);
	l->down_logged = true;
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
	target_is_up(l);
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
 * its first failure, @what failed (an io_op_name() or a literal). Logs a line
 * when it changed: a write that keeps failing while the fdatasync after it
 * succeeds is one state, one line.
 */
static void probe_state(struct lane_probe *lp, int err, const char *what)
{
	char key[LOG_KEY_MAX], was[sizeof(lp->state_what)];

	if (err == lp->state_error && (!err || strcmp(what, lp->state_what) == 0))
		return;
	memcpy(was, lp->state_what, sizeof(was));
	lp->state_error = err;
	snprintf(lp->state_what, sizeof(lp->state_what), "%s", err ? what : "");
	if (err)
		log_state_error_errno(probe_key(lp, key), err, "Probe %s: %s: %m", lp->cfg->name,
				      what);
	else if (is_op_name(was))
		log_state_notice(probe_key(lp, key), "Probe %s: %s succeeds again", lp->cfg->name,
				 was);
	else
		log_state_notice(probe_key(lp, key), "Probe %s: runs without errors again",
				 lp->cfg->name);
}

/* Publishes one ping I/O. Returns 0 when it completed in full, -errno when it
 * failed (*what: what failed), 1 when the engine gave up waiting (counted as a
 * timeout: no news about the probe's state). */
static int publish_io(struct lane *l, struct lane_probe *lp, enum io_op op, ssize_t result,
		      size_t want, uint64_t lat_ns, const char **what)
{
	if (result == -ETIME)
		return 1;
	if (result < 0) {
		metrics_add(lp->errors[LANE_ERR_IO], 1);
		*what = io_op_name(op);
		return (int)result;
	}
	if ((size_t)result < want) {
		metrics_add(lp->errors[LANE_ERR_SHORT], 1);
		*what = "short transfer";
		return -EIO;
	}
	/* Histogram, I/O and byte counts move together: a scrape sees all or none. */
	metrics_lock(l->metrics);
	metrics_observe_ns_locked(lp->latency[op], lat_ns);
	metrics_add_locked(lp->ios[op], 1);
	metrics_add_locked(lp->bytes[op], (double)result);
	metrics_unlock(l->metrics);
	return 0;
}

static uint64_t age(uint64_t now_ns, uint64_t since_ns)
{
	/* since may be newer than a clock read taken before it was stored */
	return since_ns && now_ns > since_ns ? now_ns - since_ns : 0;
}

/* Counts the I/O submitted at @submit_ns as timed out unless already counted. */
static bool claim_timeout(struct lane *l, uint64_t submit_ns)
{
	uint64_t prev = atomic_load(&l->timeout_claimed);

	return prev != submit_ns &&
	       atomic_compare_exchange_strong(&l->timeout_claimed, &prev, submit_ns);
}

static void count_timeout(struct lane *l, struct lane_probe *lp, uint64_t submit_ns)
{
	if (claim_timeout(l, submit_ns))
		metrics_add(lp->errors[LANE_ERR_TIMEOUT], 1);
}

static void publish_burst(struct lane *l, struct lane_probe *lp, const struct burst_result *res)
{
	double secs = res->elapsed_ns / 1e9;
	uint64_t errors = 0, shorts = 0;
	bool gauges = burst_series(lp, l->cfg->name, l->metrics) == 0;

	/* Histograms, counters and the last-burst gauges move together. */
	metrics_lock(l->metrics);
	for (int op = 0; op < IO_DIR_COUNT; op++) {
		const struct burst_dir_result *dr = &res->dir[op];

		errors += dr->errors;
		shorts += dr->short_ios;
		if (!probe_uses_op(lp->cfg, op))
			continue;
		metrics_merge_hist_locked(lp->latency[op], dr->hist);
		metrics_add_locked(lp->ios[op], (double)dr->ios);
		metrics_add_locked(lp->bytes[op], (double)dr->bytes);
		if (!gauges)
			continue;
		metrics_set_locked(lp->burst_iops[op], secs > 0 ? dr->ios / secs : 0);
		metrics_set_locked(lp->burst_bw[op], secs > 0 ? dr->bytes / secs : 0);
		for (int i = 0; i < LANE_BURST_QUANTILES; i++)
			metrics_set_locked(lp->burst_q[op][i],
					   hist_quantile_ns(dr->hist, burst_quantiles[i]) / 1e9);
		metrics_set_locked(lp->burst_max[op], hist_max_ns(dr->hist) / 1e9);
	}
	if (gauges)
		metrics_set_locked(lp->burst_seconds, secs);
	metrics_add_locked(lp->errors[LANE_ERR_IO], (double)errors);
	metrics_add_locked(lp->errors[LANE_ERR_SHORT], (double)shorts);
	metrics_add_locked(lp->errors[LANE_ERR_TIMEOUT], (double)res->timeouts);
	metrics_unlock(l->metrics);
}

/* @what, with burst_why()'s reason when the burst gives one, in @buf. */
static const char *burst_what(const struct lane_probe *lp, const char *what, char *buf, size_t len)
{
	const char *why = burst_why(lp->burst);

	if (!why)
		return what;
	snprintf(buf, len, "%s: %s", what, why);
	return buf;
}

static void lane_run_burst(struct lane *l, struct lane_probe *lp)
{
	char what[sizeof(lp->state_what)];
	const struct burst_result *res;
	int r = burst_run(lp->burst, &l->target, &l->stopping, &res);

	if (r == -EBUSY) {
		/* An earlier run left I/O stuck in the kernel with this burst's buffers:
		 * they stay with it; run on a fresh one. */
		struct burst *fresh = burst_new(lp->cfg, lp->ops, l->config->buckets_ns,
						l->config->n_buckets, &r);

		if (fresh) {
			burst_free(lp->burst);
			lp->burst = fresh;
			r = burst_run(lp->burst, &l->target, &l->stopping, &res);
		}
	}

	if (r < 0) {
		metrics_add(lp->errors[LANE_ERR_SETUP], 1);
		probe_state(lp, r, burst_what(lp, "cannot run on this target", what, sizeof(what)));
		return;
	}
	publish_burst(l, lp, res);
	if (res->timeouts) {
		char key[LOG_KEY_MAX];

		/* Every time: each one is an event (and the limit per probe holds). */
		lp->state_error = -ETIME;
		snprintf(lp->state_what, sizeof(lp->state_what), "timeout");
		log_state_error(probe_key(lp, key),
				"Probe %s: I/O on target %s in flight for over %.3gs (timeout), "
				"burst aborted",
				lp->cfg->name, l->cfg->name, lp->cfg->timeout_ns / 1e9);
	} else if (res->error) {
		probe_state(lp, res->error,
			    burst_what(lp, "burst stopped early", what, sizeof(what)));
	} else if (res->dir[IO_READ].errors + res->dir[IO_WRITE].errors) {
		probe_state(lp, -EIO, "I/O errors during the burst");
	} else if (!res->stopped) {
		probe_state(lp, 0, NULL);
	}
}

static void lane_run_probe(struct lane *l, struct lane_probe *lp)
{
	const struct cfg_probe *p = lp->cfg;
	struct ping_result res;
	struct timespec wall;
	enum io_op op = p->op;
	const char *what = NULL, *sync_what = NULL;
	int r, sync_r;

	clock_gettime(CLOCK_REALTIME, &wall);
	metrics_add(lp->runs, 1);
	metrics_set(lp->last_run, (double)wall.tv_sec + wall.tv_nsec / 1e9);

	r = lane_prepare_target(l);
	if (r == -ECANCELED && atomic_load(&l->stopping))
		return;
	if (r < 0) {
		metrics_add(lp->errors[LANE_ERR_TARGET_DOWN], 1);
		return;
	}

	if (!lp->ready) {
		metrics_add(lp->errors[LANE_ERR_SETUP], 1);
		probe_state(lp, lp->init_error, "cannot set up");
		return;
	}
	if (p->kind == CFG_PROBE_BURST) {
		lane_run_burst(l, lp);
		return;
	}
	r = probe_ping_run(&lp->ping, &l->target, &res);
	if (atomic_load(&l->stopping))
		return; /* a wait given up for shutdown measured nothing */
	if (r < 0) {
		metrics_add(lp->errors[LANE_ERR_SETUP], 1);
		probe_state(lp, r, "cannot run on this target");
		return;
	}
	r = publish_io(l, lp, op, res.result, p->block_size, res.lat_ns, &what);
	if (res.result == -ETIME || res.lat_ns >= p->timeout_ns)
		count_timeout(l, lp, res.submit_ns);
	if (p->sync == CFG_SYNC_FDATASYNC) {
		/* Even after a failed write: fdatasync is where writeback errors show. */
		sync_r = publish_io(l, lp, IO_FDATASYNC, res.sync_result, 0, res.sync_lat_ns,
				    &sync_what);
		if (res.sync_result == -ETIME || res.sync_lat_ns >= p->timeout_ns)
			count_timeout(l, lp, res.sync_submit_ns);
		if (r >= 0 && sync_r < 0) { /* the first failure is the state */
			r = sync_r;
			what = sync_what;
		} else if (r == 0) {
			r = sync_r;
		}
	}
	if (r <= 0)
		probe_state(lp, r, what);
}

static void *lane_main(void *arg)
{
	struct lane *l = arg;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct lane_probe *lp;
		unsigned pi;

		while (!l->stop && l->q_len == 0)
			pthread_cond_wait(&l->cv, &l->mu);
		if (l->stop)
			break;
		pi = l->queue[l->q_head];
		l->q_head = (l->q_head + 1) % l->n_probes;
		l->q_len--;
		lp = &l->probes[pi];
		lp->queued = false;
		l->busy = true;
		atomic_store(&l->running, (int)pi);
		pthread_mutex_unlock(&l->mu);

		lane_run_probe(l, lp);
		/* The I/O the scheduler reported stuck has come back: say so once. */
		if (atomic_exchange(&l->stuck_logged, false)) {
			char key[LOG_KEY_MAX];

			log_state_notice(target_key(l, key),
					 "Target %s: the stuck I/O finished, target is up again",
					 l->cfg->name);
		}

		pthread_mutex_lock(&l->mu);
		atomic_store(&l->running, -1);
		l->busy = false;
	}
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

void lane_enqueue(struct lane *l, unsigned pi)
{
	struct lane_probe *lp = &l->probes[pi];

	pthread_mutex_lock(&l->mu);
	if (lp->queued || (lp->cfg->kind == CFG_PROBE_BURST && (l->busy || l->q_len))) {
		metrics_add(lp->skipped, 1);
	} else {
		if (l->busy || l->q_len)
			metrics_add(lp->deferred, 1);
		l->queue[(l->q_head + l->q_len) % l->n_probes] = pi;
		l->q_len++;
		lp->queued = true;
		pthread_cond_signal(&l->cv);
	}
	pthread_mutex_unlock(&l->mu);
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
	if (lp && lp->burst && !*since)
		*since = burst_inflight_since(lp->burst);
	return lp && *since ? lp : NULL;
}

void lane_check_timeout(struct lane *l, uint64_t now_ns)
{
	uint64_t since;
	struct lane_probe *lp = inflight_probe(l, &since);
	char key[LOG_KEY_MAX];

	/* A burst counts its own timeouts (and aborts). */
	if (!lp || lp->burst || age(now_ns, since) < lp->cfg->timeout_ns ||
	    !claim_timeout(l, since))
		return;
	metrics_add(lp->errors[LANE_ERR_TIMEOUT], 1);
	atomic_store(&l->stuck_logged, true);
	log_state_error(target_key(l, key),
			"Probe %s: I/O on target %s in flight for over %.3gs (timeout), target is "
			"stuck",
			lp->cfg->name, l->cfg->name, lp->cfg->timeout_ns / 1e9);
}

void lane_collect(struct lane *l, uint64_t now_ns)
{
	uint64_t since;
	struct lane_probe *lp = inflight_probe(l, &since);
	bool stuck = lp && age(now_ns, since) >= lp->cfg->timeout_ns;

	uint64_t total = atomic_load(&l->target.layout_total);
	uint64_t done = atomic_load(&l->target.layout_done);

	metrics_set(l->m_up, atomic_load(&l->up) && !stuck ? 1 : 0);
	metrics_set(l->m_inflight, age(now_ns, since) / 1e9);
	metrics_set(l->m_layout, total ? (double)(done < total ? done : total) / total : 1);
}

#define LAYOUT_LOG_NS 5000000000ULL

void lane_log_layout(struct lane *l, uint64_t now_ns)
{
	uint64_t total = atomic_load(&l->target.layout_total);
	uint64_t done = atomic_load(&l->target.layout_done);

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
		 l->cfg->name, 100.0 * done / total, done >> 20, total >> 20);
}

static void drop(struct metric_series **s)
{
	metrics_series_drop(*s);
	*s = NULL;
}

void lane_drop_probe_series(struct lane_probe *lp)
{
	for (int op = 0; op < IO_OP_COUNT; op++) {
		drop(&lp->latency[op]);
		drop(&lp->ios[op]);
		drop(&lp->bytes[op]);
		drop(&lp->burst_iops[op]);
		drop(&lp->burst_bw[op]);
		drop(&lp->burst_max[op]);
		for (int i = 0; i < LANE_BURST_QUANTILES; i++)
			drop(&lp->burst_q[op][i]);
	}
	for (int e = 0; e < _LANE_ERR_MAX; e++)
		drop(&lp->errors[e]);
	drop(&lp->runs);
	drop(&lp->last_run);
	drop(&lp->deferred);
	drop(&lp->skipped);
	drop(&lp->burst_seconds);
}

void lane_drop_target_series(struct lane *l)
{
	drop(&l->m_up);
	drop(&l->m_inflight);
	drop(&l->m_layout);
	drop(&l->m_layout_failures);
}

void lane_destroy(struct lane *l)
{
	if (!l->initialised)
		return;
	for (unsigned i = 0; l->probes && i < l->n_probes; i++) {
		if (l->probes[i].burst)
			burst_free(l->probes[i].burst);
		else if (l->probes[i].ready)
			probe_ping_cleanup(&l->probes[i].ping);
	}
	target_close(&l->target);
	free(l->probes);
	free(l->queue);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	l->probes = NULL;
	l->queue = NULL;
}
