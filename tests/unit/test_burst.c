/* SPDX-License-Identifier: MIT */
/*
 * burst: IOPS bursts through burst_probe_ops as the daemon runs them (the row's
 * init, run and free; the outcome), over the null and sync engines and over
 * engines of our own (a recording one, one that never completes), on real
 * targets in a mkdtemp directory of our own under $TEST_TMPDIR: exact counts, ramp, jobs, offsets,
 * sizes, the read/write mix, the rate cap, fresh write data, refusals, stop and
 * timeouts. Prints the null engine's rate at QD32 (information, not a check).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "daemon/probes/cpu_wait.h"
#include "daemon/probes/probe.h"
#include "lib/ioprio.h"

#define MIB  (1ULL << 20)
#define MSEC 1000000ULL
#define USEC 1000ULL

static const uint64_t bounds[] = {100000, 1000000, 10000000, 100000000};
#define N_BOUNDS (sizeof(bounds) / sizeof(bounds[0]))

/*
 * Replaces lib/clock.c in this binary (a static library's object is only
 * pulled in when nothing else defines it): the real clock, unless a test sets
 * fake_step_ns (fake_clock()). Then every thread has a fake clock of its own,
 * from fake_base on, that moves on by fake_step_ns at each of that thread's
 * reads and at nothing else: each request of the null or sync engine takes
 * exactly one step, and a job's pacing and deadline follow its own reads only.
 * Whatever the machine does between them (a busy one preempts a job for half
 * a second) never shows, so a burst's figures on it are the same everywhere:
 * what checks pacing and deadlines to the I/O runs there. With fake_watch set
 * (one job: on the test's thread), each read notes how old its in-flight time
 * is at that moment, as a scrape would see it.
 * fake_step_ns and fake_base are set before a run starts its job threads.
 */
static uint64_t fake_step_ns, fake_base, fake_max_age;
static _Thread_local uint64_t fake_now;
static const struct probe *fake_watch;

uint64_t eng_now_ns(void)
{
	struct timespec ts;

	if (fake_step_ns) {
		uint64_t since;

		if (fake_now < fake_base) /* a job thread's first read */
			fake_now = fake_base;
		fake_now += fake_step_ns;
		since = fake_watch ? probe_inflight_since(fake_watch) : 0;
		if (since && fake_now - since > fake_max_age)
			fake_max_age = fake_now - since;
		return fake_now;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return eng_ns(&ts);
}

/* The wall clock, never the fake one: how long a run took for real. */
static uint64_t now_ns(void)
{
	return eng_mono_ns();
}

/* Starts the fake clock at @step_ns a read, watching @b. Its start lies in the
 * real clock's past, so that eng_sleep_until() a fake time returns at once. */
static void fake_clock(uint64_t step_ns, const struct probe *b)
{
	fake_base = 1000 * MSEC;
	fake_now = fake_base;
	fake_max_age = 0;
	fake_watch = b;
	fake_step_ns = step_ns;
}

/* ---------------------------------------------------------------- targets */

/* Shared by the tests that need a target but not a fresh one. */
static struct tu_dir_target shared_target;
static bool shared_open;

static struct target *target4m(void)
{
	if (!shared_open) {
		tu_open_dir_target(&shared_target, 4 * MIB);
		shared_open = true;
	}
	return &shared_target.t;
}

static struct cfg_probe burst_cfg(enum cfg_rw rw, uint64_t bs, unsigned depth, unsigned jobs)
{
	struct cfg_probe c = {
		.name = "b",
		.kind = CFG_PROBE_BURST,
		.block_size = bs,
		.block_size_max = bs,
		.timeout_ns = CFG_DEFAULT_TIMEOUT_NS,
		.engine = "null",
		.rw = rw,
		.rwmix_read = CFG_DEFAULT_RWMIX_READ,
		.iodepth = depth,
		.jobs = jobs,
		.interval_ns = CFG_DEFAULT_EVERY_NS,
	};
	return c;
}

/* A run's figures as the burst counts them, from its outcome: each direction's
 * (its ramp's are the outcome's warm-ups), the measured phase and the whole
 * run, timeouts, the error that ended it (why: in words, "" when none), and
 * whether a stop or the write limit cut it short. */
struct dir_figures {
	uint64_t ios, bytes, errors, short_ios, ramp_ios, ramp_bytes;
};

struct figures {
	struct dir_figures dir[IO_DIR_COUNT];
	uint64_t elapsed_ns, busy_ns, timeouts;
	int error;
	bool stopped, write_limited;
};

static uint64_t total_ios(const struct figures *r)
{
	return r->dir[IO_READ].ios + r->dir[IO_WRITE].ios;
}

/* No errors of any kind (run_probe() checked histogram counts == ios already). */
static void assert_clean(const struct figures *r)
{
	for (int d = 0; d < IO_DIR_COUNT; d++) {
		assert_int_equal(r->dir[d].errors, 0);
		assert_int_equal(r->dir[d].short_ios, 0);
	}
	assert_int_equal(r->error, 0);
	assert_int_equal(r->timeouts, 0);
	assert_false(r->stopped);
}

/* What run_probe() leaves a burst to write (p->write_left, as a lane sets it). */
static uint64_t run_write_limit = UINT64_MAX;

/* One run of a burst: what the row's run returned, how long it took for real,
 * and its figures (the histograms' counts and extremes: the histograms are the
 * outcome's, gone after the run). */
struct run {
	int ret;
	uint64_t wall_ns;
	struct figures res;
	uint64_t hist_count[IO_DIR_COUNT], hist_min[IO_DIR_COUNT], hist_max[IO_DIR_COUNT];
	char why[512];
};

/* A burst probe for @cfg on @t as probe_init() sets one up, its kind then set
 * up again on engine @ops, as on the engine it resolved; an outcome for it. */
static void burst_on(struct probe *p, struct probe_outcome *out, const struct cfg_probe *cfg,
		     const struct engine_ops *ops, struct target *t)
{
	assert_int_equal(probe_init(p, cfg, t, bounds, N_BOUNDS), 0);
	p->ops->free(p);
	p->engine = ops;
	assert_int_equal(p->ops->init(p), 0);
	assert_int_equal(probe_outcome_init(out, bounds, N_BOUNDS), 0);
}

static void burst_done(struct probe *p, struct probe_outcome *out)
{
	probe_outcome_free(out);
	probe_free(p);
}

/* One run of @p with @stop through its row's run (job 0 on this thread, as on
 * a lane's), @out cleared first: what it did. */
static struct run run_probe(struct probe *p, struct probe_outcome *out, const _Atomic bool *stop)
{
	struct run r = {0};
	uint64_t start;

	probe_outcome_clear(out);
	p->write_left = run_write_limit;
	start = now_ns();
	r.ret = p->ops->run(p, stop, out);
	r.wall_ns = now_ns() - start;
	for (int d = 0; d < IO_DIR_COUNT; d++) {
		const struct probe_op_outcome *o = &out->op[d];

		r.res.dir[d] = (struct dir_figures){o->ios,	  o->bytes,	 o->errors,
						    o->short_ios, o->warmup_ios, o->warmup_bytes};
		r.hist_count[d] = hist_count(o->hist);
		r.hist_min[d] = hist_min_ns(o->hist);
		r.hist_max[d] = hist_max_ns(o->hist);
		assert_int_equal(r.hist_count[d], o->ios);
	}
	r.res.elapsed_ns = out->elapsed_ns;
	r.res.busy_ns = out->busy_ns;
	r.res.timeouts = out->timeouts;
	r.res.error = out->error;
	r.res.stopped = out->incomplete;
	r.res.write_limited = out->budget_cut;
	snprintf(r.why, sizeof(r.why), "%s", out->why ? out->why : "");
	return r;
}

/* Run @cfg once over @ops on @t; the probe is freed after, nothing in flight. */
static struct run run_once(const struct cfg_probe *cfg, const struct engine_ops *ops,
			   struct target *t, const _Atomic bool *stop)
{
	struct probe_outcome out;
	struct probe p;
	struct run r;

	burst_on(&p, &out, cfg, ops, t);
	r = run_probe(&p, &out, stop);
	assert_int_equal(probe_inflight_since(&p), 0);
	burst_done(&p, &out);
	return r;
}

/* run_once() without @stop, which must succeed with no errors of any kind. */
static struct run run_clean(const struct cfg_probe *cfg, const struct engine_ops *ops,
			    struct target *t)
{
	struct run r = run_once(cfg, ops, t, NULL);

	assert_int_equal(r.ret, 0);
	assert_clean(&r.res);
	return r;
}

/* A step of the fake clock: well under the tests' rate slots (0.25ms and more)
 * and the sync engines' slow mark (ENG_SYNC_SLOW_NS), so chains run whole. */
#define FAKE_STEP_NS (10 * USEC)

/* run_clean() of @cfg on target4m() on the fake clock, every job on a clock of
 * its own at FAKE_STEP_NS a read: as on a machine that gives every job all the
 * CPU it wants, whatever this one does. wall_ns is still real time. */
static struct run run_faked(const struct cfg_probe *cfg, const struct engine_ops *ops)
{
	struct target *t = target4m(); /* laid out on the real clock */
	struct run r;

	fake_clock(FAKE_STEP_NS, NULL);
	r = run_clean(cfg, ops, t);
	fake_step_ns = 0;
	return r;
}

/* A paced burst (@cfg) issues no more than every job's rate slots due by @ns
 * after the common start, ramp included: each job's first slot at its start
 * (or a stagger after it), then one every jobs / rate_iops seconds. It never
 * goes past that, however its jobs are scheduled (behind, it catches up to the
 * slots due, never beyond). */
static void assert_rate_cap(const struct cfg_probe *cfg, uint64_t issued, uint64_t ns)
{
	const double cap = (double)cfg->rate_iops * (double)ns / 1e9 + cfg->jobs;

	if ((double)issued > cap)
		fail_msg("%" PRIu64 " I/Os issued in %.1f ms at %" PRIu64 "/s over %u jobs: "
			 "more than the %.1f slots due",
			 issued, ns / 1e6, cfg->rate_iops, cfg->jobs, cap);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* The fake clock's measured phase of a burst of @cfg by duration, unrated: to
 * its deadline, which each job looks at once a batch (of iodepth I/Os, a step
 * each, and a stamp), so it ends at most a batch either side of it. */
static void assert_faked_elapsed(const struct cfg_probe *cfg, const struct run *r)
{
	const uint64_t batch = (cfg->iodepth + 1) * FAKE_STEP_NS;

	assert_true(r->res.elapsed_ns + batch >= cfg->duration_ns);
	assert_true(r->res.elapsed_ns <= cfg->duration_ns + batch);
}

/* All @n I/Os of @r went in direction @d, @bs bytes each; none the other way. */
static void assert_one_way(const struct run *r, int d, uint64_t n, uint64_t bs)
{
	assert_int_equal(r->res.dir[d].ios, n);
	assert_int_equal(r->res.dir[d].bytes, n * bs);
	assert_int_equal(r->res.dir[d == IO_READ ? IO_WRITE : IO_READ].ios, 0);
}

/* ---------------------------------------------------------------- test engines */

/*
 * rec: completes at once, in order, like null, and logs every request (and,
 * when capturing, a copy of each write's data). Thread-safe with a mutex: this
 * is a test, not the I/O path.
 */
#define REC_MAX (1u << 17)

struct rec_entry {
	uint64_t offset;
	uint32_t len;
	enum io_op op;
	pthread_t thread;
	size_t data; /* offset of the copy in rec_capture, SIZE_MAX when none */
};

/* Faults the rec engine injects: every Nth request (0: never). */
static unsigned rec_eio_every, rec_short_every, rec_submit_einval_after;
/* Not 0: every request takes exactly this long, from the previous request's
 * done_ns (the first of a batch: its submit_ns), instead of the clock's. */
static uint64_t rec_step_ns;
static unsigned rec_max_batch; /* the largest batch submitted */
static _Atomic unsigned rec_seq;

static pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rec_entry *rec_log;
static unsigned rec_n;
static unsigned char *rec_capture;
static size_t rec_capture_len, rec_capture_cap;

static void rec_reset(size_t capture)
{
	free(rec_log);
	free(rec_capture);
	rec_log = calloc(REC_MAX, sizeof(*rec_log));
	assert_non_null(rec_log);
	rec_n = 0;
	rec_capture = capture ? malloc(capture) : NULL;
	rec_capture_len = 0;
	rec_capture_cap = capture;
}

static void rec_done(void)
{
	free(rec_log);
	free(rec_capture);
	rec_log = NULL;
	rec_capture = NULL;
}

static int rec_init(struct engine *e, int fd, unsigned depth)
{
	(void)e;
	(void)fd;
	(void)depth;
	return 0;
}

static int rec_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	unsigned i;

	pthread_mutex_lock(&rec_mu);
	for (i = 0; i < n && e->queued < e->depth; i++) {
		struct io_req *req = reqs[i];
		unsigned seq = atomic_fetch_add(&rec_seq, 1) + 1;

		if (rec_submit_einval_after && seq > rec_submit_einval_after) {
			if (i == 0) {
				pthread_mutex_unlock(&rec_mu);
				return -EINVAL;
			}
			break;
		}

		if (rec_n < REC_MAX) {
			struct rec_entry *le = &rec_log[rec_n++];

			*le = (struct rec_entry){.offset = req->offset,
						 .len = req->len,
						 .op = req->op,
						 .thread = pthread_self(),
						 .data = SIZE_MAX};
			if (req->op == IO_WRITE && rec_capture_len + req->len <= rec_capture_cap) {
				memcpy(rec_capture + rec_capture_len, req->buf, req->len);
				le->data = rec_capture_len;
				rec_capture_len += req->len;
			}
		}
		req->result = (ssize_t)req->len;
		if (rec_short_every && seq % rec_short_every == 0)
			req->result = (ssize_t)req->len / 2;
		if (rec_eio_every && seq % rec_eio_every == 0)
			req->result = -EIO;
		req->done_ns = eng_now_ns();
		if (rec_step_ns)
			req->done_ns = (i ? reqs[i - 1]->done_ns : req->submit_ns) + rec_step_ns;
		(void)eng_ready_park(e, req);
	}
	if (i > rec_max_batch)
		rec_max_batch = i;
	pthread_mutex_unlock(&rec_mu);
	return i ? (int)i : -EBUSY;
}

static int rec_reap(struct engine *e, struct io_req **done, unsigned min, unsigned max,
		    int64_t timeout_ns)
{
	(void)timeout_ns;
	return eng_ready_reap(e, done, min, max);
}

static void rec_cleanup(struct engine *e)
{
	e->queued = 0;
}

/* The recording engine, or one like it with another init (peek, fail below). */
#define REC_OPS(label, init_fn)                                                                    \
	{                                                                                          \
		.name = (label), .flags = ENGINE_F_SYNC, .init = (init_fn), .submit = rec_submit,  \
		.reap = rec_reap, .cleanup = rec_cleanup,                                          \
	}

static const struct engine_ops rec_ops = REC_OPS("rec", rec_init);

/*
 * hang: accepts requests and never completes them; reap waits out its timeout
 * and says -ETIME. Its cancel either completes everything with -ECANCELED (as
 * io_uring's would) or, with hang_cancel_works false, does nothing: I/O stuck in
 * the kernel for good.
 */
static bool hang_cancel_works = true;
static _Atomic unsigned hang_cancels;

static int hang_init(struct engine *e, int fd, unsigned depth)
{
	(void)fd;
	e->priv = calloc(depth, sizeof(struct io_req *));
	return e->priv ? 0 : -ENOMEM;
}

static int hang_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	struct io_req **pending = e->priv;
	unsigned i, used = 0;

	for (unsigned k = 0; k < e->depth; k++)
		used += pending[k] != NULL;
	for (i = 0; i < n && used + e->queued < e->depth; i++) {
		for (unsigned k = 0; k < e->depth; k++)
			if (!pending[k]) {
				pending[k] = reqs[i];
				break;
			}
		used++;
	}
	return i ? (int)i : -EBUSY;
}

