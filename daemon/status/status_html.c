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

#include "lib/utf8.h"
#include "daemon/status/status.h"

#define REFRESH_S 5
#define CHART_W	  360 /* SVG user units */
#define CHART_H	  130
#define PLOT_L	  48 /* room for the latency labels */
#define PLOT_T	  8
#define PLOT_B	  18 /* room for the time labels */

void status_html_escape(struct buf *out, const char *s)
{
	while (*s) {
		size_t n = utf8_seq_len(s);
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
				buf_puts(out, UTF8_REPLACEMENT);
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

void status_latency(struct buf *out, uint64_t ns, bool have)
{
	static const char *const units[] = {"ns", "\xc2\xb5s", "ms", "s"};
	double v = (double)ns;
	unsigned u = 0;

	if (!have) {
		buf_puts(out, "\xe2\x80\x93");
		return;
	}
	/* 999.5 and up would round to "1e+03": carry into the next unit first. */
	while (u < 3 && v >= 999.5) {
		v /= 1000;
		u++;
	}
	if (u == 0)
		buf_printf(out, "%llu ns", (unsigned long long)ns);
	else if (v >= 999.5) /* seconds: no larger unit */
		buf_printf(out, "%.0f %s", v, units[u]);
	else
		buf_printf(out, "%.3g %s", v, units[u]);
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

/* Latency decades on the left; time labels: @ticks[0] at the left end, then
 * evenly spaced ones, "now" at the right. */
static void axis(struct buf *out, const struct scale *sc, const char *const *ticks, unsigned n)
{
	double w = CHART_W - PLOT_L;

	for (double d = sc->lo; d <= sc->hi; d++) {
		double y = y_of(sc, (uint64_t)pow(10, d));

		buf_printf(out,
			   "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>",
			   PLOT_L, y, CHART_W, y);
		buf_printf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", PLOT_L - 4,
			   y + 4);
		status_latency(out, (uint64_t)pow(10, d), true);
		buf_puts(out, "</text>");
	}
	for (unsigned i = 0; i < n; i++) {
		double x = PLOT_L + w * i / (n - 1);
		const char *anchor = i == 0 ? "start" : i == n - 1 ? "end" : "middle";

		if (i && i < n - 1)
			buf_printf(out,
				   "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" "
				   "y2=\"%d\"/>",
				   x, PLOT_T, x, CHART_H - PLOT_B);
		buf_printf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%s</text>", x,
			   CHART_H - 4, anchor, ticks[i]);
	}
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

static void no_data(struct buf *out);

static const char legend[] = " <span class=\"k50\">p50</span> <span class=\"k99\">p99</span> "
			     "<span class=\"kmax\">max</span>";

/* Latency over time: p50, p99 and max of @n records (oldest first) in @slots. */
static void chart(struct buf *out, const struct status_rec *r, unsigned n, unsigned slots,
		  const char *title, const char *const *ticks)
{
	struct scale sc;

	buf_printf(out, "<figure><figcaption>%s:%s</figcaption>", title, legend);
	buf_printf(out, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">",
		   CHART_W, CHART_H, CHART_W, CHART_H);
	if (!records_scale(r, n, &sc)) {
		no_data(out);
	} else {
		axis(out, &sc, ticks, 5);
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

static unsigned last_group(unsigned g)
{
	return g < STATUS_N_GROUPS ? g : STATUS_N_GROUPS - 1;
}

static void no_data(struct buf *out)
{
	buf_printf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no data yet</text>",
		   CHART_W / 2, CHART_H / 2);
}

/* The last hour's distribution: bars over a log latency axis, I/Os up. */
static void histogram(struct buf *out, const struct status_view *v)
{
	const struct status_bars *b = &v->hour_bars;
	uint64_t top = 0, lo, hi, unused;
	double w;

	buf_printf(out,
		   "<figure><figcaption>Latency distribution, last %.0f min (%llu I/Os; "
		   "latency axis logarithmic, I/Os up)</figcaption>",
		   v->hour.span_ns / 60e9, (unsigned long long)v->hour.count);
	buf_printf(out, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">",
		   CHART_W, CHART_H, CHART_W, CHART_H);
	for (unsigned i = 0; i < b->n; i++)
		top = b->c[i] > top ? b->c[i] : top;
	if (!top) {
		no_data(out);
		buf_puts(out, "</svg></figure>");
		return;
	}
	w = (double)(CHART_W - PLOT_L) / b->n;
	for (unsigned i = 0; i < b->n; i++) {
		unsigned g0 = b->first + i * b->per, g1 = last_group(g0 + b->per - 1);
		double bh = (double)b->c[i] / top * (CHART_H - PLOT_T - PLOT_B);

		group_range(g0, &lo, &unused);
		group_range(g1, &unused, &hi);
		buf_printf(out,
			   "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>",
			   PLOT_L + i * w, CHART_H - PLOT_B - bh, w > 1.5 ? w - 1 : w, bh);
		status_latency(out, lo, true);
		buf_puts(out, " \xe2\x80\x93 ");
		status_latency(out, hi, true);
		buf_printf(out, ": %llu I/Os</title></rect>", (unsigned long long)b->c[i]);
	}
	/* The tallest bar's count, short enough for the margin (147474 -> 147k). */
	buf_printf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", PLOT_L - 4, PLOT_T + 8);
	if (top < 10000)
		buf_printf(out, "%llu</text>", (unsigned long long)top);
	else if (top < 10000000)
		buf_printf(out, "%.0fk</text>", top / 1e3);
	else
		buf_printf(out, "%.0fM</text>", top / 1e6);
	buf_printf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>", PLOT_L - 4,
		   CHART_H - PLOT_B);
	group_range(b->first, &lo, &unused);
	buf_printf(out, "<text x=\"%d\" y=\"%d\">", PLOT_L, CHART_H - 4);
	status_latency(out, lo, true);
	group_range(last_group(b->first + b->n * b->per - 1), &unused, &hi);
	buf_printf(out, "</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">", CHART_W,
		   CHART_H - 4);
	status_latency(out, hi, true);
	buf_puts(out, "</text></svg></figure>");
}

/* ---------------------------------------------------------------- page */

static const char style[] =
	"body{font-family:system-ui,sans-serif;margin:1em 2em;color:#222}"
	"h2{margin-top:1.5em}.state{padding:.1em .5em;border-radius:.3em;color:#fff}"
	".up{background:#2a7d2a}.down{background:#c0392b}.stuck{background:#8e44ad}"
	".starting{background:#b7950b}.slow{background:#d68910}"
	".overall{font-size:1.3em;font-weight:bold}.overall.ok{color:#2a7d2a}"
	".overall.degraded{color:#d68910}.overall.bad{color:#c0392b}"
	"td.ratio[data-slow=true]{color:#c0392b;font-weight:bold}"
	"table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;"
	"padding:.2em .5em;text-align:right;white-space:nowrap}th{background:#f4f4f4}"
	"th.group{text-align:center}td.name,th.name{text-align:left}"
	"figure{display:inline-block;margin:.3em;vertical-align:top}figcaption{font-size:.9em}"
	"svg{background:#fafafa;border:1px solid #ddd}svg text{font-size:10px;fill:#555}"
	"svg .grid{stroke:#ddd}svg path{fill:none;stroke-width:1.5}svg .p50{stroke:#2471a3}"
	"svg .p99{stroke:#e67e22}svg .max{stroke:#c0392b;stroke-width:1}svg rect{fill:#2471a3}"
	".k50{color:#2471a3;font-weight:bold}.k99{color:#e67e22;font-weight:bold}"
	".kmax{color:#c0392b;font-weight:bold}.reason{color:#c0392b}dt{font-weight:bold;"
	"float:left;width:9em}dd{margin-left:10em}";

static double wall_now(void)
{
	struct timespec ts = {0};

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* How many targets are in each state. */
struct tally {
	unsigned up, slow, bad; /* up (slow included), slow, down or stuck */
};

static struct tally tally_of(const struct status_snap *snap)
{
	struct tally n = {0};

	for (unsigned i = 0; i < snap->n_targets; i++) {
		enum status_state s = snap->targets[i].state;

		n.up += s == STATUS_UP || s == STATUS_SLOW;
		n.slow += s == STATUS_SLOW;
		n.bad += s == STATUS_DOWN || s == STATUS_STUCK;
	}
	return n;
}

/* The headline: a target down or stuck says "Not healthy", then a slow one
 * "Degraded" (never "Healthy" while one is slow), then one starting again "Not
 * healthy". */
static void overall(struct buf *out, const struct status_snap *snap, const struct tally *n)
{
	bool ready = status_targets_ready(snap->targets, snap->n_targets, NULL);

	buf_printf(out, "<p class=\"overall %s\" data-ready=\"%s\">",
		   n->bad || (!n->slow && n->up < snap->n_targets) ? "bad"
		   : n->slow					   ? "degraded"
								   : "ok",
		   ready ? "true" : "false");
	if (!n->bad && n->slow)
		buf_printf(out, "Degraded: %u of %u targets slow", n->slow, snap->n_targets);
	else
		buf_printf(out, "%s: %u of %u targets up",
			   n->up == snap->n_targets ? "Healthy" : "Not healthy", n->up,
			   snap->n_targets);
	if (n->bad && n->slow)
		buf_printf(out, ", %u slow", n->slow);
	buf_puts(out, "</p>\n");
}

static void head(struct buf *out, const struct status_snap *snap)
{
	struct tally n = tally_of(snap);

	buf_printf(out,
		   "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		   "<meta http-equiv=\"refresh\" content=\"%d\">\n"
		   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		   "<title>iopulse: %u of %u targets up",
		   REFRESH_S, n.up, snap->n_targets);
	if (n.slow)
		buf_printf(out, ", %u slow", n.slow);
	buf_printf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>iopulse</h1>\n", style);
	overall(out, snap, &n);
	buf_printf(out, "<dl>\n<dt>Version</dt><dd>%s</dd>\n<dt>Uptime</dt><dd>", IOPULSE_VERSION);
	duration(out, snap->uptime_s);
	buf_puts(out, "</dd>\n<dt>Configuration</dt><dd>");
	status_html_escape(out, snap->source);
	buf_puts(out, "</dd>\n<dt>Last load</dt><dd>");
	if (snap->reload_ok) {
		buf_puts(out, "successful");
	} else {
		buf_puts(out, "<span class=\"reason\">failed: ");
		status_html_escape(out, snap->reload_error);
		buf_puts(out, "</span> (the previous configuration keeps running)");
	}
	buf_printf(out, ", %.0f s ago</dd>\n</dl>\n",
		   snap->reload_wall_s > 0 ? fmax(0, wall_now() - snap->reload_wall_s) : 0);
}

/* Count, p50, p99 and max of a window. */
static void fig_cells(struct buf *out, const struct status_fig *f, const char *cls)
{
	buf_printf(out, "<td class=\"%s-count\">%llu</td>", cls, (unsigned long long)f->count);
	for (unsigned i = 0; i < STATUS_QUANTILES; i++) {
		if (i == 1) /* p90 is in /status.json; the page keeps to three */
			continue;
		buf_printf(out, "<td class=\"%s-%s\">", cls,
			   i == 0   ? "p50"
			   : i == 2 ? "p99"
				    : "max");
		status_latency(out, f->q_ns[i], f->count > 0);
		buf_puts(out, "</td>");
	}
}

static void row_start(struct buf *out, const struct status_view *v, const char *table)
{
	buf_puts(out, "<tr data-probe=\"");
	status_html_escape(out, v->probe);
	buf_printf(out, "\" data-op=\"%s\" data-table=\"%s\"><td class=\"name\">",
		   io_op_name(v->op), table);
	status_html_escape(out, v->probe);
	buf_printf(out, " (%s)</td><td class=\"name\">%s</td>", v->kind, io_op_name(v->op));
}

/* The baseline's p50 and p99, and the recent p50 against it ("warming up"
 * while there is no baseline). */
static void regress_cells(struct buf *out, const struct status_view *v)
{
	const struct status_regress *g = &v->regress;

	buf_puts(out, "<td class=\"baseline-p50\">");
	status_latency(out, g->baseline_ns[0], g->have_baseline);
	buf_puts(out, "</td><td class=\"baseline-p99\">");
	status_latency(out, g->baseline_ns[1], g->have_baseline);
	buf_printf(out, "</td><td class=\"ratio\" data-slow=\"%s\">", g->slow ? "true" : "false");
	if (!g->have_baseline)
		buf_printf(out, "warming up (%u of %u min)", v->base_minutes,
			   v->j.warmup_minutes ? v->j.warmup_minutes : 1);
	else if (g->ratio > 0 && isfinite(g->ratio))
		/* How it is slow: "slow" (the median), "tail" or "stalls". */
		buf_printf(out, "%.*f\xc3\x97%s%s", g->ratio < 100 ? 1 : 0, g->ratio,
			   g->slow ? " " : "", g->slow ? status_shape_code(g->shape) : "");
	else
		buf_puts(out, "\xe2\x80\x93");
	buf_puts(out, "</td>");
}

static void series_row(struct buf *out, const struct status_view *v)
{
	row_start(out, v, "windows");
	buf_printf(out, "<td class=\"runs\">%.0f</td><td class=\"errors\">%.0f</td>", v->runs,
		   v->errors);
	fig_cells(out, &v->minute, "minute");
	fig_cells(out, &v->hour, "hour");
	regress_cells(out, v);
	buf_puts(out, "</tr>\n");
}

/* A burst probe's last burst (a row of its own table: the page stays narrow). */
static void burst_row(struct buf *out, const struct status_view *v)
{
	const struct status_burst *b = &v->burst;
	static const char dash[] = "<td>\xe2\x80\x93</td>";

	row_start(out, v, "burst");
	if (!b->valid) {
		buf_printf(out, "<td class=\"iops\">\xe2\x80\x93</td>%s%s%s%s%s", dash, dash, dash,
			   dash, dash);
	} else {
		buf_printf(out, "<td class=\"iops\">%.0f</td><td>%.3g MB/s</td><td>", b->iops,
			   b->bw / 1e6);
		status_latency(out, (uint64_t)(b->q_s[0] * 1e9), true);
		buf_puts(out, "</td><td>");
		status_latency(out, (uint64_t)(b->q_s[2] * 1e9), true);
		buf_puts(out, "</td><td>");
		status_latency(out, (uint64_t)(b->max_s * 1e9), true);
		buf_printf(out, "</td><td>%.1f s</td>", b->seconds);
	}
	buf_puts(out, "</tr>\n");
}

static const char table_head[] =
	"<table>\n<thead><tr><th rowspan=\"2\" class=\"name\">probe</th>"
	"<th rowspan=\"2\" class=\"name\">op</th><th rowspan=\"2\">runs</th>"
	"<th rowspan=\"2\">errors</th><th colspan=\"4\" class=\"group\">last minute</th>"
	"<th colspan=\"4\" class=\"group\">last hour</th>"
	"<th colspan=\"2\" class=\"group\">baseline</th>"
	"<th rowspan=\"2\">recent p50 vs baseline</th></tr>\n"
	"<tr><th>I/Os</th><th>p50</th><th>p99</th><th>max</th><th>I/Os</th><th>p50</th>"
	"<th>p99</th><th>max</th><th>p50</th><th>p99</th></tr></thead>\n<tbody>\n";

static const char burst_head[] =
	"<table>\n<thead><tr><th rowspan=\"2\" class=\"name\">burst probe</th>"
	"<th rowspan=\"2\" class=\"name\">op</th><th colspan=\"6\" class=\"group\">last "
	"burst</th></tr>\n<tr><th>IOPS</th><th>bandwidth</th><th>p50</th><th>p99</th>"
	"<th>max</th><th>measured</th></tr></thead>\n<tbody>\n";

static void series_charts(struct buf *out, const struct status_view *v)
{
	static const char *const hour_ticks[] = {"-1h", "-45m", "-30m", "-15m", "now"};
	static const char *const day_ticks[] = {"-24h", "-18h", "-12h", "-6h", "now"};
	struct status_rec recs[STATUS_BLOCKS];
	unsigned n;

	buf_puts(out, "<h3>");
	status_html_escape(out, v->probe);
	buf_printf(out, " %s</h3>\n<div>", io_op_name(v->op));
	n = ring_copy(recs, v->ring.min, STATUS_MINUTES, v->ring.min_head, v->ring.min_n);
	chart(out, recs, n, STATUS_MINUTES, "Latency, last hour (per minute)", hour_ticks);
	n = ring_copy(recs, v->ring.blk, STATUS_BLOCKS, v->ring.blk_head, v->ring.blk_n);
	chart(out, recs, n, STATUS_BLOCKS, "Latency, last 24 hours (per 10 minutes)", day_ticks);
	histogram(out, v);
	buf_puts(out, "</div>\n");
}

/* "for 40 s", "for 12 min", "for 3 h 5 min", "for 2 d 3 h". */
static void for_how_long(struct buf *out, double s)
{
	unsigned long long t = s > 0 ? (unsigned long long)s : 0;

	if (t < 60)
		buf_printf(out, "for %llu s", t);
	else if (t < 3600)
		buf_printf(out, "for %llu min", t / 60);
	else if (t < 86400)
		buf_printf(out, "for %llu h %llu min", t / 3600, t % 3600 / 60);
	else
		buf_printf(out, "for %llu d %llu h", t / 86400, t % 86400 / 3600);
}

/* "slow since 21:19:05 UTC, for 12 min" (the date too when not today, UTC). */
static void since_line(struct buf *out, const struct status_target *t, double now)
{
	time_t since = (time_t)t->since_s, today = (time_t)now;
	struct tm a, b;
	char when[32];

	if (t->since_s <= 0 || !gmtime_r(&since, &a) || !gmtime_r(&today, &b))
		return;
	strftime(when, sizeof(when),
		 a.tm_year == b.tm_year && a.tm_yday == b.tm_yday ? "%H:%M:%S"
								  : "%Y-%m-%d %H:%M:%S",
		 &a);
	buf_printf(out, "<p class=\"since\">%s since %s UTC, ", status_state_name(t->state), when);
	for_how_long(out, now - t->since_s);
	buf_puts(out, "</p>\n");
}

static void target_head(struct buf *out, const struct status_target *t)
{
	const char *state = status_state_name(t->state);

	buf_printf(out, "<section data-target=\"");
	status_html_escape(out, t->name);
	buf_printf(out, "\" data-state=\"%s\">\n<h2>", state);
	status_html_escape(out, t->name);
	buf_printf(out, " <span class=\"state %s\">%s</span></h2>\n<p>", state, state);
	status_html_escape(out, t->path);
	buf_puts(out, "</p>\n");
	since_line(out, t, wall_now());
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
}

static void target_section(struct buf *out, const struct status_snap *snap,
			   const struct status_target *t)
{
	bool bursts = false;

	target_head(out, t);
	buf_puts(out, table_head);
	for (unsigned i = 0; i < snap->n_views; i++)
		if (strcmp(snap->views[i].target, t->name) == 0) {
			series_row(out, &snap->views[i]);
			bursts |= snap->views[i].run_figures;
		}
	buf_puts(out, "</tbody>\n</table>\n");
	if (bursts) {
		buf_puts(out, burst_head);
		for (unsigned i = 0; i < snap->n_views; i++)
			if (strcmp(snap->views[i].target, t->name) == 0 &&
			    snap->views[i].run_figures)
				burst_row(out, &snap->views[i]);
		buf_puts(out, "</tbody>\n</table>\n");
	}
	for (unsigned i = 0; i < snap->n_views; i++)
		if (strcmp(snap->views[i].target, t->name) == 0)
			series_charts(out, &snap->views[i]);
	buf_puts(out, "</section>\n");
}

static const char footer[] =
	"<p>The last minute is exactly 60 s; the last hour is the last 60 to 70 minutes (six "
	"whole 10-minute blocks and the one in progress), or since the start when the daemon has "
	"run for less. Windows are recomputed every 10 s; "
	"quantiles within 3 %. The baseline is the median of the op's per-minute p50s (and "
	"p99s) of the last 24 hours, minutes taken while it was slow left out. A minute is slow "
	"when its p50 is over its target's slow_factor times the baseline and over its floor "
	"(slow), when over tail_share of the last 5 minutes' I/Os took over tail_factor times the "
	"baseline p99 (tail), or when I/Os of stall or more came in 2 of the last 5 minutes "
	"(stalls); an op is slow after slow_minutes slow minutes in a row, good again after "
	"ok_minutes good ones. "
	"<a href=\"/metrics\">/metrics</a> \xc2\xb7 <a href=\"/status.json\">/status.json</a> "
	"\xc2\xb7 <a href=\"/readyz\">/readyz</a> \xc2\xb7 <a href=\"/healthz\">/healthz</a></p>\n"
	"</body>\n</html>\n";

int status_render_html(const struct status_snap *snap, struct buf *out)
{
	head(out, snap);
	for (unsigned i = 0; i < snap->n_targets; i++)
		target_section(out, snap, &snap->targets[i]);
	buf_puts(out, footer);
	return out->oom ? -ENOMEM : 0;
}
