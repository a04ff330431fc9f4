/* SPDX-License-Identifier: MIT */
/*
 * render_bench — what one /metrics scrape costs iopulse's HTTP thread in CPU,
 * without HTTP: snapshot + render of a registry shaped like the daemon's under
 * bench/scrape.sh, in each format the renderers offer.
 *
 * The registry holds the families the daemon declares (daemon/sched/lane.c, daemon/http/,
 * main.c, process.c) for PAIRS write pings with fdatasync and PAIRS read pings
 * on one directory target: 3 * PAIRS latency histogram series (write, fdatasync,
 * read) with the default classic buckets, each fed 10000 lognormal latencies
 * (read: median 100 us, write 50 us, fdatasync 1 ms; sigma 1, so the samples
 * spread over most classic buckets and a few hundred native ones), plus each
 * probe's counters and gauges with realistic values.
 *
 * Per format, ROUNDS rounds of as many scrapes as take ~0.2 s; CPU time from
 * CLOCK_PROCESS_CPUTIME_ID (one thread: the process is the renderer). Printed:
 * the median over rounds of CPU us per scrape, for the snapshot alone, the
 * render alone (of one snapshot) and both, and the page size. Also the
 * scrape-time collector (process_* from /proc), gzip of the whole text page from
 * scratch (with gzpage), and the share of the text render that goes
 * to formatting the numbers (le labels and _sum) alone.
 *
 * With HAVE_HTTP_RENDER_CACHE (http.h declares http_render_metrics()), also what
 * the daemon's /metrics handler does per scrape: http_render_metrics() through
 * the registry's render cache, with K latency series (and their ios counters)
 * updated before each scrape, plus iopulse_http_requests_total as every scrape
 * bumps it — K = 0, 1, 10 and all; with HAVE_GZPAGE (daemon/expose/gzpage.h exists)
 * each format also gzipped as /metrics gzips it (a gzpage kept across scrapes,
 * compressing only the families that changed). Under bench/scrape.sh's load (pings every
 * 50 ms, thousands of scrapes per second) a scrape sees ~0-2 changed series.
 *
 * bench/scrape.sh builds it against the Release libiopulse_core.a and defines
 * HAVE_EXPOSE_OPENMETRICS / HAVE_EXPOSE_PROTOBUF / HAVE_HTTP_RENDER_CACHE /
 * HAVE_GZPAGE from what daemon/expose/expose.h, daemon/http/http.h and daemon/ declare:
 *
 *   ./render_bench [PAIRS [ROUNDS]]        (default 50 pairs, 7 rounds)
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/default_buckets.h"
#include "daemon/expose/expose.h"
#include "daemon/metrics/metrics.h"
#include "daemon/metrics/process.h"
#include "tests/samples.h"
#ifdef HAVE_HTTP_RENDER_CACHE
#include "lib/buf.h"
#include "daemon/http/http.h"
#endif
#ifdef HAVE_GZPAGE
#include "daemon/expose/gzpage.h"
#endif

#define SAMPLES_PER_SERIES 10000
#define ROUND_CPU_NS	   200000000ull /* aim for ~0.2 s of CPU per round */
#define MAX_ROUNDS	   99

/* iopulse's default classic buckets, 10 us .. 10 s. */
static const uint64_t default_bounds[] = CFG_DEFAULT_BUCKETS_NS;
#define N_DEFAULT (sizeof(default_bounds) / sizeof(default_bounds[0]))

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Series build_registry() made, for the cached-render rows to update. */
static struct metric_series **lat_series, **ios_series, *http_series;
static unsigned n_lat_series;

static void die(const char *what)
{
	fprintf(stderr, "render_bench: %s failed\n", what);
	exit(1);
}

static struct metric_family *family(struct metrics *m, const char *name, enum metric_type type,
				    const char *const *labels)
{
	struct metric_family *f =
		metrics_family(m, name, type, "Help text of about the daemon's length, for size.",
			       labels, type == METRIC_HISTOGRAM ? default_bounds : NULL,
			       type == METRIC_HISTOGRAM ? N_DEFAULT : 0);

	if (!f)
		die(name);
	return f;
}