static int hang_reap(struct engine *e, struct io_req **done, unsigned min, unsigned max,
		     int64_t timeout_ns)
{
	struct timespec ts;

	if (e->queued)
		return eng_ready_reap(e, done, min, max);
	if (timeout_ns < 0 || timeout_ns > 1000000000)
		timeout_ns = 1000000000;
	ts.tv_sec = timeout_ns / 1000000000;
	ts.tv_nsec = timeout_ns % 1000000000;
	nanosleep(&ts, NULL);
	return -ETIME;
}

static int hang_cancel(struct engine *e)
{
	struct io_req **pending = e->priv;

	atomic_fetch_add(&hang_cancels, 1);
	if (!hang_cancel_works)
		return -EALREADY;
	for (unsigned k = 0; k < e->depth; k++)
		if (pending[k]) {
			pending[k]->result = -ECANCELED;
			pending[k]->done_ns = eng_now_ns();
			(void)eng_ready_park(e, pending[k]);
			pending[k] = NULL;
		}
	return 0;
}

static void hang_cleanup(struct engine *e)
{
	free(e->priv);
	e->priv = NULL;
	e->queued = 0;
}

static const struct engine_ops hang_ops = {
	.name = "hang",
	.flags = 0,
	.init = hang_init,
	.submit = hang_submit,
	.reap = hang_reap,
	.cancel = hang_cancel,
	.cleanup = hang_cleanup,
};

/* ---------------------------------------------------------------- null engine */

static void test_null_ios_exact(void **state)
{
	static const unsigned depths[] = {1, 7, 32, 256};

	(void)state;
	for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
		struct cfg_probe cfg = burst_cfg(CFG_RW_RANDREAD, 4096, depths[i], 1);
		struct run r;

		cfg.ios = 100003;
		r = run_clean(&cfg, &eng_null_ops, target4m());
		assert_one_way(&r, IO_READ, cfg.ios, 4096);
		assert_int_equal(r.hist_count[IO_READ], cfg.ios);
		assert_true(r.res.elapsed_ns > 0 && r.res.elapsed_ns <= r.wall_ns);
	}
}

static void test_null_duration(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDRW, 4096, 32, 1);
	struct run r;

	(void)state;
	cfg.duration_ns = 300 * MSEC;
	r = run_clean(&cfg, &eng_null_ops, target4m());
	/* It ran out at its deadline (run_clean: not stopped, no error), and not
	 * before. How much it did and when its last I/O ended are the machine's: a
	 * busy one may not run the job again after its first batch until the deadline
	 * is past. The measured phase lies inside the run. */
	assert_true(r.wall_ns >= cfg.duration_ns);
	assert_true(total_ios(&r.res) > 0);
	assert_true(r.res.elapsed_ns > 0 && r.res.elapsed_ns <= r.wall_ns);

	/* With all the time it wants: busy to its deadline, measured all the way. */
	r = run_faked(&cfg, &eng_null_ops);
	assert_true(total_ios(&r.res) > 1000);
	assert_faked_elapsed(&cfg, &r);
}

