/* SPDX-License-Identifier: MIT */
/*
 * route — what each path answers, from one table (routes[]): its path, the
 * methods it takes and its handler, which answer 404 and 405 too. /metrics
 * (negotiated, maybe gzipped, rendered for each scrape), /healthz, the status
 * pages (/, /readyz, /status.json: a render kept for HTTP_PAGE_FRESH_MS), after
 * the method and basic auth (authorize.c); every reply counted in
 * iopulse_http_requests_total by the route's name.
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

/* The methods a route takes: a set of these bits. */
enum { METHOD_GET = 1u << 0, METHOD_HEAD = 1u << 1 };

/* Each bit's method, in the order Allow: lists them. */
static const char *const method_names[] = {MHD_HTTP_METHOD_GET, MHD_HTTP_METHOD_HEAD};

#define N_METHODS (sizeof(method_names) / sizeof(method_names[0]))

typedef enum MHD_Result route_fn(struct http_server *h, struct MHD_Connection *c,
				 const struct route *rt);

/* A status page's body, from @st into @out (@history: /status.json's
 * ?history=1); *@type and *@code when it is not text/plain or not 200. 0 or
 * -ENOMEM. */
typedef int page_fn(struct http_server *h, struct status *st, bool history, struct buf *out,
		    const char **type, unsigned *code);

struct route {
	const char *path; /* NULL: every path no other route has */
	const char *name; /* the handler label of iopulse_http_requests_total */
	unsigned methods; /* METHOD_*: what it answers; anything else is a 405 */
	route_fn *serve;
	page_fn *page; /* serve_status()'s body; NULL for the others */
	unsigned kept; /* serve_status(): its render's slot (KEPT_*) */
	bool history;  /* serve_status(): ?history=1 has a render of its own, at kept + 1 */
};

/* One more in @h's family @fam (HTTP_FAM_*), of @rt's handler (and @code,
 * unless NULL). */
static void count(struct http_server *h, unsigned fam, const struct route *rt, const char *code)
{
	const char *values[] = {rt->name, code, NULL};
	struct metric_series *s = metrics_series(h->fam[fam], values);

	if (s)
		metrics_add(s, 1);
}

static void count_request(struct http_server *h, const struct route *rt, unsigned code)
{
	char code_s[8];

	snprintf(code_s, sizeof(code_s), "%u", code);
	count(h, HTTP_FAM_REQUESTS, rt, code_s);
}

/* A reply of @body (@mode: libmicrohttpd's), Content-Type @type and @extra (NULL,
 * or a NULL-terminated list of header name, value pairs); NULL when out of
 * memory (@body freed if it was ours to free). */
static struct MHD_Response *response_new(const char *type, void *body, size_t len,
					 enum MHD_ResponseMemoryMode mode, const char *const *extra)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, mode);

	if (!resp) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return NULL;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	for (; extra && extra[0]; extra += 2)
		MHD_add_response_header(resp, extra[0], extra[1]);
	return resp;
}

enum MHD_Result http_reply_headers(struct http_server *h, struct MHD_Connection *c,
				   const struct route *rt, unsigned code, const char *type,
				   void *body, size_t len, enum MHD_ResponseMemoryMode mode,
				   const char *const *extra)
{
	struct MHD_Response *resp = response_new(type, body, len, mode, extra);
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	ret = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	count_request(h, rt, code);
	return ret;
}

static enum MHD_Result reply(struct http_server *h, struct MHD_Connection *c,
			     const struct route *rt, unsigned code, const char *type, void *body,
			     size_t len, enum MHD_ResponseMemoryMode mode)
{
	return http_reply_headers(h, c, rt, code, type, body, len, mode, NULL);
}

static enum MHD_Result reply_static(struct http_server *h, struct MHD_Connection *c,
				    const struct route *rt, unsigned code, const char *type,
				    const char *body)
{
	return reply(h, c, rt, code, type, (void *)body, strlen(body), MHD_RESPMEM_PERSISTENT);
}

/* The methods of @set into @out, @sep between two of them, @last before the
 * last one. */
static void put_methods(struct buf *out, unsigned set, const char *sep, const char *last)
{
	unsigned i, left = (unsigned)__builtin_popcount(set);

	for (i = 0; i < N_METHODS; i++) {
		if (!(set & 1u << i))
			continue;
		buf_puts(out, method_names[i]);
		if (--left)
			buf_puts(out, left > 1 ? sep : last);
	}
}

/* 405: @rt's methods in Allow: ("GET, HEAD") and in the body ("only GET and
 * HEAD"). */
static enum MHD_Result reply_not_allowed(struct http_server *h, struct MHD_Connection *c,
					 const struct route *rt)
{
	const char *hdrs[] = {MHD_HTTP_HEADER_ALLOW, NULL, NULL};
	struct buf allow, body;
	enum MHD_Result ret = MHD_NO;
	char *text;
	size_t len;

	buf_init(&allow);
	buf_init(&body);
	put_methods(&allow, rt->methods, ", ", ", ");
	buf_puts(&allow, ""); /* a string even for no method */
	buf_puts(&body, "method not allowed: only ");
	put_methods(&body, rt->methods, ", ", " and ");
	buf_puts(&body, "\n");
	if (!allow.oom && !body.oom) {
		hdrs[1] = allow.data;
		text = buf_steal(&body, &len);
		ret = http_reply_headers(h, c, rt, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT_PLAIN, text,
					 len, MHD_RESPMEM_MUST_FREE, hdrs);
	}
	buf_free(&allow);
	buf_free(&body);
	return ret;
}

