/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "expose.h"
#include "http.h"
#include "log.h"

#define TEXT_PLAIN "text/plain; charset=utf-8"

enum handler {
	H_METRICS,
	H_HEALTHZ,
	H_LANDING,
	H_OTHER,
	_H_MAX,
};

static const char *const handler_names[_H_MAX] = {
	[H_METRICS] = "metrics",
	[H_HEALTHZ] = "healthz",
	[H_LANDING] = "landing",
	[H_OTHER] = "other",
};

struct http_server {
	struct MHD_Daemon *mhd;
	struct metrics *metrics;
	struct metric_family *requests; /* iopulse_http_requests_total{handler,code} */
	http_collect_fn collect;
	void *userdata;
};

static const char landing_page[] =
	"<!DOCTYPE html>\n<html>\n<head><title>iopulse</title></head>\n<body>\n"
	"<h1>iopulse</h1>\n<p>Continuous storage latency probes.</p>\n"
	"<ul>\n<li><a href=\"/metrics\">/metrics</a></li>\n"
	"<li><a href=\"/healthz\">/healthz</a></li>\n</ul>\n</body>\n</html>\n";

/* ---------------------------------------------------------------- listening */

int http_listen(const char *host, uint16_t port, uint16_t *bound_port)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int fd, one = 1, zero = 0, r;
	bool v6 = host[0] == '\0' || strchr(host, ':');

	if (!v6) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
			return -EINVAL;
		len = sizeof(*sin);
	} else {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		if (host[0] && inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			return -EINVAL;
		len = sizeof(*sin6);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 && errno == EAFNOSUPPORT && host[0] == '\0') {
		/* Every address on a kernel without IPv6: IPv4 only. */
		memset(&ss, 0, sizeof(ss));
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr.s_addr = htonl(INADDR_ANY);
		len = sizeof(*sin);
		v6 = false;
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	}
	if (fd < 0)
		return -errno;
	/* SO_REUSEADDR only: a restart may bind over TIME_WAIT, but a second live
	 * instance still gets EADDRINUSE. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	/* "" means every address: one dual-stack socket. */
	if (v6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, host[0] ? &one : &zero, sizeof(int)) < 0)
		goto fail;
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 64) < 0)
		goto fail;
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		goto fail;
	*bound_port = ntohs(ss.ss_family == AF_INET ? sin->sin_port : sin6->sin6_port);
	return fd;
fail:
	r = -errno;
	close(fd);
	return r;
}

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

static enum MHD_Result reply(struct http_server *h, struct MHD_Connection *c, enum handler hd,
			     unsigned code, const char *type, void *body, size_t len,
			     enum MHD_ResponseMemoryMode mode)
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
	ret = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	count_request(h, hd, code);
	return ret;
}

static enum MHD_Result reply_static(struct http_server *h, struct MHD_Connection *c,
				    enum handler hd, unsigned code, const char *type,
				    const char *body)
{
	return reply(h, c, hd, code, type, (void *)body, strlen(body), MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result serve_metrics(struct http_server *h, struct MHD_Connection *c)
{
	struct metrics_snapshot *snap;
	struct buf out;
	char *body;
	size_t len;

	if (h->collect)
		h->collect(h->userdata);
	snap = metrics_snapshot(h->metrics);
	buf_init(&out);
	if (!snap || expose_text(snap, &out) < 0) {
		metrics_snapshot_free(snap);
		buf_free(&out);
		log_error("Failed to render /metrics: out of memory");
		return reply_static(h, c, H_METRICS, MHD_HTTP_INTERNAL_SERVER_ERROR, TEXT_PLAIN,
				    "out of memory\n");
	}
	metrics_snapshot_free(snap);
	body = buf_steal(&out, &len);
	return reply(h, c, H_METRICS, MHD_HTTP_OK, EXPOSE_TEXT_CONTENT_TYPE, body, len,
		     MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **req)
{
	struct http_server *h = cls;
	enum handler hd = H_OTHER;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)req;

	if (strcmp(url, "/metrics") == 0)
		hd = H_METRICS;
	else if (strcmp(url, "/healthz") == 0)
		hd = H_HEALTHZ;
	else if (strcmp(url, "/") == 0)
		hd = H_LANDING;

	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply_static(h, c, hd, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT_PLAIN,
				    "method not allowed: only GET and HEAD\n");
	switch (hd) {
	case H_METRICS:
		return serve_metrics(h, c);
	case H_HEALTHZ:
		return reply_static(h, c, hd, MHD_HTTP_OK, TEXT_PLAIN, "ok\n");
	case H_LANDING:
		return reply_static(h, c, hd, MHD_HTTP_OK, "text/html; charset=utf-8",
				    landing_page);
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

struct http_server *http_start(int listen_fd, struct metrics *m, http_collect_fn collect,
			       void *userdata, int *err)
{
	static const char *const labels[] = {"handler", "code", NULL};
	struct http_server *h = calloc(1, sizeof(*h));

	if (!h) {
		close(listen_fd);
		*err = -ENOMEM;
		return NULL;
	}
	h->metrics = m;
	h->collect = collect;
	h->userdata = userdata;
	h->requests = metrics_family(m, "iopulse_http_requests_total", METRIC_COUNTER,
				     "HTTP requests answered, by handler and status code.", labels,
				     NULL, 0);
	if (!h->requests) {
		close(listen_fd);
		free(h);
		*err = -ENOMEM;
		return NULL;
	}
	/* The logger first, so that even option parsing speaks through our log. */
	errno = 0;
	h->mhd = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL,
		on_request, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET,
		listen_fd, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_SECONDS,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNECTION_LIMIT,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)HTTP_PER_IP_LIMIT,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_MEMORY_LIMIT, MHD_OPTION_END);
	if (!h->mhd) {
		*err = errno ? -errno : -EIO;
		close(listen_fd);
		free(h);
		return NULL;
	}
	return h;
}

void http_stop(struct http_server *h)
{
	if (!h)
		return;
	if (h->mhd)
		MHD_stop_daemon(h->mhd);
	free(h);
}
