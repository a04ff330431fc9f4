/* SPDX-License-Identifier: MIT */
/*
 * http — the libmicrohttpd server: /metrics, /healthz, and a landing page.
 *
 * It only ever renders a snapshot of the registry: nothing here touches a disk,
 * so /metrics answers while a watched device hangs. libmicrohttpd's defaults are
 * unsafe on an open port (no connection timeout, no per-IP limit), so every limit
 * is set explicitly; only GET and HEAD are answered.
 */
#ifndef IOPULSE_HTTP_H
#define IOPULSE_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

#define HTTP_CONNECTION_LIMIT 64
#define HTTP_PER_IP_LIMIT     16
#define HTTP_TIMEOUT_SECONDS  10
#define HTTP_MEMORY_LIMIT     (32 * 1024) /* per connection, for request parsing */

struct http_server;

/*
 * Create a listening TCP socket on @host (numeric IPv4/IPv6, "" for any) and @port
 * (0 picks a free one). Returns the descriptor, or -errno (-EADDRINUSE when taken,
 * -EINVAL for a host that is not a numeric address). *bound_port gets the port.
 */
int http_listen(const char *host, uint16_t port, uint16_t *bound_port);

/* Called on the HTTP thread before each /metrics snapshot, to refresh gauges. */
typedef void (*http_collect_fn)(void *userdata);

/* Serve on @listen_fd (ownership passes to the server). NULL on failure, with
 * *err = -errno. */
struct http_server *http_start(int listen_fd, struct metrics *m, http_collect_fn collect,
			       void *userdata, int *err);

/* Stop serving and free; NULL is a no-op. */
void http_stop(struct http_server *h);

#endif
