/* SPDX-License-Identifier: MIT */
/*
 * oneshot — see oneshot.h: each selected probe run on its target, opened as
 * the daemon's lane opens it, and its runs added up for oneshot_print.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "engines/engine.h"
#include "lib/ioprio.h"
#include "lib/escape.h"
#include "daemon/oneshot/oneshot.h"
#include "daemon/oneshot/oneshot_int.h"
#include "daemon/probes/probe.h"
#include "daemon/targets/target.h"

#define PROGRESS_EVERY_NS 100000000ULL /* a layout's progress line: 10 times a second */

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
	char buf[IOPRIO_TEXT_MAX];

	if (!probe->engine)
		snprintf(ps->message, sizeof(ps->message), "engine '%s' %s", p->engine,
			 r == -EOPNOTSUPP ? "is not available on this system" : "is not built in");
	else if (r == -EPERM && ioprio_is_realtime(p->io_priority))
		snprintf(ps->message, sizeof(ps->message), "'io_priority: %s' " IOPRIO_RT_NEEDS,
			 ioprio_format(p->io_priority, buf, sizeof(buf)));
	else
		snprintf(ps->message, sizeof(ps->message), "cannot set up the %s: %s",
			 cfg_probe_kind_name(p->kind), strerror(-r));
}

void oneshot_warn_depth(const struct cfg_probe *p, const char *engine)
{
	char why[256];

	if (probe_depth_ignored(p, engine, why, sizeof(why)))
		fprintf(stderr, "warning: %s\n", why);
}

/* After one ping: its exact latencies, its line, a -p summary when due. */
static void ping_done(struct probe_sum *ps, const struct probe_outcome *before,
		      const struct oneshot_opts *o)
{
	ps->requests++;
	/* The request's read or write: the op whose counts moved (with -G, they
	 * take turns); the configured one when nothing was counted. */
	ps->last_op = ps->cfg->op;
	for (int op = IO_READ; op <= IO_WRITE; op++)
		if (ps->out.op[op].ios != before->op[op].ios ||
		    ps->out.op[op].errors != before->op[op].errors ||
		    ps->out.op[op].short_ios != before->op[op].short_ios)
			ps->last_op = op;
	for (int op = 0; op < IO_OP_COUNT; op++) {
		uint64_t ns = ps->out.op[op].io_ns - before->op[op].io_ns;

		if (ps->out.op[op].ios == before->op[op].ios)
			continue;
		stats_add(&ps->req[op], ns);
		stats_add(&ps->period[op], ns);
	}
	if (o->json)
		return;
	if (!o->quiet)
		oneshot_print_request(ps, before);
	if (o->period && ps->requests % o->period == 0)
		oneshot_print_period(ps);
	fflush(stdout);
}

/* Whether the ping loop goes on to request @i (0-based) started at @start. */
static bool more(const struct oneshot_opts *o, unsigned i, uint64_t start)
{
	if (atomic_load(&stop_requested) || (o->count && i >= o->count))
		return false;
	return !o->deadline_ns || now_ns() - start < o->deadline_ns;
}

/* Pings (PROBE_F_REQUESTS) o->count times (0: until the deadline or a signal)
 * at a fixed rate, as the daemon; a burst once. Everything measured adds up in
 * ps->out. */
static int run_runs(struct probe_sum *ps, struct probe *probe, const struct oneshot_opts *o)
{
	const struct cfg_probe *p = ps->cfg;
	const bool per_request = probe_ops_of(p->kind)->flags & PROBE_F_REQUESTS;
	uint64_t interval = o->interval_ns >= 0 ? (uint64_t)o->interval_ns : p->interval_ns;
	uint64_t start = now_ns(), when;
	struct probe_outcome before;
	int r = 0;

	for (unsigned i = 0; per_request ? more(o, i, start) : i < 1; i++) {
		when = start + i * interval;
		if (i > 0 && interval && o->deadline_ns && when > start + o->deadline_ns)
			when = start + o->deadline_ns;
		if (i > 0 && interval)
			sleep_until(when);
		if (atomic_load(&stop_requested) || (per_request && !more(o, i, start)))
			break;
		before = ps->out;
		r = probe_run(probe, &stop_requested, &ps->out);
		if (per_request)
			ping_done(ps, &before, o);
		if (r < 0) {
			snprintf(ps->message, sizeof(ps->message), "cannot run on %s: %s",
				 probe->target->file_path,
				 ps->out.why ? ps->out.why : strerror(-r));
			break;
		}
	}
	ps->wall_ns = now_ns() - start;
	return r;
}

