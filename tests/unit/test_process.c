/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for daemon/process: the process_* collector produces plausible
 * values for this very test process. Skipped (77) without /proc.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "daemon/expose/expose.h"
#include "daemon/metrics/process.h"

static double value_of(const struct metrics_snapshot *s, const char *name, enum metric_type type,
		       const char *help)
{
	const struct snap_family *f = tu_find_family(s, name);

	if (!f)
		fail_msg("no family %s", name);
	assert_int_equal(f->type, type);
	assert_string_equal(f->help, help);
	assert_int_equal(f->n_labels, 0);
	assert_int_equal(f->n_series, 1);
	return f->series[0].value;
}

static void test_plausible_values(void **state)
{
	struct metrics *m = metrics_new();
	struct process_metrics *p;
	struct metrics_snapshot *snap;
	double now = (double)time(NULL), cpu, cpu2, start, v;
	volatile double spin = 0;
	unsigned i;

	(void)state;
	assert_non_null(m);
	p = process_metrics_new(m);
	assert_non_null(p);

	/* Burn a little CPU so the counter has something to show. */
	for (i = 0; i < 20000000; i++)
		spin += i;
	process_metrics_collect(p);
	snap = metrics_snapshot(m);
	assert_non_null(snap);
	assert_int_equal(snap->n_families, 6);

	cpu = value_of(snap, "process_cpu_seconds_total", METRIC_COUNTER,
		       "Total user and system CPU time spent in seconds.");
	assert_true(cpu >= 0);
	v = value_of(snap, "process_resident_memory_bytes", METRIC_GAUGE,
		     "Resident memory size in bytes.");
	assert_true(v > 0);
	v = value_of(snap, "process_virtual_memory_bytes", METRIC_GAUGE,
		     "Virtual memory size in bytes.");
	assert_true(v > 0);
	start = value_of(snap, "process_start_time_seconds", METRIC_GAUGE,
			 "Start time of the process since unix epoch in seconds.");
	if (!(start > now - 3600 && start <= now + 1))
		fail_msg("start time %f, now %f", start, now);
	v = value_of(snap, "process_open_fds", METRIC_GAUGE, "Number of open file descriptors.");
	assert_true(v >= 3);
	v = value_of(snap, "process_max_fds", METRIC_GAUGE,
		     "Maximum number of open file descriptors.");
	assert_true(v > 0);
	metrics_snapshot_free(snap);

	/* The CPU counter does not go backwards; a second process_metrics on the same
	 * registry reuses the same families. */
	process_metrics_collect(p);
	{
		struct process_metrics *p2 = process_metrics_new(m);

		assert_non_null(p2);
		process_metrics_free(p2);
	}
	snap = metrics_snapshot(m);
	assert_non_null(snap);
	assert_int_equal(snap->n_families, 6);
	cpu2 = tu_find_family(snap, "process_cpu_seconds_total")->series[0].value;
	assert_true(cpu2 >= cpu);

	/* The page renders (its format is test_expose's business). */
	{
		struct buf out;

		buf_init(&out);
		assert_int_equal(expose_text(snap, &out), 0);
		assert_true(out.len > 0);
		buf_free(&out);
	}
	metrics_snapshot_free(snap);
	process_metrics_free(p);
	process_metrics_free(NULL);
	metrics_free(m);
}

/* The value of the one series of @name, collected now. */
static double collect_value(struct metrics *m, struct process_metrics *p, const char *name)
{
	struct metrics_snapshot *snap;
	double v;

	process_metrics_collect(p);
	snap = metrics_snapshot(m);
	assert_non_null(snap);
	v = tu_find_family(snap, name)->series[0].value;
	metrics_snapshot_free(snap);
	return v;
}

/* process_open_fds at each collect: three more while three more are open, as
 * many as before once they are closed; by the size of /proc/self/fd where the
 * kernel gives it, and by listing it as older kernels need. */
static void check_open_fds(struct metrics *m, struct process_metrics *p)
{
	double before = collect_value(m, p, "process_open_fds");
	int fd[3], i;

	for (i = 0; i < 3; i++) {
		fd[i] = dup(0);
		assert_true(fd[i] >= 0);
	}
	assert_true(collect_value(m, p, "process_open_fds") == before + 3);
	for (i = 0; i < 3; i++)
		close(fd[i]);
	assert_true(collect_value(m, p, "process_open_fds") == before);
}

/* Every collect reads the sources afresh (they are kept open between collects):
 * descriptors opened and closed, CPU burnt and memory touched in between show. */
static void test_fresh_values(void **state)
{
	struct metrics *m = metrics_new();
	struct process_metrics *p;
	volatile double spin = 0;
	double cpu, rss;
	struct timespec t0, t1;
	char *mem;

	(void)state;
	assert_non_null(m);
	p = process_metrics_new(m);
	assert_non_null(p);
	check_open_fds(m, p);
	process_metrics_list_fds(p, true);
	check_open_fds(m, p);
	process_metrics_list_fds(p, false);

	/* 100 ms of CPU. User and system time are each rounded down to a clock
	 * tick (10 ms at USER_HZ 100), so the sum may show up to 20 ms less. */
	cpu = collect_value(m, p, "process_cpu_seconds_total");
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		for (unsigned i = 0; i < 1000000; i++)
			spin += i;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	} while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 100000000L);
	assert_true(collect_value(m, p, "process_cpu_seconds_total") >= cpu + 0.07);

	/* 64 MiB touched: resident. */
	rss = collect_value(m, p, "process_resident_memory_bytes");
	mem = malloc(64 << 20);
	assert_non_null(mem);
	memset(mem, 1, 64 << 20);
	assert_true(collect_value(m, p, "process_resident_memory_bytes") >= rss + (48 << 20));
	free(mem);

	process_metrics_free(p);
	metrics_free(m);
}

static void test_conflicting_family(void **state)
{
	struct metrics *m = metrics_new();

	(void)state;
	assert_non_null(m);
	/* Someone already declared the name with another type. */
	assert_non_null(metrics_family(m, "process_open_fds", METRIC_COUNTER, "x", NULL, NULL, 0));
	assert_null(process_metrics_new(m));
	metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plausible_values),
		cmocka_unit_test(test_fresh_values),
		cmocka_unit_test(test_conflicting_family),
	};

	if (access("/proc/self/stat", R_OK) != 0)
		return 77;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
