/* SPDX-License-Identifier: MIT */
/*
 * burst_job — one job of a burst (burst.c): its thread, and its submit/reap loop.
 *
 * Each job runs one loop (burst_job_loop), and every iteration of it is one batch:
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
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/probes/burst_int.h"
#include "daemon/probes/cpu_wait.h"
#include "lib/ioprio.h"
#include "lib/rng.h"

#define BURST_STOP_POLL_NS    5000000ULL   /* longest wait without looking at *stop */
#define BURST_ABORT_DRAIN_NS  100000000ULL /* after stop/timeout: wait, cancel, wait, give up */
#define BURST_RATE_CATCHUP_NS 100000000ULL /* rate: how far behind we still catch up */

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* ---------------------------------------------------------------- the loop */

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

/* One job's loop state: locals of burst_job_loop(), written back to the job at the end. */
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
static void burst_job_loop(struct burst_job *j)
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
void burst_gate_shrink(struct burst *b, unsigned started, int error)
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

/* The job's loop, with its thread's run-queue wait over it and its time. */
static void job_loop_timed(struct burst_job *j)
{
	uint64_t wait0 = 0, wait1 = 0, t0;
	bool known = cpu_wait_now(&wait0);

	t0 = eng_now_ns();
	burst_job_loop(j);
	j->cpu_thread_ns = eng_now_ns() - t0;
	j->cpu_wait_known = known && cpu_wait_now(&wait1);
	j->cpu_wait_ns = j->cpu_wait_known && wait1 > wait0 ? wait1 - wait0 : 0;
	if (j->cpu_wait_ns > j->cpu_thread_ns) /* a wait just before t0 */
		j->cpu_wait_ns = j->cpu_thread_ns;
}

void burst_job_main(struct burst_job *j)
{
	struct burst *b = j->b;
	int r = job_priority(j);
	uint64_t wait;

	/* A job thread's first call opens its schedstat file (and asks for its
	 * slice): done here, not after the common start. */
	(void)cpu_wait_now(&wait);

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
		job_loop_timed(j);
	if (r == 0 && !j->wedged)
		eng_cleanup(&j->eng);
}

void *burst_job_thread(void *arg)
{
	burst_job_main(arg);
	return NULL;
}
