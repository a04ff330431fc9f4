/* SPDX-License-Identifier: MIT */
/*
 * The status page (/): HTML5 with inline SVG charts, no JavaScript, refreshed
 * by the browser every 5 seconds. Every string from the configuration or the
 * system goes through status_html_escape().
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "status.h"

#define REFRESH_S 5
#define CHART_W	  360 /* SVG user units */
#define CHART_H	  130
#define PLOT_L	  48 /* room for the latency labels */
#define PLOT_T	  8
#define PLOT_B	  18 /* room for the time labels */
#define MAX_BARS  40

void status_html_escape(struct buf *out, const char *s)
{
	while (*s) {
		size_t n = status_utf8_len(s);
		unsigned char ch = (unsigned char)*s;

		switch (ch) {
		case '&':
			buf_puts(out, "&amp;");
			break;
		case '<':
			buf_puts(out, "&lt;");
			break;
		case '>':
			buf_puts(out, "&gt;");
			break;
		case '"':
			buf_puts(out, "&quot;");
			break;
		case '\'':
			buf_puts(out, "&#39;");
			break;
		default:
			/* Controls other than tab and newline are parse errors in HTML. */
			if (!n || (ch < 0x20 && ch != '\t' && ch != '\n') || ch == 0x7f) {
				buf_puts(out, "\xef\xbf\xbd"); /* U+FFFD */
				s++;
			} else {
				buf_append(out, s, n);
				s += n;
			}
			continue;
		}
		s++;
	}
}

/* "123 µs", "4.56 ms", "1.2 s"; "–" for none. */
static void latency(struct buf *out, uint64_t ns, bool have)
{
	if (!have)
		buf_puts(out, "\xe2\x80\x93");
	else if (ns < 1000)
		buf_printf(out, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		buf_printf(out, "%.3g \xc2\xb5s", ns / 1e3);
	else if (ns < 1000000000)
		buf_printf(out, "%.3g ms", ns / 1e6);
	else
		buf_printf(out, "%.3g s", ns / 1e9);
}

static void duration(struct buf *out, double s)
{
	unsigned long long t = (unsigned long long)s;

	if (t >= 86400)
		buf_printf(out, "%llud %lluh", t / 86400, t % 86400 / 3600);
	else if (t >= 3600)
		buf_printf(out, "%lluh %llum", t / 3600, t % 3600 / 60);
	else if (t >= 60)
		buf_printf(out, "%llum %llus", t / 60, t % 60);
	else
		buf_printf(out, "%.1fs", s);
}

/* ---------------------------------------------------------------- charts */

struct scale {
	double lo, hi; /* log10 of the axis ends, in ns */
};

static double y_of(const struct scale *sc, uint64_t ns)
{
	double plot = CHART_H - PLOT_T - PLOT_B;

	return PLOT_T + (sc->hi - log10((double)ns)) / (sc->hi - sc->lo) * plot;
}

/* Whole decades around the records' latencies; false when there are none. */
static bool records_scale(const struct status_rec *r, unsigned size, struct scale *sc)
{
	uint16_t lo = UINT16_MAX, hi = 0;

	for (unsigned i = 0; i < size; i++)
		for (unsigned j = 0; r[i].count && j < STATUS_QUANTILES; j++) {
			if (r[i].q[j] && r[i].q[j] < lo)
				lo = r[i].q[j];
			if (r[i].q[j] > hi)
				hi = r[i].q[j];
		}
	if (!hi)
		return false;
	sc->lo = floor(log10((double)status_decode(lo)));
	sc->hi = ceil(log10((double)status_decode(hi)));
	if (sc->hi <= sc->lo)
		sc->hi = sc->lo + 1;
	return true;
}

static void axis(struct buf *out, const struct scale *sc, const char *left, const char *right)
{
	for (double d = sc->lo; d <= sc->hi; d++) {
		double y = y_of(sc, (uint64_t)pow(10, d));

		buf_printf(out,
			   "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>",
			   PLOT_L, y, CHART_W, y);
		buf_printf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", PLOT_L - 4,
			   y + 4);
		latency(out, (uint64_t)pow(10, d), true);
		buf_puts(out, "</text>");
	}
	buf_printf(out, "<text x=\"%d\" y=\"%d\">%s</text>", PLOT_L, CHART_H - 4, left);
	buf_printf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", CHART_W,
		   CHART_H - 4, right);
}

