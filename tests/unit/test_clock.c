/* SPDX-License-Identifier: MIT */
/*
 * clock: eng_now_ns() is CLOCK_MONOTONIC, read through the TSC or not. Forced to
 * CLOCK_MONOTONIC it is exactly clock_gettime(); on the TSC (where this machine
 * trusts it) it stays within CLOCK_MONOTONIC_BOUND_NS of CLOCK_MONOTONIC, over
 * sleeps and across re-anchoring, and never goes back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <cmocka.h>

#include "lib/clock.h"

/*
 * How far the TSC clock may be from CLOCK_MONOTONIC, read between two
 * CLOCK_MONOTONIC reads. It is calibrated over 20ms to a few ppm, then steered
 * back onto CLOCK_MONOTONIC every second, so it is off by well under a
 * microsecond here; 20us leaves room for a VM whose TSC is rougher, and is still
 * far below anything a wrong rate or a missed anchor would show (a 0.1% rate
 * error is 1ms after a second).
 */
#define CLOCK_MONOTONIC_BOUND_NS 20000ULL

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return eng_ns(&ts);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = eng_timespec(ns);

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Reads for @ns of CLOCK_MONOTONIC: anchors happen on reads. Returns how many
 * reads found CLOCK_MONOTONIC in charge (a step back). */
static unsigned read_for(uint64_t ns)
{
	uint64_t end = mono() + ns;
	unsigned mono_reads = 0;

	while (mono() < end) {
		(void)eng_now_ns();
		mono_reads += eng_clock_mode() == ENG_CLOCK_MONOTONIC;
	}
	return mono_reads;
}

/* Reads until the TSC is in charge: calibrated, or calibrated again after a step
 * back. On a loaded machine a calibration or an anchor may find every try at a
 * (TSC, CLOCK_MONOTONIC) pair preempted; the clock then steps back and
 * calibrates 20ms later, so waiting on the mode, not on a time, is what holds. */
static void wait_tsc(void)
{
	uint64_t end = mono() + 10 * NSEC_PER_SEC;

	while (eng_clock_mode() != ENG_CLOCK_TSC) {
		if (mono() > end)
			fail_msg("the TSC clock did not calibrate within 10s");
		(void)read_for(1000000);
	}
}

/* eng_now_ns() read between two CLOCK_MONOTONIC reads lies between them, give or
 * take @slack. */
static void assert_between(uint64_t slack)
{
	for (int i = 0; i < 1000; i++) {
		uint64_t a = mono(), x = eng_now_ns(), b = mono();

		if (x + slack < a || x > b + slack)
			fail_msg(
				"eng_now_ns() %llu outside CLOCK_MONOTONIC [%llu, %llu] +- %llu ns "
				"(mode %d)",
				(unsigned long long)x, (unsigned long long)a, (unsigned long long)b,
				(unsigned long long)slack, eng_clock_mode());
	}
}

static void test_forced_monotonic(void **state)
{
	(void)state;
	assert_int_equal(eng_clock_init(ENG_CLOCK_MONOTONIC), ENG_CLOCK_MONOTONIC);
	sleep_ns(30000000); /* past the calibration time: nothing calibrates */
	assert_between(0);
	assert_int_equal(eng_clock_mode(), ENG_CLOCK_MONOTONIC);
}

static void test_tsc_agrees(void **state)
{
	uint64_t prev, end, a0, x0, a1, x1;
	unsigned drifted = eng_clock_test_drift_steps();

	(void)state;
	if (eng_clock_init(ENG_CLOCK_AUTO) != ENG_CLOCK_TSC) {
		/* Not x86-64, no invariant TSC, or the kernel's clocksource is not
		 * the TSC: the fallback, as forced above. */
		assert_int_equal(eng_clock_mode(), ENG_CLOCK_MONOTONIC);
		print_message("TSC not trusted here: CLOCK_MONOTONIC only\n");
		skip();
	}
	assert_int_equal(eng_clock_mode(), ENG_CLOCK_MONOTONIC); /* until calibrated */
	sleep_ns(25000000);
	wait_tsc(); /* the first read calibrates, unless preempted */
	assert_between(CLOCK_MONOTONIC_BOUND_NS);

	/* Over a sleep, both clocks advance alike. */
	a0 = mono();
	x0 = eng_now_ns();
	sleep_ns(300000000);
	x1 = eng_now_ns();
	a1 = mono();
	assert_true(x1 - x0 <= a1 - a0 + CLOCK_MONOTONIC_BOUND_NS);
	assert_true(x1 - x0 + CLOCK_MONOTONIC_BOUND_NS >= 300000000);

	/* Across re-anchoring (every second): never back, and still agreeing. */
	prev = eng_now_ns();
	end = mono() + 2300000000ULL;
	while (mono() < end) {
		uint64_t x = eng_now_ns();

		if (x < prev)
			fail_msg("eng_now_ns() went back from %llu to %llu",
				 (unsigned long long)prev, (unsigned long long)x);
		prev = x;
	}
	assert_int_equal(eng_clock_test_drift_steps(), drifted);
	wait_tsc();
	assert_between(CLOCK_MONOTONIC_BOUND_NS);
	sleep_ns(1200000000); /* a whole period with nobody reading */
	assert_between(CLOCK_MONOTONIC_BOUND_NS);
	wait_tsc();
	assert_int_equal(eng_clock_test_drift_steps(), drifted);
}

/* A rate gone wrong by 500ppm (NTP's largest slew) is steered back within two
 * anchors; by 5000ppm (5ms a second, past what steering takes) the clock steps
 * back onto CLOCK_MONOTONIC, calibrates again and returns to the TSC. */
static void test_tsc_steered_back(void **state)
{
	unsigned drifted;

	(void)state;
	if (eng_clock_init(ENG_CLOCK_AUTO) != ENG_CLOCK_TSC)
		skip();
	wait_tsc();

	eng_clock_test_skew(500);
	sleep_ns(300000000);
	{
		uint64_t a = mono(), x = eng_now_ns();

		/* The skew shows (the test can see a wrong rate)... */
		assert_true(x > a + 100000);
	}
	/* ...is steered, never stepped for (a step for want of a pair, on a loaded
	 * machine, recalibrates and is no verdict on the steering)... */
	drifted = eng_clock_test_drift_steps();
	read_for(2300000000ULL);
	assert_int_equal(eng_clock_test_drift_steps(), drifted);
	wait_tsc();
	assert_between(CLOCK_MONOTONIC_BOUND_NS); /* ...and is gone */

	/* Past what steering takes: stepped back at the next anchor, calibrated
	 * again. A step for want of a pair first would take the skew with it: skew
	 * again then, a few times at most. */
	for (int i = 0; i < 5 && eng_clock_test_drift_steps() == drifted; i++) {
		uint64_t end;

		wait_tsc();
		eng_clock_test_skew(5000);
		end = mono() + 1500000000ULL; /* an anchor comes within 1s */
		while (mono() < end && eng_clock_mode() == ENG_CLOCK_TSC)
			(void)eng_now_ns();
	}
	assert_true(eng_clock_test_drift_steps() > drifted);
	wait_tsc();
	assert_between(CLOCK_MONOTONIC_BOUND_NS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forced_monotonic),
		cmocka_unit_test(test_tsc_agrees),
		cmocka_unit_test(test_tsc_steered_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
