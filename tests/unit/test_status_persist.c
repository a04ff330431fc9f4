/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for daemon/status's state file (status_persist.h): the format
 * round-trips exactly, and a file that is not exactly one of ours is refused,
 * each with its own reason: foreign, truncated, corrupt (every single bit
 * flipped, a field out of range under a good checksum), another version, too
 * old, from the future. A target whose identity changed is not the same. Then
 * the way back in: a ring restored into a status gives the series its baseline
 * at its first tick, aged by the time since it was saved, unless the probe
 * measures something else now; and a judgement restored keeps its since, and
 * holds a slow target slow until its probes have judged a minute.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"
#include "daemon/status/status_persist.h"

#define MS 1000000ull
#define T0 1700000000.0 /* when the test files are written */

/* ---- the format --------------------------------------------------------------------------- */

/* A ring with every field used: @salt makes each ring different. */
static void fill_ring(struct status_ring *r, unsigned salt)
{
	memset(r, 0, sizeof(*r));
	for (unsigned i = 0; i < STATUS_MINUTES; i++)
		r->min[i] = (struct status_rec){.count = 1000 * salt + i,
						.q = {(uint16_t)(20000 + i), (uint16_t)(21000 + i),
						      (uint16_t)(22000 + salt), 65535}};
	for (unsigned i = 0; i < STATUS_BLOCKS; i++)
		r->blk[i] =
			(struct status_rec){.count = UINT32_MAX - i, .q = {1, 2, 3, (uint16_t)i}};
	r->min_head = (uint16_t)(7 + salt);
	r->min_n = STATUS_MINUTES;
	r->blk_head = 143;
	r->blk_n = (uint16_t)(100 + salt);
	for (unsigned i = 0; i < STATUS_MINUTES; i += 3 + salt)
		r->min_slow[i / 8] |= (uint8_t)(1u << (i % 8));
	for (unsigned i = 1; i < STATUS_MINUTES; i += 5 + salt)
		r->min_held[i / 8] |= (uint8_t)(1u << (i % 8));
	r->blk_slow[17] = 0xff >> 4; /* bits 136..139, under 144 */
}

/* Two targets (one slow since T0 - 600, one down on a device) and three
 * probe ops, into @s (status_saved_free() it). */
static void sample_saved(struct status_saved *s)
{
	static const char *const probes[] = {"read-ping", "write-ping", "write-ping"};
	static const enum io_op ops[] = {IO_READ, IO_WRITE, IO_FDATASYNC};

	memset(s, 0, sizeof(*s));
	s->written_s = T0;
	s->n_targets = 2;
	s->n_series = 3;
	s->targets = calloc(2, sizeof(*s->targets));
	s->series = calloc(3, sizeof(*s->series));
	assert_non_null(s->targets);
	assert_non_null(s->series);
	s->targets[0] = (struct status_saved_target){
		.name = "state",
		.path = "/var/lib/iopulse",
		.id = {.known = true,
		       .kind = CFG_TARGET_DIRECTORY,
		       .dev = 0x803,
		       .fs_type = 0xef53},
		.j = {.state = STATUS_SLOW, .since_s = T0 - 600.25, .reason_code = "slow"}};
	s->targets[1] = (struct status_saved_target){
		.name = "disk.2_x-y",
		.path = "/dev/disk/by-id/a b",
		.id = {.known = true, .kind = CFG_TARGET_DEVICE, .dev = 0x10300},
		.j = {.state = STATUS_DOWN, .since_s = T0 - 1, .reason_code = "unmounted"}};
	for (unsigned i = 0; i < 3; i++) {
		struct status_saved_series *e = &s->series[i];

		snprintf(e->probe, sizeof(e->probe), "%s", probes[i]);
		snprintf(e->target, sizeof(e->target), "state");
		e->op = (uint8_t)ops[i];
		e->fingerprint = 0xdeadbeef + i;
		fill_ring(&e->ring, i);
		e->shape = (uint8_t)(STATUS_SHAPE_NONE + i);
		e->tally = (struct status_tally){.count = {100, 200, 300},
						 .over = {1, 2, 3 + i},
						 .stalls = {0, 1, 0},
						 .max = {1000, 2000, 3000},
						 .median = {false, true, false},
						 .n = (uint8_t)(i + 1)};
	}
}

