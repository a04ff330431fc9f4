/* SPDX-License-Identifier: MIT */
/*
 * statefile — one file of the daemon's own in a directory it may share (the
 * state directory, often a target's too), read and replaced under the probe
 * file's rules (docs/targets.md): the directory is walked one component at a
 * time (walk.c) and pinned at its first walk; the file is reached by
 * descriptor from it, never through a symbolic link, and is ours only when it
 * is a regular file of our user with one name that starts with our magic.
 * A new version is written under a random O_EXCL temporary name (dir.c),
 * locked while it has that name, synced, and only then renamed: over our own
 * file, atomically (RENAME_EXCHANGE, then the old file's name removed while
 * it is still that file), or onto a free name (RENAME_NOREPLACE). A file that
 * is not ours is never written, renamed over or removed. What the bytes mean
 * is the caller's (daemon/status/status_persist.h). Nothing here logs or
 * waits for anything but the filesystem: call it where a hung directory may
 * block (lib/within.h).
 */
#ifndef IOPULSE_STATEFILE_H
#define IOPULSE_STATEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The directory and what its first walk pinned. */
struct target_state_dir {
	const char *path;	/* as configured; the caller's */
	const char *name;	/* the file's name in it */
	const char *tmp_prefix; /* its temporary names: this and 16 hex digits */
	const void *magic;	/* what a file of ours starts with */
	size_t magic_len;
	bool pinned; /* dev and ino are the directory's */
	dev_t dev;
	ino_t ino;
	bool swept;		/* temporaries of a writer killed mid-way looked for */
	unsigned stale_removed; /* how many of those were removed (the caller logs, clears) */
	char error[512];	/* the last error, human-readable */
};

/*
 * Reads the file: 0 with its bytes in *@data (free() it) and *@len; -ENOENT
 * when there is none (no message); otherwise -errno with d->error set:
 * -EEXIST something that cannot be ours is there (a symbolic link, not a
 * regular file, another user's, another name linked to it), -EFBIG over @max
 * bytes, -EXDEV the path is not the directory first pinned, -ENOENT/-ENOTDIR a
 * component of the directory is missing (with a message).
 */
int target_state_read(struct target_state_dir *d, size_t max, void **data, size_t *len);

/*
 * Replaces the file with the @len bytes @data (or creates it), synced to disk
 * with its directory. 0, or -errno with d->error set: -EEXIST a file that is
 * not ours is at the name (left as it was), or one appeared or changed while
 * it was being replaced; -EXDEV the path is not the directory first pinned;
 * what the filesystem said otherwise (-EROFS, -ENOSPC, -EACCES...). The first
 * call removes the temporaries of a writer killed mid-way that are provably
 * ours (d->stale_removed).
 */
int target_state_write(struct target_state_dir *d, const void *data, size_t len);

#endif
