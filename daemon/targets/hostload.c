/* SPDX-License-Identifier: MIT */
/*
 * hostload — the disks behind a target found through sysfs (a partition's
 * disk, device-mapper's slaves), their stat sampled over a window for the busy
 * check, and the steal field of /proc/stat (hostload.h). The roots of /sys and
 * /proc can be moved for tests (IOPULSE_SYSFS, IOPULSE_PROCFS).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daemon/targets/hostload.h"
#include "lib/fd.h"

struct hostload_roots hostload_roots;
uint64_t devbusy_window_ns = DEVBUSY_WINDOW_NS;

static const char *root(const char *set, const char *env, const char *def)
{
	const char *e;

	if (set)
		return set;
	e = getenv(env);
	return e && *e ? e : def;
}

const char *hostload_sys_root(void)
{
	return root(hostload_roots.sys, "IOPULSE_SYSFS", "/sys");
}

const char *hostload_proc_root(void)
{
	return root(hostload_roots.proc, "IOPULSE_PROCFS", "/proc");
}

/* ---------------------------------------------------------------- device busy */

/* Sysfs nests slaves only a few levels deep (dm on md on partitions). */
#define DEVBUSY_MAX_NESTING 8

void devbusy_init(struct devbusy *d)
{
	d->block_fd = -1;
	d->n = 0;
}

void devbusy_close(struct devbusy *d)
{
	for (unsigned i = 0; i < d->n; i++)
		close(d->stat_fd[i]);
	d->block_fd = safe_close(d->block_fd);
	devbusy_init(d);
}

/*
 * The whole disk a sysfs block link names: the link (/sys/dev/block/M:m, or an
 * entry of a slaves/ directory) points at the device's directory, which ends in
 * its name; a partition's directory sits in its disk's and holds a "partition"
 * file. 0 with the name in @disk, -errno otherwise.
 */
