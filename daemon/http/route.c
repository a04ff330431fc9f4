/* SPDX-License-Identifier: MIT */
/*
 * route — what each path answers: /metrics (negotiated, maybe gzipped),
 * /healthz, the status pages (/, /readyz, /status.json) and 404, after the
 * method and basic auth (authorize.c); every reply counted in
 * iopulse_http_requests_total.
 */
#include <microhttpd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/expose/gzpage.h"
#include "daemon/http/http_int.h"
#include "daemon/log.h"
#include "daemon/status/status.h"
#include "lib/buf.h"

static const char *const handler_names[_H_MAX] = {
	[H_METRICS] = "metrics", [H_HEALTHZ] = "healthz",	  [H_LANDING] = "landing",
	[H_READYZ] = "readyz",	 [H_STATUS_JSON] = "status_json", [H_OTHER] = "other",
};

static void count_request(struct http_server *h, enum handler hd, unsigned code)
{
	char code_s[8];
	const char *values[] = {handler_names[hd], code_s, NULL};
	struct metric_series *s;

	snprintf(code_s, sizeof(code_s), "%u", code);
	s = metrics_series(h->requests, values);
	if (s)
		metrics_add(s, 1);
}

/* @extra: NULL, or a NULL-terminated list of header name, value pairs. */
enum MHD_Result http_reply_headers(struct http_server *h, struct MHD_Connection *c, enum handler hd,
				   unsigned code, const char *type, void *body, size_t len,
				   enum MHD_ResponseMemoryMode mode, const char *const *extra)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!resp) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	for (; extra && extra[0]; extra += 2)
		MHD_add_response_header(resp, extra[0], extra[1]);
	ret = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	count_request(h, hd, code);
	return ret;
}

static enum MHD_Result reply(struct http_server *h, struct MHD_Connection *c, enum handler hd,
			     unsigned code, const char *type, void *body, size_t len,
			     enum MHD_ResponseMemoryMode mode)
{
	return http_reply_headers(h, c, hd, code, type, body, len, mode, NULL);
}

static enum MHD_Result reply_static(struct http_server *h, struct MHD_Connection *c,
				    enum handler hd, unsigned code, const char *type,
				    const char *body)
{
	return reply(h, c, hd, code, type, (void *)body, strlen(body), MHD_RESPMEM_PERSISTENT);
}

/*
 * /metrics gzipped: the page @out in format @fmt through that format's gzpage,
 * which compresses only the families that changed since its last page. 0 with
 * the reply queued (its MHD_Result in *@ret; @out freed), or -errno, logged,
 * with @out intact to be sent uncompressed.
 */
static int serve_gzip(struct http_server *h, struct MHD_Connection *c, enum http_format fmt,
		      struct buf *out, int *ret)
{
	const char *gzip_hdrs[] = {MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding",
				   MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip", NULL};
	struct buf z;
	char *body;
	size_t len;
	int r;

	if (!h->gz[fmt])
		h->gz[fmt] = gzpage_new();
	if (!h->gz[fmt])
		return log_warning_errno(-ENOMEM,
					 "Failed to gzip /metrics: %m, sending it uncompressed");
	buf_init(&z);
	buf_prealloc(&z, h->last_zlen[fmt] + 1024);
	r = gzpage_compress(h->gz[fmt], out, h->ends.end, h->ends.n, &z);
	if (r < 0) {
		buf_free(&z);
		return log_warning_errno(r, "Failed to gzip /metrics: %m, sending it uncompressed");
	}
	buf_free(out); /* the previous page, handed back by gzpage */
	h->last_zlen[fmt] = z.len;
	body = buf_steal(&z, &len);
	*ret = http_reply_headers(h, c, H_METRICS, MHD_HTTP_OK, http_format_content_type(fmt), body,
				  len, MHD_RESPMEM_MUST_FREE, gzip_hdrs);
	return 0;
}

/*
 * /metrics: negotiate the format (Accept) and compression (Accept-Encoding),
 * snapshot, render, maybe gzip. Everything happens in memory on this thread.
 */
static enum MHD_Result serve_metrics(struct http_server *h, struct MHD_Connection *c)
{
	enum http_format fmt = http_negotiate(
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT));
	bool gzip = http_accepts_gzip(
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
	/* The reply depends on both request headers: caches must key on them. */
	const char *plain_hdrs[] = {MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding", NULL};
	struct buf out;
	char *body;
	size_t len;
	int r;

	if (h->collect)
		h->collect(h->userdata);
	buf_init(&out);
	/* One allocation for the whole body: it is about as long as the last one. */
	buf_prealloc(&out, h->last_len[fmt] + h->last_len[fmt] / 8 + 4096);
	r = http_render_metrics(h->metrics, fmt, &out, gzip ? &h->ends : NULL);
	if (r < 0) {
		buf_free(&out);
		log_error_errno(r, "Failed to render /metrics: %m");
		return reply_static(h, c, H_METRICS, MHD_HTTP_INTERNAL_SERVER_ERROR, TEXT_PLAIN,
				    "cannot render metrics\n");
	}
	h->last_len[fmt] = out.len;
	if (gzip && serve_gzip(h, c, fmt, &out, &r) == 0)
		return (enum MHD_Result)r;
	body = buf_steal(&out, &len);
	return http_reply_headers(h, c, H_METRICS, MHD_HTTP_OK, http_format_content_type(fmt), body,
				  len, MHD_RESPMEM_MUST_FREE, plain_hdrs);
}

/* / or /status.json (?history=1: with the ring's records) from a copy of the
 * status, formatted without its mutex; 0 or -ENOMEM. */
static int render_page(struct http_server *h, struct status *st, struct MHD_Connection *c,
		       enum handler hd, struct buf *out, const char **type)
{
	const char *history = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "history");
	size_t last = hd == H_LANDING ? h->page_len : h->json_len;
	struct status_snap snap;
	int r = status_snapshot(st, &snap);

	if (r < 0)
		return r;
	buf_prealloc(out, last + last / 8 + 4096);
	if (hd == H_LANDING) {
		*type = "text/html; charset=utf-8";
		r = status_render_html(&snap, out);
	} else {
		*type = "application/json";
		r = status_render_json(&snap, out, history && strcmp(history, "1") == 0);
	}
	status_snap_free(&snap);
	return r;
}

/*
 * /, /status.json and /readyz: the live state (collected as for /metrics: atomics
 * and the registry), then the figures the scheduler keeps, formatted in memory.
 */
static enum MHD_Result serve_status(struct http_server *h, struct MHD_Connection *c,
				    enum handler hd)
{
	static const char *const no_store[] = {MHD_HTTP_HEADER_CACHE_CONTROL, "no-store", NULL};
	struct status *st = h->status;
	unsigned code = MHD_HTTP_OK;
	const char *type = TEXT_PLAIN;
	struct buf out;
	char *body;
	size_t len;
	int r = 0;

