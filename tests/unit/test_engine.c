/* SPDX-License-Identifier: MIT */
/*
 * engines: the same conformance cases against every engine in eng_table, on
 * files in a scratch directory of our own under $TEST_TMPDIR.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "engines/engine.h"

/* An engine compiled in but not available here: its cases were skipped, so the
 * run as a whole must not pass (main() exits 77). */
static bool engine_skipped;

static bool is_null(const struct engine_ops *ops)
{
	return strcmp(ops->name, "null") == 0;
}

static bool is_libaio(const struct engine_ops *ops)
{
	return strcmp(ops->name, "libaio") == 0;
}

/* Completes inside submit(): order is submission order, nothing ever in flight. */
static bool is_sync(const struct engine_ops *ops)
{
	return ops->flags & ENGINE_F_SYNC;
}

/* Whether to run a case on @ops; says so when it cannot, and remembers it. */
static bool usable(const struct engine_ops *ops)
{
	if (eng_available(ops)) {
		print_message("engine %s\n", ops->name);
		return true;
	}
	print_message("engine %s: compiled in but not available here, case SKIPPED\n", ops->name);
	engine_skipped = true;
	return false;
}

/* A scratch file of @size bytes of 'A'+(i%26); returns an O_RDWR fd. */
static int make_file(const char *name, size_t size)
{
	char path[PATH_MAX + 32];
	char *data = malloc(size ? size : 1);
	int fd;

	assert_non_null(data);
	for (size_t i = 0; i < size; i++)
		data[i] = (char)('A' + i % 26);
	snprintf(path, sizeof(path), "%s/%s", tu_scratch, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, data, size, 0), (ssize_t)size);
	free(data);
	return fd;
}

/*
 * reap(), tried again after -EINTR: io_getevents(2) returns it after any stop
 * of the process (a cgroup freeze of a CI container, a debugger), not only
 * after a handler ran. The daemon's callers treat it as a short wait, too.
 */
static int reap_retry(struct engine *e, struct io_req **done, unsigned min, unsigned max,
		      int64_t timeout_ns)
{
	int r;

	while ((r = e->ops->reap(e, done, min, max, timeout_ns)) == -EINTR)
		;
	return r;
}

/*
 * submit() until all @n are queued. A synchronous engine may take fewer than
 * there is room for: its chain stops after a request slower than
 * ENG_SYNC_SLOW_NS, which a busy machine's preemption alone can make one.
 */
static void submit_all(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	unsigned got = 0;

	while (got < n) {
		int r = e->ops->submit(e, reqs + got, n - got);

		assert_true(r > 0);
		got += (unsigned)r;
	}
}

/* Submit one request and reap it; returns its result. */
static ssize_t do_one(struct engine *e, struct io_req *req)
{
	struct io_req *const reqs[1] = {req};
	struct io_req *done[1];

	req->result = 12345;
	req->done_ns = 0;
	req->submit_ns = eng_now_ns();
	assert_int_equal(e->ops->submit(e, reqs, 1), 1);
	assert_int_equal(reap_retry(e, done, 1, 1, -1), 1);
	assert_ptr_equal(done[0], req);
	assert_true(req->done_ns >= req->submit_ns);
	return req->result;
}

/*
 * io_uring disabled (sysctl or seccomp) and AIO refused: in a child whose seccomp
 * filter fails io_uring_setup with ENOSYS and io_setup with EPERM, the probe says
 * unavailable, "auto" falls back to sync and naming them says -EOPNOTSUPP. This is
 * the first test, so that nothing has been probed (and cached) before the fork.
 */
static void test_unavailable_under_seccomp(void **state)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const struct engine_ops *ops;
		struct engine e;
		int err = 0, bad = 0;

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
			_exit(77);
#ifdef WITH_IO_URING
		bad |= (eng_init(&e, &eng_io_uring_ops, -1, 1) != -ENOSYS) << 0;
		bad |= eng_available(&eng_io_uring_ops) << 1;
		bad |= (eng_resolve("io_uring", &err) != NULL || err != -EOPNOTSUPP) << 2;
#endif
#ifdef WITH_LIBAIO
		bad |= (eng_init(&e, &eng_libaio_ops, -1, 1) != -EPERM) << 3;
		bad |= eng_available(&eng_libaio_ops) << 4;
