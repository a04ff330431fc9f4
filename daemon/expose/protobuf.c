/* SPDX-License-Identifier: MIT */
/*
 * protobuf — the delimited io.prometheus.client.MetricFamily renderer.
 *
 * Why a hand-written encoder rather than protobuf-c: we only ever *write* five
 * small messages (MetricFamily, Metric, LabelPair, Counter/Gauge, Histogram with
 * Bucket and BucketSpan), and the wire format for that is ~150 lines: varints,
 * zigzag, little-endian doubles and length-prefixed submessages. protobuf-c would
 * add a .proto, a protoc-c code-generation step in the build, a runtime library,
 * and a tree of heap-allocated message structs per scrape (one per label pair,
 * bucket and span) that we would fill from the snapshot only to serialise and
 * free it. Here the bytes go straight from the snapshot into one growing buffer:
 * no per-field allocation, fields always in field-number order, so the output is
 * deterministic and compares byte for byte against tests/golden/protobuf.bin.
 *
 * Field numbers are client_model 0.3.0's (metrics.proto, the version Debian 12's
 * Prometheus 2.42 is built against). Rules that
 * matter to Prometheus 2.42 (proto3 semantics on its side):
 *  - MetricFamily.type is always written (absent would mean COUNTER);
 *  - no timestamp_ms (0 would mean "none" anyway);
 *  - a histogram is native iff zero_threshold > 0 (or it has deltas): the
 *    registry guarantees a positive threshold, and every series of a family gets
 *    the native fields (2.42 decides per family from metric[0]);
 *  - an empty native histogram still carries one span {0, 0}, which is how newer
 *    Prometheus versions recognise it;
 *  - deltas are packed (2.42 accepts packed and unpacked).
 *
 * Submessages are length-prefixed: we reserve one byte for the length, write the
 * body, and, in the rare case the body is 128 bytes or more, shift it right by
 * the extra varint bytes. That is at most one memmove per nesting level.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "daemon/expose/expose.h"

enum {
	WT_VARINT = 0,
	WT_I64 = 1,
	WT_LEN = 2,
};

/* MetricType */
enum {
	PB_COUNTER = 0,
	PB_GAUGE = 1,
	PB_HISTOGRAM = 4,
};

