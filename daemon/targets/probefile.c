/* SPDX-License-Identifier: MIT */
/*
 * probefile — a directory target's probe file in itself: its header (ours, or
 * not; complete, or cut short) and its layout, random data written in place
 * without filling the disk. The layout is paced against absolute deadlines, in
 * chunks small enough to see a stop request within about 1/16 s. Where the
 * file lives, and whether an existing one may be touched: dir.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/io_op.h"
#include "lib/rng.h"
#include "daemon/targets/target_int.h"

#define LAYOUT_CHUNK (1u << 20) /* bytes per write while laying out */

/*
 * The first TARGET_HEADER_SIZE bytes: readable text for whoever finds the file,
 * a NUL, then random bytes like the rest.
 *
 *   IOPULSE-PROBE-FILE
 *   version: 1
 *   size: 67108864          data bytes after the header
 *   created: 1700000000     unix seconds
 *
 * A layout writes it twice: first marked "incomplete" (ours, but to be laid out
 * again: header_parse() reads version 0), last complete, after the data is on
 * disk. So a layout cut short by a crash is recognised as ours and redone.
 */
static void header_format(struct rng *rng, void *blk, uint64_t size, bool complete)
{
	rng_fill(rng, blk, TARGET_HEADER_SIZE);
	/* At most ~80 bytes, NUL-terminated by snprintf: header_parse() wants the
	 * NUL within the first 256. */
	if (complete)
		snprintf(blk, 256, PROBE_MAGIC "version: %u\nsize: %" PRIu64 "\ncreated: %lld\n",
			 PROBE_VERSION, size, (long long)time(NULL));
	else
		snprintf(blk, 256, PROBE_MAGIC "incomplete: being laid out\n");
}

/* Whether @blk starts with our magic; if so, its version and data size. */
static bool header_parse(const void *blk, size_t len, unsigned *version, uint64_t *size)
{
	const char *p = blk;
	size_t ml = sizeof(PROBE_MAGIC) - 1;

	*version = 0;
	*size = 0;
	if (len < ml || memcmp(p, PROBE_MAGIC, ml) != 0)
		return false;
	/* Ours. A malformed rest reads as version 0, which forces a re-lay. */
	if (len >= 256 && memchr(p, '\0', 256) &&
	    sscanf(p + ml, "version: %u size: %" SCNu64, version, size) == 2)
		return true;
	*version = 0;
	*size = 0;
	return true;
}

/* Reads the header block of the open file @fd into @hdr (TARGET_HEADER_SIZE,
 * aligned); whether it is ours, with its version and size. */
int tgt_header_read(struct target *t, int fd, void *hdr, bool *ours, unsigned *version,
		    uint64_t *size)
{
	ssize_t n;

	while ((n = pread(fd, hdr, TARGET_HEADER_SIZE, 0)) < 0 && errno == EINTR &&
	       !(t->stop && atomic_load(t->stop)))
		;
	if (n < 0)
		return -errno;
	*ours = header_parse(hdr, (size_t)n, version, size);
	return 0;
}

/* ---- layout ------------------------------------------------------------- */

/* Writes all @len bytes of @buf at @off of @fd, on through EINTR and short
 * writes: 0 or -errno (-EIO when the device takes nothing). */
int tgt_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const unsigned char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Brackets a layout write, so that a hung disk shows as I/O in flight. */
static void layout_inflight(struct target *t, bool on)
{
	if (t->inflight_ns)
		atomic_store_explicit(t->inflight_ns, on ? eng_now_ns() : 0, memory_order_relaxed);
}

/* Bytes per layout write: LAYOUT_CHUNK, or about 1/16 s of the rate's budget
 * when that is smaller (at least IO_MAX_ALIGN), so that a stop request is seen
 * soon. A multiple of IO_MAX_ALIGN: every write but an unaligned tail stays
 * O_DIRECT-aligned. */
static size_t layout_chunk(uint64_t rate)
{
	uint64_t c = (rate / 16) & ~(uint64_t)(IO_MAX_ALIGN - 1);

	if (!rate || c > LAYOUT_CHUNK)
		return LAYOUT_CHUNK;
	return c < IO_MAX_ALIGN ? IO_MAX_ALIGN : (size_t)c;
}

