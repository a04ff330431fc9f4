/* SPDX-License-Identifier: MIT */
/*
 * target: probe-file layout (throttle, progress, stop), reuse, re-lay, refusals,
 * file targets, identity checks and the tmpfs guard; device targets are in
 * test_device.c. Everything happens inside a mkdtemp directory of our own under
 * $TEST_TMPDIR (and, for tmpfs, under /dev/shm), removed at the end.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "daemon/targets/hostload.h"
#include "daemon/targets/target.h"

#define MIB (1ULL << 20)

static void join(char *out, size_t len, const char *dir, const char *name)
{
	assert_true((size_t)snprintf(out, len, "%s/%s", dir, name) < len);
}

static char *slurp(const char *path, size_t *len)
{
	char *buf = tu_read_all(path, len);

	assert_non_null(buf);
	return buf;
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static unsigned count_entries(const char *dir)
{
	unsigned n = 0;
	struct dirent *de;
	DIR *d = opendir(dir);

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static struct cfg_target dir_cfg(const char *path, uint64_t size)
{
	return (struct cfg_target){
		.name = "t",
		.kind = CFG_TARGET_DIRECTORY,
		.path = (char *)path,
		.size = size,
		.direct = true,
	};
}

static bool pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static void assert_alignment(const struct target *t)
{
	assert_true(pow2(t->mem_align) && t->mem_align <= 4096);
	assert_true(pow2(t->offset_align) && t->offset_align <= 4096);
}

/* @a and @b, stat(2) before and after, are the same file, untouched. */
static void assert_untouched(const struct stat *a, const struct stat *b)
{
	assert_int_equal(a->st_ino, b->st_ino);
	assert_int_equal(a->st_mtim.tv_sec, b->st_mtim.tv_sec);
	assert_int_equal(a->st_mtim.tv_nsec, b->st_mtim.tv_nsec);
}

/* ---------------------------------------------------------------- directory */

static double progress_seen; /* the most target_layout_progress() said during a layout */

static void record_progress(const struct target *t, uint64_t done, uint64_t total)
{
	double r = target_layout_progress(t, NULL, NULL);

	(void)done;
	(void)total;
	if (r > progress_seen)
		progress_seen = r;
}

/* The layout's progress stays below 1 while its last bytes are written and
 * synced and the file named: only the open's end makes it 1, stamped. A scrape
 * in between would see the target neither laid out nor up. */
static void test_layout_progress_until_open(void **state)
{
	char dir[PATH_MAX];
	struct cfg_target cfg;
	struct target t;

	(void)state;
	tu_new_dir(dir, sizeof(dir));
	cfg = dir_cfg(dir, 2 * MIB);
	target_init(&t, &cfg);
	t.layout_progress = record_progress;
	progress_seen = 0;
	assert_int_equal(target_open(&t), 0);
	assert_true(progress_seen > 0.9 && progress_seen < 1);
	assert_true(target_layout_progress(&t, NULL, NULL) == 1);
	assert_true(atomic_load(&t.layout_ended_ns) != 0);
	target_close(&t);
}

static void test_layout(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	struct cfg_target cfg;
	struct target t;
	struct stat st;
	unsigned hist[256] = {0}, zero_blocks = 0;
	size_t len;
	char *data;

	(void)state;
	tu_new_dir(dir, sizeof(dir));
	cfg = dir_cfg(dir, 2 * MIB);
	target_init(&t, &cfg);
	assert_int_equal(t.fd, -1);
	assert_int_equal(target_open(&t), 0);
	assert_true(t.fd >= 0);
	assert_true(t.writable);
	assert_true(t.pinned);
	assert_int_equal(t.data_start, TARGET_HEADER_SIZE);
	assert_int_equal(t.data_end, TARGET_HEADER_SIZE + 2 * MIB);
	assert_alignment(&t);
	assert_true(fcntl(t.fd, F_GETFL) & O_DIRECT);
	assert_true(fcntl(t.fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(fcntl(t.fd, F_GETFL) & O_ACCMODE, O_RDWR);
	/* Progress: done, and no layout in progress. */
	assert_int_equal(atomic_load(&t.layout_done), TARGET_HEADER_SIZE + 2 * MIB);
	assert_int_equal(atomic_load(&t.layout_total), 0);

	join(path, sizeof(path), dir, TARGET_PROBE_FILE);
	assert_string_equal(t.file_path, path);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_ino, t.ino);
	assert_int_equal(st.st_size, TARGET_HEADER_SIZE + 2 * MIB);
	assert_true((uint64_t)st.st_blocks * 512 >= (uint64_t)st.st_size); /* no holes */
	/* Only the probe file: no temporary left behind. */
	assert_int_equal(count_entries(dir), 1);

	data = slurp(path, &len);
	assert_memory_equal(data, "IOPULSE-PROBE-FILE\n", 19);
	assert_non_null(strstr(data, "size: 2097152\n"));
	for (size_t off = TARGET_HEADER_SIZE; off < len; off += 4096) {
		bool all_zero = true;

		for (size_t i = off; i < off + 4096; i++) {
			hist[(unsigned char)data[i]]++;
			all_zero &= data[i] == 0;
		}
		zero_blocks += all_zero;
	}
	assert_int_equal(zero_blocks, 0);
	/* Random: every byte value about equally often (expected 8192 each). */
	for (int i = 0; i < 256; i++)
		assert_true(hist[i] > 7000 && hist[i] < 9400);
	free(data);

	target_close(&t);
	assert_int_equal(t.fd, -1);
	target_close(&t); /* idempotent */
}

static void test_reuse_keeps_inode(void **state)
{
	char path[PATH_MAX + 32];
	struct tu_dir_target f;
	struct stat a, b;

	(void)state;
	tu_open_dir_target(&f, MIB);
	join(path, sizeof(path), f.dir, TARGET_PROBE_FILE);
	assert_int_equal(stat(path, &a), 0);
	target_close(&f.t);

	/* A restart: a fresh struct target. */
	target_init(&f.t, &f.tcfg);
	assert_int_equal(target_open(&f.t), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_untouched(&a, &b);
	assert_int_equal(f.t.ino, a.st_ino);
	assert_int_equal(atomic_load(&f.t.layout_done), 0); /* nothing laid out */
	/* Open again while open: no-op. */
	int fd = f.t.fd;
	assert_int_equal(target_open(&f.t), 0);
	assert_int_equal(f.t.fd, fd);
	target_close(&f.t);
}

/* A second holder of the same directory (another iopulse) finds it busy, does not
 * re-lay the file even with another size, and gets it once the first lets go. */
static void test_second_holder_busy(void **state)
{
	char path[PATH_MAX + 32];
	struct tu_dir_target a;
	struct cfg_target other;
	struct target b;
	struct stat before, after;

	(void)state;
	tu_open_dir_target(&a, MIB);
	other = dir_cfg(a.dir, 2 * MIB);
	join(path, sizeof(path), a.dir, TARGET_PROBE_FILE);
	assert_int_equal(stat(path, &before), 0);

	target_init(&b, &other);
	assert_int_equal(target_open(&b), -EBUSY);
	assert_non_null(strstr(b.error, "in use by another iopulse"));
	assert_int_equal(b.fd, -1);
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);
	assert_int_equal(before.st_size, after.st_size);

	target_close(&a.t);
	assert_int_equal(target_open(&b), 0); /* ours now: re-laid at its size */
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal((uint64_t)after.st_size, TARGET_HEADER_SIZE + 2 * MIB);
	target_close(&b);
}

static void test_size_change_relays(void **state)
{
	char path[PATH_MAX + 32];
	struct tu_dir_target f;
	struct stat a, b;
	size_t len;
	char *data;

	(void)state;
	tu_open_dir_target(&f, MIB);
	join(path, sizeof(path), f.dir, TARGET_PROBE_FILE);
	assert_int_equal(stat(path, &a), 0);
	target_close(&f.t);

	f.tcfg.size = 2 * MIB;
	target_init(&f.t, &f.tcfg);
	assert_int_equal(target_open(&f.t), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino); /* laid out again in place, never renamed over */
	assert_int_equal(b.st_size, TARGET_HEADER_SIZE + 2 * MIB);
	assert_true((uint64_t)b.st_blocks * 512 >= (uint64_t)b.st_size);
	assert_int_equal(f.t.data_end, TARGET_HEADER_SIZE + 2 * MIB);
	assert_int_equal(count_entries(f.dir), 1);
	data = slurp(path, &len);
	assert_non_null(strstr(data, "size: 2097152\n"));
	free(data);
	target_close(&f.t);
}

static void test_hole_relays(void **state)
{
	char path[PATH_MAX + 32];
	struct tu_dir_target f;
	struct stat a, b;
	int fd;

	(void)state;
	tu_open_dir_target(&f, MIB);
	target_close(&f.t);

	/* Punch a hole into our own file: it must be laid out again. */
	join(path, sizeof(path), f.dir, TARGET_PROBE_FILE);
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 65536, 65536) < 0) {
		close(fd);
		skip(); /* filesystem without hole punching */
	}
	close(fd);
	assert_int_equal(stat(path, &a), 0);
	assert_true((uint64_t)a.st_blocks * 512 < (uint64_t)a.st_size);

	target_init(&f.t, &f.tcfg);
	assert_int_equal(target_open(&f.t), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_true((uint64_t)b.st_blocks * 512 >= (uint64_t)b.st_size);
	target_close(&f.t);
}

