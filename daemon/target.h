/* SPDX-License-Identifier: MIT */
/*
 * target — opening what probes measure, safely.
 *
 * A directory target gets one probe file of our own, created unnamed
 * (O_TMPFILE) or under a random temporary name with O_EXCL, laid out by writing
 * random data (fallocate's unwritten extents read back as zeros without touching
 * the device, and a compressing/thin backend answers zeros for free), and only
 * then linked to its name, never over an existing one. It is marked as ours by a
 * header block, reused across restarts after checking that it is ours, the right
 * size and has no holes, and otherwise laid out again in place, on the
 * descriptor we hold: nothing is ever renamed over anything. A name is unlinked
 * only while it still is the file we hold open. An open probe file is held with
 * an exclusive flock, so a second iopulse on the same directory finds the target
 * busy (-EBUSY) instead of measuring the first one and re-laying its file.
 * Temporaries that a killed iopulse left are removed on the first open, when
 * provably ours (our header and user, no flock held on them); nothing else is.
 *
 * The path of a directory or file target is walked one component at a time
 * with O_NOFOLLOW: a symlink on the way is followed only when root or our euid
 * owns it, any other is refused (-ELOOP), and a file target's own name is never
 * followed. A directory target's
 * directory (device, inode) is pinned when first opened; a path that later
 * names another directory takes the target down (-EXDEV), and nothing is
 * created there. Before that first open, cfg->require_mount is enforced: the
 * directory's filesystem must be mounted (-EXDEV with the reason otherwise).
 *
 * A layout checks free space first and after every chunk, and never leaves
 * less than keep_free; on any failure it frees what it wrote and sets
 * t->layout_failed, for the caller to back off before trying again.
 *
 * A file target is an existing regular file opened read-only: iopulse never
 * writes to a file it did not create.
 *
 * A device target is a block device (a symlink to one, such as
 * /dev/disk/by-id/..., is fine), opened read-only unless the caller wants to
 * write (t->want_write) and the configuration says allow_device_writes. A
 * writable device is refused while it or any of its partitions is mounted, used
 * as swap or held by another device (dm, md, ...), and is then opened with
 * O_EXCL: the kernel's own exclusive claim, which also keeps anyone from
 * mounting or claiming it while we hold it. The checks are repeated before
 * every run.
 *
 * The layout of a probe file can be throttled (cfg->layout_rate bytes per
 * second), reports its progress in t->layout_done / t->layout_total, and can be
 * abandoned through t->stop, leaving nothing behind.
 *
 * Direct I/O is the default; buffer and offset alignment come from statx
 * STATX_DIOALIGN (fallback: the logical block size). A filesystem that refuses
 * O_DIRECT is an error, never a silent fall back to the page cache.
 * tmpfs/ramfs measure RAM and are refused unless allow_memory_backed.
 *
 * The target's identity (the directory's device and inode; a file's device and
 * filesystem type; for a device target the device number it names) is pinned
 * at the first successful open and re-checked before every run: after an
 * unmount the target is reported down, and no probe file is created on the
 * filesystem underneath.
 *
 * Nothing here logs: errors come back as -errno with a message in t->error.
 */
#ifndef IOPULSE_TARGET_H
#define IOPULSE_TARGET_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "../config/config.h"

#define TARGET_PROBE_FILE  ".iopulse-probe" /* name inside a directory target */
#define TARGET_HEADER_SIZE 4096		    /* marker block at the start of a probe file */

struct target {
	const struct cfg_target *cfg;
	/* Set by the caller after target_init(), before target_open(): */
	bool want_write;	       /* device: some probe on it writes (cfg_probe_writes) */
	const _Atomic bool *stop;      /* layout: abandon when it becomes true; NULL = never */
	_Atomic uint64_t *inflight_ns; /* layout: start of the write in flight, 0 between
					* writes; NULL = not published */

	int fd;			  /* -1 while closed */
	int lock_fd;		  /* directory: holds the probe file's flock; -1 otherwise */
	bool writable;		  /* directory; device: want_write && allow_device_writes */
	uint64_t data_start;	  /* first byte probes may use (after the header) */
	uint64_t data_end;	  /* one past the last byte probes may use */
	uint32_t mem_align;	  /* buffer alignment for O_DIRECT */
	uint32_t offset_align;	  /* offset and length alignment for O_DIRECT */
	bool pinned;		  /* identity recorded */
	dev_t dev;		  /* pinned st_dev of the directory / file; st_rdev of a device */
	long fs_type;		  /* pinned statfs f_type */
	ino_t dir_ino;		  /* directory: pinned inode of the directory itself */
	bool swept;		  /* directory: stale temporaries of ours looked for */
	unsigned stale_removed;	  /* directory: how many of those were removed (the
				   * caller logs, then clears it) */
	ino_t ino;		  /* inode of the open file */
	char file_path[PATH_MAX]; /* probe file (directory), the file, the device node
				   * (symlinks resolved) */
	char error[512];	  /* last error, human-readable */
	bool layout_failed;	  /* the last target_open() failed laying out a probe file
				   * (no room, a write error): what it wrote is freed, and
				   * retrying at once would write it all again; back off */

	/*
	 * Probe-file layout progress, for a gauge and progress logs; written by the
	 * thread in target_open(), readable from any thread. layout_total: bytes the
	 * layout in progress writes, 0 when none is in progress (set after
	 * layout_done is reset to 0, so a reader who sees a total sees this layout's
	 * progress). layout_done: bytes written so far by the current or last layout.
	 */
	_Atomic uint64_t layout_done;
	_Atomic uint64_t layout_total;
};

/* Initialise (closed) for @cfg; @cfg must outlive @t. */
void target_init(struct target *t, const struct cfg_target *cfg);

/*
 * Open the target, laying out the probe file of a directory target if it is
 * missing or wrong. Pins the identity on first success; refuses (-EXDEV) when the
 * path now lives on another device or filesystem type than pinned (a device
 * target: names another device). Returns 0 or -errno with t->error set. May take
 * a while (layout): call from a lane only. Device targets:
 *   -ENOTBLK     the path is not a block device
 *   -EPERM       want_write without allow_device_writes (nothing opened)
 *   -EBUSY       want_write, and the device is mounted, swap, held, or claimed
 * Layout: -ECANCELED when *t->stop became true (nothing left behind).
 */
int target_open(struct target *t);

/* Before each run: 0 when the open file is still the one at the pinned path on
 * the pinned filesystem; otherwise closes it and returns -errno (t->error set).
 * Device targets: -EXDEV when the path now names another device, -ESTALE when
 * it is gone or shrank; a writable one -EBUSY when it is now mounted or held. */
int target_check(struct target *t);

/* Close the file descriptor (idempotent). */
void target_close(struct target *t);

/*
 * stat(2) @path, waiting at most @ms for it: on a hung filesystem the call is
 * left to finish on a helper thread. 0 or -errno; -ETIMEDOUT when it did not
 * return in time (or too many earlier ones still have not). For callers that must
 * not block on a disk: the scheduler, the main thread.
 */
int target_stat_within(const char *path, struct stat *st, unsigned ms);

#endif
