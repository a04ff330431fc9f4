/* SPDX-License-Identifier: MIT */
/*
 * oneshot_print — what `iopulse probe` prints: a line per ping as ioping
 * prints it, summaries like ioping's (pings) and fio's (bursts), or JSON
 * (docs/probe-output.schema.json).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/escape.h"
#include "daemon/metrics/hist.h"
#include "lib/json.h"
#include "daemon/oneshot/oneshot_int.h"

void stats_add(struct lat_stats *s, uint64_t ns)
{
	if (!s->n || ns < s->min)
		s->min = ns;
	if (ns > s->max)
		s->max = ns;
	s->n++;
	s->sum += (double)ns;
	s->sumsq += (double)ns * (double)ns;
}

double stats_mdev(const struct lat_stats *s)
{
	double avg, var;

	if (!s->n)
		return 0;
	avg = s->sum / (double)s->n;
	var = s->sumsq / (double)s->n - avg * avg;
	return var > 0 ? sqrt(var) : 0;
}

static void fmt_time(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, len, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", ns / 1e9);
}

static void fmt_rate(char *buf, size_t len, double v)
{
	if (v >= 1e6)
		snprintf(buf, len, "%.2f M", v / 1e6);
	else if (v >= 1e3)
		snprintf(buf, len, "%.2f k", v / 1e3);
	else
		snprintf(buf, len, "%.2f", v);
}

/* ---------------------------------------------------------------- per request */

/*
 * ioping's mark: once more than 5 requests are in, a request in the lowest 5%
 * of the range [min, max] seen so far (itself included) is "(fast)", one in the
 * highest 5% "(slow)". ioping counts from its last -p summary; we count from
 * the start, as the summary's min/max do. No "(warmup)": iopulse counts the
 * first request as the daemon does.
 */
static const char *mark(const struct lat_stats *s, uint64_t ns)
{
	double pos;

	if (s->n <= 5 || s->max <= s->min)
		return "";
	pos = (double)(ns - s->min) * 100.0 / (double)(s->max - s->min);
	return pos < 5 ? " (fast)" : pos > 95 ? " (slow)" : "";
}

/* "4.0 KiB <<< /srv (ext4 sda2): " */
static void request_prefix(const struct probe_sum *ps)
{
	char size[32], path[ESC_SIZE(PATH_MAX)];

	cfg_format_bytes((double)ps->cfg->block_size, size, sizeof(size));
	printf("%s %s %s (%s %s): ", size, ps->last_op == IO_WRITE ? ">>>" : "<<<",
	       esc_str(path, sizeof(path), ps->target->path),
	       ps->desc.fstype[0] ? ps->desc.fstype : "?",
	       ps->desc.device[0] ? ps->desc.device : "?");
}

void oneshot_print_request(struct probe_sum *ps, const struct probe_outcome *before)
{
	const struct probe_op_outcome *now = ps->out.op, *was = before->op;
	enum io_op op = ps->last_op;
	uint64_t ns = now[op].io_ns - was[op].io_ns;
	char t[32];

	request_prefix(ps);
	printf("request=%" PRIu64, ps->requests);
	if (now[op].ios == was[op].ios) {
		char why[ESC_SIZE(PATH_MAX)];

		printf(" failed: %s\n",
		       esc_str(why, sizeof(why),
			       ps->out.why ? ps->out.why
					   : strerror(ps->out.io_error ? -ps->out.io_error : EIO)));
		return;
	}
	fmt_time(t, sizeof(t), ns);
	printf(" time=%s", t);
	if (now[IO_FDATASYNC].ios != was[IO_FDATASYNC].ios) {
		fmt_time(t, sizeof(t), now[IO_FDATASYNC].io_ns - was[IO_FDATASYNC].io_ns);
		printf(" fdatasync=%s", t);
	} else if (now[IO_FDATASYNC].errors != was[IO_FDATASYNC].errors) {
		printf(" fdatasync failed");
	}
	printf("%s\n", mark(&ps->req[op], ns));
}