/* The file of @s, in @out (buf_free() it). */
static void encode(const struct status_saved *s, struct buf *out)
{
	buf_init(out);
	assert_int_equal(status_state_encode(s, out), 0);
}

/* Decoding @len bytes of @data at @now must be refused for @want. */
static void assert_refused(const void *data, size_t len, double now, enum status_state_refusal want,
			   const char *what)
{
	struct status_saved got;
	enum status_state_refusal why = -1;
	char msg[256];
	int r = status_state_decode(data, len, now, &got, &why, msg, sizeof(msg));

	if (r != -EBADMSG || why != want)
		fail_msg("%s: decode gave %d, refusal %d (%s), want -EBADMSG and refusal %d", what,
			 r, (int)why, msg, (int)want);
	assert_true(msg[0] != '\0');
	assert_null(got.targets);
	assert_null(got.series);
}

/* Sets the little-endian u32 at @p. */
static void le32_set(char *p, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		p[i] = (char)(v >> (8 * i));
}

/* The checksum of @f made right again after an edit. */
static void fix_crc(struct buf *f)
{
	uLong crc;

	le32_set(f->data + 28, 0);
	crc = crc32(crc32(0, Z_NULL, 0), (const Bytef *)f->data, (uInt)f->len);
	le32_set(f->data + 28, (uint32_t)crc);
}

/* Decoded, then encoded again: the same bytes, and the fields read back. */
static void test_round_trip(void **state)
{
	struct status_saved s, got;
	enum status_state_refusal why;
	struct buf a, b;
	char msg[256];

	(void)state;
	sample_saved(&s);
	encode(&s, &a);
	assert_true(a.len <= STATUS_STATE_MAX_BYTES);
	assert_memory_equal(a.data, STATUS_STATE_MAGIC, sizeof(STATUS_STATE_MAGIC));
	assert_int_equal(status_state_decode(a.data, a.len, T0 + 30, &got, &why, msg, sizeof(msg)),
			 0);
	assert_int_equal(got.n_targets, 2);
	assert_int_equal(got.n_series, 3);
	assert_true(got.written_s == T0);
	assert_string_equal(got.targets[0].name, "state");
	assert_string_equal(got.targets[0].path, "/var/lib/iopulse");
	assert_int_equal(got.targets[0].j.state, STATUS_SLOW);
	assert_true(got.targets[0].j.since_s == T0 - 600.25);
	assert_string_equal(got.targets[0].j.reason_code, "slow");
	assert_true(status_identity_same(&got.targets[0].id, &s.targets[0].id));
	assert_string_equal(got.targets[1].path, "/dev/disk/by-id/a b");
	assert_string_equal(got.targets[1].j.reason_code, "unmounted");
	for (unsigned i = 0; i < 3; i++) {
		const struct status_saved_series *e = &got.series[i], *w = &s.series[i];

		assert_string_equal(e->probe, w->probe);
		assert_int_equal(e->op, w->op);
		assert_int_equal(e->fingerprint, w->fingerprint);
		assert_memory_equal(e->ring.min, w->ring.min, sizeof(w->ring.min));
		assert_memory_equal(e->ring.blk, w->ring.blk, sizeof(w->ring.blk));
		assert_memory_equal(e->ring.min_slow, w->ring.min_slow, sizeof(w->ring.min_slow));
		assert_memory_equal(e->ring.blk_slow, w->ring.blk_slow, sizeof(w->ring.blk_slow));
		assert_memory_equal(e->ring.min_held, w->ring.min_held, sizeof(w->ring.min_held));
		assert_int_equal(e->ring.min_head, w->ring.min_head);
		assert_int_equal(e->ring.blk_n, w->ring.blk_n);
		assert_int_equal(e->shape, w->shape);
		assert_int_equal(e->tally.n, w->tally.n);
		for (unsigned m = 0; m < w->tally.n; m++) {
			assert_int_equal(e->tally.count[m], w->tally.count[m]);
			assert_int_equal(e->tally.over[m], w->tally.over[m]);
			assert_int_equal(e->tally.stalls[m], w->tally.stalls[m]);
			assert_int_equal(e->tally.max[m], w->tally.max[m]);
			assert_int_equal(e->tally.median[m], w->tally.median[m]);
		}
	}
	encode(&got, &b);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.data, b.data, a.len);
	buf_free(&a);
	buf_free(&b);
	status_saved_free(&got);
	status_saved_free(&s);
}

