/* SPDX-License-Identifier: MIT */
/*
 * judge: status_judge(), the one judge of a target's state, for every shape a
 * target may be in: from what its lane gathers and its probe ops' judgements
 * to the state, its reason code and words with the figures, and since when.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/status/status.h"

#define MS  1000000ULL
#define NOW 1700000000.0

static const struct status_judgement none = {0};

/* The judgement of @in against @prev into @t; returns the next one. */
static struct status_judgement judge(const struct status_judge_in *in,
				     const struct status_judgement *prev, struct status_target *t)
{
	struct status_judgement next;

	memset(t, 0, sizeof(*t));
	status_judge(in, prev, t, &next);
	assert_int_equal(next.state, t->state);
	assert_true(next.since_s == t->since_s);
	assert_string_equal(next.reason_code, t->reason_code);
	return next;
}

/* Not checked yet, or laying out: starting since the lane began. */
static void test_starting(void **state)
{
	struct status_judge_in in = {.now_s = NOW, .start_s = NOW - 5};
	struct status_target t;

	(void)state;
	judge(&in, &none, &t);
	assert_int_equal(t.state, STATUS_STARTING);
	assert_string_equal(t.reason_code, "not_checked");
	assert_string_equal(t.reason, "not checked yet");
	assert_true(t.since_s == NOW - 5);
	in.layout = true;
	in.layout_share = 0.25;
	judge(&in, &none, &t);
	assert_string_equal(t.reason_code, "layout");
	assert_string_equal(t.reason, "laying out the probe file, 25% done");
}

/* Up since the run that found it up; down with the lane's reason since it went
 * down; the same state keeps its since; a time in the future or before the last
 * state's is not believed: now. */
static void test_up_down_since(void **state)
{
	struct status_judge_in in = {.now_s = NOW, .up = true, .up_since_s = NOW - 30};
	struct status_judgement j;
	struct status_target t;

	(void)state;
	j = judge(&in, &none, &t);
	assert_int_equal(t.state, STATUS_UP);
	assert_string_equal(t.reason_code, "none");
	assert_string_equal(t.reason, "");
	assert_true(t.since_s == NOW - 30);
	in.now_s = NOW + 100;
	in.up_since_s = NOW + 50; /* a later up: the same state, the same since */
	j = judge(&in, &j, &t);
	assert_true(t.since_s == NOW - 30);

	in = (struct status_judge_in){.now_s = NOW + 200,
				      .down_reason = "/srv: no such directory",
				      .down_code = "missing",
				      .down_since_s = NOW + 150};
	j = judge(&in, &j, &t);
	assert_int_equal(t.state, STATUS_DOWN);
	assert_string_equal(t.reason_code, "missing");
	assert_string_equal(t.reason, "/srv: no such directory");
	assert_true(t.since_s == NOW + 150);
	in.down_code = "";
	assert_string_equal((judge(&in, &none, &t), t.reason_code), "other");

	/* Back up, the lane's up time before the down: now. */
	in = (struct status_judge_in){.now_s = NOW + 300, .up = true, .up_since_s = NOW - 30};
	judge(&in, &j, &t);
	assert_int_equal(t.state, STATUS_UP);
	assert_true(t.since_s == NOW + 300);
	/* In the future: now. */
	in.up_since_s = NOW + 400;
	judge(&in, &none, &t);
	assert_true(t.since_s == NOW + 300);
}

/* Stuck beats everything, since its I/O reached the timeout. */
static void test_stuck(void **state)
{
	struct status_regress slow = {.slow = true, .shape = STATUS_SHAPE_MEDIAN, .ratio = 9};
	struct status_judge_op op = {.probe = "p1", .op = IO_READ, .g = &slow};
	struct status_judge_in in = {.now_s = NOW,
				     .stuck = true,
				     .inflight_probe = "p1",
				     .inflight_s = 12.5,
				     .timeout_s = 10,
				     .up = true,
				     .ops = &op,
				     .n_ops = 1};
	struct status_target t;

	(void)state;
	judge(&in, &none, &t);
	assert_int_equal(t.state, STATUS_STUCK);
	assert_string_equal(t.reason_code, "stuck");
	assert_string_equal(t.reason, "I/O of probe p1 in flight for 12.5s, past its 10s timeout");
	assert_true(t.since_s == NOW - 2.5);
}

