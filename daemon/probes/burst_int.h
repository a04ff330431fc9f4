/* SPDX-License-Identifier: MIT */
/*
 * burst_int — what burst.c (set-up, runs, the probe kind) and burst_job.c (one
 * job's loop) share: a burst, its jobs and their queue slots, and what a run
 * found. Not for other files: a burst is run through burst_probe_ops (probe.h).
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
	/* The jobs' run-queue wait over their loops and those loops' time, summed
	 * (cpu_wait.h); cpu_wait_known: every job measured its wait. */
	uint64_t cpu_wait_ns, cpu_thread_ns;
	bool cpu_wait_known;
	int error;	    /* first -errno that stopped the burst early, 0 when it ran out */
	bool stopped;	    /* cut short by *stop */
	bool write_limited; /* stopped where its writes reached burst_limit_writes() */
};

struct burst;

/* Limit on the buffers of one burst (cfg_burst_buffer_bytes(): jobs x iodepth x
 * block_size_max, each rounded up to 4KiB), the configuration's own:
 * burst_new() refuses more with -E2BIG. */
#define BURST_MAX_BUFFER_BYTES CFG_MAX_BURST_BUFFER

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
	/* Its thread's run-queue wait over the loop, and the loop's time. */
	uint64_t cpu_wait_ns, cpu_thread_ns;
	bool cpu_wait_known;
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
	uint64_t ios_max_ns;   /* ios mode: longest measured part (see burst.c) */
	uint64_t write_limit;  /* bytes a run may write (burst_limit_writes()) */
	bool limited;	       /* write_limit is not UINT64_MAX: writes are claimed */
	struct burst_job **job;
	struct hist *hist[IO_DIR_COUNT]; /* merged results */
	struct burst_result result;
	bool wedged;
	char why[320]; /* the last run's problem in words, "" when none */

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
/* Runs job @j of a run (burst_job.c): its engine set up, the start gate passed
 * with the other jobs, its loop (see the top of that file) to the end, its
 * engine torn down. burst_job_thread() is the same for pthread_create(). */
void burst_job_main(struct burst_job *j);
void *burst_job_thread(void *arg);

/* Thread creation failed after @started jobs (the caller's job 0 included):
 * the start gate waits for those alone, and the run fails with @error. */
void burst_gate_shrink(struct burst *b, unsigned started, int error);

#endif