static void test_null_jobs_merge(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDRW, 4096, 16, 4);
	struct run r;

	(void)state;
	/* ios mode: the shared counter makes the total exact across jobs. */
	cfg.ios = 200001;
	r = run_clean(&cfg, &eng_null_ops, target4m());
	assert_int_equal(total_ios(&r.res), cfg.ios);
	assert_int_equal(r.hist_count[IO_READ] + r.hist_count[IO_WRITE], cfg.ios);
	assert_int_equal(r.res.dir[IO_READ].bytes + r.res.dir[IO_WRITE].bytes, cfg.ios * 4096);

	/* duration mode: whatever the jobs did adds up. Each job's first batch is
	 * due at the common start, before any deadline: every job does some. */
	cfg.ios = 0;
	cfg.duration_ns = 200 * MSEC;
	r = run_clean(&cfg, &eng_null_ops, target4m());
	assert_true(total_ios(&r.res) >= cfg.jobs);
	assert_int_equal(r.res.dir[IO_READ].bytes + r.res.dir[IO_WRITE].bytes,
			 total_ios(&r.res) * 4096);
	assert_true(r.wall_ns >= cfg.duration_ns);
	assert_true(r.res.elapsed_ns > 0 && r.res.elapsed_ns <= r.wall_ns);

	/* Each job on a clock of its own does a step's I/O at a time, and a stamp
	 * a batch, to the deadline: all four jobs' worth, not one job's. */
	r = run_faked(&cfg, &eng_null_ops);
	assert_true(total_ios(&r.res) >=
		    cfg.jobs * (cfg.duration_ns / FAKE_STEP_NS) * cfg.iodepth / (cfg.iodepth + 1) -
			    cfg.jobs * cfg.iodepth);
	assert_true(total_ios(&r.res) <= cfg.jobs * (cfg.duration_ns / FAKE_STEP_NS + cfg.iodepth));
	assert_faked_elapsed(&cfg, &r);
}

static void test_ramp_excluded(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 32, 2);
	struct run r;

	(void)state;
	cfg.ios = 50000;
	cfg.ramp_ns = 100 * MSEC;
	r = run_clean(&cfg, &eng_null_ops, target4m());
	assert_int_equal(total_ios(&r.res), cfg.ios); /* ramp I/Os (many) not counted */
	assert_true(r.wall_ns >= 100 * MSEC);
	assert_true(r.res.elapsed_ns < r.wall_ns - 90 * MSEC); /* measured after the ramp */

	/* duration + ramp: elapsed is the measured phase only. Every job's first
	 * batch goes out at the common start, in the ramp. */
	cfg.ios = 0;
	cfg.duration_ns = 200 * MSEC;
	r = run_once(&cfg, &eng_null_ops, target4m(), NULL);
	assert_int_equal(r.ret, 0);
	assert_true(r.wall_ns >= 300 * MSEC);
	assert_true(r.res.elapsed_ns <= r.wall_ns - 100 * MSEC);
	assert_true(r.res.dir[IO_READ].ramp_ios >= cfg.jobs);

	/* On the fake clock, to the I/O: the ramp's 100ms are not in elapsed, the
	 * whole 200ms after it are. */
	r = run_faked(&cfg, &eng_null_ops);
	assert_faked_elapsed(&cfg, &r);
	assert_true(r.res.dir[IO_READ].ramp_ios > 0 && r.res.dir[IO_READ].ios > 0);
}

/* ---------------------------------------------------------------- sync engine */

static void test_sync_randread_qd1(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 1, 1);
	struct run r;

	(void)state;
	cfg.ios = 2000;
	r = run_clean(&cfg, &eng_sync_ops, target4m());
	assert_one_way(&r, IO_READ, 2000, 4096);
}

/*
 * A read burst on an engine that completes inside submit() chains requests even
 * at depth 1 (one in flight all the same), and each I/O's latency is its own:
 * the rec engine's step, never the time since the batch's stamp. Writes go one
 * at a time.
 */
static void test_sync_chain(void **state)
{
	static const enum cfg_rw rws[] = {CFG_RW_RANDREAD, CFG_RW_READ, CFG_RW_RANDWRITE};

	(void)state;
	for (size_t k = 0; k < sizeof(rws) / sizeof(rws[0]); k++) {
		struct cfg_probe cfg = burst_cfg(rws[k], 4096, 1, 1);
		const int d = rws[k] == CFG_RW_RANDWRITE ? IO_WRITE : IO_READ;
		struct run r;

		cfg.ios = 1000;
		rec_reset(0);
		rec_step_ns = 3000;
		rec_max_batch = 0;
		r = run_clean(&cfg, &rec_ops, target4m());
		assert_int_equal(r.res.dir[d].ios, 1000);
		assert_int_equal(r.hist_count[d], 1000);
		assert_int_equal(r.hist_min[d], 3000);
		assert_int_equal(r.hist_max[d], 3000);
		if (d == IO_WRITE)
			assert_int_equal(rec_max_batch, 1);
		else
			assert_true(rec_max_batch > 1);
		rec_step_ns = 0;
		rec_done();
	}
}

/*
 * A chain of reads is watched request by request: the in-flight time a scrape
 * sees is the running request's start, never the chain's, so a target whose
 * every read is well within the timeout is never reported stuck. Every read of
 * the fake clock is one step; the oldest age seen is two (the batch stamp sees
 * the last chain's last request).
 */
static void test_sync_chain_inflight(void **state)
{
	const struct engine_ops *const engines[] = {&eng_null_ops, &eng_sync_ops};

	(void)state;
	for (size_t k = 0; k < sizeof(engines) / sizeof(engines[0]); k++) {
		struct cfg_probe cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 1, 1);
		struct probe_outcome out;
		struct probe p;
		struct run r;

		cfg.ios = 200;
		burst_on(&p, &out, &cfg, engines[k], target4m());
		fake_clock(100 * USEC, &p);
		r = run_probe(&p, &out, NULL);
		fake_step_ns = 0;
		fake_watch = NULL;
		burst_done(&p, &out);
		assert_int_equal(r.ret, 0);
		assert_clean(&r.res);
		assert_int_equal(r.res.dir[IO_READ].ios, 200);
		assert_int_equal(r.hist_max[IO_READ], 100 * USEC);
		assert_true(fake_max_age >= 100 * USEC);
		assert_true(fake_max_age <= 200 * USEC);
	}
}

/*
 * An I/O of an engine that completes inside submit() is never in flight when
 * the job looks: one slower than the timeout counts as a timeout when it
 * completes, and stops the burst, as one in flight that long would. Its latency
 * is recorded. The null engine ends its chain after a slow request; the rec
 * engine does not, and every late request of the chain counts.
 */
static void test_sync_timeout(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDWRITE, 4096, 1, 1);
	struct run r;

	(void)state;
	cfg.ios = 20;
	cfg.timeout_ns = 5 * MSEC;
	rec_reset(0);
	rec_step_ns = 10 * MSEC;
	r = run_once(&cfg, &rec_ops, target4m(), NULL);
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.res.timeouts, 1);
	assert_int_equal(r.res.error, -ETIMEDOUT);
	assert_false(r.res.stopped);
	assert_int_equal(r.res.dir[IO_WRITE].ios, 1);
	assert_int_equal(r.res.dir[IO_WRITE].errors, 0);

	cfg.rw = CFG_RW_RANDREAD; /* one chain of BURST_SYNC_CHAIN, all late */
	r = run_once(&cfg, &rec_ops, target4m(), NULL);
	assert_int_equal(r.res.timeouts, 16);
	assert_int_equal(r.res.error, -ETIMEDOUT);
	assert_int_equal(r.res.dir[IO_READ].ios, 16);
	rec_step_ns = 0;
	rec_done();

	/* The null engine, 10ms a request by the fake clock: the chain ends after the
	 * first. Under the timeout: none. */
	fake_clock(10 * MSEC, NULL);
	r = run_once(&cfg, &eng_null_ops, target4m(), NULL);
	assert_int_equal(r.res.timeouts, 1);
	assert_int_equal(r.res.error, -ETIMEDOUT);
	assert_int_equal(r.res.dir[IO_READ].ios, 1);
	fake_clock(4 * MSEC, NULL);
	r = run_once(&cfg, &eng_null_ops, target4m(), NULL);
	fake_step_ns = 0;
	assert_int_equal(r.ret, 0);
	assert_clean(&r.res);
	assert_int_equal(r.res.dir[IO_READ].ios, 20);
}

static void test_sync_randwrite(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDWRITE, 8192, 4, 2);
	struct run r;

	(void)state;
	cfg.ios = 2000;
	r = run_clean(&cfg, &eng_sync_ops, target4m());
	assert_one_way(&r, IO_WRITE, 2000, 8192);

	/* Sequential, both ways, by duration. */
	cfg = burst_cfg(CFG_RW_WRITE, 65536, 8, 2);
	cfg.duration_ns = 100 * MSEC;
	r = run_clean(&cfg, &eng_sync_ops, target4m());
	assert_true(r.res.dir[IO_WRITE].ios > 0);
	cfg.rw = CFG_RW_READ;
	r = run_clean(&cfg, &eng_sync_ops, target4m());
	assert_true(r.res.dir[IO_READ].ios > 0);
}

/* io_uring and libaio, where built and working: the same counts over engines that
 * really queue (completions out of order, reap waiting in the kernel). */
