/* SPDX-License-Identifier: MIT */
/*
 * engines: the same conformance cases against every engine in eng_table, on
 * files in a scratch directory of our own under $TEST_TMPDIR.
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "engines/engine.h"

static char scratch[PATH_MAX];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	const char *base = getenv("TEST_TMPDIR");

	(void)state;
	if (!base || !*base) {
		fprintf(stderr, "TEST_TMPDIR not set\n");
		return -1;
	}
	if (mkdir(base, 0755) < 0 && errno != EEXIST)
		return -1;
	snprintf(scratch, sizeof(scratch), "%s/engine.XXXXXX", base);
	return mkdtemp(scratch) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	/* Our own mkdtemp directory only; FTW_PHYS: never follow a symlink out. */
	return nftw(scratch, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static bool is_null(const struct engine_ops *ops)
{
	return strcmp(ops->name, "null") == 0;
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
	snprintf(path, sizeof(path), "%s/%s", scratch, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, data, size, 0), (ssize_t)size);
	free(data);
	return fd;
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
	assert_int_equal(e->ops->reap(e, done, 1, 1, -1), 1);
	assert_ptr_equal(done[0], req);
	assert_true(req->done_ns >= req->submit_ns);
	return req->result;
}

static void test_table(void **state)
{
	unsigned n = 0;

	(void)state;
	for (const struct engine_ops *const *o = eng_table; *o; o++, n++) {
		assert_ptr_equal(eng_find((*o)->name), *o);
		assert_true(eng_available(*o));
		assert_non_null((*o)->init);
		assert_non_null((*o)->submit);
		assert_non_null((*o)->reap);
	}
	assert_true(n >= 2);
	assert_non_null(eng_find("sync"));
	assert_non_null(eng_find("null"));
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

		print_message("engine %s\n", (*o)->name);
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

		print_message("engine %s\n", (*o)->name);
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
	snprintf(path, sizeof(path), "%s/ro", scratch);
	rofd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(rofd >= 0);
	dfd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);

	for (const struct engine_ops *const *o = eng_table; *o; o++) {
		struct engine e;
		struct io_req req;
		bool null = is_null(*o);

		print_message("engine %s\n", (*o)->name);
		assert_int_equal(eng_init(&e, *o, rofd, 1), 0);
		req = (struct io_req){.buf = buf, .len = 4096, .op = IO_WRITE};
		assert_int_equal(do_one(&e, &req), null ? 4096 : -EBADF);
		eng_cleanup(&e);

		assert_int_equal(eng_init(&e, *o, dfd, 1), 0);
		req = (struct io_req){.buf = buf, .len = 4096, .op = IO_READ};
		assert_int_equal(do_one(&e, &req), null ? 4096 : -EISDIR);
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

		print_message("engine %s\n", (*o)->name);
		assert_int_equal(eng_init(&e, *o, fd, 4), 0);
		/* Nothing can ever complete: -ETIME at once, even for "forever". */
		assert_int_equal(e.ops->reap(&e, done, 1, 4, 1000000), -ETIME);
		assert_int_equal(e.ops->reap(&e, done, 1, 4, -1), -ETIME);
		assert_int_equal(e.ops->reap(&e, done, 0, 4, 0), 0);
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

		print_message("engine %s\n", (*o)->name);
		assert_int_equal(eng_init(&e, *o, fd, 0), -EINVAL);
		assert_int_equal(eng_init(&e, *o, fd, ENGINE_MAX_DEPTH + 1), -EINVAL);
		assert_int_equal(eng_init(&e, *o, fd, ENGINE_MAX_DEPTH), 0);
		eng_cleanup(&e);
		eng_cleanup(&e); /* idempotent */

		assert_int_equal(eng_init(&e, *o, fd, 2), 0);
		for (int i = 0; i < 4; i++)
			req[i] = (struct io_req){
				.buf = buf[i], .offset = 512u * i, .len = 512, .op = IO_READ};
		/* Depth 2: two queued, then no room until they are reaped. */
		assert_int_equal(e.ops->submit(&e, reqs, 4), 2);
		assert_int_equal(e.ops->submit(&e, reqs + 2, 2), -EBUSY);
		assert_int_equal(e.ops->submit(&e, reqs, 0), 0);
		/* Handed out in submission order, no more than max. */
		assert_int_equal(e.ops->reap(&e, done, 1, 1, -1), 1);
		assert_ptr_equal(done[0], &req[0]);
		assert_int_equal(e.ops->submit(&e, reqs + 2, 2), 1);
		assert_int_equal(e.ops->reap(&e, done, 1, 4, -1), 2);
		assert_ptr_equal(done[0], &req[1]);
		assert_ptr_equal(done[1], &req[2]);
		for (int i = 0; i < 3; i++)
			assert_int_equal(req[i].result, 512);
		assert_int_equal(e.ops->reap(&e, done, 1, 4, 0), -ETIME);
		eng_cleanup(&e);
	}
	close(fd);
}

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
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_short_read_at_eof),
		cmocka_unit_test(test_errors_are_negative_errno),
		cmocka_unit_test(test_reap_nothing_in_flight),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_now_monotonic),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