static void test_foreign_file_refused(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	char content[8192];
	struct cfg_target cfg;
	struct target t;
	struct stat a, b;
	size_t len;
	char *after;

	(void)state;
	tu_new_dir(dir, sizeof(dir));
	join(path, sizeof(path), dir, TARGET_PROBE_FILE);
	for (size_t i = 0; i < sizeof(content); i++)
		content[i] = (char)(i * 7);
	write_file(path, content, sizeof(content));
	assert_int_equal(stat(path, &a), 0);

	cfg = dir_cfg(dir, MIB);
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), -EEXIST);
	assert_int_equal(t.fd, -1);
	assert_non_null(strstr(t.error, "not an iopulse probe file"));

	assert_int_equal(stat(path, &b), 0);
	assert_untouched(&a, &b);
	after = slurp(path, &len);
	assert_int_equal(len, sizeof(content));
	assert_memory_equal(after, content, sizeof(content));
	free(after);
	assert_int_equal(count_entries(dir), 1);

	/* Empty file: no header either. */
	write_file(path, "", 0);
	assert_int_equal(target_open(&t), -EEXIST);
	assert_int_equal(stat(path, &b), 0);
	assert_int_equal(b.st_size, 0);
}

static void test_not_owned_refused(void **state)
{
	char path[PATH_MAX + 32];
	struct tu_dir_target f;
	struct stat a, b;

	(void)state;
	if (geteuid() != 0)
		skip();		     /* only root can hand a file to another uid */
	tu_open_dir_target(&f, MIB); /* a genuine probe file... */
	target_close(&f.t);
	join(path, sizeof(path), f.dir, TARGET_PROBE_FILE);
	assert_int_equal(chown(path, 12345, 12345), 0); /* ...now someone else's */
	assert_int_equal(stat(path, &a), 0);

	target_init(&f.t, &f.tcfg);
	assert_int_equal(target_open(&f.t), -EEXIST);
	assert_non_null(strstr(f.t.error, "owned by uid 12345"));
	assert_int_equal(stat(path, &b), 0);
	assert_untouched(&a, &b);
}

/* Another target's genuine probe file (ours in every other way: our user, our
 * header) hard-linked at this directory's probe-file name is not this target's
 * to lay out and write: its other name is somebody else's file. Refused
 * whether or not its size fits, every byte of it kept. */
static void test_hardlink_refused(void **state)
{
	char path[PATH_MAX + 32], victim[PATH_MAX + 32];
	struct tu_dir_target o, n;
	struct stat a, b;
	size_t len, len2;
	char *before, *after;

	(void)state;
	tu_open_dir_target(&o, MIB); /* the other target's probe file... */
	target_close(&o.t);
	join(victim, sizeof(victim), o.dir, TARGET_PROBE_FILE);
	before = slurp(victim, &len);
	assert_int_equal(stat(victim, &a), 0);

	tu_new_dir(n.dir, sizeof(n.dir));
	join(path, sizeof(path), n.dir, TARGET_PROBE_FILE);
	assert_int_equal(link(victim, path), 0); /* ...linked here */
	for (int i = 0; i < 2; i++) {
		n.tcfg = dir_cfg(n.dir, i ? MIB : 2 * MIB); /* its size, then another */
		target_init(&n.t, &n.tcfg);
		assert_int_equal(target_open(&n.t), -EEXIST);
		assert_int_equal(n.t.fd, -1);
		assert_non_null(strstr(n.t.error, "2 hard links"));
	}
	assert_int_equal(stat(victim, &b), 0);
	assert_untouched(&a, &b);
	assert_int_equal(b.st_size, a.st_size);
	after = slurp(victim, &len2);
	assert_int_equal(len2, len);
	assert_memory_equal(after, before, len);
	free(after);
	free(before);
	assert_int_equal(count_entries(n.dir), 1);

	/* Its other name gone, the file is this directory's alone: ours again. */
	assert_int_equal(unlink(victim), 0);
	assert_int_equal(target_open(&n.t), 0);
	assert_int_equal(n.t.ino, a.st_ino);
	target_close(&n.t);
}

static void test_symlink_refused(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], victim[PATH_MAX + 32];
	const char content[] = "precious data, not ours\n";
	struct cfg_target cfg;
	struct target t;
	struct stat st;
	size_t len;
	char *after;

	(void)state;
	tu_new_dir(dir, sizeof(dir));
	join(victim, sizeof(victim), dir, "victim");
	join(path, sizeof(path), dir, TARGET_PROBE_FILE);
	write_file(victim, content, sizeof(content));
	assert_int_equal(symlink(victim, path), 0);

	cfg = dir_cfg(dir, MIB);
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), -EEXIST);
	assert_non_null(strstr(t.error, "symlink"));

	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	after = slurp(victim, &len);
	assert_int_equal(len, sizeof(content));
	assert_memory_equal(after, content, sizeof(content));
	free(after);

	/* A dangling symlink is not ours either, and is not followed to create. */
	assert_int_equal(unlink(path), 0);
	join(victim, sizeof(victim), dir, "nowhere");
	assert_int_equal(symlink(victim, path), 0);
	assert_int_equal(target_open(&t), -EEXIST);
	assert_int_equal(lstat(victim, &st), -1);
	assert_int_equal(count_entries(dir), 2);

	/* A directory by that name: refused too. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(target_open(&t), -EEXIST);
	assert_int_equal(rmdir(path), 0);
}

static void test_missing_directory(void **state)
{
	char dir[PATH_MAX], missing[PATH_MAX + 32];
	struct cfg_target cfg;
	struct target t;
	struct stat st;

	(void)state;
	tu_new_dir(dir, sizeof(dir));
	join(missing, sizeof(missing), dir, "missing");
	cfg = dir_cfg(missing, MIB);
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), -ENOENT);
	assert_non_null(strstr(t.error, "no such directory"));
	assert_int_equal(stat(missing, &st), -1);
	assert_int_equal(count_entries(dir), 0);
	assert_false(t.pinned);

	/* A file where the directory should be. */
	write_file(missing, "x", 1);
	assert_int_equal(target_open(&t), -ENOTDIR);
}

static void test_unwritable_directory(void **state)
{
	char dir[PATH_MAX];
	struct cfg_target cfg;
	struct target t;
	int r;

	(void)state;
	if (geteuid() == 0)
		skip(); /* root writes anywhere: the permission check cannot show */
	tu_new_dir(dir, sizeof(dir));
	assert_int_equal(chmod(dir, 0555), 0);
	cfg = dir_cfg(dir, MIB);
	target_init(&t, &cfg);
	r = target_open(&t);
	assert_int_equal(chmod(dir, 0700), 0);
	assert_true(r == -EACCES || r == -EPERM);
	assert_true(t.error[0] != '\0');
	assert_int_equal(count_entries(dir), 0);
}

