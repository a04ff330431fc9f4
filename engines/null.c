/* SPDX-License-Identifier: MIT */
/*
 * null — completes every request at once with its full length, touching neither
 * the buffer nor the file (fio's engines/null.c). It is the test engine and the
 * calibration of our own per-I/O cost: a ping over it measures iopulse alone.
 */
#include <errno.h>

#include "engines/engine.h"

static int null_init(struct engine *e, int fd, unsigned depth)
{
	(void)e;
	(void)fd;
	(void)depth;
	return 0;
}

/*
 * Each request gets its own completion stamp, as a sync engine's would: a burst
 * chains a batch of them (engine.h, ENG_SYNC_SLOW_NS), request i timed from
 * request i-1's stamp to its own, so the null engine costs what timing every
 * I/O costs and calibrates that honestly. A single request (a ping) is timed
 * from the caller's stamp: a null ping measures the engine call path.
 */
static ssize_t null_do(int fd, const struct io_req *req)
{
	(void)fd;
	switch (req->op) {
	case IO_READ:
	case IO_WRITE:
		return (ssize_t)req->len;
	case IO_FDATASYNC:
		return 0;
	default:
		return -EINVAL;
	}
}

static int null_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	return eng_sync_submit(e, reqs, n, null_do);
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
