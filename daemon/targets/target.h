/* SPDX-License-Identifier: MIT */
/*
 * target — opening what probes measure, safely: a directory (with a probe file
 * of our own, laid out with random data, marked, locked, never renamed over
 * anything), an existing regular file (read-only), or a block device (read-only
 * unless allow_device_writes, then only unmounted, unused, unheld and O_EXCL).
 * Paths are walked with O_NOFOLLOW and the target's identity is pinned at the
 * first open and re-checked before every run. Direct I/O or a clear error, never
 * the page cache by accident. Nothing here logs: errors come back as -errno with
 * a message in t->error. The design and its reasons: docs/targets.md.
 */
#ifndef IOPULSE_TARGET_H
#define IOPULSE_TARGET_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "config/config.h"

#define TARGET_PROBE_FILE  ".iopulse-probe" /* name inside a directory target */
#define TARGET_HEADER_SIZE 4096		    /* marker block at the start of a probe file */

/*
 * Appended to a "Read-only file system" that stops a probe file: its usual cause
 * is iopulse.service's sandbox (ProtectSystem=strict), which leaves only the
 * state directory writable. Said conditionally: the same errno comes from a
 * file system mounted read-only, where no drop-in helps.
 */
#define TARGET_EROFS_HINT                                                                          \
	" (when iopulse runs as a systemd service: the unit sees every directory but its "         \
	"state directory read-only; list this one in ReadWritePaths= of a drop-in, as "            \
	"iopulse-directory.conf.example shows)"

struct target {
	const struct cfg_target *cfg;
	/* Set by the caller after target_init(), before target_open(): */
	bool want_write;	       /* device: some probe on it writes (cfg_probe_writes) */
	const _Atomic bool *stop;      /* layout: abandon when it becomes true; NULL = never */
	_Atomic uint64_t *inflight_ns; /* layout: start of the write in flight, 0 between
					* writes; NULL = not published */
	/* directory: the probe file's name; NULL = TARGET_PROBE_FILE (the daemon's) */
	const char *file_name;
	/* directory: a probe file for this process only, never given a name (O_TMPFILE,
	 * or a temporary name removed at once): nothing is left behind (iopulse probe) */
	bool unnamed;
	/* directory: no probe file at all, for a lane whose probes each keep a file of
	 * their own (verify): the directory alone is walked, pinned, checked and held
	 * open at fd; nothing is created, laid out or opened in it (a probe file an
	 * older run left there is left alone) */
	bool dir_only;
	/* layout: called after each chunk written (done of total bytes), on the
	 * thread in target_open(); NULL = none */
	void (*layout_progress)(const struct target *t, uint64_t done, uint64_t total);

	int fd;			  /* -1 while closed; dir_only: the directory */
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
	/* The last error's bounded code where its errno alone would say another
	 * (target_reason_code()); NULL: as the errno says. Reset with error. */
	const char *code;
	bool layout_failed;  /* the last target_open() failed laying out a probe file
			      * (no room, a write error): what it wrote is freed, and
			      * retrying at once would write it all again; back off */
	uint64_t last_io_ns; /* eng_now_ns() at the end of the last probe run on it
			      * (probe_run()), 0 before any: a ping's 'warmup_after' */
	bool idle_tracked;   /* some probe on it has 'warmup_after' (probe_init()):
			      * only then is last_io_ns kept, at a clock read a run */
	/* directory: the temporary name of ours the probe file also had (an iopulse
	 * killed between link() and unlink() naming it), removed by the last open;
	 * "" none (the caller logs, then clears it) */
	char link_removed[NAME_MAX + 1];

	/*
	 * Probe-file layout progress, for a gauge and progress logs; written by the
	 * thread in target_open(), readable from any thread. layout_total: bytes the
	 * layout in progress writes, 0 when none is in progress: set after
	 * layout_done is reset to 0, so a reader who sees a total sees this layout's
	 * progress, and back to 0 only when the open that laid out is over
	 * (layout_over()). layout_done: bytes written so far by the current or last
	 * layout.
	 */
	_Atomic uint64_t layout_done;
	_Atomic uint64_t layout_total;
	/* CLOCK_MONOTONIC when the last layout ended (0: none yet), stored before
	 * layout_total goes back to 0: a lane tells what fell due during it. */
	_Atomic uint64_t layout_ended_ns;
};

/* The layout in progress, from any thread: its share done, 0 to 1 (1 when none
 * is), and, where not NULL, its bytes done (capped at the total) and total (0:
 * none in progress). */
double target_layout_progress(const struct target *t, uint64_t *done, uint64_t *total);

/* Initialise (closed) for @cfg; @cfg must outlive @t. */
void target_init(struct target *t, const struct cfg_target *cfg);

/*
 * Open the target, laying out the probe file of a directory target if it is
 * missing or wrong (dir_only: the directory alone). A probe file with a second
 * name that is a temporary one of ours (an iopulse killed while naming it)
 * loses that name (t->link_removed). Pins the identity on first success;
 * refuses (-EXDEV) when the path now lives on another device or filesystem type
 * than pinned (a device target: names another device). Returns 0 or -errno with
 * t->error set. May take a while (layout): call from a lane only. Device targets:
 *   -ENOTBLK     the path is not a block device
 *   -EPERM       want_write without allow_device_writes (nothing opened)
 *   -EBUSY       want_write, and the device is mounted, swap, held, or claimed
 * Layout: -ECANCELED when *t->stop became true (nothing left behind).
 */
