/* SPDX-License-Identifier: MIT */
/*
 * tls — the certificate pair read by descriptor into memory, checked (the key
 * matches, the dates), handed to GnuTLS at each handshake and swapped by the
 * reload thread (tls.h says why and how it is counted); the client CA, read
 * once at start for libmicrohttpd.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/x509.h>

#include "config/webconfig.h"
#include "daemon/log.h"
#include "daemon/http/tls.h"

#define CHAIN_MAX 16 /* certificates in cert_file: the leaf and its chain */

/* One certificate chain and its key; freed with the last reference. */
struct web_cert {
	unsigned refs; /* under web_tls.mu */
	gnutls_pcert_st pcerts[CHAIN_MAX];
	unsigned n_pcerts;
	gnutls_privkey_t key;
	gnutls_priority_t tls12; /* web_tls.tls12, for restrict_tls12() */
};

struct web_tls {
	char *cert_file, *key_file;
	enum web_client_auth client_auth;
	char *trust; /* client CA PEM, or NULL */
	char priorities[160];
	gnutls_priority_t tls12; /* with cipher_suites: for TLS 1.2 and below; or NULL */

	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t cond;
	struct web_cert *current; /* the pair new connections get; one reference */
	bool reload_wanted, stop;
	pthread_t thread;
	bool started;
};

static void cert_put_locked(struct web_cert *c)
{
	if (!c || --c->refs)
		return;
	for (unsigned i = 0; i < c->n_pcerts; i++)
		gnutls_pcert_deinit(&c->pcerts[i]);
	gnutls_privkey_deinit(c->key);
	free(c);
}

/* @path's bytes as a datum (NUL-terminated too). 0 or -errno with @msg. */
static int read_datum(const char *path, const char *what, gnutls_datum_t *d, char *msg, size_t n)
{
	struct cfg_error err;
	char *text, *z;
	size_t len;
	int r = cfg_read_file(path, &text, &len, &err);

	if (r < 0) {
		snprintf(msg, n, "%s: %s", what, err.msg);
		return r;
	}
	z = realloc(text, len + 1);
	if (!z) {
		free(text);
		snprintf(msg, n, "%s %s: out of memory", what, path);
		return -ENOMEM;
	}
	z[len] = '\0';
	d->data = (unsigned char *)z;
	d->size = (unsigned)len;
	return 0;
}

/* The client CA: read, and checked to hold certificates, since
 * libmicrohttpd would only say it cannot start. 0 or -errno with @msg. */
static int ca_load(const char *path, gnutls_datum_t *d, char *msg, size_t n)
{
	gnutls_x509_crt_t *crts = NULL;
	unsigned n_crts = 0;
	int r = read_datum(path, "client_ca_file", d, msg, n);

	if (r < 0)
		return r;
	r = gnutls_x509_crt_list_import2(&crts, &n_crts, d, GNUTLS_X509_FMT_PEM, 0);
	for (unsigned i = 0; r >= 0 && i < n_crts; i++)
		gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);
	if (r >= 0 && n_crts)
		return 0;
	snprintf(msg, n, "client_ca_file %s: %s", path,
		 r < 0 ? gnutls_strerror(r) : "no certificate");
	return -EINVAL;
}

/* Whether the key is the certificate's: the same public key ID. */
static bool key_matches(gnutls_pcert_st *leaf, gnutls_privkey_t key)
{
	unsigned char a[64], b[64];
	size_t na = sizeof(a), nb = sizeof(b);
	gnutls_pubkey_t pub;
	bool ok = false;

	if (gnutls_pubkey_init(&pub) < 0)
		return false;
	if (gnutls_pubkey_import_privkey(pub, key, 0, 0) >= 0 &&
	    gnutls_pubkey_get_key_id(pub, 0, a, &na) >= 0 &&
	    gnutls_pubkey_get_key_id(leaf->pubkey, 0, b, &nb) >= 0)
		ok = na == nb && memcmp(a, b, na) == 0;
	gnutls_pubkey_deinit(pub);
	return ok;
}

/* Parse the files' bytes into a new pair. 0 or a GnuTLS error with @msg. */
static int cert_parse(const struct web_tls *t, gnutls_datum_t *cd, gnutls_datum_t *kd,
		      struct web_cert *c, char *msg, size_t n)
{
	int r;