#endif
		ops = eng_resolve("auto", &err);
		bad |= (ops != &eng_sync_ops || err != 0) << 5;
		_exit(bad);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77) {
		print_message("cannot install a seccomp filter here\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_table(void **state)
{
	unsigned n = 0;

	(void)state;
	for (const struct engine_ops *const *o = eng_table; *o; o++, n++) {
		assert_ptr_equal(eng_find((*o)->name), *o);
		if (is_sync(*o))
			assert_true(eng_available(*o));
		else
			print_message("engine %s: %savailable\n", (*o)->name,
				      eng_available(*o) ? "" : "NOT ");
		assert_non_null((*o)->init);
		assert_non_null((*o)->submit);
		assert_non_null((*o)->reap);
	}
	assert_true(n >= 2);
	assert_non_null(eng_find("sync"));
	assert_non_null(eng_find("null"));
#ifdef WITH_IO_URING
	assert_ptr_equal(eng_find("io_uring"), &eng_io_uring_ops);
	assert_ptr_equal(eng_table[0], &eng_io_uring_ops); /* preferred */
#else
	assert_null(eng_find("io_uring"));
#endif
#ifdef WITH_LIBAIO
	assert_ptr_equal(eng_find("libaio"), &eng_libaio_ops);
#else
	assert_null(eng_find("libaio"));
#endif
	assert_null(eng_find("nope"));
	assert_null(eng_find(NULL));
	assert_false(eng_available(NULL));
}

static void test_roundtrip(void **state)
{
	char *wbuf = NULL, *rbuf = NULL, *file;
	int fd = make_file("roundtrip", 8192);

	(void)state;
	assert_int_equal(posix_memalign((void **)&wbuf, 4096, 4096), 0);
	assert_int_equal(posix_memalign((void **)&rbuf, 4096, 4096), 0);
	file = malloc(8192);
	assert_non_null(file);

	for (const struct engine_ops *const *o = eng_table; *o; o++) {
		struct engine e;
		struct io_req req;

		if (!usable(*o))
			continue;
		assert_int_equal(eng_init(&e, *o, fd, 1), 0);
		assert_ptr_equal(e.ops, *o);
		assert_int_equal(e.fd, fd);

		memset(wbuf, (*o)->name[0], 4096);
		req = (struct io_req){.buf = wbuf, .offset = 4096, .len = 4096, .op = IO_WRITE};
		assert_int_equal(do_one(&e, &req), 4096);

		req = (struct io_req){.op = IO_FDATASYNC};
		assert_int_equal(do_one(&e, &req), 0);

		memset(rbuf, 0x5a, 4096);
		req = (struct io_req){.buf = rbuf, .offset = 4096, .len = 4096, .op = IO_READ};
		assert_int_equal(do_one(&e, &req), 4096);

		assert_int_equal(pread(fd, file, 8192, 0), 8192);
		if (is_null(*o)) {
			/* Nothing touched: buffer as it was, file as it was. */
			for (int i = 0; i < 4096; i++)
				assert_int_equal((unsigned char)rbuf[i], 0x5a);
			assert_memory_not_equal(file + 4096, wbuf, 4096);
		} else {
			assert_memory_equal(rbuf, wbuf, 4096);
			assert_memory_equal(file + 4096, wbuf, 4096);
		}
		eng_cleanup(&e);
		assert_null(e.ops);
	}
	free(file);
	free(wbuf);
	free(rbuf);
	close(fd);
}

static void test_short_read_at_eof(void **state)
{
	char buf[4096];
	int fd = make_file("short", 6000);

	(void)state;
	for (const struct engine_ops *const *o = eng_table; *o; o++) {
		struct engine e;
		struct io_req req;

		if (!usable(*o))
			continue;
		assert_int_equal(eng_init(&e, *o, fd, 1), 0);
		req = (struct io_req){.buf = buf, .offset = 4096, .len = 4096, .op = IO_READ};
		if (is_null(*o))
			assert_int_equal(do_one(&e, &req), 4096);
		else
			assert_int_equal(do_one(&e, &req), 6000 - 4096);
		req = (struct io_req){.buf = buf, .offset = 8192, .len = 4096, .op = IO_READ};
		assert_int_equal(do_one(&e, &req), is_null(*o) ? 4096 : 0);
		eng_cleanup(&e);
	}
	close(fd);
}

static void test_errors_are_negative_errno(void **state)
{
	char buf[4096] = {0};
	char path[PATH_MAX + 32];
	int wfd = make_file("ro", 4096), rofd, dfd;

	(void)state;
	snprintf(path, sizeof(path), "%s/ro", tu_scratch);
	rofd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(rofd >= 0);
	dfd = open(tu_scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);

	for (const struct engine_ops *const *o = eng_table; *o; o++) {
		struct engine e;
		struct io_req req;
		bool null = is_null(*o);

		if (!usable(*o))
			continue;
		assert_int_equal(eng_init(&e, *o, rofd, 1), 0);
		req = (struct io_req){.buf = buf, .len = 4096, .op = IO_WRITE};
		assert_int_equal(do_one(&e, &req), null ? 4096 : -EBADF);
		eng_cleanup(&e);

		assert_int_equal(eng_init(&e, *o, dfd, 1), 0);
		req = (struct io_req){.buf = buf, .len = 4096, .op = IO_READ};
		/* AIO refuses a file without read_iter (a directory) at io_submit()
		 * with -EINVAL where pread says -EISDIR: still the request's -errno. */
		assert_int_equal(do_one(&e, &req), null ? 4096 : is_libaio(*o) ? -EINVAL : -EISDIR);
		eng_cleanup(&e);

		assert_int_equal(eng_init(&e, *o, -1, 1), 0);
		req = (struct io_req){.buf = buf, .len = 4096, .op = IO_READ};
		assert_int_equal(do_one(&e, &req), null ? 4096 : -EBADF);
		req = (struct io_req){.op = IO_FDATASYNC};
		assert_int_equal(do_one(&e, &req), null ? 0 : -EBADF);
		req = (struct io_req){.buf = buf, .len = 4096, .op = (enum io_op)99};
		assert_int_equal(do_one(&e, &req), -EINVAL);
		eng_cleanup(&e);
	}
	close(dfd);
	close(rofd);
	close(wfd);
}

static void test_reap_nothing_in_flight(void **state)
{
	int fd = make_file("reap", 4096);

	(void)state;
	for (const struct engine_ops *const *o = eng_table; *o; o++) {
		struct io_req *done[4];
		struct engine e;

		if (!usable(*o))
			continue;
		assert_int_equal(eng_init(&e, *o, fd, 4), 0);
		/* Nothing can ever complete: -ETIME at once, even for "forever". */
		assert_int_equal(reap_retry(&e, done, 1, 4, 1000000), -ETIME);
		assert_int_equal(reap_retry(&e, done, 1, 4, -1), -ETIME);
		assert_int_equal(reap_retry(&e, done, 0, 4, 0), 0);
		if (e.ops->cancel)
			assert_int_equal(e.ops->cancel(&e), 0);
		eng_cleanup(&e);
	}
	close(fd);
}

static void test_depth(void **state)
{
	char buf[4][512];
	int fd = make_file("depth", 4096);

	(void)state;
	for (const struct engine_ops *const *o = eng_table; *o; o++) {
		struct io_req req[4], *done[4];
		struct io_req *const reqs[4] = {&req[0], &req[1], &req[2], &req[3]};
		struct engine e;

		if (!usable(*o))
			continue;
		assert_int_equal(eng_init(&e, *o, fd, 0), -EINVAL);
		assert_int_equal(eng_init(&e, *o, fd, ENGINE_MAX_DEPTH + 1), -EINVAL);
		assert_int_equal(eng_init(&e, *o, fd, ENGINE_MAX_DEPTH), 0);
		eng_cleanup(&e);
		eng_cleanup(&e); /* idempotent */

		assert_int_equal(eng_init(&e, *o, fd, 2), 0);
		for (int i = 0; i < 4; i++)
			req[i] = (struct io_req){
				.buf = buf[i], .offset = 512u * i, .len = 512, .op = IO_READ};
		/* Depth 2: two queued (a sync chain may stop early, see
		 * submit_all()), then no room until they are reaped. */
		int took = e.ops->submit(&e, reqs, 4);

		assert_true(took == 1 || took == 2);
		submit_all(&e, reqs + took, 2 - (unsigned)took);
		assert_int_equal(e.ops->submit(&e, reqs + 2, 2), -EBUSY);
		assert_int_equal(e.ops->submit(&e, reqs, 0), 0);
		/* No more than max; synchronous engines hand out in submission order,
		 * the others in completion order. */
		assert_int_equal(reap_retry(&e, done, 1, 1, -1), 1);
		if (is_sync(*o))
			assert_ptr_equal(done[0], &req[0]);
		else
			assert_true(done[0] == &req[0] || done[0] == &req[1]);
		struct io_req *left = done[0] == &req[0] ? &req[1] : &req[0];
		assert_int_equal(e.ops->submit(&e, reqs + 2, 2), 1);
		assert_int_equal(reap_retry(&e, done, 2, 4, -1), 2);
		if (is_sync(*o)) {
			assert_ptr_equal(done[0], left);
			assert_ptr_equal(done[1], &req[2]);
		} else {
			assert_true((done[0] == left && done[1] == &req[2]) ||
				    (done[1] == left && done[0] == &req[2]));
		}
		for (int i = 0; i < 3; i++)
			assert_int_equal(req[i].result, 512);
		assert_int_equal(reap_retry(&e, done, 1, 4, 0), -ETIME);
		eng_cleanup(&e);
	}
	close(fd);
}

/*
 * How long a reap waits for I/O that is done or about to be: it returns as soon
 * as the I/O is back, so this bound only turns a hang into a failure (not a
 * CTest timeout) and no slow machine comes near it.
 */
#define PATIENCE_NS (10 * (int64_t)NSEC_PER_SEC)

/* Reaps until @n requests are back, failing after @timeout_ns without progress. */
static void reap_all(struct engine *e, struct io_req **done, unsigned n, int64_t timeout_ns)
{
	unsigned got = 0;

	while (got < n) {
		int r = reap_retry(e, done + got, n - got, n - got, timeout_ns);

		assert_true(r > 0);
		got += (unsigned)r;
	}
	assert_int_equal(got, n);
}

/* Whether each of reqs[0..n) came back exactly once in done[0..n). */
static void assert_same_set(struct io_req *const *reqs, struct io_req **done, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		unsigned seen = 0;

		for (unsigned j = 0; j < n; j++)
			seen += done[j] == reqs[i];
		assert_int_equal(seen, 1);
	}
}

#define QD 16
#define BS 4096

/*
 * @n writes of BS bytes in one batch, block i from bufs[i] (filled with
 * name[0] + i) to offset (n - 1 - i) * BS, and an fdatasync; then @n reads in
 * one batch back into the same buffers, cleared: the right bytes in the buffers
 * and in the file (the null engine: nothing touched, the buffers stay clear).
 */
static void batch_roundtrip(struct engine *e, int fd, char *const *bufs, unsigned n)
{
	const char name0 = e->ops->name[0];
	const bool null = is_null(e->ops);
	struct io_req req[QD], sync, *reqs[QD], *done[QD];
	char *file = NULL;

	assert_true(n <= QD);
	assert_int_equal(posix_memalign((void **)&file, 4096, (size_t)n * BS), 0);
	for (unsigned i = 0; i < n; i++) {
		memset(bufs[i], name0 + (int)i, BS);
		req[i] = (struct io_req){.buf = bufs[i],
					 .offset = (uint64_t)(n - 1 - i) * BS,
					 .len = BS,
					 .op = IO_WRITE,
					 .result = 12345};
		reqs[i] = &req[i];
	}
	submit_all(e, reqs, n);
	assert_int_equal(e->queued, n);
	reap_all(e, done, n, PATIENCE_NS);
	assert_same_set(reqs, done, n);
	assert_int_equal(e->queued, 0);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(req[i].result, BS);

	sync = (struct io_req){.op = IO_FDATASYNC};
	assert_int_equal(do_one(e, &sync), 0);

	for (unsigned i = 0; i < n; i++) {
		memset(bufs[i], 0, BS);
		req[i].op = IO_READ;
		req[i].result = 12345;
	}
	submit_all(e, reqs, n);
	reap_all(e, done, n, PATIENCE_NS);
	assert_same_set(reqs, done, n);
	for (unsigned i = 0; i < n; i++) {
		unsigned char want = null ? 0 : (unsigned char)(name0 + i);

		assert_int_equal(req[i].result, BS);
		assert_true(req[i].done_ns > 0);
		for (unsigned k = 0; k < BS; k++)
			assert_int_equal((unsigned char)bufs[i][k], want);
	}
	if (!null) {
		assert_int_equal(pread(fd, file, (size_t)n * BS, 0), n * BS);
		for (unsigned i = 0; i < n; i++)
			assert_memory_equal(file + req[i].offset, bufs[i], BS);
	}
	free(file);
}

static void test_roundtrip_depth16(void **state)
{
	char *bufs = NULL, *ptrs[QD];
	int fd = make_file("qd16", (size_t)QD * BS);

	(void)state;
	assert_int_equal(posix_memalign((void **)&bufs, 4096, (size_t)QD * BS), 0);
	for (unsigned i = 0; i < QD; i++)
		ptrs[i] = bufs + i * BS;
	for (const struct engine_ops *const *o = eng_table; *o; o++) {
		struct engine e;

		if (!usable(*o))
			continue;
		assert_int_equal(eng_init(&e, *o, fd, QD), 0);
		batch_roundtrip(&e, fd, ptrs, QD);
		eng_cleanup(&e);
	}
	free(bufs);
	close(fd);
}

/*
 * ENGINE_F_SYNC engines chain a batch: each request's done_ns is its own, in
 * order (null's too, not one stamp for the batch), so request i may be timed
 * from request i-1's. After a request slower
 * than ENG_SYNC_SLOW_NS they hand control back with the rest not started: a
 * first request "submitted" 2 ms ago is slow already, so only it runs.
 */

/*
 * What a sync chain of N reads took: @want, or, where a machine too busy made
 * one of them slower than ENG_SYNC_SLOW_NS, up to and including that one (the
 * rule the chain follows, checked on the stamps). Returns what it took.
 */
static unsigned chain_taken(int r, unsigned want, const struct io_req *req, uint64_t t0)
{
	assert_true(r >= 1 && (unsigned)r <= want);
	if ((unsigned)r < want) {
		uint64_t start = r > 1 ? req[r - 2].done_ns : t0;

		print_message("  chain stopped after %d: a slow request on a busy machine\n", r);
		assert_true(req[r - 1].done_ns - start > ENG_SYNC_SLOW_NS);
	}
	return (unsigned)r;
}
static void test_sync_chain(void **state)
{
	enum { N = 4 };
	char *bufs = NULL;
	int fd = make_file("chain", (size_t)N * BS);

	(void)state;
	assert_int_equal(posix_memalign((void **)&bufs, 4096, (size_t)N * BS), 0);
	for (const struct engine_ops *const *o = eng_table; *o; o++) {
		struct io_req req[N], *reqs[N], *done[N];
		struct engine e;

		if (!is_sync(*o) || !usable(*o))
			continue;
		assert_int_equal(eng_init(&e, *o, fd, N), 0);
		for (int slow = 0; slow < 2; slow++) {
			const uint64_t t0 = eng_now_ns();
			const unsigned want = slow ? 1 : N;

			for (unsigned i = 0; i < N; i++) {
				req[i] = (struct io_req){
					.buf = bufs + i * BS,
					.offset = (uint64_t)i * BS,
					.len = BS,
					.op = IO_READ,
					.submit_ns = slow ? t0 - 2 * ENG_SYNC_SLOW_NS : t0};
				reqs[i] = &req[i];
			}
			unsigned took = chain_taken((*o)->submit(&e, reqs, N), want, req, t0);

			assert_int_equal(reap_retry(&e, done, 1, N, 0), took);
			for (unsigned i = 0; i < took; i++) {
				assert_ptr_equal(done[i], &req[i]);
				assert_int_equal(req[i].result, BS);
				/* its own stamp: later than the one before (a clock read
				 * takes longer than a nanosecond) */
				assert_true(req[i].done_ns > (i ? req[i - 1].done_ns : t0));
			}
			for (unsigned i = took; i < N; i++)
				assert_int_equal(req[i].done_ns, 0); /* not started */
		}
		eng_cleanup(&e);
	}
	free(bufs);
	close(fd);
}

/*
 * register_buffer (optional): engines without it say -EOPNOTSUPP through the
 * wrapper and work as before. With it, requests whose buffer lies inside the
 * region (READ_FIXED/WRITE_FIXED on io_uring) and requests outside it, or only
 * partly inside, all move the right bytes; registering again replaces the region.
 */
static void register_buffer_roundtrip(int fd)
{
	enum { N = 4 };
	char *region = NULL, *outside = NULL, *bufs[N + 2];

	assert_int_equal(posix_memalign((void **)&region, 4096, (size_t)(N + 1) * BS), 0);
	assert_int_equal(posix_memalign((void **)&outside, 4096, BS), 0);
	/* N from inside the region, one from a buffer outside it, one from the
	 * block just past its end (not inside it). */
	for (unsigned i = 0; i < N + 2; i++)
		bufs[i] = i < N ? region + i * BS : i == N ? outside : region + N * BS;
#ifdef WITH_IO_URING
	assert_non_null(eng_io_uring_ops.register_buffer);
#endif
	assert_int_equal(eng_register_buffer(NULL, region, BS), -EINVAL);
	for (const struct engine_ops *const *o = eng_table; *o; o++) {
		struct engine e;
		int r;

		if (!usable(*o))
			continue;
		assert_int_equal(eng_init(&e, *o, fd, N + 2), 0);
		r = eng_register_buffer(&e, region, (size_t)N * BS);
		if (!(*o)->register_buffer) {
			assert_int_equal(r, -EOPNOTSUPP);
		} else {
			assert_int_equal(r, 0);
			assert_int_equal(eng_register_buffer(&e, region, 0), -EINVAL);
			assert_int_equal(eng_register_buffer(&e, NULL, BS), -EINVAL);
			/* Again, the same region: replaces the first registration. */
			assert_int_equal(eng_register_buffer(&e, region, (size_t)N * BS), 0);
		}
		batch_roundtrip(&e, fd, bufs, N + 2);
		eng_cleanup(&e);
	}
	free(region);
	free(outside);
}

static void test_register_buffer(void **state)
{
	int fd = make_file("fixedbuf", (size_t)6 * BS);

	(void)state;
	register_buffer_roundtrip(fd);
	close(fd);
}

/*
 * O_DIRECT on tmpfs, where io_uring sends reads and writes straight to io-wq
 * (IOSQE_ASYNC) with its workers capped at the CPU count: the same bytes move.
 * Skipped without a tmpfs /dev/shm that takes O_DIRECT.
 */
static void test_tmpfs_odirect(void **state)
{
	char path[] = "/dev/shm/iopulse-test-engine.XXXXXX";
	char *data = malloc((size_t)6 * BS);
	int fd = mkstemp(path);

	(void)state;
	assert_non_null(data);
	if (fd < 0 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_DIRECT) < 0) {
		print_message("no O_DIRECT file in /dev/shm here, case SKIPPED\n");
		if (fd >= 0) {
			unlink(path);
			close(fd);
		}
		free(data);
		return;
	}
	unlink(path);
	memset(data, 'x', (size_t)6 * BS);
	assert_int_equal(pwrite(fd, data, (size_t)6 * BS, 0), 6 * BS);
	register_buffer_roundtrip(fd);
	free(data);
	close(fd);
}