	if (h->collect)
		h->collect(h->userdata);
	buf_init(&out);
	if (hd == H_READYZ) {
		if (!status_ready(st, &out))
			code = MHD_HTTP_SERVICE_UNAVAILABLE;
		else
			buf_puts(&out, "ready\n");
	} else {
		r = render_page(h, st, c, hd, &out, &type);
	}
	if (r < 0 || out.oom) {
		buf_free(&out);
		log_error("Failed to render %s: out of memory", handler_names[hd]);
		return reply_static(h, c, hd, MHD_HTTP_INTERNAL_SERVER_ERROR, TEXT_PLAIN,
				    "out of memory\n");
	}
	body = buf_steal(&out, &len);
	if (hd == H_LANDING)
		h->page_len = len;
	else if (hd == H_STATUS_JSON)
		h->json_len = len;
	return http_reply_headers(h, c, hd, code, type, body, len, MHD_RESPMEM_MUST_FREE, no_store);
}

/*
 * libmicrohttpd (0.9.75) closes the connection after a reply queued in the
 * first call for a request, the one that comes as soon as the headers are in:
 * it has not read a body yet, so it cannot tell where the next request starts.
 * Every scrape would then pay a new TCP connection, though Prometheus keeps its
 * connections open. So the first call for a GET or HEAD without a body only
 * marks *req with http_headers_in and returns; the second, which follows at once (there
 * is no body to wait for), answers, and the connection stays open for the next
 * request. A request with a body (nothing here takes one) is answered in the
 * first call, and its connection closed with the body unread. "Content-Length:
 * 0" (some clients send it with every GET) is no body: libmicrohttpd has none
 * to read either, and makes the second call at once.
 */
static bool has_body(struct MHD_Connection *c)
{
	const char *len =
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

	/* Digits only by now: libmicrohttpd refuses any other length (400). */
	return (len && (!*len || len[strspn(len, "0")] != '\0')) ||
	       MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

enum MHD_Result http_on_request(void *cls, struct MHD_Connection *c, const char *url,
				const char *method, const char *version, const char *upload_data,
				size_t *upload_data_size, void **req)
{
	struct http_server *h = cls;
	struct conn *conn = http_conn_of(c);
	enum handler hd = H_OTHER;
	bool get_or_head = strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
			   strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;

	enum MHD_Result ret;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;

	if (!*req) {
		/* The headers are in: no longer at risk of the header deadline. */
		if (conn)
			http_wait_del(h, conn);
		if (get_or_head && !has_body(c)) {
			*req = &http_headers_in;
			return MHD_YES;
		}
	} else if (*req == &http_headers_in) {
		*req = NULL; /* from here on, http_authorize()'s */
	}

	if (strcmp(url, "/metrics") == 0)
		hd = H_METRICS;
	else if (strcmp(url, "/healthz") == 0)
		hd = H_HEALTHZ;
	else if (strcmp(url, "/") == 0)
		hd = H_LANDING;
	else if (strcmp(url, "/readyz") == 0)
		hd = H_READYZ;
	else if (strcmp(url, "/status.json") == 0)
		hd = H_STATUS_JSON;

	if (!get_or_head)
		return reply_static(h, c, hd, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT_PLAIN,
				    "method not allowed: only GET and HEAD\n");
	if (!http_authorize(h, c, hd, req, &ret))
		return ret;
	switch (hd) {
	case H_METRICS:
		return serve_metrics(h, c);
	case H_HEALTHZ:
		return reply_static(h, c, hd, MHD_HTTP_OK, TEXT_PLAIN, "ok\n");
	case H_LANDING:
	case H_READYZ:
	case H_STATUS_JSON:
		return serve_status(h, c, hd);
	default:
		return reply_static(h, c, hd, MHD_HTTP_NOT_FOUND, TEXT_PLAIN, "not found\n");
	}
}
