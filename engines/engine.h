/* SPDX-License-Identifier: MIT */
/*
 * engines — I/O engines behind one small ops table.
 *
 * An engine queues a batch of requests (submit) and hands back completions
 * (reap) with a timeout. Like liburing, every call returns a count or -errno,
 * and each request carries its own result: bytes transferred or -errno.
 * Engines never log, never allocate on submit/reap, and know nothing of probes.
 *
 * The sync engine performs each request inside submit() (pread/pwrite/
 * fdatasync) and hands it back on the next reap(); a request stuck in the
 * kernel blocks the calling (lane) thread, which is why only lanes call engines.
 * The null engine completes every request at once with its full length: the
 * test engine and the measure of our own per-I/O cost.
 *
 * io_uring and libaio really queue: reap() waits in the kernel, completions may
 * come back in any order, and cancel() is best effort. An engine is used by one
 * thread at a time; io_uring further binds its ring to the first thread that
 * submits (IORING_SETUP_SINGLE_ISSUER), so submit/reap/cancel must stay there.
 * Buffers of requests still in flight must not be freed or reused: cancel, then
 * reap them back, before cleanup.
 */
#ifndef IOPULSE_ENGINE_H
#define IOPULSE_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/clock.h"
#include "lib/io_op.h"

struct io_req {
	void *buf;	 /* aligned for O_DIRECT by the caller */
	uint64_t offset; /* bytes */
	uint32_t len;	 /* bytes; 0 for fdatasync */
	enum io_op op;
	ssize_t result;	    /* bytes, or -errno; set by the engine on completion */
	uint64_t submit_ns; /* CLOCK_MONOTONIC, set by the caller just before submit */
	uint64_t done_ns;   /* CLOCK_MONOTONIC, set by the engine at completion */
};

#define ENGINE_F_SYNC (1u << 0) /* completes inside submit(); reap never waits */

/*
 * An ENGINE_F_SYNC engine runs a batch one request after the other, stamping
 * each one's done_ns as it finishes: request i then started when request i-1
 * finished, so a caller may chain many requests into one submit() at one in
 * flight. It returns early, the rest not started, after a request that took
 * longer than ENG_SYNC_SLOW_NS (from the previous one's done_ns, or for the
 * first from its submit_ns when set), so that a slow device hands control back
 * after one slow request, not after the whole chain. Before each request after
 * the first it stores that request's start in e->started, when set, so that a
 * watchdog sees the age of the request running, not of the chain.
 */
#define ENG_SYNC_SLOW_NS 1000000ULL

/* Whether a sync batch stops after a request done at @done that started at
 * @start (0: not known). */
static inline bool eng_sync_slow(uint64_t start, uint64_t done)
{
	return start && done - start > ENG_SYNC_SLOW_NS;
}

struct engine;

struct engine_ops {
	const char *name;
	unsigned flags; /* ENGINE_F_* */
	/* Descriptors one set-up holds from init to cleanup (io_uring: its ring; an
	 * aio context and the sync engines hold none), for RLIMIT_NOFILE. */
	unsigned fds;
	/* Prepare for @depth requests in flight on @fd. 0 or -errno. */
	int (*init)(struct engine *e, int fd, unsigned depth);
	/* Queue @n requests. Returns how many were queued, or -errno. */
	int (*submit)(struct engine *e, struct io_req *const *reqs, unsigned n);
	/* Wait up to @timeout_ns (-1 = forever) for at least @min completions, store
	 * up to @max of them in @done. Returns the count, -ETIME on timeout, or -errno. */
	int (*reap)(struct engine *e, struct io_req **done, unsigned min, unsigned max,
		    int64_t timeout_ns);
	/* Best effort cancel of everything in flight. 0 or -errno. */
	int (*cancel)(struct engine *e);
	/* Optional. Registers [@buf, @buf + @len) with the kernel once; requests whose
	 * buffer lies inside it then skip the per-I/O page pinning. The region must
	 * stay allocated until cleanup. 0 or -errno; the engine works without. */
	int (*register_buffer)(struct engine *e, void *buf, size_t len);
	void (*cleanup)(struct engine *e);
	/* Optional. Whether the engine works here, answered without waiting on the
	 * kernel: 0 or -errno. Without it, eng_available() sets the engine up without
	 * a file and tears it down again. */
	int (*available)(void);
};

#define ENGINE_MAX_DEPTH IO_MAX_DEPTH

struct engine {
	const struct engine_ops *ops;
	int fd;
	unsigned depth;
	unsigned queued; /* completed-but-not-reaped (sync, null) or in flight */
	struct io_req *ready[ENGINE_MAX_DEPTH]; /* sync/null: completions awaiting reap */
	void *priv;				/* engine-private state allocated in init */
	/* Optional, the caller's, set after init: where an ENGINE_F_SYNC engine
	 * publishes (relaxed) the start of each request of a batch after the first;
	 * the first's is the caller's to publish. */
	_Atomic uint64_t *started;
};

/* A sync engine starts the next request of its batch, begun at @start. One
 * relaxed store: a plain move on x86-64, no fence. */
