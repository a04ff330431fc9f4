/* SPDX-License-Identifier: MIT */
/*
 * statwithin — target_stat_within(): stat(2) of a path, and
 * target_identify_within(): what several paths are now, each waited for at
 * most so long, for callers that must not block on a hung filesystem (the
 * scheduler, the main thread). Nothing else of the targets is used here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

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

/* One path's identity, the helper's own copy of what it needs. */
struct ident_call {
	enum cfg_target_kind kind;
	dev_t dev;
	long fs_type;
	char path[];
};

static int ident_call_run(void *arg)
{
	struct ident_call *c = arg;
	struct statfs sfs;
	struct stat st;

	if (stat(c->path, &st) < 0)
		return -errno;
	if (c->kind == CFG_TARGET_DEVICE) {
		c->dev = st.st_rdev;
		return S_ISBLK(st.st_mode) ? 0 : -ENOTBLK;
	}
	if (statfs(c->path, &sfs) < 0)
		return -errno;
	c->dev = st.st_dev;
	c->fs_type = (long)sfs.f_type;
	return 0;
}

void target_identify_within(struct target_identity *ids, unsigned n, unsigned ms)
{
	struct within_job **jobs = calloc(n ? n : 1, sizeof(*jobs));
	struct ident_call **calls = calloc(n ? n : 1, sizeof(*calls));
	uint64_t deadline = eng_mono_ns() + (uint64_t)ms * 1000000;

	for (unsigned i = 0; i < n; i++) {
		size_t len = strlen(ids[i].path) + 1;
		struct ident_call *c = jobs && calls ? malloc(sizeof(*c) + len) : NULL;
		int r;

		ids[i].r = -ENOMEM;
		if (!c)
			continue;
		*c = (struct ident_call){.kind = ids[i].kind};
		memcpy(c->path, ids[i].path, len);
		r = within_start(&jobs[i], &stat_limit, ident_call_run, c, free);
		ids[i].r = r == -EBUSY ? -ETIMEDOUT : r; /* too many earlier ones still wait */
		calls[i] = r == 0 ? c : NULL;
	}
	/* All at once, one deadline: a hung path holds up no other. */
	for (unsigned i = 0; i < n; i++) {
		int res;

		if (!calls || !calls[i])
			continue;
		ids[i].r = within_wait(jobs[i], deadline, &res);
		if (ids[i].r == 0) {
			ids[i].r = res;
			ids[i].dev = calls[i]->dev;
			ids[i].fs_type = calls[i]->fs_type;
		}
		within_put(jobs[i]);
	}
	free(jobs);
	free(calls);
}
