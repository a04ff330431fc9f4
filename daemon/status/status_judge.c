/* SPDX-License-Identifier: MIT */
/*
 * status_judge — the one judge of a target's state (status.h): from what its
 * lane gathers (I/O in flight, open or down and why, a layout) and its probe
 * ops' judgements (struct status_regress, the tick's), the state, its bounded
 * reason code, the reason in words with its figures, and since when. Pure: no
 * lock, no clock, no log; the caller keeps the judgement from one call to the
 * next (and the state file across a restart) and logs what changed.
 */
#include <stdio.h>
#include <string.h>

#include "daemon/status/status.h"
#include "lib/buf.h"

/* The op that makes the target slow: the worst shape, then the largest
 * ratio; NULL when none is slow. */
static const struct status_judge_op *worst_op(const struct status_judge_in *in)
{
	const struct status_judge_op *w = NULL;

	for (unsigned i = 0; i < in->n_ops; i++) {
		const struct status_judge_op *o = &in->ops[i];

		if (!o->g->slow)
			continue;
		if (!w || o->g->shape > w->g->shape ||
		    (o->g->shape == w->g->shape && o->g->ratio > w->g->ratio))
			w = o;
	}
	return w;
}

/* Whether some op has a judgement: a baseline (a target restarted while slow
 * has none until its first tick, and stays slow till then, while the state
 * file's judgement holds: STATUS_RESTORE_HOLD_S). */
static bool any_known(const struct status_judge_in *in)
{
	for (unsigned i = 0; i < in->n_ops; i++)
		if (in->ops[i].g->have_baseline)
			return true;
	return false;
}

/* "reads", "writes", "fdatasyncs": an op's I/Os, for the reason's words. */
static const char *ios_of(enum io_op op)
{
	switch (op) {
	case IO_READ:
		return "reads";
	case IO_WRITE:
		return "writes";
	case IO_FDATASYNC:
		return "fdatasyncs";
	case IO_OP_COUNT:
		break;
	}
	return "I/Os";
}

/* Why op @o is slow, with its figures, into @t->reason. */
static void slow_reason(const struct status_judge_op *o, struct status_target *t)
{
	const struct status_regress *g = o->g;
	struct buf b;

	buf_init(&b);
	buf_printf(&b, "probe %s: ", o->probe);
	switch (g->shape) {
	case STATUS_SHAPE_STALLS:
		buf_printf(&b, "%s of up to ", ios_of(o->op));
		status_latency(&b, g->max_ns, true);
		buf_printf(&b, " in %u of the last %u minutes", g->stall_minutes,
			   STATUS_JUDGE_MINUTES);
		break;
	case STATUS_SHAPE_TAIL:
		buf_printf(&b, "%.1f%% of %s over ", 100 * g->slow_io_ratio, ios_of(o->op));
		status_latency(&b, g->threshold_ns, true);
		buf_printf(&b, " in the last %u minutes (usually under 1%%; the baseline's p99: ",
			   STATUS_JUDGE_MINUTES);
		status_latency(&b, g->baseline_ns[1], true);
		buf_puts(&b, ")");
		break;
	case STATUS_SHAPE_MEDIAN:
	case STATUS_SHAPE_NONE:
		if (!g->have_recent) { /* slow by its last minutes' marks: a restart */
			buf_printf(&b,
				   "%s slow in the minutes before the restart (the baseline p50 ",
				   ios_of(o->op));
			status_latency(&b, g->baseline_ns[0], true);
			buf_puts(&b, "); judged again at its next minute");
			break;
		}
		buf_printf(&b, "%s p50 ", ios_of(o->op));
		status_latency(&b, g->recent_ns[0], g->have_recent);
		buf_printf(&b, ", %.1fx its baseline ", g->ratio);
		status_latency(&b, g->baseline_ns[0], true);
		break;
	}
	snprintf(t->reason, sizeof(t->reason), "%s", b.oom ? "" : b.data ? b.data : "");
	buf_free(&b);
	/* Slow by its replayed marks alone (restored without its shape): the median. */
	snprintf(t->reason_code, sizeof(t->reason_code), "%s",
		 status_shape_code(g->shape ? g->shape : STATUS_SHAPE_MEDIAN));
}

