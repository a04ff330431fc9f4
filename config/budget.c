/* SPDX-License-Identifier: MIT */
/*
 * budget — what a schedule costs each target, projected from the configuration
 * alone, and the check of that projection against the target's budget
 * ('max_duty_cycle', 'max_write_per_day'). Pure arithmetic: `iopulse check`,
 * `iopulse run` and a reload all refuse a schedule over budget before any I/O.
 *
 * The model, as iopulse.yaml(5) (NOTES, Budget) states it:
 *   - a ping keeps the target busy for 'expected_latency' per I/O: one I/O per
 *     run, two for a write ping with 'sync: fdatasync';
 *   - a burst keeps it busy for its whole run: 'ramp' plus 'duration', or for
 *     'ios', the time those take at 'rate_iops' or at iodepth x jobs I/Os each
 *     'expected_latency' long, whichever is slower, capped as the burst caps it
 *     (10m, and 'every' less 'ramp');
 *   - a verify probe, like a ping, for 'expected_latency' per I/O: every block
 *     read back, 'blocks_per_run' written and one fdatasync, then its state
 *     block written and one more fdatasync;
 *   - bytes written are the write pings' blocks, the verify probes' rewritten
 *     blocks and state blocks, and the write share of each write burst's I/Os
 *     at the rate above, of the mean block size of its range.
 * The probe file's layout is a one-off and counts against neither.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/config_int.h"

#define NS_PER_HOUR (3600.0 * 1e9)

/* The most costly probes a refusal names. */
#define BUDGET_NAMED 3

/* A burst's I/Os per second: 'rate_iops', or what its queues sustain when each
 * I/O takes the target's expected latency, whichever is lower. */
static double burst_iops(const struct cfg_probe *p, const struct cfg_target *t)
{
	double queued = (double)p->iodepth * p->jobs * 1e9 / (double)t->expected_latency_ns;

	if (p->rate_iops && (double)p->rate_iops < queued)
		return (double)p->rate_iops;
	return queued;
}

/* The measured phase of one run of burst @p, in ns. */
static double burst_phase_ns(const struct cfg_probe *p, const struct cfg_target *t)
{
	double cap = (double)CFG_MAX_DURATION_NS, ns;

	if (!p->ios)
		return (double)p->duration_ns;
	ns = (double)p->ios * 1e9 / burst_iops(p, t);
	if (p->interval_ns > p->ramp_ns && (double)(p->interval_ns - p->ramp_ns) < cap)
		cap = (double)(p->interval_ns - p->ramp_ns);
	return ns < cap ? ns : cap;
}

/* The share of a burst's I/Os that write. */
static double burst_write_share(const struct cfg_probe *p)
{
	switch (p->rw) {
	case CFG_RW_RANDWRITE:
	case CFG_RW_WRITE:
		return 1.0;
	case CFG_RW_RANDRW:
		return 1.0 - p->rwmix_read;
	default:
		return 0.0;
	}
}

/* One run of burst @p into @out, scaled to @runs_per_hour. */
void cfg_burst_cost(const struct cfg_probe *p, const struct cfg_target *t, double runs_per_hour,
		    struct cfg_cost *out)
{
	double run_ns = (double)p->ramp_ns + burst_phase_ns(p, t);
	/* sizes are k x block_size, k uniform in 1..max/min (a burst's jobs, daemon/probes/) */
	double mean_bs =
		(double)p->block_size * (double)(p->block_size_max / p->block_size + 1) / 2;
	double ios_per_run = burst_iops(p, t) * run_ns / 1e9;

	if (p->ios)
		ios_per_run = (double)p->ios + burst_iops(p, t) * (double)p->ramp_ns / 1e9;
	out->busy_s_per_hour = runs_per_hour * run_ns / 1e9;
	out->write_bytes_per_day =
		24 * runs_per_hour * ios_per_run * burst_write_share(p) * mean_bs;
}