/*
 * /metrics gzipped: the page @out in format @fmt through that format's gzpage,
 * which compresses only the families that changed since its last page. 0 with
 * the reply queued (its MHD_Result in *@ret; @out freed), or -errno, logged,
 * with @out intact to be sent uncompressed.
 */
static int serve_gzip(struct http_server *h, struct MHD_Connection *c, const struct route *rt,
		      enum http_format fmt, struct buf *out, int *ret)
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
	*ret = http_reply_headers(h, c, rt, MHD_HTTP_OK, http_format_content_type(fmt), body, len,
				  MHD_RESPMEM_MUST_FREE, gzip_hdrs);
	return 0;
}

/*
 * /metrics: negotiate the format (Accept) and compression (Accept-Encoding),
 * snapshot, render, maybe gzip. Everything happens in memory on this thread.
 */
static enum MHD_Result serve_metrics(struct http_server *h, struct MHD_Connection *c,
				     const struct route *rt)
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
		return reply_static(h, c, rt, MHD_HTTP_INTERNAL_SERVER_ERROR, TEXT_PLAIN,
				    "cannot render metrics\n");
	}
	h->last_len[fmt] = out.len;
	if (gzip && serve_gzip(h, c, rt, fmt, &out, &r) == 0)
		return (enum MHD_Result)r;
	body = buf_steal(&out, &len);
	return http_reply_headers(h, c, rt, MHD_HTTP_OK, http_format_content_type(fmt), body, len,
				  MHD_RESPMEM_MUST_FREE, plain_hdrs);
}

/* / or /status.json (with the ring's records: @history) from a copy of the
 * status, formatted without its mutex, in a buffer about the size of the last
 * one (*@last, which gets this one's); 0 or -ENOMEM. */
static int render_page(struct status *st, bool json, bool history, size_t *last, struct buf *out)
{
	struct status_snap snap;
	int r = status_snapshot(st, &snap);

	if (r < 0)
		return r;
	buf_prealloc(out, *last + *last / 8 + 4096);
	if (json)
		r = status_render_json(&snap, out, history);
	else
		r = status_render_html(&snap, out);
	status_snap_free(&snap);
	if (r >= 0 && !out->oom)
		*last = out->len;
	return r;
}

/* The status page. */
static int page_html(struct http_server *h, struct status *st, bool history, struct buf *out,
		     const char **type, unsigned *code)
{
	(void)history;
	(void)code;
	*type = "text/html; charset=utf-8";
	return render_page(st, false, false, &h->page_len, out);
}

/* /status.json. */
static int page_json(struct http_server *h, struct status *st, bool history, struct buf *out,
		     const char **type, unsigned *code)
{
	(void)code;
	*type = "application/json";
	return render_page(st, true, history, &h->json_len, out);
}

/* /readyz: "ready", or 503 and why. */
static int page_readyz(struct http_server *h, struct status *st, bool history, struct buf *out,
		       const char **type, unsigned *code)
{
	(void)h;
	(void)history;
	(void)type;
	if (!status_ready(st, out))
		*code = MHD_HTTP_SERVICE_UNAVAILABLE;
	else
		buf_puts(out, "ready\n");
	return 0;
}

/*
 * @rt's page rendered now (@history: with ?history=1): the live state
 * (collected as for /metrics: atomics and the registry), then the figures the
 * scheduler keeps, formatted in memory; its status in *@code. Counted in
 * iopulse_http_status_renders_total. NULL when out of memory (logged).
 */
static struct MHD_Response *render_status(struct http_server *h, const struct route *rt,
					  bool history, unsigned *code)
{
	static const char *const no_store[] = {MHD_HTTP_HEADER_CACHE_CONTROL, "no-store", NULL};
	const char *type = TEXT_PLAIN;
	struct MHD_Response *resp = NULL;
	struct buf out;
	char *body;
	size_t len;
	int r;

	if (h->collect)
		h->collect(h->userdata);
	buf_init(&out);
	*code = MHD_HTTP_OK;
	r = rt->page(h, h->status, history, &out, &type, code);
	if (r >= 0 && !out.oom) {
		body = buf_steal(&out, &len);
		resp = response_new(type, body, len, MHD_RESPMEM_MUST_FREE, no_store);
	}
	buf_free(&out);
	if (!resp)
		log_error("Failed to render %s: out of memory", rt->name);
	else
		count(h, HTTP_FAM_RENDERS, rt, NULL);
	return resp;
}

/*
 * /, /status.json and /readyz (@rt->page): the page's kept render while it is
 * fresh (made less than lim.page_fresh_ms ago), else a new one, kept. A render
 * then answers every request for its page for that long, however many come: a
 * flood of page views costs this thread sends, not renders, and a scrape waits
 * behind little (issue 28). libmicrohttpd counts a reply's references: one
 * replaced goes once its last connection has sent it.
 */
