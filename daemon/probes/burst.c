/* SPDX-License-Identifier: MIT */
/*
 * burst — fio-style IOPS bursts: `jobs` threads on one target, each with its own
 * engine queue of `iodepth` I/Os, for a duration or a number of I/Os, after an
 * optional ramp whose I/Os are not counted. The caller (a lane) owns the
 * target; no other probe runs on it during a burst. Its way in is
 * burst_probe_ops (probe.h), as for every kind: init, run, free.
 *
 * burst_new() allocates requests and per-job histograms. The I/O buffers
 * (iodepth x block_size_max per job, aligned for O_DIRECT: the bulk of the
 * memory) exist only during burst_run(): mapped and faulted in before the clock
 * starts, unmapped after the jobs end, so an idle burst holds none whatever its
 * schedule. The submit/reap loop never allocates, locks or logs; a latency is
 * recorded with index arithmetic into the job's own histogram. Written data is
 * fresh random bytes per I/O.
 *
 * Each job runs one loop of batches of I/O (burst_job.c, which says how).
 *
 * Results are per job and merged after the threads are joined. The measured
 * phase starts ramp_ns after the common start; an I/O counts when it was
 * submitted in the measured phase, whenever it completes (so draining at the
 * end still counts). Errors (result < 0) count in every phase: an error during
 * the ramp is still worth knowing about.
 *
 * Stopping: at the deadline, when the `ios` are all issued, or when a write
 * does not fit what is left of the write limit (the target's daily budget), a
 * job stops submitting and drains its queue, watching each I/O's timeout. On
 * *stop, on an I/O older than timeout_ns, or when another job hit a fatal
 * error, it stops submitting, waits BURST_ABORT_DRAIN_NS for what is in flight,
 * cancels it, waits as long again, and then abandons whatever is still in the
 * kernel: the job's engine is not cleaned up (libaio's io_destroy would wait
 * for the I/O) and its buffers are never freed or reused (the kernel may still
 * write into them). They stay on a process-wide list of abandoned jobs, and the
 * burst refuses to run again (-EBUSY): the caller frees it and makes a new one.
 *
 * The sync engine (and anything ENGINE_F_SYNC) cannot be interrupted: an I/O
 * stuck in the kernel blocks its job inside submit(), and burst_run() with it
 * when the job is the caller's thread or is being joined. Nothing here can end
 * that; burst_inflight_since() shows it, and the lane is abandoned by its owner.
 * When such an I/O finally returns, it is recorded like any other completion;
 * nothing of it was ever in flight between the job's calls, so one that took
 * longer than timeout_ns is the timeout then (complete()), and stops the burst.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "daemon/probes/burst_int.h"
#include "daemon/probes/cpu_wait.h"
#include "daemon/probes/probe.h"
#include "lib/errtext.h"
#include "lib/rng.h"

#define BURST_SYNC_CHAIN 16U /* sync engine, reads: requests per submit, at least */

static const _Atomic bool never_stop = false;

/* Jobs with I/O still in the kernel: kept (reachable) for the life of the process. */
static _Atomic(struct burst_job *) abandoned_jobs;

/* Bursts replaced while the scheduler may still read their in-flight time:
 * kept (reachable) for the life of the process, like their wedged jobs. */
static _Atomic(struct burst *) abandoned_bursts;

static void burst_abandon(struct burst *b)
{
	struct burst *head = atomic_load(&abandoned_bursts);

	do
		b->next_abandoned = head;
	while (!atomic_compare_exchange_weak(&abandoned_bursts, &head, b));
}

static void job_abandon(struct burst_job *j)
{
	struct burst_job *head = atomic_load(&abandoned_jobs);

	do
		j->next_abandoned = head;
	while (!atomic_compare_exchange_weak(&abandoned_jobs, &head, j));
}

/* ---------------------------------------------------------------- setup */

static void job_free(struct burst_job *j)
{
	if (!j)
		return;
	for (int d = 0; d < IO_DIR_COUNT; d++) {
		hist_free(j->hist[d]);
		j->hist[d] = NULL;
	}
	if (j->wedged) {
		job_abandon(j);
		return;
	}
	if (j->bufs)
		munmap(j->bufs, j->bufs_len);
	free(j->slots);
	free(j->free);
	free(j->batch);
	free(j->done);
	free(j);
}

