/* SPDX-License-Identifier: MIT */
/*
 * /status.json: the status page's figures for programs. The fields are
 * documented in docs/status.schema.json and iopulse(8).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/json.h"
#include "daemon/status/status.h"

static const char *const q_names[STATUS_QUANTILES] = {"p50", "p90", "p99", "max"};

/* ,"KEY":SECONDS (never first in its object). */
static void seconds(struct buf *out, const char *key, double s)
{
	buf_printf(out, ",\"%s\":%.9g", key, s);
}

/* The quantiles of a window or record of @count I/Os: null when there were
 * none, since a 0 would read as a latency of 0 (the page shows "–"). */
static void quantiles(struct buf *out, uint64_t count, const double s[STATUS_QUANTILES])
{
	for (unsigned i = 0; i < STATUS_QUANTILES; i++) {
		if (count)
			buf_printf(out, ",\"%s_seconds\":%.9g", q_names[i], s[i]);
		else
			buf_printf(out, ",\"%s_seconds\":null", q_names[i]);
	}
}

static void fig_json(struct buf *out, const char *key, const struct status_fig *f)
{
	double q[STATUS_QUANTILES];

	buf_printf(out, ",\"%s\":{\"window_seconds\":%.3f,\"count\":%llu", key, f->span_ns / 1e9,
		   (unsigned long long)f->count);
	for (unsigned i = 0; i < STATUS_QUANTILES; i++)
		q[i] = f->q_ns[i] / 1e9;
	quantiles(out, f->count, q);
	buf_puts(out, "}");
}

/* The records of one ring, oldest first, each with its slow mark (@bits). */
static void recs_json(struct buf *out, const char *key, const struct status_rec *recs,
		      const uint8_t *bits, unsigned size, unsigned head, unsigned n)
{
	buf_printf(out, ",\"%s\":[", key);
	for (unsigned i = 0; i < n; i++) {
		unsigned slot = (head + size - n + i) % size;
		const struct status_rec *r = &recs[slot];
		double q[STATUS_QUANTILES];

		buf_printf(out, "%s{\"count\":%u", i ? "," : "", r->count);
		for (unsigned j = 0; j < STATUS_QUANTILES; j++)
			q[j] = status_decode(r->q[j]) / 1e9;
		quantiles(out, r->count, q);
		buf_printf(out, ",\"slow\":%s}",
			   r->count && status_bit(bits, slot) ? "true" : "false");
	}
	buf_puts(out, "]");
}

static void burst_json(struct buf *out, const struct status_burst *b)
{
	if (!b->valid) {
		buf_puts(out, ",\"last_burst\":null");
		return;
	}
	buf_printf(out, ",\"last_burst\":{\"iops\":%.9g,\"bandwidth_bytes\":%.9g", b->iops, b->bw);
	seconds(out, "p50_seconds", b->q_s[0]);
	seconds(out, "p90_seconds", b->q_s[1]);
	seconds(out, "p99_seconds", b->q_s[2]);
	seconds(out, "p99_9_seconds", b->q_s[3]);
	seconds(out, "max_seconds", b->max_s);
	seconds(out, "duration_seconds", b->seconds);
	buf_puts(out, "}");
}

/* ,"KEY":{"p50_seconds":..,"p99_seconds":..}, or null when not @have. */
static void pair_json(struct buf *out, const char *key, bool have, const uint64_t ns[2])
{
	if (!have) {
		buf_printf(out, ",\"%s\":null", key);
		return;
	}
	buf_printf(out, ",\"%s\":{\"p50_seconds\":%.9g,\"p99_seconds\":%.9g}", key, ns[0] / 1e9,
		   ns[1] / 1e9);
}

/* The op against its baseline: null where a figure is absent, never NaN or Inf. */
static void regress_json(struct buf *out, const struct status_regress *g)
{
	pair_json(out, "baseline", g->have_baseline, g->baseline_ns);
	pair_json(out, "recent", g->have_recent, g->recent_ns);
	if (g->have_baseline && g->have_recent && g->ratio > 0 && isfinite(g->ratio))
		buf_printf(out, ",\"ratio\":%.4g", g->ratio);
	else
		buf_puts(out, ",\"ratio\":null");
	buf_printf(out, ",\"slow\":%s,\"shape\":\"%s\"", g->slow ? "true" : "false",
		   status_shape_code(g->shape));
	if (g->have_tail && isfinite(g->slow_io_ratio))
		buf_printf(out, ",\"slow_io\":{\"threshold_seconds\":%.9g,\"ratio\":%.4g}",
			   g->threshold_ns / 1e9, g->slow_io_ratio);
	else
		buf_puts(out, ",\"slow_io\":null");
	if (g->have_max)
		buf_printf(out, ",\"longest_seconds\":%.9g", g->max_ns / 1e9);
	else
		buf_puts(out, ",\"longest_seconds\":null");
	if (g->have_baseline)
		buf_printf(out, ",\"stall_minutes\":%u", g->stall_minutes);
	else
		buf_puts(out, ",\"stall_minutes\":null");
}

