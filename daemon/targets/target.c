/* SPDX-License-Identifier: MIT */
/*
 * target — see target.h for the contract and docs/targets.md for the design
 * (probe-file layout, path walking, alignment, device-write checks). This file
 * holds the entry points that open and check a target of any kind
 * (target_open(), target_check(), target_check_ro()) and what the kinds share:
 * the error message (tgt_terr()), O_DIRECT and alignment, the first open's pin of a
 * whole file or device. The rest, one job a file, shared through target_int.h:
 * walk.c (the path walk), mount.c (require_mount), dir.c, file.c and device.c
 * (each kind), probefile.c (a probe file's header and layout), blockdev.c
 * (what sysfs and /proc say of a block device), statwithin.c. The decisions
 * that shape this file's code:
 *
 * - O_DIRECT is set with fcntl() after open(): its EINVAL then means exactly
 *   "no direct I/O here", where open(O_TMPFILE|O_DIRECT) is ambiguous.
 * - Alignment: statx(STATX_DIOALIGN), else st_blksize clamped to [512, 4096]
 *   (files) or BLKSSZGET (devices); the same with direct: false.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h> /* BLKSSZGET */
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/errtext.h"
#include "lib/fd.h"
#include "lib/io_op.h"
#include "daemon/targets/target_int.h"

/* Stores a message in t->error and returns @r (negative errno). %m prints @r. */
__attribute__((format(printf, 3, 4))) int tgt_terr(struct target *t, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	errtext_v(t->error, sizeof(t->error), r, fmt, ap);
	va_end(ap);
	t->code = NULL;
	return r;
}

/* What each errno a target's open or check fails with says of the target; any
 * other is "other" (a misconfiguration: not a directory, a regular file or a
 * block device, no O_DIRECT, tmpfs without allow_memory_backed...). EXDEV:
 * what the path names is on another device than pinned, which is what an
 * unmount leaves; a directory replaced on the same filesystem, or a device
 * path now naming another device, say "missing" in t->code. */
static const struct {
	int err;
	const char *code;
} reason_codes[] = {
	{ENOENT, "missing"},   {ENOTDIR, "missing"},   {ESTALE, "missing"},
	{ENXIO, "missing"},    {ENODEV, "missing"},    {ENOMEDIUM, "missing"},
	{EXDEV, "unmounted"},  {EROFS, "read_only"},   {ENOSPC, "full"},
	{EDQUOT, "full"},      {EACCES, "permission"}, {EPERM, "permission"},
	{EIO, "io_error"},     {ENOTCONN, "io_error"}, {EREMOTEIO, "io_error"},
	{EUCLEAN, "io_error"}, {EBADMSG, "io_error"},  {EEXIST, "not_ours"},
	{ELOOP, "not_ours"},   {EBUSY, "busy"},	       {ETXTBSY, "busy"},
};

const char *target_reason_code(const struct target *t, int r)
{
	if (t && t->code)
		return t->code;
	for (size_t i = 0; i < sizeof(reason_codes) / sizeof(reason_codes[0]); i++)
		if (-r == reason_codes[i].err)
			return reason_codes[i].code;
	return "other";
}

