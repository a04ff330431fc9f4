/* SPDX-License-Identifier: MIT */
#include <crypt.h>
#include <errno.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "../config/webconfig.h"
#include "webauth.h"

struct auth_job {
	char user[WEB_AUTH_FIELD_MAX + 1];
	char pass[WEB_AUTH_FIELD_MAX + 1];
	bool too_long; /* refused without a verification */
	web_auth_done_fn done;
	void *cls;
};

struct web_auth {
	struct web_user *users; /* copies of the file's */
	unsigned n_users;
	char dummy[64]; /* bcrypt at the users' highest cost, for unknown users */
	uint8_t secret[32];

	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t cond;
	uint8_t cache[WEB_AUTH_CACHE][SHA256_DIGEST_SIZE];
	bool cache_used[WEB_AUTH_CACHE];
	unsigned cache_next; /* the entry replaced next */
	struct auth_job queue[WEB_AUTH_SLOTS];
	unsigned q_head, q_len; /* jobs waiting for a worker */
	unsigned in_flight;	/* slots taken: reserved, queued or running */
	bool stop;
	pthread_t workers[WEB_AUTH_SLOTS];
	unsigned n_workers;
};

/* HMAC-SHA256 with the process' secret of the user's length, the user and the
 * password: the length keeps ("ab", "c") apart from ("a", "bc"). */
static void cache_key(const struct web_auth *a, const char *user, const char *pass,
		      uint8_t out[SHA256_DIGEST_SIZE])
{
	struct hmac_sha256_ctx ctx;
	uint64_t n = strlen(user);

	hmac_sha256_set_key(&ctx, sizeof(a->secret), a->secret);
	hmac_sha256_update(&ctx, sizeof(n), (const uint8_t *)&n);
	hmac_sha256_update(&ctx, n, (const uint8_t *)user);
	hmac_sha256_update(&ctx, strlen(pass), (const uint8_t *)pass);
	hmac_sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}

bool web_auth_cached(struct web_auth *a, const char *user, const char *pass)
{
	uint8_t key[SHA256_DIGEST_SIZE];
	bool hit = false;

	cache_key(a, user, pass, key);
	pthread_mutex_lock(&a->mu);
	/* Every entry, whatever matched: the time does not say which. */
	for (unsigned i = 0; i < WEB_AUTH_CACHE; i++)
		hit |= a->cache_used[i] & memeql_sec(a->cache[i], key, sizeof(key));
	pthread_mutex_unlock(&a->mu);
	return hit;
}

static void cache_add(struct web_auth *a, const char *user, const char *pass)
{
	uint8_t key[SHA256_DIGEST_SIZE];

	if (web_auth_cached(a, user, pass))
		return;
	cache_key(a, user, pass, key);
	pthread_mutex_lock(&a->mu);
	memcpy(a->cache[a->cache_next], key, sizeof(key));
	a->cache_used[a->cache_next] = true;
	a->cache_next = (a->cache_next + 1) % WEB_AUTH_CACHE;
	pthread_mutex_unlock(&a->mu);
}

bool web_auth_verify(struct web_auth *a, const char *user, const char *pass)
{
	const char *hash = a->dummy, *out;
	struct crypt_data *cd = calloc(1, sizeof(*cd)); /* 32 KiB: not on the stack */
	bool known = false, ok;

	if (!cd)
		return false;
	for (unsigned i = 0; i < a->n_users; i++)
		if (strcmp(a->users[i].name, user) == 0) {
			hash = a->users[i].hash;
			known = true;
		}
	out = crypt_r(pass, hash, cd);
	/* The hash's length is no secret (60 for every bcrypt hash); its bytes are. */
	ok = known && out && strlen(out) == strlen(hash) && memeql_sec(out, hash, strlen(hash));
	explicit_bzero(cd, sizeof(*cd));
	free(cd);
	if (ok)
		cache_add(a, user, pass);
	return ok;
}

bool web_auth_reserve(struct web_auth *a)
{
	bool ok;

	pthread_mutex_lock(&a->mu);
	ok = a->in_flight < a->n_workers;
	if (ok)
		a->in_flight++;
	pthread_mutex_unlock(&a->mu);
	return ok;
}

static void copy_field(char *dst, const char *src, bool *too_long)
{
	size_t n = strlen(src);

	if (n > WEB_AUTH_FIELD_MAX) {
		*too_long = true;
		n = 0;
	}
	memcpy(dst, src, n);
	dst[n] = '\0';
}

