/* SPDX-License-Identifier: MIT */
/*
 * walk — reaching a target by its path: the path opened one component at a
 * time, symlinks judged rather than followed (tgt_walk_to_dir(), tgt_walk_to_file()),
 * and what a path names told by those rules (target_path_info()); then what
 * every kind of target checks of what it reached: the same inode
 * (tgt_same_inode(), tgt_open_same()), the pinned filesystem (tgt_moved()).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daemon/targets/target_int.h"

/*
 * A target's path is opened one O_NOFOLLOW component at a time, so every symlink
 * on the way is judged, not followed blindly: only links owned by root or by us
 * (an administrator's, systemd's DynamicUser= one) are followed; one planted by
 * anybody else could lead a probe file where nobody configured it (the check of
 * fs.protected_symlinks, made everywhere). openat2(RESOLVE_NO_SYMLINKS) cannot
 * tell these apart and is not through every seccomp filter. Devices are not
 * walked: /dev/disk/by-id/ names are symlinks by design.
 */
#define WALK_MAX_LINKS 40 /* as the kernel's MAXSYMLINKS */

/* Why opening the component @comp of @path failed (-errno @r). */
static int walk_error(struct target *t, int r, const char *comp, const char *path)
{
	if (r == -ENOENT)
		return tgt_terr(t, -ENOENT, "%s: no such directory (no '%s')", path, comp);
	if (r == -ENOTDIR)
		return tgt_terr(t, -ENOTDIR, "%s: '%s' is not a directory", path, comp);
	return tgt_terr(t, r, "%s: '%s': %m", path, comp);
}

/*
 * -ENOENT: @comp is not in the directory open at @fd. When the target was
 * pinned on another filesystem than that directory's, what it was measured on
 * is no longer under the path: an unmount of /srv/data leaves /srv/data (on
 * the filesystem beneath) without .iopulse. Its code is then "unmounted", not
 * "missing" (the directory deleted, its parent still on the pinned one).
 */
static int walk_gone(struct target *t, int fd, const char *comp, const char *path)
{
	struct stat st;
	bool elsewhere = t->pinned && t->cfg->kind != CFG_TARGET_DEVICE && fstat(fd, &st) == 0 &&
			 st.st_dev != t->dev;

	walk_error(t, -ENOENT, comp, path);
	if (elsewhere)
		t->code = "unmounted";
	return -ENOENT;
}

/*
 * Follows the symlink open at @lfd (O_PATH|O_NOFOLLOW, named @comp in *fd), if
 * we trust it: @todo (the components still to walk, @rest on) becomes its
 * target followed by @rest, and *fd the directory to walk it from. The owner
 * and the target are read from the one object opened, never by name twice: a
 * link swapped in between cannot slip past the check. 0, or -errno with
 * t->error set (-ELOOP: a symlink we do not follow).
 */
static int walk_link(struct target *t, int *fd, int lfd, const char *comp, const char *path,
		     char *todo, size_t len, const char *rest, unsigned *links)
{
	char target[PATH_MAX], joined[2 * PATH_MAX + 2];
	struct stat st;
	ssize_t n;

	if (fstat(lfd, &st) < 0)
		return tgt_terr(t, -errno, "%s: '%s': %m", path, comp);
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return tgt_terr(
			t, -ELOOP,
			"%s: '%s' is a symlink owned by uid %u: iopulse follows only root's "
			"or its own; name the real path",
			path, comp, (unsigned)st.st_uid);
	if (++*links > WALK_MAX_LINKS)
		return tgt_terr(t, -ELOOP, "%s: too many symlinks", path);
	n = readlinkat(lfd, "", target, sizeof(target) - 1);
	if (n <= 0)
		return tgt_terr(t, n < 0 ? -errno : -ENOENT, "%s: '%s': %m", path, comp);
	target[n] = '\0';
	if ((size_t)snprintf(joined, sizeof(joined), "%s/%s", target, rest) >= len)
		return tgt_terr(t, -ENAMETOOLONG, "%s: path too long", path);
	if (target[0] == '/') {
		int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

		if (root < 0)
			return tgt_terr(t, -errno, "/: %m");
		close(*fd);
		*fd = root;
	}
	snprintf(todo, len, "%s", joined);
	return 0;
}