static void test_buffered(void **state)
{
	char dir[PATH_MAX];
	struct cfg_target cfg;
	struct target t;

	(void)state;
	tu_new_dir(dir, sizeof(dir));
	cfg = dir_cfg(dir, MIB);
	cfg.direct = false;
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), 0);
	assert_false(fcntl(t.fd, F_GETFL) & O_DIRECT);
	assert_alignment(&t);
	target_close(&t);

	/* The same file is reused with O_DIRECT. */
	cfg.direct = true;
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), 0);
	assert_true(fcntl(t.fd, F_GETFL) & O_DIRECT);
	target_close(&t);
}

static void test_unaligned_size(void **state)
{
	struct tu_dir_target f;
	struct stat st;

	(void)state;
	/* Not a multiple of any O_DIRECT alignment: the tail is written buffered. */
	tu_open_dir_target(&f, MIB + 100);
	assert_true(fcntl(f.t.fd, F_GETFL) & O_DIRECT);
	assert_int_equal(fstat(f.t.fd, &st), 0);
	assert_int_equal(st.st_size, TARGET_HEADER_SIZE + MIB + 100);
	assert_true((uint64_t)st.st_blocks * 512 >= (uint64_t)st.st_size);
	assert_int_equal(f.t.data_end, TARGET_HEADER_SIZE + MIB + 100);
	ino_t ino = f.t.ino;
	target_close(&f.t);
	target_init(&f.t, &f.tcfg);
	assert_int_equal(target_open(&f.t), 0);
	assert_int_equal(f.t.ino, ino); /* reused */
	target_close(&f.t);
}

/* ------------------------------------------------------- layout throttle */

/* Watches a layout from another thread, as the daemon's gauge would. */
struct watch {
	struct target *t;
	_Atomic bool finished; /* target_open() returned */
	_Atomic bool *stop;    /* set once progress shows (NULL: never) */
	void (*act)(void *);   /* called once when progress shows (NULL: nothing) */
	void *arg;	       /* for act */
	uint64_t max_total;    /* largest layout_total seen */
	uint64_t samples;      /* samples with a layout in progress */
	bool bounded;	       /* layout_done <= layout_total whenever total != 0 */
	bool monotonic;	       /* layout_done never went back */
};

static void *watch_layout(void *arg)
{
	struct watch *w = arg;
	const struct timespec tick = {0, 1000000};
	uint64_t prev = 0;

	while (!atomic_load(&w->finished)) {
		uint64_t total = atomic_load(&w->t->layout_total);
		uint64_t done = atomic_load(&w->t->layout_done);

		if (total) {
			w->samples++;
			if (total > w->max_total)
				w->max_total = total;
			w->bounded &= done <= total;
			w->monotonic &= done >= prev;
			prev = done;
			if (w->stop && done > 0)
				atomic_store(w->stop, true);
			if (w->act && done > TARGET_HEADER_SIZE) {
				w->act(w->arg);
				w->act = NULL;
			}
		}
		nanosleep(&tick, NULL);
	}
	return NULL;
}

/* target_open() of @t, watched by @w from another thread; how long it took in
 * @elapsed (seconds) unless NULL. */
static int open_watched(struct target *t, struct watch *w, double *elapsed)
{
	pthread_t th;
	double t0;
	int r;

	w->t = t;
	atomic_init(&w->finished, false);
	assert_int_equal(pthread_create(&th, NULL, watch_layout, w), 0);
	t0 = tu_now_s();
	r = target_open(t);
	if (elapsed)
		*elapsed = tu_now_s() - t0;
	atomic_store(&w->finished, true);
	assert_int_equal(pthread_join(th, NULL), 0);
	return r;
}

static void test_layout_rate(void **state)
{
	char dir[PATH_MAX];
	struct cfg_target cfg;
	struct target t;
	struct watch w = {.bounded = true, .monotonic = true};
	struct stat st;
	double elapsed;

	(void)state;
	tu_new_dir(dir, sizeof(dir));
	cfg = dir_cfg(dir, 4 * MIB);
	cfg.layout_rate = 8 * MIB; /* bytes per second: 4MiB takes ~0.5s */
	target_init(&t, &cfg);
	assert_int_equal(open_watched(&t, &w, &elapsed), 0);

	/* A behaviour check of the throttle: a lower bound only. */
	assert_true(elapsed >= 0.4);
	assert_true(w.samples > 0);
	assert_int_equal(w.max_total, TARGET_HEADER_SIZE + 4 * MIB);
	assert_true(w.bounded);
	assert_true(w.monotonic);
	assert_int_equal(atomic_load(&t.layout_done), TARGET_HEADER_SIZE + 4 * MIB);
	assert_int_equal(atomic_load(&t.layout_total), 0);
	assert_int_equal(fstat(t.fd, &st), 0);
	assert_int_equal(st.st_size, TARGET_HEADER_SIZE + 4 * MIB);
	assert_true((uint64_t)st.st_blocks * 512 >= (uint64_t)st.st_size);
	target_close(&t);
}

