/* SPDX-License-Identifier: MIT */
/*
 * io_uring — liburing: one SQE per request, one io_uring_enter() per batch.
 * The choices (setup flags tried best first, the fixed file and buffer, tmpfs's
 * IOSQE_ASYNC with capped io-wq workers, how cancel works, the single issuer)
 * and why: docs/measurement.md, "The io_uring engine".
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <liburing.h>

#include "engines/engine.h"

#define UD_EINVAL ((uint64_t)1) /* user_data bit 0: a NOP standing in for a bad op */

struct uring {
	struct io_uring ring;
	unsigned inflight;	    /* requests the kernel holds (completions not harvested) */
	unsigned nparked;	    /* harvested by cancel(), waiting in e->ready[0..nparked) */
	bool enabled;		    /* created R_DISABLED: the first submit enables it */
	bool fixed;		    /* e->fd is registered as fixed file 0 */
	bool cancel_any;	    /* IORING_ASYNC_CANCEL_ANY works here */
	bool async;		    /* reads and writes go straight to io-wq (IOSQE_ASYNC) */
	uintptr_t fbuf_lo, fbuf_hi; /* registered buffer [lo, hi), 0/0 when none */
	uint64_t *table;	    /* !cancel_any only: user_data of each request in flight */
};

static const unsigned uring_setup_flags[] = {
	IORING_SETUP_SUBMIT_ALL | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
		IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_R_DISABLED,
	IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
	0,
};

/* ---------------------------------------------------------------- feature tests */

/* 0 not tested yet, 1 works, -1 does not. */
static _Atomic int uring_cancel_any_cache;

/*
 * Whether IORING_ASYNC_CANCEL_ANY works: on a scratch ring with nothing in flight,
 * a cancel-any completes with 0 (nothing matched) where the flag is known, and
 * -EINVAL where it is not. Tested once per process; racing callers agree.
 */
static bool uring_cancel_any_works(void)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int cached = atomic_load(&uring_cancel_any_cache);
	bool ok = false;

	if (cached)
		return cached > 0;
	if (io_uring_queue_init(1, &ring, 0) < 0)
		return false; /* not cached: the caller's own ring just worked */
	sqe = io_uring_get_sqe(&ring);
	if (sqe) {
		io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
		io_uring_sqe_set_data64(sqe, 0);
		if (io_uring_submit_and_wait(&ring, 1) == 1 && io_uring_peek_cqe(&ring, &cqe) == 0)
			ok = cqe->res >= 0;
	}
	io_uring_queue_exit(&ring);
	atomic_store(&uring_cancel_any_cache, ok ? 1 : -1);
	return ok;
}

/* ---------------------------------------------------------------- setup */

/*
 * Whether reads and writes on @fd can never complete inline: O_DIRECT on tmpfs,
 * which io_uring cannot do without blocking, so that each one is first tried
 * (-EAGAIN) and then punted to io-wq.
 */
static bool uring_always_punts(int fd)
{
	struct statfs sfs;
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_DIRECT) && fstatfs(fd, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC;
}

static int uring_init(struct engine *e, int fd, unsigned depth)
{
	struct uring *u = calloc(1, sizeof(*u));
	unsigned flags = 0;
	int r = -EINVAL;

	if (!u)
		return -ENOMEM;
	/* The ring first: this is what the availability probe is after. */
	for (size_t i = 0; i < sizeof(uring_setup_flags) / sizeof(uring_setup_flags[0]); i++) {
		struct io_uring_params p;

		memset(&p, 0, sizeof(p));
		flags = p.flags = uring_setup_flags[i];
		r = io_uring_queue_init_params(depth, &u->ring, &p);
		if (r != -EINVAL)
			break; /* works, or refused for a reason other than the flags */
	}
	if (r < 0) {
		free(u);
		return r;
	}
	u->enabled = !(flags & IORING_SETUP_R_DISABLED);
	e->priv = u;

	u->cancel_any = !eng_test_force_fallbacks && uring_cancel_any_works();
	if (!u->cancel_any) {
		u->table = calloc(depth, sizeof(*u->table));
		if (!u->table) {
			io_uring_queue_exit(&u->ring);
			free(u);
			e->priv = NULL;
			return -ENOMEM;
		}
	}
	/* Best effort: without it, each I/O looks the fd up (and fails as it would). */
	if (fd >= 0)
		u->fixed = io_uring_register_files(&u->ring, &fd, 1) == 0;
	if (fd >= 0 && uring_always_punts(fd)) {
		/* Every read and write would fail its inline attempt (-EAGAIN) and go to
		 * an io-wq worker anyway: send it there at once. The work is memcpy on
		 * CPUs, so more workers than CPUs only add context switches. */
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		unsigned w[2] = {ncpu > 0 ? (unsigned)ncpu : 1, 0};

		u->async = true;
		(void)io_uring_register_iowq_max_workers(&u->ring, w);
	}
	return 0;
}