static void test_queueing_engines(void **state)
{
	static const char *const names[] = {"io_uring", "libaio"};

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct engine_ops *ops = eng_find(names[i]);
		struct cfg_probe cfg = burst_cfg(CFG_RW_RANDRW, 4096, 32, 2);
		struct run r;

		if (!ops || !eng_available(ops)) {
			print_message("%s: not built or not available here, not tested\n",
				      names[i]);
			continue;
		}
		cfg.ios = 20000;
		r = run_clean(&cfg, ops, target4m());
		assert_int_equal(total_ios(&r.res), 20000);
		assert_true(r.res.dir[IO_READ].ios > 0 && r.res.dir[IO_WRITE].ios > 0);

		/* To the deadline, measured after the ramp; the first batch goes out
		 * at the start, in the ramp, however late the job runs again. */
		cfg = burst_cfg(CFG_RW_READ, 65536, 8, 1);
		cfg.duration_ns = 200 * MSEC;
		cfg.ramp_ns = 50 * MSEC;
		r = run_clean(&cfg, ops, target4m());
		assert_true(r.res.dir[IO_READ].ramp_ios > 0);
		assert_true(r.wall_ns >= cfg.ramp_ns + cfg.duration_ns);
		assert_true(r.res.elapsed_ns <= r.wall_ns - cfg.ramp_ns); /* after the ramp */

		/* Paced over an engine whose reap waits in the kernel: never faster
		 * than asked, over the run or over the part of it measured (no ramp:
		 * elapsed runs from the start to the last completion). How close it
		 * comes to the rate is the machine's (test_rate: on the fake clock). */
		cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 16, 1);
		cfg.rate_iops = 1000;
		cfg.duration_ns = 500 * MSEC;
		r = run_clean(&cfg, ops, target4m());
		print_message("%s: rate 1000/s for 0.5s: %" PRIu64 " I/Os\n", names[i],
			      total_ios(&r.res));
		assert_true(total_ios(&r.res) > 0);
		assert_rate_cap(&cfg, total_ios(&r.res),
				min_u64(r.res.elapsed_ns, cfg.duration_ns));
	}
}

/* ---------------------------------------------------------------- offsets and sizes */

static void test_random_offsets(void **state)
{
	static const uint64_t sizes[] = {4096, 8192, 65536};
	struct target *t = target4m();

	(void)state;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (int wsi = 0; wsi < 2; wsi++) {
			struct cfg_probe cfg = burst_cfg(CFG_RW_RANDRW, sizes[s], 16, 2);
			uint64_t ws = wsi ? 256 * 1024 : t->data_end - t->data_start;
			uint64_t lo = UINT64_MAX, hi = 0;

			cfg.working_set = wsi ? ws : 0;
			cfg.ios = 20000;
			rec_reset(0);
			run_clean(&cfg, &rec_ops, t);
			assert_int_equal(rec_n, 20000);
			for (unsigned i = 0; i < rec_n; i++) {
				const struct rec_entry *e = &rec_log[i];

				assert_int_equal(e->len, sizes[s]);
				assert_int_equal(e->offset % t->offset_align, 0);
				assert_int_equal((e->offset - t->data_start) % sizes[s], 0);
				assert_true(e->offset >= t->data_start);
				assert_true(e->offset + e->len <= t->data_start + ws);
				lo = e->offset < lo ? e->offset : lo;
				hi = e->offset > hi ? e->offset : hi;
			}
			/* Uniform: both ends of the working set get hit. */
			assert_int_equal(lo, t->data_start);
			assert_int_equal(hi, t->data_start + ws / sizes[s] * sizes[s] - sizes[s]);
		}
	}
	rec_done();
}

static void test_bsrange(void **state)
{
	struct target *t = target4m();
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDRW, 4096, 32, 1);
	unsigned seen[5] = {0};
	uint64_t ws = 64 * 1024, bytes = 0;
	struct run r;

	(void)state;
	cfg.block_size_max = 16384;
	cfg.working_set = ws;
	cfg.ios = 20000;
	rec_reset(0);
	r = run_clean(&cfg, &rec_ops, t);
	assert_int_equal(rec_n, 20000);
	for (unsigned i = 0; i < rec_n; i++) {
		const struct rec_entry *e = &rec_log[i];

		assert_int_equal(e->len % 4096, 0);
		assert_true(e->len >= 4096 && e->len <= 16384);
		assert_int_equal((e->offset - t->data_start) % 4096, 0);
		assert_true(e->offset >= t->data_start);
		assert_true(e->offset + e->len <= t->data_start + ws);
		seen[e->len / 4096]++;
		bytes += e->len;
	}
	for (int k = 1; k <= 4; k++)
		assert_true(seen[k] > 4000 && seen[k] < 6000); /* uniform over the 4 sizes */
	assert_int_equal(r.res.dir[IO_READ].bytes + r.res.dir[IO_WRITE].bytes, bytes);
	rec_done();
}

/* Bytes of the writes the rec engine was handed. */
static uint64_t rec_written(void)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < rec_n; i++)
		n += rec_log[i].op == IO_WRITE ? rec_log[i].len : 0;
	return n;
}

/* A burst limited to @limit bytes of writes (@cfg over the rec engine) writes
 * no more, and ends there (write_limited), cleanly, less than a largest block
 * short of it and a batch of each other job (burst.c); what it wrote is the
 * bytes counted, ramp and measured. */
static struct run run_limited(const struct cfg_probe *cfg, uint64_t limit)
{
	struct run r;

	rec_reset(0);
	run_write_limit = limit;
	r = run_once(cfg, &rec_ops, target4m(), NULL);
	run_write_limit = UINT64_MAX;
	assert_int_equal(r.ret, 0);
	assert_clean(&r.res);
	assert_true(r.res.write_limited);
	assert_true(rec_written() <= limit);
	assert_true(rec_written() + cfg->block_size_max * (1 + (cfg->jobs - 1) * cfg->iodepth) >
		    limit);
	assert_int_equal(r.res.dir[IO_WRITE].bytes + r.res.dir[IO_WRITE].ramp_bytes, rec_written());
	rec_done();
	return r;
}

/*
 * A write limit (what is left of the day's budget, p->write_left): the jobs'
 * writes add up to the limit at most, never one I/O past it, whatever the
 * jobs, depth, sizes and mix, ramp included; the burst then ends without an
 * error, long before its duration or its 'ios'.
 * Reads are not limited, and without a limit nothing changes.
 */
static void test_write_limit(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDWRITE, 4096, 8, 4);
	struct run r;

	(void)state;
	/* 4 jobs of 8 I/Os of 4KiB. */
	cfg.duration_ns = 60000 * MSEC;
	r = run_limited(&cfg, MIB);
	assert_true(r.wall_ns < cfg.duration_ns);

	/* One job: exactly the limit. 'ios' not all issued for it: not the
	 * -ETIME of a burst too slow. */
	cfg = burst_cfg(CFG_RW_RANDWRITE, 4096, 8, 1);
	cfg.ios = 100000;
	r = run_limited(&cfg, MIB);
	assert_int_equal(r.res.dir[IO_WRITE].bytes, MIB);
	assert_int_equal(r.res.dir[IO_WRITE].ios, 256);

	/* Sizes 4k-64k among reads, 3 jobs, all of it in the ramp: the ramp's
	 * writes count against the limit as well (and are counted apart). */
	cfg = burst_cfg(CFG_RW_RANDRW, 4096, 4, 3);
	cfg.block_size_max = 65536;
	cfg.rwmix_read = 0.3;
	cfg.ramp_ns = 60000 * MSEC;
	cfg.duration_ns = 1000 * MSEC;
	r = run_limited(&cfg, 1000 * 1024);
	assert_int_equal(r.res.dir[IO_WRITE].ios, 0);
	assert_true(r.res.dir[IO_WRITE].ramp_ios > 0 && r.res.dir[IO_READ].ramp_ios > 0);

	/* A sequential walk, 2 jobs. */
	cfg = burst_cfg(CFG_RW_WRITE, 4096, 8, 2);
	cfg.block_size_max = 65536;
	cfg.ios = 100000;
	run_limited(&cfg, 3 * MIB + 5000);

	/* No limit: the run as asked. */
	cfg = burst_cfg(CFG_RW_RANDWRITE, 4096, 8, 4);
	cfg.ios = 1000;
	r = run_clean(&cfg, &eng_null_ops, target4m());
	assert_false(r.res.write_limited);
	assert_int_equal(r.res.dir[IO_WRITE].bytes, 1000 * 4096);

	/* Reads only: a limit of 0 holds nothing back. */
	cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 8, 2);
	cfg.ios = 1000;
	run_write_limit = 0;
	r = run_clean(&cfg, &eng_null_ops, target4m());
	run_write_limit = UINT64_MAX;
	assert_false(r.res.write_limited);
	assert_int_equal(r.res.dir[IO_READ].ios, 1000);
}

static void test_sequential(void **state)
{
	struct target *t = target4m();
	struct cfg_probe cfg = burst_cfg(CFG_RW_READ, 4096, 8, 2);
	uint64_t ws = 64 * 1024, part = ws / 2;
	pthread_t threads[2];
	uint64_t next[2] = {0}, first[2] = {0};
	unsigned nthreads = 0, per[2] = {0};
	struct run r;

	(void)state;
	cfg.working_set = ws;
	/* Paced, so that both jobs get going (by count, the first job up could
	 * issue them all before the second is scheduled), on the fake clock, so
	 * that each gets its share however the machine runs them: 500 I/Os each,
	 * many times round its 8 blocks. */
	cfg.duration_ns = 250 * MSEC;
	cfg.rate_iops = 4000;
	rec_reset(0);
	r = run_faked(&cfg, &rec_ops);
	assert_int_equal(rec_n, total_ios(&r.res));
	print_message("sequential: %u I/Os\n", rec_n);
	assert_true(rec_n > 900 && rec_n < 1100);
	for (unsigned i = 0; i < rec_n; i++) {
		const struct rec_entry *e = &rec_log[i];
		unsigned k;

		for (k = 0; k < nthreads; k++)
			if (pthread_equal(threads[k], e->thread))
				break;
		if (k == nthreads) {
			assert_true(nthreads < 2);
			threads[nthreads++] = e->thread;
			first[k] = e->offset;
			next[k] = e->offset;
			/* Each job starts at the start of its own half. */
			assert_int_equal((e->offset - t->data_start) % part, 0);
		}
		assert_int_equal(e->op, IO_READ);
		assert_int_equal(e->offset, next[k]);
		next[k] = e->offset + e->len;
		if (next[k] == first[k] + part)
			next[k] = first[k]; /* wraps within its region */
		per[k]++;
	}
	assert_int_equal(nthreads, 2);
	assert_int_not_equal(first[0], first[1]);
	assert_true(per[0] > 400 && per[1] > 400); /* each walked its region, wrapping */
	rec_done();
}

