/* SPDX-License-Identifier: MIT */
/*
 * tls — the TLS side of the web configuration (webconfig.h) for
 * libmicrohttpd's GnuTLS: the certificate and key (read once by descriptor,
 * handed to GnuTLS from memory), the client CA, the priority string for
 * min_version / max_version, and client_auth_type set per session.
 *
 * libmicrohttpd cannot swap a running daemon's certificate, so it gets none:
 * GnuTLS asks us for it at each handshake (MHD_OPTION_HTTPS_CERT_CALLBACK), and
 * we answer with the current one. A reload (SIGHUP) reads the files again on a
 * thread of its own and swaps only a good pair in; each connection holds a
 * reference to the pair it started with, so nothing it uses is freed under it.
 */
#ifndef IOPULSE_TLS_H
#define IOPULSE_TLS_H

#include <gnutls/gnutls.h>
#include <gnutls/abstract.h>
#include <stddef.h>

struct web_config;
struct web_tls;
struct web_cert;

/* Read @w's certificate, key and client CA. 0 with *@out, or -errno with @msg
 * saying which file and why. */
int web_tls_new(const struct web_config *w, struct web_tls **out, char *msg, size_t n);

/* For iopulse check: read and check what web_tls_new() would (client CA,
 * certificate, key, cipher_suites), and the certificate's validity period.
 * 0; 1 with @msg a warning (expired or not yet valid: served, but clients will
 * refuse it); -errno with @msg saying which file and why. */
int web_tls_check(const struct web_config *w, char *msg, size_t n);

/* The GnuTLS priority string for MHD_OPTION_HTTPS_PRIORITIES. */
const char *web_tls_priorities(const struct web_tls *t);

/* The client CA (PEM, NUL-terminated) for MHD_OPTION_HTTPS_MEM_TRUST, or NULL. */
const char *web_tls_trust(const struct web_tls *t);

/* For MHD_OPTION_HTTPS_CERT_CALLBACK: the pair of the session's connection. */
int web_tls_retrieve(gnutls_session_t s, const gnutls_datum_t *req_ca_dn, int nreqs,
		     const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
		     gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey);

/* A new connection's session (before its handshake): client_auth_type, and a
 * reference to the current pair, returned (never NULL); give it back with
 * web_tls_session_end() when the connection closes. */
struct web_cert *web_tls_session_start(struct web_tls *t, gnutls_session_t s);
void web_tls_session_end(struct web_tls *t, struct web_cert *c);

/* Ask for the certificate and key to be read again (returns at once; the
 * outcome is logged). */
void web_tls_reload(struct web_tls *t);

/* Stop the reload thread and free; NULL is a no-op. */
void web_tls_free(struct web_tls *t);

#endif
