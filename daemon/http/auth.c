/* SPDX-License-Identifier: MIT */
/*
 * auth — the basic_auth_users check (auth.h says how it is fair): the
 * Authorization header parsed, a cache of credentials verified lately, the
 * suspects, the queue of jobs and the worker threads that run crypt_r().
 */
#include <crypt.h>
#include <errno.h>
#include <nettle/base64.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "config/webconfig.h"
#include "daemon/http/auth.h"

enum job_state { JOB_FREE, JOB_RESERVED, JOB_QUEUED, JOB_RUNNING };

struct auth_job {
	enum job_state state;
	bool net_failed;  /* its network is a suspect */
	bool addr_failed; /* its address is one */
	bool too_long;	  /* refused without a verification */
	uint64_t seq;	  /* queued in this order */
	uint8_t who[WEB_AUTH_WHO_MAX];
	size_t who_len, net_len; /* the address' key; its first bytes, the network's */
	char user[WEB_AUTH_FIELD_MAX];
	char pass[WEB_AUTH_FIELD_MAX];
	size_t user_len, pass_len;
	web_auth_done_fn done;
	void *cls;
};

/* An address or network whose check failed: a suspect until @until_ms. */
struct suspect {
	uint8_t who[WEB_AUTH_WHO_MAX];
	size_t who_len;
	int64_t until_ms; /* CLOCK_MONOTONIC; 0: a free entry */
};

struct web_auth {
	struct web_user *users; /* copies of the file's */
	unsigned n_users;
	char dummy[64]; /* bcrypt at the users' highest cost, for unknown users */
	uint8_t secret[32];
	uint32_t set_seed; /* of the hash that picks a suspect's set */

	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t cond;
	uint8_t cache[WEB_AUTH_CACHE][SHA256_DIGEST_SIZE];
	bool cache_used[WEB_AUTH_CACHE];
	unsigned cache_next; /* the entry replaced next */
	struct auth_job jobs[WEB_AUTH_JOBS];
	uint64_t next_seq;
	struct suspect suspects[WEB_AUTH_SUSPECT_SETS][WEB_AUTH_SUSPECT_WAYS];
	bool stop;
	pthread_t workers[WEB_AUTH_WORKERS];
	unsigned n_workers;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "Basic", case-insensitive (RFC 7617), blanks, then base64 of user:password. */
int web_auth_parse_basic(const char *header, char *buf, size_t n, struct web_cred *out)
{
	struct base64_decode_ctx ctx;
	const char *s = header, *colon;
	size_t len, dlen;

	if (!s)
		return -EINVAL;
	s += strspn(s, " \t");
	if (strncasecmp(s, "Basic", 5) != 0 || (s[5] != ' ' && s[5] != '\t'))
		return -EINVAL;
	s += 5;
	s += strspn(s, " \t");
	len = strlen(s);
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (BASE64_DECODE_LENGTH(len) > n)
		return -E2BIG;
	base64_decode_init(&ctx);
	if (!base64_decode_update(&ctx, &dlen, (uint8_t *)buf, len, s) ||
	    !base64_decode_final(&ctx))
		return -EINVAL;
	colon = memchr(buf, ':', dlen);
	if (!colon)
		return -EINVAL;
	out->user = buf;
	out->user_len = (size_t)(colon - buf);
	out->pass = colon + 1;
	out->pass_len = dlen - out->user_len - 1;
	if (out->user_len > WEB_AUTH_FIELD_MAX || out->pass_len > WEB_AUTH_FIELD_MAX)
		return -E2BIG;
	return 0;
}

/* HMAC-SHA256 with the process' secret of the user's length, the user and the
 * password: the length keeps ("ab", "c") apart from ("a", "bc"). */
static void cache_key(const struct web_auth *a, const struct web_cred *cr,
		      uint8_t out[SHA256_DIGEST_SIZE])
{
	struct hmac_sha256_ctx ctx;
	uint64_t n = cr->user_len;

	hmac_sha256_set_key(&ctx, sizeof(a->secret), a->secret);
	hmac_sha256_update(&ctx, sizeof(n), (const uint8_t *)&n);
	hmac_sha256_update(&ctx, cr->user_len, (const uint8_t *)cr->user);
	hmac_sha256_update(&ctx, cr->pass_len, (const uint8_t *)cr->pass);
	hmac_sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}

bool web_auth_cached(struct web_auth *a, const struct web_cred *cr)
{
	uint8_t key[SHA256_DIGEST_SIZE];
	bool hit = false;

	cache_key(a, cr, key);
	pthread_mutex_lock(&a->mu);
	/* Every entry, whatever matched: the time does not say which. */
	for (unsigned i = 0; i < WEB_AUTH_CACHE; i++)
		hit |= a->cache_used[i] & memeql_sec(a->cache[i], key, sizeof(key));
	pthread_mutex_unlock(&a->mu);
	return hit;
}

static void cache_add(struct web_auth *a, const struct web_cred *cr)
{
	uint8_t key[SHA256_DIGEST_SIZE];

	if (web_auth_cached(a, cr))
		return;
	cache_key(a, cr, key);
	pthread_mutex_lock(&a->mu);
	memcpy(a->cache[a->cache_next], key, sizeof(key));
	a->cache_used[a->cache_next] = true;
	a->cache_next = (a->cache_next + 1) % WEB_AUTH_CACHE;
	pthread_mutex_unlock(&a->mu);
}

/* Whether @cr can be checked at all: crypt(3) and the users' names are C
 * strings, so a NUL would cut the password (or name) short and admit
 * "secret\0anything" for "secret". */
static bool cred_checkable(const struct web_cred *cr)
{
	return cr->user_len <= WEB_AUTH_FIELD_MAX && cr->pass_len <= WEB_AUTH_FIELD_MAX &&
	       !memchr(cr->user, '\0', cr->user_len) && !memchr(cr->pass, '\0', cr->pass_len);
}

bool web_auth_verify(struct web_auth *a, const struct web_cred *cr)
{
	const char *hash = a->dummy, *out;
	struct crypt_data *cd;
	char pass[WEB_AUTH_FIELD_MAX + 1];
	bool known = false, ok;

	if (!cred_checkable(cr))
		return false;
	cd = calloc(1, sizeof(*cd)); /* 32 KiB: not on the stack */
	if (!cd)
		return false;
	for (unsigned i = 0; i < a->n_users; i++)
		if (strlen(a->users[i].name) == cr->user_len &&
		    memcmp(a->users[i].name, cr->user, cr->user_len) == 0) {
			hash = a->users[i].hash;
			known = true;
		}
	memcpy(pass, cr->pass, cr->pass_len);
	pass[cr->pass_len] = '\0';
	out = crypt_r(pass, hash, cd);
	/* The hash's length is no secret (60 for every bcrypt hash); its bytes are. */
	ok = known && out && strlen(out) == strlen(hash) && memeql_sec(out, hash, strlen(hash));
	explicit_bzero(pass, sizeof(pass));
	explicit_bzero(cd, sizeof(*cd));
	free(cd);
	if (ok)
		cache_add(a, cr);
	return ok;
}

/* ---------------------------------------------------------------- suspects */

/* The set of @who: FNV-1a from a secret start, so that an attacker cannot
 * choose addresses that crowd one set and push a suspect out. */
static struct suspect *suspect_set(struct web_auth *a, const void *who, size_t len)
{
	const uint8_t *p = who;
	uint32_t x = a->set_seed;