/*
 * O_DIRECT at a misaligned offset: -EINVAL from every engine, as the kernel says
 * it. Skipped where the filesystem under TEST_TMPDIR takes no O_DIRECT or does
 * not enforce its alignment (tmpfs).
 */
static void test_odirect_misaligned(void **state)
{
	char path[PATH_MAX + 32];
	char *buf = NULL;
	int fd = make_file("direct", 3 * BS), dfd;

	(void)state;
	close(fd);
	snprintf(path, sizeof(path), "%s/direct", tu_scratch);
	dfd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (dfd < 0) {
		print_message("O_DIRECT not supported under %s: %s\n", tu_scratch, strerror(errno));
		skip();
	}
	assert_int_equal(posix_memalign((void **)&buf, 4096, BS), 0);
	if (pread(dfd, buf, BS, 1) >= 0 || errno != EINVAL) {
		print_message("O_DIRECT alignment not enforced under %s\n", tu_scratch);
		free(buf);
		close(dfd);
		skip();
	}
	for (const struct engine_ops *const *o = eng_table; *o; o++) {
		struct engine e;
		struct io_req req;

		if (!usable(*o))
			continue;
		assert_int_equal(eng_init(&e, *o, dfd, 1), 0);
		req = (struct io_req){.buf = buf, .offset = 1, .len = BS, .op = IO_READ};
		assert_int_equal(do_one(&e, &req), is_null(*o) ? BS : -EINVAL);
		req = (struct io_req){.buf = buf, .offset = 511, .len = BS, .op = IO_WRITE};
		assert_int_equal(do_one(&e, &req), is_null(*o) ? BS : -EINVAL);
		/* Aligned works. */
		req = (struct io_req){.buf = buf, .offset = BS, .len = BS, .op = IO_READ};
		assert_int_equal(do_one(&e, &req), BS);
		eng_cleanup(&e);
	}
	free(buf);
	close(dfd);
}

