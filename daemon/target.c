/* SPDX-License-Identifier: MIT */
/*
 * target — see target.h for the contract. Decisions made here:
 *
 * - O_DIRECT is switched on with fcntl(F_SETFL) after open(), not passed to
 *   open(): an EINVAL from F_SETFL means exactly "this file cannot do direct I/O",
 *   where EINVAL from open(O_TMPFILE|O_DIRECT) could also mean "no O_TMPFILE",
 *   and older kernels left a created file behind when open(O_CREAT|O_DIRECT)
 *   failed on tmpfs.
 * - Alignment comes from statx(STATX_DIOALIGN) on the open file. When the kernel
 *   or filesystem does not report it (before Linux 6.1, or 0 values), it falls back
 *   to st_blksize rounded down to a power of two and clamped to [512, 4096]: the
 *   logical block size of a file's device is not reachable from the file, and 4096
 *   is correct for 512e and 4Kn devices alike. Alignment above 4096 is refused
 *   (probe buffers are 4096-aligned, and the header is one 4096-byte block).
 * - The same alignment is used with direct: false, so turning O_DIRECT off changes
 *   only the caching, not which offsets are measured.
 * - A probe-file name that exists and is not ours (symlink, not a regular file, not
 *   owned by our euid, no header magic) is refused with -EEXIST and never opened
 *   for writing beyond the check (regular files only, O_NOFOLLOW, after lstat).
 * - Memory-backed filesystems are refused with -EMEDIUMTYPE.
 * - Device targets are checked with stat() (symlinks followed: /dev/disk/by-id/...
 *   names are the sane way to name a disk) and opened only when S_ISBLK, with
 *   O_NONBLOCK until fstat() has confirmed the same device. Alignment: statx
 *   STATX_DIOALIGN (block devices report it since Linux 6.11), else the logical
 *   block size (BLKSSZGET) for both. The usable range is the whole device, rounded
 *   down to the offset alignment.
 * - Writing to a device needs want_write && allow_device_writes (else -EPERM,
 *   decided before anything is opened). Then the device and its partitions must
 *   not be mounted (/proc/self/mountinfo, by major:minor, or by the source path
 *   for filesystems such as btrfs that report an anonymous device), used as swap
 *   (/proc/swaps) or have holders (/sys/dev/block/M:m/holders), else -EBUSY with
 *   the mount point or holder named; when /sys or /proc cannot tell, the write is
 *   refused rather than assumed safe. Finally O_EXCL: the kernel's claim covers
 *   what we cannot see (other mount namespaces, a claim racing our checks), and
 *   while we hold it nobody can mount or claim the device. The same checks run in
 *   every target_check(): should the claim ever be lost, writes stop.
 * - Layout throttling paces writes against absolute deadlines (start +
 *   bytes/rate, clock_nanosleep TIMER_ABSTIME on CLOCK_MONOTONIC), so time spent
 *   writing counts against the budget and the average rate is exact. Chunks
 *   shrink at low rates (about 1/16 s of budget each, at least 4KiB) so that a
 *   stop request is seen promptly without polling.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h> /* BLKGETSIZE64, BLKSSZGET */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "../engines/engine.h"
#include "rng.h"
#include "target.h"

#define PROBE_MAGIC	     "IOPULSE-PROBE-FILE\n"
#define PROBE_VERSION	     1u
#define LAYOUT_CHUNK	     (1u << 20) /* bytes per write while laying out */
#define MAX_ALIGN	     4096u
#define FILE_TARGET_MIN_SIZE 4096u
#define MAX_PARTITIONS	     256u /* DISK_MAX_PARTS: the most one disk can have */

/* Stores a message in t->error and returns @r (negative errno). %m prints @r. */
__attribute__((format(printf, 3, 4))) static int terr(struct target *t, int r, const char *fmt, ...)
{
	va_list ap;

	errno = r < 0 ? -r : r;
	va_start(ap, fmt);
	vsnprintf(t->error, sizeof(t->error), fmt, ap);
	va_end(ap);
	return r;
}

void target_init(struct target *t, const struct cfg_target *cfg)
{
	memset(t, 0, sizeof(*t));
	t->cfg = cfg;
	t->fd = -1;
	t->lock_fd = -1;
	atomic_init(&t->layout_done, 0);
	atomic_init(&t->layout_total, 0);
}

void target_close(struct target *t)
{
	if (t->fd >= 0)
		close(t->fd);
	if (t->lock_fd >= 0)
		close(t->lock_fd);
	t->fd = -1;
	t->lock_fd = -1;
	t->writable = false;
}

/* ---- helpers ------------------------------------------------------------ */

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static int set_flag(int fd, int flag, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl = on ? (fl | flag) : (fl & ~flag);
	if (fcntl(fd, F_SETFL, fl) < 0)
		return -errno;
	return 0;
}

/* Switch O_DIRECT on when configured; the one clear error when it cannot be. */
static int enable_direct(struct target *t, int fd, const char *path)
{
	int r;

	if (!t->cfg->direct)
		return 0;
	r = set_flag(fd, O_DIRECT, true);
	if (r == -EINVAL)
		return terr(t, r,
			    "%s: the filesystem does not support O_DIRECT; set 'direct: false' to "
			    "measure through the page cache (not recommended)",
			    path);
	if (r < 0)
		return terr(t, r, "%s: cannot enable O_DIRECT: %m", path);
	return 0;
}

/* Fills t->mem_align / t->offset_align for the open file or block device @fd. */
static int get_align(struct target *t, int fd, const char *path, bool blk)
{
	uint32_t mem = 0, off = 0;
	struct stat st;

#ifdef STATX_DIOALIGN
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN)) {
		mem = stx.stx_dio_mem_align;
		off = stx.stx_dio_offset_align;
	}
