/* SPDX-License-Identifier: MIT */
/*
 * statefile — see statefile.h: the state file's directory walked and pinned,
 * the file judged ours or not before anything is done to it, and a new
 * version put in its place. The names, temporaries and their sweep are the
 * probe file's (dir.c), the walk a target's (walk.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fd.h"
#include "daemon/targets/statefile.h"
#include "daemon/targets/target_int.h"

/* t->error into d->error, for what the walk said. */
static int dir_error(struct target_state_dir *d, const struct target *t, int r)
{
	snprintf(d->error, sizeof(d->error), "%s", t->error);
	return r;
}

/* The directory, walked as a target's and opened (O_PATH) in *@out; pinned by
 * its device and inode the first time, refused (-EXDEV) when it is another
 * directory later. */
static int open_dir(struct target_state_dir *d, int *out)
{
	struct target t = {.fd = -1};
	struct stat st;
	int dfd, r;

	r = tgt_walk_to_dir(&t, d->path, &dfd);
	if (r < 0)
		return dir_error(d, &t, r);
	if (fstat(dfd, &st) < 0) {
		r = -errno;
		close(dfd);
		snprintf(d->error, sizeof(d->error), "%s: %s", d->path, strerror(-r));
		return r;
	}
	if (d->pinned && (st.st_dev != d->dev || st.st_ino != d->ino)) {
		close(dfd);
		snprintf(d->error, sizeof(d->error),
			 "%s is no longer the directory iopulse first opened (device %ju, inode "
			 "%ju; now %ju, %ju): it was replaced or something was mounted on it",
			 d->path, (uintmax_t)d->dev, (uintmax_t)d->ino, (uintmax_t)st.st_dev,
			 (uintmax_t)st.st_ino);
		return -EXDEV;
	}
	d->pinned = true;
	d->dev = st.st_dev;
	d->ino = st.st_ino;
	*out = dfd;
	return 0;
}

/* -EEXIST, d->error saying what @lst (what is at the name) is, unless it may be
 * ours: a regular file of our user with one name. */
static int may_be_ours(struct target_state_dir *d, const struct stat *lst)
{
	const char *what = S_ISLNK(lst->st_mode)      ? "a symbolic link"
			   : !S_ISREG(lst->st_mode)   ? "not a regular file"
			   : lst->st_uid != geteuid() ? "another user's"
			   : lst->st_nlink != 1	      ? "linked elsewhere too (another hard link)"
						      : NULL;

	if (!what)
		return 0;
	if (S_ISREG(lst->st_mode) && lst->st_uid != geteuid())
		snprintf(d->error, sizeof(d->error),
			 "%s/%s is owned by uid %u, not by us (uid %u): not ours, left alone",
			 d->path, d->name, (unsigned)lst->st_uid, (unsigned)geteuid());
	else
		snprintf(d->error, sizeof(d->error), "%s/%s is %s, not ours: left alone", d->path,
			 d->name, what);
	return -EEXIST;
}

/*
 * What is at the name, opened read-only (never a symbolic link, a FIFO or
 * anything but the regular file lstat() saw) into *@fd with its stat in @st:
 * 0, -ENOENT (nothing there, no message), or -errno with d->error set
 * (-EEXIST: it cannot be ours).
 */
static int open_existing(struct target_state_dir *d, int dfd, int *fd, struct stat *st)
{
	struct stat lst;
	int r;

	*fd = -1;
	if (fstatat(dfd, d->name, &lst, AT_SYMLINK_NOFOLLOW) < 0) {
		r = -errno;
		if (r != -ENOENT)
			snprintf(d->error, sizeof(d->error), "%s/%s: %s", d->path, d->name,
				 strerror(-r));
		return r;
	}
	r = may_be_ours(d, &lst);
	if (r < 0)
		return r;
	r = tgt_open_same(dfd, d->name, O_RDONLY, &lst, st);
	if (r == -ESTALE || r == -ELOOP) {
		snprintf(d->error, sizeof(d->error), "%s/%s changed while we opened it: left alone",
			 d->path, d->name);
		return -EEXIST;
	}
	if (r < 0) {
		snprintf(d->error, sizeof(d->error), "%s/%s: %s", d->path, d->name, strerror(-r));
		return r;
	}
	*fd = r;
	/* Again on what is open: a link or chown between lstat() and open(). */
	r = may_be_ours(d, st);
	if (r < 0)
		*fd = safe_close(*fd);
	return r;
}

