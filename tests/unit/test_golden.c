/* SPDX-License-Identifier: MIT */
/*
 * Golden pages of a real burst: the null engine, a fixed clock, and the daemon's
 * own code from the configuration to the rendered page, compared byte for byte
 * with
 *
 *   tests/golden/burst-null.prom            text 0.0.4
 *   tests/golden/burst-null.openmetrics.txt OpenMetrics 1.0
 *   tests/golden/burst-null.protobuf.bin    delimited MetricFamily protobuf, native
 *                                           histograms (raw bytes; test_expose
 *                                           checks the encoder field by field)
 *
 * Where test_expose renders a hand-made registry, this one goes the daemon's way:
 * a YAML configuration (one directory target, one burst probe on the null engine)
 * through cfg_load_string(), a registry with the daemon's native-histogram
 * settings, lane_init() and a lane thread that opens (lays out) the target, runs
 * the burst with burst_run() and publishes it, then lane_collect() and a
 * snapshot rendered as the HTTP server renders it.
 *
 * What makes it reproducible:
 *   - this file defines eng_now_ns(), the clock of engines, bursts and lanes. The
 *     real one is alone in lib/clock.c, so with iopulse_core a static library
 *     the linker takes this definition and never pulls clock.o from the archive.
 *     Each call advances the clock by 1000 + (call * 7919) % 200000 ns, so
 *     latencies spread over the buckets from 1us to ~200us;
 *   - the null engine, which never touches the file;
 *   - rw randread with one job: the burst seeds its rng from getrandom() and
 *     there is no way to seed it from outside, so a read/write mix would make the
 *     counts random. With one direction and a fixed block size the rng only
 *     chooses offsets, which no metric shows;
 *   - the wall-clock values, iopulse_probe_last_run_timestamp_seconds and
 *     iopulse_target_state_since_timestamp_seconds (the lane reads
 *     CLOCK_REALTIME), are set to a fixed time after the run;
 *   - the lane reads sysfs and /proc/stat from fake trees (hostload_roots): a
 *     disk behind the target whose counters never move (idle: the burst runs,
 *     the device gauges read 0) and a CPU nothing is stolen from; and the
 *     burst's job its run-queue wait from the same fake /proc (cpu_wait.h),
 *     which never moves either: a CPU wait of 0.
 * The process-wide families the daemon adds in main.c (build info, engines
 * available on this kernel, process_*, HTTP requests) depend on the machine and
 * are left out: the pages hold exactly what the lane of one target publishes.
 *
 * The whole scenario runs twice in the process, the clock reset in between, and
 * must give the same bytes both times.
 *
 * To regenerate the golden files after an intended change in the output:
 *
 *     UPDATE_GOLDEN=1 ./test_golden
 *
 * then inspect the diff (git diff tests/golden) and lint the text page:
 * promtool check metrics < tests/golden/burst-null.prom
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "config/config.h"
#include "daemon/expose/expose.h"
#include "daemon/targets/hostload.h"
#include "daemon/probes/cpu_wait.h"
#include "daemon/sched/lane.h"
#include "daemon/log.h"
#include "daemon/metrics/metrics.h"
#include "daemon/targets/target.h"
#include "engines/engine.h"

#define GOLDEN_TEXT TEST_GOLDEN_DIR "/burst-null.prom"
#define GOLDEN_OM   TEST_GOLDEN_DIR "/burst-null.openmetrics.txt"
#define GOLDEN_PB   TEST_GOLDEN_DIR "/burst-null.protobuf.bin"

/* The fixed clock: starts at 1000s (0 means "none" to in-flight stamps). */
#define CLOCK_START_NS	 1000000000000ULL
#define FIXED_NOW_NS	 2000000000000ULL /* lane_collect()'s "now" */
#define FIXED_WALL_CLOCK 1700000000.0	  /* iopulse_probe_last_run_timestamp_seconds */

/* ---- the fixed clock ---- */

static _Atomic uint64_t clock_calls;
static _Atomic uint64_t clock_ns = CLOCK_START_NS;

/* Replaces lib/clock.c in this binary (see the top of the file). Only the lane
 * thread calls it while a scenario runs, so the sequence is the same every time;
 * atomics all the same, in case that ever changes. */
uint64_t eng_now_ns(void)
{
	uint64_t call = atomic_fetch_add(&clock_calls, 1);
	uint64_t step = 1000 + (call * 7919) % 200000;

	return atomic_fetch_add(&clock_ns, step) + step;
}

static void clock_reset(void)
{
	atomic_store(&clock_calls, 0);
	atomic_store(&clock_ns, CLOCK_START_NS);
}