/* The state @in says, with its reason and code in @t; when it began, where
 * the lane knows it (Unix time, 0: not known). */
static double judge_state(const struct status_judge_in *in, const struct status_judgement *prev,
			  struct status_target *t)
{
	const struct status_judge_op *slow;

	if (in->stuck) {
		t->state = STATUS_STUCK;
		snprintf(t->reason, sizeof(t->reason),
			 "I/O of probe %s in flight for %.1fs, past its %.3gs timeout",
			 in->inflight_probe, in->inflight_s, in->timeout_s);
		snprintf(t->reason_code, sizeof(t->reason_code), "stuck");
		/* it became stuck when its I/O reached the timeout */
		return in->now_s - (in->inflight_s - in->timeout_s);
	}
	if (in->up) {
		slow = worst_op(in);
		if (slow) {
			t->state = STATUS_SLOW;
			slow_reason(slow, t);
			return 0;
		}
		if (in->restored && prev->state == STATUS_SLOW && !any_known(in)) {
			/* Restarted (or reloaded) while slow: nothing says otherwise yet. */
			t->state = STATUS_SLOW;
			snprintf(t->reason, sizeof(t->reason),
				 "slow before the restart; its probes are judged again at their "
				 "first minute");
			snprintf(t->reason_code, sizeof(t->reason_code), "%s",
				 prev->reason_code[0] ? prev->reason_code : "slow");
			return 0;
		}
		t->state = STATUS_UP;
		snprintf(t->reason_code, sizeof(t->reason_code), "none");
		/* The lane's up time is when it opened the target: when it came up
		 * after down or starting, not after slow or stuck (now). */
		return prev->state == STATUS_SLOW || prev->state == STATUS_STUCK ? 0
										 : in->up_since_s;
	}
	if (in->down_reason && in->down_reason[0]) {
		t->state = STATUS_DOWN;
		snprintf(t->reason, sizeof(t->reason), "%s", in->down_reason);
		snprintf(t->reason_code, sizeof(t->reason_code), "%s",
			 in->down_code && in->down_code[0] ? in->down_code : "other");
		return in->down_since_s;
	}
	/* Down without a reason: not checked yet, or laying out its probe file. */
	t->state = STATUS_STARTING;
	if (in->layout)
		snprintf(t->reason, sizeof(t->reason), "laying out the probe file, %.0f%% done",
			 100.0 * in->layout_share);
	else
		snprintf(t->reason, sizeof(t->reason), "not checked yet");
	snprintf(t->reason_code, sizeof(t->reason_code), "%s",
		 in->layout ? "layout" : "not_checked");
	return in->start_s;
}

void status_judge(const struct status_judge_in *in, const struct status_judgement *prev,
		  struct status_target *t, struct status_judgement *next)
{
	double began;

	if (in->restored && (!prev->since_s || prev->state == STATUS_STARTING))
		prev = in->restored;
	t->reason[0] = '\0';
	began = judge_state(in, prev, t);
	/*
	 * Since when: kept while the state stays; on a change, when the lane
	 * knows it began, if that is after the last state began and not in the
	 * future, else now: the first judgement that sees it. Up after slow or
	 * stuck, for one, says now (it came up long before).
	 */
	if (prev->since_s && t->state == prev->state)
		t->since_s = prev->since_s;
	else
		t->since_s = began > 0 && began >= prev->since_s && began <= in->now_s ? began
										       : in->now_s;
	*next = (struct status_judgement){.state = t->state, .since_s = t->since_s};
	snprintf(next->reason_code, sizeof(next->reason_code), "%s", t->reason_code);
}
