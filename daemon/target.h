/* SPDX-License-Identifier: MIT */
/*
 * target — opening what probes measure, safely.
 *
 * A directory target gets one probe file of our own, created with
 * O_NOFOLLOW|O_EXCL (never over an existing file), laid out once by writing
 * random data (fallocate's unwritten extents read back as zeros without touching
 * the device, and a compressing/thin backend answers zeros for free), marked as
 * ours by a header block, and reused across restarts after checking that it is
 * ours, the right size and has no holes. A file target is an existing regular
 * file opened read-only: iopulse never writes to a file it did not create.
 *
 * Direct I/O is the default; buffer and offset alignment come from statx
 * STATX_DIOALIGN (fallback: the logical block size). A filesystem that refuses
 * O_DIRECT is an error, never a silent fall back to the page cache.
 * tmpfs/ramfs measure RAM and are refused unless allow_memory_backed.
 *
 * The target's identity (device, filesystem type) is pinned at the first
 * successful open and re-checked before every run: after an unmount the target
 * is reported down, and no probe file is created on the filesystem underneath.
 *
 * Nothing here logs: errors come back as -errno with a message in t->error.
 */
#ifndef IOPULSE_TARGET_H
#define IOPULSE_TARGET_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../config/config.h"

#define TARGET_PROBE_FILE ".iopulse-probe" /* name inside a directory target */
#define TARGET_HEADER_SIZE 4096		    /* marker block at the start of a probe file */

struct target {
	const struct cfg_target *cfg;
	int fd;			 /* -1 while closed */
	bool writable;		 /* directory targets only */
	uint64_t data_start;	 /* first byte probes may use (after the header) */
	uint64_t data_end;	 /* one past the last byte probes may use */
	uint32_t mem_align;	 /* buffer alignment for O_DIRECT */
	uint32_t offset_align;	 /* offset and length alignment for O_DIRECT */
	bool pinned;		 /* identity recorded */
	dev_t dev;		 /* pinned st_dev of the directory / file */
	long fs_type;		 /* pinned statfs f_type */
	ino_t ino;		 /* inode of the open file */
	char file_path[PATH_MAX]; /* probe file (directory) or the file itself */
	char error[512];	 /* last error, human-readable */
};

/* Initialise (closed) for @cfg; @cfg must outlive @t. */
void target_init(struct target *t, const struct cfg_target *cfg);

/*
 * Open the target, laying out the probe file of a directory target if it is
 * missing or wrong. Pins the identity on first success; refuses (-EXDEV) when the
 * path now lives on another device or filesystem type than pinned. Returns 0 or
 * -errno with t->error set. May take a while (layout): call from a lane only.
 */
int target_open(struct target *t);

/* Before each run: 0 when the open file is still the one at the pinned path on
 * the pinned filesystem; otherwise closes it and returns -errno (t->error set). */
int target_check(struct target *t);

/* Close the file descriptor (idempotent). */
void target_close(struct target *t);

#endif
