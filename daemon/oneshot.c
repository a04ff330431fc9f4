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
#include "hist.h"
#include "oneshot.h"
#include "probe.h"
#include "target.h"

struct probe_sum {
	const struct cfg_probe *cfg;
	const struct cfg_target *target;
	const char *engine;
	struct probe_outcome out; /* every run of the probe added up */
	uint64_t wall_ns;
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

/* Why @probe could not be set up (@r), in ps->message. */
static void setup_failed(struct probe_sum *ps, const struct probe *probe, int r)
{
	const struct cfg_probe *p = ps->cfg;

	if (!probe->engine)
		snprintf(ps->message, sizeof(ps->message), "engine '%s' %s", p->engine,
			 r == -EOPNOTSUPP ? "is not available on this system" : "is not built in");
	else
		snprintf(ps->message, sizeof(ps->message), "cannot set up the %s: %s",
			 cfg_probe_kind_name(p->kind), strerror(-r));
}

/* Runs the probe: a ping o->count times at a fixed rate (as the daemon), a burst
 * once. Everything measured adds up in ps->out. */
static int run_probe(struct probe_sum *ps, struct target *t, const struct config *cfg,
		     const struct oneshot_opts *o)
{
	const struct cfg_probe *p = ps->cfg;
	const bool ping = p->kind == CFG_PROBE_PING;
	uint64_t interval = o->interval_ns >= 0 ? (uint64_t)o->interval_ns : p->interval_ns;
	struct probe probe;
	uint64_t start;
	int r = probe_init(&probe, p, t, cfg->buckets_ns, cfg->n_buckets);

	if (probe.engine)
		ps->engine = probe.engine->name;
	if (r < 0) {
		setup_failed(ps, &probe, r);
		probe_free(&probe);
		return r;
	}
	start = now_ns();
	for (unsigned i = 0; i < (ping ? o->count : 1) && !atomic_load(&stop_requested); i++) {
		if (i > 0 && interval)
			sleep_until(start + i * interval);
		if (atomic_load(&stop_requested))
			break;
		r = probe.ops->run(&probe, &stop_requested, &ps->out);
		if (r < 0) {
			snprintf(ps->message, sizeof(ps->message), "cannot run on %s: %s",
				 t->file_path, ps->out.why ? ps->out.why : strerror(-r));
			break;
		}
	}
	ps->wall_ns = now_ns() - start;
	if (r == 0 && ps->out.error) {
		snprintf(ps->message, sizeof(ps->message), "stopped early: %s",
			 ps->out.why ? ps->out.why : strerror(-ps->out.error));
		r = ps->out.error;
	}
	probe_free(&probe);
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
		const struct probe_op_outcome *s = &ps->out.op[op];
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
		fmt_time(a, sizeof(a), hist_min_ns(s->hist));
		fmt_time(b, sizeof(b), hist_sum_ns(s->hist) / hist_count(s->hist));
		fmt_time(c, sizeof(c), hist_max_ns(s->hist));
		printf("  min/avg/max = %s / %s / %s\n", a, b, c);
		fmt_time(a, sizeof(a), hist_quantile_ns(s->hist, 0.5));
		fmt_time(b, sizeof(b), hist_quantile_ns(s->hist, 0.9));
		fmt_time(c, sizeof(c), hist_quantile_ns(s->hist, 0.99));
		fmt_time(d, sizeof(d), hist_quantile_ns(s->hist, 0.999));
		printf("  p50/p90/p99/p99.9 = %s / %s / %s / %s\n", a, b, c, d);
	}
	if (ps->out.timeouts)
		printf("  %" PRIu64 " I/O(s) exceeded the %.3gs timeout\n", ps->out.timeouts,
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
	printf(", \"timeouts\": %" PRIu64 ", ", ps->out.timeouts);
	json_seconds("wall_seconds", ps->wall_ns, true);
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
		printf("\"latency_seconds\": {");
		json_seconds("min", hist_min_ns(s->hist), true);
		json_seconds("avg", s->ios ? hist_sum_ns(s->hist) / hist_count(s->hist) : 0, true);
		json_seconds("max", hist_max_ns(s->hist), true);
		json_seconds("p50", hist_quantile_ns(s->hist, 0.5), true);
		json_seconds("p90", hist_quantile_ns(s->hist, 0.9), true);
		json_seconds("p99", hist_quantile_ns(s->hist, 0.99), true);
		json_seconds("p99_9", hist_quantile_ns(s->hist, 0.999), false);
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
		if (probe_outcome_init(&ps->out, cfg->buckets_ns, cfg->n_buckets) < 0) {
			fprintf(stderr, "iopulse probe: out of memory\n");
			goto out;
		}
		if (!o->json)
			fprintf(stderr, "Running %s %s on %s...\n", cfg_probe_kind_name(p->kind),
				p->name, ps->target->name);
		r = open_target(t, cfg, p->target, o);
		if (r == 0)
			r = run_probe(ps, t, cfg, o);
		else
			snprintf(ps->message, sizeof(ps->message), "target %s: %s",
				 ps->target->name, t->error);
		ps->interrupted = atomic_load(&stop_requested);
		ps->error = r;
		for (int op = 0; op < IO_OP_COUNT; op++)
			if (ps->out.op[op].errors || ps->out.op[op].short_ios)
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
			probe_outcome_free(&sums[i].out);
	free(sums);
	free(targets);
	return status;
}
