/* SPDX-License-Identifier: MIT */
/*
 * http — the libmicrohttpd server: /metrics, /healthz, and the status page
 * (/, /readyz, /status.json; status.h).
 *
 * It only ever renders a snapshot of the registry: nothing here touches a disk,
 * so /metrics answers while a watched device hangs. libmicrohttpd's defaults are
 * unsafe on an open port (no connection timeout, no per-IP limit), so every limit
 * is set explicitly; only GET and HEAD are answered. Connections that hold a
 * slot without sending a request (idle, or a header a byte at a time) make room
 * for new ones: see conn.c.
 */
#ifndef IOPULSE_HTTP_H
#define IOPULSE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/metrics/metrics.h"

/* The server's families (iopulse(8) METRICS), NULL-terminated. */
extern const struct metric_def http_metric_defs[];

#define HTTP_CONNECTIONS_MAX	4096	    /* at most, however many descriptors we may open */
#define HTTP_CONNECTIONS_MIN	16	    /* at least, however few */
#define HTTP_FD_RESERVE		64	    /* descriptors left to lanes and engines, plus 1/8 */
#define HTTP_ACCEPT_BATCH	32	    /* accepted per turn, over the limit till reaped */
#define HTTP_PER_ADDRESS_LIMIT	16	    /* connections of one address (IPv6: one /64) */
#define HTTP_HEADER_DEADLINE_MS 5000	    /* to send a request's headers */
#define HTTP_TIMEOUT_SECONDS	10	    /* of silence, once a request is in */
#define HTTP_MEMORY_LIMIT	(32 * 1024) /* per connection, for request parsing */
#define HTTP_ACCEPT_RETRY_MS	100	    /* out of descriptors with nothing to close */
#define HTTP_TRIM_EVERY_MS	10	    /* malloc_trim() at most this often while serving */
#define HTTP_PAGE_FRESH_MS	250	    /* a status page's render answers this long */

struct http_server;

/*
 * What clients may hold. A connection is "waiting" from its accept, and again
 * from the end of each reply, until its next request's headers are in; a waiting
 * connection is closed when its headers take longer than @header_ms, and is the
 * one that makes room (the one that waited longest first) when a new connection
 * would exceed @connections, or @per_address of its address, or finds no free
 * descriptor. A render of /, /status.json (with or without ?history=1) or
 * /readyz answers the requests for that page until @page_fresh_ms after it was
 * made, so that a flood of page views costs sends, not renders. Zero fields
 * take the defaults (http_start()).
 */
struct http_limits {
	unsigned connections;	/* open at once; 0: http_connection_limit(RLIMIT_NOFILE, ...) */
	uint64_t fd_reserve;	/* the rest of the daemon's descriptors; 0: not known */
	unsigned per_address;	/* of one address; 0: HTTP_PER_ADDRESS_LIMIT */
	unsigned header_ms;	/* to send a request's headers; 0: HTTP_HEADER_DEADLINE_MS */
	unsigned page_fresh_ms; /* a status page's render is reused; 0: HTTP_PAGE_FRESH_MS */
};

/* How many connections to serve at once with @nofile descriptors (the soft
 * RLIMIT_NOFILE) of which the rest of the daemon needs @reserve (0 when not
 * known: HTTP_FD_RESERVE and an eighth of @nofile), less the HTTP_ACCEPT_BATCH a
 * turn may hold beyond the limit, within [HTTP_CONNECTIONS_MIN,
 * HTTP_CONNECTIONS_MAX]. The server then holds at most the limit plus
 * HTTP_ACCEPT_BATCH descriptors of connections. */
unsigned http_connection_limit(uint64_t nofile, uint64_t reserve);

/*
 * Listen on @host (numeric IPv4/IPv6, "" for any: one dual-stack socket, IPv4
 * only on a kernel without IPv6) and @port (0 picks a free one), with a plain
 * bind(): nothing shares the port. Returns the listening socket (non-blocking,
 * close-on-exec) or -errno: -EADDRINUSE when anything else holds the address,
 * -EINVAL for a host that is not a numeric address. *bound_port gets the port.
 */
int http_listen(const char *host, uint16_t port, uint16_t *bound_port);

/*
 * Socket activation: the listening socket the service manager passed (LISTEN_FDS,
 * LISTEN_PID; the variables are then unset). Returns its descriptor (made
 * non-blocking and close-on-exec), 0 when none was passed, -E2BIG when more than
 * one was, -ENOTSOCK when it is not a listening TCP socket, -errno otherwise.
 * *n_fds gets how many descriptors were passed.
 */
