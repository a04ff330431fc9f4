/* SPDX-License-Identifier: MIT */
/*
 * gzpage — see gzpage.h.
 *
 * Why pieces, and why these settings (measured with bench/scrape.sh and the
 * pages of its two configurations; bench/README.md): a scrape that gzips the
 * whole page spends more CPU in deflate than in everything else, although the
 * render cache has already found that most families did not change. Keeping
 * each family's deflate bytes makes a scrape under load compress only the one or
 * two families that change at every scrape (iopulse_http_requests_total, the
 * duty cycle gauges).
 *
 * But independent pieces compress worse: each starts a new deflate block (its
 * own Huffman tables) with no history, so a page cut into families was 1.3x
 * (20 probes) to 1.8x (default config) the size of the whole page gzipped. A
 * preset dictionary of the bytes before each piece won back only part of that,
 * and cost more CPU than it saved: every changed family then made its neighbours
 * compress again. So the cut adapts: when at least half of the page's bytes
 * changed (a Prometheus scrape every 15 s: every counter and histogram moved),
 * the page is one piece, as small and as cheap as gzip of the whole page; when
 * less did (scrapes close together), every family that changed becomes a piece
 * of its own and the rest keep theirs. A scrape after a one-piece page re-cuts it
 * once.
 *
 * A family that changed alone and is shorter than GZ_STORE_MAX is stored, not
 * deflated: zlib's set-up of a piece (clearing its hash table, building the
 * block's Huffman trees) cost ~3 us however short the piece, to save ~60 bytes
 * of a 200-byte family. Under load that is iopulse_http_requests_total at every
 * scrape; a scrape every 15 s changes most of the page, which is one piece.
 *
 * zlib rather than libdeflate: libdeflate compresses whole buffers only (its
 * output always ends with a final block), so its pieces could not be joined; and
 * on a whole page at the fastest level it was no faster than a reused zlib
 * stream. Level 1, as before: level 6 shrank the body another 11-14% for 3-5x the
 * CPU. A 4 KiB window and memLevel 4 keep the stream at ~30 KiB (zlib's default
 * 15/8: ~268 KiB); it is allocated once and kept, because allocating and freeing
 * it per scrape cost more than compressing (page faults of freshly trimmed heap).
 * Issue 15 (memory), the default config's 17 KB OpenMetrics page in one piece:
 * memLevel 6 (~54 KiB) 3,368 B, 5 (~38 KiB) 3,397 B, 4 3,445 B (+2.3%), 3
 * 3,484 B; a 2 KiB window with memLevel 4 (~22 KiB) 3,616 B (+7%).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/buf.h"
#include "daemon/expose/gzpage.h"

#define GZ_WINDOW_BITS 12
#define GZ_MEM_LEVEL   4
#define GZ_STORE_MAX   512 /* a family alone shorter than this is stored (see above) */

/* A piece: families [first, last) of its page, deflated together. */
struct gz_piece {
	size_t first, last; /* family numbers */
	size_t z_end;	    /* in the kept deflate bytes: where its bytes end */
	uint32_t crc;	    /* crc32 of its page bytes */
	uLong crc_op;	    /* crc32_combine_gen() of their length: appends the CRC */
};

/* A page and its pieces: the kept one, or the one being built. */
struct gz_state {
	struct buf z;		/* the pieces' deflate bytes, back to back */
	struct gz_piece *piece; /* n_piece of them, in page order */
	size_t n_piece, cap_piece;
	size_t *end; /* where each family ends in the page, n_family of them */
	size_t n_family, cap_family;
};

struct gzpage {
	z_stream zs;	     /* raw deflate, reset for every piece */
	struct buf page;     /* the previous page */
	struct gz_state old; /* its pieces */
	struct gz_state new; /* being built; swapped with old on success */
	bool *same;	     /* per family of the new page: as in the previous one */
	size_t cap_same;
};

