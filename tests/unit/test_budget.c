/* SPDX-License-Identifier: MIT */
/*
 * budget: what a schedule costs a target, projected from the configuration
 * (config/budget.c), and the refusal of one over budget:
 *   - exact figures for pings (read, write, write + fdatasync), verify probes,
 *     bursts by
 *     duration and by 'ios' (throttled, unthrottled, capped), write shares of
 *     randrw and ranges of block sizes, and a target's own expected_latency;
 *   - a schedule at its budget passes, one over it is refused with a message
 *     naming the file, the target's line and the most costly probes, largest
 *     first, with their shares;
 *   - max_write_per_day 0 is no limit;
 *   - at run time, a lane (the daemon's: YAML, lane_init(), its thread, the
 *     null engine) counts what its probes cost, skips write probes once the
 *     day's budget is written (counted, one log line) while reads go on, and
 *     writes again the next day; the measured duty cycle is the busy time
 *     over the last hour of scrapes. This file defines eng_now_ns(), the clock of
 *     lanes (as tests/unit/test_lane.c does), so the day rolls over without
 *     waiting for one.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "config/config.h"
#include "daemon/sched/lane.h"
#include "daemon/log.h"
#include "daemon/metrics/metrics.h"
#include "lib/clock.h"

#define SEC 1000000000ULL
#define DAY (86400 * SEC)

static _Atomic uint64_t fake_now = 1000 * SEC; /* 0 means "none" to in-flight stamps */

uint64_t eng_now_ns(void)
{
	return atomic_load(&fake_now);
}

#define MiB (1024.0 * 1024)

static struct config *load(const char *yaml)
{
	struct cfg_error err = {0};
	struct config *c = NULL;

	if (cfg_load_string("b.yaml", yaml, strlen(yaml), &c, &err) < 0)
		fail_msg("%s", err.msg);
	return c;
}

/* @got equals @want up to the rounding of a few double operations. */
static void assert_near(double got, double want)
{
	if (fabs(got - want) > 1e-9 * (fabs(want) > 1 ? fabs(want) : 1))
		fail_msg("got %.12g, want %.12g", got, want);
}

#define TARGET(extra) "targets:\n  - name: d\n    directory: /srv/x\n" extra "probes:\n"

static void probe_cost(const char *yaml, unsigned pi, double busy_s, double bytes)
{
	struct config *c = load(yaml);
	struct cfg_cost cost;

	cfg_probe_cost(c, &c->probes[pi], &cost);
	assert_near(cost.busy_s_per_hour, busy_s);
	assert_near(cost.write_bytes_per_day, bytes);
	cfg_free(c);
}

static void test_ping_costs(void **state)
{
	(void)state;
	/* 3600 runs x 2ms */
	probe_cost(TARGET("") "  - {name: r, type: ping, target: d}\n", 0, 7.2, 0);
	/* 360 runs x 2 I/Os x 2ms; 8640 runs a day x 4KiB */
	probe_cost(TARGET("") "  - {name: w, type: ping, target: d, op: write, sync: fdatasync, "
			      "interval: 10s}\n",
		   0, 1.44, 8640.0 * 4096);
	/* without fdatasync, one I/O a run; 8KiB blocks */
	probe_cost(TARGET("") "  - {name: w, type: ping, target: d, op: write, interval: 10s, "
			      "block_size: 8k}\n",
		   0, 0.72, 8640.0 * 8192);
	/* a rotating disk: 10ms an I/O, 7200 runs an hour */
	probe_cost(TARGET("    expected_latency: 10ms\n") "  - {name: r, type: ping, target: d, "
							  "interval: 500ms}\n",
		   0, 72, 0);
	/* a warm-up before every run: 'warmup_after' shorter than the interval */
	probe_cost(TARGET("") "  - {name: w, type: ping, target: d, op: write, sync: fdatasync, "
			      "interval: 5m, warmup_after: 1m}\n",
		   0, 12 * 2 * 2 * 0.002, 24.0 * 12 * 2 * 4096);
	/* ...but not when the ping itself keeps the target awake */
	probe_cost(TARGET("") "  - {name: r, type: ping, target: d, interval: 1m, "
			      "warmup_after: 5m}\n",
		   0, 60 * 0.002, 0);
}

