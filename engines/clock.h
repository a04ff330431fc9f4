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

/* CLOCK_MONOTONIC in nanoseconds (engines/clock.c; a test may define its own). */
uint64_t eng_now_ns(void);

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
