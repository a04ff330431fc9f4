/* SPDX-License-Identifier: MIT */
/* within: a call that answers gives its value and what it wrote; one that does
 * not is given up at the deadline, abandoned, and releases its argument when it
 * returns at last; the limit on abandoned helpers refuses more, and frees up
 * when they return; every argument is released exactly once. A "hung" call is
 * a read(2) of a pipe the test writes to only once it has let go: it cannot
 * return before. */
#include <setjmp.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/clock.h"
#include "lib/within.h"

#define MS 1000000ULL

static atomic_uint released; /* release() calls */
static int released_pipe[2]; /* a byte for each release() */

struct call {
	int in;	 /* fd to read a byte from; -1: none */
	int out; /* what the call wrote */
};

static int call_run(void *arg)
{
	struct call *c = arg;
	char b;

	if (c->in >= 0 && read(c->in, &b, 1) != 1)
		return -EIO;
	c->out = 42;
	return 7;
}

/* May run on a helper thread, where cmocka cannot fail a test: abort(). */
static void call_release(void *arg)
{
	free(arg);
	atomic_fetch_add(&released, 1);
	if (write(released_pipe[1], "r", 1) != 1)
		abort();
}

static struct call *call_new(int in)
{
	struct call *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	c->in = in;
	return c;
}

/* Waits (60 s at most: a loaded machine) for one more release(). */
static void wait_released(void)
{
	struct pollfd p = {.fd = released_pipe[0], .events = POLLIN};
	char b;

	assert_int_equal(poll(&p, 1, 60000), 1);
	assert_int_equal(read(released_pipe[0], &b, 1), 1);
}

static int setup(void **state)
{
	(void)state;
	atomic_store(&released, 0);
	return pipe(released_pipe);
}

static int teardown(void **state)
{
	(void)state;
	close(released_pipe[0]);
	close(released_pipe[1]);
	return 0;
}

static void test_answers(void **state)
{
	static struct within_limit lim = {.max = 1, .stack = 64 * 1024};
	struct within_job *j;
	struct call *c = call_new(-1);
	int result = 0;

	(void)state;
	assert_int_equal(within_start(&j, &lim, call_run, c, call_release), 0);
	/* The call cannot hang: 60 s is only there so that a bug fails, not hangs. */
	assert_int_equal(within_wait(j, eng_mono_ns() + 60000 * MS, &result), 0);
	assert_int_equal(result, 7);
	assert_int_equal(c->out, 42); /* readable until within_put() */
	assert_int_equal(atomic_load(&released), 0);
	within_put(j);
	assert_int_equal(atomic_load(&released), 1); /* the caller let go last */
	assert_int_equal(atomic_load(&lim.abandoned), 0);
	within_put(NULL);
}

static void test_abandoned(void **state)
{
	static struct within_limit lim = {.max = 1};
	struct within_job *j;
	int hang[2], result = -1;

	(void)state;
	assert_int_equal(pipe(hang), 0);
	assert_int_equal(within_start(&j, &lim, call_run, call_new(hang[0]), call_release), 0);
	assert_int_equal(within_wait(j, eng_mono_ns() + 20 * MS, &result), -ETIMEDOUT);
	assert_int_equal(result, -1);
	/* Waiting again is allowed, and times out again. */
	assert_int_equal(within_wait(j, eng_mono_ns() + 20 * MS, &result), -ETIMEDOUT);
	within_put(j);
	assert_int_equal(atomic_load(&lim.abandoned), 1);
	assert_int_equal(atomic_load(&released), 0); /* the helper still has it */

	/* The limit: no second helper while one is abandoned; its argument is
	 * released at once. */
	assert_int_equal(within_start(&j, &lim, call_run, call_new(-1), call_release), -EBUSY);
	assert_null(j);
	assert_int_equal(atomic_load(&released), 1);
	wait_released();

	/* The hung call returns: its helper releases, and the limit frees up. */
	assert_int_equal(write(hang[1], "x", 1), 1);
	wait_released();
	assert_int_equal(atomic_load(&released), 2);
	assert_int_equal(atomic_load(&lim.abandoned), 0);
	assert_int_equal(within_start(&j, &lim, call_run, call_new(-1), call_release), 0);
	assert_int_equal(within_wait(j, eng_mono_ns() + 60000 * MS, &result), 0);
	assert_int_equal(result, 7);
	within_put(j);
	assert_int_equal(atomic_load(&released), 3);
	close(hang[0]);
	close(hang[1]);
}

/* Many in a row: the helpers clean up after themselves. */
static void test_many(void **state)
{
	static struct within_limit lim = {.max = 1, .stack = 64 * 1024};
	struct within_job *j;
	int result;

	(void)state;
	for (unsigned i = 1; i <= 200; i++) {
		assert_int_equal(within_start(&j, &lim, call_run, call_new(-1), call_release), 0);
		assert_int_equal(within_wait(j, eng_mono_ns() + 60000 * MS, &result), 0);
		within_put(j);
		assert_int_equal(atomic_load(&released), i);
		wait_released();
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_answers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abandoned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