static void test_verify_costs(void **state)
{
	(void)state;
	/* 60 runs an hour x (64 reads + 4 writes + 1 fdatasync + the state's write
	 * and fdatasync) x 2ms; 1440 runs a day x (4 x 4KiB + the 4KiB state) */
	probe_cost(TARGET("") "  - {name: v, type: verify, target: d}\n", 0, 60 * 71 * 0.002,
		   1440.0 * (4 * 4096 + 4096));
	/* every 10s, 8 blocks of 8KiB all rewritten: 360 x 19 x 2ms; 8640 x (8 x
	 * 8KiB + 4KiB) */
	probe_cost(TARGET("") "  - {name: v, type: verify, target: d, interval: 10s, blocks: 8, "
			      "blocks_per_run: 8, block_size: 8k}\n",
		   0, 360 * 19 * 0.002, 8640.0 * (8 * 8192 + 4096));
}

static void test_burst_costs(void **state)
{
	(void)state;
	/* the defaults, 10s every 30m: 2 x 10s, reads only */
	probe_cost(TARGET("") "  - {name: b, type: burst, target: d}\n", 0, 20, 0);
	/* 10s every 15m: 4 x 10s */
	probe_cost(TARGET("") "  - {name: b, type: burst, target: d, every: 15m}\n", 0, 40, 0);
	/* ramp counts: 2 x (5s + 30s); randrw 70% reads at 2000 IOPS (below 16 x
	 * 500 a queue), sizes 4k..64k: mean 34KiB. 48 runs a day x 70000 I/Os x
	 * 30% x 34KiB. */
	probe_cost(TARGET("") "  - {name: b, type: burst, target: d, rw: randrw, rwmix_read: 70%, "
			      "block_size: 4k-64k, iodepth: 8, jobs: 2, rate_iops: 2000, ramp: 5s, "
			      "duration: 30s, every: 30m}\n",
		   0, 70, 48.0 * 70000 * (1 - 0.7) * 34 * 1024);
	/* 'ios' at 'rate_iops': 1000 at 100/s is 10s, + 2s ramp, 60 runs an hour */
	probe_cost(TARGET("") "  - {name: b, type: burst, target: d, ios: 1000, rate_iops: 100, "
			      "ramp: 2s, every: 1m}\n",
		   0, 720, 0);
	/* 'ios' unthrottled: 32 in flight x 2ms = 16000/s, 3200 take 0.2s; all
	 * written, 24 a day x 3200 x 4KiB */
	probe_cost(TARGET("") "  - {name: b, type: burst, target: d, rw: randwrite, ios: 3200, "
			      "every: 1h}\n",
		   0, 0.2, 24.0 * 3200 * 4096);
	/* ...capped as the burst caps it: 'every' less 'ramp' (1s here) */
	probe_cost(TARGET("    expected_latency: 1s\n") "  - {name: b, type: burst, target: d, "
							"iodepth: 1, ios: 5, every: 2s, ramp: "
							"1s}\n",
		   0, 1800.0 * 2, 0);
	/* a sequential write by duration, unthrottled: 16000/s x 1s x 1MiB, once an hour */
	probe_cost(TARGET("") "  - {name: b, type: burst, target: d, rw: write, block_size: 1m, "
			      "duration: 1s, every: 1h}\n",
		   0, 1, 24.0 * 16000 * MiB);
}

/* A target's cost is the sum of its probes', and only of its own. */
static void test_target_sum(void **state)
{
	struct config *c =
		load("targets:\n  - {name: a, directory: /a}\n  - {name: b, directory: /b}\n"
		     "probes:\n"
		     "  - {name: r, type: ping, target: a}\n"
		     "  - {name: w, type: ping, target: a, op: write, sync: fdatasync, "
		     "interval: 10s}\n"
		     "  - {name: x, type: burst, target: b, every: 1h, duration: 5s}\n");
	struct cfg_cost cost;

	(void)state;
	cfg_target_cost(c, 0, &cost);
	assert_near(cost.busy_s_per_hour, 7.2 + 1.44);
	assert_near(cost.write_bytes_per_day, 8640.0 * 4096);
	cfg_target_cost(c, 1, &cost);
	assert_near(cost.busy_s_per_hour, 5);
	assert_near(cost.write_bytes_per_day, 0);
	cfg_free(c);
}

static void assert_budget(const char *yaml, int want, const char *msg)
{
	struct config *c = load(yaml);
	struct cfg_error err = {0};

	assert_int_equal(cfg_check_budget(c, &err), want);
	if (msg)
		assert_string_equal(err.msg, msg);
	cfg_free(c);
}

