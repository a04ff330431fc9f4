/* SPDX-License-Identifier: MIT */
/*
 * lane: what a lane decides about its target between runs, driven the daemon's
 * way (a YAML schedule, lane_init(), the lane thread, lane_enqueue()) with a
 * fake clock:
 *   - a failed probe-file layout is not retried before its backoff has passed
 *     (10s, doubling up to 1h, reset by a successful open); the runs in between
 *     count as target_down and touch nothing; each failure is counted in
 *     iopulse_target_layout_failures_total and logged once with its retry time;
 *   - a target that goes away logs one "is down" line for the event, however
 *     the attempts to open it again fail afterwards, and one "is up again";
 *   - a burst held back while its disk is busy is tried again when its retry
 *     time comes (after work already queued), once; its regular run falling
 *     due replaces a pending retry;
 *   - a stop while the disks are measured before a burst starts no burst.
 *
 * This file defines eng_now_ns(), the clock of engines, probes and lanes, as
 * tests/unit/test_golden.c does (the real one is alone in lib/clock.c, which
 * the linker then leaves out of the static library): the backoff is checked
 * without sleeping. The log's own rate limit runs on the real clock.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "config/config.h"
#include "daemon/targets/hostload.h"
#include "daemon/sched/lane.h"
#include "daemon/log.h"
#include "daemon/metrics/metrics.h"
#include "engines/engine.h"

#define SEC 1000000000ULL

/* ---- the fake clock ---- */

static _Atomic uint64_t fake_now = 1000 * SEC; /* 0 means "none" to in-flight stamps */

uint64_t eng_now_ns(void)
{
	return atomic_load(&fake_now);
}

/* ---- log capture (stderr to a temporary file, as tests/unit/test_log.c) ---- */

/* ---- a lane on a directory target ---- */

struct fixture {
	char dir[PATH_MAX];
	struct config *cfg;
	struct metrics *m;
	struct lane lane;
};

/* The lane of the one target of @yaml (@len bytes, snprintf's return), with
 * its thread started if @start. */
static void fixture_lane(struct fixture *f, const char *yaml, int len, bool start)
{
	struct cfg_error err = {0};

	assert_true(len > 0);
	if (cfg_load_string("<test_lane>", yaml, (size_t)len, &f->cfg, &err) < 0)
		fail_msg("%s", err.msg);
	f->m = metrics_new();
	assert_non_null(f->m);
	assert_int_equal(lane_init(&f->lane, f->cfg, 0, f->m), 0);
	if (start)
		assert_int_equal(lane_start(&f->lane), 0);
}

/* cmocka setup: a lane on a fresh directory target t1 with @target_keys (YAML
 * lines) and the one probe @probe (a flow mapping), its thread started. On the
 * heap, and stopped by fixture_teardown() even when a test fails: a lane thread
 * left running on a dead test's stack would scribble over the next test's. */
static int fixture_started(void **state, const char *target_keys, const char *probe, bool start)
{
	char yaml[PATH_MAX + 512];
	struct fixture *f = calloc(1, sizeof(*f));
	int len;

	assert_non_null(f);
	*state = f;
	tu_new_dir(f->dir, sizeof(f->dir));
	len = snprintf(yaml, sizeof(yaml),
		       "targets:\n"
		       "  - name: t1\n"
		       "    directory: %s\n"
		       "%s"
		       "probes:\n"
		       "  - %s\n",
		       f->dir, target_keys, probe);
	assert_true(len > 0 && (size_t)len < sizeof(yaml));
	fixture_lane(f, yaml, len, start);
	assert_true(f->lane.probes[0].ready);
	return 0;
}

static int fixture_with(void **state, const char *target_keys, const char *probe)
{
	return fixture_started(state, target_keys, probe, true);
}

/* A read ping p1 (the null engine: no disk I/O) on a 1MiB probe file. */
static int fixture_setup(void **state)
{
	return fixture_with(state,
			    "    size: 1MiB\n"
			    "    direct: false\n"
			    "    allow_memory_backed: true\n",
			    "{name: p1, type: ping, target: t1, op: read, engine: null, "
			    "interval: 100ms}");
}

static int fixture_teardown(void **state)
{
	struct fixture *f = *state;
	struct timespec now;
	bool exited;

	if (tu_capturing()) /* a test failed while capturing: give stderr back */
		free(tu_capture_end());
	if (!f)
		return 0;
	lane_request_stop(&f->lane);
	clock_gettime(CLOCK_MONOTONIC, &now);
	exited = lane_wait(&f->lane, ((uint64_t)now.tv_sec + 60) * SEC + (uint64_t)now.tv_nsec);
	if (!exited) {
		/* Still using its memory: leak it rather than free it under the thread. */
		fprintf(stderr, "the lane thread did not stop within a minute\n");
		return -1;
	}
	lane_destroy(&f->lane);
	metrics_free(f->m);
	cfg_free(f->cfg);
	free(f);
	return 0;
}

/* The layout's free-space check fails (keep more free than the disk has), or
 * passes (keep nothing). The lane is idle whenever this is called. */
static void disk_full(struct fixture *f, bool full)
{
	f->cfg->targets[0].keep_free_bytes = full ? UINT64_MAX / 4 : 0;
	f->cfg->targets[0].keep_free_fraction = 0;
}

/* One due ping, run to the end. */
static void run_ping(struct fixture *f)
{
	lane_enqueue(&f->lane, 0);
	tu_lane_idle_wait(&f->lane);
}

/* The value of series {@label=@value...} of family @name: the first series of it
 * (every family here has one per target, or we look for the first). */
static double value_of(struct fixture *f, const char *name, const char *label_value)
{
	struct metrics_snapshot *s = metrics_snapshot(f->m);
	const struct snap_family *fam;
	double v = -1;

	assert_non_null(s);
	fam = tu_find_family(s, name);
	if (!fam) {
		metrics_snapshot_free(s);
		fail_msg("no family %s", name);
	}
	for (unsigned i = 0; i < fam->n_series; i++)
		for (unsigned j = 0; j < fam->n_labels; j++)
			if (strcmp(fam->series[i].values[j], label_value) == 0 && v < 0)
				v = fam->series[i].value;
	metrics_snapshot_free(s);
	if (v < 0)
		fail_msg("no series of %s with a label %s", name, label_value);
	return v;
}

static double layout_failures(struct fixture *f)
{
	return value_of(f, "iopulse_target_layout_failures_total", "t1");
}

static double target_down_errors(struct fixture *f)
{
	return value_of(f, "iopulse_probe_errors_total", "target_down");
}

/* ---- tests ---- */

static void test_layout_backoff(void **state)
{
	struct fixture *f = *state;
	/* Waits after each failure: 10s doubling, 1h at most. */
	static const char *const waits[] = {"10s",    "20s",	"40s",	  "1m20s", "2m40s", "5m20s",
					    "10m40s", "21m20s", "42m40s", "1h",	   "1h"};
	static const uint64_t wait_s[] = {10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600};
	const unsigned n = sizeof(waits) / sizeof(waits[0]);
	char line[128], path[PATH_MAX + 32];
	struct stat st;
	double down;
	char *text;

	log_set_ratelimit(100, 30 * SEC); /* this test counts every line */
	snprintf(path, sizeof(path), "%s/%s", f->dir, TARGET_PROBE_FILE);
	disk_full(f, true);

	tu_capture_begin();
	for (unsigned i = 0; i < n; i++) {
		run_ping(f); /* due: the layout is tried, and fails */
		assert_int_equal((int)layout_failures(f), i + 1);
		assert_false(atomic_load(&f->lane.up));
		down = target_down_errors(f);
		/* Runs due before the wait is over count as target_down, try nothing,
		 * write nothing. */
		for (unsigned k = 0; k < 3; k++) {
			atomic_fetch_add(&fake_now, (wait_s[i] * SEC - 1) / 3);
			if (stat(path, &st) == 0)
				assert_true(st.st_size <= TARGET_HEADER_SIZE);
			run_ping(f);
			assert_int_equal((int)layout_failures(f), i + 1);
			assert_true(target_down_errors(f) == down + k + 1);
		}
		atomic_fetch_add(&fake_now, wait_s[i] * SEC - 3 * ((wait_s[i] * SEC - 1) / 3));
	}
	text = tu_capture_end();
	for (unsigned i = 0; i < n; i++) {
		unsigned want = 0;

		for (unsigned j = 0; j < n; j++) /* "1h" comes twice */
			want += (i == 0) == (j == 0) && strcmp(waits[i], waits[j]) == 0;
		snprintf(line, sizeof(line), "Target t1 is %s: ", i ? "still down" : "down");
		if (!strstr(text, line))
			fail_msg("no line '%s...' in:\n%s", line, text);
		snprintf(line, sizeof(line), ", retrying in %s\n", waits[i]);
		if (tu_count(text, line) != want)
			fail_msg("want %u line(s) ending '%s' in:\n%s", want, line, text);
	}
	assert_int_equal(tu_count(text, "Target t1 is down: "), 1);
	assert_int_equal(tu_count(text, "Target t1 is still down: "), n - 1);
	assert_int_equal(tu_count(text, "\n"), n); /* nothing else */
	free(text);

	/* The wait is over and there is room: the layout succeeds, the target is up. */
	disk_full(f, false);
	tu_capture_begin();
	run_ping(f);
	text = tu_capture_end();
	assert_true(atomic_load(&f->lane.up));
	assert_int_equal((int)layout_failures(f), n);
	assert_int_equal(tu_count(text, "Target t1 is up again"), 1);
	assert_int_equal(tu_count(text, "\n"), 1);
	free(text);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, TARGET_HEADER_SIZE + (1 << 20));

	/* Success reset the backoff: the probe file goes, its re-layout fails, and the
	 * next try comes 10s later again. */
	disk_full(f, true);
	assert_int_equal(unlink(path), 0);
	tu_capture_begin();
	run_ping(f);
	atomic_fetch_add(&fake_now, 10 * SEC - 1);
	run_ping(f);
	assert_int_equal((int)layout_failures(f), n + 1);
	atomic_fetch_add(&fake_now, 1);
	run_ping(f);
	assert_int_equal((int)layout_failures(f), n + 2);
	text = tu_capture_end();
	assert_int_equal(tu_count(text, "Target t1 is down: "), 1);
	assert_int_equal(tu_count(text, ", retrying in 10s\n"), 1);
	assert_int_equal(tu_count(text, "Target t1 is still down: "), 1);
	assert_int_equal(tu_count(text, ", retrying in 20s\n"), 1);
	free(text);
}