static unsigned varint_len(uint64_t v)
{
	unsigned n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static unsigned varint_put(uint8_t *p, uint64_t v)
{
	unsigned n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static void pb_varint(struct buf *b, uint64_t v)
{
	uint8_t tmp[10];

	buf_append(b, (const char *)tmp, varint_put(tmp, v));
}

static void pb_tag(struct buf *b, unsigned field, unsigned wt)
{
	pb_varint(b, (uint64_t)field << 3 | wt);
}

static void pb_uint(struct buf *b, unsigned field, uint64_t v)
{
	pb_tag(b, field, WT_VARINT);
	pb_varint(b, v);
}

/* sint32 and sint64 share the zigzag encoding; a sint32 fits in an int64. */
static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static void pb_sint(struct buf *b, unsigned field, int64_t v)
{
	pb_uint(b, field, zigzag(v));
}

static void pb_double(struct buf *b, unsigned field, double v)
{
	uint8_t le[8];
	uint64_t bits;
	unsigned i;

	memcpy(&bits, &v, sizeof(bits));
	for (i = 0; i < 8; i++)
		le[i] = (uint8_t)(bits >> (8 * i)); /* little-endian on any host */
	pb_tag(b, field, WT_I64);
	buf_append(b, (const char *)le, sizeof(le));
}

static void pb_string(struct buf *b, unsigned field, const char *s)
{
	size_t n = strlen(s);

	pb_tag(b, field, WT_LEN);
	pb_varint(b, n);
	buf_append(b, s, n);
}

/* Open a length-delimited submessage (@field > 0) or a delimited-stream record
 * (@field == 0: the length alone). Returns where the length byte sits. */
static size_t pb_open(struct buf *b, unsigned field)
{
	if (field)
		pb_tag(b, field, WT_LEN);
	buf_append(b, "", 1); /* the length, if it fits in one byte */
	return b->len - 1;
}

/* Close what pb_open() returned @at for: write the body's length in front of it. */
static void pb_close(struct buf *b, size_t at)
{
	static const char pad[9];
	size_t body, n;

	if (b->oom)
		return;
	body = b->len - at - 1;
	n = varint_len(body);
	if (n > 1) {
		buf_append(b, pad, n - 1);
		if (b->oom)
			return;
		memmove(b->data + at + n, b->data + at + 1, body);
	}
	varint_put((uint8_t *)b->data + at, body);
}

/* ---- messages ---- */

static void put_labels(struct buf *b, const struct snap_family *f, const struct snap_series *s)
{
	unsigned i;

	for (i = 0; i < f->n_labels; i++) {
		size_t at = pb_open(b, 1); /* Metric.label */

		pb_string(b, 1, f->labels[i]); /* LabelPair.name */
		pb_string(b, 2, s->values[i]); /* LabelPair.value */
		pb_close(b, at);
	}
	for (i = 0; i < s->n_extra; i++) {
		size_t at = pb_open(b, 1);

		pb_string(b, 1, s->extra[2 * i]);
		pb_string(b, 2, s->extra[2 * i + 1]);
		pb_close(b, at);
	}
}

static int put_native(struct buf *b, const struct snap_series *s)
{
	const struct hist_native *n = &s->native;
	uint64_t total = n->zero_count;
	int64_t count = 0;
	unsigned i;
	size_t at;

	for (i = 0; i < n->n_deltas; i++) {
		count += n->deltas[i];
		if (count < 0)
			return -ERANGE;
		total += (uint64_t)count;
	}
	if (total > s->count)
		return -ERANGE;

	pb_sint(b, 5, n->schema);	    /* Histogram.schema */
	pb_double(b, 6, n->zero_threshold); /* Histogram.zero_threshold */
	pb_uint(b, 7, n->zero_count);	    /* Histogram.zero_count */
	if (!n->n_spans) {
		at = pb_open(b, 12); /* Histogram.positive_span {0, 0} */
		pb_sint(b, 1, 0);
		pb_uint(b, 2, 0);
		pb_close(b, at);
		return 0;
	}
	for (i = 0; i < n->n_spans; i++) {
		at = pb_open(b, 12);		   /* Histogram.positive_span */
		pb_sint(b, 1, n->spans[i].offset); /* BucketSpan.offset */
		pb_uint(b, 2, n->spans[i].length); /* BucketSpan.length */
		pb_close(b, at);
	}
	at = pb_open(b, 13); /* Histogram.positive_delta, packed */
	for (i = 0; i < n->n_deltas; i++)
		pb_varint(b, zigzag(n->deltas[i]));
	pb_close(b, at);
	return 0;
}

static int put_histogram(struct buf *b, const struct snap_family *f, const struct snap_series *s,
			 int native)
{
	size_t at = pb_open(b, 7); /* Metric.histogram */
	unsigned i;
	int r = 0;

	pb_uint(b, 1, s->count); /* Histogram.sample_count */
	pb_double(b, 2, s->sum); /* Histogram.sample_sum */
	for (i = 0; i < f->n_bounds; i++) {
		size_t bat = pb_open(b, 3); /* Histogram.bucket */

		pb_uint(b, 1, s->cumulative[i]); /* Bucket.cumulative_count */
		pb_double(b, 2, f->bounds[i]);	 /* Bucket.upper_bound */
		pb_close(b, bat);
	}
	if (native)
		r = put_native(b, s);
	pb_close(b, at);
	return r;
}

size_t expose_protobuf_head(const struct snap_family *f, struct buf *out)
{
	size_t at = pb_open(out, 0); /* the delimited record */

	pb_string(out, 1, f->name); /* MetricFamily.name, "_total" included */
	if (f->help && *f->help)
		pb_string(out, 2, f->help); /* MetricFamily.help, unescaped */
	pb_uint(out, 3,
		f->type == METRIC_COUNTER ? PB_COUNTER
		: f->type == METRIC_GAUGE ? PB_GAUGE
					  : PB_HISTOGRAM); /* MetricFamily.type */
	return at;
}

int expose_protobuf_series(const struct snap_family *f, const struct snap_series *s, int native,
			   struct buf *out)
{
	size_t mat = pb_open(out, 4); /* MetricFamily.metric */
	int r = 0;

	put_labels(out, f, s);
	if (f->type == METRIC_HISTOGRAM) {
		r = put_histogram(out, f, s, native);
	} else {
		/* Metric.counter / Metric.gauge, then Counter/Gauge.value */
		size_t vat = pb_open(out, f->type == METRIC_COUNTER ? 3 : 2);

		pb_double(out, 1, s->value);
		pb_close(out, vat);
	}
	pb_close(out, mat);
	return r;
}

void expose_protobuf_tail(struct buf *out, size_t head)
{
	pb_close(out, head);
}

static int put_family(struct buf *b, const struct snap_family *f, int native)
{
	size_t at = expose_protobuf_head(f, b);
	unsigned j;
	int r = 0;

	for (j = 0; r == 0 && j < f->n_series; j++)
		r = expose_protobuf_series(f, &f->series[j], native, b);
	expose_protobuf_tail(b, at);
	return r;
}

int expose_protobuf(const struct metrics_snapshot *snap, struct buf *out)
{
	unsigned i;
	int r;

	for (i = 0; snap && i < snap->n_families; i++) {
		r = put_family(out, &snap->families[i], snap->has_native);
		if (r < 0)
			return r;
	}
	return out->oom ? -ENOMEM : 0;
}
