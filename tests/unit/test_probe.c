/* SPDX-License-Identifier: MIT */
/*
 * probe: pings over real targets in a mkdtemp directory of our own under
 * $TEST_TMPDIR, through ping_probe_ops as the daemon runs them (probe_init,
 * probe_run, probe_free), some on engines of our own that note what the ping
 * asks of them: offsets, fresh write data, fdatasync timing, refusals; and the
 * kind table, the rows the rest of the daemon asks.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "daemon/probes/cpu_wait.h"
#include "daemon/probes/probe.h"
#include "lib/ioprio.h"

#define MIB (1ULL << 20)
#define SEC 1000000000ULL

/* Replaces lib/clock.c in this binary (a static library's object is only
 * pulled in when nothing else defines it): the real clock unless a test sets
 * fake_now_ns, as the warm-up tests do to step over idle periods. */
static uint64_t fake_now_ns;

uint64_t eng_now_ns(void)
{
	struct timespec ts;

	if (fake_now_ns)
		return fake_now_ns;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return eng_ns(&ts);
}

static struct cfg_probe ping_cfg(enum io_op op, uint64_t bs)
{
	struct cfg_probe c = {
		.name = "p",
		.kind = CFG_PROBE_PING,
		.op = op,
		.sync = CFG_SYNC_NONE,
		.interval_ns = CFG_DEFAULT_INTERVAL_NS,
		.block_size = bs,
		.timeout_ns = CFG_DEFAULT_TIMEOUT_NS,
		.engine = "sync",
	};
	return c;
}

/* Distinct byte values in @len bytes: ~256 for random data of 4KiB. */
static unsigned distinct_bytes(const unsigned char *p, size_t len)
{
	bool seen[256] = {false};
	unsigned n = 0;

	for (size_t i = 0; i < len; i++)
		if (!seen[p[i]]) {
			seen[p[i]] = true;
			n++;
		}
	return n;
}

/* ---------------------------------------------------------------- engines */

/*
 * spy: hands every request to spy_real (the sync engine unless a test says
 * otherwise) and notes it in seen[0..n_seen): its op, offset, length and
 * buffer, the descriptor the engine was set up on, the submitting thread's I/O
 * priority, and a copy of the data it moved (a write's before, a read's after).
 */
#define SEEN_MAX      8
#define SEEN_DATA_MAX 65536

struct seen_req {
	enum io_op op;
	uint64_t offset;
	uint32_t len;
	const void *buf;
	int fd;
	int prio;
	unsigned char data[SEEN_DATA_MAX];
};

static const struct engine_ops *spy_real = &eng_sync_ops;
static struct seen_req seen[SEEN_MAX];
static unsigned n_seen, spy_submits, spy_inits;
static int spy_fd = -1; /* the descriptor of the last set-up */

static int spy_init(struct engine *e, int fd, unsigned depth)
{
	spy_inits++;
	spy_fd = fd;
	return spy_real->init(e, fd, depth);
}

/* The requests the engine took, as they were when it returned (sync and null
 * engines complete them inside submit()). */
static int spy_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	int r = spy_real->submit(e, reqs, n);

	spy_submits++;
	for (int i = 0; i < r && n_seen < SEEN_MAX; i++) {
		const struct io_req *req = reqs[i];
		struct seen_req *s = &seen[n_seen++];

		*s = (struct seen_req){.op = req->op,
				       .offset = req->offset,
				       .len = req->len,
				       .buf = req->buf,
				       .fd = spy_fd,
				       .prio = ioprio_thread_get()};
		if (req->buf && req->len <= SEEN_DATA_MAX)
			memcpy(s->data, req->buf, req->len);
	}
	return r;
}

static const struct engine_ops spy_ops = {
	.name = "spy",
	.flags = ENGINE_F_SYNC,
	.init = spy_init,
	.submit = spy_submit,
	.reap = eng_sync_reap,
	.cancel = eng_sync_cancel,
	.cleanup = eng_sync_cleanup,
};

/* stuck: accepts every request and never completes one: each reap times out. */
static unsigned stuck_submits, stuck_inits, stuck_cleanups;
static const void *stuck_buf[4]; /* the buffer of each submit */

static int stuck_init(struct engine *e, int fd, unsigned depth)
{
	(void)e;
	(void)fd;
	(void)depth;
	stuck_inits++;
	return 0;
}

static int stuck_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	assert_non_null(e->ops); /* never on a torn-down engine */
	if (stuck_submits < sizeof(stuck_buf) / sizeof(stuck_buf[0]))
		stuck_buf[stuck_submits] = reqs[0]->buf;
	stuck_submits += n;
	return (int)n;
}

static int stuck_reap(struct engine *e, struct io_req **done, unsigned min, unsigned max,
		      int64_t timeout_ns)
{
	(void)e;
	(void)done;
	(void)min;
	(void)max;
	(void)timeout_ns;
	return -ETIME;
}

static void stuck_cleanup(struct engine *e)
{
	(void)e;
	stuck_cleanups++;
}

static const struct engine_ops stuck_ops = {
	.name = "stuck",
	.init = stuck_init,
	.submit = stuck_submit,
	.reap = stuck_reap,
	.cleanup = stuck_cleanup,
};

static void stuck_reset(void)
{
	stuck_submits = stuck_inits = stuck_cleanups = 0;
	memset(stuck_buf, 0, sizeof(stuck_buf));
}

/* ---------------------------------------------------------------- probes */