/* The largest file the format holds stays under its stated bound. */
static void test_bound(void **state)
{
	struct status_saved s = {
		.written_s = T0, .n_targets = CFG_MAX_TARGETS, .n_series = STATUS_STATE_MAX_SERIES};
	struct buf f;

	(void)state;
	s.targets = calloc(s.n_targets, sizeof(*s.targets));
	s.series = calloc(s.n_series, sizeof(*s.series));
	assert_non_null(s.targets);
	assert_non_null(s.series);
	for (unsigned i = 0; i < s.n_targets; i++) {
		memset(s.targets[i].name, 'n', sizeof(s.targets[i].name) - 1);
		snprintf(s.targets[i].name + CFG_NAME_MAX - 4, 4, "%03u", i % 1000);
		memset(s.targets[i].path, '/', sizeof(s.targets[i].path) - 1);
		memset(s.targets[i].j.reason_code, 'c', sizeof(s.targets[i].j.reason_code) - 1);
	}
	for (unsigned i = 0; i < s.n_series; i++) {
		memset(s.series[i].probe, 'p', sizeof(s.series[i].probe) - 1);
		snprintf(s.series[i].probe + CFG_NAME_MAX - 5, 5, "%04u", i % 10000);
		memset(s.series[i].target, 't', sizeof(s.series[i].target) - 1);
		s.series[i].tally.n = STATUS_JUDGE_MINUTES;
	}
	encode(&s, &f);
	assert_int_equal(f.len, STATUS_STATE_MAX_BYTES);
	s.n_series++; /* one more than the format holds */
	assert_int_equal(status_state_encode(&s, &f), -EINVAL);
	s.n_series--;
	buf_free(&f);
	status_saved_free(&s);
}

/* Not ours: no magic (a text file, the probe file's header, nothing at all). */
static void test_foreign(void **state)
{
	static const char probe_file[] = "IOPULSE-PROBE-FILE\nversion: 1\nsize: 67108864\n";
	static const char text[] = "some notes an administrator keeps here\n";
	struct buf f;

	(void)state;
	assert_refused(text, sizeof(text) - 1, T0, STATUS_STATE_E_FOREIGN, "a text file");
	assert_refused(probe_file, sizeof(probe_file), T0, STATUS_STATE_E_FOREIGN, "a probe file");
	assert_refused("", 0, T0, STATUS_STATE_E_FOREIGN, "an empty file");
	assert_refused(STATUS_STATE_MAGIC, sizeof(STATUS_STATE_MAGIC) - 1, T0,
		       STATUS_STATE_E_FOREIGN, "the magic without its NUL");
	{
		struct status_saved s;

		sample_saved(&s);
		encode(&s, &f);
		status_saved_free(&s);
	}
	assert_refused(f.data, 10, T0, STATUS_STATE_E_FOREIGN, "10 bytes of the magic");
	buf_free(&f);
}

/* Ours, cut short anywhere after the magic: truncated. */
static void test_truncated(void **state)
{
	struct status_saved s;
	struct buf f;

	(void)state;
	sample_saved(&s);
	encode(&s, &f);
	for (size_t len = sizeof(STATUS_STATE_MAGIC); len < f.len; len += len < 64 ? 1 : 97) {
		char what[64];

		snprintf(what, sizeof(what), "cut at %zu of %zu bytes", len, f.len);
		assert_refused(f.data, len, T0, STATUS_STATE_E_TRUNCATED, what);
	}
	assert_refused(f.data, f.len - 1, T0, STATUS_STATE_E_TRUNCATED, "one byte short");
	buf_free(&f);
	status_saved_free(&s);
}

/* Any one bit flipped anywhere: refused, never taken; after the header, as
 * corrupt. */