/* "/proc/self/fd/N": how a descriptor is named to link, reopen or read it. */
void tgt_proc_fd_path(int fd, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

void target_init(struct target *t, const struct cfg_target *cfg)
{
	memset(t, 0, sizeof(*t));
	t->cfg = cfg;
	t->fd = -1;
	t->lock_fd = -1;
	atomic_init(&t->layout_done, 0);
	atomic_init(&t->layout_ended_ns, 0);
	atomic_init(&t->layout_total, 0);
}

void target_close(struct target *t)
{
	t->fd = safe_close(t->fd);
	t->lock_fd = safe_close(t->lock_fd);
	t->writable = false;
}

/* ---- helpers ------------------------------------------------------------ */

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

int tgt_set_flag(int fd, int flag, bool on)
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
int tgt_enable_direct(struct target *t, int fd, const char *path)
{
	int r;

	if (!t->cfg->direct)
		return 0;
	r = tgt_set_flag(fd, O_DIRECT, true);
	if (r == -EINVAL)
		return tgt_terr(
			t, r,
			"%s: the filesystem does not support O_DIRECT; set 'direct: false' to "
			"measure through the page cache (not recommended)",
			path);
	if (r < 0)
		return tgt_terr(t, r, "%s: cannot enable O_DIRECT: %m", path);
	return 0;
}

/* Fills t->mem_align / t->offset_align for the open file or block device @fd. */
int tgt_get_align(struct target *t, int fd, const char *path, bool blk)
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
			return tgt_terr(t, -errno, "%s: BLKSSZGET: %m", path);
		mem = off = lbs > 0 ? (uint32_t)lbs : 0;
	} else if (!mem || !off) {
		uint32_t b = 512;

		if (fstat(fd, &st) < 0)
			return tgt_terr(t, -errno, "%s: fstat: %m", path);
		while (b < IO_MAX_ALIGN && (blksize_t)(b * 2) <= st.st_blksize)
			b *= 2;
		mem = off = b;
	}
	if (!is_pow2(mem) || !is_pow2(off) || mem > IO_MAX_ALIGN || off > IO_MAX_ALIGN)
		return tgt_terr(t, -EINVAL,
				"%s: direct I/O needs %" PRIu32 "-byte buffers and %" PRIu32
				"-byte offsets; at most %u is supported",
				path, mem, off, IO_MAX_ALIGN);
	t->mem_align = mem;
	t->offset_align = off;
	return 0;
}

/* An opened target file: blocking again (it was opened O_NONBLOCK so that a
 * FIFO swapped in could not hang us), O_DIRECT as configured, alignment known. */
int tgt_prepare_fd(struct target *t, int fd, const char *name, bool device)
{
	int r = tgt_set_flag(fd, O_NONBLOCK, false);

	if (r < 0)
		return tgt_terr(t, r, "%s: %m", name);
	r = tgt_enable_direct(t, fd, name);
	if (r < 0)
		return r;
	return tgt_get_align(t, fd, name, device);
}

/* -EMEDIUMTYPE on tmpfs/ramfs, unless allowed. */
int tgt_check_memory_backed(struct target *t, const char *path, const struct statfs *sfs)
{
	long f_type = (long)sfs->f_type;

	if ((f_type == TMPFS_MAGIC || f_type == RAMFS_MAGIC) && !t->cfg->allow_memory_backed)
		return tgt_terr(t, -EMEDIUMTYPE,
				"%s is on tmpfs/ramfs: this measures RAM, not a disk; set "
				"'allow_memory_backed: true' if that is what you want",
				path);
	return 0;
}

/*
 * A file or device target is open on @fd and all of its @size is measured (down
 * to the alignment). The first open pins the device (and filesystem type) that
 * later opens and checks must find again.
 */
void tgt_whole_target_opened(struct target *t, int fd, ino_t ino, bool writable, uint64_t size,
			     dev_t dev, long fs_type)
{
	t->fd = fd;
	t->ino = ino;
	t->writable = writable;
	t->data_start = 0;
	t->data_end = size & ~(uint64_t)(t->offset_align - 1);
	if (!t->pinned) {
		t->dev = dev;
		t->fs_type = fs_type;
		t->pinned = true;
	}
	t->error[0] = '\0';
}

/* ---- public ------------------------------------------------------------- */

/*
 * A layout is in progress until the open that made it has named, checked and
 * returned the file: until then the target is not up yet, and a scrape must not
 * see it neither laid out nor up (IopulseTargetDown waits for the layout, see
 * dashboards/iopulse.rules.yml). Stamped before the total goes back to 0, so
 * that a lane seeing 0 sees when it ended.
 */
static void layout_over(struct target *t)
{
	if (!atomic_load(&t->layout_total))
		return;
	atomic_store(&t->layout_ended_ns, eng_mono_ns());
	atomic_store(&t->layout_total, 0);
}