/* A ping probe for @cfg on @t as probe_init() sets it up, its kind then set up
 * again on engine @e (NULL: the one @cfg names); and an outcome for it. */
static void ping_on(struct probe *p, struct probe_outcome *out, const struct cfg_probe *cfg,
		    struct target *t, const struct engine_ops *e)
{
	assert_int_equal(probe_init(p, cfg, t, NULL, 0), 0);
	if (e) {
		p->ops->free(p);
		p->engine = e;
		assert_int_equal(p->ops->init(p), 0);
	}
	assert_int_equal(probe_outcome_init(out, (const uint64_t[]){1000}, 1), 0);
	n_seen = 0;
	spy_submits = 0;
	spy_inits = 0;
}

/* Frees what ping_on() made, and puts the real clock back. */
static void ping_done(struct probe *p, struct probe_outcome *out)
{
	probe_outcome_free(out);
	probe_free(p);
	probe_free(p); /* idempotent */
	fake_now_ns = 0;
}

/* One run of @p with @stop, its outcome alone in @out, the requests it made in
 * seen[0..n_seen): 0 or -errno as probe_run(). */
static int run(struct probe *p, const _Atomic bool *stop, struct probe_outcome *out)
{
	probe_outcome_clear(out);
	n_seen = 0;
	return probe_run(p, stop, out);
}

/* The run's one @op of @bytes: done in full, measured, nothing wrong. */
static void expect_one(const struct probe_outcome *out, enum io_op op, uint64_t bytes)
{
	assert_int_equal(out->op[op].ios, 1);
	assert_int_equal(out->op[op].bytes, bytes);
	assert_int_equal(out->op[op].errors + out->op[op].short_ios, 0);
	assert_true(out->op[op].io_ns > 0);
	assert_int_equal(out->io_error, 0);
	assert_false(out->incomplete);
}

/* ---------------------------------------------------------------- tests */

static void test_read_offsets(void **state)
{
	static const uint64_t sizes[] = {4096, 8192, 65536};
	static unsigned char check[65536];
	struct tu_dir_target f;

	(void)state;
	tu_open_dir_target(&f, MIB);
	int rfd = open(f.t.file_path, O_RDONLY | O_CLOEXEC);
	assert_true(rfd >= 0);

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (int wsi = 0; wsi < 2; wsi++) {
			struct cfg_probe cfg = ping_cfg(IO_READ, sizes[s]);
			uint64_t ws = wsi ? 256 * 1024 : MIB, lo = UINT64_MAX, hi = 0;
			struct probe_outcome out;
			struct probe p;

			cfg.working_set = wsi ? ws : 0;
			ping_on(&p, &out, &cfg, &f.t, &spy_ops);
			assert_int_equal(probe_inflight_since(&p), 0);
			for (int i = 0; i < 400; i++) {
				const struct seen_req *r = &seen[0];

				assert_int_equal(run(&p, NULL, &out), 0);
				expect_one(&out, IO_READ, sizes[s]);
				assert_int_equal(out.op[IO_FDATASYNC].ios, 0);
				assert_int_equal(n_seen, 1);
				assert_int_equal(r->op, IO_READ);
				assert_int_equal(r->len, sizes[s]);
				assert_true(((uintptr_t)r->buf % 4096) == 0);
				assert_int_equal(r->offset % f.t.offset_align, 0);
				assert_int_equal((r->offset - f.t.data_start) % sizes[s], 0);
				assert_true(r->offset >= f.t.data_start);
				assert_true(r->offset + sizes[s] <= f.t.data_start + ws);
				assert_int_equal(probe_inflight_since(&p), 0);
				lo = r->offset < lo ? r->offset : lo;
				hi = r->offset > hi ? r->offset : hi;
				/* The data read is the file's at that offset. */
				if (i % 50 == 0) {
					assert_int_equal(
						pread(rfd, check, sizes[s], (off_t)r->offset),
						(ssize_t)sizes[s]);
					assert_memory_equal(check, r->data, sizes[s]);
				}
			}
			/* Offsets spread over the working set, not stuck in a corner. */
			assert_true(lo < f.t.data_start + ws / 4);
			assert_true(hi + sizes[s] > f.t.data_start + ws * 3 / 4);
			ping_done(&p, &out);
		}
	}
	close(rfd);
	target_close(&f.t);
}