static void test_layout_stop(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	struct cfg_target cfg;
	struct target t;
	struct watch w = {.bounded = true, .monotonic = true};
	_Atomic bool stop;
	struct stat a, b;

	(void)state;
	atomic_init(&stop, false);
	tu_new_dir(dir, sizeof(dir));
	cfg = dir_cfg(dir, 8 * MIB);
	cfg.layout_rate = 2 * MIB; /* ~4s in full */
	target_init(&t, &cfg);
	t.stop = &stop;
	w.stop = &stop; /* stop as soon as the layout is under way */
	assert_int_equal(open_watched(&t, &w, NULL), -ECANCELED);

	/* Abandoned, not finished: -ECANCELED above and less than all laid out. */
	assert_true(atomic_load(&stop));
	assert_int_equal(t.fd, -1);
	assert_non_null(strstr(t.error, "layout abandoned"));
	assert_int_equal(atomic_load(&t.layout_total), 0);
	assert_true(atomic_load(&t.layout_done) < TARGET_HEADER_SIZE + 8 * MIB);
	/* Neither a probe file nor a temporary one. */
	assert_int_equal(count_entries(dir), 0);

	/* Stop already requested: nothing is written at all. */
	assert_int_equal(target_open(&t), -ECANCELED);
	assert_int_equal(atomic_load(&t.layout_done), 0);
	assert_int_equal(count_entries(dir), 0);

	/* No stop: laid out (unthrottled, to be quick). */
	atomic_store(&stop, false);
	cfg.layout_rate = 0;
	assert_int_equal(target_open(&t), 0);
	assert_int_equal(count_entries(dir), 1);
	target_close(&t);

	/* A re-lay abandoned keeps the old probe file as it was, and nothing else. */
	join(path, sizeof(path), dir, TARGET_PROBE_FILE);
	assert_int_equal(stat(path, &a), 0);
	cfg.size = 4 * MIB;
	atomic_store(&stop, true);
	target_init(&t, &cfg);
	t.stop = &stop;
	assert_int_equal(target_open(&t), -ECANCELED);
	assert_int_equal(stat(path, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(b.st_size, TARGET_HEADER_SIZE + 8 * MIB);
	assert_int_equal(count_entries(dir), 1);
}

/* ------------------------------------------------- never touch what is not ours */

/* A user's file, stored under a name: @path gets @content via a rename, as an
 * editor or a copy tool would. */
struct user_file {
	char path[PATH_MAX + 32];
	char tmp[PATH_MAX + 32];
	const char *content;
};

static void store_user_file(void *arg)
{
	struct user_file *u = arg;

	write_file(u->tmp, u->content, strlen(u->content));
	assert_int_equal(rename(u->tmp, u->path), 0);
}

static void assert_content(const char *path, const char *content)
{
	size_t len;
	char *data = slurp(path, &len);

	assert_int_equal(len, strlen(content));
	assert_memory_equal(data, content, len);
	free(data);
}

/* Issue 9.1: a user stores a file under the probe file's name while iopulse
 * lays its damaged file out again; the user's file must survive. */
static void test_relay_keeps_user_file(void **state)
{
	struct watch w = {.bounded = true, .monotonic = true};
	struct user_file u = {.content = "the user's data\n"};
	struct tu_dir_target f;

	(void)state;
	tu_open_dir_target(&f, MIB);
	target_close(&f.t);
	join(u.path, sizeof(u.path), f.dir, TARGET_PROBE_FILE);
	join(u.tmp, sizeof(u.tmp), f.dir, "user.tmp");

	f.tcfg.size = 4 * MIB; /* ours, but the wrong size: laid out again */
	f.tcfg.layout_rate = 8 * MIB;
	target_init(&f.t, &f.tcfg);
	w.act = store_user_file;
	w.arg = &u;
	assert_int_equal(open_watched(&f.t, &w, NULL), 0);
	assert_null(w.act); /* the user did store it during the layout */
	assert_content(u.path, u.content);
	assert_int_equal(count_entries(f.dir), 1);

	/* Our file is gone from the name: the next check says so, and the user's
	 * file is not ours to open. */
	assert_int_equal(target_check(&f.t), -ESTALE);
	assert_int_equal(target_open(&f.t), -EEXIST);
	assert_content(u.path, u.content);
}

/* Issue 9.2: files named like iopulse's temporaries but not ours are never
 * removed, on a first layout, a re-layout or the start-up sweep. */
static void test_foreign_tmp_names_kept(void **state)
{
	char pidname[64], path[PATH_MAX + 80], randname[PATH_MAX + 80];
	struct tu_dir_target f;

	(void)state;
	tu_new_dir(f.dir, sizeof(f.dir));
	snprintf(pidname, sizeof(pidname), TARGET_PROBE_FILE ".tmp.%ld", (long)getpid());
	join(path, sizeof(path), f.dir, pidname);
	write_file(path, "not iopulse's\n", 14);
	join(randname, sizeof(randname), f.dir, TARGET_PROBE_FILE ".tmp.0123456789abcdef");
	write_file(randname, "mine either\n", 12);

	f.tcfg = dir_cfg(f.dir, MIB);
	target_init(&f.t, &f.tcfg);
	assert_int_equal(target_open(&f.t), 0);
	target_close(&f.t);
	f.tcfg.size = 2 * MIB; /* a re-layout */
	target_init(&f.t, &f.tcfg);
	assert_int_equal(target_open(&f.t), 0);
	target_close(&f.t);

	assert_content(path, "not iopulse's\n");
	assert_content(randname, "mine either\n");
	assert_int_equal(count_entries(f.dir), 3);
}

/* @dir/@name with our header (an iopulse killed while laying it out). */
static void write_ours(const char *dir, const char *name)
{
	char path[PATH_MAX + 80], blk[8192];

	memset(blk, 0x5a, sizeof(blk));
	memcpy(blk, "IOPULSE-PROBE-FILE\nincomplete: being laid out\n", 46);
	blk[46] = '\0';
	join(path, sizeof(path), dir, name);
	write_file(path, blk, sizeof(blk));
}

static bool exists(const char *dir, const char *name)
{
	char path[PATH_MAX + 80];
	struct stat st;

	join(path, sizeof(path), dir, name);
	return lstat(path, &st) == 0;
}

/* Issue 9.5: a temporary left by an iopulse killed during a layout (where there
 * is no O_TMPFILE) is removed at start, when provably ours; nothing else is. */
static void test_stale_tmp_swept(void **state)
{
	const char *stale = TARGET_PROBE_FILE ".tmp.00000000000000aa";
	const char *live = TARGET_PROBE_FILE ".tmp.00000000000000bb";
	const char *foreign = TARGET_PROBE_FILE ".tmp.00000000000000cc";
	const char *symlinked = TARGET_PROBE_FILE ".tmp.00000000000000dd";
	const char *backup = TARGET_PROBE_FILE ".tmp.my-backup"; /* an admin's cp */
	const char *linked = TARGET_PROBE_FILE ".tmp.00000000000000ee";
	char dir[PATH_MAX], path[PATH_MAX + 80];
	struct cfg_target cfg;
	struct target t;
	int held;

	(void)state;
	tu_new_dir(dir, sizeof(dir));
	write_ours(dir, stale);
	write_ours(dir, live);
	write_ours(dir, "elsewhere"); /* ours by content, not by name */
	write_ours(dir, backup);
	write_ours(dir, linked);
	{
		char a[PATH_MAX + 80], b[PATH_MAX + 80];

		join(a, sizeof(a), dir, linked);
		join(b, sizeof(b), dir, "hardlink");
		assert_int_equal(link(a, b), 0); /* has another name: not only ours */
	}
	join(path, sizeof(path), dir, foreign);
	write_file(path, "someone else's\n", 15);
	join(path, sizeof(path), dir, "elsewhere");
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(symlink("elsewhere", symlinked), 0);
	assert_int_equal(chdir("/"), 0);
	/* A live iopulse laying out @live holds its lock. */
	join(path, sizeof(path), dir, live);
	held = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(held >= 0);
	assert_int_equal(flock(held, LOCK_EX), 0);

	cfg = dir_cfg(dir, MIB);
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), 0);
	assert_int_equal(t.stale_removed, 1);
	assert_false(exists(dir, stale));
	assert_true(exists(dir, live));
	assert_true(exists(dir, foreign));
	assert_true(exists(dir, symlinked));
	assert_true(exists(dir, "elsewhere"));
	assert_true(exists(dir, backup));
	assert_true(exists(dir, linked));
	assert_true(exists(dir, TARGET_PROBE_FILE));
	target_close(&t);
	close(held);
}

/* ---- a crash between link() and unlink() (no O_TMPFILE, no RENAME_NOREPLACE) */

#define CRASH_TMP TARGET_PROBE_FILE ".tmp.0123456789abcdef"

/* What stays of @path across an open: inode, mtime, size, contents. */
struct kept {
	struct stat st;
	char *data;
	size_t len;
};

static void kept_take(struct kept *k, const char *path)
{
	assert_int_equal(stat(path, &k->st), 0);
	k->data = slurp(path, &k->len);
}

/* @path is still what kept_take() saw (but for its link count); frees @k. */
static void kept_same(struct kept *k, const char *path)
{
	struct stat st;
	size_t len;
	char *data = slurp(path, &len);

	assert_int_equal(stat(path, &st), 0);
	assert_untouched(&k->st, &st);
	assert_int_equal(st.st_size, k->st.st_size);
	assert_int_equal(len, k->len);
	assert_memory_equal(data, k->data, len);
	free(data);
	free(k->data);
}

/* Our probe file (@name in @dir; NULL: the daemon's), laid out and closed. */
static void laid_out(const char *dir, const char *name, struct cfg_target *cfg)
{
	struct target t;

	*cfg = dir_cfg(dir, MIB);
	target_init(&t, cfg);
	t.file_name = name;
	assert_int_equal(target_open(&t), 0);
	target_close(&t);
}

/* An iopulse killed between link() and unlink() left its probe file (or a
 * verify probe's file) with its temporary name too: the next open removes that
 * name, says so, and goes on with the same file, contents untouched. */
static void test_crash_link_recovered(void **state)
{
	static const char *const names[] = {NULL, ".iopulse-verify.v"};
	char dir[PATH_MAX], path[PATH_MAX + 80], tmp[PATH_MAX + 80];
	struct cfg_target cfg;
	struct target t;
	struct kept k;
	struct stat st;

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		tu_new_dir(dir, sizeof(dir));
		laid_out(dir, names[i], &cfg);
		join(path, sizeof(path), dir, names[i] ? names[i] : TARGET_PROBE_FILE);
		join(tmp, sizeof(tmp), dir, CRASH_TMP);
		assert_int_equal(link(path, tmp), 0);
		kept_take(&k, path);

		target_init(&t, &cfg);
		t.file_name = names[i];
		assert_int_equal(target_open(&t), 0);
		assert_string_equal(t.link_removed, CRASH_TMP);
		assert_false(exists(dir, CRASH_TMP));
		assert_int_equal(t.ino, k.st.st_ino);
		assert_int_equal(atomic_load(&t.layout_done), 0); /* reused, not laid out */
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_nlink, 1);
		assert_int_equal(target_check(&t), 0);
		target_close(&t);
		kept_same(&k, path);
		assert_int_equal(count_entries(dir), 1);
	}
}

/* open() must refuse @dir's probe file as "2 hard links" or @why, leaving
 * @tmp (a name of the temporary pattern) and the probe file as they were. */