	c->n_pcerts = CHAIN_MAX;
	r = gnutls_pcert_list_import_x509_raw(c->pcerts, &c->n_pcerts, cd, GNUTLS_X509_FMT_PEM,
					      GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED);
	if (r < 0 || c->n_pcerts == 0) {
		c->n_pcerts = 0;
		snprintf(msg, n, "cert_file %s: %s", t->cert_file,
			 r < 0 ? gnutls_strerror(r) : "no certificate");
		return r < 0 ? r : GNUTLS_E_NO_CERTIFICATE_FOUND;
	}
	r = gnutls_privkey_init(&c->key);
	if (r >= 0)
		r = gnutls_privkey_import_x509_raw(c->key, kd, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (r < 0) {
		snprintf(msg, n, "key_file %s: %s%s", t->key_file, gnutls_strerror(r),
			 r == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE ||
					 r == GNUTLS_E_BASE64_DECODING_ERROR
				 ? " (no unencrypted PEM private key in it)"
				 : "");
		return r;
	}
	if (!key_matches(&c->pcerts[0], c->key)) {
		snprintf(msg, n, "key_file %s is not the key of cert_file %s", t->key_file,
			 t->cert_file);
		return GNUTLS_E_CERTIFICATE_KEY_MISMATCH;
	}
	return 0;
}

/* Read and parse the certificate and key: a new pair (one reference) or NULL
 * with @msg. */
static struct web_cert *cert_load(const struct web_tls *t, char *msg, size_t n)
{
	gnutls_datum_t cd = {0}, kd = {0};
	struct web_cert *c = calloc(1, sizeof(*c));
	int r = c ? 0 : -ENOMEM;

	if (!c)
		snprintf(msg, n, "out of memory");
	if (r == 0)
		r = read_datum(t->cert_file, "cert_file", &cd, msg, n);
	if (r == 0)
		r = read_datum(t->key_file, "key_file", &kd, msg, n);
	if (r == 0)
		r = cert_parse(t, &cd, &kd, c, msg, n);
	if (kd.data)
		gnutls_memset(kd.data, 0, kd.size);
	free(cd.data);
	free(kd.data);
	if (r < 0 && c) {
		c->refs = 1;
		cert_put_locked(c); /* not shared yet */
		return NULL;
	}
	c->refs = 1;
	c->tls12 = t->tls12;
	return c;
}

/* The leaf's validity period against now: 0, or 1 with @msg saying that
 * clients will refuse it (GnuTLS serves it all the same). */
static int cert_dates(const struct web_tls *t, const struct web_cert *c, char *msg, size_t n)
{
	gnutls_x509_crt_t crt;
	time_t now = time(NULL), from, until;
	char when[32];
	int r = 0;

	if (gnutls_x509_crt_init(&crt) < 0)
		return 0;
	if (gnutls_x509_crt_import(crt, &c->pcerts[0].cert, GNUTLS_X509_FMT_DER) >= 0) {
		from = gnutls_x509_crt_get_activation_time(crt);
		until = gnutls_x509_crt_get_expiration_time(crt);
		if (until != (time_t)-1 && until < now) {
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime(&until));
			snprintf(msg, n, "cert_file %s expired on %s: clients will refuse it",
				 t->cert_file, when);
			r = 1;
		} else if (from != (time_t)-1 && from > now) {
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime(&from));
			snprintf(msg, n,
				 "cert_file %s is not valid before %s: clients will refuse it",
				 t->cert_file, when);
			r = 1;
		}
	}
	gnutls_x509_crt_deinit(crt);
	return r;
}

