/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for daemon/http: content negotiation (Accept, with Prometheus 2.42's
 * exact headers), Accept-Encoding, gzip (inflated back with zlib), and a live
 * server on a loopback port: the status line and headers of /metrics replies in
 * each format, plain and compressed, byte for byte; the status pages' kept
 * renders (one answers its page's requests while fresh). Binding: a port held by any
 * other socket is in use, whatever that socket is; nothing is ever shared.
 * Which listening addresses are loopback ones (the warning of basic auth over
 * plain HTTP), and how a bound address is written.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "daemon/expose/expose.h"
#include "daemon/expose/gzpage.h"
#include "daemon/http/http.h"
#include "daemon/status/status.h"
#include "tests/unit/testutil.h"

/* The Accept headers Prometheus 2.42 sends (scrape/scrape.go: scrapeAcceptHeader,
 * and scrapeAcceptHeaderWithProtobuf with native histograms on). */
#define PROM_PLAIN                                                                                 \
	"application/openmetrics-text;version=1.0.0,application/openmetrics-text;"                 \
	"version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
#define PROM_NATIVE                                                                                \
	"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"                 \
	"encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,"                     \
	"application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,"        \
	"*/*;q=0.1"
#define PB_RANGE                                                                                   \
	"application/"                                                                             \
	"vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

enum { TEXT = HTTP_FORMAT_TEXT, OM = HTTP_FORMAT_OPENMETRICS, PB = HTTP_FORMAT_PROTOBUF };

static const struct {
	const char *accept;
	int want;
} negotiation[] = {
	/* Prometheus 2.42 itself. */
	{PROM_PLAIN, OM},
	{PROM_NATIVE, PB},
	/* No header, empty, garbage: text 0.0.4, never a 406. */
	{NULL, TEXT},
	{"", TEXT},
	{"garbage", TEXT},
	{";;;,,,", TEXT},
	{"text/html,application/xhtml+xml", TEXT},
	{"application/json", TEXT},
	/* curl and browsers. */
	{"*/*", TEXT},
	{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", TEXT},
	{"text/plain", TEXT},
	{"text/plain;version=0.0.4", TEXT},
	{"text/*", TEXT},
	/* Explicit requests. */
	{"application/openmetrics-text", OM},
	{"application/openmetrics-text;version=1.0.0", OM},
	{"application/openmetrics-text; version=0.0.1; charset=utf-8", OM},
	{"Application/OpenMetrics-Text;Version=1.0.0", OM},
	{"application/openmetrics-text;version=\"1.0.0\"", OM},
	{PB_RANGE, PB},
	{"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
	 "encoding=delimited",
	 PB},
	/* Versions and encodings we do not speak. */
	{"application/openmetrics-text;version=2.0.0", TEXT},
	{"text/plain;version=0.0.5", TEXT},
	{"application/vnd.google.protobuf", TEXT},
	{"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text",
	 TEXT},
	{"application/vnd.google.protobuf;proto=other.Message;encoding=delimited", TEXT},
	/* Wildcards never select protobuf or OpenMetrics. */
	{"application/*", TEXT},
	{"*/*;q=1," PB_RANGE ";q=0.5", TEXT},
	/* q-values: highest wins; q=0 is "not acceptable". */
	{"text/plain;q=0.5,application/openmetrics-text;q=0.6", OM},
	{"application/openmetrics-text;q=0.4,text/plain;q=0.6", TEXT},
	{PB_RANGE ";q=0,application/openmetrics-text;q=0.1", OM},
	{PB_RANGE ";q=0", TEXT},
	{"application/openmetrics-text;q=0,*/*", TEXT},
	{"text/plain;q=0,application/openmetrics-text;q=0.001", OM},
	/* The most specific range decides for its format: text/plain;q=0 beats
	 * the wildcard's q=1 for text. */
	{"text/plain;q=0,*/*;q=1,application/openmetrics-text;q=0.2", OM},
	{"q=1", TEXT},
	/* Ties: the more specific range, then the first. */
	{"*/*,application/openmetrics-text", OM},
	{"application/openmetrics-text,text/plain", OM},
	{"text/plain,application/openmetrics-text", TEXT},
	{PB_RANGE ",application/openmetrics-text", PB},
	/* Malformed q or element: that element is skipped, the rest count. */
	{"application/openmetrics-text;q=2,text/plain;q=0.1", TEXT},
	{"application/openmetrics-text;q=abc", TEXT},
	{"application/openmetrics-text;q=0.5000", TEXT},
	{"application/openmetrics-text;q=1.000", OM},
	{"application/openmetrics-text;q=0.999,text/plain;q=0.998", OM},
	{"/plain,application/openmetrics-text", OM},
	{"text/plain;version,application/openmetrics-text;q=0.1", OM},
	{"text/plain;x=\"a,b\";q=0.1,application/openmetrics-text;q=0.2", OM},
	{"text/plain;x=\"unterminated,application/openmetrics-text", TEXT},
	{" \t application/openmetrics-text \t ; \t q=0.9 \t , text/plain;q=0.8", OM},
};

static void test_negotiate(void **state)
{
	unsigned i, bad = 0;

	(void)state;
	for (i = 0; i < sizeof(negotiation) / sizeof(negotiation[0]); i++) {
		int got = (int)http_negotiate(negotiation[i].accept);

		if (got != negotiation[i].want) {
			print_error("Accept: %s\n  got %d, want %d\n",
				    negotiation[i].accept ? negotiation[i].accept : "(none)", got,
				    negotiation[i].want);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static void test_content_types(void **state)
{
	(void)state;
	assert_string_equal(http_format_content_type(HTTP_FORMAT_TEXT),
			    "text/plain; version=0.0.4; charset=utf-8");
	assert_string_equal(http_format_content_type(HTTP_FORMAT_OPENMETRICS),
			    "application/openmetrics-text; version=1.0.0; charset=utf-8");
	assert_string_equal(http_format_content_type(HTTP_FORMAT_PROTOBUF),
			    "application/vnd.google.protobuf; "
			    "proto=io.prometheus.client.MetricFamily; encoding=delimited");
}

static void test_accepts_gzip(void **state)
{
	static const struct {
		const char *ae;
		bool want;
	} cases[] = {
		{NULL, false},
		{"", false},
		{"gzip", true},
		{"GZIP", true},
		{"x-gzip", true},
		{"identity", false},
		{"deflate, br", false},
		{"gzip, deflate, br", true},
		{"br;q=1.0, gzip;q=0.8, *;q=0.1", true},
		{"gzip;q=0", false},
		{"gzip;q=0.000", false},
		{"*", true},
		{"*;q=0", false},
		{"gzip;q=0, *", false},
		{"identity;q=1, *;q=0.5", true},
		{"gzip;q=garbage", false},
		{"gzip;q=0.001", true},
	};
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (http_accepts_gzip(cases[i].ae) != cases[i].want)
			fail_msg("Accept-Encoding: %s: want %d",
				 cases[i].ae ? cases[i].ae : "(none)", cases[i].want);
}

/* ---- a live server ---- */

struct reply {
	char head[2048]; /* status line and headers, "\r\n" separated */
	char *body;
	size_t body_len;
};

/* GET /metrics with @headers ("Name: value\r\n"...), HTTP/1.0-style. */
static void get(uint16_t port, const char *headers, struct reply *r)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	char req[1024], *all = NULL, *sep;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	snprintf(req, sizeof(req),
		 "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s\r\n", headers);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			all = realloc(all, cap);
			assert_non_null(all);
		}
		n = read(fd, all + len, cap - len);
		assert_true(n >= 0);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	all[len] = '\0';
	sep = strstr(all, "\r\n\r\n");
	assert_non_null(sep);
	assert_true((size_t)(sep - all) < sizeof(r->head));
	memcpy(r->head, all, (size_t)(sep - all));
	r->head[sep - all] = '\0';
	r->body_len = len - (size_t)(sep + 4 - all);
	r->body = malloc(r->body_len + 1);
	assert_non_null(r->body);
	memcpy(r->body, sep + 4, r->body_len);
	r->body[r->body_len] = '\0';
	free(all);
}

/* The value of header @name in @r, or NULL. */
static const char *header(const struct reply *r, const char *name, char *buf, size_t len)
{
	const char *p = r->head;
	size_t n = strlen(name);

	while ((p = strstr(p, "\r\n"))) {
		p += 2;
		if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
			const char *v = p + n + 1, *e;

			while (*v == ' ')
				v++;
			e = strstr(v, "\r\n");
			if (!e)
				e = v + strlen(v);
			snprintf(buf, len, "%.*s", (int)(e - v), v);
			return buf;
		}
	}
	return NULL;
}

static void test_live_server(void **state)
{
	static const struct {
		const char *headers;
		const char *type;
		bool gzip;
	} cases[] = {
		{"", EXPOSE_TEXT_CONTENT_TYPE, false},
		{"Accept: */*\r\n", EXPOSE_TEXT_CONTENT_TYPE, false},
		{"Accept: " PROM_PLAIN "\r\nAccept-Encoding: gzip\r\n",
		 EXPOSE_OPENMETRICS_CONTENT_TYPE, true},
		{"Accept: " PROM_NATIVE "\r\nAccept-Encoding: gzip\r\n",
		 EXPOSE_PROTOBUF_CONTENT_TYPE, true},
		{"Accept: " PROM_NATIVE "\r\n", EXPOSE_PROTOBUF_CONTENT_TYPE, false},
		{"Accept: text/plain\r\nAccept-Encoding: gzip;q=0\r\n", EXPOSE_TEXT_CONTENT_TYPE,
		 false},
	};
	static const uint64_t bounds[] = {1000000, 10000000};
	struct metrics *m = metrics_new();
	struct status *st = status_new();
	struct metric_family *f;
	struct http_server *h;
	uint16_t port = 0;
	char v[256];
	unsigned i;
	int err = 0, fd;

	(void)state;
	assert_non_null(m);
	assert_non_null(st);
	f = metrics_family(m, "t_latency_seconds", METRIC_HISTOGRAM, "Latency.", NULL, bounds, 2);
	metrics_observe_ns(metrics_series(f, NULL), 2000000);
	fd = http_listen("127.0.0.1", 0, &port);
	assert_true(fd >= 0);
	h = http_start(fd, NULL, NULL, st, m, NULL, NULL, &err);
	assert_non_null(h);

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct reply r;
		char *body = NULL;
		size_t body_len;

		get(port, cases[i].headers, &r);
		assert_memory_equal(r.head, "HTTP/1.1 200 OK\r\n", 17);
		assert_non_null(header(&r, "Content-Type", v, sizeof(v)));
		assert_string_equal(v, cases[i].type);
		assert_non_null(header(&r, "Vary", v, sizeof(v)));
		assert_string_equal(v, "Accept, Accept-Encoding");
		if (cases[i].gzip) {
			assert_non_null(header(&r, "Content-Encoding", v, sizeof(v)));
			assert_string_equal(v, "gzip");
			body = tu_gunzip(r.body, r.body_len, &body_len);
		} else {
			assert_null(header(&r, "Content-Encoding", v, sizeof(v)));
			body = r.body;
			body_len = r.body_len;
			r.body = NULL;
		}
		assert_true(body_len > 0);
		if (strcmp(cases[i].type, EXPOSE_PROTOBUF_CONTENT_TYPE) == 0) {
			/* The families are t_latency_seconds, with a native view, and
			 * iopulse_http_requests_total. */
			size_t k = 0;

			while (k < body_len && (body[k] & 0x80)) /* the record length */
				k++;
			assert_true(k + 1 < body_len);
			assert_int_equal(body[k + 1], 0x0a); /* MetricFamily.name */
			assert_non_null(memmem(body, body_len, "t_latency_seconds", 17));
			assert_non_null(memmem(body, body_len, "\x28\x06", 2)); /* schema 3 */
		} else if (strcmp(cases[i].type, EXPOSE_OPENMETRICS_CONTENT_TYPE) == 0) {
			assert_true(body_len > 6);
			assert_memory_equal(body + body_len - 6, "# EOF\n", 6);
		} else {
			assert_non_null(strstr(body, "t_latency_seconds_bucket{le=\"0.01\"} 1\n"));
		}
		free(body);
		free(r.body);
	}
	http_stop(h);
	status_free(st);
	metrics_free(m);
}

/* ---- limits: who holds a connection, and for how long ---- */

static void test_connection_limit_sizing(void **state)
{
	(void)state;
	assert_int_equal(http_connection_limit(0, 0), HTTP_CONNECTIONS_MIN);
	assert_int_equal(http_connection_limit(16, 0), HTTP_CONNECTIONS_MIN);
	/* 1024, the usual soft limit, nothing known of the rest: less the default
	 * reserve, an eighth, and what a turn accepts beyond the limit. */
	assert_int_equal(http_connection_limit(1024, 0),
			 1024 - HTTP_FD_RESERVE - 1024 / 8 - HTTP_ACCEPT_BATCH);
	/* The schedule's figure known (main.c): what it leaves, the turn's too. */
	assert_int_equal(http_connection_limit(1024, 731), 1024 - 731 - HTTP_ACCEPT_BATCH);
	assert_int_equal(http_connection_limit(1024, 1000), HTTP_CONNECTIONS_MIN);
	/* systemd's default hard limit, where the daemon raises the soft one to. */
	assert_int_equal(http_connection_limit(524288, 0), HTTP_CONNECTIONS_MAX);
	assert_int_equal(http_connection_limit(524288, 2000), HTTP_CONNECTIONS_MAX);
}

struct server {
	struct metrics *m;
	struct status *st;
	struct http_server *h;
	uint16_t port;
};

/* A server within @lim (NULL: the defaults) calling @collect (may be NULL)
 * before each render, as the daemon's gathers the live state. */
static void server_start_collecting(struct server *s, const struct http_limits *lim,
				    http_collect_fn collect)
{
	int err = 0, fd;

	s->m = metrics_new();
	assert_non_null(s->m);
	s->st = status_new();
	assert_non_null(s->st);
	fd = http_listen("127.0.0.1", 0, &s->port);
	assert_true(fd >= 0);
	s->h = http_start(fd, lim, NULL, s->st, s->m, collect, NULL, &err);
	assert_non_null(s->h);
}

static void server_start(struct server *s, const struct http_limits *lim)
{
	server_start_collecting(s, lim, NULL);
}

static void server_stop(struct server *s)
{
	http_stop(s->h);
	status_free(s->st);
	metrics_free(s->m);
}

static bool can_bind(const char *ip)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok = fd >= 0 && inet_pton(AF_INET, ip, &sin.sin_addr) == 1 &&
		  bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* A connection to 127.0.0.1:@port from @src (NULL: the kernel's choice). */
static int connect_from(const char *src, uint16_t port)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct sockaddr_in from = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	if (src) {
		assert_int_equal(inet_pton(AF_INET, src, &from.sin_addr), 1);
		assert_int_equal(bind(fd, (struct sockaddr *)&from, sizeof(from)), 0);
	}
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	return fd;
}

/* Whether the server closes @fd (end of file or a reset) within @ms; anything
 * it sends first is read and dropped. */
static bool closed_within(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char buf[4096];
	ssize_t n;

	while (poll(&p, 1, ms) == 1) {
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return true;
	}
	return false;
}

/* Send the whole request @req on @fd and read the reply (with a body as long as
 * its Content-Length, unless @head_only): its status code, and its status line
 * and headers in @head (HEAD_MAX bytes) when not NULL. */
#define HEAD_MAX 4096
static int exchange(int fd, const char *req, bool head_only, char *head)
{
	char buf[65536], *end, *cl;
	size_t len = 0, want;
	ssize_t n;
	int code = 0;

	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	for (;;) { /* the head */
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		assert_true(n > 0);
		len += (size_t)n;
		buf[len] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end)
			break;
	}
	assert_int_equal(sscanf(buf, "HTTP/1.1 %d", &code), 1);
	if (head) {
		assert_true((size_t)(end - buf) < HEAD_MAX);
		snprintf(head, HEAD_MAX, "%.*s", (int)(end - buf), buf);
	}
	cl = strcasestr(buf, "\r\nContent-Length:");
	assert_non_null(cl);
	want = (size_t)(end + 4 - buf) + (head_only ? 0 : strtoul(cl + 17, NULL, 10));
	assert_true(want < sizeof(buf));
	while (len < want) { /* the body */
		n = read(fd, buf + len, want - len);
		assert_true(n > 0);
		len += (size_t)n;
	}
	return code;
}

