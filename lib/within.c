/* SPDX-License-Identifier: MIT */
/*
 * within — see within.h. Written by hand: neither glibc nor a Debian library
 * runs a call with a deadline and abandons it past that (a thread pool would
 * keep the stuck thread as its own, and pthread_cancel() cannot reach a thread
 * waiting in the kernel). The job is shared by the caller and its helper and
 * reference-counted: whichever lets go last frees it, so a caller that gives
 * up never frees what the helper still uses.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "lib/clock.h"
#include "lib/within.h"

struct within_job {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC; signalled when the call returns */
	unsigned refs;	   /* the caller's and the helper's */
	bool done;	   /* the call returned: result holds its value */
	bool abandoned;	   /* the caller let go before it returned */
	int result;
	struct within_limit *lim;
	int (*fn)(void *arg);
	void *arg;
	void (*release)(void *arg);
};

/* Drops one reference, called with j->mu held; frees @j and releases its
 * argument with the last. */
static void job_put_locked(struct within_job *j)
{
	bool last = --j->refs == 0;

	pthread_mutex_unlock(&j->mu);
	if (!last)
		return;
	if (j->release)
		j->release(j->arg);
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->mu);
	free(j);
}

static void *job_run(void *arg)
{
	struct within_job *j = arg;
	int r = j->fn(j->arg);

	pthread_mutex_lock(&j->mu);
	j->result = r;
	j->done = true;
	if (j->abandoned)
		atomic_fetch_sub(&j->lim->abandoned, 1);
	pthread_cond_signal(&j->cv);
	job_put_locked(j);
	return NULL;
}

/* Starts the detached helper of @j: 0 or -errno. */
static int job_thread(struct within_job *j)
{
	pthread_attr_t attr;
	pthread_t thread;
	int r = -pthread_attr_init(&attr);

	if (r < 0)
		return r;
	r = -pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (r == 0 && j->lim->stack)
		r = -pthread_attr_setstacksize(&attr, j->lim->stack);
	if (r == 0)
		r = -pthread_create(&thread, &attr, job_run, j);
	pthread_attr_destroy(&attr);
	return r;
}

int within_start(struct within_job **jp, struct within_limit *lim, int (*fn)(void *arg), void *arg,
		 void (*release)(void *arg))
{
	struct within_job *j = NULL;
	pthread_condattr_t ca;
	int r = -EBUSY;

	*jp = NULL;
	if (atomic_load(&lim->abandoned) >= lim->max)
		goto fail;
	r = -ENOMEM;
	j = malloc(sizeof(*j));
	if (!j)
		goto fail;
	*j = (struct within_job){.refs = 2, .lim = lim, .fn = fn, .arg = arg, .release = release};
	pthread_mutex_init(&j->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->cv, &ca);
	pthread_condattr_destroy(&ca);
	r = job_thread(j);
	if (r < 0) {
		pthread_cond_destroy(&j->cv);
		pthread_mutex_destroy(&j->mu);
		free(j);
		goto fail;
	}
	*jp = j;
	return 0;
fail:
	if (release)
		release(arg);
	return r;
}

int within_wait(struct within_job *j, uint64_t deadline_ns, int *result)
{
	const struct timespec end = eng_timespec(deadline_ns);
	int r = -ETIMEDOUT;

	pthread_mutex_lock(&j->mu);
	while (!j->done && pthread_cond_timedwait(&j->cv, &j->mu, &end) != ETIMEDOUT)
		;
	if (j->done) {
		*result = j->result;
		r = 0;
	}
	pthread_mutex_unlock(&j->mu);
	return r;
}

void within_put(struct within_job *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->mu);
	if (!j->done) {
		j->abandoned = true;
		atomic_fetch_add(&j->lim->abandoned, 1);
	}
	job_put_locked(j);
}
