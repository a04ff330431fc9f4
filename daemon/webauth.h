/* SPDX-License-Identifier: MIT */
/*
 * webauth — basic auth against basic_auth_users' bcrypt hashes (webconfig.h).
 *
 * A bcrypt verification costs tens to hundreds of milliseconds, and the HTTP
 * thread serves every connection (http.c): verifications run on a few worker
 * threads of their own, at most WEB_AUTH_SLOTS at once. A request that finds
 * every slot busy is answered at once (429) instead of queueing, so a flood of
 * wrong passwords cannot hold up scrapes behind it. Credentials that verified
 * are cached, keyed by an HMAC (a secret key of this process) of the user AND
 * the password, compared in constant time: a cached success for one password
 * can never admit another (exporter-toolkit's CVE-2022-46146). An unknown user
 * is checked against a dummy hash at the users' highest cost, so it costs at
 * least as much as a wrong password.
 */
#ifndef IOPULSE_WEBAUTH_H
#define IOPULSE_WEBAUTH_H

#include <stdbool.h>

#define WEB_AUTH_SLOTS	   2   /* bcrypt verifications at once */
#define WEB_AUTH_CACHE	   64  /* verified credentials kept */
#define WEB_AUTH_FIELD_MAX 256 /* longest user or password looked at */

struct web_config;
struct web_auth;

/* The verifier for @w's users (which it copies), its workers started. NULL with
 * *err = -errno on failure. */
struct web_auth *web_auth_new(const struct web_config *w, int *err);

/* Whether @user / @pass verified before (constant time in the cache's keys). */
bool web_auth_cached(struct web_auth *a, const char *user, const char *pass);

/* bcrypt @pass against @user's hash (a dummy one for an unknown user), on the
 * calling thread; a success goes into the cache. */
bool web_auth_verify(struct web_auth *a, const char *user, const char *pass);

/* Called on a worker with the verdict. */
typedef void (*web_auth_done_fn)(void *cls, bool ok);

/* Take a slot: true when one was free. Each true must be followed by exactly one
 * web_auth_submit(). */
bool web_auth_reserve(struct web_auth *a);

/* Verify @user / @pass (copied) on a worker, in the slot reserved, then call
 * @done(@cls, verdict). Too long a user or password is a failure. */
void web_auth_submit(struct web_auth *a, const char *user, const char *pass, web_auth_done_fn done,
		     void *cls);

/* The cost of the dummy hash unknown users are checked against (for tests). */
unsigned web_auth_dummy_cost(const struct web_auth *a);

/* Finish the queued verifications (their callbacks run), stop the workers, free.
 * NULL is a no-op. */
void web_auth_free(struct web_auth *a);

#endif
