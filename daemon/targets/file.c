/* SPDX-License-Identifier: MIT */
/*
 * file — existing regular files as targets: walked to, judged before they are
 * opened (never a symlink, a FIFO or a device), opened read-only, on the
 * filesystem first pinned. Nothing is ever written to one.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "daemon/targets/target_int.h"

/*
 * A file target opened read-only after every check: walked to, a regular file
 * (never a symlink, never a FIFO or a device opened to find out), at least
 * FILE_TARGET_MIN_SIZE bytes, on the pinned filesystem, not in memory unless
 * allowed, O_DIRECT as configured. Sets t->file_path. The descriptor, with
 * @st and @sfs, or -errno with t->error set. Nothing is written.
 */
int tgt_open_file_fd(struct target *t, struct stat *st, struct statfs *sfs)
{
	const char *path = t->cfg->path;
	char leaf[NAME_MAX + 1];
	struct stat lst;
	int pfd, fd, r;

	r = snprintf(t->file_path, sizeof(t->file_path), "%s", path);
	if (r < 0 || (size_t)r >= sizeof(t->file_path))
		return tgt_terr(t, -ENAMETOOLONG, "%s: path too long", path);
	r = tgt_walk_to_file(t, path, &pfd, leaf, sizeof(leaf));
	if (r < 0)
		return r;

	/* lstat first: never open() a device or FIFO just to find out what it is. */
	if (fstatat(pfd, leaf, &lst, AT_SYMLINK_NOFOLLOW) < 0) {
		r = errno == ENOENT ? tgt_terr(t, -ENOENT, "%s: no such file", path)
				    : tgt_terr(t, -errno, "%s: %m", path);
		close(pfd);
		return r;
	}
	if (S_ISLNK(lst.st_mode) || !S_ISREG(lst.st_mode)) {
		close(pfd);
		if (S_ISLNK(lst.st_mode))
			return tgt_leaf_is_link(t, path);
		return tgt_terr(t, -EINVAL, "%s: not a regular file", path);
	}

	/* O_NOATIME keeps even the access time as it was; only the owner (or
	 * CAP_FOWNER) may ask for it. */
	fd = tgt_open_same(pfd, leaf, O_RDONLY | O_NOATIME, &lst, st);
	if (fd == -EPERM)
		fd = tgt_open_same(pfd, leaf, O_RDONLY, &lst, st);
	close(pfd);
	if (fd == -ESTALE || fd == -ELOOP)
		return tgt_terr(t, -EINVAL, "%s changed while we opened it", path);
	if (fd < 0)
		return tgt_terr(t, fd, "%s: %m", path);
	if (fstatfs(fd, sfs) < 0) {
		r = tgt_terr(t, -errno, "%s: %m", path);
		goto fail;
	}
	if (st->st_size < (off_t)FILE_TARGET_MIN_SIZE) {
		r = tgt_terr(t, -EINVAL, "%s is smaller than %u bytes: nothing to measure", path,
			     FILE_TARGET_MIN_SIZE);
		goto fail;
	}
	if (t->pinned && (st->st_dev != t->dev || (long)sfs->f_type != t->fs_type)) {
		r = tgt_moved(t, path, st->st_dev, "; not opening it");
		goto fail;
	}
	r = tgt_check_memory_backed(t, path, sfs);
	if (r < 0)
		goto fail;
	r = tgt_prepare_fd(t, fd, path, false);
	if (r < 0)
		goto fail;
	return fd;
fail:
	close(fd);
	return r;
}

int tgt_open_file(struct target *t)
{
	struct statfs sfs;
	struct stat st;
	int fd = tgt_open_file_fd(t, &st, &sfs);

	if (fd < 0)
		return fd;
	tgt_whole_target_opened(t, fd, st.st_ino, false, (uint64_t)st.st_size, st.st_dev,
				(long)sfs.f_type);
	return 0;
}
