/* SPDX-License-Identifier: MIT */
/*
 * statwithin — target_stat_within(): stat(2) of a path, waited for at most so
 * long, for callers that must not block on a hung filesystem (the scheduler,
 * the main thread). Nothing else of the targets is used here.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lib/clock.h"
#include "daemon/targets/target.h"

/*
 * stat(2) on a hung NFS or FUSE mount waits as long as the server does, and not
 * always interruptibly: a thread that calls it is lost until the filesystem
 * answers. So the stat runs on a helper thread, and the caller waits for it only
 * so long; an abandoned helper finishes (and frees its job) whenever the
 * filesystem returns. At most STAT_ABANDONED_MAX helpers are left waiting at once;
 * beyond that, the caller gets -ETIMEDOUT without trying.
 */
#define STAT_ABANDONED_MAX 8

static atomic_uint stat_abandoned;

struct stat_job {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC */
	unsigned refs;	   /* the caller's and the helper's */
	bool done, abandoned;
	int r;
	struct stat st;
	char path[];
};

/* Drop one reference, under j->mu; frees @j with the last. */
static void stat_job_put(struct stat_job *j)
{
	bool last = --j->refs == 0;

	pthread_mutex_unlock(&j->mu);
	if (last) {
		pthread_cond_destroy(&j->cv);
		pthread_mutex_destroy(&j->mu);
		free(j);
	}
}

static void *stat_job_run(void *arg)
{
	struct stat_job *j = arg;
	struct stat st;
	int r = stat(j->path, &st) < 0 ? -errno : 0;

	pthread_mutex_lock(&j->mu);
	j->st = st;
	j->r = r;
	j->done = true;
	if (j->abandoned)
		atomic_fetch_sub(&stat_abandoned, 1);
	pthread_cond_signal(&j->cv);
	stat_job_put(j);
	return NULL;
}

int target_stat_within(const char *path, struct stat *st, unsigned ms)
{
	size_t n = strlen(path) + 1;
	struct stat_job *j;
	pthread_condattr_t ca;
	pthread_attr_t attr;
	pthread_t thread;
	struct timespec end;
	int r;

	if (atomic_load(&stat_abandoned) >= STAT_ABANDONED_MAX)
		return -ETIMEDOUT;
	j = calloc(1, sizeof(*j) + n);
	if (!j)
		return -ENOMEM;
	memcpy(j->path, path, n);
	j->refs = 2;
	pthread_mutex_init(&j->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	r = -pthread_create(&thread, &attr, stat_job_run, j);
	pthread_attr_destroy(&attr);
	pthread_mutex_lock(&j->mu);
	if (r < 0) {
		j->refs = 1;
		stat_job_put(j);
		return r;
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	end = eng_timespec(eng_ns(&end) + (uint64_t)ms * 1000000);
	while (!j->done && pthread_cond_timedwait(&j->cv, &j->mu, &end) != ETIMEDOUT)
		;
	if (j->done) {
		*st = j->st;
		r = j->r;
	} else {
		j->abandoned = true;
		atomic_fetch_add(&stat_abandoned, 1);
		r = -ETIMEDOUT;
	}
	stat_job_put(j);
	return r;
}
