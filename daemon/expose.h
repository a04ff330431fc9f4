/* SPDX-License-Identifier: MIT */
/*
 * expose — pure renderers: registry snapshot in, bytes out. No I/O, no clocks:
 * the same snapshot always renders to the same bytes.
 */
#ifndef IOPULSE_EXPOSE_H
#define IOPULSE_EXPOSE_H

#include <stdarg.h>
#include <stddef.h>

#include "metrics.h"

#define EXPOSE_TEXT_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* A growable byte buffer. A failed allocation sets @oom and later appends are
 * no-ops, so callers check once at the end. */
struct buf {
	char *data;
	size_t len;
	size_t cap;
	int oom;
};

void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_append(struct buf *b, const char *s, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the bytes to the caller (to free()); the buffer becomes empty. */
char *buf_steal(struct buf *b, size_t *len);

/*
 * Prometheus text format 0.0.4: HELP and TYPE per family, HELP escaped (\\, \n),
 * label values escaped (\\, \", \n), histograms as _bucket{le=...} (cumulative,
 * ending with le="+Inf"), _sum and _count. Floats in shortest round-trip form
 * (shortest round-trip digits, Go's %g rule), "+Inf"/"-Inf"/"NaN" spelled as Prometheus does.
 * Returns 0 or -ENOMEM.
 */
int expose_text(const struct metrics_snapshot *snap, struct buf *out);

/* Formats a double as Prometheus does (Go's strconv 'g', -1): "1", "0.25", "1e-05",
 * "+Inf". @buf must hold 32 bytes. */
void expose_format_double(double v, char *buf, size_t len);

#endif
