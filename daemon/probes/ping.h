/* SPDX-License-Identifier: MIT */
/*
 * ping — one QD1 I/O over an engine per run: offsets, fresh random data per
 * write, per-I/O timing. No allocation, lock or log per I/O; buffers are
 * allocated once in probe_ping_init(). ping_probe_ops runs it as a probe kind.
 */
#ifndef IOPULSE_PING_H
#define IOPULSE_PING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"
#include "engines/engine.h"
#include "lib/rng.h"
#include "daemon/targets/target.h"

struct ping {
	const struct cfg_probe *cfg;
	const struct engine_ops *ops;
	void *buf; /* block_size bytes, aligned for O_DIRECT */
	struct rng rng;
	_Atomic uint64_t *inflight_ns; /* if set: submit time of the I/O in flight, 0 idle */
	const _Atomic bool *stop;      /* if set and true: stop waiting for a slow I/O */
	struct engine eng;	       /* set up on the first run, again when the fd changes */
	int eng_fd;		       /* target fd @eng was set up for; -1: not set up */
	int dsync_fd;		       /* cfg->dsync: eng_fd reopened with O_DSYNC; else -1 */
	uint64_t next_slot;	       /* cfg->sequential: the block the next I/O goes to */
	uint64_t runs;		       /* cfg->alternate: requests so far (even: a write) */
	uint64_t write_left;	       /* bytes a run may write (probe.h); UINT64_MAX: no limit */
};

/* One timed I/O of a ping. */
struct ping_io {
	ssize_t result;	    /* bytes, or -errno */
	uint64_t submit_ns; /* CLOCK_MONOTONIC submit time */
	uint64_t lat_ns;    /* latency */
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

/* Prepare a ping for @cfg on engine @ops (buffers sized for its block size at
 * max alignment). 0 or -errno. */
int probe_ping_init(struct ping *p, const struct cfg_probe *cfg, const struct engine_ops *ops);
void probe_ping_cleanup(struct ping *p);

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
int probe_ping_run(struct ping *p, struct target *t, struct ping_result *r);

#endif