static void *reload_thread(void *arg)
{
	struct web_tls *t = arg;
	struct web_cert *c, *old;
	char msg[512];

	pthread_mutex_lock(&t->mu);
	for (;;) {
		while (!t->reload_wanted && !t->stop)
			pthread_cond_wait(&t->cond, &t->mu);
		if (t->stop)
			break;
		t->reload_wanted = false;
		pthread_mutex_unlock(&t->mu);
		c = cert_load(t, msg, sizeof(msg));
		pthread_mutex_lock(&t->mu);
		if (!c) {
			log_error("TLS certificate reload failed, still serving the previous "
				  "certificate: %s",
				  msg);
			continue;
		}
		if (cert_dates(t, c, msg, sizeof(msg)))
			log_warning("%s", msg);
		old = t->current;
		t->current = c;
		cert_put_locked(old);
		log_info("Reloaded the TLS certificate from %s and its key from %s", t->cert_file,
			 t->key_file);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

/* "NORMAL" less the versions outside [min, max], and the server's cipher order
 * when asked for (prefer_server_cipher_suites, true by default as in Go). */
static void build_priorities(struct web_tls *t, const struct web_config *w)
{
	size_t n = sizeof(t->priorities);
	int at = snprintf(t->priorities, n, "NORMAL:-VERS-ALL");
	unsigned max = w->max_version ? w->max_version : 13;

	for (unsigned v = w->min_version; v <= max; v++)
		at += snprintf(t->priorities + at, n - (size_t)at, ":+VERS-TLS1.%u", v - 10);
	if (w->server_cipher_order)
		snprintf(t->priorities + at, n - (size_t)at, ":%%SERVER_PRECEDENCE");
}

/* cipher_suites, as priorities of their own that restrict_tls12() gives a
 * session once it has negotiated TLS 1.2 or below: GnuTLS' ciphers are shared
 * with TLS 1.3, which Go's cipher_suites leaves alone. 0 or -EINVAL with @msg. */
static int tls12_priorities(struct web_tls *t, const struct web_config *w, char *msg, size_t n)
{
	const char *where = NULL;
	char *s;
	int r;

	if (!w->tls12_ciphers)
		return 0;
	if (asprintf(&s, "%s:%s", t->priorities, w->tls12_ciphers) < 0) {
		snprintf(msg, n, "out of memory");
		return -ENOMEM;
	}
	r = gnutls_priority_init(&t->tls12, s, &where);
	if (r < 0)
		snprintf(msg, n, "cipher_suites: GnuTLS refuses the priorities '%s' at '%s': %s", s,
			 where ? where : "", gnutls_strerror(r));
	free(s);
	return r < 0 ? -EINVAL : 0;
}

/* Read and check everything @w names: priorities, client CA, certificate
 * and key. 0 or -errno with @msg. */
static int tls_load(struct web_tls *t, const struct web_config *w, char *msg, size_t n)
{
	gnutls_datum_t ca = {0};
	int r;

	if (!(t->cert_file = strdup(w->cert_file)) || !(t->key_file = strdup(w->key_file))) {
		snprintf(msg, n, "out of memory");
		return -ENOMEM;
	}
	t->client_auth = w->client_auth;
	build_priorities(t, w);
	r = tls12_priorities(t, w, msg, n);
	if (r < 0)
		return r;
	if (w->client_ca_file) {
		r = ca_load(w->client_ca_file, &ca, msg, n);
		t->trust = (char *)ca.data;
		if (r < 0)
			return r;
	}
	t->current = cert_load(t, msg, n);
	return t->current ? 0 : -EINVAL;
}

static struct web_tls *tls_alloc(void)
{
	struct web_tls *t = calloc(1, sizeof(*t));

	if (t) {
		pthread_mutex_init(&t->mu, NULL);
		pthread_cond_init(&t->cond, NULL);
	}
	return t;
}

int web_tls_check(const struct web_config *w, char *msg, size_t n)
{
	struct web_tls *t = tls_alloc();
	int r = t ? tls_load(t, w, msg, n) : -ENOMEM;

	if (!t)
		snprintf(msg, n, "out of memory");
	else if (r == 0)
		r = cert_dates(t, t->current, msg, n);
	web_tls_free(t);
	return r;
}

int web_tls_new(const struct web_config *w, struct web_tls **out, char *msg, size_t n)
{
	struct web_tls *t = tls_alloc();
	char warning[512];
	int r;

	*out = NULL;
	if (!t) {
		snprintf(msg, n, "out of memory");
		return -ENOMEM;
	}
	r = tls_load(t, w, msg, n);
	if (r < 0)
		goto fail;
	if (cert_dates(t, t->current, warning, sizeof(warning)))
		log_warning("%s: %s", w->source, warning);
	r = -pthread_create(&t->thread, NULL, reload_thread, t);
	if (r < 0) {
		snprintf(msg, n, "cannot start the certificate reload thread: %s", strerror(-r));
		goto fail;
	}
	t->started = true;
	*out = t;
	return 0;
fail:
	web_tls_free(t);
	return r;
}

const char *web_tls_priorities(const struct web_tls *t)
{
	return t->priorities;
}

const char *web_tls_trust(const struct web_tls *t)
{
	return t->trust;
}

int web_tls_retrieve(gnutls_session_t s, const gnutls_datum_t *req_ca_dn, int nreqs,
		     const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
		     gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
	struct web_cert *c = gnutls_session_get_ptr(s);

	(void)req_ca_dn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	if (!c)
		return -1;
	*pcert = c->pcerts;
	*pcert_length = c->n_pcerts;
	*pkey = c->key;
	return 0;
}

/* After the ClientHello, the version negotiated: cipher_suites restricts TLS
 * 1.2 and below only, as in Go. */
static int restrict_tls12(gnutls_session_t s)
{
	struct web_cert *c = gnutls_session_get_ptr(s);

	if (c && c->tls12 && gnutls_protocol_get_version(s) != GNUTLS_TLS1_3)
		return gnutls_priority_set(s, c->tls12);
	return 0;
}

/* A verified client certificate must allow client authentication (when it
 * names its purposes at all), as Go's ExtKeyUsageClientAuth. GnuTLS keeps the
 * pointer: static. */
static gnutls_typed_vdata_st client_purpose[] = {
	{.type = GNUTLS_DT_KEY_PURPOSE_OID, .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT},
};

/* VerifyClientCertIfGiven, once the client's certificate message is in: none
 * is fine; one sent must verify against the client CA, for client
 * authentication. Non-zero fails the handshake. */
static int verify_if_given(gnutls_session_t s)
{
	unsigned n = 0, status = 0;

	if (!gnutls_certificate_get_peers(s, &n) || n == 0)
		return 0;
	if (gnutls_certificate_verify_peers(s, client_purpose, 1, &status) < 0 || status)
		return -1;
	return 0;
}

struct web_cert *web_tls_session_start(struct web_tls *t, gnutls_session_t s)
{
	struct web_cert *c;

	pthread_mutex_lock(&t->mu);
	c = t->current;
	c->refs++;
	pthread_mutex_unlock(&t->mu);
	gnutls_session_set_ptr(s, c);
	if (t->tls12)
		gnutls_handshake_set_post_client_hello_function(s, restrict_tls12);
	switch (t->client_auth) {
	case WEB_NO_CLIENT_CERT:
		gnutls_certificate_server_set_request(s, GNUTLS_CERT_IGNORE);
		break;
	case WEB_REQUEST_CLIENT_CERT:
		gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUEST);
		break;
	case WEB_REQUIRE_ANY_CLIENT_CERT:
		gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE);
		break;
	case WEB_VERIFY_CLIENT_CERT_IF_GIVEN:
		/* Not gnutls_session_set_verify_cert(): it fails the handshake of a
		 * client that sends no certificate. */
		gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUEST);
		gnutls_session_set_verify_function(s, verify_if_given);
		break;
	case WEB_REQUIRE_AND_VERIFY_CLIENT_CERT:
		gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE);
		gnutls_session_set_verify_cert2(s, client_purpose, 1, 0);
		break;
	}
	return c;
}

void web_tls_session_end(struct web_tls *t, struct web_cert *c)
{
	pthread_mutex_lock(&t->mu);
	cert_put_locked(c);
	pthread_mutex_unlock(&t->mu);
}

void web_tls_reload(struct web_tls *t)
{
	pthread_mutex_lock(&t->mu);
	t->reload_wanted = true;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->mu);
}

void web_tls_free(struct web_tls *t)
{
	if (!t)
		return;
	if (t->started) {
		pthread_mutex_lock(&t->mu);
		t->stop = true;
		pthread_cond_signal(&t->cond);
		pthread_mutex_unlock(&t->mu);
		pthread_join(t->thread, NULL);
	}
	pthread_mutex_lock(&t->mu);
	cert_put_locked(t->current);
	pthread_mutex_unlock(&t->mu);
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->mu);
	if (t->tls12)
		gnutls_priority_deinit(t->tls12);
	free(t->trust);
	free(t->cert_file);
	free(t->key_file);
	free(t);
}