int target_open(struct target *t)
{
	int r;

	if (t->fd >= 0)
		return 0;
	t->layout_failed = false;
	t->code = NULL;
	switch (t->cfg->kind) {
	case CFG_TARGET_DIRECTORY:
		if (t->cfg->size < CFG_MIN_TARGET_SIZE || t->cfg->size > CFG_MAX_TARGET_SIZE)
			return tgt_terr(t, -EINVAL, "%s: probe-file size %" PRIu64 " out of range",
					t->cfg->path, t->cfg->size);
		r = tgt_open_directory(t);
		layout_over(t);
		return r;
	case CFG_TARGET_FILE:
		return tgt_open_file(t);
	case CFG_TARGET_DEVICE:
		return tgt_open_device(t);
	}
	return tgt_terr(t, -EINVAL, "%s: unknown target kind", t->cfg->path);
}

int target_check_ro(struct target *t, const char *const *files, unsigned n_files)
{
	struct statfs sfs;
	struct stat st;
	int fd;

	switch (t->cfg->kind) {
	case CFG_TARGET_DIRECTORY:
		return tgt_check_ro_directory(t, files, n_files);
	case CFG_TARGET_FILE:
		fd = tgt_open_file_fd(t, &st, &sfs);
		if (fd < 0)
			return fd;
		close(fd);
		return 0;
	case CFG_TARGET_DEVICE:
		return tgt_check_ro_device(t);
	}
	return tgt_terr(t, -EINVAL, "%s: unknown target kind", t->cfg->path);
}

int target_check(struct target *t)
{
	const bool is_dir = t->cfg->kind == CFG_TARGET_DIRECTORY;
	char leaf[NAME_MAX + 1];
	struct stat fst, pst, dst;
	int pfd = -1, r;

	t->code = NULL;
	if (t->fd < 0)
		return tgt_terr(t, -EBADF, "%s: not open", t->file_path);
	if (t->cfg->kind == CFG_TARGET_DEVICE) {
		r = tgt_check_device(t);
		if (r < 0)
			goto fail;
		return 0;
	}
	if (fstat(t->fd, &fst) < 0) {
		r = tgt_terr(t, -errno, "%s: fstat: %m", t->file_path);
		goto fail;
	}

	/* The path walked again, never through a symlink. The directory first:
	 * after an unmount "was deleted" would mislead. */
	if (is_dir) {
		snprintf(leaf, sizeof(leaf), "%s", tgt_probe_name(t));
		r = tgt_walk_to_dir(t, t->cfg->path, &pfd);
		if (r == 0 && fstat(pfd, &dst) < 0)
			r = tgt_terr(t, -errno, "%s: %m", t->cfg->path);
		if (r == 0)
			r = tgt_dir_identity(t, &dst, "");
	} else {
		r = tgt_walk_to_file(t, t->cfg->path, &pfd, leaf, sizeof(leaf));
		if (r == 0 && fstatat(pfd, leaf, &dst, AT_SYMLINK_NOFOLLOW) < 0)
			r = errno == ENOENT ? tgt_terr(t, -ESTALE, "%s was deleted", t->file_path)
					    : tgt_terr(t, -errno, "%s: %m", t->file_path);
		if (r == 0 && dst.st_dev != t->dev)
			r = tgt_moved(t, t->file_path, dst.st_dev, "");
	}
	if (r < 0)
		goto fail;
	/* unnamed: no name to look at, only we can reach it; dir_only: the
	 * directory, just found to be the pinned one, is all there is. */
	if (is_dir && (t->unnamed || t->dir_only))
		pst = fst;
	else if (fstatat(pfd, leaf, &pst, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			r = tgt_terr(t, -ESTALE, "%s was deleted", t->file_path);
		else
			r = tgt_terr(t, -errno, "%s: %m", t->file_path);
		goto fail;
	}
	if ((fst.st_nlink == 0 && !(is_dir && t->unnamed)) || !tgt_same_inode(&pst, &fst)) {
		r = tgt_terr(t, -ESTALE, "%s was deleted or replaced", t->file_path);
		goto fail;
	}
	if ((uint64_t)fst.st_size < t->data_end) {
		r = tgt_terr(t, -ESTALE, "%s shrank to %lld bytes", t->file_path,
			     (long long)fst.st_size);
		goto fail;
	}
	close(pfd);
	return 0;
fail:
	pfd = safe_close(pfd);
	target_close(t);
	return r;
}
