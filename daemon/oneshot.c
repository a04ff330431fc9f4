/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../engines/engine.h"
#include "burst.h"
#include "hist.h"
#include "oneshot.h"
#include "probe.h"
#include "target.h"

struct op_sum {
	struct hist *h;
	uint64_t ios, bytes, errors, short_ios;
	uint64_t io_ns; /* ping: sum of latencies (as ioping); burst: the measured phase */
};

struct probe_sum {
	const struct cfg_probe *cfg;
	const struct cfg_target *target;
	const char *engine;
	struct op_sum ops[IO_OP_COUNT];
	uint64_t wall_ns;
	uint64_t timeouts;
	int error; /* could not run, or stopped by an error */
	char message[PATH_MAX + 640];
	bool interrupted;
};

static _Atomic bool stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop_requested, true);
}

/* ---------------------------------------------------------------- running */

static uint64_t now_ns(void)
{
	return eng_now_ns();
}

/* EINTR (Ctrl-C) returns early; the caller checks stop_requested. */
static void sleep_until(uint64_t when_ns)
{
	while (!atomic_load(&stop_requested) && eng_sleep_until(when_ns) == -EINTR)
		;
}

static void record(struct op_sum *s, ssize_t result, uint64_t want, uint64_t lat_ns)
{
	if (result < 0) {
		s->errors++;
		return;
	}
	if ((uint64_t)result < want) {
		s->short_ios++;
		return;
	}
	s->ios++;
	s->bytes += (uint64_t)result;
	s->io_ns += lat_ns;
	hist_record(s->h, lat_ns);
}

static int run_ping(struct probe_sum *ps, struct target *t, const struct oneshot_opts *o)
{
	const struct cfg_probe *p = ps->cfg;
	uint64_t interval = o->interval_ns >= 0 ? (uint64_t)o->interval_ns : p->interval_ns;
	struct op_sum *main_op = &ps->ops[p->op];
	struct ping ping;
	uint64_t start;
	int r;

	r = probe_ping_init(&ping, p);
	if (r < 0) {
		snprintf(ps->message, sizeof(ps->message), "cannot set up engine '%s': %s",
			 p->engine, strerror(-r));
		return r;
	}
	ps->engine = ping.ops->name;
	start = now_ns();
	for (unsigned i = 0; i < o->count && !atomic_load(&stop_requested); i++) {
		struct ping_result res;

		if (i > 0 && interval)
			sleep_until(start + i * interval); /* fixed rate, as the daemon */
		if (atomic_load(&stop_requested))
			break;
		r = probe_ping_run(&ping, t, &res);
		if (r < 0) {
			snprintf(ps->message, sizeof(ps->message), "cannot run on %s: %s",
				 t->file_path, strerror(-r));
			break;
		}
		/* A wait given up for Ctrl-C is an interruption, not an I/O error. */
		if (res.result == -ETIME && atomic_load(&stop_requested)) {
			ps->timeouts += res.lat_ns >= p->timeout_ns;
			break;
		}
		record(main_op, res.result, p->block_size, res.lat_ns);
		ps->timeouts += res.result == -ETIME || res.lat_ns >= p->timeout_ns;
		if (p->sync == CFG_SYNC_FDATASYNC) {
			if (res.sync_result == -ETIME && atomic_load(&stop_requested))
				break;
			record(&ps->ops[IO_FDATASYNC], res.sync_result, 0, res.sync_lat_ns);
			ps->timeouts +=
				res.sync_result == -ETIME || res.sync_lat_ns >= p->timeout_ns;
		}
	}
	ps->wall_ns = now_ns() - start;
	probe_ping_cleanup(&ping);
	return r < 0 ? r : 0;
}

static int run_burst(struct probe_sum *ps, struct target *t, const struct config *cfg)
{
	const struct cfg_probe *p = ps->cfg;
	const struct burst_result *res;
	const struct engine_ops *ops;
	struct burst *b;
	uint64_t start;
	int r;

	ops = eng_resolve(p->engine, &r);
	if (!ops) {
		snprintf(ps->message, sizeof(ps->message), "engine '%s' %s", p->engine,
			 r == -EOPNOTSUPP ? "is not available on this system" : "is not built in");
		return r;
	}
	ps->engine = ops->name;
	b = burst_new(p, ops, cfg->buckets_ns, cfg->n_buckets, &r);
	if (!b) {
		snprintf(ps->message, sizeof(ps->message), "cannot set up the burst: %s",
			 strerror(-r));
		return r;
	}
	start = now_ns();
	r = burst_run(b, t, &stop_requested, &res);
	ps->wall_ns = now_ns() - start;
	if (r < 0) {
		snprintf(ps->message, sizeof(ps->message), "cannot run on %s: %s", t->file_path,
			 burst_why(b) ? burst_why(b) : strerror(-r));
		burst_free(b);
		return r;
	}
	for (int d = 0; d < IO_DIR_COUNT; d++) {
		struct op_sum *s = &ps->ops[d];

		s->ios = res->dir[d].ios;
		s->bytes = res->dir[d].bytes;
		s->errors = res->dir[d].errors;
		s->short_ios = res->dir[d].short_ios;
		s->io_ns = res->elapsed_ns;
		hist_merge(s->h, res->dir[d].hist);
	}
	ps->timeouts = res->timeouts;
	if (res->error) {
		snprintf(ps->message, sizeof(ps->message), "stopped early: %s",
			 burst_why(b) ? burst_why(b) : strerror(-res->error));
		r = res->error;
	}
	burst_free(b);
	return r;
}