static void test_within_and_over(void **state)
{
	(void)state;
	/* 36s an hour is 1% exactly: within */
	assert_budget(TARGET("    expected_latency: 10ms\n") "  - {name: r, type: ping, "
							     "target: d}\n",
		      0, NULL);
	/* the default burst and a 1s ping (20s + 7.2s an hour) are within 1% */
	assert_budget(TARGET("") "  - {name: b, type: burst, target: d}\n"
				 "  - {name: p, type: ping, target: d}\n",
		      0, NULL);
	/* a default burst every 15m (40s an hour) is over the default 1% */
	assert_budget(TARGET("") "  - {name: b, type: burst, target: d, every: 15m}\n", -EDQUOT,
		      "b.yaml:2:5: target 'd': the schedule keeps it busy 40.0s an hour (1.11%), "
		      "over 'max_duty_cycle' (1%, 36.0s an hour); most costly: b 40.0s (100%); "
		      "probe less often or for less time, or raise 'max_duty_cycle'");
	/* ...and within 2% */
	assert_budget(TARGET("    max_duty_cycle: 2%\n") "  - {name: b, type: burst, target: d, "
							 "every: 15m}\n",
		      0, NULL);
	/* 100% is no limit, even for two bursts that each take half the time */
	assert_budget(TARGET("    max_duty_cycle: 100%\n") "  - {name: b, type: burst, target: d, "
							   "duration: 1s, every: 2s}\n"
							   "  - {name: c, type: burst, target: d, "
							   "duration: 1s, every: 2s}\n"
							   "  - {name: p, type: ping, target: d}\n",
		      0, NULL);
}

/* The three most costly probes, largest first with their shares, then how many
 * more; probes of other targets and probes that cost nothing are not named. */
static void test_costliest_named(void **state)
{
	(void)state;
	assert_budget("targets:\n  - {name: o, directory: /o}\n"
		      "  - name: d\n    directory: /srv/x\n"
		      "probes:\n"
		      "  - {name: other, type: burst, target: o, every: 1h, duration: 1s}\n"
		      "  - {name: small, type: ping, target: d, interval: 10s}\n"
		      "  - {name: big, type: burst, target: d, every: 1h, duration: 20s}\n"
		      "  - {name: ping, type: ping, target: d}\n"
		      "  - {name: mid, type: burst, target: d, every: 1h, duration: 10s}\n",
		      -EDQUOT,
		      "b.yaml:3:5: target 'd': the schedule keeps it busy 37.9s an hour (1.05%), "
		      "over 'max_duty_cycle' (1%, 36.0s an hour); most costly: big 20.0s (53%), "
		      "mid 10.0s (26%), ping 7.2s (19%), and 1 more; probe less often or for less "
		      "time, or raise 'max_duty_cycle'");
	/* writes, with time to spare: a write ping every 100ms writes 3.3GiB a day */
	assert_budget(TARGET("    max_duty_cycle: 100%\n") "  - {name: r, type: ping, target: d}\n"
							   "  - {name: w, type: ping, target: d, "
							   "op: write, interval: 100ms}\n"
							   "  - {name: w2, type: ping, target: d, "
							   "op: write, interval: 1s}\n",
		      -EDQUOT,
		      "b.yaml:2:5: target 'd': the schedule writes 3.6 GiB a day, over "
		      "'max_write_per_day' (1GiB); most costly: w 3.3 GiB (91%), w2 337.5 MiB "
		      "(9%); write less often or less, or raise 'max_write_per_day'");
}

static void test_write_budget_off(void **state)
{
	(void)state;
	assert_budget(
		TARGET("    max_duty_cycle: 100%\n    max_write_per_day: 0\n") "  - {name: w, "
									       "type: ping, "
									       "target: d, "
									       "op: write, "
									       "interval: 100ms}\n",
		0, NULL);
	assert_budget(
		TARGET("    max_duty_cycle: 100%\n    max_write_per_day: 4GiB\n") "  - {name: w, "
										  "type: ping, "
										  "target: d, op: "
										  "write, "
										  "interval: "
										  "100ms}\n",
		0, NULL);
}

/* The embedded default stays well within its budget. */
static void test_default_within(void **state)
{
	struct config *c = NULL;
	struct cfg_error err = {0};
	struct cfg_cost cost;

	(void)state;
	assert_int_equal(cfg_load_default(&c, &err), 0);
	assert_int_equal(cfg_check_budget(c, &err), 0);
	cfg_target_cost(c, 0, &cost);
	assert_near(cost.busy_s_per_hour, 8.64);
	assert_near(cost.write_bytes_per_day, 8640.0 * 4096);
	cfg_free(c);
}

/* ---- run time: the daily write budget ---- */

/* The value of the series of family @name whose labels include @value (the
 * first such); -1 when there is none. */