static void uring_cleanup(struct engine *e)
{
	struct uring *u = e->priv;

	if (!u)
		return;
	/* The ring is torn down asynchronously after close, and a registered file
	 * stays referenced until then: an O_EXCL claim on a device (or a lock on the
	 * file) would outlive us by tens of milliseconds. Drop it synchronously. */
	if (u->fixed)
		(void)io_uring_unregister_files(&u->ring);
	/* Likewise unpin the registered buffer now (and give back its memlock). */
	if (u->fbuf_hi)
		(void)io_uring_unregister_buffers(&u->ring);
	/* Closing the ring cancels what is still in flight, but the kernel may
	 * finish that after we return: cancel and reap before freeing its buffers. */
	io_uring_queue_exit(&u->ring);
	free(u->table);
	free(u);
	e->priv = NULL;
	e->queued = 0;
}

/*
 * Enables a ring created R_DISABLED, making the calling thread its single issuer.
 * liburing 2.3 declares io_uring_enable_rings() but does not export it, hence the
 * system call.
 */
static int uring_enable(struct uring *u)
{
	if (syscall(__NR_io_uring_register, u->ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL,
		    0) < 0)
		return -errno;
	u->enabled = true;
	return 0;
}

/*
 * Registers [buf, buf + len) as fixed buffer 0: requests whose buffer lies
 * inside it go as READ_FIXED/WRITE_FIXED, and the kernel skips pinning the
 * pages on every I/O. One region per ring; a second call replaces the first.
 */
static int uring_register_buffer(struct engine *e, void *buf, size_t len)
{
	struct uring *u = e->priv;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	int r;

	if (!buf || !len)
		return -EINVAL;
	if (u->fbuf_hi) {
		(void)io_uring_unregister_buffers(&u->ring);
		u->fbuf_lo = u->fbuf_hi = 0;
	}
	r = io_uring_register_buffers(&u->ring, &iov, 1);
	if (r < 0)
		return r;
	u->fbuf_lo = (uintptr_t)buf;
	u->fbuf_hi = (uintptr_t)buf + len;
	return 0;
}

/* ---------------------------------------------------------------- submit */

static void uring_prep(struct uring *u, int fd, struct io_uring_sqe *sqe, struct io_req *req)
{
	int f = u->fixed ? 0 : fd;
	const uintptr_t b = (uintptr_t)req->buf;
	const bool fbuf = b >= u->fbuf_lo && b + req->len <= u->fbuf_hi;

	switch (req->op) {
	case IO_READ:
		if (fbuf)
			io_uring_prep_read_fixed(sqe, f, req->buf, req->len, req->offset, 0);
		else
			io_uring_prep_read(sqe, f, req->buf, req->len, req->offset);
		break;
	case IO_WRITE:
		if (fbuf)
			io_uring_prep_write_fixed(sqe, f, req->buf, req->len, req->offset, 0);
		else
			io_uring_prep_write(sqe, f, req->buf, req->len, req->offset);
		break;
	case IO_FDATASYNC:
		io_uring_prep_fsync(sqe, f, IORING_FSYNC_DATASYNC);
		break;
	default:
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)req | UD_EINVAL);
		return;
	}
	if (u->fixed)
		sqe->flags |= IOSQE_FIXED_FILE;
	if (u->async && req->op != IO_FDATASYNC)
		sqe->flags |= IOSQE_ASYNC;
	io_uring_sqe_set_data(sqe, req);
}

/*
 * Hands the @n SQEs just prepared to the kernel. Returns how many it took, or
 * -errno when it took none. SQEs it did not take are withdrawn from the SQ ring,
 * so that they cannot go in with some later batch behind the caller's back.
 */
static int uring_commit(struct uring *u, unsigned n)
{
	unsigned taken = 0;
	int r = 0;

	while (taken < n) {
		r = io_uring_submit(&u->ring);
		if (r <= 0)
			break;
		taken += (unsigned)r;
	}
	if (taken < n) {
		/* Only reached if io_uring_enter() failed (-EAGAIN, -ENOMEM, ...), which
		 * consumes nothing; no SQPOLL thread reads the ring behind our back. */
		unsigned left = n - taken;
		struct io_uring_sq *sq = &u->ring.sq;

		sq->sqe_tail -= left;
		sq->sqe_head -= left;
		io_uring_smp_store_release(sq->ktail, *sq->ktail - left);
		if (taken == 0)
			return r < 0 ? r : -EAGAIN;
	}
	return (int)taken;
}

static int uring_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	struct uring *u = e->priv;
	unsigned room = e->depth - e->queued, i;
	int r;

	if (n == 0)
		return 0;
	if (room == 0)
		return -EBUSY;
	if (n > room)
		n = room;
	if (!u->enabled) {
		r = uring_enable(u);
		if (r < 0)
			return r;
	}
	for (i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

		if (!sqe)
			break; /* cannot happen: the SQ holds depth entries, empty between calls */
		uring_prep(u, e->fd, sqe, reqs[i]);
	}
	if (i == 0)
		return -EBUSY;
	r = uring_commit(u, i);
	if (r < 0)
		return r;
	if (u->table)
		for (int k = 0; k < r; k++)
			u->table[u->inflight + (unsigned)k] =
				(uint64_t)(uintptr_t)reqs[k] |
				((unsigned)reqs[k]->op > IO_FDATASYNC);
	u->inflight += (unsigned)r;
	e->queued += (unsigned)r;
	return r;
}