/*
 * @comp of *@fd, not a directory (-ENOTDIR or -ELOOP: @r): a symlink we trust
 * is followed (walk_link()), anything else is the walk's error. Apart from
 * walk_step() and never inlined (issue 15, memory): its buffers (16 KiB with
 * walk_link()'s) are then on the stack only while a symlink is followed, not on
 * every walk, which target_check() makes before each run (with GCC's stack clash
 * probes, each page of a frame is touched and stays resident).
 */
static __attribute__((noinline)) int walk_follow(struct target *t, int *fd, const char *comp,
						 const char *path, char *todo, size_t len,
						 const char **p, unsigned *links, int r)
{
	char rest[2 * PATH_MAX + 2];
	struct stat st;
	int lfd;

	lfd = openat(*fd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (lfd < 0)
		return walk_error(t, -errno, comp, path);
	if (fstat(lfd, &st) < 0 || !S_ISLNK(st.st_mode)) {
		close(lfd);
		return walk_error(t, r, comp, path);
	}
	snprintf(rest, sizeof(rest), "%s", *p);
	r = walk_link(t, fd, lfd, comp, path, todo, len, rest, links);
	close(lfd);
	if (r == 0)
		*p = todo;
	return r;
}

/*
 * Opens @comp in the directory @*fd: the directory it names replaces *fd; a
 * symlink we trust is followed by rewriting @todo (see walk_link()), and *@p
 * then starts over on it. 0 or -errno with t->error set.
 */
static int walk_step(struct target *t, int *fd, const char *comp, const char *path, char *todo,
		     size_t len, const char **p, unsigned *links)
{
	int nfd, r;

	nfd = openat(*fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (nfd >= 0) {
		close(*fd);
		*fd = nfd;
		return 0;
	}
	r = -errno;
	if (r == -ENOENT)
		return walk_gone(t, *fd, comp, path);
	if (r != -ENOTDIR && r != -ELOOP)
		return walk_error(t, r, comp, path);
	return walk_follow(t, fd, comp, path, todo, len, p, links, r);
}

/*
 * Opens (O_PATH) the directory @path names, walking it as above. 0 with *out
 * set, or -errno with t->error set (-ELOOP: a symlink we do not follow).
 */
int tgt_walk_to_dir(struct target *t, const char *path, int *out)
{
	char todo[2 * PATH_MAX + 2], comp[NAME_MAX + 1];
	const char *p = todo;
	unsigned links = 0;
	int fd, r = 0;

	if (!*path)
		return tgt_terr(t, -EINVAL, "empty path");
	if (strlen(path) >= PATH_MAX)
		return tgt_terr(t, -ENAMETOOLONG, "%s: path too long", path);
	snprintf(todo, sizeof(todo), "%s", path);
	fd = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return tgt_terr(t, -errno, "%s: %m", path);
	while (r == 0) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (!n)
			break;
		if (n > NAME_MAX) {
			r = tgt_terr(t, -ENAMETOOLONG, "%s: a component is too long", path);
			break;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n;
		if (strcmp(comp, ".") != 0)
			r = walk_step(t, &fd, comp, path, todo, sizeof(todo), &p, &links);
	}
	if (r < 0) {
		close(fd);
		return r;
	}
	*out = fd;
	return 0;
}

/*
 * The file target's directory, walked as above (O_PATH in *out), and its last
 * component in @leaf: that one is never followed, a file target names the file.
 */
int tgt_walk_to_file(struct target *t, const char *full, int *out, char *leaf, size_t len)
{
	const char *path = full;
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t n = strlen(path);

	if (!n || n >= sizeof(dir) || path[n - 1] == '/')
		return tgt_terr(t, -EINVAL, "%s: not a file name", path);
	if (!slash) {
		snprintf(dir, sizeof(dir), ".");
	} else {
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
		path = slash + 1;
	}
	if (strlen(path) >= len)
		return tgt_terr(t, -ENAMETOOLONG, "%s: name too long", full);
	snprintf(leaf, len, "%s", path);
	return tgt_walk_to_dir(t, dir, out);
}

/* A file target names the file: a symlink at the end is never followed. */
int tgt_leaf_is_link(struct target *t, const char *path)
{
	return tgt_terr(t, -ELOOP, "%s is a symlink: name the file itself", path);
}

/* The leaf of a path whose walk as a directory failed (@r, t->error set): a
 * regular file; a symlink that is not a directory's is refused as tgt_open_file()
 * refuses it. */
static int kind_of_leaf(struct target *t, const char *path, int r, struct target_path_info *info)
{
	char leaf[NAME_MAX + 1], keep[sizeof(t->error)];
	struct stat st;
	int pfd;

	if (r != -ENOTDIR && r != -ELOOP && r != -ENOENT)
		return r;
	snprintf(keep, sizeof(keep), "%s", t->error);
	if (tgt_walk_to_file(t, path, &pfd, leaf, sizeof(leaf)) < 0)
		return tgt_terr(t, r, "%s", keep);
	if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		close(pfd);
		if (errno == ENOENT)
			return tgt_terr(t, -ENOENT, "%s: no such file or directory", path);
		return tgt_terr(t, r, "%s", keep);
	}
	close(pfd);
	/* A link tgt_walk_to_dir() would not follow (another owner's) says why. */
	if (S_ISLNK(st.st_mode) && r == -ELOOP)
		return tgt_terr(t, r, "%s", keep);
	if (S_ISLNK(st.st_mode))
		return tgt_leaf_is_link(t, path);
	if (!S_ISREG(st.st_mode))
		return tgt_terr(t, -EINVAL, "%s is not a directory, regular file or block device",
				path);
	info->kind = CFG_TARGET_FILE;
	info->size = (uint64_t)st.st_size;
	return 0;
}

int target_path_info(const char *path, struct target_path_info *info, char *err, size_t len)
{
	struct target t = {.fd = -1};
	struct statfs sfs;
	struct stat st;
	int fd, r;

	*info = (struct target_path_info){0};
	/* Devices as device_stat() takes them: through any symlink. */
	if (stat(path, &st) == 0 && S_ISBLK(st.st_mode)) {
		info->kind = CFG_TARGET_DEVICE;
		info->size = tgt_device_sysfs_size(st.st_rdev);
		return 0;
	}
	r = tgt_walk_to_dir(&t, path, &fd);
	if (r == 0) {
		if (fstatfs(fd, &sfs) == 0)
			info->fs_type = (long)sfs.f_type;
		close(fd);
		info->kind = CFG_TARGET_DIRECTORY;
		return 0;
	}
	r = kind_of_leaf(&t, path, r, info);
	if (r == 0 && statfs(path, &sfs) == 0)
		info->fs_type = (long)sfs.f_type;
	if (r < 0)
		snprintf(err, len, "%s", t.error);
	return r;
}

/* Whether @a and @b describe the same file: device and inode. */
bool tgt_same_inode(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/*
 * Opens @name in @dfd with @flags (plus O_NOFOLLOW, O_NONBLOCK: a FIFO swapped
 * in cannot hang us), only while it is still the regular file @lst described.
 * Fills @st. The descriptor, or -errno (-ESTALE: something else is there now).
 */
int tgt_open_same(int dfd, const char *name, int flags, const struct stat *lst, struct stat *st)
{
	int fd = openat(dfd, name, flags | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, st) == 0 && S_ISREG(st->st_mode) && tgt_same_inode(st, lst))
		return fd;
	close(fd);
	return -ESTALE;
}

/* -EXDEV (t->error set): @path is on device @now, not the pinned one. */
int tgt_moved(struct target *t, const char *path, dev_t now, const char *tail)
{
	return tgt_terr(t, -EXDEV,
			"%s is now on a different filesystem (was dev %u:%u, now %u:%u): was it "
			"unmounted?%s",
			path, major(t->dev), minor(t->dev), major(now), minor(now), tail);
}