static int link_disk(int dfd, const char *entry, char disk[DEVBUSY_NAME_MAX])
{
	char link[PATH_MAX];
	char *base, *parent;
	bool part;
	ssize_t n = readlinkat(dfd, entry, link, sizeof(link) - 1);
	int fd;

	if (n < 0)
		return -errno;
	link[n] = '\0';
	fd = openat(dfd, entry, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	part = faccessat(fd, "partition", F_OK, 0) == 0;
	close(fd);
	base = strrchr(link, '/');
	if (!base)
		return -EINVAL;
	*base++ = '\0';
	if (part) { /* the directory above is the disk's */
		parent = strrchr(link, '/');
		base = parent ? parent + 1 : link;
	}
	if (!*base || strlen(base) >= DEVBUSY_NAME_MAX || strcmp(base, "..") == 0)
		return -EINVAL;
	memcpy(disk, base, strlen(base) + 1);
	return 0;
}

/* Opens disk @name's stat, once however many paths lead to it. 0 or -errno. */
static int add_leaf(struct devbusy *d, const char *name)
{
	char path[DEVBUSY_NAME_MAX + 8];
	int fd;

	for (unsigned i = 0; i < d->n; i++)
		if (strcmp(d->name[i], name) == 0)
			return 0;
	if (d->n == DEVBUSY_MAX_DEVS)
		return -E2BIG;
	snprintf(path, sizeof(path), "%s/stat", name);
	fd = openat(d->block_fd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d->stat_fd[d->n] = fd;
	snprintf(d->name[d->n], DEVBUSY_NAME_MAX, "%s", name);
	d->n++;
	return 0;
}

/* Disk @name, or the disks under it when it has slaves (dm, LVM, md). */
static int add_disk(struct devbusy *d, const char *name, unsigned depth)
{
	char path[DEVBUSY_NAME_MAX + 8], sub[DEVBUSY_NAME_MAX];
	struct dirent *e;
	bool any = false;
	int fd, r = 0;
	DIR *dir;

	if (depth > DEVBUSY_MAX_NESTING)
		return -ELOOP;
	snprintf(path, sizeof(path), "%s/slaves", name);
	fd = openat(d->block_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? add_leaf(d, name) : -errno;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -ENOMEM;
	}
	while (r == 0 && (e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		r = link_disk(dirfd(dir), e->d_name, sub);
		if (r == 0)
			r = add_disk(d, sub, depth + 1);
		any = true;
	}
	closedir(dir);
	return r == 0 && !any ? add_leaf(d, name) : r;
}

int devbusy_open(struct devbusy *d, const char *sys, dev_t dev)
{
	char entry[64], disk[DEVBUSY_NAME_MAX];
	int sfd, r;

	devbusy_close(d);
	sfd = open(sys, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd < 0)
		return errno == ENOENT ? 0 : -errno;
	snprintf(entry, sizeof(entry), "dev/block/%u:%u", major(dev), minor(dev));
	r = link_disk(sfd, entry, disk);
	if (r == 0) {
		d->block_fd = openat(sfd, "block", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = d->block_fd < 0 ? -errno : add_disk(d, disk, 0);
	}
	close(sfd);
	if (r < 0)
		devbusy_close(d);
	return r == -ENOENT ? 0 : r; /* no such block device: nothing to check */
}

int devbusy_parse_stat(const char *text, uint64_t *io_ticks_ms, uint64_t *queue_ms)
{
	/* Documentation/block/stat.rst: io_ticks and time_in_queue are the 10th
	 * and 11th fields (every kernel since 2.6 has at least 11). */
	uint64_t v[11];
	const char *p = text;
	char *end;

	for (int i = 0; i < 11; i++) {
		errno = 0;
		v[i] = strtoull(p, &end, 10);
		if (end == p || errno)
			return -EINVAL;
		p = end;
	}
	*io_ticks_ms = v[9];
	*queue_ms = v[10];
	return 0;
}

int devbusy_sample(const struct devbusy *d, uint64_t now_ns, struct devbusy_sample *s)
{
	char buf[512];

	s->at_ns = now_ns;
	for (unsigned i = 0; i < d->n; i++) {
		ssize_t n = pread(d->stat_fd[i], buf, sizeof(buf) - 1, 0);

		if (n < 0)
			return -errno;
		buf[n] = '\0';
		if (devbusy_parse_stat(buf, &s->io_ticks_ms[i], &s->queue_ms[i]) < 0)
			return -EINVAL;
	}
	return 0;
}

static uint64_t delta(uint64_t a, uint64_t b)
{
	return b > a ? b - a : 0;
}

void devbusy_load(unsigned n, const struct devbusy_sample *a, const struct devbusy_sample *b,
		  struct devbusy_load *out)
{
	double ms = delta(a->at_ns, b->at_ns) / 1e6;

	*out = (struct devbusy_load){0};
	if (ms <= 0)
		return;
	for (unsigned i = 0; i < n; i++) {
		double u = delta(a->io_ticks_ms[i], b->io_ticks_ms[i]) / ms;
		double q = delta(a->queue_ms[i], b->queue_ms[i]) / ms;

		if (u > 1) /* io_ticks moves in whole ticks: a full window may read over */
			u = 1;
		/* Named in the log: the disk with the highest utilisation (then queue). */
		if (u > out->utilization || (u == out->utilization && q > out->queue_depth))
			out->dev = i;
		if (u > out->utilization)
			out->utilization = u;
		if (q > out->queue_depth)
			out->queue_depth = q;
	}
}

bool devbusy_is_busy(const struct devbusy_load *l, double max_util, double max_queue, bool held)
{
	const double k = held ? 0.5 : 1;

	return (max_util < 1 && l->utilization > max_util * k) || l->queue_depth > max_queue * k;
}

uint64_t devbusy_retry_at(uint64_t now_ns, uint64_t due_ns, uint64_t every_ns, uint64_t *delay_ns)
{
	uint64_t cap = every_ns / DEVBUSY_RETRY_CAP_DIV;
	uint64_t d = *delay_ns ? *delay_ns * 2 : DEVBUSY_RETRY_FIRST_NS;

	if (d > cap)
		d = cap;
	/* A short 'every' has its next regular run soon: no retries at all. */
	if (cap < DEVBUSY_RETRY_FIRST_NS || now_ns + d > due_ns + every_ns / 2)
		return 0;
	*delay_ns = d;
	return now_ns + d;
}

/* ---------------------------------------------------------------- CPU steal */

int cpusteal_open(struct cpusteal *c, const char *proc)
{
	char path[PATH_MAX];
	long hz = sysconf(_SC_CLK_TCK), cpus = sysconf(_SC_NPROCESSORS_ONLN);

	snprintf(path, sizeof(path), "%s/stat", proc);
	c->tick_s = 1.0 / ((hz > 0 ? hz : 100) * (cpus > 0 ? cpus : 1));
	c->fd = open(path, O_RDONLY | O_CLOEXEC);
	return c->fd < 0 ? -errno : 0;
}

void cpusteal_close(struct cpusteal *c)
{
	c->fd = safe_close(c->fd);
}

double cpusteal_seconds(const struct cpusteal *c, uint64_t before, uint64_t after)
{
	return after > before ? (double)(after - before) * c->tick_s : 0;
}

int cpusteal_parse(const char *text, uint64_t *ticks)
{
	/* "cpu  user nice system idle iowait irq softirq steal guest guest_nice" */
	const char *p = text;
	uint64_t v = 0;
	char *end;

	if (strncmp(p, "cpu ", 4) != 0)
		return -EINVAL;
	p += 4;
	for (int i = 0; i < 8; i++) {
		errno = 0;
		v = strtoull(p, &end, 10);
		if (end == p || errno)
			return -EINVAL;
		p = end;
	}
	*ticks = v;
	return 0;
}

int cpusteal_read(const struct cpusteal *c, uint64_t *ticks)
{
	/* The first line is all we need: a short read keeps the copy small (the
	 * kernel still formats the whole file). */
	char buf[256];
	ssize_t n;

	if (c->fd < 0)
		return -EBADF;
	n = pread(c->fd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return cpusteal_parse(buf, ticks);
}
