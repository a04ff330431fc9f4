/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <strings.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "daemon/expose/expose.h"
#include "daemon/expose/gzpage.h"
#include "daemon/http/http.h"
#include "daemon/http/http_int.h"
#include "daemon/log.h"
#include "daemon/status/status.h"
#include "daemon/http/auth.h"
#include "daemon/http/tls.h"
#include "config/webconfig.h"

static const char *const handler_names[_H_MAX] = {
	[H_METRICS] = "metrics", [H_HEALTHZ] = "healthz",	  [H_LANDING] = "landing",
	[H_READYZ] = "readyz",	 [H_STATUS_JSON] = "status_json", [H_OTHER] = "other",
};

static const char landing_page[] =
	"<!DOCTYPE html>\n<html>\n<head><title>iopulse</title></head>\n<body>\n"
	"<h1>iopulse</h1>\n<p>Continuous storage latency probes.</p>\n"
	"<ul>\n<li><a href=\"/metrics\">/metrics</a></li>\n"
	"<li><a href=\"/healthz\">/healthz</a></li>\n</ul>\n</body>\n</html>\n";

/* ---------------------------------------------------------------- requests */

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
enum MHD_Result reply_headers(struct http_server *h, struct MHD_Connection *c, enum handler hd,
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
	return reply_headers(h, c, hd, code, type, body, len, mode, NULL);
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
	*ret = reply_headers(h, c, H_METRICS, MHD_HTTP_OK, http_format_content_type(fmt), body, len,
			     MHD_RESPMEM_MUST_FREE, gzip_hdrs);
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
	return reply_headers(h, c, H_METRICS, MHD_HTTP_OK, http_format_content_type(fmt), body, len,
			     MHD_RESPMEM_MUST_FREE, plain_hdrs);
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
 * A daemon without a status (tests) serves the plain landing page, 200 on
 * /readyz.
 */
static enum MHD_Result serve_status(struct http_server *h, struct MHD_Connection *c,
				    enum handler hd)
{
	static const char *const no_store[] = {MHD_HTTP_HEADER_CACHE_CONTROL, "no-store", NULL};
	struct status *st = atomic_load(&h->status);
	unsigned code = MHD_HTTP_OK;
	const char *type = TEXT_PLAIN;
	struct buf out;
	char *body;
	size_t len;
	int r = 0;

	if (!st && hd == H_LANDING)
		return reply_static(h, c, hd, MHD_HTTP_OK, "text/html; charset=utf-8",
				    landing_page);
	if (!st && hd == H_READYZ)
		return reply_static(h, c, hd, MHD_HTTP_OK, TEXT_PLAIN, "ready\n");
	if (!st)
		return reply_static(h, c, hd, MHD_HTTP_NOT_FOUND, TEXT_PLAIN, "not found\n");
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
	return reply_headers(h, c, hd, code, type, body, len, MHD_RESPMEM_MUST_FREE, no_store);
}

/*
 * libmicrohttpd (0.9.75) closes the connection after a reply queued in the
 * first call for a request, the one that comes as soon as the headers are in:
 * it has not read a body yet, so it cannot tell where the next request starts.
 * Every scrape would then pay a new TCP connection, though Prometheus keeps its
 * connections open. So the first call for a GET or HEAD without a body only
 * marks *req with headers_in and returns; the second, which follows at once (there
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **req)
{
	struct http_server *h = cls;
	struct conn *conn = conn_of(c);
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
			wait_del(h, conn);
		if (get_or_head && !has_body(c)) {
			*req = &headers_in;
			return MHD_YES;
		}
	} else if (*req == &headers_in) {
		*req = NULL; /* from here on, authorize()'s */
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
	if (!authorize(h, c, hd, req, &ret))
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

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_debug("HTTP: %s", msg);
}

/* ---------------------------------------------------------------- lifecycle */

/* Stop the thread, libmicrohttpd (the CLOSED notifications free the records),
 * and free everything; for a server built only in part too. */
static void server_free(struct http_server *h)
{
	const uint64_t one = 1;
	unsigned i;

	if (h->started) {
		if (write(h->stop_fd, &one, sizeof(one)) != sizeof(one))
			(void)log_error_errno(-errno, "Failed to stop the HTTP thread: %m");
		pthread_join(h->thread, NULL);
	}
	/* Its callbacks resume the connections they suspended: before the stop. */
	web_auth_free(h->auth);
	if (h->mhd)
		MHD_stop_daemon(h->mhd);
	web_tls_free(h->tls); /* after the connections' references are back */
	for (i = 0; i < sizeof(h->gz) / sizeof(h->gz[0]); i++)
		gzpage_free(h->gz[i]);
	free(h->ends.end);
	for (i = 0; i < PEER_BUCKETS; i++) /* left only if libmicrohttpd leaked one */
		while (h->peers[i]) {
			struct peer *p = h->peers[i];

			h->peers[i] = p->next;
			free(p);
		}
	if (h->stop_fd >= 0)
		close(h->stop_fd);
	if (h->wake_fd >= 0)
		close(h->wake_fd);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	free(h);
}

/* TLS and basic auth from @web (NULL: neither). 0 or -errno, logged. */
static int web_setup(struct http_server *h, const struct web_config *web)
{
	char msg[512];
	int r;

	if (!web)
		return 0;
	if (web->tls) {
		if (!MHD_is_feature_supported(MHD_FEATURE_TLS)) {
			log_error("%s: TLS is configured, but this libmicrohttpd was built without "
				  "TLS support",
				  web->source);
			return -EOPNOTSUPP;
		}
		r = web_tls_new(web, &h->tls, msg, sizeof(msg));
		if (r < 0) {
			log_error("%s: %s", web->source, msg);
			return r;
		}
	}
	if (web->n_users) {
		h->auth = web_auth_new(web, &r);
		if (!h->auth)
			return log_error_errno(r, "Failed to set up basic auth: %m");
	}
	return 0;
}