static void print_mdev_line(const char *lead, const struct lat_stats *s)
{
	char a[32], b[32], c[32], d[32];

	fmt_time(a, sizeof(a), s->min);
	fmt_time(b, sizeof(b), s->n ? (uint64_t)(s->sum / (double)s->n) : 0);
	fmt_time(c, sizeof(c), s->max);
	fmt_time(d, sizeof(d), (uint64_t)stats_mdev(s));
	printf("%smin/avg/max/mdev = %s / %s / %s / %s\n", lead, a, b, c, d);
}

/* @a and @b as one set of requests. */
static struct lat_stats stats_merged(const struct lat_stats *a, const struct lat_stats *b)
{
	struct lat_stats m = *a;

	if (!b->n)
		return m;
	if (!a->n || b->min < m.min)
		m.min = b->min;
	if (b->max > m.max)
		m.max = b->max;
	m.n += b->n;
	m.sum += b->sum;
	m.sumsq += b->sumsq;
	return m;
}

void oneshot_print_period(struct probe_sum *ps)
{
	/* The period's requests, reads and writes (-G), not their fdatasyncs. */
	struct lat_stats s = stats_merged(&ps->period[IO_READ], &ps->period[IO_WRITE]);

	printf("--- %" PRIu64 " requests (to request=%" PRIu64 "): ", s.n, ps->requests);
	print_mdev_line("", &s);
	memset(ps->period, 0, sizeof(ps->period));
}

/* ---------------------------------------------------------------- summary */

static void print_header(const struct probe_sum *ps, const struct oneshot_opts *o, bool lines)
{
	const struct cfg_probe *p = ps->cfg;
	const char *engine = ps->engine ? ps->engine : p->engine;
	char path[ESC_SIZE(PATH_MAX)];

	esc_str(path, sizeof(path), ps->target->path); /* a newline must not start a line */
	if (lines)
		putchar('\n');
	if (o->adhoc && !ps->engine) /* never opened: nothing known but the path */
		printf("--- %s %s statistics ---\n", path, cfg_probe_kind_name(p->kind));
	else if (o->adhoc) /* ioping's: "--- PATH (FS DEVICE) ioping statistics ---" */
		printf("--- %s (%s %s) %s statistics, engine %s ---\n", path,
		       ps->desc.fstype[0] ? ps->desc.fstype : "?",
		       ps->desc.device[0] ? ps->desc.device : "?", cfg_probe_kind_name(p->kind),
		       engine);
	else
		printf("--- %s %s on %s (%s %s, engine %s) ---\n", p->name,
		       cfg_probe_kind_name(p->kind), ps->target->name,
		       cfg_target_kind_name(ps->target->kind), path, engine);
}

/* "read: 5 requests completed in 1.2 ms (5.0 s wall), 20.0 KiB, 4.1 k iops, ..." */
static void print_op_totals(const struct probe_sum *ps, int op)
{
	const struct probe_op_outcome *s = &ps->out.op[op];
	double secs = s->io_ns / 1e9;
	char a[32], b[32], c[32];

	fmt_time(a, sizeof(a), s->io_ns);
	fmt_time(b, sizeof(b), ps->wall_ns);
	cfg_format_bytes((double)s->bytes, c, sizeof(c));
	printf("%s: %" PRIu64 " requests completed in %s (%s wall), %s", io_op_name(op), s->ios, a,
	       b, c);
	fmt_rate(a, sizeof(a), secs > 0 ? s->ios / secs : 0);
	cfg_format_bytes(secs > 0 ? s->bytes / secs : 0, b, sizeof(b));
	printf(", %s iops, %s/s", a, b);
	if (s->errors || s->short_ios)
		printf(", %" PRIu64 " errors, %" PRIu64 " short", s->errors, s->short_ios);
	putchar('\n');
}

