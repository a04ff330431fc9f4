/* SPDX-License-Identifier: MIT */
/*
 * device — block-device targets: named as disks are (symlinks followed:
 * /dev/disk/by-id/ names are links), the same device every time, read-only
 * unless a probe on it writes and allow_device_writes allows it. A writable
 * device must be unmounted, unused and unheld, then O_EXCL; the checks run
 * again in every target_check(). Unknown means refused. What the kernel says
 * of the device (in use; its size, without opening it): blockdev.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h> /* BLKGETSIZE64 */
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daemon/targets/target_int.h"

/* How messages name a device target: "/dev/sdb", or "/dev/disk/by-id/x (/dev/sdb)". */
static const char *device_name(const struct target *t, char *buf, size_t len)
{
	if (strcmp(t->cfg->path, t->file_path) == 0)
		return t->file_path;
	snprintf(buf, len, "%s (%s)", t->cfg->path, t->file_path);
	return buf;
}

static int device_size(struct target *t, int fd, const char *name, uint64_t *size)
{
	if (ioctl(fd, BLKGETSIZE64, size) < 0)
		return tgt_terr(t, -errno, "%s: BLKGETSIZE64: %m", name);
	return 0;
}

/*
 * Stats the device path into @st (stat, not lstat: /dev/disk/by-id/... symlinks
 * are how disks are named; never open() anything but a block device to find out
 * what it is) and sets t->file_path to where it resolves.
 */
static int device_stat(struct target *t, struct stat *st)
{
	const char *path = t->cfg->path;
	char real[PATH_MAX];
	int r;

	if (stat(path, st) < 0) {
		if (errno == ENOENT)
			return tgt_terr(t, -ENOENT, "%s: no such device", path);
		return tgt_terr(t, -errno, "%s: %m", path);
	}
	if (!S_ISBLK(st->st_mode))
		return tgt_terr(t, -ENOTBLK, "%s is not a block device%s", path,
				S_ISREG(st->st_mode)   ? ": for a regular file, use 'file:'"
				: S_ISDIR(st->st_mode) ? ": for a directory, use 'directory:'"
						       : "");
	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	r = snprintf(t->file_path, sizeof(t->file_path), "%s", real);
	if (r < 0 || (size_t)r >= sizeof(t->file_path))
		return tgt_terr(t, -ENAMETOOLONG, "%s: path too long", path);
	return 0;
}

/* @r, the error of a device path that now names another device: the one
 * measured is missing (no filesystem was unmounted). */
static int device_replaced(int r, struct target *t)
{
	t->code = "missing";
	return r;
}

/* Whether device @rdev may be opened as asked: the one pinned, and for writes
 * allowed and not in use. */
static int device_may_open(struct target *t, dev_t rdev, const char *name, bool write)
{
	if (t->pinned && rdev != t->dev)
		return device_replaced(tgt_terr(t, -EXDEV,
						"%s now names device %u:%u, not %u:%u as when "
						"first opened: not opening it",
						name, major(rdev), minor(rdev), major(t->dev),
						minor(t->dev)),
				       t);
	if (write && !t->cfg->allow_device_writes)
		return tgt_terr(t, -EPERM,
				"%s: write probes on a block device overwrite its data; set "
				"'allow_device_writes: true' on the target to allow them",
				name);
	if (write)
		return tgt_device_in_use(t, rdev, name);
	return 0;
}

/* Opens device @rdev (exclusively for writes) and checks it is still that
 * device; the descriptor (its inode in @ino), or -errno with t->error set. */
static int device_open_fd(struct target *t, dev_t rdev, const char *name, bool write, ino_t *ino)
{
	struct stat fst;
	int fd, r;

	fd = open(t->cfg->path,
		  (write ? O_RDWR | O_EXCL : O_RDONLY) | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		if (r == -EBUSY && write) {
			/* Claimed since we looked: say by what, if we can see it. */
			r = tgt_device_in_use(t, rdev, name);
			if (r < 0)
				return r;
			return tgt_terr(
				t, -EBUSY,
				"%s is in use (EBUSY on exclusive open): refusing to write to it",
				name);
		}
		return tgt_terr(t, r, "%s: cannot open%s: %m", name, write ? " for writing" : "");
	}
	if (fstat(fd, &fst) < 0) {
		r = tgt_terr(t, -errno, "%s: fstat: %m", name);
		goto fail;
	}
	if (!S_ISBLK(fst.st_mode) || fst.st_rdev != rdev) {
		r = tgt_terr(t, -EINVAL, "%s changed while we opened it", name);
		goto fail;
	}
	*ino = fst.st_ino;
	return fd;
fail:
	close(fd);
	return r;
}