#endif
	if ((!mem || !off) && blk) {
		int lbs = 0;

		if (ioctl(fd, BLKSSZGET, &lbs) < 0)
			return terr(t, -errno, "%s: BLKSSZGET: %m", path);
		mem = off = lbs > 0 ? (uint32_t)lbs : 0;
	} else if (!mem || !off) {
		uint32_t b = 512;

		if (fstat(fd, &st) < 0)
			return terr(t, -errno, "%s: fstat: %m", path);
		while (b < MAX_ALIGN && (blksize_t)(b * 2) <= st.st_blksize)
			b *= 2;
		mem = off = b;
	}
	if (!is_pow2(mem) || !is_pow2(off) || mem > MAX_ALIGN || off > MAX_ALIGN)
		return terr(t, -EINVAL,
			    "%s: direct I/O needs %" PRIu32 "-byte buffers and %" PRIu32
			    "-byte offsets; at most %u is supported",
			    path, mem, off, MAX_ALIGN);
	t->mem_align = mem;
	t->offset_align = off;
	return 0;
}

/* An opened target file: blocking again (it was opened O_NONBLOCK so that a
 * FIFO swapped in could not hang us), O_DIRECT as configured, alignment known. */
static int prepare_fd(struct target *t, int fd, const char *name, bool device)
{
	int r = set_flag(fd, O_NONBLOCK, false);

	if (r < 0)
		return terr(t, r, "%s: %m", name);
	r = enable_direct(t, fd, name);
	if (r < 0)
		return r;
	return get_align(t, fd, name, device);
}

/* Identity (when pinned) and memory-backed checks for the directory or file. */
static int check_fs(struct target *t, const char *path, const struct stat *st,
		    const struct statfs *sfs)
{
	long f_type = (long)sfs->f_type;

	if (t->pinned && (st->st_dev != t->dev || f_type != t->fs_type))
		return terr(t, -EXDEV,
			    "%s is now on a different filesystem (was dev %u:%u type 0x%lx, now "
			    "%u:%u type 0x%lx): %s; was it unmounted?",
			    path, major(t->dev), minor(t->dev), (unsigned long)t->fs_type,
			    major(st->st_dev), minor(st->st_dev), (unsigned long)f_type,
			    t->cfg->kind == CFG_TARGET_DIRECTORY ? "not creating a probe file there"
								 : "not opening it");
	if ((f_type == TMPFS_MAGIC || f_type == RAMFS_MAGIC) && !t->cfg->allow_memory_backed)
		return terr(t, -EMEDIUMTYPE,
			    "%s is on tmpfs/ramfs: this measures RAM, not a disk; set "
			    "'allow_memory_backed: true' if that is what you want",
			    path);
	return 0;
}

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
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

/*
 * Every open probe file is held with an exclusive flock: two iopulse processes (a
 * service and a hand-started one) on one directory would otherwise measure each
 * other and re-lay each other's file on every run. The lock goes with the
 * descriptor, so a crashed process leaves nothing to clean up.
 *
 * It is taken on a descriptor of its own (the file reopened through /proc), not
 * on the one probes use: io_uring's registered-file table keeps that one alive
 * after the process exits, until the ring's asynchronous teardown, and a lock on
 * it would outlive us and make a restart find the target busy. *lock gets the
 * descriptor to close on target_close().
 */
static int lock_probe_file(struct target *t, int fd, const char *path, int *lock)
{
	char proc[64];
	int lk, r;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	lk = open(proc, O_RDONLY | O_CLOEXEC);
	if (lk < 0) /* no /proc: lock the shared description, it still works */
		lk = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (lk < 0)
		return terr(t, -errno, "%s: cannot open the probe file for locking: %m", path);
	if (flock(lk, LOCK_EX | LOCK_NB) == 0) {
		*lock = lk;
		return 0;
	}
	r = errno;
	close(lk);
	if (r == EWOULDBLOCK)
		return terr(t, -EBUSY,
			    "%s is in use by another iopulse process: two daemons must not "
			    "measure the same directory",
			    path);
	return terr(t, -r, "%s: cannot lock the probe file: %m", path);
}

/* Brackets a layout write, so that a hung disk shows as I/O in flight. */
static void layout_inflight(struct target *t, bool on)
{
	if (t->inflight_ns)
		atomic_store_explicit(t->inflight_ns, on ? eng_now_ns() : 0, memory_order_relaxed);
}

/* ---- probe-file header -------------------------------------------------- */

/*
 * The first TARGET_HEADER_SIZE bytes: readable text for whoever finds the file,
 * a NUL, then random bytes like the rest.
 *
 *   IOPULSE-PROBE-FILE
 *   version: 1
 *   size: 67108864          data bytes after the header
 *   created: 1700000000     unix seconds
 */