	for (size_t i = 0; i < len; i++)
		x = (x ^ p[i]) * 16777619u;
	x ^= (uint32_t)len;
	x *= 16777619u;
	return a->suspects[x % WEB_AUTH_SUSPECT_SETS];
}

/* The entry of @who, or NULL; with a->mu held. */
static struct suspect *suspect_find(struct web_auth *a, const void *who, size_t len)
{
	struct suspect *set = suspect_set(a, who, len);

	for (unsigned i = 0; i < WEB_AUTH_SUSPECT_WAYS; i++)
		if (set[i].until_ms && set[i].who_len == len && memcmp(set[i].who, who, len) == 0)
			return &set[i];
	return NULL;
}

/* Whether @who failed in the last WEB_AUTH_SUSPECT_MS; with a->mu held. */
static bool is_suspect(struct web_auth *a, const void *who, size_t len, int64_t now)
{
	struct suspect *s = suspect_find(a, who, len);

	return s && s->until_ms > now;
}

/* A failure of @who, with a->mu held: (re)starts its time as a suspect, in its
 * entry or the one of its set that ends first (a free one, or the stalest: an
 * attacker with more than a set's worth there only forgets its own, as its
 * newest failures end last). */
static void suspect_fail(struct web_auth *a, const void *who, size_t len, int64_t now)
{
	struct suspect *s = suspect_find(a, who, len), *set;

	if (!s) {
		set = suspect_set(a, who, len);
		s = &set[0];
		for (unsigned i = 1; i < WEB_AUTH_SUSPECT_WAYS; i++)
			if (set[i].until_ms < s->until_ms)
				s = &set[i];
		memcpy(s->who, who, len);
		s->who_len = len;
	}
	s->until_ms = now + WEB_AUTH_SUSPECT_MS;
}

/* The verdict of @j, with a->mu held. A failure makes its address and network
 * suspects, the jobs of either that wait included (a burst from a new network
 * is put back after its first failure, not after it has all run). A success
 * clears the address, not the network: its other addresses may be an
 * attacker's. */
static void suspect_record(struct web_auth *a, const struct auth_job *j, bool ok)
{
	struct suspect *s;
	int64_t now = now_ms();

	if (ok) {
		s = suspect_find(a, j->who, j->who_len);
		if (s)
			s->until_ms = 0;
		return;
	}
	suspect_fail(a, j->who, j->who_len, now);
	suspect_fail(a, j->who, j->net_len, now);
	for (unsigned i = 0; i < WEB_AUTH_JOBS; i++) {
		struct auth_job *o = &a->jobs[i];

		if (o->state == JOB_FREE || o->net_len != j->net_len ||
		    memcmp(o->who, j->who, j->net_len) != 0)
			continue;
		o->net_failed = true;
		if (o->who_len == j->who_len && memcmp(o->who, j->who, j->who_len) == 0)
			o->addr_failed = true;
	}
}

/* ---------------------------------------------------------------- the queue */

int web_auth_reserve(struct web_auth *a, const void *who, size_t len, size_t net_len)
{
	struct auth_job *free_job = NULL;
	unsigned n_suspect = 0, n_failed = 0, n_net = 0;
	bool net_failed, addr_failed, full;
	int64_t now = now_ms();

	if (len > WEB_AUTH_WHO_MAX)
		len = WEB_AUTH_WHO_MAX;
	if (net_len > len)
		net_len = len;
	pthread_mutex_lock(&a->mu);
	addr_failed = is_suspect(a, who, len, now);
	net_failed = addr_failed || is_suspect(a, who, net_len, now);
	for (unsigned i = 0; i < WEB_AUTH_JOBS; i++) {
		struct auth_job *j = &a->jobs[i];

		if (j->state == JOB_FREE) {
			if (!free_job)
				free_job = j;
			continue;
		}
		n_suspect += j->net_failed;
		n_failed += j->addr_failed;
		n_net += !j->addr_failed && j->net_len == net_len &&
			 memcmp(j->who, who, net_len) == 0;
	}
	/* The shares of auth.h; no worker: nothing would ever run it. */
	full = !a->n_workers || !free_job || (net_failed && n_suspect >= WEB_AUTH_SUSPECT_JOBS) ||
	       (addr_failed ? n_failed >= WEB_AUTH_FAILED_JOBS : n_net >= WEB_AUTH_NET_JOBS);
	if (full) {
		pthread_mutex_unlock(&a->mu);
		return -EBUSY;
	}
	free_job->state = JOB_RESERVED;
	free_job->net_failed = net_failed;
	free_job->addr_failed = addr_failed;
	memcpy(free_job->who, who, len);
	free_job->who_len = len;
	free_job->net_len = net_len;
	pthread_mutex_unlock(&a->mu);
	return (int)(free_job - a->jobs);
}

void web_auth_submit(struct web_auth *a, int slot, const struct web_cred *cr, web_auth_done_fn done,
		     void *cls)
{
	struct auth_job *j = &a->jobs[slot];

	pthread_mutex_lock(&a->mu);
	j->too_long = cr->user_len > WEB_AUTH_FIELD_MAX || cr->pass_len > WEB_AUTH_FIELD_MAX;
	if (!j->too_long) {
		memcpy(j->user, cr->user, cr->user_len);
		memcpy(j->pass, cr->pass, cr->pass_len);
		j->user_len = cr->user_len;
		j->pass_len = cr->pass_len;
	}
	j->done = done;
	j->cls = cls;
	j->seq = a->next_seq++;
	j->state = JOB_QUEUED;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->mu);
}

