/* SPDX-License-Identifier: MIT */
/*
 * clock — eng_now_ns(), the one monotonic clock of engines, probes, bursts and
 * the scheduler.
 *
 * Alone in its file on purpose: iopulse_core is a static library, so a test
 * binary that defines its own eng_now_ns() (a fake clock, tests/unit/test_golden.c)
 * links that one and this object is never pulled from the archive. The daemon
 * gets this one, called directly, at no cost.
 */
#include "clock.h"

uint64_t eng_now_ns(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC cannot fail with a valid pointer; vDSO, no syscall. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return eng_ns(&ts);
}