static int job_new(struct burst *b, unsigned idx, const uint64_t *bounds_ns, unsigned n_bounds,
		   struct burst_job **out)
{
	struct burst_job *j;
	int r;

	j = aligned_alloc(64, (sizeof(*j) + 63) & ~(size_t)63);
	if (!j)
		return -ENOMEM;
	memset(j, 0, sizeof(*j));
	*out = j;
	j->b = b;
	j->idx = idx;
	atomic_init(&j->inflight_since, 0);
	j->slots = calloc(b->nslots, sizeof(*j->slots));
	j->free = calloc(b->nslots, sizeof(*j->free));
	j->batch = calloc(b->nslots, sizeof(*j->batch));
	j->done = calloc(b->nslots, sizeof(*j->done));
	if (!j->slots || !j->free || !j->batch || !j->done)
		return -ENOMEM;
	for (int d = 0; d < IO_DIR_COUNT; d++) {
		j->hist[d] = hist_new(bounds_ns, n_bounds);
		if (!j->hist[d])
			return -EINVAL; /* bad bounds, or out of memory */
	}
	r = rng_seed(&j->rng);
	return r < 0 ? r : 0;
}

/* What the configuration checks already: a burst made by hand is checked again. */
static bool cfg_valid(const struct cfg_probe *cfg)
{
	switch (cfg->rw) {
	case CFG_RW_RANDREAD:
	case CFG_RW_RANDWRITE:
	case CFG_RW_RANDRW:
	case CFG_RW_READ:
	case CFG_RW_WRITE:
		break;
	default:
		return false;
	}
	return cfg->kind == CFG_PROBE_BURST && cfg->block_size != 0 &&
	       cfg->block_size_max >= cfg->block_size &&
	       cfg->block_size_max <= CFG_MAX_BLOCK_SIZE && cfg->iodepth != 0 &&
	       cfg->iodepth <= ENGINE_MAX_DEPTH && cfg->jobs != 0 && cfg->jobs <= CFG_MAX_JOBS &&
	       (cfg->duration_ns != 0 || cfg->ios != 0) && cfg->ios <= CFG_MAX_IOS &&
	       cfg->rate_iops <= CFG_MAX_RATE_IOPS &&
	       (cfg->rwmix_read >= 0.0 && cfg->rwmix_read <= 1.0);
}

/* The figures of b->cfg the loop uses. */
static void derive(struct burst *b)
{
	const struct cfg_probe *cfg = &b->cfg;

	b->jobs = cfg->jobs;
	b->depth = cfg->iodepth;
	b->bs = cfg->block_size;
	b->bs_max = cfg->block_size_max;
	b->buf_stride = (b->bs_max + PROBE_BUF_ALIGN - 1) & ~(uint64_t)(PROBE_BUF_ALIGN - 1);
	b->n_sizes = b->bs_max / b->bs;
	b->sequential = cfg->rw == CFG_RW_READ || cfg->rw == CFG_RW_WRITE;
	b->mixed = cfg->rw == CFG_RW_RANDRW;
	b->writes_only = cfg->rw == CFG_RW_RANDWRITE || cfg->rw == CFG_RW_WRITE;
	b->mix_thresh = (uint64_t)(cfg->rwmix_read * 9007199254740992.0); /* 2^53 */
	/* The cap is over all jobs, exactly: a job's slots may be fractional, or
	 * longer than a second (rate_iops below jobs). */
	if (cfg->rate_iops) {
		b->rated = true;
		b->slot_ns = (double)NSEC_PER_SEC * b->jobs / (double)cfg->rate_iops;
	}
	b->ios_max_ns = CFG_MAX_DURATION_NS;
	if (cfg->interval_ns > cfg->ramp_ns && cfg->interval_ns - cfg->ramp_ns < b->ios_max_ns)
		b->ios_max_ns = cfg->interval_ns - cfg->ramp_ns;
}

/*
 * Request slots per job. An engine that completes inside submit() has one I/O
 * in flight whatever the depth, and times request i of a batch from request
 * i-1's completion (engine.h, ENG_SYNC_SLOW_NS): a batch of BURST_SYNC_CHAIN
 * costs one clock read per I/O where one at a time costs two, with nothing of
 * ours inside any I/O's latency. Reads only: the extra slots share the depth's
 * buffers (a read's data is never looked at, and only one is in flight), where
 * each write needs fresh data of its own.
 */