static inline void eng_sync_started(struct engine *e, uint64_t start)
{
	if (e->started)
		atomic_store_explicit(e->started, start, memory_order_relaxed);
}

/* Engines compiled in, NULL-terminated, in preference order. */
extern const struct engine_ops *const eng_table[];

/* Looks an engine up by name; NULL if not compiled in. */
const struct engine_ops *eng_find(const char *name);

/* Whether the engine works on this kernel (probed once, cached). */
bool eng_available(const struct engine_ops *ops);

/*
 * The engine a probe asks for by name. "auto" is the first available of io_uring,
 * libaio and sync, never null. Returns NULL with *err (if @err is not NULL) set to
 * -ENOENT when @name is unknown or not compiled in, -EOPNOTSUPP when it is compiled
 * in but does not work here (io_uring disabled by sysctl or seccomp, ...); *err = 0
 * on success.
 */
const struct engine_ops *eng_resolve(const char *name, int *err);

/*
 * As eng_resolve(), for one request at a time (queue depth 1, a ping): "auto" is
 * sync there. With no queue to keep full, an engine that queues only adds its
 * submission and completion path to each request's latency; io_uring also punts a
 * request the filesystem cannot start inline to a kernel worker (io-wq), which
 * inflates the tail (iopulse.yaml(5), 'engine', has the figures).
 */
const struct engine_ops *eng_resolve_qd1(const char *name, int *err);

/* init/cleanup wrappers that fill in e->ops/fd/depth. 0 or -errno (-EINVAL for depth
 * 0 or above ENGINE_MAX_DEPTH). */
int eng_init(struct engine *e, const struct engine_ops *ops, int fd, unsigned depth);
void eng_cleanup(struct engine *e);

/* Calls the engine's register_buffer; -EOPNOTSUPP when it has none. */
int eng_register_buffer(struct engine *e, void *buf, size_t len);

/* The engines themselves (engines/<name>.c); use eng_table / eng_find. */
extern const struct engine_ops eng_io_uring_ops, eng_libaio_ops;
extern const struct engine_ops eng_sync_ops;
extern const struct engine_ops eng_null_ops;

/*
 * Tests only: engines initialised while this is true take the paths meant for
 * older kernels, so that those get tested here too: io_uring cancels request by
 * request as if IORING_ASYNC_CANCEL_ANY were unknown, and libaio runs fdatasync(2)
 * inside submit() as if the kernel refused aio fdsync. Read at init only.
 */
extern bool eng_test_force_fallbacks;

/*
 * Shared by engines that complete inside submit() (ENGINE_F_SYNC): park a finished
 * request in e->ready[], and hand parked requests out in submission order. Reap
 * never waits, since nothing else can complete: it returns up to @max parked
 * requests (fewer than @min if that is all there is), 0 when nothing is parked and
 * @min is 0, and -ETIME at once when nothing is parked and @min > 0, whatever the
 * timeout. Park returns -EBUSY when @depth requests are already parked.
 */
int eng_ready_park(struct engine *e, struct io_req *req);
int eng_ready_reap(struct engine *e, struct io_req **done, unsigned min, unsigned max);
/* Their reap, cancel and cleanup ops: nothing is ever in flight between calls. */
int eng_sync_reap(struct engine *e, struct io_req **done, unsigned min, unsigned max,
		  int64_t timeout_ns);
int eng_sync_cancel(struct engine *e);
void eng_sync_cleanup(struct engine *e);

/*
 * Their submit(): runs @reqs one after the other with @run (the request's result,
 * or -errno), stamping each as it finishes and chaining them as described at
 * ENG_SYNC_SLOW_NS. Inline, with @run a constant, so that each engine's @run is
 * inlined too: the null engine's whole cost per I/O is this loop.
 */
static inline int eng_sync_submit(struct engine *e, struct io_req *const *reqs, unsigned n,
				  ssize_t (*run)(int fd, const struct io_req *req))
{
	uint64_t start = 0; /* the previous request's done_ns */
	unsigned i = 0;

	while (i < n && e->queued < e->depth) {
		struct io_req *req = reqs[i++];

		if (start) /* not the first: it began where the one before ended */
			eng_sync_started(e, start);
		req->result = run(e->fd, req);
		req->done_ns = eng_now_ns();
		(void)eng_ready_park(e, req);
		if (eng_sync_slow(i == 1 ? req->submit_ns : start, req->done_ns))
			break; /* a slow one: the caller gets control back */
		start = req->done_ns;
	}
	if (i == 0 && n > 0)
		return -EBUSY; /* every slot holds a completion nobody reaped */
	return (int)i;
}

/* For engines that park completions in e->ready[0..*nparked) themselves (what a
 * cancel harvested, an fdatasync done synchronously), at the start of a reap:
 * hand out up to @max, oldest first, and shift the rest down. Returns how many;
 * *want gets how many more completions the reap should wait for to reach @min,
 * never more than the @inflight that can still come. e->queued is the caller's. */
unsigned eng_reap_parked(struct engine *e, unsigned *nparked, struct io_req **done, unsigned min,
			 unsigned max, unsigned inflight, unsigned *want);

#endif
