/* SPDX-License-Identifier: MIT */
/*
 * verify: the verify probe, through verify_probe_ops as the daemon runs it, over
 * a real directory target in a mkdtemp directory of our own under
 * $TEST_TMPDIR: its file corrupted behind its back the three ways it tells
 * apart, a byte of its blocks at a time, torn and left by an older iopulse;
 * and its I/O seen through an engine of our own.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "daemon/log.h"
#include "daemon/probes/probe.h"
#include "daemon/probes/verify.h"

#define MIB (1ULL << 20)
#define BS  4096u

/* ---------------------------------------------------------------- probe */

struct fixture {
	struct tu_dir_target f;
	struct cfg_probe cfg;
	struct probe p;
	struct probe_outcome out;
	char file[PATH_MAX + 64]; /* the probe's own file */
};

static void fixture_open(struct fixture *x, unsigned blocks, unsigned per_run)
{
	tu_open_dir_target(&x->f, MIB);
	x->cfg = (struct cfg_probe){
		.name = "v",
		.kind = CFG_PROBE_VERIFY,
		.interval_ns = 60000000000ULL,
		.block_size = BS,
		.timeout_ns = CFG_DEFAULT_TIMEOUT_NS,
		.engine = "sync",
		.verify_blocks = blocks,
		.verify_per_run = per_run,
	};
	snprintf(x->file, sizeof(x->file), "%s/" VERIFY_FILE_PREFIX "v", x->f.dir);
	assert_int_equal(probe_init(&x->p, &x->cfg, &x->f.t, NULL, 0), 0);
	assert_int_equal(probe_outcome_init(&x->out, (const uint64_t[]){1000}, 1), 0);
}

static void fixture_close(struct fixture *x)
{
	probe_outcome_free(&x->out);
	probe_free(&x->p);
	target_close(&x->f.t);
}

/* One run; its outcome in x->out. */
static void run(struct fixture *x)
{
	probe_outcome_clear(&x->out);
	if (probe_run(&x->p, NULL, &x->out) != 0)
		fail_msg("run: %s", x->out.why ? x->out.why : "?");
	assert_int_equal(x->out.io_error, 0);
}

/* Block @i of the probe's file, after its header and its state block; -1:
 * the state block. */
static uint64_t block_at(int i)
{
	return TARGET_HEADER_SIZE + CFG_VERIFY_STATE_SIZE + (int64_t)i * BS;
}