static void test_rwmix(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDRW, 4096, 32, 1);
	unsigned reads = 0;
	double frac;
	struct run r;

	(void)state;
	cfg.rwmix_read = 0.7;
	cfg.ios = 20000;
	rec_reset(0);
	r = run_clean(&cfg, &rec_ops, target4m());
	assert_int_equal(rec_n, 20000);
	for (unsigned i = 0; i < rec_n; i++)
		reads += rec_log[i].op == IO_READ;
	assert_int_equal(r.res.dir[IO_READ].ios, reads);
	assert_int_equal(r.res.dir[IO_WRITE].ios, 20000 - reads);
	frac = reads / 20000.0;
	assert_true(frac > 0.68 && frac < 0.72);
	/* Not alternation: some runs of 5+ reads and of 2+ writes. */
	{
		unsigned run_r = 0, max_r = 0, run_w = 0, max_w = 0;

		for (unsigned i = 0; i < rec_n; i++) {
			bool rd = rec_log[i].op == IO_READ;

			run_r = rd ? run_r + 1 : 0;
			run_w = rd ? 0 : run_w + 1;
			max_r = run_r > max_r ? run_r : max_r;
			max_w = run_w > max_w ? run_w : max_w;
		}
		assert_true(max_r >= 5 && max_w >= 2);
	}

	/* The extremes. */
	cfg.rwmix_read = 1.0;
	cfg.ios = 2000;
	rec_reset(0);
	r = run_once(&cfg, &rec_ops, target4m(), NULL);
	assert_int_equal(r.res.dir[IO_READ].ios, 2000);
	cfg.rwmix_read = 0.0;
	r = run_once(&cfg, &rec_ops, target4m(), NULL);
	assert_int_equal(r.res.dir[IO_WRITE].ios, 2000);
	rec_done();
}

/* ---------------------------------------------------------------- write data */

static void test_write_data_random(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDWRITE, 4096, 8, 1);
	uint64_t hist[256] = {0};
	double chi2 = 0, expect;
	unsigned pairs = 0;

	(void)state;
	cfg.working_set = 4 * 4096; /* four slots: many rewrites of the same block */
	cfg.ios = 256;		    /* 1MiB written */
	rec_reset(MIB);
	run_clean(&cfg, &rec_ops, target4m());
	assert_int_equal(rec_capture_len, MIB);

	/* Byte histogram chi-square, 255 degrees of freedom: mean 255, sd ~22.6;
	 * zeros or text or a repeated block land in the tens of thousands. */
	for (size_t i = 0; i < rec_capture_len; i++)
		hist[rec_capture[i]]++;
	expect = rec_capture_len / 256.0;
	for (int v = 0; v < 256; v++)
		chi2 += (hist[v] - expect) * (hist[v] - expect) / expect;
	print_message("write data: chi-square %.1f over 1MiB (255 dof)\n", chi2);
	assert_true(chi2 < 400);

	/* No two writes carry the same block, least of all two to the same offset. */
	for (unsigned i = 0; i < rec_n; i++)
		for (unsigned k = i + 1; k < rec_n; k++) {
			if (rec_log[i].offset == rec_log[k].offset)
				pairs++;
			assert_memory_not_equal(rec_capture + rec_log[i].data,
						rec_capture + rec_log[k].data, 4096);
		}
	assert_true(pairs > 1000);
	rec_done();
}

/* Written data reaches the file: the probe file's blocks change under a write burst. */
static void test_sync_write_lands(void **state)
{
	struct tu_dir_target f;
	struct cfg_probe cfg = burst_cfg(CFG_RW_WRITE, 4096, 1, 1);
	unsigned char *before = malloc(64 * 1024), *after = malloc(64 * 1024);
	struct run r;
	int fd;

	(void)state;
	assert_non_null(before);
	assert_non_null(after);
	tu_open_dir_target(&f, MIB);
	fd = open(f.t.file_path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, before, 64 * 1024, (off_t)f.t.data_start), 64 * 1024);
	cfg.working_set = 64 * 1024;
	cfg.ios = 16; /* exactly the working set, sequentially */
	r = run_clean(&cfg, &eng_sync_ops, &f.t);
	assert_int_equal(r.res.dir[IO_WRITE].ios, 16);
	assert_int_equal(pread(fd, after, 64 * 1024, (off_t)f.t.data_start), 64 * 1024);
	for (int blk = 0; blk < 16; blk++)
		assert_memory_not_equal(before + blk * 4096, after + blk * 4096, 4096);
	close(fd);
	target_close(&f.t);
	free(before);
	free(after);
}

/* ---------------------------------------------------------------- rate */

static void test_rate(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 32, 1);
	struct run r;

	(void)state;
	/* On the fake clock the pacer has all the time it wants: the rate, to
	 * within an I/O or two. */
	cfg.rate_iops = 2000;
	cfg.duration_ns = 1000 * MSEC;
	r = run_faked(&cfg, &eng_null_ops);
	print_message("rate 2000/s for 1s: %" PRIu64 " I/Os\n", total_ios(&r.res));
	assert_true(total_ios(&r.res) >= 1900 && total_ios(&r.res) <= 2100);
	/* On the real one, never faster than asked, whatever the machine does. */
	cfg.duration_ns = 300 * MSEC;
	r = run_clean(&cfg, &eng_null_ops, target4m());
	assert_true(total_ios(&r.res) > 0);
	assert_rate_cap(&cfg, total_ios(&r.res), min_u64(r.res.elapsed_ns, cfg.duration_ns));

	/* Split over jobs, with a ramp (paced too, not counted). */
	cfg.jobs = 3;
	cfg.rate_iops = 3000;
	cfg.ramp_ns = 100 * MSEC;
	cfg.duration_ns = 500 * MSEC;
	r = run_faked(&cfg, &eng_null_ops);
	print_message("rate 3000/s over 3 jobs for 0.5s: %" PRIu64 " I/Os\n", total_ios(&r.res));
	assert_true(total_ios(&r.res) >= 1425 && total_ios(&r.res) <= 1575);
	assert_true(r.res.dir[IO_READ].ramp_ios >= 285 && r.res.dir[IO_READ].ramp_ios <= 315);
	/* The real clock: a ramp that fell behind may catch up after it, so the cap
	 * is over the whole run; each job's first slot is due in the ramp. */
	r = run_clean(&cfg, &eng_null_ops, target4m());
	assert_true(r.res.dir[IO_READ].ramp_ios + total_ios(&r.res) >= cfg.jobs);
	assert_rate_cap(&cfg, r.res.dir[IO_READ].ramp_ios + total_ios(&r.res),
			cfg.ramp_ns + cfg.duration_ns);

	/* Fewer I/Os per second than jobs: still the cap over all of them (the
	 * jobs take turns, one I/O every 0.5s in all), not one per job and second. */
	cfg.jobs = 8;
	cfg.rate_iops = 2;
	cfg.ramp_ns = 0;
	cfg.duration_ns = 900 * MSEC;
	r = run_clean(&cfg, &eng_null_ops, target4m());
	print_message("rate 2/s over 8 jobs for 0.9s: %" PRIu64 " I/Os\n", total_ios(&r.res));
	assert_true(total_ios(&r.res) >= 1 && total_ios(&r.res) <= 2);
}

/* 'ios' that cannot be done before the burst is due again (a device slower than
 * the rate, or no rate): the burst stops at 'every' less 'ramp' and says why,
 * rather than holding its target for good. */
static void test_ios_cut_short(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 4, 2);
	static const char tail[] = "'ios' issued: a burst ends before it is due again ('every' "
				   "less 'ramp') and within 10m; lower 'ios'";
	struct run r;

	(void)state;
	cfg.ios = 1000;
	cfg.rate_iops = 100; /* 10s of them */
	cfg.ramp_ns = 100 * MSEC;
	cfg.interval_ns = 400 * MSEC;
	r = run_once(&cfg, &eng_null_ops, target4m(), NULL);
	assert_int_equal(r.ret, 0);
	print_message("ios cut short after %.0f ms: %" PRIu64 " I/Os\n", r.wall_ns / 1e6,
		      total_ios(&r.res));
	assert_true(r.wall_ns >= 400 * MSEC); /* ramp + 'every' less 'ramp' */
	assert_int_equal(r.res.error, -ETIME);
	assert_false(r.res.stopped);
	/* Never more than the slots due by then (a ramp that fell behind may catch
	 * up after it), each job's first among them: how many fewer is the
	 * machine's. */
	assert_true(total_ios(&r.res) + r.res.dir[IO_READ].ramp_ios >= cfg.jobs);
	assert_rate_cap(&cfg, total_ios(&r.res) + r.res.dir[IO_READ].ramp_ios, 400 * MSEC);
	assert_true(strncmp(r.why, "stopped after 300ms with ", 25) == 0);

	/* The same on the fake clock, where the jobs keep to the rate: 30 slots of
	 * the 300ms measured. */
	fake_clock(FAKE_STEP_NS, NULL); /* target4m() is open: no layout on it */
	r = run_once(&cfg, &eng_null_ops, target4m(), NULL);
	fake_step_ns = 0;
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.res.error, -ETIME);
	assert_true(total_ios(&r.res) >= 20 && total_ios(&r.res) <= 40);
	assert_true(strncmp(r.why, "stopped after 300ms with ", 25) == 0);
	assert_non_null(strstr(r.why, " of its 1000 "));
	assert_true(strlen(r.why) > strlen(tail));
	assert_string_equal(r.why + strlen(r.why) - strlen(tail), tail);

	/* No rate: as many as the device does in that time, never a billion. */
	cfg.ios = CFG_MAX_IOS;
	cfg.rate_iops = 0;
	r = run_once(&cfg, &eng_null_ops, target4m(), NULL);
	assert_int_equal(r.ret, 0);
	assert_true(r.wall_ns >= 400 * MSEC);
	assert_int_equal(r.res.error, -ETIME);
	/* Each job's first batch goes out at the start, in the ramp. */
	assert_true(r.res.dir[IO_READ].ramp_ios >= cfg.jobs && total_ios(&r.res) < CFG_MAX_IOS);
	assert_non_null(strstr(r.why, " of its 1000000000 'ios' issued: "));
	assert_non_null(strstr(r.why, "; lower 'ios' or set 'rate_iops'"));

	/* Within the time: no complaint. */
	cfg.ios = 20;
	cfg.rate_iops = 100;
	r = run_once(&cfg, &eng_null_ops, target4m(), NULL);
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.res.error, 0);
	assert_int_equal(total_ios(&r.res), 20);
	assert_string_equal(r.why, "");
}

