/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "daemon/sched/lane.h"
#include "daemon/metrics/metrics.h"

char tu_scratch[PATH_MAX];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int tu_scratch_setup(void **state)
{
	extern char *program_invocation_short_name;
	const char *base = getenv("TEST_TMPDIR");

	(void)state;
	if (!base)
		return -1;
	if (mkdir(base, 0755) < 0 && errno != EEXIST)
		return -1;
	snprintf(tu_scratch, sizeof(tu_scratch), "%s/%s.XXXXXX", base,
		 program_invocation_short_name);
	return mkdtemp(tu_scratch) ? 0 : -1;
}

int tu_rm_tree(const char *dir)
{
	return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

int tu_scratch_teardown(void **state)
{
	(void)state;
	/* Our own mkdtemp directory only; never follow a symlink out. */
	return tu_rm_tree(tu_scratch);
}

char *tu_read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *data;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
		free(data);
		data = NULL;
	}
	fclose(f);
	if (data) {
		data[n] = '\0';
		*len = (size_t)n;
	}
	return data;
}

void tu_check_golden(const char *path, const char *data, size_t len, int binary)
{
	const char *update = getenv("UPDATE_GOLDEN");
	size_t want_len = 0;
	char *want;

	if (update && strcmp(update, "1") == 0) {
		FILE *f = fopen(path, "wb");

		assert_non_null(f);
		assert_int_equal(fwrite(data, 1, len, f), len);
		assert_int_equal(fclose(f), 0);
		print_message("wrote %s\n", path);
		return;
	}
	want = tu_read_all(path, &want_len);
	if (!want)
		fail_msg("cannot read %s (UPDATE_GOLDEN=1 writes it)", path);
	if (want_len != len || memcmp(want, data, len) != 0) {
		if (!binary)
			print_error("--- got ---\n%.*s--- end ---\n", (int)len, data);
		free(want);
		fail_msg("rendered page differs from %s (UPDATE_GOLDEN=1 rewrites it)", path);
	}
	free(want);
}

double tu_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void tu_new_dir(char *out, size_t len)
{
	assert_true(snprintf(out, len, "%s/d.XXXXXX", tu_scratch) < (int)len);
	assert_non_null(mkdtemp(out));
}

void tu_fake_proc(char *root, size_t len, uint64_t wait_ns)
{
	char path[PATH_MAX + 32];
	int fd;

	tu_new_dir(root, len);
	snprintf(path, sizeof(path), "%s/thread-self", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/thread-self/schedstat", root);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	tu_fake_wait(root, wait_ns);
}

void tu_fake_wait(const char *root, uint64_t wait_ns)
{
	char path[PATH_MAX + 32], text[64];
	int fd, n;

	snprintf(path, sizeof(path), "%s/thread-self/schedstat", root);
	n = snprintf(text, sizeof(text), "1000000 %020llu 5\n", (unsigned long long)wait_ns);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, text, (size_t)n, 0), n);
	close(fd);
}

void tu_open_dir_target(struct tu_dir_target *f, uint64_t size)
{
	tu_new_dir(f->dir, sizeof(f->dir));
	f->tcfg = (struct cfg_target){
		.name = "t",
		.kind = CFG_TARGET_DIRECTORY,
		.path = f->dir,
		.size = size,
		.direct = true,
	};
	target_init(&f->t, &f->tcfg);
	assert_int_equal(target_open(&f->t), 0);
	assert_true(f->t.writable);
}

const struct snap_family *tu_find_family(const struct metrics_snapshot *s, const char *name)
{
	for (unsigned i = 0; i < s->n_families; i++)
		if (strcmp(s->families[i].name, name) == 0)
			return &s->families[i];
	return NULL;
}

/* ---------------------------------------------------------------- stderr */

static FILE *capture_file;
static int saved_stderr = -1;

void tu_capture_begin(void)
{
	assert_null(capture_file);
	fflush(stderr);
	capture_file = tmpfile();
	assert_non_null(capture_file);
	saved_stderr = dup(2);
	assert_true(saved_stderr >= 0);
	assert_int_equal(dup2(fileno(capture_file), 2), 2);
}

char *tu_capture_end(void)
{
	char *text;
	long len;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	saved_stderr = -1;
	len = ftell(capture_file);
	text = calloc(1, (size_t)len + 1);
	rewind(capture_file);
	if (text && len > 0 && fread(text, 1, (size_t)len, capture_file) != (size_t)len)
		text[0] = '\0';
	fclose(capture_file);
	capture_file = NULL;
	assert_non_null(text);
	return text;
}

bool tu_capturing(void)
{
	return capture_file != NULL;
}

unsigned tu_count(const char *text, const char *needle)
{
	unsigned n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

void tu_lane_idle_wait(struct lane *l)
{
	const struct timespec tick = {.tv_nsec = 1000000};

	for (unsigned i = 0; i < 60000; i++) {
		bool idle;

		pthread_mutex_lock(&l->mu);
		idle = !l->busy && l->q_len == 0;
		pthread_mutex_unlock(&l->mu);
		if (idle)
			return;
		nanosleep(&tick, NULL);
	}
	fail_msg("the lane did not finish its queue within a minute");
}

char *tu_gunzip(const void *in, size_t len, size_t *out_len)
{
	z_stream zs = {0};
	size_t cap = 1 << 16;
	char *out = malloc(cap);
	int r;

	assert_non_null(out);
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK); /* gzip only */
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	do {
		if (zs.total_out == cap) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
		zs.next_out = (Bytef *)out + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		r = inflate(&zs, Z_NO_FLUSH);
		assert_true(r == Z_OK || r == Z_STREAM_END);
	} while (r != Z_STREAM_END);
	assert_int_equal(zs.avail_in, 0); /* nothing after the member */
	*out_len = zs.total_out;
	inflateEnd(&zs);
	return out;
}

struct status_judging tu_judging(void)
{
	return (struct status_judging){.slow_factor = 4,
				       .slow_floor_ns = 1000000,
				       .warmup_minutes = 10,
				       .tail_factor = 4,
				       .tail_share = 0.02,
				       .stall_ns = 1000000000,
				       .slow_minutes = 2,
				       .ok_minutes = 3};
}