/*
 * A reap that ignored its timeout would wait for a pipe read forever. Rather
 * than measure how soon it returns, the test releases the read itself after
 * RELEASE_S (an alarm writes to the pipe): a reap that was still waiting then
 * gets the data or -EINTR, not -ETIME, and fails the test instead of hanging it.
 */
#define RELEASE_S 10
static int release_fd = -1;
static volatile sig_atomic_t released;

static void release_read(int sig)
{
	ssize_t w = write(release_fd, "late", 4);

	(void)sig;
	(void)w;
	released = 1;
}

static void arm_release(int fd)
{
	struct sigaction sa = {.sa_handler = release_read}; /* no SA_RESTART */

	release_fd = fd;
	released = 0;
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	alarm(RELEASE_S);
}

/* True if the read was not released, i.e. the reap returned on its own. */
static bool disarm_release(void)
{
	alarm(0);
	signal(SIGALRM, SIG_DFL);
	return !released;
}

/*
 * Reads from an empty pipe never complete on io_uring (the read waits for data),
 * so reap() must give up with -ETIME, and cancel() must bring them back with
 * -ECANCELED (or -EINTR if an io-wq worker had them). Engines that complete
 * inside submit() can have nothing in flight; AIO on a pipe blocks inside
 * io_submit() itself: those engines are left out, and say so.
 */