/* Pings until the target is down, a few more, then @fix the cause and ping until
 * it is up: the log must hold exactly one "is down" and one "is up again" line. */
static void one_outage(struct fixture *f, const char *what, void (*fix)(struct fixture *))
{
	double down = target_down_errors(f);
	char *text;

	tu_capture_begin();
	for (unsigned i = 0; i < 5; i++)
		run_ping(f);
	assert_false(atomic_load(&f->lane.up));
	assert_true(target_down_errors(f) == down + 5);
	fix(f);
	run_ping(f);
	assert_true(atomic_load(&f->lane.up));
	text = tu_capture_end();
	if (tu_count(text, "Target t1 is down: ") != 1 ||
	    tu_count(text, "Target t1 is up again") != 1 || tu_count(text, "\n") != 2)
		fail_msg("%s: want one 'is down' and one 'is up again' line, got:\n%s", what, text);
	free(text);
}

/* f->dir, checked to be a subdirectory of our scratch directory. */
static const char *own_dir(struct fixture *f)
{
	size_t n = strlen(tu_scratch);

	assert_true(n > 1 && strncmp(f->dir, tu_scratch, n) == 0 && f->dir[n] == '/' &&
		    f->dir[n + 1] != '\0');
	return f->dir;
}

static char away[PATH_MAX + 8]; /* where the target directory was moved */

static void move_back(struct fixture *f)
{
	assert_int_equal(rename(away, own_dir(f)), 0);
}

static char stranger[PATH_MAX + 32]; /* the probe file's name, someone else's file */

static void remove_stranger(struct fixture *f)
{
	(void)f;
	assert_int_equal(unlink(stranger), 0);
}

/* A target that goes away is one event, one "is down" line with one reason,
 * however the checks and the attempts to open it again fail afterwards. (A
 * directory removed and made again is another directory, which iopulse does not
 * follow: tests/integration/test_target_down_once.sh.) */
static void test_target_down_one_line(void **state)
{
	struct fixture *f = *state;
	FILE *fp;

	log_set_ratelimit(100, 30 * SEC);
	run_ping(f);
	assert_true(atomic_load(&f->lane.up));

	/* The directory goes away (moved), then comes back: the check finds it
	 * gone, the re-opens find no directory. */
	snprintf(away, sizeof(away), "%s.away", own_dir(f));
	assert_int_equal(rename(f->dir, away), 0);
	one_outage(f, "directory moved away", move_back);

	/* The probe file is replaced by a file that is not ours: the check finds it
	 * replaced, the re-open refuses the stranger (a warning and an error, once). */
	snprintf(stranger, sizeof(stranger), "%s/%s", own_dir(f), TARGET_PROBE_FILE);
	assert_int_equal(unlink(stranger), 0);
	fp = fopen(stranger, "w");
	assert_non_null(fp);
	fputs("not a probe file\n", fp);
	assert_int_equal(fclose(fp), 0);
	one_outage(f, "probe file replaced", remove_stranger);
	assert_true(layout_failures(f) == 0);
}

/* An iopulse killed between link() and unlink() naming the probe file left it
 * with its temporary name too: the lane removes that name, says so once, and
 * the target is up on the same file. */
static void test_crash_link_logged(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX + 32], tmp[PATH_MAX + 64], *text;
	struct target t;
	struct stat a, b;

	target_init(&t, &f->cfg->targets[0]); /* the killed iopulse's */
	assert_int_equal(target_open(&t), 0);
	target_close(&t);
	snprintf(path, sizeof(path), "%s/%s", own_dir(f), TARGET_PROBE_FILE);
	snprintf(tmp, sizeof(tmp), "%s.tmp.00000000deadbeef", path);
	assert_int_equal(link(path, tmp), 0);
	assert_int_equal(stat(path, &a), 0);

	tu_capture_begin();
	run_ping(f);
	run_ping(f);
	text = tu_capture_end();
	assert_true(atomic_load(&f->lane.up));
	if (tu_count(text, "Target t1: removed " TARGET_PROBE_FILE ".tmp.00000000deadbeef, a "
			   "second name of ") != 1)
		fail_msg("want one line saying the temporary name was removed, got:\n%s", text);
	free(text);
	assert_int_equal(stat(path, &b), 0);
	assert_true(a.st_ino == b.st_ino && b.st_nlink == 1);
	assert_int_equal(stat(tmp, &b), -1);
}

/* ---- a target whose probes all keep files of their own ---- */

/* Verify probe v1 alone on t1: 2 blocks, one rewritten a run. */
static int verify_only_fixture(void **state)
{
	return fixture_with(state, "",
			    "{name: v1, type: verify, target: t1, interval: 1s, blocks: 2, "
			    "blocks_per_run: 1}");
}

