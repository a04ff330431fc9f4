/* SPDX-License-Identifier: MIT */
/*
 * authorize — basic auth of a request: served at once when its credentials
 * are cached, else its connection suspended while auth.c's workers run
 * bcrypt, and resumed with the verdict (401, or 429 when too many checks are
 * in flight).
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/http/auth.h"
#include "daemon/http/http_int.h"

/*
 * With basic_auth_users, every path needs credentials. A request whose
 * credentials are cached is served at once; otherwise the connection is
 * suspended while a worker runs bcrypt (auth.h), and resumed with the
 * verdict: the HTTP thread never waits for a hash. An address has one check
 * queued or running at a time (a second request meanwhile gets 429 at once),
 * and auth.c's queue shares its places between networks (http_peer_net_len()) and
 * puts the checks of networks and addresses that failed lately after everybody
 * else's: wrong passwords flooding from any number of addresses of a few
 * networks delay a scraper of another network by the checks running, not by
 * the flood (429 only when its share of the queue is full).
 */
enum auth_state { AUTH_PENDING, AUTH_OK, AUTH_FAILED };

struct auth_req {
	struct http_server *h;
	struct MHD_Connection *c;
	struct peer *peer; /* its verifying flag is ours until http_auth_release() */
	_Atomic int state; /* enum auth_state; set by the worker */
};

static void auth_done(void *cls, bool ok)
{
	struct auth_req *ar = cls;
	const uint64_t one = 1;
	int wake_fd = ar->h->wake_fd; /* @ar may be freed once resumed */

	atomic_store(&ar->state, ok ? AUTH_OK : AUTH_FAILED);
	MHD_resume_connection(ar->c); /* thread-safe */
	/* libmicrohttpd's own wake-up does not reach http_serve()'s poll() when it runs
	 * without a listening socket of its own: ours does. */
	if (write(wake_fd, &one, sizeof(one)) < 0)
		(void)0; /* only a full counter, which wakes http_serve() as well */
}

/* On the HTTP thread, once the verdict is in or the request is gone: the
 * address may start another check. */
void http_auth_release(struct auth_req *ar)
{
	if (ar && ar->peer) {
		ar->peer->verifying = false;
		ar->peer = NULL;
	}
}

static enum MHD_Result reply_busy(struct http_server *h, struct MHD_Connection *c,
				  const struct route *rt)
{
	static const char *const hdrs[] = {MHD_HTTP_HEADER_RETRY_AFTER, "1", NULL};

	return http_reply_headers(h, c, rt, MHD_HTTP_TOO_MANY_REQUESTS, TEXT_PLAIN,
				  (void *)"too many password checks at once, try again\n",
				  strlen("too many password checks at once, try again\n"),
				  MHD_RESPMEM_PERSISTENT, hdrs);
}

/* Suspend @c while a worker checks @cr: 0 with *ret, as http_authorize(). */
static int auth_start(struct http_server *h, struct MHD_Connection *c, const struct route *rt,
		      void **req, const struct web_cred *cr, enum MHD_Result *ret)
{
	static const unsigned char nobody[PEER_KEY_LEN]; /* untracked: they share one */
	struct conn *conn = http_conn_of(c);
	struct peer *peer = conn ? conn->peer : NULL;
	const unsigned char *key = peer ? peer->key : nobody;
	struct auth_req *ar;
	int slot;

	if (peer && peer->verifying) {
		*ret = reply_busy(h, c, rt);
		return 0;
	}
	ar = calloc(1, sizeof(*ar));
	slot = ar ? web_auth_reserve(h->auth, key, PEER_KEY_LEN, http_peer_net_len(key)) : -ENOMEM;
	if (slot < 0) {
		*ret = ar ? reply_busy(h, c, rt) : MHD_NO;
		free(ar);
		return 0;
	}
	ar->h = h;
	ar->c = c;
	ar->peer = peer;
	if (peer)
		peer->verifying = true;
	*req = ar; /* freed in http_on_completed() */
	MHD_suspend_connection(c);
	web_auth_submit(h->auth, slot, cr, auth_done, ar);
	*ret = MHD_YES;
	return 0;
}

static enum MHD_Result reply_unauthorized(struct http_server *h, struct MHD_Connection *c,
					  const struct route *rt)
{
	static const char *const hdrs[] = {MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					   "Basic realm=\"iopulse\", charset=\"UTF-8\"", NULL};

	return http_reply_headers(h, c, rt, MHD_HTTP_UNAUTHORIZED, TEXT_PLAIN,
				  (void *)"unauthorized\n", strlen("unauthorized\n"),
				  MHD_RESPMEM_PERSISTENT, hdrs);
}

/*
 * Whether the request may be served: 1 yes, 0 a reply was queued or the
 * connection suspended (*ret is what to return). *req carries the verdict from
 * the first call (suspend) to the second (resumed).
 */
int http_authorize(struct http_server *h, struct MHD_Connection *c, const struct route *rt,
		   void **req, enum MHD_Result *ret)
{
	struct auth_req *ar = *req;
	/* "user:password", decoded: longer is refused (auth.h). */
	char buf[2 * WEB_AUTH_FIELD_MAX + 2];
	struct web_cred cr;
	int r;

	if (!h->auth)
		return 1;
	if (ar) {
		http_auth_release(ar);
		if (atomic_load(&ar->state) == AUTH_OK)
			return 1;
		*ret = reply_unauthorized(h, c, rt);
		return 0;
	}
	/* Decoded here, not by libmicrohttpd (0.9.75), whose NUL-terminated
	 * copies would cut "secret\0anything" to "secret". */
	r = web_auth_parse_basic(
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION), buf,
		sizeof(buf), &cr);
	if (r < 0)
		*ret = reply_unauthorized(h, c, rt);
	else if (web_auth_cached(h->auth, &cr))
		r = 1;
	else
		auth_start(h, c, rt, req, &cr, ret);
	explicit_bzero(buf, sizeof(buf));
	return r == 1;
}