static unsigned chain_slots(const struct burst *b)
{
	const bool reads_only = b->cfg.rw == CFG_RW_RANDREAD || b->cfg.rw == CFG_RW_READ;

	if ((b->ops->flags & ENGINE_F_SYNC) && reads_only && b->depth < BURST_SYNC_CHAIN)
		return BURST_SYNC_CHAIN;
	return b->depth;
}

static void burst_free(struct burst *b);

/*
 * Prepare a burst for @cfg (a CFG_PROBE_BURST probe), with classic histogram
 * bounds @bounds_ns[0..n_bounds). @ops is the engine (resolved by the caller).
 * NULL on failure with *err = -errno (-EINVAL: a value out of range or bad bounds;
 * -E2BIG: buffers above BURST_MAX_BUFFER_BYTES; -ENOMEM). @cfg is copied.
 */
static struct burst *burst_new(const struct cfg_probe *cfg, const struct engine_ops *ops,
			       const uint64_t *bounds_ns, unsigned n_bounds, int *err)
{
	struct burst *b = NULL;
	int r = -EINVAL;

	if (!cfg || !ops || !ops->submit || !ops->reap || !cfg_valid(cfg))
		goto fail;
	r = -E2BIG;
	if (cfg_burst_buffer_bytes(cfg) > BURST_MAX_BUFFER_BYTES)
		goto fail;
	r = -ENOMEM;
	b = calloc(1, sizeof(*b));
	if (!b)
		goto fail;
	b->cfg = *cfg;
	b->ops = ops;
	derive(b);
	b->nslots = chain_slots(b);
	atomic_init(&b->abort, false);
	atomic_init(&b->ios_issued, 0);
	atomic_init(&b->write_claimed, 0);
	atomic_init(&b->write_spent, false);
	b->write_limit = UINT64_MAX;
	if (pthread_mutex_init(&b->gate_mu, NULL) != 0)
		goto fail;
	if (pthread_cond_init(&b->gate_cv, NULL) != 0) {
		pthread_mutex_destroy(&b->gate_mu);
		goto fail;
	}
	b->gate_inited = true;

	r = -EINVAL;
	for (int d = 0; d < IO_DIR_COUNT; d++) {
		b->hist[d] = hist_new(bounds_ns, n_bounds);
		if (!b->hist[d])
			goto fail;
		b->result.dir[d].hist = b->hist[d];
	}
	r = -ENOMEM;
	b->job = calloc(b->jobs, sizeof(*b->job));
	if (!b->job)
		goto fail;
	for (unsigned i = 0; i < b->jobs; i++) {
		r = job_new(b, i, bounds_ns, n_bounds, &b->job[i]);
		if (r < 0)
			goto fail;
	}
	if (err)
		*err = 0;
	return b;

fail:
	burst_free(b);
	if (err)
		*err = r;
	return NULL;
}

/* NULL is a no-op. */
static void burst_free(struct burst *b)
{
	if (!b)
		return;
	if (b->job)
		for (unsigned i = 0; i < b->jobs; i++)
			job_free(b->job[i]);
	free(b->job);
	for (int d = 0; d < IO_DIR_COUNT; d++)
		hist_free(b->hist[d]);
	if (b->gate_inited) {
		pthread_cond_destroy(&b->gate_cv);
		pthread_mutex_destroy(&b->gate_mu);
	}
	free(b);
}

/* Submit time (CLOCK_MONOTONIC ns) of the oldest I/O in flight in any job, 0 when
 * none: lock-free, for the scheduler's stuck detection and the in-flight gauge. */
static uint64_t burst_inflight_since(const struct burst *b)
{
	uint64_t oldest = 0;

	if (!b)
		return 0;
	for (unsigned i = 0; i < b->jobs; i++) {
		uint64_t v = atomic_load_explicit(&b->job[i]->inflight_since, memory_order_relaxed);

		if (v && (!oldest || v < oldest))
			oldest = v;
	}
	return oldest;
}

/* ---------------------------------------------------------------- run */