/* Whether @name exists in f->dir. */
static bool in_dir(struct fixture *f, const char *name)
{
	char path[PATH_MAX + 64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	return lstat(path, &st) == 0;
}

/* A target with only verify probes gets no probe file (an older run's is left
 * alone), is up, and its probe runs; a directory put in its place takes it
 * down, once, and nothing is created there. */
static void test_verify_only(void **state)
{
	struct fixture *f = *state;
	char old[PATH_MAX + 32], *text;
	struct stat a, b;
	FILE *fp;

	log_set_ratelimit(100, 30 * SEC);
	for (int i = 0; i < 3; i++) /* the blocks written, then checked */
		run_ping(f);
	assert_true(atomic_load(&f->lane.up));
	assert_false(in_dir(f, TARGET_PROBE_FILE));
	assert_true(in_dir(f, ".iopulse-verify.v1"));
	assert_true(value_of(f, "iopulse_verify_blocks_checked_total", "v1") >= 2);
	assert_true(target_down_errors(f) == 0);
	assert_true(layout_failures(f) == 0);

	/* An older run's probe file: not opened, not re-laid, not removed. */
	snprintf(old, sizeof(old), "%s/%s", own_dir(f), TARGET_PROBE_FILE);
	fp = fopen(old, "w");
	assert_non_null(fp);
	fputs("IOPULSE-PROBE-FILE\nincomplete: being laid out\n", fp);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(stat(old, &a), 0);
	run_ping(f);
	assert_true(atomic_load(&f->lane.up));
	assert_int_equal(stat(old, &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_size == b.st_size &&
		    a.st_mtim.tv_nsec == b.st_mtim.tv_nsec && a.st_mtim.tv_sec == b.st_mtim.tv_sec);
	assert_int_equal(unlink(old), 0);

	/* Replaced: moved away, an empty one made in its place. */
	snprintf(away, sizeof(away), "%s.away", own_dir(f));
	assert_int_equal(rename(f->dir, away), 0);
	assert_int_equal(mkdir(f->dir, 0700), 0);
	tu_capture_begin();
	run_ping(f);
	run_ping(f);
	text = tu_capture_end();
	assert_false(atomic_load(&f->lane.up));
	assert_true(target_down_errors(f) == 2);
	if (tu_count(text, "Target t1 is down: ") != 1 || tu_count(text, "it was replaced") != 1)
		fail_msg("want one 'is down' line saying the directory was replaced, got:\n%s",
			 text);
	free(text);
	assert_false(in_dir(f, TARGET_PROBE_FILE));
	assert_false(in_dir(f, ".iopulse-verify.v1"));
	assert_int_equal(rmdir(f->dir), 0);
	move_back(f);
	run_ping(f);
	assert_true(atomic_load(&f->lane.up));
	assert_false(in_dir(f, TARGET_PROBE_FILE));
}

/* ---- what holds the target, and the info series ---- */

/* Two pings every @p1 and @p2 and a burst every @b1 (indices 0, 1, 2 in the
 * lane) on a target with labels. */
static void three_probes(struct fixture *f, bool start, const char *p1, const char *p2,
			 const char *b1)
{
	char yaml[PATH_MAX + 1024];
	int len;

	tu_new_dir(f->dir, sizeof(f->dir));
	len = snprintf(yaml, sizeof(yaml),
		       "targets:\n"
		       "  - name: t1\n"
		       "    directory: %s\n"
		       "    size: 1MiB\n"
		       "    direct: false\n"
		       "    allow_memory_backed: true\n"
		       "    labels: {zone: eu-1, volume_type: gp3}\n"
		       "probes:\n"
		       "  - {name: p1, type: ping, target: t1, op: read, engine: null, "
		       "interval: %s}\n"
		       "  - {name: p2, type: ping, target: t1, op: read, engine: null, "
		       "interval: %s}\n"
		       "  - {name: b1, type: burst, target: t1, rw: randread, engine: null, "
		       "iodepth: 1, duration: 1s, every: %s}\n",
		       f->dir, p1, p2, b1);
	assert_true(len > 0 && (size_t)len < sizeof(yaml));
	fixture_lane(f, yaml, len, start);
}

static void waits_setup(struct fixture *f, bool start)
{
	three_probes(f, start, "100ms", "2s", "1h");
}

static int waits_fixture(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	*state = f;
	waits_setup(f, true);
	return 0;
}

/* The series of family @name whose labels (the family's and its own) include
 * every name=value pair of @kv (NULL-terminated); NULL if none. In @snap. */
static const struct snap_series *series_with(const struct metrics_snapshot *snap, const char *name,
					     const char *const *kv)
{
	const struct snap_family *fam = tu_find_family(snap, name);

	for (unsigned i = 0; fam && i < fam->n_series; i++) {
		const struct snap_series *s = &fam->series[i];
		bool all = true;

		for (const char *const *p = kv; all && *p; p += 2) {
			bool found = false;

			for (unsigned j = 0; j < fam->n_labels; j++)
				found |= !strcmp(fam->labels[j], p[0]) &&
					 !strcmp(s->values[j], p[1]);
			for (unsigned j = 0; j < s->n_extra; j++)
				found |= !strcmp(s->extra[2 * j], p[0]) &&
					 !strcmp(s->extra[2 * j + 1], p[1]);
			all = found;
		}
		if (all)
			return s;
	}
	return NULL;
}

/* The value of the first series of @name with the labels @kv; -1 if none. */
static double value_with(struct fixture *f, const char *name, const char *const *kv)
{
	struct metrics_snapshot *snap = metrics_snapshot(f->m);
	const struct snap_series *s;
	double v;

	assert_non_null(snap);
	s = series_with(snap, name, kv);
	v = s ? s->value : -1;
	metrics_snapshot_free(snap);
	return v;
}

/* The value of the one series of @name with @probe and @reason; -1 if none. */
static double waits(struct fixture *f, const char *name, const char *probe, const char *reason)
{
	const char *kv[] = {"probe", probe, "reason", reason, NULL};

	return value_with(f, name, kv);
}

#define DEFERRED(f, p, r) waits(f, "iopulse_probe_deferred_total", p, r)
#define SKIPPED(f, p, r)  waits(f, "iopulse_probe_skipped_total", p, r)

/* Every reason exists at 0 from the start, for pings and bursts alike. */
static void assert_waits_zero(struct fixture *f)
{
	static const char *const pings[] = {"p1", "p2"};

	for (unsigned i = 0; i < 2; i++) {
		assert_true(DEFERRED(f, pings[i], "busy") == 0);
		assert_true(DEFERRED(f, pings[i], "burst") == 0);
		assert_true(SKIPPED(f, pings[i], "busy") == 0);
		assert_true(SKIPPED(f, pings[i], "burst") == 0);
	}
	assert_true(SKIPPED(f, "b1", "busy") == 0);
	assert_true(SKIPPED(f, "b1", "burst") == 0);
	assert_true(DEFERRED(f, "b1", "busy") == 0);
	assert_true(DEFERRED(f, "b1", "burst") == 0);
	for (unsigned i = 0; i < 3; i++) {
		const char *p = i < 2 ? pings[i] : "b1";

		assert_true(DEFERRED(f, p, "layout") == 0);
		assert_true(SKIPPED(f, p, "layout") == 0);
		/* A busy disk holds a burst back; it never makes a probe wait. */
		assert_true(SKIPPED(f, p, "device_busy") == 0);
		assert_true(DEFERRED(f, p, "device_busy") == -1);
	}
}

/* A new fixture (no thread) in place of @f's. */
static void waits_restart(struct fixture *f)
{
	lane_destroy(&f->lane);
	metrics_free(f->m);
	cfg_free(f->cfg);
	memset(f, 0, sizeof(*f));
	waits_setup(f, false);
	assert_waits_zero(f);
}

/* Queued (no thread): the head of the queue holds the target. */
static void test_wait_reasons_queued(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	*state = f;
	/* A burst first: the pings behind it wait for a burst. */
	waits_setup(f, false);
	assert_waits_zero(f);
	lane_enqueue(&f->lane, 2);
	lane_enqueue(&f->lane, 0); /* waits behind the burst */
	lane_enqueue(&f->lane, 0); /* due again, still waiting */
	lane_enqueue(&f->lane, 1);
	lane_enqueue(&f->lane, 2); /* due again, still waiting: skipped */
	assert_true(DEFERRED(f, "p1", "burst") == 1);
	assert_true(SKIPPED(f, "p1", "burst") == 1);
	assert_true(DEFERRED(f, "p2", "burst") == 1);
	assert_true(SKIPPED(f, "b1", "busy") == 1);
	assert_true(DEFERRED(f, "p1", "busy") == 0);
	assert_true(SKIPPED(f, "p1", "busy") == 0);
	assert_true(DEFERRED(f, "p2", "busy") == 0);
	waits_restart(f);

	/* A ping first: whatever waits behind it waits for slow storage. */
	lane_enqueue(&f->lane, 0);
	lane_enqueue(&f->lane, 1);
	lane_enqueue(&f->lane, 1);
	lane_enqueue(&f->lane, 0);
	lane_enqueue(&f->lane, 2); /* a burst waits behind pings too */
	assert_true(DEFERRED(f, "p2", "busy") == 1);
	assert_true(SKIPPED(f, "p2", "busy") == 1);
	assert_true(SKIPPED(f, "p1", "busy") == 1);
	assert_true(DEFERRED(f, "b1", "busy") == 1);
	assert_true(SKIPPED(f, "b1", "busy") == 0);
	assert_true(DEFERRED(f, "p1", "burst") == 0);
	assert_true(DEFERRED(f, "p2", "burst") == 0);
	assert_true(SKIPPED(f, "p1", "burst") == 0);
	assert_true(SKIPPED(f, "p2", "burst") == 0);
	waits_restart(f);

	/* The probe file being laid out (by whichever run opened the target): pings
	 * and bursts alike wait for it, as expected, and a burst keeps its turn. */
	lane_enqueue(&f->lane, 0);
	atomic_store(&f->lane.target.layout_total, TARGET_HEADER_SIZE + (1 << 20));
	lane_enqueue(&f->lane, 1);
	lane_enqueue(&f->lane, 1);
	lane_enqueue(&f->lane, 2);
	lane_enqueue(&f->lane, 2);
	assert_true(DEFERRED(f, "p2", "layout") == 1);
	assert_true(SKIPPED(f, "p2", "layout") == 1);
	assert_true(DEFERRED(f, "b1", "layout") == 1);
	assert_true(SKIPPED(f, "b1", "layout") == 1);
	assert_true(DEFERRED(f, "p2", "busy") == 0 && SKIPPED(f, "p2", "busy") == 0);
	assert_true(SKIPPED(f, "b1", "busy") == 0);
	/* Laid out: the ping at the head holds the target again, for slow storage. */
	atomic_store(&f->lane.target.layout_total, 0);
	lane_enqueue(&f->lane, 1);
	assert_true(SKIPPED(f, "p2", "busy") == 1);
}

static bool lane_idle(struct lane *l)
{
	bool idle;

	pthread_mutex_lock(&l->mu);
	idle = !l->busy && l->q_len == 0;
	pthread_mutex_unlock(&l->mu);
	return idle;
}

/* Waits a minute at most for probe @pi to be running. */
static void wait_running(struct lane *l, int pi)
{
	const struct timespec tick = {.tv_nsec = 1000000};

	for (unsigned i = 0; i < 60000 && atomic_load(&l->running) != pi; i++)
		nanosleep(&tick, NULL);
	assert_int_equal(atomic_load(&l->running), pi);
}

/* Waits a minute at most for the target's 1MiB probe file to be laid out. */
static void wait_laid_out(struct lane *l)
{
	const struct timespec tick = {.tv_nsec = 1000000};
	const uint64_t size = TARGET_HEADER_SIZE + (1 << 20);

	for (unsigned i = 0; i < 60000 && (atomic_load(&l->target.layout_done) != size ||
					   atomic_load(&l->target.layout_total));
	     i++)
		nanosleep(&tick, NULL);
	assert_int_equal(atomic_load(&l->target.layout_done), size);
	assert_int_equal(atomic_load(&l->target.layout_total), 0);
}

/* A burst running (the fake clock holds it until the test moves the clock past its
 * duration): pings that fall due meanwhile wait for a burst, not for slow storage. */
static void test_wait_reasons_running_burst(void **state)
{
	struct fixture *f = *state;

	lane_enqueue(&f->lane, 2);
	wait_running(&f->lane, 2);
	wait_laid_out(&f->lane); /* the burst's run opens the target: a layout first */
	lane_enqueue(&f->lane, 0);
	lane_enqueue(&f->lane, 0);
	lane_enqueue(&f->lane, 0);
	lane_enqueue(&f->lane, 1);
	lane_enqueue(&f->lane, 2);
	/* The burst's duration is over (whenever it read its start time). */
	for (unsigned i = 0; i < 60000 && !lane_idle(&f->lane); i++) {
		const struct timespec tick = {.tv_nsec = 1000000};

		atomic_fetch_add(&fake_now, 10 * SEC);
		nanosleep(&tick, NULL);
	}
	tu_lane_idle_wait(&f->lane);
	assert_true(DEFERRED(f, "p1", "burst") == 1);
	assert_true(SKIPPED(f, "p1", "burst") == 2);
	assert_true(DEFERRED(f, "p2", "burst") == 1);
	assert_true(SKIPPED(f, "b1", "busy") == 1);
	assert_true(DEFERRED(f, "p1", "busy") == 0);
	assert_true(SKIPPED(f, "p1", "busy") == 0);
	assert_true(DEFERRED(f, "p2", "busy") == 0);
	assert_true(value_of(f, "iopulse_probe_runs_total", "p1") == 1);
	assert_true(value_of(f, "iopulse_probe_runs_total", "b1") == 1);
}

/* ---- due times (lane_due(): the lane thread's and the scheduler's) ---- */

/* Probe @pi's place in the queue, -1 when not queued. */
static int queue_pos(const struct lane *l, unsigned pi)
{
	for (unsigned i = 0; i < l->q_len; i++)
		if (l->queue[(l->q_head + i) % l->n_probes] == pi)
			return (int)i;
	return -1;
}

/* A lane whose thread never starts (lane_due() is driven by hand): p1 every
 * 100ms, p2 every 2s, b1 every 1h. */
static struct fixture *due_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	*state = f;
	waits_setup(f, false);
	return f;
}

/*
 * Due times at the times lane_due() is told (no thread: nothing runs): what
 * falls due together is handed over in one call, earliest first and in the
 * configuration's order on a tie, and counted as the scheduler counted it
 * (behind another: deferred; due again while still waiting: skipped); a due
 * time is due at that very instant (a wake-up for it is never early); a probe
 * that fell behind drops its missed slots and keeps its phase; a probe never
 * scheduled never falls due.
 */
static void test_due_times(void **state)
{
	struct fixture *f = due_setup(state);
	const uint64_t t = 5000 * SEC, ms = SEC / 1000;
	struct lane *l = &f->lane;

	assert_true(lane_due(l, UINT64_MAX / 2) == 0); /* none scheduled */
	assert_int_equal(l->q_len, 0);

	lane_schedule(l, 1, t); /* p2 first: the tie still goes p1, p2 */
	lane_schedule(l, 0, t);
	lane_schedule(l, 2, t + 30 * SEC);
	assert_true(lane_due(l, t - 1) == t);
	assert_int_equal(l->q_len, 0);
	assert_true(lane_due(l, t) == t + 100 * ms); /* one wake-up, both */
	assert_int_equal(queue_pos(l, 0), 0);
	assert_int_equal(queue_pos(l, 1), 1);
	assert_true(DEFERRED(f, "p1", "busy") == 0);
	assert_true(DEFERRED(f, "p2", "busy") == 1); /* behind p1, as the scheduler had it */
	assert_true(l->probes[1].due_ns == t + 2 * SEC);

	/* A second behind, p1 still waiting: one slot skipped, not ten, and its
	 * phase kept (due at t + 1.1s, not 1.05s + 100ms). */
	assert_true(lane_due(l, t + 1050 * ms) == t + 1100 * ms);
	assert_true(SKIPPED(f, "p1", "busy") == 1);
	assert_true(l->probes[0].due_ns == t + 1100 * ms);
	assert_int_equal(l->q_len, 2);
	assert_true(lane_due(l, t + 1100 * ms) == t + 1200 * ms);
	assert_true(SKIPPED(f, "p1", "busy") == 2);

	/* The burst falls due behind the pings still queued: it waits its turn. */
	assert_true(lane_due(l, t + 30 * SEC) == t + 30 * SEC + 100 * ms);
	assert_true(DEFERRED(f, "b1", "busy") == 1);
	assert_int_equal(queue_pos(l, 2), 2);
	assert_true(l->probes[2].due_ns == t + 30 * SEC + 3600 * SEC);
	assert_true(SKIPPED(f, "p2", "busy") == 1); /* p2 fell due at t + 30s as well */
}

/* A run that laid out the probe file ends before the lane counts what fell due
 * meanwhile (the scheduler's watch timer came late): a slot due before the
 * layout ended waited for the layout, one due after it for a plain busy run. */
static void test_due_after_layout(void **state)
{
	struct fixture *f = due_setup(state);
	const uint64_t t = 5000 * SEC, ms = SEC / 1000;
	struct lane *l = &f->lane;

	lane_schedule(l, 1, t);
	atomic_store(&l->running, 0); /* p1's run, begun at t - 1s, laid the target out */
	l->busy = true;
	atomic_store(&l->run_mono_ns, t - SEC);
	atomic_store(&l->target.layout_ended_ns, t + 500 * ms);
	assert_true(lane_due(l, t + 3 * SEC) == t + 4 * SEC);
	assert_true(DEFERRED(f, "p2", "layout") == 1);
	assert_true(DEFERRED(f, "p2", "busy") == 0);
	assert_true(lane_due(l, t + 5 * SEC) == t + 6 * SEC); /* still queued */
	assert_true(SKIPPED(f, "p2", "busy") == 1);
	assert_true(SKIPPED(f, "p2", "layout") == 0);
	atomic_store(&l->running, -1);
	l->busy = false;
}

/* ---- a burst held back while the disk is busy ---- */

/* Lets burst b1, running on the fake clock, reach the end of its duration. */
static void finish_burst(struct fixture *f)
{
	const struct timespec tick = {.tv_nsec = 1000000};

	for (unsigned i = 0; i < 60000 && !lane_idle(&f->lane); i++) {
		atomic_fetch_add(&fake_now, 10 * SEC);
		nanosleep(&tick, NULL);
	}
	tu_lane_idle_wait(&f->lane);
}

/* Sets probe @pi's retry time (0: none), as a held-back burst does, and wakes
 * the lane to look at it. */
static void set_retry(struct lane *l, unsigned pi, uint64_t at)
{
	pthread_mutex_lock(&l->mu);
	l->probes[pi].busy_retry_ns = at;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

static uint64_t retry_of(struct lane *l, unsigned pi)
{
	uint64_t at;

	pthread_mutex_lock(&l->mu);
	at = l->probes[pi].busy_retry_ns;
	pthread_mutex_unlock(&l->mu);
	return at;
}

/* Moves the fake clock on by @ns and wakes the lane, as the real clock would. */
static void advance(struct lane *l, uint64_t ns)
{
	atomic_fetch_add(&fake_now, ns);
	set_retry(l, 0, 0); /* p1 never has one: only the wake-up */
}

/* The fake clock at the real one at least, as the tests below were written
 * for (the lane's timed waits take a retry's distance from the fake clock). */
static uint64_t clock_at_real(void)
{
	struct timespec ts;
	uint64_t real;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	real = eng_ns(&ts);
	if (atomic_load(&fake_now) < real)
		atomic_store(&fake_now, real);
	return atomic_load(&fake_now);
}

#define RUNS(f, p) value_of(f, "iopulse_probe_runs_total", p)

/* ---- what falls due behind a run: the scheduler's watch and a stop ---- */

/* Pings p1, p2 and burst b1 as waits_setup()'s, all every hour: nothing falls
 * due again by itself while a test runs. */
static int hourly_fixture(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	*state = f;
	three_probes(f, true, "1h", "1h", "1h");
	return 0;
}

/* Burst b1 running, laid out (held there by the fake clock). */
static void burst_running(struct fixture *f)
{
	lane_enqueue(&f->lane, 2);
	wait_running(&f->lane, 2);
	wait_laid_out(&f->lane);
}

/* Probes @pi (a -1-terminated list) fall due now, on the lanes' clock. */
static void due_now(struct lane *l, const int *pi)
{
	pthread_mutex_lock(&l->mu);
	for (; *pi >= 0; pi++)
		l->probes[*pi].due_ns = eng_mono_ns() - 1;
	pthread_mutex_unlock(&l->mu);
}

/* The lane's watch timer fires (whatever it was armed for), and the scheduler
 * handles it; returns what lane_watch() armed it for next. */
static uint64_t watch_fires(struct lane *l)
{
	struct itimerspec its = {.it_value = {.tv_nsec = 1}}; /* long past: at once */
	struct pollfd pfd = {.fd = l->watch_fd, .events = POLLIN};
	uint64_t at;

	assert_int_equal(timerfd_settime(l->watch_fd, TFD_TIMER_ABSTIME, &its, NULL), 0);
	assert_int_equal(poll(&pfd, 1, 60000), 1);
	lane_watch(l);
	pthread_mutex_lock(&l->mu);
	at = l->watch_at;
	pthread_mutex_unlock(&l->mu);
	return at;
}

/*
 * A burst runs; the scheduler's watch timer fires: it counts what fell due
 * behind the run then, by reason (pings deferred and then skipped for the
 * burst, the burst's own slot skipped as slow storage), and arms the timer
 * again on CLOCK_MONOTONIC, not in its past, though the probes' clock (fake
 * here, as a lagging TSC) is far behind it. When the run ends, the lane counts
 * none of those slots again, and the pings run once.
 */
static void test_watch_counts_behind_run(void **state)
{
	static const int all[] = {0, 1, 2, -1}, p1[] = {0, -1};
	struct fixture *f = *state;
	struct lane *l = &f->lane;
	uint64_t was = atomic_load(&fake_now), before;

	/* The probes' clock well behind the real one, set before the burst starts:
	 * moved while it runs, the burst would see its time run out (or go back). */
	if (atomic_load(&fake_now) > eng_mono_ns() / 2)
		atomic_store(&fake_now, eng_mono_ns() / 2);
	burst_running(f);
	due_now(l, all);
	before = eng_mono_ns();
	assert_true(watch_fires(l) >= before);
	assert_true(DEFERRED(f, "p1", "burst") == 1);
	assert_true(DEFERRED(f, "p2", "burst") == 1);
	assert_true(SKIPPED(f, "b1", "busy") == 1);
	due_now(l, p1); /* again, still queued */
	before = eng_mono_ns();
	assert_true(watch_fires(l) >= before);
	assert_true(SKIPPED(f, "p1", "burst") == 1);

	finish_burst(f);
	assert_true(DEFERRED(f, "p1", "burst") == 1);
	assert_true(SKIPPED(f, "p1", "burst") == 1);
	assert_true(DEFERRED(f, "p2", "burst") == 1);
	assert_true(SKIPPED(f, "b1", "busy") == 1);
	assert_true(DEFERRED(f, "p1", "busy") == 0 && SKIPPED(f, "p1", "busy") == 0);
	assert_true(DEFERRED(f, "p2", "busy") == 0 && SKIPPED(f, "p2", "busy") == 0);
	assert_true(RUNS(f, "p1") == 1 && RUNS(f, "p2") == 1 && RUNS(f, "b1") == 1);
	if (atomic_load(&fake_now) < was) /* the lane is idle: the next tests' clock */
		atomic_store(&fake_now, was);
}

/* A stop during a run: what fell due meanwhile never runs, so it is not
 * counted as waiting (deferred or skipped) either. */
static void test_stop_counts_nothing(void **state)
{
	static const int pings[] = {0, 1, -1};
	struct fixture *f = *state;
	struct lane *l = &f->lane;
	const struct timespec tick = {.tv_nsec = 1000000};
	bool exited = false;

	burst_running(f);
	due_now(l, pings);
	lane_request_stop(l); /* the burst gives up */
	for (unsigned i = 0; i < 60000 && !exited; i++) {
		pthread_mutex_lock(&l->mu);
		exited = l->exited;
		pthread_mutex_unlock(&l->mu);
		if (!exited)
			nanosleep(&tick, NULL);
	}
	assert_true(exited);
	assert_true(DEFERRED(f, "p1", "burst") == 0 && SKIPPED(f, "p1", "burst") == 0);
	assert_true(DEFERRED(f, "p2", "burst") == 0 && SKIPPED(f, "p2", "burst") == 0);
	assert_true(DEFERRED(f, "p1", "busy") == 0 && DEFERRED(f, "p2", "busy") == 0);
	assert_true(RUNS(f, "p1") == 0 && RUNS(f, "p2") == 0);
}

/*
 * When a held-back burst (b1, index 2) is tried again, driven by its retry time
 * on the fake clock (this test's machine has no busy disks to hold it back: the
 * runs go ahead unchecked). A burst's run lasts until the test moves the clock.
 */
static void test_busy_retry(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const uint64_t mark = 42; /* busy_due_ns: only a regular run restarts it */
	uint64_t now;

	assert_non_null(f);
	*state = f;
	waits_setup(f, false);
	now = clock_at_real();
	/* A retry due while a ping is queued: the ping first, then the retry. */
	f->lane.probes[2].busy_retry_ns = now;
	f->lane.probes[2].busy_due_ns = mark;
	lane_enqueue(&f->lane, 0);
	assert_int_equal(lane_start(&f->lane), 0);
	wait_running(&f->lane, 2);
	assert_true(RUNS(f, "p1") == 1);
	assert_true(retry_of(&f->lane, 2) == 0); /* taken: cleared */
	finish_burst(f);
	assert_true(RUNS(f, "b1") == 1);
	assert_true(f->lane.probes[2].busy_due_ns == mark); /* a retry, not a regular run */

	/* Not due yet: nothing runs (a ping meanwhile runs as usual)... */
	now = clock_at_real();
	set_retry(&f->lane, 2, now + 10 * SEC);
	run_ping(f);
	assert_true(RUNS(f, "b1") == 1);
	assert_true(retry_of(&f->lane, 2) == now + 10 * SEC);
	/* ...then due: it runs, once. */
	advance(&f->lane, 10 * SEC);
	wait_running(&f->lane, 2);
	finish_burst(f);
	assert_true(RUNS(f, "b1") == 2);
	assert_true(retry_of(&f->lane, 2) == 0);
	advance(&f->lane, 3600 * SEC);
	run_ping(f);
	assert_true(RUNS(f, "b1") == 2);
	assert_true(f->lane.probes[2].busy_due_ns == mark);

	/* Its regular run falling due replaces a pending retry: one run, a regular
	 * one, and no retry after it. */
	now = clock_at_real();
	set_retry(&f->lane, 2, now + 10 * SEC);
	lane_enqueue(&f->lane, 2);
	assert_true(retry_of(&f->lane, 2) == 0);
	wait_running(&f->lane, 2);
	finish_burst(f);
	assert_true(RUNS(f, "b1") == 3);
	assert_true(f->lane.probes[2].busy_due_ns >= now);
	advance(&f->lane, 3600 * SEC);
	run_ping(f);
	assert_true(RUNS(f, "b1") == 3);
}

/* A fake sysfs in which the target's directory is on disk "sdz", idle. */
static void fake_disk(struct fixture *f, char *sys, size_t len)
{
	char path[PATH_MAX + 64], link[64];
	struct stat st;
	FILE *fp;

	assert_int_equal(stat(f->dir, &st), 0);
	tu_new_dir(sys, len);
	snprintf(path, sizeof(path), "%s/block", sys);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/block/sdz", sys);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/block/sdz/stat", sys);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("1 0 8 1 1 0 8 1 0 100 200\n", fp);
	assert_int_equal(fclose(fp), 0);
	snprintf(path, sizeof(path), "%s/dev", sys);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/dev/block", sys);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/dev/block/%u:%u", sys, major(st.st_dev), minor(st.st_dev));
	snprintf(link, sizeof(link), "../../block/sdz");
	assert_int_equal(symlink(link, path), 0);
}