/* Each shape names itself and says its figures; the worst op speaks: the
 * median (most I/Os) over stalls over a tail, then the larger ratio. */
static void test_slow_shapes(void **state)
{
	struct status_regress median = {.have_baseline = true,
					.baseline_ns = {760000, 2 * MS},
					.have_recent = true,
					.recent_ns = {9100000, 20 * MS},
					.ratio = 12,
					.slow = true,
					.shape = STATUS_SHAPE_MEDIAN};
	struct status_regress stalls = {.have_baseline = true,
					.baseline_ns = {1 * MS, 2 * MS},
					.have_max = true,
					.max_ns = 4100 * MS,
					.stall_minutes = 3,
					.ratio = 1,
					.slow = true,
					.shape = STATUS_SHAPE_STALLS};
	struct status_regress tail = {.have_baseline = true,
				      .baseline_ns = {1 * MS, 2 * MS},
				      .have_tail = true,
				      .threshold_ns = 8 * MS,
				      .slow_io_ratio = 0.032,
				      .ratio = 1,
				      .slow = true,
				      .shape = STATUS_SHAPE_TAIL};
	struct status_regress good = {.have_baseline = true, .ratio = 30};
	struct status_judge_op ops[] = {
		{.probe = "w", .op = IO_FDATASYNC, .g = &good},
		{.probe = "r", .op = IO_READ, .g = &tail},
		{.probe = "w", .op = IO_WRITE, .g = &stalls},
		{.probe = "r2", .op = IO_READ, .g = &median},
	};
	struct status_judge_in in = {.now_s = NOW, .up = true, .ops = ops, .n_ops = 2};
	struct status_target t;

	(void)state;
	judge(&in, &none, &t);
	assert_int_equal(t.state, STATUS_SLOW);
	assert_string_equal(t.reason_code, "tail");
	assert_string_equal(t.reason, "probe r: 3.2% of reads over 8 ms in the last 5 minutes "
				      "(usually under 1%; the baseline's p99: 2 ms)");
	assert_true(t.since_s == NOW);
	in.n_ops = 3;
	judge(&in, &none, &t);
	assert_string_equal(t.reason_code, "stalls");
	assert_string_equal(t.reason, "probe w: writes of up to 4.1 s in 3 of the last 5 minutes");
	in.n_ops = 4;
	judge(&in, &none, &t);
	assert_string_equal(t.reason_code, "slow");
	assert_string_equal(t.reason, "probe r2: reads p50 9.1 ms, 12.0x its baseline 760 µs");
	/* Two medians: the larger ratio speaks. */
	stalls.shape = STATUS_SHAPE_MEDIAN;
	stalls.ratio = 20;
	stalls.have_recent = true;
	stalls.recent_ns[0] = 20 * MS;
	judge(&in, &none, &t);
	assert_string_equal(t.reason, "probe w: writes p50 20 ms, 20.0x its baseline 1 ms");
	/* No op slow: up, whatever the ratios. */
	in.ops = ops;
	in.n_ops = 1;
	judge(&in, &none, &t);
	assert_int_equal(t.state, STATUS_UP);
}

/*
 * A restart while slow (the judgement from the state file): slow still, with
 * its since and code, until an op has a judgement of its own; then what that
 * says. An op known and good: up, since now.
 */