static void series_json(struct buf *out, const struct status_view *v, bool history)
{
	buf_puts(out, "{\"probe\":");
	json_string(out, v->probe);
	buf_printf(out, ",\"type\":\"%s\",\"op\":\"%s\"", v->kind, io_op_name(v->op));
	seconds(out, "interval_seconds", v->interval_s);
	buf_printf(out, ",\"runs\":%.0f,\"errors\":%.0f", v->runs, v->errors);
	fig_json(out, "last_minute", &v->minute);
	fig_json(out, "last_hour", &v->hour);
	burst_json(out, &v->burst);
	regress_json(out, &v->regress);
	if (history) {
		recs_json(out, "minutes", v->ring.min, v->ring.min_slow, STATUS_MINUTES,
			  v->ring.min_head, v->ring.min_n);
		recs_json(out, "ten_minutes", v->ring.blk, v->ring.blk_slow, STATUS_BLOCKS,
			  v->ring.blk_head, v->ring.blk_n);
	}
	buf_puts(out, "}");
}

/* The lane's code; before it says one, the state's own. */
static const char *reason_code(const struct status_target *t)
{
	static const char *const by_state[] = {
		[STATUS_STARTING] = "not_checked", /* not checked, or laying out: the lane knows */
		[STATUS_UP] = "none",
		[STATUS_DOWN] = "other",
		[STATUS_STUCK] = "stuck",
		[STATUS_SLOW] = "slow",
	};

	if (t->reason_code[0])
		return t->reason_code;
	return (unsigned)t->state < sizeof(by_state) / sizeof(by_state[0]) ? by_state[t->state]
									   : "other";
}

static void target_json(struct buf *out, const struct status_snap *snap,
			const struct status_target *t, bool history)
{
	bool first = true;

	buf_puts(out, "{\"name\":");
	json_string(out, t->name);
	buf_puts(out, ",\"path\":");
	json_string(out, t->path);
	buf_printf(out, ",\"state\":\"%s\",\"since\":%.3f,\"reason\":", status_state_name(t->state),
		   t->since_s > 0 ? t->since_s : 0.0);
	json_string(out, t->reason);
	buf_puts(out, ",\"reason_code\":");
	json_string(out, reason_code(t));
	seconds(out, "inflight_seconds", t->inflight_s);
	buf_puts(out, ",\"inflight_probe\":");
	json_string(out, t->inflight_probe);
	buf_puts(out, ",\"probes\":[");
	for (unsigned i = 0; i < snap->n_views; i++) {
		if (strcmp(snap->views[i].target, t->name) != 0)
			continue;
		if (!first)
			buf_puts(out, ",");
		first = false;
		series_json(out, &snap->views[i], history);
	}
	buf_puts(out, "]}");
}

int status_render_json(const struct status_snap *snap, struct buf *out, bool history)
{
	buf_puts(out, "{\"version\":");
	json_string(out, IOPULSE_VERSION);
	seconds(out, "uptime_seconds", snap->uptime_s);
	buf_printf(out, ",\"ready\":%s",
		   status_targets_ready(snap->targets, snap->n_targets, NULL) ? "true" : "false");
	buf_puts(out, ",\"config\":{\"source\":");
	json_string(out, snap->source);
	buf_printf(out, ",\"last_reload_successful\":%s,\"last_reload_error\":",
		   snap->reload_ok ? "true" : "false");
	json_string(out, snap->reload_error);
	buf_printf(out, ",\"last_reload_timestamp_seconds\":%.3f},\"targets\":[",
		   snap->reload_wall_s);
	for (unsigned i = 0; i < snap->n_targets; i++) {
		if (i)
			buf_puts(out, ",");
		target_json(out, snap, &snap->targets[i], history);
	}
	buf_puts(out, "]}\n");
	return out->oom ? -ENOMEM : 0;
}
