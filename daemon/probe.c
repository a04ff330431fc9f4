/* SPDX-License-Identifier: MIT */
/*
 * probe — one ping: pick an aligned random offset in the working set, run one
 * QD1 I/O through the engine, optionally fdatasync, and time each separately.
 *
 * Timing brackets the engine call only: write data is generated before the
 * submit timestamp, so rng_fill() never counts as device latency. Everything the
 * I/O path needs (buffer, engine state) is set up before the first run.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

/* Probe buffers are aligned to this; targets needing more are refused (target.c). */
#define PROBE_BUF_ALIGN 4096u

int probe_ping_init(struct ping *p, const struct cfg_probe *cfg)
{
	int r;

	/* Everything starts clear, inflight_ns included: the caller sets it after
	 * init. On failure nothing is left to clean up. */
	memset(p, 0, sizeof(*p));
	p->eng_fd = -1;
	p->cfg = cfg;

	if (cfg->block_size == 0 || cfg->block_size > CFG_MAX_BLOCK_SIZE)
		return -EINVAL;
	p->ops = eng_find(cfg->engine);
	if (!p->ops)
		return -ENOENT;
	if (!eng_available(p->ops))
		return -EOPNOTSUPP;
	if (posix_memalign(&p->buf, PROBE_BUF_ALIGN, cfg->block_size) != 0) {
		p->buf = NULL;
		return -ENOMEM;
	}
	r = rng_seed(&p->rng);
	if (r < 0) {
		probe_ping_cleanup(p);
		return r;
	}
	return 0;
}

void probe_ping_cleanup(struct ping *p)
{
	if (p->eng_fd >= 0)
		eng_cleanup(&p->eng);
	p->eng_fd = -1;
	free(p->buf);
	p->buf = NULL;
}

static void inflight_set(struct ping *p, uint64_t ns)
{
	if (p->inflight_ns)
		atomic_store_explicit(p->inflight_ns, ns, memory_order_relaxed);
}

/* Submit one request, wait for it; result and done_ns end up in @req. */
static int run_one(struct ping *p, struct io_req *req)
{
	struct io_req *const reqs[1] = {req};
	struct io_req *done[1];
	int64_t timeout = p->cfg->timeout_ns ? (int64_t)p->cfg->timeout_ns : -1;
	int n;

	req->result = 0;
	req->done_ns = 0;
	req->submit_ns = eng_now_ns();
	inflight_set(p, req->submit_ns);
	n = p->ops->submit(&p->eng, reqs, 1);
	if (n != 1) {
		inflight_set(p, 0);
		return n < 0 ? n : -EAGAIN;
	}
	n = p->ops->reap(&p->eng, done, 1, 1, timeout);
	if (n != 1) {
		/* Only engines that really wait can get here (-ETIME): report it as
		 * the I/O's result and try to cancel; the lane decides what's next. */
		req->result = n < 0 ? n : -EIO;
		req->done_ns = eng_now_ns();
		if (p->ops->cancel)
			(void)p->ops->cancel(&p->eng);
	}
	inflight_set(p, 0);
	return 0;
}

static uint64_t elapsed(const struct io_req *req)
{
	return req->done_ns > req->submit_ns ? req->done_ns - req->submit_ns : 0;
}

int probe_ping_run(struct ping *p, struct target *t, struct ping_result *r)
{
	const struct cfg_probe *cfg = p->cfg;
	const uint64_t bs = cfg->block_size;
	const bool write = cfg->op == CFG_OP_WRITE;
	uint64_t avail, ws, slots;
	struct io_req req;
	int ret;

	memset(r, 0, sizeof(*r));
	if (!p->buf || !p->ops)
		return -EINVAL;
	if (t->fd < 0)
		return -EBADF;
	if (write && !t->writable)
		return -EBADF; /* config rejects this already; never write to a file we did
				* not create */
	if (t->mem_align == 0 || t->mem_align > PROBE_BUF_ALIGN || t->offset_align == 0 ||
	    bs % t->offset_align != 0 || t->data_start % t->offset_align != 0 ||
	    t->data_end < t->data_start)
		return -EINVAL;
	avail = t->data_end - t->data_start;
	ws = cfg->working_set ? cfg->working_set : avail;
	if (ws < bs || ws > avail)
		return -EINVAL;

	if (p->eng_fd != t->fd) {
		if (p->eng_fd >= 0)
			eng_cleanup(&p->eng);
		p->eng_fd = -1;
		ret = eng_init(&p->eng, p->ops, t->fd, 1);
		if (ret < 0)
			return ret;
		p->eng_fd = t->fd;
	}

	/* Offsets are aligned to the block size, as fio's blockalign=bs and ioping do:
	 * a 4k write at a 512-aligned offset straddles two 4k physical sectors and
	 * measures the drive's read-modify-write instead of the write. data_start is
	 * 4KiB aligned, so blocks are physically aligned too. */
	slots = (ws - bs) / bs + 1;
	r->offset = t->data_start + rng_below(&p->rng, slots) * bs;

	if (write)
		rng_fill(&p->rng, p->buf, bs); /* fresh data, before the clock starts */

	req = (struct io_req){
		.buf = p->buf,
		.offset = r->offset,
		.len = (uint32_t)bs,
		.op = write ? IO_WRITE : IO_READ,
	};
	ret = run_one(p, &req);
	if (ret < 0)
		return ret;
	r->result = req.result;
	r->submit_ns = req.submit_ns;
	r->lat_ns = elapsed(&req);

	if (write && cfg->sync == CFG_SYNC_FDATASYNC) {
		/* Even after a failed write: fdatasync reports writeback errors. */
		req = (struct io_req){.op = IO_FDATASYNC};
		ret = run_one(p, &req);
		if (ret < 0)
			return ret;
		r->sync_result = req.result;
		r->sync_submit_ns = req.submit_ns;
		r->sync_lat_ns = elapsed(&req);
	}
	return 0;
}
