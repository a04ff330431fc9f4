/* SPDX-License-Identifier: MIT */
/*
 * ping — one ping: pick an aligned random offset in the working set, run one
 * QD1 I/O through the engine, optionally fdatasync, and time each separately.
 *
 * Timing brackets the engine call only: write data is generated before the
 * submit timestamp, so rng_fill() never counts as device latency. Everything the
 * I/O path needs (buffer, engine state) is set up before the first run: no
 * allocation, lock or log per I/O. Its way in is ping_probe_ops (probe.h), as
 * for every kind: init, run, free.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fd.h"
#include "lib/rng.h"
#include "daemon/probes/probe.h"
#include "daemon/probes/qd1.h"

struct ping {
	const struct cfg_probe *cfg;
	void *buf; /* block_size bytes, aligned for O_DIRECT */
	struct rng rng;
	struct qd1 q;	     /* set up on the first run, again when the fd changes */
	int eng_fd;	     /* target fd q was set up for; -1: not set up */
	int dsync_fd;	     /* cfg->dsync: eng_fd reopened with O_DSYNC; else -1 */
	uint64_t next_slot;  /* cfg->sequential: the block the next I/O goes to */
	uint64_t runs;	     /* cfg->alternate: requests so far (even: a write) */
	uint64_t write_left; /* bytes a run may write (probe.h); UINT64_MAX: no limit */
};

/* One timed I/O of a ping. */
struct ping_io {
	ssize_t result;	    /* bytes, or -errno */
	uint64_t submit_ns; /* CLOCK_MONOTONIC submit time */
	uint64_t lat_ns;    /* latency */
	uint64_t wait_ns;   /* of it, the thread's wait for a CPU (qd1.h) */
};

struct ping_result {
	enum io_op op;	     /* IO_READ or IO_WRITE: cfg->op, or its turn (cfg->alternate) */
	uint64_t offset;     /* where the I/O went */
	struct ping_io io;   /* the read or write */
	struct ping_io sync; /* the fdatasync when cfg->sync == CFG_SYNC_FDATASYNC, else 0 */
	/* 'warmup_after': the target was idle, so an unmeasured I/O (and fdatasync) of
	 * the same kind went first, to another block; else all 0. */
	bool warmed;
	struct ping_io warm_io, warm_sync;
};

static void close_dsync(struct ping *p)
{
	p->dsync_fd = safe_close(p->dsync_fd);
}

static void ping_cleanup(struct ping *p)
{
	qd1_close(&p->q);
	p->eng_fd = -1;
	close_dsync(p);
	free(p->buf);
	p->buf = NULL;
}

/* Prepares a ping for @cfg on engine @ops (buffers sized for its block size at
 * max alignment). 0 or -errno. */
static int ping_prepare(struct ping *p, const struct cfg_probe *cfg, const struct engine_ops *ops)
{
	int r;

	/* Everything starts clear, q.inflight_ns included: the caller sets it
	 * after init. On failure nothing is left to clean up. */
	memset(p, 0, sizeof(*p));
	p->eng_fd = -1;
	p->dsync_fd = -1;
	p->cfg = cfg;
	p->write_left = UINT64_MAX;

	if (cfg->block_size == 0 || cfg->block_size > CFG_MAX_BLOCK_SIZE)
		return -EINVAL;
	qd1_init(&p->q, ops, NULL);
	if (posix_memalign(&p->buf, PROBE_BUF_ALIGN, cfg->block_size) != 0) {
		p->buf = NULL;
		return -ENOMEM;
	}
	r = rng_seed(&p->rng);
	if (r < 0) {
		ping_cleanup(p);
		return r;
	}
	return 0;
}

/* One I/O on the engine, its result and timing in @io. 0, or -errno as qd1_io().
 * One abandoned took the engine down: set up again, O_DSYNC descriptor and
 * all, by the next run. */