static void test_write_fresh_data(void **state)
{
	struct cfg_probe cfg = ping_cfg(IO_WRITE, 4096);
	unsigned char first[4096], got[4096];
	struct probe_outcome out;
	struct tu_dir_target f;
	struct probe p;
	uint64_t off;

	(void)state;
	tu_open_dir_target(&f, MIB);
	cfg.working_set = 4096; /* one slot: both writes land on the same block */
	ping_on(&p, &out, &cfg, &f.t, &spy_ops);

	assert_int_equal(run(&p, NULL, &out), 0);
	expect_one(&out, IO_WRITE, 4096);
	assert_int_equal(n_seen, 1);
	off = seen[0].offset;
	assert_int_equal(off, f.t.data_start);
	memcpy(first, seen[0].data, sizeof(first));
	assert_true(distinct_bytes(first, sizeof(first)) > 220);

	int rfd = open(f.t.file_path, O_RDONLY | O_CLOEXEC);
	assert_true(rfd >= 0);
	assert_int_equal(pread(rfd, got, sizeof(got), (off_t)off), 4096);
	assert_memory_equal(got, first, sizeof(got));

	assert_int_equal(run(&p, NULL, &out), 0);
	expect_one(&out, IO_WRITE, 4096);
	assert_int_equal(seen[0].offset, off);
	assert_int_equal(pread(rfd, got, sizeof(got), (off_t)off), 4096);
	assert_memory_not_equal(got, first, sizeof(got));
	assert_memory_equal(got, seen[0].data, sizeof(got));
	assert_true(distinct_bytes(got, sizeof(got)) > 220);
	close(rfd);

	/* Many writes over the whole file stay inside it. */
	ping_done(&p, &out);
	cfg.working_set = 0;
	ping_on(&p, &out, &cfg, &f.t, &spy_ops);
	for (int i = 0; i < 100; i++) {
		assert_int_equal(run(&p, NULL, &out), 0);
		expect_one(&out, IO_WRITE, 4096);
		off = seen[0].offset;
		assert_true(off >= f.t.data_start && off + 4096 <= f.t.data_end);
		assert_int_equal(off % f.t.offset_align, 0);
	}
	ping_done(&p, &out);
	target_close(&f.t);

	/* The header is intact after all that. */
	char hdr[19];
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/%s", f.dir, TARGET_PROBE_FILE);
	rfd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(rfd >= 0);
	assert_int_equal(pread(rfd, hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
	assert_memory_equal(hdr, "IOPULSE-PROBE-FILE\n", sizeof(hdr));
	close(rfd);
}

static void test_fdatasync_timed_apart(void **state)
{
	struct cfg_probe cfg = ping_cfg(IO_WRITE, 4096);
	struct probe_outcome out;
	struct tu_dir_target f;
	struct probe p;

	(void)state;
	tu_open_dir_target(&f, MIB);
	cfg.sync = CFG_SYNC_FDATASYNC;
	ping_on(&p, &out, &cfg, &f.t, &spy_ops);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(run(&p, NULL, &out), 0);
		expect_one(&out, IO_WRITE, 4096);
		expect_one(&out, IO_FDATASYNC, 0);
		assert_int_equal(n_seen, 2);
		assert_int_equal(seen[1].op, IO_FDATASYNC);
		assert_int_equal(probe_inflight_since(&p), 0);
	}
	ping_done(&p, &out);

	/* A read ping never syncs, whatever cfg.sync says. */
	cfg.op = IO_READ;
	ping_on(&p, &out, &cfg, &f.t, &spy_ops);
	assert_int_equal(run(&p, NULL, &out), 0);
	expect_one(&out, IO_READ, 4096);
	assert_int_equal(out.op[IO_FDATASYNC].ios + out.op[IO_FDATASYNC].errors, 0);
	assert_int_equal(n_seen, 1);
	ping_done(&p, &out);
	target_close(&f.t);
}

static void test_write_on_file_target_refused(void **state)
{
	struct cfg_probe cfg = ping_cfg(IO_WRITE, 4096);
	char dir[PATH_MAX], path[PATH_MAX + 32];
	unsigned char content[65536], after[65536];
	struct probe_outcome out;
	struct cfg_target tcfg;
	struct target t;
	struct stat a, b;
	struct probe p;
	int fd;

	(void)state;
	for (size_t i = 0; i < sizeof(content); i++)
		content[i] = (unsigned char)(i * 13 + 1);
	assert_true(snprintf(dir, sizeof(dir), "%s/f.XXXXXX", tu_scratch) < (int)sizeof(dir));
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/data.bin", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, sizeof(content)), (ssize_t)sizeof(content));
	close(fd);
	assert_int_equal(stat(path, &a), 0);

	tcfg = (struct cfg_target){
		.name = "f", .kind = CFG_TARGET_FILE, .path = path, .direct = true};
	target_init(&t, &tcfg);
	assert_int_equal(target_open(&t), 0);
	ping_on(&p, &out, &cfg, &t, &spy_ops);
	for (int i = 0; i < 10; i++)
		assert_int_equal(run(&p, NULL, &out), -EBADF);
	assert_int_equal(spy_submits, 0);
	ping_done(&p, &out);

	/* Reads work on it. */
	cfg.op = IO_READ;
	ping_on(&p, &out, &cfg, &t, &spy_ops);
	assert_int_equal(run(&p, NULL, &out), 0);
	expect_one(&out, IO_READ, 4096);
	assert_memory_equal(seen[0].data, content + seen[0].offset, 4096);
	ping_done(&p, &out);
	target_close(&t);

	assert_int_equal(stat(path, &b), 0);
	assert_int_equal(a.st_mtim.tv_sec, b.st_mtim.tv_sec);
	assert_int_equal(a.st_mtim.tv_nsec, b.st_mtim.tv_nsec);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, after, sizeof(after)), (ssize_t)sizeof(after));
	close(fd);
	assert_memory_equal(after, content, sizeof(content));
}

/* Sets @p up for @cfg on @t and runs it once: what the run returns. */
static int run_refused(const struct cfg_probe *cfg, struct target *t)
{
	struct probe_outcome out;
	struct probe p;
	int r;

	ping_on(&p, &out, cfg, t, NULL);
	r = run(&p, NULL, &out);
	ping_done(&p, &out);
	return r;
}

