/* SPDX-License-Identifier: MIT */
/*
 * target, block devices: read-only by default, writes only with
 * allow_device_writes, refused while mounted, the kernel's exclusive claim,
 * symlinked device names, identity checks.
 *
 * The only device touched is a loop device this test attaches itself over a
 * 16MiB file of random data in a mkdtemp directory under $TEST_TMPDIR; it is
 * unmounted and detached at the end whatever happens (and, as the loop device
 * is set to autoclear while we hold it open, the kernel detaches it should
 * this process die). Skips (77) unless root with a working losetup.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/loop.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/targets/target.h"

#define MIB	    (1ULL << 20)
#define DEVICE_SIZE (16 * MIB)

static char scratch[PATH_MAX];	    /* mkdtemp, ours */
static char backing[PATH_MAX + 32]; /* the loop device's backing file */
static char mnt[PATH_MAX + 32];	    /* mount point inside scratch */
static char loopdev[64];	    /* "/dev/loopN", as losetup printed it */
static int keeper = -1;		    /* read-only fd holding the loop device */
static bool mounted, have_fs;

/* ----------------------------------------------------------------- helpers */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Runs @argv; its stdout into @out (when not NULL). Exit status, 127 when it
 * could not be run, -1 on a signal. */
static int run(char *const argv[], char *out, size_t len)
{
	int pfd[2], status;
	size_t got = 0;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		if (out)
			dup2(pfd[1], STDOUT_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	while (out && got < len - 1) {
		ssize_t n = read(pfd[0], out + got, len - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(pfd[0]);
	if (out)
		out[got] = '\0';
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void do_umount(void)
{
	if (!mounted)
		return;
	if (umount2(mnt, 0) < 0)
		(void)umount2(mnt, MNT_DETACH);
	mounted = false;
}

/* Unmounts, detaches, removes: idempotent, also from atexit(). */
static void cleanup_all(void)
{
	do_umount();
	if (loopdev[0]) {
		char *argv[] = {"losetup", "-d", loopdev, NULL};

		if (run(argv, NULL, 0) != 0)
			fprintf(stderr, "losetup -d %s failed (autoclear detaches it)\n", loopdev);
		loopdev[0] = '\0';
	}
	if (keeper >= 0)
		close(keeper);
	keeper = -1;
	if (scratch[0])
		nftw(scratch, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	scratch[0] = '\0';
}

static int write_random_file(const char *path, uint64_t size)
{
	static unsigned char buf[1 << 16];
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0)
		return -1;
	for (uint64_t off = 0; off < size; off += sizeof(buf)) {
		if (getrandom(buf, sizeof(buf), 0) != (ssize_t)sizeof(buf) ||
		    write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
			close(fd);
			return -1;
		}
	}
	return close(fd);
}

/* Sets up the loop device; false when this machine cannot (skip). */
static bool setup_loop(void)
{
	const char *base = getenv("TEST_TMPDIR");
	char *argv[] = {"losetup", "--find", "--show", backing, NULL};
	char out[128], tail;
	unsigned n;
	struct loop_info64 info;

	if (mkdir(base, 0755) < 0 && errno != EEXIST)
		return false;
	snprintf(scratch, sizeof(scratch), "%s/device.XXXXXX", base);
	if (!mkdtemp(scratch)) {
		scratch[0] = '\0';
		return false;
	}
	snprintf(backing, sizeof(backing), "%s/backing.img", scratch);
	snprintf(mnt, sizeof(mnt), "%s/mnt", scratch);
	if (mkdir(mnt, 0700) < 0 || write_random_file(backing, DEVICE_SIZE) < 0)
		return false;
	if (run(argv, out, sizeof(out)) != 0) {
		fprintf(stderr, "losetup --find --show failed\n");
		return false;
	}
	out[strcspn(out, "\n")] = '\0';
	/* Exactly "/dev/loopN": never anything else. */
	if (sscanf(out, "/dev/loop%u%c", &n, &tail) != 1 || strlen(out) >= sizeof(loopdev)) {
		fprintf(stderr, "unexpected losetup output '%s'\n", out);
		return false;
	}
	memcpy(loopdev, out, strlen(out) + 1);
	keeper = open(loopdev, O_RDONLY | O_CLOEXEC);
	if (keeper < 0)
		return false;
	/* Detach by itself once the last descriptor (ours) is closed. */
	if (ioctl(keeper, LOOP_GET_STATUS64, &info) == 0) {
		info.lo_flags |= LO_FLAGS_AUTOCLEAR;
		(void)ioctl(keeper, LOOP_SET_STATUS64, &info);
	}
	return true;
}

static int teardown(void **state)
{
	(void)state;
	do_umount();
	return 0;
}

/* FNV-1a of the backing file. */
static uint64_t backing_hash(void)
{
	static unsigned char buf[1 << 16];
	uint64_t h = 0xcbf29ce484222325ULL;
	ssize_t n;
	int fd = open(backing, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ buf[i]) * 0x100000001b3ULL;
	assert_int_equal(n, 0);
	close(fd);
	return h;
}

static struct cfg_target dev_cfg(const char *path)
{
	return (struct cfg_target){
		.name = "d",
		.kind = CFG_TARGET_DEVICE,
		.path = (char *)path,
		.direct = true,
	};
}

static bool pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static dev_t loop_rdev(void)
{
	struct stat st;

	assert_int_equal(stat(loopdev, &st), 0);
	assert_true(S_ISBLK(st.st_mode));
	return st.st_rdev;
}

/* mkfs.ext4 on the loop device, once; skips without mkfs.ext4. */
static void need_fs(void)
{
	/* No lazy init: a mounted fs must not write in the background. */
	char *argv[] = {"mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0",
			loopdev,     NULL};
	int r;

	if (have_fs)
		return;
	r = run(argv, NULL, 0);
	if (r == 127)
		skip(); /* no mkfs.ext4 */
	assert_int_equal(r, 0);
	have_fs = true;
}

/* Mounts the loop device read-only (nothing written behind our back): 0 or errno. */
static int try_mount(void)
{
	if (mount(loopdev, mnt, "ext4", MS_RDONLY, NULL) < 0)
		return errno;
	mounted = true;
	return 0;
}

/* ------------------------------------------------------------------- tests */

static void test_read_only(void **state)
{
	struct cfg_target cfg = dev_cfg(loopdev);
	struct target t;
	struct target_desc d;
	uint64_t before = backing_hash();
	unsigned char *buf = NULL, *file;
	size_t len = DEVICE_SIZE;
	int fd;

	(void)state;
	target_init(&t, &cfg);
	target_describe(&t, &d); /* not opened yet: nothing known */
	assert_string_equal(d.fstype, "");
	assert_string_equal(d.device, "");
	assert_int_equal(target_open(&t), 0);
	assert_true(t.fd >= 0);
	assert_false(t.writable);
	/* iopulse_target_info: no filesystem, the loop device's kernel name, no model. */
	target_describe(&t, &d);
	assert_string_equal(d.fstype, "");
	assert_string_equal(d.device, loopdev + strlen("/dev/"));
	assert_string_equal(d.model, "");
	assert_string_equal(d.source, ""); /* a device is not on a mount */
	assert_int_equal(fcntl(t.fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	assert_true(fcntl(t.fd, F_GETFL) & O_DIRECT);
	assert_true(fcntl(t.fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(t.data_start, 0);
	assert_int_equal(t.data_end, DEVICE_SIZE);
	assert_true(pow2(t.mem_align) && t.mem_align <= 4096);
	assert_true(pow2(t.offset_align) && t.offset_align >= 512 && t.offset_align <= 4096);
	assert_true(t.pinned);
	assert_true(t.dev == loop_rdev());
	assert_string_equal(t.file_path, loopdev);
	assert_int_equal(target_check(&t), 0);

	/* Reads through the target see the backing file's bytes. */
	assert_int_equal(posix_memalign((void **)&buf, 4096, len), 0);
	assert_int_equal(pread(t.fd, buf, len, 0), (ssize_t)len);
	file = malloc(len);
	assert_non_null(file);
	fd = open(backing, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, file, len, 0), (ssize_t)len);
	close(fd);
	assert_memory_equal(buf, file, len);
	free(buf);
	free(file);

	/* A read-only target claims nothing: others may still claim the device. */
	fd = open(loopdev, O_RDONLY | O_EXCL | O_CLOEXEC);
	assert_true(fd >= 0);
	close(fd);

	target_close(&t);
	assert_int_equal(t.fd, -1);
	assert_true(backing_hash() == before);
}

static void test_write_needs_flag(void **state)
{
	struct cfg_target cfg = dev_cfg(loopdev);
	struct target t;
	uint64_t before = backing_hash();
	int claim;

	(void)state;
	/* Hold the kernel's claim: had target_open() tried to open for writing, it
	 * would report EBUSY, not the missing flag. */
	claim = open(loopdev, O_RDONLY | O_EXCL | O_CLOEXEC);
	assert_true(claim >= 0);
	target_init(&t, &cfg);
	t.want_write = true;
	assert_int_equal(target_open(&t), -EPERM);
	close(claim);
	assert_int_equal(t.fd, -1);
	assert_false(t.writable);
	assert_non_null(strstr(t.error, "allow_device_writes: true"));
	assert_non_null(strstr(t.error, loopdev));
	assert_true(backing_hash() == before);
}

static void test_writable(void **state)
{
	struct cfg_target cfg = dev_cfg(loopdev);
	struct target t, t2;
	unsigned char *blk = NULL, back[4096];
	int fd;

	(void)state;
	cfg.allow_device_writes = true;
	target_init(&t, &cfg);
	t.want_write = true;
	assert_int_equal(target_open(&t), 0);
	assert_true(t.writable);
	assert_int_equal(fcntl(t.fd, F_GETFL) & O_ACCMODE, O_RDWR);
	assert_true(fcntl(t.fd, F_GETFL) & O_DIRECT);
	assert_int_equal(t.data_end, DEVICE_SIZE);
	assert_int_equal(target_check(&t), 0);

	/* The kernel's claim: nobody else gets the device exclusively. */
	fd = open(loopdev, O_RDWR | O_EXCL | O_CLOEXEC);
	assert_int_equal(fd, -1);
	assert_int_equal(errno, EBUSY);
	target_init(&t2, &cfg);
	t2.want_write = true;
	assert_int_equal(target_open(&t2), -EBUSY);
	assert_int_equal(t2.fd, -1);
	assert_non_null(strstr(t2.error, "is in use (EBUSY on exclusive open): refusing to write "
					 "to it"));

	/* Writes reach the device (ours: the backing file). */
	assert_int_equal(posix_memalign((void **)&blk, 4096, 4096), 0);
	for (int i = 0; i < 4096; i++)
		blk[i] = (unsigned char)(i * 13 + 1);
	assert_int_equal(pwrite(t.fd, blk, 4096, 8192), 4096);
	assert_int_equal(fdatasync(t.fd), 0);
	fd = open(backing, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, back, 4096, 8192), 4096);
	close(fd);
	assert_memory_equal(back, blk, 4096);
	free(blk);

	/* Closing releases the claim. */
	target_close(&t);
	assert_false(t.writable);
	fd = open(loopdev, O_RDWR | O_EXCL | O_CLOEXEC);
	assert_true(fd >= 0);
	close(fd);
}

static void test_symlink(void **state)
{
	char link[PATH_MAX + 32];
	struct cfg_target cfg;
	struct target t;
	dev_t rdev = loop_rdev();

	(void)state;
	snprintf(link, sizeof(link), "%s/by-id-disk", scratch);
	(void)unlink(link);
	assert_int_equal(symlink(loopdev, link), 0);
	cfg = dev_cfg(link);
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), 0);
	assert_string_equal(t.file_path, loopdev); /* resolved */
	assert_true(t.dev == rdev);
	assert_int_equal(t.data_end, DEVICE_SIZE);
	assert_int_equal(target_check(&t), 0);

	/* The link now names something else: the target is not that. */
	assert_int_equal(unlink(link), 0);
	assert_int_equal(symlink("/dev/null", link), 0);
	assert_int_equal(target_check(&t), -EXDEV);
	assert_int_equal(t.fd, -1);
	assert_non_null(strstr(t.error, "was it replaced?"));
	assert_int_equal(target_open(&t), -ENOTBLK);

	/* Back to the device: fine again. */
	assert_int_equal(unlink(link), 0);
	assert_int_equal(symlink(loopdev, link), 0);
	assert_int_equal(target_open(&t), 0);
	target_close(&t);

	/* Pinned on another device (as when the link was re-pointed between runs). */
	t.dev = makedev(major(rdev), minor(rdev) + 1);
	assert_int_equal(target_open(&t), -EXDEV);
	assert_non_null(strstr(t.error, "not opening it"));
	t.dev = rdev;

	/* Link gone: stale while open, missing on open. */
	assert_int_equal(target_open(&t), 0);
	assert_int_equal(unlink(link), 0);
	assert_int_equal(target_check(&t), -ESTALE);
	assert_int_equal(target_open(&t), -ENOENT);

	/* Messages name both the configured path and the device. */
	assert_int_equal(symlink(loopdev, link), 0);
	t.want_write = true;
	assert_int_equal(target_open(&t), -EPERM);
	assert_non_null(strstr(t.error, link));
	assert_non_null(strstr(t.error, loopdev));
	assert_int_equal(unlink(link), 0);
}

static void test_not_block_device(void **state)
{
	char file[PATH_MAX + 32], link[PATH_MAX + 32], missing[PATH_MAX + 32];
	struct cfg_target cfg;
	struct target t;
	int fd;

	(void)state;
	snprintf(file, sizeof(file), "%s/plain", scratch);
	snprintf(link, sizeof(link), "%s/plain-link", scratch);
	snprintf(missing, sizeof(missing), "%s/missing", scratch);
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	close(fd);
	(void)unlink(link);
	assert_int_equal(symlink(file, link), 0);

	cfg = dev_cfg(file);
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), -ENOTBLK);
	assert_non_null(strstr(t.error, "is not a block device: for a regular file, use 'file:'"));
	assert_int_equal(t.fd, -1);
	assert_false(t.pinned);
	cfg.path = link;
	assert_int_equal(target_open(&t), -ENOTBLK);
	cfg.path = scratch;
	assert_int_equal(target_open(&t), -ENOTBLK);
	assert_non_null(strstr(t.error, "use 'directory:'"));
	cfg.path = "/dev/null"; /* stat() only: never opened */
	assert_int_equal(target_open(&t), -ENOTBLK);
	cfg.path = missing;
	assert_int_equal(target_open(&t), -ENOENT);
	assert_non_null(strstr(t.error, "no such device"));
	assert_int_equal(t.fd, -1);
	assert_int_equal(unlink(link), 0);
	assert_int_equal(unlink(file), 0);
}

static void test_mounted_refused(void **state)
{
	struct cfg_target cfg = dev_cfg(loopdev);
	struct target t;
	char want[2 * PATH_MAX + 128];
	uint64_t before;
	int r;

	(void)state;
	need_fs();
	r = try_mount();
	if (r == ENODEV)
		skip(); /* no ext4 in this kernel */
	assert_int_equal(r, 0);
	before = backing_hash();

	/* Reading a mounted device is harmless and allowed. */
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), 0);
	assert_false(t.writable);
	target_close(&t);

	cfg.allow_device_writes = true;
	target_init(&t, &cfg);
	t.want_write = true;
	assert_int_equal(target_open(&t), -EBUSY);
	assert_int_equal(t.fd, -1);
	assert_false(t.writable);
	snprintf(want, sizeof(want), "%s is mounted at %s: refusing to write to it", loopdev, mnt);
	assert_string_equal(t.error, want);
	assert_true(backing_hash() == before);

	/* Unmounted: writable again. */
	do_umount();
	assert_int_equal(target_open(&t), 0);
	assert_true(t.writable);
	target_close(&t);
}