static void assert_refused_kept(const char *dir, const char *tmp, int err, const char *why)
{
	char path[PATH_MAX + 80], tpath[PATH_MAX + 80];
	struct cfg_target cfg = dir_cfg(dir, MIB);
	struct kept k, kt;
	struct target t;

	join(path, sizeof(path), dir, TARGET_PROBE_FILE);
	join(tpath, sizeof(tpath), dir, tmp);
	kept_take(&k, path);
	kept_take(&kt, tpath);
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), err);
	assert_int_equal(t.fd, -1);
	if (!strstr(t.error, why))
		fail_msg("'%s' does not say '%s'", t.error, why);
	assert_string_equal(t.link_removed, "");
	kept_same(&k, path);
	kept_same(&kt, tpath);
}

/* Only a temporary name of ours on our own file is removed: an extra name
 * under a foreign name, a temporary name on another file, one on a file that
 * is not ours, or one on a file another iopulse holds are all left alone. */
static void test_crash_link_refused(void **state)
{
	const char *other = TARGET_PROBE_FILE ".tmp.00000000000000aa";
	char dir[PATH_MAX], path[PATH_MAX + 80], a[PATH_MAX + 80];
	struct cfg_target cfg;
	int held;

	(void)state;
	/* A foreign second name, and a temporary name on somebody else's file. */
	tu_new_dir(dir, sizeof(dir));
	laid_out(dir, NULL, &cfg);
	join(path, sizeof(path), dir, TARGET_PROBE_FILE);
	join(a, sizeof(a), dir, "backup");
	assert_int_equal(link(path, a), 0);
	join(a, sizeof(a), dir, other);
	write_file(a, "someone else's\n", 15);
	assert_refused_kept(dir, other, -EEXIST, "2 hard links");
	assert_true(exists(dir, "backup"));

	/* Our temporary name, and a foreign one as well: three names. */
	join(a, sizeof(a), dir, CRASH_TMP);
	assert_int_equal(link(path, a), 0);
	assert_refused_kept(dir, CRASH_TMP, -EEXIST, "3 hard links");
	assert_true(exists(dir, "backup"));

	/* Our temporary name on a file that is not ours (no header). */
	tu_new_dir(dir, sizeof(dir));
	join(path, sizeof(path), dir, TARGET_PROBE_FILE);
	write_file(path, "a user's file\n", 14);
	join(a, sizeof(a), dir, CRASH_TMP);
	assert_int_equal(link(path, a), 0);
	assert_refused_kept(dir, CRASH_TMP, -EEXIST, "2 hard links");

	/* Ours, but held by a live iopulse (naming it, perhaps): busy, untouched. */
	tu_new_dir(dir, sizeof(dir));
	laid_out(dir, NULL, &cfg);
	join(path, sizeof(path), dir, TARGET_PROBE_FILE);
	join(a, sizeof(a), dir, CRASH_TMP);
	assert_int_equal(link(path, a), 0);
	held = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(held >= 0);
	assert_int_equal(flock(held, LOCK_EX), 0);
	assert_refused_kept(dir, CRASH_TMP, -EBUSY, "in use by another iopulse");
	close(held);
}

/* ---- a directory target without a probe file (dir_only) */

/* A target whose probes keep files of their own: the directory is pinned and
 * checked, nothing is created in it, and a probe file an older run left there
 * is not touched; a directory put in its place is refused, and left empty. */
static void test_dir_only(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 80], away[PATH_MAX + 8];
	struct cfg_target cfg;
	struct target t;
	struct kept k;

	(void)state;
	tu_new_dir(dir, sizeof(dir));
	cfg = dir_cfg(dir, MIB);
	for (int i = 0; i < 2; i++) { /* empty, then with an older run's probe file */
		target_init(&t, &cfg);
		t.dir_only = true;
		if (i) {
			write_ours(dir, TARGET_PROBE_FILE); /* one a normal open would re-lay */
			join(path, sizeof(path), dir, TARGET_PROBE_FILE);
			kept_take(&k, path);
		}
		assert_int_equal(target_open(&t), 0);
		assert_true(t.fd >= 0);
		assert_int_equal(atomic_load(&t.layout_total), 0);
		assert_int_equal(target_check(&t), 0);
		assert_int_equal(count_entries(dir), (unsigned)i);
		assert_string_equal(t.file_path, dir);
		if (i)
			kept_same(&k, path);
		else
			target_close(&t);
	}

	/* Replaced (moved away, another made in its place): down, as ever. */
	snprintf(away, sizeof(away), "%s.old", dir);
	assert_int_equal(rename(dir, away), 0);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(target_check(&t), -EXDEV);
	assert_non_null(strstr(t.error, "it was replaced"));
	assert_int_equal(t.fd, -1);
	assert_int_equal(target_open(&t), -EXDEV);
	assert_int_equal(count_entries(dir), 0);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(rename(away, dir), 0);
	assert_int_equal(target_open(&t), 0); /* back: up again */
	target_close(&t);
}

/* A file that is not ours is refused as such even while somebody holds a lock
 * on it: the header is read before our lock is tried. */
static void test_locked_foreign_file(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	struct cfg_target cfg;
	struct target t;
	int held;

	(void)state;
	tu_new_dir(dir, sizeof(dir));
	join(path, sizeof(path), dir, TARGET_PROBE_FILE);
	write_file(path, "somebody's\n", 11);
	held = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(held >= 0);
	assert_int_equal(flock(held, LOCK_EX), 0);
	cfg = dir_cfg(dir, MIB);
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), -EEXIST);
	assert_non_null(strstr(t.error, "not an iopulse probe file"));
	close(held);
	assert_content(path, "somebody's\n");
}

/* ------------------------------------------------------------ symlinks, pins */

/* A symlink at @path to @to, owned by @uid (as root; false when we may not). */
static bool symlink_as(const char *to, const char *path, uid_t uid)
{
	assert_int_equal(symlink(to, path), 0);
	return lchown(path, uid, (gid_t)-1) == 0;
}

/* Issue 9.4: a symlink that somebody other than root or us planted in a
 * directory target's path is refused; a directory replaced after the target
 * came up, by a symlink (anybody's) or another directory, takes it down, and
 * nothing is created where it now points. */
static void test_symlink_in_path(void **state)
{
	char base[PATH_MAX], real[PATH_MAX + 32], other[PATH_MAX + 32], lnk[PATH_MAX + 32];
	char path[PATH_MAX + 64], moved[PATH_MAX + 32], own[PATH_MAX + 32];
	const uid_t nobody = 65534;
	struct cfg_target cfg;
	struct target t;

	(void)state;
	tu_new_dir(base, sizeof(base));
	join(real, sizeof(real), base, "real");
	join(other, sizeof(other), base, "other");
	join(lnk, sizeof(lnk), base, "link");
	join(own, sizeof(own), base, "own");
	assert_int_equal(mkdir(real, 0700), 0);
	assert_int_equal(mkdir(other, 0700), 0);
	assert_int_equal(symlink(real, own), 0); /* ours: followed, as systemd's StateDirectory= */
	cfg = dir_cfg(own, MIB);
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), 0);
	target_close(&t);
	assert_int_equal(count_entries(real), 1);
	join(path, sizeof(path), real, TARGET_PROBE_FILE);
	assert_int_equal(unlink(path), 0);

	if (geteuid() != 0 || !symlink_as(real, lnk, nobody))
		skip(); /* a symlink of another user needs root to make */
	/* Somebody else's, as a component and as the last one: refused. */
	join(path, sizeof(path), lnk, ".");
	cfg = dir_cfg(path, MIB);
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), -ELOOP);
	assert_non_null(strstr(t.error, "is a symlink owned by uid 65534"));
	cfg = dir_cfg(lnk, MIB);
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), -ELOOP);
	assert_int_equal(count_entries(real), 0);

	/* Up on base/real; then real is moved away and somebody's symlink to
	 * other put in its place: down, refused. */
	cfg = dir_cfg(real, MIB);
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), 0);
	join(moved, sizeof(moved), base, "moved");
	assert_int_equal(rename(real, moved), 0);
	assert_true(symlink_as(other, real, nobody));
	assert_int_equal(target_check(&t), -ELOOP);
	assert_int_equal(t.fd, -1);
	assert_int_equal(target_open(&t), -ELOOP);
	assert_non_null(strstr(t.error, "symlink"));
	assert_int_equal(count_entries(other), 0);

	/* Root's own symlink is followed, but to another directory than the pinned one. */
	assert_int_equal(unlink(real), 0);
	assert_int_equal(symlink(other, real), 0);
	assert_int_equal(target_open(&t), -EXDEV);
	assert_non_null(strstr(t.error, "replaced"));
	assert_int_equal(count_entries(other), 0);

	/* ... and so is a new directory of the same name: not ours either. */
	assert_int_equal(unlink(real), 0);
	assert_int_equal(mkdir(real, 0700), 0);
	assert_int_equal(target_open(&t), -EXDEV);
	assert_non_null(strstr(t.error, "replaced"));
	assert_int_equal(count_entries(real), 0);
	assert_int_equal(count_entries(moved), 1); /* the probe file stayed with its directory */

	/* The pinned directory back at its name: up again. */
	assert_int_equal(rmdir(real), 0);
	assert_int_equal(rename(moved, real), 0);
	assert_int_equal(target_open(&t), 0);
	assert_int_equal(target_check(&t), 0);
	target_close(&t);
}

