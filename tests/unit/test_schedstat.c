/* SPDX-License-Identifier: MIT */
/*
 * schedstat: the text as the kernel writes it and what is not; the file opened
 * from a fake /proc (its figures, "0 0 0" as no figures, none at all) and from
 * the real one (skipped where the kernel keeps no figure), bound to the thread
 * that opened it.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "lib/schedstat.h"

static void test_parse(void **state)
{
	uint64_t run = 1, wait = 1, n = 1;

	(void)state;
	assert_int_equal(schedstat_parse("740098 123 2\n", &run, &wait, &n), 0);
	assert_int_equal(run, 740098);
	assert_int_equal(wait, 123);
	assert_int_equal(n, 2);
	/* The largest values, and no newline at the end. */
	assert_int_equal(
		schedstat_parse("18446744073709551615 18446744073709551615 0", &run, &wait, &n), 0);
	assert_true(wait == UINT64_MAX);
	assert_int_equal(schedstat_parse("0 0 0\n", &run, &wait, &n), 0);
	assert_int_equal(run + wait + n, 0);

	static const char *const bad[] = {
		"",	     "\n",
		"1 2\n",     "1 2 3 4\n",
		"1  2 3\n",  " 1 2 3\n",
		"-1 2 3\n",  "1 +2 3\n",
		"1 2 x\n",   "1 18446744073709551616 3\n", /* 2^64 */
		"1\t2\t3\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (schedstat_parse(bad[i], &run, &wait, &n) != -EINVAL)
			fail_msg("parsed \"%s\"", bad[i]);
}

/* @text as the fake /proc's thread-self/schedstat under a fresh root. */
static void fake(char *root, size_t len, const char *text)
{
	char path[PATH_MAX + 32];
	FILE *f;

	tu_fake_proc(root, len, 0);
	snprintf(path, sizeof(path), "%s/thread-self/schedstat", root);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void test_open_fake(void **state)
{
	char root[PATH_MAX];
	uint64_t wait = 0;
	int fd;

	(void)state;
	tu_fake_proc(root, sizeof(root), 4242);
	fd = schedstat_open(root);
	assert_true(fd >= 0);
	assert_int_equal(schedstat_read(fd, &wait), 0);
	assert_int_equal(wait, 4242);
	/* Read again through the same descriptor: what the file says now. */
	tu_fake_wait(root, 5000000);
	assert_int_equal(schedstat_read(fd, &wait), 0);
	assert_int_equal(wait, 5000000);
	close(fd);

	/* A kernel that keeps no statistics: "0 0 0". A thread new on its CPU
	 * whose time there reads 0 yet is one that does. */
	fake(root, sizeof(root), "0 0 0\n");
	assert_int_equal(schedstat_open(root), -ENODATA);
	fake(root, sizeof(root), "0 0 1\n");
	fd = schedstat_open(root);
	assert_true(fd >= 0);
	close(fd);
	fake(root, sizeof(root), "a b c\n");
	assert_int_equal(schedstat_open(root), -EINVAL);

	/* A /proc that hides it (a container's), or none at all. */
	tu_new_dir(root, sizeof(root));
	assert_int_equal(schedstat_open(root), -ENOENT);
	assert_int_equal(schedstat_open("/nonexistent/iopulse-test-proc"), -ENOENT);
	assert_int_equal(schedstat_read(-1, &wait), -EBADF);
}

/* The real file: skipped where the kernel keeps no figure. */
static int real_open(void)
{
	int fd = schedstat_open("/proc");

	if (fd == -ENOENT || fd == -ENODATA)
		skip();
	assert_true(fd >= 0);
	return fd;
}

/* The time on a CPU the file @fd says its thread has had. */
static uint64_t run_of(int fd)
{
	char text[96];
	uint64_t run, wait, n;
	ssize_t len = pread(fd, text, sizeof(text) - 1, 0);

	assert_true(len > 0);
	text[len] = '\0';
	assert_int_equal(schedstat_parse(text, &run, &wait, &n), 0);
	return run;
}

/* Another thread: opens its file, hands it over, and sleeps until told to end. */
struct other {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int fd;
	bool opened, end;
};

static void *other_thread(void *arg)
{
	struct other *o = arg;

	pthread_mutex_lock(&o->mu);
	o->fd = schedstat_open("/proc");
	o->opened = true;
	pthread_cond_broadcast(&o->cv);
	while (!o->end)
		pthread_cond_wait(&o->cv, &o->mu);
	pthread_mutex_unlock(&o->mu);
	return NULL;
}

static void test_open_real(void **state)
{
	struct other o = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, -1, false, false};
	volatile uint64_t spin = 0;
	uint64_t a, b, mine = 0, theirs = 0;
	pthread_t t;
	int fd = real_open();

	(void)state;
	assert_int_equal(schedstat_read(fd, &a), 0);
	usleep(1000);
	assert_int_equal(schedstat_read(fd, &b), 0);
	assert_true(b >= a); /* a thread's wait never goes back */

	/* Opened by another thread, it stays that thread's: while that one
	 * sleeps, its time on a CPU stands still as this one's grows. */
	assert_int_equal(pthread_create(&t, NULL, other_thread, &o), 0);
	pthread_mutex_lock(&o.mu);
	while (!o.opened)
		pthread_cond_wait(&o.cv, &o.mu);
	pthread_mutex_unlock(&o.mu);
	assert_true(o.fd >= 0);
	/* A round first: by its end the other thread sleeps (it went on to its
	 * wait after handing the file over), its time on a CPU added up. */
	for (int i = 0; i < 4; i++) {
		if (i == 1) {
			mine = run_of(fd);
			theirs = run_of(o.fd);
		}
		for (uint64_t k = 0; k < 20000000; k++)
			spin += k;
		usleep(1000); /* off the CPU: the time on it is added up */
	}
	assert_true(run_of(fd) > mine);
	assert_int_equal(run_of(o.fd), theirs);
	pthread_mutex_lock(&o.mu);
	o.end = true;
	pthread_cond_broadcast(&o.cv);
	pthread_mutex_unlock(&o.mu);
	assert_int_equal(pthread_join(t, NULL), 0);
	close(o.fd);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_open_fake),
		cmocka_unit_test(test_open_real),
	};

	return cmocka_run_group_tests(tests, tu_scratch_setup, tu_scratch_teardown);
}
