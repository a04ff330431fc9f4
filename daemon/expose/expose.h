/* SPDX-License-Identifier: MIT */
/*
 * expose — pure renderers: registry snapshot in, bytes out. No I/O, no clocks:
 * the same snapshot always renders to the same bytes.
 */
#ifndef IOPULSE_EXPOSE_H
#define IOPULSE_EXPOSE_H

#include <stdarg.h>
#include <stddef.h>

#include "lib/buf.h"
#include "daemon/metrics/metrics.h"

#define EXPOSE_TEXT_CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"
#define EXPOSE_OPENMETRICS_CONTENT_TYPE "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define EXPOSE_PROTOBUF_CONTENT_TYPE                                                               \
	"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "               \
	"encoding=delimited"

/*
 * Prometheus text format 0.0.4: HELP and TYPE per family, HELP escaped (\\, \n),
 * label values escaped (\\, \", \n), histograms as _bucket{le=...} (cumulative,
 * ending with le="+Inf"), _sum and _count. Floats in shortest round-trip form
 * (shortest round-trip digits, Go's %g rule), "+Inf"/"-Inf"/"NaN" spelled as Prometheus does.
 * The le label is canonical (expose_format_canonical()), as in the other formats.
 * Native histograms have no text form: only the classic buckets are written.
 * Returns 0 or -ENOMEM.
 */
int expose_text(const struct metrics_snapshot *snap, struct buf *out);

/*
 * OpenMetrics 1.0 text. As expose_text(), except: a counter family "foo_total" is
 * written as family "foo" (TYPE, UNIT, HELP lines) with the sample "foo_total"; a
 * counter whose name lacks "_total" has no OpenMetrics counter form and is written
 * as type "unknown" with its own name, so the series is the same in every format;
 * families named *_seconds / *_bytes get a UNIT line; HELP also escapes '"'; the
 * page ends with "# EOF\n" and has no blank lines. Returns 0 or -ENOMEM.
 */
int expose_openmetrics(const struct metrics_snapshot *snap, struct buf *out);

/*
 * Protobuf: a stream of io.prometheus.client.MetricFamily messages, each preceded
 * by its length as a varint (the "delimited" encoding). Every family carries its
 * type; no timestamps. Histograms carry the classic buckets (cumulative_count,
 * upper_bound; +Inf implied by sample_count) and, when @snap was taken with
 * METRICS_SNAP_NATIVE, the native view (schema, zero_threshold, zero_count,
 * positive spans, packed deltas). Returns 0, -ENOMEM, or -ERANGE when a native
 * view holds more samples than its series count (Prometheus would refuse the whole
 * scrape; nothing useful was written).
 */
int expose_protobuf(const struct metrics_snapshot *snap, struct buf *out);

/*
 * The pages piece by piece. A page is, family by family, the family's head and
 * then one piece per series (and, in OpenMetrics, the tail at the end);
 * expose_text(), expose_openmetrics() and expose_protobuf() are exactly these
 * loops. A piece depends only on its family's name, labels and bounds and on its
 * series, so a caller that keeps the pieces of unchanged series (daemon/http/render.c
 * cache) assembles the same bytes by concatenating kept and fresh pieces.
 * Protobuf: expose_protobuf_head() opens the family's delimited record and
 * returns where it starts, for expose_protobuf_tail() to close; a piece is one
 * MetricFamily.metric field; expose_protobuf_series() returns 0 or -ERANGE (as
 * expose_protobuf()).
 */
void expose_text_head(const struct snap_family *f, struct buf *out);
void expose_text_series(const struct snap_family *f, const struct snap_series *s, struct buf *out);
void expose_openmetrics_head(const struct snap_family *f, struct buf *out);
void expose_openmetrics_series(const struct snap_family *f, const struct snap_series *s,
			       struct buf *out);
void expose_openmetrics_tail(struct buf *out);
size_t expose_protobuf_head(const struct snap_family *f, struct buf *out);
int expose_protobuf_series(const struct snap_family *f, const struct snap_series *s, int native,
			   struct buf *out);
void expose_protobuf_tail(struct buf *out, size_t head);

/* Formats a double as Prometheus does (Go's strconv 'g', -1): "1", "0.25", "1e-05",
 * "+Inf". @buf must hold 32 bytes. */
void expose_format_double(double v, char *buf, size_t len);

/* OpenMetrics' canonical number, for the le label: expose_format_double() with
 * ".0" appended when there is neither a '.' nor an exponent ("1.0", "0.0",
 * "1e-05", "+Inf") — what Prometheus makes of a protobuf upper bound, so the
 * bucket series are the same whatever format a scrape negotiated. */
void expose_format_canonical(double v, char *buf, size_t len);

#endif
