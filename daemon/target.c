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
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "rng.h"
#include "target.h"

#define PROBE_MAGIC	     "IOPULSE-PROBE-FILE\n"
#define PROBE_VERSION	     1u
#define LAYOUT_CHUNK	     (1u << 20) /* bytes per write while laying out */
#define MAX_ALIGN	     4096u
#define FILE_TARGET_MIN_SIZE 4096u

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
}

void target_close(struct target *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
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

/* Fills t->mem_align / t->offset_align for the open file @fd. */
static int get_align(struct target *t, int fd, const char *path)
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
	if (!mem || !off) {
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

/* Writes header + random data over the whole file, then fdatasync. */
static int layout(struct target *t, int fd, const char *path)
{
	uint64_t total = TARGET_HEADER_SIZE + t->cfg->size;
	uint64_t direct_end = total, off = 0;
	struct rng rng;
	void *buf;
	int r;

	if (posix_memalign(&buf, MAX_ALIGN, LAYOUT_CHUNK) != 0)
		return terr(t, -ENOMEM, "%s: out of memory for the layout buffer", path);
	r = rng_seed(&rng);
	if (r < 0) {
		terr(t, r, "getrandom: %m");
		goto out;
	}
	if (t->cfg->direct)
		direct_end = total & ~(uint64_t)(t->offset_align - 1);

	while (off < total) {
		uint64_t end = off < direct_end ? direct_end : total;
		size_t n = end - off < LAYOUT_CHUNK ? (size_t)(end - off) : LAYOUT_CHUNK;

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
		r = pwrite_all(fd, buf, n, off);
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
	}
	if (direct_end != total) {
		r = set_flag(fd, O_DIRECT, true);
		if (r < 0) {
			terr(t, r, "%s: %m", path);
			goto out;
		}
	}
	while ((r = fdatasync(fd)) < 0 && errno == EINTR)
		;
	if (r < 0)
		r = terr(t, -errno, "%s: fdatasync: %m", path);
out:
	free(buf);
	return r;
}

/* ---- directory targets -------------------------------------------------- */

/*
 * Opens an existing probe file if it is ours. Returns 0 with *out set (and
 * *relay when it must be laid out again), -ENOENT when there is none (no
 * message), or another -errno with t->error set; -EEXIST: a file that is not ours.
 */
static int open_existing(struct target *t, int dfd, int *out, bool *relay)
{
	const char *path = t->file_path;
	struct stat lst, st;
	unsigned version;
	uint64_t size;
	void *hdr = NULL;
	ssize_t n;
	int fd, r;

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
	r = set_flag(fd, O_NONBLOCK, false);
	if (r < 0) {
		terr(t, r, "%s: %m", path);
		goto fail;
	}
	r = enable_direct(t, fd, path);
	if (r < 0)
		goto fail;
	r = get_align(t, fd, path);
	if (r < 0)
		goto fail;

	if (posix_memalign(&hdr, MAX_ALIGN, TARGET_HEADER_SIZE) != 0) {
		hdr = NULL;
		r = terr(t, -ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	while ((n = pread(fd, hdr, TARGET_HEADER_SIZE, 0)) < 0 && errno == EINTR)
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
	return 0;
fail:
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

/*
 * Creates a fully laid-out probe file and only then gives it its name, so no
 * one ever sees a partial file: O_TMPFILE + linkat, or a temporary name +
 * rename. @replace: an old probe file of ours is there and is renamed over.
 */
static int create_probe_file(struct target *t, int dfd, bool replace, int *out)
{
	const char *path = t->file_path;
	bool anon = true, tmp_named = false;
	char tmp[64];
	int fd, r;

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

	r = enable_direct(t, fd, path);
	if (r < 0)
		goto fail;
	r = get_align(t, fd, path);
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
			if (r == -EEXIST)
				terr(t, r, "%s appeared while we created it: not touching it",
				     path);
			else
				terr(t, r, "%s: cannot link the probe file: %m", path);
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
			if (r == -EEXIST)
				terr(t, r, "%s appeared while we created it: not touching it",
				     path);
			else
				terr(t, r, "%s: cannot name the probe file: %m", path);
			goto fail;
		}
		tmp_named = false;
	}
	*out = fd;
	return 0;
fail:
	if (tmp_named)
		(void)unlinkat(dfd, tmp, 0);
	close(fd);
	return r;
}

static int open_directory(struct target *t)
{
	const char *dir = t->cfg->path;
	struct statfs sfs;
	struct stat dst, st;
	bool relay = false;
	int dfd, fd = -1, r;

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

	r = open_existing(t, dfd, &fd, &relay);
	if (r == -ENOENT)
		r = create_probe_file(t, dfd, false, &fd);
	else if (r == 0 && relay) {
		close(fd);
		fd = -1;
		r = create_probe_file(t, dfd, true, &fd);
	}
	if (r < 0)
		goto out;

	if (fstat(fd, &st) < 0) {
		r = terr(t, -errno, "%s: fstat: %m", t->file_path);
		close(fd);
		goto out;
	}
	t->fd = fd;
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
	r = set_flag(fd, O_NONBLOCK, false);
	if (r < 0) {
		terr(t, r, "%s: %m", path);
		goto fail;
	}
	r = enable_direct(t, fd, path);
	if (r < 0)
		goto fail;
	r = get_align(t, fd, path);
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