static void print_latency(const struct probe_sum *ps, int op)
{
	const struct hist *h = ps->out.op[op].hist;
	char a[32], b[32], c[32], d[32];

	if (probe_ops_of(ps->cfg->kind)->flags & PROBE_F_REQUESTS && ps->req[op].n) {
		print_mdev_line("  ", &ps->req[op]);
	} else {
		fmt_time(a, sizeof(a), hist_min_ns(h));
		fmt_time(b, sizeof(b), hist_sum_ns(h) / hist_count(h));
		fmt_time(c, sizeof(c), hist_max_ns(h));
		printf("  min/avg/max = %s / %s / %s\n", a, b, c);
	}
	fmt_time(a, sizeof(a), hist_quantile_ns(h, 0.5));
	fmt_time(b, sizeof(b), hist_quantile_ns(h, 0.9));
	fmt_time(c, sizeof(c), hist_quantile_ns(h, 0.99));
	fmt_time(d, sizeof(d), hist_quantile_ns(h, 0.999));
	printf("  p50/p90/p99/p99.9 = %s / %s / %s / %s\n", a, b, c, d);
}

void oneshot_print_human(const struct probe_sum *ps, const struct oneshot_opts *o, bool lines)
{
	const struct cfg_probe *p = ps->cfg;

	print_header(ps, o, lines);
	for (int op = 0; op < IO_OP_COUNT; op++) {
		const struct probe_op_outcome *s = &ps->out.op[op];

		if (!s->ios && !s->errors && !s->short_ios)
			continue;
		print_op_totals(ps, op);
		if (s->ios)
			print_latency(ps, op);
	}
	if (probe_ops_of(p->kind)->flags & PROBE_F_VERIFIES)
		printf("  verify: %" PRIu64 " block(s) checked, %" PRIu64 " wrong data, %" PRIu64
		       " wrong offset, %" PRIu64 " stale\n",
		       ps->out.blocks_checked, ps->out.mismatches[PROBE_MISMATCH_WRONG_DATA],
		       ps->out.mismatches[PROBE_MISMATCH_WRONG_OFFSET],
		       ps->out.mismatches[PROBE_MISMATCH_STALE]);
	if (ps->out.timeouts)
		printf("  %" PRIu64 " I/O(s) exceeded the %.3gs timeout\n", ps->out.timeouts,
		       p->timeout_ns / 1e9);
	if (ps->interrupted)
		printf("  interrupted: results so far\n");
	if (ps->error) {
		char msg[ESC_SIZE(sizeof(ps->message))];

		printf("  error: %s\n", esc_str(msg, sizeof(msg), ps->message));
	}
}

/* ---------------------------------------------------------------- JSON */

/* @s as a JSON string on stdout, escaped as /status.json escapes it (invalid
 * UTF-8 in a path or an error message becomes U+FFFD: the output stays JSON). */
static void print_json_string(const char *s)
{
	struct buf b;

	buf_init(&b);
	json_string(&b, s);
	if (b.oom)
		fputs("\"\"", stdout);
	else
		fwrite(b.data, 1, b.len, stdout);
	buf_free(&b);
}

static void json_seconds(const char *key, uint64_t ns, bool comma)
{
	printf("\"%s\": %.9g%s", key, ns / 1e9, comma ? ", " : "");
}

static void print_json_latency(const struct probe_sum *ps, int op)
{
	const struct probe_op_outcome *s = &ps->out.op[op];

	printf("\"latency_seconds\": {");
	json_seconds("min", hist_min_ns(s->hist), true);
	json_seconds("avg", s->ios ? hist_sum_ns(s->hist) / hist_count(s->hist) : 0, true);
	json_seconds("max", hist_max_ns(s->hist), true);
	if (probe_ops_of(ps->cfg->kind)->flags & PROBE_F_REQUESTS)
		json_seconds("mdev", (uint64_t)stats_mdev(&ps->req[op]), true);
	json_seconds("p50", hist_quantile_ns(s->hist, 0.5), true);
	json_seconds("p90", hist_quantile_ns(s->hist, 0.9), true);
	json_seconds("p99", hist_quantile_ns(s->hist, 0.99), true);
	json_seconds("p99_9", hist_quantile_ns(s->hist, 0.999), false);
	printf("}}");
}

