/* SPDX-License-Identifier: MIT */
/*
 * mount — require_mount (see iopulse.yaml(5)): a directory target's
 * filesystem must be mounted, and the directory in it, before a probe file is
 * made there: the mount point named, the directory itself, or the one fstab
 * lists above it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/targets/target_int.h"
#include "lib/fd.h"

/*
 * @path made absolute and lexically normal ("//", "." and ".." resolved by
 * name, symlinks not looked at): for matching fstab's mount points by name.
 */
static int normal_path(const char *path, char *out, size_t len)
{
	char buf[2 * PATH_MAX], *save, *c;
	size_t n = 0;

	if (path[0] == '/') {
		snprintf(buf, sizeof(buf), "%s", path);
	} else {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		snprintf(buf, sizeof(buf), "%s/%s", cwd, path);
	}
	out[0] = '\0';
	for (c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (strcmp(c, ".") == 0)
			continue;
		if (strcmp(c, "..") == 0) {
			char *slash = strrchr(out, '/');

			n = slash ? (size_t)(slash - out) : 0;
			out[n] = '\0';
			continue;
		}
		if (n + 1 + strlen(c) + 1 > len)
			return -ENAMETOOLONG;
		n += (size_t)snprintf(out + n, len - n, "/%s", c);
	}
	if (n == 0)
		snprintf(out, len, "/");
	return 0;
}

/* Whether @dir (normal) is @path (normal) or one of its ancestors. */
bool tgt_path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/*
 * The longest mount point in fstab (IOPULSE_FSTAB, else /etc/fstab; as
 * systemd's SYSTEMD_FSTAB, so tests need not touch the real one) at or above
 * @path, other than "/", into @out; false when none (or no fstab).
 */
static bool fstab_mount_point(const char *path, char *out, size_t len, const char **fstab)
{
	const char *file = getenv("IOPULSE_FSTAB");
	struct mntent ent, *m;
	char buf[4096], mp[PATH_MAX];
	size_t best = 0;
	FILE *f;

	*fstab = file && *file ? file : "/etc/fstab";
	f = setmntent(*fstab, "re");
	if (!f)
		return false;
	while ((m = getmntent_r(f, &ent, buf, sizeof(buf)))) {
		if (m->mnt_dir[0] != '/' || normal_path(m->mnt_dir, mp, sizeof(mp)) < 0 ||
		    strcmp(mp, "/") == 0 || !tgt_path_within(path, mp) || strlen(mp) <= best)
			continue;
		best = strlen(mp);
		snprintf(out, len, "%s", mp);
	}
	endmntent(f);
	return best > 0;
}

/* Whether the directory open at @fd is the root of a mount: statx says so
 * since Linux 5.8; before, its parent is on another device (or is itself). */
static bool is_mount_root(int fd)
{
	struct statx stx;
	struct stat st, parent;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) == 0 &&
	    (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return stx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
	if (fstat(fd, &st) < 0 || fstatat(fd, "..", &parent, 0) < 0)
		return false;
	return st.st_dev != parent.st_dev || st.st_ino == parent.st_ino;
}

/* The path of the directory open at @fd, as the kernel names it (symlinks
 * resolved); else @path made absolute and normal. */
static int dir_real_path(int fd, const char *path, char *out, size_t len)
{
	char proc[64];
	ssize_t n;

	tgt_proc_fd_path(fd, proc, sizeof(proc));
	n = readlink(proc, out, len - 1);
	if (n > 0 && (size_t)n < len - 1 && out[0] == '/') {
		out[n] = '\0';
		return 0;
	}
	return normal_path(path, out, len);
}

/*
 * Whether the directory open at @dfd is the one open at @mfd or lies beneath
 * it: its ancestors, climbed by "..", which crosses mount points, include
 * @mfd's identity. By identity, not by name: a directory reached before a disk
 * was mounted over its parent is beneath the mount point, not in the mount.
 */
static bool dir_beneath(int dfd, int mfd)
{
	struct stat m, cur, up;
	bool found = false;
	int fd;

	if (fstat(mfd, &m) < 0 || fstat(dfd, &cur) < 0)
		return false;
	fd = openat(dfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (unsigned i = 0; fd >= 0 && i < PATH_MAX / 2; i++) {
		int nfd;

		if (tgt_same_inode(&cur, &m)) {
			found = true;
			break;
		}
		nfd = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = nfd;
		if (fd < 0 || fstat(fd, &up) < 0 || tgt_same_inode(&up, &cur))
			break; /* "/" (or the root of a detached mount) */
		cur = up;
	}
	fd = safe_close(fd);
	return found;
}

/*
 * require_mount (see iopulse.yaml(5)): the filesystem the directory @dfd should
 * be on is mounted, and the directory is in it, so a disk that failed to mount,
 * was lazily unmounted, or was mounted only after we reached the directory
 * beneath, never gets a probe file on the filesystem beneath.
 */
int tgt_check_mounted(struct target *t, int dfd)
{
	const struct cfg_target *c = t->cfg;
	char path[PATH_MAX], mp[PATH_MAX];
	const char *source = "require_mount";
	int mfd, r;
	bool ok;

	switch (c->require_mount) {
	case CFG_MOUNT_NO:
		return 0;
	case CFG_MOUNT_SELF:
		if (is_mount_root(dfd))
			return 0;
		return tgt_terr(
			t, -EXDEV,
			"%s is not a mount point, and 'require_mount: true' says it must be: "
			"not creating a probe file on the filesystem beneath",
			c->path);
	case CFG_MOUNT_PATH:
		snprintf(mp, sizeof(mp), "%s", c->mount_path);
		break;
	case CFG_MOUNT_AUTO:
		/* fstab's mount points are compared by name: with the directory's
		 * real path, and with its path as configured (an entry written
		 * through the same symlink). Resolving each entry instead could
		 * hang on any dead mount that fstab lists. */
		r = dir_real_path(dfd, c->path, path, sizeof(path));
		if (r < 0)
			return tgt_terr(t, r, "%s: %m", c->path);
		if (fstab_mount_point(path, mp, sizeof(mp), &source))
			break;
		if (normal_path(c->path, path, sizeof(path)) == 0 &&
		    fstab_mount_point(path, mp, sizeof(mp), &source))
			break;
		return 0;
	}
	mfd = open(mp, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ok = mfd >= 0 && is_mount_root(mfd) && dir_beneath(dfd, mfd);
	mfd = safe_close(mfd);
	if (ok)
		return 0;
	return tgt_terr(
		t, -EXDEV,
		"%s: %s (named in %s) is not mounted, or the directory is not in it: not "
		"creating a probe file on the filesystem beneath; set 'require_mount: false' "
		"to measure it anyway",
		c->path, mp, source);
}