static double series_value(struct metrics *m, const char *name, const char *value,
			   const char *value2)
{
	struct metrics_snapshot *s = metrics_snapshot(m);
	const struct snap_family *fam;
	double v = -1;

	assert_non_null(s);
	fam = tu_find_family(s, name);
	for (unsigned i = 0; fam && i < fam->n_series && v < 0; i++) {
		bool a = false, b = !value2;

		for (unsigned j = 0; j < fam->n_labels; j++) {
			a |= !strcmp(fam->series[i].values[j], value);
			b |= value2 && !strcmp(fam->series[i].values[j], value2);
		}
		if (a && b)
			v = fam->series[i].value;
	}
	metrics_snapshot_free(s);
	return v;
}

static void run(struct lane *l, unsigned pi)
{
	lane_enqueue(l, pi);
	tu_lane_idle_wait(l);
}

/* The schedule of start_lane() on directory @dir, in *@c. */
static void lane_config(const char *dir, const char *budget, struct config **c)
{
	char yaml[PATH_MAX + 512];
	struct cfg_error err = {0};
	int len;

	len = snprintf(yaml, sizeof(yaml),
		       "targets:\n"
		       "  - {name: t1, directory: %s, size: 1MiB, direct: false,\n"
		       "     allow_memory_backed: true, max_write_per_day: %s}\n"
		       "probes:\n"
		       "  - {name: w, type: ping, target: t1, op: write, engine: null}\n"
		       "  - {name: r, type: ping, target: t1, engine: null}\n",
		       dir, budget);
	assert_true(len > 0 && (size_t)len < sizeof(yaml));
	if (cfg_load_string("<test_budget>", yaml, (size_t)len, c, &err) < 0)
		fail_msg("%s", err.msg);
}

/* A running lane on a fresh directory target t1 with @budget (a max_write_per_day)
 * and two null-engine pings: w (write, index 0) and r (read, index 1). */
static void start_lane(const char *budget, struct config **c, struct lane *l, struct metrics *m)
{
	char dir[PATH_MAX];

	tu_new_dir(dir, sizeof(dir));
	lane_config(dir, budget, c);
	assert_int_equal(lane_init(l, *c, 0, m), 0);
	assert_int_equal(lane_start(l), 0);
}

/* Waits for lane @l's thread to exit. */
static void join_lane(struct lane *l)
{
	struct timespec now;

	lane_request_stop(l);
	clock_gettime(CLOCK_MONOTONIC, &now);
	assert_true(lane_wait(l, ((uint64_t)now.tv_sec + 60) * SEC + (uint64_t)now.tv_nsec));
}

static void stop_lane(struct config *c, struct lane *l, struct metrics *m)
{
	join_lane(l);
	lane_destroy(l);
	metrics_free(m);
	cfg_free(c);
}

static void test_write_budget_at_run_time(void **state)
{
	struct config *c = NULL;
	struct metrics *m = metrics_new();
	struct lane l;
	char *log;

	(void)state;
	assert_non_null(m);
	start_lane("8KiB", &c, &l, m); /* two 4KiB write pings a day */
	log_set_ratelimit(100, 30 * SEC);

	tu_capture_begin();
	run(&l, 0);
	run(&l, 0); /* 8KiB written: the budget is spent */
	run(&l, 0);
	run(&l, 1); /* reads go on */
	run(&l, 0);
	log = tu_capture_end();
	assert_true(series_value(m, "iopulse_probe_runs_total", "w", NULL) == 2);
	assert_true(series_value(m, "iopulse_probe_runs_total", "r", NULL) == 1);
	assert_true(series_value(m, "iopulse_probe_skipped_total", "w", "budget") == 2);
	assert_true(series_value(m, "iopulse_probe_skipped_total", "r", "budget") == -1);
	assert_true(series_value(m, "iopulse_target_written_bytes_total", "t1", NULL) == 8192);
	assert_true(series_value(m, "iopulse_target_written_today_bytes", "t1", NULL) == 8192);
	assert_int_equal(tu_count(log, "wrote its max_write_per_day (8KiB) today"), 1);
	free(log);

	/* A day later, by the monotonic clock: writes again, one line says so. */
	atomic_fetch_add(&fake_now, DAY);
	tu_capture_begin();
	run(&l, 0);
	run(&l, 0);
	run(&l, 0);
	log = tu_capture_end();
	assert_true(series_value(m, "iopulse_probe_runs_total", "w", NULL) == 4);
	assert_true(series_value(m, "iopulse_probe_skipped_total", "w", "budget") == 3);
	assert_true(series_value(m, "iopulse_target_written_bytes_total", "t1", NULL) == 16384);
	assert_true(series_value(m, "iopulse_target_written_today_bytes", "t1", NULL) == 8192);
	assert_int_equal(tu_count(log, "a new day, write probes run again"), 1);
	assert_int_equal(tu_count(log, "wrote its max_write_per_day"), 1);
	free(log);
	stop_lane(c, &l, m);
}