static int measure_teardown(void **state)
{
	hostload_roots.sys = "/nonexistent/iopulse-test-sysfs";
	devbusy_window_ns = DEVBUSY_WINDOW_NS;
	return fixture_teardown(state);
}

/*
 * A stop while the disks are measured before a burst: the burst does not start
 * (nor count a run) as it would on disks that cannot be measured. The window
 * is an hour long here, so that the stop always comes during it.
 */
static void test_stop_while_measuring(void **state)
{
	struct fixture *f = *state;
	static char sys[PATH_MAX];

	fake_disk(f, sys, sizeof(sys));
	hostload_roots.sys = sys;
	devbusy_window_ns = 3600 * SEC;
	run_ping(f); /* opens the target */
	lane_enqueue(&f->lane, 2);
	wait_running(&f->lane, 2);
	lane_request_stop(&f->lane);
	wait_running(&f->lane, -1);
	assert_true(RUNS(f, "b1") == 0);
	assert_true(SKIPPED(f, "b1", "device_busy") == 0);
}

/* iopulse_probe_info and iopulse_probe_interval_seconds, one series per probe. */
static void test_probe_info(void **state)
{
	static const char *const info[][8] = {
		{"probe", "p1", "type", "ping", "op", "read", "engine", "null"},
		{"probe", "p2", "type", "ping", "op", "read", "engine", "null"},
		{"probe", "b1", "type", "burst", "op", "randread", "engine", "null"},
	};
	struct fixture *f = *state;
	struct metrics_snapshot *snap = metrics_snapshot(f->m);
	const struct snap_family *fam;

	assert_non_null(snap);
	fam = tu_find_family(snap, "iopulse_probe_info");
	assert_non_null(fam);
	assert_int_equal(fam->n_series, 3);
	for (unsigned i = 0; i < 3; i++) {
		const char *kv[] = {info[i][0], info[i][1], info[i][2], info[i][3],
				    info[i][4], info[i][5], info[i][6], info[i][7],
				    "target",	"t1",	    NULL};
		const struct snap_series *s = series_with(snap, "iopulse_probe_info", kv);

		assert_non_null(s);
		assert_true(s->value == 1);
	}
	assert_int_equal(tu_find_family(snap, "iopulse_probe_interval_seconds")->n_series, 3);
	metrics_snapshot_free(snap);
	assert_true(value_of(f, "iopulse_probe_interval_seconds", "p1") == 0.1);
	assert_true(value_of(f, "iopulse_probe_interval_seconds", "p2") == 2);
	assert_true(value_of(f, "iopulse_probe_interval_seconds", "b1") == 3600);
}