struct gzpage *gzpage_new(void)
{
	struct gzpage *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	/* Negative window bits: raw deflate, no zlib or gzip wrapper per piece. */
	if (deflateInit2(&g->zs, Z_BEST_SPEED, Z_DEFLATED, -GZ_WINDOW_BITS, GZ_MEM_LEVEL,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		return NULL;
	}
	buf_init(&g->page);
	buf_init(&g->old.z);
	buf_init(&g->new.z);
	return g;
}

static void state_free(struct gz_state *st)
{
	buf_free(&st->z);
	free(st->piece);
	free(st->end);
}

void gzpage_free(struct gzpage *g)
{
	if (!g)
		return;
	deflateEnd(&g->zs);
	buf_free(&g->page);
	state_free(&g->old);
	state_free(&g->new);
	free(g->same);
	free(g);
}

static size_t family_start(const size_t *end, size_t i)
{
	return i ? end[i - 1] : 0;
}

/* Deflate @page[start..end) with no history, appended to @z; ends on a byte
 * boundary with no final block. 0, -ENOMEM or -EIO. */
static int deflate_bytes(struct gzpage *g, const char *page, size_t start, size_t end,
			 struct buf *z)
{
	size_t room;
	int r;

	if (end - start > UINT_MAX || deflateReset(&g->zs) != Z_OK)
		return -EIO;
	g->zs.next_in = (Bytef *)page + start;
	g->zs.avail_in = (uInt)(end - start);
	/* deflateBound() plus the sync marker; loop in case a flush needs more. */
	room = deflateBound(&g->zs, (uLong)(end - start)) + 16;
	for (;;) {
		buf_prealloc(z, z->len + room);
		if (z->oom)
			return -ENOMEM;
		room = z->cap - z->len < UINT_MAX ? z->cap - z->len : UINT_MAX;
		g->zs.next_out = (Bytef *)z->data + z->len;
		g->zs.avail_out = (uInt)room;
		r = deflate(&g->zs, Z_SYNC_FLUSH);
		z->len += room - g->zs.avail_out;
		if (r != Z_OK && r != Z_BUF_ERROR)
			return -EIO;
		if (g->zs.avail_out != 0 && g->zs.avail_in == 0)
			return 0;
		room = z->cap + 4096;
	}
}

/* @page[start..end), fewer than GZ_STORE_MAX bytes, as one stored block (RFC
 * 1951, 3.2.4): not final, type 00, padded to the byte (a piece starts on one),
 * then LEN and NLEN little-endian, then the bytes as they are. */
static int store_bytes(const char *page, size_t start, size_t end, struct buf *z)
{
	uint16_t len = (uint16_t)(end - start), nlen = (uint16_t)~len;
	const char head[5] = {0, (char)(len & 0xff), (char)(len >> 8), (char)(nlen & 0xff),
			      (char)(nlen >> 8)};

	buf_append(z, head, sizeof(head));
	buf_append(z, page + start, end - start);
	return z->oom ? -ENOMEM : 0;
}

/* Families [first, last) of @page as a new piece of g->new. */
static int piece_deflate(struct gzpage *g, const char *page, size_t first, size_t last)
{
	struct gz_state *st = &g->new;
	size_t start = family_start(st->end, first), end = st->end[last - 1];
	struct gz_piece *p;
	int r;

	if (mem_grow(&st->piece, &st->cap_piece, st->n_piece + 1, sizeof(*st->piece)) < 0)
		return -ENOMEM;
	if (last - first == 1 && end - start < GZ_STORE_MAX)
		r = store_bytes(page, start, end, &st->z);
	else
		r = deflate_bytes(g, page, start, end, &st->z);
	if (r < 0)
		return r;
	p = &st->piece[st->n_piece++];
	p->first = first;
	p->last = last;
	p->z_end = st->z.len;
	p->crc = (uint32_t)crc32(0, (const Bytef *)page + start, (uInt)(end - start));
	p->crc_op = crc32_combine_gen((z_off_t)(end - start));
	return 0;
}

/* Piece @k of g->old, whose families are all unchanged, into g->new. */
static int piece_keep(struct gzpage *g, size_t k)
{
	const struct gz_piece *o = &g->old.piece[k];
	size_t zstart = k ? g->old.piece[k - 1].z_end : 0;
	struct gz_state *st = &g->new;

	if (mem_grow(&st->piece, &st->cap_piece, st->n_piece + 1, sizeof(*st->piece)) < 0)
		return -ENOMEM;
	buf_append(&st->z, g->old.z.data + zstart, o->z_end - zstart);
	if (st->z.oom)
		return -ENOMEM;
	st->piece[st->n_piece] = *o;
	st->piece[st->n_piece++].z_end = st->z.len;
	return 0;
}

/* Which families of @page are byte for byte the same-numbered ones of the kept
 * page (in g->same); the bytes of the others. */
static size_t mark_same(struct gzpage *g, const char *page, size_t n)
{
	const size_t *end = g->new.end, *oend = g->old.end;
	size_t i, changed = 0;

	for (i = 0; i < n; i++) {
		size_t start = family_start(end, i), len = end[i] - start, ostart;

		g->same[i] = false;
		if (i < g->old.n_family) {
			ostart = family_start(oend, i);
			g->same[i] = oend[i] - ostart == len &&
				     memcmp(page + start, g->page.data + ostart, len) == 0;
		}
		if (!g->same[i])
			changed += len;
	}
	return changed;
}

/* g->new's pieces for @page (its families in g->new.end, n_family of them): the
 * whole page as one piece when half of it or more changed, else the kept
 * pieces whose families are all unchanged and one piece per other family. */
static int build_pieces(struct gzpage *g, const char *page, size_t len)
{
	size_t n = g->new.n_family, i = 0, k = 0;
	int r = 0;

	g->new.z.len = 0;
	g->new.n_piece = 0;
	if (!n)
		return 0;
	if (mark_same(g, page, n) * 2 >= len)
		return piece_deflate(g, page, 0, n);
	while (r == 0 && i < n) {
		const struct gz_piece *o;
		size_t j;

		while (k < g->old.n_piece && g->old.piece[k].first < i)
			k++;
		o = k < g->old.n_piece ? &g->old.piece[k] : NULL;
		for (j = i; o && o->first == i && j < o->last && j < n && g->same[j]; j++)
			;
		if (o && o->first == i && j == o->last) {
			r = piece_keep(g, k);
			i = j;
		} else {
			r = piece_deflate(g, page, i, i + 1);
			i++;
		}
	}
	return r;
}

static void put_le32(struct buf *b, uint32_t v)
{
	char le[4] = {(char)(v & 0xff), (char)(v >> 8 & 0xff), (char)(v >> 16 & 0xff),
		      (char)(v >> 24 & 0xff)};

	buf_append(b, le, sizeof(le));
}

/* The gzip member of g->new's pieces of a @len-byte page, appended to @out. */
static void put_member(const struct gzpage *g, size_t len, struct buf *out)
{
	/* gzip header: deflate, no name, no mtime, XFL 4 (fastest), OS 3 (Unix). */
	static const char header[10] = {0x1f, (char)0x8b, 8, 0, 0, 0, 0, 0, 4, 3};
	/* An empty final block (fixed Huffman, end of block): the stream's end. */
	static const char last_block[2] = {0x03, 0x00};
	uLong crc = crc32(0, Z_NULL, 0);
	size_t k;

	for (k = 0; k < g->new.n_piece; k++)
		crc = crc32_combine_op(crc, g->new.piece[k].crc, g->new.piece[k].crc_op);
	buf_prealloc(out, out->len + sizeof(header) + g->new.z.len + sizeof(last_block) + 8);
	buf_append(out, header, sizeof(header));
	buf_append(out, g->new.z.data, g->new.z.len);
	buf_append(out, last_block, sizeof(last_block));
	put_le32(out, (uint32_t)crc);
	put_le32(out, (uint32_t)len); /* ISIZE: the length modulo 2^32 */
}

/* Forget the previous page: after a failure, nothing kept may be trusted. */
static void forget(struct gzpage *g)
{
	g->page.len = 0;
	g->old.z.len = 0;
	g->old.n_piece = 0;
	g->old.n_family = 0;
}

int gzpage_compress(struct gzpage *g, struct buf *page, const size_t *ends, size_t n,
		    struct buf *out)
{
	struct gz_state ts;
	struct buf tb;
	size_t i;
	int r;

	if (n ? ends[n - 1] != page->len : page->len != 0)
		return -EINVAL;
	for (i = 1; i < n; i++)
		if (ends[i] < ends[i - 1])
			return -EINVAL;
	if (mem_grow(&g->new.end, &g->new.cap_family, n, sizeof(*g->new.end)) < 0 ||
	    mem_grow(&g->same, &g->cap_same, n, sizeof(*g->same)) < 0) {
		forget(g);
		return -ENOMEM;
	}
	if (n)
		memcpy(g->new.end, ends, n * sizeof(*ends));
	g->new.n_family = n;
	r = build_pieces(g, page->data, page->len);
	if (r == 0) {
		put_member(g, page->len, out);
		r = out->oom ? -ENOMEM : 0;
	}
	if (r < 0) {
		forget(g);
		return r;
	}
	/* Keep this page and its pieces; hand the previous page's buffer back. */
	tb = g->page, g->page = *page, *page = tb;
	page->len = 0;
	ts = g->old, g->old = g->new, g->new = ts;
	return 0;
}