static void header_format(struct rng *rng, void *blk, uint64_t size)
{
	rng_fill(rng, blk, TARGET_HEADER_SIZE);
	/* At most ~80 bytes, NUL-terminated by snprintf: header_parse() wants the
	 * NUL within the first 256. */
	snprintf(blk, 256, PROBE_MAGIC "version: %u\nsize: %" PRIu64 "\ncreated: %lld\n",
		 PROBE_VERSION, size, (long long)time(NULL));
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

/* Bytes per layout write: LAYOUT_CHUNK, or about 1/16 s of the rate's budget
 * when that is smaller (at least MAX_ALIGN), so that a stop request is seen
 * soon. A multiple of MAX_ALIGN: every write but an unaligned tail stays
 * O_DIRECT-aligned. */
static size_t layout_chunk(uint64_t rate)
{
	uint64_t c = (rate / 16) & ~(uint64_t)(MAX_ALIGN - 1);

	if (!rate || c > LAYOUT_CHUNK)
		return LAYOUT_CHUNK;
	return c < MAX_ALIGN ? MAX_ALIGN : (size_t)c;
}

/* Sleeps until @start + @bytes / @rate seconds (CLOCK_MONOTONIC, absolute). */
static void layout_pace(const struct timespec *start, uint64_t bytes, uint64_t rate)
{
	struct timespec until = *start;

	/* In two parts: bytes * 1e9 overflows 64 bits above 18GB. */
	until.tv_sec += (time_t)(bytes / rate);
	until.tv_nsec += (long)((double)(bytes % rate) * 1e9 / (double)rate);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
		;
}

/*
 * Writes header + random data over the whole file, then fdatasync. Paced to
 * cfg->layout_rate bytes per second when set; progress in t->layout_done /
 * t->layout_total; -ECANCELED as soon as *t->stop is seen true (checked before
 * every write, after its pause).
 */
static int layout(struct target *t, int fd, const char *path)
{
	uint64_t total = TARGET_HEADER_SIZE + t->cfg->size, rate = t->cfg->layout_rate;
	uint64_t direct_end = total, off = 0;
	size_t chunk = layout_chunk(rate);
	struct timespec start;
	struct rng rng;
	void *buf;
	int r;

	if (posix_memalign(&buf, MAX_ALIGN, LAYOUT_CHUNK) != 0)
		return terr(t, -ENOMEM, "%s: out of memory for the layout buffer", path);
	atomic_store(&t->layout_done, 0);
	atomic_store(&t->layout_total, total);
	r = rng_seed(&rng);
	if (r < 0) {
		terr(t, r, "getrandom: %m");
		goto out;
	}
	if (t->cfg->direct)
		direct_end = total & ~(uint64_t)(t->offset_align - 1);
	clock_gettime(CLOCK_MONOTONIC, &start);

	while (off < total) {
		uint64_t end = off < direct_end ? direct_end : total;
		size_t n = end - off < chunk ? (size_t)(end - off) : chunk;

		/* Token-bucket style: the first chunk at once, each next one when the
		 * bytes before it are paid for. */
		if (rate && off)
			layout_pace(&start, off, rate);
		if (t->stop && atomic_load(t->stop)) {
			r = terr(t, -ECANCELED, "%s: probe-file layout abandoned: stopping", path);
			goto out;
		}
		if (off == direct_end && direct_end != total) {
			/* An unaligned tail cannot go through O_DIRECT: write it buffered. */
			r = set_flag(fd, O_DIRECT, false);
			if (r < 0) {
				terr(t, r, "%s: %m", path);
				goto out;
			}
		}
		rng_fill(&rng, buf, n);
		if (off == 0)
			header_format(&rng, buf, t->cfg->size);
		layout_inflight(t, true);
		r = pwrite_all(fd, buf, n, off);
		layout_inflight(t, false);
		if (r == -ENOSPC || r == -EDQUOT) {
			terr(t, r, "%s: no space for a %" PRIu64 "-byte probe file: %m", path,
			     total);
			goto out;
		}
		if (r < 0) {
			terr(t, r, "%s: writing the probe file: %m", path);
			goto out;
		}
		off += n;
		atomic_store(&t->layout_done, off);
	}
	if (direct_end != total) {
		r = set_flag(fd, O_DIRECT, true);
		if (r < 0) {
			terr(t, r, "%s: %m", path);
			goto out;
		}
	}
	layout_inflight(t, true);
	while ((r = fdatasync(fd)) < 0 && errno == EINTR)
		;
	layout_inflight(t, false);
	if (r < 0)
		r = terr(t, -errno, "%s: fdatasync: %m", path);
out:
	atomic_store(&t->layout_total, 0);
	free(buf);
	return r;
}

/* ---- directory targets -------------------------------------------------- */

/*
 * Opens an existing probe file if it is ours. Returns 0 with *out set (and
 * *relay when it must be laid out again), -ENOENT when there is none (no
 * message), or another -errno with t->error set; -EEXIST: a file that is not ours.
 */
static int open_existing(struct target *t, int dfd, int *out, int *lock, bool *relay)
{
	const char *path = t->file_path;
	struct stat lst, st;
	unsigned version;
	uint64_t size;
	void *hdr = NULL;
	ssize_t n;
	int fd, r, lk = -1;

	*relay = false;
	if (fstatat(dfd, TARGET_PROBE_FILE, &lst, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		return terr(t, -errno, "%s: %m", path);
	}
	if (S_ISLNK(lst.st_mode))
		return terr(t, -EEXIST,
			    "%s is a symlink, not an iopulse probe file: refusing to touch it; "
			    "remove it or choose another directory",
			    path);
	if (!S_ISREG(lst.st_mode))
		return terr(t, -EEXIST,
			    "%s exists and is not a regular file: refusing to touch it; remove "
			    "it or choose another directory",
			    path);
	if (lst.st_uid != geteuid())
		return terr(t, -EEXIST,
			    "%s is owned by uid %u, not by us (uid %u): refusing to touch it", path,
			    (unsigned)lst.st_uid, (unsigned)geteuid());

	/* O_NONBLOCK: should a FIFO be swapped in after the lstat, don't hang on it. */
	fd = openat(dfd, TARGET_PROBE_FILE,
		    O_RDWR | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		if (errno == ELOOP)
			return terr(t, -EEXIST, "%s is a symlink: refusing to touch it", path);
		return terr(t, -errno, "%s: cannot open for writing: %m", path);
	}
	if (fstat(fd, &st) < 0) {
		r = terr(t, -errno, "%s: fstat: %m", path);
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || st.st_dev != lst.st_dev || st.st_ino != lst.st_ino) {
		r = terr(t, -EEXIST, "%s changed while we opened it: refusing to touch it", path);
		goto fail;
	}
	r = lock_probe_file(t, fd, path, &lk);
	if (r < 0)
		goto fail;
	r = prepare_fd(t, fd, path, false);
	if (r < 0)
		goto fail;

	if (posix_memalign(&hdr, MAX_ALIGN, TARGET_HEADER_SIZE) != 0) {
		hdr = NULL;
		r = terr(t, -ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	while ((n = pread(fd, hdr, TARGET_HEADER_SIZE, 0)) < 0 && errno == EINTR &&
	       !(t->stop && atomic_load(t->stop)))
		;
	if (n < 0) {
		r = terr(t, -errno, "%s: reading the header: %m", path);
		goto fail;
	}
	if (!header_parse(hdr, (size_t)n, &version, &size)) {
		r = terr(t, -EEXIST,
			 "%s exists but is not an iopulse probe file (no header): refusing to "
			 "touch it; remove it or choose another directory",
			 path);
		goto fail;
	}
	free(hdr);

	/* Ours: anything wrong with it is ours to fix. */
	if (version != PROBE_VERSION || size != t->cfg->size ||
	    (uint64_t)st.st_size != TARGET_HEADER_SIZE + t->cfg->size ||
	    (uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size)
		*relay = true;
	*out = fd;
	*lock = lk;
	return 0;
fail:
	if (lk >= 0)
		close(lk);
	free(hdr);
	close(fd);
	return r;
}

static int link_anon(int fd, int dfd, const char *name)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno != ENOENT)
		return -errno;
	/* No /proc: AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH, try it anyway. */
	if (linkat(fd, "", dfd, name, AT_EMPTY_PATH) == 0)
		return 0;
	return -errno;
}

/* Removes a temporary name of ours left by a crashed run that had our pid. */
static void remove_stale_tmp(int dfd, const char *tmp)
{
	struct stat st;

	if (fstatat(dfd, tmp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == geteuid())
		(void)unlinkat(dfd, tmp, 0);
}

/* Publishes the file under @tmp as the probe file without replacing anything. */
static int rename_noreplace(int dfd, const char *tmp)
{
	if (renameat2(dfd, tmp, dfd, TARGET_PROBE_FILE, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* Filesystem without RENAME_NOREPLACE: link() never replaces either. */
	if (linkat(dfd, tmp, dfd, TARGET_PROBE_FILE, 0) < 0)
		return -errno;
	(void)unlinkat(dfd, tmp, 0);
	return 0;
}

/* Giving the finished probe file its name failed (@what: "link", "name"). */
static int naming_failed(struct target *t, int r, const char *path, const char *what)
{
	if (r == -EEXIST)
		return terr(t, r, "%s appeared while we created it: not touching it", path);
	return terr(t, r, "%s: cannot %s the probe file: %m", path, what);
}

/*
 * Creates a fully laid-out probe file and only then gives it its name, so no
 * one ever sees a partial file: O_TMPFILE + linkat, or a temporary name +
 * rename. @replace: an old probe file of ours is there and is renamed over.
 */
static int create_probe_file(struct target *t, int dfd, bool replace, int *out, int *lock)
{
	const char *path = t->file_path;
	bool anon = true, tmp_named = false;
	char tmp[64];
	int fd, r, lk = -1;

	snprintf(tmp, sizeof(tmp), TARGET_PROBE_FILE ".tmp.%ld", (long)getpid());

	fd = openat(dfd, ".", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
	if (fd < 0 && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return terr(t, -errno, "%s: cannot create the probe file: %m", path);
	if (fd < 0) {
		anon = false;
		fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno == EEXIST) {
			remove_stale_tmp(dfd, tmp);
			fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				    0600);
		}
		if (fd < 0)
			return terr(t, -errno, "%s: cannot create the probe file: %m", path);
		tmp_named = true;
	}

	/* Locked before it has a name: nobody can take it between link and use. */
	r = lock_probe_file(t, fd, path, &lk);
	if (r < 0)
		goto fail;
	r = enable_direct(t, fd, path);
	if (r < 0)
		goto fail;
	r = get_align(t, fd, path, false);
	if (r < 0)
		goto fail;
	r = layout(t, fd, path);
	if (r < 0)
		goto fail;

	if (anon) {
		/* New: link straight to the final name (EEXIST if someone raced us).
		 * Replacing: link to the temporary name, renamed over below. */
		const char *name = replace ? tmp : TARGET_PROBE_FILE;

		r = link_anon(fd, dfd, name);
		if (r == -EEXIST && replace) {
			remove_stale_tmp(dfd, tmp);
			r = link_anon(fd, dfd, name);
		}
		if (r < 0) {
			naming_failed(t, r, path, "link");
			goto fail;
		}
		tmp_named = replace;
	}
	if (replace) {
		if (renameat(dfd, tmp, dfd, TARGET_PROBE_FILE) < 0) {
			r = terr(t, -errno, "%s: cannot replace the probe file: %m", path);
			goto fail;
		}
		tmp_named = false;
	} else if (!anon) {
		r = rename_noreplace(dfd, tmp);
		if (r < 0) {
			naming_failed(t, r, path, "name");
			goto fail;
		}
		tmp_named = false;
	}
	*out = fd;
	*lock = lk;
	return 0;
fail:
	if (tmp_named)
		(void)unlinkat(dfd, tmp, 0);
	if (lk >= 0)
		close(lk);
	close(fd);
	return r;
}

static int open_directory(struct target *t)
{
	const char *dir = t->cfg->path;
	struct statfs sfs;
	struct stat dst, st;
	bool relay = false;
	int dfd, fd = -1, lk = -1, r;

	r = snprintf(t->file_path, sizeof(t->file_path), "%s/%s", dir, TARGET_PROBE_FILE);
	if (r < 0 || (size_t)r >= sizeof(t->file_path))
		return terr(t, -ENAMETOOLONG, "%s: path too long", dir);

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		if (errno == ENOENT)
			return terr(t, -ENOENT, "%s: no such directory", dir);
		if (errno == ENOTDIR)
			return terr(t, -ENOTDIR, "%s: not a directory", dir);
		return terr(t, -errno, "%s: %m", dir);
	}
	if (fstat(dfd, &dst) < 0 || fstatfs(dfd, &sfs) < 0) {
		r = terr(t, -errno, "%s: %m", dir);
		goto out;
	}
	r = check_fs(t, dir, &dst, &sfs);
	if (r < 0)
		goto out;

	r = open_existing(t, dfd, &fd, &lk, &relay);
	if (r == -ENOENT) {
		r = create_probe_file(t, dfd, false, &fd, &lk);
	} else if (r == 0 && relay) {
		/* The old file stays locked until its replacement is in place. */
		int old_fd = fd, old_lk = lk;

		r = create_probe_file(t, dfd, true, &fd, &lk);
		close(old_fd);
		close(old_lk);
	}
	if (r < 0)
		goto out;

	if (fstat(fd, &st) < 0) {
		r = terr(t, -errno, "%s: fstat: %m", t->file_path);
		close(fd);
		close(lk);
		goto out;
	}
	t->fd = fd;
	t->lock_fd = lk;
	t->ino = st.st_ino;
	t->writable = true;
	t->data_start = TARGET_HEADER_SIZE;
	t->data_end = TARGET_HEADER_SIZE + t->cfg->size;
	if (!t->pinned) {
		t->dev = dst.st_dev;
		t->fs_type = (long)sfs.f_type;
		t->pinned = true;
	}
	t->error[0] = '\0';
out:
	close(dfd);
	return r;
}

/* ---- file targets ------------------------------------------------------- */

static int open_file(struct target *t)
{
	const char *path = t->cfg->path;
	struct statfs sfs;
	struct stat lst, st;
	int fd, r;

	r = snprintf(t->file_path, sizeof(t->file_path), "%s", path);
	if (r < 0 || (size_t)r >= sizeof(t->file_path))
		return terr(t, -ENAMETOOLONG, "%s: path too long", path);

	/* lstat first: never open() a device or FIFO just to find out what it is. */
	if (lstat(path, &lst) < 0) {
		if (errno == ENOENT)
			return terr(t, -ENOENT, "%s: no such file", path);
		return terr(t, -errno, "%s: %m", path);
	}
	if (S_ISLNK(lst.st_mode))
		return terr(t, -ELOOP, "%s is a symlink: name the file itself", path);
	if (!S_ISREG(lst.st_mode))
		return terr(t, -EINVAL, "%s: not a regular file", path);

	/* O_NOATIME keeps even the access time as it was; only the owner (or
	 * CAP_FOWNER) may ask for it. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC | O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			return terr(t, -ELOOP, "%s is a symlink: name the file itself", path);
		return terr(t, -errno, "%s: %m", path);
	}
	if (fstat(fd, &st) < 0 || fstatfs(fd, &sfs) < 0) {
		r = terr(t, -errno, "%s: %m", path);
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || st.st_dev != lst.st_dev || st.st_ino != lst.st_ino) {
		r = terr(t, -EINVAL, "%s changed while we opened it", path);
		goto fail;
	}
	if (st.st_size < (off_t)FILE_TARGET_MIN_SIZE) {
		r = terr(t, -EINVAL, "%s is smaller than %u bytes: nothing to measure", path,
			 FILE_TARGET_MIN_SIZE);
		goto fail;
	}
	r = check_fs(t, path, &st, &sfs);
	if (r < 0)
		goto fail;
	r = prepare_fd(t, fd, path, false);
	if (r < 0)
		goto fail;

	t->fd = fd;
	t->ino = st.st_ino;
	t->writable = false;
	t->data_start = 0;
	t->data_end = (uint64_t)st.st_size & ~(uint64_t)(t->offset_align - 1);
	if (!t->pinned) {
		t->dev = st.st_dev;
		t->fs_type = (long)sfs.f_type;
		t->pinned = true;
	}
	t->error[0] = '\0';
	return 0;
fail:
	close(fd);
	return r;
}

/* ---- device targets ---------------------------------------------------- */

/* The device and its partitions, as sysfs knows them. */
struct devset {
	unsigned n; /* [0] is the device itself */
	dev_t dev[1 + MAX_PARTITIONS];
	char name[1 + MAX_PARTITIONS][32]; /* sysfs name ("loop3p1"); [0] unused */
};

/* How messages name a device target: "/dev/sdb", or "/dev/disk/by-id/x (/dev/sdb)". */
static const char *device_name(const struct target *t, char *buf, size_t len)
{
	if (strcmp(t->cfg->path, t->file_path) == 0)
		return t->file_path;
	snprintf(buf, len, "%s (%s)", t->cfg->path, t->file_path);
	return buf;
}

/* Reads a small sysfs/proc file relative to @dfd, without the trailing newline. */
static int read_small(int dfd, const char *name, char *buf, size_t len)
{
	ssize_t n;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Fills @s with @rdev and its partitions: the subdirectories of
 * /sys/dev/block/M:m that have a "partition" file. */
static int devset_load(struct target *t, struct devset *s, dev_t rdev, const char *name)
{
	char sys[64], buf[32], sub[NAME_MAX + 16];
	struct dirent *de;
	unsigned ma, mi;
	DIR *d;
	int r = 0;

	s->n = 1;
	s->dev[0] = rdev;
	s->name[0][0] = '\0';
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(rdev), minor(rdev));
	d = opendir(sys);
	if (!d)
		return terr(t, -errno,
			    "%s: cannot check its partitions and holders (%s: %m): refusing to "
			    "write to it",
			    name, sys);
	while ((errno = 0, de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/partition", de->d_name);
		if (faccessat(dirfd(d), sub, F_OK, 0) < 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/dev", de->d_name);
		if (read_small(dirfd(d), sub, buf, sizeof(buf)) < 0 ||
		    sscanf(buf, "%u:%u", &ma, &mi) != 2)
			continue; /* the partition went away while we looked */
		if (s->n == 1 + MAX_PARTITIONS) {
			r = terr(t, -E2BIG, "%s: more than %u partitions: refusing to write to it",
				 name, MAX_PARTITIONS);
			break;
		}
		s->dev[s->n] = makedev(ma, mi);
		snprintf(s->name[s->n], sizeof(s->name[0]), "%.31s", de->d_name);
		s->n++;
	}
	if (!r && errno)
		r = terr(t, -errno, "%s: reading %s: %m: refusing to write to it", name, sys);
	closedir(d);
	return r;
}

/* Index of @dev in @s, or -1. */
static int devset_find(const struct devset *s, dev_t dev)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->dev[i] == dev)
			return (int)i;
	return -1;
}

/* Index in @s of the block device at @path (mountinfo/swaps source), or -1. */
static int devset_find_path(const struct devset *s, const char *path)
{
	struct stat st;

	/* Only device nodes: stat() on an arbitrary path could hang on a dead mount. */
	if (strncmp(path, "/dev/", 5) != 0 || stat(path, &st) < 0 || !S_ISBLK(st.st_mode))
		return -1;
	return devset_find(s, st.st_rdev);
}

/* Undoes the octal escapes of /proc/self/mountinfo and /proc/swaps ("\040"), in place. */
static void unescape_octal(char *p)
{
	char *w = p;

	for (; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*w++ = (char)((p[1] - '0') << 6 | (p[2] - '0') << 3 | (p[3] - '0'));
			p += 3;
		} else {
			*w++ = *p;
		}
	}
	*w = '\0';
}

/* " (partition loop3p1)" when @i names a partition, else "". */
static const char *part_note(const struct devset *s, int i, char *buf, size_t len)
{
	if (i <= 0)
		return "";
	snprintf(buf, len, " (partition %s)", s->name[i]);
	return buf;
}

/* -EBUSY when the device or one of its partitions is mounted in our namespace. */
static int check_mounts(struct target *t, const struct devset *s, const char *name)
{
	char *line = NULL, *tok[64], *save, note[64];
	size_t cap = 0;
	int r = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return terr(t, -errno,
			    "%s: cannot check whether it is mounted (/proc/self/mountinfo: %m): "
			    "refusing to write to it",
			    name);
	while (getline(&line, &cap, f) > 0) {
		unsigned n = 0, dash = 0, ma, mi;
		int i = -1;

		for (char *p = strtok_r(line, " \n", &save); p && n < 64;
		     p = strtok_r(NULL, " \n", &save)) {
			if (n >= 6 && !dash && strcmp(p, "-") == 0)
				dash = n;
			tok[n++] = p;
		}
		/* id parent maj:min root mountpoint options [optional...] - type source */
		if (n < 6 || sscanf(tok[2], "%u:%u", &ma, &mi) != 2)
			continue;
		i = devset_find(s, makedev(ma, mi));
		if (i < 0 && dash && dash + 2 < n) {
			/* btrfs and others report an anonymous device: go by the source. */
			unescape_octal(tok[dash + 2]);
			i = devset_find_path(s, tok[dash + 2]);
		}
		if (i >= 0) {
			unescape_octal(tok[4]);
			r = terr(t, -EBUSY, "%s is mounted at %s%s: refusing to write to it", name,
				 tok[4], part_note(s, i, note, sizeof(note)));
			break;
		}
	}
	if (!r && ferror(f))
		r = terr(t, -EIO, "%s: cannot read /proc/self/mountinfo: refusing to write to it",
			 name);
	free(line);
	fclose(f);
	return r;
}

/* -EBUSY when the device or one of its partitions is an active swap area. */
static int check_swaps(struct target *t, const struct devset *s, const char *name)
{
	char *line = NULL, note[64];
	size_t cap = 0;
	int r = 0;
	FILE *f = fopen("/proc/swaps", "re");

	if (!f)
		return errno == ENOENT ? 0 : /* no swap support */
			       terr(t, -errno,
				    "%s: cannot check whether it is swap (/proc/swaps: %m): "
				    "refusing to write to it",
				    name);
	while (getline(&line, &cap, f) > 0) {
		int i;

		line[strcspn(line, " \t\n")] = '\0'; /* Filename Type Size Used Priority */
		unescape_octal(line);
		i = devset_find_path(s, line);
		if (i >= 0) {
			r = terr(t, -EBUSY, "%s is in use as swap%s: refusing to write to it", name,
				 part_note(s, i, note, sizeof(note)));
			break;
		}
	}
	free(line);
	fclose(f);
	return r;
}

/* -EBUSY when something (dm, md, bcache...) is stacked on the device or a partition. */
static int check_holders(struct target *t, const struct devset *s, const char *name)
{
	char dir[96], note[64];

	for (unsigned i = 0; i < s->n; i++) {
		struct dirent *de;
		DIR *d;

		snprintf(dir, sizeof(dir), "/sys/dev/block/%u:%u/holders", major(s->dev[i]),
			 minor(s->dev[i]));
		d = opendir(dir);
		if (!d) {
			if (errno == ENOENT && i > 0)
				continue; /* the partition went away */
			return terr(
				t, -errno,
				"%s: cannot check its holders (%s: %m): refusing to write to it",
				name, dir);
		}
		while ((de = readdir(d)))
			if (de->d_name[0] != '.')
				break;
		if (de) {
			int r = terr(t, -EBUSY, "%s is held by %s%s: refusing to write to it", name,
				     de->d_name, part_note(s, (int)i, note, sizeof(note)));

			closedir(d);
			return r;
		}
		closedir(d);
	}
	return 0;
}

/*
 * Whether the device @rdev may be written: 0, -EBUSY (mounted, swap, held) or
 * another -errno when we cannot tell; t->error set.
 */
static int device_in_use(struct target *t, dev_t rdev, const char *name)
{
	struct devset *s = malloc(sizeof(*s));
	int r;

	if (!s)
		return terr(t, -ENOMEM, "%s: out of memory", name);
	r = devset_load(t, s, rdev, name);
	if (r == 0)
		r = check_mounts(t, s, name);
	if (r == 0)
		r = check_swaps(t, s, name);
	if (r == 0)
		r = check_holders(t, s, name);
	free(s);
	return r;
}

static int device_size(struct target *t, int fd, const char *name, uint64_t *size)
{
	if (ioctl(fd, BLKGETSIZE64, size) < 0)
		return terr(t, -errno, "%s: BLKGETSIZE64: %m", name);
	return 0;
}

static int open_device(struct target *t)
{
	const char *path = t->cfg->path;
	const bool write = t->want_write;
	char real[PATH_MAX], nbuf[2 * PATH_MAX + 4];
	const char *name;
	struct stat st, fst;
	uint64_t size;
	int fd, r;

	/* stat, not lstat: /dev/disk/by-id/... symlinks are how disks are named. Never
	 * open() anything but a block device to find out what it is. */
	if (stat(path, &st) < 0) {
		if (errno == ENOENT)
			return terr(t, -ENOENT, "%s: no such device", path);
		return terr(t, -errno, "%s: %m", path);
	}
	if (!S_ISBLK(st.st_mode))
		return terr(t, -ENOTBLK, "%s is not a block device%s", path,
			    S_ISREG(st.st_mode)	  ? ": for a regular file, use 'file:'"
			    : S_ISDIR(st.st_mode) ? ": for a directory, use 'directory:'"
						  : "");
	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	r = snprintf(t->file_path, sizeof(t->file_path), "%s", real);
	if (r < 0 || (size_t)r >= sizeof(t->file_path))
		return terr(t, -ENAMETOOLONG, "%s: path too long", path);
	name = device_name(t, nbuf, sizeof(nbuf));

	if (t->pinned && st.st_rdev != t->dev)
		return terr(t, -EXDEV,
			    "%s now names device %u:%u, not %u:%u as when first opened: not "
			    "opening it",
			    name, major(st.st_rdev), minor(st.st_rdev), major(t->dev),
			    minor(t->dev));
	if (write && !t->cfg->allow_device_writes)
		return terr(t, -EPERM,
			    "%s: write probes on a block device overwrite its data; set "
			    "'allow_device_writes: true' on the target to allow them",
			    name);
	if (write) {
		r = device_in_use(t, st.st_rdev, name);
		if (r < 0)
			return r;
	}

	fd = open(path, (write ? O_RDWR | O_EXCL : O_RDONLY) | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		if (r == -EBUSY && write) {
			/* Claimed since we looked: say by what, if we can see it. */
			r = device_in_use(t, st.st_rdev, name);
			if (r < 0)
				return r;
			return terr(
				t, -EBUSY,
				"%s is in use (EBUSY on exclusive open): refusing to write to it",
				name);
		}
		return terr(t, r, "%s: cannot open%s: %m", name, write ? " for writing" : "");
	}
	if (fstat(fd, &fst) < 0) {
		r = terr(t, -errno, "%s: fstat: %m", name);
		goto fail;
	}
	if (!S_ISBLK(fst.st_mode) || fst.st_rdev != st.st_rdev) {
		r = terr(t, -EINVAL, "%s changed while we opened it", name);
		goto fail;
	}
	r = prepare_fd(t, fd, name, true);
	if (r < 0)
		goto fail;
	r = device_size(t, fd, name, &size);
	if (r < 0)
		goto fail;
	if (size < FILE_TARGET_MIN_SIZE || size < t->offset_align) {
		r = terr(t, -EINVAL, "%s has %" PRIu64 " bytes (no medium?): nothing to measure",
			 name, size);
		goto fail;
	}

	t->fd = fd;
	t->ino = fst.st_ino;
	t->writable = write;
	t->data_start = 0;
	t->data_end = size & ~(uint64_t)(t->offset_align - 1);
	if (!t->pinned) {
		t->dev = st.st_rdev;
		t->fs_type = 0;
		t->pinned = true;
	}
	t->error[0] = '\0';
	return 0;
fail:
	close(fd);
	return r;
}

/* target_check() for a device target; 0 or -errno, the caller closes. */
static int check_device(struct target *t)
{
	char nbuf[2 * PATH_MAX + 4];
	const char *name = device_name(t, nbuf, sizeof(nbuf));
	struct stat fst, st;
	uint64_t size;
	int r;

	if (fstat(t->fd, &fst) < 0)
		return terr(t, -errno, "%s: fstat: %m", name);
	if (!S_ISBLK(fst.st_mode) || fst.st_rdev != t->dev)
		return terr(t, -ESTALE, "%s: the open descriptor is not device %u:%u", name,
			    major(t->dev), minor(t->dev));
	if (stat(t->cfg->path, &st) < 0) {
		if (errno == ENOENT)
			return terr(t, -ESTALE, "%s was removed", name);
		return terr(t, -errno, "%s: %m", name);
	}
	if (!S_ISBLK(st.st_mode) || st.st_rdev != t->dev)
		return terr(t, -EXDEV,
			    "%s now names %s %u:%u, not the device %u:%u we opened: was it "
			    "replaced?",
			    t->cfg->path, S_ISBLK(st.st_mode) ? "device" : "a non-device",
			    major(st.st_rdev), minor(st.st_rdev), major(t->dev), minor(t->dev));
	r = device_size(t, t->fd, name, &size);
	if (r < 0)
		return r;
	if (size < t->data_end)
		return terr(t, -ESTALE, "%s shrank to %" PRIu64 " bytes", name, size);
	if (t->writable)
		return device_in_use(t, t->dev, name);
	return 0;
}

/* ---- public ------------------------------------------------------------- */

int target_open(struct target *t)
{
	if (t->fd >= 0)
		return 0;
	switch (t->cfg->kind) {
	case CFG_TARGET_DIRECTORY:
		if (t->cfg->size < CFG_MIN_TARGET_SIZE || t->cfg->size > CFG_MAX_TARGET_SIZE)
			return terr(t, -EINVAL, "%s: probe-file size %" PRIu64 " out of range",
				    t->cfg->path, t->cfg->size);
		return open_directory(t);
	case CFG_TARGET_FILE:
		return open_file(t);
	case CFG_TARGET_DEVICE:
		return open_device(t);
	}
	return terr(t, -EINVAL, "%s: unknown target kind", t->cfg->path);
}

int target_check(struct target *t)
{
	const bool is_dir = t->cfg->kind == CFG_TARGET_DIRECTORY;
	struct stat fst, pst, dst;
	struct statfs sfs;
	int r;

	if (t->fd < 0)
		return terr(t, -EBADF, "%s: not open", t->file_path);
	if (t->cfg->kind == CFG_TARGET_DEVICE) {
		r = check_device(t);
		if (r < 0)
			goto fail;
		return 0;
	}
	if (fstat(t->fd, &fst) < 0) {
		r = terr(t, -errno, "%s: fstat: %m", t->file_path);
		goto fail;
	}

	/* The filesystem first: after an unmount "was deleted" would mislead. */
	if (is_dir) {
		if (stat(t->cfg->path, &dst) < 0 || statfs(t->cfg->path, &sfs) < 0) {
			r = terr(t, -errno, "%s: %m", t->cfg->path);
			goto fail;
		}
	} else {
		if (lstat(t->file_path, &dst) < 0 || statfs(t->file_path, &sfs) < 0) {
			if (errno == ENOENT)
				r = terr(t, -ESTALE, "%s was deleted", t->file_path);
			else
				r = terr(t, -errno, "%s: %m", t->file_path);
			goto fail;
		}
	}
	if (dst.st_dev != t->dev || (long)sfs.f_type != t->fs_type) {
		r = terr(t, -EXDEV,
			 "%s is now on a different filesystem (was dev %u:%u, now %u:%u): was it "
			 "unmounted?",
			 is_dir ? t->cfg->path : t->file_path, major(t->dev), minor(t->dev),
			 major(dst.st_dev), minor(dst.st_dev));
		goto fail;
	}

	if (lstat(t->file_path, &pst) < 0) {
		if (errno == ENOENT)
			r = terr(t, -ESTALE, "%s was deleted", t->file_path);
		else
			r = terr(t, -errno, "%s: %m", t->file_path);
		goto fail;
	}
	if (fst.st_nlink == 0 || pst.st_dev != fst.st_dev || pst.st_ino != fst.st_ino) {
		r = terr(t, -ESTALE, "%s was deleted or replaced", t->file_path);
		goto fail;
	}
	if ((uint64_t)fst.st_size < t->data_end) {
		r = terr(t, -ESTALE, "%s shrank to %lld bytes", t->file_path,
			 (long long)fst.st_size);
		goto fail;
	}
	return 0;
fail:
	target_close(t);
	return r;
}

/* ---------------------------------------------------------------- bounded stat */

/*
 * stat(2) on a hung NFS or FUSE mount waits as long as the server does, and not
 * always interruptibly: a thread that calls it is lost until the filesystem
 * answers. So the stat runs on a helper thread, and the caller waits for it only
 * so long; an abandoned helper finishes (and frees its job) whenever the
 * filesystem returns. At most STAT_ABANDONED_MAX helpers are left waiting at once;
 * beyond that, the caller gets -ETIMEDOUT without trying.
 */
#define STAT_ABANDONED_MAX 8

static atomic_uint stat_abandoned;

struct stat_job {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC */
	unsigned refs;	   /* the caller's and the helper's */
	bool done, abandoned;
	int r;
	struct stat st;
	char path[];
};

/* Drop one reference, under j->mu; frees @j with the last. */
static void stat_job_put(struct stat_job *j)
{
	bool last = --j->refs == 0;

	pthread_mutex_unlock(&j->mu);
	if (last) {
		pthread_cond_destroy(&j->cv);
		pthread_mutex_destroy(&j->mu);
		free(j);
	}
}

static void *stat_job_run(void *arg)
{
	struct stat_job *j = arg;
	struct stat st;
	int r = stat(j->path, &st) < 0 ? -errno : 0;

	pthread_mutex_lock(&j->mu);
	j->st = st;
	j->r = r;
	j->done = true;
	if (j->abandoned)
		atomic_fetch_sub(&stat_abandoned, 1);
	pthread_cond_signal(&j->cv);
	stat_job_put(j);
	return NULL;
}

int target_stat_within(const char *path, struct stat *st, unsigned ms)
{
	size_t n = strlen(path) + 1;
	struct stat_job *j;
	pthread_condattr_t ca;
	pthread_attr_t attr;
	pthread_t thread;
	struct timespec end;
	int r;

	if (atomic_load(&stat_abandoned) >= STAT_ABANDONED_MAX)
		return -ETIMEDOUT;
	j = calloc(1, sizeof(*j) + n);
	if (!j)
		return -ENOMEM;
	memcpy(j->path, path, n);
	j->refs = 2;
	pthread_mutex_init(&j->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	r = -pthread_create(&thread, &attr, stat_job_run, j);
	pthread_attr_destroy(&attr);
	pthread_mutex_lock(&j->mu);
	if (r < 0) {
		j->refs = 1;
		stat_job_put(j);
		return r;
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	while (!j->done && pthread_cond_timedwait(&j->cv, &j->mu, &end) != ETIMEDOUT)
		;
	if (j->done) {
		*st = j->st;
		r = j->r;
	} else {
		j->abandoned = true;
		atomic_fetch_add(&stat_abandoned, 1);
		r = -ETIMEDOUT;
	}
	stat_job_put(j);
	return r;
}
