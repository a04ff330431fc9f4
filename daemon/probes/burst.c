/* SPDX-License-Identifier: MIT */
/*
 * burst — fio-style IOPS bursts: `jobs` threads, each with its own engine queue.
 *
 * Each job runs one loop (job_loop), and every iteration of it is one batch:
 *
 *   1. how many may go out: the free slots, bounded by the rate schedule and, in
 *      `ios` mode, by the job's share claimed from one shared atomic counter
 *      (once per batch, not per I/O);
 *   2. prepare them (size, offset, direction from the job's rng; fresh random
 *      bytes for a write, only the bytes of that I/O), claim their writes from
 *      the run's write limit when it has one (one shared atomic counter again,
 *      once per batch: claim_writes()), then read the clock ONCE, stamp the
 *      whole batch, publish the oldest in-flight time, submit;
 *   3. reap at least one completion, waiting no longer than the oldest I/O's
 *      timeout, the next rate slot and the stop poll; record each completion
 *      (latency into the job's own histogram, counters).
 *
 * Write data is generated before the clock is read, so it never counts as
 * latency. Engines stamp done_ns once per reap batch; an engine that completes
 * inside submit() (ENGINE_F_SYNC) runs a batch one request after the other, so
 * there request i's latency starts where request i-1 finished (its done_ns),
 * not at the batch stamp — the same per-I/O latency without another clock read.
 * The engine also publishes each such start as the job's in-flight time, so a
 * watchdog sees the age of the request running, not of the chain so far.
 * Such an engine has one I/O in flight whatever the depth, so a read burst on it
 * offers it BURST_SYNC_CHAIN requests at a time even at depth 1 (chain_slots()).
 * Per I/O there is no allocation, lock, log, division, indirect call or syscall
 * of our own: rng draws, a multiply, hist_record() and a few increments.
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

#include "lib/ioprio.h"
#include "daemon/probes/burst.h"
#include "daemon/probes/probe.h"
#include "lib/rng.h"

#define BURST_STOP_POLL_NS    5000000ULL   /* longest wait without looking at *stop */
#define BURST_ABORT_DRAIN_NS  100000000ULL /* after stop/timeout: wait, cancel, wait, give up */
#define BURST_RATE_CATCHUP_NS 100000000ULL /* rate: how far behind we still catch up */
#define BURST_SYNC_CHAIN      16U	   /* sync engine, reads: requests per submit, at least */

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

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

