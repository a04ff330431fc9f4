/* SPDX-License-Identifier: MIT */
/*
 * engine — the table of compiled-in engines and the helpers every engine shares.
 *
 * Adding an engine: write engines/<name>.c with a `const struct engine_ops
 * eng_<name>_ops`, declare it in engine.h, and list it in eng_table[] under the
 * CMake option that builds it (WITH_IO_URING, WITH_LIBAIO), in preference order.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "engines/engine.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* One engine a line, each under its CMake option. */
/* clang-format off */
const struct engine_ops *const eng_table[] = {
#ifdef WITH_IO_URING
	&eng_io_uring_ops,
#endif
#ifdef WITH_LIBAIO
	&eng_libaio_ops,
#endif
	&eng_sync_ops,
	&eng_null_ops,
	NULL,
};
/* clang-format on */

bool eng_test_force_fallbacks;

/* Availability per eng_table[] slot: 0 not probed yet, 1 available, -1 not. */
static _Atomic int eng_avail_cache[ARRAY_SIZE(eng_table)];

const struct engine_ops *eng_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; eng_table[i]; i++)
		if (strcmp(eng_table[i]->name, name) == 0)
			return eng_table[i];
	return NULL;
}

/*
 * Engines that complete inside submit() need nothing from the kernel beyond
 * pread/pwrite and are always available. Any other engine is probed once by
 * setting it up without a file (fd -1, depth 1): its init must create its kernel
 * context (ring, aio context) before it looks at the fd, so that io_uring disabled
 * by sysctl or seccomp shows up here rather than on the first probe. An engine
 * whose teardown waits on the kernel (libaio) answers from ops->available()
 * instead: the daemon asks at start-up, before it serves. Racing callers may
 * both probe; the answer is the same.
 */
bool eng_available(const struct engine_ops *ops)
{
	size_t i;

	if (!ops)
		return false;
	if (ops->flags & ENGINE_F_SYNC)
		return true;
	for (i = 0; eng_table[i]; i++)
		if (eng_table[i] == ops)
			break;
	if (!eng_table[i])
		return false; /* not one of ours */

	int cached = atomic_load(&eng_avail_cache[i]);
	if (cached)
		return cached > 0;

	struct engine e;
	bool ok;

	if (ops->available) {
		ok = ops->available() == 0;
	} else {
		ok = eng_init(&e, ops, -1, 1) == 0;
		if (ok)
			eng_cleanup(&e);
	}
	atomic_store(&eng_avail_cache[i], ok ? 1 : -1);
	return ok;
}

const struct engine_ops *eng_resolve(const char *name, int *err)
{
	const struct engine_ops *ops = NULL;
	int r = -ENOENT;

	if (name && strcmp(name, "auto") == 0) {
		/* eng_table[] is in preference order; null is for tests and calibration. */
		for (size_t i = 0; eng_table[i]; i++)
			if (eng_table[i] != &eng_null_ops && eng_available(eng_table[i])) {
				ops = eng_table[i];
				break;
			}
		if (!ops)
			r = -EOPNOTSUPP; /* cannot happen: sync is always there */
	} else {
		ops = eng_find(name);
		if (ops && !eng_available(ops)) {
			ops = NULL;
			r = -EOPNOTSUPP;
		}
	}
	if (err)
		*err = ops ? 0 : r;
	return ops;
}

const struct engine_ops *eng_resolve_qd1(const char *name, int *err)
{
	if (name && strcmp(name, "auto") == 0) {
		if (err)
			*err = 0;
		return &eng_sync_ops; /* always there: it needs only pread/pwrite */
	}
	return eng_resolve(name, err);
}

int eng_init(struct engine *e, const struct engine_ops *ops, int fd, unsigned depth)
{
	int r;

	if (!e || !ops || !ops->init || !ops->submit || !ops->reap)
		return -EINVAL;
	if (depth == 0 || depth > ENGINE_MAX_DEPTH)
		return -EINVAL;

	memset(e, 0, sizeof(*e));
	e->ops = ops;
	e->fd = fd;
	e->depth = depth;
	r = ops->init(e, fd, depth);
	if (r < 0) {
		e->ops = NULL;
		return r;
	}
	return 0;
}

void eng_cleanup(struct engine *e)
{
	if (!e || !e->ops)
		return;
	if (e->ops->cleanup)
		e->ops->cleanup(e);
	e->ops = NULL;
	e->fd = -1;
	e->queued = 0;
	e->priv = NULL;
}

int eng_register_buffer(struct engine *e, void *buf, size_t len)
{
	if (!e || !e->ops)
		return -EINVAL;
	if (!e->ops->register_buffer)
		return -EOPNOTSUPP;
	return e->ops->register_buffer(e, buf, len);
}

int eng_ready_park(struct engine *e, struct io_req *req)
{
	if (e->queued >= e->depth)
		return -EBUSY;
	e->ready[e->queued++] = req;
	return 0;
}

/* Hand out up to @max of e->ready[0..*count), oldest first; the rest move down. */
static unsigned ready_take(struct engine *e, unsigned *count, struct io_req **done, unsigned max)
{
	unsigned n = *count < max ? *count : max;

	if (n) {
		memcpy(done, e->ready, n * sizeof(*done));
		*count -= n;
		/* At most ENGINE_MAX_DEPTH pointers, usually none: keeps submission order. */
		if (*count)
			memmove(e->ready, e->ready + n, *count * sizeof(e->ready[0]));
	}
	return n;
}

int eng_ready_reap(struct engine *e, struct io_req **done, unsigned min, unsigned max)
{
	unsigned n = ready_take(e, &e->queued, done, max);

	if (n == 0)
		return (min > 0 && max > 0) ? -ETIME : 0;
	return (int)n;
}

int eng_sync_reap(struct engine *e, struct io_req **done, unsigned min, unsigned max,
		  int64_t timeout_ns)
{
	(void)timeout_ns; /* everything that will ever complete already has */
	return eng_ready_reap(e, done, min, max);
}

int eng_sync_cancel(struct engine *e)
{
	(void)e;
	return 0; /* nothing is ever in flight between calls */
}

void eng_sync_cleanup(struct engine *e)
{
	e->queued = 0;
}

unsigned eng_reap_parked(struct engine *e, unsigned *nparked, struct io_req **done, unsigned min,
			 unsigned max, unsigned inflight, unsigned *want)
{
	unsigned n = ready_take(e, nparked, done, max);

	*want = min > n ? min - n : 0;
	if (*want > inflight)
		*want = inflight;
	return n;
}
