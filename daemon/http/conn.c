/* SPDX-License-Identifier: MIT */
/*
 * conn — who holds a connection, and for how long: the server's thread, which
 * accepts, admits within the limits (in all, per address), closes what waits
 * past its header deadline, and lets libmicrohttpd serve (see below).
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon/http/http_int.h"
#include "daemon/http/tls.h"
#include "daemon/log.h"

/*
 * Who holds a connection, and for how long.
 *
 * libmicrohttpd's own limits cannot keep a scrape in. Its per-IP limit refuses
 * the scraper's connection while another client of the same address holds every
 * slot; its total limit refuses everyone while anybody holds them all; its
 * timeout starts again at every byte, so a client sending a header a byte a
 * second keeps its slot for ever; and when accept() finds no free descriptor it
 * stops accepting until one of its own connections closes, while the backlog
 * fills and the kernel drops new clients' SYNs (each then waits for its
 * retransmission, up to tens of seconds later).
 *
 * So the listening socket is ours, and so is the thread. It polls the listening
 * socket, libmicrohttpd's epoll descriptor and a stop eventfd; accepts and hands
 * each connection to libmicrohttpd (MHD_add_connection()); then lets it serve
 * (MHD_run(), epoll, no thread of its own). Its callbacks, and so every record
 * below, run on this one thread: no locks.
 *
 * A connection is waiting from its accept, and again from the end of each reply,
 * until its next request's headers are in (the access handler runs). Waiting
 * connections are listed oldest first, all together and per address (an IPv4
 * address, or an IPv6 /64: one host's share). A waiting connection is closed
 *   - when it has waited lim.header_ms, however often it sent a byte;
 *   - when a new connection from its address would exceed lim.per_address, and
 *     it is that address's longest-waiting one (the new one itself, if its
 *     address has nothing else waiting);
 *   - when a new connection would exceed lim.connections, or accept() finds no
 *     free descriptor, and it is the longest-waiting of all.
 * A new connection thus displaces an idle or slow one, and a scrape, whose
 * headers arrive at once, is served however many idle or slow connections there
 * are and from wherever. Only when nothing waits (every descriptor busy with a
 * reply, or elsewhere in the daemon) does accept() rest, HTTP_ACCEPT_RETRY_MS at
 * a time.
 *
 * Closing is shutdown(): libmicrohttpd sees the hang-up on its next run and
 * closes the connection; the descriptor stays open until the CLOSED
 * notification, which frees the record, so a record's descriptor is always the
 * connection's own.
 */

int64_t http_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

unsigned http_connection_limit(uint64_t nofile, uint64_t reserve)
{
	uint64_t n;

	if (!reserve)
		reserve = HTTP_FD_RESERVE + nofile / 8;
	reserve += HTTP_ACCEPT_BATCH;
	n = nofile > reserve ? nofile - reserve : 0;

	if (n < HTTP_CONNECTIONS_MIN)
		return HTTP_CONNECTIONS_MIN;
	return n > HTTP_CONNECTIONS_MAX ? HTTP_CONNECTIONS_MAX : (unsigned)n;
}

/* @sa's share of the per-address limit: an IPv4 address (also IPv4-mapped IPv6),
 * an IPv6 /64; all zero for anything else (NULL too), which then share one. */
static void peer_key(const struct sockaddr *sa, unsigned char key[PEER_KEY_LEN])
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

	memset(key, 0, PEER_KEY_LEN);
	if (sa && sa->sa_family == AF_INET) {
		key[0] = 4;
		memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
		key[0] = 4;
		memcpy(key + 1, &sin6->sin6_addr.s6_addr[12], 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		key[0] = 6;
		memcpy(key + 1, sin6->sin6_addr.s6_addr, 8);
	}
}

/* How many bytes of an address' key are its network's: an IPv4 /24, an IPv6
 * /48, what one holder commonly has many addresses of (a host all of 127/8,
 * a home or a small site a /56 or a /48); basic auth is fair between those
 * (auth.h). Everything for the shared all-zero key. */
size_t http_peer_net_len(const unsigned char key[PEER_KEY_LEN])
{
	if (key[0] == 4)
		return 1 + 3;
	if (key[0] == 6)
		return 1 + 6;
	return PEER_KEY_LEN;
}