/* ---------------------------------------------------------------- output */

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

static void print_human(const struct probe_sum *ps)
{
	const struct cfg_probe *p = ps->cfg;
	char a[32], b[32], c[32], d[32];

	printf("--- %s %s on %s (%s %s, engine %s) ---\n", p->name, cfg_probe_kind_name(p->kind),
	       ps->target->name, cfg_target_kind_name(ps->target->kind), ps->target->path,
	       ps->engine ? ps->engine : p->engine);
	for (int op = 0; op < IO_OP_COUNT; op++) {
		const struct op_sum *s = &ps->ops[op];
		double secs = s->io_ns / 1e9;

		if (!s->ios && !s->errors && !s->short_ios)
			continue;
		fmt_time(a, sizeof(a), s->io_ns);
		fmt_time(b, sizeof(b), ps->wall_ns);
		cfg_format_bytes((double)s->bytes, c, sizeof(c));
		printf("%s: %" PRIu64 " requests completed in %s (%s wall), %s", io_op_name(op),
		       s->ios, a, b, c);
		fmt_rate(a, sizeof(a), secs > 0 ? s->ios / secs : 0);
		cfg_format_bytes(secs > 0 ? s->bytes / secs : 0, b, sizeof(b));
		printf(", %s iops, %s/s", a, b);
		if (s->errors || s->short_ios)
			printf(", %" PRIu64 " errors, %" PRIu64 " short", s->errors, s->short_ios);
		putchar('\n');
		if (!s->ios)
			continue;
		fmt_time(a, sizeof(a), hist_min_ns(s->h));
		fmt_time(b, sizeof(b), hist_sum_ns(s->h) / hist_count(s->h));
		fmt_time(c, sizeof(c), hist_max_ns(s->h));
		printf("  min/avg/max = %s / %s / %s\n", a, b, c);
		fmt_time(a, sizeof(a), hist_quantile_ns(s->h, 0.5));
		fmt_time(b, sizeof(b), hist_quantile_ns(s->h, 0.9));
		fmt_time(c, sizeof(c), hist_quantile_ns(s->h, 0.99));
		fmt_time(d, sizeof(d), hist_quantile_ns(s->h, 0.999));
		printf("  p50/p90/p99/p99.9 = %s / %s / %s / %s\n", a, b, c, d);
	}
	if (ps->timeouts)
		printf("  %" PRIu64 " I/O(s) exceeded the %.3gs timeout\n", ps->timeouts,
		       p->timeout_ns / 1e9);
	if (ps->interrupted)
		printf("  interrupted: results so far\n");
	if (ps->error)
		printf("  error: %s\n", ps->message);
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void json_seconds(const char *key, uint64_t ns, bool comma)
{
	printf("\"%s\": %.9g%s", key, ns / 1e9, comma ? ", " : "");
}

static void print_json_probe(const struct probe_sum *ps)
{
	const struct cfg_probe *p = ps->cfg;
	bool first = true;

	printf("    {\"name\": ");
	json_string(p->name);
	printf(", \"type\": \"%s\", \"target\": ", cfg_probe_kind_name(p->kind));
	json_string(ps->target->name);
	printf(", \"path\": ");
	json_string(ps->target->path);
	printf(", \"engine\": ");
	json_string(ps->engine ? ps->engine : p->engine);
	printf(", \"status\": \"%s\"", ps->error	 ? "error"
				       : ps->interrupted ? "interrupted"
							 : "ok");
	if (ps->error) {
		printf(", \"error\": ");
		json_string(ps->message);
	}
	printf(", \"timeouts\": %" PRIu64 ", ", ps->timeouts);
	json_seconds("wall_seconds", ps->wall_ns, true);
	printf("\"ops\": [");
	for (int op = 0; op < IO_OP_COUNT; op++) {
		const struct op_sum *s = &ps->ops[op];
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
		printf("\"latency_seconds\": {");
		json_seconds("min", hist_min_ns(s->h), true);
		json_seconds("avg", s->ios ? hist_sum_ns(s->h) / hist_count(s->h) : 0, true);
		json_seconds("max", hist_max_ns(s->h), true);
		json_seconds("p50", hist_quantile_ns(s->h, 0.5), true);
		json_seconds("p90", hist_quantile_ns(s->h, 0.9), true);
		json_seconds("p99", hist_quantile_ns(s->h, 0.99), true);
		json_seconds("p99_9", hist_quantile_ns(s->h, 0.999), false);
		printf("}}");
	}
	printf("%s]}", first ? "" : "\n    ");
}

/* ---------------------------------------------------------------- driver */

static bool selected(const struct oneshot_opts *o, const char *name)
{
	if (!o->names || !o->n_names)
		return true;
	for (unsigned i = 0; i < o->n_names; i++)
		if (strcmp(o->names[i], name) == 0)
			return true;
	return false;
}

/* Open @t for the selected probes: writable only if one of them writes. */
static int open_target(struct target *t, const struct config *cfg, unsigned ti,
		       const struct oneshot_opts *o)
{
	if (t->fd >= 0)
		return target_check(t) == 0 ? 0 : target_open(t);
	t->want_write = false;
	for (unsigned i = 0; i < cfg->n_probes; i++)
		if (cfg->probes[i].target == ti && selected(o, cfg->probes[i].name) &&
		    cfg_probe_writes(&cfg->probes[i]))
			t->want_write = true;
	t->stop = &stop_requested;
	return target_open(t);
}

int oneshot_run(const struct config *cfg, const struct oneshot_opts *o)
{
	struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: sleeps wake up */
	struct probe_sum *sums = NULL;
	struct target *targets = NULL;
	unsigned n = 0, failed = 0;
	int status = 1;

	for (unsigned i = 0; i < o->n_names; i++)
		if (cfg_probe_index(cfg, o->names[i]) < 0) {
			fprintf(stderr, "iopulse probe: no probe named '%s' in %s\n", o->names[i],
				cfg->source);
			return 64;
		}
	sums = calloc(cfg->n_probes, sizeof(*sums));
	targets = calloc(cfg->n_targets, sizeof(*targets));
	if (!sums || !targets) {
		fprintf(stderr, "iopulse probe: out of memory\n");
		goto out;
	}
	for (unsigned ti = 0; ti < cfg->n_targets; ti++)
		target_init(&targets[ti], &cfg->targets[ti]);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	for (unsigned i = 0; i < cfg->n_probes && !atomic_load(&stop_requested); i++) {
		const struct cfg_probe *p = &cfg->probes[i];
		struct probe_sum *ps = &sums[n];
		struct target *t = &targets[p->target];
		int r;

		if (!selected(o, p->name))
			continue;
		n++;
		ps->cfg = p;
		ps->target = &cfg->targets[p->target];
		for (int op = 0; op < IO_OP_COUNT; op++) {
			ps->ops[op].h = hist_new(cfg->buckets_ns, cfg->n_buckets);
			if (!ps->ops[op].h) {
				fprintf(stderr, "iopulse probe: out of memory\n");
				goto out;
			}
		}
		if (!o->json)
			fprintf(stderr, "Running %s %s on %s...\n", cfg_probe_kind_name(p->kind),
				p->name, ps->target->name);
		r = open_target(t, cfg, p->target, o);
		if (r == 0)
			r = p->kind == CFG_PROBE_PING ? run_ping(ps, t, o) : run_burst(ps, t, cfg);
		else
			snprintf(ps->message, sizeof(ps->message), "target %s: %s",
				 ps->target->name, t->error);
		ps->interrupted = atomic_load(&stop_requested);
		ps->error = r;
		for (int op = 0; op < IO_OP_COUNT; op++)
			if (ps->ops[op].errors || ps->ops[op].short_ios)
				ps->error = ps->error ? ps->error : -EIO;
		if (ps->error && !ps->message[0])
			snprintf(ps->message, sizeof(ps->message), "I/O errors");
		failed += ps->error != 0;
		if (!o->json)
			print_human(ps);
	}
	if (o->json) {
		printf("{\"version\": 1, \"probes\": [");
		for (unsigned i = 0; i < n; i++) {
			printf("%s\n", i ? "," : "");
			print_json_probe(&sums[i]);
		}
		printf("%s]}\n", n ? "\n  " : "");
	}
	status = failed ? 1 : 0;
out:
	if (targets)
		for (unsigned ti = 0; ti < cfg->n_targets; ti++)
			target_close(&targets[ti]);
	if (sums)
		for (unsigned i = 0; i < cfg->n_probes; i++)
			for (int op = 0; op < IO_OP_COUNT; op++)
				hist_free(sums[i].ops[op].h);
	free(sums);
	free(targets);
	return status;
}
