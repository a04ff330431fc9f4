/* SPDX-License-Identifier: MIT */
/*
 * webconfig — the --web.config.file of Prometheus' exporter-toolkit (TLS and
 * basic auth for /metrics), so that one file serves node_exporter and iopulse.
 *
 * The keys and their meaning are exporter-toolkit's (docs/web-configuration.md);
 * what GnuTLS through libmicrohttpd cannot do is refused with a message saying
 * so, as is every unknown key: "file:line:column: message", like the main
 * configuration. Library code: no logging, no file but the one named.
 */
#ifndef IOPULSE_WEBCONFIG_H
#define IOPULSE_WEBCONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"

#define WEB_MAX_USERS 1024 /* basic_auth_users entries */

/* Go's crypto/tls ClientAuthType, by exporter-toolkit's names. */
enum web_client_auth {
	WEB_NO_CLIENT_CERT,		    /* NoClientCert (default) */
	WEB_REQUEST_CLIENT_CERT,	    /* RequestClientCert: asked for, not checked */
	WEB_REQUIRE_ANY_CLIENT_CERT,	    /* RequireAnyClientCert: required, not checked */
	WEB_VERIFY_CLIENT_CERT_IF_GIVEN,    /* VerifyClientCertIfGiven */
	WEB_REQUIRE_AND_VERIFY_CLIENT_CERT, /* RequireAndVerifyClientCert */
};

struct web_user {
	char *name;
	char *hash; /* bcrypt: "$2a$", "$2b$" or "$2y$", cost, salt and hash */
};

struct web_config {
	char *source;		    /* the file, for messages */
	bool tls;		    /* tls_server_config names a certificate and key */
	char *cert_file, *key_file; /* resolved against the file's directory */
	char *client_ca_file;	    /* likewise; NULL when not set */
	enum web_client_auth client_auth;
	unsigned min_version;	  /* 10..13 for TLS10..TLS13; default TLS12 */
	unsigned max_version;	  /* 0: the highest GnuTLS offers */
	bool server_cipher_order; /* prefer_server_cipher_suites (default true) */
	char *tls12_ciphers;	  /* cipher_suites as a GnuTLS priority fragment
				   * ("-KX-ALL:+ECDHE-RSA:-CIPHER-ALL:..."), for
				   * TLS 1.2 and below only; NULL: GnuTLS' own */
	struct web_user *users;	  /* basic_auth_users, in file order */
	unsigned n_users;
};

/*
 * Parse and validate the web configuration at @path. 0 with a new *@out (free
 * with web_config_free()); -EINVAL for a bad file, -errno when it cannot be read,
 * with @err filled. The certificate and key are not read here (see http.c).
 */
int web_config_load_file(const char *path, struct web_config **out, struct cfg_error *err);

/* As web_config_load_file(), from memory: @name in messages, relative paths
 * resolved against @dir. */
int web_config_load_string(const char *name, const char *dir, const char *text, size_t len,
			   struct web_config **out, struct cfg_error *err);

/* Frees; NULL is a no-op. */
void web_config_free(struct web_config *w);

#endif
