/* SPDX-License-Identifier: MIT */
/*
 * hostload — what else is using the machine around a probe: whether the block
 * devices behind a target are busy with other work (sysfs block statistics),
 * and the CPU time the hypervisor stole (/proc/stat). Reads sysfs and procfs
 * only, never a target's filesystem, so nothing here can hang on a dead mount.
 * Nothing here logs: errors come back as -errno.
 *
 * Device busy: a partition counts as its whole disk (the other partitions'
 * load is on the same queue); device-mapper, LVM and md devices as the devices
 * under them (their slaves/, recursively), each a whole disk. Two samples of
 * each disk's stat over a short window give its utilisation (io_ticks: the
 * share of the window with at least one request in flight) and its average
 * queue depth (time_in_queue: request-milliseconds per millisecond). With
 * several disks the busiest counts: the target is busy if any disk is.
 */
#ifndef IOPULSE_HOSTLOAD_H
#define IOPULSE_HOSTLOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Where sysfs and procfs are read: NULL means $IOPULSE_SYSFS / $IOPULSE_PROCFS
 * when set (test hooks, see iopulse(8) ENVIRONMENT), else /sys and /proc. A unit
 * test sets the fields before any lane starts.
 */
struct hostload_roots {
	const char *sys;
	const char *proc;
};
extern struct hostload_roots hostload_roots;

const char *hostload_sys_root(void);
const char *hostload_proc_root(void);

/* ---- device busy ---- */

#define DEVBUSY_MAX_DEVS 16 /* whole disks under one target (an md of 16 is plenty) */
#define DEVBUSY_NAME_MAX 32 /* kernel names: "nvme0n1", "dm-12" */
/*
 * The sampling window. Long enough to span dozens of the kernel's ticks (io_ticks
 * counts in jiffies, 4ms at HZ=250, so utilisation is resolved to a few percent)
 * and the millisecond counters; short enough to describe the moment the burst
 * would start, and that pings falling due meanwhile wait only a quarter second.
 */
#define DEVBUSY_WINDOW_NS 250000000ULL
/* The window lanes sample over: DEVBUSY_WINDOW_NS; a unit test may lengthen it
 * before any lane starts. */
extern uint64_t devbusy_window_ns;
/*
 * The retries of a skipped burst: the first after DEVBUSY_RETRY_FIRST_NS, each
 * next one twice as late, at most 'every' / DEVBUSY_RETRY_CAP_DIV apart, and
 * none later than half of 'every' after the run that fell due (see
 * devbusy_retry_at()).
 */
#define DEVBUSY_RETRY_FIRST_NS 10000000000ULL /* 10s */
#define DEVBUSY_RETRY_CAP_DIV  4

struct devbusy {
	int block_fd;		       /* <sys>/block, pinned; -1 when closed */
	unsigned n;		       /* whole disks found; 0: no block device */
	int stat_fd[DEVBUSY_MAX_DEVS]; /* each one's <sys>/block/NAME/stat */
	char name[DEVBUSY_MAX_DEVS][DEVBUSY_NAME_MAX];
};

struct devbusy_sample {
	uint64_t at_ns; /* when it was read */
	uint64_t io_ticks_ms[DEVBUSY_MAX_DEVS];
	uint64_t queue_ms[DEVBUSY_MAX_DEVS]; /* time_in_queue */
};

/* The busiest disk between two samples. */
struct devbusy_load {
	double utilization; /* 0 to 1 */
	double queue_depth; /* requests in flight on average */
	unsigned dev;	    /* index of the disk these are from */
};

/* Closed, no disks. */
void devbusy_init(struct devbusy *d);

/*
 * Finds the whole disks behind block device number @dev under sysfs root @sys
 * and opens their stat files (closing what @d held). 0 with d->n disks, 0 of
 * them when sysfs knows no block device @dev (tmpfs, nfs, fuse, btrfs use
 * anonymous device numbers) or there is no sysfs at @sys; -errno when sysfs
 * could not be read (d->n is 0 then too).
 */
int devbusy_open(struct devbusy *d, const char *sys, dev_t dev);
void devbusy_close(struct devbusy *d);

/* Reads every disk's counters into @s, stamped @now_ns. 0 or -errno. */
int devbusy_sample(const struct devbusy *d, uint64_t now_ns, struct devbusy_sample *s);

/* Parses the text of a sysfs block stat file. 0 or -EINVAL. */
int devbusy_parse_stat(const char *text, uint64_t *io_ticks_ms, uint64_t *queue_ms);

/* The busiest of @n disks between samples @a and @b (counters that went back,
 * or no time between them, count as idle). */
void devbusy_load(unsigned n, const struct devbusy_sample *a, const struct devbusy_sample *b,
		  struct devbusy_load *out);

/*
 * Whether @l is over either threshold (@max_util a fraction, 1 or more: never
 * counts; @max_queue requests). @held: the burst was held back as busy, and is
 * released only below half of each threshold (hysteresis: a quarter second of a
 * busy disk's lull must not let a burst in on top of it).
 */
bool devbusy_is_busy(const struct devbusy_load *l, double max_util, double max_queue, bool held);

/*
 * A burst that fell due at @due_ns was skipped as busy at @now_ns: when to try
 * again, or 0 for not before its next regular run. @delay_ns holds the last
 * delay of this series (0 before the first retry) and is updated. Retries
 * double from DEVBUSY_RETRY_FIRST_NS, at most @every_ns / DEVBUSY_RETRY_CAP_DIV
 * apart, never later than @due_ns + @every_ns / 2: a burst pushed later than
 * that would sit close to the next one, and that one comes soon anyway.
 */
uint64_t devbusy_retry_at(uint64_t now_ns, uint64_t due_ns, uint64_t every_ns, uint64_t *delay_ns);

/* ---- CPU steal ---- */

struct cpusteal {
	int fd;	       /* <proc>/stat, open for the lane's life; -1 when none */
	double tick_s; /* seconds per tick and CPU: 1 / (USER_HZ x CPUs online) */
};

/* Opens <@proc>/stat. 0 or -errno (then c->fd is -1 and reads fail). */
int cpusteal_open(struct cpusteal *c, const char *proc);
void cpusteal_close(struct cpusteal *c);
/* Steal ticks summed over all CPUs so far (one pread). 0 or -errno. */
int cpusteal_read(const struct cpusteal *c, uint64_t *ticks);
/* Seconds stolen per CPU between two reads (0 when the counter went back). */
double cpusteal_seconds(const struct cpusteal *c, uint64_t before, uint64_t after);
/* Parses the aggregate "cpu" line, the first of /proc/stat: its 8th value. 0 or -EINVAL. */
int cpusteal_parse(const char *text, uint64_t *ticks);

#endif