/* ------------------------------------------------------ mounts and free space */

/* Mounts a tmpfs of @size at @dir; false (and the test should skip) when this
 * process may not mount. */
static char mounted[4][PATH_MAX]; /* detached by teardown(), should a test fail */

static bool mount_tmpfs(const char *dir, const char *size)
{
	size_t n = strlen(dir);
	char opts[64];

	snprintf(opts, sizeof(opts), "size=%s,mode=0700", size);
	if (n >= PATH_MAX || mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return false;
	for (unsigned i = 0; i < 4; i++) {
		if (!mounted[i][0]) {
			memcpy(mounted[i], dir, n + 1);
			break;
		}
	}
	return true;
}

static int teardown(void **state)
{
	for (unsigned i = 0; i < 4; i++)
		if (mounted[i][0])
			(void)umount2(mounted[i], MNT_DETACH);
	return tu_scratch_teardown(state);
}

static uint64_t free_bytes(const char *dir)
{
	struct statvfs sv;

	assert_int_equal(statvfs(dir, &sv), 0);
	return (uint64_t)sv.f_bavail * sv.f_frsize;
}

/* Issue 9.3: a directory whose filesystem should be mounted (fstab, or
 * require_mount) and is not never gets a probe file on the one beneath. */
static void test_require_mount(void **state)
{
	char base[PATH_MAX], mnt[PATH_MAX + 32], sub[PATH_MAX + 64], fstab[PATH_MAX + 32];
	char line[PATH_MAX + 128];
	struct cfg_target cfg;
	struct target t;

	(void)state;
	tu_new_dir(base, sizeof(base));
	join(mnt, sizeof(mnt), base, "mnt");
	join(sub, sizeof(sub), mnt, "iopulse");
	join(fstab, sizeof(fstab), base, "fstab");
	assert_int_equal(mkdir(mnt, 0700), 0);
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(line, sizeof(line), "# a comment\n/dev/vdb  %s  ext4  defaults,nofail  0 2\n",
		 mnt);
	write_file(fstab, line, strlen(line));
	assert_int_equal(setenv("IOPULSE_FSTAB", fstab, 1), 0);

	/* auto: listed in fstab, not mounted: refused, nothing created. */
	cfg = dir_cfg(sub, MIB);
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), -EXDEV);
	assert_non_null(strstr(t.error, "is not mounted"));
	assert_non_null(strstr(t.error, fstab));
	assert_int_equal(count_entries(sub), 0);
	/* true: the directory itself is no mount point; a path: not mounted. */
	cfg.require_mount = CFG_MOUNT_SELF;
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), -EXDEV);
	cfg.require_mount = CFG_MOUNT_PATH;
	cfg.mount_path = mnt;
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), -EXDEV);
	assert_int_equal(count_entries(sub), 0);
	/* An fstab entry written through a (root's) symlink, and the target named
	 * the same way. */
	{
		char lnk[PATH_MAX + 32], via[PATH_MAX + 96], fst[PATH_MAX + 128];

		join(lnk, sizeof(lnk), base, "link");
		assert_int_equal(symlink(base, lnk), 0);
		snprintf(via, sizeof(via), "%s/mnt/iopulse", lnk);
		snprintf(fst, sizeof(fst), "/dev/vdc %s/mnt ext4 defaults 0 2\n", lnk);
		write_file(fstab, fst, strlen(fst));
		cfg = dir_cfg(via, MIB);
		target_init(&t, &cfg);
		assert_int_equal(target_open(&t), -EXDEV);
		assert_non_null(strstr(t.error, "is not mounted"));
		assert_int_equal(count_entries(sub), 0);
		write_file(fstab, line, strlen(line));
	}
	/* false: measured where it is. */
	cfg = dir_cfg(sub, MIB);
	cfg.require_mount = CFG_MOUNT_NO;
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), 0);
	target_close(&t);
	assert_int_equal(rmdir(sub) < 0 && errno == ENOTEMPTY, true);

	if (!mount_tmpfs(mnt, "8m")) {
		unsetenv("IOPULSE_FSTAB");
		skip(); /* the refusals above are tested; mounting needs root */
	}
	assert_int_equal(mkdir(sub, 0700), 0);
	cfg = dir_cfg(sub, MIB);
	cfg.allow_memory_backed = true;
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), 0); /* auto, mounted */
	target_close(&t);
	/* Reached before the disk was mounted over it (here: the working
	 * directory, kept from then): beneath the mount, not in it. */
	{
		char old_cwd[PATH_MAX], beneath[PATH_MAX + 32];
		int keep;

		assert_non_null(getcwd(old_cwd, sizeof(old_cwd)));
		assert_int_equal(umount2(mnt, MNT_DETACH), 0);
		join(beneath, sizeof(beneath), mnt, ".");
		keep = open(beneath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		assert_true(keep >= 0);
		assert_true(mount_tmpfs(mnt, "8m"));
		assert_int_equal(fchdir(keep), 0);
		cfg = dir_cfg(".", MIB);
		cfg.allow_memory_backed = true;
		target_init(&t, &cfg);
		assert_int_equal(target_open(&t), -EXDEV);
		assert_int_equal(chdir(old_cwd), 0);
		close(keep);
		assert_int_equal(mkdir(sub, 0700), 0);
	}
	cfg = dir_cfg(sub, MIB);
	cfg.allow_memory_backed = true;
	cfg.require_mount = CFG_MOUNT_PATH;
	cfg.mount_path = mnt;
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), 0);
	target_close(&t);
	cfg = dir_cfg(mnt, MIB);
	cfg.allow_memory_backed = true;
	cfg.require_mount = CFG_MOUNT_SELF;
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), 0);
	target_close(&t);

	/* Lazily unmounted before a target first came up: refused, as unmounted. */
	assert_int_equal(umount2(mnt, MNT_DETACH), 0);
	cfg = dir_cfg(mnt, MIB);
	cfg.allow_memory_backed = true;
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), -EXDEV);
	assert_non_null(strstr(t.error, "is not mounted"));
	assert_false(exists(mnt, TARGET_PROBE_FILE));
	unsetenv("IOPULSE_FSTAB");
}

struct filler {
	char path[PATH_MAX + 32];
	size_t size;
};

static void fill(void *arg)
{
	struct filler *f = arg;
	char *buf = calloc(1, f->size);

	assert_non_null(buf);
	write_file(f->path, buf, f->size);
	free(buf);
}

/* Issue 9.6: a layout never leaves less than keep_free, before it starts or
 * while another program fills the disk, and frees what it wrote on failure. */