/* ---------------------------------------------------------------- refusals */

/* What a run of @cfg, with 100 I/Os, on @t returns. */
static int run_100(struct cfg_probe cfg, struct target *t)
{
	cfg.ios = 100;
	return run_once(&cfg, &eng_null_ops, t, NULL).ret;
}

/* What probe_init() says to @cfg. */
static int init_refusal(const struct cfg_probe *cfg)
{
	struct probe p;
	int r = probe_init(&p, cfg, target4m(), bounds, N_BOUNDS);

	probe_free(&p);
	return r;
}

static void test_refusals(void **state)
{
	struct target *t = target4m();
	struct cfg_probe cfg;
	struct tu_dir_target ro;
	struct run r;
	char path[PATH_MAX];
	int fd;

	(void)state;
	/* A write burst on a file target (read-only): -EBADF, nothing written. */
	assert_true(snprintf(path, sizeof(path), "%s/data.bin", tu_scratch) < (int)sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	{
		static unsigned char blk[65536];

		memset(blk, 0xa5, sizeof(blk));
		for (int i = 0; i < 16; i++)
			assert_int_equal(write(fd, blk, sizeof(blk)), sizeof(blk));
	}
	close(fd);
	ro.tcfg = (struct cfg_target){
		.name = "f", .kind = CFG_TARGET_FILE, .path = path, .direct = true};
	target_init(&ro.t, &ro.tcfg);
	assert_int_equal(target_open(&ro.t), 0);
	assert_false(ro.t.writable);
	for (int rw = CFG_RW_RANDREAD; rw <= CFG_RW_WRITE; rw++) {
		cfg = burst_cfg((enum cfg_rw)rw, 4096, 4, 1);
		cfg.ios = 100;
		r = run_once(&cfg, &eng_null_ops, &ro.t, NULL);
		if (rw == CFG_RW_RANDREAD || rw == CFG_RW_READ) {
			assert_int_equal(r.ret, 0);
			assert_int_equal(r.res.dir[IO_READ].ios, 100);
		} else {
			assert_int_equal(r.ret, -EBADF);
			assert_int_equal(total_ios(&r.res), 0);
		}
	}
	target_close(&ro.t);

	/* Block size not a multiple of the offset alignment. */
	cfg = burst_cfg(CFG_RW_RANDREAD, t->offset_align * 3 / 2, 4, 1);
	assert_int_equal(run_100(cfg, t), -EINVAL);
	/* The smallest of a range decides. */
	cfg.block_size_max = t->offset_align * 8;
	assert_int_equal(run_100(cfg, t), -EINVAL);
	/* Working set smaller than the largest block, or larger than the target. */
	cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 4, 1);
	cfg.block_size_max = 65536;
	cfg.working_set = 32768;
	assert_int_equal(run_100(cfg, t), -EINVAL);
	cfg.working_set = t->data_end - t->data_start + 4096;
	assert_int_equal(run_100(cfg, t), -EINVAL);
	/* Sequential parts smaller than a block. */
	cfg = burst_cfg(CFG_RW_READ, 65536, 4, 4);
	cfg.working_set = 131072;
	assert_int_equal(run_100(cfg, t), -EINVAL);
	/* A target needing more buffer alignment than we give. */
	{
		struct target t2 = *t;

		t2.mem_align = 8192;
		assert_int_equal(run_100(burst_cfg(CFG_RW_RANDREAD, 4096, 4, 1), &t2), -EINVAL);
	}
}

/* What set-up refuses: a value out of range, buffers beyond the limit. */
static void test_init_refusals(void **state)
{
	struct cfg_probe cfg;

	(void)state;
	cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 0, 1);
	cfg.ios = 1;
	assert_int_equal(init_refusal(&cfg), -EINVAL);
	cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 4, 1); /* neither ios nor duration */
	assert_int_equal(init_refusal(&cfg), -EINVAL);
	cfg = burst_cfg(CFG_RW_RANDREAD, 8192, 4, 1);
	cfg.block_size_max = 4096;
	cfg.ios = 1;
	assert_int_equal(init_refusal(&cfg), -EINVAL);
	cfg = burst_cfg(CFG_RW_RANDREAD, 16 * MIB, 256, 64);
	cfg.ios = 1;
	assert_int_equal(init_refusal(&cfg), -E2BIG);
	/* The configuration's limit, to the byte: 16 x 16MiB = 256MiB, not 17. */
	cfg = burst_cfg(CFG_RW_RANDREAD, 16 * MIB, 17, 1);
	cfg.ios = 1;
	assert_int_equal(init_refusal(&cfg), -E2BIG);
	cfg.iodepth = 16;
	assert_int_equal(init_refusal(&cfg), 0);
}

/* What a run of @cfg (100 I/Os) on @t says: its return, and why in words in
 * @why ("" when the outcome says none). */
static int run_why(struct cfg_probe cfg, struct target *t, char *why, size_t len)
{
	struct run r;

	cfg.ios = 100;
	r = run_once(&cfg, &eng_null_ops, t, NULL);
	snprintf(why, len, "%s", r.why);
	return r.ret;
}

#define assert_why(cfg, t, err, msg)                                                               \
	do {                                                                                       \
		char why_[512];                                                                    \
		assert_int_equal(run_why((cfg), (t), why_, sizeof(why_)), (err));                  \
		assert_string_equal(why_, (msg));                                                  \
	} while (0)

/* What can only fail once the target is open (its size, its alignment) says why
 * in words, naming the key and the figures: never just "Invalid argument". */
static void test_refusal_reasons(void **state)
{
	struct target *t = target4m();
	struct target small = *t, t4k = *t, tmem = *t, ro = *t;
	struct cfg_probe cfg;

	(void)state;
	small.data_end = small.data_start + MIB; /* a 1MiB file, say */
	t4k.offset_align = 4096;		 /* a 4Kn disk */
	tmem.mem_align = 8192;
	ro.writable = false;

	/* The run that works says nothing. */
	assert_why(burst_cfg(CFG_RW_RANDREAD, 4096, 4, 1), t, 0, "");

	/* 2 sequential jobs, blocks up to 1MiB, 1MiB: each job's half is short of a block. */
	cfg = burst_cfg(CFG_RW_READ, 4096, 4, 2);
	cfg.block_size_max = MIB;
	assert_why(cfg, &small, -EINVAL,
		   "with 'rw: read' each of the 2 'jobs' walks its own part of the working set "
		   "(1MiB), and a part (512KiB) is smaller than the largest 'block_size' (1MiB)");
	/* One job would do (so would 2MiB). */
	cfg.jobs = 1;
	assert_why(cfg, &small, 0, "");
	cfg.jobs = 2;
	cfg.working_set = 2 * MIB;
	assert_why(cfg, t, 0, "");

	/* Alignment the configuration cannot know. */
	assert_why(burst_cfg(CFG_RW_RANDREAD, 512, 4, 1), &t4k, -EINVAL,
		   "'block_size' (512) is not a multiple of the target's direct I/O alignment "
		   "(4KiB)");
	cfg = burst_cfg(CFG_RW_RANDREAD, 2048, 4, 1);
	cfg.block_size_max = 8192;
	assert_why(cfg, &t4k, -EINVAL,
		   "the smallest 'block_size' (2KiB) is not a multiple of the target's direct "
		   "I/O alignment (4KiB)");
	assert_why(burst_cfg(CFG_RW_RANDREAD, 4096, 4, 1), &tmem, -EINVAL,
		   "the target needs I/O buffers aligned to 8192 bytes, more than the 4KiB "
		   "bursts align them to");

	/* Sizes the configuration cannot know (a file's, a device's). */
	cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 4, 1);
	cfg.working_set = 2 * MIB;
	assert_why(cfg, &small, -EINVAL, "'working_set' (2MiB) is larger than the target (1MiB)");
	assert_why(burst_cfg(CFG_RW_RANDREAD, 2 * MIB, 4, 1), &small, -EINVAL,
		   "the target (1MiB) is smaller than 'block_size' (2MiB)");
	cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 4, 1);
	cfg.block_size_max = 64 * 1024;
	cfg.working_set = 32 * 1024;
	assert_why(cfg, t, -EINVAL,
		   "'working_set' (32KiB) is smaller than the largest 'block_size' (64KiB)");

	/* Writes on a read-only target. */
	assert_why(burst_cfg(CFG_RW_RANDRW, 4096, 4, 1), &ro, -EBADF,
		   "'rw: randrw' writes, and the target is read-only");
}

/* ---------------------------------------------------------------- buffers */

