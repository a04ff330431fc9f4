/* SPDX-License-Identifier: MIT */
/*
 * hostload: the busy check before a burst and CPU steal, on fake sysfs and
 * procfs trees made in a scratch directory (nothing of the machine's is read):
 *   - a partition is measured as its whole disk; device-mapper and md devices
 *     as the disks under their slaves/, recursively, each disk once; a device
 *     number sysfs does not know (tmpfs, nfs) and a missing sysfs mean no check;
 *   - stat files of old (11 fields) and new (17) kernels parse, short ones not;
 *   - utilisation and queue depth from two samples at injected times, the
 *     busiest of several disks, the busy/idle decision at the thresholds;
 *   - the retry schedule of a held-back burst (10s doubling, capped at a
 *     quarter of 'every', none past half of it, none for a short 'every');
 *   - steal from the aggregate cpu line, re-read through the same descriptor.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "daemon/targets/hostload.h"
#include "lib/clock.h"

#define SEC NSEC_PER_SEC

static char sys[PATH_MAX + 8];

/* ---- the fake sysfs ---- */

/* @dir/@rel into @buf: a path too long for it fails the test, never truncates. */
static void path_in(char *buf, size_t n, const char *dir, const char *rel)
{
	int w = snprintf(buf, n, "%s/%s", dir, rel);

	assert_true(w > 0 && (size_t)w < n);
}

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX + 64];
	FILE *f;

	path_in(path, sizeof(path), sys, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void dir(const char *rel)
{
	char path[PATH_MAX + 64];

	path_in(path, sizeof(path), sys, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void link_to(const char *target, const char *rel)
{
	char path[PATH_MAX + 64];

	path_in(path, sizeof(path), sys, rel);
	assert_int_equal(symlink(target, path), 0);
}

/* A stat line as kernels since 5.5 write it (17 fields), with io_ticks and
 * time_in_queue as given. */
static void put_stat(const char *disk, unsigned io_ticks, unsigned queue)
{
	char rel[64], text[160];

	snprintf(rel, sizeof(rel), "block/%s/stat", disk);
	snprintf(text, sizeof(text),
		 "    1234        5    98765      321     4321        6   123456      654        0 "
		 "%8u %8u        0        0        0        0       10        2\n",
		 io_ticks, queue);
	put(rel, text);
}

/*
 * The layout of real sysfs, as far as the lookup goes:
 *   sda (sda1, sda2 partitions), sdb, sdc (sdc1), loop0 (empty slaves/, as loop
 *   devices have), md0 over sdb and sdc1, dm-0 over md0 and sda1, dm-1 over
 *   sda1 and sda2 (one disk);
 *   dev/block/M:m links to each, as the kernel's point into devices/.
 */
static int fake_sys_setup(void **state)
{
	static const char *const disks[] = {"sda", "sdb", "sdc", "loop0", "md0", "dm-0", "dm-1"};

	(void)state;
	tu_new_dir(sys, sizeof(sys));
	dir("block");
	dir("dev");
	dir("dev/block");
	for (size_t i = 0; i < sizeof(disks) / sizeof(disks[0]); i++) {
		char rel[64];

		snprintf(rel, sizeof(rel), "block/%s", disks[i]);
		dir(rel);
		put_stat(disks[i], 0, 0);
	}
	dir("block/sda/sda1");
	put("block/sda/sda1/partition", "1\n");
	dir("block/sda/sda2");
	put("block/sda/sda2/partition", "2\n");
	dir("block/sdc/sdc1");
	put("block/sdc/sdc1/partition", "1\n");
	dir("block/loop0/slaves");
	dir("block/md0/slaves");
	link_to("../../sdb", "block/md0/slaves/sdb");
	link_to("../../sdc/sdc1", "block/md0/slaves/sdc1");
	dir("block/dm-0/slaves");
	link_to("../../md0", "block/dm-0/slaves/md0");
	link_to("../../sda/sda1", "block/dm-0/slaves/sda1");
	dir("block/dm-1/slaves");
	link_to("../../sda/sda1", "block/dm-1/slaves/sda1");
	link_to("../../sda/sda2", "block/dm-1/slaves/sda2");
	link_to("../../block/sda/sda1", "dev/block/8:1");
	link_to("../../block/sda", "dev/block/8:0");
	link_to("../../block/loop0", "dev/block/7:0");
	link_to("../../block/dm-0", "dev/block/253:0");
	link_to("../../block/dm-1", "dev/block/253:1");
	return 0;
}

static bool has_disk(const struct devbusy *d, const char *name)
{
	for (unsigned i = 0; i < d->n; i++)
		if (!strcmp(d->name[i], name))
			return true;
	return false;
}

static unsigned disk_index(const struct devbusy *d, const char *name)
{
	for (unsigned i = 0; i < d->n; i++)
		if (!strcmp(d->name[i], name))
			return i;
	fail_msg("no disk %s", name);
	return 0;
}

/* ---- finding the disks ---- */

static void test_partition_is_its_disk(void **state)
{
	struct devbusy d;

	(void)state;
	devbusy_init(&d);
	assert_int_equal(devbusy_open(&d, sys, makedev(8, 1)), 0);
	assert_int_equal(d.n, 1);
	assert_string_equal(d.name[0], "sda");
	assert_int_equal(devbusy_open(&d, sys, makedev(8, 0)), 0); /* the disk itself */
	assert_int_equal(d.n, 1);
	assert_string_equal(d.name[0], "sda");
	assert_int_equal(devbusy_open(&d, sys, makedev(7, 0)), 0); /* empty slaves/ */
	assert_int_equal(d.n, 1);
	assert_string_equal(d.name[0], "loop0");
	devbusy_close(&d);
	assert_int_equal(d.n, 0);
	assert_int_equal(d.block_fd, -1);
}

static void test_slaves_to_disks(void **state)
{
	struct devbusy d;

	(void)state;
	devbusy_init(&d);
	/* dm-0 -> md0 -> sdb, sdc1 (sdc); dm-0 -> sda1 (sda). Not md0 or dm-0. */
	assert_int_equal(devbusy_open(&d, sys, makedev(253, 0)), 0);
	assert_int_equal(d.n, 3);
	assert_true(has_disk(&d, "sda"));
	assert_true(has_disk(&d, "sdb"));
	assert_true(has_disk(&d, "sdc"));
	/* Two partitions of one disk: that disk, once. */
	assert_int_equal(devbusy_open(&d, sys, makedev(253, 1)), 0);
	assert_int_equal(d.n, 1);
	assert_string_equal(d.name[0], "sda");
	devbusy_close(&d);
}

static void test_no_block_device(void **state)
{
	char missing[PATH_MAX + 32];
	struct devbusy d;

	(void)state;
	devbusy_init(&d);
	/* tmpfs, nfs, fuse: an anonymous device number sysfs does not know. */
	assert_int_equal(devbusy_open(&d, sys, makedev(0, 42)), 0);
	assert_int_equal(d.n, 0);
	/* No sysfs at all (a container without it). */
	snprintf(missing, sizeof(missing), "%s/nothing-here", sys);
	assert_int_equal(devbusy_open(&d, missing, makedev(8, 1)), 0);
	assert_int_equal(d.n, 0);
	devbusy_close(&d);
}

/* ---- parsing ---- */

static void test_parse_stat(void **state)
{
	uint64_t ticks = 0, queue = 0;

	(void)state;
	/* Before 4.18: 11 fields. */
	assert_int_equal(devbusy_parse_stat("1 2 3 4 5 6 7 8 9 10 11\n", &ticks, &queue), 0);
	assert_int_equal(ticks, 10);
	assert_int_equal(queue, 11);
	/* Since 5.5: 17, with discards and flushes after. */
	assert_int_equal(devbusy_parse_stat("  1 2 3 4 5 6 7 8 0 4000000000 12345678901 0 0 0 0 "
					    "9 9\n",
					    &ticks, &queue),
			 0);
	assert_int_equal(ticks, 4000000000ULL);
	assert_int_equal(queue, 12345678901ULL);
	assert_int_equal(devbusy_parse_stat("1 2 3 4 5 6 7 8 9 10\n", &ticks, &queue), -EINVAL);
	assert_int_equal(devbusy_parse_stat("", &ticks, &queue), -EINVAL);
	assert_int_equal(devbusy_parse_stat("1 2 x 4 5 6 7 8 9 10 11", &ticks, &queue), -EINVAL);
}

static void test_parse_steal(void **state)
{
	uint64_t t = 0;

	(void)state;
	assert_int_equal(cpusteal_parse("cpu  909491 5997 476270 5221937 126599 0 28624 1231 0 0\n"
					"cpu0 1 2 3 4 5 6 7 8 9 10\n",
					&t),
			 0);
	assert_int_equal(t, 1231);
	/* Kernels before 2.6.11 had no steal field. */
	assert_int_equal(cpusteal_parse("cpu  1 2 3 4 5 6 7\n", &t), -EINVAL);
	/* Not the aggregate line. */
	assert_int_equal(cpusteal_parse("cpu0 1 2 3 4 5 6 7 8 9 10\n", &t), -EINVAL);
	assert_int_equal(cpusteal_parse("intr 1 2 3\n", &t), -EINVAL);
}

/* ---- busy or idle ---- */

static void test_busy_decision(void **state)
{
	struct devbusy d;
	struct devbusy_sample a, b;
	struct devbusy_load l;

	(void)state;
	devbusy_init(&d);
	/* One disk: 200ms of I/O in flight and 300 request-ms in 250ms. */
	assert_int_equal(devbusy_open(&d, sys, makedev(8, 1)), 0);
	put_stat("sda", 1000, 5000);
	assert_int_equal(devbusy_sample(&d, 10 * SEC, &a), 0);
	put_stat("sda", 1200, 5300);
	assert_int_equal(devbusy_sample(&d, 10 * SEC + DEVBUSY_WINDOW_NS, &b), 0);
	devbusy_load(d.n, &a, &b, &l);
	assert_float_equal(l.utilization, 0.8, 1e-9);
	assert_float_equal(l.queue_depth, 1.2, 1e-9);
	assert_true(devbusy_is_busy(&l, 0.5, 4, false));  /* the defaults: busy */
	assert_false(devbusy_is_busy(&l, 0.8, 4, false)); /* at a threshold is not over it */
	assert_false(devbusy_is_busy(&l, 1.0, 4, false)); /* 100%: utilisation never counts */
	assert_true(devbusy_is_busy(&l, 1.0, 1, false));  /* ... the queue still does */
	/* Held back: released only below half of each threshold. A lull of 45%
	 * and queue depth 1.5 (seen while a QD4 job still ran) keeps it held;
	 * 20% and 1.5 releases it; 100% still never counts utilisation. */
	l.utilization = 0.45;
	l.queue_depth = 1.5;
	assert_false(devbusy_is_busy(&l, 0.5, 4, false));
	assert_true(devbusy_is_busy(&l, 0.5, 4, true));
	l.utilization = 0.2;
	assert_false(devbusy_is_busy(&l, 0.5, 4, true));
	l.queue_depth = 2.5;
	assert_true(devbusy_is_busy(&l, 0.5, 4, true));
	l.utilization = 1;
	l.queue_depth = 0;
	assert_false(devbusy_is_busy(&l, 1.0, 4, true));
	/* Unchanged counters: idle. */
	devbusy_load(d.n, &b, &b, &l);
	assert_true(l.utilization == 0 && l.queue_depth == 0);
	assert_false(devbusy_is_busy(&l, 0.5, 4, false));
	/* io_ticks moves in whole ticks: a window read over full stays at 1. */
	b.io_ticks_ms[0] = a.io_ticks_ms[0] + 260;
	devbusy_load(d.n, &a, &b, &l);
	assert_true(l.utilization == 1);
	/* Counters that went back (a disk replaced under the name), or no time
	 * between the samples: nothing to say, idle. */
	devbusy_load(d.n, &b, &a, &l);
	assert_true(l.utilization == 0 && l.queue_depth == 0);
	b.at_ns = a.at_ns;
	devbusy_load(d.n, &a, &b, &l);
	assert_true(l.utilization == 0 && l.queue_depth == 0);

	/* Several disks: the busiest counts. sdc deep in a queue, the others idle. */
	assert_int_equal(devbusy_open(&d, sys, makedev(253, 0)), 0);
	put_stat("sda", 0, 0);
	put_stat("sdb", 0, 0);
	put_stat("sdc", 0, 0);
	assert_int_equal(devbusy_sample(&d, 20 * SEC, &a), 0);
	put_stat("sdb", 10, 10);
	put_stat("sdc", 100, 2000);
	assert_int_equal(devbusy_sample(&d, 20 * SEC + DEVBUSY_WINDOW_NS, &b), 0);
	devbusy_load(d.n, &a, &b, &l);
	assert_float_equal(l.utilization, 0.4, 1e-9);
	assert_float_equal(l.queue_depth, 8.0, 1e-9);
	assert_int_equal(l.dev, disk_index(&d, "sdc"));
	assert_true(devbusy_is_busy(&l, 0.5, 4, false));
	assert_false(devbusy_is_busy(&l, 0.5, 8, false));
	devbusy_close(&d);
}

/* ---- the retry schedule ---- */

static void test_retry_schedule(void **state)
{
	const uint64_t due = 1000 * SEC, every = 15 * 60 * SEC;
	/* 10s, doubling; a quarter of 15m (225s) would come after 450s: no more. */
	const uint64_t want[] = {10, 30, 70, 150, 310};
	uint64_t now = due, delay = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		now = devbusy_retry_at(now, due, every, &delay);
		assert_int_equal(now, due + want[i] * SEC);
	}
	assert_int_equal(devbusy_retry_at(now, due, every, &delay), 0);

	/* 'every: 1h': the doubling reaches the cap of 15m. */
	now = due;
	delay = 0;
	for (int i = 0; i < 7; i++)
		now = devbusy_retry_at(now, due, 3600 * SEC, &delay);
	assert_int_equal(delay, 640 * SEC);
	assert_int_equal(devbusy_retry_at(now, due, 3600 * SEC, &delay), 0); /* 1270+900 > 1800 */
	now = due + 500 * SEC;
	delay = 640 * SEC;
	assert_int_equal(devbusy_retry_at(now, due, 3600 * SEC, &delay), now + 900 * SEC);
	assert_int_equal(delay, 900 * SEC);

	/* 40s: a quarter is 10s, once or twice before half of it. */
	delay = 0;
	assert_int_equal(devbusy_retry_at(due, due, 40 * SEC, &delay), due + 10 * SEC);
	assert_int_equal(devbusy_retry_at(due + 10 * SEC, due, 40 * SEC, &delay), due + 20 * SEC);
	assert_int_equal(devbusy_retry_at(due + 20 * SEC, due, 40 * SEC, &delay), 0);
	/* Under 40s: its next run comes soon enough, no retries. */
	delay = 0;
	assert_int_equal(devbusy_retry_at(due, due, 39 * SEC, &delay), 0);
	assert_int_equal(devbusy_retry_at(due, due, 1 * SEC, &delay), 0);
	assert_int_equal(delay, 0);
}

/* ---- CPU steal ---- */

static void test_steal_read(void **state)
{
	char proc[PATH_MAX + 8], path[PATH_MAX + 32];
	struct cpusteal c;
	uint64_t t = 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN), hz = sysconf(_SC_CLK_TCK);
	FILE *f;

	(void)state;
	tu_new_dir(proc, sizeof(proc));
	path_in(path, sizeof(path), proc, "stat");
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("cpu  10 0 10 100 0 0 0 7 0 0\ncpu0 10 0 10 100 0 0 0 7 0 0\n", f);
	assert_int_equal(fclose(f), 0);

	assert_int_equal(cpusteal_open(&c, proc), 0);
	assert_float_equal(c.tick_s, 1.0 / ((double)hz * (double)cpus), 1e-12);
	assert_int_equal(cpusteal_read(&c, &t), 0);
	assert_int_equal(t, 7);
	/* The same descriptor sees the file as it is now (the kernel's is made at
	 * each read). */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("cpu  20 0 20 200 0 0 0 19 0 0\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(cpusteal_read(&c, &t), 0);
	assert_int_equal(t, 19);
	/* 12 ticks over all CPUs, per CPU in seconds; a counter that went back
	 * (never, but a reset must not count as a huge steal) is none. */
	assert_float_equal(cpusteal_seconds(&c, 7, 19), 12.0 / ((double)hz * (double)cpus), 1e-12);
	assert_true(cpusteal_seconds(&c, 19, 7) == 0);
	cpusteal_close(&c);
	assert_int_equal(cpusteal_read(&c, &t), -EBADF);

	path_in(path, sizeof(path), proc, "none");
	assert_int_equal(cpusteal_open(&c, path), -ENOENT);
	assert_int_equal(cpusteal_read(&c, &t), -EBADF);
}

static int group_setup(void **state)
{
	int r = tu_scratch_setup(state);

	return r ? r : fake_sys_setup(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_partition_is_its_disk),
		cmocka_unit_test(test_slaves_to_disks),
		cmocka_unit_test(test_no_block_device),
		cmocka_unit_test(test_parse_stat),
		cmocka_unit_test(test_parse_steal),
		cmocka_unit_test(test_busy_decision),
		cmocka_unit_test(test_retry_schedule),
		cmocka_unit_test(test_steal_read),
	};

	return cmocka_run_group_tests(tests, group_setup, tu_scratch_teardown);
}
