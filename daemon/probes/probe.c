/* SPDX-License-Identifier: MIT */
/*
 * probe — what every probe kind shares: the questions asked of a kind's row,
 * the common set-up and run, and outcomes. It knows no kind: their table is
 * kinds.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/ioprio.h"
#include "daemon/probes/cpu_wait.h"
#include "daemon/probes/probe.h"

bool probe_uses_probe_file(const struct cfg_probe *c)
{
	const struct probe_ops *ops = probe_ops_of(c->kind);

	return !ops || !(ops->flags & PROBE_F_OWN_FILE);
}

const struct engine_ops *probe_engine_of(const struct cfg_probe *c, int *err)
{
	const struct probe_ops *ops = probe_ops_of(c->kind);

	if (ops && (ops->flags & PROBE_F_QD1))
		return eng_resolve_qd1(c->engine, err);
	return eng_resolve(c->engine, err);
}

void probe_descriptors(const struct cfg_probe *c, struct probe_fds *out)
{
	const struct probe_ops *ops = probe_ops_of(c->kind);
	const struct engine_ops *e = probe_engine_of(c, NULL);

	*out = (struct probe_fds){0};
	if (ops && e)
		ops->descriptors(c, e, out);
}

const char *probe_engine_why(const struct cfg_probe *c)
{
	const struct probe_ops *ops = probe_ops_of(c->kind);

	if (ops && (ops->flags & PROBE_F_QD1))
		return "QD1: no queue to fill; io_uring/libaio add submission overhead, see "
		       "iopulse.yaml(5)";
	return "a queue to keep full: the first of io_uring, libaio, sync that works here";
}

int probe_init(struct probe *p, const struct cfg_probe *cfg, struct target *t,
	       const uint64_t *bounds_ns, unsigned n_bounds)
{
	int r;

	*p = (struct probe){
		.ops = probe_ops_of(cfg->kind),
		.cfg = cfg,
		.target = t,
		.bounds_ns = bounds_ns,
		.n_bounds = n_bounds,
		.write_left = UINT64_MAX,
	};
	if (!p->ops)
		return -EINVAL;
	p->engine = probe_engine_of(cfg, &r);
	if (!p->engine)
		return r;
	if (cfg->warmup_idle_ns) /* before any run: every probe is set up first */
		t->idle_tracked = true;
	/* Realtime needs a capability: refused now, not at every run. */
	if (ioprio_is_realtime(cfg->io_priority)) {
		r = ioprio_check_allowed(cfg->io_priority);
		if (r < 0)
			return r;
	}
	r = p->ops->init(p);
	if (r < 0)
		p->state = NULL;
	return r;
}

void probe_free(struct probe *p)
{
	if (p->state)
		p->ops->free(p);
	p->state = NULL;
}

int probe_run(struct probe *p, const _Atomic bool *stop, struct probe_outcome *out)
{
	const int prio = p->cfg->io_priority;
	int old = 0, r;

	/* The engines take the submitting thread's priority (ioprio.h says why this
	 * way); with none asked for, the thread's is left alone: no system calls. */
	if (prio) {
		old = ioprio_thread_get();
		r = old < 0 ? old : ioprio_thread_set(prio);
		if (r < 0) {
			out->why = "cannot set its io_priority";
			return r;
		}
	}
	r = p->ops->run(p, stop, out);
	/* It did I/O on the target (a burst too): not idle, for 'warmup_after'. */
	if (r == 0 && p->target->idle_tracked)
		p->target->last_io_ns = eng_now_ns();
	if (prio)
		(void)ioprio_thread_set(old); /* the thread had it: allowed back */
	return r;
}

uint64_t probe_inflight_since(const struct probe *p)
{
	return p->state ? p->ops->inflight_since(p) : 0;
}

bool probe_claim_timeout(_Atomic uint64_t *claimed, uint64_t since_ns)
{
	uint64_t prev = atomic_load(claimed);

	return prev != since_ns && atomic_compare_exchange_strong(claimed, &prev, since_ns);
}

/* ---------------------------------------------------------------- outcomes */

int probe_outcome_init(struct probe_outcome *o, const uint64_t *bounds_ns, unsigned n_bounds)
{
	memset(o, 0, sizeof(*o));
	for (int op = 0; op < IO_OP_COUNT; op++) {
		o->op[op].hist = hist_new(bounds_ns, n_bounds);
		if (!o->op[op].hist) {
			probe_outcome_free(o);
			return -ENOMEM;
		}
	}
	return 0;
}

void probe_outcome_clear(struct probe_outcome *o)
{
	struct hist *h[IO_OP_COUNT];

	for (int op = 0; op < IO_OP_COUNT; op++) {
		h[op] = o->op[op].hist;
		if (hist_count(h[op])) /* a ping uses one or two of them: skip the rest */
			hist_clear(h[op]);
	}
	memset(o, 0, sizeof(*o));
	for (int op = 0; op < IO_OP_COUNT; op++)
		o->op[op].hist = h[op];
}

void probe_outcome_free(struct probe_outcome *o)
{
	for (int op = 0; op < IO_OP_COUNT; op++) {
		hist_free(o->op[op].hist);
		o->op[op].hist = NULL;
	}
}

void probe_outcome_io_error(struct probe_outcome *o, int err, const char *what)
{
	if (o->io_error)
		return;
	o->io_error = err;
	o->io_what = what;
}

bool probe_outcome_io(struct probe *p, struct probe_outcome *out, enum io_op op, int64_t result,
		      uint64_t submit_ns, uint64_t lat_ns, uint64_t want)
{
	struct probe_op_outcome *o = &out->op[op];

	if (lat_ns >= p->cfg->timeout_ns &&
	    (!p->timeout_claimed || probe_claim_timeout(p->timeout_claimed, submit_ns)))
		out->timeouts++;
	if (result == -ETIME) {
		out->incomplete = true;
		return false;
	}
	out->busy_ns += lat_ns; /* a failed I/O kept the target busy too */
	if (result < 0) {
		o->errors++;
		probe_outcome_io_error(out, (int)result, io_op_name(op));
	} else if ((uint64_t)result < want) {
		o->short_ios++;
		probe_outcome_io_error(out, -EIO, "short transfer");
	} else {
		return true;
	}
	return false;
}

void probe_outcome_measured(struct probe_outcome *out, enum io_op op, uint64_t bytes,
			    uint64_t lat_ns, uint64_t wait_ns)
{
	struct probe_op_outcome *o = &out->op[op];
	const uint64_t wait = wait_ns < lat_ns ? wait_ns : lat_ns;

	o->ios++;
	o->bytes += bytes;
	o->io_ns += lat_ns - wait;
	o->cpu_wait_ns += wait;
	o->waited_ios += wait >= CPU_WAIT_MIN_NS;
	hist_record(o->hist, lat_ns - wait);
}

bool probe_depth_ignored(const struct cfg_probe *p, const char *engine, char *why, size_t len)
{
	const struct probe_ops *ops = probe_ops_of(p->kind);

	if (!ops || !(ops->flags & PROBE_F_IODEPTH) || p->iodepth <= 1 ||
	    strcmp(engine, "sync") != 0)
		return false;
	snprintf(why, len,
		 "Probe %s: the sync engine runs one I/O at a time, so 'iodepth: %u' acts as "
		 "1; use io_uring or libaio for a queue",
		 p->name, p->iodepth);
	return true;
}