static int timed(struct ping *p, struct io_req *req, struct ping_io *io)
{
	int r = qd1_io(&p->q, req, req->buf ? &p->buf : NULL);

	if (r < 0)
		return r;
	if (!p->q.open) {
		p->eng_fd = -1;
		close_dsync(p);
	}
	*io = (struct ping_io){req->result, req->submit_ns, qd1_elapsed(req), p->q.cpu_wait_ns};
	return 0;
}

/*
 * @fd opened again with O_DSYNC (ioping -y): the status flag cannot be set on an
 * open file (fcntl(F_SETFL) ignores it), and the target's descriptor is shared,
 * laid out and synced without it. Through /proc/self/fd: the same open file's
 * inode, never a name looked up again. The descriptor, or -errno.
 */
static int reopen_dsync(int fd)
{
	char proc[32];
	int fl = fcntl(fd, F_GETFL), r;

	if (fl < 0)
		return -errno;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	r = open(proc, (fl & (O_ACCMODE | O_DIRECT | O_NOATIME)) | O_DSYNC | O_CLOEXEC);
	return r < 0 ? -errno : r;
}

/* Checks that @p can run on @t and sets its engine up for t->fd; the working set
 * in *@ws. 0 or -errno as ping_run_one(). */
static int ping_setup(struct ping *p, const struct target *t, uint64_t *ws)
{
	const struct cfg_probe *cfg = p->cfg;
	const uint64_t bs = cfg->block_size;
	uint64_t avail;
	int ret;

	if (!p->q.ops)
		return -EINVAL;
	if (!p->buf && posix_memalign(&p->buf, PROBE_BUF_ALIGN, bs) != 0) {
		p->buf = NULL; /* after a timeout abandoned the old one */
		return -ENOMEM;
	}
	if (t->fd < 0)
		return -EBADF;
	if (cfg->op == IO_WRITE && !t->writable)
		return -EBADF; /* config rejects this already; never write to a file we did
				* not create */
	if (t->mem_align == 0 || t->mem_align > PROBE_BUF_ALIGN || t->offset_align == 0 ||
	    bs % t->offset_align != 0 || t->data_start % t->offset_align != 0 ||
	    t->data_end < t->data_start)
		return -EINVAL;
	avail = t->data_end - t->data_start;
	*ws = cfg->working_set ? cfg->working_set : avail;
	if (*ws < bs || *ws > avail)
		return -EINVAL;

	if (p->eng_fd != t->fd) {
		qd1_close(&p->q);
		p->eng_fd = -1;
		close_dsync(p);
		if (cfg->dsync) {
			ret = reopen_dsync(t->fd);
			if (ret < 0)
				return ret;
			p->dsync_fd = ret;
		}
		ret = qd1_open(&p->q, cfg->dsync ? p->dsync_fd : t->fd);
		if (ret < 0) {
			close_dsync(p);
			return ret;
		}
		p->eng_fd = t->fd;
	}
	return 0;
}

/* The ping's I/O @op at @offset (fresh data for a write), then its fdatasync
 * if it has one: into @io and @sync. 0, or -errno as qd1_io(). */
static int ping_ios(struct ping *p, enum io_op op, uint64_t offset, struct ping_io *io,
		    struct ping_io *sync)
{
	const struct cfg_probe *cfg = p->cfg;
	const bool write = op == IO_WRITE;
	struct io_req req;
	int ret;

	if (write)
		rng_fill(&p->rng, p->buf, cfg->block_size); /* fresh data, before the clock */

	req = (struct io_req){
		.buf = p->buf,
		.offset = offset,
		.len = (uint32_t)cfg->block_size,
		.op = write ? IO_WRITE : IO_READ,
	};
	ret = timed(p, &req, io);
	if (ret < 0)
		return ret;

	if (write && cfg->sync == CFG_SYNC_FDATASYNC) {
		if (p->eng_fd < 0) { /* the write was abandoned (shutdown): no engine */
			sync->result = -ETIME;
			return 0;
		}
		/* Even after a failed write: fdatasync reports writeback errors. */
		req = (struct io_req){.op = IO_FDATASYNC};
		return timed(p, &req, sync);
	}
	return 0;
}