static void result_reset(struct burst *b)
{
	struct burst_result *res = &b->result;

	for (int d = 0; d < IO_DIR_COUNT; d++) {
		hist_clear(b->hist[d]);
		res->dir[d] = (struct burst_dir_result){.hist = b->hist[d]};
	}
	res->elapsed_ns = 0;
	res->busy_ns = 0;
	res->timeouts = 0;
	res->cpu_wait_ns = res->cpu_thread_ns = 0;
	res->cpu_wait_known = false;
	res->error = 0;
	res->stopped = false;
	res->write_limited = false;
}

/* Says why the run cannot go on, in b->why; returns @err. */
__attribute__((format(printf, 3, 4))) static int why(struct burst *b, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	errtext_v(b->why, sizeof(b->why), err, fmt, ap);
	va_end(ap);
	return err;
}

/* Why a working set of @ws bytes on a target of @avail does not fit this burst
 * (validate() found it does not): too large, smaller than a block, or a
 * sequential job's part smaller than a block. Formats its figures only then. */
static int refuse_working_set(struct burst *b, uint64_t ws, uint64_t avail)
{
	const char *largest = b->bs_max != b->bs ? "the largest " : "";
	char x[32], y[32], z[32];

	cfg_format_size(ws, x, sizeof(x));
	cfg_format_size(avail, y, sizeof(y));
	cfg_format_size(b->bs_max, z, sizeof(z));
	if (ws > avail)
		return why(b, -EINVAL, "'working_set' (%s) is larger than the target (%s)", x, y);
	if (ws < b->bs_max)
		return why(b, -EINVAL, "%s (%s) is smaller than %s'block_size' (%s)",
			   b->cfg.working_set ? "'working_set'" : "the target", x, largest, z);
	/* the share before rounding: as short of a block, and as config says */
	cfg_format_size(ws / b->jobs, y, sizeof(y));
	return why(b, -EINVAL,
		   "with 'rw: %s' each of the %u 'jobs' walks its own part of the working set "
		   "(%s), and a part (%s) is smaller than %s'block_size' (%s)",
		   cfg_rw_name(b->cfg.rw), b->jobs, x, y, largest, z);
}

/* What the configuration could not know before the target was open: its size
 * (a file or a device) and its direct I/O alignment. */
static int validate(struct burst *b, const struct target *t)
{
	uint64_t avail, ws, part;
	char x[32], y[32];

	if (t->fd < 0)
		return why(b, -EBADF, "the target is not open");
	if (b->cfg.rw != CFG_RW_RANDREAD && b->cfg.rw != CFG_RW_READ && !t->writable)
		/* never write to a file we did not create */
		return why(b, -EBADF, "'rw: %s' writes, and the target is read-only",
			   cfg_rw_name(b->cfg.rw));
	if (t->mem_align == 0 || t->offset_align == 0 || t->data_end < t->data_start ||
	    t->data_start % t->offset_align != 0)
		return why(b, -EINVAL, "the target's direct I/O alignment is not known");
	if (t->mem_align > PROBE_BUF_ALIGN) {
		cfg_format_size(PROBE_BUF_ALIGN, x, sizeof(x));
		return why(b, -EINVAL,
			   "the target needs I/O buffers aligned to %u bytes, more than the %s "
			   "bursts align them to",
			   t->mem_align, x);
	}
	if (b->bs % t->offset_align != 0) {
		cfg_format_size(b->bs, x, sizeof(x));
		cfg_format_size(t->offset_align, y, sizeof(y));
		return why(b, -EINVAL,
			   "%s'block_size' (%s) is not a multiple of the target's direct I/O "
			   "alignment (%s)",
			   b->bs_max != b->bs ? "the smallest " : "", x, y);
	}
	avail = t->data_end - t->data_start;
	ws = b->cfg.working_set ? b->cfg.working_set : avail;
	/* Each job of a sequential burst walks its own equal, block-aligned part. */
	part = ws / b->jobs / b->bs * b->bs;
	if (ws > avail || ws < b->bs_max || (b->sequential && part < b->bs_max))
		return refuse_working_set(b, ws, avail);
	b->ws_start = t->data_start;
	b->ws_blocks = ws / b->bs;
	if (b->sequential) {
		for (unsigned i = 0; i < b->jobs; i++) {
			b->job[i]->seq_lo = b->ws_start + i * part;
			b->job[i]->seq_hi = b->job[i]->seq_lo + part;
		}
	}
	return 0;
}