/* Without a budget nothing is skipped, and today's count still starts afresh
 * each day. */
static void test_written_today_without_budget(void **state)
{
	struct config *c = NULL;
	struct metrics *m = metrics_new();
	struct lane l;

	(void)state;
	assert_non_null(m);
	start_lane("0", &c, &l, m);
	for (int i = 0; i < 3; i++)
		run(&l, 0);
	assert_true(series_value(m, "iopulse_target_written_today_bytes", "t1", NULL) == 12288);
	atomic_fetch_add(&fake_now, DAY);
	run(&l, 0);
	assert_true(series_value(m, "iopulse_probe_runs_total", "w", NULL) == 4);
	assert_true(series_value(m, "iopulse_probe_skipped_total", "w", "budget") == 0);
	assert_true(series_value(m, "iopulse_target_written_bytes_total", "t1", NULL) == 16384);
	assert_true(series_value(m, "iopulse_target_written_today_bytes", "t1", NULL) == 4096);
	stop_lane(c, &l, m);
}

static double duty_at(struct lane *l, struct metrics *m, uint64_t now_ns, double busy_s);

/*
 * A reload that keeps the target (the same file read again) hands the day's
 * count to its new lane, as the scheduler does (drop the old lane's info, make
 * the new lane, hand over, lane_take_over(), destroy the old one): a spent budget stays
 * spent, logged once; the counters and today's count go on; the duty cycle's
 * window too.
 */
static void test_budget_across_reload(void **state)
{
	struct config *c = NULL, *c2 = NULL;
	struct metrics *m = metrics_new();
	const uint64_t t0 = 7000 * 60 * SEC; /* on a minute */
	struct lane l, l2;
	struct lane_handover h;
	char *log;

	(void)state;
	assert_non_null(m);
	start_lane("8KiB", &c, &l, m);
	log_set_ratelimit(100, 30 * SEC);
	tu_capture_begin();
	run(&l, 0);
	run(&l, 0); /* 8KiB written: spent */
	run(&l, 0);
	assert_true(duty_at(&l, m, t0, 100) == 0); /* the window's first sample */
	join_lane(&l);

	lane_config(l.cfg->path, "8KiB", &c2);
	assert_true(cfg_target_same(l.cfg, &c2->targets[0]));
	lane_drop_target_info(&l);
	assert_int_equal(lane_init(&l2, c2, 0, m), 0);
	lane_hand_over(&l, &h);
	lane_follow(&l2, &h);
	lane_take_over(&l2, &h);
	lane_handover_release(&h);
	lane_destroy(&l);
	cfg_free(c);
	assert_int_equal(lane_start(&l2), 0);
	run(&l2, 0);
	run(&l2, 1);
	log = tu_capture_end();
	assert_true(series_value(m, "iopulse_probe_runs_total", "w", NULL) == 2);
	assert_true(series_value(m, "iopulse_probe_skipped_total", "w", "budget") == 2);
	assert_true(series_value(m, "iopulse_probe_runs_total", "r", NULL) == 1);
	assert_true(series_value(m, "iopulse_target_written_bytes_total", "t1", NULL) == 8192);
	assert_true(series_value(m, "iopulse_target_written_today_bytes", "t1", NULL) == 8192);
	assert_int_equal(tu_count(log, "wrote its max_write_per_day (8KiB) today"), 1);
	free(log);
	/* 36s busy in the half hour since the old lane's first sample */
	assert_near(duty_at(&l2, m, t0 + 1800 * SEC, 136), 36.0 / 1800);
	/* and the next day's budget as usual */
	atomic_fetch_add(&fake_now, DAY);
	run(&l2, 0);
	assert_true(series_value(m, "iopulse_probe_runs_total", "w", NULL) == 3);
	stop_lane(c2, &l2, m);
}

/* A running lane on a fresh directory target t1, its directory in dir,
 * whose schedule is a format taking the directory once (yaml_lane_start()). */
/* The start of such a schedule: t1 in the directory, 1MiB, with @budget. */
#define MEM_TARGET(budget)                                                                         \
	"targets:\n"                                                                               \
	"  - {name: t1, directory: %s, size: 1MiB, direct: false,\n"                               \
	"     allow_memory_backed: true, max_write_per_day: " budget "}\n"                         \
	"probes:\n"