/* One run of ping @p. */
void cfg_ping_cost(const struct cfg_probe *p, const struct cfg_target *t, double runs_per_hour,
		   struct cfg_cost *out)
{
	unsigned ios = p->op == IO_WRITE && p->sync == CFG_SYNC_FDATASYNC ? 2 : 1;
	/* 'warmup_after' shorter than the interval: the ping's own last I/O is older
	 * than that at every run, so each run may warm up first with the same I/O
	 * (the worst case, when no other probe keeps the target awake). */
	unsigned warm = p->warmup_idle_ns && p->warmup_idle_ns < p->interval_ns ? 2 : 1;

	out->busy_s_per_hour = runs_per_hour * ios * warm * (double)t->expected_latency_ns / 1e9;
	out->write_bytes_per_day =
		p->op == IO_WRITE ? 24 * runs_per_hour * warm * (double)p->block_size : 0;
}

/* One run of verify probe @p: every block read back, blocks_per_run written and
 * synced, then the state's write and sync (daemon/probes/verify.c). */
void cfg_verify_cost(const struct cfg_probe *p, const struct cfg_target *t, double runs_per_hour,
		     struct cfg_cost *out)
{
	unsigned ios = p->verify_blocks + p->verify_per_run + 1 + 2;

	out->busy_s_per_hour = runs_per_hour * ios * (double)t->expected_latency_ns / 1e9;
	out->write_bytes_per_day =
		24 * runs_per_hour *
		((double)p->verify_per_run * (double)p->block_size + CFG_VERIFY_STATE_SIZE);
}

void cfg_probe_cost(const struct config *c, const struct cfg_probe *p, struct cfg_cost *out)
{
	cfg_kind(p->kind)->cost(p, &c->targets[p->target], NS_PER_HOUR / (double)p->interval_ns,
				out);
}

void cfg_target_cost(const struct config *c, unsigned ti, struct cfg_cost *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < c->n_probes; i++) {
		struct cfg_cost pc;

		if (c->probes[i].target != ti)
			continue;
		cfg_probe_cost(c, &c->probes[i], &pc);
		out->busy_s_per_hour += pc.busy_s_per_hour;
		out->write_bytes_per_day += pc.write_bytes_per_day;
	}
}

/* The probes of target @ti that cost anything, most costly first (in the
 * file's order on a tie): indices into @idx, their cost in time (or, if
 * @writes, in bytes written) into @cost. Returns how many. */
static unsigned rank_probes(const struct config *c, unsigned ti, bool writes, unsigned *idx,
			    double *cost)
{
	unsigned n = 0;

	for (unsigned i = 0; i < c->n_probes; i++) {
		struct cfg_cost pc;
		double v;
		unsigned j;

		if (c->probes[i].target != ti)
			continue;
		cfg_probe_cost(c, &c->probes[i], &pc);
		v = writes ? pc.write_bytes_per_day : pc.busy_s_per_hour;
		if (v <= 0)
			continue;
		for (j = n; j > 0 && cost[j - 1] < v; j--) {
			idx[j] = idx[j - 1];
			cost[j] = cost[j - 1];
		}
		idx[j] = i;
		cost[j] = v;
		n++;
	}
	return n;
}

/* "; most costly: a 40.0s (49%), b 35.0s (43%), and 1 more" into @buf. */
static void name_costliest(const struct config *c, unsigned ti, bool writes, double total,
			   char *buf, size_t len)
{
	unsigned idx[CFG_MAX_PROBES];
	double cost[CFG_MAX_PROBES];
	unsigned n = rank_probes(c, ti, writes, idx, cost);
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned k = 0; k < n && k < BUDGET_NAMED && used < len; k++) {
		char v[32];

		if (writes)
			cfg_format_bytes(cost[k], v, sizeof(v));
		else
			snprintf(v, sizeof(v), "%.1fs", cost[k]);
		used += (size_t)snprintf(buf + used, len - used, "%s%s %s (%.0f%%)",
					 k ? ", " : "; most costly: ", c->probes[idx[k]].name, v,
					 100.0 * cost[k] / total);
	}
	if (n > BUDGET_NAMED && used < len)
		snprintf(buf + used, len - used, ", and %u more", n - BUDGET_NAMED);
}