static void test_refusals(void **state)
{
	struct cfg_probe cfg = ping_cfg(IO_READ, 4096);
	struct probe_outcome out;
	struct tu_dir_target f;
	struct probe p;

	(void)state;
	tu_open_dir_target(&f, MIB);
	strcpy(cfg.engine, "warp-drive");
	assert_int_equal(probe_init(&p, &cfg, &f.t, NULL, 0), -ENOENT);
	probe_free(&p); /* safe after a failed init */
	strcpy(cfg.engine, "sync");

	/* Working set bigger than the target, or smaller than a block. */
	cfg.working_set = 2 * MIB;
	assert_int_equal(run_refused(&cfg, &f.t), -EINVAL);
	cfg.working_set = 2048;
	assert_int_equal(run_refused(&cfg, &f.t), -EINVAL);
	cfg.working_set = 0;

	/* Block size not a multiple of the offset alignment. */
	cfg.block_size = 4096 + 1;
	assert_int_equal(run_refused(&cfg, &f.t), -EINVAL);
	cfg.block_size = 4096;

	/* Block size beyond the limit. */
	cfg.block_size = CFG_MAX_BLOCK_SIZE + 4096;
	assert_int_equal(probe_init(&p, &cfg, &f.t, NULL, 0), -EINVAL);
	probe_free(&p);
	cfg.block_size = 4096;

	/* A target wanting more buffer alignment than we allocate. */
	ping_on(&p, &out, &cfg, &f.t, NULL);
	uint32_t saved = f.t.mem_align;
	f.t.mem_align = 8192;
	assert_int_equal(run(&p, NULL, &out), -EINVAL);
	f.t.mem_align = saved;
	assert_int_equal(run(&p, NULL, &out), 0);

	/* A closed target. */
	target_close(&f.t);
	assert_int_equal(run(&p, NULL, &out), -EBADF);
	ping_done(&p, &out);
}

/* Shutdown during a stuck write ping (with fdatasync): the wait gives up, the
 * request and its buffer are abandoned, and no fdatasync is attempted on the
 * torn-down engine. The next run sets the engine up again, with a fresh buffer:
 * the kernel may still own the old one. Nothing was measured: the daemon keeps
 * none of it. */
static void test_stop_abandons_stuck_write(void **state)
{
	struct cfg_probe cfg = ping_cfg(IO_WRITE, 4096);
	_Atomic bool stop = true;
	struct probe_outcome out;
	struct tu_dir_target f;
	struct probe p;

	(void)state;
	tu_open_dir_target(&f, MIB);
	cfg.sync = CFG_SYNC_FDATASYNC;
	stuck_reset();
	ping_on(&p, &out, &cfg, &f.t, &stuck_ops);
	assert_int_equal(run(&p, &stop, &out), 0);
	assert_int_equal(stuck_submits, 1); /* the write only: no fdatasync after it */
	assert_int_equal(stuck_cleanups, 1);
	assert_true(out.discard && out.incomplete);
	for (int op = 0; op < IO_OP_COUNT; op++)
		assert_int_equal(out.op[op].ios + out.op[op].errors, 0);
	assert_int_equal(probe_inflight_since(&p), 0);

	assert_int_equal(run(&p, &stop, &out), 0);
	assert_int_equal(stuck_inits, 2);
	assert_int_equal(stuck_submits, 2);
	assert_ptr_not_equal(stuck_buf[1], stuck_buf[0]);
	ping_done(&p, &out);
	target_close(&f.t);
}

/* The sync engine, but its first two reaps say -EINTR, as io_getevents(2) does
 * after a freeze or a debugger's stop with the I/O still in flight. */
static unsigned eintr_left;

static int eintr_reap(struct engine *e, struct io_req **done, unsigned min, unsigned max,
		      int64_t timeout_ns)
{
	if (eintr_left) {
		eintr_left--;
		return -EINTR;
	}
	return eng_sync_ops.reap(e, done, min, max, timeout_ns);
}

static struct engine_ops eintr_ops;

/* An interrupted wait is no failed ping: the ping waits on and reads its data. */
static void test_interrupted_wait_is_no_error(void **state)
{
	struct cfg_probe cfg = ping_cfg(IO_READ, 4096);
	_Atomic bool stop = false;
	struct probe_outcome out;
	struct tu_dir_target f;
	struct probe p;

	(void)state;
	eintr_ops = eng_sync_ops;
	eintr_ops.name = "eintr";
	eintr_ops.reap = eintr_reap;
	tu_open_dir_target(&f, MIB);
	ping_on(&p, &out, &cfg, &f.t, &eintr_ops);
	eintr_left = 2;
	assert_int_equal(run(&p, &stop, &out), 0);
	assert_int_equal(eintr_left, 0);
	expect_one(&out, IO_READ, 4096);
	assert_false(out.discard);
	/* Stopping, an interrupted wait gives up as a timed-out one does: nothing
	 * measured, and shutdown overtook it. */
	atomic_store(&stop, true);
	eintr_left = 1;
	assert_int_equal(run(&p, &stop, &out), 0);
	assert_int_equal(eintr_left, 0);
	assert_int_equal(out.op[IO_READ].ios, 0);
	assert_int_equal(out.io_error, -EINTR);
	assert_true(out.discard);
	ping_done(&p, &out);
	target_close(&f.t);
}

