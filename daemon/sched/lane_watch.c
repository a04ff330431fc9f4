/* SPDX-License-Identifier: MIT */
/*
 * lane_watch — what the scheduler and the scrapes see of a lane while its
 * thread runs (lane.h): an I/O in flight past its timeout, a layout's
 * progress, the watch timer armed again, the duty cycle and the status page's
 * marks. From atomics, and the lane mutex, which no I/O holds.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engines/engine.h"
#include "daemon/log.h"
#include "daemon/sched/lane_int.h"

static uint64_t age(uint64_t now_ns, uint64_t since_ns)
{
	/* since may be newer than a clock read taken before it was stored */
	return since_ns && now_ns > since_ns ? now_ns - since_ns : 0;
}

struct lane_probe *lane_inflight(struct lane *l, uint64_t *since)
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
	struct lane_probe *lp = lane_inflight(l, &since);
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

_Static_assert(PROBE_REASON_MAX == sizeof(((struct status_target *)0)->reason_code),
	       "a lane's reason code fits the status page's");

void lane_collect_target(struct lane *l, uint64_t now_ns, const struct status_target *t)
{
	probe_metrics_target_set(&l->series, t->state == STATUS_UP || t->state == STATUS_SLOW,
				 t->inflight_s, target_layout_progress(&l->target, NULL, NULL));
	probe_metrics_target_duty(&l->series, lane_duty(l, now_ns));
	if (probe_metrics_target_state(&l->series, status_state_name(t->state), t->since_s,
				       t->reason_code) < 0)
		log_warning("Target %s: out of memory for iopulse_target_reason_info, ignoring",
			    l->cfg->name);
	for (unsigned pi = 0; pi < l->n_probes; pi++) {
		struct lane_probe *lp = &l->probes[pi];

		for (int op = 0; op < IO_OP_COUNT; op++) {
			const struct status_regress *g = &lp->regress[op];
			const struct probe_regress pr = {
				.baseline_ns = g->have_baseline ? g->baseline_ns : NULL,
				.recent_ns = g->have_recent ? g->recent_ns : NULL,
				.ratio = g->ratio,
				.floor_ns = g->have_baseline
						    ? status_floor_ns(&l->judge, g->baseline_ns)
						    : 0,
				.have_tail = g->have_tail,
				.threshold_ns = g->threshold_ns,
				.slow_io_ratio = g->slow_io_ratio,
				.have_max = g->have_max,
				.max_ns = g->max_ns,
				.stalls = g->stalls};

			if (lp->series.latency[op] &&
			    probe_metrics_regress(&lp->series, op, &pr) < 0)
				log_warning("Probe %s: out of memory for its baseline gauges, "
					    "ignoring",
					    lp->cfg->name);
		}
	}
}

void lane_collect(struct lane *l, uint64_t now_ns)
{
	struct status_target t;

	lane_status(l, now_ns, NULL, &t);
	lane_collect_target(l, now_ns, &t);
}

/* Log a change into or out of slow, or of how it is slow, at notice level with
 * its reason (the lane's own lines say the others: down, up again, stuck). */
static void log_judgement(struct lane *l, const struct status_judgement *prev,
			  const struct status_target *t)
{
	char key[LOG_KEY_MAX];

	if (prev->state == t->state &&
	    (t->state != STATUS_SLOW || strcmp(prev->reason_code, t->reason_code) == 0))
		return;
	if (t->state == STATUS_SLOW)
		log_state_notice(target_key(l, key), "Target %s is slow (%s): %s", l->cfg->name,
				 t->reason_code, t->reason);
	else if (prev->state == STATUS_SLOW)
		log_state_notice(target_key(l, key), "Target %s is no longer slow: %s",
				 l->cfg->name, status_state_name(t->state));
}

void lane_status(struct lane *l, uint64_t now_ns, const struct status_judgement *restored,
		 struct status_target *t)
{
	uint64_t since, total = 0;
	struct lane_probe *lp = lane_inflight(l, &since);
	uint64_t a = age(now_ns, since);
	struct status_judge_in in = {
		.now_s = wall_now_s(), .ops = l->judge_ops, .restored = restored};
	struct status_judgement prev = l->judgement;

	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", l->cfg->name);
	snprintf(t->path, sizeof(t->path), "%s", l->cfg->path);
	t->inflight_s = lp ? a / 1e9 : 0;
	if (lp)
		snprintf(t->inflight_probe, sizeof(t->inflight_probe), "%s", lp->cfg->name);