/* ---------------------------------------------------------------- reap */

/* Forgets @ud in the cancel table (only kept without CANCEL_ANY). */
static void uring_table_del(struct uring *u, uint64_t ud)
{
	for (unsigned i = 0; i < u->inflight; i++)
		if (u->table[i] == ud) {
			u->table[i] = u->table[u->inflight - 1];
			return;
		}
}

/*
 * Takes up to @max completions off the CQ ring without waiting. done_ns is read
 * once for the whole batch, not per I/O: one clock read per reap is what keeps
 * our per-I/O cost low, and a completion's latency is then off by no more than
 * the time it takes to harvest the batch it arrived with.
 */
static unsigned uring_harvest(struct engine *e, struct uring *u, struct io_req **done, unsigned max)
{
	struct io_uring *ring = &u->ring;
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0, got = 0;
	uint64_t now;

	if (!io_uring_cq_ready(ring)) {
		/* Completions may wait as task work (COOP/DEFER_TASKRUN): the kernel
		 * flags them, and only then is a system call worth making. */
		if (!(IO_URING_READ_ONCE(*ring->sq.kflags) &
		      (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)))
			return 0;
		(void)io_uring_get_events(ring);
		if (!io_uring_cq_ready(ring))
			return 0;
	}
	now = eng_now_ns();
	io_uring_for_each_cqe(ring, head, cqe)
	{
		uint64_t ud = io_uring_cqe_get_data64(cqe);
		struct io_req *req;

		if (got == max)
			break;
		seen++;
		if (!ud)
			continue; /* a cancel's own completion */
		req = (struct io_req *)(uintptr_t)(ud & ~UD_EINVAL);
		req->result = (ud & UD_EINVAL) ? -EINVAL : cqe->res;
		req->done_ns = now;
		done[got++] = req;
		if (u->table)
			uring_table_del(u, ud);
		u->inflight--;
	}
	io_uring_cq_advance(ring, seen);
	e->queued -= got;
	return got;
}

/*
 * Waits for min completions, counting what cancel() parked, but never for more
 * than are in flight: with nothing in flight, -ETIME at once. Returns what it
 * has when the wait ends, which may be fewer than @min after a timeout or a
 * signal; -ETIME (or the wait's -errno, e.g. -EINTR) only when that is nothing.
 */
static int uring_reap(struct engine *e, struct io_req **done, unsigned min, unsigned max,
		      int64_t timeout_ns)
{
	struct uring *u = e->priv;
	unsigned got, want;
	int r = 0;

	if (max == 0)
		return 0;
	/* What cancel() harvested first. */
	got = eng_reap_parked(e, &u->nparked, done, min, max, u->inflight, &want);
	e->queued -= got;
	if (want && got < max) {
		struct __kernel_timespec ts, *tsp = NULL;
		struct io_uring_cqe *cqe;

		if (timeout_ns >= 0) {
			struct timespec t = eng_timespec((uint64_t)timeout_ns);

			ts.tv_sec = t.tv_sec;
			ts.tv_nsec = t.tv_nsec;
			tsp = &ts;
		}
		/* Returns at once if @want are already in the CQ ring. */
		r = io_uring_wait_cqes(&u->ring, &cqe, want, tsp, NULL);
	}
	if (u->inflight && got < max)
		got += uring_harvest(e, u, done + got, max - got);
	if (got || min == 0)
		return (int)got;
	return r < 0 ? r : -ETIME;
}

/* ---------------------------------------------------------------- cancel */

static int uring_cancel(struct engine *e)
{
	struct uring *u = e->priv;
	unsigned n = 0;
	int r;

	if (!u->inflight)
		return 0;
	if (u->cancel_any) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

		if (!sqe)
			return -EBUSY;
		io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
		io_uring_sqe_set_data64(sqe, 0);
		n = 1;
	} else {
		/* The SQ holds at least depth entries and is empty between calls. */
		for (; n < u->inflight; n++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

			if (!sqe)
				break;
			io_uring_prep_cancel64(sqe, u->table[n], 0);
			io_uring_sqe_set_data64(sqe, 0);
		}
	}
	r = uring_commit(u, n);
	if (r < 0)
		return r;
	/* Cancellations complete as task work: run it, then park what is done for
	 * the next reap(). Whatever is still running comes back through reap(). */
	(void)io_uring_get_events(&u->ring);
	u->nparked += uring_harvest(e, u, e->ready + u->nparked, ENGINE_MAX_DEPTH - u->nparked);
	/* Parked requests stay queued until reaped. */
	e->queued = u->inflight + u->nparked;
	return 0;
}

const struct engine_ops eng_io_uring_ops = {
	.name = "io_uring",
	.flags = 0,
	.fds = 1, /* the ring */
	.init = uring_init,
	.submit = uring_submit,
	.reap = uring_reap,
	.cancel = uring_cancel,
	.register_buffer = uring_register_buffer,
	.cleanup = uring_cleanup,
};