/* The filesystem type statfs gives @dir, as target_info should name it; NULL
 * when this test does not know the magic (the label is then only non-empty). */
static const char *fstype_of(const char *dir)
{
	struct statfs sfs;

	assert_int_equal(statfs(dir, &sfs), 0);
	switch ((unsigned long)sfs.f_type & 0xffffffffUL) {
	case 0xEF53:
		return "ext4";
	case 0x58465342:
		return "xfs";
	case 0x9123683E:
		return "btrfs";
	case 0x01021994:
		return "tmpfs";
	case 0x794c7630:
		return "overlay";
	default:
		return NULL;
	}
}

/* iopulse_target_info: before the first open only what the configuration says;
 * after it the filesystem and the block device behind the directory. */
static void test_target_info(void **state)
{
	struct fixture *f = *state;
	const char *before[] = {"target",      "t1",  "kind",	"directory", "path",  f->dir,
				"fstype",      "",    "device", "",	     "model", "",
				"volume_type", "gp3", "zone",	"eu-1",	     NULL};
	const char *fstype = fstype_of(f->dir);
	struct metrics_snapshot *snap = metrics_snapshot(f->m);
	const struct snap_family *fam;
	const struct snap_series *s;
	char want_dev[32], sys[PATH_MAX + 32], got_dev[32] = "";
	struct stat st;
	double runs;
	FILE *fp;

	assert_non_null(series_with(snap, "iopulse_target_info", before));
	metrics_snapshot_free(snap);

	run_ping(f);
	snap = metrics_snapshot(f->m);
	fam = tu_find_family(snap, "iopulse_target_info");
	assert_int_equal(fam->n_series, 1); /* the old one was replaced */
	s = &fam->series[0];
	assert_true(s->value == 1);
	assert_int_equal(s->n_extra, 2);
	assert_string_equal(s->values[0], "t1");
	assert_string_equal(s->values[2], f->dir);
	if (fstype)
		assert_string_equal(s->values[3], fstype);
	else
		assert_true(s->values[3][0] != '\0');
	/* The device: none for an anonymous device number, else the one sysfs names. */
	assert_int_equal(stat(f->dir, &st), 0);
	if (major(st.st_dev) == 0) {
		assert_string_equal(s->values[4], "");
	} else {
		snprintf(want_dev, sizeof(want_dev), "%u:%u", major(st.st_dev), minor(st.st_dev));
		snprintf(sys, sizeof(sys), "/sys/class/block/%s/dev", s->values[4]);
		fp = fopen(sys, "r");
		assert_non_null(fp);
		assert_non_null(fgets(got_dev, sizeof(got_dev), fp));
		fclose(fp);
		got_dev[strcspn(got_dev, "\n")] = '\0';
		assert_string_equal(got_dev, want_dev);
	}
	metrics_snapshot_free(snap);

	/* A reload that retired the lane (left in the kernel) drops it: the lane's
	 * run that comes back later brings back nothing, and counts nothing. */
	runs = value_of(f, "iopulse_probe_runs_total", "p1");
	lane_retire(&f->lane);
	lane_drop_target_info(&f->lane);
	snprintf(sys, sizeof(sys), "%s/%s", f->dir, TARGET_PROBE_FILE);
	assert_int_equal(unlink(sys), 0); /* ours: the next run re-creates and re-opens it */
	run_ping(f);
	snap = metrics_snapshot(f->m);
	assert_null(tu_find_family(snap, "iopulse_target_info"));
	metrics_snapshot_free(snap);
	assert_true(value_of(f, "iopulse_probe_runs_total", "p1") == runs);
}