static struct metric_series *series(struct metric_family *f, const char *const *values)
{
	struct metric_series *s = metrics_series(f, values);

	if (!s)
		die("metrics_series");
	return s;
}

/* The daemon's registry for @pairs write+fdatasync pings and @pairs read pings. */
static struct metrics *build_registry(unsigned pairs, struct process_metrics **pm)
{
	static const char *const pto[] = {"probe", "target", "op", NULL};
	static const char *const ptr[] = {"probe", "target", "reason", NULL};
	static const char *const pt[] = {"probe", "target", NULL};
	static const char *const t[] = {"target", NULL};
	static const char *const hc[] = {"handler", "code", NULL};
	static const char *const vr[] = {"version", "revision", NULL};
	static const char *const en[] = {"engine", NULL};
	static const char *const reasons[] = {"io_error", "short_io", "timeout", "target_down",
					      "setup"};
	static const char *const engines[] = {"io_uring", "libaio", "sync", "null"};
	struct metric_family *lat, *ios, *bytes, *errs, *runs, *last, *deferred, *skipped, *f;
	struct metrics *m = metrics_new();
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	unsigned p, e, k;

	if (!m)
		die("metrics_new");
	lat_series = calloc(3 * (size_t)pairs, sizeof(*lat_series));
	ios_series = calloc(3 * (size_t)pairs, sizeof(*ios_series));
	if (!lat_series || !ios_series)
		die("calloc");
	lat = family(m, "iopulse_probe_latency_seconds", METRIC_HISTOGRAM, pto);
	ios = family(m, "iopulse_probe_ios_total", METRIC_COUNTER, pto);
	bytes = family(m, "iopulse_probe_bytes_total", METRIC_COUNTER, pto);
	errs = family(m, "iopulse_probe_errors_total", METRIC_COUNTER, ptr);
	runs = family(m, "iopulse_probe_runs_total", METRIC_COUNTER, pt);
	last = family(m, "iopulse_probe_last_run_timestamp_seconds", METRIC_GAUGE, pt);
	deferred = family(m, "iopulse_probe_deferred_total", METRIC_COUNTER, pt);
	skipped = family(m, "iopulse_probe_skipped_total", METRIC_COUNTER, ptr);

	for (p = 0; p < 2 * pairs; p++) {
		static const char *const wops[] = {"write", "fdatasync"};
		static const char *const rops[] = {"read"};
		static const double wmed[] = {50e3, 1e6}, rmed[] = {100e3};
		int writer = p < pairs;
		const char *const *ops = writer ? wops : rops;
		const double *med = writer ? wmed : rmed;
		unsigned n_ops = writer ? 2 : 1;
		char name[16];
		const char *v[4] = {name, "bench", NULL, NULL};

		snprintf(name, sizeof(name), "%c%02u", writer ? 'w' : 'r',
			 (writer ? p : p - pairs) + 1);
		for (k = 0; k < n_ops; k++) {
			struct metric_series *h;

			v[2] = ops[k];
			h = series(lat, v);
			for (unsigned i = 0; i < SAMPLES_PER_SERIES; i++)
				metrics_observe_ns(h, sample_lognormal_ns(&rng, med[k], 1.0));
			metrics_add(series(ios, v), SAMPLES_PER_SERIES);
			lat_series[n_lat_series] = h;
			ios_series[n_lat_series++] = series(ios, v);
			metrics_add(series(bytes, v),
				    strcmp(ops[k], "fdatasync") ? 4096.0 * SAMPLES_PER_SERIES : 0);
		}
		for (e = 0; e < sizeof(reasons) / sizeof(reasons[0]); e++) {
			v[2] = reasons[e];
			metrics_add(series(errs, v), e == 2 ? 3 : 0);
		}
		v[2] = "busy";
		metrics_add(series(skipped, v), 0);
		v[2] = NULL;
		metrics_add(series(runs, v), SAMPLES_PER_SERIES);
		metrics_set(series(last, v), 1796009033.7713392 + 0.05 * p);
		metrics_add(series(deferred, v), 17);
	}