static void test_keep_free(void **state)
{
	struct watch w = {.bounded = true, .monotonic = true};
	char mnt[PATH_MAX];
	struct filler fl;
	struct cfg_target cfg;
	struct target t;
	uint64_t before;

	(void)state;
	tu_new_dir(mnt, sizeof(mnt));
	if (!mount_tmpfs(mnt, "16m"))
		skip();
	before = free_bytes(mnt);

	/* Larger than the filesystem: refused before a byte is written. */
	cfg = dir_cfg(mnt, 32 * MIB);
	cfg.allow_memory_backed = true;
	cfg.require_mount = CFG_MOUNT_NO;
	cfg.keep_free_fraction = 0.05;
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), -ENOSPC);
	assert_true(t.layout_failed);
	assert_non_null(strstr(t.error, "keep_free"));
	assert_int_equal(atomic_load(&t.layout_done), 0);
	assert_int_equal(count_entries(mnt), 0);
	assert_int_equal(free_bytes(mnt), before);

	/* Fits, but not with half the filesystem kept free. */
	cfg.size = 10 * MIB;
	cfg.keep_free_fraction = 0.5;
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), -ENOSPC);
	assert_int_equal(count_entries(mnt), 0);
	cfg.keep_free_fraction = 0;
	cfg.keep_free_bytes = 7 * MIB;
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), -ENOSPC);

	/* Someone else fills the disk during the layout: it stops, and frees. */
	cfg.keep_free_bytes = 2 * MIB;
	cfg.layout_rate = 8 * MIB;
	target_init(&t, &cfg);
	join(fl.path, sizeof(fl.path), mnt, "filler");
	fl.size = 5 * MIB;
	w.act = fill;
	w.arg = &fl;
	assert_int_equal(open_watched(&t, &w, NULL), -ENOSPC);
	assert_true(t.layout_failed);
	assert_non_null(strstr(t.error, "during the layout"));
	assert_int_equal(count_entries(mnt), 1); /* the filler only */
	assert_true(free_bytes(mnt) >= before - fl.size - 64 * 1024);

	/* Room enough: laid out, and layout_failed cleared. */
	assert_int_equal(unlink(fl.path), 0);
	cfg.layout_rate = 0;
	target_init(&t, &cfg);
	t.layout_failed = true;
	assert_int_equal(target_open(&t), 0);
	assert_false(t.layout_failed);
	target_close(&t);
	assert_int_equal(umount2(mnt, MNT_DETACH), 0);
}

/* ------------------------------------------------------------------ checks */

static void test_check_detects_deletion(void **state)
{
	char path[PATH_MAX + 32];
	struct tu_dir_target f;
	struct stat st;
	ino_t old;

	(void)state;
	tu_open_dir_target(&f, MIB);
	assert_int_equal(target_check(&f.t), 0);
	old = f.t.ino;

	join(path, sizeof(path), f.dir, TARGET_PROBE_FILE);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(target_check(&f.t), -ESTALE);
	assert_int_equal(f.t.fd, -1);
	assert_non_null(strstr(f.t.error, "deleted"));
	assert_int_equal(target_check(&f.t), -EBADF);

	/* Same filesystem: the next open lays it out again. */
	assert_int_equal(target_open(&f.t), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_ino, f.t.ino);
	assert_true(st.st_size == (off_t)(TARGET_HEADER_SIZE + MIB));
	(void)old;
	assert_int_equal(target_check(&f.t), 0);

	/* Replaced behind our back (rename over it): stale as well. */
	char other[PATH_MAX + 32];
	join(other, sizeof(other), f.dir, "other");
	write_file(other, "y", 1);
	assert_int_equal(rename(other, path), 0);
	assert_int_equal(target_check(&f.t), -ESTALE);
	assert_int_equal(target_open(&f.t), -EEXIST); /* and that file is not ours */
}

static void test_identity_pinned(void **state)
{
	char path[PATH_MAX + 32];
	struct tu_dir_target f;
	struct stat st;

	(void)state;
	tu_open_dir_target(&f, MIB);

	/* Pretend the directory was on another device when pinned (as after an
	 * unmount uncovers the mount point): check and open both refuse. */
	f.t.dev = makedev(major(f.t.dev) + 1, minor(f.t.dev));
	assert_int_equal(target_check(&f.t), -EXDEV);
	assert_int_equal(f.t.fd, -1);
	assert_non_null(strstr(f.t.error, "different filesystem"));

	join(path, sizeof(path), f.dir, TARGET_PROBE_FILE);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(target_open(&f.t), -EXDEV);
	assert_non_null(strstr(f.t.error, "not creating a probe file there"));
	assert_int_equal(stat(path, &st), -1); /* nothing created underneath */
	assert_int_equal(count_entries(f.dir), 0);
}

/* The pinned directory gone from its path: "missing" when its parent is still
 * on the pinned filesystem (deleted), "unmounted" when the parent is on
 * another (an unmount of the filesystem the target is a subdirectory of). */
static void test_gone_reason_code(void **state)
{
	char path[PATH_MAX + 32];
	struct tu_dir_target f;
	dev_t dev;

	(void)state;
	tu_open_dir_target(&f, MIB);
	dev = f.t.dev;
	join(path, sizeof(path), f.dir, TARGET_PROBE_FILE);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(f.dir), 0);

	assert_int_equal(target_check(&f.t), -ENOENT);
	assert_string_equal(target_reason_code(&f.t, -ENOENT), "missing");
	assert_int_equal(target_open(&f.t), -ENOENT);
	assert_string_equal(target_reason_code(&f.t, -ENOENT), "missing");

	/* As after an unmount: the parent is on another device than pinned. */
	f.t.dev = makedev(major(dev) + 1, minor(dev));
	assert_int_equal(target_open(&f.t), -ENOENT);
	assert_non_null(strstr(f.t.error, "no such directory"));
	assert_string_equal(target_reason_code(&f.t, -ENOENT), "unmounted");
	assert_int_equal(mkdir(f.dir, 0700), 0); /* for the scratch teardown */
}

/* ------------------------------------------------------------------- files */