/* One line (quantile @j) through the records, broken where a record is empty. */
static void line(struct buf *out, const struct scale *sc, const struct status_rec *r,
		 unsigned slots, unsigned n, unsigned j, const char *cls)
{
	double step = (double)(CHART_W - PLOT_L) / (slots > 1 ? slots - 1 : 1);
	bool pen = false;

	buf_printf(out, "<path class=\"%s\" d=\"", cls);
	for (unsigned i = 0; i < n; i++) {
		double x = PLOT_L + (slots - n + i) * step;

		if (!r[i].count || !r[i].q[j]) {
			pen = false;
			continue;
		}
		buf_printf(out, "%s%.1f %.1f ", pen ? "L" : "M", x,
			   y_of(sc, status_decode(r[i].q[j])));
		pen = true;
	}
	buf_puts(out, "\"/>");
}

/* Latency over time: p50, p99 and max of @n records (oldest first) in @slots. */
static void chart(struct buf *out, const struct status_rec *r, unsigned n, unsigned slots,
		  const char *title, const char *left)
{
	struct scale sc;

	buf_printf(out, "<figure><figcaption>%s</figcaption>", title);
	buf_printf(out, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">",
		   CHART_W, CHART_H, CHART_W, CHART_H);
	if (!records_scale(r, n, &sc)) {
		buf_printf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no data yet</text>",
			   CHART_W / 2, CHART_H / 2);
	} else {
		axis(out, &sc, left, "now");
		line(out, &sc, r, slots, n, 3, "max");
		line(out, &sc, r, slots, n, 2, "p99");
		line(out, &sc, r, slots, n, 0, "p50");
	}
	buf_puts(out, "</svg></figure>");
}

/* Records of a ring, oldest first, into @dst. */
static unsigned ring_copy(struct status_rec *dst, const struct status_rec *recs, unsigned size,
			  unsigned head, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		dst[i] = recs[(head + size - n + i) % size];
	return n;
}

/* The latency range of stored bucket @g. */
static void group_range(unsigned g, uint64_t *lo, uint64_t *hi)
{
	uint64_t unused;
	unsigned last = g * STATUS_GROUP < HIST_N_FINE ? g * STATUS_GROUP : HIST_N_FINE - 1;

	hist_fine_range(g ? 1 + (g - 1) * STATUS_GROUP : 0, lo, &unused);
	hist_fine_range(g ? last : 0, &unused, hi);
}

/* The last hour's distribution: bars over a log latency axis. */
static void histogram(struct buf *out, const struct status_series *ss)
{
	const uint32_t *c = ss->hour_groups;
	unsigned first = STATUS_N_GROUPS, last = 0, per, n_bars;
	uint64_t top = 0, lo, hi;
	double w;

	for (unsigned g = 1; g < STATUS_N_GROUPS; g++)
		if (c[g]) {
			first = first < g ? first : g;
			last = g;
		}
	buf_printf(out,
		   "<figure><figcaption>Latency distribution, last hour (%llu I/Os)</figcaption>",
		   (unsigned long long)ss->hour.count);
	buf_printf(out, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">",
		   CHART_W, CHART_H, CHART_W, CHART_H);
	if (first > last) {
		buf_printf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no data yet</text>",
			   CHART_W / 2, CHART_H / 2);
		buf_puts(out, "</svg></figure>");
		return;
	}
	per = (last - first + MAX_BARS) / MAX_BARS;
	n_bars = (last - first) / per + 1;
	for (unsigned b = 0; b < n_bars; b++) {
		uint64_t sum = 0;

		for (unsigned g = first + b * per; g < first + (b + 1) * per && g <= last; g++)
			sum += c[g];
		top = sum > top ? sum : top;
	}
	w = (double)(CHART_W - PLOT_L) / n_bars;
	for (unsigned b = 0; b < n_bars; b++) {
		unsigned g0 = first + b * per, g1 = g0 + per - 1 < last ? g0 + per - 1 : last;
		uint64_t sum = 0, l, h, unused;
		double bh;

		for (unsigned g = g0; g <= g1; g++)
			sum += c[g];
		bh = (double)sum / top * (CHART_H - PLOT_T - PLOT_B);
		group_range(g0, &l, &unused);
		group_range(g1, &unused, &h);
		buf_printf(out,
			   "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>",
			   PLOT_L + b * w, CHART_H - PLOT_B - bh, w > 1.5 ? w - 1 : w, bh);
		latency(out, l, true);
		buf_puts(out, " \xe2\x80\x93 ");
		latency(out, h, true);
		buf_printf(out, ": %llu</title></rect>", (unsigned long long)sum);
	}
	group_range(first, &lo, &hi);
	buf_printf(out, "<text x=\"%d\" y=\"%d\">", PLOT_L, CHART_H - 4);
	latency(out, lo, true);
	group_range(last, &lo, &hi);
	buf_printf(out, "</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">", CHART_W,
		   CHART_H - 4);
	latency(out, hi, true);
	buf_puts(out, "</text></svg></figure>");
}