	f = family(m, "iopulse_target_up", METRIC_GAUGE, t);
	metrics_set(series(f, (const char *const[]){"bench", NULL}), 1);
	f = family(m, "iopulse_target_inflight_seconds", METRIC_GAUGE, t);
	metrics_set(series(f, (const char *const[]){"bench", NULL}), 0);
	f = family(m, "iopulse_target_layout_progress_ratio", METRIC_GAUGE, t);
	metrics_set(series(f, (const char *const[]){"bench", NULL}), 1);
	f = family(m, "iopulse_build_info", METRIC_GAUGE, vr);
	metrics_set(series(f, (const char *const[]){"0.1.0", "c2f9da4e1b2a", NULL}), 1);
	f = family(m, "iopulse_engine_available", METRIC_GAUGE, en);
	for (e = 0; e < sizeof(engines) / sizeof(engines[0]); e++)
		metrics_set(series(f, (const char *const[]){engines[e], NULL}), 1);
	f = family(m, "iopulse_http_requests_total", METRIC_COUNTER, hc);
	http_series = series(f, (const char *const[]){"metrics", "200", NULL});
	metrics_add(http_series, 123456);
	*pm = process_metrics_new(m);
	if (!*pm)
		die("process_metrics_new");
	return m;
}

/* ---- timing ---- */

enum what {
	W_SNAPSHOT, /* metrics_snapshot_ex() + free */
	W_RENDER,   /* render one snapshot taken beforehand */
	W_BOTH,	    /* a scrape: snapshot, render, free */
};

typedef int (*render_fn)(const struct metrics_snapshot *snap, struct buf *out);

struct job {
	struct metrics *m;
	unsigned flags;
	render_fn render; /* NULL: W_SNAPSHOT only */
	const struct metrics_snapshot *snap;
};