/* Resident memory of the process, from /proc/self/statm. */
static uint64_t rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%lu %lu", &size, &resident), 2);
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* peek: the rec engine, looking at the process's resident memory when a job
 * sets up its engine (before the clock starts). */
static uint64_t peek_rss_base;
static _Atomic uint64_t peek_rss;

static int peek_init(struct engine *e, int fd, unsigned depth)
{
	atomic_store(&peek_rss, rss_bytes() - peek_rss_base);
	return rec_init(e, fd, depth);
}

static const struct engine_ops peek_ops = REC_OPS("peek", peek_init);

/* A burst holds its buffers only while it runs: none once set up or between
 * runs (whatever its schedule), all of them, resident, before the clock
 * starts. Checked with the process's resident size (64MiB of buffers against a
 * 16MiB allowance for everything else). */
static void test_buffers_per_run(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDWRITE, 256 * 1024, 64, 4);
	const uint64_t want = 4ULL * 64 * 256 * 1024, slack = 16 * MIB;
	struct probe_outcome out;
	struct probe p;
	uint64_t base;

	(void)state;
	assert_int_equal(cfg_burst_buffer_bytes(&cfg), want);
	cfg.ios = 1000;
	target4m();
	rec_reset(0);
	base = rss_bytes();
	burst_on(&p, &out, &cfg, &peek_ops, target4m());
	assert_true(rss_bytes() < base + slack);
	peek_rss_base = base;

	for (int i = 0; i < 2; i++) {
		struct run r;

		atomic_store(&peek_rss, 0);
		r = run_probe(&p, &out, NULL);
		assert_int_equal(r.ret, 0);
		assert_int_equal(r.res.dir[IO_WRITE].ios, 1000);
		assert_int_equal(r.res.error, 0);
		/* During the run, before the clock: all of them, faulted in. */
		assert_true(atomic_load(&peek_rss) >= want);
		/* After: none. */
		assert_true(rss_bytes() < base + slack);
	}
	burst_done(&p, &out);
	rec_done();
}

/* ---------------------------------------------------------------- errors */

static int fail_init(struct engine *e, int fd, unsigned depth)
{
	(void)e;
	(void)fd;
	(void)depth;
	return -ENOSYS;
}

static const struct engine_ops fail_ops = REC_OPS("fail", fail_init);

static void test_errors(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 8, 2);
	struct run r;

	(void)state;
	/* I/O errors and short transfers are counted; the burst goes on. */
	cfg.ios = 10000;
	rec_reset(0);
	atomic_store(&rec_seq, 0);
	rec_eio_every = 10;
	rec_short_every = 7;
	r = run_once(&cfg, &rec_ops, target4m(), NULL);
	rec_eio_every = rec_short_every = 0;
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.res.error, 0);
	assert_int_equal(r.res.dir[IO_READ].errors, 1000);
	assert_int_equal(r.res.dir[IO_READ].ios, 9000);
	/* every 7th, less those that were every 70th (errors instead) */
	assert_int_equal(r.res.dir[IO_READ].short_ios, 10000 / 7 - 10000 / 70);
	assert_int_equal(r.res.dir[IO_READ].bytes,
			 9000ULL * 4096 - r.res.dir[IO_READ].short_ios * 2048);

	/* -EINVAL from submit is a setup problem: the burst stops with it. */
	cfg.ios = 0;
	cfg.duration_ns = 5000 * MSEC;
	atomic_store(&rec_seq, 0);
	rec_submit_einval_after = 500;
	r = run_once(&cfg, &rec_ops, target4m(), NULL);
	rec_submit_einval_after = 0;
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.res.error, -EINVAL);
	assert_int_equal(total_ios(&r.res), 500); /* nothing after it: it stopped there */
	/* Stopped there, not at its deadline: half the duration is ages for 500 I/Os. */
	assert_true(r.wall_ns < cfg.duration_ns / 2);
	rec_done();

	/* An engine that cannot start: the run says so, every job cleans up. */
	cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 8, 4);
	cfg.ios = 100;
	r = run_once(&cfg, &fail_ops, target4m(), NULL);
	assert_int_equal(r.ret, -ENOSYS);
	assert_int_equal(total_ios(&r.res), 0);
}

/* ---------------------------------------------------------------- stop and timeouts */

struct stopper {
	_Atomic bool *flag;
	uint64_t after_ns;
	_Atomic uint64_t stopped_ns; /* now_ns() just before it set *flag */
};

/* The null engine, counting what it is given: test_stop stops a burst only
 * once it has issued I/O, however long a busy machine takes to start it. */
static _Atomic unsigned long counted_submits;
static struct engine_ops counting_ops;

static int counting_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	int r = eng_null_ops.submit(e, reqs, n);

	if (r > 0)
		atomic_fetch_add(&counted_submits, (unsigned long)r);
	return r;
}

static void *stop_later(void *arg)
{
	struct stopper *s = arg;
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)s->after_ns};
	const struct timespec tick = {.tv_sec = 0, .tv_nsec = 1000000};

	nanosleep(&ts, NULL);
	for (int i = 0; i < 60000 && !atomic_load(&counted_submits); i++)
		nanosleep(&tick, NULL); /* 60 s at most: a ceiling, not a timing */
	atomic_store(&s->stopped_ns, now_ns());
	atomic_store(s->flag, true);
	return NULL;
}

static void test_stop(void **state)
{
	static const uint64_t rates[] = {0, 10}; /* flat out, and asleep between slots */

	(void)state;
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		struct cfg_probe cfg = burst_cfg(CFG_RW_RANDRW, 4096, 32, 2);
		_Atomic bool stop = false;
		struct stopper s = {.flag = &stop, .after_ns = 100 * MSEC};
		pthread_t th;
		uint64_t end;
		struct run r;

		cfg.duration_ns = 10000 * MSEC;
		cfg.rate_iops = rates[i];
		counting_ops = eng_null_ops;
		counting_ops.submit = counting_submit;
		atomic_store(&counted_submits, 0);
		assert_int_equal(pthread_create(&th, NULL, stop_later, &s), 0);
		r = run_once(&cfg, &counting_ops, target4m(), &stop);
		end = now_ns();
		pthread_join(th, NULL);
		assert_int_equal(r.ret, 0);
		print_message("stop (rate %" PRIu64 "): returned after %.0f ms\n", rates[i],
			      r.wall_ns / 1e6);
		assert_true(r.res.stopped);
		assert_int_equal(r.res.error, 0);
		/* Not before the stop. How soon after it depends on the machine, not
		 * the code. */
		assert_true(atomic_load(&s.stopped_ns) != 0 && end >= atomic_load(&s.stopped_ns));
		assert_true(r.wall_ns < cfg.duration_ns / 2); /* at the stop, not the deadline */
		assert_true(total_ios(&r.res) > 0);
	}
}

static void test_timeout(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 1, 1);
	struct run r;

	(void)state;
	cfg.duration_ns = 10000 * MSEC;
	cfg.timeout_ns = 50 * MSEC;
	hang_cancel_works = true;
	atomic_store(&hang_cancels, 0);
	r = run_once(&cfg, &hang_ops, target4m(), NULL);
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.res.timeouts, 1);
	assert_int_equal(r.res.error, -ETIMEDOUT);
	assert_false(r.res.stopped);
	assert_int_equal(total_ios(&r.res), 0);
	assert_int_equal(r.res.dir[IO_READ].errors, 0); /* our cancel, not the device */
	assert_true(atomic_load(&hang_cancels) >= 1);	/* cancelled, not waited out */
	assert_true(r.wall_ns >= 50 * MSEC);
	assert_true(r.wall_ns < cfg.duration_ns / 2); /* at the timeout, not the deadline */

	/* Every I/O of a full queue timed out; all jobs stop. */
	cfg.iodepth = 4;
	cfg.jobs = 2;
	r = run_once(&cfg, &hang_ops, target4m(), NULL);
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.res.timeouts, 8);
	assert_int_equal(r.res.error, -ETIMEDOUT);
	assert_true(r.wall_ns < cfg.duration_ns / 2);
}

/* Cancel does nothing: the I/O stays in the "kernel". The run still returns
 * promptly, and the I/O it abandoned is still in flight. The burst cannot run
 * again with its buffers in the kernel's hands: the next run goes on a fresh
 * one, which the probe keeps from then on (the old one is kept for good). */
static void test_timeout_wedged(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDWRITE, 4096, 2, 1);
	struct probe_outcome out;
	struct probe p;
	uint64_t start, since;
	void *old;
	struct run r;

	(void)state;
	cfg.duration_ns = 10000 * MSEC;
	cfg.timeout_ns = 50 * MSEC;
	hang_cancel_works = false;
	burst_on(&p, &out, &cfg, &hang_ops, target4m());
	start = now_ns();
	r = run_probe(&p, &out, NULL);
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.res.timeouts, 2);
	assert_int_equal(r.res.error, -ETIMEDOUT); /* returned at all: abandoned, not waited */
	assert_true(r.wall_ns < cfg.duration_ns / 2);
	/* The abandoned I/O is still "in flight". */
	since = probe_inflight_since(&p);
	assert_true(since >= start && since <= start + r.wall_ns);
	old = p.state;
	start = now_ns();
	r = run_probe(&p, &out, NULL);
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.res.timeouts, 2);
	assert_ptr_not_equal(p.state, old);
	since = probe_inflight_since(&p);
	assert_true(since >= start && since <= start + r.wall_ns);
	burst_done(&p, &out);
	hang_cancel_works = true;
}

struct bg_run {
	struct probe *p;
	struct probe_outcome *out;
	const _Atomic bool *stop;
	int ret;
};

static void *run_bg(void *arg)
{
	struct bg_run *bg = arg;

	bg->ret = bg->p->ops->run(bg->p, bg->stop, bg->out);
	return NULL;
}

