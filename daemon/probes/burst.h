/* SPDX-License-Identifier: MIT */
/*
 * burst — fio-style IOPS bursts: `jobs` threads on one target, each with its own
 * engine queue of `iodepth` I/Os, for a duration or a number of I/Os, after an
 * optional ramp whose I/Os are not counted.
 *
 * burst_new() allocates requests and per-job histograms. The I/O buffers
 * (iodepth x block_size_max per job, aligned for O_DIRECT: the bulk of the
 * memory) exist only during burst_run(): mapped and faulted in before the clock
 * starts, unmapped after the jobs end, so an idle burst holds none whatever its
 * schedule. The submit/reap loop never allocates, locks or logs; a latency is
 * recorded with index arithmetic into the job's own histogram, and job results
 * are merged after the run.
 * Written data is fresh random bytes per I/O. The caller (a lane) owns the
 * target; no other probe runs on it during a burst.
 */
#ifndef IOPULSE_BURST_H
#define IOPULSE_BURST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "engines/engine.h"
#include "daemon/metrics/hist.h"
#include "daemon/targets/target.h"

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

#endif
