/* SPDX-License-Identifier: MIT */
/*
 * blockdev — what the kernel tells of the block device behind a target, from
 * sysfs and /proc, never from the device itself: its size, whether it or one of
 * its partitions is mounted, swap or held (a writable device target must be
 * none), and its kernel name and model, and the source of the mount it is on,
 * for target_describe().
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daemon/targets/hostload.h"
#include "daemon/targets/target_int.h"

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

/* A device's size from sysfs, without opening the device. */
uint64_t tgt_device_sysfs_size(dev_t rdev)
{
	char path[64], buf[32];
	int dfd;
	uint64_t sectors = 0;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(rdev), minor(rdev));
	dfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	if (read_small(dfd, "size", buf, sizeof(buf)) == 0)
		sectors = strtoull(buf, NULL, 10);
	close(dfd);
	return sectors * 512; /* sysfs counts 512-byte sectors whatever the device's */
}

#define MAX_PARTITIONS 256u /* DISK_MAX_PARTS: the most one disk can have */

/* The device and its partitions, as sysfs knows them. */
struct devset {
	unsigned n; /* [0] is the device itself */
	dev_t dev[1 + MAX_PARTITIONS];
	char name[1 + MAX_PARTITIONS][32]; /* sysfs name ("loop3p1"); [0] unused */
};

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
		return tgt_terr(t, -errno,
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
			r = tgt_terr(t, -E2BIG,
				     "%s: more than %u partitions: refusing to write to it", name,
				     MAX_PARTITIONS);
			break;
		}
		s->dev[s->n] = makedev(ma, mi);
		snprintf(s->name[s->n], sizeof(s->name[0]), "%.31s", de->d_name);
		s->n++;
	}
	if (!r && errno)
		r = tgt_terr(t, -errno, "%s: reading %s: %m: refusing to write to it", name, sys);
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

/*
 * One line of /proc/self/mountinfo (proc_pid_mountinfo(5)), split in place:
 * "id parent maj:min root mountpoint options [optional...] - fstype source
 * superoptions". The mount point and the source keep mountinfo's octal escapes
 * ("\040" a space) until unescape_octal(). False for a line that is not one.
 */
struct mountinfo_line {
	dev_t dev;	   /* maj:min: st_dev of what is on the mount */
	char *mount_point; /* escaped */
	char *source;	   /* escaped; NULL when the line has none */
};

static bool mountinfo_split(char *line, struct mountinfo_line *m)
{
	char *tok[64], *save;
	unsigned n = 0, dash = 0, ma, mi;

	for (char *p = strtok_r(line, " \n", &save); p && n < 64;
	     p = strtok_r(NULL, " \n", &save)) {
		if (n >= 6 && !dash && strcmp(p, "-") == 0)
			dash = n;
		tok[n++] = p;
	}
	if (n < 6 || sscanf(tok[2], "%u:%u", &ma, &mi) != 2)
		return false;
	m->dev = makedev(ma, mi);
	m->mount_point = tok[4];
	m->source = dash && dash + 2 < n ? tok[dash + 2] : NULL;
	return true;
}