static void run_never_completing(const struct engine_ops *ops)
{
	int p[2];
	char buf[3][64];
	struct io_req req[3], *reqs[3] = {&req[0], &req[1], &req[2]}, *done[3];
	struct engine e;
	uint64_t t0;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(eng_init(&e, ops, p[0], 4), 0);
	for (int i = 0; i < 3; i++)
		req[i] = (struct io_req){.buf = buf[i], .len = sizeof(buf[i]), .op = IO_READ};

	/* One in flight, never completing. */
	assert_int_equal(e.ops->submit(&e, reqs, 1), 1);
	t0 = eng_now_ns();
	arm_release(p[1]);
	assert_int_equal(reap_retry(&e, done, 1, 1, 50000000), -ETIME);
	assert_true(disarm_release());
	/* It waited for its timeout (a lower bound: no machine is too fast). */
	assert_true(eng_now_ns() - t0 >= 40000000);
	assert_int_equal(reap_retry(&e, done, 0, 1, 0), 0); /* polls */
	assert_int_equal(reap_retry(&e, done, 1, 1, 0), -ETIME);
	assert_int_equal(e.queued, 1);

	/* Two more, then cancel all three. */
	assert_int_equal(e.ops->submit(&e, reqs + 1, 2), 2);
	assert_int_equal(reap_retry(&e, done, 1, 3, 20000000), -ETIME);
	assert_int_equal(e.ops->cancel(&e), 0);
	reap_all(&e, done, 3, PATIENCE_NS);
	assert_same_set(reqs, done, 3);
	for (int i = 0; i < 3; i++) {
		print_message("  cancelled read: %zd\n", req[i].result);
		assert_true(req[i].result == -ECANCELED || req[i].result == -EINTR);
	}
	assert_int_equal(e.queued, 0);
	assert_int_equal(reap_retry(&e, done, 1, 3, -1), -ETIME);
	assert_int_equal(e.ops->cancel(&e), 0); /* nothing in flight */

	/* Still usable: a read that finds data completes. */
	assert_int_equal(write(p[1], "ping", 4), 4);
	assert_int_equal(e.ops->submit(&e, reqs, 1), 1);
	assert_int_equal(reap_retry(&e, done, 1, 1, PATIENCE_NS), 1);
	assert_ptr_equal(done[0], &req[0]);
	assert_int_equal(req[0].result, 4);
	assert_memory_equal(buf[0], "ping", 4);

	/* Cleanup with a read still in flight. */
	assert_int_equal(e.ops->submit(&e, reqs, 1), 1);
	eng_cleanup(&e);
	close(p[0]);
	close(p[1]);
}

