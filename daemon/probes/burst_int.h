/* SPDX-License-Identifier: MIT */
/*
 * burst_int — what burst.c (set-up, runs, the probe kind) and burst_job.c (one
 * job's loop) share: a burst, its jobs and their queue slots. Not for other
 * files: burst.h is the burst's own header.
 */
#ifndef IOPULSE_BURST_INT_H
#define IOPULSE_BURST_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "engines/engine.h"
#include "daemon/metrics/hist.h"
#include "daemon/targets/target.h"
#include "lib/rng.h"

struct burst_dir_result {
	uint64_t ios;	     /* completed without error, measured phase */
	uint64_t bytes;	     /* their bytes */
	uint64_t errors;     /* completed with -errno */
	uint64_t short_ios;  /* completed with fewer bytes than asked */
	uint64_t ramp_ios;   /* completed without error during the ramp (not measured) */
	uint64_t ramp_bytes; /* their bytes: written all the same, for a write */
	struct hist *hist;   /* latencies of the measured phase; owned by the burst */
};

struct burst_result {
	struct burst_dir_result dir[IO_DIR_COUNT];
	uint64_t elapsed_ns; /* measured phase: from the end of the ramp to the last completion */
	uint64_t busy_ns;    /* the whole run: from the common start to the last completion */
	uint64_t timeouts;   /* I/Os in flight longer than the probe's timeout (burst aborted) */
	int error;	     /* first -errno that stopped the burst early, 0 when it ran out */
	bool stopped;	     /* cut short by *stop */
	bool write_limited;  /* stopped where its writes reached burst_limit_writes() */
};

struct burst;

/* Limit on the buffers of one burst (cfg_burst_buffer_bytes(): jobs x iodepth x
 * block_size_max, each rounded up to 4KiB), the configuration's own:
 * burst_new() refuses more with -E2BIG. */
#define BURST_MAX_BUFFER_BYTES CFG_MAX_BURST_BUFFER

/*
 * Prepare a burst for @cfg (a CFG_PROBE_BURST probe), with classic histogram
 * bounds @bounds_ns[0..n_bounds). @ops is the engine (resolved by the caller).
 * NULL on failure with *err = -errno (-EINVAL: a value out of range or bad bounds;
 * -E2BIG: buffers above BURST_MAX_BUFFER_BYTES; -ENOMEM). @cfg is copied.
 */
struct burst *burst_new(const struct cfg_probe *cfg, const struct engine_ops *ops,
			const uint64_t *bounds_ns, unsigned n_bounds, int *err);

/* NULL is a no-op. */
void burst_free(struct burst *b);

/*
 * Run the burst once against the open target @t and block until it is done:
 * duration or ios reached, an error, a timeout, or *stop set (checked at least
 * every few milliseconds). Results (reset at the start of each run) stay valid
 * until the next run or burst_free(). Returns 0 when the burst ran (the result
 * may still hold I/O errors), or -errno when it could not start (-EINVAL: block
 * size not a multiple of the target's alignment, working set larger than the
 * target or smaller than a block, or a sequential job's part smaller than a
 * block; -EBADF: a write burst on a read-only target; -ENOMEM: no memory for
 * the buffers; engine init failures; -EBUSY: an earlier run had to abandon I/O
 * stuck in the kernel — free this burst and make a new one). burst_why() says
 * why in words for all but the engine's failures. @stop may be NULL.
 *
 * In 'ios' mode the measured part lasts at most 'every' less 'ramp', and at
 * most CFG_MAX_DURATION_NS: the configuration bounds ios / rate_iops, but
 * without a rate the length depends on the device, and a burst must neither
 * hold its target for good nor overlap itself. A burst cut short there has
 * result.error = -ETIME, and burst_why() says so. With both 'ios' and a
 * 'duration' (the configuration takes one; iopulse probe -c with -w sets both),
 * whichever comes first ends it, without an error.
 *
 * On *stop, an I/O older than timeout_ns (result.error = -ETIMEDOUT), or a fatal
 * submit error, the jobs stop submitting, wait up to 100ms for what is in flight,
 * cancel it, wait up to 100ms more, then abandon what is still in the kernel
 * (its buffers are never freed or reused). An engine that completes inside
 * submit() (sync) cannot be interrupted: an I/O stuck in the kernel blocks
 * burst_run() until it returns; burst_inflight_since() shows it meanwhile.
 */
int burst_run(struct burst *b, struct target *t, const _Atomic bool *stop,
	      const struct burst_result **result);

/* Submit time (CLOCK_MONOTONIC ns) of the oldest I/O in flight in any job, 0 when
 * none: lock-free, for the scheduler's stuck detection and the in-flight gauge. */
uint64_t burst_inflight_since(const struct burst *b);

/* Why the last burst_run() could not start, or ended with result.error -ETIME,
 * in words naming the key and the figures ("'block_size' (512) is not a multiple
 * of the target's direct I/O alignment (4KiB)"); NULL when errno says it all.
 * Valid until the next run or burst_free(). */
const char *burst_why(const struct burst *b);

/* Bytes of I/O buffers the burst holds: 0 between runs, unless a run abandoned
 * I/O stuck in the kernel (those buffers stay until burst_free()). For tests
 * and diagnostics; not synchronised with a run in progress. */