/* ---- states, since and reason codes ---- */

/* Unix time, as since is. */
static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The bounded code of each errno a target's open or check fails with, and the
 * code a failure sets itself where the errno would mislead. */
static void test_reason_codes(void **state)
{
	static const struct {
		int r;
		const char *code;
	} cases[] = {
		{-ENOENT, "missing"},	{-ENOTDIR, "missing"},	  {-ESTALE, "missing"},
		{-ENXIO, "missing"},	{-ENODEV, "missing"},	  {-ENOMEDIUM, "missing"},
		{-EXDEV, "unmounted"},	{-EROFS, "read_only"},	  {-ENOSPC, "full"},
		{-EDQUOT, "full"},	{-EACCES, "permission"},  {-EPERM, "permission"},
		{-EIO, "io_error"},	{-ENOTCONN, "io_error"},  {-EREMOTEIO, "io_error"},
		{-EUCLEAN, "io_error"}, {-EBADMSG, "io_error"},	  {-EEXIST, "not_ours"},
		{-ELOOP, "not_ours"},	{-EBUSY, "busy"},	  {-ETXTBSY, "busy"},
		{-EINVAL, "other"},	{-EMEDIUMTYPE, "other"},  {-ENOTBLK, "other"},
		{-ENOMEM, "other"},	{-ENAMETOOLONG, "other"}, {-E2BIG, "other"},
		{0, "other"},
	};
	static const char *const all[] = {
		"none",	     "slow", "not_checked", "layout",	"stuck",    "missing", "unmounted",
		"read_only", "full", "permission",  "io_error", "not_ours", "busy",    "other"};
	struct target t = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *got = target_reason_code(&t, cases[i].r);
		bool known = false;

		if (strcmp(got, cases[i].code))
			fail_msg("errno %d: '%s', want '%s'", -cases[i].r, got, cases[i].code);
		for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++)
			known = known || !strcmp(got, all[k]);
		assert_true(known && strlen(got) < PROBE_REASON_MAX);
	}
	t.code = "missing"; /* a directory replaced on the same filesystem: -EXDEV */
	assert_string_equal(target_reason_code(&t, -EXDEV), "missing");
	assert_string_equal(target_reason_code(NULL, -EXDEV), "unmounted");
	for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++)
		assert_true(strlen(all[k]) < PROBE_REASON_MAX);
	/* The metric's states are the status page's words, all five. */
	for (int st = 0; st < PROBE_TARGET_STATES; st++) {
		bool found = false;

		for (int i = 0; probe_target_states[i]; i++)
			found = found || !strcmp(probe_target_states[i], status_state_name(st));
		if (!found)
			fail_msg("state %s has no iopulse_target_state series",
				 status_state_name(st));
	}
	assert_null(probe_target_states[PROBE_TARGET_STATES]);
}

/* The state, reason code and since of the lane's target, as a request sees
 * them, with the series set from the same figures. */
static void scrape(struct fixture *f, struct status_target *t)
{
	lane_status(&f->lane, eng_now_ns(), NULL, t);
	lane_collect_target(&f->lane, eng_now_ns(), t);
}

/* Gauge {target="t1"} of @name; -1 if none. */
static double gauge(struct fixture *f, const char *name)
{
	const char *kv[] = {"target", "t1", NULL};

	return value_with(f, name, kv);
}

/* The state as the metrics say it: one of the five series is 1, the others 0,
 * and there is one reason series, saying @reason. */
static void assert_state_metrics(struct fixture *f, const char *state, const char *reason,
				 double since)
{
	struct metrics_snapshot *snap = metrics_snapshot(f->m);
	const struct snap_family *fam;

	assert_non_null(snap);
	for (int i = 0; probe_target_states[i]; i++) {
		const char *kv[] = {"state", probe_target_states[i], NULL};
		const struct snap_series *s = series_with(snap, "iopulse_target_state", kv);

		assert_non_null(s);
		if (s->value != !strcmp(state, probe_target_states[i]))
			fail_msg("iopulse_target_state{state=\"%s\"} is %g in state %s",
				 probe_target_states[i], s->value, state);
	}
	fam = tu_find_family(snap, "iopulse_target_reason_info");
	assert_non_null(fam);
	assert_int_equal(fam->n_series, 1);
	assert_string_equal(fam->series[0].values[1], reason);
	assert_true(fam->series[0].value == 1);
	fam = tu_find_family(snap, "iopulse_target_state_since_timestamp_seconds");
	assert_non_null(fam);
	assert_true(fam->series[0].value == since);
	metrics_snapshot_free(snap);
}