/* Reads or writes block @i of the probe's file behind the probe's back. */
static void file_io(struct fixture *x, bool write, int i, unsigned char *buf)
{
	int fd = open(x->file, (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC);

	assert_true(fd >= 0);
	if (write)
		assert_int_equal(pwrite(fd, buf, BS, (off_t)block_at(i)), BS);
	else
		assert_int_equal(pread(fd, buf, BS, (off_t)block_at(i)), BS);
	assert_int_equal(fsync(fd), 0);
	close(fd);
}

/* The last run's notes for the log at @level (0: any) that say @words. */
static unsigned notes_with(const struct fixture *x, int level, const char *words)
{
	unsigned n = 0;

	for (unsigned i = 0; i < x->out.n_notes; i++) {
		const struct probe_note *note = &x->out.notes[i];

		n += (!level || note->level == level) && strstr(note->text, words);
	}
	return n;
}

/* Fails the test, printing the last run's notes. */
static void fail_notes(const struct fixture *x)
{
	for (unsigned i = 0; i < x->out.n_notes; i++)
		print_message("note %u (level %d, key %s): %s\n", i, x->out.notes[i].level,
			      x->out.notes[i].key ? x->out.notes[i].key : "none",
			      x->out.notes[i].text);
	fail_msg("the run's notes do not say what they should");
}

static uint64_t mismatches(const struct fixture *x)
{
	uint64_t n = 0;

	for (int k = 0; k < PROBE_MISMATCH_COUNT; k++)
		n += x->out.mismatches[k];
	return n;
}

/* @runs more runs, the last finding all @blocks blocks right: what was found
 * wrong has been rewritten since. */
static void right_again(struct fixture *x, int runs, unsigned blocks)
{
	for (int i = 0; i < runs; i++)
		run(x);
	assert_int_equal(x->out.blocks_checked, blocks);
	assert_int_equal(mismatches(x), 0);
}

/* A fresh file has no blocks to check; once every block was written, each run
 * checks them all, writes blocks_per_run of them, and finds nothing wrong. The
 * state is read once (at the open), saved before the first blocks are written
 * and after every run's blocks were synced, with a sync of its own. */
static void test_runs_clean(void **state)
{
	struct fixture x;

	(void)state;
	fixture_open(&x, 8, 2);
	assert_int_equal(verify_probe_ops.flags & PROBE_F_VERIFIES, PROBE_F_VERIFIES);
	run(&x);
	assert_int_equal(x.out.blocks_checked, 0);
	assert_int_equal(x.out.op[IO_WRITE].ios, 1 + 2 + 1);
	assert_int_equal(x.out.op[IO_FDATASYNC].ios, 3);
	assert_int_equal(x.out.op[IO_READ].ios, 1 + 8);
	/* Its I/O kept the target busy: the budget's duty cycle counts it. */
	assert_true(x.out.busy_ns > 0);
	assert_true(x.out.busy_ns >= x.out.op[IO_READ].io_ns + x.out.op[IO_WRITE].io_ns);
	for (int i = 0; i < 4; i++)
		run(&x);
	assert_int_equal(x.out.blocks_checked, 8);
	assert_int_equal(mismatches(&x), 0);
	/* As the budget counts a run: blocks + blocks_per_run + 1 writes, 2 syncs. */
	assert_int_equal(x.out.op[IO_READ].ios, 8);
	assert_int_equal(x.out.op[IO_WRITE].ios, 2 + 1);
	assert_int_equal(x.out.op[IO_FDATASYNC].ios, 2);
	assert_int_equal(access(x.file, F_OK), 0);
	fixture_close(&x);
}

/* Each kind of corruption is counted once, as its kind. */
static void test_corruption_kinds(void **state)
{
	static unsigned char a[BS], b[BS], old[BS];
	struct fixture x;
	char *log;

	(void)state;
	fixture_open(&x, 4, 1);
	for (int i = 0; i < 4; i++) /* every block written once */
		run(&x);
	file_io(&x, false, 0, old); /* block 0, to be brought back once rewritten */

	/* The payload of block 1 changed. */
	file_io(&x, false, 1, a);
	a[BS / 2] ^= 0xff;
	file_io(&x, true, 1, a);
	/* Block 2 holds block 3's contents: a misdirected write. */
	file_io(&x, false, 3, b);
	file_io(&x, true, 2, b);
	tu_capture_begin();
	run(&x); /* checks all four, then rewrites block 0 */
	log = tu_capture_end();
	assert_int_equal(x.out.blocks_checked, 4);
	assert_int_equal(x.out.mismatches[PROBE_MISMATCH_WRONG_DATA], 1);
	assert_int_equal(x.out.mismatches[PROBE_MISMATCH_WRONG_OFFSET], 1);
	assert_int_equal(x.out.mismatches[PROBE_MISMATCH_STALE], 0);
	/* The probe logs nothing itself: its notes say each one, for the lane to
	 * log under the probe's own key, an error. */
	assert_string_equal(log, "");
	free(log);
	assert_int_equal(x.out.n_notes, 2);
	for (unsigned i = 0; i < 2; i++)
		assert_string_equal(x.out.notes[i].key, "Verify v");
	if (notes_with(&x, LOG_LVL_ERROR, "Probe v: block at offset 12288 of ") != 1 ||
	    notes_with(&x, LOG_LVL_ERROR, ": wrong data (checksum fails") != 1 ||
	    notes_with(&x, LOG_LVL_ERROR, "Probe v: block at offset 16384 of ") != 1 ||
	    notes_with(&x, LOG_LVL_ERROR, ": wrong offset (a block written for another") != 1)
		fail_notes(&x);

	/* Block 0's newer generation is lost: the old one is back. */
	file_io(&x, true, 0, old);
	run(&x);
	assert_int_equal(x.out.mismatches[PROBE_MISMATCH_STALE], 1);
	if (x.out.n_notes != 1 ||
	    notes_with(&x, LOG_LVL_ERROR, "Probe v: block at offset 8192 of ") != 1 ||
	    notes_with(&x, LOG_LVL_ERROR, ": stale (an older generation: a lost write)") != 1)
		fail_notes(&x);
	/* Found wrong once is counted once: blocks 0 and 2 are not checked again
	 * until rewritten (block 1 was, by the last run). */
	assert_int_equal(x.out.blocks_checked, 2);
	run(&x);
	assert_int_equal(mismatches(&x), 0);
	for (int i = 0; i < 4; i++)
		run(&x);
	assert_int_equal(x.out.blocks_checked, 4); /* all rewritten, all good again */
	assert_int_equal(mismatches(&x), 0);
	fixture_close(&x);
}

/*
 * Everything a block carries is checked: one bit changed in its magic, its
 * checksum, its size, offset, generation or nonce, or anywhere in its payload
 * is wrong data, and so are zeros where a block was synced. Its payload is
 * random: nothing a compressing backend could drop.
 */
static void test_block_damage(void **state)
{
	static const unsigned at[] = {0, 8, 12, 16, 24, 32, BS / 2, BS - 1};
	static unsigned char b[BS], zero[BS];
	struct fixture x;

	(void)state;
	fixture_open(&x, 10, 1);
	for (int i = 0; i < 11; i++) /* every block written, then all checked */
		run(&x);
	assert_int_equal(x.out.blocks_checked, 10);
	assert_int_equal(mismatches(&x), 0);
	file_io(&x, false, 0, b);
	assert_memory_not_equal(b + VERIFY_HEADER_SIZE, zero, BS - VERIFY_HEADER_SIZE);
	for (unsigned k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		file_io(&x, false, (int)k + 1, b);
		b[at[k]] ^= 1;
		file_io(&x, true, (int)k + 1, b);
	}
	file_io(&x, true, 9, zero);
	run(&x);
	assert_int_equal(x.out.blocks_checked, 10);
	assert_int_equal(x.out.mismatches[PROBE_MISMATCH_WRONG_DATA], 9);
	assert_int_equal(mismatches(&x), 9);
	assert_int_equal(notes_with(&x, LOG_LVL_ERROR, ": wrong data (checksum fails"), 9);
	fixture_close(&x);
}

/*
 * What is left of the target's write budget (p.write_left) too small for a
 * run's writes: the run still reads and checks every block, finds the one
 * changed behind its back, and writes nothing (budget_cut); the blocks are
 * rewritten in the same order once a run's writes fit, exactly: 2 blocks and
 * the state, 12KiB here, and 4KiB more for a new file, whose state is written
 * before its blocks too.
 */
/* A run with one byte less than @need left writes nothing (budget_cut), one
 * with @need left writes exactly that. */
static void writes_fit(struct fixture *x, uint64_t need)
{
	x->p.write_left = need - 1;
	run(x);
	assert_true(x->out.budget_cut);
	assert_int_equal(x->out.op[IO_WRITE].ios, 0);
	x->p.write_left = need;
	run(x);
	assert_false(x->out.budget_cut);
	assert_int_equal(x->out.op[IO_WRITE].bytes, need);
}

static void test_budget_left(void **state)
{
	static unsigned char a[BS], b[BS];
	struct fixture x;

	(void)state;
	fixture_open(&x, 4, 2);
	writes_fit(&x, 4 * BS);
	x.p.write_left = UINT64_MAX;
	for (int i = 0; i < 2; i++) /* every block written and checked */
		run(&x);
	assert_int_equal(x.out.blocks_checked, 4);
	assert_false(x.out.budget_cut);

	file_io(&x, false, 1, a);
	a[BS / 2] ^= 0xff;
	file_io(&x, true, 1, a);
	x.p.write_left = 0;
	run(&x);
	assert_int_equal(x.out.blocks_checked, 4);
	assert_int_equal(x.out.mismatches[PROBE_MISMATCH_WRONG_DATA], 1);
	assert_true(x.out.budget_cut);
	assert_int_equal(x.out.op[IO_WRITE].ios, 0);
	assert_int_equal(x.out.op[IO_FDATASYNC].ios, 0);
	file_io(&x, false, 1, b);
	assert_memory_equal(a, b, BS); /* not rewritten */

	writes_fit(&x, 3 * BS);
	assert_int_equal(mismatches(&x), 0);
	fixture_close(&x);
}

/* The probe freed and made again on the same file: a restart. */
static void restart(struct fixture *x)
{
	probe_free(&x->p);
	assert_int_equal(probe_init(&x->p, &x->cfg, &x->f.t, NULL, 0), 0);
}

/* A write lost across a restart is stale: the generations a new probe expects
 * come from the state saved in the file, not from what it finds. */
static void test_restart_stale(void **state)
{
	static unsigned char old[BS];
	struct fixture x;

	(void)state;
	fixture_open(&x, 4, 1);
	for (int i = 0; i < 4; i++) /* generations 1..4 in blocks 0..3 */
		run(&x);
	file_io(&x, false, 0, old);
	run(&x); /* generation 5 in block 0, then the state saved */
	file_io(&x, true, 0, old);
	restart(&x);
	run(&x);
	assert_int_equal(x.out.blocks_checked, 4);
	assert_int_equal(x.out.mismatches[PROBE_MISMATCH_STALE], 1);
	assert_int_equal(mismatches(&x), 1);
	/* Counted once; rewritten in turn, it is right again. */
	right_again(&x, 4, 4);
	fixture_close(&x);
}

/* The state's own write lost (or a crash between the blocks' sync and it):
 * blocks newer than it says are fine, after the restart and ever after. */
static void test_restart_state_behind(void **state)
{
	static unsigned char st[BS];
	struct fixture x;

	(void)state;
	fixture_open(&x, 4, 2);
	for (int i = 0; i < 3; i++)
		run(&x);
	file_io(&x, false, -1, st);
	run(&x);
	run(&x);
	file_io(&x, true, -1, st); /* two runs' states lost */
	restart(&x);
	for (int i = 0; i < 4; i++) {
		run(&x);
		assert_int_equal(x.out.blocks_checked, 4);
		assert_int_equal(mismatches(&x), 0);
	}
	restart(&x);
	run(&x);
	assert_int_equal(mismatches(&x), 0);
	fixture_close(&x);
}

/* Block @i torn as a crash leaves it: its first half from @head, the rest as
 * it is. */
static void tear(struct fixture *x, int i, const unsigned char *head)
{
	static unsigned char b[BS];

	file_io(x, false, i, b);
	memcpy(b, head, BS / 2);
	file_io(x, true, i, b);
}

/* A crash while a run wrote its blocks can tear only the blocks the saved
 * state names as the next ones: torn there, a block is no mismatch after the
 * restart; torn anywhere else, it is wrong data. */
static void test_restart_torn(void **state)
{
	static unsigned char st[BS], b1[BS], b2[BS], head1[BS], head2[BS];
	struct fixture x;

	(void)state;
	fixture_open(&x, 4, 1);
	for (int i = 0; i < 5; i++) /* generation 5 in block 0, block 1 next */
		run(&x);
	file_io(&x, false, -1, st);
	file_io(&x, false, 1, b1);
	file_io(&x, false, 2, b2);
	run(&x); /* generations 6 and 7 in blocks 1 and 2: their first halves */
	run(&x);
	file_io(&x, false, 1, head1);
	file_io(&x, false, 2, head2);
	/* The run that wrote generation 6 stopped by a crash: the state names
	 * block 1 next, and generation 6 reached its first sectors, not the rest. */
	file_io(&x, true, -1, st);
	file_io(&x, true, 1, b1);
	tear(&x, 1, head1);
	/* Block 2 torn the same way by generation 7, which that state does not
	 * name: no crash of a run the state knows could have done it. */
	file_io(&x, true, 2, b2);
	tear(&x, 2, head2);
	restart(&x);
	run(&x);
	assert_int_equal(x.out.blocks_checked, 4);
	assert_int_equal(x.out.mismatches[PROBE_MISMATCH_WRONG_DATA], 1);
	assert_int_equal(mismatches(&x), 1);
	if (notes_with(&x, 0, "torn") != 1 ||
	    notes_with(&x, LOG_LVL_NOTICE, "Probe v: block at offset 12288 of ") != 1 ||
	    notes_with(&x, LOG_LVL_NOTICE, " is torn (its checksum fails)") != 1 ||
	    notes_with(&x, LOG_LVL_ERROR, "block at offset 16384 of") != 1 ||
	    notes_with(&x, LOG_LVL_ERROR, "wrong data") != 1)
		fail_notes(&x);
	/* Block 1 rewritten by that run, block 2 by the next: all right again. */
	right_again(&x, 2, 4);
	fixture_close(&x);
}

/* A damaged state is no state: said, the blocks taken as found (a write lost
 * before goes unseen, never a false mismatch), and a new state saved. */
static void test_state_damaged(void **state)
{
	static unsigned char old[BS], st[BS];
	struct fixture x;

	(void)state;
	fixture_open(&x, 4, 1);
	for (int i = 0; i < 4; i++)
		run(&x);
	file_io(&x, false, 0, old);
	run(&x);
	file_io(&x, true, 0, old);
	file_io(&x, false, -1, st);
	st[100] ^= 1;
	file_io(&x, true, -1, st);
	restart(&x);
	run(&x);
	assert_int_equal(x.out.blocks_checked, 4);
	assert_int_equal(mismatches(&x), 0);
	if (x.out.n_notes != 1 ||
	    notes_with(&x, LOG_LVL_WARNING, "Probe v: no saved state in ") != 1 ||
	    notes_with(&x, 0,
		       "(it is damaged: its checksum fails): its blocks are taken as they "
		       "are") != 1)
		fail_notes(&x);
	/* The state saved again: a write lost across the next restart is seen. */
	file_io(&x, false, 2, old);
	run(&x);
	run(&x); /* block 2 rewritten */
	file_io(&x, true, 2, old);
	restart(&x);
	run(&x);
	assert_int_equal(x.out.mismatches[PROBE_MISMATCH_STALE], 1);
	assert_int_equal(mismatches(&x), 1);
	fixture_close(&x);
}

/* A file of the format before states were saved (its blocks one place
 * earlier, their magic's last byte '1'): no state, and none of its blocks
 * taken for ours, so nothing is counted; they are rewritten in turn. Each
 * block of ours carries the offset the old format gave the block one place
 * further on, which it stands at (the state block is as large as a block
 * here): with its magic's last byte '1' it is that old block, and one more
 * takes the state's place. */
static void test_old_format(void **state)
{
	static unsigned char b[BS];
	struct fixture x;

	(void)state;
	fixture_open(&x, 4, 1);
	for (int i = 0; i < 4; i++)
		run(&x);
	for (int i = 3; i >= -1; i--) {
		file_io(&x, false, i < 0 ? 0 : i, b);
		b[7] = '1';
		file_io(&x, true, i, b);
	}
	restart(&x);
	run(&x);
	assert_int_equal(x.out.blocks_checked, 0);
	assert_int_equal(mismatches(&x), 0);
	if (notes_with(&x, LOG_LVL_NOTICE, "Probe v: no saved state in ") != 1 ||
	    notes_with(&x, 0, "(there is none: a new file, or one an older iopulse wrote)") != 1)
		fail_notes(&x);
	right_again(&x, 4, 4);
	fixture_close(&x);
}

/* A file removed under the probe fails the run that finds it gone, saying so;
 * the next makes a new one and starts over, expecting nothing of it. */
static void test_file_removed(void **state)
{
	struct fixture x;
	int r;

	(void)state;
	fixture_open(&x, 2, 2);
	run(&x);
	run(&x);
	assert_int_equal(x.out.blocks_checked, 2);
	assert_int_equal(unlink(x.file), 0);
	probe_outcome_clear(&x.out);
	r = probe_run(&x.p, NULL, &x.out);
	assert_int_equal(r, -ESTALE);
	assert_true(x.out.target_down);
	assert_non_null(x.out.why);
	assert_non_null(strstr(x.out.why, VERIFY_FILE_PREFIX "v was replaced or removed; "
							     "starting over with a new one"));
	run(&x);
	assert_int_equal(x.out.blocks_checked, 0);
	assert_int_equal(mismatches(&x), 0);
	run(&x);
	assert_int_equal(x.out.blocks_checked, 2);
	assert_int_equal(mismatches(&x), 0);
	fixture_close(&x);
}

/* Only a directory target has a file of the probe's own to hold the blocks. */
static void test_file_target_refused(void **state)
{
	struct fixture x;
	struct cfg_target fcfg;
	struct target t;

	(void)state;
	fixture_open(&x, 2, 1);
	fcfg = x.f.tcfg;
	fcfg.kind = CFG_TARGET_FILE;
	target_init(&t, &fcfg);
	probe_free(&x.p);
	assert_int_equal(probe_init(&x.p, &x.cfg, &t, NULL, 0), -EINVAL);
	probe_free(&x.p);
	fixture_close(&x);
}

/* A file of that name that iopulse did not make is never written to. */
static void test_foreign_file_refused(void **state)
{
	static const char text[] = "somebody else's\n";
	char buf[64] = "";
	struct fixture x;
	int fd;

	(void)state;
	fixture_open(&x, 2, 1);
	fd = open(x.file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), sizeof(text) - 1);
	close(fd);
	probe_outcome_clear(&x.out);
	assert_int_equal(probe_run(&x.p, NULL, &x.out), -EEXIST);
	assert_non_null(strstr(x.out.why, "not an iopulse probe file"));
	fd = open(x.file, O_RDONLY | O_CLOEXEC);
	assert_int_equal(read(fd, buf, sizeof(buf)), sizeof(text) - 1);
	close(fd);
	assert_string_equal(buf, text);
	fixture_close(&x);
}