static enum MHD_Result serve_status(struct http_server *h, struct MHD_Connection *c,
				    const struct route *rt)
{
	const char *arg = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "history");
	bool history = rt->history && arg && strcmp(arg, "1") == 0;
	struct kept_page *k = &h->kept[rt->kept + history];
	int64_t now = http_now_ms();
	enum MHD_Result ret;

	if (!k->resp || now - k->made_ms >= (int64_t)h->lim.page_fresh_ms) {
		unsigned code;
		struct MHD_Response *resp = render_status(h, rt, history, &code);

		if (!resp)
			return reply_static(h, c, rt, MHD_HTTP_INTERNAL_SERVER_ERROR, TEXT_PLAIN,
					    "out of memory\n");
		if (k->resp)
			MHD_destroy_response(k->resp);
		*k = (struct kept_page){.resp = resp, .code = code, .made_ms = now};
	}
	ret = MHD_queue_response(c, k->code, k->resp);
	count_request(h, rt, k->code);
	return ret;
}

/* Issue 15 (memory): a kept render is freed once stale, not when the next
 * request for its page comes, which may be never; the thread wakes for it. */
int64_t http_pages_expire(struct http_server *h, int64_t now)
{
	int64_t next = INT64_MAX;
	unsigned i;

	for (i = 0; i < KEPT_N; i++) {
		struct kept_page *k = &h->kept[i];
		int64_t stale = k->made_ms + (int64_t)h->lim.page_fresh_ms;

		if (!k->resp)
			continue;
		if (now < stale) {
			next = stale < next ? stale : next;
			continue;
		}
		MHD_destroy_response(k->resp);
		k->resp = NULL;
		h->trim_due = true; /* its body goes once its last connection has sent it */
	}
	return next;
}

static enum MHD_Result serve_healthz(struct http_server *h, struct MHD_Connection *c,
				     const struct route *rt)
{
	return reply_static(h, c, rt, MHD_HTTP_OK, TEXT_PLAIN, "ok\n");
}

static enum MHD_Result serve_not_found(struct http_server *h, struct MHD_Connection *c,
				       const struct route *rt)
{
	return reply_static(h, c, rt, MHD_HTTP_NOT_FOUND, TEXT_PLAIN, "not found\n");
}

#define GET_HEAD (METHOD_GET | METHOD_HEAD)

/* Every path served, and the last entry for all others. */
static const struct route routes[] = {
	{"/metrics", "metrics", GET_HEAD, serve_metrics, NULL, 0, false},
	{"/healthz", "healthz", GET_HEAD, serve_healthz, NULL, 0, false},
	{"/", "landing", GET_HEAD, serve_status, page_html, KEPT_LANDING, false},
	{"/readyz", "readyz", GET_HEAD, serve_status, page_readyz, KEPT_READYZ, false},
	{"/status.json", "status_json", GET_HEAD, serve_status, page_json, KEPT_JSON, true},
	{NULL, "other", GET_HEAD, serve_not_found, NULL, 0, false},
};

/* The route of @url: its own, or the last. */
static const struct route *route_of(const char *url)
{
	const struct route *rt = routes;

	while (rt->path && strcmp(rt->path, url) != 0)
		rt++;
	return rt;
}

/* @method's METHOD_* bit; 0 for a method no route takes. */
static unsigned method_bit(const char *method)
{
	unsigned i;

	for (i = 0; i < N_METHODS; i++)
		if (strcmp(method, method_names[i]) == 0)
			return 1u << i;
	return 0;
}

/*
 * libmicrohttpd (0.9.75) closes the connection after a reply queued in the
 * first call for a request, the one that comes as soon as the headers are in:
 * it has not read a body yet, so it cannot tell where the next request starts.
 * Every scrape would then pay a new TCP connection, though Prometheus keeps its
 * connections open. So the first call for a request its route takes (GET or
 * HEAD) without a body only marks *req with http_headers_in and returns; the
 * second, which follows at once (there is no body to wait for), answers, and
 * the connection stays open for the next request. A request with a body
 * (nothing here takes one) is answered in the first call, and its connection
 * closed with the body unread. "Content-Length: 0" (some clients send it with
 * every GET) is no body: libmicrohttpd has none to read either, and makes the
 * second call at once.
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
	const struct route *rt = route_of(url);
	bool allowed = rt->methods & method_bit(method);
	enum MHD_Result ret;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;

	if (!*req) {
		/* The headers are in: no longer at risk of the header deadline. */
		if (conn)
			http_wait_del(h, conn);
		if (allowed && !has_body(c)) {
			*req = &http_headers_in;
			return MHD_YES;
		}
	} else if (*req == &http_headers_in) {
		*req = NULL; /* from here on, http_authorize()'s */
	}

	if (!allowed)
		return reply_not_allowed(h, c, rt);
	if (!http_authorize(h, c, rt, req, &ret))
		return ret;
	return rt->serve(h, c, rt);
}