static void test_state_since(void **state)
{
	struct fixture *f = *state;
	struct status_target t;
	double before, after, up_since, down_since;

	log_set_ratelimit(100, 30 * SEC);
	/* Not run yet: starting, since the lane began. */
	scrape(f, &t);
	assert_int_equal(t.state, STATUS_STARTING);
	assert_string_equal(t.reason_code, "not_checked");
	assert_true(t.since_s == f->lane.start_wall_s && t.since_s > 1e9);
	assert_state_metrics(f, "starting", "not_checked", t.since_s);

	/* Up: since the run that found it up. */
	before = wall_s();
	run_ping(f);
	after = wall_s();
	scrape(f, &t);
	assert_int_equal(t.state, STATUS_UP);
	assert_string_equal(t.reason_code, "none");
	assert_true(t.since_s >= before && t.since_s <= after);
	up_since = t.since_s;
	assert_state_metrics(f, "up", "none", up_since);
	run_ping(f); /* still up: the same since, request after request */
	scrape(f, &t);
	assert_true(t.since_s == up_since);

	/* Slow (a probe op judged slow, its tail here): up still, since the
	 * request that saw it, the reason in words; back to up, since the
	 * request that saw that. */
	f->lane.probes[0].regress[IO_READ] =
		(struct status_regress){.have_baseline = true,
					.baseline_ns = {100000, 400000},
					.have_tail = true,
					.threshold_ns = 1600000,
					.slow_io_ratio = 0.05,
					.slow = true,
					.shape = STATUS_SHAPE_TAIL};
	before = wall_s();
	scrape(f, &t);
	assert_int_equal(t.state, STATUS_SLOW);
	assert_string_equal(t.reason_code, "tail");
	assert_string_equal(t.reason, "probe p1: 5.0% of reads over 1.6 ms in the last 5 minutes "
				      "(usually under 1%; the baseline's p99: 400 µs)");
	assert_true(t.since_s >= before && t.since_s >= up_since);
	assert_state_metrics(f, "slow", "tail", t.since_s);
	assert_true(gauge(f, "iopulse_target_up") == 1);
	f->lane.probes[0].regress[IO_READ].slow = false;
	f->lane.probes[0].regress[IO_READ].shape = STATUS_SHAPE_NONE;
	before = wall_s();
	scrape(f, &t);
	assert_int_equal(t.state, STATUS_UP);
	assert_true(t.since_s >= before); /* not when it first came up */
	assert_state_metrics(f, "up", "none", t.since_s);

	/* The directory goes away: down, missing, since the run that found it. */
	snprintf(away, sizeof(away), "%s.away", own_dir(f));
	assert_int_equal(rename(f->dir, away), 0);
	tu_capture_begin();
	before = wall_s();
	run_ping(f);
	after = wall_s();
	run_ping(f);
	free(tu_capture_end());
	scrape(f, &t);
	assert_int_equal(t.state, STATUS_DOWN);
	assert_string_equal(t.reason_code, "missing");
	assert_non_null(strstr(t.reason, "no such directory"));
	assert_true(t.since_s >= before && t.since_s <= after);
	down_since = t.since_s;
	assert_state_metrics(f, "down", "missing", down_since);
	assert_true(gauge(f, "iopulse_target_up") == 0);

	/* Back: up again since the run that found it, the reason none again. */
	move_back(f);
	tu_capture_begin();
	before = wall_s();
	run_ping(f);
	after = wall_s();
	free(tu_capture_end());
	scrape(f, &t);
	assert_int_equal(t.state, STATUS_UP);
	assert_true(t.since_s >= before && t.since_s <= after && t.since_s >= down_since);
	assert_state_metrics(f, "up", "none", t.since_s);

	/* The probe file replaced by a stranger's file: not ours. */
	snprintf(stranger, sizeof(stranger), "%s/%s", own_dir(f), TARGET_PROBE_FILE);
	assert_int_equal(unlink(stranger), 0);
	assert_int_equal(close(open(stranger, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), 0);
	tu_capture_begin();
	run_ping(f);
	free(tu_capture_end());
	scrape(f, &t);
	assert_int_equal(t.state, STATUS_DOWN);
	assert_string_equal(t.reason_code, "not_ours");
	assert_state_metrics(f, "down", "not_ours", t.since_s);
	remove_stranger(f);
	tu_capture_begin();
	run_ping(f);
	free(tu_capture_end());
}

/* An I/O past its timeout: stuck since its start plus the timeout, and every
 * probe waits on it; before that only its own probe does. */
static void test_stuck_since(void **state)
{
	struct fixture *f = *state;
	struct lane *l = &f->lane;
	uint64_t timeout = l->probes[0].cfg->timeout_ns;
	struct status_target t;
	double now;

	run_ping(f);
	scrape(f, &t);
	assert_int_equal(t.state, STATUS_UP);
	/* Up for a minute, since before the I/O that hangs (the lane is idle). */
	l->judgement.since_s -= 60;
	l->up_wall_s -= 60;
	/* As a run in the kernel leaves it: probe 0 running, its check in flight
	 * for its timeout and 5s more. */
	atomic_store(&l->running, 0);
	atomic_store(&l->inflight_ns, eng_now_ns() - timeout - 5 * SEC);
	now = wall_s();
	scrape(f, &t);
	assert_int_equal(t.state, STATUS_STUCK);
	assert_string_equal(t.reason_code, "stuck");
	assert_true(t.since_s >= now - 5.5 && t.since_s <= now - 4.5);
	assert_state_metrics(f, "stuck", "stuck", t.since_s);
	assert_true(gauge(f, "iopulse_target_up") == 0);
	atomic_store(&l->inflight_ns, 0);
	atomic_store(&l->running, -1);
	now = wall_s();
	scrape(f, &t);
	assert_int_equal(t.state, STATUS_UP);
	assert_true(t.since_s >= now);
}

/* fixture_setup()'s lane, not started. */
static int unstarted_fixture(void **state)
{
	return fixture_started(state,
			       "    size: 1MiB\n"
			       "    direct: false\n"
			       "    allow_memory_backed: true\n",
			       "{name: p1, type: ping, target: t1, op: read, engine: null, "
			       "interval: 100ms}",
			       false);
}

/* Whether @l's run shows an I/O in flight (within a minute). */
static bool inflight_within_a_minute(struct lane *l)
{
	const struct timespec tick = {.tv_nsec = 1000000};

	for (unsigned i = 0; i < 60000; i++) {
		if (atomic_load(&l->inflight_ns))
			return true;
		nanosleep(&tick, NULL);
	}
	return false;
}

/* Stop heap lane @l (within a minute) and free it. */
static void stop_and_free(struct lane *l)
{
	struct timespec ts;

	lane_request_stop(l);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	assert_true(lane_wait(l, ((uint64_t)ts.tv_sec + 60) * SEC + (uint64_t)ts.tv_nsec));
	lane_free(l);
}

/* A lane of f's target that has run once (and so holds the target's claim),
 * and a reload's new lane for it, started, following it: made as the reload
 * makes them (the old lane's own series dropped before the new lane exists).
 * The new lane's probe is handed to it once. */
static struct lane *old_and_follower(struct fixture *f, struct lane **next)
{
	struct lane_handover h;
	struct lane *old;
	int err;

	old = lane_new(f->cfg, 0, f->m, &err);
	assert_non_null(old);
	assert_int_equal(lane_start(old), 0);
	lane_enqueue(old, 0);
	tu_lane_idle_wait(old);
	assert_true(value_of(f, "iopulse_probe_runs_total", "p1") == 1);
	lane_drop_target_info(old);
	*next = lane_new(f->cfg, 0, f->m, &err);
	assert_non_null(*next);
	lane_hand_over(old, &h);
	lane_follow(*next, &h);
	lane_handover_release(&h);
	assert_int_equal(lane_start(*next), 0);
	lane_enqueue(*next, 0);
	assert_true(inflight_within_a_minute(*next));
	return old;
}

/*
 * The claim (lane.h): a reload's new lane of a target follows the old one,
 * which holds the target from its first run on. Until the old lane is gone,
 * the new one's run waits: it touches nothing, counts nothing and shows an
 * I/O in flight (since the old lane's began, when a retired one passed that
 * on); once the old lane is destroyed, the run goes on.
 */
static void test_claim_follows(void **state)
{
	struct fixture *f = *state;
	struct lane *old, *next;
	struct timespec ts;

	old = old_and_follower(f, &next);
	assert_true(value_of(f, "iopulse_probe_runs_total", "p1") == 1);
	lane_request_stop(old);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	assert_true(lane_wait(old, ((uint64_t)ts.tv_sec + 60) * SEC + (uint64_t)ts.tv_nsec));
	assert_true(value_of(f, "iopulse_probe_runs_total", "p1") == 1); /* still waiting */
	lane_free(old); /* lets go of the target: the new lane's run goes on */
	tu_lane_idle_wait(next);
	assert_true(value_of(f, "iopulse_probe_runs_total", "p1") == 2);
	assert_int_equal(atomic_load(&next->inflight_ns), 0);
	assert_true(atomic_load(&next->up));
	stop_and_free(next);
}

/* A lane waiting for the claim stops when asked, without touching the target. */
static void test_claim_wait_stops(void **state)
{
	struct fixture *f = *state;
	struct lane *old, *next;

	old = old_and_follower(f, &next);
	stop_and_free(next);
	assert_true(value_of(f, "iopulse_probe_runs_total", "p1") == 1);
	stop_and_free(old);
}

/*
 * Retire and let go of lanes while their threads run and exit, as fast as
 * possible, each lane followed by the next (the reload's
 * order: stop, a wait that times out at once, retire, drop the old lane's
 * changed series, let go with a handover, the next lane made and following).
 * Under TSan and ASan: no race, no use of a freed lane, series or claim; the
 * retired lanes all free themselves; the last lane gets the claim and runs.
 */
static void test_retire_storm(void **state)
{
	struct fixture *f = *state;
	struct lane *old, *next;
	struct lane_handover h;
	struct timespec ts;
	unsigned retired = 0;
	int err;

	old = lane_new(f->cfg, 0, f->m, &err);
	assert_non_null(old);
	assert_int_equal(lane_start(old), 0);
	for (unsigned i = 0; i < 400; i++) {
		for (unsigned k = 0; k < 3; k++)
			lane_enqueue(old, 0);
		if (i % 3)
			sched_yield();
		lane_request_stop(old);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (!lane_wait(old, (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec)) {
			lane_retire(old);
			retired++;
		}
		/* What drop_stale_series() does to a replaced lane of a changed probe. */
		lane_drop_target_info(old);
		lane_drop_probe_series(&old->probes[0]);
		next = lane_new(f->cfg, 0, f->m, &err);
		assert_non_null(next);
		lane_let_go(old, &h);
		lane_follow(next, &h);
		lane_take_over(next, &h);
		lane_handover_release(&h);
		assert_int_equal(lane_start(next), 0);
		old = next;
	}
	lane_enqueue(old, 0);
	tu_lane_idle_wait(old);
	for (unsigned i = 0; i < 60000 && lane_retired_count(); i++)
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	fprintf(stderr, "retire storm: %u of 400 lanes retired\n", retired);
	assert_int_equal(lane_retired_count(), 0);
	assert_true(atomic_load(&old->up));
	stop_and_free(old);
}

/* A reload that keeps the target: the new lane goes on in the same state since
 * the same time, down for the same reason. */
static void test_take_over_state(void **state)
{
	struct fixture *f = *state;
	struct status_target t, t2;
	struct lane_handover h;
	struct lane next;
	struct timespec ts;

	snprintf(away, sizeof(away), "%s.away", own_dir(f));
	assert_int_equal(rename(f->dir, away), 0);
	tu_capture_begin();
	run_ping(f);
	free(tu_capture_end());
	scrape(f, &t);
	assert_int_equal(t.state, STATUS_DOWN);
	lane_request_stop(&f->lane);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	assert_true(lane_wait(&f->lane, ((uint64_t)ts.tv_sec + 60) * SEC + (uint64_t)ts.tv_nsec));
	assert_int_equal(lane_init(&next, f->cfg, 0, f->m), 0);
	lane_hand_over(&f->lane, &h);
	lane_take_over(&next, &h);
	lane_handover_release(&h);
	lane_status(&next, eng_now_ns(), NULL, &t2);
	assert_int_equal(t2.state, STATUS_DOWN);
	assert_string_equal(t2.reason_code, "missing");
	assert_string_equal(t2.reason, t.reason);
	assert_true(t2.since_s == t.since_s);
	lane_destroy(&next);
	move_back(f);
}

/* The baseline, recent and ratio gauges: there while they have a value, gone
 * (never 0 or NaN) when not. */
static void test_regress_gauges(void **state)
{
	struct fixture *f = *state;
	struct lane_probe *lp = &f->lane.probes[0];
	struct status_regress *g = &lp->regress[IO_READ];
	struct status_target t;
	struct metrics_snapshot *snap;
	const struct snap_family *fam;

	run_ping(f);
	scrape(f, &t);
	snap = metrics_snapshot(f->m);
	assert_null(tu_find_family(snap, "iopulse_probe_latency_baseline_seconds"));
	assert_null(tu_find_family(snap, "iopulse_probe_latency_recent_seconds"));
	assert_null(tu_find_family(snap, "iopulse_probe_latency_ratio"));
	metrics_snapshot_free(snap);

	/* Recent only: a baseline warming up. */
	*g = (struct status_regress){.have_recent = true, .recent_ns = {2000000, 9000000}};
	scrape(f, &t);
	snap = metrics_snapshot(f->m);
	assert_null(tu_find_family(snap, "iopulse_probe_latency_baseline_seconds"));
	assert_null(tu_find_family(snap, "iopulse_probe_latency_ratio"));
	fam = tu_find_family(snap, "iopulse_probe_latency_recent_seconds");
	assert_non_null(fam);
	assert_int_equal(fam->n_series, 2);
	assert_true(series_with(snap, "iopulse_probe_latency_recent_seconds",
				(const char *[]){"percentile", "50", "op", "read", NULL})
			    ->value == 0.002);
	assert_true(series_with(snap, "iopulse_probe_latency_recent_seconds",
				(const char *[]){"percentile", "99", NULL})
			    ->value == 0.009);
	metrics_snapshot_free(snap);

	/* Both, and their ratio. */
	*g = (struct status_regress){.have_baseline = true,
				     .baseline_ns = {1000000, 3000000},
				     .have_recent = true,
				     .recent_ns = {5000000, 9000000},
				     .ratio = 5,
				     .slow = true};
	scrape(f, &t);
	snap = metrics_snapshot(f->m);
	assert_true(series_with(snap, "iopulse_probe_latency_baseline_seconds",
				(const char *[]){"percentile", "99", NULL})
			    ->value == 0.003);
	assert_true(series_with(snap, "iopulse_probe_latency_ratio",
				(const char *[]){"probe", "p1", "op", "read", NULL})
			    ->value == 5);
	metrics_snapshot_free(snap);

	/* Nothing in the last minute, nothing waited on: the recent and the ratio go,
	 * the baseline stays. */
	*g = (struct status_regress){.have_baseline = true, .baseline_ns = {1000000, 3000000}};
	scrape(f, &t);
	snap = metrics_snapshot(f->m);
	assert_null(tu_find_family(snap, "iopulse_probe_latency_recent_seconds"));
	assert_null(tu_find_family(snap, "iopulse_probe_latency_ratio"));
	assert_int_equal(tu_find_family(snap, "iopulse_probe_latency_baseline_seconds")->n_series,
			 2);
	metrics_snapshot_free(snap);

	/* A reload drops what each lane makes its own. */
	lane_drop_target_info(&f->lane);
	snap = metrics_snapshot(f->m);
	assert_null(tu_find_family(snap, "iopulse_probe_latency_baseline_seconds"));
	assert_null(tu_find_family(snap, "iopulse_target_reason_info"));
	assert_non_null(tu_find_family(snap, "iopulse_target_state"));
	metrics_snapshot_free(snap);
}

/* What each probe waits on: nothing while an I/O is within its timeout (not
 * even its own: a normal fdatasync caught in flight is not a slow one); once
 * the target is stuck, that I/O, for every probe of the target. */
static void test_waited(void **state)
{
	struct fixture *f = *state;
	struct lane *l = &f->lane;
	struct status *st = status_new();
	struct status_op ops[2 * IO_OP_COUNT];
	uint64_t timeout = l->probes[0].cfg->timeout_ns;
	unsigned n = lane_status_ops(l, ops);
	struct status_target t;

	assert_non_null(st);
	assert_int_equal(n, 2);
	assert_true(ops[0].j.slow_factor == 4 && ops[0].j.slow_floor_ns == CFG_SLOW_FLOOR_AUTO);
	assert_int_equal(ops[0].j.warmup_minutes, 10);
	assert_true(ops[0].j.tail_factor == 4 && ops[0].j.tail_share == 0.02);
	assert_int_equal(ops[0].j.stall_ns, SEC);
	assert_int_equal(ops[0].j.slow_minutes, 2);
	assert_int_equal(ops[0].j.ok_minutes, 3);
	status_tick_until(st, ops, n, eng_now_ns()); /* the page knows the ops */
	/* Probe p1's read in flight for 1s, within its timeout: nobody waits. */
	atomic_store(&l->running, 0);
	atomic_store(&l->inflight_ns, eng_now_ns() - SEC);
	lane_status_probes(l, st, eng_now_ns());
	assert_false(l->probes[0].regress[IO_READ].have_recent);
	assert_false(l->probes[1].regress[IO_READ].have_recent);
	lane_status(l, eng_now_ns(), NULL, &t);
	assert_int_equal(t.state, STATUS_STARTING); /* (never run: no baseline, not slow) */
	/* Past its timeout: stuck, and every probe waits behind it. */
	atomic_store(&l->inflight_ns, eng_now_ns() - timeout - SEC);
	lane_status_probes(l, st, eng_now_ns());
	for (int pi = 0; pi < 2; pi++) {
		assert_true(l->probes[pi].regress[IO_READ].have_recent);
		assert_true(l->probes[pi].regress[IO_READ].recent_ns[0] >= timeout + SEC);
		assert_true(l->probes[pi].regress[IO_READ].recent_ns[1] >= timeout + SEC);
	}
	lane_status(l, eng_now_ns(), NULL, &t);
	assert_int_equal(t.state, STATUS_STUCK);
	/* Nothing in flight: nobody waits. */
	atomic_store(&l->inflight_ns, 0);
	atomic_store(&l->running, -1);
	lane_status_probes(l, st, eng_now_ns());
	for (int pi = 0; pi < 2; pi++)
		assert_false(l->probes[pi].regress[IO_READ].have_recent);
	status_free(st);
}

static int two_pings_fixture(void **state)
{
	return fixture_with(state,
			    "    size: 1MiB\n"
			    "    direct: false\n"
			    "    allow_memory_backed: true\n",
			    "{name: p1, type: ping, target: t1, op: read, engine: null}\n"
			    "  - {name: p2, type: ping, target: t1, op: read, engine: null}");
}

/* The configuration's slow_factor and slow_floor, as gauges. */
static void test_slow_config_gauges(void **state)
{
	struct fixture *f = *state;

	assert_true(gauge(f, "iopulse_target_slow_factor") == 2.5);
	assert_true(gauge(f, "iopulse_target_slow_floor_seconds") == 0.0005);
}

static int slow_fixture(void **state)
{
	return fixture_with(state,
			    "    size: 1MiB\n"
			    "    direct: false\n"
			    "    allow_memory_backed: true\n"
			    "    slow_factor: 2.5\n"
			    "    slow_floor: 500us\n",
			    "{name: p1, type: ping, target: t1, op: read, engine: null, "
			    "interval: 100ms}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_layout_backoff, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_target_down_one_line, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_verify_only, verify_only_fixture,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_crash_link_logged, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_teardown(test_wait_reasons_queued, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_wait_reasons_running_burst, waits_fixture,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_probe_info, waits_fixture, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_target_info, waits_fixture, fixture_teardown),
		cmocka_unit_test_teardown(test_busy_retry, fixture_teardown),
		cmocka_unit_test_teardown(test_due_times, fixture_teardown),
		cmocka_unit_test_teardown(test_due_after_layout, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_watch_counts_behind_run, hourly_fixture,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_stop_counts_nothing, hourly_fixture,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_stop_while_measuring, waits_fixture,
						measure_teardown),
		cmocka_unit_test(test_reason_codes),
		cmocka_unit_test_setup_teardown(test_state_since, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_stuck_since, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_claim_follows, unstarted_fixture,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_claim_wait_stops, unstarted_fixture,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_retire_storm, unstarted_fixture,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_take_over_state, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_regress_gauges, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_slow_config_gauges, slow_fixture,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_waited, two_pings_fixture, fixture_teardown),
	};

	/* No disks to find (test_hostload tests the busy check): the bursts here run
	 * whatever the machine's real disk is doing. */
	hostload_roots.sys = "/nonexistent/iopulse-test-sysfs";
	unsetenv("JOURNAL_STREAM");
	log_setup();
	log_max_level = LOG_LVL_NOTICE; /* the lines the tests count, not the layout's info */
	return cmocka_run_group_tests(tests, tu_scratch_setup, tu_scratch_teardown);
}