static void write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* A victim's bytes and identity, to compare before and after. */
struct victim {
	char path[PATH_MAX + 64];
	struct stat st;
	char *data;
	size_t len;
};

static void victim_take(struct victim *v, const char *path)
{
	snprintf(v->path, sizeof(v->path), "%s", path);
	assert_int_equal(stat(path, &v->st), 0);
	v->data = tu_read_all(path, &v->len);
	assert_non_null(v->data);
}

static void victim_unchanged(struct victim *v)
{
	struct stat st;
	size_t len;
	char *now = tu_read_all(v->path, &len);

	assert_non_null(now);
	assert_int_equal(stat(v->path, &st), 0);
	assert_int_equal(st.st_ino, v->st.st_ino);
	assert_int_equal(st.st_size, v->st.st_size);
	assert_int_equal(st.st_mtim.tv_sec, v->st.st_mtim.tv_sec);
	assert_int_equal(st.st_mtim.tv_nsec, v->st.st_mtim.tv_nsec);
	assert_int_equal(len, v->len);
	assert_memory_equal(now, v->data, len);
	free(now);
	free(v->data);
}

/* One run, refused with -EEXIST and counted as the target's trouble, saying
 * @words. */
static void run_refused(struct fixture *x, const char *words)
{
	probe_outcome_clear(&x->out);
	assert_int_equal(probe_run(&x->p, NULL, &x->out), -EEXIST);
	assert_true(x->out.target_down);
	assert_non_null(x->out.why);
	if (!strstr(x->out.why, words))
		fail_msg("'%s' does not say '%s'", x->out.why, words);
	assert_int_equal(x->out.op[IO_WRITE].ios + x->out.op[IO_READ].ios, 0);
}