/*
 * The jobs' I/O buffers, for one run: mapped, and faulted in (written once),
 * before any job starts, so that neither the allocation nor a page's first touch
 * lands inside a measured I/O; unmapped by bufs_put() after the run, so that a
 * burst holds none between runs. mmap rather than malloc: the memory goes back
 * to the system at once, whatever the allocator's thresholds.
 */
static int bufs_get(struct burst *b)
{
	const size_t len = (size_t)b->depth * b->buf_stride;

	for (unsigned i = 0; i < b->jobs; i++) {
		struct burst_job *j = b->job[i];
		void *p;

		if (j->bufs)
			continue;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			char x[32];

			cfg_format_size((uint64_t)len * b->jobs, x, sizeof(x));
			return why(b, -ENOMEM, "cannot allocate the I/O buffers (%s)", x);
		}
		memset(p, 0, len);
		j->bufs = p;
		j->bufs_len = len;
		for (unsigned k = 0; k < b->nslots; k++) /* a chain's: shared, see chain_slots() */
			j->slots[k].req.buf = (char *)p + (k % b->depth) * b->buf_stride;
	}
	return 0;
}

/* After a run: unmaps the buffers, except a wedged job's (the kernel may still
 * write into them; job_free() abandons them with the job). */
static void bufs_put(struct burst *b)
{
	for (unsigned i = 0; i < b->jobs; i++) {
		struct burst_job *j = b->job[i];

		if (!j->bufs || j->wedged)
			continue;
		munmap(j->bufs, j->bufs_len);
		j->bufs = NULL;
		j->bufs_len = 0;
		for (unsigned k = 0; k < b->nslots; k++)
			j->slots[k].req.buf = NULL;
	}
}

/* Every job's counters and histograms cleared, the start gate closed, for a run
 * on @t. */
static void run_reset(struct burst *b, struct target *t, const _Atomic bool *stop)
{
	b->t = t;
	b->stop = stop ? stop : &never_stop;
	atomic_store(&b->abort, false);
	atomic_store(&b->ios_issued, 0);
	atomic_store(&b->write_claimed, 0);
	atomic_store(&b->write_spent, false);
	/* One locked add per claim: per I/O at QD1 it was a sixth of a null burst's
	 * CPU. Claiming a few at once costs an unrated burst at most 1/64 of a job's
	 * share of imbalance at the end; a rated one claims as it goes (a slow job
	 * holding claims would stretch the burst). */
	b->credit_chunk = 1;
	if (!b->rated && b->cfg.ios)
		b->credit_chunk = min_u64(64, max_u64(1, b->cfg.ios / ((uint64_t)b->jobs * 64)));
	b->gate_waiting = 0;
	b->gate_expected = b->jobs;
	b->gate_open = false;
	b->gate_error = 0;
	for (unsigned i = 0; i < b->jobs; i++) {
		struct burst_job *j = b->job[i];

		for (int d = 0; d < IO_DIR_COUNT; d++) {
			hist_clear(j->hist[d]);
			j->ios[d] = j->bytes[d] = j->errors[d] = j->short_ios[d] = 0;
			j->ramp_ios[d] = j->ramp_bytes[d] = 0;
		}
		j->timeouts = 0;
		j->last_done_ns = 0;
		j->cpu_wait_ns = j->cpu_thread_ns = 0;
		j->cpu_wait_known = false;
		j->error = 0;
		j->stopped = false;
		j->thread_started = false;
	}
}

/* The joined jobs' figures added up into @res; elapsed from the measurement's
 * start to the last completion. */