void web_auth_submit(struct web_auth *a, const char *user, const char *pass, web_auth_done_fn done,
		     void *cls)
{
	struct auth_job *j;

	pthread_mutex_lock(&a->mu);
	/* Room for sure: at most n_workers slots are taken, each job one. */
	j = &a->queue[(a->q_head + a->q_len) % WEB_AUTH_SLOTS];
	a->q_len++;
	j->too_long = false;
	copy_field(j->user, user, &j->too_long);
	copy_field(j->pass, pass, &j->too_long);
	j->done = done;
	j->cls = cls;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->mu);
}

static void *worker(void *arg)
{
	struct web_auth *a = arg;
	struct auth_job j;
	bool ok;

	pthread_mutex_lock(&a->mu);
	for (;;) {
		while (!a->q_len && !a->stop)
			pthread_cond_wait(&a->cond, &a->mu);
		if (!a->q_len) /* stopped, nothing left: every callback ran */
			break;
		j = a->queue[a->q_head];
		explicit_bzero(&a->queue[a->q_head], sizeof(j));
		a->q_head = (a->q_head + 1) % WEB_AUTH_SLOTS;
		a->q_len--;
		pthread_mutex_unlock(&a->mu);
		ok = !j.too_long && web_auth_verify(a, j.user, j.pass);
		explicit_bzero(j.pass, sizeof(j.pass));
		pthread_mutex_lock(&a->mu);
		a->in_flight--;
		pthread_mutex_unlock(&a->mu);
		/* After the slot is free: the callback may let the next request in. */
		j.done(j.cls, ok);
		pthread_mutex_lock(&a->mu);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* A bcrypt hash's cost: "$2b$NN$...". */
static unsigned long hash_cost(const char *hash)
{
	return strtoul(hash + 4, NULL, 10);
}

/* The dummy hash: bcrypt of nothing, at the highest of the users' costs (or
 * 10): at a lower one, an unknown user would answer sooner than a known one
 * with a dearer hash. */
static int make_dummy(struct web_auth *a)
{
	char salt[CRYPT_GENSALT_OUTPUT_SIZE];
	struct crypt_data *cd = calloc(1, sizeof(*cd));
	unsigned long cost = a->n_users ? 0 : 10;
	const char *out;
	int r = -EINVAL;

	if (!cd)
		return -ENOMEM;
	for (unsigned i = 0; i < a->n_users; i++)
		if (hash_cost(a->users[i].hash) > cost)
			cost = hash_cost(a->users[i].hash);
	if (crypt_gensalt_rn("$2b$", cost, NULL, 0, salt, sizeof(salt))) {
		out = crypt_r("", salt, cd);
		if (out && out[0] == '$' && strlen(out) < sizeof(a->dummy)) {
			strcpy(a->dummy, out);
			r = 0;
		}
	}
	free(cd);
	return r;
}

static int copy_users(struct web_auth *a, const struct web_config *w)
{
	a->users = calloc(w->n_users ? w->n_users : 1, sizeof(*a->users));
	if (!a->users)
		return -ENOMEM;
	for (unsigned i = 0; i < w->n_users; i++, a->n_users++) {
		a->users[i].name = strdup(w->users[i].name);
		a->users[i].hash = strdup(w->users[i].hash);
		if (!a->users[i].name || !a->users[i].hash) {
			free(a->users[i].name);
			free(a->users[i].hash);
			return -ENOMEM;
		}
	}
	return 0;
}

struct web_auth *web_auth_new(const struct web_config *w, int *err)
{
	struct web_auth *a = calloc(1, sizeof(*a));
	int r;

	if (!a) {
		*err = -ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cond, NULL);
	r = copy_users(a, w);
	if (r == 0 && getrandom(a->secret, sizeof(a->secret), 0) != sizeof(a->secret))
		r = -EIO;
	if (r == 0)
		r = make_dummy(a);
	for (unsigned i = 0; r == 0 && i < WEB_AUTH_SLOTS; i++, a->n_workers++)
		r = -pthread_create(&a->workers[i], NULL, worker, a);
	if (r < 0 && a->n_workers == 0) {
		web_auth_free(a);
		*err = r;
		return NULL;
	}
	return a; /* with fewer workers than slots if some did not start */
}

void web_auth_free(struct web_auth *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = true;
	pthread_cond_broadcast(&a->cond);
	pthread_mutex_unlock(&a->mu);
	for (unsigned i = 0; i < a->n_workers; i++)
		pthread_join(a->workers[i], NULL);
	for (unsigned i = 0; i < a->n_users; i++) {
		free(a->users[i].name);
		free(a->users[i].hash);
	}
	free(a->users);
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->mu);
	explicit_bzero(a, sizeof(*a));
	free(a);
}

unsigned web_auth_dummy_cost(const struct web_auth *a)
{
	return (unsigned)hash_cost(a->dummy);
}
