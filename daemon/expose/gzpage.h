/* SPDX-License-Identifier: MIT */
/*
 * gzpage — a /metrics page as one gzip member, compressing only what changed
 * since the previous page.
 *
 * The page comes split into its metric families. It is deflated in pieces of
 * whole families, each a raw deflate stream of its own (no history) that ends on
 * a byte boundary (Z_SYNC_FLUSH) without a final block. Such pieces join into one
 * valid deflate stream in page order, the way pigz joins its blocks; the gzip
 * trailer's CRC is combined from the pieces' (crc32_combine_op()). A piece whose
 * families are byte for byte the same-numbered families of the previous page
 * keeps its deflate bytes; see gzpage.c for how the page is cut.
 */
#ifndef IOPULSE_GZPAGE_H
#define IOPULSE_GZPAGE_H

#include <stddef.h>

struct buf;
struct gzpage;

/* A compressor with no previous page; NULL on allocation failure. */
struct gzpage *gzpage_new(void);
void gzpage_free(struct gzpage *g);

/*
 * Appends to @out one gzip member that decompresses to exactly @page's bytes,
 * whose @n families end at @ends[0..n) (not decreasing, the last at page->len;
 * @n is 0 only for an empty page). On success @page is kept for the next call and
 * *@page receives the buffer of the previous page instead (empty or not: the caller
 * frees or reuses it). 0; -EINVAL (bad @ends), -ENOMEM or -EIO, with @page
 * untouched, @out to be discarded, and nothing kept (the next call compresses
 * every piece).
 */
int gzpage_compress(struct gzpage *g, struct buf *page, const size_t *ends, size_t n,
		    struct buf *out);

#endif