static void test_reinit_on_new_fd(void **state)
{
	struct cfg_probe cfg = ping_cfg(IO_READ, 4096);
	struct probe_outcome out;
	struct tu_dir_target f;
	struct probe p;
	int old_fd, blocker;

	(void)state;
	tu_open_dir_target(&f, MIB);
	ping_on(&p, &out, &cfg, &f.t, &spy_ops);
	assert_int_equal(spy_inits, 0); /* on the first run */
	assert_int_equal(run(&p, NULL, &out), 0);
	assert_int_equal(spy_inits, 1);
	assert_int_equal(seen[0].fd, f.t.fd);
	old_fd = f.t.fd;
	assert_int_equal(run(&p, NULL, &out), 0);
	assert_int_equal(spy_inits, 1); /* kept between runs */

	/* Re-open on another descriptor number (the old one is taken). */
	target_close(&f.t);
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(devnull >= 0);
	blocker = devnull; /* the lowest free number: often old_fd itself */
	if (devnull != old_fd) {
		blocker = dup3(devnull, old_fd, O_CLOEXEC);
		close(devnull);
	}
	assert_int_equal(blocker, old_fd);
	assert_int_equal(target_open(&f.t), 0);
	assert_true(f.t.fd != old_fd);
	assert_int_equal(run(&p, NULL, &out), 0);
	expect_one(&out, IO_READ, 4096);
	assert_int_equal(spy_inits, 2);
	assert_int_equal(seen[0].fd, f.t.fd);
	close(blocker);
	ping_done(&p, &out);
	target_close(&f.t);
}

static void test_null_engine(void **state)
{
	struct cfg_probe cfg = ping_cfg(IO_WRITE, 4096);
	unsigned char before[8192], after[8192];
	struct probe_outcome out;
	struct tu_dir_target f;
	struct probe p;
	int fd;

	(void)state;
	tu_open_dir_target(&f, MIB);
	fd = open(f.t.file_path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, before, sizeof(before), TARGET_HEADER_SIZE), 8192);

	strcpy(cfg.engine, "null");
	cfg.working_set = 8192;
	cfg.sync = CFG_SYNC_FDATASYNC;
	ping_on(&p, &out, &cfg, &f.t, NULL);
	assert_ptr_equal(p.engine, &eng_null_ops);
	for (int i = 0; i < 100; i++) {
		assert_int_equal(run(&p, NULL, &out), 0);
		assert_int_equal(out.op[IO_WRITE].ios, 1);
		assert_int_equal(out.op[IO_FDATASYNC].ios, 1);
		assert_int_equal(out.io_error, 0);
	}
	ping_done(&p, &out);
	assert_int_equal(pread(fd, after, sizeof(after), TARGET_HEADER_SIZE), 8192);
	assert_memory_equal(before, after, sizeof(after));
	close(fd);
	target_close(&f.t);
}

/* 'io_priority' is the thread's while the ping's I/O (and its fdatasync) is
 * submitted, and the thread has its own back after; none leaves it alone. */
static void test_io_priority_applied(void **state)
{
	static const char *const prios[] = {"idle", "best-effort:7", "best-effort:0", "none"};
	const int before = ioprio_thread_get();
	struct tu_dir_target f;

	(void)state;
	assert_true(before >= 0);
	tu_open_dir_target(&f, MIB);
	spy_real = &eng_null_ops;
	for (size_t i = 0; i < sizeof(prios) / sizeof(prios[0]); i++) {
		struct cfg_probe cfg = ping_cfg(IO_WRITE, 4096);
		struct probe_outcome out;
		struct probe p;
		int want;

		cfg.sync = CFG_SYNC_FDATASYNC;
		assert_int_equal(ioprio_parse(prios[i], &cfg.io_priority), 0);
		want = cfg.io_priority ? cfg.io_priority : before;
		ping_on(&p, &out, &cfg, &f.t, &spy_ops);
		assert_int_equal(run(&p, NULL, &out), 0);
		assert_int_equal(spy_submits, 2); /* the write and its fdatasync */
		assert_int_equal(seen[0].prio, want);
		assert_int_equal(seen[1].prio, want);
		assert_int_equal(out.op[IO_WRITE].ios, 1);
		assert_int_equal(ioprio_thread_get(), before);
		ping_done(&p, &out);
	}
	spy_real = &eng_sync_ops;
	target_close(&f.t);
}

/* 'engine: auto' is sync for a ping (QD1: the least added to each I/O) and the
 * best queueing engine here for a burst; a named engine is that engine, for
 * the probe (iopulse_probe_info's label), which is the one the ping runs on. */
static void test_auto_engine(void **state)
{
	struct cfg_probe cfg = ping_cfg(IO_READ, 4096);
	struct tu_dir_target f;
	struct probe p;
	int err;

	(void)state;
	tu_open_dir_target(&f, MIB);
	strcpy(cfg.engine, "auto");
	assert_ptr_equal(probe_engine_of(&cfg, &err), &eng_sync_ops);
	assert_int_equal(err, 0);
	assert_int_equal(probe_init(&p, &cfg, &f.t, NULL, 0), 0);
	assert_ptr_equal(p.engine, &eng_sync_ops);
	assert_non_null(strstr(probe_engine_why(&cfg), "QD1"));
	probe_free(&p);

	strcpy(cfg.engine, "null");
	assert_int_equal(probe_init(&p, &cfg, &f.t, NULL, 0), 0);
	assert_ptr_equal(p.engine, &eng_null_ops);
	probe_free(&p);

	cfg.kind = CFG_PROBE_BURST;
	strcpy(cfg.engine, "auto");
	assert_ptr_equal(probe_engine_of(&cfg, &err), eng_resolve("auto", NULL));
	assert_int_equal(err, 0);
	assert_null(strstr(probe_engine_why(&cfg), "QD1"));
	target_close(&f.t);
}