static void test_bit_flips(void **state)
{
	struct status_saved s, got;
	enum status_state_refusal why;
	char msg[256];
	struct buf f;

	(void)state;
	sample_saved(&s);
	encode(&s, &f);
	for (size_t i = 0; i < f.len; i++)
		for (unsigned bit = 0; bit < 8; bit++) {
			char what[64];

			f.data[i] ^= (char)(1u << bit);
			snprintf(what, sizeof(what), "bit %u of byte %zu flipped", bit, i);
			if (i >= STATUS_STATE_HEADER)
				assert_refused(f.data, f.len, T0, STATUS_STATE_E_CORRUPT, what);
			else if (status_state_decode(f.data, f.len, T0, &got, &why, msg,
						     sizeof(msg)) != -EBADMSG)
				fail_msg("%s: taken", what);
			f.data[i] ^= (char)(1u << bit);
		}
	/* The version's bits are under the checksum: corrupt, not another version. */
	f.data[20] ^= 2;
	assert_refused(f.data, f.len, T0, STATUS_STATE_E_CORRUPT, "the version flipped");
	buf_free(&f);
	status_saved_free(&s);
}

/* Under a good checksum, a field out of its range or bytes left over: corrupt. */
static void test_fields_checked(void **state)
{
	struct status_saved s, got;
	enum status_state_refusal why;
	char msg[256];
	struct buf f;

	(void)state;
	sample_saved(&s);
	s.targets[0].j.state = (enum status_state)(STATUS_SLOW + 1);
	encode(&s, &f);
	fix_crc(&f);
	assert_refused(f.data, f.len, T0, STATUS_STATE_E_CORRUPT, "a state out of range");
	buf_free(&f);
	s.targets[0].j.state = STATUS_SLOW;

	s.series[1].op = IO_OP_COUNT;
	encode(&s, &f);
	assert_refused(f.data, f.len, T0, STATUS_STATE_E_CORRUPT, "an op out of range");
	buf_free(&f);
	s.series[1].op = IO_WRITE;

	s.series[2].ring.min_head = STATUS_MINUTES;
	encode(&s, &f);
	assert_refused(f.data, f.len, T0, STATUS_STATE_E_CORRUPT, "a ring's head out of range");
	buf_free(&f);
	s.series[2].ring.min_head = 0;

	s.series[0].ring.blk_slow[17] |= 0x80; /* bit 143 is a record; past it none are */
	encode(&s, &f);
	assert_int_equal(status_state_decode(f.data, f.len, T0, &got, &why, msg, sizeof(msg)), 0);
	status_saved_free(&got);
	buf_free(&f);
	s.series[0].ring.min_slow[7] |= 0x80; /* bit 63: past the 60 minutes */
	encode(&s, &f);
	assert_refused(f.data, f.len, T0, STATUS_STATE_E_CORRUPT, "a slow bit past the ring");
	buf_free(&f);
	s.series[0].ring.min_slow[7] = 0;
	s.series[1].ring.min_held[7] |= 0x20; /* bit 61 */
	encode(&s, &f);
	assert_refused(f.data, f.len, T0, STATUS_STATE_E_CORRUPT, "a held bit past the ring");
	buf_free(&f);
	s.series[1].ring.min_held[7] &= (uint8_t)~0x20;

	snprintf(s.targets[1].name, sizeof(s.targets[1].name), "state");
	encode(&s, &f);
	assert_refused(f.data, f.len, T0, STATUS_STATE_E_CORRUPT, "a target saved twice");
	buf_free(&f);
	snprintf(s.targets[1].name, sizeof(s.targets[1].name), "disk");

	encode(&s, &f);
	buf_append(&f, "x", 1); /* one byte more, the length and checksum made to match */
	le32_set(f.data + 24, (uint32_t)f.len);
	fix_crc(&f);
	assert_refused(f.data, f.len, T0, STATUS_STATE_E_CORRUPT, "a byte after the last series");
	buf_free(&f);
	status_saved_free(&s);
}

/* Another version, whole and with a good checksum: refused as such. */
static void test_other_version(void **state)
{
	struct status_saved s;
	struct buf f;

	(void)state;
	sample_saved(&s);
	encode(&s, &f);
	le32_set(f.data + 20, STATUS_STATE_VERSION + 1);
	fix_crc(&f);
	assert_refused(f.data, f.len, T0, STATUS_STATE_E_VERSION, "the next version");
	le32_set(f.data + 20, 0);
	fix_crc(&f);
	assert_refused(f.data, f.len, T0, STATUS_STATE_E_VERSION, "version 0");
	buf_free(&f);
	status_saved_free(&s);
}

/* Written over a day ago, or well ahead of the clock: refused; a little ahead
 * (a clock stepped back by NTP) is fine. */
