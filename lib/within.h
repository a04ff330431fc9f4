/* SPDX-License-Identifier: MIT */
/*
 * within — a call that may block in the kernel for ever (stat(2), open(2) or
 * pread(2) on a hung NFS or FUSE mount, a dead disk), run on a helper thread
 * and waited for only so long. Such a call cannot be cancelled, and its
 * thread is lost until the filesystem answers, so a helper the caller stops
 * waiting for is abandoned: it finishes whenever the kernel returns, then
 * releases what the call owned. Whatever the call touches must therefore be
 * its own (its argument, handed over), never the caller's. A leaf: no log.
 */
#ifndef IOPULSE_WITHIN_H
#define IOPULSE_WITHIN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* One kind of call's bound on its helpers left waiting in the kernel: a hung
 * filesystem must not make its callers pile up threads. Static, for the
 * process's life; 'abandoned' starts at 0. */
struct within_limit {
	unsigned max;	       /* abandoned helpers still waiting, at most */
	size_t stack;	       /* each helper's stack size; 0: the default */
	atomic_uint abandoned; /* abandoned helpers still waiting */
};

struct within_job;

/*
 * Starts @fn(@arg) on a detached helper thread. @arg is handed over whatever
 * happens: @release(@arg) (NULL: nothing to release) runs once, when neither
 * the caller nor the helper needs it any more. 0 with *@jp, which the caller
 * waits for with within_wait() and lets go of with within_put(); -EBUSY when
 * @lim->max of its helpers are abandoned and still waiting (nothing started),
 * -ENOMEM, or pthread_create()'s error (-EAGAIN: no thread to be had).
 */
int within_start(struct within_job **jp, struct within_limit *lim, int (*fn)(void *arg), void *arg,
		 void (*release)(void *arg));

/* Waits for @j's call until CLOCK_MONOTONIC (eng_mono_ns()) reaches
 * @deadline_ns: 0 when it has returned, its value in *@result (and what it
 * wrote in its argument readable until within_put()), or -ETIMEDOUT. */
int within_wait(struct within_job *j, uint64_t deadline_ns, int *result);

/* The caller lets go of @j: a call that has not returned is abandoned (counted
 * in its limit until it returns), and its argument released by its helper.
 * NULL: nothing. */
void within_put(struct within_job *j);

#endif
