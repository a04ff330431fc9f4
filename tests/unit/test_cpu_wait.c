/* SPDX-License-Identifier: MIT */
/*
 * cpu_wait: what a thread that times probe I/O reads of its own run-queue
 * wait, on fake /proc trees (nothing of the machine's is read):
 *   - nothing before the set-up; a /proc that hides the figure: not measured;
 *   - each thread opens its own file at its first read and closes it as it
 *     ends; a set-up again has every thread open the new one.
 */
#include <errno.h>
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "daemon/probes/cpu_wait.h"

/* Descriptors open in this process. */
static unsigned open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	const struct dirent *e;
	unsigned n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* opendir()'s own */
}

/* What a thread saw: its read, and the descriptors open meanwhile. */
struct seen {
	bool ok;
	uint64_t wait;
	unsigned fds;
};

static void *reader(void *arg)
{
	struct seen *s = arg;

	s->ok = cpu_wait_now(&s->wait);
	s->fds = open_fds();
	return NULL;
}

static struct seen in_thread(void)
{
	struct seen s = {0};
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, reader, &s), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	return s;
}

static void test_not_set_up(void **state)
{
	uint64_t ns = 7;

	(void)state;
	assert_false(cpu_wait_measured());
	assert_false(cpu_wait_now(&ns));
	assert_int_equal(ns, 7);
}

static void test_hidden(void **state)
{
	char root[PATH_MAX];
	uint64_t ns;

	(void)state;
	tu_new_dir(root, sizeof(root)); /* no thread-self/ */
	assert_int_equal(cpu_wait_setup(root), -ENOENT);
	assert_false(cpu_wait_measured());
	assert_false(cpu_wait_now(&ns));
	assert_false(in_thread().ok);
}

static void test_per_thread(void **state)
{
	char root[PATH_MAX], other[PATH_MAX];
	unsigned before;
	struct seen s;
	uint64_t ns = 0;

	(void)state;
	tu_fake_proc(root, sizeof(root), 7000);
	assert_int_equal(cpu_wait_setup(root), 0);
	assert_true(cpu_wait_measured());

	before = open_fds();
	assert_true(cpu_wait_now(&ns));
	assert_int_equal(ns, 7000);
	assert_int_equal(open_fds(), before + 1); /* this thread's, kept */
	tu_fake_wait(root, 9000);
	assert_true(cpu_wait_now(&ns));
	assert_int_equal(ns, 9000);
	assert_int_equal(open_fds(), before + 1); /* read again, not opened again */

	/* Another thread opens its own, closed as it ends. */
	s = in_thread();
	assert_true(s.ok);
	assert_int_equal(s.wait, 9000);
	assert_int_equal(s.fds, before + 2);
	assert_int_equal(open_fds(), before + 1);

	/* Set up again: this thread reads the new file, its old one closed. */
	tu_fake_proc(other, sizeof(other), 123);
	assert_int_equal(cpu_wait_setup(other), 0);
	assert_true(cpu_wait_now(&ns));
	assert_int_equal(ns, 123);
	assert_int_equal(open_fds(), before + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_set_up),
		cmocka_unit_test(test_hidden),
		cmocka_unit_test(test_per_thread),
	};

	return cmocka_run_group_tests(tests, tu_scratch_setup, tu_scratch_teardown);
}
