/* SPDX-License-Identifier: MIT */
/*
 * verify — the verify probe. Each run reads back every block of the probe's
 * file and checks it, then writes a new generation of the next few blocks in
 * turn and fdatasyncs them, so that the next run checks what the storage said
 * was durable.
 *
 * Where the blocks live: a file of the probe's own in the target's directory
 * (VERIFY_FILE_PREFIX + probe name), opened by a struct target of its own
 * pointed at that name and pinned to the directory the lane's target pinned.
 * So it is created, marked, locked, re-checked and never written unless ours
 * exactly as the probe file is (target.c), and no ping or
 * burst can overwrite a block, whatever their working sets: reserving a region
 * of the shared probe file would have changed every other probe's geometry.
 *
 * Expected generations live in memory: after a restart the first run takes the
 * blocks it finds as they are (a write lost across a restart is not seen), and
 * so does the first run after the file was opened again.
 *
 * Block header, little-endian: magic[8], crc32 of bytes 12..size[4], size[4],
 * offset[8], generation[8], nonce[8]; random payload after it.
 */
#include <endian.h>
#include <inttypes.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "log.h"
#include "probe.h"
#include "verify.h"

static const char verify_magic[8] = {'I', 'O', 'P', 'V', 'R', 'F', 'Y', '1'};

#define CRC_AT	  8
#define SIZE_AT	  12
#define OFFSET_AT 16
#define GEN_AT	  24
#define NONCE_AT  32

/* Expected generation of a block found wrong: not checked again until rewritten,
 * so that one bad block is one mismatch, not one per run. */
#define GEN_FLAGGED UINT64_MAX