/* @op's measured I/Os (all in the histogram, nothing else) and warm-ups in @out,
 * with the warm-ups' bytes (every ping here moves 4KiB; an fdatasync none). */
static void expect_counts(const struct probe_outcome *out, enum io_op op, uint64_t ios,
			  uint64_t warm)
{
	assert_int_equal(out->op[op].ios, ios);
	assert_int_equal(hist_count(out->op[op].hist), ios);
	assert_int_equal(out->op[op].warmup_ios, warm);
	assert_int_equal(out->op[op].warmup_bytes, op == IO_FDATASYNC ? 0 : warm * 4096);
}

/* One run at @now_ns, adding to @out: the requests it made, in seen[0..return). */
static unsigned run_at(struct probe *p, struct probe_outcome *out, uint64_t now_ns)
{
	fake_now_ns = now_ns;
	n_seen = 0;
	assert_int_equal(probe_run(p, NULL, out), 0);
	return n_seen;
}

/*
 * 'warmup_after: 60s' on a read ping: a warm-up read goes first only when the
 * target saw no I/O of ours for more than 60s (or none yet), to another block;
 * it is counted apart and never reaches the histogram. A burst or another probe
 * on the target (its last_io_ns) counts as activity.
 */
static void test_warmup_after_idle(void **state)
{
	struct cfg_probe cfg = ping_cfg(IO_READ, 4096);
	const uint64_t t0 = 1000 * SEC;
	struct probe_outcome out;
	struct tu_dir_target f;
	struct probe p;

	(void)state;
	tu_open_dir_target(&f, MIB);
	cfg.warmup_idle_ns = 60 * SEC;
	cfg.working_set = 2 * 4096; /* two blocks: the warm-up must take the other */
	spy_real = &eng_null_ops;
	ping_on(&p, &out, &cfg, &f.t, &spy_ops);
	/* Nothing since start: warm up. Two reads, different blocks, one measured. */
	assert_int_equal(run_at(&p, &out, t0), 2);
	assert_int_equal(seen[0].op, IO_READ);
	assert_int_equal(seen[1].op, IO_READ);
	assert_int_equal(seen[0].len, 4096);
	assert_int_not_equal(seen[0].offset, seen[1].offset);
	expect_counts(&out, IO_READ, 1, 1);
	assert_int_equal(f.t.last_io_ns, t0);

	/* 30s, then exactly 60s idle: not longer than warmup_after, no warm-up. */
	assert_int_equal(run_at(&p, &out, t0 + 30 * SEC), 1);
	assert_int_equal(run_at(&p, &out, t0 + 90 * SEC), 1);
	expect_counts(&out, IO_READ, 3, 1);

	/* 61s idle: warm up again; many times, always to the other block. */
	for (unsigned i = 1; i <= 8; i++) {
		assert_int_equal(run_at(&p, &out, t0 + 90 * SEC + i * 61 * SEC), 2);
		assert_int_not_equal(seen[0].offset, seen[1].offset);
	}
	expect_counts(&out, IO_READ, 11, 9);

	/* Long after, but a burst just ended on the target: it is awake. */
	fake_now_ns = t0 + 3600 * SEC;
	f.t.last_io_ns = fake_now_ns - SEC;
	assert_int_equal(run_at(&p, &out, fake_now_ns), 1);
	ping_done(&p, &out);

	/* Off (the default): never, not even at the first ping; and on a target
	 * where no probe warms up, no clock is read to keep its last I/O time. */
	target_close(&f.t);
	tu_open_dir_target(&f, MIB);
	cfg.warmup_idle_ns = 0;
	ping_on(&p, &out, &cfg, &f.t, &spy_ops);
	assert_int_equal(run_at(&p, &out, t0), 1);
	assert_int_equal(run_at(&p, &out, t0 + 3600 * SEC), 1);
	expect_counts(&out, IO_READ, 2, 0);
	assert_false(f.t.idle_tracked);
	assert_int_equal(f.t.last_io_ns, 0);
	ping_done(&p, &out);
	spy_real = &eng_sync_ops;
	target_close(&f.t);
}

/* A write ping with fdatasync warms up with a write and its fdatasync (so that
 * the measured fdatasync flushes the measured write only), both counted apart. */
static void test_warmup_write_sync(void **state)
{
	struct cfg_probe cfg = ping_cfg(IO_WRITE, 4096);
	struct probe_outcome out;
	struct tu_dir_target f;
	struct probe p;

	(void)state;
	tu_open_dir_target(&f, MIB);
	cfg.sync = CFG_SYNC_FDATASYNC;
	cfg.warmup_idle_ns = SEC;
	spy_real = &eng_null_ops;
	ping_on(&p, &out, &cfg, &f.t, &spy_ops);
	assert_int_equal(run_at(&p, &out, 5 * SEC), 4);
	assert_int_equal(seen[0].op, IO_WRITE);
	assert_int_equal(seen[1].op, IO_FDATASYNC);
	assert_int_equal(seen[2].op, IO_WRITE);
	assert_int_equal(seen[3].op, IO_FDATASYNC);
	assert_int_not_equal(seen[0].offset, seen[2].offset);
	expect_counts(&out, IO_WRITE, 1, 1);
	expect_counts(&out, IO_FDATASYNC, 1, 1);
	ping_done(&p, &out);
	spy_real = &eng_sync_ops;
	target_close(&f.t);
}

/* Shutdown while the warm-up is stuck: it is abandoned and nothing else is
 * submitted; the run measured nothing. */