	/* What the lane knows, for the judge. */
	in.stuck = lp && a >= lp->cfg->timeout_ns;
	in.inflight_probe = lp ? lp->cfg->name : "";
	in.inflight_s = a / 1e9;
	in.timeout_s = lp ? lp->cfg->timeout_ns / 1e9 : 0;
	in.up = atomic_load(&l->up);
	in.layout_share = target_layout_progress(&l->target, NULL, &total);
	in.layout = total > 0;
	in.start_s = l->start_wall_s;
	pthread_mutex_lock(&l->mu);
	in.down_reason = l->down_reason; /* read under the mutex: copied by the judge */
	in.down_code = l->down_code;
	in.down_since_s = l->down_wall_s;
	in.up_since_s = l->up_wall_s;
	for (unsigned pi = 0; pi < l->n_probes; pi++)
		for (int op = 0; op < IO_OP_COUNT; op++)
			if (l->probes[pi].series.latency[op])
				l->judge_ops[in.n_ops++] =
					(struct status_judge_op){.probe = l->probes[pi].cfg->name,
								 .op = op,
								 .g = &l->probes[pi].regress[op]};
	status_judge(&in, &prev, t, &l->judgement);
	pthread_mutex_unlock(&l->mu);
	log_judgement(l, &prev, t);
}

void lane_status_probes(struct lane *l, struct status *st, uint64_t now_ns)
{
	uint64_t since;
	const struct lane_probe *in = lane_inflight(l, &since);
	uint64_t a = age(now_ns, since);
	bool stuck = in && a >= in->cfg->timeout_ns;

	for (unsigned pi = 0; pi < l->n_probes; pi++) {
		struct lane_probe *lp = &l->probes[pi];
		const struct probe_series *s = &lp->series;
		/* Made lazily by the lane thread, last: acquire, then the rest is there. */
		struct metric_series *secs =
			atomic_load_explicit(&s->burst_seconds, memory_order_acquire);
		/*
		 * Once the target is stuck every probe waits behind its I/O, and that
		 * age is the least latency any of them would see: a hang keeps the
		 * ratio up instead of emptying the minute. Not before: an I/O within
		 * its timeout is not known to be slow, and a normal fdatasync (2-20 ms
		 * on an SSD) caught in flight by a scrape would make its probe's other
		 * ops "slow" for that scrape on a healthy host.
		 */
		uint64_t waited = stuck ? a : 0;
		double errors = 0;

		for (int e = 0; e < PROBE_ERR_COUNT; e++)
			errors += metrics_value(s->errors[e]);

		for (int op = 0; op < IO_OP_COUNT; op++) {
			struct status_burst b = {.valid = secs != NULL};

			memset(&lp->regress[op], 0, sizeof(lp->regress[op]));
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
			status_set_probe(st, lp->cfg->name, l->cfg->name, op,
					 metrics_value(s->runs), errors, lp->cfg->interval_ns / 1e9,
					 &b, waited, &lp->regress[op]);
		}
	}
}

unsigned lane_status_ops(const struct lane *l, struct status_op *out)
{
	struct status_identity id = {0};
	unsigned n = 0;

	/* Pinned by the lane's first open, and never again (lane.h). */
	if (atomic_load(&l->up) && atomic_load_explicit(&l->pinned, memory_order_acquire))
		id = (struct status_identity){.known = true,
					      .kind = (uint8_t)l->cfg->kind,
					      .dev = l->target.dev,
					      .fs_type = l->target.fs_type};

	for (unsigned pi = 0; pi < l->n_probes; pi++)
		for (int op = 0; op < IO_OP_COUNT; op++)
			if (l->probes[pi].series.latency[op])
				out[n++] = (struct status_op){
					.p = l->probes[pi].cfg,
					.target = l->cfg->name,
					.op = op,
					.latency = l->probes[pi].series.latency[op],
					.j = l->judge,
					.fingerprint = l->probes[pi].fingerprint,
					.target_path = l->cfg->path,
					.target_id = id,
					.cpu_bound_runs = &l->probes[pi].series.cpu_bound_runs};
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
	struct lane_probe *lp = lane_inflight(l, &since);

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