static int run_probe(struct probe_sum *ps, struct target *t, const struct config *cfg,
		     const struct oneshot_opts *o)
{
	struct probe probe;
	int r = probe_init(&probe, ps->cfg, t, cfg->buckets_ns, cfg->n_buckets);

	if (probe.engine)
		ps->engine = probe.engine->name;
	probe.say = probe_note_log; /* what a run finds, on stderr as it is found */
	if (r < 0) {
		setup_failed(ps, &probe, r);
		probe_free(&probe);
		return r;
	}
	oneshot_warn_depth(ps->cfg, probe.engine->name);
	r = run_runs(ps, &probe, o);
	if (r == 0 && ps->out.error) {
		snprintf(ps->message, sizeof(ps->message), "stopped early: %s",
			 ps->out.why ? ps->out.why : strerror(-ps->out.error));
		r = ps->out.error;
	}
	probe_free(&probe);
	return r;
}

/* ---------------------------------------------------------------- targets */

static uint64_t progress_last_ns;
static bool progress_shown;

/* A layout's progress on a terminal (stderr), overwritten in place. */
static void layout_progress(const struct target *t, uint64_t done, uint64_t total)
{
	uint64_t now = now_ns();
	char a[32], b[32], path[ESC_SIZE(PATH_MAX)];

	if (done < total && now - progress_last_ns < PROGRESS_EVERY_NS)
		return;
	progress_last_ns = now;
	progress_shown = true;
	cfg_format_bytes((double)done, a, sizeof(a));
	cfg_format_bytes((double)total, b, sizeof(b));
	fprintf(stderr, "\rLaying out a probe file in %s: %s of %s (%.0f%%)",
		esc_str(path, sizeof(path), t->cfg->path), a, b,
		total ? done * 100.0 / total : 100.0);
}

/* target_open(), ending the progress line it may have drawn. */
static int open_with_progress(struct target *t)
{
	int r = target_open(t);

	if (progress_shown)
		fputc('\n', stderr);
	progress_shown = false;
	return r;
}

/* target_open(), falling back to a probe file of our own when the daemon (or
 * another iopulse) holds the directory's: it must not be touched then. */
static int open_dir_or_own(struct target *t)
{
	int r = open_with_progress(t);
	char path[ESC_SIZE(PATH_MAX)];

	if (r != -EBUSY || t->cfg->kind != CFG_TARGET_DIRECTORY || t->unnamed)
		return r;
	fprintf(stderr,
		"iopulse probe: %s is in use by another iopulse (the daemon?): measuring with "
		"an unnamed probe file of our own instead, gone at exit\n",
		esc_str(path, sizeof(path), t->file_path));
	t->unnamed = true;
	t->file_name = NULL;
	return open_with_progress(t);
}

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
		return target_check(t) == 0 ? 0 : open_dir_or_own(t);
	t->want_write = false;
	t->dir_only = t->cfg->kind == CFG_TARGET_DIRECTORY; /* as the daemon's lane */
	for (unsigned i = 0; i < cfg->n_probes; i++) {
		const struct cfg_probe *p = &cfg->probes[i];

		if (p->target != ti || !selected(o, p->name))
			continue;
		t->want_write = t->want_write || cfg_probe_writes(p);
		t->dir_only = t->dir_only && !probe_uses_probe_file(p);
	}
	t->stop = &stop_requested;
	t->unnamed = o->unnamed;
	t->file_name = o->file_name;
	if (isatty(STDERR_FILENO))
		t->layout_progress = layout_progress;
	return open_dir_or_own(t);
}

