/* SPDX-License-Identifier: MIT */
/*
 * status_persist — the state file's bytes (status_persist.h has the format):
 * written field by field, little-endian, and read back the same way with every
 * field checked. Written by hand: the format is a few dozen fixed fields, and
 * a serialisation library (protobuf-c, the one in Debian we link for nothing
 * else) would bring a code generator for them and still leave every range
 * check to us.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "daemon/status/status_persist.h"

_Static_assert(sizeof(STATUS_STATE_MAGIC) - 1 + 1 == 20, "the magic and its NUL fill 20 bytes");
_Static_assert(STATUS_STATE_MAX_BYTES < UINT32_MAX, "a file's length fits its u32");
_Static_assert(CFG_MAX_TARGETS <= UINT16_MAX && STATUS_STATE_MAX_SERIES <= UINT16_MAX,
	       "the counts fit their u16");

#define OFF_VERSION 20
#define OFF_LENGTH  24
#define OFF_CRC	    28

void status_saved_free(struct status_saved *s)
{
	free(s->targets);
	free(s->series);
	s->targets = NULL;
	s->series = NULL;
	s->n_targets = s->n_series = 0;
}

/* ---------------------------------------------------------------- writing */

static void put_u8(struct buf *b, uint8_t v)
{
	buf_append(b, (const char *)&v, 1);
}

static void put_u16(struct buf *b, uint16_t v)
{
	const char c[2] = {(char)v, (char)(v >> 8)};

	buf_append(b, c, 2);
}

static void put_u32(struct buf *b, uint32_t v)
{
	put_u16(b, (uint16_t)v);
	put_u16(b, (uint16_t)(v >> 16));
}

static void put_u64(struct buf *b, uint64_t v)
{
	put_u32(b, (uint32_t)v);
	put_u32(b, (uint32_t)(v >> 32));
}

static void put_f64(struct buf *b, double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	put_u64(b, u);
}

/* @s (NUL-terminated in @size bytes) with a length of @wide 2 bytes, else 1. */
static void put_str(struct buf *b, const char *s, size_t size, bool wide)
{
	size_t n = strnlen(s, size - 1);

	if (wide)
		put_u16(b, (uint16_t)n);
	else
		put_u8(b, (uint8_t)n);
	buf_append(b, s, n);
}

static void put_recs(struct buf *b, const struct status_rec *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		put_u32(b, r[i].count);
		for (unsigned q = 0; q < STATUS_QUANTILES; q++)
			put_u16(b, r[i].q[q]);
	}
}

static void put_ring(struct buf *b, const struct status_ring *r)
{
	put_u16(b, r->min_head);
	put_u16(b, r->min_n);
	put_u16(b, r->blk_head);
	put_u16(b, r->blk_n);
	put_recs(b, r->min, STATUS_MINUTES);
	put_recs(b, r->blk, STATUS_BLOCKS);
	buf_append(b, (const char *)r->min_slow, sizeof(r->min_slow));
	buf_append(b, (const char *)r->blk_slow, sizeof(r->blk_slow));
	buf_append(b, (const char *)r->min_held, sizeof(r->min_held));
}

static void put_target(struct buf *b, const struct status_saved_target *t)
{
	put_str(b, t->name, sizeof(t->name), false);
	put_str(b, t->path, sizeof(t->path), true);
	put_u8(b, t->id.known);
	put_u8(b, t->id.kind);
	put_u64(b, t->id.dev);
	put_u64(b, (uint64_t)t->id.fs_type);
	put_u8(b, (uint8_t)t->j.state);
	put_f64(b, t->j.since_s);
	put_str(b, t->j.reason_code, sizeof(t->j.reason_code), false);
}

static void put_tally(struct buf *b, const struct status_tally *t)
{
	put_u8(b, t->n);
	for (unsigned i = 0; i < t->n; i++) {
		put_u32(b, t->count[i]);
		put_u32(b, t->over[i]);
		put_u32(b, t->stalls[i]);
		put_u16(b, t->max[i]);
		put_u8(b, t->median[i]);
	}
}

/* Sets the little-endian u32 at @p. */
static void set_u32(char *p, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		p[i] = (char)(v >> (8 * i));
}

