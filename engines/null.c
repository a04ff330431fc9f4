/* SPDX-License-Identifier: MIT */
/*
 * null — completes every request at once with its full length, touching neither
 * the buffer nor the file (fio's engines/null.c). It is the test engine and the
 * calibration of our own per-I/O cost: a ping over it measures iopulse alone.
 */
#include <errno.h>

#include "engine.h"

static int null_init(struct engine *e, int fd, unsigned depth)
{
	(void)e;
	(void)fd;
	(void)depth;
	return 0;
}

/*
 * One clock read per batch, not per request: everything in the batch completes
 * "at once", and per-request reads would make the null engine measure the
 * clock rather than our own per-I/O cost. A single request (a ping) still gets
 * its own read, so a null ping measures the engine call path.
 */
static int null_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	const uint64_t now = n ? eng_now_ns() : 0;
	unsigned i;

	for (i = 0; i < n; i++) {
		struct io_req *req = reqs[i];

		if (e->queued >= e->depth)
			break;
		switch (req->op) {
		case IO_READ:
		case IO_WRITE:
			req->result = (ssize_t)req->len;
			break;
		case IO_FDATASYNC:
			req->result = 0;
			break;
		default:
			req->result = -EINVAL;
			break;
		}
		req->done_ns = now;
		(void)eng_ready_park(e, req);
	}
	if (i == 0 && n > 0)
		return -EBUSY;
	return (int)i;
}

const struct engine_ops eng_null_ops = {
	.name = "null",
	.flags = ENGINE_F_SYNC,
	.init = null_init,
	.submit = null_submit,
	.reap = eng_sync_reap,
	.cancel = eng_sync_cancel,
	.cleanup = eng_sync_cleanup,
};