static void one(const struct job *j, enum what w, size_t *bytes)
{
	struct metrics_snapshot *snap = NULL;
	const struct metrics_snapshot *use = j->snap;
	struct buf out;

	if (w != W_RENDER) {
		snap = metrics_snapshot_ex(j->m, j->flags);
		if (!snap)
			die("metrics_snapshot_ex");
		use = snap;
	}
	if (w != W_SNAPSHOT) {
		buf_init(&out);
		if (j->render(use, &out) < 0)
			die("render");
		*bytes = out.len;
		buf_free(&out);
	}
	metrics_snapshot_free(snap);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median over @rounds rounds of the CPU us that one call of @fn(@arg) takes. */
static double time_us(void (*fn)(void *arg), void *arg, unsigned rounds)
{
	double per[MAX_ROUNDS];
	uint64_t t0, t1;
	unsigned iters = 1, r, i;

	/* Size a round: double the count until one takes >= 1/8 of the target. */
	for (;;) {
		t0 = cpu_ns();
		for (i = 0; i < iters; i++)
			fn(arg);
		t1 = cpu_ns();
		if (t1 - t0 >= ROUND_CPU_NS / 8 || iters >= (1u << 24))
			break;
		iters *= 2;
	}
	iters = (unsigned)((double)iters * ROUND_CPU_NS / (double)(t1 - t0 + 1)) + 1;
	for (r = 0; r < rounds; r++) {
		t0 = cpu_ns();
		for (i = 0; i < iters; i++)
			fn(arg);
		t1 = cpu_ns();
		per[r] = (double)(t1 - t0) / 1e3 / iters;
	}
	qsort(per, rounds, sizeof(per[0]), cmp_double);
	return per[rounds / 2];
}

struct job_what {
	const struct job *j;
	enum what w;
	size_t bytes;
};

static void run_job(void *arg)
{
	struct job_what *jw = arg;

	one(jw->j, jw->w, &jw->bytes);
}

static void run_collect(void *arg)
{
	process_metrics_collect(arg);
}

/* The numbers a text page formats: every le label and every _sum. */
struct numbers {
	const struct metrics_snapshot *snap;
};

static void run_numbers(void *arg)
{
	const struct metrics_snapshot *snap = ((struct numbers *)arg)->snap;
	char tmp[32];

	for (unsigned i = 0; i < snap->n_families; i++) {
		const struct snap_family *f = &snap->families[i];

		if (f->type != METRIC_HISTOGRAM)
			continue;
		for (unsigned s = 0; s < f->n_series; s++) {
			for (unsigned b = 0; b < f->n_bounds; b++)
				expose_format_canonical(f->bounds[b], tmp, sizeof(tmp));
			expose_format_canonical(INFINITY, tmp, sizeof(tmp));
			expose_format_double(f->series[s].sum, tmp, sizeof(tmp));
		}
	}
}

#ifdef HAVE_GZPAGE
struct gz {
	const char *page;
	size_t len, zlen;
};

/* The whole page as one piece through a new gzpage: gzip from scratch. */
static void run_gzip(void *arg)
{
	struct gz *g = arg;
	struct gzpage *gz = gzpage_new();
	struct buf page, z;
	size_t end = g->len;

	if (!gz)
		die("gzpage_new");
	buf_init(&page);
	buf_init(&z);
	buf_append(&page, g->page, g->len);
	if (gzpage_compress(gz, &page, &end, 1, &z) < 0)
		die("gzpage_compress");
	g->zlen = z.len;
	buf_free(&page);
	buf_free(&z);
	gzpage_free(gz);
}
#endif

static void bench_format(const char *name, struct metrics *m, unsigned flags, render_fn render,
			 unsigned rounds)
{
	struct metrics_snapshot *snap = metrics_snapshot_ex(m, flags);
	struct job j = {m, flags, render, snap};
	struct job_what jw = {&j, W_SNAPSHOT, 0};
	double snap_us, render_us, both_us;

	if (!snap)
		die("metrics_snapshot_ex");
	snap_us = time_us(run_job, &jw, rounds);
	jw.w = W_RENDER;
	render_us = time_us(run_job, &jw, rounds);
	jw.w = W_BOTH;
	both_us = time_us(run_job, &jw, rounds);
	printf("%-12s %10.1f %10.1f %12.1f %10zu\n", name, snap_us, render_us, both_us, jw.bytes);
	metrics_snapshot_free(snap);
}

#ifdef HAVE_HTTP_RENDER_CACHE
struct cached {
	struct metrics *m;
	enum http_format fmt;
	unsigned changed; /* latency series updated before each scrape */
	unsigned next;	  /* round robin over them */
	uint64_t rng;
	size_t bytes;
#ifdef HAVE_GZPAGE
	struct gzpage *gz; /* non-NULL: gzip the page as /metrics does */
	struct http_family_ends ends;
#endif
};

static void run_cached(void *arg)
{
	struct cached *c = arg;
	struct buf out;
	unsigned i;
	struct http_family_ends *ends = NULL;

	for (i = 0; i < c->changed; i++) {
		unsigned k = c->next++ % n_lat_series;

		metrics_observe_ns(lat_series[k], sample_lognormal_ns(&c->rng, 100e3, 1.0));
		metrics_add(ios_series[k], 1);
	}
	metrics_add(http_series, 1);
	buf_init(&out);
#ifdef HAVE_GZPAGE
	if (c->gz)
		ends = &c->ends;
#endif
	if (http_render_metrics(c->m, c->fmt, &out, ends) < 0)
		die("http_render_metrics");
	c->bytes = out.len;
#ifdef HAVE_GZPAGE
	if (c->gz) {
		struct buf z;

		buf_init(&z);
		if (gzpage_compress(c->gz, &out, c->ends.end, c->ends.n, &z) < 0)
			die("gzpage_compress");
		c->bytes = z.len;
		buf_free(&z);
	}
#endif
	buf_free(&out);
}

static void bench_cached(struct metrics *m, unsigned rounds)
{
	static const char *const names[] = {"text", "openmetrics", "protobuf"};
	const unsigned changed[] = {0, 1, 10, n_lat_series};
	enum http_format f;
	unsigned k;

	printf("cached scrapes (http_render_metrics: snapshot + render through the render "
	       "cache), CPU us per scrape\n");
	printf("%-16s", "format");
	for (k = 0; k < sizeof(changed) / sizeof(changed[0]); k++) {
		char col[32];

		snprintf(col, sizeof(col), "%u changed", changed[k]);
		printf(" %12s", col);
	}
	printf(" %10s\n", "bytes");
	for (f = HTTP_FORMAT_TEXT; f <= HTTP_FORMAT_PROTOBUF; f++) {
		unsigned gz, n_gz = 1;

#ifdef HAVE_GZPAGE
		n_gz = 2; /* and with gzip, through a gzpage kept across scrapes */
#endif
		for (gz = 0; gz < n_gz; gz++) {
			struct cached c = {.m = m, .fmt = f, .rng = 0x2545f4914f6cdd1dULL};
			char name[32];

			snprintf(name, sizeof(name), "%s%s", names[f], gz ? "+gzip" : "");
#ifdef HAVE_GZPAGE
			c.gz = gz ? gzpage_new() : NULL;
			if (gz && !c.gz)
				die("gzpage_new");
#endif
			printf("%-16s", name);
			run_cached(&c); /* fill the caches */
			for (k = 0; k < sizeof(changed) / sizeof(changed[0]); k++) {
				c.changed = changed[k];
				printf(" %12.1f", time_us(run_cached, &c, rounds));
			}
			printf(" %10zu\n", c.bytes);
#ifdef HAVE_GZPAGE
			gzpage_free(c.gz);
			free(c.ends.end);
#endif
		}
	}
}
#endif

int main(int argc, char **argv)
{
	unsigned pairs = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 50;
	unsigned rounds = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 7;
	struct process_metrics *pm;
	struct metrics *m;
	struct metrics_snapshot *snap;
	struct numbers nums;
	struct buf page;
	double us;

	if (pairs < 1 || pairs > 10000 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: render_bench [PAIRS (1..10000) [ROUNDS (1..%d)]]\n",
			MAX_ROUNDS);
		return 64;
	}
	m = build_registry(pairs, &pm);
	printf("registry: %u probes (%u write+fdatasync pings, %u read pings), %u latency "
	       "histogram series x %zu buckets, %u samples each\n",
	       2 * pairs, pairs, pairs, 3 * pairs, N_DEFAULT + 1, SAMPLES_PER_SERIES);
	printf("CPU us per scrape (CLOCK_PROCESS_CPUTIME_ID), median of %u rounds of ~%.1fs\n",
	       rounds, ROUND_CPU_NS / 1e9);
	printf("%-12s %10s %10s %12s %10s\n", "format", "snapshot", "render", "snap+render",
	       "bytes");
	bench_format("text", m, 0, expose_text, rounds);
#ifdef HAVE_EXPOSE_OPENMETRICS
	bench_format("openmetrics", m, 0, expose_openmetrics, rounds);
#endif
#ifdef HAVE_EXPOSE_PROTOBUF
	bench_format("protobuf", m, METRICS_SNAP_NATIVE, expose_protobuf, rounds);
#endif

#ifdef HAVE_HTTP_RENDER_CACHE
	bench_cached(m, rounds);
#endif

	/* Where a text scrape's CPU goes, beyond snapshot + render. */
	us = time_us(run_collect, pm, rounds);
	printf("collect (process_* from /proc, every scrape): %.1f us\n", us);
	snap = metrics_snapshot(m);
	if (!snap)
		die("metrics_snapshot");
	nums.snap = snap;
	us = time_us(run_numbers, &nums, rounds);
	printf("text: formatting le labels + _sum alone (expose_format_*): %.1f us\n", us);
#ifdef HAVE_GZPAGE
	buf_init(&page);
	if (expose_text(snap, &page) < 0)
		die("expose_text");
	{
		struct gz g = {page.data, page.len, 0};

		us = time_us(run_gzip, &g, rounds);
		printf("text: gzip of the whole page from scratch (gzpage, one piece): %.1f us, "
		       "%zu -> %zu bytes\n",
		       us, g.len, g.zlen);
	}
	buf_free(&page);
#else
	(void)page;
#endif
	metrics_snapshot_free(snap);
	process_metrics_free(pm);
	metrics_free(m);
	free(lat_series);
	free(ios_series);
	return 0;
}