int status_state_encode(const struct status_saved *s, struct buf *out)
{
	size_t start = out->len;
	uLong crc;
	char *p;

	if (s->n_targets > CFG_MAX_TARGETS || s->n_series > STATUS_STATE_MAX_SERIES)
		return -EINVAL;
	buf_append(out, STATUS_STATE_MAGIC, sizeof(STATUS_STATE_MAGIC)); /* with its NUL */
	put_u32(out, STATUS_STATE_VERSION);
	put_u32(out, 0); /* length and checksum, once known */
	put_u32(out, 0);
	put_f64(out, s->written_s);
	put_u16(out, (uint16_t)s->n_targets);
	put_u16(out, (uint16_t)s->n_series);
	for (unsigned i = 0; i < s->n_targets; i++)
		put_target(out, &s->targets[i]);
	for (unsigned i = 0; i < s->n_series; i++) {
		const struct status_saved_series *e = &s->series[i];

		put_str(out, e->probe, sizeof(e->probe), false);
		put_str(out, e->target, sizeof(e->target), false);
		put_u8(out, e->op);
		put_u32(out, e->fingerprint);
		put_ring(out, &e->ring);
		put_u8(out, e->shape);
		put_tally(out, &e->tally);
	}
	if (out->oom)
		return -ENOMEM;
	p = out->data + start;
	set_u32(p + OFF_LENGTH, (uint32_t)(out->len - start));
	crc = crc32(crc32(0, Z_NULL, 0), (const Bytef *)p, (uInt)(out->len - start));
	set_u32(p + OFF_CRC, (uint32_t)crc);
	return 0;
}

/* ---------------------------------------------------------------- reading */

/* A cursor over the bytes read: a read past the end, or a field out of its
 * range, sets @bad (what), and every later read gives zeros. */
struct cur {
	const unsigned char *p, *end;
	const char *bad;
};

static const unsigned char *take(struct cur *c, size_t n, const char *what)
{
	const unsigned char *p = c->p;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = c->bad ? c->bad : what;
		return NULL;
	}
	c->p += n;
	return p;
}