static void test_age(void **state)
{
	struct status_saved s, got;
	enum status_state_refusal why;
	char msg[256];
	struct buf f;

	(void)state;
	sample_saved(&s);
	encode(&s, &f);
	assert_refused(f.data, f.len, T0 + STATUS_STATE_MAX_AGE_S + 1, STATUS_STATE_E_TOO_OLD,
		       "a day and a second old");
	assert_refused(f.data, f.len, T0 - STATUS_STATE_FUTURE_S - 1, STATUS_STATE_E_FUTURE,
		       "from the future");
	assert_int_equal(status_state_decode(f.data, f.len, T0 + STATUS_STATE_MAX_AGE_S - 1, &got,
					     &why, msg, sizeof(msg)),
			 0);
	status_saved_free(&got);
	assert_int_equal(status_state_decode(f.data, f.len, T0 - 60, &got, &why, msg, sizeof(msg)),
			 0);
	status_saved_free(&got);
	buf_free(&f);
	status_saved_free(&s);
}

/* The same target: known both times, the same kind and device, and but for a
 * device the same filesystem type. */
static void test_identity(void **state)
{
	const struct status_identity dir = {true, CFG_TARGET_DIRECTORY, 0x803, 0xef53};
	const struct status_identity dev = {true, CFG_TARGET_DEVICE, 0x10300, 0};
	struct status_identity b;

	(void)state;
	assert_true(status_identity_same(&dir, &dir));
	b = dir;
	b.dev = 0x804; /* a disk mounted there now, or a FUSE mount made again */
	assert_false(status_identity_same(&dir, &b));
	b = dir;
	b.fs_type = 0x58465342; /* xfs where ext4 was */
	assert_false(status_identity_same(&dir, &b));
	b = dir;
	b.kind = CFG_TARGET_FILE;
	assert_false(status_identity_same(&dir, &b));
	b = dir;
	b.known = false; /* never opened */
	assert_false(status_identity_same(&dir, &b));
	assert_false(status_identity_same(&b, &dir));
	b = dev;
	b.fs_type = 12; /* a device's filesystem type is nothing */
	assert_true(status_identity_same(&dev, &b));
}

/* Aging a ring pushes empty records, clearing their slow bits; under a minute
 * nothing. */
static void test_ring_age(void **state)
{
	struct status_ring r;
	unsigned head;

	(void)state;
	fill_ring(&r, 1);
	memset(r.min_slow, 0xff, sizeof(r.min_slow));
	head = r.min_head;
	status_ring_age(&r, 59);
	assert_int_equal(r.min_head, head);
	status_ring_age(&r, 3 * 60 + 30);
	assert_int_equal(r.min_head, (head + 3) % STATUS_MINUTES);
	for (unsigned i = 0; i < 3; i++) {
		unsigned s = (head + i) % STATUS_MINUTES;

		assert_int_equal(r.min[s].count, 0);
		assert_false(status_bit(r.min_slow, s));
	}
	assert_true(status_bit(r.min_slow, (head + 3) % STATUS_MINUTES));
	assert_int_equal(r.blk_head, 143); /* no whole 10 minutes */
	status_ring_age(&r, 25 * 60);
	assert_int_equal(r.blk_head, 1);
	status_ring_age(&r, 1e12); /* every record empty, in bounded time */
	for (unsigned i = 0; i < STATUS_MINUTES; i++)
		assert_int_equal(r.min[i].count, 0);
	for (unsigned i = 0; i < STATUS_BLOCKS; i++)
		assert_int_equal(r.blk[i].count, 0);
	assert_int_equal(r.min_n, STATUS_MINUTES);
}

/* ---- into a status ------------------------------------------------------------------------ */

/* A status fed by one latency series (p1 on t1, read) on a fake tick clock. */
struct fixture {
	struct metrics *m;
	struct metric_series *lat;
	struct status *st;
	struct cfg_probe probe;
	struct status_op op;
	uint64_t k;
};