/* Sleeps until @start + @bytes / @rate seconds (CLOCK_MONOTONIC, absolute). */
static void layout_pace(const struct timespec *start, uint64_t bytes, uint64_t rate)
{
	/* In two parts: bytes * 1e9 overflows 64 bits above 18GB. */
	uint64_t until = eng_ns(start) + bytes / rate * NSEC_PER_SEC +
			 (uint64_t)((double)(bytes % rate) * 1e9 / (double)rate);

	while (eng_sleep_until(until) == -EINTR)
		;
}

/*
 * -ENOSPC (t->error set, saying @when) unless writing @need more bytes to the
 * filesystem of @fd leaves at least keep_free: the larger of keep_free_bytes
 * and keep_free_fraction of the filesystem. A probe must never be what fills a
 * disk that production writes to.
 */
static int check_room(struct target *t, int fd, const char *path, uint64_t need, const char *when)
{
	char a[32], b[32], c[32];
	struct statvfs sv;
	uint64_t avail, reserve;

	if (fstatvfs(fd, &sv) < 0)
		return tgt_terr(t, -errno, "%s: statvfs: %m", path);
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	reserve =
		(uint64_t)(t->cfg->keep_free_fraction * (double)sv.f_blocks * (double)sv.f_frsize);
	if (reserve < t->cfg->keep_free_bytes)
		reserve = t->cfg->keep_free_bytes;
	if (avail >= need && avail - need >= reserve)
		return 0;
	cfg_format_bytes((double)avail, a, sizeof(a));
	cfg_format_bytes((double)need, b, sizeof(b));
	cfg_format_bytes((double)reserve, c, sizeof(c));
	return tgt_terr(
		t, -ENOSPC,
		"%s: %s free %s, %s still to write, and keep_free leaves %s: not filling the "
		"disk; the probe file's space was freed",
		path, a, when, b, c);
}

/* Bytes the file open at @fd has allocated, at most @cap. */
static uint64_t allocated(int fd, uint64_t cap)
{
	struct stat st;
	uint64_t n;

	if (fstat(fd, &st) < 0)
		return 0;
	n = (uint64_t)st.st_blocks * 512;
	return n < cap ? n : cap;
}

/* Whether the layout of @path is to be abandoned (t->error set). */
static bool stopping(struct target *t, const char *path)
{
	if (!t->stop || !atomic_load(t->stop))
		return false;
	tgt_terr(t, -ECANCELED, "%s: probe-file layout abandoned: stopping", path);
	return true;
}

/* Writes the header block (incomplete or @complete) at offset 0. */
static int write_header(struct target *t, int fd, struct rng *rng, void *buf, bool complete)
{
	int r;

	header_format(rng, buf, t->cfg->size, complete);
	layout_inflight(t, true);
	r = tgt_pwrite_all(fd, buf, TARGET_HEADER_SIZE, 0);
	layout_inflight(t, false);
	return r;
}

static int sync_file(struct target *t, int fd)
{
	int r;

	layout_inflight(t, true);
	while ((r = fdatasync(fd)) < 0 && errno == EINTR)
		;
	layout_inflight(t, false);
	return r < 0 ? -errno : 0;
}

/* Writes random data over [TARGET_HEADER_SIZE, total), paced and stoppable,
 * watching free space. @buf holds LAYOUT_CHUNK bytes. */
static int layout_data(struct target *t, int fd, const char *path, struct rng *rng, void *buf)
{
	uint64_t total = TARGET_HEADER_SIZE + t->cfg->size, rate = t->cfg->layout_rate;
	uint64_t direct_end = total, off = TARGET_HEADER_SIZE;
	size_t chunk = layout_chunk(rate);
	struct timespec start;
	int r;

	if (t->cfg->direct)
		direct_end = total & ~(uint64_t)(t->offset_align - 1);
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (off < total) {
		uint64_t end = off < direct_end ? direct_end : total;
		size_t n = end - off < chunk ? (size_t)(end - off) : chunk;

		/* Token-bucket style: each chunk when the bytes before it (the
		 * header's included) are paid for. */
		if (rate)
			layout_pace(&start, off, rate);
		if (stopping(t, path))
			return -ECANCELED;
		r = check_room(t, fd, path, total - off, "during the layout");
		if (r < 0)
			return r;
		if (off == direct_end) {
			/* An unaligned tail cannot go through O_DIRECT: write it buffered. */
			r = tgt_set_flag(fd, O_DIRECT, false);
			if (r < 0)
				return tgt_terr(t, r, "%s: %m", path);
		}
		rng_fill(rng, buf, n);
		layout_inflight(t, true);
		r = tgt_pwrite_all(fd, buf, n, off);
		layout_inflight(t, false);
		if (r == -ENOSPC || r == -EDQUOT)
			return tgt_terr(t, r, "%s: no space for a %" PRIu64 "-byte probe file: %m",
					path, total);
		if (r < 0)
			return tgt_terr(t, r, "%s: writing the probe file: %m", path);
		off += n;
		atomic_store(&t->layout_done, off);
		if (t->layout_progress)
			t->layout_progress(t, off, total);
	}
	if (direct_end != total) {
		r = tgt_set_flag(fd, O_DIRECT, true);
		if (r < 0)
			return tgt_terr(t, r, "%s: %m", path);
	}
	return 0;
}