/* Fills @err for target @ti over its budget; -EDQUOT. */
static int over_budget(const struct config *c, unsigned ti, const struct cfg_cost *cost,
		       bool writes, struct cfg_error *err)
{
	const struct cfg_target *t = &c->targets[ti];
	char names[256], a[32], b[32];

	name_costliest(c, ti, writes, writes ? cost->write_bytes_per_day : cost->busy_s_per_hour,
		       names, sizeof(names));
	if (writes) {
		cfg_format_bytes(cost->write_bytes_per_day, a, sizeof(a));
		cfg_format_size(t->max_write_per_day, b, sizeof(b));
		snprintf(err->msg, sizeof(err->msg),
			 "%s:%u:%u: target '%s': the schedule writes %s a day, over "
			 "'max_write_per_day' (%s)%s; write less often or less, or raise "
			 "'max_write_per_day'",
			 c->source, t->pos.line, t->pos.col, t->name, a, b, names);
	} else {
		cfg_format_percent(t->max_duty_cycle, b, sizeof(b));
		snprintf(err->msg, sizeof(err->msg),
			 "%s:%u:%u: target '%s': the schedule keeps it busy %.1fs an hour "
			 "(%.2f%%), over 'max_duty_cycle' (%s, %.1fs an hour)%s; probe less often "
			 "or for less time, or raise 'max_duty_cycle'",
			 c->source, t->pos.line, t->pos.col, t->name, cost->busy_s_per_hour,
			 100.0 * cost->busy_s_per_hour / 3600, b, t->max_duty_cycle * 3600, names);
	}
	return -EDQUOT;
}

int cfg_check_budget(const struct config *c, struct cfg_error *err)
{
	for (unsigned ti = 0; ti < c->n_targets; ti++) {
		const struct cfg_target *t = &c->targets[ti];
		struct cfg_cost cost;

		cfg_target_cost(c, ti, &cost);
		/* A hair of slack: a schedule exactly at its budget is within it,
		 * whatever the rounding of the figures on the way. 100% is no limit:
		 * probes due while the target is busy wait their turn, so a schedule
		 * may project more than the hour. */
		if (t->max_duty_cycle < 1 &&
		    cost.busy_s_per_hour > t->max_duty_cycle * 3600 * (1 + 1e-9))
			return over_budget(c, ti, &cost, false, err);
		if (t->max_write_per_day &&
		    cost.write_bytes_per_day > (double)t->max_write_per_day * (1 + 1e-9))
			return over_budget(c, ti, &cost, true, err);
	}
	return 0;
}

void cfg_print_budget(const struct config *c, FILE *f)
{
	fprintf(f, "# projected cost of the schedule, per target (the layout of a probe file "
		   "is not counted):\n");
	for (unsigned ti = 0; ti < c->n_targets; ti++) {
		const struct cfg_target *t = &c->targets[ti];
		struct cfg_cost cost;
		char w[32], max[32], duty[32];

		cfg_target_cost(c, ti, &cost);
		cfg_format_bytes(cost.write_bytes_per_day, w, sizeof(w));
		cfg_format_percent(t->max_duty_cycle, duty, sizeof(duty));
		if (t->max_write_per_day)
			cfg_format_size(t->max_write_per_day, max, sizeof(max));
		else
			snprintf(max, sizeof(max), "no limit");
		fprintf(f,
			"#   %s: busy %.1fs an hour (%.2f%%, max_duty_cycle %s), writes %s a day "
			"(max_write_per_day %s)\n",
			t->name, cost.busy_s_per_hour, 100.0 * cost.busy_s_per_hour / 3600, duty, w,
			max);
	}
}
