/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for daemon/http: content negotiation (Accept, with Prometheus 2.42's
 * exact headers), Accept-Encoding, gzip (inflated back with zlib), and a live
 * server on a loopback port: the status line and headers of /metrics replies in
 * each format, plain and compressed, byte for byte.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "daemon/expose.h"
#include "daemon/http.h"

/* build-research/NATIVE.md §2.1 */
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

/* Inflate a gzip member; returns a malloc()ed buffer. */
static char *gunzip(const void *in, size_t len, size_t *out_len)
{
	z_stream zs = {0};
	size_t cap = 1 << 16;
	char *out = malloc(cap);
	int r;

	assert_non_null(out);
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK); /* gzip only */
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	do {
		if (zs.total_out == cap) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
		zs.next_out = (Bytef *)out + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		r = inflate(&zs, Z_NO_FLUSH);
		assert_true(r == Z_OK || r == Z_STREAM_END);
	} while (r != Z_STREAM_END);
	assert_int_equal(zs.avail_in, 0); /* nothing after the member */
	*out_len = zs.total_out;
	inflateEnd(&zs);
	return out;
}

static void test_gzip_round_trip(void **state)
{
	static const size_t sizes[] = {0, 1, 100, 70000, 3 << 20};
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i], zlen = 0, back_len = 0, j;
		char *in = malloc(n + 1), *back;
		void *z = NULL;
		uint32_t x = 12345;

		assert_non_null(in);
		for (j = 0; j < n; j++) { /* half text-like, half noise */
			x = x * 1103515245u + 12345u;
			in[j] = j % 2 ? "metric_bucket{le=\"0.1\"} 3\n"[j % 27] : (char)(x >> 24);
		}
		assert_int_equal(http_gzip(in, n, &z, &zlen), 0);
		assert_true(zlen >= 18); /* gzip header and trailer */
		assert_int_equal(((unsigned char *)z)[0], 0x1f);
		assert_int_equal(((unsigned char *)z)[1], 0x8b);
		back = gunzip(z, zlen, &back_len);
		assert_int_equal(back_len, n);
		if (n)
			assert_memory_equal(back, in, n);
		free(back);
		free(z);
		free(in);
	}
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
	struct metric_family *f;
	struct http_server *h;
	uint16_t port = 0;
	char v[256];
	unsigned i;
	int fd, err = 0;

	(void)state;
	assert_non_null(m);
	f = metrics_family(m, "t_latency_seconds", METRIC_HISTOGRAM, "Latency.", NULL, bounds, 2);
	metrics_observe_ns(metrics_series(f, NULL), 2000000);
	fd = http_listen("127.0.0.1", 0, &port);
	assert_true(fd >= 0);
	h = http_start(fd, m, NULL, NULL, &err);
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
			body = gunzip(r.body, r.body_len, &body_len);
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
	metrics_free(m);
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

static void check_cached_render(struct metrics *m)
{
	enum http_format f;

	for (f = HTTP_FORMAT_TEXT; f <= HTTP_FORMAT_PROTOBUF; f++) {
		struct buf want, got;

		render_fresh(m, f, &want);
		buf_init(&got);
		assert_int_equal(http_render_metrics(m, f, &got), 0);
		assert_int_equal(got.len, want.len);
		assert_memory_equal(got.data, want.data, want.len);
		buf_free(&want);
		buf_free(&got);
	}
}

/*
 * The render cache changes no byte: after each kind of change (first render, no
 * change, some series updated, series added and dropped, new native settings,
 * a series with an escaped label value), the cached page in each format equals
 * the page rendered from scratch.
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
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_negotiate),    cmocka_unit_test(test_content_types),
		cmocka_unit_test(test_accepts_gzip), cmocka_unit_test(test_gzip_round_trip),
		cmocka_unit_test(test_live_server),  cmocka_unit_test(test_render_cache),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