static void test_reap_timeout_and_cancel(void **state)
{
	(void)state;
	for (const struct engine_ops *const *o = eng_table; *o; o++) {
		if (is_sync(*o)) {
			print_message("engine %s: nothing is ever in flight, case not applicable\n",
				      (*o)->name);
			continue;
		}
		if (is_libaio(*o)) {
			print_message("engine %s: AIO on a pipe blocks in io_submit(), no request "
				      "that never completes: case not applicable\n",
				      (*o)->name);
			continue;
		}
		if (!usable(*o))
			continue;
		run_never_completing(*o);
		/* Again the way older kernels get it: one cancel per request. */
		print_message("engine %s, fallbacks forced\n", (*o)->name);
		eng_test_force_fallbacks = true;
		run_never_completing(*o);
		eng_test_force_fallbacks = false;
	}
}

/*
 * libaio where the kernel refuses aio fdsync (-EINVAL): fdatasync(2) inside
 * submit(), the request parked and reaped in order with the rest.
 */
static void test_libaio_fdatasync_fallback(void **state)
{
	const struct engine_ops *ops = eng_find("libaio");
	char buf[2][BS];
	struct io_req req[3], *reqs[3] = {&req[0], &req[1], &req[2]}, *done[3];
	struct engine e;
	int fd = make_file("fsync", 2 * BS);

	(void)state;
	if (!ops) {
		print_message("libaio not compiled in\n");
		close(fd);
		skip();
	}
	if (!usable(ops)) {
		close(fd);
		return;
	}
	eng_test_force_fallbacks = true;
	assert_int_equal(eng_init(&e, ops, fd, 3), 0);
	eng_test_force_fallbacks = false;

	/* write, fdatasync, write in one batch: all three come back. */
	memset(buf[0], 'x', BS);
	memset(buf[1], 'y', BS);
	req[0] = (struct io_req){.buf = buf[0], .offset = 0, .len = BS, .op = IO_WRITE};
	req[1] = (struct io_req){.op = IO_FDATASYNC, .result = 12345};
	req[2] = (struct io_req){.buf = buf[1], .offset = BS, .len = BS, .op = IO_WRITE};
	assert_int_equal(e.ops->submit(&e, reqs, 3), 3);
	assert_int_equal(e.queued, 3);
	/* Completed inside submit(). */
	assert_int_equal(req[1].result, 0);
	assert_true(req[1].done_ns > 0);
	reap_all(&e, done, 3, PATIENCE_NS);
	assert_same_set(reqs, done, 3);
	assert_int_equal(req[0].result, BS);
	assert_int_equal(req[2].result, BS);
	assert_int_equal(e.queued, 0);

	/* Alone, and with its error as -errno. */
	req[1] = (struct io_req){.op = IO_FDATASYNC};
	assert_int_equal(do_one(&e, &req[1]), 0);
	eng_cleanup(&e);

	eng_test_force_fallbacks = true;
	assert_int_equal(eng_init(&e, ops, -1, 1), 0);
	eng_test_force_fallbacks = false;
	req[1] = (struct io_req){.op = IO_FDATASYNC};
	assert_int_equal(do_one(&e, &req[1]), -EBADF);
	eng_cleanup(&e);
	close(fd);
}