/* A request for /metrics on @fd, kept alive: its status code. */
static int request_kept_alive(int fd)
{
	return exchange(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", false, NULL);
}

static void assert_scrape_ok(uint16_t port)
{
	struct reply r;

	get(port, "", &r);
	assert_memory_equal(r.head, "HTTP/1.1 200 OK\r\n", 17);
	free(r.body);
}

/* A connection that drips a header, a byte at a time, is closed once the header
 * deadline is past; so is an idle one, and a kept-alive one that sends nothing
 * after its reply. A scrape then goes through. */
static void test_header_deadline(void **state)
{
	static const struct http_limits lim = {.header_ms = 300};
	static const char head[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
	struct server s;
	struct timespec t0, t1;
	int slow, idle, kept, i;
	long ms;

	(void)state;
	server_start(&s, &lim);
	idle = connect_from(NULL, s.port);
	kept = connect_from(NULL, s.port);
	assert_int_equal(request_kept_alive(kept), 200);
	slow = connect_from(NULL, s.port);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(write(slow, head, sizeof(head) - 1), (ssize_t)sizeof(head) - 1);
	/* A byte every 50 ms: more often than the deadline, for up to 5 s. */
	for (i = 0; i < 100 && !closed_within(slow, 50); i++)
		(void)send(slow, "y", 1, MSG_NOSIGNAL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	assert_true(i < 100);	/* closed */
	assert_true(ms >= 250); /* and not before its time */
	assert_true(closed_within(idle, 3000));
	assert_true(closed_within(kept, 3000));
	assert_scrape_ok(s.port);
	close(slow);
	close(idle);
	close(kept);
	server_stop(&s);
}

/* After a reply: the server closes @fd (within 3 s) without sending anything
 * more. */
static void assert_closed_quietly(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char buf[4096];
	ssize_t n = -1;

	while (poll(&p, 1, 3000) == 1) {
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		break;
	}
	assert_true(n == 0 || (n < 0 && errno == ECONNRESET));
}

/* Requests on one connection are answered on it, one after the other, and it
 * stays open (libmicrohttpd closes a connection whose reply was queued as soon
 * as the headers were in), "Content-Length: 0" being no body; a request with a
 * body is answered and its connection closed, the body unread (never taken for
 * the next request). */
static void test_keep_alive(void **state)
{
	static const char *const reqs[] = {
		"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: " PROM_PLAIN
		"\r\nAccept-Encoding: gzip\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: " PROM_NATIVE
		"\r\nAccept-Encoding: gzip\r\n\r\n",
	};
	static const int codes[] = {200, 200, 200, 404, 200};
	char head[HEAD_MAX];
	struct server s;
	unsigned i;
	int fd;

	(void)state;
	server_start(&s, NULL);
	fd = connect_from(NULL, s.port);
	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		assert_int_equal(exchange(fd, reqs[i], false, head), codes[i]);
		assert_null(strcasestr(head, "\r\nConnection: close"));
	}
	assert_int_equal(exchange(fd, "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n", true, head),
			 200);
	assert_int_equal(exchange(fd,
				  "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
				  false, head),
			 200);
	assert_null(strcasestr(head, "\r\nConnection: close"));
	assert_false(closed_within(fd, 100));
	assert_int_equal(exchange(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", false, head),
			 200);
	assert_int_equal(exchange(fd,
				  "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 34\r\n\r\n"
				  "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n",
				  false, head),
			 200);
	assert_non_null(strcasestr(head, "\r\nConnection: close"));
	assert_closed_quietly(fd); /* no 404: the body was not a request */
	close(fd);

	fd = connect_from(NULL, s.port);
	assert_int_equal(exchange(fd,
				  "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"
				  "hello",
				  false, head),
			 405);
	assert_non_null(strcasestr(head, "\r\nConnection: close"));
	assert_true(closed_within(fd, 3000));
	close(fd);
	server_stop(&s);
}

/* @n idle connections from @src, at a limit of @lim: a scrape (from 127.0.0.1)
 * is served all the same, and the one that waited longest makes room. */
static void check_scrape_displaces_oldest(const char *src, const struct http_limits *lim, int n)
{
	struct server s;
	int c[8], i;

	assert_true(n <= (int)(sizeof(c) / sizeof(c[0])));
	server_start(&s, lim);
	for (i = 0; i < n; i++)
		c[i] = connect_from(src, s.port);
	assert_scrape_ok(s.port);
	assert_true(closed_within(c[0], 3000));
	for (i = 1; i < n; i++)
		assert_false(closed_within(c[i], 0));
	for (i = 0; i < n; i++)
		close(c[i]);
	server_stop(&s);
}

/* The scraper's own address at its limit. */
static void test_address_limit(void **state)
{
	static const struct http_limits lim = {.per_address = 3};

	(void)state;
	check_scrape_displaces_oldest("127.0.0.1", &lim, 3);
}

/* Every connection taken by another address. */
static void test_connection_limit(void **state)
{
	static const struct http_limits lim = {.connections = 4};

	(void)state;
	if (!can_bind("127.0.0.2"))
		skip();
	check_scrape_displaces_oldest("127.0.0.2", &lim, 4);
}

/* ---- the status pages' kept renders ---- */

static atomic_uint collected; /* collect() calls of the server running */

static void count_collect(void *userdata)
{
	(void)userdata;
	atomic_fetch_add(&collected, 1);
}

/* GET @path on the kept-alive connection @fd: its status code. */
static int request_page(int fd, const char *path)
{
	char req[256];

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
	return exchange(fd, req, false, NULL);
}

/* Target t1 of @st down: /readyz answers 503 once it renders again. */
static void target_down(struct status *st)
{
	struct status_target t = {
		.name = "t1", .path = "/nowhere", .state = STATUS_DOWN, .reason = "gone"};

	assert_int_equal(status_targets_begin(st, 1), 0);
	status_set_target(st, 0, &t);
}

/* The text of /metrics has the line @line. */
static void assert_metrics_line(uint16_t port, const char *line)
{
	struct reply r;

	get(port, "", &r);
	if (!strstr(r.body, line))
		fail_msg("/metrics has no line '%s':\n%s", line, r.body);
	free(r.body);
}

/*
 * Each status page (and /status.json?history=1) is rendered once while its
 * render is fresh, however often it is asked for, GET or HEAD: the live state
 * is collected once per render, and iopulse_http_status_renders_total counts
 * the renders beside iopulse_http_requests_total's requests. What changes
 * meanwhile shows at the first render after the freshness: /readyz says 200
 * from its kept render with a target down, 503 from a render made after it.
 */
static void test_status_renders(void **state)
{
	static const struct http_limits hour = {.page_fresh_ms = 3600 * 1000};
	static const struct http_limits ms = {.page_fresh_ms = 1};
	const struct timespec later = {.tv_nsec = 20 * 1000000};
	struct server s;
	int fd, i;

	(void)state;
	atomic_store(&collected, 0);
	server_start_collecting(&s, &hour, count_collect);
	fd = connect_from(NULL, s.port);
	for (i = 0; i < 3; i++) {
		assert_int_equal(request_page(fd, "/"), 200);
		assert_int_equal(request_page(fd, "/status.json"), 200);
		assert_int_equal(request_page(fd, "/status.json?history=1"), 200);
		assert_int_equal(request_page(fd, "/readyz"), 200);
	}
	assert_int_equal(exchange(fd, "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", true, NULL), 200);
	assert_int_equal(atomic_load(&collected), 4);
	target_down(s.st);
	assert_int_equal(request_page(fd, "/readyz"), 200); /* the kept render */
	assert_int_equal(atomic_load(&collected), 4);
	assert_metrics_line(s.port, "iopulse_http_status_renders_total{handler=\"landing\"} 1\n");
	assert_metrics_line(s.port,
			    "iopulse_http_status_renders_total{handler=\"status_json\"} 2\n");
	assert_metrics_line(s.port, "iopulse_http_status_renders_total{handler=\"readyz\"} 1\n");
	assert_metrics_line(s.port,
			    "iopulse_http_requests_total{handler=\"landing\",code=\"200\"} 4\n");
	assert_metrics_line(s.port,
			    "iopulse_http_requests_total{handler=\"readyz\",code=\"200\"} 4\n");
	close(fd);
	server_stop(&s);

	atomic_store(&collected, 0);
	server_start_collecting(&s, &ms, count_collect);
	fd = connect_from(NULL, s.port);
	assert_int_equal(request_page(fd, "/readyz"), 200);
	target_down(s.st);
	nanosleep(&later, NULL); /* the render is older than 1 ms */
	assert_int_equal(request_page(fd, "/readyz"), 503);
	assert_int_equal(request_page(fd, "/"), 200);
	assert_int_equal(atomic_load(&collected), 3);
	close(fd);
	server_stop(&s);
}

/* What http_render_metrics() must equal: expose_*() of a fresh snapshot. */
static void render_fresh(struct metrics *m, enum http_format f, struct buf *out)
{
	struct metrics_snapshot *snap =
		metrics_snapshot_ex(m, f == HTTP_FORMAT_PROTOBUF ? METRICS_SNAP_NATIVE : 0);

	assert_non_null(snap);
	buf_init(out);
	switch (f) {
	case HTTP_FORMAT_TEXT:
		assert_int_equal(expose_text(snap, out), 0);
		break;
	case HTTP_FORMAT_OPENMETRICS:
		assert_int_equal(expose_openmetrics(snap, out), 0);
		break;
	case HTTP_FORMAT_PROTOBUF:
		assert_int_equal(expose_protobuf(snap, out), 0);
		break;
	}
	metrics_snapshot_free(snap);
}

/* The gzip pages of test_render_cache(), one per format, kept across renders. */
static struct gzpage *cache_gz[3];

/* The cached render of each format equals a fresh one, and so does its gzip
 * through the format's gzpage (as /metrics sends it) once inflated. */
static void check_cached_render(struct metrics *m)
{
	enum http_format f;

	for (f = HTTP_FORMAT_TEXT; f <= HTTP_FORMAT_PROTOBUF; f++) {
		struct http_family_ends ends = {0};
		struct buf want, got, z;
		size_t back_len;
		char *back;

		render_fresh(m, f, &want);
		buf_init(&got);
		assert_int_equal(http_render_metrics(m, f, &got, &ends), 0);
		assert_int_equal(got.len, want.len);
		assert_memory_equal(got.data, want.data, want.len);
		if (!cache_gz[f])
			cache_gz[f] = gzpage_new();
		assert_non_null(cache_gz[f]);
		buf_init(&z);
		assert_int_equal(gzpage_compress(cache_gz[f], &got, ends.end, ends.n, &z), 0);
		back = tu_gunzip(z.data, z.len, &back_len);
		assert_int_equal(back_len, want.len);
		assert_memory_equal(back, want.data, want.len);
		free(back);
		free(ends.end);
		buf_free(&z);
		buf_free(&want);
		buf_free(&got);
	}
}

/*
 * The render cache changes no byte: after each kind of change (first render, no
 * change, some series updated, series added and dropped, new native settings,
 * a series with an escaped label value), the cached page in each format equals
 * the page rendered from scratch, and its gzip through a gzpage kept across the
 * renders (some families kept compressed, others compressed again) inflates to
 * exactly that page.
 */
static void test_render_cache(void **state)
{
	static const char *const labels[] = {"probe", "op", NULL};
	static const uint64_t bounds[] = {10000, 250000, 1000000, 25000000, 1000000000};
	struct metrics *m = metrics_new();
	struct metric_family *lat, *ios, *g;
	struct metric_series *s[12], *extra;
	uint64_t seed = 42;
	unsigned i, round;

	(void)state;
	assert_non_null(m);
	lat = metrics_family(m, "lat_seconds", METRIC_HISTOGRAM, "Latency.", labels, bounds, 5);
	ios = metrics_family(m, "ios_total", METRIC_COUNTER, "I/Os \"done\".", labels, NULL, 0);
	g = metrics_family(m, "up", METRIC_GAUGE, "", NULL, NULL, 0);
	assert_non_null(lat);
	assert_non_null(ios);
	assert_non_null(g);
	for (i = 0; i < 12; i++) {
		char probe[16];
		const char *v[] = {probe, i % 2 ? "read" : "write", NULL};

		snprintf(probe, sizeof(probe), "p%u", (i * 7) % 12);
		s[i] = metrics_series(i < 6 ? lat : ios, v);
		assert_non_null(s[i]);
	}
	metrics_set(metrics_series(g, NULL), 1);
	check_cached_render(m); /* all fresh */
	check_cached_render(m); /* all kept */
	for (round = 0; round < 20; round++) {
		for (i = 0; i < 4; i++) {
			unsigned k =
				(unsigned)((seed = seed * 6364136223846793005ull + 1) >> 33) % 12;

			if (k < 6)
				metrics_observe_ns(s[k], (seed >> 20) % 2000000000);
			else
				metrics_add(s[k], (double)(seed % 1000) / 8);
		}
		check_cached_render(m);
	}
	{
		const char *v[] = {"new\"one\\\n", "write", NULL};

		extra = metrics_series(lat, v);
		assert_non_null(extra);
		metrics_observe_ns(extra, 1234567);
	}
	check_cached_render(m);
	metrics_series_drop(s[3]);
	metrics_series_drop(s[8]);
	check_cached_render(m);
	metrics_set_native(m, 0, 1e-9);
	check_cached_render(m);
	metrics_series_drop(extra);
	check_cached_render(m);
	metrics_free(m);
	for (i = 0; i < 3; i++) {
		gzpage_free(cache_gz[i]);
		cache_gz[i] = NULL;
	}
}

/* ---- binding: a plain bind(), nothing shared ------------------------------ */

/* Numeric @ip and @port as a socket address ("::" is the dual-stack wildcard). */
static socklen_t address(const char *ip, uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, ip, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		return sizeof(*sin);
	}
	assert_int_equal(inet_pton(AF_INET6, ip, &sin6->sin6_addr), 1);
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	return sizeof(*sin6);
}

/* A socket of another program on @ip:*port (0: a free port, stored back), with
 * SO_REUSEPORT or not, listening (@listening) or only bound. */
static int holder_at(const char *ip, bool reuseport, bool listening, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len = address(ip, *port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, zero = 0;

	assert_true(fd >= 0);
	if (reuseport)
		assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)), 0);
	if (ss.ss_family == AF_INET6)
		assert_int_equal(setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)), 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&ss, len), 0);
	if (listening)
		assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	*port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					      : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
}

