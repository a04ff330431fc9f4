/* SPDX-License-Identifier: MIT */
/*
 * verify — the verify probe. Each run reads back every block of the probe's
 * file and checks it, then writes a new generation of the next few blocks in
 * turn and fdatasyncs them, so that the next run checks what the storage said
 * was durable. A run whose writes what is left of the target's write budget
 * cannot hold (p->write_left; 0 once it is spent) still reads and checks every
 * block, and writes none: a block corrupted on disk is found the same day.
 * Its I/O goes through the probe's engine one request at a time, as a ping's
 * does (qd1.h): the same timeouts, in-flight time and abandoning at shutdown.
 * What it finds wrong it says in notes on the outcome, for its consumer (the
 * lane, oneshot) to log.
 *
 * Where the blocks live: a file of the probe's own in the target's directory
 * (VERIFY_FILE_PREFIX + probe name), opened by a struct target of its own
 * pointed at that name and pinned to the directory the lane's target pinned.
 * So it is created, marked, locked, re-checked and never written unless ours
 * exactly as the probe file is (target.c), and no ping or
 * burst can overwrite a block, whatever their working sets: reserving a region
 * of the shared probe file would have changed every other probe's geometry.
 *
 * What survives a restart, in the file itself: generation g always goes to
 * block (g - 1) mod blocks, so the generation each block last received follows
 * from the next generation to write alone. A state block between the file's
 * header and the blocks saves that and a base, the oldest generation it
 * vouches for; it is written and synced only after the blocks' own fdatasync
 * returned, so it never claims more than is durable. Per-block generations
 * would have been up to 512KiB to rewrite each run; these two numbers fit the
 * one 4KiB write and sync a run can afford.
 *
 * Blocks are written only while the saved state names them as the next ones
 * (it is saved first when not), so the only blocks a crash can leave torn are
 * the next blocks_per_run after the saved state's. The first check after an
 * open forgives a torn block there, and a block newer than the state says
 * anywhere (the state's own write was lost or cut short: the writes go on from
 * the state, giving such blocks the same generations again); an older one is a
 * lost write. A write that failed or was cut short moves the base past it:
 * what its blocks hold is not known. No state (a new file, one of an older
 * iopulse whose blocks carry another magic, a state block damaged or saved for
 * other blocks): the first run takes the blocks it finds as they are, as every
 * first run did before states were saved.
 *
 * The file, little-endian, after target.c's header: the state block
 * (CFG_VERIFY_STATE_SIZE): magic[8], crc32 of bytes 12..end[4], block_size[4],
 * blocks[4], blocks_per_run[4], next generation[8], base generation[8], zeros.
 * Then the blocks: magic[8], crc32 of bytes 12..size[4], size[4], offset[8],
 * generation[8], nonce[8]; random payload after it.
 */
#include <inttypes.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "daemon/log.h" /* LOG_LVL_*: what its notes are, it never logs */
#include "daemon/probes/probe.h"
#include "daemon/probes/probe_notes.h"
#include "daemon/probes/qd1.h"
#include "daemon/probes/verify.h"
#include "lib/errtext.h"
#include "lib/rng.h"

void verify_file_name(char *buf, size_t n, const char *probe)
{
	snprintf(buf, n, VERIFY_FILE_PREFIX "%s", probe);
}

/* '2': the blocks moved one state block along; an older file's are not ours. */
static const char verify_magic[8] = {'I', 'O', 'P', 'V', 'R', 'F', 'Y', '2'};
static const char state_magic[8] = {'I', 'O', 'P', 'V', 'S', 'T', 'A', '1'};

#define CRC_AT	  8
#define SIZE_AT	  12
#define OFFSET_AT 16
#define GEN_AT	  24
#define NONCE_AT  32

#define STATE_BLOCKS_AT	 16
#define STATE_PER_RUN_AT 20
#define STATE_NEXT_AT	 24
#define STATE_BASE_AT	 32