/* ---- the scenario ---- */

struct pages {
	struct buf text, om, pb;
	uint64_t clock_calls;
};

static void pages_free(struct pages *p)
{
	buf_free(&p->text);
	buf_free(&p->om);
	buf_free(&p->pb);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* The fake sysfs and procfs of the scenario, under tu_scratch: the disk
 * "golden0" behind directory @dir, idle, a CPU nothing is stolen from, and
 * threads that never wait for one. */
static void fake_host(const char *dir)
{
	static char sys[PATH_MAX + 8], proc[PATH_MAX + 8];
	char path[PATH_MAX + 64];
	struct stat st;

	assert_int_equal(stat(dir, &st), 0);
	snprintf(sys, sizeof(sys), "%s/sys", tu_scratch);
	snprintf(proc, sizeof(proc), "%s/proc", tu_scratch);
	hostload_roots.sys = sys;
	hostload_roots.proc = proc;
	if (mkdir(proc, 0755) < 0) {
		assert_int_equal(errno, EEXIST);
		return; /* made by the first scenario */
	}
	snprintf(path, sizeof(path), "%s/stat", proc);
	write_text(path, "cpu  100 0 50 1000 10 0 5 7 0 0\ncpu0 100 0 50 1000 10 0 5 7 0 0\n");
	snprintf(path, sizeof(path), "%s/thread-self", proc);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/thread-self/schedstat", proc);
	write_text(path, "1000000 0 5\n");
	assert_int_equal(cpu_wait_setup(proc), 0); /* as cmd_run() does, on the fake */
	for (const char *d = "sys\0sys/dev\0sys/dev/block\0sys/block\0sys/block/golden0\0"; *d;
	     d += strlen(d) + 1) {
		snprintf(path, sizeof(path), "%s/%s", tu_scratch, d);
		assert_int_equal(mkdir(path, 0755), 0);
	}
	snprintf(path, sizeof(path), "%s/block/golden0/stat", sys);
	write_text(path, "1 0 8 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n");
	snprintf(path, sizeof(path), "%s/dev/block/%u:%u", sys, major(st.st_dev), minor(st.st_dev));
	assert_int_equal(symlink("../../block/golden0", path), 0);
}

/* One fresh run in its own directory @n, rendered in every format. */
static const struct target_desc golden_desc = {.fstype = "ext4",
					       .device = "nvme0n1p2",
					       .model = "Golden NVMe 1TB",
					       .source = "/dev/nvme0n1p2"};

static void run_scenario(unsigned n, struct pages *out)
{
	struct config *cfg = NULL, *def = NULL;
	struct cfg_error err = {0};
	struct metrics *m;
	struct metrics_snapshot *snap;
	struct lane lane;
	char dir[PATH_MAX + 16], yaml[PATH_MAX + 1024];
	struct timespec deadline;
	int len;

	snprintf(dir, sizeof(dir), "%s/run%u", tu_scratch, n);
	assert_int_equal(mkdir(dir, 0755), 0);
	len = snprintf(yaml, sizeof(yaml),
		       "targets:\n"
		       "  - name: scratch\n"
		       "    directory: %s\n"
		       "    size: 1MiB\n"
		       "    direct: false\n"
		       "    allow_memory_backed: true\n"
		       "    labels:\n"
		       "      zone: eu-1\n"
		       "      volume_type: \"gp3 \\\"fast\\\"\"\n"
		       "probes:\n"
		       "  - name: null-randread\n"
		       "    type: burst\n"
		       "    target: scratch\n"
		       "    engine: null\n"
		       "    rw: randread\n"
		       "    block_size: 4k\n"
		       "    iodepth: 4\n"
		       "    jobs: 1\n"
		       "    ios: 5000\n"
		       "    every: 1h\n",
		       dir);
	assert_true(len > 0 && (size_t)len < sizeof(yaml));
	if (cfg_load_string("<test_golden>", yaml, (size_t)len, &cfg, &err) < 0)
		fail_msg("%s", err.msg);

	/* No `buckets:` above: the daemon's defaults, as in the embedded config. */
	assert_int_equal(cfg_load_default(&def, &err), 0);
	assert_int_equal(cfg->n_buckets, def->n_buckets);
	assert_memory_equal(cfg->buckets_ns, def->buckets_ns,
			    cfg->n_buckets * sizeof(cfg->buckets_ns[0]));
	assert_int_equal(cfg->native_schema, def->native_schema);
	cfg_free(def);

	/* The registry as cmd_run() makes it, the lane as sched_new() makes it. */
	m = metrics_new();
	assert_non_null(m);
	metrics_set_native(m, cfg->native_schema, cfg->native_zero_threshold_ns / 1e9);
	/* The probe file laid out before the clock starts, so the lane reuses it:
	 * the pages then do not depend on how often a layout reads the clock. */
	{
		struct target t;

		target_init(&t, &cfg->targets[0]);
		assert_int_equal(target_open(&t), 0);
		target_close(&t);
	}
	fake_host(dir);
	clock_reset();
	assert_int_equal(lane_init(&lane, cfg, 0, m), 0);
	assert_int_equal(lane.n_probes, 1);
	assert_true(lane.probes[0].ready);
	assert_string_equal(lane.probes[0].engine, "null");

	assert_int_equal(lane_start(&lane), 0);
	lane_enqueue(&lane, 0);
	tu_lane_idle_wait(&lane);
	lane_request_stop(&lane);
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	assert_true(lane_wait(&lane, ((uint64_t)deadline.tv_sec + 10) * 1000000000ULL +
					     (uint64_t)deadline.tv_nsec));

	/* The clock used was ours (the burst alone reads it twice per batch). */
	out->clock_calls = atomic_load(&clock_calls);
	assert_true(out->clock_calls >= 2 * 5000 / 4);

	/* What a scrape does before it renders, at a fixed time. The target's path
	 * and what it is on vary from run to run and machine to machine: the info
	 * series says fixed ones (the path a label value to escape). */
	free(cfg->targets[0].path);
	cfg->targets[0].path = strdup("/srv/golden \"dir\"\\x");
	assert_non_null(cfg->targets[0].path);
	assert_int_equal(probe_metrics_target_info(&lane.series, &golden_desc), 0);
	lane_collect(&lane, FIXED_NOW_NS);
	metrics_set(lane.probes[0].series.last_run, FIXED_WALL_CLOCK);
	metrics_set(lane.series.since, FIXED_WALL_CLOCK);

	buf_init(&out->text);
	buf_init(&out->om);
	buf_init(&out->pb);
	snap = metrics_snapshot_ex(m, 0);
	assert_non_null(snap);
	assert_int_equal(expose_text(snap, &out->text), 0);
	assert_int_equal(expose_openmetrics(snap, &out->om), 0);
	metrics_snapshot_free(snap);
	/* As daemon/http/render.c for protobuf. */
	snap = metrics_snapshot_ex(m, METRICS_SNAP_NATIVE);
	assert_non_null(snap);
	assert_int_equal(expose_protobuf(snap, &out->pb), 0);
	metrics_snapshot_free(snap);
	assert_false(out->text.oom || out->om.oom || out->pb.oom);

	lane_destroy(&lane);
	metrics_free(m);
	cfg_free(cfg);
}

static void assert_same_buf(const struct buf *a, const struct buf *b, const char *what)
{
	if (a->len != b->len || memcmp(a->data, b->data, a->len) != 0)
		fail_msg("%s: two identical runs rendered different pages", what);
}

static void test_burst_null_golden(void **state)
{
	struct pages a, b;

	(void)state;
	run_scenario(1, &a);
	run_scenario(2, &b);
	assert_int_equal(a.clock_calls, b.clock_calls);
	assert_same_buf(&a.text, &b.text, "text");
	assert_same_buf(&a.om, &b.om, "OpenMetrics");
	assert_same_buf(&a.pb, &b.pb, "protobuf");

	/* The burst's results are on the page: 5000 reads of 4KiB, nothing else. */
	assert_non_null(strstr(a.text.data, "iopulse_probe_latency_seconds_count{probe="
					    "\"null-randread\",target=\"scratch\",op=\"read\"} "
					    "5000\n"));
	assert_non_null(strstr(a.text.data, "iopulse_probe_bytes_total{probe=\"null-randread\","
					    "target=\"scratch\",op=\"read\"} 2.048e+07\n"));
	assert_null(strstr(a.text.data, "op=\"write\""));

	tu_check_golden(GOLDEN_TEXT, a.text.data, a.text.len, 0);
	tu_check_golden(GOLDEN_OM, a.om.data, a.om.len, 0);
	tu_check_golden(GOLDEN_PB, a.pb.data, a.pb.len, 1);
	pages_free(&a);
	pages_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_null_golden),
	};

	/* The lane logs the target's layout and the burst; keep the test output quiet. */
	log_max_level = LOG_LVL_WARNING;
	return cmocka_run_group_tests(tests, tu_scratch_setup, tu_scratch_teardown);
}