struct yaml_lane {
	char dir[PATH_MAX];
	struct config *c;
	struct metrics *m;
	struct lane l;
};

static void yaml_lane_start(struct yaml_lane *y, const char *yaml)
{
	char text[PATH_MAX + 1024];
	struct cfg_error err = {0};
	int len;

	y->c = NULL;
	y->m = metrics_new();
	assert_non_null(y->m);
	tu_new_dir(y->dir, sizeof(y->dir));
	len = snprintf(text, sizeof(text), yaml, y->dir);
	assert_true(len > 0 && (size_t)len < sizeof(text));
	if (cfg_load_string("<test_budget>", text, (size_t)len, &y->c, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(lane_init(&y->l, y->c, 0, y->m), 0);
	assert_int_equal(lane_start(&y->l), 0);
}

/* The whole verify file @path into @buf (@len bytes at most); its size. */
static size_t read_file(const char *path, unsigned char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	assert_true(fd >= 0);
	n = pread(fd, buf, len, 0);
	assert_true(n > 0);
	close(fd);
	return (size_t)n;
}

#define VERIFY_BLOCK(i) (4096 + 4096 + (off_t)(i)*4096) /* header, state, blocks */

/*
 * Once the day's budget is spent, a verify probe still reads and checks its
 * blocks: a block corrupted on disk (by the test, in the file the probe made)
 * is counted the same day. It writes nothing then, its state block neither
 * (the file is as it was but for the block the test changed), and says so
 * (iopulse_probe_budget_cut_total); it is never skipped for the budget, while
 * the write ping beside it is. The next day it rewrites its blocks again.
 */
static void test_verify_checks_past_budget(void **state)
{
	static unsigned char before[64 * 1024], after[sizeof(before)], junk[4096];
	/* v: 4 blocks, all rewritten each run; w: a 4KiB write ping */
	static const char yaml[] =
		"targets:\n"
		"  - {name: t1, directory: %s, size: 1MiB, max_write_per_day: 48KiB}\n"
		"probes:\n"
		"  - {name: v, type: verify, target: t1, blocks: 4, blocks_per_run: 4}\n"
		"  - {name: w, type: ping, target: t1, op: write, engine: null}\n";
	char path[PATH_MAX + 32];
	struct yaml_lane y;
	struct metrics *m;
	struct lane *l;
	size_t n;
	double wrote;
	char *log;
	int fd;

	(void)state;
	yaml_lane_start(&y, yaml);
	m = y.m;
	l = &y.l;
	log_set_ratelimit(100, 30 * SEC);
	tu_capture_begin();
	/* 24KiB: the state, 4 blocks, the state; 20KiB: 4 blocks, the state. */
	run(l, 0);
	run(l, 0);
	assert_true(series_value(m, "iopulse_verify_blocks_checked_total", "v", NULL) == 4);
	assert_true(series_value(m, "iopulse_target_written_today_bytes", "t1", NULL) == 44 * 1024);
	run(l, 1); /* 48KiB: spent */
	assert_true(series_value(m, "iopulse_target_written_today_bytes", "t1", NULL) == 48 * 1024);
	wrote = series_value(m, "iopulse_probe_bytes_total", "v", "write");
	assert_true(wrote == 44 * 1024);

	/* Block 2 overwritten whole, behind the probe's back. */
	snprintf(path, sizeof(path), "%s/.iopulse-verify.v", y.dir);
	memset(junk, 0x5a, sizeof(junk));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, junk, sizeof(junk), VERIFY_BLOCK(2)), (ssize_t)sizeof(junk));
	assert_int_equal(fsync(fd), 0);
	close(fd);
	n = read_file(path, before, sizeof(before));

	run(l, 0);
	run(l, 1); /* skipped */
	log = tu_capture_end();
	assert_true(series_value(m, "iopulse_verify_mismatches_total", "v", "wrong_data") == 1);
	assert_int_equal(tu_count(log, "verify probes check their blocks without rewriting"), 1);
	assert_int_equal(tu_count(log, "block at offset 16384 of"), 1);
	free(log);
	assert_true(series_value(m, "iopulse_verify_blocks_checked_total", "v", NULL) == 8);
	assert_true(series_value(m, "iopulse_probe_runs_total", "v", NULL) == 3);
	assert_true(series_value(m, "iopulse_probe_budget_cut_total", "v", NULL) == 1);
	/* It wrote nothing: not a byte counted, the file as it was. */
	assert_true(series_value(m, "iopulse_probe_bytes_total", "v", "write") == wrote);
	assert_true(series_value(m, "iopulse_target_written_today_bytes", "t1", NULL) == 48 * 1024);
	assert_int_equal(read_file(path, after, sizeof(after)), n);
	assert_memory_equal(before, after, n);
	/* Verify probes are never skipped for the budget; the ping is. */
	assert_true(series_value(m, "iopulse_probe_skipped_total", "v", "budget") == -1);
	assert_true(series_value(m, "iopulse_probe_skipped_total", "w", "budget") == 1);
	assert_true(series_value(m, "iopulse_probe_budget_cut_total", "w", NULL) == -1);

	/* The next day: checked (the bad block is not counted again), rewritten. */
	atomic_fetch_add(&fake_now, DAY);
	run(l, 0);
	assert_true(series_value(m, "iopulse_verify_mismatches_total", "v", "wrong_data") == 1);
	assert_true(series_value(m, "iopulse_probe_bytes_total", "v", "write") ==
		    wrote + 20 * 1024);
	assert_true(series_value(m, "iopulse_probe_budget_cut_total", "v", NULL) == 1);
	run(l, 0);
	assert_true(series_value(m, "iopulse_verify_blocks_checked_total", "v", NULL) == 15);
	assert_true(series_value(m, "iopulse_verify_mismatches_total", "v", "wrong_data") == 1);
	stop_lane(y.c, l, m);
}