/* Expected generation of a block found wrong: not checked again until rewritten,
 * so that one bad block is one mismatch, not one per run. */
#define GEN_FLAGGED UINT64_MAX

/* @v as @n little-endian bytes at @p (the fields are 4 or 8 bytes). */
static void put_le(unsigned char *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* The @n little-endian bytes at @p. */
static uint64_t get_le(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

#define put32(p, v) put_le((p), (v), 4)
#define put64(p, v) put_le((p), (v), 8)
#define get32(p)    ((uint32_t)get_le((p), 4))
#define get64(p)    get_le((p), 8)

static uint32_t block_crc(const unsigned char *b, size_t size)
{
	/* zlib's crc32 is linked already (HTTP gzip); it takes uInt lengths, and a
	 * block is at most CFG_MAX_BLOCK_SIZE. */
	return (uint32_t)crc32(crc32(0L, Z_NULL, 0), b + SIZE_AT, (uInt)(size - SIZE_AT));
}

/* What reading a block back found. */
enum verify_result {
	VERIFY_OK,	     /* ours, intact, at its offset, the generation expected */
	VERIFY_UNWRITTEN,    /* no block of ours there, and none was expected */
	VERIFY_WRONG_DATA,   /* checksum fails, or a block was expected and none is there */
	VERIFY_WRONG_OFFSET, /* intact, but written for another offset (misdirected) */
	VERIFY_STALE,	     /* intact, but an older generation than the last one synced */
	VERIFY_NEWER,	     /* intact, but a newer generation than was ever synced there */
};

/* Fills the block @buf of @size bytes at file offset @offset as generation @gen:
 * header, random payload from @rng (never zeros: compressing backends), checksum. */
static void verify_block_fill(void *buf, size_t size, uint64_t offset, uint64_t gen,
			      struct rng *rng)
{
	unsigned char *b = buf;

	rng_fill(rng, b, size);
	memcpy(b, verify_magic, sizeof(verify_magic));
	put32(b + SIZE_AT, (uint32_t)size);
	put64(b + OFFSET_AT, offset);
	put64(b + GEN_AT, gen);
	put32(b + CRC_AT, block_crc(b, size));
}

/*
 * Checks the block @buf of @size bytes read at @offset against @expected, the
 * generation last written there and synced (0: not known, as with no saved state:
 * any intact block of ours is taken as it is). *@found is the generation the
 * block carries (0 when it carries none).
 */
static enum verify_result verify_block_check(const void *buf, size_t size, uint64_t offset,
					     uint64_t expected, uint64_t *found)
{
	const unsigned char *b = buf;

	*found = 0;
	if (memcmp(b, verify_magic, sizeof(verify_magic)) != 0)
		return expected ? VERIFY_WRONG_DATA : VERIFY_UNWRITTEN;
	*found = get64(b + GEN_AT);
	if (get32(b + SIZE_AT) != size || get32(b + CRC_AT) != block_crc(b, size))
		return VERIFY_WRONG_DATA;
	if (get64(b + OFFSET_AT) != offset)
		return VERIFY_WRONG_OFFSET;
	if (expected && *found < expected)
		return VERIFY_STALE;
	if (expected && *found > expected)
		return VERIFY_NEWER;
	return VERIFY_OK;
}

/*
 * Whether @buf, a block that failed its check at @offset, is what a write of
 * generation @gen cut short leaves there: our header intact at its own offset
 * (the new one, or an older one of ours: a sector lands whole or not at all),
 * over a payload the checksum rejects.
 */
static bool block_torn(const void *buf, size_t size, uint64_t offset, uint64_t gen)
{
	const unsigned char *b = buf;

	return memcmp(b, verify_magic, sizeof(verify_magic)) == 0 && get32(b + SIZE_AT) == size &&
	       get64(b + OFFSET_AT) == offset && get64(b + GEN_AT) <= gen &&
	       get32(b + CRC_AT) != block_crc(b, size);
}

/* ---------------------------------------------------------------- the probe */

struct verify_probe {
	struct cfg_target file_cfg; /* the target's, sized for the blocks */
	struct target file;	    /* the probe's own file in the target's directory */
	char file_name[NAME_MAX + 1];
	char why[PATH_MAX + 64]; /* a run's failure, in words (a path and a few) */
	void *buf;		 /* one block, aligned for O_DIRECT */
	void *state_buf;	 /* the state block, aligned for O_DIRECT */
	uint64_t *expected;	 /* by block: generation last synced; 0 not known */
	uint64_t next_gen;	 /* the generation the next write carries (block_of()) */
	uint64_t base_gen;	 /* the oldest generation the saved state vouches for */
	uint64_t saved_gen;	 /* next_gen in the state on disk; 0: not known */
	unsigned saved_per_run;	 /* blocks_per_run in the state on disk */
	bool need_state;	 /* opened: its state not read yet */
	bool laid_out;		 /* and laid out anew by that open: no state to miss */
	bool baseline;		 /* no usable state: blocks taken as found, once */
	bool first_check;	 /* no check done since the state was read */
	uint64_t window_gen;	 /* first check: the state's next_gen, and the */
	unsigned window_n;	 /* blocks after it a crash may have left torn */
	struct rng rng;
	struct qd1 q; /* its I/O, on the probe's engine, set up for the file's descriptor */
	_Atomic uint64_t inflight;	  /* submit time of the I/O in flight, 0 idle */
	struct probe_notes notes;	  /* the run's lines for the log (out->notes) */
	char note_key[CFG_NAME_MAX + 16]; /* "Verify NAME": its mismatches' log key */
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

	qd1_close(&vp->q);
	target_close(&vp->file);
	free(vp->buf);
	free(vp->state_buf);
	free(vp->expected);
	probe_notes_free(&vp->notes);
	free(vp);
}

/* *@buf allocated, @len bytes aligned for O_DIRECT, unless it is already (an
 * abandoned request's buffer is replaced by qd1_io(), NULL when that failed).
 * 0 or -ENOMEM. */
static int buf_ready(void **buf, size_t len)
{
	if (*buf)
		return 0;
	if (posix_memalign(buf, PROBE_BUF_ALIGN, len) != 0) {
		*buf = NULL;
		return -ENOMEM;
	}
	return 0;
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
	vp->file_cfg.size = (uint64_t)c->verify_blocks * c->block_size + CFG_VERIFY_STATE_SIZE;
	if (vp->file_cfg.size < CFG_MIN_TARGET_SIZE)
		vp->file_cfg.size = CFG_MIN_TARGET_SIZE;
	/* The layout runs inside the probe's first run, holding the lane: paced at
	 * a slow layout_rate, 1MiB would keep a 1s ping waiting past its next run.
	 * The smallest file goes at once, one write like a burst's; larger ones
	 * keep the target's pace. */
	if (vp->file_cfg.size == CFG_MIN_TARGET_SIZE)
		vp->file_cfg.layout_rate = 0;
	verify_file_name(vp->file_name, sizeof(vp->file_name), c->name);
	snprintf(vp->note_key, sizeof(vp->note_key), "Verify %s", c->name);
	target_init(&vp->file, &vp->file_cfg);
	vp->file.file_name = vp->file_name;
	vp->file.inflight_ns = &vp->inflight;
	qd1_init(&vp->q, p->engine, &vp->inflight);
	vp->expected = calloc(c->verify_blocks, sizeof(*vp->expected));
	if (!vp->expected || buf_ready(&vp->buf, c->block_size) < 0 ||
	    buf_ready(&vp->state_buf, CFG_VERIFY_STATE_SIZE) < 0) {
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
 * the next. Every open reads the expectations again from the file's own state,
 * as after a restart: the file may be another one (a new file can even get the
 * old one's inode number) or laid out anew in place. 0, or -errno with
 * out->why set (and out->target_down when the file is the trouble).
 */
static int verify_file_ready(struct probe *p, const _Atomic bool *stop, struct probe_outcome *out)
{
	struct verify_probe *vp = p->state;
	const bool opened = vp->file.fd < 0;
	int r;

	vp->file.stop = stop;
	if (opened) /* a new descriptor: the engine is set up for it afresh */
		qd1_close(&vp->q);
	/* Only in the directory the lane pinned, never one swapped in since. */
	target_pin_like(&vp->file, p->target);
	/* Opening and checking walk the path and read the header: on a hung disk
	 * they hang as I/O does, and must show as in flight, as the lane's do. A
	 * layout publishes each of its writes here in turn. */
	atomic_store(&vp->inflight, eng_now_ns());
	/* Our own target's: a layout by this open is what makes it non-zero. */
	atomic_store(&vp->file.layout_done, 0);
	r = opened ? target_open(&vp->file) : target_check(&vp->file);
	atomic_store(&vp->inflight, 0);
	if (vp->file.link_removed[0]) { /* removed, whatever came next: say so */
		probe_notes_add(&vp->notes, LOG_LVL_NOTICE, NULL,
				"Probe %s: removed %s, a second name of %s left by an iopulse "
				"killed while naming it",
				p->cfg->name, vp->file.link_removed, vp->file.file_path);
		vp->file.link_removed[0] = '\0';
	}
	if (r < 0) {
		if (!opened && r == -ESTALE) /* whichever check found it: one clear line */
			errtext(vp->why, sizeof(vp->why), r,
				"%s was replaced or removed; starting over with a new one",
				vp->file.file_path);
		else
			errtext(vp->why, sizeof(vp->why), r, "%s", vp->file.error);
		out->why = vp->why;
		out->target_down = true;
		return r;
	}
	if (vp->file.offset_align == 0 || p->cfg->block_size % vp->file.offset_align != 0) {
		out->why = "'block_size' is not a multiple of the directory's O_DIRECT alignment";
		return -EINVAL;
	}
	if (opened) {
		vp->need_state = true;
		vp->laid_out = atomic_load(&vp->file.layout_done) > 0;
	}
	return 0;
}

/* The engine set up on the probe's file, and the buffers there, after an open
 * or a request abandoned (qd1_io() tore the engine down). 0 or -errno. */
static int verify_io_ready(struct probe *p)
{
	struct verify_probe *vp = p->state;
	int r;

	if (!vp->q.open) {
		r = qd1_open(&vp->q, vp->file.fd);
		if (r < 0)
			return r;
	}
	r = buf_ready(&vp->buf, p->cfg->block_size);
	return r < 0 ? r : buf_ready(&vp->state_buf, CFG_VERIFY_STATE_SIZE);
}

/*
 * One read or write of @len bytes at @off from the buffer the probe keeps at
 * @buf, or an fdatasync (@buf NULL), through the probe's engine as a ping's
 * I/O goes (qd1.h), timed into out->op[@op]; bytes, or -errno. A request the
 * engine refused failed all the same; one abandoned at shutdown measured
 * nothing (the run is incomplete); after one abandoned, nothing more goes out
 * until the next run sets the engine up again.
 */
static ssize_t timed_io(struct probe *p, enum io_op op, uint64_t off, void **buf, size_t len,
			struct probe_outcome *out)
{
	struct verify_probe *vp = p->state;
	struct io_req req = {.offset = off, .len = (uint32_t)len, .op = op};
	uint64_t lat;
	ssize_t n;
	int r;

	if (!vp->q.open) {
		out->incomplete = true;
		return -ECANCELED;
	}
	req.buf = buf ? *buf : NULL;
	r = qd1_io(&vp->q, &req, buf);
	n = r < 0 ? r : req.result;
	lat = qd1_elapsed(&req);
	if (n < 0 && !vp->q.open && vp->q.stop && atomic_load(vp->q.stop))
		n = -ETIME; /* a wait given up, whatever the wait said */
	if (!probe_outcome_io(p, out, op, n, req.submit_ns, lat, op == IO_FDATASYNC ? 0 : len))
		return n < 0 ? n : -EIO;
	probe_outcome_measured(out, op, (uint64_t)n, lat, vp->q.cpu_wait_ns);
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
 * Says one mismatch, in a note for the log. Mismatches are rare events, not
 * per-I/O noise, and the offset and generations are what a reader needs to
 * take to the storage's owner; the per-key limit of log.h keeps a file gone
 * bad from flooding.
 */
static void report(struct probe *p, enum verify_result res, uint64_t off, uint64_t expected,
		   uint64_t found)
{
	static const char *const what[] = {
		[VERIFY_WRONG_DATA] = "wrong data (checksum fails, or no block of ours)",
		[VERIFY_WRONG_OFFSET] = "wrong offset (a block written for another offset: a "
					"misdirected write)",
		[VERIFY_STALE] = "stale (an older generation: a lost write)",
		[VERIFY_NEWER] = "wrong data (a generation never written there)",
	};
	struct verify_probe *vp = p->state;

	probe_notes_add(&vp->notes, LOG_LVL_ERROR, vp->note_key,
			"Probe %s: block at offset %" PRIu64 " of %s: %s; expected generation "
			"%" PRIu64 ", found %" PRIu64 " (0: none)",
			p->cfg->name, off, vp->file.file_path, what[res], expected, found);
}

/* Byte offset of block @i in the probe's file: after the header and the state. */
static uint64_t block_offset(const struct probe *p, unsigned i)
{
	return TARGET_HEADER_SIZE + CFG_VERIFY_STATE_SIZE + (uint64_t)i * p->cfg->block_size;
}

/* The block generation @gen goes to, of @n. */
static unsigned block_of(uint64_t gen, unsigned n)
{
	return (unsigned)((gen - 1) % n);
}

/* The newest generation before @next_gen that block @i of @n received; 0: none. */
static uint64_t gen_of_block(uint64_t next_gen, unsigned n, unsigned i)
{
	uint64_t last, back;

	if (next_gen < 2)
		return 0;
	last = next_gen - 2; /* (generation - 1) of the newest one written */
	back = (last % n + n - i) % n;
	return back > last ? 0 : last - back + 1;
}

/* ---------------------------------------------------------------- saved state */

/* The state block read into vp->state_buf or written from it, timed as any I/O. */
static ssize_t state_io(struct probe *p, enum io_op op, struct probe_outcome *out)
{
	struct verify_probe *vp = p->state;

	return timed_io(p, op, TARGET_HEADER_SIZE, &vp->state_buf, CFG_VERIFY_STATE_SIZE, out);
}

/*
 * Writes the state (next_gen, base_gen; the geometry it holds for) and
 * fdatasyncs it. Whether it is durable; if not, nothing is known of what the
 * file holds there, and the next run saves it again before writing blocks.
 */
static bool save_state(struct probe *p, struct probe_outcome *out)
{
	struct verify_probe *vp = p->state;
	unsigned char *s = vp->state_buf;

	memset(s, 0, CFG_VERIFY_STATE_SIZE);
	memcpy(s, state_magic, sizeof(state_magic));
	put32(s + SIZE_AT, (uint32_t)p->cfg->block_size);
	put32(s + STATE_BLOCKS_AT, p->cfg->verify_blocks);
	put32(s + STATE_PER_RUN_AT, p->cfg->verify_per_run);
	put64(s + STATE_NEXT_AT, vp->next_gen);
	put64(s + STATE_BASE_AT, vp->base_gen);
	put32(s + CRC_AT, block_crc(s, CFG_VERIFY_STATE_SIZE));
	vp->saved_gen = 0;
	if (state_io(p, IO_WRITE, out) < 0 || timed_io(p, IO_FDATASYNC, 0, NULL, 0, out) < 0)
		return false;
	vp->saved_gen = vp->next_gen;
	vp->saved_per_run = p->cfg->verify_per_run;
	return true;
}

/*
 * Why the state block in vp->state_buf cannot be used, in words, with the
 * level to say it at; NULL when it can.
 */
static const char *state_unusable(const struct probe *p, char *why, size_t len, int *level)
{
	const struct verify_probe *vp = p->state;
	const unsigned char *s = vp->state_buf;
	const unsigned n = get32(s + STATE_BLOCKS_AT), k = get32(s + STATE_PER_RUN_AT);
	const uint64_t next = get64(s + STATE_NEXT_AT), base = get64(s + STATE_BASE_AT);

	*level = LOG_LVL_WARNING; /* iopulse wrote it whole and synced: damage */
	if (memcmp(s, state_magic, sizeof(state_magic)) != 0) {
		*level = LOG_LVL_NOTICE;
		return "there is none: a new file, or one an older iopulse wrote";
	}
	if (get32(s + CRC_AT) != block_crc(s, CFG_VERIFY_STATE_SIZE))
		return "it is damaged: its checksum fails";
	if (n != p->cfg->verify_blocks || get32(s + SIZE_AT) != p->cfg->block_size) {
		*level = LOG_LVL_NOTICE;
		snprintf(why, len, "it was saved for %u blocks of %" PRIu32 " bytes", n,
			 get32(s + SIZE_AT));
		return why;
	}
	if (k < 1 || k > n || base < 1 || base > next)
		return "it is damaged: its generations do not add up";
	return NULL;
}

/*
 * Reads the saved state and the expectations from it: each block's generation
 * follows from next_gen, from base_gen on; the first check forgives a torn
 * block among the blocks_per_run after it. No usable state (said once): the
 * first check takes the blocks as found. 0, or -errno when the read failed
 * (counted; the next run reads it again).
 */
static int load_state(struct probe *p, struct probe_outcome *out)
{
	struct verify_probe *vp = p->state;
	const unsigned n = p->cfg->verify_blocks;
	const unsigned char *s = vp->state_buf;
	char buf[96];
	const char *why;
	ssize_t r;
	int level;

	r = state_io(p, IO_READ, out);
	if (r < 0)
		return (int)r;
	vp->need_state = false;
	vp->first_check = true;
	why = state_unusable(p, buf, sizeof(buf), &level);
	vp->baseline = why != NULL;
	vp->next_gen = why ? 1 : get64(s + STATE_NEXT_AT);
	vp->base_gen = why ? 1 : get64(s + STATE_BASE_AT);
	vp->saved_gen = why ? 0 : vp->next_gen;
	vp->saved_per_run = why ? 0 : get32(s + STATE_PER_RUN_AT);
	vp->window_gen = vp->next_gen;
	vp->window_n = vp->saved_per_run;
	for (unsigned i = 0; i < n; i++) {
		uint64_t g = gen_of_block(vp->next_gen, n, i);

		vp->expected[i] = g >= vp->base_gen ? g : 0;
	}
	/* Said at every open without one (but of a file just laid out): opens are
	 * rare, and until the blocks are rewritten a write lost before goes unseen. */
	if (why && !(vp->laid_out && level == LOG_LVL_NOTICE))
		probe_notes_add(&vp->notes, level, NULL,
				"Probe %s: no saved state in %s (%s): its blocks are taken as they "
				"are, a write lost before now goes unseen, ignoring",
				p->cfg->name, vp->file.file_path, why);
	return 0;
}

/* ---------------------------------------------------------------- runs */

/*
 * Whether the first check after an open lets block @i, found @res carrying
 * @found, pass (its expectation then set): a block newer than the saved state
 * says (the state's own write lost or cut short), or one torn among those the
 * state said the next run writes (a crash in that run). Anything else counts.
 */
static bool forgiven(struct probe *p, unsigned i, enum verify_result res, uint64_t found)
{
	struct verify_probe *vp = p->state;
	const unsigned n = p->cfg->verify_blocks;
	const unsigned j = (unsigned)((i + n - block_of(vp->window_gen, n)) % n);
	const uint64_t off = block_offset(p, i);

	if (!vp->first_check)
		return false;
	if (res == VERIFY_NEWER) {
		vp->expected[i] = found;
		return true;
	}
	if (res != VERIFY_WRONG_DATA || j >= vp->window_n ||
	    !block_torn(vp->buf, p->cfg->block_size, off, vp->window_gen + j))
		return false;
	probe_notes_add(&vp->notes, LOG_LVL_NOTICE, NULL,
			"Probe %s: block at offset %" PRIu64 " of %s is torn (its checksum "
			"fails), where the last run before the file was opened may have been "
			"writing it when stopped: not counted, rewritten now",
			p->cfg->name, off, vp->file.file_path);
	vp->expected[i] = GEN_FLAGGED;
	return true;
}

/* Reads every block not already found wrong and checks it. */
static void check_blocks(struct probe *p, const _Atomic bool *stop, struct probe_outcome *out)
{
	struct verify_probe *vp = p->state;

	for (unsigned i = 0; i < p->cfg->verify_blocks; i++) {
		uint64_t off = block_offset(p, i), *exp = &vp->expected[i], found;
		enum verify_result res;

		if ((stop && atomic_load(stop)) || !vp->q.open) { /* or a read abandoned */
			out->incomplete = true;
			return;
		}
		if (*exp == GEN_FLAGGED ||
		    timed_io(p, IO_READ, off, &vp->buf, p->cfg->block_size, out) < 0)
			continue;
		res = verify_block_check(vp->buf, p->cfg->block_size, off, *exp, &found);
		if (res == VERIFY_UNWRITTEN)
			continue;
		out->blocks_checked++;
		/* No saved state: generations go on from the newest intact block found. */
		if (vp->baseline && res != VERIFY_WRONG_DATA && found >= vp->next_gen)
			vp->next_gen = found + 1;
		if (res == VERIFY_OK) {
			*exp = found; /* with no saved state: the baseline */
			continue;
		}
		if (forgiven(p, i, res, found))
			continue;
		out->mismatches[mismatch_of(res)]++;
		report(p, res, off, *exp, found);
		*exp = GEN_FLAGGED;
	}
	vp->first_check = false;
	if (vp->baseline) /* what was found is known only here, in memory */
		vp->base_gen = vp->next_gen;
	vp->baseline = false;
}

/*
 * Writes a new generation of the next blocks_per_run blocks and fdatasyncs
 * them, then saves the state. A block's expected generation is set only once
 * the sync said it is durable; while unknown (a write or the sync failed, or a
 * stop came first) it is 0, the next run takes what it finds, and the saved
 * state vouches for nothing older (base_gen). The blocks are written only
 * while the state on disk names them as the next ones: a crash can then leave
 * no other block torn.
 */
/* Whether the state on disk must name the next blocks before they are written. */
static bool state_behind(const struct probe *p)
{
	const struct verify_probe *vp = p->state;

	return vp->saved_gen != vp->next_gen || vp->saved_per_run < p->cfg->verify_per_run;
}

/* The bytes write_blocks() writes: the blocks and the state after them, and
 * the state before them when it is behind. */
static uint64_t run_writes(const struct probe *p)
{
	const uint64_t blocks = (uint64_t)p->cfg->verify_per_run * p->cfg->block_size;

	return blocks + CFG_VERIFY_STATE_SIZE * (state_behind(p) ? 2 : 1);
}

static void write_blocks(struct probe *p, const _Atomic bool *stop, struct probe_outcome *out)
{
	struct verify_probe *vp = p->state;
	const unsigned n = p->cfg->verify_blocks, k = p->cfg->verify_per_run;
	const uint64_t gen = vp->next_gen;
	bool synced = false;
	unsigned done = 0;

	if (state_behind(p) && !save_state(p, out))
		return;
	for (; done < k && !(stop && atomic_load(stop)); done++) {
		const unsigned b = block_of(gen + done, n);
		const uint64_t off = block_offset(p, b);

		vp->expected[b] = 0;
		verify_block_fill(vp->buf, p->cfg->block_size, off, gen + done, &vp->rng);
		if (timed_io(p, IO_WRITE, off, &vp->buf, p->cfg->block_size, out) < 0)
			break;
	}
	vp->next_gen = gen + k;
	if (done == k)
		synced = timed_io(p, IO_FDATASYNC, 0, NULL, 0, out) == 0;
	else if (stop && atomic_load(stop))
		out->incomplete = true;
	if (!synced) {
		vp->base_gen = vp->next_gen;
		return;
	}
	for (unsigned j = 0; j < k; j++)
		vp->expected[block_of(gen + j, n)] = gen + j;
	save_state(p, out);
}

/* One run: the probe's file ready, its state read when it was opened, every
 * block checked, then rewritten in turn when the budget holds the writes. */
static int verify_run(struct probe *p, const _Atomic bool *stop, struct probe_outcome *out)
{
	struct verify_probe *vp = p->state;
	int r;

	vp->q.stop = stop;
	r = verify_file_ready(p, stop, out);
	if (r == -ECANCELED && stop && atomic_load(stop)) {
		out->discard = true; /* stopped while laying out its file: nothing measured */
		return 0;
	}
	if (r == 0)
		r = verify_io_ready(p);
	if (r < 0)
		return r;
	if (vp->need_state && load_state(p, out) < 0)
		return 0; /* the read error is counted; the next run reads it again */
	check_blocks(p, stop, out);
	if (out->incomplete)
		return 0;
	/* The target's write budget cannot hold the run's writes: the blocks were
	 * checked all the same (corruption does not wait for the next day), and
	 * are rewritten, in the same order, once it can. Nothing else changes:
	 * the state on disk and the expectations still hold. */
	if (run_writes(p) > p->write_left) {
		out->budget_cut = true;
		return 0;
	}
	write_blocks(p, stop, out);
	return 0;
}

static int verify_probe_run(struct probe *p, const _Atomic bool *stop, struct probe_outcome *out)
{
	struct verify_probe *vp = p->state;
	int r;

	probe_notes_clear(&vp->notes);
	vp->notes.say = p->say;
	r = verify_run(p, stop, out);
	probe_notes_out(&vp->notes, out); /* what it found, for its consumer to say */
	return r;
}

static uint64_t verify_probe_inflight_since(const struct probe *p)
{
	const struct verify_probe *vp = p->state;

	return atomic_load(&vp->inflight);
}

/* Its file and the descriptor that holds the file's lock, as a probe file's
 * (target.c), and its engine's, set up on the file from its first run on; and,
 * while its run opens the file again, the directory walk's: 2 more (ls
 * /proc/PID/fd under strace). */
static void verify_descriptors(const struct cfg_probe *c, const struct engine_ops *e,
			       struct probe_fds *out)
{
	(void)c;
	out->held = 2 + e->fds;
	out->run = 2;
}

const struct probe_ops verify_probe_ops = {
	.kind = CFG_PROBE_VERIFY,
	.flags = PROBE_F_SKIP_IF_RUNNING | PROBE_F_VERIFIES | PROBE_F_OWN_FILE | PROBE_F_BUDGETED |
		 PROBE_F_CHECKS_PAST_BUDGET | PROBE_F_NET_LATENCY,
	.io_ops = verify_io_ops,
	.op_name = verify_op_name,
	.init = verify_probe_init,
	.run = verify_probe_run,
	.inflight_since = verify_probe_inflight_since,
	.free = verify_probe_free,
	.descriptors = verify_descriptors,
	.own_file_name = verify_file_name,
};
