/* SPDX-License-Identifier: MIT */
/*
 * server — the server's lifecycle (http.h): libmicrohttpd set up to serve the
 * connections conn.c hands it, with TLS (tls.c) and basic auth (auth.c) from
 * the web configuration, and its log routed to ours; the thread started and
 * stopped, everything freed; the TLS reload of SIGHUP.
 */
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "config/webconfig.h"
#include "daemon/expose/gzpage.h"
#include "daemon/http/auth.h"
#include "daemon/http/http_int.h"
#include "daemon/http/tls.h"
#include "daemon/log.h"
#include "lib/fd.h"

/* MHD_OPTION_EXTERNAL_LOGGER: libmicrohttpd speaks through our log, at debug level. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_debug("HTTP: %s", msg);
}

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
	for (i = 0; i < KEPT_N; i++)
		if (h->kept[i].resp)
			MHD_destroy_response(h->kept[i].resp);
	for (i = 0; i < sizeof(h->gz) / sizeof(h->gz[0]); i++)
		gzpage_free(h->gz[i]);
	free(h->ends.end);
	for (i = 0; i < PEER_BUCKETS; i++) /* left only if libmicrohttpd leaked one */
		while (h->peers[i]) {
			struct peer *p = h->peers[i];

			h->peers[i] = p->next;
			free(p);
		}
	h->stop_fd = safe_close(h->stop_fd);
	h->wake_fd = safe_close(h->wake_fd);
	h->listen_fd = safe_close(h->listen_fd);
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
	h->lim.page_fresh_ms = lim && lim->page_fresh_ms ? lim->page_fresh_ms : HTTP_PAGE_FRESH_MS;
}

static const char *const request_labels[] = {"handler", "code", NULL};
static const char *const render_labels[] = {"handler", NULL};
/* Indexed by HTTP_FAM_*. */
const struct metric_def http_metric_defs[] = {
	{"iopulse_http_requests_total", METRIC_COUNTER, request_labels,
	 "HTTP requests answered, by handler and status code."},
	{"iopulse_http_status_renders_total", METRIC_COUNTER, render_labels,
	 "Renders of the status pages, by handler; a render answers its page's requests "
	 "for 250 ms."},
	{NULL},
};
_Static_assert(sizeof(http_metric_defs) / sizeof(http_metric_defs[0]) == HTTP_N_FAMILIES + 1,
	       "a row per family, then the end");

struct http_server *http_start(int listen_fd, const struct http_limits *lim,
			       const struct web_config *web, struct status *st, struct metrics *m,
			       http_collect_fn collect, void *userdata, int *err)
{
	struct MHD_OptionItem tls_opts[4] = {{MHD_OPTION_END, 0, NULL}};
	unsigned flags;
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
	h->pages_stale_ms = INT64_MAX;
	h->status = st;
	h->metrics = m;
	h->collect = collect;
	h->userdata = userdata;
	set_limits(h, lim);
	if (metrics_declare(m, http_metric_defs, HTTP_N_FAMILIES, NULL, 0, h->fam) < 0) {
		r = -ENOMEM;
		goto fail;
	}
	r = web_setup(h, web);
	if (r < 0)
		goto fail;
	flags = web_options(h, tls_opts);
	/* The logger first, so that even option parsing speaks through our log. No
	 * thread of its own and no listening socket: http_serve() runs it. Its limit must
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
		http_on_request, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_NOTIFY_CONNECTION, http_on_connection, h, MHD_OPTION_NOTIFY_COMPLETED,
		http_on_completed, h, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_SECONDS,
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
	r = -pthread_create(&h->thread, NULL, http_serve, h);
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

void http_stop(struct http_server *h)
{
	if (h)
		server_free(h);
}