static const char *const error_names[] = {"io_error", "short_io", "timeout", "target_down",
					  "setup"};

/* The bytes a probe wrote (iopulse_probe_bytes_total, op write). */
static double wrote_of(struct metrics *m, const char *probe)
{
	return series_value(m, "iopulse_probe_bytes_total", probe, "write");
}

/*
 * A write burst stops where its writes reach what is left of the day's budget,
 * never past it, whatever its jobs and depth (2 jobs of 8 here; the null
 * engine, as fast as a burst goes): 4KiB blocks write exactly the budget. The
 * stop is counted (iopulse_probe_budget_cut_total) and is not an error; the
 * next run, with nothing left, is skipped.
 */
static void test_burst_stops_at_budget(void **state)
{
	static const char yaml[] =
		MEM_TARGET("1MiB") "  - {name: b, type: burst, target: t1, rw: randwrite, engine: "
				   "null, iodepth: 8,\n"
				   "     jobs: 2, ios: 100000, every: 1h, busy_backoff: false}\n";
	struct yaml_lane y;
	struct metrics *m;
	struct lane *l;

	(void)state;
	yaml_lane_start(&y, yaml);
	m = y.m;
	l = &y.l;
	run(l, 0);
	assert_true(wrote_of(m, "b") == MiB);
	assert_true(series_value(m, "iopulse_target_written_today_bytes", "t1", NULL) == MiB);
	assert_true(series_value(m, "iopulse_target_written_bytes_total", "t1", NULL) == MiB);
	assert_true(series_value(m, "iopulse_probe_budget_cut_total", "b", NULL) == 1);
	for (unsigned e = 0; e < sizeof(error_names) / sizeof(error_names[0]); e++)
		assert_true(series_value(m, "iopulse_probe_errors_total", "b", error_names[e]) ==
			    0);
	run(l, 0);
	assert_true(series_value(m, "iopulse_probe_runs_total", "b", NULL) == 1);
	assert_true(series_value(m, "iopulse_probe_skipped_total", "b", "budget") == 1);
	assert_true(wrote_of(m, "b") == MiB);
	stop_lane(y.c, l, m);
}

/*
 * With a range of block sizes (4k-64k) and reads among the writes, a burst
 * still never writes past the budget, and ends less than its largest block
 * short of it. Runs go on while a block fits what is left, each stopped at it
 * and counted; the day's writes never pass the budget.
 */
static void test_burst_range_within_budget(void **state)
{
	static const char yaml[] = MEM_TARGET(
		"1000KiB") "  - {name: b, type: burst, target: t1, rw: randrw, rwmix_read: 30%%,\n"
			   "     block_size: 4k-64k, engine: null, iodepth: 4, jobs: 3, ios: "
			   "100000,\n"
			   "     every: 1h, busy_backoff: false}\n";
	const double max = 1000 * 1024.0;
	struct yaml_lane y;
	struct metrics *m;
	struct lane *l;
	double w;

	(void)state;
	yaml_lane_start(&y, yaml);
	m = y.m;
	l = &y.l;
	run(l, 0);
	w = series_value(m, "iopulse_target_written_today_bytes", "t1", NULL);
	assert_true(w <= max && w > max - 64 * 1024);
	assert_true(wrote_of(m, "b") == w);
	assert_true(series_value(m, "iopulse_probe_budget_cut_total", "b", NULL) == 1);
	for (int i = 0; i < 20; i++)
		run(l, 0);
	assert_true(series_value(m, "iopulse_target_written_today_bytes", "t1", NULL) <= max);
	assert_true(series_value(m, "iopulse_probe_budget_cut_total", "b", NULL) +
			    series_value(m, "iopulse_probe_skipped_total", "b", "budget") ==
		    21);
	stop_lane(y.c, l, m);
}