/* -EBUSY when the device or one of its partitions is mounted in our namespace. */
static int check_mounts(struct target *t, const struct devset *s, const char *name)
{
	char *line = NULL, note[64];
	size_t cap = 0;
	int r = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return tgt_terr(
			t, -errno,
			"%s: cannot check whether it is mounted (/proc/self/mountinfo: %m): "
			"refusing to write to it",
			name);
	while (getline(&line, &cap, f) > 0) {
		struct mountinfo_line m;
		int i;

		if (!mountinfo_split(line, &m))
			continue;
		i = devset_find(s, m.dev);
		if (i < 0 && m.source) {
			/* btrfs and others report an anonymous device: go by the source. */
			unescape_octal(m.source);
			i = devset_find_path(s, m.source);
		}
		if (i >= 0) {
			unescape_octal(m.mount_point);
			r = tgt_terr(t, -EBUSY, "%s is mounted at %s%s: refusing to write to it",
				     name, m.mount_point, part_note(s, i, note, sizeof(note)));
			break;
		}
	}
	if (!r && ferror(f))
		r = tgt_terr(t, -EIO,
			     "%s: cannot read /proc/self/mountinfo: refusing to write to it", name);
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
			       tgt_terr(t, -errno,
					"%s: cannot check whether it is swap (/proc/swaps: %m): "
					"refusing to write to it",
					name);
	while (getline(&line, &cap, f) > 0) {
		int i;

		line[strcspn(line, " \t\n")] = '\0'; /* Filename Type Size Used Priority */
		unescape_octal(line);
		i = devset_find_path(s, line);
		if (i >= 0) {
			r = tgt_terr(t, -EBUSY, "%s is in use as swap%s: refusing to write to it",
				     name, part_note(s, i, note, sizeof(note)));
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
			return tgt_terr(
				t, -errno,
				"%s: cannot check its holders (%s: %m): refusing to write to it",
				name, dir);
		}
		while ((de = readdir(d)))
			if (de->d_name[0] != '.')
				break;
		if (de) {
			int r = tgt_terr(t, -EBUSY, "%s is held by %s%s: refusing to write to it",
					 name, de->d_name,
					 part_note(s, (int)i, note, sizeof(note)));

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
int tgt_device_in_use(struct target *t, dev_t rdev, const char *name)
{
	struct devset *s = malloc(sizeof(*s));
	int r;

	if (!s)
		return tgt_terr(t, -ENOMEM, "%s: out of memory", name);
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

/* ---- what a target is on ------------------------------------------------- */

/* The common filesystems by statfs f_type (linux/magic.h); others by number. */
static const struct {
	unsigned long magic;
	const char *name;
} fs_names[] = {
	/* ext2 and ext3 share the magic, and the ext4 driver mounts them today. */
	{EXT4_SUPER_MAGIC, "ext4"}, {XFS_SUPER_MAGIC, "xfs"},	 {BTRFS_SUPER_MAGIC, "btrfs"},
	{F2FS_SUPER_MAGIC, "f2fs"}, {TMPFS_MAGIC, "tmpfs"},	 {RAMFS_MAGIC, "ramfs"},
	{NFS_SUPER_MAGIC, "nfs"},   {FUSE_SUPER_MAGIC, "fuse"},	 {OVERLAYFS_SUPER_MAGIC, "overlay"},
	{CEPH_SUPER_MAGIC, "ceph"}, {CIFS_SUPER_MAGIC, "cifs"},	 {SMB2_SUPER_MAGIC, "smb2"},
	{V9FS_MAGIC, "9p"},	    {MSDOS_SUPER_MAGIC, "vfat"}, {EXFAT_SUPER_MAGIC, "exfat"},
	{0x2fc12fc1UL, "zfs"}, /* not in linux/magic.h: ZFS is out of tree */
};

static void fstype_name(long f_type, char *buf, size_t len)
{
	unsigned long m = (unsigned long)f_type & 0xffffffffUL; /* f_type may sign-extend */

	for (size_t i = 0; i < sizeof(fs_names) / sizeof(fs_names[0]); i++)
		if (fs_names[i].magic == m) {
			snprintf(buf, len, "%s", fs_names[i].name);
			return;
		}
	snprintf(buf, len, "0x%lx", m);
}

/* Leading and trailing white space off (SCSI pads its model strings). */
void target_label_text(char *s)
{
	size_t skip = strspn(s, " \t\n"), n;

	memmove(s, s + skip, strlen(s + skip) + 1);
	n = strlen(s);
	while (n && strchr(" \t\n", s[n - 1]))
		s[--n] = '\0';
	/* The kernel passes a device's bytes through as they are; a label value
	 * that is not UTF-8 would make Prometheus reject the whole scrape. */
	for (unsigned char *p = (unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '_';
}

/*
 * The kernel name of block device @dev (the link /sys/dev/block/M:m points to
 * ends in it) and its whole disk's model: a partition's sysfs directory sits in
 * its disk's, whose device/model holds it. Nothing when @dev has no block device
 * (tmpfs, nfs, fuse, btrfs: anonymous device numbers).
 */
static void describe_device(dev_t dev, struct target_desc *d)
{
	char sys[64], link[PATH_MAX];
	const char *base;
	ssize_t n;
	int dfd, disk;

	if (major(dev) == 0)
		return;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(dev), minor(dev));
	n = readlink(sys, link, sizeof(link) - 1);
	if (n <= 0)
		return;
	link[n] = '\0';
	base = strrchr(link, '/');
	base = base ? base + 1 : link;
	if (strlen(base) >= sizeof(d->device))
		return;
	memcpy(d->device, base, strlen(base) + 1);
	dfd = open(sys, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	disk = dfd;
	if (faccessat(dfd, "partition", F_OK, 0) == 0)
		disk = openat(dfd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (disk >= 0 && read_small(disk, "device/model", d->model, sizeof(d->model)) == 0)
		target_label_text(d->model);
	else
		d->model[0] = '\0';
	if (disk >= 0 && disk != dfd)
		close(disk);
	close(dfd);
}

/*
 * How well a mountinfo line @m names the mount a target is on: the right
 * device (its st_dev) counts most, then a mount point at or above its path
 * (@path, "" when not known), then the longer such mount point. 0: not at all.
 */
static size_t mount_score(const struct mountinfo_line *m, dev_t dev, const char *path)
{
	size_t score = 0;

	if (m->dev == dev)
		score += 2 * PATH_MAX;
	if (path[0] && tgt_path_within(path, m->mount_point))
		score += 1 + strlen(m->mount_point);
	return score;
}

/*
 * The source of the mount a directory or file target is on, from
 * $IOPULSE_PROCFS/self/mountinfo: "server:/export", "//nas/share", "/dev/sdb1",
 * whatever the filesystem was mounted from, escapes undone. Where several mounts
 * have its device (bind mounts; NFS exports of one server sharing a
 * superblock), the one whose mount point is the longest at or above its path
 * (the kernel's name of the open file: no lookup); where none has (a btrfs
 * subvolume's own device number), that mount point alone decides; the later
 * line wins a tie (the mount on top). Nothing when no line fits or the source
 * is too long for @d. Reads /proc, never the target's filesystem.
 */
static void describe_mount(const struct target *t, struct target_desc *d)
{
	char file[PATH_MAX], proc[PATH_MAX + 32], *line = NULL;
	size_t cap = 0, best = 0;
	ssize_t n = -1;
	FILE *f;

	if (t->fd >= 0) {
		tgt_proc_fd_path(t->fd, proc, sizeof(proc));
		n = readlink(proc, file, sizeof(file) - 1);
	}
	file[n > 0 && file[0] == '/' ? n : 0] = '\0';
	snprintf(proc, sizeof(proc), "%s/self/mountinfo", hostload_proc_root());
	f = fopen(proc, "re");
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		struct mountinfo_line m;
		size_t score;

		if (!mountinfo_split(line, &m) || !m.source)
			continue;
		unescape_octal(m.mount_point);
		score = mount_score(&m, t->dev, file);
		if (!score || score < best)
			continue;
		best = score;
		unescape_octal(m.source);
		if (strlen(m.source) < sizeof(d->source))
			memcpy(d->source, m.source, strlen(m.source) + 1);
		else
			d->source[0] = '\0';
	}
	free(line);
	fclose(f);
}

void target_describe(const struct target *t, struct target_desc *d)
{
	memset(d, 0, sizeof(*d));
	if (!t->pinned)
		return;
	if (t->cfg->kind != CFG_TARGET_DEVICE) {
		fstype_name(t->fs_type, d->fstype, sizeof(d->fstype));
		describe_mount(t, d);
	}
	describe_device(t->dev, d);
}