static void put64(unsigned char *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static uint32_t block_crc(const unsigned char *b, size_t size)
{
	/* zlib's crc32 is linked already (HTTP gzip); it takes uInt lengths, and a
	 * block is at most CFG_MAX_BLOCK_SIZE. */
	return (uint32_t)crc32(crc32(0L, Z_NULL, 0), b + SIZE_AT, (uInt)(size - SIZE_AT));
}

void verify_block_fill(void *buf, size_t size, uint64_t offset, uint64_t gen, struct rng *rng)
{
	unsigned char *b = buf;
	uint32_t v;

	rng_fill(rng, b, size);
	memcpy(b, verify_magic, sizeof(verify_magic));
	v = htole32((uint32_t)size);
	memcpy(b + SIZE_AT, &v, sizeof(v));
	put64(b + OFFSET_AT, offset);
	put64(b + GEN_AT, gen);
	v = htole32(block_crc(b, size));
	memcpy(b + CRC_AT, &v, sizeof(v));
}

enum verify_result verify_block_check(const void *buf, size_t size, uint64_t offset,
				      uint64_t expected, uint64_t *found)
{
	const unsigned char *b = buf;
	uint32_t crc, bsize;

	*found = 0;
	if (memcmp(b, verify_magic, sizeof(verify_magic)) != 0)
		return expected ? VERIFY_WRONG_DATA : VERIFY_UNWRITTEN;
	*found = get64(b + GEN_AT);
	memcpy(&crc, b + CRC_AT, sizeof(crc));
	memcpy(&bsize, b + SIZE_AT, sizeof(bsize));
	if (le32toh(bsize) != size || le32toh(crc) != block_crc(b, size))
		return VERIFY_WRONG_DATA;
	if (get64(b + OFFSET_AT) != offset)
		return VERIFY_WRONG_OFFSET;
	if (expected && *found < expected)
		return VERIFY_STALE;
	if (expected && *found > expected) /* never written there: not a lost write */
		return VERIFY_WRONG_DATA;
	return VERIFY_OK;
}

/* ---------------------------------------------------------------- the probe */

struct verify_probe {
	struct cfg_target file_cfg; /* the target's, sized for the blocks */
	struct target file;	    /* the probe's own file in the target's directory */
	char file_name[NAME_MAX + 1];
	char why[PATH_MAX + 64]; /* a run's failure, in words (a path and a few) */
	void *buf;		 /* one block, aligned for O_DIRECT */
	uint64_t *expected;	 /* by block: generation last synced; 0 not known */
	uint64_t next_gen;	 /* the generation the next write carries */
	unsigned cursor;	 /* the next block to write */
	struct rng rng;
	_Atomic uint64_t inflight; /* submit time of the I/O in flight, 0 idle */
};

static const char *verify_op_name(const struct cfg_probe *c)
{
	(void)c;
	return "verify";
}

static unsigned verify_io_ops(const struct cfg_probe *c)
{
	(void)c;
	return 1u << IO_READ | 1u << IO_WRITE | 1u << IO_FDATASYNC;
}

static void verify_probe_free(struct probe *p)
{
	struct verify_probe *vp = p->state;

	target_close(&vp->file);
	free(vp->buf);
	free(vp->expected);
	free(vp);
}

static int verify_probe_init(struct probe *p)
{
	const struct cfg_probe *c = p->cfg;
	struct verify_probe *vp;
	int r;

	if (p->target->cfg->kind != CFG_TARGET_DIRECTORY || c->verify_blocks < 2 ||
	    c->block_size < VERIFY_HEADER_SIZE || c->block_size > CFG_MAX_BLOCK_SIZE)
		return -EINVAL; /* the configuration refuses these already */
	vp = calloc(1, sizeof(*vp));
	if (!vp)
		return -ENOMEM;
	p->state = vp; /* from here verify_probe_free() cleans up */
	vp->file_cfg = *p->target->cfg;
	/* target_open() lays out no file under CFG_MIN_TARGET_SIZE (1MiB): a
	 * few blocks then sit at the start of a larger file, laid out once. */
	vp->file_cfg.size = (uint64_t)c->verify_blocks * c->block_size;
	if (vp->file_cfg.size < CFG_MIN_TARGET_SIZE)
		vp->file_cfg.size = CFG_MIN_TARGET_SIZE;
	/* The layout runs inside the probe's first run, holding the lane: paced at
	 * a slow layout_rate, 1MiB would keep a 1s ping waiting past its next run.
	 * The smallest file goes at once, one write like a burst's; larger ones
	 * keep the target's pace. */
	if (vp->file_cfg.size == CFG_MIN_TARGET_SIZE)
		vp->file_cfg.layout_rate = 0;
	snprintf(vp->file_name, sizeof(vp->file_name), VERIFY_FILE_PREFIX "%s", c->name);
	target_init(&vp->file, &vp->file_cfg);
	vp->file.file_name = vp->file_name;
	vp->file.inflight_ns = &vp->inflight;
	vp->expected = calloc(c->verify_blocks, sizeof(*vp->expected));
	if (!vp->expected || posix_memalign(&vp->buf, PROBE_BUF_ALIGN, c->block_size) != 0) {
		vp->buf = NULL;
		verify_probe_free(p);
		return -ENOMEM;
	}
	r = rng_seed(&vp->rng);
	if (r < 0)
		verify_probe_free(p);
	return r;
}

/*
 * The probe's file open and still the one at its name. One that changed under
 * us (removed, replaced) fails this run, which says so, and is opened again by
 * the next. Every open starts the expectations over, as after a restart: the
 * file may be another one (a new file can even get the old one's inode
 * number) or laid out anew in place. 0, or -errno with out->why set (and
 * out->target_down when the file is the trouble).
 */
static int verify_file_ready(struct probe *p, const _Atomic bool *stop, struct probe_outcome *out)
{
	struct verify_probe *vp = p->state;
	const bool opened = vp->file.fd < 0;
	int r;

	vp->file.stop = stop;
	/* Only in the directory the lane pinned, never one swapped in since. */
	target_pin_like(&vp->file, p->target);
	/* Opening and checking walk the path and read the header: on a hung disk
	 * they hang as I/O does, and must show as in flight, as the lane's do. A
	 * layout publishes each of its writes here in turn. */
	atomic_store(&vp->inflight, eng_now_ns());
	r = opened ? target_open(&vp->file) : target_check(&vp->file);
	atomic_store(&vp->inflight, 0);
	if (r < 0) {
		if (!opened && r == -ESTALE) /* whichever check found it: one clear line */
			snprintf(vp->why, sizeof(vp->why),
				 "%s was replaced or removed; starting over with a new one",
				 vp->file.file_path);
		else
			snprintf(vp->why, sizeof(vp->why), "%s", vp->file.error);
		out->why = vp->why;
		out->target_down = true;
		return r;
	}
	if (vp->file.offset_align == 0 || p->cfg->block_size % vp->file.offset_align != 0) {
		out->why = "'block_size' is not a multiple of the directory's O_DIRECT alignment";
		return -EINVAL;
	}
	if (opened) {
		memset(vp->expected, 0, p->cfg->verify_blocks * sizeof(*vp->expected));
		vp->next_gen = 0;
	}
	return 0;
}

/* One pread/pwrite/fdatasync, timed into out->op[@op]; bytes, or -errno. */
static ssize_t timed_io(struct probe *p, enum io_op op, uint64_t off, struct probe_outcome *out)
{
	struct verify_probe *vp = p->state;
	const size_t bs = p->cfg->block_size;
	struct probe_op_outcome *o = &out->op[op];
	uint64_t start = eng_now_ns(), lat;
	ssize_t n;

	atomic_store(&vp->inflight, start);
	if (op == IO_READ)
		n = pread(vp->file.fd, vp->buf, bs, (off_t)off);
	else if (op == IO_WRITE)
		n = pwrite(vp->file.fd, vp->buf, bs, (off_t)off);
	else
		n = fdatasync(vp->file.fd);
	if (n < 0)
		n = -errno;
	lat = eng_now_ns() - start;
	atomic_store(&vp->inflight, 0);
	out->busy_ns += lat; /* a failed I/O kept the target busy too */
	if (lat >= p->cfg->timeout_ns &&
	    (!p->timeout_claimed || probe_claim_timeout(p->timeout_claimed, start)))
		out->timeouts++;
	if (n < 0) {
		o->errors++;
		probe_outcome_io_error(out, (int)n, io_op_name(op));
	} else if (op != IO_FDATASYNC && (size_t)n < bs) {
		o->short_ios++;
		probe_outcome_io_error(out, -EIO, "short transfer");
		n = -EIO;
	} else {
		o->ios++;
		o->bytes += (uint64_t)n;
		o->io_ns += lat;
		hist_record(o->hist, lat);
	}
	return n;
}

/* What a check found, as the kind label of iopulse_verify_mismatches_total. */
static enum probe_mismatch mismatch_of(enum verify_result res)
{
	switch (res) {
	case VERIFY_WRONG_OFFSET:
		return PROBE_MISMATCH_WRONG_OFFSET;
	case VERIFY_STALE:
		return PROBE_MISMATCH_STALE;
	default:
		return PROBE_MISMATCH_WRONG_DATA;
	}
}

/*
 * Logs one mismatch. Mismatches are rare events, not per-I/O noise, and the
 * offset and generations are what a reader needs to take to the storage's
 * owner; the per-key limit of log.h keeps a file gone bad from flooding.
 */
static void report(const struct probe *p, enum verify_result res, uint64_t off, uint64_t expected,
		   uint64_t found)
{
	static const char *const what[] = {
		[VERIFY_WRONG_DATA] = "wrong data (checksum fails, or no block of ours)",
		[VERIFY_WRONG_OFFSET] = "wrong offset (a block written for another offset: a "
					"misdirected write)",
		[VERIFY_STALE] = "stale (an older generation: a lost write)",
	};
	const struct verify_probe *vp = p->state;
	char key[CFG_NAME_MAX + 16];

	snprintf(key, sizeof(key), "Verify %s", p->cfg->name);
	log_state_error(key,
			"Probe %s: block at offset %" PRIu64 " of %s: %s; expected generation "
			"%" PRIu64 ", found %" PRIu64 " (0: none)",
			p->cfg->name, off, vp->file.file_path, what[res], expected, found);
}

/* Byte offset of block @i in the probe's file. */
static uint64_t block_offset(const struct probe *p, unsigned i)
{
	return TARGET_HEADER_SIZE + (uint64_t)i * p->cfg->block_size;
}

/* Reads every block not already found wrong and checks it. */
static void check_blocks(struct probe *p, const _Atomic bool *stop, struct probe_outcome *out)
{
	struct verify_probe *vp = p->state;

	for (unsigned i = 0; i < p->cfg->verify_blocks; i++) {
		uint64_t off = block_offset(p, i), *exp = &vp->expected[i], found;
		enum verify_result res;

		if (stop && atomic_load(stop)) {
			out->incomplete = true;
			return;
		}
		if (*exp == GEN_FLAGGED || timed_io(p, IO_READ, off, out) < 0)
			continue;
		res = verify_block_check(vp->buf, p->cfg->block_size, off, *exp, &found);
		if (res == VERIFY_UNWRITTEN)
			continue;
		out->blocks_checked++;
		/* Generations go on from the newest intact block found. */
		if (res != VERIFY_WRONG_DATA && found >= vp->next_gen)
			vp->next_gen = found + 1;
		if (res == VERIFY_OK) {
			*exp = found; /* after a restart: the baseline */
			continue;
		}
		out->mismatches[mismatch_of(res)]++;
		report(p, res, off, *exp, found);
		*exp = GEN_FLAGGED;
	}
}

/*
 * Writes a new generation of the next blocks_per_run blocks and fdatasyncs
 * them. A block's expected generation is set only once the sync said it is
 * durable; while unknown (a write or the sync failed, or a stop came first) it
 * is 0, and the next run takes what it finds.
 */
static void write_blocks(struct probe *p, const _Atomic bool *stop, struct probe_outcome *out)
{
	struct verify_probe *vp = p->state;
	const unsigned n = p->cfg->verify_blocks, k = p->cfg->verify_per_run;
	uint64_t gen = vp->next_gen ? vp->next_gen : 1;
	bool synced = false;
	unsigned done = 0;

	for (; done < k && !(stop && atomic_load(stop)); done++) {
		unsigned b = (vp->cursor + done) % n;

		vp->expected[b] = 0;
		verify_block_fill(vp->buf, p->cfg->block_size, block_offset(p, b), gen + done,
				  &vp->rng);
		if (timed_io(p, IO_WRITE, block_offset(p, b), out) < 0)
			break;
	}
	vp->next_gen = gen + k;
	if (done == k)
		synced = timed_io(p, IO_FDATASYNC, 0, out) == 0;
	else if (stop && atomic_load(stop))
		out->incomplete = true;
	for (unsigned j = 0; synced && j < k; j++)
		vp->expected[(vp->cursor + j) % n] = gen + j;
	vp->cursor = (vp->cursor + k) % n;
}

static int verify_probe_run(struct probe *p, const _Atomic bool *stop, struct probe_outcome *out)
{
	int r = verify_file_ready(p, stop, out);

	if (r == -ECANCELED && stop && atomic_load(stop)) {
		out->discard = true; /* stopped while laying out its file: nothing measured */
		return 0;
	}
	if (r < 0)
		return r;
	check_blocks(p, stop, out);
	if (!out->incomplete)
		write_blocks(p, stop, out);
	return 0;
}

static uint64_t verify_probe_inflight_since(const struct probe *p)
{
	const struct verify_probe *vp = p->state;

	return atomic_load(&vp->inflight);
}

const struct probe_ops verify_probe_ops = {
	.kind = CFG_PROBE_VERIFY,
	.flags = PROBE_F_SKIP_IF_RUNNING | PROBE_F_VERIFIES,
	.io_ops = verify_io_ops,
	.op_name = verify_op_name,
	.init = verify_probe_init,
	.run = verify_probe_run,
	.inflight_since = verify_probe_inflight_since,
	.free = verify_probe_free,
};
