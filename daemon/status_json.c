/* SPDX-License-Identifier: MIT */
/*
 * /status.json: the status page's figures for programs. The fields are
 * documented in docs/status.schema.json and iopulse(8).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "status.h"

static const char *const q_names[STATUS_QUANTILES] = {"p50", "p90", "p99", "max"};

void status_json_string(struct buf *out, const char *s)
{
	buf_puts(out, "\"");
	while (*s) {
		unsigned char ch = (unsigned char)*s;
		size_t n = status_utf8_len(s);

		if (ch == '"' || ch == '\\') {
			buf_printf(out, "\\%c", ch);
		} else if (ch < 0x20 || ch == 0x7f) {
			buf_printf(out, "\\u%04x", ch);
		} else if (!n) {
			buf_puts(out, "\\ufffd");
			n = 1;
		} else {
			buf_append(out, s, n);
			s += n;
			continue;
		}
		s++;
	}
	buf_puts(out, "\"");
}

/* ,"KEY":SECONDS (never first in its object). */
static void seconds(struct buf *out, const char *key, double s)
{
	buf_printf(out, ",\"%s\":%.9g", key, s);
}

static void fig_json(struct buf *out, const char *key, const struct status_fig *f)
{
	buf_printf(out, ",\"%s\":{\"window_seconds\":%.3f,\"count\":%llu", key, f->span_ns / 1e9,
		   (unsigned long long)f->count);
	for (unsigned i = 0; i < STATUS_QUANTILES; i++) {
		char k[24];

		snprintf(k, sizeof(k), "%s_seconds", q_names[i]);
		seconds(out, k, f->q_ns[i] / 1e9);
	}
	buf_puts(out, "}");
}

/* The records of one ring, oldest first. */
static void recs_json(struct buf *out, const char *key, const struct status_rec *recs,
		      unsigned size, unsigned head, unsigned n)
{
	buf_printf(out, ",\"%s\":[", key);
	for (unsigned i = 0; i < n; i++) {
		const struct status_rec *r = &recs[(head + size - n + i) % size];

		buf_printf(out, "%s{\"count\":%u", i ? "," : "", r->count);
		for (unsigned j = 0; j < STATUS_QUANTILES; j++) {
			char k[24];

			snprintf(k, sizeof(k), "%s_seconds", q_names[j]);
			seconds(out, k, status_decode(r->q[j]) / 1e9);
		}
		buf_puts(out, "}");
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

static void series_json(struct buf *out, const struct status_series *ss)
{
	buf_puts(out, "{\"probe\":");
	status_json_string(out, ss->probe);
	buf_printf(out, ",\"type\":\"%s\",\"op\":\"%s\"", ss->kind, io_op_name(ss->op));
	seconds(out, "interval_seconds", ss->interval_s);
	buf_printf(out, ",\"runs\":%.0f,\"errors\":%.0f", ss->runs, ss->errors);
	fig_json(out, "last_minute", &ss->minute);
	fig_json(out, "last_hour", &ss->hour);
	burst_json(out, &ss->burst);
	recs_json(out, "minutes", ss->ring.min, STATUS_MINUTES, ss->ring.min_head, ss->ring.min_n);
	recs_json(out, "ten_minutes", ss->ring.blk, STATUS_BLOCKS, ss->ring.blk_head,
		  ss->ring.blk_n);
	buf_puts(out, "}");
}

static void target_json(struct buf *out, const struct status *st, const struct status_target *t)
{
	bool first = true;

	buf_puts(out, "{\"name\":");
	status_json_string(out, t->name);
	buf_puts(out, ",\"path\":");
	status_json_string(out, t->path);
	buf_printf(out, ",\"state\":\"%s\",\"reason\":", status_state_name(t->state));
	status_json_string(out, t->reason);
	seconds(out, "inflight_seconds", t->inflight_s);
	buf_puts(out, ",\"inflight_probe\":");
	status_json_string(out, t->inflight_probe);
	buf_puts(out, ",\"probes\":[");
	for (unsigned i = 0; i < st->n_series; i++) {
		if (strcmp(st->series[i]->target, t->name) != 0)
			continue;
		if (!first)
			buf_puts(out, ",");
		first = false;
		series_json(out, st->series[i]);
	}
	buf_puts(out, "]}");
}

int status_render_json(struct status *st, struct buf *out)
{
	pthread_mutex_lock(&st->mu);
	buf_puts(out, "{\"version\":");
	status_json_string(out, IOPULSE_VERSION);
	seconds(out, "uptime_seconds", (eng_now_ns() - st->start_ns) / 1e9);
	buf_printf(out, ",\"ready\":%s", status_ready_locked(st, NULL) ? "true" : "false");
	buf_puts(out, ",\"config\":{\"source\":");
	status_json_string(out, st->source);
	buf_printf(out, ",\"last_reload_successful\":%s,\"last_reload_error\":",
		   st->reload_ok ? "true" : "false");
	status_json_string(out, st->reload_error);
	buf_printf(out, ",\"last_reload_timestamp_seconds\":%.3f},\"targets\":[",
		   st->reload_wall_s);
	for (unsigned i = 0; i < st->n_targets; i++) {
		if (i)
			buf_puts(out, ",");
		target_json(out, st, &st->targets[i]);
	}
	buf_puts(out, "]}\n");
	pthread_mutex_unlock(&st->mu);
	return out->oom ? -ENOMEM : 0;
}