/* While I/O hangs, the burst shows when the oldest of it went out: a time of
 * this run, once its jobs are up (however long a busy machine takes to run
 * them: a minute at most), until it ends. The timeout is far off, the stop
 * ends it. */
static void test_inflight_since(void **state)
{
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 4, 3);
	_Atomic bool stop = false;
	const struct timespec tick = {.tv_nsec = 1000000};
	struct probe_outcome out;
	struct probe p;
	struct bg_run bg = {.p = &p, .out = &out, .stop = &stop};
	pthread_t th;
	uint64_t start, since = 0;

	(void)state;
	cfg.duration_ns = 600000 * MSEC;
	cfg.timeout_ns = 600000 * MSEC;
	hang_cancel_works = true;
	burst_on(&p, &out, &cfg, &hang_ops, target4m());
	assert_int_equal(probe_inflight_since(&p), 0);
	start = now_ns();
	assert_int_equal(pthread_create(&th, NULL, run_bg, &bg), 0);
	for (unsigned i = 0; i < 60000 && !(since = probe_inflight_since(&p)); i++)
		nanosleep(&tick, NULL);
	assert_true(since >= start && since <= now_ns());
	atomic_store(&stop, true);
	pthread_join(th, NULL);
	assert_int_equal(bg.ret, 0);
	assert_true(out.incomplete);
	assert_int_equal(probe_inflight_since(&p), 0);
	burst_done(&p, &out);
}

/* ---------------------------------------------------------------- calibration */

/* Not a check: the null engine's rate at QD32, one job, i.e. our own per-I/O cost
 * (plus the null engine's, which reads the clock per request). */
static void test_null_rate_report(void **state)
{
	static const enum cfg_rw rws[] = {CFG_RW_RANDREAD, CFG_RW_READ, CFG_RW_RANDWRITE};
	static const char *const names[] = {"randread", "read", "randwrite"};

	(void)state;
	for (size_t i = 0; i < sizeof(rws) / sizeof(rws[0]); i++) {
		struct cfg_probe cfg = burst_cfg(rws[i], 4096, 32, 1);
		struct timespec c0, c1;
		double cpu;
		struct run r;

		cfg.duration_ns = 500 * MSEC;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
		r = run_once(&cfg, &eng_null_ops, target4m(), NULL);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
		cpu = (double)(c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) / 1e9;
		assert_int_equal(r.ret, 0);
		print_message("null engine, %s 4k QD32, 1 job: %.2f M I/Os per second, "
			      "%.2f M per CPU-second\n",
			      names[i], total_ios(&r.res) / (r.res.elapsed_ns / 1e9) / 1e6,
			      total_ios(&r.res) / cpu / 1e6);
	}
}

/* The null engine, counting submits by the I/O priority of the thread that made
 * them, apart for the test's own thread (job 0's) and the job threads. */
static pthread_mutex_t prio_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t prio_main;
static unsigned prio_main_want, prio_main_other, prio_jobs_want, prio_jobs_other;
static int prio_main_is, prio_jobs_is;

static int prio_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	const int now = ioprio_thread_get();
	const bool main_thread = pthread_equal(pthread_self(), prio_main);

	unsigned *count;

	if (main_thread)
		count = now == prio_main_is ? &prio_main_want : &prio_main_other;
	else
		count = now == prio_jobs_is ? &prio_jobs_want : &prio_jobs_other;
	pthread_mutex_lock(&prio_mu);
	(*count)++;
	pthread_mutex_unlock(&prio_mu);
	return eng_null_ops.submit(e, reqs, n);
}

static int prio_init(struct engine *e, int fd, unsigned depth)
{
	(void)e;
	(void)fd;
	(void)depth;
	return 0;
}

/* A burst's job threads take its 'io_priority' themselves: not inherited from
 * the caller's thread, which probe_run() sets for job 0 (not the row's run). */
static void test_io_priority_jobs(void **state)
{
	static const struct engine_ops prio_ops = {
		.name = "prio",
		.flags = ENGINE_F_SYNC,
		.init = prio_init,
		.submit = prio_submit,
		.reap = eng_sync_reap,
		.cancel = eng_sync_cancel,
		.cleanup = eng_sync_cleanup,
	};
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 4, 3);
	struct run r;

	(void)state;
	cfg.duration_ns = 100 * MSEC; /* by time: 'ios' could all go to the job threads */
	assert_int_equal(ioprio_parse("idle", &cfg.io_priority), 0);
	prio_main = pthread_self();
	prio_main_is = ioprio_thread_get();
	prio_jobs_is = cfg.io_priority;
	assert_true(prio_main_is >= 0 && prio_main_is != prio_jobs_is);
	r = run_once(&cfg, &prio_ops, target4m(), NULL);
	assert_int_equal(r.ret, 0);
	assert_true(prio_main_want > 0);
	assert_true(prio_jobs_want > 0);
	assert_int_equal(prio_main_other, 0);
	assert_int_equal(prio_jobs_other, 0);
	assert_int_equal(ioprio_thread_get(), prio_main_is);
}

/*
 * bump: the null engine, but each batch it takes makes the fake /proc say
 * that the thread waited bump_step_ns more for a CPU (cpu_wait.h): every job
 * reads the same file, so each sees the others' bumps too; the figures below
 * hold whatever the order.
 */
static char bump_root[PATH_MAX];
static _Atomic uint64_t bump_wait_ns;
static uint64_t bump_step_ns;
static pthread_mutex_t bump_mu = PTHREAD_MUTEX_INITIALIZER;

static int bump_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	pthread_mutex_lock(&bump_mu); /* one writer of the file at a time */
	tu_fake_wait(bump_root, atomic_fetch_add(&bump_wait_ns, bump_step_ns) + bump_step_ns);
	pthread_mutex_unlock(&bump_mu);
	return eng_null_ops.submit(e, reqs, n);
}

/* A burst's run counts its jobs' CPU wait and their time; a run whose jobs
 * waited more than half of it is marked cpu_bound (the baseline leaves it
 * out); with the figure hidden, nothing is known and nothing marked. */
static void test_cpu_wait(void **state)
{
	struct engine_ops bump_ops = eng_null_ops;
	struct cfg_probe cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 4, 1);
	struct probe_outcome out;
	char hidden[PATH_MAX];
	struct probe p;

	(void)state;
	bump_ops.submit = bump_submit;
	cfg.ios = 2000;
	tu_fake_proc(bump_root, sizeof(bump_root), 0);
	assert_int_equal(cpu_wait_setup(bump_root), 0);

	/* No wait: known, 0, not CPU-bound. */
	bump_step_ns = 0;
	burst_on(&p, &out, &cfg, &bump_ops, target4m());
	assert_int_equal(run_probe(&p, &out, NULL).ret, 0);
	assert_true(out.cpu_wait_known);
	assert_int_equal(out.cpu_wait_ns, 0);
	assert_true(out.cpu_thread_ns > 0);
	assert_false(out.cpu_bound);

	/* A second of wait per batch: more than the run took, which is all of it. */
	bump_step_ns = 1000 * MSEC;
	assert_int_equal(run_probe(&p, &out, NULL).ret, 0);
	assert_true(out.cpu_wait_known);
	assert_int_equal(out.cpu_wait_ns, out.cpu_thread_ns);
	assert_true(out.cpu_bound);
	burst_done(&p, &out);

	/* Three jobs, two on threads of their own: every one measured, summed. */
	cfg = burst_cfg(CFG_RW_RANDREAD, 4096, 4, 3);
	cfg.duration_ns = 50 * MSEC; /* by time: each job submits, each sees a bump */
	burst_on(&p, &out, &cfg, &bump_ops, target4m());
	assert_int_equal(run_probe(&p, &out, NULL).ret, 0);
	assert_true(out.cpu_wait_known);
	assert_int_equal(out.cpu_wait_ns, out.cpu_thread_ns);
	assert_true(out.cpu_bound);

	/* Hidden: unknown, never CPU-bound. */
	tu_new_dir(hidden, sizeof(hidden));
	assert_int_equal(cpu_wait_setup(hidden), -ENOENT);
	assert_int_equal(run_probe(&p, &out, NULL).ret, 0);
	assert_false(out.cpu_wait_known);
	assert_int_equal(out.cpu_wait_ns, 0);
	assert_false(out.cpu_bound);
	burst_done(&p, &out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_null_ios_exact),
		cmocka_unit_test(test_null_duration),
		cmocka_unit_test(test_null_jobs_merge),
		cmocka_unit_test(test_ramp_excluded),
		cmocka_unit_test(test_sync_randread_qd1),
		cmocka_unit_test(test_sync_randwrite),
		cmocka_unit_test(test_sync_chain),
		cmocka_unit_test(test_sync_chain_inflight),
		cmocka_unit_test(test_sync_timeout),
		cmocka_unit_test(test_queueing_engines),
		cmocka_unit_test(test_random_offsets),
		cmocka_unit_test(test_bsrange),
		cmocka_unit_test(test_sequential),
		cmocka_unit_test(test_write_limit),
		cmocka_unit_test(test_rwmix),
		cmocka_unit_test(test_write_data_random),
		cmocka_unit_test(test_sync_write_lands),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_init_refusals),
		cmocka_unit_test(test_refusal_reasons),
		cmocka_unit_test(test_buffers_per_run),
		cmocka_unit_test(test_ios_cut_short),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_timeout_wedged),
		cmocka_unit_test(test_inflight_since),
		cmocka_unit_test(test_null_rate_report),
		cmocka_unit_test(test_io_priority_jobs),
		cmocka_unit_test(test_cpu_wait),
	};
	int r = cmocka_run_group_tests(tests, tu_scratch_setup, tu_scratch_teardown);

	if (shared_open)
		target_close(&shared_target.t);
	return r;
}