/*
 * A write ping whose warm-up is due ('warmup_after') writes two blocks a run;
 * with room for only one left, it goes without the warm-up: the day's writes
 * end at the budget, not one block past it.
 */
static void test_ping_warmup_within_budget(void **state)
{
	static const char yaml[] = MEM_TARGET("12KiB") "  - {name: w, type: ping, target: t1, op: "
						       "write, engine: null, interval: 10s,\n"
						       "     warmup_after: 1s}\n";
	struct yaml_lane y;
	struct metrics *m;
	struct lane *l;

	(void)state;
	yaml_lane_start(&y, yaml);
	m = y.m;
	l = &y.l;
	run(l, 0); /* a warm-up (none before) and the ping: 8KiB */
	assert_true(series_value(m, "iopulse_target_written_today_bytes", "t1", NULL) == 8192);
	atomic_fetch_add(&fake_now, 2 * SEC); /* idle past warmup_after */
	run(l, 0);			      /* 4KiB left: the ping alone */
	assert_true(series_value(m, "iopulse_target_written_today_bytes", "t1", NULL) == 12288);
	assert_true(series_value(m, "iopulse_probe_warmup_ios_total", "w", "write") == 1);
	atomic_fetch_add(&fake_now, 2 * SEC);
	run(l, 0);
	assert_true(series_value(m, "iopulse_probe_skipped_total", "w", "budget") == 1);
	assert_true(series_value(m, "iopulse_target_written_bytes_total", "t1", NULL) == 12288);
	stop_lane(y.c, l, m);
}

static double duty_at(struct lane *l, struct metrics *m, uint64_t now_ns, double busy_s)
{
	atomic_store(&l->busy_ns, (uint64_t)(busy_s * SEC));
	lane_collect(l, now_ns);
	return series_value(m, "iopulse_target_duty_cycle_ratio", "t1", NULL);
}

/* The gauge, scrape by scrape: since the first scrape, then over the last hour. */
static void test_duty_gauge(void **state)
{
	static const char yaml[] = "targets:\n  - {name: t1, directory: /nonexistent}\n"
				   "probes:\n  - {name: r, type: ping, target: t1, engine: null}\n";
	struct cfg_error err = {0};
	struct config *c = NULL;
	struct metrics *m = metrics_new();
	const uint64_t t0 = 6000 * 60 * SEC; /* on a minute */
	struct lane l;

	(void)state;
	assert_non_null(m);
	if (cfg_load_string("<test_budget>", yaml, sizeof(yaml) - 1, &c, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(lane_init(&l, c, 0, m), 0);
	assert_true(duty_at(&l, m, t0, 0) == 0);		       /* nothing to compare yet */
	assert_near(duty_at(&l, m, t0 + 1800 * SEC, 36), 36.0 / 1800); /* since the first */
	assert_near(duty_at(&l, m, t0 + 1830 * SEC, 36.6), 36.6 / 1830); /* same minute */
	/* 90 minutes in: from the scrape an hour ago (the first left the window) */
	assert_near(duty_at(&l, m, t0 + 5400 * SEC, 72), (72 - 36.0) / 3600);
	lane_destroy(&l);
	metrics_free(m);
	cfg_free(c);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ping_costs),
		cmocka_unit_test(test_verify_costs),
		cmocka_unit_test(test_burst_costs),
		cmocka_unit_test(test_target_sum),
		cmocka_unit_test(test_within_and_over),
		cmocka_unit_test(test_costliest_named),
		cmocka_unit_test(test_write_budget_off),
		cmocka_unit_test(test_default_within),
		cmocka_unit_test(test_write_budget_at_run_time),
		cmocka_unit_test(test_written_today_without_budget),
		cmocka_unit_test(test_budget_across_reload),
		cmocka_unit_test(test_verify_checks_past_budget),
		cmocka_unit_test(test_burst_stops_at_budget),
		cmocka_unit_test(test_burst_range_within_budget),
		cmocka_unit_test(test_ping_warmup_within_budget),
		cmocka_unit_test(test_duty_gauge),
	};

	return cmocka_run_group_tests(tests, tu_scratch_setup, tu_scratch_teardown);
}