static void fixture_init(struct fixture *f)
{
	static const char *const labels[] = {"probe", NULL};
	static const char *const values[] = {"p1", NULL};
	struct metric_family *fam;

	memset(f, 0, sizeof(*f));
	f->m = metrics_new();
	fam = f->m ? metrics_family(f->m, "lat_seconds", METRIC_HISTOGRAM, "h", labels, NULL, 0)
		   : NULL;
	f->lat = fam ? metrics_series(fam, values) : NULL;
	f->st = status_new();
	assert_non_null(f->lat);
	assert_non_null(f->st);
	snprintf(f->probe.name, sizeof(f->probe.name), "p1");
	f->probe.kind = CFG_PROBE_PING;
	f->probe.interval_ns = 100 * MS;
	f->op = (struct status_op){.p = &f->probe,
				   .target = "t1",
				   .op = IO_READ,
				   .latency = f->lat,
				   .j = tu_judging(),
				   .fingerprint = 0xabc};
}

static void fixture_free(struct fixture *f)
{
	status_free(f->st);
	metrics_free(f->m);
}

static void tick(struct fixture *f)
{
	uint64_t now = 1 + f->k++ * STATUS_STEP_NS;

	assert_true(status_tick_due(f->st, now));
	status_tick_op(f->st, &f->op, now);
	status_tick_end(f->st, now);
}

/* A minute of 20 I/Os of @ns each, its minute mark included. */
static void minute(struct fixture *f, uint64_t ns)
{
	for (unsigned i = 0; i < 20; i++)
		metrics_observe_ns(f->lat, ns);
	for (unsigned s = 0; s < STATUS_MINUTE; s++)
		tick(f);
}

static struct status_regress regress(struct fixture *f)
{
	struct status_burst b = {0};
	struct status_regress r;

	status_set_probe(f->st, "p1", "t1", IO_READ, 1, 0, 0.1, &b, 0, &r);
	return r;
}

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* 15 minutes at 2 ms, then 5 at 20 ms (slow, left out of the baseline):
 * what a daemon restarted mid-incident saved, into @out. */
static void saved_mid_incident(struct status_saved_series *out)
{
	struct fixture f;

	fixture_init(&f);
	tick(&f);
	for (unsigned m = 0; m < 15; m++)
		minute(&f, 2 * MS);
	for (unsigned m = 0; m < 5; m++)
		minute(&f, 20 * MS);
	assert_true(regress(&f).slow);
	memset(out, 0, sizeof(*out));
	snprintf(out->probe, sizeof(out->probe), "p1");
	snprintf(out->target, sizeof(out->target), "t1");
	out->op = IO_READ;
	out->fingerprint = f.op.fingerprint;
	out->ring = f.st->series[0]->v.ring;
	fixture_free(&f);
}

/* The restarted status: the baseline of before the incident at its first
 * tick, no warm-up; the incident's minutes, still slow, stay out of it. */
static void test_ring_restored(void **state)
{
	struct status_saved_series saved;
	struct status_regress r;
	struct fixture f;

	(void)state;
	saved_mid_incident(&saved);
	fixture_init(&f);
	assert_int_equal(status_restore_series(f.st, &saved, wall() - 30), 0);
	tick(&f);
	r = regress(&f);
	assert_true(r.have_baseline);
	assert_true(r.baseline_ns[0] > 1.9 * MS && r.baseline_ns[0] < 2.1 * MS);
	assert_int_equal(f.st->series[0]->v.base_minutes, 15);
	minute(&f, 20 * MS);
	r = regress(&f);
	assert_true(r.slow);
	assert_true(r.baseline_ns[0] > 1.9 * MS && r.baseline_ns[0] < 2.1 * MS);
	fixture_free(&f);
}

/* Saved 10 minutes ago: ten empty minutes and a block in the ring first. */
static void test_ring_restored_aged(void **state)
{
	struct status_saved_series saved;
	const struct status_ring *r;
	struct fixture f;
	unsigned head;

	(void)state;
	saved_mid_incident(&saved);
	head = saved.ring.min_head;
	fixture_init(&f);
	assert_int_equal(status_restore_series(f.st, &saved, wall() - 600 - 5), 0);
	tick(&f);
	r = &f.st->series[0]->v.ring;
	assert_int_equal(r->min_head, (head + 10) % STATUS_MINUTES);
	assert_int_equal(r->min[(head + 9) % STATUS_MINUTES].count, 0);
	assert_int_equal(r->min[(head + STATUS_MINUTES - 1) % STATUS_MINUTES].count, 20);
	assert_int_equal(r->blk_n, saved.ring.blk_n + 1);
	fixture_free(&f);
}

/* Another probe under the same name (another fingerprint), another op, or
 * another target: nothing restored, and the ring dropped. */
