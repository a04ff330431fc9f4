/* SPDX-License-Identifier: MIT */
/*
 * dir — directory targets: the directory walked to and pinned (or refused:
 * replaced, moved, memory-backed, not mounted as require_mount says), and the
 * probe file in it: an existing one judged ours or not before anything is done
 * to it, a new one laid out unnamed (or under a temporary name of ours) and
 * named only then, temporaries an iopulse killed mid-layout left behind
 * removed. A name is removed or taken only while it is a file of ours;
 * nothing is ever renamed over anything. The file's header and layout:
 * probefile.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "lib/fd.h"
#include "lib/io_op.h"
#include "daemon/targets/target_int.h"

/* The probe file's name in the directory: the caller's, or the daemon's. */
const char *tgt_probe_name(const struct target *t)
{
	return t->file_name ? t->file_name : TARGET_PROBE_FILE;
}

/* Whether @name in @dfd is still the file open at @fd (same device and inode). */
bool tgt_name_is(int dfd, const char *name, int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       tgt_same_inode(&a, &b);
}

/*
 * Removes @name from @dfd only while it names the file we hold open at @fd:
 * never a name by its pattern, never one somebody put in its place. Whether
 * it was removed.
 */
bool tgt_unlink_ours(int dfd, const char *name, int fd)
{
	return tgt_name_is(dfd, name, fd) && unlinkat(dfd, name, 0) == 0;
}

/* A probe file's temporary name: TMP_PREFIX + 16 random hex digits (tgt_create_tmp()). */
#define TMP_PREFIX TARGET_PROBE_FILE ".tmp."

/* Whether @name is exactly what tgt_create_tmp() makes: @prefix + 16 hex digits. */
bool tgt_tmp_name(const char *prefix, const char *name)
{
	size_t n = strlen(prefix);

	if (strncmp(name, prefix, n) != 0 || strlen(name + n) != 16)
		return false;
	return strspn(name + n, "0123456789abcdef") == 16;
}

/* The entries of the directory @dfd (O_PATH will do), for readdir(); NULL on
 * failure. closedir() closes it. */
static DIR *dir_stream(int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d && fd >= 0)
		close(fd);
	return d;
}

/*
 * An exclusive flock on every open probe file: two iopulse processes on one
 * directory would measure each other and re-lay each other's file. It is taken
 * on a descriptor of its own (reopened through /proc), as io_uring's file table
 * keeps the probes' one alive past our exit and a restart would find the target
 * busy. *lock gets the descriptor to close on target_close().
 */
static int lock_probe_file(struct target *t, int fd, const char *path, int *lock)
{
	char proc[64];
	int lk, r;

	tgt_proc_fd_path(fd, proc, sizeof(proc));
	lk = open(proc, O_RDONLY | O_CLOEXEC);
	if (lk < 0) /* no /proc: lock the shared description, it still works */
		lk = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (lk < 0)
		return tgt_terr(t, -errno, "%s: cannot open the probe file for locking: %m", path);
	if (flock(lk, LOCK_EX | LOCK_NB) == 0) {
		*lock = lk;
		return 0;
	}
	r = errno;
	close(lk);
	if (r == EWOULDBLOCK)
		return tgt_terr(t, -EBUSY,
				"%s is in use by another iopulse process: two daemons must not "
				"measure the same directory",
				path);
	return tgt_terr(t, -r, "%s: cannot lock the probe file: %m", path);
}

/* lstat() of the probe file's name: 0, -ENOENT (no message), or -errno with
 * t->error set. */
