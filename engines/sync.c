/* SPDX-License-Identifier: MIT */
/*
 * sync — pread/pwrite/fdatasync, one request at a time, inside submit().
 *
 * The ioping way: each request runs to completion in the calling thread, so the
 * timestamp taken by the caller just before submit() and done_ns taken here
 * bracket exactly one system call. Finished requests are parked in e->ready[]
 * and handed out by reap(), which never waits. In a batch each request starts
 * when the one before it finished (see ENG_SYNC_SLOW_NS in engine.h). A short
 * transfer is reported as
 * it happened (result < len), not retried: the caller decides what it means.
 */
#include <errno.h>
#include <unistd.h>

#include "engines/engine.h"

static ssize_t sync_do(int fd, const struct io_req *req)
{
	ssize_t n;

	for (;;) {
		switch (req->op) {
		case IO_READ:
			n = pread(fd, req->buf, req->len, (off_t)req->offset);
			break;
		case IO_WRITE:
			n = pwrite(fd, req->buf, req->len, (off_t)req->offset);
			break;
		case IO_FDATASYNC:
			n = fdatasync(fd);
			break;
		default:
			return -EINVAL;
		}
		if (n >= 0)
			return n;
		if (errno != EINTR)
			return -errno;
	}
}

static int sync_init(struct engine *e, int fd, unsigned depth)
{
	(void)e;
	(void)fd;
	(void)depth;
	return 0; /* nothing to set up: e->ready[] lives in struct engine */
}

/* One after the other; after a slow one, the rest waits (see ENG_SYNC_SLOW_NS). */
static int sync_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	return eng_sync_submit(e, reqs, n, sync_do);
}

const struct engine_ops eng_sync_ops = {
	.name = "sync",
	.flags = ENGINE_F_SYNC,
	.init = sync_init,
	.submit = sync_submit,
	.reap = eng_sync_reap,
	.cancel = eng_sync_cancel,
	.cleanup = eng_sync_cleanup,
};
