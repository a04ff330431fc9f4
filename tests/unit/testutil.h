/* SPDX-License-Identifier: MIT */
/*
 * testutil — what several unit tests share: a scratch directory of their own
 * under $TEST_TMPDIR, golden-file comparison with UPDATE_GOLDEN=1 to
 * regenerate, and looking up a family in a metrics snapshot. Linked into every
 * unit test binary.
 */
#ifndef IOPULSE_TESTUTIL_H
#define IOPULSE_TESTUTIL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/status/status.h"
#include "daemon/targets/target.h"

struct lane;
struct metrics_snapshot;
struct snap_family;

/* The scratch directory made by tu_scratch_setup(); empty before. */
extern char tu_scratch[PATH_MAX];

/* cmocka group setup/teardown: mkdtemp "$TEST_TMPDIR/<name>.XXXXXX" (name from
 * the test binary), and remove it with everything in it (never following a
 * symlink out of it). */
int tu_scratch_setup(void **state);
int tu_scratch_teardown(void **state);

/* Removes @dir and everything in it, never following a symlink out of it nor
 * crossing into another filesystem; 0 or -1 as nftw(). */
int tu_rm_tree(const char *dir);

/* The whole file, NUL-terminated; NULL if it cannot be read. Caller frees. */
char *tu_read_all(const char *path, size_t *len);

/* Fails the test unless @data[0..len) equals the golden file @path; with
 * UPDATE_GOLDEN=1 in the environment, writes the file instead. */
void tu_check_golden(const char *path, const char *data, size_t len, int binary);

/* CLOCK_MONOTONIC in seconds, for how long a step took. */
double tu_now_s(void);

/* Makes a fresh subdirectory of tu_scratch; its path in @out[@len]. */
void tu_new_dir(char *out, size_t len);

/* A stand-in for /proc (cpu_wait_setup()'s @proc) in a fresh subdirectory of
 * tu_scratch, its path in @root[@len]: its thread-self/schedstat says, to
 * every thread, that it has waited @wait_ns for a CPU (and run, 5 times). */
void tu_fake_proc(char *root, size_t len, uint64_t wait_ns);

/* The fake /proc at @root says @wait_ns from now on (one pwrite() of the same
 * length: a reader sees the old text or the new one). */
void tu_fake_wait(const char *root, uint64_t wait_ns);

/* A directory target laid out in a fresh subdirectory of tu_scratch. */
struct tu_dir_target {
	char dir[PATH_MAX];
	struct cfg_target tcfg;
	struct target t;
};

/* Lays out and opens @f with @size data bytes (O_DIRECT); fails the test if it
 * cannot, or if the target is not writable. */
void tu_open_dir_target(struct tu_dir_target *f, uint64_t size);

/* Sends stderr (where the log goes) to a fresh temporary file, until
 * tu_capture_end(). */
void tu_capture_begin(void);

/* Restores stderr (do it before asserting: cmocka reports there) and returns the
 * text captured since tu_capture_begin(); caller frees. */
char *tu_capture_end(void);

/* Waits until @l has run everything queued (a minute at most: 2 cores shared by
 * many; then fails the test). Polls: the lane signals nobody when it goes idle,
 * and the daemon has no use for that. Never reads eng_now_ns(), which a test
 * may own. */
void tu_lane_idle_wait(struct lane *l);

/* How many times @needle occurs in @text (not overlapping). */
unsigned tu_count(const char *text, const char *needle);

/* Whether a capture is under way (a test that failed during one). */
bool tu_capturing(void);

/* The family called @name in @s; NULL if there is none. */
const struct snap_family *tu_find_family(const struct metrics_snapshot *s, const char *name);

/* Inflate one gzip member @in[0..len) (header, CRC and length checked; nothing may
 * follow it); a malloc()ed buffer of *out_len bytes. Fails the test otherwise. */
char *tu_gunzip(const void *in, size_t len, size_t *out_len);

/* The judgement keys of the status tests: iopulse.yaml(5)'s defaults (4x,
 * 10m warm-up, tails 4x at 2%, stalls of 1s, slow after 2 minutes, good after
 * 3) but a fixed floor of 1 ms (as before 'auto'), which the tests vary. */
struct status_judging tu_judging(void);

#endif