/* ---------------------------------------------------------------- driver */

/* Runs probe @p, its results in @ps; whether it failed. */
static bool run_one(struct probe_sum *ps, const struct cfg_probe *p, struct target *t,
		    const struct config *cfg, const struct oneshot_opts *o)
{
	int r;

	ps->cfg = p;
	ps->target = &cfg->targets[p->target];
	if (!o->json && !o->adhoc)
		fprintf(stderr, "Running %s %s on %s...\n", cfg_probe_kind_name(p->kind), p->name,
			ps->target->name);
	r = open_target(t, cfg, p->target, o);
	if (r == 0) {
		target_describe(t, &ps->desc);
		r = run_probe(ps, t, cfg, o);
	} else if (o->adhoc) { /* t->error names the PATH; "path1" is ours */
		snprintf(ps->message, sizeof(ps->message), "%s", t->error);
		ps->open_error = r;
	} else {
		snprintf(ps->message, sizeof(ps->message), "target %s: %s", ps->target->name,
			 t->error);
	}
	ps->interrupted = atomic_load(&stop_requested);
	/* A layout abandoned for Ctrl-C is an interruption, not a failure (target.c
	 * removed what it wrote). */
	if (r == -ECANCELED && ps->interrupted) {
		r = 0;
		ps->message[0] = '\0';
	}
	ps->error = r;
	for (int op = 0; op < IO_OP_COUNT; op++)
		if (ps->out.op[op].errors || ps->out.op[op].short_ios)
			ps->error = ps->error ? ps->error : -EIO;
	if (ps->error && !ps->message[0])
		snprintf(ps->message, sizeof(ps->message), "I/O errors");
	if (!o->json) /* only a kind run request by request counts requests */
		oneshot_print_human(ps, o, !o->quiet && ps->requests);
	return ps->error != 0;
}

int oneshot_path_status(int err, int otherwise)
{
	switch (err) {
	case -EACCES:
	case -EPERM:
	case -ELOOP:
		return EX_NOPERM;
	case -ENOENT:
	case -ENOTDIR:
		return EX_NOINPUT;
	case -EROFS:
		return EX_CANTCREAT;
	}
	return otherwise;
}

/* The exit status of @n probes run (some @failed). */
static int run_status(const struct probe_sum *sums, unsigned n, unsigned failed)
{
	for (unsigned i = 0; i < n; i++) {
		int status = oneshot_path_status(sums[i].open_error, 0);

		if (status)
			return status;
	}
	return failed ? 1 : 0;
}

int oneshot_run(const struct config *cfg, const struct oneshot_opts *o)
{
	struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: sleeps wake up */
	struct probe_sum *sums = NULL;
	struct target *targets = NULL;
	unsigned n = 0, failed = 0;
	int status = EX_OSERR; /* until the probes have run: out of memory */

	for (unsigned i = 0; i < o->n_names; i++)
		if (cfg_probe_index(cfg, o->names[i]) < 0) {
			char name[ESC_SIZE(ESC_ARG_SHOWN)], src[ESC_SIZE(PATH_MAX)];

			/* Both as typed: a newline must not forge a line. */
			fprintf(stderr, "iopulse probe: no probe named '%s' in %s\n",
				esc_str(name, sizeof(name), o->names[i]),
				esc_str(src, sizeof(src), cfg->source));
			return EX_USAGE;
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

		if (!selected(o, p->name))
			continue;
		if (probe_outcome_init(&sums[n].out, cfg->buckets_ns, cfg->n_buckets) < 0) {
			fprintf(stderr, "iopulse probe: out of memory\n");
			goto out;
		}
		failed += run_one(&sums[n], p, &targets[p->target], cfg, o);
		n++;
	}
	if (o->json)
		oneshot_print_json(sums, n);
	status = run_status(sums, n, failed);
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