uint64_t burst_buffer_bytes(const struct burst *b);

/*
 * The runs from now on write at most @bytes (UINT64_MAX: no limit), ramp
 * included: the jobs claim each batch's writes from one shared count before
 * submitting it, and a batch that would go past is cut before its first write
 * that does not fit; the burst then drains and ends (result.write_limited),
 * without an error, its figures those of the I/Os made. So what it writes
 * stays within @bytes, never past by even one I/O. It ends short of it by less
 * than 'block_size_max' with one job; with more, by a batch (iodepth I/Os) of
 * each other job at most, claimed by them when the first write did not fit.
 * Not during a run.
 */
void burst_limit_writes(struct burst *b, uint64_t bytes);

/* One queue slot. The request comes first: a completion's io_req * is its slot. */
struct burst_slot {
	struct io_req req;
	bool busy;     /* submitted, not reaped */
	bool measured; /* submitted in the measured phase (and claimed, in ios mode) */
};

struct burst_job {
	struct burst *b;
	unsigned idx;
	struct engine eng;
	struct rng rng;		  /* seeded from getrandom(), one stream per job */
	struct burst_slot *slots; /* [nslots] */
	struct burst_slot **free; /* [nslots] stack of idle slots */
	struct io_req **batch;	  /* [nslots] one submit batch */
	struct io_req **done;	  /* [nslots] one reap batch */
	void *bufs;		  /* depth x buf_stride bytes, page aligned; only while a
				   * run needs them (or for good, once wedged) */
	size_t bufs_len;
	struct hist *hist[IO_DIR_COUNT];
	uint64_t seq_lo, seq_hi; /* sequential: this job's region */

	/* Results of the last run, merged by burst_run(). */
	uint64_t ios[IO_DIR_COUNT], bytes[IO_DIR_COUNT];
	uint64_t errors[IO_DIR_COUNT], short_ios[IO_DIR_COUNT];
	uint64_t ramp_ios[IO_DIR_COUNT], ramp_bytes[IO_DIR_COUNT];
	uint64_t timeouts;
	uint64_t last_done_ns; /* last measured completion */
	int error;
	bool stopped;
	bool wedged; /* I/O left in the kernel: engine and buffers abandoned */

	pthread_t thread;
	bool thread_started;
	struct burst_job *next_abandoned;

	/* Written by the job (relaxed, once per loop iteration, and by a sync engine
	 * once per chained request), read by anyone. */
	_Atomic uint64_t inflight_since __attribute__((aligned(64)));
};

struct burst {
	struct burst *next_abandoned; /* on abandoned_bursts */
	struct cfg_probe cfg;	      /* copy */
	const struct engine_ops *ops;
	unsigned jobs, depth;
	unsigned nslots; /* request slots per job: depth, or a sync chain (chain_slots()) */
	uint64_t bs, bs_max;
	uint64_t buf_stride; /* bs_max rounded up to PROBE_BUF_ALIGN */
	uint64_t n_sizes;    /* sizes are k * bs, k in [1, n_sizes] */
	bool sequential;
	bool mixed;	       /* randrw: read with probability rwmix_read */
	bool writes_only;      /* randwrite, write */
	uint64_t mix_thresh;   /* read when (rng >> 11) < mix_thresh (53-bit fraction) */
	bool rated;	       /* rate_iops set */
	double slot_ns;	       /* time between two I/Os of one job: 1e9 x jobs / rate_iops */
	uint64_t credit_chunk; /* ios mode: measured I/Os a job claims at least at once */
	uint64_t ios_max_ns;   /* ios mode: longest measured part (see burst.h) */
	uint64_t write_limit;  /* bytes a run may write (burst_limit_writes()) */
	bool limited;	       /* write_limit is not UINT64_MAX: writes are claimed */
	struct burst_job **job;
	struct hist *hist[IO_DIR_COUNT]; /* merged results */
	struct burst_result result;
	bool wedged;
	uint64_t buf_bytes; /* I/O buffers held now, all jobs */
	char why[320];	    /* the last run's problem in words, "" when none */

	/* Per run, set before the jobs start (and t0.. by the start gate). */
	const struct target *t;
	const _Atomic bool *stop;
	_Atomic bool abort; /* a job hit a timeout or a fatal error: everyone stops */
	_Atomic uint64_t ios_issued;
	_Atomic uint64_t write_claimed; /* limited: bytes of writes claimed, all jobs */
	_Atomic bool write_spent;	/* limited: a write did not fit, everyone drains */
	uint64_t ws_start;		/* first byte of the working set */
	uint64_t ws_blocks;		/* working set / bs */
	uint64_t t0, measure_start, deadline;

	/* Start gate: every job sets up its engine, then all start at t0 together. */
	pthread_mutex_t gate_mu;
	pthread_cond_t gate_cv;
	unsigned gate_waiting, gate_expected;
	bool gate_open;
	int gate_error;
	bool gate_inited;
};

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}
/* Runs job @j of its burst to the end (burst_job.c): see the top of that file. */
void burst_job_loop(struct burst_job *j);

#endif