/* libmicrohttpd's flags and options (@opts, room for 4) for TLS and basic auth. */
static unsigned web_options(struct http_server *h, struct MHD_OptionItem *opts)
{
	unsigned flags = 0, n = 0;

	if (h->tls) {
		/* No certificate of its own: GnuTLS asks web_tls_retrieve() at each
		 * handshake, which is how SIGHUP swaps it on a running daemon. */
		flags |= MHD_USE_TLS;
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0,
						    (void *)web_tls_retrieve};
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
						    (void *)web_tls_priorities(h->tls)};
		if (web_tls_trust(h->tls))
			opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0,
							    (void *)web_tls_trust(h->tls)};
	}
	opts[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	if (h->auth)
		flags |= MHD_ALLOW_SUSPEND_RESUME;
	return flags;
}

struct http_server *http_start(int listen_fd, const struct http_limits *lim, struct metrics *m,
			       http_collect_fn collect, void *userdata, int *err)
{
	return http_start_web(listen_fd, lim, NULL, m, collect, userdata, err);
}

/* @lim's limits, each 0 (or @lim NULL) for the default; the connection limit's
 * default is what RLIMIT_NOFILE leaves after lim->fd_reserve. */
static void set_limits(struct http_server *h, const struct http_limits *lim)
{
	struct rlimit rl = {.rlim_cur = 1024};

	(void)getrlimit(RLIMIT_NOFILE, &rl);
	h->nofile = rl.rlim_cur;
	h->lim.connections =
		lim && lim->connections
			? lim->connections
			: http_connection_limit(rl.rlim_cur, lim ? lim->fd_reserve : 0);
	h->lim.per_address = lim && lim->per_address ? lim->per_address : HTTP_PER_ADDRESS_LIMIT;
	h->lim.header_ms = lim && lim->header_ms ? lim->header_ms : HTTP_HEADER_DEADLINE_MS;
}

struct http_server *http_start_web(int listen_fd, const struct http_limits *lim,
				   const struct web_config *web, struct metrics *m,
				   http_collect_fn collect, void *userdata, int *err)
{
	struct MHD_OptionItem tls_opts[4] = {{MHD_OPTION_END, 0, NULL}};
	unsigned flags;
	static const char *const labels[] = {"handler", "code", NULL};
	struct http_server *h = calloc(1, sizeof(*h));
	const union MHD_DaemonInfo *info;
	int r;

	if (!h) {
		close(listen_fd);
		*err = -ENOMEM;
		return NULL;
	}
	h->listen_fd = listen_fd;
	h->stop_fd = h->wake_fd = -1;
	h->metrics = m;
	h->collect = collect;
	h->userdata = userdata;
	set_limits(h, lim);
	h->requests = metrics_family(m, "iopulse_http_requests_total", METRIC_COUNTER,
				     "HTTP requests answered, by handler and status code.", labels,
				     NULL, 0);
	if (!h->requests) {
		r = -ENOMEM;
		goto fail;
	}
	r = web_setup(h, web);
	if (r < 0)
		goto fail;
	flags = web_options(h, tls_opts);
	/* The logger first, so that even option parsing speaks through our log. No
	 * thread of its own and no listening socket: serve() runs it. Its limit must
	 * never bite: ours closes connections, its would refuse new ones, a scrape
	 * too. It counts a connection until an MHD_run() reaps it, and each run
	 * reaps every one we shut down before it (they hang up). We shut down at most
	 * one per connection added, so before a turn's k-th MHD_add_connection() it
	 * holds at most lim.connections + k - 1, k <= ACCEPT_BATCH. (A flood of 1500
	 * reconnecting clients at 111 connections: no refusal with + ACCEPT_BATCH,
	 * refusals and failed scrapes with + ACCEPT_BATCH - 1.) */
	errno = 0;
	h->mhd = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG | flags, 0, NULL, NULL,
		on_request, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_NOTIFY_COMPLETED,
		on_completed, h, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_SECONDS,
		MHD_OPTION_CONNECTION_LIMIT, h->lim.connections + ACCEPT_BATCH,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_MEMORY_LIMIT, MHD_OPTION_ARRAY,
		tls_opts, MHD_OPTION_END);
	if (!h->mhd) {
		r = errno ? -errno : -EIO;
		goto fail;
	}
	info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	h->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	h->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!info || h->stop_fd < 0 || h->wake_fd < 0) {
		r = h->stop_fd < 0 || h->wake_fd < 0 ? -errno : -EIO;
		goto fail;
	}
	h->mhd_fd = info->epoll_fd;
	r = -pthread_create(&h->thread, NULL, serve, h);
	if (r < 0)
		goto fail;
	h->started = true;
	pthread_setname_np(h->thread, "iopulse-http");
	if (h->lim.connections < HTTP_CONNECTIONS_MAX && !(lim && lim->connections))
		log_notice("RLIMIT_NOFILE is %llu: serving at most %u HTTP connections at once",
			   (unsigned long long)h->nofile, h->lim.connections);
	return h;
fail:
	server_free(h);
	*err = r;
	return NULL;
}

void http_reload_tls(struct http_server *h)
{
	if (h && h->tls)
		web_tls_reload(h->tls);
}

void http_set_status(struct http_server *h, struct status *st)
{
	atomic_store(&h->status, st);
}

void http_stop(struct http_server *h)
{
	if (h)
		server_free(h);
}