static void test_check_detects_mount(void **state)
{
	struct cfg_target cfg = dev_cfg(loopdev);
	struct target t;
	int r, ro;

	(void)state;
	need_fs();
	cfg.allow_device_writes = true;
	target_init(&t, &cfg);
	t.want_write = true;
	assert_int_equal(target_open(&t), 0);
	assert_int_equal(target_check(&t), 0);

	/* While we hold the exclusive claim, the kernel refuses the mount. */
	r = try_mount();
	if (r == ENODEV)
		skip();
	assert_int_equal(r, EBUSY);
	/* So lose the claim as if it had never been taken (our descriptor swapped
	 * for a plain read-only one of the same device), mount, and see
	 * target_check() stop the writes. */
	ro = open(loopdev, O_RDONLY | O_CLOEXEC);
	assert_true(ro >= 0);
	assert_true(dup3(ro, t.fd, O_CLOEXEC) == t.fd);
	close(ro);
	assert_int_equal(try_mount(), 0);
	assert_int_equal(target_check(&t), -EBUSY);
	assert_int_equal(t.fd, -1);
	assert_false(t.writable);
	assert_non_null(strstr(t.error, "is mounted at"));
	assert_non_null(strstr(t.error, mnt));
	assert_int_equal(target_open(&t), -EBUSY);
	do_umount();
	assert_int_equal(target_open(&t), 0);
	target_close(&t);
}