/* -EINVAL (t->error set) when the device @name has too few bytes to measure:
 * @size under FILE_TARGET_MIN_SIZE or its direct I/O alignment. */
static int device_too_small(struct target *t, const char *name, uint64_t size)
{
	if (size < FILE_TARGET_MIN_SIZE || size < t->offset_align)
		return tgt_terr(t, -EINVAL,
				"%s has %" PRIu64 " bytes (no medium?): nothing to measure", name,
				size);
	return 0;
}

/*
 * What tgt_open_device() checks before it opens the device: a block device (@st),
 * named @name (in @nbuf), and, when some probe writes (t->want_write), writes
 * allowed and the device unmounted, not swap, unheld. 0 or -errno, t->error set.
 */
static int device_checks(struct target *t, struct stat *st, const char **name, char *nbuf,
			 size_t len)
{
	int r = device_stat(t, st);

	if (r < 0)
		return r;
	*name = device_name(t, nbuf, len);
	return device_may_open(t, st->st_rdev, *name, t->want_write);
}

int tgt_open_device(struct target *t)
{
	const bool write = t->want_write;
	char nbuf[2 * PATH_MAX + 4];
	const char *name;
	struct stat st;
	uint64_t size;
	ino_t ino = 0;
	int fd, r;

	r = device_checks(t, &st, &name, nbuf, sizeof(nbuf));
	if (r < 0)
		return r;
	fd = device_open_fd(t, st.st_rdev, name, write, &ino);
	if (fd < 0)
		return fd;
	r = tgt_prepare_fd(t, fd, name, true);
	if (r < 0)
		goto fail;
	r = device_size(t, fd, name, &size);
	if (r < 0)
		goto fail;
	r = device_too_small(t, name, size);
	if (r < 0)
		goto fail;
	tgt_whole_target_opened(t, fd, ino, write, size, st.st_rdev, 0);
	return 0;
fail:
	close(fd);
	return r;
}

/* target_check() for a device target; 0 or -errno, the caller closes. */
int tgt_check_device(struct target *t)
{
	char nbuf[2 * PATH_MAX + 4];
	const char *name = device_name(t, nbuf, sizeof(nbuf));
	struct stat fst, st;
	uint64_t size;
	int r;

	if (fstat(t->fd, &fst) < 0)
		return tgt_terr(t, -errno, "%s: fstat: %m", name);
	if (!S_ISBLK(fst.st_mode) || fst.st_rdev != t->dev)
		return tgt_terr(t, -ESTALE, "%s: the open descriptor is not device %u:%u", name,
				major(t->dev), minor(t->dev));
	if (stat(t->cfg->path, &st) < 0) {
		if (errno == ENOENT)
			return tgt_terr(t, -ESTALE, "%s was removed", name);
		return tgt_terr(t, -errno, "%s: %m", name);
	}
	if (!S_ISBLK(st.st_mode) || st.st_rdev != t->dev)
		return device_replaced(
			tgt_terr(t, -EXDEV,
				 "%s now names %s %u:%u, not the device %u:%u we opened: was it "
				 "replaced?",
				 t->cfg->path, S_ISBLK(st.st_mode) ? "device" : "a non-device",
				 major(st.st_rdev), minor(st.st_rdev), major(t->dev),
				 minor(t->dev)),
			t);
	r = device_size(t, t->fd, name, &size);
	if (r < 0)
		return r;
	if (size < t->data_end)
		return tgt_terr(t, -ESTALE, "%s shrank to %" PRIu64 " bytes", name, size);
	if (t->writable)
		return tgt_device_in_use(t, t->dev, name);
	return 0;
}

/*
 * target_check_ro() of a device target: tgt_open_device()'s checks, without opening
 * the device: the access it would open with (the effective ids, faccessat(2)),
 * and the size sysfs gives (0 without a medium).
 */
int tgt_check_ro_device(struct target *t)
{
	char nbuf[2 * PATH_MAX + 4];
	const char *name;
	struct stat st;
	int r = device_checks(t, &st, &name, nbuf, sizeof(nbuf));

	if (r < 0)
		return r;
	if (faccessat(AT_FDCWD, t->cfg->path, R_OK | (t->want_write ? W_OK : 0), AT_EACCESS) < 0)
		return tgt_terr(t, -errno, "%s: cannot open%s: %m", name,
				t->want_write ? " for writing" : "");
	return device_too_small(t, name, tgt_device_sysfs_size(st.st_rdev));
}