static void print_json_ops(const struct probe_sum *ps)
{
	bool first = true;

	printf("\"ops\": [");
	for (int op = 0; op < IO_OP_COUNT; op++) {
		const struct probe_op_outcome *s = &ps->out.op[op];
		double secs = s->io_ns / 1e9;

		if (!s->ios && !s->errors && !s->short_ios)
			continue;
		printf("%s\n      {\"op\": \"%s\", \"ios\": %" PRIu64 ", \"bytes\": %" PRIu64
		       ", \"errors\": %" PRIu64 ", \"short_ios\": %" PRIu64 ", ",
		       first ? "" : ",", io_op_name(op), s->ios, s->bytes, s->errors, s->short_ios);
		first = false;
		json_seconds("seconds", s->io_ns, true);
		printf("\"iops\": %.9g, \"bandwidth_bytes_per_second\": %.9g, ",
		       secs > 0 ? s->ios / secs : 0, secs > 0 ? s->bytes / secs : 0);
		print_json_latency(ps, op);
	}
	printf("%s]}", first ? "" : "\n    ");
}

static void print_json_probe(const struct probe_sum *ps)
{
	const struct cfg_probe *p = ps->cfg;

	printf("    {\"name\": ");
	print_json_string(p->name);
	printf(", \"type\": \"%s\", \"target\": ", cfg_probe_kind_name(p->kind));
	print_json_string(ps->target->name);
	printf(", \"path\": ");
	print_json_string(ps->target->path);
	printf(", \"target_kind\": \"%s\", \"block_size\": %" PRIu64 ", \"engine\": ",
	       cfg_target_kind_name(ps->target->kind), p->block_size);
	print_json_string(ps->engine ? ps->engine : p->engine);
	if (ps->desc.fstype[0]) {
		printf(", \"filesystem\": ");
		print_json_string(ps->desc.fstype);
	}
	if (ps->desc.device[0]) {
		printf(", \"device\": ");
		print_json_string(ps->desc.device);
	}
	printf(", \"status\": \"%s\"", ps->error	 ? "error"
				       : ps->interrupted ? "interrupted"
							 : "ok");
	if (ps->error) {
		printf(", \"error\": ");
		print_json_string(ps->message);
	}
	if (probe_ops_of(p->kind)->flags & PROBE_F_REQUESTS)
		printf(", \"requests\": %" PRIu64, ps->requests);
	if (probe_ops_of(p->kind)->flags & PROBE_F_VERIFIES)
		printf(", \"verify\": {\"blocks_checked\": %" PRIu64 ", \"wrong_data\": %" PRIu64
		       ", \"wrong_offset\": %" PRIu64 ", \"stale\": %" PRIu64 "}",
		       ps->out.blocks_checked, ps->out.mismatches[PROBE_MISMATCH_WRONG_DATA],
		       ps->out.mismatches[PROBE_MISMATCH_WRONG_OFFSET],
		       ps->out.mismatches[PROBE_MISMATCH_STALE]);
	printf(", \"timeouts\": %" PRIu64 ", ", ps->out.timeouts);
	json_seconds("wall_seconds", ps->wall_ns, true);
	print_json_ops(ps);
}

void oneshot_print_json(const struct probe_sum *sums, unsigned n)
{
	printf("{\"version\": 1, \"probes\": [");
	for (unsigned i = 0; i < n; i++) {
		printf("%s\n", i ? "," : "");
		print_json_probe(&sums[i]);
	}
	printf("%s]}\n", n ? "\n  " : "");
}