/* ---------------------------------------------------------------- page */

static const char style[] =
	"body{font-family:system-ui,sans-serif;margin:1em 2em;color:#222}"
	"h2{margin-top:1.5em}.state{padding:.1em .5em;border-radius:.3em;color:#fff}"
	".up{background:#2a7d2a}.down{background:#c0392b}.stuck{background:#8e44ad}"
	".starting{background:#b7950b}.overall{font-size:1.3em;font-weight:bold}"
	"table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;"
	"padding:.2em "
	".5em;text-align:right;white-space:nowrap}th{background:#f4f4f4}td.name{text-align:left}"
	"figure{display:inline-block;margin:.3em}figcaption{font-size:.9em}"
	"svg{background:#fafafa;border:1px solid #ddd}svg text{font-size:10px;fill:#555}"
	"svg .grid{stroke:#ddd}svg path{fill:none;stroke-width:1.5}svg .p50{stroke:#2471a3}"
	"svg .p99{stroke:#e67e22}svg .max{stroke:#c0392b;stroke-width:1}svg rect{fill:#2471a3}"
	".key span{margin-right:1em}.reason{color:#c0392b}dt{font-weight:bold;float:left;"
	"width:9em}dd{margin-left:10em}";

static double wall_now(void)
{
	struct timespec ts = {0};

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void head(struct buf *out, const struct status *st, unsigned up)
{
	bool ok = up == st->n_targets;

	buf_printf(out,
		   "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		   "<meta http-equiv=\"refresh\" content=\"%d\">\n"
		   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		   "<title>iopulse: %u of %u targets up</title>\n<style>%s</style>\n</head>\n"
		   "<body>\n<h1>iopulse</h1>\n",
		   REFRESH_S, up, st->n_targets, style);
	buf_printf(out, "<p class=\"overall\" data-ready=\"%s\">%s: %u of %u targets up</p>\n",
		   ok ? "true" : "false", ok ? "Healthy" : "Not healthy", up, st->n_targets);
	buf_printf(out, "<dl>\n<dt>Version</dt><dd>%s</dd>\n<dt>Uptime</dt><dd>", IOPULSE_VERSION);
	duration(out, (eng_now_ns() - st->start_ns) / 1e9);
	buf_puts(out, "</dd>\n<dt>Configuration</dt><dd>");
	status_html_escape(out, st->source);
	buf_puts(out, "</dd>\n<dt>Last load</dt><dd>");
	if (st->reload_ok) {
		buf_puts(out, "successful");
	} else {
		buf_puts(out, "<span class=\"reason\">failed: ");
		status_html_escape(out, st->reload_error);
		buf_puts(out, "</span> (the previous configuration keeps running)");
	}
	buf_printf(out, ", %.0f s ago</dd>\n</dl>\n",
		   st->reload_wall_s > 0 ? fmax(0, wall_now() - st->reload_wall_s) : 0);
}

/* Count, p50, p99 and max of a window. */
static void fig_cells(struct buf *out, const struct status_fig *f, const char *cls)
{
	buf_printf(out, "<td class=\"%s-count\">%llu</td>", cls, (unsigned long long)f->count);
	for (unsigned i = 0; i < STATUS_QUANTILES; i++) {
		if (i == 1) /* p90 is in /status.json; the page keeps to three */
			continue;
		buf_puts(out, "<td>");
		latency(out, f->q_ns[i], f->count > 0);
		buf_puts(out, "</td>");
	}
}

static void series_row(struct buf *out, const struct status_series *ss)
{
	const struct status_burst *b = &ss->burst;

	buf_puts(out, "<tr data-probe=\"");
	status_html_escape(out, ss->probe);
	buf_printf(out, "\" data-op=\"%s\"><td class=\"name\">", io_op_name(ss->op));
	status_html_escape(out, ss->probe);
	buf_printf(out, " (%s)</td><td class=\"name\">%s</td>", ss->kind, io_op_name(ss->op));
	buf_printf(out, "<td class=\"runs\">%.0f</td><td class=\"errors\">%.0f</td>", ss->runs,
		   ss->errors);
	fig_cells(out, &ss->minute, "minute");
	fig_cells(out, &ss->hour, "hour");
	if (!b->valid) {
		buf_puts(out, "<td class=\"iops\">\xe2\x80\x93</td><td></td><td></td><td></td>");
	} else {
		buf_printf(out, "<td class=\"iops\">%.0f</td><td>", b->iops);
		latency(out, (uint64_t)(b->q_s[0] * 1e9), true);
		buf_puts(out, "</td><td>");
		latency(out, (uint64_t)(b->q_s[2] * 1e9), true);
		buf_puts(out, "</td><td>");
		latency(out, (uint64_t)(b->max_s * 1e9), true);
		buf_puts(out, "</td>");
	}
	buf_puts(out, "</tr>\n");
}

static const char table_head[] =
	"<table>\n<thead><tr><th rowspan=\"2\">probe</th><th rowspan=\"2\">op</th>"
	"<th rowspan=\"2\">runs</th><th rowspan=\"2\">errors</th>"
	"<th colspan=\"4\">last minute</th><th colspan=\"4\">last hour</th>"
	"<th colspan=\"4\">last burst</th></tr>\n<tr><th>I/Os</th><th>p50</th><th>p99</th>"
	"<th>max</th><th>I/Os</th><th>p50</th><th>p99</th><th>max</th><th>IOPS</th>"
	"<th>p50</th><th>p99</th><th>max</th></tr></thead>\n<tbody>\n";

static void series_charts(struct buf *out, const struct status_series *ss)
{
	struct status_rec recs[STATUS_BLOCKS];
	unsigned n;

	buf_puts(out, "<h3>");
	status_html_escape(out, ss->probe);
	buf_printf(out, " %s</h3>\n<div>", io_op_name(ss->op));
	n = ring_copy(recs, ss->ring.min, STATUS_MINUTES, ss->ring.min_head, ss->ring.min_n);
	chart(out, recs, n, STATUS_MINUTES, "Latency, last hour (per minute)", "-1h");
	n = ring_copy(recs, ss->ring.blk, STATUS_BLOCKS, ss->ring.blk_head, ss->ring.blk_n);
	chart(out, recs, n, STATUS_BLOCKS, "Latency, last 24 hours (per 10 minutes)", "-24h");
	histogram(out, ss);
	buf_puts(out, "</div>\n");
}

static void target_section(struct buf *out, const struct status *st, const struct status_target *t)
{
	const char *state = status_state_name(t->state);

	buf_printf(out, "<section data-target=\"");
	status_html_escape(out, t->name);
	buf_printf(out, "\" data-state=\"%s\">\n<h2>", state);
	status_html_escape(out, t->name);
	buf_printf(out, " <span class=\"state %s\">%s</span></h2>\n<p>", state, state);
	status_html_escape(out, t->path);
	buf_puts(out, "</p>\n");
	if (t->reason[0]) {
		buf_puts(out, "<p class=\"reason\">");
		status_html_escape(out, t->reason);
		buf_puts(out, "</p>\n");
	}
	if (t->inflight_s > 0) {
		buf_printf(out, "<p class=\"inflight\">I/O in flight for %.1f s", t->inflight_s);
		if (t->inflight_probe[0]) {
			buf_puts(out, " (probe ");
			status_html_escape(out, t->inflight_probe);
			buf_puts(out, ")");
		}
		buf_puts(out, "</p>\n");
	}
	buf_puts(out, table_head);
	for (unsigned i = 0; i < st->n_series; i++)
		if (strcmp(st->series[i]->target, t->name) == 0)
			series_row(out, st->series[i]);
	buf_puts(out, "</tbody>\n</table>\n");
	for (unsigned i = 0; i < st->n_series; i++)
		if (strcmp(st->series[i]->target, t->name) == 0)
			series_charts(out, st->series[i]);
	buf_puts(out, "</section>\n");
}

static const char footer[] =
	"<p class=\"key\">Charts: <span style=\"color:#2471a3\">p50</span>"
	"<span style=\"color:#e67e22\">p99</span><span style=\"color:#c0392b\">max</span></p>\n"
	"<p>Windows are recomputed every 10 s; quantiles within 3 %. "
	"<a href=\"/metrics\">/metrics</a> \xc2\xb7 <a href=\"/status.json\">/status.json</a> "
	"\xc2\xb7 <a href=\"/readyz\">/readyz</a> \xc2\xb7 <a href=\"/healthz\">/healthz</a></p>\n"
	"</body>\n</html>\n";

int status_render_html(struct status *st, struct buf *out)
{
	unsigned up = 0;

	pthread_mutex_lock(&st->mu);
	for (unsigned i = 0; i < st->n_targets; i++)
		up += st->targets[i].state == STATUS_UP;
	head(out, st, up);
	for (unsigned i = 0; i < st->n_targets; i++)
		target_section(out, st, &st->targets[i]);
	buf_puts(out, footer);
	pthread_mutex_unlock(&st->mu);
	return out->oom ? -ENOMEM : 0;
}