/* How many of @n new connections to @ip:@port the listening socket @fd gets. */
static unsigned connections_to(int fd, const char *ip, uint16_t port, unsigned n)
{
	struct sockaddr_storage ss;
	socklen_t len = address(ip, port, &ss);
	unsigned i, got = 0;

	for (i = 0; i < n; i++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int c = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), s;

		assert_true(c >= 0);
		assert_int_equal(connect(c, (struct sockaddr *)&ss, len), 0);
		if (poll(&p, 1, 200) == 1 && (s = accept4(fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
			got++;
			close(s); /* first: the TIME_WAIT is on our side, as after a scrape */
		}
		close(c);
	}
	return got;
}

static bool have_ipv6_loopback(void)
{
	struct sockaddr_in6 lo = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&lo, sizeof(lo)) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* Whatever holds the address, listening or only bound, sharing ports or not (an
 * old iopulse that did), the port is in use: nothing is ever shared. */
static void test_listen_taken(void **state)
{
	uint16_t port, bound = 0;
	int reuseport, listening, h;

	(void)state;
	for (reuseport = 0; reuseport <= 1; reuseport++)
		for (listening = 0; listening <= 1; listening++) {
			port = 0;
			h = holder_at("127.0.0.1", reuseport, listening, &port);
			assert_int_equal(http_listen("127.0.0.1", port, &bound), -EADDRINUSE);
			close(h);
		}
	assert_int_equal(http_listen("localhost", 0, &bound), -EINVAL);
}

/* Alone on a fixed port: every connection comes here; a restart binds again
 * at once, over the connections it left in TIME_WAIT. */
static void test_listen_alone(void **state)
{
	uint16_t port = 0, bound = 0;
	int fd, i;

	(void)state;
	close(holder_at("127.0.0.1", false, false, &port)); /* free a moment ago */
	for (i = 0; i < 2; i++) {
		fd = http_listen("127.0.0.1", port, &bound);
		assert_true(fd >= 0);
		assert_int_equal(bound, port);
		assert_int_equal(connections_to(fd, "127.0.0.1", port, 4), 4);
		close(fd);
	}
	if (!have_ipv6_loopback())
		return;
	/* Every address: one dual-stack socket. */
	fd = http_listen("", 0, &bound);
	assert_true(fd >= 0);
	assert_int_equal(connections_to(fd, "127.0.0.1", bound, 4), 4);
	assert_int_equal(connections_to(fd, "::1", bound, 4), 4);
	close(fd);
}

/* A holder on an overlapping address of another kind takes the port too: the
 * IPv4 wildcard against the dual-stack one, a specific address against its
 * family's wildcard. */
static void test_listen_overlapping(void **state)
{
	uint16_t port = 0, bound = 0;
	int h;

	(void)state;
	if (have_ipv6_loopback()) {
		h = holder_at("0.0.0.0", false, true, &port);
		assert_int_equal(http_listen("", port, &bound), -EADDRINUSE);
		close(h);
	}
	port = 0;
	h = holder_at("127.0.0.1", false, true, &port);
	assert_int_equal(http_listen("0.0.0.0", port, &bound), -EADDRINUSE);
	close(h);
}

/* Where basic auth over plain HTTP is warned of (iopulse check and run): any
 * address but a loopback one; a socket not bound yet is on every address. */
static void test_loopback(void **state)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	int fd;

	(void)state;
	assert_true(http_host_is_loopback("127.0.0.1"));
	assert_true(http_host_is_loopback("127.1.2.3"));
	assert_true(http_host_is_loopback("::1"));
	assert_true(http_host_is_loopback("::ffff:127.0.0.1"));
	assert_true(http_host_is_loopback("localhost")); /* RFC 6761 */
	assert_true(http_host_is_loopback("LocalHost"));
	assert_false(http_host_is_loopback("localhost.example"));
	assert_false(http_host_is_loopback(""));
	assert_false(http_host_is_loopback("0.0.0.0"));
	assert_false(http_host_is_loopback("::"));
	assert_false(http_host_is_loopback("10.0.0.1"));
	assert_false(http_host_is_loopback("128.0.0.1"));
	assert_false(http_host_is_loopback("::ffff:10.0.0.1"));
	assert_false(http_host_is_loopback("::2"));

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_false(http_socket_is_loopback(fd)); /* 0.0.0.0:0 until bound */
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_true(http_socket_is_loopback(fd));
	close(fd);
	assert_false(http_socket_is_loopback(-1));
}