struct burst *burst_new(const struct cfg_probe *cfg, const struct engine_ops *ops,
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

void burst_free(struct burst *b)
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

uint64_t burst_inflight_since(const struct burst *b)
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

/* ---------------------------------------------------------------- the loop */

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Time left until @due at @now, 0 when past. */
static inline uint64_t left(uint64_t due, uint64_t now)
{
	return due > now ? due - now : 0;
}

/* Submit time of the oldest busy slot, 0 when none. O(depth), once per batch at most. */
static uint64_t oldest_busy(const struct burst_slot *slots, unsigned depth)
{
	uint64_t oldest = UINT64_MAX;

	for (unsigned i = 0; i < depth; i++)
		if (slots[i].busy && slots[i].req.submit_ns < oldest)
			oldest = slots[i].req.submit_ns;
	return oldest == UINT64_MAX ? 0 : oldest;
}

static unsigned count_older(const struct burst_slot *slots, unsigned depth, uint64_t before)
{
	unsigned n = 0;

	for (unsigned i = 0; i < depth; i++)
		if (slots[i].busy && slots[i].req.submit_ns <= before)
			n++;
	return n;
}

/* Rate slot k is due at t0 + k * slot_ns. How many are due by @now. */
static inline uint64_t slots_due(uint64_t now, uint64_t t0, double slots_per_ns)
{
	return now < t0 ? 0 : (uint64_t)((double)(now - t0) * slots_per_ns) + 1;
}

static inline uint64_t slot_time(uint64_t t0, double slot_ns, uint64_t k)
{
	return t0 + (uint64_t)(slot_ns * (double)k + 0.999);
}

/* A job's counters while it runs: locals, written back once at the end. */
struct tally {
	uint64_t ios[IO_DIR_COUNT], bytes[IO_DIR_COUNT];
	uint64_t errors[IO_DIR_COUNT], short_ios[IO_DIR_COUNT];
	/* Completed during the ramp: not measured, written all the same. */
	uint64_t ramp_ios[IO_DIR_COUNT], ramp_bytes[IO_DIR_COUNT];
	uint64_t last_done; /* last measured completion */
};

/* Record one completion. @cancelled: -ECANCELED/-EINTR are our own doing then,
 * not the device's errors. */
static inline void record(struct tally *tl, struct hist *const *hist, const struct io_req *req,
			  bool measured, bool cancelled)
{
	const unsigned d = req->op == IO_WRITE;
	const ssize_t res = req->result;

	if (unlikely(res < 0)) {
		if (!(cancelled && (res == -ECANCELED || res == -EINTR)))
			tl->errors[d]++;
		return;
	}
	if (!measured) { /* written all the same: what the device and the budget see */
		tl->ramp_ios[d]++;
		tl->ramp_bytes[d] += (uint64_t)res;
		return;
	}
	if (unlikely((uint64_t)res < req->len))
		tl->short_ios[d]++;
	tl->ios[d]++;
	tl->bytes[d] += (uint64_t)res;
	hist_record(hist[d], req->done_ns > req->submit_ns ? req->done_ns - req->submit_ns : 0);
	if (req->done_ns > tl->last_done)
		tl->last_done = req->done_ns;
}

/*
 * Where a job is in its run. It submits until the deadline or until the `ios`
 * are all issued, then drains. On *stop, another job's abort or a fatal submit
 * error it aborts: what is in flight gets BURST_ABORT_DRAIN_NS, is cancelled,
 * gets as long again, and is then abandoned. A timeout cancels at once.
 */
enum job_phase {
	JOB_SUBMITTING,
	JOB_DRAINING,
	JOB_ABORTING,  /* until phase_end, then cancel */
	JOB_CANCELLED, /* until phase_end, then abandon */
};

/* One job's loop state: locals of job_loop(), written back to the job at the end. */
struct job_run {
	struct burst_job *j;
	struct burst *b;
	enum job_phase phase;
	uint64_t phase_end;   /* aborting, cancelled: when the phase is over */
	uint64_t now;	      /* last clock read, or the latest completion since */
	uint64_t oldest;      /* submit time of the oldest I/O in flight, 0 when none */
	uint64_t credit;      /* ios mode: claimed, not yet submitted */
	uint64_t rate_issued; /* rate slots used */
	uint64_t rate_t0;     /* this job's first rate slot */
	uint64_t rate_debt;   /* slots we may fall behind and still catch up */
	double slots_per_ns;
	uint64_t timeout_ns;
	uint64_t late_ns;  /* a completion this slow timed out: ENGINE_F_SYNC only */
	uint64_t seq_next; /* sequential: next offset */
	unsigned nfree, inflight;
	bool engine_full; /* the last submit took fewer than offered */
	bool write_cut;	  /* this batch was cut at the write limit (claim_writes()) */
	int error;
	struct rng rng;
	struct tally tl;
};

static void job_run_init(struct job_run *st, struct burst_job *j)
{
	struct burst *b = j->b;

	*st = (struct job_run){
		.j = j,
		.b = b,
		.phase = JOB_SUBMITTING,
		.now = b->t0,
		.timeout_ns = b->cfg.timeout_ns ? b->cfg.timeout_ns : UINT64_MAX / 4,
		.seq_next = j->seq_lo,
		.nfree = b->nslots,
		.rng = j->rng,
	};
	/* A queueing engine's I/O is watched while in flight (check_timeout()); a
	 * sync engine's is never in flight between our calls, only late at its
	 * completion. */
	st->late_ns = b->ops->flags & ENGINE_F_SYNC ? st->timeout_ns : UINT64_MAX;
	st->slots_per_ns = b->rated ? 1.0 / b->slot_ns : 0.0;
	/* BURST_RATE_CATCHUP_NS worth of slots (scheduling hiccups) plus a queue. */
	st->rate_debt =
		b->rated ? (uint64_t)(BURST_RATE_CATCHUP_NS * st->slots_per_ns) + b->depth : 0;
	/* Jobs take their rate slots staggered across one interval, not all at once. */
	st->rate_t0 = b->t0 + (uint64_t)(b->slot_ns * j->idx / b->jobs);
	for (unsigned i = 0; i < b->nslots; i++) {
		j->slots[i].busy = false;
		j->free[i] = &j->slots[b->nslots - 1 - i];
	}
}

/* Enters the next phase when its time came. False: I/O is left in the kernel. */
static bool phase_step(struct job_run *st)
{
	const struct burst *b = st->b;

	if (likely(st->phase < JOB_ABORTING) &&
	    unlikely(atomic_load_explicit(b->stop, memory_order_relaxed) ||
		     atomic_load_explicit(&b->abort, memory_order_relaxed))) {
		if (atomic_load_explicit(b->stop, memory_order_relaxed))
			st->j->stopped = true;
		st->phase = JOB_ABORTING;
		st->phase_end = st->now + BURST_ABORT_DRAIN_NS;
	}
	if (unlikely(st->phase >= JOB_ABORTING) && st->now >= st->phase_end && st->inflight) {
		if (st->phase == JOB_CANCELLED) {
			st->j->wedged = true; /* still in the kernel: leave it there */
			return false;
		}
		if (b->ops->cancel)
			(void)b->ops->cancel(&st->j->eng);
		st->phase = JOB_CANCELLED;
		st->phase_end = st->now + BURST_ABORT_DRAIN_NS;
	}
	if (unlikely(st->now >= b->deadline) && st->phase == JOB_SUBMITTING)
		st->phase = JOB_DRAINING;
	/* Another job's write did not fit the limit: the burst is over. */
	if (unlikely(b->limited) && st->phase == JOB_SUBMITTING &&
	    atomic_load_explicit(&b->write_spent, memory_order_relaxed))
		st->phase = JOB_DRAINING;
	return true;
}

/* How many may go out now: free slots, bounded by the rate slots due and, in ios
 * mode, by the measured I/Os this job claimed. */
static unsigned batch_size(struct job_run *st, bool measured)
{
	struct burst *b = st->b;
	unsigned n = st->phase == JOB_SUBMITTING ? st->nfree : 0;

	if (b->rated && n) {
		uint64_t due = slots_due(st->now, st->rate_t0, st->slots_per_ns);

		/* Behind by more than rate_debt (a slow device, a long stall): forgive the
		 * rest rather than catch up in one flood. */
		if (due > st->rate_issued + st->rate_debt)
			st->rate_issued = due - st->rate_debt;
		if (due < st->rate_issued + n)
			n = due > st->rate_issued ? (unsigned)(due - st->rate_issued) : 0;
	}
	if (b->cfg.ios && measured && n) {
		if (st->credit < n) {
			uint64_t want = max_u64(n - st->credit, b->credit_chunk);
			uint64_t prev = atomic_fetch_add_explicit(&b->ios_issued, want,
								  memory_order_relaxed);

			if (prev < b->cfg.ios)
				st->credit += min_u64(want, b->cfg.ios - prev);
			if (!st->credit)
				st->phase = JOB_DRAINING; /* all measured I/Os issued */
		}
		if (n > st->credit)
			n = (unsigned)st->credit;
	}
	return n;
}

/* Size, offset, direction and (for a write) fresh data of @n requests into the
 * job's batch; returns the bytes of its writes. The per-I/O path: constants in
 * locals, since rng_fill() writes through a char pointer and would make the
 * compiler reload them from *b. */
static uint64_t prepare_batch(struct job_run *st, unsigned n, bool measured)
{
	const struct burst *b = st->b;
	struct burst_job *j = st->j;
	const uint64_t bs = b->bs, n_sizes = b->n_sizes, mix_thresh = b->mix_thresh;
	const uint64_t ws_start = b->ws_start, ws_slots = b->ws_blocks + 1;
	const uint64_t seq_lo = j->seq_lo, seq_hi = j->seq_hi;
	const bool sequential = b->sequential, mixed = b->mixed, writes_only = b->writes_only;
	struct burst_slot **const freel = j->free;
	struct io_req **const batch = j->batch;
	struct rng *const rng = &st->rng; /* in place: a copy stalls store forwarding */
	uint64_t seq_next = st->seq_next, written = 0;
	unsigned nfree = st->nfree;

	for (unsigned i = 0; i < n; i++) {
		struct burst_slot *s = freel[--nfree];
		struct io_req *req = &s->req;
		uint64_t k = 1, len, off;
		bool wr;

		if (n_sizes > 1)
			k += rng_below(rng, n_sizes);
		len = k * bs;
		if (sequential) {
			if (seq_next + len > seq_hi)
				seq_next = seq_lo;
			off = seq_next;
			seq_next += len;
		} else {
			off = ws_start + rng_below(rng, ws_slots - k) * bs;
		}
		wr = writes_only || (mixed && (rng_next(rng) >> 11) >= mix_thresh);
		if (wr) {
			rng_fill(rng, req->buf, len);
			written += len;
		}
		req->op = wr ? IO_WRITE : IO_READ;
		req->offset = off;
		req->len = (uint32_t)len;
		s->busy = true;
		s->measured = measured;
		batch[i] = req;
	}
	st->seq_next = seq_next;
	st->nfree = nfree;
	return written;
}

/* Requests @from..@n of the batch go back unsubmitted (a sequential walk
 * resumes at the first of them). */
static void batch_return(struct job_run *st, unsigned from, unsigned n)
{
	struct burst_job *j = st->j;

	if (from >= n)
		return;
	if (st->b->sequential)
		st->seq_next = j->batch[from]->offset;
	for (unsigned i = n; i-- > from;) {
		struct burst_slot *s = (struct burst_slot *)j->batch[i];

		s->busy = false;
		j->free[st->nfree++] = s;
	}
}

/* The writes among requests @from..@n of the batch, claimed and not sent,
 * given back: the count holds what went out and what is on its way, no more
 * (a sync engine hands back the rest of a batch after a slow request, often). */
static void unclaim_writes(struct job_run *st, unsigned from, unsigned n)
{
	struct io_req **const batch = st->j->batch;
	uint64_t back = 0;

	for (unsigned i = from; i < n; i++)
		back += batch[i]->op == IO_WRITE ? batch[i]->len : 0;
	if (back)
		atomic_fetch_sub_explicit(&st->b->write_claimed, back, memory_order_relaxed);
}

/*
 * The batch's writes, @written bytes, claimed from what the run may write
 * (write_limit): claims add up in one counter the jobs share, each a range of
 * it of its own, so the writes that go out never add up past the limit,
 * whatever the jobs, depths and block sizes. A batch whose range ends past the
 * limit is cut before its first write that does not fit (the rest goes back,
 * its claim too) and marked: once all of what is left has gone out, the burst
 * is over (writes_done()). Returns how many of the @n requests go out. One
 * atomic add a batch, and only for a limited burst's batches that write.
 */
static unsigned claim_writes(struct job_run *st, unsigned n, uint64_t written)
{
	struct burst *b = st->b;
	struct io_req **const batch = st->j->batch;
	const uint64_t prev =
		atomic_fetch_add_explicit(&b->write_claimed, written, memory_order_relaxed);
	uint64_t room = prev < b->write_limit ? b->write_limit - prev : 0;
	unsigned ok = 0;

	if (written <= room)
		return n;
	for (; ok < n; ok++) {
		const struct io_req *req = batch[ok];

		if (req->op != IO_WRITE)
			continue;
		if (req->len > room)
			break;
		room -= req->len;
	}
	unclaim_writes(st, ok, n);
	batch_return(st, ok, n);
	st->write_cut = true;
	return ok;
}

/* A cut batch went out whole: the next write did not fit what was left. The
 * burst is over: every job drains what it has in flight. */
static void writes_done(struct job_run *st)
{
	atomic_store_explicit(&st->b->write_spent, true, memory_order_relaxed);
	st->phase = JOB_DRAINING;
	st->write_cut = false;
}

/* The engine took @r < @n of the batch: the rest goes back (a sequential walk
 * resumes at it). Returns how many it took. */
static unsigned submit_short(struct job_run *st, unsigned n, int r)
{
	const unsigned ok = r < 0 ? 0 : (unsigned)r;

	if (st->b->limited)
		unclaim_writes(st, ok, n);
	batch_return(st, ok, n);
	/* A setup problem, or an engine that takes nothing while nothing is in
	 * flight: retrying cannot help. */
	if (r == -EBADF || r == -EINVAL || (!ok && !st->inflight)) {
		if (!st->error)
			st->error = r < 0 ? r : -EAGAIN;
		st->phase = JOB_DRAINING;
		atomic_store_explicit(&st->b->abort, true, memory_order_relaxed);
	}
	st->engine_full = true;
	return ok;
}

/* Prepares @n requests, stamps them with ONE clock read, publishes the oldest
 * in-flight time and submits them as one batch. */
static void submit_batch(struct job_run *st, unsigned n, bool measured)
{
	struct burst_job *j = st->j;
	struct io_req **const batch = j->batch;
	uint64_t stamp, written;
	unsigned ok;
	int r;

	st->engine_full = false;
	if (n) {
		written = prepare_batch(st, n, measured);
		if (unlikely(st->b->limited) && written)
			n = claim_writes(st, n, written);
	}
	if (!n) {
		atomic_store_explicit(&j->inflight_since, st->oldest, memory_order_relaxed);
		if (unlikely(st->write_cut))
			writes_done(st);
		return;
	}
	stamp = eng_now_ns();
	for (unsigned i = 0; i < n; i++)
		batch[i]->submit_ns = stamp;
	atomic_store_explicit(&j->inflight_since, st->oldest ? st->oldest : stamp,
			      memory_order_relaxed);
	r = st->b->ops->submit(&j->eng, batch, n);
	st->now = stamp;
	ok = likely(r >= 0 && (unsigned)r == n) ? n : submit_short(st, n, r);
	/* A cut batch the engine took only part of: what it left (given back)
	 * may fit, the next batch tries. */
	if (unlikely(st->write_cut)) {
		if (ok == n)
			writes_done(st);
		else
			st->write_cut = false;
	}
	/* Run one after the other inside submit(): each started when the one before
	 * it finished. */
	if (st->b->ops->flags & ENGINE_F_SYNC)
		for (unsigned i = 1; i < ok; i++)
			batch[i]->submit_ns = batch[i - 1]->done_ns;
	st->inflight += ok;
	st->rate_issued += ok;
	if (st->b->cfg.ios && measured)
		st->credit -= ok;
	if (ok && !st->oldest)
		st->oldest = stamp;
}

/* Nothing in flight and only the rate schedule holds us back: sleep to the next
 * slot (or the stop poll, or the deadline). */
static void idle_wait(struct job_run *st)
{
	const struct burst *b = st->b;
	uint64_t wake = min_u64(st->now + BURST_STOP_POLL_NS, b->deadline);

	if (b->rated)
		wake = min_u64(wake, slot_time(st->rate_t0, b->slot_ns, st->rate_issued));
	while (eng_sleep_until(wake) == -EINTR)
		;
	st->now = eng_now_ns();
}

/* @count I/Os timed out: count them, cancel what is in flight, stop the burst.
 * The callers see to it that a job calls it once. */
static void timed_out(struct job_run *st, unsigned count)
{
	struct burst *b = st->b;
	struct burst_job *j = st->j;

	j->timeouts += count;
	if (!st->error)
		st->error = -ETIMEDOUT;
	atomic_store_explicit(&b->abort, true, memory_order_relaxed);
	if (st->inflight && b->ops->cancel)
		(void)b->ops->cancel(&j->eng);
	st->phase = JOB_CANCELLED;
	st->phase_end = st->now + BURST_ABORT_DRAIN_NS;
}

/* Frees the slots of @r completions and records them. A sync engine's I/O that
 * took longer than the timeout is recorded, and is a timeout all the same. */
static void complete(struct job_run *st, int r)
{
	struct burst_job *j = st->j;
	const bool cancelled = st->phase == JOB_CANCELLED;
	uint64_t max_done = 0;
	unsigned late = 0;
	bool rescan = false;

	for (int i = 0; i < r; i++) {
		struct burst_slot *s = (struct burst_slot *)j->done[i];

		s->busy = false;
		j->free[st->nfree++] = s;
		if (s->req.submit_ns <= st->oldest)
			rescan = true;
		if (s->req.done_ns > max_done)
			max_done = s->req.done_ns;
		if (unlikely(s->req.done_ns - s->req.submit_ns > st->late_ns) &&
		    s->req.done_ns > s->req.submit_ns)
			late++;
		record(&st->tl, j->hist, &s->req, s->measured, cancelled);
	}
	st->inflight -= (unsigned)r;
	if (!st->inflight)
		st->oldest = 0;
	else if (rescan)
		st->oldest = oldest_busy(j->slots, st->b->nslots);
	if (max_done > st->now)
		st->now = max_done;
	if (unlikely(late) && !j->timeouts)
		timed_out(st, late);
}

/* Reaps at least one completion, waiting no longer than the oldest I/O may take,
 * the stop poll, the phase's end and the next rate slot. False: the engine
 * cannot reap, and what is in flight stays there. */
static bool reap_some(struct job_run *st)
{
	struct burst *b = st->b;
	struct burst_job *j = st->j;
	uint64_t tmo = min_u64(BURST_STOP_POLL_NS, left(st->oldest + st->timeout_ns, st->now));
	int r;

	if (st->phase >= JOB_ABORTING)
		tmo = min_u64(tmo, left(st->phase_end, st->now));
	if (b->rated && st->phase == JOB_SUBMITTING && st->nfree && !st->engine_full)
		tmo = min_u64(tmo,
			      left(slot_time(st->rate_t0, b->slot_ns, st->rate_issued), st->now));
	r = b->ops->reap(&j->eng, j->done, 1, b->nslots, (int64_t)tmo);
	if (likely(r > 0)) {
		complete(st, r);
	} else if (r == -ETIME || r == 0 || r == -EINTR) {
		st->now = eng_now_ns();
	} else {
		if (!st->error)
			st->error = r;
		atomic_store_explicit(&b->abort, true, memory_order_relaxed);
		j->wedged = st->inflight > 0;
		return false;
	}
	return true;
}

/* An I/O in flight longer than the timeout: count, cancel, stop the burst. Once. */
static void check_timeout(struct job_run *st)
{
	struct burst *b = st->b;
	struct burst_job *j = st->j;

	if (likely(!st->inflight || st->now <= st->oldest ||
		   st->now - st->oldest < st->timeout_ns) ||
	    j->timeouts)
		return;
	timed_out(st, count_older(j->slots, b->nslots, st->now - st->timeout_ns));
}

/* One batch per iteration: see the top of the file. */
static void job_loop(struct burst_job *j)
{
	struct job_run st;

	job_run_init(&st, j);
	while (phase_step(&st)) {
		const bool measured = st.now >= j->b->measure_start;

		submit_batch(&st, batch_size(&st, measured), measured);
		if (!st.inflight) {
			if (st.phase != JOB_SUBMITTING)
				break;
			idle_wait(&st);
			continue;
		}
		if (!reap_some(&st))
			break;
		check_timeout(&st);
	}

	atomic_store_explicit(&j->inflight_since, j->wedged ? st.oldest : 0, memory_order_relaxed);
	/* Claims not used (a stop, the deadline): ios_issued counts what went out. */
	if (st.credit)
		atomic_fetch_sub_explicit(&j->b->ios_issued, st.credit, memory_order_relaxed);
	j->rng = st.rng;
	for (int d = 0; d < IO_DIR_COUNT; d++) {
		j->ios[d] = st.tl.ios[d];
		j->bytes[d] = st.tl.bytes[d];
		j->errors[d] = st.tl.errors[d];
		j->short_ios[d] = st.tl.short_ios[d];
		j->ramp_ios[d] = st.tl.ramp_ios[d];
		j->ramp_bytes[d] = st.tl.ramp_bytes[d];
	}
	j->last_done_ns = st.tl.last_done;
	j->error = st.error;
}

/* ---------------------------------------------------------------- threads */

/* Wait until every started job has set up its engine. The last one in sets the
 * common start time. Returns false when any job failed (nobody runs then). */
static bool gate_pass(struct burst *b, int init_error)
{
	bool ok;

	pthread_mutex_lock(&b->gate_mu);
	if (init_error < 0 && !b->gate_error)
		b->gate_error = init_error;
	if (++b->gate_waiting >= b->gate_expected && !b->gate_open) {
		b->t0 = eng_now_ns();
		b->measure_start = b->t0 + b->cfg.ramp_ns;
		b->deadline = b->measure_start +
			      (b->cfg.duration_ns ? b->cfg.duration_ns : b->ios_max_ns);
		b->gate_open = true;
		pthread_cond_broadcast(&b->gate_cv);
	}
	while (!b->gate_open)
		pthread_cond_wait(&b->gate_cv, &b->gate_mu);
	ok = b->gate_error == 0;
	pthread_mutex_unlock(&b->gate_mu);
	return ok;
}

/* Thread creation failed after @started jobs (the caller's job 0 included). */
static void gate_shrink(struct burst *b, unsigned started, int error)
{
	pthread_mutex_lock(&b->gate_mu);
	b->gate_expected = started;
	if (!b->gate_error)
		b->gate_error = error;
	if (b->gate_waiting >= b->gate_expected && !b->gate_open) {
		b->gate_open = true;
		pthread_cond_broadcast(&b->gate_cv);
	}
	pthread_mutex_unlock(&b->gate_mu);
}

/*
 * The probe's 'io_priority' on a job thread of its own: job 0 runs on the
 * caller's thread, whose priority probe_run() sets and puts back, and the others
 * end with the run, so nothing needs putting back. 0 or -errno.
 */
static int job_priority(const struct burst_job *j)
{
	if (j->idx == 0 || !j->b->cfg.io_priority)
		return 0;
	return ioprio_thread_set(j->b->cfg.io_priority);
}

static void job_main(struct burst_job *j)
{
	struct burst *b = j->b;
	int r = job_priority(j);

	if (r == 0)
		r = eng_init(&j->eng, b->ops, b->t->fd, b->nslots);
	/* A sync chain's requests run one after the other inside submit(): the
	 * engine moves the in-flight stamp to each one's start as it goes. */
	if (r == 0)
		j->eng.started = &j->inflight_since;

	/* Best effort: the job's buffers never change, so the kernel may keep them
	 * pinned for the whole run instead of pinning them per I/O. */
	if (r == 0)
		(void)eng_register_buffer(&j->eng, j->bufs, (size_t)b->depth * b->buf_stride);
	if (gate_pass(b, r))
		job_loop(j);
	if (r == 0 && !j->wedged)
		eng_cleanup(&j->eng);
}

static void *job_thread(void *arg)
{
	job_main(arg);
	return NULL;
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
	res->error = 0;
	res->stopped = false;
	res->write_limited = false;
}

/* Says why the run cannot go on, in b->why; returns @err. */
__attribute__((format(printf, 3, 4))) static int why(struct burst *b, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b->why, sizeof(b->why), fmt, ap);
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
		b->buf_bytes += len;
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
		b->buf_bytes -= j->bufs_len;
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

	for (unsigned i = 0; i < b->jobs; i++) {
		const struct burst_job *j = b->job[i];

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

int burst_run(struct burst *b, struct target *t, const _Atomic bool *stop,
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

		r = pthread_create(&j->thread, NULL, job_thread, j);
		if (r != 0) {
			gate_shrink(b, started, -r);
			break;
		}
		j->thread_started = true;
		pthread_setname_np(j->thread, "iopulse-burst");
		started++;
	}
	job_main(b->job[0]);
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

const char *burst_why(const struct burst *b)
{
	return b && b->why[0] ? b->why : NULL;
}

uint64_t burst_buffer_bytes(const struct burst *b)
{
	return b ? b->buf_bytes : 0;
}

void burst_limit_writes(struct burst *b, uint64_t bytes)
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

/* Each job sets its engine up for the run and tears it down after. */
static void burst_descriptors(const struct cfg_probe *c, const struct engine_ops *e,
			      struct probe_fds *out)
{
	out->run = c->jobs * e->fds;
}

const struct probe_ops burst_probe_ops = {
	.kind = CFG_PROBE_BURST,
	.flags = PROBE_F_SKIP_IF_RUNNING | PROBE_F_OWN_TIMEOUTS | PROBE_F_EXCLUSIVE |
		 PROBE_F_BUDGETED | PROBE_F_SPLAY | PROBE_F_BUSY_BACKOFF | PROBE_F_IODEPTH,
	.io_ops = burst_io_ops,
	.op_name = burst_op_name,
	.init = burst_probe_init,
	.run = burst_probe_run,
	.inflight_since = burst_probe_inflight_since,
	.free = burst_probe_free,
	.descriptors = burst_descriptors,
};