static void test_resolve(void **state)
{
	const struct engine_ops *ops;
	int err = 12345;

	(void)state;
	ops = eng_resolve("auto", &err);
	assert_non_null(ops);
	assert_int_equal(err, 0);
	print_message("auto: %s\n", ops->name);
	assert_true(strcmp(ops->name, "io_uring") == 0 || strcmp(ops->name, "libaio") == 0 ||
		    strcmp(ops->name, "sync") == 0);
	assert_true(eng_available(ops));
	/* The first available in preference order. */
	for (const struct engine_ops *const *o = eng_table; *o != ops; o++)
		assert_false(eng_available(*o));
#ifdef WITH_IO_URING
	if (eng_available(&eng_io_uring_ops))
		assert_ptr_equal(ops, &eng_io_uring_ops);
#endif
	assert_ptr_equal(eng_resolve("auto", NULL), ops);

	err = 12345;
	assert_ptr_equal(eng_resolve("null", &err), &eng_null_ops);
	assert_int_equal(err, 0);
	assert_ptr_equal(eng_resolve("sync", &err), &eng_sync_ops);
	assert_int_equal(err, 0);
	for (const struct engine_ops *const *o = eng_table; *o; o++) {
		err = 12345;
		ops = eng_resolve((*o)->name, &err);
		if (eng_available(*o)) {
			assert_ptr_equal(ops, *o);
			assert_int_equal(err, 0);
		} else {
			assert_null(ops);
			assert_int_equal(err, -EOPNOTSUPP);
		}
	}
	assert_null(eng_resolve("nope", &err));
	assert_int_equal(err, -ENOENT);
	assert_null(eng_resolve(NULL, &err));
	assert_int_equal(err, -ENOENT);
	assert_null(eng_resolve("nope", NULL));
#ifndef WITH_LIBAIO
	assert_null(eng_resolve("libaio", &err));
	assert_int_equal(err, -ENOENT);
#endif
}