int target_open(struct target *t);

/*
 * Directory targets: makes @t, before its first open, take the identity @from
 * pinned (device, directory inode, filesystem type) as its own. A second file
 * of ours in the same directory (a verify probe's) then lives in the directory
 * iopulse first opened for the target: one put in its place since is refused
 * (-EXDEV) for both files, never followed. Nothing when @from is not pinned.
 */
void target_pin_like(struct target *t, const struct target *from);

/* Before each run: 0 when the open file is still the one at the pinned path on
 * the pinned filesystem; otherwise closes it and returns -errno (t->error set).
 * Device targets: -EXDEV when the path now names another device, -ESTALE when
 * it is gone or shrank; a writable one -EBUSY when it is now mounted or held. */
int target_check(struct target *t);

/* What a target is on, for iopulse_target_info; "" where not known. */
struct target_desc {
	char fstype[24]; /* directory, file: "ext4", "xfs", ... or the statfs magic "0x..." */
	char device[64]; /* kernel name of the block device behind it: "sda2", "loop3" */
	char model[128]; /* the whole disk's model (sysfs), trimmed */
	/* directory, file: what the mount it is on was mounted from
	 * (/proc/self/mountinfo): "server:/export", "/dev/sdb1"; raw bytes */
	char source[256];
};

/* Describes @t from what its first open pinned (its device number and filesystem
 * type), sysfs and /proc/self/mountinfo; all "" before that. Reads /sys and /proc
 * only, never the target's filesystem: call it from the lane. */
void target_describe(const struct target *t, struct target_desc *d);

/* Makes sysfs text fit for a label value, in place: surrounding whitespace
 * trimmed, every byte outside printable ASCII replaced by '_'. */
void target_label_text(char *s);

/* What a path names, judged by the rules target_open() applies. */
struct target_path_info {
	enum cfg_target_kind kind;
	uint64_t size; /* file, device: bytes */
	long fs_type;  /* directory, file: statfs f_type; device: 0 */
};

/*
 * What kind of target @path would be: a block device (through any symlink, as
 * device targets are named: /dev/disk/by-id/), a directory (walked one component
 * at a time, following only root's and our own symlinks), else a file (its
 * directory walked so, its last component never followed). 0 with *@info, or
 * -errno with the reason in @err, target_open()'s own words (-ELOOP a symlink
 * not followed, -ENOENT a missing component, -EINVAL none of the three kinds).
 */
int target_path_info(const char *path, struct target_path_info *info, char *err, size_t len);

/*
 * What target_open() refuses of @t (target_init()'d, want_write set as for
 * target_open()), found without creating, writing, locking or removing
 * anything, for `iopulse check`: the same code and words. A directory: its walk
 * (a missing component, not a directory, a symlink it does not follow),
 * tmpfs/ramfs without allow_memory_backed, require_mount; then each of the
 * @n_files probe-file names in @files that exists there and is not a file of
 * ours (a symlink, a FIFO or anything but a regular file, other hard links, no
 * header), found with lstat and a read-only O_NOFOLLOW|O_NONBLOCK open. Its
 * owner is not judged: whose it must be depends on who runs the daemon. A file:
 * everything target_open() checks, through a read-only open. A device: its
 * checks before the open (a block device; with want_write, writes allowed and
 * the device unused), the access it would open with, its size from sysfs; the
 * device itself is never opened. 0, or -errno with t->error set (-ENOENT:
 * missing, -ENOTDIR: a component is not a directory); @t is left closed.
 */
int target_check_ro(struct target *t, const char *const *files, unsigned n_files);

/*
 * Why target_open() or target_check() of @t failed with @r (-errno), as a
 * bounded code for a label (iopulse(8) lists them): "missing" (the path, or
 * what was pinned at it, is gone), "unmounted" (the path is now on another
 * filesystem, or require_mount finds it not mounted), "read_only", "full" (no
 * room, or keep_free), "permission", "io_error", "not_ours" (something at the
 * path iopulse does not touch or follow), "busy" (another iopulse, a mounted
 * or held device) or "other". From @r and t->code alone: no system call.
 */
const char *target_reason_code(const struct target *t, int r);

/* Close the file descriptor (idempotent). */
void target_close(struct target *t);

/*
 * stat(2) @path, waiting at most @ms for it: on a hung filesystem the call is
 * left to finish on a helper thread. 0 or -errno; -ETIMEDOUT when it did not
 * return in time (or too many earlier ones still have not). For callers that must
 * not block on a disk: the scheduler, the main thread.
 */
int target_stat_within(const char *path, struct stat *st, unsigned ms);

/* What a path names now, as a target of its kind is pinned (target_identify_within()). */
struct target_identity {
	const char *path;	   /* in: the target's */
	enum cfg_target_kind kind; /* in */
	int r;			   /* out: 0 or -errno; -ETIMEDOUT: no answer in time */
	dev_t dev;		   /* out: st_dev of a directory or file, st_rdev of a device */
	long fs_type;		   /* out: statfs f_type of a directory or file; 0 for a device */
};

/* The identity of each of @n paths, through symbolic links (stat(2), statfs(2)),
 * looked at on helper threads all at once and waited for until @ms from now: a
 * hung filesystem holds up no other. A device's path must name a block device
 * (-ENOTBLK). */
void target_identify_within(struct target_identity *ids, unsigned n, unsigned ms);

#endif
