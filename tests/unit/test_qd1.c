/* SPDX-License-Identifier: MIT */
/*
 * qd1: the run-queue wait it takes off an I/O is a wait within the I/O. On a
 * fake clock, a fake engine and a fake /proc (nothing of the machine's is
 * read), the thread is "preempted" where the kernel may preempt it: inside the
 * I/O (the wait comes off), and at the edges, between a read of its wait and
 * the clock stamp beside it (the wait stays: it was never the I/O's). Before
 * the edges were taken off, a loaded machine showed pings of 0ns.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "daemon/probes/cpu_wait.h"
#include "daemon/probes/qd1.h"
#include "lib/clock.h"

#define US 1000ULL
#define MS 1000000ULL

static char proc_root[PATH_MAX];
static uint64_t now_ns = 1000 * NSEC_PER_SEC, run_delay_ns;

/* What one I/O meets, in order: a preemption between the first read of the
 * wait and the submit stamp; the device's time; a wait for a CPU once the I/O
 * completed, before the completion stamp; a preemption after the stamp, before
 * the second read of the wait. */
static struct {
	uint64_t before_submit, device, woken_wait, after_done;
	uint64_t clock_back; /* the clock steps back by this at the submit stamp */
	unsigned clock_reads;
	bool preempted_before_submit;
} io;

/* The thread waits @ns for a CPU: the clock moves on, and so does its figure. */
static void preempted(uint64_t ns)
{
	now_ns += ns;
	run_delay_ns += ns;
	tu_fake_wait(proc_root, run_delay_ns);
}

/* qd1_io() reads the clock before the first read of the wait, then for the
 * submit stamp: a preemption between the two happens at the second. */
uint64_t eng_now_ns(void)
{
	if (++io.clock_reads == 2 && io.before_submit) {
		preempted(io.before_submit);
		io.preempted_before_submit = true;
	}
	if (io.clock_reads == 2)
		now_ns -= io.clock_back;
	return now_ns;
}

static int fake_init(struct engine *e, int fd, unsigned depth)
{
	(void)e, (void)fd, (void)depth;
	return 0;
}

static struct io_req *in_flight;

static int fake_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	(void)e;
	in_flight = reqs[0];
	return (int)n;
}

static int fake_reap(struct engine *e, struct io_req **done, unsigned min, unsigned max,
		     int64_t timeout_ns)
{
	(void)e, (void)min, (void)max, (void)timeout_ns;
	now_ns += io.device;
	if (io.woken_wait)
		preempted(io.woken_wait);
	in_flight->result = in_flight->len;
	in_flight->done_ns = now_ns;
	done[0] = in_flight;
	if (io.after_done)
		preempted(io.after_done);
	return 1;
}

static const struct engine_ops fake_ops = {
	.name = "fake",
	.init = fake_init,
	.submit = fake_submit,
	.reap = fake_reap,
};

/* One read through qd1_io() meeting @before_submit, @device, @woken_wait and
 * @after_done (see io); its latency, CPU wait included, in *@took, and the
 * wait taken off returned. */
static uint64_t one_io(uint64_t before_submit, uint64_t device, uint64_t woken_wait,
		       uint64_t after_done, uint64_t *took)
{
	static char block[4096];
	struct io_req req = {.buf = block, .len = sizeof(block), .op = IO_READ};
	struct qd1 q;

	qd1_init(&q, &fake_ops, NULL);
	assert_int_equal(qd1_open(&q, -1), 0);
	io.before_submit = before_submit;
	io.device = device;
	io.woken_wait = woken_wait;
	io.after_done = after_done;
	io.clock_reads = 0;
	io.preempted_before_submit = false;
	assert_int_equal(qd1_io(&q, &req, NULL), 0);
	assert_int_equal(req.result, (ssize_t)sizeof(block));
	/* The clock read before the first read of the wait, at the submit and,
	 * when the thread waited, after the second read (the fake engine stamps
	 * the completion itself): the preemption before the submit fell where it
	 * was meant to. */
	assert_int_equal(io.clock_reads, before_submit || woken_wait || after_done ? 3 : 2);
	assert_int_equal(io.preempted_before_submit, before_submit > 0);
	*took = qd1_elapsed(&req);
	qd1_close(&q);
	return q.cpu_wait_ns;
}

static int setup(void **state)
{
	int r = tu_scratch_setup(state);

	if (r)
		return r;
	tu_fake_proc(proc_root, sizeof(proc_root), run_delay_ns);
	return cpu_wait_setup(proc_root);
}

/* No wait: nothing comes off. */
static void test_no_wait(void **state)
{
	uint64_t took;

	(void)state;
	assert_int_equal(one_io(0, 100 * US, 0, 0, &took), 0);
	assert_int_equal(took, 100 * US);
}

/* Woken at the completion, 2ms on the run queue before the stamp: the 2ms come
 * off, the device's 1ms is left. */
static void test_wait_within(void **state)
{
	uint64_t took;

	(void)state;
	assert_int_equal(one_io(0, 1 * MS, 2 * MS, 0, &took), 2 * MS);
	assert_int_equal(took, 3 * MS);
}

/* Preempted just after the completion stamp, 5ms: not the I/O's. Taken off a
 * 100us read, it made a read of 0ns. */
static void test_wait_after_done(void **state)
{
	uint64_t took;

	(void)state;
	assert_int_equal(one_io(0, 100 * US, 0, 5 * MS, &took), 0);
	assert_int_equal(took, 100 * US);
}

/* Preempted between the first read and the submit stamp, 4ms: not the I/O's. */
static void test_wait_before_submit(void **state)
{
	uint64_t took;

	(void)state;
	assert_int_equal(one_io(4 * MS, 100 * US, 0, 0, &took), 0);
	assert_int_equal(took, 100 * US);
}

/* A wait within and waits at both edges: the one within comes off, exactly
 * (the fake clock stands still between the reads; a real one loses the reads'
 * own microsecond or two of the wait, never more). */
static void test_waits_everywhere(void **state)
{
	uint64_t took;

	(void)state;
	assert_int_equal(one_io(3 * MS, 1 * MS, 2 * MS, 5 * MS, &took), 2 * MS);
	assert_int_equal(took, 3 * MS);
}

/* The clock stepped back by 20us in the first edge (the TSC clock back onto
 * CLOCK_MONOTONIC), after a 10us wait there, and 5ms waited in the second:
 * the first edge's length is unknown, so nothing comes off (taking the
 * second edge off alone would leave the first edge's 10us as the I/O's). */
static void test_clock_back(void **state)
{
	uint64_t took;

	(void)state;
	io.clock_back = 20 * US;
	assert_int_equal(one_io(10 * US, 100 * US, 0, 5 * MS, &took), 0);
	io.clock_back = 0;
	assert_int_equal(took, 100 * US);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_wait),		 cmocka_unit_test(test_wait_within),
		cmocka_unit_test(test_wait_after_done),	 cmocka_unit_test(test_wait_before_submit),
		cmocka_unit_test(test_waits_everywhere), cmocka_unit_test(test_clock_back),
	};

	return cmocka_run_group_tests(tests, setup, tu_scratch_teardown);
}