static uint64_t get_le(struct cur *c, unsigned n, const char *what)
{
	const unsigned char *p = take(c, n, what);
	uint64_t v = 0;

	for (unsigned i = 0; p && i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static double get_f64(struct cur *c, const char *what)
{
	uint64_t u = get_le(c, 8, what);
	double v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

/* A check of a field's value: @ok, or the cursor is bad for @what. */
static void want(struct cur *c, bool ok, const char *what)
{
	if (!ok && !c->bad)
		c->bad = what;
}

/* A string of 1 (@wide: 2) length bytes then its bytes, into @out of @size: at
 * least @min bytes, fewer than @size, none of them a NUL. */
static void get_str(struct cur *c, char *out, size_t size, bool wide, size_t min, const char *what)
{
	size_t n = (size_t)get_le(c, wide ? 2 : 1, what);
	const unsigned char *p;

	out[0] = '\0';
	want(c, n >= min && n < size, what);
	p = take(c, n, what);
	if (!p)
		return;
	want(c, !memchr(p, '\0', n), what);
	memcpy(out, p, n);
	out[n] = '\0';
}

static void get_recs(struct cur *c, struct status_rec *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		r[i].count = (uint32_t)get_le(c, 4, "a record");
		for (unsigned q = 0; q < STATUS_QUANTILES; q++)
			r[i].q[q] = (uint16_t)get_le(c, 2, "a record");
	}
}

/* The bits of @bits past bit @n are 0 (status_bit() never reads them). */
static bool spare_bits_clear(const uint8_t *bits, size_t size, unsigned n)
{
	for (unsigned i = n; i < size * 8; i++)
		if (status_bit(bits, i))
			return false;
	return true;
}

static void get_ring(struct cur *c, struct status_ring *r)
{
	const unsigned char *p;

	r->min_head = (uint16_t)get_le(c, 2, "a ring");
	r->min_n = (uint16_t)get_le(c, 2, "a ring");
	r->blk_head = (uint16_t)get_le(c, 2, "a ring");
	r->blk_n = (uint16_t)get_le(c, 2, "a ring");
	want(c, r->min_head < STATUS_MINUTES && r->min_n <= STATUS_MINUTES, "a ring's minutes");
	want(c, r->blk_head < STATUS_BLOCKS && r->blk_n <= STATUS_BLOCKS, "a ring's blocks");
	get_recs(c, r->min, STATUS_MINUTES);
	get_recs(c, r->blk, STATUS_BLOCKS);
	p = take(c, sizeof(r->min_slow), "a ring's slow bits");
	if (p)
		memcpy(r->min_slow, p, sizeof(r->min_slow));
	p = take(c, sizeof(r->blk_slow), "a ring's slow bits");
	if (p)
		memcpy(r->blk_slow, p, sizeof(r->blk_slow));
	p = take(c, sizeof(r->min_held), "a ring's held bits");
	if (p)
		memcpy(r->min_held, p, sizeof(r->min_held));
	want(c,
	     spare_bits_clear(r->min_slow, sizeof(r->min_slow), STATUS_MINUTES) &&
		     spare_bits_clear(r->blk_slow, sizeof(r->blk_slow), STATUS_BLOCKS),
	     "a ring's slow bits");
	want(c, spare_bits_clear(r->min_held, sizeof(r->min_held), STATUS_MINUTES),
	     "a ring's held bits");
}

static void get_target(struct cur *c, struct status_saved_target *t)
{
	unsigned known, kind, state;

	get_str(c, t->name, sizeof(t->name), false, 1, "a target's name");
	get_str(c, t->path, sizeof(t->path), true, 1, "a target's path");
	known = (unsigned)get_le(c, 1, "a target's identity");
	kind = (unsigned)get_le(c, 1, "a target's identity");
	t->id.dev = get_le(c, 8, "a target's identity");
	t->id.fs_type = (int64_t)get_le(c, 8, "a target's identity");
	want(c, known <= 1 && kind <= CFG_TARGET_DEVICE, "a target's identity");
	t->id.known = known;
	t->id.kind = (uint8_t)kind;
	state = (unsigned)get_le(c, 1, "a target's state");
	want(c, state <= STATUS_SLOW, "a target's state");
	t->j.state = (enum status_state)state;
	t->j.since_s = get_f64(c, "a target's since");
	want(c, isfinite(t->j.since_s) && t->j.since_s >= 0, "a target's since");
	get_str(c, t->j.reason_code, sizeof(t->j.reason_code), false, 0, "a target's code");
}

static void get_tally(struct cur *c, struct status_tally *t)
{
	unsigned n = (unsigned)get_le(c, 1, "a tally");

	want(c, n <= STATUS_JUDGE_MINUTES, "a tally's minutes");
	t->n = (uint8_t)(n <= STATUS_JUDGE_MINUTES ? n : 0);
	for (unsigned i = 0; i < t->n; i++) {
		unsigned median;

		t->count[i] = (uint32_t)get_le(c, 4, "a tally");
		t->over[i] = (uint32_t)get_le(c, 4, "a tally");
		t->stalls[i] = (uint32_t)get_le(c, 4, "a tally");
		t->max[i] = (uint16_t)get_le(c, 2, "a tally");
		median = (unsigned)get_le(c, 1, "a tally");
		want(c, median <= 1 && t->over[i] <= t->count[i] && t->stalls[i] <= t->count[i],
		     "a tally's minute");
		t->median[i] = median;
	}
}

static void get_series(struct cur *c, struct status_saved_series *e)
{
	get_str(c, e->probe, sizeof(e->probe), false, 1, "a probe's name");
	get_str(c, e->target, sizeof(e->target), false, 1, "a series' target");
	e->op = (uint8_t)get_le(c, 1, "a series' op");
	want(c, e->op < IO_OP_COUNT, "a series' op");
	e->fingerprint = (uint32_t)get_le(c, 4, "a series' fingerprint");
	get_ring(c, &e->ring);
	e->shape = (uint8_t)get_le(c, 1, "a series' shape");
	want(c, e->shape <= STATUS_SHAPE_MEDIAN, "a series' shape");
	get_tally(c, &e->tally);
}

/* Names are unique: one state per target, one ring per probe op. */
static void want_unique(struct cur *c, const struct status_saved *s)
{
	for (unsigned i = 0; i < s->n_targets; i++)
		for (unsigned j = i + 1; j < s->n_targets; j++)
			want(c, strcmp(s->targets[i].name, s->targets[j].name) != 0,
			     "a target saved twice");
	for (unsigned i = 0; i < s->n_series; i++)
		for (unsigned j = i + 1; j < s->n_series; j++) {
			const struct status_saved_series *a = &s->series[i], *b = &s->series[j];

			want(c,
			     a->op != b->op || strcmp(a->probe, b->probe) != 0 ||
				     strcmp(a->target, b->target) != 0,
			     "a probe op saved twice");
		}
}

/* The body after the header: 0, -ENOMEM, or -EBADMSG with c->bad. */
static int get_body(struct cur *c, struct status_saved *s)
{
	s->written_s = get_f64(c, "the time written");
	want(c, isfinite(s->written_s) && s->written_s > 0, "the time written");
	s->n_targets = (unsigned)get_le(c, 2, "the counts");
	s->n_series = (unsigned)get_le(c, 2, "the counts");
	want(c, s->n_targets <= CFG_MAX_TARGETS && s->n_series <= STATUS_STATE_MAX_SERIES,
	     "the counts");
	if (c->bad)
		return -EBADMSG;
	s->targets = calloc(s->n_targets ? s->n_targets : 1, sizeof(*s->targets));
	s->series = calloc(s->n_series ? s->n_series : 1, sizeof(*s->series));
	if (!s->targets || !s->series)
		return -ENOMEM;
	for (unsigned i = 0; i < s->n_targets && !c->bad; i++)
		get_target(c, &s->targets[i]);
	for (unsigned i = 0; i < s->n_series && !c->bad; i++)
		get_series(c, &s->series[i]);
	want(c, c->p == c->end, "bytes after the last series");
	if (!c->bad)
		want_unique(c, s);
	return c->bad ? -EBADMSG : 0;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The header of @p (@len bytes): 0, or -EBADMSG with the refusal. Ours is a
 * file that starts with the magic and its NUL, whole: a prefix proves nothing. */
static int check_header(const unsigned char *p, size_t len, enum status_state_refusal *why,
			char *msg, size_t msg_len)
{
	const unsigned char zero[4] = {0};
	uint32_t length, crc;
	uLong got;

	*why = STATUS_STATE_E_FOREIGN;
	if (len < sizeof(STATUS_STATE_MAGIC) ||
	    memcmp(p, STATUS_STATE_MAGIC, sizeof(STATUS_STATE_MAGIC)) != 0) {
		snprintf(msg, msg_len, "not an iopulse state file (no %.18s header)",
			 STATUS_STATE_MAGIC);
		return -EBADMSG;
	}
	*why = STATUS_STATE_E_TRUNCATED;
	if (len < STATUS_STATE_HEADER) {
		snprintf(msg, msg_len, "truncated: %zu bytes, short of its %d-byte header", len,
			 STATUS_STATE_HEADER);
		return -EBADMSG;
	}
	length = le32(p + OFF_LENGTH);
	if (length > len) {
		snprintf(msg, msg_len, "truncated: %zu of %u bytes", len, (unsigned)length);
		return -EBADMSG;
	}
	*why = STATUS_STATE_E_CORRUPT;
	if (length != len) {
		snprintf(msg, msg_len, "corrupt: %zu bytes where its header says %u", len,
			 (unsigned)length);
		return -EBADMSG;
	}
	crc = le32(p + OFF_CRC);
	got = crc32(crc32(0, Z_NULL, 0), p, OFF_CRC);
	got = crc32(got, zero, 4);
	got = crc32(got, p + OFF_CRC + 4, (uInt)(len - OFF_CRC - 4));
	if ((uint32_t)got != crc) {
		snprintf(msg, msg_len, "corrupt: checksum %08x where its header says %08x",
			 (unsigned)got, (unsigned)crc);
		return -EBADMSG;
	}
	*why = STATUS_STATE_E_VERSION;
	if (le32(p + OFF_VERSION) != STATUS_STATE_VERSION) {
		snprintf(msg, msg_len, "version %u, and this iopulse reads version %u",
			 (unsigned)le32(p + OFF_VERSION), STATUS_STATE_VERSION);
		return -EBADMSG;
	}
	return 0;
}

/* The time the file says it was written, against @now_s. */
static int check_age(const struct status_saved *s, double now_s, enum status_state_refusal *why,
		     char *msg, size_t msg_len)
{
	double age = now_s - s->written_s;

	if (age > STATUS_STATE_MAX_AGE_S) {
		*why = STATUS_STATE_E_TOO_OLD;
		snprintf(msg, msg_len,
			 "written %.0f hours ago, over %.0f: nothing of it is current", age / 3600,
			 STATUS_STATE_MAX_AGE_S / 3600);
		return -EBADMSG;
	}
	if (-age > STATUS_STATE_FUTURE_S) {
		*why = STATUS_STATE_E_FUTURE;
		snprintf(msg, msg_len,
			 "written %.0f s from now (the clock was set back?): not trusted", -age);
		return -EBADMSG;
	}
	return 0;
}

int status_state_decode(const void *data, size_t len, double now_s, struct status_saved *out,
			enum status_state_refusal *why, char *msg, size_t msg_len)
{
	struct cur c = {.p = (const unsigned char *)data + STATUS_STATE_HEADER,
			.end = (const unsigned char *)data + len};
	int r;

	memset(out, 0, sizeof(*out));
	msg[0] = '\0';
	r = check_header(data, len, why, msg, msg_len);
	if (r < 0)
		return r;
	r = get_body(&c, out);
	if (r == -EBADMSG) {
		*why = STATUS_STATE_E_CORRUPT;
		snprintf(msg, msg_len, "corrupt: %s does not read back", c.bad);
	}
	if (r == 0)
		r = check_age(out, now_s, why, msg, msg_len);
	if (r < 0)
		status_saved_free(out);
	return r;
}

/* ---------------------------------------------------------------- identity */

bool status_identity_same(const struct status_identity *saved, const struct status_identity *now)
{
	return saved->known && now->known && saved->kind == now->kind && saved->dev == now->dev &&
	       (saved->kind == CFG_TARGET_DEVICE || saved->fs_type == now->fs_type);
}