/* Last: changes the device's size. */
static void test_check_detects_shrink(void **state)
{
	struct cfg_target cfg = dev_cfg(loopdev);
	struct target t;

	(void)state;
	target_init(&t, &cfg);
	assert_int_equal(target_open(&t), 0);
	assert_int_equal(truncate(backing, DEVICE_SIZE / 2), 0);
	assert_int_equal(ioctl(keeper, LOOP_SET_CAPACITY, 0), 0);
	assert_int_equal(target_check(&t), -ESTALE);
	assert_non_null(strstr(t.error, "shrank"));
	assert_int_equal(t.fd, -1);
	assert_int_equal(target_open(&t), 0);
	assert_int_equal(t.data_end, DEVICE_SIZE / 2);
	target_close(&t);
}

int main(void)
{
	int failed;

	if (!getenv("TEST_TMPDIR")) {
		fprintf(stderr, "TEST_TMPDIR not set: skipping\n");
		return 77;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "not root: no loop devices, skipping\n");
		return 77;
	}
	atexit(cleanup_all);
	if (!setup_loop()) {
		fprintf(stderr, "cannot set up a loop device: skipping\n");
		cleanup_all();
		return 77;
	}
	fprintf(stderr, "loop device %s over %s\n", loopdev, backing);

	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_read_only, teardown),
		cmocka_unit_test_teardown(test_write_needs_flag, teardown),
		cmocka_unit_test_teardown(test_writable, teardown),
		cmocka_unit_test_teardown(test_symlink, teardown),
		cmocka_unit_test_teardown(test_not_block_device, teardown),
		cmocka_unit_test_teardown(test_mounted_refused, teardown),
		cmocka_unit_test_teardown(test_check_detects_mount, teardown),
		cmocka_unit_test_teardown(test_check_detects_shrink, teardown),
	};

	failed = cmocka_run_group_tests(tests, NULL, NULL);
	cleanup_all();
	return failed;
}