static unsigned peer_bucket(const unsigned char key[PEER_KEY_LEN])
{
	uint32_t x = 2166136261u; /* FNV-1a */
	unsigned i;

	for (i = 0; i < PEER_KEY_LEN; i++)
		x = (x ^ key[i]) * 16777619u;
	return x % PEER_BUCKETS;
}

/* The record of @sa's address, with one more reference; NULL when out of memory. */
static struct peer *peer_get(struct http_server *h, const struct sockaddr *sa)
{
	unsigned char key[PEER_KEY_LEN];
	struct peer **head, *p;

	peer_key(sa, key);
	head = &h->peers[peer_bucket(key)];
	for (p = *head; p; p = p->next)
		if (memcmp(p->key, key, PEER_KEY_LEN) == 0)
			break;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		memcpy(p->key, key, PEER_KEY_LEN);
		p->next = *head;
		*head = p;
	}
	p->refs++;
	return p;
}

static void peer_put(struct http_server *h, struct peer *p)
{
	struct peer **pp;

	if (--p->refs)
		return;
	for (pp = &h->peers[peer_bucket(p->key)]; *pp != p; pp = &(*pp)->next)
		;
	*pp = p->next;
	free(p);
}

/* Append @c to @l through its link @i (WAIT_ALL, WAIT_PEER). */
static void conn_list_append(struct conn_list *l, struct conn *c, unsigned i)
{
	c->link[i].next = NULL;
	c->link[i].prev = l->tail;
	if (l->tail)
		l->tail->link[i].next = c;
	else
		l->head = c;
	l->tail = c;
}

/* Unlink @c, which is in @l through its link @i. */
static void conn_list_remove(struct conn_list *l, struct conn *c, unsigned i)
{
	if (c->link[i].prev)
		c->link[i].prev->link[i].next = c->link[i].next;
	else
		l->head = c->link[i].next;
	if (c->link[i].next)
		c->link[i].next->link[i].prev = c->link[i].prev;
	else
		l->tail = c->link[i].prev;
	c->link[i].prev = c->link[i].next = NULL;
}

static void wait_add(struct http_server *h, struct conn *c, int64_t now)
{
	c->since_ms = now;
	c->waiting = true;
	conn_list_append(&h->waiting, c, WAIT_ALL);
	conn_list_append(&c->peer->waiting, c, WAIT_PEER);
}

void http_wait_del(struct http_server *h, struct conn *c)
{
	if (!c->waiting)
		return;
	c->waiting = false;
	conn_list_remove(&h->waiting, c, WAIT_ALL);
	conn_list_remove(&c->peer->waiting, c, WAIT_PEER);
}

/* Close the waiting connection @c (see above). */
static void close_waiting(struct http_server *h, struct conn *c)
{
	http_wait_del(h, c);
	c->closing = true;
	c->peer->live--;
	h->live--;
	(void)shutdown(c->fd, SHUT_RDWR);
}

struct conn *http_conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* MHD_OPTION_NOTIFY_CONNECTION: keep the records, and the limits. */
void http_on_connection(void *cls, struct MHD_Connection *mc, void **ctx,
			enum MHD_ConnectionNotificationCode what)
{
	struct http_server *h = cls;
	const union MHD_ConnectionInfo *fd_info, *addr_info;
	struct conn *c = *ctx;

	if (what == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!c)
			return;
		http_wait_del(h, c);
		if (c->cert)
			web_tls_session_end(h->tls, c->cert);
		if (!c->closing) {
			c->peer->live--;
			h->live--;
		}
		peer_put(h, c->peer);
		free(c);
		*ctx = NULL;
		h->trim_due = true; /* libmicrohttpd's pool for it is freed */
		return;
	}
	if (what != MHD_CONNECTION_NOTIFY_STARTED)
		return;
	fd_info = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	addr_info = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!fd_info)
		return; /* cannot happen: libmicrohttpd knows its socket */
	c = calloc(1, sizeof(*c));
	if (c)
		c->peer = peer_get(h, addr_info ? addr_info->client_addr : NULL);
	if (!c || !c->peer) {
		/* Untracked, it could hold its slot for ever: not served at all. */
		free(c);
		(void)shutdown(fd_info->connect_fd, SHUT_RDWR);
		log_warning("Out of memory for a new HTTP connection: closing it");
		return;
	}
	c->fd = fd_info->connect_fd;
	if (h->tls) {
		const union MHD_ConnectionInfo *ti =
			MHD_get_connection_info(mc, MHD_CONNECTION_INFO_GNUTLS_SESSION);

		/* Before the handshake, which runs in a later MHD_run(). */
		if (ti && ti->tls_session)
			c->cert = web_tls_session_start(h->tls, ti->tls_session);
	}
	c->peer->live++;
	h->live++;
	wait_add(h, c, http_now_ms());
	*ctx = c;
	/* Never empty: the new connection waits too. */
	if (c->peer->live > h->lim.per_address)
		close_waiting(h, c->peer->waiting.head);
	if (h->live > h->lim.connections) {
		log_warning("All %u HTTP connections are in use: closing the one that waited "
			    "longest for its request",
			    h->lim.connections);
		close_waiting(h, h->waiting.head);
	}
}