static void test_ring_not_restored(void **state)
{
	struct status_saved_series saved;
	struct status_saved s = {0};
	struct fixture f;

	(void)state;
	saved_mid_incident(&saved);
	fixture_init(&f);
	f.op.fingerprint = saved.fingerprint + 1;
	assert_int_equal(status_restore_series(f.st, &saved, wall()), 0);
	saved.op = IO_WRITE;
	assert_int_equal(status_restore_series(f.st, &saved, wall()), 0);
	tick(&f);
	assert_false(regress(&f).have_baseline);
	assert_int_equal(f.st->series[0]->v.ring.min_n, 0);
	/* The write op's ring waits still; the read's is gone. */
	assert_int_equal(status_save_collect(f.st, wall(), &s), 0);
	assert_int_equal(s.n_series, 2);
	assert_int_equal(s.series[1].op, IO_WRITE);
	status_saved_free(&s);
	fixture_free(&f);
}

/* A target as a request has it from its lane. */
static struct status_target lane_says(const char *name, enum status_state state, double since)
{
	struct status_target t = {.state = state, .since_s = since};

	snprintf(t.name, sizeof(t.name), "%s", name);
	snprintf(t.reason_code, sizeof(t.reason_code), "%s",
		 state == STATUS_UP ? "none" : status_state_name(state));
	return t;
}

/* Restored slow since T: the judgement is there for the lane's judge
 * (status_judge_in's restored, test_judge.c says what the judge makes of it)
 * until the target is judged past starting; then it is done with. */
static void test_judgement_restored(void **state)
{
	struct status_saved_target t = {.name = "t1", .path = "/t1"};
	struct status_judgement j;
	struct fixture f;
	double since = wall() - 3600;

	(void)state;
	fixture_init(&f);
	t.j = (struct status_judgement){
		.state = STATUS_SLOW, .since_s = since, .reason_code = "tail"};
	assert_int_equal(status_restore_judgement(f.st, &t, wall()), 0);
	assert_true(status_restored_judgement(f.st, "t1", &j));
	assert_true(j.since_s == since);
	assert_int_equal(j.state, STATUS_SLOW);
	assert_string_equal(j.reason_code, "tail");
	assert_false(status_restored_judgement(f.st, "t2", &j));
	status_restore_done(f.st, "t2"); /* none: nothing changes */
	assert_true(status_restored_judgement(f.st, "t1", &j));
	status_restore_done(f.st, "t1");
	assert_false(status_restored_judgement(f.st, "t1", &j));
	/* Restored longer ago than its hold: no longer there. */
	assert_int_equal(status_restore_judgement(f.st, &t, wall() - STATUS_RESTORE_HOLD_S - 1), 0);
	assert_false(status_restored_judgement(f.st, "t1", &j));
	fixture_free(&f);
}

/* A ring restored with its shape and tally: the tail's window goes on across
 * the restart (the minutes down are minutes without I/O). */
static void test_tally_restored(void **state)
{
	struct status_saved_series saved;
	struct fixture f;

	(void)state;
	saved_mid_incident(&saved);
	saved.shape = STATUS_SHAPE_TAIL;
	saved.tally = (struct status_tally){
		.count = {60, 60, 60}, .over = {0, 5, 6}, .max = {1, 2, 3}, .n = 3};
	fixture_init(&f);
	assert_int_equal(status_restore_series(f.st, &saved, wall() - 130), 0);
	tick(&f);
	assert_int_equal(f.st->series[0]->shape, STATUS_SHAPE_TAIL);
	assert_int_equal(f.st->series[0]->v.tally.n, 5); /* 2 minutes down pushed */
	assert_int_equal(f.st->series[0]->v.tally.over[2], 6);
	assert_int_equal(f.st->series[0]->v.tally.count[4], 0);
	fixture_free(&f);
}

/* What is saved: each series' ring and fingerprint; each target its lane had
 * open, with the last request's judgement (or none: starting); and what was
 * restored that no tick has seen. */
