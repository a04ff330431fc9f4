/* SPDX-License-Identifier: MIT */
/*
 * auth — basic auth against basic_auth_users' bcrypt hashes (webconfig.h).
 *
 * A bcrypt verification costs tens to hundreds of milliseconds, and the HTTP
 * thread serves every connection (conn.c): verifications run on
 * WEB_AUTH_WORKERS threads of their own, from a queue of WEB_AUTH_JOBS. Who
 * gets a place and who is served first is fair between networks as well as
 * addresses (the caller's keys: conn.c's address is an IPv4 address or an IPv6
 * /64, its network an IPv4 /24 or an IPv6 /48, the address key's first bytes),
 * because one attacker easily holds hundreds of addresses of one network (all
 * of 127/8 on this host, 256 /64s in a home /56). A check that failed makes its
 * address and its network suspects for WEB_AUTH_SUSPECT_MS. A worker takes the
 * oldest job of a network that is no suspect, then that of an address that is
 * none, then the oldest. Of the places, suspects' jobs hold at most
 * WEB_AUTH_SUSPECT_JOBS, those of failed addresses WEB_AUTH_FAILED_JOBS, and a
 * network's addresses that did not fail WEB_AUTH_NET_JOBS: so a scraper from a
 * network that never failed finds a place and waits for the checks running,
 * however many addresses of other networks flood wrong passwords, unless they
 * come from more than a few networks that never failed each minute. A job
 * that finds no room is refused at once (the caller answers 429) instead of
 * waiting.
 *
 * Credentials that verified are cached, keyed by an HMAC (a secret key of this
 * process) of the user AND the password, compared in constant time: a cached
 * success for one password can never admit another (exporter-toolkit's
 * CVE-2022-46146). An unknown user is checked against a dummy hash at the
 * users' highest cost, so it costs at least as much as a wrong password. Users
 * and passwords are bytes with a length: one with a NUL in it matches nothing.
 */
#ifndef IOPULSE_AUTH_H
#define IOPULSE_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#define WEB_AUTH_WORKERS    2	  /* bcrypt verifications at once */
#define WEB_AUTH_JOBS	    32	  /* verifications reserved, queued or running */
#define WEB_AUTH_CACHE	    64	  /* verified credentials kept */
#define WEB_AUTH_FIELD_MAX  256	  /* longest user or password looked at */
#define WEB_AUTH_WHO_MAX    16	  /* longest key of an address */
#define WEB_AUTH_SUSPECT_MS 60000 /* how long a failure makes its address a suspect */
/* Places of jobs whose network or address failed, of those whose address did,
 * and of one network's addresses that did not. */
#define WEB_AUTH_SUSPECT_JOBS (WEB_AUTH_JOBS / 2)
#define WEB_AUTH_FAILED_JOBS  (WEB_AUTH_JOBS / 4)
#define WEB_AUTH_NET_JOBS     (WEB_AUTH_JOBS / 8)
/* Failed addresses and networks remembered: sets of WEB_AUTH_SUSPECT_WAYS,
 * chosen by a keyed hash; twice the most connections (HTTP_CONNECTIONS_MAX),
 * an address and its network for each that can be in flight. */
#define WEB_AUTH_SUSPECT_SETS 1024
#define WEB_AUTH_SUSPECT_WAYS 8

struct web_config;
struct web_auth;

/* A user and password as sent: bytes, not strings. */
struct web_cred {
	const char *user, *pass;
	size_t user_len, pass_len;
};

/*
 * The credentials of an Authorization header's value @header ("Basic" and
 * base64 of "user:password"), decoded into @buf (@n bytes, which @out then
 * points into). 0; -EINVAL when @header is not basic auth or not base64, or
 * has no ':'; -E2BIG when it does not fit @n bytes or a field is longer than
 * WEB_AUTH_FIELD_MAX.
 */
int web_auth_parse_basic(const char *header, char *buf, size_t n, struct web_cred *out);

/* The verifier for @w's users (which it copies), its workers started. NULL with
 * *err = -errno on failure. */
struct web_auth *web_auth_new(const struct web_config *w, int *err);

/* Whether @cr verified before (constant time in the cache's keys). */
bool web_auth_cached(struct web_auth *a, const struct web_cred *cr);

/* bcrypt @cr's password against its user's hash (a dummy one for an unknown
 * user), on the calling thread; a success goes into the cache. */
bool web_auth_verify(struct web_auth *a, const struct web_cred *cr);

/* Called on a worker with the verdict. */
typedef void (*web_auth_done_fn)(void *cls, bool ok);

/* Take a place in the queue for the address @who (@len bytes, at most
 * WEB_AUTH_WHO_MAX), whose first @net_len bytes are its network's key: its
 * index, or -EBUSY when the queue is full or the job's share of it (above) is.
 * Each index must be followed by exactly one web_auth_submit(). */
int web_auth_reserve(struct web_auth *a, const void *who, size_t len, size_t net_len);

/* Verify @cr (copied) on a worker, in the place @slot reserved, then call
 * @done(@cls, verdict); a failure makes the address and its network suspects
 * (the jobs of either that wait too), a success clears the address. A field longer than
 * WEB_AUTH_FIELD_MAX is a failure. */
void web_auth_submit(struct web_auth *a, int slot, const struct web_cred *cr, web_auth_done_fn done,
		     void *cls);

/* The cost of the dummy hash unknown users are checked against (for tests). */
unsigned web_auth_dummy_cost(const struct web_auth *a);

/* Finish the queued verifications (their callbacks run), stop the workers, free.
 * NULL is a no-op. */
void web_auth_free(struct web_auth *a);

#endif