/* Whether the next ping warms the target up first: 'warmup_after' is set and no
 * I/O of ours (any probe's) ended on the target for longer than that, or none
 * did yet since start: the device may have gone to sleep. */
static bool warmup_due(const struct ping *p, const struct target *t)
{
	const uint64_t idle = p->cfg->warmup_idle_ns;

	return idle && (t->last_io_ns == 0 || eng_now_ns() - t->last_io_ns > idle);
}

/* Whether what is left of the target's write budget holds a warm-up write as
 * well as the measured one (the lane runs a write ping only when that one
 * fits): else the ping goes without a warm-up, once a day at most, rather
 * than write past the budget. */
static bool warmup_fits(const struct ping *p)
{
	return p->cfg->op != IO_WRITE || p->write_left / 2 >= p->cfg->block_size;
}

/*
 * One ping against an open target: a random offset aligned to the target's
 * offset alignment inside [data_start, data_start + working_set), one QD1 I/O
 * (fresh random bytes for a write), then fdatasync if configured; first the
 * same, unmeasured, elsewhere when 'warmup_after' says the target was idle
 * (t->last_io_ns, which probe_run() keeps when probe_init() set t->idle_tracked)
 * and, for a write, p->write_left holds both writes. Returns 0 when
 * the I/O was issued (results in @r, which may hold errors), or -errno when it
 * could not be (-EINVAL: block size not a multiple of the alignment, working
 * set larger than the target; -EBADF: target not writable for a write ping).
 */
static int ping_run_one(struct ping *p, struct target *t, struct ping_result *r)
{
	const struct cfg_probe *cfg = p->cfg;
	const uint64_t bs = cfg->block_size;
	uint64_t ws, slots, slot, other;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = ping_setup(p, t, &ws);
	if (ret < 0)
		return ret;
	/* ioping -G: write, read, write...; each request at its own offset. */
	r->op = cfg->alternate && p->runs++ % 2 ? IO_READ : cfg->op;

	/* Offsets are aligned to the block size, as fio's blockalign=bs and ioping do:
	 * a 4k write at a 512-aligned offset straddles two 4k physical sectors and
	 * measures the drive's read-modify-write instead of the write. data_start is
	 * 4KiB aligned, so blocks are physically aligned too. */
	slots = (ws - bs) / bs + 1;
	if (cfg->sequential) /* iopulse probe -L: as ioping -L, wrapping at the end */
		slot = p->next_slot++ % slots;
	else
		slot = rng_below(&p->rng, slots);
	r->offset = t->data_start + slot * bs;

	if (warmup_due(p, t) && warmup_fits(p)) {
		/* Same op and size, to another block: one the device just read would
		 * answer the measured read from its cache. A write ping's goes to the
		 * probe file like any of its writes, with its fdatasync, so that the
		 * measured fdatasync flushes only the measured write. */
		other = slots > 1 ? rng_below(&p->rng, slots - 1) : 0;
		if (slots > 1 && other >= slot)
			other++;
		r->warmed = true;
		ret = ping_ios(p, r->op, t->data_start + other * bs, &r->warm_io, &r->warm_sync);
		if (ret < 0)
			return ret;
		if (p->eng_fd < 0 || (p->q.stop && atomic_load(p->q.stop))) {
			/* Abandoned (shutdown, an engine error): nothing measured. */
			r->io.result = r->sync.result = -ETIME;
			return 0;
		}
	}
	return ping_ios(p, r->op, r->offset, &r->io, &r->sync);
}

/* ---------------------------------------------------------------- probe ops */

struct ping_probe {
	struct ping ping;
	_Atomic uint64_t inflight; /* submit time of the I/O in flight, 0 idle */
};

static const char *ping_op_name(const struct cfg_probe *c)
{
	return io_op_name(c->op);
}