int http_listen_activated(unsigned *n_fds);

struct config;
/*
 * The listening socket of `iopulse run`: the service manager's wins over
 * 'listen:' and @listen (--listen, may be NULL). Says why it fails in the log.
 * EX_OK with *fd and where it serves in @where, or the exit status: EX_USAGE for
 * a bad --listen or passed socket, EX_UNAVAILABLE for an address taken or not
 * ours, EXIT_FAILURE otherwise.
 */
int http_open_listener(const char *listen, const struct config *cfg, int *fd, char *where,
		       size_t len);

/* "ADDR:PORT" (IPv6 in brackets, addr_format()) of the socket @fd is bound to.
 * 0 or -errno (-ENOSPC: cut short to @n bytes). */
int http_local_address(int fd, char *buf, size_t n);

/* Whether the numeric address @host ("" is every address: no; "localhost", in
 * any case, yes) or the socket @fd is bound to is a loopback one, which no
 * other host can reach. */
bool http_host_is_loopback(const char *host);
bool http_socket_is_loopback(int fd);

/* Called on the HTTP thread before each /metrics snapshot, to refresh gauges. */
typedef void (*http_collect_fn)(void *userdata);

struct web_config;
struct status;

/*
 * Serve on the listening socket @listen_fd (ownership passes to the server, even
 * on failure) from a thread of its own, within @lim (NULL: the defaults): the
 * registry @m on /metrics, the status page of @st (which must outlive the
 * server) on /, /readyz and /status.json, with TLS and basic auth from @web
 * (webconfig.h; NULL: neither; it need not outlive the call; errors in its files
 * are logged). NULL on failure, with *err = -errno.
 */
struct http_server *http_start(int listen_fd, const struct http_limits *lim,
			       const struct web_config *web, struct status *st, struct metrics *m,
			       http_collect_fn collect, void *userdata, int *err);

/* SIGHUP: read the TLS certificate and key again (on a thread of their own; a
 * bad pair keeps the old one, logged). No-op without TLS. */
void http_reload_tls(struct http_server *h);

/* Stop serving and free; NULL is a no-op. */
void http_stop(struct http_server *h);

/* ---- content negotiation and compression (pure; exported for the tests) ---- */

enum http_format {
	HTTP_FORMAT_TEXT,	 /* text/plain; version=0.0.4 */
	HTTP_FORMAT_OPENMETRICS, /* application/openmetrics-text; version=1.0.0 */
	HTTP_FORMAT_PROTOBUF,	 /* delimited io.prometheus.client.MetricFamily */
};

/*
 * The format to answer an Accept header (@accept NULL: no header) with. Each
 * format takes the q of the most specific media range that matches it (type with
 * a matching parameter, then bare type, then text's subtype wildcard, then the
 * full wildcard); q=0 makes it
 * unacceptable; the highest q wins, ties going to the more specific range, then
 * to the one that comes first. Protobuf matches only
 * "application/vnd.google.protobuf" with proto=io.prometheus.client.MetricFamily
 * and encoding=delimited; OpenMetrics only "application/openmetrics-text" with
 * version 1.0.0, 0.0.1 or none; wildcards only ever select text. Malformed
 * elements are skipped. When nothing is acceptable: text 0.0.4, never a 406.
 */
enum http_format http_negotiate(const char *accept);

/* The exact Content-Type of a reply in @f. */
const char *http_format_content_type(enum http_format f);

/* Whether an Accept-Encoding header (NULL: none) allows gzip: "gzip", "x-gzip"
 * or, when neither is named, "*", with q > 0. */
bool http_accepts_gzip(const char *accept_encoding);

struct buf;

/* Where each metric family of a rendered page ends: offsets into the body, in
 * order (the last is the body's end). Reused from call to call. */
struct http_family_ends {
	size_t *end;
	size_t n, cap;
};

/*
 * The /metrics body in @f, appended to the empty @out: the same bytes as
 * expose_text(), expose_openmetrics() or expose_protobuf() (with the native view)
 * of a snapshot of @m, but through the registry's render cache
 * (metrics_snapshot_cached(), slot @f): series unchanged since an earlier call
 * are not copied nor rendered again, their kept pieces are; fresh pieces are
 * kept for the next call. With @ends (NULL: not wanted), also where each family
 * ends (OpenMetrics' "# EOF" belongs to the last one). 0, -ENOMEM or -ERANGE (see
 * expose_protobuf()).
 */
int http_render_metrics(struct metrics *m, enum http_format f, struct buf *out,
			struct http_family_ends *ends);

#endif