/* What is planted at the verify file's name is never opened for writing: the
 * target's own probe file hard-linked there (ours in all else, and laid out for
 * another size), a symlink to somebody's file, a FIFO, another user's verify
 * file. Each is refused, and what it leads to is left exactly as it was. */
static void test_planted_refused(void **state)
{
	char probe_file[PATH_MAX + 64], victim[PATH_MAX + 64];
	struct victim v;
	struct fixture x;
	struct stat st;

	(void)state;
	fixture_open(&x, 2, 1);
	snprintf(probe_file, sizeof(probe_file), "%s/" TARGET_PROBE_FILE, x.f.dir);
	victim_take(&v, probe_file);
	assert_int_equal(link(probe_file, x.file), 0);
	run_refused(&x, "hard links");
	victim_unchanged(&v);
	assert_int_equal(unlink(x.file), 0);

	snprintf(victim, sizeof(victim), "%s/victim", x.f.dir);
	write_text(victim, "somebody's precious data\n");
	victim_take(&v, victim);
	assert_int_equal(symlink(victim, x.file), 0);
	run_refused(&x, "symlink");
	victim_unchanged(&v);
	assert_int_equal(unlink(x.file), 0);

	assert_int_equal(mkfifo(x.file, 0600), 0);
	run_refused(&x, "not a regular file");
	assert_int_equal(lstat(x.file, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(unlink(x.file), 0);

	/* A genuine verify file (the probe's own, laid out), then another user's:
	 * only root can hand it over. */
	run(&x);
	probe_free(&x.p);
	if (geteuid() == 0) {
		assert_int_equal(chown(x.file, 12345, 12345), 0);
		victim_take(&v, x.file);
		assert_int_equal(probe_init(&x.p, &x.cfg, &x.f.t, NULL, 0), 0);
		run_refused(&x, "owned by uid 12345");
		victim_unchanged(&v);
		probe_free(&x.p);
		assert_int_equal(chown(x.file, geteuid(), getegid()), 0);
	}
	/* Ours again: reused as it is, its blocks read back. */
	assert_int_equal(stat(x.file, &st), 0);
	assert_int_equal(probe_init(&x.p, &x.cfg, &x.f.t, NULL, 0), 0);
	run(&x);
	assert_int_equal(x.out.blocks_checked, 1);
	assert_int_equal(access(x.file, F_OK), 0);
	victim_take(&v, x.file);
	assert_int_equal(v.st.st_ino, st.st_ino);
	free(v.data);
	fixture_close(&x);
}

/* The verify file lives in the directory the target pinned: a directory put in
 * its place before the probe's first run is refused, nothing made in it. */
static void test_replaced_directory(void **state)
{
	char moved[PATH_MAX + 16];
	struct fixture x;

	(void)state;
	fixture_open(&x, 2, 1);
	snprintf(moved, sizeof(moved), "%s.moved", x.f.dir);
	assert_int_equal(rename(x.f.dir, moved), 0);
	assert_int_equal(mkdir(x.f.dir, 0700), 0);
	probe_outcome_clear(&x.out);
	assert_int_equal(probe_run(&x.p, NULL, &x.out), -EXDEV);
	assert_true(x.out.target_down);
	assert_non_null(strstr(x.out.why, "it was replaced"));
	assert_int_equal(access(x.file, F_OK), -1);
	assert_int_equal(rmdir(x.f.dir), 0);
	assert_int_equal(rename(moved, x.f.dir), 0);
	run(&x);
	assert_int_equal(access(x.file, F_OK), 0);
	fixture_close(&x);
}

/* ---------------------------------------------------------------- engines */

/*
 * via: the sync engine, counting what a verify probe asks of it; it can also
 * make each request take via_slow_ns (by its completion stamp), say -EINTR at
 * its first via_eintr waits (as io_getevents(2) does after a freeze), or, with
 * via_stuck, take requests and never complete them, each wait noting the
 * probe's in-flight time and the third setting via_stop, as shutdown would.
 */
static unsigned via_inits, via_cleanups, via_reaps, via_ops[IO_OP_COUNT];
static int via_fd;
static uint64_t via_slow_ns;
static unsigned via_eintr;
static bool via_stuck;
static _Atomic bool via_stop;
static const struct probe *via_probe;
static uint64_t via_submitted, via_inflight; /* stuck: its submit time, the one published */
static const void *via_buf;		     /* the buffer of the last request stuck */

static void via_reset(const struct probe *p)
{
	via_inits = via_cleanups = via_reaps = 0;
	memset(via_ops, 0, sizeof(via_ops));
	via_slow_ns = 0;
	via_eintr = 0;
	via_stuck = false;
	atomic_store(&via_stop, false);
	via_probe = p;
	via_submitted = via_inflight = 0;
	via_buf = NULL;
}

static int via_init(struct engine *e, int fd, unsigned depth)
{
	via_inits++;
	via_fd = fd;
	return eng_sync_ops.init(e, fd, depth);
}

static int via_submit(struct engine *e, struct io_req *const *reqs, unsigned n)
{
	int r;

	if (via_stuck) {
		via_submitted = reqs[0]->submit_ns;
		via_buf = reqs[0]->buf;
		return (int)n;
	}
	r = eng_sync_ops.submit(e, reqs, n);
	for (int i = 0; i < r; i++) {
		via_ops[reqs[i]->op]++;
		if (via_slow_ns)
			reqs[i]->done_ns = reqs[i]->submit_ns + via_slow_ns;
	}
	return r;
}

static int via_reap(struct engine *e, struct io_req **done, unsigned min, unsigned max,
		    int64_t timeout_ns)
{
	via_reaps++;
	if (via_eintr) {
		via_eintr--;
		return -EINTR;
	}
	if (!via_stuck)
		return eng_sync_ops.reap(e, done, min, max, timeout_ns);
	via_inflight = probe_inflight_since(via_probe);
	if (via_reaps >= 3)
		atomic_store(&via_stop, true);
	return -ETIME;
}

static void via_cleanup(struct engine *e)
{
	via_cleanups++;
	eng_sync_ops.cleanup(e);
}

static const struct engine_ops via_ops_table = {
	.name = "via",
	.flags = ENGINE_F_SYNC,
	.init = via_init,
	.submit = via_submit,
	.reap = via_reap,
	.cancel = eng_sync_cancel,
	.cleanup = via_cleanup,
};

/* @x's probe set up again on the via engine: as probe_init() sets a probe up
 * on the engine it resolves, one of the test's here. */
static void fixture_via(struct fixture *x)
{
	x->p.ops->free(&x->p);
	x->p.engine = &via_ops_table;
	assert_int_equal(x->p.ops->init(&x->p), 0);
	via_reset(&x->p);
}

/* Every read, write and fdatasync of a run goes through the probe's engine,
 * set up once on the probe's own file and kept between runs; a file opened
 * anew gets an engine set up anew, for its descriptor. */
static void test_engine_requests(void **state)
{
	struct stat a, b;
	struct fixture x;

	(void)state;
	fixture_open(&x, 4, 1);
	fixture_via(&x);
	for (int i = 0; i < 6; i++) {
		memset(via_ops, 0, sizeof(via_ops));
		run(&x);
		for (int op = 0; op < IO_OP_COUNT; op++)
			assert_int_equal(via_ops[op], x.out.op[op].ios);
		assert_true(via_ops[IO_READ] >= 4 && via_ops[IO_FDATASYNC] >= 1);
	}
	assert_int_equal(x.out.blocks_checked, 4);
	assert_int_equal(via_inits, 1);
	assert_int_equal(fstat(via_fd, &a), 0);
	assert_int_equal(stat(x.file, &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);

	assert_int_equal(unlink(x.file), 0);
	probe_outcome_clear(&x.out);
	assert_int_equal(probe_run(&x.p, NULL, &x.out), -ESTALE);
	run(&x);
	assert_int_equal(via_inits, 2);
	assert_int_equal(via_cleanups, 1);
	assert_int_equal(fstat(via_fd, &a), 0);
	assert_int_equal(stat(x.file, &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	fixture_close(&x);
	assert_int_equal(via_cleanups, 2);
}

/* What the probe's say() was handed, and the writes the engine had seen then. */
static unsigned said, said_writes;

static void say_counting(const struct probe_note *note)
{
	(void)note;
	if (!said++)
		said_writes = via_ops[IO_WRITE];
}

/* A note is said the moment it is found: before the run's write phase, which
 * may hang in the kernel on a failing disk (and a daemon stopped then exits
 * without finishing it), not after the run. Said notes are not kept. */
static void test_notes_said_at_once(void **state)
{
	static unsigned char a[BS];
	struct fixture x;

	(void)state;
	fixture_open(&x, 4, 1);
	fixture_via(&x);
	for (int i = 0; i < 4; i++) /* every block written once */
		run(&x);
	file_io(&x, false, 1, a);
	a[BS / 2] ^= 0xff;
	file_io(&x, true, 1, a);
	x.p.say = say_counting;
	said = said_writes = 0;
	memset(via_ops, 0, sizeof(via_ops));
	run(&x);
	assert_int_equal(x.out.mismatches[PROBE_MISMATCH_WRONG_DATA], 1);
	assert_int_equal(said, 1);
	assert_int_equal(said_writes, 0);    /* said before the first write */
	assert_true(via_ops[IO_WRITE] >= 1); /* and the run wrote after */
	assert_int_equal(x.out.n_notes, 0);
	fixture_close(&x);
}

/* An I/O slower than the probe's timeout is counted as a timeout, as a ping's
 * is, and measured all the same; a wait the kernel interrupts is no error. */
static void test_engine_timeouts(void **state)
{
	struct fixture x;
	uint64_t ios = 0;

	(void)state;
	fixture_open(&x, 4, 2);
	x.cfg.timeout_ns = 1000000;
	fixture_via(&x);
	run(&x);
	via_slow_ns = 2 * x.cfg.timeout_ns;
	run(&x);
	for (int op = 0; op < IO_OP_COUNT; op++) {
		ios += x.out.op[op].ios;
		assert_int_equal(x.out.op[op].errors, 0);
	}
	assert_true(ios > 0);
	assert_int_equal(x.out.timeouts, ios);
	assert_int_equal(hist_max_ns(x.out.op[IO_READ].hist), via_slow_ns);
	assert_false(x.out.incomplete);

	via_slow_ns = 0;
	x.cfg.timeout_ns = CFG_DEFAULT_TIMEOUT_NS;
	via_eintr = 2;
	run(&x);
	assert_int_equal(via_eintr, 0);
	assert_int_equal(x.out.timeouts, 0);
	assert_int_equal(x.out.blocks_checked, 4);
	assert_int_equal(mismatches(&x), 0);
	assert_false(x.out.incomplete);
	fixture_close(&x);
}

/*
 * An I/O that never completes is in flight (probe_inflight_since(), as the
 * scheduler watches it) for as long as it hangs, and at shutdown the probe
 * gives up on it: it returns, having measured and counted nothing, the engine
 * torn down and the request's buffer left to the kernel. The next run sets the
 * engine up again with a fresh buffer, and finds every block as it was.
 */
static void test_engine_stuck_stop(void **state)
{
	const void *stuck_buf;
	struct fixture x;

	(void)state;
	fixture_open(&x, 4, 1);
	fixture_via(&x);
	for (int i = 0; i < 4; i++)
		run(&x);
	via_stuck = true;
	via_reaps = 0;
	probe_outcome_clear(&x.out);
	assert_int_equal(probe_run(&x.p, &via_stop, &x.out), 0);
	assert_int_equal(via_reaps, 3);
	assert_true(via_submitted != 0);
	assert_int_equal(via_inflight, via_submitted);
	assert_int_equal(probe_inflight_since(&x.p), 0);
	assert_int_equal(via_cleanups, 1);
	assert_true(x.out.incomplete);
	assert_int_equal(x.out.io_error, 0);
	assert_int_equal(x.out.blocks_checked, 0);
	for (int op = 0; op < IO_OP_COUNT; op++)
		assert_int_equal(x.out.op[op].ios + x.out.op[op].errors, 0);
	stuck_buf = via_buf;

	via_stuck = false;
	atomic_store(&via_stop, false);
	run(&x);
	assert_int_equal(via_inits, 2);
	assert_int_equal(x.out.blocks_checked, 4);
	assert_int_equal(mismatches(&x), 0);
	via_stuck = true;
	via_reaps = 0;
	probe_outcome_clear(&x.out);
	assert_int_equal(probe_run(&x.p, &via_stop, &x.out), 0);
	assert_ptr_not_equal(via_buf, stuck_buf); /* the old one may still be written */
	fixture_close(&x);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_clean),
		cmocka_unit_test(test_corruption_kinds),
		cmocka_unit_test(test_block_damage),
		cmocka_unit_test(test_budget_left),
		cmocka_unit_test(test_restart_stale),
		cmocka_unit_test(test_restart_state_behind),
		cmocka_unit_test(test_restart_torn),
		cmocka_unit_test(test_state_damaged),
		cmocka_unit_test(test_old_format),
		cmocka_unit_test(test_file_removed),
		cmocka_unit_test(test_file_target_refused),
		cmocka_unit_test(test_foreign_file_refused),
		cmocka_unit_test(test_planted_refused),
		cmocka_unit_test(test_replaced_directory),
		cmocka_unit_test(test_engine_requests),
		cmocka_unit_test(test_notes_said_at_once),
		cmocka_unit_test(test_engine_timeouts),
		cmocka_unit_test(test_engine_stuck_stop),
	};

	return cmocka_run_group_tests_name("verify", tests, tu_scratch_setup, tu_scratch_teardown);
}