/*
 * Lays out the probe file open at @fd, ours and locked, new or old, in place:
 * an incomplete header, the old contents dropped, free space checked, random
 * data, fdatasync, then the complete header and fdatasync again. Nothing is
 * ever renamed over anything. On failure what it wrote is freed again (the
 * file is cut back to its incomplete header) and t->layout_failed is set,
 * except when stopped (-ECANCELED: nothing was touched if the stop came first).
 */
int tgt_layout(struct target *t, int fd, const char *path)
{
	uint64_t total = TARGET_HEADER_SIZE + t->cfg->size;
	struct rng rng;
	void *buf;
	int r;

	atomic_store(&t->layout_done, 0);
	if (stopping(t, path))
		return -ECANCELED;
	/* Straight from the kernel, not malloc: glibc raises its mmap threshold to
	 * the size of any mapped block it frees (up to 32 MiB), after which every
	 * block under 1 MiB (a gzip stream, a histogram copy) would come from the
	 * heap and its pages stay resident for good. Page-aligned: O_DIRECT. */
	buf = mmap(NULL, LAYOUT_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return tgt_terr(t, -ENOMEM, "%s: out of memory for the layout buffer", path);
	r = rng_seed(&rng);
	if (r < 0) {
		tgt_terr(t, r, "getrandom: %m");
		goto out;
	}
	atomic_store(&t->layout_total, total);
	r = check_room(t, fd, path, total - allocated(fd, total), "before the layout");
	if (r < 0)
		goto failed;
	r = write_header(t, fd, &rng, buf, false);
	if (r == 0 && ftruncate(fd, TARGET_HEADER_SIZE) < 0)
		r = -errno;
	/* On disk before any new data: however writes are reordered, a crash can
	 * never leave an old complete header over new, partial data. */
	if (r == 0)
		r = sync_file(t, fd);
	if (r < 0) {
		tgt_terr(t, r, "%s: writing the probe file: %m", path);
		goto failed;
	}
	atomic_store(&t->layout_done, TARGET_HEADER_SIZE);
	r = layout_data(t, fd, path, &rng, buf);
	if (r == 0 && (r = sync_file(t, fd)) < 0)
		tgt_terr(t, r, "%s: fdatasync: %m", path);
	if (r == 0 && (r = write_header(t, fd, &rng, buf, true)) < 0)
		tgt_terr(t, r, "%s: writing the probe-file header: %m", path);
	if (r == 0 && (r = sync_file(t, fd)) < 0)
		tgt_terr(t, r, "%s: fdatasync: %m", path);
failed:
	if (r < 0) {
		/* Free what we wrote; the header stays, so the file is still ours.
		 * Space that could not be freed is a failure even when stopped. */
		t->layout_failed = r != -ECANCELED;
		if (ftruncate(fd, TARGET_HEADER_SIZE) < 0)
			t->layout_failed = true;
	}
out:
	(void)munmap(buf, LAYOUT_CHUNK); /* over when the open is: layout_over() */
	return r;
}

double target_layout_progress(const struct target *t, uint64_t *done, uint64_t *total)
{
	uint64_t n = atomic_load(&t->layout_total);
	uint64_t d = atomic_load(&t->layout_done);

	d = d < n ? d : n; /* the last layout's done next to a new total: not past it */
	if (done)
		*done = d;
	if (total)
		*total = n;
	/* All written is not over: the syncs, the header and naming the file come
	 * after, and only layout_over() makes it 1. */
	return n ? (double)(d < n ? d : n - 1) / n : 1;
}
