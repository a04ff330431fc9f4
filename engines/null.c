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
 * Each request gets its own completion stamp, as a sync engine's would: a burst
 * chains a batch of them (engine.h, ENG_SYNC_SLOW_NS), request i timed from
 * request i-1's stamp to its own, so the null engine costs what timing every
 * I/O costs and calibrates that honestly. A single request (a ping) is timed
 * from the caller's stamp: a null ping measures the engine call path.
 */
static int null_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	uint64_t start = 0; /* the previous request's done_ns */
	unsigned i = 0;

	while (i < n && e->queued < e->depth) {
		struct io_req *req = reqs[i++];

		if (start) /* not the first: it began where the one before ended */
			eng_sync_started(e, start);
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
		req->done_ns = eng_now_ns();
		(void)eng_ready_park(e, req);
		if (eng_sync_slow(i == 1 ? req->submit_ns : start, req->done_ns))
			break; /* preempted: the caller gets control back, as from sync */
		start = req->done_ns;
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
