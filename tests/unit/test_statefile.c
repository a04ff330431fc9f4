/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for daemon/targets/statefile.c, on a real directory: the file is
 * created and replaced whole (a new inode each time, mode 0600, no temporary
 * left), read back; what is not ours at its name (a plain file, a symbolic
 * link, a FIFO, a file with a second name, another user's) is refused and left
 * exactly as it was, and so is whatever a symbolic link points to; a directory
 * replaced after the first walk is refused; a killed writer's temporary is
 * swept only when it is provably ours.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/targets/statefile.h"
#include "tests/unit/testutil.h"

#define MAGIC "STATE-TEST\n"
#define NAME  ".state"
#define TMP   ".state.tmp."

struct fx {
	char dir[PATH_MAX];
	char file[PATH_MAX + 16];
	struct target_state_dir d;
};

static void fx_init(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	tu_new_dir(f->dir, sizeof(f->dir));
	snprintf(f->file, sizeof(f->file), "%s/" NAME, f->dir);
	f->d = (struct target_state_dir){.path = f->dir,
					 .name = NAME,
					 .tmp_prefix = TMP,
					 .magic = MAGIC,
					 .magic_len = sizeof(MAGIC) - 1};
}

/* The bytes of a state file of ours: the magic, then @body. */
static size_t content(char *out, size_t len, const char *body)
{
	return (size_t)snprintf(out, len, MAGIC "%s", body);
}

static void write_ok(struct fx *f, const char *body)
{
	char buf[256];
	size_t n = content(buf, sizeof(buf), body);
	int r = target_state_write(&f->d, buf, n);

	if (r != 0)
		fail_msg("target_state_write: %d: %s", r, f->d.error);
}

/* The directory's entries but . and .. (a temporary left behind shows). */
static unsigned entries(const char *dir)
{
	char cmd[PATH_MAX + 64], line[64];
	unsigned n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	if (fgets(line, sizeof(line), p))
		n = (unsigned)atoi(line);
	pclose(p);
	return n;
}

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

/* Created, read back, replaced by a new inode with the new bytes; 0600;
 * nothing else left in the directory. */
static void test_create_replace(void **state)
{
	struct stat a, b;
	struct fx f;
	void *data;
	size_t len;
	char want[256];

	(void)state;
	fx_init(&f);
	assert_int_equal(target_state_read(&f.d, 1024, &data, &len), -ENOENT);
	write_ok(&f, "one");
	assert_int_equal(stat(f.file, &a), 0);
	assert_int_equal(a.st_mode & 07777, 0600);
	assert_int_equal(target_state_read(&f.d, 1024, &data, &len), 0);
	assert_int_equal(len, content(want, sizeof(want), "one"));
	assert_memory_equal(data, want, len);
	free(data);
	write_ok(&f, "two, longer");
	assert_int_equal(stat(f.file, &b), 0);
	assert_int_not_equal(a.st_ino, b.st_ino);
	assert_int_equal(target_state_read(&f.d, 1024, &data, &len), 0);
	assert_int_equal(len, content(want, sizeof(want), "two, longer"));
	assert_memory_equal(data, want, len);
	free(data);
	assert_int_equal(entries(f.dir), 1);
	/* Over the bound: refused. */
	assert_int_equal(target_state_read(&f.d, 4, &data, &len), -EFBIG);
	assert_non_null(strstr(f.d.error, "more than a state file can be"));
}

/* A plain file of ours without the magic: read (the caller judges the bytes),
 * never replaced, left as it was. */
static void test_foreign_plain_file(void **state)
{
	struct stat a, b;
	struct fx f;
	char *text;
	size_t len;
	void *data;

	(void)state;
	fx_init(&f);
	write_file(f.file, "an administrator's notes\n");
	assert_int_equal(stat(f.file, &a), 0);
	assert_int_equal(target_state_read(&f.d, 1024, &data, &len), 0);
	free(data);
	assert_int_equal(target_state_write(&f.d, MAGIC "x", sizeof(MAGIC)), -EEXIST);
	assert_non_null(strstr(f.d.error, "not an iopulse state file"));
	assert_int_equal(stat(f.file, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	text = tu_read_all(f.file, &len);
	assert_string_equal(text, "an administrator's notes\n");
	free(text);
	assert_int_equal(entries(f.dir), 1);
}

/* A symbolic link at the name, to a file of ours elsewhere: neither followed
 * for reading nor replaced; the link and its target stay as they were. */
static void test_symlink(void **state)
{
	char other[PATH_MAX + 16], buf[64], link[PATH_MAX];
	struct fx f;
	size_t len;
	void *data;
	char *text;
	ssize_t n;

	(void)state;
	fx_init(&f);
	snprintf(other, sizeof(other), "%s/elsewhere", f.dir);
	content(buf, sizeof(buf), "theirs");
	write_file(other, buf);
	assert_int_equal(symlink("elsewhere", f.file), 0);
	assert_int_equal(target_state_read(&f.d, 1024, &data, &len), -EEXIST);
	assert_non_null(strstr(f.d.error, "a symbolic link"));
	assert_int_equal(target_state_write(&f.d, MAGIC "x", sizeof(MAGIC)), -EEXIST);
	n = readlink(f.file, link, sizeof(link) - 1);
	assert_int_equal(n, strlen("elsewhere"));
	text = tu_read_all(other, &len);
	assert_string_equal(text, buf);
	free(text);
	assert_int_equal(entries(f.dir), 2);
}

/* A FIFO is never opened (a read would block); a second hard link is
 * somebody's file given our name: refused, untouched. */
static void test_fifo_and_links(void **state)
{
	char other[PATH_MAX + 16], buf[64];
	struct stat st;
	struct fx f;
	size_t len;
	void *data;

	(void)state;
	fx_init(&f);
	assert_int_equal(mkfifo(f.file, 0600), 0);
	assert_int_equal(target_state_read(&f.d, 1024, &data, &len), -EEXIST);
	assert_int_equal(target_state_write(&f.d, MAGIC "x", sizeof(MAGIC)), -EEXIST);
	assert_int_equal(unlink(f.file), 0);
	snprintf(other, sizeof(other), "%s/theirs", f.dir);
	content(buf, sizeof(buf), "linked");
	write_file(other, buf);
	assert_int_equal(link(other, f.file), 0);
	assert_int_equal(target_state_read(&f.d, 1024, &data, &len), -EEXIST);
	assert_non_null(strstr(f.d.error, "hard link"));
	assert_int_equal(target_state_write(&f.d, MAGIC "x", sizeof(MAGIC)), -EEXIST);
	assert_int_equal(stat(other, &st), 0);
	assert_int_equal(st.st_nlink, 2);
}

/* Another user's file (as root: one chowned away) is never ours. */
static void test_other_owner(void **state)
{
	struct fx f;
	size_t len;
	void *data;

	(void)state;
	if (geteuid() != 0)
		skip();
	fx_init(&f);
	write_ok(&f, "ours once");
	assert_int_equal(chown(f.file, 65534, 65534), 0);
	assert_int_equal(target_state_read(&f.d, 1024, &data, &len), -EEXIST);
	assert_non_null(strstr(f.d.error, "owned by uid 65534"));
	assert_int_equal(target_state_write(&f.d, MAGIC "x", sizeof(MAGIC)), -EEXIST);
}

/* The directory replaced after the first walk: refused, nothing written in
 * the new one. */
static void test_dir_replaced(void **state)
{
	char moved[PATH_MAX + 16];
	struct fx f;
	size_t len;
	void *data;

	(void)state;
	fx_init(&f);
	write_ok(&f, "one");
	snprintf(moved, sizeof(moved), "%s.moved", f.dir);
	assert_int_equal(rename(f.dir, moved), 0);
	assert_int_equal(mkdir(f.dir, 0700), 0);
	assert_int_equal(target_state_write(&f.d, MAGIC "x", sizeof(MAGIC)), -EXDEV);
	assert_non_null(strstr(f.d.error, "no longer the directory"));
	assert_int_equal(target_state_read(&f.d, 1024, &data, &len), -EXDEV);
	assert_int_equal(entries(f.dir), 0);
	assert_int_equal(rmdir(f.dir), 0);
	assert_int_equal(rename(moved, f.dir), 0);
	write_ok(&f, "two");
}

/* A killed writer's temporaries: ours (our magic, or empty) and unlocked are
 * removed by the first write; a locked one, one without our magic, one whose
 * name is not exactly ours, are left. */
static void test_sweep(void **state)
{
	char ours[PATH_MAX + 64], empty[PATH_MAX + 64], locked[PATH_MAX + 64];
	char foreign[PATH_MAX + 64], odd[PATH_MAX + 64];
	struct fx f;
	int lk;

	(void)state;
	fx_init(&f);
	snprintf(ours, sizeof(ours), "%s/" TMP "0123456789abcdef", f.dir);
	snprintf(empty, sizeof(empty), "%s/" TMP "00000000000000ff", f.dir);
	snprintf(locked, sizeof(locked), "%s/" TMP "fedcba9876543210", f.dir);
	snprintf(foreign, sizeof(foreign), "%s/" TMP "aaaaaaaaaaaaaaaa", f.dir);
	snprintf(odd, sizeof(odd), "%s/" TMP "0123456789abcdeg", f.dir);
	write_file(ours, MAGIC "half");
	write_file(empty, "");
	write_file(locked, MAGIC "being written");
	write_file(foreign, "notes\n");
	write_file(odd, MAGIC "x");
	lk = open(locked, O_RDONLY | O_CLOEXEC);
	assert_true(lk >= 0);
	assert_int_equal(flock(lk, LOCK_EX), 0);
	write_ok(&f, "one");
	assert_int_equal(f.d.stale_removed, 2);
	assert_int_equal(access(ours, F_OK), -1);
	assert_int_equal(access(empty, F_OK), -1);
	assert_int_equal(access(locked, F_OK), 0);
	assert_int_equal(access(foreign, F_OK), 0);
	assert_int_equal(access(odd, F_OK), 0);
	close(lk);
	write_ok(&f, "two"); /* once per directory */
	assert_int_equal(access(locked, F_OK), 0);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_replace), cmocka_unit_test(test_foreign_plain_file),
		cmocka_unit_test(test_symlink),	       cmocka_unit_test(test_fifo_and_links),
		cmocka_unit_test(test_other_owner),    cmocka_unit_test(test_dir_replaced),
		cmocka_unit_test(test_sweep),
	};

	return cmocka_run_group_tests_name("statefile", tests, tu_scratch_setup,
					   tu_scratch_teardown);
}
