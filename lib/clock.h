/* SPDX-License-Identifier: MIT */
/*
 * clock — the one monotonic clock of engines, probes, bursts and the scheduler,
 * in nanoseconds, and its conversions to and from struct timespec.
 */
#ifndef IOPULSE_CLOCK_H
#define IOPULSE_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

#define NSEC_PER_SEC 1000000000ULL

/* CLOCK_MONOTONIC in nanoseconds, or the TSC scaled to it once eng_clock_init()
 * has found it trustworthy (lib/clock.c; a test may define its own). */
uint64_t eng_now_ns(void);

enum eng_clock {
	ENG_CLOCK_AUTO,	     /* the TSC where trusted, else CLOCK_MONOTONIC */
	ENG_CLOCK_MONOTONIC, /* clock_gettime(CLOCK_MONOTONIC) */
	ENG_CLOCK_TSC,	     /* the TSC, scaled to and anchored on CLOCK_MONOTONIC */
};

/*
 * Chooses eng_now_ns()'s source, once at start-up before any thread reads it:
 * ENG_CLOCK_MONOTONIC, or ENG_CLOCK_AUTO for the TSC where the CPU calls it
 * invariant and the kernel's clocksource is "tsc" (x86-64 only). Returns
 * ENG_CLOCK_TSC when the TSC will take over (after ~20ms of calibration, on the
 * first read past it), else ENG_CLOCK_MONOTONIC.
 */
int eng_clock_init(enum eng_clock want);
/* Tests: makes the TSC clock's current rate wrong by @ppm, as a bad calibration
 * or a TSC that changed speed would; no-op on CLOCK_MONOTONIC. */
void eng_clock_test_skew(int64_t ppm);
/* Tests: how many times the TSC clock stepped back onto CLOCK_MONOTONIC because
 * it was off by more than steering takes (a step for want of a clean
 * (TSC, CLOCK_MONOTONIC) pair, a preempted read on a loaded machine, is not one). */
unsigned eng_clock_test_drift_steps(void);
/* What eng_now_ns() reads right now: ENG_CLOCK_MONOTONIC or ENG_CLOCK_TSC. */
enum eng_clock eng_clock_mode(void);

/* CLOCK_MONOTONIC itself, whatever eng_now_ns() reads (or a test defines it as):
 * for real-time waits and calibration. Inline, so that a test binary with an
 * eng_now_ns() of its own does not pull in clock.c's. */
static inline uint64_t eng_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* cannot fail with a valid pointer; vDSO */
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static inline struct timespec eng_timespec(uint64_t ns)
{
	return (struct timespec){.tv_sec = (time_t)(ns / NSEC_PER_SEC),
				 .tv_nsec = (long)(ns % NSEC_PER_SEC)};
}

/* Sleeps until @ns on eng_now_ns()'s clock: 0, or -EINTR when a signal came first. */
static inline int eng_sleep_until(uint64_t ns)
{
	struct timespec ts = eng_timespec(ns);

	return -clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static inline uint64_t eng_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * NSEC_PER_SEC + (uint64_t)ts->tv_nsec;
}

#endif