static void test_restored_slow(void **state)
{
	struct status_judgement prev = {.state = STATUS_SLOW, .since_s = NOW - 600};
	struct status_regress unknown = {0}, good = {.have_baseline = true};
	struct status_judge_op op = {.probe = "p1", .op = IO_READ, .g = &unknown};
	struct status_judge_in in = {
		.now_s = NOW, .up = true, .up_since_s = NOW - 5, .restored = &prev};
	struct status_target t;

	(void)state;
	snprintf(prev.reason_code, sizeof(prev.reason_code), "tail");
	judge(&in, &prev, &t); /* no op yet: the first tick has not come */
	assert_int_equal(t.state, STATUS_SLOW);
	assert_string_equal(t.reason_code, "tail");
	assert_true(t.since_s == NOW - 600);
	in.ops = &op;
	in.n_ops = 1;
	judge(&in, &prev, &t); /* an op without a baseline yet */
	assert_int_equal(t.state, STATUS_SLOW);
	assert_true(t.since_s == NOW - 600);
	/* Its hold over (or a lane replaced by a reload): up. */
	in.restored = NULL;
	judge(&in, &prev, &t);
	assert_int_equal(t.state, STATUS_UP);
	in.restored = &prev;
	op.g = &good;
	judge(&in, &prev, &t);
	assert_int_equal(t.state, STATUS_UP);
	assert_true(t.since_s == NOW);
	/* Not after a down, or a stuck: only slow is kept so. */
	prev.state = STATUS_UP;
	op.g = &unknown;
	judge(&in, &prev, &t);
	assert_int_equal(t.state, STATUS_UP);
}

/*
 * The judgement a state file brought back (in.restored) is the last one while
 * the lane has judged nothing, or only starting: a lane that starts, then sees
 * its target stuck or slow again, keeps the since of before the restart; one
 * that finds it up and good says up since now. A lane with a judgement of its
 * own past starting ignores it.
 */
static void test_restored_taken(void **state)
{
	struct status_judgement restored = {.state = STATUS_SLOW, .since_s = NOW - 600};
	struct status_judgement prev = none;
	struct status_regress tail = {.have_baseline = true,
				      .slow = true,
				      .shape = STATUS_SHAPE_TAIL,
				      .have_tail = true},
			      good = {.have_baseline = true};
	struct status_judge_op op = {.probe = "p1", .op = IO_READ, .g = &tail};
	struct status_judge_in in = {.now_s = NOW, .start_s = NOW - 5, .restored = &restored};
	struct status_target t;

	(void)state;
	snprintf(restored.reason_code, sizeof(restored.reason_code), "tail");
	prev = judge(&in, &prev, &t); /* not checked yet */
	assert_int_equal(t.state, STATUS_STARTING);
	in.up = true;
	in.up_since_s = NOW - 1;
	in.ops = &op;
	in.n_ops = 1;
	prev = judge(&in, &prev, &t);
	assert_int_equal(t.state, STATUS_SLOW);
	assert_string_equal(t.reason_code, "tail");
	assert_true(t.since_s == NOW - 600);
	/* Its own judgement now: the restored one is no longer taken. */
	op.g = &good;
	prev = judge(&in, &prev, &t);
	assert_int_equal(t.state, STATUS_UP);
	assert_true(t.since_s == NOW);
	/* Restored stuck, stuck again at start: the same since. */
	restored.state = STATUS_STUCK;
	restored.since_s = NOW - 300;
	prev = none;
	in.stuck = true;
	in.inflight_s = 20;
	in.timeout_s = 10;
	judge(&in, &prev, &t);
	assert_int_equal(t.state, STATUS_STUCK);
	assert_true(t.since_s == NOW - 300);
	/* Slow by its restored marks, no minute of its own yet: said so, with
	 * no figure it does not have ("p50 –, 0.0x"). */
	in.stuck = false;
	tail.shape = STATUS_SHAPE_NONE;
	tail.baseline_ns[0] = 2150000;
	op.g = &tail;
	restored.state = STATUS_SLOW;
	restored.since_s = NOW - 300;
	snprintf(restored.reason_code, sizeof(restored.reason_code), "slow");
	judge(&in, &prev, &t);
	assert_int_equal(t.state, STATUS_SLOW);
	assert_string_equal(t.reason_code, "slow");
	assert_string_equal(t.reason, "probe p1: reads slow in the minutes before the restart (the "
				      "baseline p50 2.15 ms); judged again at its next minute");
	in.stuck = true;
	/* Without it, stuck since its I/O reached the timeout. */
	in.restored = NULL;
	judge(&in, &prev, &t);
	assert_true(t.since_s == NOW - 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_starting),      cmocka_unit_test(test_up_down_since),
		cmocka_unit_test(test_stuck),	      cmocka_unit_test(test_slow_shapes),
		cmocka_unit_test(test_restored_slow), cmocka_unit_test(test_restored_taken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