/* Where a socket is bound, as the log says it: "ADDR:PORT", IPv6 in brackets;
 * too small a buffer is -ENOSPC, not a silent cut. */
static void test_local_address(void **state)
{
	char where[64], tiny[8], want[64];
	uint16_t port = 0;
	int fd;

	(void)state;
	fd = http_listen("127.0.0.1", 0, &port);
	assert_true(fd >= 0);
	assert_int_equal(http_local_address(fd, where, sizeof(where)), 0);
	snprintf(want, sizeof(want), "127.0.0.1:%u", port);
	assert_string_equal(where, want);
	assert_int_equal(http_local_address(fd, tiny, sizeof(tiny)), -ENOSPC);
	close(fd);
	assert_int_equal(http_local_address(-1, where, sizeof(where)), -EBADF);
	if (!have_ipv6_loopback())
		return;
	fd = http_listen("::1", 0, &port);
	assert_true(fd >= 0);
	assert_int_equal(http_local_address(fd, where, sizeof(where)), 0);
	snprintf(want, sizeof(want), "[::1]:%u", port);
	assert_string_equal(where, want);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_negotiate),
		cmocka_unit_test(test_content_types),
		cmocka_unit_test(test_accepts_gzip),
		cmocka_unit_test(test_live_server),
		cmocka_unit_test(test_connection_limit_sizing),
		cmocka_unit_test(test_header_deadline),
		cmocka_unit_test(test_keep_alive),
		cmocka_unit_test(test_address_limit),
		cmocka_unit_test(test_connection_limit),
		cmocka_unit_test(test_status_renders),
		cmocka_unit_test(test_render_cache),
		cmocka_unit_test(test_listen_taken),
		cmocka_unit_test(test_listen_alone),
		cmocka_unit_test(test_listen_overlapping),
		cmocka_unit_test(test_loopback),
		cmocka_unit_test(test_local_address),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
