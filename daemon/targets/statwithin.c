/* SPDX-License-Identifier: MIT */
/*
 * statwithin — target_stat_within(): stat(2) of a path, waited for at most so
 * long, for callers that must not block on a hung filesystem (the scheduler,
 * the main thread). Nothing else of the targets is used here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/clock.h"
#include "lib/within.h"
#include "daemon/targets/target.h"

/*
 * stat(2) on a hung NFS or FUSE mount waits as long as the server does, and not
 * always interruptibly: the stat runs on a helper thread (lib/within.h), and
 * the caller waits for it only so long. At most STAT_ABANDONED_MAX helpers are
 * left waiting at once; beyond that, the caller gets -ETIMEDOUT without trying.
 * A stat needs little stack: 64 KiB, not the default 8 MiB.
 */
#define STAT_ABANDONED_MAX 8

static struct within_limit stat_limit = {.max = STAT_ABANDONED_MAX, .stack = 64 * 1024};

/* The helper's own copy of the path, and where it puts the answer. */
struct stat_call {
	struct stat st;
	char path[];
};

static int stat_call_run(void *arg)
{
	struct stat_call *c = arg;

	return stat(c->path, &c->st) < 0 ? -errno : 0;
}

int target_stat_within(const char *path, struct stat *st, unsigned ms)
{
	size_t n = strlen(path) + 1;
	struct stat_call *c = malloc(sizeof(*c) + n);
	struct within_job *j;
	int r, res;

	if (!c)
		return -ENOMEM;
	memcpy(c->path, path, n);
	r = within_start(&j, &stat_limit, stat_call_run, c, free);
	if (r == -EBUSY) /* too many earlier ones still wait */
		return -ETIMEDOUT;
	if (r < 0)
		return r;
	r = within_wait(j, eng_mono_ns() + (uint64_t)ms * 1000000, &res);
	if (r == 0) {
		*st = c->st;
		r = res;
	}
	within_put(j);
	return r;
}