static void test_warmup_stuck_stop(void **state)
{
	struct cfg_probe cfg = ping_cfg(IO_READ, 4096);
	_Atomic bool stop = true;
	struct probe_outcome out;
	struct tu_dir_target f;
	struct probe p;

	(void)state;
	tu_open_dir_target(&f, MIB);
	cfg.warmup_idle_ns = SEC;
	stuck_reset();
	ping_on(&p, &out, &cfg, &f.t, &stuck_ops);
	assert_int_equal(run(&p, &stop, &out), 0);
	assert_int_equal(stuck_submits, 1);
	assert_true(out.discard && out.incomplete);
	expect_counts(&out, IO_READ, 0, 0);
	assert_int_equal(out.op[IO_READ].errors, 0);
	ping_done(&p, &out);
	target_close(&f.t);
}

/* Drops CAP_SYS_ADMIN and CAP_SYS_NICE from the calling thread's effective set
 * (a no-op when not root): what realtime priorities need. */
static void drop_rt_caps(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];

	assert_int_equal(syscall(SYS_capget, &h, d), 0);
	d[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
	d[CAP_SYS_NICE / 32].effective &= ~(1u << (CAP_SYS_NICE % 32));
	assert_int_equal(syscall(SYS_capset, &h, d), 0);
}

/* Without the capability a realtime probe is refused at set-up (-EPERM), not run
 * at the default priority; the other classes still set up. In a child: the
 * capabilities are gone for good there. */
static void test_io_priority_realtime_refused(void **state)
{
	struct tu_dir_target f;
	pid_t pid;
	int status;

	(void)state;
	tu_open_dir_target(&f, MIB);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct cfg_probe cfg = ping_cfg(IO_READ, 4096);
		struct probe p;
		int rt, be;

		drop_rt_caps();
		(void)ioprio_parse("realtime:4", &cfg.io_priority);
		rt = probe_init(&p, &cfg, &f.t, NULL, 0);
		probe_free(&p);
		(void)ioprio_parse("best-effort:4", &cfg.io_priority);
		be = probe_init(&p, &cfg, &f.t, NULL, 0);
		probe_free(&p);
		_exit(rt == -EPERM && be == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	target_close(&f.t);
}

/* A row for every kind the configuration accepts, each with every hook a probe
 * calls, and a file name exactly when it has a file of its own; none past. */
static void test_kind_table(void **state)
{
	(void)state;
	for (int k = 0; k < CFG_PROBE_KINDS; k++) {
		const struct probe_ops *ops = probe_ops_of((enum cfg_probe_kind)k);

		assert_non_null(ops);
		assert_int_equal(ops->kind, k);
		assert_non_null(ops->io_ops);
		assert_non_null(ops->op_name);
		assert_non_null(ops->init);
		assert_non_null(ops->run);
		assert_non_null(ops->inflight_since);
		assert_non_null(ops->free);
		assert_non_null(ops->descriptors);
		assert_int_equal(!!(ops->flags & PROBE_F_OWN_FILE), ops->own_file_name != NULL);
	}
	assert_null(probe_ops_of(CFG_PROBE_KINDS));
}

/* The warning that sync ignores an iodepth: for a kind that keeps one in flight
 * (PROBE_F_IODEPTH: a burst), above 1, on sync only. */
static void test_depth_ignored(void **state)
{
	struct cfg_probe c = {.name = "b", .kind = CFG_PROBE_BURST, .iodepth = 8};
	char why[256];

	(void)state;
	assert_true(probe_depth_ignored(&c, "sync", why, sizeof(why)));
	assert_string_equal(why, "Probe b: the sync engine runs one I/O at a time, so 'iodepth: 8' "
				 "acts as 1; use io_uring or libaio for a queue");
	assert_false(probe_depth_ignored(&c, "io_uring", why, sizeof(why)));
	c.iodepth = 1;
	assert_false(probe_depth_ignored(&c, "sync", why, sizeof(why)));
	c.iodepth = 8;
	c.kind = CFG_PROBE_PING;
	assert_false(probe_depth_ignored(&c, "sync", why, sizeof(why)));
}

/* ---------------------------------------------------------------- CPU wait */

/*
 * waiter: each request sleeps WAITER_SLEEP_NS, then the fake /proc (cpu_wait.h)
 * says the thread waited waiter_step_ns more for a CPU, then the sync engine
 * does the I/O: a request that took at least the sleep, part of it "waiting".
 */
#define WAITER_SLEEP_NS 4000000ULL
static char waiter_root[PATH_MAX];
static uint64_t waiter_wait_ns, waiter_step_ns;

static int waiter_init(struct engine *e, int fd, unsigned depth)
{
	return eng_sync_ops.init(e, fd, depth);
}

static int waiter_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	usleep(WAITER_SLEEP_NS / 1000);
	waiter_wait_ns += waiter_step_ns;
	tu_fake_wait(waiter_root, waiter_wait_ns);
	return eng_sync_ops.submit(e, reqs, n);
}

static const struct engine_ops waiter_ops = {
	.name = "waiter",
	.flags = ENGINE_F_SYNC,
	.init = waiter_init,
	.submit = waiter_submit,
	.reap = eng_sync_reap,
	.cancel = eng_sync_cancel,
	.cleanup = eng_sync_cleanup,
};

/* Op @op of @out: its histogram and io_ns hold the latencies net of the
 * wait, which is within [@lo, @hi]; with it they make the time the target was
 * busy. */