static void test_file_target(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], link[PATH_MAX + 32];
	const size_t size = 64 * 1024 + 100;
	struct cfg_target cfg;
	struct target t;
	struct stat a, b;
	char *content = malloc(size), *after;
	size_t len;

	(void)state;
	assert_non_null(content);
	for (size_t i = 0; i < size; i++)
		content[i] = (char)(i * 31 + 7);
	tu_new_dir(dir, sizeof(dir));
	join(path, sizeof(path), dir, "data.bin");
	write_file(path, content, size);
	assert_int_equal(stat(path, &a), 0);

	cfg = (struct cfg_target){
		.name = "f", .kind = CFG_TARGET_FILE, .path = path, .direct = true};
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), 0);
	assert_false(t.writable);
	assert_int_equal(fcntl(t.fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	assert_true(fcntl(t.fd, F_GETFL) & O_DIRECT);
	assert_true(fcntl(t.fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(t.data_start, 0);
	assert_int_equal(t.data_end % t.offset_align, 0);
	assert_true(t.data_end <= size && t.data_end > size - t.offset_align);
	assert_alignment(&t);
	assert_string_equal(t.file_path, path);
	assert_int_equal(target_check(&t), 0);
	target_close(&t);

	assert_int_equal(stat(path, &b), 0);
	assert_untouched(&a, &b);
	after = slurp(path, &len);
	assert_int_equal(len, size);
	assert_memory_equal(after, content, size);
	free(after);
	assert_int_equal(count_entries(dir), 1); /* no probe file next to it */

	/* Truncated under us: stale. */
	assert_int_equal(target_open(&t), 0);
	assert_int_equal(truncate(path, 8192), 0);
	assert_int_equal(target_check(&t), -ESTALE);

	/* Too small, a symlink, a directory, missing: refused. */
	assert_int_equal(truncate(path, 100), 0);
	assert_int_equal(target_open(&t), -EINVAL);
	assert_int_equal(truncate(path, 8192), 0);
	join(link, sizeof(link), dir, "link");
	assert_int_equal(symlink(path, link), 0);
	cfg.path = link;
	assert_int_equal(target_open(&t), -ELOOP);
	cfg.path = dir;
	assert_int_equal(target_open(&t), -EINVAL);
	join(link, sizeof(link), dir, "missing");
	cfg.path = link;
	assert_int_equal(target_open(&t), -ENOENT);
	free(content);
}

/* ------------------------------------------------------------------- tmpfs */

static void test_tmpfs(void **state)
{
	char dir[] = "/dev/shm/iopulse-test.XXXXXX";
	char path[sizeof(dir) + 32];
	struct cfg_target cfg;
	struct target t;
	struct statfs sfs;
	struct stat st;
	int r;

	(void)state;
	if (statfs("/dev/shm", &sfs) < 0 || sfs.f_type != TMPFS_MAGIC)
		skip();
	if (!mkdtemp(dir))
		skip();

	cfg = dir_cfg(dir, MIB);
	target_init(&t, &cfg);
	r = target_open(&t);
	bool says_why = strstr(t.error, "tmpfs/ramfs") != NULL;
	join(path, sizeof(path), dir, TARGET_PROBE_FILE);
	bool created = stat(path, &st) == 0;

	cfg.allow_memory_backed = true;
	target_init(&t, &cfg);
	int r2 = target_open(&t);
	char err2[sizeof(t.error)];
	memcpy(err2, t.error, sizeof(err2));
	target_close(&t);
	tu_rm_tree(dir);

	assert_int_equal(r, -EMEDIUMTYPE);
	assert_true(says_why);
	assert_false(created);
	/* Older kernels refuse O_DIRECT on tmpfs: then the clear error, not a
	 * silent fall back. */
	if (r2 == -EINVAL)
		assert_non_null(strstr(err2, "does not support O_DIRECT"));
	else
		assert_int_equal(r2, 0);
}

/* target_stat_within() answers as stat(2) does when the filesystem does (its
 * time-out on a hung one is tested by integration/test_hung_at_start.sh). */
static void test_stat_within(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	struct stat a, b;

	(void)state;
	tu_new_dir(dir, sizeof(dir));
	assert_int_equal(stat(dir, &a), 0);
	memset(&b, 0, sizeof(b));
	assert_int_equal(target_stat_within(dir, &b, 1000), 0);
	assert_int_equal(a.st_dev, b.st_dev);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(a.st_mode, b.st_mode);
	join(path, sizeof(path), dir, "missing");
	assert_int_equal(target_stat_within(path, &b, 1000), -ENOENT);
	for (int i = 0; i < 100; i++) /* the helper threads clean up after themselves */
		assert_int_equal(target_stat_within(dir, &b, 1000), 0);
}

/* Writes @text as @proc/self/mountinfo, then describes @t (open) with it. */
static void describe_with(struct target *t, const char *proc, const char *text,
			  struct target_desc *d)
{
	char path[PATH_MAX + 32];

	join(path, sizeof(path), proc, "self/mountinfo");
	write_file(path, text, strlen(text));
	target_describe(t, d);
}

/*
 * iopulse_target_info's source: the source of the mountinfo line of the
 * target's mount, its octal escapes undone; where several lines have its
 * device, the one whose mount point is the longest at or above its path; where
 * none has (a btrfs subvolume), that mount point alone; "" when the source is
 * too long for a label of ours.
 */
static void test_describe_source(void **state)
{
	char dir[PATH_MAX], real[PATH_MAX], proc[PATH_MAX], self[PATH_MAX + 8];
	char text[2 * PATH_MAX + 1024], big[300];
	struct cfg_target cfg;
	struct target t;
	struct target_desc d;
	unsigned ma, mi;

	(void)state;
	tu_new_dir(dir, sizeof(dir));
	assert_non_null(realpath(dir, real));
	tu_new_dir(proc, sizeof(proc));
	join(self, sizeof(self), proc, "self");
	assert_int_equal(mkdir(self, 0755), 0);
	hostload_roots.proc = proc;
	cfg = dir_cfg(dir, MIB);
	target_init(&t, &cfg);
	t.dir_only = true;
	assert_int_equal(target_open(&t), 0);
	ma = major(t.dev);
	mi = minor(t.dev);

	/* Three mounts of its device: the one above it wins, whatever the order;
	 * a deeper mount point of another device is not above it. */
	snprintf(text, sizeof(text),
		 "20 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
		 "30 20 %u:%u / /elsewhere rw - nfs4 server:/elsewhere rw\n"
		 "31 20 %u:%u /x %s rw shared:5 - nfs4 nas\\040box:/exp\\134ort rw\n"
		 "32 20 %u:%u / /else rw - nfs4 server:/else rw\n"
		 "33 20 99:99 / %s/deeper rw - ext4 /dev/sdz rw\n",
		 ma, mi, ma, mi, real, ma, mi, real);
	describe_with(&t, proc, text, &d);
	assert_string_equal(d.source, "nas box:/exp\\ort");

	/* Its device only elsewhere: that mount still, not "/" of another device. */
	snprintf(text, sizeof(text),
		 "20 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
		 "30 20 %u:%u / /elsewhere rw - nfs4 server:/elsewhere rw\n",
		 ma, mi);
	describe_with(&t, proc, text, &d);
	assert_string_equal(d.source, "server:/elsewhere");

	/* No line has its device: the longest mount point above it. */
	snprintf(text, sizeof(text),
		 "20 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
		 "34 20 0:9999 /@vol %s rw - btrfs /dev/sdc rw\n"
		 "35 20 8:2 / /boot rw - ext4 /dev/sda2 rw\n",
		 real);
	describe_with(&t, proc, text, &d);
	assert_string_equal(d.source, "/dev/sdc");

	/* A source too long for the label: none, rather than a cut one. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	snprintf(text, sizeof(text), "31 20 %u:%u / %s rw - fuse.sshfs %s rw\n", ma, mi, real, big);
	describe_with(&t, proc, text, &d);
	assert_string_equal(d.source, "");

	/* No mountinfo at all: nothing, and the rest as ever. */
	join(text, sizeof(text), self, "mountinfo");
	assert_int_equal(unlink(text), 0);
	target_describe(&t, &d);
	assert_string_equal(d.source, "");
	assert_true(d.fstype[0] != '\0');

	hostload_roots.proc = NULL;
	target_close(&t);
}

/* sysfs text as a label value: trimmed, and nothing a scrape would reject. */
static void test_label_text(void **state)
{
	char model[] = "  Samsung SSD\t\xc3\x28 990\x01 \n";
	char plain[] = "QEMU HARDDISK";
	char blank[] = " \n";

	(void)state;
	target_label_text(model);
	assert_string_equal(model, "Samsung SSD__( 990_");
	target_label_text(plain);
	assert_string_equal(plain, "QEMU HARDDISK");
	target_label_text(blank);
	assert_string_equal(blank, "");
}

int main(void)
{
	if (!getenv("TEST_TMPDIR")) {
		fprintf(stderr, "TEST_TMPDIR not set: skipping\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_layout_progress_until_open),
		cmocka_unit_test(test_reuse_keeps_inode),
		cmocka_unit_test(test_second_holder_busy),
		cmocka_unit_test(test_size_change_relays),
		cmocka_unit_test(test_hole_relays),
		cmocka_unit_test(test_foreign_file_refused),
		cmocka_unit_test(test_not_owned_refused),
		cmocka_unit_test(test_hardlink_refused),
		cmocka_unit_test(test_symlink_refused),
		cmocka_unit_test(test_missing_directory),
		cmocka_unit_test(test_unwritable_directory),
		cmocka_unit_test(test_buffered),
		cmocka_unit_test(test_unaligned_size),
		cmocka_unit_test(test_layout_rate),
		cmocka_unit_test(test_layout_stop),
		cmocka_unit_test(test_check_detects_deletion),
		cmocka_unit_test(test_identity_pinned),
		cmocka_unit_test(test_file_target),
		cmocka_unit_test(test_tmpfs),
		cmocka_unit_test(test_stat_within),
		cmocka_unit_test(test_describe_source),
		cmocka_unit_test(test_relay_keeps_user_file),
		cmocka_unit_test(test_foreign_tmp_names_kept),
		cmocka_unit_test(test_stale_tmp_swept),
		cmocka_unit_test(test_crash_link_recovered),
		cmocka_unit_test(test_crash_link_refused),
		cmocka_unit_test(test_dir_only),
		cmocka_unit_test(test_locked_foreign_file),
		cmocka_unit_test(test_symlink_in_path),
		cmocka_unit_test(test_require_mount),
		cmocka_unit_test(test_gone_reason_code),
		cmocka_unit_test(test_keep_free),
		cmocka_unit_test(test_label_text),
	};

	return cmocka_run_group_tests(tests, tu_scratch_setup, teardown);
}