/* One request at a time: "auto" is sync, whatever queues here; a name is a name. */
static void test_resolve_qd1(void **state)
{
	int err = 12345;

	(void)state;
	assert_ptr_equal(eng_resolve_qd1("auto", &err), &eng_sync_ops);
	assert_int_equal(err, 0);
	assert_ptr_equal(eng_resolve_qd1("auto", NULL), &eng_sync_ops);
	for (const struct engine_ops *const *o = eng_table; *o; o++) {
		int want = 12345;

		err = 12345;
		assert_ptr_equal(eng_resolve_qd1((*o)->name, &err), eng_resolve((*o)->name, &want));
		assert_int_equal(err, want);
	}
	assert_null(eng_resolve_qd1("nope", &err));
	assert_int_equal(err, -ENOENT);
	assert_null(eng_resolve_qd1(NULL, &err));
	assert_int_equal(err, -ENOENT);
}

/* The availability probe: fd -1, depth 1, creates the kernel context and nothing else. */
static void test_probe_without_fd(void **state)
{
	(void)state;
	for (const struct engine_ops *const *o = eng_table; *o; o++) {
		struct engine e;
		int r = eng_init(&e, *o, -1, 1);

		print_message("engine %s: init(fd -1) = %d\n", (*o)->name, r);
		assert_int_equal(r == 0, eng_available(*o));
		if (r == 0) {
			assert_int_equal(e.fd, -1);
			eng_cleanup(&e);
		}
	}
}

#ifdef WITH_IO_URING
struct thread_arg {
	struct engine *e;
	struct io_req *req;
	int submit, reap;
};

static void *thread_roundtrip(void *p)
{
	struct thread_arg *a = p;
	struct io_req *const reqs[1] = {a->req};
	struct io_req *done[1];

	a->submit = a->e->ops->submit(a->e, reqs, 1);
	a->reap = reap_retry(a->e, done, 1, 1, PATIENCE_NS);
	return NULL;
}

/*
 * The io_uring ring is bound to the first thread that submits, not to the one
 * that called init (SINGLE_ISSUER with the ring created disabled): a lane may be
 * handed an engine set up elsewhere. Another thread then gets -EEXIST where the
 * kernel has SINGLE_ISSUER (6.0), or simply works where it has not.
 */
static void test_io_uring_thread(void **state)
{
	char buf[512];
	struct io_req req = {.buf = buf, .len = sizeof(buf), .op = IO_READ};
	struct thread_arg a = {.req = &req};
	struct engine e;
	pthread_t t;
	int fd = make_file("thread", 512);

	(void)state;
	if (!usable(&eng_io_uring_ops)) {
		close(fd);
		return;
	}
	assert_int_equal(eng_init(&e, &eng_io_uring_ops, fd, 1), 0);
	a.e = &e;
	assert_int_equal(pthread_create(&t, NULL, thread_roundtrip, &a), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(a.submit, 1);
	assert_int_equal(a.reap, 1);
	assert_int_equal(req.result, 512);
	/* From here, the main thread is a second issuer. */
	{
		struct io_req *const reqs[1] = {&req};
		int r = e.ops->submit(&e, reqs, 1);

		print_message("submit from a second thread: %d\n", r);
		if (r == 1) {
			struct io_req *done[1];

			assert_int_equal(reap_retry(&e, done, 1, 1, PATIENCE_NS), 1);
		} else {
			assert_int_equal(r, -EEXIST);
			assert_int_equal(e.queued, 0);
		}
	}
	eng_cleanup(&e);
	close(fd);
}
#endif

static void test_now_monotonic(void **state)
{
	uint64_t a = eng_now_ns(), b = eng_now_ns();

	(void)state;
	assert_true(a > 0);
	assert_true(b >= a);
}

int main(void)
{
	if (!getenv("TEST_TMPDIR")) {
		fprintf(stderr, "TEST_TMPDIR not set: skipping\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unavailable_under_seccomp), /* first: nothing probed yet */
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_short_read_at_eof),
		cmocka_unit_test(test_errors_are_negative_errno),
		cmocka_unit_test(test_reap_nothing_in_flight),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_roundtrip_depth16),
		cmocka_unit_test(test_sync_chain),
		cmocka_unit_test(test_register_buffer),
		cmocka_unit_test(test_tmpfs_odirect),
		cmocka_unit_test(test_odirect_misaligned),
		cmocka_unit_test(test_reap_timeout_and_cancel),
		cmocka_unit_test(test_libaio_fdatasync_fallback),
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_resolve_qd1),
		cmocka_unit_test(test_probe_without_fd),
#ifdef WITH_IO_URING
		cmocka_unit_test(test_io_uring_thread),
#endif
		cmocka_unit_test(test_now_monotonic),
	};
	int failed = cmocka_run_group_tests(tests, tu_scratch_setup, tu_scratch_teardown);

	if (failed == 0 && engine_skipped) {
		fprintf(stderr, "some engines are compiled in but not available here: their "
				"cases were skipped, so the test is reported skipped\n");
		return 77;
	}
	return failed;
}
