/* SPDX-License-Identifier: MIT */
/*
 * libaio — Linux native AIO: io_submit() per batch, io_getevents() with a timeout.
 *
 * Setup. io_setup() comes first, so that a probe without a file (fd -1) sees an
 * AIO context refused (aio-max-nr exhausted, seccomp). The depth iocbs, a free
 * list of them and the event array are allocated once, here; submit and reap
 * only move pointers. An iocb's data is its request while in flight, NULL when
 * free, which is how cancel() finds what is in flight.
 *
 * Requests the kernel refuses at io_submit() time, such as a write on a read-only
 * fd (-EBADF) or a read of a file with no read_iter, such as a directory (-EINVAL,
 * where pread says -EISDIR), are not submit errors: the request completes at once
 * with that -errno, is parked in e->ready[] and comes out of the next reap(), the
 * others in the batch go on. Only -EAGAIN/-ENOMEM (no AIO resources) stop a batch.
 *
 * fdatasync. IOCB_CMD_FDSYNC where the kernel supports it (any filesystem with
 * ->fsync since Linux 4.18, run from a workqueue). Where io_submit() refuses it
 * with -EINVAL (older kernels, filesystems without aio fsync), the engine runs
 * fdatasync(2) itself, inside submit(), and parks the finished request: the
 * submitting thread then blocks for that sync, as with the sync engine. It then
 * stays on fdatasync(2) for this engine's lifetime rather than try again each time.
 *
 * Cancel is best effort: io_cancel() only works for the few iocbs that can be
 * cancelled (poll, USB gadget); for reads and writes of files and block devices it
 * says -EINVAL or -EAGAIN and the I/O completes by itself. Completions already in
 * the ring are parked for the next reap().
 *
 * AIO on a pipe is performed synchronously inside io_submit() (it blocks until
 * data arrives), so unlike io_uring there is no cheap way to make an AIO request
 * that never completes, and the tests do not try.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libaio.h>

#include "engines/engine.h"

struct aio {
	io_context_t ctx;
	struct iocb *iocbs; /* depth of them; data = request in flight, or NULL */
	struct iocb **free; /* free list, a stack */
	unsigned nfree;
	struct iocb **batch;	 /* submit(): iocbs prepared, not yet given to io_submit() */
	struct io_event *events; /* reap(): depth of them */
	unsigned inflight;	 /* iocbs the kernel holds */
	unsigned nparked;	 /* completed requests waiting in e->ready[0..nparked) */
	bool fdsync_sync;	 /* aio fdsync refused once: fdatasync(2) in submit() */
};

/* ---------------------------------------------------------------- setup */

static void aio_free(struct aio *a)
{
	free(a->iocbs);
	free(a->free);
	free(a->batch);
	free(a->events);
	free(a);
}

static int aio_init(struct engine *e, int fd, unsigned depth)
{
	struct aio *a = calloc(1, sizeof(*a));
	int r;

	(void)fd; /* each iocb names it */
	if (!a)
		return -ENOMEM;
	/* The context first: this is what the availability probe is after. */
	r = io_setup((int)depth, &a->ctx); /* libaio returns -errno */
	if (r < 0) {
		free(a);
		return r;
	}
	a->iocbs = calloc(depth, sizeof(*a->iocbs));
	a->free = calloc(depth, sizeof(*a->free));
	a->batch = calloc(depth, sizeof(*a->batch));
	a->events = calloc(depth, sizeof(*a->events));
	if (!a->iocbs || !a->free || !a->batch || !a->events) {
		io_destroy(a->ctx);
		aio_free(a);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < depth; i++)
		a->free[i] = &a->iocbs[depth - 1 - i];
	a->nfree = depth;
	a->fdsync_sync = eng_test_force_fallbacks;
	e->priv = a;
	return 0;
}

static void aio_cleanup(struct engine *e)
{
	struct aio *a = e->priv;

	if (!a)
		return;
	/* Waits for whatever is still in flight: the kernel writes into those iocbs. */
	io_destroy(a->ctx);
	aio_free(a);
	e->priv = NULL;
	e->queued = 0;
}

/*
 * eng_available(): io_setup() succeeding is what "works" means. Its io_destroy()
 * waits for an RCU grace period (36 ms measured, 85% of the daemon's start-up),
 * so the context is destroyed by a short-lived thread of its own. When no thread
 * can be made, the wait is paid here instead.
 */