static int stat_probe_file(struct target *t, int dfd, struct stat *lst)
{
	if (fstatat(dfd, tgt_probe_name(t), lst, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	return errno == ENOENT ? -ENOENT : tgt_terr(t, -errno, "%s: %m", t->file_path);
}

/* Whether @dfd holds a temporary name of ours (tgt_tmp_name()) for the file @st: its
 * name in @name (NAME_MAX + 1 bytes). */
static bool find_tmp_link(int dfd, const struct stat *st, char *name)
{
	DIR *d = dir_stream(dfd);
	struct dirent *de;
	struct stat tst;
	bool found = false;

	while (d && !found && (de = readdir(d))) {
		found = tgt_tmp_name(TMP_PREFIX, de->d_name) &&
			fstatat(dfd, de->d_name, &tst, AT_SYMLINK_NOFOLLOW) == 0 &&
			S_ISREG(tst.st_mode) && tgt_same_inode(&tst, st);
		if (found)
			snprintf(name, NAME_MAX + 1, "%s", de->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

/*
 * On a filesystem with neither O_TMPFILE nor RENAME_NOREPLACE, tgt_publish_tmp()
 * names a probe file with link() then unlink() of its temporary name: an
 * iopulse killed in between leaves its file with two names, which
 * may_be_ours() would refuse for ever. When the file at the probe file's name
 * (@lst, two links) also has a temporary name of ours in this directory, and is
 * ours in all else (a regular file of our user with our header, that no live
 * iopulse holds locked), that name is removed: no data is lost, the file keeps
 * its final name. 1 when it was (t->link_removed), 0 when nothing was done
 * (may_be_ours() then refuses the file), -errno with t->error set (-EBUSY: held
 * by another iopulse, which may be naming it right now).
 */
static int drop_tmp_link(struct target *t, int dfd, const struct stat *lst)
{
	char tmp[NAME_MAX + 1];
	unsigned version;
	uint64_t size;
	struct stat st;
	bool ours = false;
	void *hdr;
	int fd, lk = -1, r;

	if (!S_ISREG(lst->st_mode) || lst->st_uid != geteuid())
		return 0;
	fd = tgt_open_same(dfd, tgt_probe_name(t), O_RDONLY, lst, &st);
	if (fd < 0) /* gone or changed: what is there now is looked at as usual */
		return 0;
	if (st.st_nlink != 2 || !find_tmp_link(dfd, &st, tmp)) {
		close(fd);
		return 0;
	}
	hdr = malloc(TARGET_HEADER_SIZE);
	r = hdr ? tgt_header_read(t, fd, hdr, &ours, &version, &size) : -ENOMEM;
	free(hdr);
	if (r == 0 && ours)
		r = lock_probe_file(t, fd, t->file_path, &lk);
	/* Identity again right before the unlink: the final name, which must outlive
	 * the temporary one, and the temporary one itself (tgt_unlink_ours()). */
	if (lk >= 0 && tgt_name_is(dfd, tgt_probe_name(t), fd) && tgt_unlink_ours(dfd, tmp, fd)) {
		snprintf(t->link_removed, sizeof(t->link_removed), "%s", tmp);
		r = 1;
	} else if (r != -EBUSY) {
		r = 0; /* not ours, unreadable, or changed: open_existing() says why */
	}
	lk = safe_close(lk);
	close(fd);
	return r;
}

/* Whether what lstat() (or fstat() once open) found at the probe file's name
 * may be ours: -EEXIST (t->error set) for a symlink, anything but a regular
 * file, another owner (when @owned: a check of another user's file judges it
 * by its header, as the daemon's user would), a file with other names. */
static int may_be_ours(struct target *t, const struct stat *lst, bool owned)
{
	const char *path = t->file_path;

	if (S_ISLNK(lst->st_mode))
		return tgt_terr(t, -EEXIST,
				"%s is a symlink, not an iopulse probe file: refusing to touch it; "
				"remove it or choose another directory",
				path);
	if (!S_ISREG(lst->st_mode))
		return tgt_terr(t, -EEXIST,
				"%s exists and is not a regular file: refusing to touch it; remove "
				"it or choose another directory",
				path);
	if (owned && lst->st_uid != geteuid())
		return tgt_terr(t, -EEXIST,
				"%s is owned by uid %u, not by us (uid %u): refusing to touch it",
				path, (unsigned)lst->st_uid, (unsigned)geteuid());
	/* iopulse gives its files one name only: another name is somebody's file
	 * linked here, which writing ours would overwrite. */
	if (lst->st_nlink != 1)
		return tgt_terr(t, -EEXIST,
				"%s has %ju hard links, and an iopulse probe file has exactly one: "
				"another file linked here, not ours; refusing to touch it; remove "
				"it or choose another directory",
				path, (uintmax_t)lst->st_nlink);
	return 0;
}

/* Reads the header of the open file @fd: 0 with its @version and @size when
 * it is ours, -EEXIST (t->error set) when it is not, or another -errno. */
static int read_our_header(struct target *t, int fd, unsigned *version, uint64_t *size)
{
	const char *path = t->file_path;
	bool ours = false;
	void *hdr;
	int r;

	if (posix_memalign(&hdr, IO_MAX_ALIGN, TARGET_HEADER_SIZE) != 0)
		return tgt_terr(t, -ENOMEM, "%s: out of memory", path);
	r = tgt_header_read(t, fd, hdr, &ours, version, size);
	free(hdr);
	if (r < 0)
		return tgt_terr(t, r, "%s: reading the header: %m", path);
	if (!ours)
		return tgt_terr(
			t, -EEXIST,
			"%s exists but is not an iopulse probe file (no header): refusing to "
			"touch it; remove it or choose another directory",
			path);
	return 0;
}

/*
 * Opens an existing probe file if it is ours. Returns 0 with *out set (and
 * *relay when it must be laid out again), -ENOENT when there is none (no
 * message), or another -errno with t->error set; -EEXIST: a file that is not
 * ours (its header is read before anything else, the lock included, is done
 * to it), -EBUSY: ours, and held by another iopulse.
 */
static int open_existing(struct target *t, int dfd, int *out, int *lock, bool *relay)
{
	const char *path = t->file_path;
	struct stat lst, st;
	unsigned version;
	uint64_t size;
	int fd, r, lk = -1;

	*relay = false;
	r = stat_probe_file(t, dfd, &lst);
	if (r == 0 && lst.st_nlink == 2) {
		r = drop_tmp_link(t, dfd, &lst);
		if (r > 0) /* one name less: looked at afresh */
			r = stat_probe_file(t, dfd, &lst);
	}
	if (r == 0)
		r = may_be_ours(t, &lst, true);
	if (r < 0)
		return r;
	fd = tgt_open_same(dfd, tgt_probe_name(t), O_RDWR, &lst, &st);
	if (fd == -ENOENT)
		return -ENOENT;
	if (fd == -ESTALE || fd == -ELOOP)
		return tgt_terr(t, -EEXIST, "%s changed while we opened it: refusing to touch it",
				path);
	if (fd < 0)
		return tgt_terr(t, fd, "%s: cannot open for writing: %m%s", path,
				fd == -EROFS ? TARGET_EROFS_HINT : "");
	/* Again on what is open: a link or chown between lstat() and open(). */
	r = may_be_ours(t, &st, true);
	if (r == 0)
		r = tgt_prepare_fd(t, fd, path, false);
	if (r == 0)
		r = read_our_header(t, fd, &version, &size);
	if (r == 0)
		r = lock_probe_file(t, fd, path, &lk);
	if (r < 0) {
		close(fd);
		return r;
	}

	/* Ours: anything wrong with it is ours to fix. */
	if (version != PROBE_VERSION || size != t->cfg->size ||
	    (uint64_t)st.st_size != TARGET_HEADER_SIZE + t->cfg->size ||
	    (uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size)
		*relay = true;
	*out = fd;
	*lock = lk;
	return 0;
}

/*
 * What open_existing() refuses of the probe file at its name in @dfd, found
 * without writing, locking, or removing a name (iopulse check): 0 when there
 * is none, or one that open_existing() would take (a temporary second name of
 * ours included: drop_tmp_link() would remove it); -EEXIST (t->error set,
 * open_existing()'s words) when something that is not ours is there. Never
 * opens anything but a regular file, and that read-only (tgt_open_same(): no FIFO
 * to block on, no symlink followed). What depends on who runs it is left to
 * run: the owner, and a file this user may not read that is not its own (the
 * service's, checked by root or by a user other than the service's).
 */
static int check_existing(struct target *t, int dfd)
{
	char tmp[NAME_MAX + 1];
	struct stat lst, st;
	unsigned version;
	uint64_t size;
	int fd, r;

	r = stat_probe_file(t, dfd, &lst);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	/* drop_tmp_link() would take the temporary name away first. */
	st = lst;
	if (st.st_nlink == 2 && S_ISREG(st.st_mode) && find_tmp_link(dfd, &lst, tmp))
		st.st_nlink = 1;
	r = may_be_ours(t, &st, false);
	if (r < 0)
		return r;
	/* O_NOATIME, as tgt_open_file_fd(): a check leaves even the access time. */
	fd = tgt_open_same(dfd, tgt_probe_name(t), O_RDONLY | O_NOATIME, &lst, &st);
	if (fd == -EPERM)
		fd = tgt_open_same(dfd, tgt_probe_name(t), O_RDONLY, &lst, &st);
	if (fd == -ENOENT || ((fd == -EACCES || fd == -EPERM) && lst.st_uid != geteuid()))
		return 0;
	if (fd == -ESTALE || fd == -ELOOP)
		return tgt_terr(t, -EEXIST, "%s changed while we opened it: refusing to touch it",
				t->file_path);
	if (fd < 0)
		return tgt_terr(t, fd, "%s: cannot open: %m", t->file_path);
	r = read_our_header(t, fd, &version, &size);
	close(fd);
	return r;
}

static int link_anon(int fd, int dfd, const char *name)
{
	char proc[64];

	tgt_proc_fd_path(fd, proc, sizeof(proc));
	if (linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno != ENOENT)
		return -errno;
	/* No /proc: AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH, try it anyway. */
	if (linkat(fd, "", dfd, name, AT_EMPTY_PATH) == 0)
		return 0;
	return -errno;
}

/*
 * Creates a file of our own under a fresh random name (@prefix + 16 hex
 * digits), for filesystems without O_TMPFILE: O_EXCL, so never over a name that
 * exists, and random, so a name somebody else chose is never taken for ours.
 */
int tgt_create_tmp(int dfd, const char *prefix, char *tmp, size_t len)
{
	for (unsigned i = 0; i < 16; i++) {
		uint64_t x;
		int fd;

		if (getrandom(&x, sizeof(x), 0) != sizeof(x))
			return -EIO;
		snprintf(tmp, len, "%s%016" PRIx64, prefix, x);
		fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

/* Gives the file of ours at @tmp (open at @fd) the name @name, never
 * replacing anything there. */
int tgt_publish_tmp(int dfd, const char *tmp, int fd, const char *name)
{
	if (renameat2(dfd, tmp, dfd, name, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* Filesystem without RENAME_NOREPLACE: link() never replaces either. */
	if (linkat(dfd, tmp, dfd, name, 0) < 0)
		return -errno;
	tgt_unlink_ours(dfd, tmp, fd);
	return 0;
}

/*
 * Creates a fully laid-out probe file and only then gives it its name, so no
 * one ever sees a partial file and nothing is ever replaced: O_TMPFILE + linkat,
 * or a temporary name of our own + rename with RENAME_NOREPLACE. Both fail with
 * -EEXIST when a name appeared in the meantime. t->unnamed: the file never gets
 * a name (the temporary one is removed as soon as the file is locked).
 */
static int create_probe_file(struct target *t, int dfd, int *out, int *lock)
{
	const char *path = t->file_path;
	char tmp[64] = "";
	int fd, r, lk = -1;

	fd = openat(dfd, ".", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
	if (fd < 0 && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		fd = -errno;
	else if (fd < 0)
		fd = tgt_create_tmp(dfd, TMP_PREFIX, tmp, sizeof(tmp));
	if (fd < 0)
		return tgt_terr(t, fd, "%s: cannot create the probe file: %m%s", path,
				fd == -EROFS ? TARGET_EROFS_HINT : "");

	/* Locked before it has a name: nobody can take it between link and use,
	 * and a sweep by another iopulse leaves a temporary being laid out alone. */
	r = lock_probe_file(t, fd, path, &lk);
	if (r < 0)
		goto fail;
	if (t->unnamed && tmp[0]) { /* never to be left behind: gone now, or fail */
		if (!tgt_unlink_ours(dfd, tmp, fd)) {
			r = tgt_terr(t, -errno ? -errno : -ESTALE,
				     "%s: cannot remove the temporary name %s: %m", path, tmp);
			goto fail;
		}
		tmp[0] = '\0';
	}
	r = tgt_enable_direct(t, fd, path);
	if (r < 0)
		goto fail;
	r = tgt_get_align(t, fd, path, false);
	if (r < 0)
		goto fail;
	r = tgt_layout(t, fd, path);
	if (r < 0)
		goto fail;

	if (t->unnamed) /* never named: gone when we close it */
		r = 0;
	else if (tmp[0])
		r = tgt_publish_tmp(dfd, tmp, fd, tgt_probe_name(t));
	else
		r = link_anon(fd, dfd, tgt_probe_name(t));
	if (r < 0) {
		if (r == -EEXIST)
			tgt_terr(t, r, "%s appeared while we created it: not touching it", path);
		else
			tgt_terr(t, r, "%s: cannot name the probe file: %m", path);
		goto fail;
	}
	*out = fd;
	*lock = lk;
	return 0;
fail:
	if (tmp[0])
		tgt_unlink_ours(dfd, tmp, fd);
	lk = safe_close(lk);
	close(fd);
	return r;
}

/*
 * Whether the file @name in @dfd is a temporary that an iopulse killed in the
 * middle of writing it left behind: named as tgt_create_tmp() names them with
 * @prefix, a regular file of our user with no other name, that no live iopulse
 * holds locked, and ours by @ours (its header). Returns an open descriptor (the
 * caller removes the name while it still names this file, and closes it) or -1.
 */
static int stale_tmp(struct target *t, int dfd, const char *prefix, const char *name,
		     bool (*ours)(struct target *t, int fd, void *arg), void *arg)
{
	struct stat lst, st;
	int fd;

	if (!tgt_tmp_name(prefix, name) || fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(lst.st_mode) || lst.st_uid != geteuid() || lst.st_nlink != 1)
		return -1;
	fd = tgt_open_same(dfd, name, O_RDONLY, &lst, &st);
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0 && ours(t, fd, arg))
		return fd;
	close(fd);
	return -1;
}

/* Removes from @dfd the temporaries named with @prefix that stale_tmp() proves
 * ours; how many, or -1 when the directory could not be read. */
int tgt_sweep_tmps(struct target *t, int dfd, const char *prefix,
		   bool (*ours)(struct target *t, int fd, void *arg), void *arg)
{
	struct dirent *de;
	DIR *d = dir_stream(dfd);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		int tfd = stale_tmp(t, dfd, prefix, de->d_name, ours, arg);

		if (tfd < 0)
			continue;
		if (tgt_unlink_ours(dfd, de->d_name, tfd))
			n++;
		close(tfd);
	}
	closedir(d);
	return n;
}

/* A probe file's temporary is ours with the probe-file header (@hdr: room for it). */
static bool probe_tmp_ours(struct target *t, int fd, void *hdr)
{
	unsigned version;
	uint64_t size;
	bool ours;

	return tgt_header_read(t, fd, hdr, &ours, &version, &size) == 0 && ours;
}

/* Once per target: removes the probe-file temporaries stale_tmp() proves ours. */
static void sweep_stale_tmps(struct target *t, int dfd)
{
	void *hdr = malloc(TARGET_HEADER_SIZE);
	int n = hdr ? tgt_sweep_tmps(t, dfd, TMP_PREFIX, probe_tmp_ours, hdr) : -1;

	if (n >= 0) {
		t->swept = true;
		t->stale_removed += (unsigned)n;
	}
	free(hdr);
}

/*
 * -EXDEV (t->error set, ending in @tail) when the directory @st is not the one
 * pinned: after an unmount the path names the mount point beneath; a directory
 * removed and made again, or renamed away and replaced, is another inode.
 */
int tgt_dir_identity(struct target *t, const struct stat *st, const char *tail)
{
	const char *dir = t->cfg->path;

	if (!t->pinned || (st->st_dev == t->dev && st->st_ino == t->dir_ino))
		return 0;
	if (st->st_dev != t->dev)
		return tgt_moved(t, dir, st->st_dev, tail);
	tgt_terr(t, -EXDEV,
		 "%s is no longer the directory iopulse first opened (inode %llu, now %llu): "
		 "it was replaced; restart iopulse to measure the new one%s",
		 dir, (unsigned long long)t->dir_ino, (unsigned long long)st->st_ino, tail);
	t->code = "missing"; /* the one measured is gone; the filesystem is the same */
	return -EXDEV;
}

/*
 * The target directory, opened by the walk above. Its identity (device,
 * inode) is pinned the first time: afterwards a path that names another
 * directory (replaced, a symlink swapped in, unmounted) is refused, not followed.
 */
static int open_target_dir(struct target *t, int *out)
{
	const char *dir = t->cfg->path;
	struct statfs sfs;
	struct stat st;
	int dfd, r;

	r = tgt_walk_to_dir(t, dir, &dfd);
	if (r < 0)
		return r;
	if (fstat(dfd, &st) < 0 || fstatfs(dfd, &sfs) < 0) {
		r = tgt_terr(t, -errno, "%s: %m", dir);
		goto fail;
	}
	r = tgt_dir_identity(t, &st, "; not creating a probe file there");
	if (r == 0)
		r = tgt_check_memory_backed(t, dir, &sfs);
	if (r == 0 && !t->pinned)
		r = tgt_check_mounted(t, dfd);
	if (r < 0)
		goto fail;
	if (!t->pinned) {
		t->dev = st.st_dev;
		t->dir_ino = st.st_ino;
		t->fs_type = (long)sfs.f_type;
		t->pinned = true;
	}
	*out = dfd;
	return 0;
fail:
	close(dfd);
	return r;
}

void target_pin_like(struct target *t, const struct target *from)
{
	if (!from->pinned || t->pinned)
		return;
	t->dev = from->dev;
	t->dir_ino = from->dir_ino;
	t->fs_type = from->fs_type;
	t->pinned = true;
}

/*
 * A dir_only target is open: the directory @dfd (open_target_dir()'s, pinned)
 * is held as t->fd, so that target_check() and the lane see it as any open
 * target; no byte of it is for probes.
 */
static void dir_only_opened(struct target *t, int dfd)
{
	t->fd = dfd;
	t->lock_fd = -1;
	t->ino = t->dir_ino;
	t->writable = false;
	t->data_start = 0;
	t->data_end = 0;
	t->error[0] = '\0';
}

/* t->file_path of a directory target: its probe file, or the directory. */
static int probe_file_path(struct target *t)
{
	const char *dir = t->cfg->path;
	int r;

	if (t->dir_only)
		r = snprintf(t->file_path, sizeof(t->file_path), "%s", dir);
	else if (t->unnamed)
		r = snprintf(t->file_path, sizeof(t->file_path), "%s/(unnamed probe file)", dir);
	else
		r = snprintf(t->file_path, sizeof(t->file_path), "%s/%s", dir, tgt_probe_name(t));
	if (r < 0 || (size_t)r >= sizeof(t->file_path))
		return tgt_terr(t, -ENAMETOOLONG, "%s: path too long", dir);
	return 0;
}

int tgt_open_directory(struct target *t)
{
	struct stat st;
	bool relay = false;
	int dfd = -1, fd = -1, lk = -1, r;

	r = probe_file_path(t);
	if (r < 0)
		return r;
	r = open_target_dir(t, &dfd);
	if (r < 0)
		return r;
	if (!t->swept)
		sweep_stale_tmps(t, dfd);
	if (t->dir_only) { /* pinned and checked: held open as the target itself */
		dir_only_opened(t, dfd);
		return 0;
	}

	r = t->unnamed ? -ENOENT : open_existing(t, dfd, &fd, &lk, &relay);
	if (r == -ENOENT) {
		r = create_probe_file(t, dfd, &fd, &lk);
	} else if (r == 0 && relay) {
		/* Ours, locked, open: laid out again in place, never renamed over. */
		r = tgt_layout(t, fd, t->file_path);
		if (r < 0) {
			close(fd);
			close(lk);
		}
	}
	if (r < 0)
		goto out;

	if (fstat(fd, &st) < 0) {
		r = tgt_terr(t, -errno, "%s: fstat: %m", t->file_path);
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
	t->error[0] = '\0';
out:
	close(dfd);
	return r;
}

/* target_check_ro() of a directory target: the directory as tgt_open_directory()
 * opens it, then each probe file already there as open_existing() judges it. */
int tgt_check_ro_directory(struct target *t, const char *const *files, unsigned n_files)
{
	int dfd, r;

	snprintf(t->file_path, sizeof(t->file_path), "%s", t->cfg->path);
	r = open_target_dir(t, &dfd);
	if (r < 0)
		return r;
	for (unsigned i = 0; r == 0 && i < n_files; i++) {
		t->file_name = files[i];
		r = probe_file_path(t);
		if (r == 0)
			r = check_existing(t, dfd);
	}
	close(dfd);
	return r;
}
