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

#include "engine.h"

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
 * by sysctl or seccomp shows up here rather than on the first probe. Racing
 * callers may both probe; the answer is the same.
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
	bool ok = eng_init(&e, ops, -1, 1) == 0;
	if (ok)
		eng_cleanup(&e);
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

int eng_ready_reap(struct engine *e, struct io_req **done, unsigned min, unsigned max)
{
	unsigned n = e->queued < max ? e->queued : max;

	if (n == 0)
		return (min > 0 && max > 0) ? -ETIME : 0;
	memcpy(done, e->ready, n * sizeof(*done));
	e->queued -= n;
	/* At most ENGINE_MAX_DEPTH pointers, usually none: keeps submission order. */
	if (e->queued)
		memmove(e->ready, e->ready + n, e->queued * sizeof(e->ready[0]));
	return (int)n;
}

unsigned eng_reap_parked(struct engine *e, unsigned *nparked, struct io_req **done, unsigned min,
			 unsigned max, unsigned inflight, unsigned *want)
{
	unsigned n = *nparked < max ? *nparked : max;

	if (n) {
		memcpy(done, e->ready, n * sizeof(*done));
		*nparked -= n;
		if (*nparked)
			memmove(e->ready, e->ready + n, *nparked * sizeof(e->ready[0]));
	}
	*want = min > n ? min - n : 0;
	if (*want > inflight)
		*want = inflight;
	return n;
}
