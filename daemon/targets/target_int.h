/* SPDX-License-Identifier: MIT */
/*
 * target_int — what the files of daemon/targets/ that implement target.h share;
 * not used elsewhere. Each function is described where it is defined.
 */
#ifndef IOPULSE_TARGET_INT_H
#define IOPULSE_TARGET_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>

#include "daemon/targets/target.h"

/* A probe file's header (probefile.c): its first line, and the version it says. */
#define PROBE_MAGIC   "IOPULSE-PROBE-FILE\n"
#define PROBE_VERSION 1u

#define FILE_TARGET_MIN_SIZE 4096u /* the fewest bytes a file or device target may have */

/* target.c */
__attribute__((format(printf, 3, 4))) int tgt_terr(struct target *t, int r, const char *fmt, ...);
void tgt_proc_fd_path(int fd, char *buf, size_t len);
int tgt_set_flag(int fd, int flag, bool on);
int tgt_enable_direct(struct target *t, int fd, const char *path);
int tgt_get_align(struct target *t, int fd, const char *path, bool blk);
int tgt_check_memory_backed(struct target *t, const char *path, const struct statfs *sfs);
int tgt_prepare_fd(struct target *t, int fd, const char *name, bool device);
void tgt_whole_target_opened(struct target *t, int fd, ino_t ino, bool writable, uint64_t size,
			     dev_t dev, long fs_type);

/* walk.c */
int tgt_walk_to_dir(struct target *t, const char *path, int *out);
int tgt_walk_to_file(struct target *t, const char *full, int *out, char *leaf, size_t len);
int tgt_leaf_is_link(struct target *t, const char *path);
bool tgt_same_inode(const struct stat *a, const struct stat *b);
int tgt_open_same(int dfd, const char *name, int flags, const struct stat *lst, struct stat *st);
int tgt_moved(struct target *t, const char *path, dev_t now, const char *tail);

/* mount.c */
int tgt_check_mounted(struct target *t, int dfd);
bool tgt_path_within(const char *path, const char *dir);

/* probefile.c */
int tgt_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
int tgt_header_read(struct target *t, int fd, void *hdr, bool *ours, unsigned *version,
		    uint64_t *size);
int tgt_layout(struct target *t, int fd, const char *path);

/* dir.c */
const char *tgt_probe_name(const struct target *t);
bool tgt_name_is(int dfd, const char *name, int fd);
bool tgt_unlink_ours(int dfd, const char *name, int fd);
bool tgt_tmp_name(const char *prefix, const char *name);
int tgt_create_tmp(int dfd, const char *prefix, char *tmp, size_t len);
int tgt_publish_tmp(int dfd, const char *tmp, int fd, const char *name);
int tgt_sweep_tmps(struct target *t, int dfd, const char *prefix,
		   bool (*ours)(struct target *t, int fd, void *arg), void *arg);
int tgt_dir_identity(struct target *t, const struct stat *st, const char *tail);
int tgt_open_directory(struct target *t);
int tgt_check_ro_directory(struct target *t, const char *const *files, unsigned n_files);

/* file.c */
int tgt_open_file_fd(struct target *t, struct stat *st, struct statfs *sfs);
int tgt_open_file(struct target *t);

/* device.c */
int tgt_open_device(struct target *t);
int tgt_check_device(struct target *t);
int tgt_check_ro_device(struct target *t);

/* blockdev.c */
uint64_t tgt_device_sysfs_size(dev_t rdev);
int tgt_device_in_use(struct target *t, dev_t rdev, const char *name);

#endif