static void results_sum(struct burst *b, struct burst_result *res)
{
	uint64_t last = 0;

	res->cpu_wait_known = true;
	for (unsigned i = 0; i < b->jobs; i++) {
		const struct burst_job *j = b->job[i];

		res->cpu_wait_ns += j->cpu_wait_ns;
		res->cpu_thread_ns += j->cpu_thread_ns;
		res->cpu_wait_known &= j->cpu_wait_known;

		for (int d = 0; d < IO_DIR_COUNT; d++) {
			struct burst_dir_result *dr = &res->dir[d];

			dr->ios += j->ios[d];
			dr->bytes += j->bytes[d];
			dr->errors += j->errors[d];
			dr->short_ios += j->short_ios[d];
			dr->ramp_ios += j->ramp_ios[d];
			dr->ramp_bytes += j->ramp_bytes[d];
			(void)hist_merge(dr->hist, j->hist[d]); /* same bounds by construction */
		}
		res->timeouts += j->timeouts;
		if (!res->error)
			res->error = j->error;
		res->stopped |= j->stopped;
		b->wedged |= j->wedged;
		if (j->last_done_ns > last)
			last = j->last_done_ns;
	}
	res->elapsed_ns = last > b->measure_start ? last - b->measure_start : 0;
	res->busy_ns = last > b->t0 ? last - b->t0 : 0;
	res->write_limited = atomic_load(&b->write_spent);
}

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
static int burst_run(struct burst *b, struct target *t, const _Atomic bool *stop,
		     const struct burst_result **result)
{
	struct burst_result *res;
	unsigned started;
	int r;

	if (!b || !t)
		return -EINVAL;
	res = &b->result;
	if (result)
		*result = res;
	result_reset(b);
	b->why[0] = '\0';
	if (b->wedged)
		return why(b, -EBUSY, "an earlier run left I/O in the kernel");
	r = validate(b, t);
	if (r < 0)
		return r;
	r = bufs_get(b);
	if (r < 0) {
		bufs_put(b);
		return r;
	}

	run_reset(b, t, stop);

	/* Job 0 runs on the caller's thread, the others on their own. */
	started = 1;
	for (unsigned i = 1; i < b->jobs; i++) {
		struct burst_job *j = b->job[i];

		r = pthread_create(&j->thread, NULL, burst_job_thread, j);
		if (r != 0) {
			burst_gate_shrink(b, started, -r);
			break;
		}
		j->thread_started = true;
		pthread_setname_np(j->thread, "iopulse-burst");
		started++;
	}
	burst_job_main(b->job[0]);
	for (unsigned i = 1; i < b->jobs; i++)
		if (b->job[i]->thread_started)
			pthread_join(b->job[i]->thread, NULL);
	bufs_put(b);
	if (b->gate_error)
		return b->gate_error;

	results_sum(b, res);

	/* 'ios' not all issued, and nothing else stopped the jobs: the deadline did.
	 * With a 'duration' too (iopulse probe -c N -w T), whichever came first ends
	 * the burst as asked. */
	if (b->cfg.ios && !b->cfg.duration_ns && !res->error && !res->stopped &&
	    !res->write_limited && atomic_load(&b->ios_issued) < b->cfg.ios) {
		char x[32], y[32];

		cfg_format_duration(b->ios_max_ns, x, sizeof(x));
		cfg_format_duration(CFG_MAX_DURATION_NS, y, sizeof(y));
		res->error = why(b, -ETIME,
				 "stopped after %s with %llu of its %llu 'ios' issued: a burst "
				 "ends before it is due again ('every' less 'ramp') and within "
				 "%s; lower 'ios'%s",
				 x, (unsigned long long)atomic_load(&b->ios_issued),
				 (unsigned long long)b->cfg.ios, y,
				 b->rated ? "" : " or set 'rate_iops'");
	}
	return 0;
}

/* Why the last burst_run() could not start, or ended with result.error -ETIME,
 * in words naming the key and the figures ("'block_size' (512) is not a multiple
 * of the target's direct I/O alignment (4KiB)"); NULL when errno says it all.
 * Valid until the next run or burst_free(). */
static const char *burst_why(const struct burst *b)
{
	return b && b->why[0] ? b->why : NULL;
}

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
static void burst_limit_writes(struct burst *b, uint64_t bytes)
{
	b->write_limit = bytes;
	b->limited = bytes != UINT64_MAX;
}

/* ---------------------------------------------------------------- probe ops */

static const char *burst_op_name(const struct cfg_probe *c)
{
	return cfg_rw_name(c->rw);
}

static unsigned burst_io_ops(const struct cfg_probe *c)
{
	bool rd = c->rw == CFG_RW_RANDREAD || c->rw == CFG_RW_READ || c->rw == CFG_RW_RANDRW;
	bool wr = c->rw == CFG_RW_RANDWRITE || c->rw == CFG_RW_WRITE || c->rw == CFG_RW_RANDRW;

	return (rd ? 1u << IO_READ : 0) | (wr ? 1u << IO_WRITE : 0);
}