int target_state_read(struct target_state_dir *d, size_t max, void **data, size_t *len)
{
	struct stat st;
	ssize_t n = 0;
	char *buf = NULL;
	int dfd, fd, r;

	*data = NULL;
	*len = 0;
	d->error[0] = '\0';
	r = open_dir(d, &dfd);
	if (r < 0)
		return r;
	r = open_existing(d, dfd, &fd, &st);
	close(dfd);
	if (r < 0)
		return r;
	if ((uint64_t)st.st_size > max) {
		snprintf(d->error, sizeof(d->error),
			 "%s/%s is %jd bytes, more than a state file can be (%zu)", d->path,
			 d->name, (intmax_t)st.st_size, max);
		r = -EFBIG;
		goto out;
	}
	/* One byte more than it had: one that grew meanwhile is cut short, and
	 * so refused as truncated, never read half. */
	buf = malloc((size_t)st.st_size + 1);
	n = buf ? fd_pread_full(fd, buf, (size_t)st.st_size + 1, 0) : -ENOMEM;
	if (n < 0) {
		r = (int)n;
		snprintf(d->error, sizeof(d->error), "%s/%s: reading: %s", d->path, d->name,
			 strerror(-r));
		goto out;
	}
	*data = buf;
	*len = (size_t)n > (size_t)st.st_size ? (size_t)st.st_size : (size_t)n;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return r;
}

/* ---------------------------------------------------------------- writing */

/* A temporary of ours (statefile.h): empty (killed before its first write),
 * or starting with our magic. */
static bool tmp_ours(struct target *t, int fd, void *arg)
{
	const struct target_state_dir *d = arg;
	char head[64];
	ssize_t n;

	(void)t;
	if (d->magic_len > sizeof(head))
		return false;
	n = fd_pread_full(fd, head, d->magic_len, 0);
	return n == 0 || (n == (ssize_t)d->magic_len && memcmp(head, d->magic, d->magic_len) == 0);
}

/* -EEXIST (d->error set) unless the file open at @fd starts with our magic. */
static int has_magic(struct target_state_dir *d, int fd)
{
	char head[64];
	ssize_t n =
		d->magic_len <= sizeof(head) ? fd_pread_full(fd, head, d->magic_len, 0) : -EINVAL;

	if (n == (ssize_t)d->magic_len && memcmp(head, d->magic, d->magic_len) == 0)
		return 0;
	if (n < 0) {
		snprintf(d->error, sizeof(d->error), "%s/%s: reading: %s", d->path, d->name,
			 strerror((int)-n));
		return (int)n;
	}
	snprintf(d->error, sizeof(d->error),
		 "%s/%s is not an iopulse state file (no header of ours): not replacing it; "
		 "nothing is saved until it is removed",
		 d->path, d->name);
	return -EEXIST;
}

/* The new file, written and synced under a temporary name of ours (@tmp,
 * NAME_MAX + 1 bytes), locked: its descriptor, or -errno with d->error. */
static int write_tmp(struct target_state_dir *d, int dfd, char *tmp, const void *data, size_t len)
{
	int fd = tgt_create_tmp(dfd, d->tmp_prefix, tmp, NAME_MAX + 1), r;

	if (fd < 0) {
		snprintf(d->error, sizeof(d->error), "%s: cannot create %s: %s%s", d->path,
			 d->tmp_prefix, strerror(-fd), fd == -EROFS ? TARGET_EROFS_HINT : "");
		tmp[0] = '\0';
		return fd;
	}
	/* Locked while it has this name: another iopulse's sweep leaves it alone. */
	r = flock(fd, LOCK_EX | LOCK_NB) < 0 ? -errno : 0;
	if (r == 0)
		r = tgt_pwrite_all(fd, data, len, 0);
	while (r == 0 && fdatasync(fd) < 0)
		r = errno == EINTR ? 0 : -errno;
	if (r < 0) {
		snprintf(d->error, sizeof(d->error), "%s/%s: writing: %s", d->path, tmp,
			 strerror(-r));
		tgt_unlink_ours(dfd, tmp, fd);
		tmp[0] = '\0';
		close(fd);
		return r;
	}
	return fd;
}

