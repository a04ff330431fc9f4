/* SPDX-License-Identifier: MIT */
/*
 * http_int — what the files of daemon/http share and nothing else sees: the
 * server's record, the records of connections and of client addresses, and
 * the functions one file calls in another. The interface is http.h.
 */
#ifndef IOPULSE_HTTP_INT_H
#define IOPULSE_HTTP_INT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/http/http.h"

struct gzpage;
struct status;
struct web_auth;
struct web_cert;
struct web_tls;

#define PEER_BUCKETS 1024 /* hash chains of client addresses */

struct peer;
struct conn;

/* The status pages' renders kept (route.c): one per page, /status.json's two. */
enum { KEPT_LANDING, KEPT_READYZ, KEPT_JSON, KEPT_JSON_HISTORY, KEPT_N };

struct kept_page {
	struct MHD_Response *resp; /* our reference (libmicrohttpd counts them); NULL: none */
	unsigned code;		   /* its status */
	int64_t made_ms;	   /* rendered then (CLOCK_MONOTONIC) */
};

/* The server's families (http_metric_defs[]). */
enum { HTTP_FAM_REQUESTS, HTTP_FAM_RENDERS, HTTP_N_FAMILIES };

/* A list of waiting connections, oldest first (see conn.c). */
struct conn_list {
	struct conn *head, *tail;
};

struct http_server {
	struct MHD_Daemon *mhd;
	struct metrics *metrics;
	struct metric_family *fam[HTTP_N_FAMILIES]; /* by HTTP_FAM_* */
	http_collect_fn collect;
	void *userdata;
	size_t last_len[3]; /* the last body's size per format: the next buffer's size */
	/* /metrics with gzip, per format (HTTP thread only): the last page and its
	 * compressed families (gzpage.h), and where the families end. */
	struct gzpage *gz[3];
	size_t last_zlen[3];
	struct http_family_ends ends;
	struct status *status;	       /* what /, /readyz, /status.json show */
	size_t page_len, json_len;     /* the last / and /status.json sizes: the next buffers' */
	struct web_tls *tls;	       /* NULL: plain HTTP */
	struct web_auth *auth;	       /* NULL: no basic auth */
	struct kept_page kept[KEPT_N]; /* by KEPT_* (HTTP thread only) */

	/* Everything below belongs to the server's thread (see conn.c). */
	int listen_fd;			  /* ours: we accept, libmicrohttpd serves */
	int stop_fd;			  /* eventfd: http_stop() ends the thread */
	int wake_fd;			  /* eventfd: a password check resumed a connection */
	int mhd_fd;			  /* libmicrohttpd's epoll descriptor */
	pthread_t thread;		  /* valid when started */
	bool started;			  /* the thread runs */
	struct http_limits lim;		  /* in force */
	uint64_t nofile;		  /* RLIMIT_NOFILE (soft) at start, for the log */
	unsigned live;			  /* connections not being closed */
	struct conn_list waiting;	  /* all waiting connections */
	int64_t paused_until_ms;	  /* accept() rests until then (CLOCK_MONOTONIC) */
	bool trim_due;			  /* a reply or connection ended since the last trim */
	int64_t trimmed_ms;		  /* when trim_heap() last trimmed */
	int64_t pages_stale_ms;		  /* a kept render goes stale then (none: INT64_MAX) */
	struct peer *peers[PEER_BUCKETS]; /* client addresses with connections */
};

#define ACCEPT_BATCH HTTP_ACCEPT_BATCH /* accepts per turn, before libmicrohttpd's */
#define PEER_KEY_LEN (1 + 8)	       /* family, then the IPv4 address or the IPv6 /64 */

struct peer {
	struct peer *next;		 /* in its hash chain */
	unsigned char key[PEER_KEY_LEN]; /* see peer_key() */
	unsigned live;			 /* its connections not being closed */
	unsigned refs;			 /* its records, closing ones too */
	bool verifying;			 /* a bcrypt check of its is in flight */
	struct conn_list waiting;	 /* its waiting connections */
};

enum { WAIT_ALL, WAIT_PEER }; /* a waiting connection's lists: h->waiting, peer->waiting */

struct conn {
	struct {
		struct conn *prev, *next;
	} link[2];	       /* in each list, by WAIT_ALL, WAIT_PEER */
	struct peer *peer;     /* its address */
	int fd;		       /* libmicrohttpd's, open until CLOSED */
	int64_t since_ms;      /* waiting since (CLOCK_MONOTONIC) */
	bool waiting;	       /* in the lists above */
	bool closing;	       /* shut down; libmicrohttpd closes it */
	struct web_cert *cert; /* with TLS: the pair its handshake uses */
};

#define TEXT_PLAIN "text/plain; charset=utf-8"

/* A path, its methods and its handler (route.c). */
struct route;

/* ---- conn.c ---- */

/* CLOCK_MONOTONIC in milliseconds. */
int64_t http_now_ms(void);

/* *req of a request whose headers are in, until it is answered (http_on_request()). */
extern char http_headers_in;

/* How many bytes of an address' @key are its network's (auth.h's fairness). */
size_t http_peer_net_len(const unsigned char key[PEER_KEY_LEN]);
/* @c no longer waits: its request's headers are in. */
void http_wait_del(struct http_server *h, struct conn *c);
/* The record of @mc; NULL when it has none. */
struct conn *http_conn_of(struct MHD_Connection *mc);
/* MHD_OPTION_NOTIFY_CONNECTION and MHD_OPTION_NOTIFY_COMPLETED (cls: the server). */
void http_on_connection(void *cls, struct MHD_Connection *mc, void **ctx,
			enum MHD_ConnectionNotificationCode what);
void http_on_completed(void *cls, struct MHD_Connection *mc, void **req,
		       enum MHD_RequestTerminationCode toe);
/* The server's thread (arg: the server), until http_stop(). */
void *http_serve(void *arg);

/* ---- authorize.c ---- */

/* A request's password check, in *req from its suspension until it is done. */
struct auth_req;
/* On the HTTP thread, once @ar's verdict is in or its request gone (NULL: no-op). */
void http_auth_release(struct auth_req *ar);
/* Whether the request may be served: 1 yes; 0 a reply was queued or the
 * connection suspended, *@ret what to return to libmicrohttpd. */
int http_authorize(struct http_server *h, struct MHD_Connection *c, const struct route *rt,
		   void **req, enum MHD_Result *ret);

/* ---- route.c ---- */

/* Drop the kept renders stale at @now (setting trim_due); returns when the next
 * of the others goes stale, INT64_MAX when none is kept. */
int64_t http_pages_expire(struct http_server *h, int64_t now);

/* MHD_AccessHandlerCallback: answer a request. */
enum MHD_Result http_on_request(void *cls, struct MHD_Connection *c, const char *url,
				const char *method, const char *version, const char *upload_data,
				size_t *upload_data_size, void **req);

/* Queue the reply @code with @body (@mode: libmicrohttpd's), Content-Type @type
 * and @extra (NULL, or a NULL-terminated list of header name, value pairs),
 * counted under @rt's name. */
enum MHD_Result http_reply_headers(struct http_server *h, struct MHD_Connection *c,
				   const struct route *rt, unsigned code, const char *type,
				   void *body, size_t len, enum MHD_ResponseMemoryMode mode,
				   const char *const *extra);

#endif