static void test_collect(void **state)
{
	struct status_saved_target t = {.name = "gone", .path = "/gone"};
	struct status_target a, b;
	struct status_saved s;
	struct fixture f;

	(void)state;
	fixture_init(&f);
	tick(&f);
	minute(&f, 2 * MS);
	t.j.state = STATUS_DOWN;
	assert_int_equal(status_restore_judgement(f.st, &t, wall()), 0);
	/* Not open yet: nothing known of t1. */
	assert_int_equal(status_save_collect(f.st, T0, &s), 0);
	assert_int_equal(s.n_targets, 1);
	assert_string_equal(s.targets[0].name, "gone");
	status_saved_free(&s);
	/* Open: its identity, and no judgement before a request. */
	f.op.target_path = "/t1";
	f.op.target_id = (struct status_identity){true, CFG_TARGET_DIRECTORY, 1, 2};
	tick(&f);
	assert_int_equal(status_save_collect(f.st, T0, &s), 0);
	assert_int_equal(s.n_targets, 2);
	assert_string_equal(s.targets[0].name, "t1");
	assert_string_equal(s.targets[0].path, "/t1");
	assert_true(status_identity_same(&s.targets[0].id, &f.op.target_id));
	assert_int_equal(s.targets[0].j.state, STATUS_STARTING);
	status_saved_free(&s);
	/* Judged by a request; a target never open is not kept. */
	a = lane_says("t1", STATUS_UP, wall() - 5);
	b = lane_says("never-open", STATUS_DOWN, wall());
	assert_int_equal(status_targets_begin(f.st, 2), 0);
	status_set_target(f.st, 0, &a);
	status_set_target(f.st, 1, &b);
	assert_int_equal(status_save_collect(f.st, T0, &s), 0);
	assert_true(s.written_s == T0);
	assert_int_equal(s.n_series, 1);
	assert_int_equal(s.series[0].fingerprint, 0xabc);
	assert_int_equal(s.series[0].ring.min_n, 1);
	assert_int_equal(s.n_targets, 2);
	assert_string_equal(s.targets[0].name, "t1");
	assert_int_equal(s.targets[0].j.state, STATUS_UP);
	assert_true(s.targets[0].j.since_s == a.since_s);
	assert_string_equal(s.targets[0].j.reason_code, "none");
	assert_string_equal(s.targets[1].name, "gone");
	assert_int_equal(s.targets[1].j.state, STATUS_DOWN);
	status_saved_free(&s);
	/* Its probe gone from the schedule: the target is forgotten. */
	f.op.target = "t2";
	tick(&f);
	assert_int_equal(status_save_collect(f.st, T0, &s), 0);
	assert_int_equal(s.n_targets, 2);
	assert_string_equal(s.targets[0].name, "t2");
	status_saved_free(&s);
	fixture_free(&f);
}

/* The tick tells the state file at once, then every minute of ticks; only
 * when the scheduler says the targets are judged (status_tell_minute()), once
 * however many ticks went by. */
static void count_minute(void *arg, uint64_t tick_ns)
{
	(void)tick_ns;
	(*(unsigned *)arg)++;
}

static void test_minute_hook(void **state)
{
	struct fixture f;
	unsigned n = 0;

	(void)state;
	fixture_init(&f);
	status_on_minute(f.st, count_minute, &n);
	tick(&f);
	assert_int_equal(n, 0);
	status_tell_minute(f.st);
	assert_int_equal(n, 1);
	status_tell_minute(f.st);
	assert_int_equal(n, 1);
	for (unsigned k = 1; k < STATUS_MINUTE; k++) {
		tick(&f);
		status_tell_minute(f.st);
	}
	assert_int_equal(n, 1);
	for (unsigned m = 0; m < 3; m++) {
		minute(&f, 2 * MS);
		status_tell_minute(f.st);
	}
	assert_int_equal(n, 4);
	fixture_free(&f);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),	  cmocka_unit_test(test_bound),
		cmocka_unit_test(test_foreign),		  cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_bit_flips),	  cmocka_unit_test(test_fields_checked),
		cmocka_unit_test(test_other_version),	  cmocka_unit_test(test_age),
		cmocka_unit_test(test_identity),	  cmocka_unit_test(test_ring_age),
		cmocka_unit_test(test_ring_restored),	  cmocka_unit_test(test_ring_restored_aged),
		cmocka_unit_test(test_ring_not_restored), cmocka_unit_test(test_judgement_restored),
		cmocka_unit_test(test_tally_restored),	  cmocka_unit_test(test_collect),
		cmocka_unit_test(test_minute_hook),
	};

	return cmocka_run_group_tests_name("status_persist", tests, NULL, NULL);
}
