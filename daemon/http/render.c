/* SPDX-License-Identifier: MIT */
/*
 * render — the /metrics body in one format, through the registry's render
 * cache (http_render_metrics(), http.h): the expose renderers' pieces, kept or
 * fresh, concatenated as expose_*() would.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "daemon/expose/expose.h"
#include "daemon/http/http.h"
#include "lib/buf.h"

/*
 * The render cache: one kept piece per series per format, in the registry
 * (metrics.h). Each format uses the cache slot of its enum value. The renderers
 * stay pure; this only concatenates their pieces, kept or fresh, exactly as
 * expose_*() concatenate them.
 */
_Static_assert(HTTP_FORMAT_PROTOBUF < METRICS_CACHE_SLOTS, "a cache slot per format");

/* Family @ends: one more ends at @at. */
static void family_ends_push(struct http_family_ends *ends, size_t at, struct buf *out)
{
	if (mem_grow(&ends->end, &ends->cap, ends->n + 1, sizeof(*ends->end)) < 0)
		out->oom = 1; /* as a failed append: the caller sees -ENOMEM */
	else
		ends->end[ends->n++] = at;
}

int http_render_metrics(struct metrics *m, enum http_format f, struct buf *out,
			struct http_family_ends *ends)
{
	bool native = f == HTTP_FORMAT_PROTOBUF;
	struct metrics_snapshot *snap;
	unsigned i, j;
	int r = 0;

	if (ends)
		ends->n = 0;
	/* Only protobuf carries native histograms: only then pay for them. */
	snap = metrics_snapshot_cached(m, native ? METRICS_SNAP_NATIVE : 0, (unsigned)f);
	if (!snap)
		return -ENOMEM;
	for (i = 0; r == 0 && i < snap->n_families; i++) {
		const struct snap_family *sf = &snap->families[i];
		size_t head = 0;

		if (f == HTTP_FORMAT_PROTOBUF)
			head = expose_protobuf_head(sf, out);
		else if (f == HTTP_FORMAT_OPENMETRICS)
			expose_openmetrics_head(sf, out);
		else
			expose_text_head(sf, out);
		for (j = 0; r == 0 && j < sf->n_series; j++) {
			const struct snap_series *ss = &sf->series[j];
			size_t at = out->len;

			if (ss->cached) {
				buf_append(out, ss->cached, ss->cached_len);
				continue;
			}
			if (f == HTTP_FORMAT_PROTOBUF)
				r = expose_protobuf_series(sf, ss, 1, out);
			else if (f == HTTP_FORMAT_OPENMETRICS)
				expose_openmetrics_series(sf, ss, out);
			else
				expose_text_series(sf, ss, out);
			/* Keeping it is an optimisation: a failure only costs a render. */
			if (r == 0 && !out->oom)
				(void)metrics_cache_store(m, ss, (unsigned)f, out->data + at,
							  out->len - at);
		}
		if (f == HTTP_FORMAT_PROTOBUF)
			expose_protobuf_tail(out, head);
		if (ends)
			family_ends_push(ends, out->len, out);
	}
	if (f == HTTP_FORMAT_OPENMETRICS)
		expose_openmetrics_tail(out);
	if (ends && ends->n)
		ends->end[ends->n - 1] = out->len;
	else if (ends && out->len)
		family_ends_push(ends, out->len, out);
	metrics_snapshot_free(snap);
	if (r < 0)
		return r;
	return out->oom ? -ENOMEM : 0;
}