static unsigned ping_io_ops(const struct cfg_probe *c)
{
	return 1u << (c->op == IO_WRITE ? IO_WRITE : IO_READ) | (c->alternate ? 1u << IO_READ : 0) |
	       (c->sync == CFG_SYNC_FDATASYNC ? 1u << IO_FDATASYNC : 0);
}

static int ping_probe_init(struct probe *p)
{
	struct ping_probe *pp = calloc(1, sizeof(*pp));
	int r;

	if (!pp)
		return -ENOMEM;
	r = ping_prepare(&pp->ping, p->cfg, p->engine);
	if (r < 0) {
		free(pp);
		return r;
	}
	atomic_init(&pp->inflight, 0);
	pp->ping.q.inflight_ns = &pp->inflight;
	p->state = pp;
	return 0;
}

/* One measured I/O of the ping into @out. */
static void add_io(struct probe *p, struct probe_outcome *out, enum io_op op,
		   const struct ping_io *io, uint64_t want)
{
	if (probe_outcome_io(p, out, op, io->result, io->submit_ns, io->lat_ns, want))
		probe_outcome_measured(out, op, (uint64_t)io->result, io->lat_ns, io->wait_ns);
}

/* A warm-up I/O: its failures and timeouts count as any I/O's (the device
 * failed), its latency is the device waking up, not the disk's: counted apart. */
static void add_warmup(struct probe *p, struct probe_outcome *out, enum io_op op,
		       const struct ping_io *io, uint64_t want)
{
	if (probe_outcome_io(p, out, op, io->result, io->submit_ns, io->lat_ns, want)) {
		out->op[op].warmup_ios++;
		out->op[op].warmup_bytes += want;
	}
}

static int ping_probe_run(struct probe *p, const _Atomic bool *stop, struct probe_outcome *out)
{
	struct ping_probe *pp = p->state;
	const struct cfg_probe *c = p->cfg;
	struct ping_result res;
	int r;

	pp->ping.q.stop = stop;
	pp->ping.write_left = p->write_left;
	r = ping_run_one(&pp->ping, p->target, &res);
	/* A ping that shutdown overtook measured the shutdown, not the disk. */
	out->discard = stop && atomic_load(stop);
	if (r < 0)
		return r;
	if (res.warmed) {
		add_warmup(p, out, res.op, &res.warm_io, c->block_size);
		if (res.op == IO_WRITE && c->sync == CFG_SYNC_FDATASYNC)
			add_warmup(p, out, IO_FDATASYNC, &res.warm_sync, 0);
	}
	add_io(p, out, res.op, &res.io, c->block_size);
	/* Even after a failed write: fdatasync is where writeback errors show. */
	if (res.op == IO_WRITE && c->sync == CFG_SYNC_FDATASYNC)
		add_io(p, out, IO_FDATASYNC, &res.sync, 0);
	return 0;
}

static uint64_t ping_probe_inflight_since(const struct probe *p)
{
	const struct ping_probe *pp = p->state;

	return atomic_load(&pp->inflight);
}

static void ping_probe_free(struct probe *p)
{
	struct ping_probe *pp = p->state;

	ping_cleanup(&pp->ping);
	free(pp);
}

/* Its engine stays set up between runs; an O_DSYNC ping keeps a descriptor of
 * its own (reopen_dsync()). */
static void ping_descriptors(const struct cfg_probe *c, const struct engine_ops *e,
			     struct probe_fds *out)
{
	out->held = e->fds + (c->dsync ? 1 : 0);
}

const struct probe_ops ping_probe_ops = {
	.kind = CFG_PROBE_PING,
	.flags = PROBE_F_QD1 | PROBE_F_REQUESTS | PROBE_F_NET_LATENCY,
	.io_ops = ping_io_ops,
	.op_name = ping_op_name,
	.init = ping_probe_init,
	.run = ping_probe_run,
	.inflight_since = ping_probe_inflight_since,
	.free = ping_probe_free,
	.descriptors = ping_descriptors,
};