char http_headers_in;

/* MHD_OPTION_NOTIFY_COMPLETED: a reply is done; kept open, the connection waits
 * for the next request (closing, the CLOSED notification follows). */
void http_on_completed(void *cls, struct MHD_Connection *mc, void **req,
		       enum MHD_RequestTerminationCode toe)
{
	struct http_server *h = cls;
	struct conn *c = http_conn_of(mc);

	if (*req != &http_headers_in) { /* a struct auth_req, or NULL */
		http_auth_release(*req);
		free(*req);
	}
	*req = NULL;
	if (c && !c->closing && !c->waiting && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		wait_add(h, c, http_now_ms());
	h->trim_due = true; /* the reply's body is freed */
}

/* Close the connections that have waited too long. */
static void sweep(struct http_server *h, int64_t now)
{
	while (h->waiting.head && now - h->waiting.head->since_ms >= (int64_t)h->lim.header_ms)
		close_waiting(h, h->waiting.head);
}

/* accept() errors that are the client's connection's alone: try the next one. */
static bool accept_error_is_the_clients(int e)
{
	switch (e) {
	case EINTR:
	case ECONNABORTED:
	case EPROTO:
	case EPERM: /* a firewall */
	case ENETDOWN:
	case ENOPROTOOPT:
	case EHOSTDOWN:
	case ENONET:
	case EHOSTUNREACH:
	case EOPNOTSUPP:
	case ENETUNREACH:
		return true;
	}
	return false;
}

/* accept() errors that closing a connection may cure: out of descriptors, or of
 * the kernel's memory. */
static bool accept_error_is_resources(int e)
{
	return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

/* Accept what is pending (ACCEPT_BATCH at most) and hand it to libmicrohttpd. */
static void accept_some(struct http_server *h, int64_t now)
{
	unsigned i;

	for (i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int fd, e;

		fd = accept4(h->listen_fd, (struct sockaddr *)&ss, &len,
			     SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0) {
			/* On failure, libmicrohttpd has closed it and said why (debug). */
			(void)MHD_add_connection(h->mhd, fd, (struct sockaddr *)&ss, len);
			continue;
		}
		e = errno;
		if (e == EAGAIN || e == EWOULDBLOCK)
			return;
		if (accept_error_is_the_clients(e))
			continue;
		if (accept_error_is_resources(e) && h->waiting.head) {
			/* Its descriptor is free once libmicrohttpd has closed it,
			 * on this turn. */
			(void)log_warning_errno(
				-e,
				"Cannot accept an HTTP connection: %m (RLIMIT_NOFILE "
				"%llu); closing the one that waited longest for its "
				"request",
				(unsigned long long)h->nofile);
			close_waiting(h, h->waiting.head);
			return;
		}
		(void)log_warning_errno(
			-e,
			"Cannot accept an HTTP connection: %m (RLIMIT_NOFILE %llu); "
			"trying again every %ums",
			(unsigned long long)h->nofile, (unsigned)HTTP_ACCEPT_RETRY_MS);
		h->paused_until_ms = now + HTTP_ACCEPT_RETRY_MS;
		return;
	}
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* How long the thread may sleep: until libmicrohttpd's next timeout, the oldest
 * waiting connection's deadline, the end of accept()'s rest, or a kept status
 * page going stale (to be freed); with none of them, poll()'s longest finite
 * wait (INT_MAX ms, 24 days: one idle turn). */
static int next_wake_ms(struct http_server *h, int64_t now, bool accepting)
{
	MHD_UNSIGNED_LONG_LONG mhd_ms;
	int64_t t = INT_MAX;

	if (MHD_get_timeout(h->mhd, &mhd_ms) == MHD_YES && mhd_ms < (MHD_UNSIGNED_LONG_LONG)t)
		t = (int64_t)mhd_ms;
	if (h->waiting.head)
		t = min64(t, h->waiting.head->since_ms + h->lim.header_ms - now);
	if (!accepting)
		t = min64(t, h->paused_until_ms - now);
	t = min64(t, h->pages_stale_ms - now);
	return t < 0 ? 0 : (int)t;
}

/*
 * After poll() failed with @e: whether the thread carries on. With our three
 * descriptors, poll() can fail only for want of kernel memory (ENOMEM) or for
 * more descriptors than RLIMIT_NOFILE (EINVAL, impossible). On ENOMEM the
 * thread waits HTTP_ACCEPT_RETRY_MS on the stop eventfd alone, then tries
 * again (or ends, stopped meanwhile). Anything else, or that wait failing too,
 * would fail again at once: the thread stops serving, logged, rather than spin;
 * http_stop() joins it as ever.
 */
static bool poll_failed(struct http_server *h, int e)
{
	struct pollfd stop = {.fd = h->stop_fd, .events = POLLIN};

	if (e == EINTR)
		return true;
	if (e == ENOMEM) {
		(void)log_warning_errno(
			-e, "Failed to wait for HTTP connections: %m; trying again in %ums",
			(unsigned)HTTP_ACCEPT_RETRY_MS);
		if (poll(&stop, 1, HTTP_ACCEPT_RETRY_MS) >= 0)
			return !stop.revents;
		if (errno == EINTR)
			return true;
		e = errno;
	}
	(void)log_error_errno(-e,
			      "Failed to wait for HTTP connections: %m; no longer serving HTTP");
	return false;
}

/*
 * Issue 15 (memory): after a reply or a connection ended, hand the free pages of
 * every malloc arena back to the kernel, here in the loop and not on a timer
 * (no wake-up of its own). A scrape's short-lived blocks (the page, its gzip,
 * libmicrohttpd's 32 KiB pool for the connection) are freed between long-lived
 * ones (the render cache, gzpage's kept page and deflate stream), so their pages
 * stay resident until the next scrape: glibc returns only a free top of 128 KiB
 * or more by itself. A trim costs 15-50 us with the page faults after it, so
 * while connections are open it comes at most every HTTP_TRIM_EVERY_MS (under
 * load, ~1% of the CPU of the scrapes); once the last one has ended it is never
 * put off, since the server goes idle and nothing would come later to do it.
 */
static void trim_heap(struct http_server *h, int64_t now)
{
	if (!h->trim_due || (h->live > 0 && now - h->trimmed_ms < HTTP_TRIM_EVERY_MS))
		return;
	h->trim_due = false;
	h->trimmed_ms = now;
	malloc_trim(0);
}

/* The server's thread: accept, enforce the limits, serve. */
void *http_serve(void *arg)
{
	struct http_server *h = arg;

	for (;;) {
		int64_t now = http_now_ms();
		bool accepting = now >= h->paused_until_ms;
		struct pollfd p[4] = {
			{.fd = h->stop_fd, .events = POLLIN},
			{.fd = h->mhd_fd, .events = POLLIN},
			{.fd = accepting ? h->listen_fd : -1, .events = POLLIN},
			{.fd = h->wake_fd, .events = POLLIN},
		};
		uint64_t n;

		if (poll(p, 4, next_wake_ms(h, now, accepting)) < 0 && !poll_failed(h, errno))
			break;
		if (p[0].revents)
			break;
		if (p[3].revents && read(h->wake_fd, &n, sizeof(n)) < 0)
			(void)0; /* EAGAIN: another turn read it */
		now = http_now_ms();
		if (p[2].revents)
			accept_some(h, now);
		sweep(h, now);
		MHD_run(h->mhd);
		now = http_now_ms();
		h->pages_stale_ms = http_pages_expire(h, now);
		trim_heap(h, now);
	}
	return NULL;
}
