/* SPDX-License-Identifier: MIT */
/*
 * qd1 — one I/O at a time over a probe's engine, as a ping and a verify probe
 * do all of theirs: submit one request, wait for it in slices that look at the
 * stop flag, publish its submit time while it is in flight, and abandon it on
 * shutdown or when the engine fails. No allocation, lock or log per I/O.
 */
#ifndef IOPULSE_QD1_H
#define IOPULSE_QD1_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "engines/engine.h"

struct qd1 {
	const struct engine_ops *ops;  /* the probe's engine (p->engine) */
	struct engine eng;	       /* set up by qd1_open() */
	bool open;		       /* eng is set up; an abandon tears it down */
	_Atomic uint64_t *inflight_ns; /* if set: submit time of the I/O in flight, 0 idle */
	const _Atomic bool *stop;      /* if set and true: stop waiting for a slow I/O */
	/* The last request's run-queue wait (cpu_wait.h): the time between its
	 * submit and done stamps the thread spent waiting for a CPU, at most all
	 * of it; 0 when not measured. */
	uint64_t cpu_wait_ns;
};

/* @q over engine @ops, publishing its in-flight time in @inflight_ns (may be
 * NULL), not set up: nothing to tear down. */
void qd1_init(struct qd1 *q, const struct engine_ops *ops, _Atomic uint64_t *inflight_ns);

/* Sets the engine up for @fd, one request deep. 0 or -errno as eng_init(). */
int qd1_open(struct qd1 *q, int fd);

/* Tears the engine down, when it is set up. */
void qd1_close(struct qd1 *q);

/*
 * Submits @req (buf, offset, len and op set) on the engine set up, stamping its
 * submit_ns and publishing it as in flight, and waits for it: its result and
 * done_ns end up in @req, the thread's run-queue wait meanwhile in
 * q->cpu_wait_ns (read before the submit stamp and after the done one, so that
 * neither read counts as latency). 0, or -errno when the engine did not take it (nothing
 * went out). A slow request is waited for however long it takes, unless *stop
 * is set or the engine fails: then it is abandoned (result: the wait's -ETIME
 * or -EINTR, or the engine's -errno), the engine torn down (q->open false; set
 * it up again before the next request), and the buffer the caller keeps at
 * @buf (req->buf; NULL for none, an fdatasync) is left to the kernel for good
 * and replaced by a fresh one of req->len bytes, NULL when there is no memory.
 */
int qd1_io(struct qd1 *q, struct io_req *req, void **buf);

/* How long @req took, from qd1_io(), CPU wait included (q->cpu_wait_ns of it). */
static inline uint64_t qd1_elapsed(const struct io_req *req)
{
	return req->done_ns > req->submit_ns ? req->done_ns - req->submit_ns : 0;
}

#endif
