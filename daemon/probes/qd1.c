/* SPDX-License-Identifier: MIT */
/*
 * qd1 — one I/O at a time over a probe's engine (qd1.h): the wait, and what
 * abandoning a request in flight leaves behind.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "daemon/probes/cpu_wait.h"
#include "daemon/probes/probe.h"
#include "daemon/probes/qd1.h"

/* How often a wait for a slow I/O looks at the stop flag. */
#define QD1_WAIT_SLICE_NS 100000000LL

/* Buffers the kernel may still write into are parked here and never freed; kept
 * reachable so that a leak checker does not flag the deliberate leak. */
static pthread_mutex_t parked_mu = PTHREAD_MUTEX_INITIALIZER;
static void **parked;
static size_t n_parked, cap_parked;

static void park_buffer(void *buf)
{
	pthread_mutex_lock(&parked_mu);
	if (mem_grow(&parked, &cap_parked, n_parked + 1, sizeof(*parked)) == 0)
		parked[n_parked++] = buf;
	pthread_mutex_unlock(&parked_mu);
}

void qd1_init(struct qd1 *q, const struct engine_ops *ops, _Atomic uint64_t *inflight_ns)
{
	memset(q, 0, sizeof(*q));
	q->ops = ops;
	q->inflight_ns = inflight_ns;
}

int qd1_open(struct qd1 *q, int fd)
{
	int r = eng_init(&q->eng, q->ops, fd, 1);

	q->open = r == 0;
	return r;
}

void qd1_close(struct qd1 *q)
{
	if (q->open)
		eng_cleanup(&q->eng);
	q->open = false;
}

static void inflight_set(struct qd1 *q, uint64_t ns)
{
	if (q->inflight_ns)
		atomic_store_explicit(q->inflight_ns, ns, memory_order_relaxed);
}

/*
 * After a wait given up: cancel, then tear the engine down (set up again before
 * the next request) and leave the buffer to the kernel, allocating a fresh one
 * of @len bytes. The old buffer is leaked on purpose: a late completion may
 * still DMA into it. The in-flight stamp stays set meanwhile, since a teardown
 * may itself wait on the device.
 */
static void abandon_inflight(struct qd1 *q, void **buf, size_t len)
{
	void *fresh = NULL;

	if (q->ops->cancel)
		(void)q->ops->cancel(&q->eng);
	qd1_close(q);
	if (!buf)
		return;
	park_buffer(*buf);
	if (posix_memalign(&fresh, PROBE_BUF_ALIGN, len) == 0)
		*buf = fresh;
	else
		*buf = NULL; /* the caller allocates again */
}

int qd1_io(struct qd1 *q, struct io_req *req, void **buf)
{
	struct io_req *const reqs[1] = {req};
	struct io_req *done[1];
	uint64_t wait0 = 0, wait1 = 0, before, edges, took;
	bool waits;
	int n;

	q->cpu_wait_ns = 0;
	req->result = 0;
	req->done_ns = 0;
	before = eng_now_ns();
	waits = cpu_wait_now(&wait0);
	req->submit_ns = eng_now_ns();
	inflight_set(q, req->submit_ns);
	n = q->ops->submit(&q->eng, reqs, 1);
	if (n != 1) {
		inflight_set(q, 0);
		return n < 0 ? n : -EAGAIN;
	}
	/*
	 * A request past its timeout is not abandoned: the lane keeps waiting,
	 * exactly as the sync engine must, while the scheduler reports the target
	 * stuck and counts the timeout. Giving up would free the lane only to queue
	 * one more request per interval on a hung device, each holding a ring and a
	 * buffer. Only shutdown (or an engine error) abandons the request. -EINTR is
	 * no error of the I/O: io_getevents(2) returns it after any stop or freeze
	 * of the process (a cgroup freeze, a debugger), with the I/O still in flight.
	 */
	for (;;) {
		n = q->ops->reap(&q->eng, done, 1, 1, QD1_WAIT_SLICE_NS);
		if (n == 1)
			break;
		if ((n == -ETIME || n == -EINTR) && !(q->stop && atomic_load(q->stop)))
			continue;
		req->result = n < 0 ? n : -EIO;
		req->done_ns = eng_now_ns();
		abandon_inflight(q, buf, req->len);
		break;
	}
	/*
	 * The wait read is the thread's between the two reads of its figure, which
	 * lie just outside [submit_ns, done_ns]: a preemption at the edges (the
	 * return from the first read's syscall is a preemption point, and so is
	 * the second's entry) would count a wait the I/O never had, and a loaded
	 * machine then showed I/Os of 0ns. So the edges' whole length, the waits
	 * they may hold included, comes off: what is left is a wait certainly
	 * within the I/O (a lower bound, a few microseconds short of the truth
	 * when the thread waited at all, more at a thread's first I/O, whose
	 * first read opens the file), and the latency net of it is never less
	 * than the I/O's own. A clock that went back across an edge (the TSC
	 * clock stepping back onto CLOCK_MONOTONIC, lib/clock.c) leaves the
	 * edges unknown: nothing comes off then.
	 */
	if (waits && cpu_wait_now(&wait1) && wait1 > wait0) {
		uint64_t after = eng_now_ns();

		took = qd1_elapsed(req);
		if (req->submit_ns >= before && after >= req->done_ns) {
			edges = (req->submit_ns - before) + (after - req->done_ns);
			wait1 -= wait0;
			wait1 = wait1 > edges ? wait1 - edges : 0;
			q->cpu_wait_ns = wait1 < took ? wait1 : took;
		}
	}
	inflight_set(q, 0);
	return 0;
}