/* 0: a network that never failed, 1: a failed network's address that did not,
 * 2: an address that failed. */
static unsigned job_rank(const struct auth_job *j)
{
	return j->addr_failed ? 2 : j->net_failed;
}

/* The job a worker takes next, with a->mu held: the oldest of the lowest rank;
 * NULL when none is queued. */
static struct auth_job *next_job(struct web_auth *a)
{
	struct auth_job *best = NULL;

	for (unsigned i = 0; i < WEB_AUTH_JOBS; i++) {
		struct auth_job *j = &a->jobs[i];

		if (j->state != JOB_QUEUED)
			continue;
		if (!best || job_rank(j) < job_rank(best) ||
		    (job_rank(j) == job_rank(best) && j->seq < best->seq))
			best = j;
	}
	return best;
}

static void *worker(void *arg)
{
	struct web_auth *a = arg;
	struct auth_job *j;
	web_auth_done_fn done;
	void *cls;
	bool ok;

	pthread_mutex_lock(&a->mu);
	for (;;) {
		while (!(j = next_job(a)) && !a->stop)
			pthread_cond_wait(&a->cond, &a->mu);
		if (!j) /* stopped, nothing left: every callback ran */
			break;
		/* Running, the job is this worker's alone: its fields are read
		 * without the lock. */
		j->state = JOB_RUNNING;
		pthread_mutex_unlock(&a->mu);
		ok = !j->too_long && web_auth_verify(a, &(struct web_cred){
								.user = j->user,
								.user_len = j->user_len,
								.pass = j->pass,
								.pass_len = j->pass_len,
							});
		done = j->done;
		cls = j->cls;
		pthread_mutex_lock(&a->mu);
		suspect_record(a, j, ok);
		explicit_bzero(j, sizeof(*j)); /* JOB_FREE */
		pthread_mutex_unlock(&a->mu);
		/* After the place is free: the callback may let the next request in. */
		done(cls, ok);
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
	if (r == 0 && (getrandom(a->secret, sizeof(a->secret), 0) != sizeof(a->secret) ||
		       getrandom(&a->set_seed, sizeof(a->set_seed), 0) != sizeof(a->set_seed)))
		r = -EIO;
	if (r == 0)
		r = make_dummy(a);
	for (unsigned i = 0; r == 0 && i < WEB_AUTH_WORKERS; i++, a->n_workers++)
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