/*
 * Our file at @tmp (open at @fd) takes the place of our old one (open at
 * @old), whose name is then removed while it is still that file. Atomic where
 * the filesystem can exchange two names; elsewhere the old name is removed
 * first, and a crash in between loses a minute's state, never a file of
 * anybody else's.
 */
static int replace(struct target_state_dir *d, int dfd, const char *tmp, int fd, int old)
{
	int e;

	if (renameat2(dfd, tmp, dfd, d->name, RENAME_EXCHANGE) == 0) {
		if (tgt_unlink_ours(dfd, tmp, old))
			return 0;
		/* Not our old file that came back: another was put at the name
		 * since we looked. It goes back where it was. */
		if (renameat2(dfd, tmp, dfd, d->name, RENAME_EXCHANGE) < 0)
			snprintf(d->error, sizeof(d->error),
				 "%s/%s changed while we replaced it, and could not be put back "
				 "(it is at %s now): %s",
				 d->path, d->name, tmp, strerror(errno));
		else
			snprintf(d->error, sizeof(d->error),
				 "%s/%s changed while we replaced it: left alone", d->path,
				 d->name);
		return -EEXIST;
	}
	e = errno;
	if (e != EINVAL && e != ENOSYS && e != EOPNOTSUPP && e != ENOENT)
		return -e;
	/* No exchange here (or our old file's name is gone already). */
	if (e != ENOENT && !tgt_unlink_ours(dfd, d->name, old)) {
		snprintf(d->error, sizeof(d->error),
			 "%s/%s changed while we replaced it: left alone", d->path, d->name);
		return -EEXIST;
	}
	return tgt_publish_tmp(dfd, tmp, fd, d->name);
}

/* The directory's entries on disk (a rename is durable once they are). */
static void sync_dir(int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		(void)fsync(fd); /* the file is in place either way */
		close(fd);
	}
}

int target_state_write(struct target_state_dir *d, const void *data, size_t len)
{
	char tmp[NAME_MAX + 1] = "";
	struct target t = {.fd = -1};
	struct stat st;
	int dfd, old = -1, fd = -1, r;

	d->error[0] = '\0';
	r = open_dir(d, &dfd);
	if (r < 0)
		return r;
	if (!d->swept) {
		int n = tgt_sweep_tmps(&t, dfd, d->tmp_prefix, tmp_ours, d);

		d->swept = n >= 0;
		d->stale_removed += n > 0 ? (unsigned)n : 0;
	}
	r = open_existing(d, dfd, &old, &st);
	if (r == 0)
		r = has_magic(d, old);
	else if (r == -ENOENT)
		r = 0;
	if (r == 0) {
		fd = write_tmp(d, dfd, tmp, data, len);
		r = fd < 0 ? fd : 0;
	}
	if (r == 0) {
		r = old >= 0 ? replace(d, dfd, tmp, fd, old)
			     : tgt_publish_tmp(dfd, tmp, fd, d->name);
		if (r == -EEXIST && !d->error[0])
			snprintf(d->error, sizeof(d->error),
				 "%s/%s appeared while we wrote ours: left alone", d->path,
				 d->name);
		else if (r < 0 && r != -EEXIST)
			snprintf(d->error, sizeof(d->error), "%s/%s: cannot rename %s to it: %s",
				 d->path, d->name, tmp, strerror(-r));
	}
	if (r == 0)
		sync_dir(dfd);
	if (fd >= 0) {
		if (r < 0)
			tgt_unlink_ours(dfd, tmp, fd);
		close(fd);
	}
	old = safe_close(old);
	close(dfd);
	return r;
}
