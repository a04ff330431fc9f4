/* SPDX-License-Identifier: MIT */
/*
 * webauth — basic auth against basic_auth_users' bcrypt hashes (webconfig.h).
 *
 * A bcrypt verification costs tens to hundreds of milliseconds, and the HTTP
 * thread serves every connection (http.c): verifications run on
 * WEB_AUTH_WORKERS threads of their own, from a queue of WEB_AUTH_JOBS. Who
 * waits is fair between addresses (the caller's key for one: http.c's is the
 * client address, an IPv6 /64): an address whose check failed in the last
 * WEB_AUTH_SUSPECT_MS is a suspect, and a worker takes the oldest job of an
 * address that is not before any suspect's, so a scraper that never failed
 * waits for at most the checks running, however many addresses flood wrong
 * passwords. Suspects hold at most half the queue; a job that finds no room is
 * refused at once (the caller answers 429) instead of waiting.
 *
 * Credentials that verified are cached, keyed by an HMAC (a secret key of this
 * process) of the user AND the password, compared in constant time: a cached
 * success for one password can never admit another (exporter-toolkit's
 * CVE-2022-46146). An unknown user is checked against a dummy hash at the
 * users' highest cost, so it costs at least as much as a wrong password. Users
 * and passwords are bytes with a length: one with a NUL in it matches nothing.
 */
#ifndef IOPULSE_WEBAUTH_H
#define IOPULSE_WEBAUTH_H

#include <stdbool.h>
#include <stddef.h>

#define WEB_AUTH_WORKERS    2	  /* bcrypt verifications at once */
#define WEB_AUTH_JOBS	    32	  /* verifications reserved, queued or running */
#define WEB_AUTH_CACHE	    64	  /* verified credentials kept */
#define WEB_AUTH_FIELD_MAX  256	  /* longest user or password looked at */
#define WEB_AUTH_WHO_MAX    16	  /* longest key of an address */
#define WEB_AUTH_SUSPECTS   256	  /* addresses whose last failure is remembered */
#define WEB_AUTH_SUSPECT_MS 60000 /* how long a failure makes its address a suspect */

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

/* Whether the address @who (@len bytes) failed a check in the last
 * WEB_AUTH_SUSPECT_MS (and has not succeeded since). */
bool web_auth_suspect(struct web_auth *a, const void *who, size_t len);

/* Called on a worker with the verdict. */
typedef void (*web_auth_done_fn)(void *cls, bool ok);

/* Take a place in the queue for the address @who (@len bytes, at most
 * WEB_AUTH_WHO_MAX): its index, or -EBUSY when the queue is full (for a
 * suspect, when suspects hold half of it). Each index must be followed by
 * exactly one web_auth_submit(). */
int web_auth_reserve(struct web_auth *a, const void *who, size_t len);

/* Verify @cr (copied) on a worker, in the place @slot reserved, then call
 * @done(@cls, verdict); a failure makes the address a suspect, a success
 * clears it. A field longer than WEB_AUTH_FIELD_MAX is a failure. */
void web_auth_submit(struct web_auth *a, int slot, const struct web_cred *cr, web_auth_done_fn done,
		     void *cls);

/* The cost of the dummy hash unknown users are checked against (for tests). */
unsigned web_auth_dummy_cost(const struct web_auth *a);

/* Finish the queued verifications (their callbacks run), stop the workers, free.
 * NULL is a no-op. */
void web_auth_free(struct web_auth *a);

#endif