static void expect_net(const struct probe_outcome *out, enum io_op op, uint64_t lo, uint64_t hi,
		       uint64_t waited)
{
	const struct probe_op_outcome *o = &out->op[op];

	assert_int_equal(o->ios, 1);
	assert_in_range(o->cpu_wait_ns, lo, hi);
	assert_int_equal(o->waited_ios, waited);
	assert_int_equal(hist_sum_ns(o->hist), o->io_ns);
	assert_int_equal(hist_count(o->hist), 1);
}

/* The fake wait of each op of a run, less what the edges around it took
 * (qd1.c: the reads of the figure, microseconds): within half of it, unless
 * the thread was preempted in an edge on a loaded machine. */
static bool wait_near(const struct probe_outcome *out, uint64_t want)
{
	for (int op = 0; op < IO_OP_COUNT; op++) {
		uint64_t w = out->op[op].cpu_wait_ns;

		if (out->op[op].ios && (w > want || w + want / 2 < want))
			return false;
	}
	return true;
}

/*
 * A ping's latency is net of the time its thread waited for a CPU during the
 * I/O (the fake /proc says how long, less the edges around the I/O, a few
 * microseconds: test_qd1), counted apart; a wait said to be longer than
 * the I/O took is all of it; a wait under CPU_WAIT_MIN_NS is counted but the
 * I/O did not "wait"; with the figure hidden, latencies are whole.
 */
static void test_net_of_cpu_wait(void **state)
{
	struct cfg_probe cfg = ping_cfg(IO_WRITE, 4096);
	struct probe_outcome out;
	struct tu_dir_target f;
	struct probe p;
	char hidden[PATH_MAX];

	(void)state;
	tu_open_dir_target(&f, MIB);
	tu_fake_proc(waiter_root, sizeof(waiter_root), 0);
	assert_int_equal(cpu_wait_setup(waiter_root), 0);
	cfg.sync = CFG_SYNC_FDATASYNC;
	ping_on(&p, &out, &cfg, &f.t, &waiter_ops);

	waiter_step_ns = WAITER_SLEEP_NS / 2; /* each of the write and its fdatasync */
	for (int i = 0; i < 5; i++) {
		assert_int_equal(run(&p, NULL, &out), 0);
		if (wait_near(&out, waiter_step_ns))
			break;
	}
	expect_net(&out, IO_WRITE, WAITER_SLEEP_NS / 4, WAITER_SLEEP_NS / 2, 1);
	expect_net(&out, IO_FDATASYNC, WAITER_SLEEP_NS / 4, WAITER_SLEEP_NS / 2, 1);
	assert_true(out.op[IO_WRITE].io_ns >= WAITER_SLEEP_NS / 2);
	assert_int_equal(out.busy_ns, out.op[IO_WRITE].io_ns + out.op[IO_FDATASYNC].io_ns +
					      out.op[IO_WRITE].cpu_wait_ns +
					      out.op[IO_FDATASYNC].cpu_wait_ns);

	waiter_step_ns = 1000 * SEC; /* more than the I/O took: all of it */
	assert_int_equal(run(&p, NULL, &out), 0);
	expect_net(&out, IO_WRITE, out.busy_ns - out.op[IO_FDATASYNC].cpu_wait_ns,
		   out.busy_ns - out.op[IO_FDATASYNC].cpu_wait_ns, 1);
	assert_int_equal(out.op[IO_WRITE].io_ns + out.op[IO_FDATASYNC].io_ns, 0);

	waiter_step_ns = CPU_WAIT_MIN_NS - 1; /* taken out, not a wait to count */
	assert_int_equal(run(&p, NULL, &out), 0);
	expect_net(&out, IO_WRITE, 0, CPU_WAIT_MIN_NS - 1, 0);

	/* Hidden: whole latencies, nothing counted. */
	tu_new_dir(hidden, sizeof(hidden));
	assert_int_equal(cpu_wait_setup(hidden), -ENOENT);
	waiter_step_ns = WAITER_SLEEP_NS / 2;
	assert_int_equal(run(&p, NULL, &out), 0);
	expect_net(&out, IO_WRITE, 0, 0, 0);
	assert_int_equal(out.busy_ns, out.op[IO_WRITE].io_ns + out.op[IO_FDATASYNC].io_ns);
	ping_done(&p, &out);
	target_close(&f.t);
}

int main(void)
{
	if (!getenv("TEST_TMPDIR")) {
		fprintf(stderr, "TEST_TMPDIR not set: skipping\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_offsets),
		cmocka_unit_test(test_write_fresh_data),
		cmocka_unit_test(test_fdatasync_timed_apart),
		cmocka_unit_test(test_write_on_file_target_refused),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_stop_abandons_stuck_write),
		cmocka_unit_test(test_interrupted_wait_is_no_error),
		cmocka_unit_test(test_reinit_on_new_fd),
		cmocka_unit_test(test_null_engine),
		cmocka_unit_test(test_io_priority_applied),
		cmocka_unit_test(test_auto_engine),
		cmocka_unit_test(test_warmup_after_idle),
		cmocka_unit_test(test_warmup_write_sync),
		cmocka_unit_test(test_warmup_stuck_stop),
		cmocka_unit_test(test_io_priority_realtime_refused),
		cmocka_unit_test(test_kind_table),
		cmocka_unit_test(test_depth_ignored),
		cmocka_unit_test(test_net_of_cpu_wait),
	};

	return cmocka_run_group_tests(tests, tu_scratch_setup, tu_scratch_teardown);
}