static void *aio_destroy_thread(void *arg)
{
	io_destroy((io_context_t)arg);
	return NULL;
}

static int aio_available(void)
{
	io_context_t ctx = 0;
	pthread_attr_t attr;
	pthread_t thread;
	int r = io_setup(1, &ctx);

	if (r < 0)
		return r;
	r = pthread_attr_init(&attr);
	if (r == 0) {
		/* It makes one system call: the smallest stack will do. */
		pthread_attr_setstacksize(&attr,
					  PTHREAD_STACK_MIN < 65536 ? 65536 : PTHREAD_STACK_MIN);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		r = pthread_create(&thread, &attr, aio_destroy_thread, ctx);
		pthread_attr_destroy(&attr);
	}
	if (r != 0)
		io_destroy(ctx);
	return 0;
}

/* ---------------------------------------------------------------- helpers */

static void aio_put(struct aio *a, struct iocb *cb)
{
	cb->data = NULL;
	a->free[a->nfree++] = cb;
}

/* A request that completed inside submit() or cancel(): reaped next. */
static void aio_park(struct engine *e, struct aio *a, struct io_req *req, ssize_t result)
{
	req->result = result;
	req->done_ns = eng_now_ns();
	e->ready[a->nparked++] = req;
}

static ssize_t aio_fdatasync_now(int fd)
{
	while (fdatasync(fd) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* ---------------------------------------------------------------- submit */

/*
 * Gives a->batch[0..n) to io_submit(). An iocb the kernel refuses on its own
 * completes at once with that error (an fdsync refused with -EINVAL runs as
 * fdatasync(2) instead); -EAGAIN or -ENOMEM stop the batch there, and the iocbs
 * not taken go back on the free list, the error in *err. -EINTR (nothing taken;
 * seen on a loaded machine) is tried again like any interrupted call: a stop
 * reaches the caller through its stop flag, never through this. Returns how
 * many of the batch were queued: submitted, or completed and parked.
 */
static unsigned aio_flush(struct engine *e, struct aio *a, unsigned n, int *err)
{
	unsigned off = 0;

	while (off < n) {
		int r = io_submit(a->ctx, (long)(n - off), a->batch + off);
		struct iocb *cb;

		if (r > 0) {
			a->inflight += (unsigned)r;
			off += (unsigned)r;
			continue;
		}
		if (r == -EINTR)
			continue;
		if (r == 0 || r == -EAGAIN || r == -ENOMEM) {
			*err = r ? r : -EAGAIN;
			for (unsigned i = off; i < n; i++)
				aio_put(a, a->batch[i]);
			break;
		}
		/* a->batch[off] itself was refused; the rest may go. */
		cb = a->batch[off++];
		if (cb->aio_lio_opcode == IO_CMD_FDSYNC && r == -EINVAL) {
			a->fdsync_sync = true;
			aio_park(e, a, cb->data, aio_fdatasync_now(cb->aio_fildes));
		} else {
			aio_park(e, a, cb->data, r);
		}
		aio_put(a, cb);
	}
	return off;
}

static int aio_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	struct aio *a = e->priv;
	unsigned room = e->depth - e->queued, first = 0, pending = 0, taken;
	int err = 0;

	if (n == 0)
		return 0;
	if (room == 0)
		return -EBUSY;
	if (n > room)
		n = room;
	/* a->batch[0..pending) holds reqs[first..first + pending). */
	for (unsigned i = 0; i < n; i++) {
		struct io_req *req = reqs[i];
		struct iocb *cb;

		if ((req->op == IO_FDATASYNC && a->fdsync_sync) ||
		    (unsigned)req->op > IO_FDATASYNC) {
			/* Completes here: first send what precedes it, in order. */
			if (pending) {
				taken = aio_flush(e, a, pending, &err);
				if (taken < pending)
					goto out;
			}
			aio_park(e, a, req,
				 req->op == IO_FDATASYNC ? aio_fdatasync_now(e->fd) : -EINVAL);
			first = i + 1;
			pending = 0;
			continue;
		}
		cb = a->free[--a->nfree]; /* room <= depth - in flight: never empty */
		switch (req->op) {
		case IO_READ:
			io_prep_pread(cb, e->fd, req->buf, req->len, (long long)req->offset);
			break;
		case IO_WRITE:
			io_prep_pwrite(cb, e->fd, req->buf, req->len, (long long)req->offset);
			break;
		default:
			io_prep_fdsync(cb, e->fd);
			break;
		}
		cb->data = req;
		a->batch[pending++] = cb;
	}
	taken = pending ? aio_flush(e, a, pending, &err) : 0;
out:
	e->queued = a->inflight + a->nparked;
	if (taken < pending)
		return first + taken ? (int)(first + taken) : err;
	return (int)n;
}

/* ---------------------------------------------------------------- reap */

/*
 * Takes the @n events in a->events. done_ns is read once for the batch, not per
 * I/O: one clock read per reap keeps our per-I/O cost low, and a completion's
 * latency is off by no more than the time it takes to harvest its batch.
 */
static unsigned aio_take(struct aio *a, struct io_req **done, unsigned n)
{
	uint64_t now = eng_now_ns();

	for (unsigned i = 0; i < n; i++) {
		struct io_event *ev = &a->events[i];
		struct io_req *req = ev->data;

		req->result = (ssize_t)(long)ev->res; /* bytes, or -errno */
		req->done_ns = now;
		done[i] = req;
		aio_put(a, ev->obj);
	}
	a->inflight -= n;
	return n;
}

/*
 * Waits for @min completions, parked ones included, but never for more than are
 * in flight: with nothing in flight, -ETIME at once. Returns what it has when
 * the wait ends, possibly fewer than @min; -ETIME or -errno only when nothing.
 */
static int aio_reap(struct engine *e, struct io_req **done, unsigned min, unsigned max,
		    int64_t timeout_ns)
{
	struct aio *a = e->priv;
	unsigned got, want;
	int r = 0;

	if (max == 0)
		return 0;
	got = eng_reap_parked(e, &a->nparked, done, min, max, a->inflight, &want);
	if (a->inflight && got < max) {
		struct timespec ts = {0, 0}, *tsp = &ts; /* no wait: polls the ring */
		unsigned room = max - got;

		if (room > a->inflight)
			room = a->inflight;
		if (want) {
			if (timeout_ns < 0) {
				tsp = NULL;
			} else {
				ts = eng_timespec((uint64_t)timeout_ns);
			}
		}
		r = io_getevents(a->ctx, (long)want, (long)room, a->events, tsp);
		if (r > 0)
			got += aio_take(a, done + got, (unsigned)r);
	}
	e->queued = a->inflight + a->nparked;
	if (got || min == 0)
		return (int)got;
	return r < 0 ? r : -ETIME;
}

/* ---------------------------------------------------------------- cancel */

static int aio_cancel(struct engine *e)
{
	struct aio *a = e->priv;
	struct timespec zero = {0, 0};
	int r;

	if (!a->inflight)
		return 0;
	for (unsigned i = 0; i < e->depth; i++) {
		struct iocb *cb = &a->iocbs[i];
		struct io_event ev;

		if (!cb->data)
			continue; /* free */
		r = io_cancel(a->ctx, cb, &ev);
		if (r == 0) {
			/* Older kernels handed a cancelled iocb's event back here rather
			 * than through the ring; current ones say -EINPROGRESS instead. */
			aio_park(e, a, ev.data, (ssize_t)(long)ev.res);
			aio_put(a, cb);
			a->inflight--;
		}
		/* -EINPROGRESS: on its way; -EINVAL/-EAGAIN: cannot be cancelled. */
	}
	if (a->inflight) {
		r = io_getevents(a->ctx, 0, (long)a->inflight, a->events, &zero);
		if (r > 0)
			a->nparked += aio_take(a, e->ready + a->nparked, (unsigned)r);
	}
	e->queued = a->inflight + a->nparked;
	return 0;
}

const struct engine_ops eng_libaio_ops = {
	.name = "libaio",
	.flags = 0,
	.fds = 0, /* an aio context is no descriptor */
	.init = aio_init,
	.submit = aio_submit,
	.reap = aio_reap,
	.cancel = aio_cancel,
	.cleanup = aio_cleanup,
	.available = aio_available,
};