static int burst_probe_init(struct probe *p)
{
	int r;

	p->state = burst_new(p->cfg, p->engine, p->bounds_ns, p->n_bounds, &r);
	return p->state ? 0 : r;
}

/* The run's figures into @out, in the words a lane logs and oneshot prints. */
static void add_result(struct probe_outcome *out, const struct burst *b,
		       const struct burst_result *res)
{
	uint64_t errors = 0;

	for (int d = 0; d < IO_DIR_COUNT; d++) {
		const struct burst_dir_result *dr = &res->dir[d];
		struct probe_op_outcome *o = &out->op[d];

		o->ios += dr->ios;
		o->bytes += dr->bytes;
		o->errors += dr->errors;
		o->short_ios += dr->short_ios;
		o->warmup_ios += dr->ramp_ios;
		o->warmup_bytes += dr->ramp_bytes;
		o->io_ns += res->elapsed_ns;
		(void)hist_merge(o->hist, dr->hist); /* same bounds by construction */
		errors += dr->errors;
	}
	out->timeouts += res->timeouts;
	out->timed_out |= res->timeouts > 0;
	if (res->error && !out->error) {
		out->error = res->error;
		out->why = burst_why(b);
	}
	if (errors)
		probe_outcome_io_error(out, -EIO, "I/O errors during the burst");
	out->incomplete |= res->stopped;
	out->budget_cut |= res->write_limited;
	out->burst = true;
	out->elapsed_ns += res->elapsed_ns;
	out->cpu_wait_ns += res->cpu_wait_ns;
	out->cpu_thread_ns += res->cpu_thread_ns;
	out->cpu_wait_known = res->cpu_wait_known;
	/* Mostly waiting for a CPU: the run measured the host, not the storage. */
	out->cpu_bound =
		res->cpu_wait_known &&
		(double)res->cpu_wait_ns > CPU_WAIT_BOUND_RATIO * (double)res->cpu_thread_ns;
	out->busy_ns += res->busy_ns;
}

static int burst_probe_run(struct probe *p, const _Atomic bool *stop, struct probe_outcome *out)
{
	const struct burst_result *res;
	int r;

	burst_limit_writes(p->state, p->write_left);
	r = burst_run(p->state, p->target, stop, &res);

	if (r == -EBUSY) {
		/* An earlier run left I/O stuck in the kernel with this burst's buffers:
		 * they stay with it, and it stays for a scheduler still reading it; run
		 * on a fresh one. */
		struct burst *old = p->state;
		struct burst *fresh = burst_new(p->cfg, p->engine, p->bounds_ns, p->n_bounds, &r);

		if (fresh) {
			p->state = fresh;
			burst_abandon(old);
			burst_limit_writes(fresh, p->write_left);
			r = burst_run(p->state, p->target, stop, &res);
		}
	}
	if (r < 0) {
		out->why = burst_why(p->state);
		return r;
	}
	add_result(out, p->state, res);
	return 0;
}

static uint64_t burst_probe_inflight_since(const struct probe *p)
{
	return burst_inflight_since(p->state);
}

static void burst_probe_free(struct probe *p)
{
	burst_free(p->state);
}

/* Each job sets its engine up for the run and tears it down after; a job on a
 * thread of its own (all but the first, on the lane's) opens its schedstat
 * file (cpu_wait.h), closed as the thread ends. */
static void burst_descriptors(const struct cfg_probe *c, const struct engine_ops *e,
			      struct probe_fds *out)
{
	out->run = c->jobs * e->fds + c->jobs - 1;
}

const struct probe_ops burst_probe_ops = {
	.kind = CFG_PROBE_BURST,
	.flags = PROBE_F_SKIP_IF_RUNNING | PROBE_F_OWN_TIMEOUTS | PROBE_F_EXCLUSIVE |
		 PROBE_F_BUDGETED | PROBE_F_SPLAY | PROBE_F_BUSY_BACKOFF | PROBE_F_IODEPTH |
		 PROBE_F_RUN_FIGURES,
	.io_ops = burst_io_ops,
	.op_name = burst_op_name,
	.init = burst_probe_init,
	.run = burst_probe_run,
	.inflight_since = burst_probe_inflight_since,
	.free = burst_probe_free,
	.descriptors = burst_descriptors,
};
