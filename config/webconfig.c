/* SPDX-License-Identifier: MIT */
/*
 * webconfig — the parser of --web.config.file (webconfig.h says what it accepts):
 * one walk of libyaml's document, each key checked for its type and its place,
 * what the TLS side cannot do refused by name, each error in it as
 * file:line:column (a file that cannot be read: path: why).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config/webconfig.h"

struct wparser {
	const char *name; /* for messages */
	const char *dir;  /* relative paths start here */
	struct cfg_error *err;
	yaml_document_t *doc;
	struct web_config *w;
};

__attribute__((format(printf, 3, 4))) static int wfail(struct wparser *p, const yaml_node_t *n,
						       const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = cfg_fail_at_v(p->err, p->name, n, fmt, ap);
	va_end(ap);
	return r;
}

static const char *sval(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static bool is_null(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (n->data.scalar.length == 0 || strcmp(sval(n), "null") == 0 ||
		strcmp(sval(n), "~") == 0);
}

static const char *const client_auth_names[] = {
	[WEB_NO_CLIENT_CERT] = "NoClientCert",
	[WEB_REQUEST_CLIENT_CERT] = "RequestClientCert",
	[WEB_REQUIRE_ANY_CLIENT_CERT] = "RequireAnyClientCert",
	[WEB_VERIFY_CLIENT_CERT_IF_GIVEN] = "VerifyClientCertIfGiven",
	[WEB_REQUIRE_AND_VERIFY_CLIENT_CERT] = "RequireAndVerifyClientCert",
};

/* A scalar value, or an error naming @key. */
static int want_scalar(struct wparser *p, const yaml_node_t *v, const char *key)
{
	if (v->type != YAML_SCALAR_NODE)
		return wfail(p, v, "'%s' must be a string, got a %s", key,
			     v->type == YAML_SEQUENCE_NODE ? "list" : "mapping");
	return 0;
}

/* @v as a path: absolute, or relative to the file's directory (as
 * exporter-toolkit resolves them). */
static int path_value(struct wparser *p, const yaml_node_t *v, const char *key, char **out)
{
	const char *s;
	int r = want_scalar(p, v, key);

	if (r < 0)
		return r;
	s = sval(v);
	if (!*s)
		return wfail(p, v, "'%s' is empty: expected a file name", key);
	free(*out);
	if (s[0] == '/' || !p->dir)
		*out = strdup(s);
	else if (asprintf(out, "%s/%s", p->dir, s) < 0)
		*out = NULL;
	return *out ? 0 : -ENOMEM;
}

static int client_auth_value(struct wparser *p, const yaml_node_t *v)
{
	int r = want_scalar(p, v, "client_auth_type");

	if (r < 0)
		return r;
	for (unsigned i = 0; i < sizeof(client_auth_names) / sizeof(client_auth_names[0]); i++)
		if (strcmp(sval(v), client_auth_names[i]) == 0) {
			p->w->client_auth = (enum web_client_auth)i;
			return 0;
		}
	return wfail(p, v,
		     "unknown client_auth_type '%s': expected NoClientCert, RequestClientCert, "
		     "RequireAnyClientCert, VerifyClientCertIfGiven or RequireAndVerifyClientCert",
		     sval(v));
}

static int version_value(struct wparser *p, const yaml_node_t *v, const char *key, unsigned *out)
{
	static const char *const names[] = {"TLS10", "TLS11", "TLS12", "TLS13"};
	int r = want_scalar(p, v, key);

	if (r < 0)
		return r;
	for (unsigned i = 0; i < 4; i++)
		if (strcmp(sval(v), names[i]) == 0) {
			*out = 10 + i;
			return 0;
		}
	return wfail(p, v, "unknown %s '%s': expected TLS10, TLS11, TLS12 or TLS13", key, sval(v));
}

static int bool_value(struct wparser *p, const yaml_node_t *v, const char *key, bool *out)
{
	int r = want_scalar(p, v, key);

	if (r < 0)
		return r;
	if (strcmp(sval(v), "true") == 0 || strcmp(sval(v), "false") == 0) {
		*out = sval(v)[0] == 't';
		return 0;
	}
	return wfail(p, v, "'%s' must be true or false, got '%s'", key, sval(v));
}

/* Keys of exporter-toolkit that GnuTLS could do but iopulse does not (yet), or
 * that an empty value makes harmless: refused unless empty. */
static int unsupported(struct wparser *p, const yaml_node_t *k, const yaml_node_t *v)
{
	const char *key = sval(k);

	if (is_null(v) || (v->type == YAML_SEQUENCE_NODE &&
			   v->data.sequence.items.top == v->data.sequence.items.start))
		return 0;
	if (strcmp(key, "curve_preferences") == 0)
		return wfail(p, k, "'curve_preferences' is not supported; remove it");
	if (strcmp(key, "client_allowed_sans") == 0)
		return wfail(p, k, "'client_allowed_sans' is not supported; remove it");
	return wfail(p, k, "'%s' (inline PEM) is not supported: use '%s_file'", key, key);
}

/* ---- cipher_suites --------------------------------------------------------- */

/*
 * Go takes a list of TLS 1.2 suites; a GnuTLS priority string takes key
 * exchanges, ciphers and MACs separately and allows every suite they combine
 * into. So a list is accepted only when it is that whole product: for the
 * suites below, a key exchange times a cipher (the cipher fixes the MAC).
 */
#define N_KX	  2
#define N_CIPHERS 5
static const char *const kx_names[N_KX] = {"ECDHE-RSA", "ECDHE-ECDSA"};
static const struct {
	const char *name, *mac; /* GnuTLS' */
} cipher_names[N_CIPHERS] = {
	{"AES-128-GCM", "AEAD"}, {"AES-256-GCM", "AEAD"}, {"CHACHA20-POLY1305", "AEAD"},
	{"AES-128-CBC", "SHA1"}, {"AES-256-CBC", "SHA1"},
};

/* Go's names (crypto/tls CipherSuiteName) of [key exchange][cipher]. */
static const char *const go_suites[N_KX][N_CIPHERS] = {
	{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	 "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
	 "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"},
	{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	 "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
	 "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA"},
};

#define INSECURE "Go lists it among its insecure cipher suites"
#define NO_PFS	 "its RSA key exchange has no forward secrecy (Go no longer offers it by default)"
#define TLS13	 "it is a TLS 1.3 suite, and TLS 1.3 suites are not configurable (as in Go)"

/* The other names Go knows, and why iopulse refuses each. */
static const struct {
	const char *name, *why;
} refused_suites[] = {
	{"TLS_RSA_WITH_RC4_128_SHA", INSECURE},
	{"TLS_RSA_WITH_3DES_EDE_CBC_SHA", INSECURE},
	{"TLS_RSA_WITH_AES_128_CBC_SHA256", INSECURE},
	{"TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", INSECURE},
	{"TLS_ECDHE_RSA_WITH_RC4_128_SHA", INSECURE},
	{"TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", INSECURE},
	{"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", INSECURE},
	{"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", INSECURE},
	{"TLS_RSA_WITH_AES_128_CBC_SHA", NO_PFS},
	{"TLS_RSA_WITH_AES_256_CBC_SHA", NO_PFS},
	{"TLS_RSA_WITH_AES_128_GCM_SHA256", NO_PFS},
	{"TLS_RSA_WITH_AES_256_GCM_SHA384", NO_PFS},
	{"TLS_AES_128_GCM_SHA256", TLS13},
	{"TLS_AES_256_GCM_SHA384", TLS13},
	{"TLS_CHACHA20_POLY1305_SHA256", TLS13},
};

/* One entry of cipher_suites: its key exchange and cipher, or an error. */
static int suite_value(struct wparser *p, const yaml_node_t *n, unsigned *kx, unsigned *c)
{
	int r = want_scalar(p, n, "cipher_suites entry");

	if (r < 0)
		return r;
	for (*kx = 0; *kx < N_KX; (*kx)++)
		for (*c = 0; *c < N_CIPHERS; (*c)++)
			if (strcmp(sval(n), go_suites[*kx][*c]) == 0)
				return 0;
	for (unsigned i = 0; i < sizeof(refused_suites) / sizeof(refused_suites[0]); i++)
		if (strcmp(sval(n), refused_suites[i].name) == 0)
			return wfail(p, n, "cipher suite '%s' is refused: %s", sval(n),
				     refused_suites[i].why);
	return wfail(p, n,
		     "unknown cipher suite '%s': expected a name from Go's crypto/tls, "
		     "e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 (iopulse(8) lists those accepted)",
		     sval(n));
}

/* appendf(buf, size, fmt, ...): append to a NUL-terminated @buf, truncating. */
__attribute__((format(printf, 3, 4))) static void appendf(char *buf, size_t size, const char *fmt,
							  ...)
{
	size_t at = strlen(buf);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf + at, size - at, fmt, ap);
	va_end(ap);
}

/* The priority fragment for the key exchanges and ciphers marked, in the
 * order first listed (the server's preference). */
static char *suite_priority(const unsigned *kx, unsigned n_kx, const unsigned *c, unsigned n_c)
{
	char buf[256] = "-KX-ALL";
	bool aead = false, sha1 = false;

	for (unsigned i = 0; i < n_kx; i++)
		appendf(buf, sizeof(buf), ":+%s", kx_names[kx[i]]);
	appendf(buf, sizeof(buf), ":-CIPHER-ALL");
	for (unsigned i = 0; i < n_c; i++) {
		appendf(buf, sizeof(buf), ":+%s", cipher_names[c[i]].name);
		aead |= strcmp(cipher_names[c[i]].mac, "AEAD") == 0;
		sha1 |= strcmp(cipher_names[c[i]].mac, "SHA1") == 0;
	}
	appendf(buf, sizeof(buf), ":-MAC-ALL%s%s", aead ? ":+AEAD" : "", sha1 ? ":+SHA1" : "");
	return strdup(buf);
}

/* cipher_suites: a list that is the product of its key exchanges and ciphers,
 * as w->tls12_ciphers; an empty one leaves GnuTLS' defaults. */
static int cipher_suites_value(struct wparser *p, const yaml_node_t *v)
{
	bool listed[N_KX][N_CIPHERS] = {{false}}, kx_seen[N_KX] = {false},
	     c_seen[N_CIPHERS] = {false};
	unsigned kx_order[N_KX], c_order[N_CIPHERS], n_kx = 0, n_c = 0, kx, c;
	char missing[512] = "";
	int r;

	if (is_null(v))
		return 0;
	if (v->type != YAML_SEQUENCE_NODE)
		return wfail(p, v, "'cipher_suites' must be a list of cipher suite names");
	for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
	     i++) {
		r = suite_value(p, yaml_document_get_node(p->doc, *i), &kx, &c);
		if (r < 0)
			return r;
		listed[kx][c] = true;
		if (!kx_seen[kx])
			kx_order[n_kx++] = kx;
		if (!c_seen[c])
			c_order[n_c++] = c;
		kx_seen[kx] = c_seen[c] = true;
	}
	if (!n_kx)
		return 0;
	for (kx = 0; kx < N_KX; kx++)
		for (c = 0; c < N_CIPHERS; c++)
			if (kx_seen[kx] && c_seen[c] && !listed[kx][c])
				appendf(missing, sizeof(missing), "%s%s", *missing ? ", " : "",
					go_suites[kx][c]);
	if (*missing)
		return wfail(p, v,
			     "cipher_suites: GnuTLS cannot select exactly this list: it takes key "
			     "exchanges and ciphers separately, so this list would also allow %s; "
			     "add them, or list fewer key exchanges or ciphers",
			     missing);
	free(p->w->tls12_ciphers);
	p->w->tls12_ciphers = suite_priority(kx_order, n_kx, c_order, n_c);
	return p->w->tls12_ciphers ? 0 : -ENOMEM;
}

/* One key of tls_server_config. */
static int tls_key(struct wparser *p, const yaml_node_t *k, const yaml_node_t *v)
{
	static const char *const skipped[] = {"curve_preferences", "client_allowed_sans", "cert",
					      "key", "client_ca"};
	struct web_config *w = p->w;
	const char *key = sval(k);

	if (strcmp(key, "cert_file") == 0)
		return path_value(p, v, key, &w->cert_file);
	if (strcmp(key, "key_file") == 0)
		return path_value(p, v, key, &w->key_file);
	if (strcmp(key, "client_ca_file") == 0)
		return path_value(p, v, key, &w->client_ca_file);
	if (strcmp(key, "client_auth_type") == 0)
		return client_auth_value(p, v);
	if (strcmp(key, "min_version") == 0)
		return version_value(p, v, key, &w->min_version);
	if (strcmp(key, "max_version") == 0)
		return version_value(p, v, key, &w->max_version);
	if (strcmp(key, "prefer_server_cipher_suites") == 0)
		return bool_value(p, v, key, &w->server_cipher_order);
	if (strcmp(key, "cipher_suites") == 0)
		return cipher_suites_value(p, v);
	for (unsigned i = 0; i < sizeof(skipped) / sizeof(skipped[0]); i++)
		if (strcmp(key, skipped[i]) == 0)
			return unsupported(p, k, v);
	return wfail(p, k,
		     "unknown key '%s' in tls_server_config: expected cert_file, key_file, "
		     "client_auth_type, client_ca_file, min_version, max_version, cipher_suites or "
		     "prefer_server_cipher_suites",
		     key);
}

/* What exporter-toolkit refuses, and what GnuTLS cannot check without a CA. */
static int tls_check(struct wparser *p, const yaml_node_t *n)
{
	struct web_config *w = p->w;

	if (!w->cert_file && !w->key_file && !w->client_ca_file &&
	    w->client_auth == WEB_NO_CLIENT_CERT)
		return 0; /* an empty section: no TLS, as exporter-toolkit */
	if (!w->cert_file)
		return wfail(p, n, "tls_server_config: missing cert_file");
	if (!w->key_file)
		return wfail(p, n, "tls_server_config: missing key_file");
	if (w->client_ca_file && w->client_auth == WEB_NO_CLIENT_CERT)
		return wfail(p, n,
			     "tls_server_config: client_ca_file is set but client_auth_type is "
			     "NoClientCert: set client_auth_type, e.g. RequireAndVerifyClientCert");
	if (!w->client_ca_file && (w->client_auth == WEB_VERIFY_CLIENT_CERT_IF_GIVEN ||
				   w->client_auth == WEB_REQUIRE_AND_VERIFY_CLIENT_CERT))
		return wfail(p, n, "tls_server_config: client_auth_type %s needs client_ca_file",
			     client_auth_names[w->client_auth]);
	if (w->max_version && w->max_version < w->min_version)
		return wfail(p, n,
			     "tls_server_config: max_version TLS%u is below min_version TLS%u",
			     w->max_version, w->min_version);
	w->tls = true;
	return 0;
}

/* A mapping's pairs, each through @fn; duplicate keys are errors. */
static int each_pair(struct wparser *p, const yaml_node_t *map, const char *what,
		     int (*fn)(struct wparser *, const yaml_node_t *, const yaml_node_t *))
{
	yaml_node_pair_t *a, *b;
	int r;

	if (map->type != YAML_MAPPING_NODE)
		return wfail(p, map, "'%s' must be a mapping", what);
	for (a = map->data.mapping.pairs.start; a < map->data.mapping.pairs.top; a++) {
		const yaml_node_t *k = yaml_document_get_node(p->doc, a->key);
		const yaml_node_t *v = yaml_document_get_node(p->doc, a->value);

		if (k->type != YAML_SCALAR_NODE)
			return wfail(p, k, "keys in '%s' must be strings", what);
		for (b = map->data.mapping.pairs.start; b < a; b++) {
			const yaml_node_t *kb = yaml_document_get_node(p->doc, b->key);

			if (kb->type == YAML_SCALAR_NODE && strcmp(sval(kb), sval(k)) == 0)
				return wfail(p, k, "'%s' appears twice in '%s'", sval(k), what);
		}
		r = fn(p, k, v);
		if (r < 0)
			return r;
	}
	return 0;
}

/* bcrypt as crypt(5) writes it: $2a$, $2b$ or $2y$, a two-digit cost, '$', 53
 * characters of salt and hash. */
static bool is_bcrypt(const char *s)
{
	return strlen(s) == 60 && s[0] == '$' && s[1] == '2' && strchr("aby", s[2]) &&
	       s[2] != '\0' && s[3] == '$' && s[4] >= '0' && s[4] <= '9' && s[5] >= '0' &&
	       s[5] <= '9' && s[6] == '$';
}

/* The costs crypt(3) computes (bcrypt's own range): any other fails every
 * password, so it is refused rather than locking the user out. */
static bool bcrypt_cost_ok(const char *s)
{
	int cost = (s[4] - '0') * 10 + (s[5] - '0');

	return cost >= 4 && cost <= 31;
}

static int user_pair(struct wparser *p, const yaml_node_t *k, const yaml_node_t *v)
{
	struct web_config *w = p->w;
	struct web_user *u;

	if (!*sval(k))
		return wfail(p, k, "basic_auth_users: empty user name");
	if (strchr(sval(k), ':'))
		return wfail(p, k, "basic_auth_users: user name '%s' contains ':'", sval(k));
	if (v->type != YAML_SCALAR_NODE || !is_bcrypt(sval(v)))
		return wfail(p, v,
			     "basic_auth_users: the password of '%s' is not a bcrypt hash "
			     "(e.g. from htpasswd -nbBC 10 USER PASSWORD)",
			     sval(k));
	if (!bcrypt_cost_ok(sval(v)))
		return wfail(p, v,
			     "basic_auth_users: the bcrypt cost of '%s' is %.2s: expected 04 to 31",
			     sval(k), sval(v) + 4);
	if (w->n_users == WEB_MAX_USERS)
		return wfail(p, k, "basic_auth_users: more than %u users", WEB_MAX_USERS);
	u = &w->users[w->n_users];
	u->name = strdup(sval(k));
	u->hash = strdup(sval(v));
	if (!u->name || !u->hash) {
		free(u->name);
		free(u->hash);
		return -ENOMEM;
	}
	w->n_users++;
	return 0;
}

static int top_pair(struct wparser *p, const yaml_node_t *k, const yaml_node_t *v)
{
	const char *key = sval(k);
	int r;

	if (strcmp(key, "tls_server_config") == 0) {
		if (is_null(v))
			return 0;
		r = each_pair(p, v, key, tls_key);
		return r < 0 ? r : tls_check(p, v);
	}
	if (strcmp(key, "basic_auth_users") == 0) {
		if (is_null(v))
			return 0;
		if (v->type == YAML_MAPPING_NODE) {
			size_t n =
				(size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);

			p->w->users = calloc(n ? n : 1, sizeof(*p->w->users));
			if (!p->w->users)
				return -ENOMEM;
		}
		return each_pair(p, v, key, user_pair);
	}
	if (strcmp(key, "http_server_config") == 0 || strcmp(key, "rate_limit") == 0)
		return is_null(v) ? 0 : wfail(p, k, "'%s' is not supported by iopulse", key);
	return wfail(p, k,
		     "unknown key '%s': expected tls_server_config or basic_auth_users "
		     "(exporter-toolkit's web configuration)",
		     key);
}

int web_config_load_string(const char *name, const char *dir, const char *text, size_t len,
			   struct web_config **out, struct cfg_error *err)
{
	struct wparser p = {.name = name, .dir = dir, .err = err};
	yaml_document_t doc;
	const yaml_node_t *root;
	int r;

	*out = NULL;
	err->msg[0] = '\0';
	r = cfg_yaml_load(name, text, len, &doc,
			  "web configuration is empty, expected tls_server_config or "
			  "basic_auth_users",
			  err);
	if (r < 0)
		return r;
	p.doc = &doc;
	p.w = calloc(1, sizeof(*p.w));
	if (!p.w || !(p.w->source = strdup(name))) {
		r = -ENOMEM;
		goto out;
	}
	p.w->min_version = 12;
	p.w->server_cipher_order = true;
	root = yaml_document_get_root_node(&doc);
	r = each_pair(&p, root, "web configuration", top_pair);
out:
	if (r == -ENOMEM)
		snprintf(err->msg, sizeof(err->msg), "%s: out of memory", name);
	if (r < 0)
		web_config_free(p.w);
	else
		*out = p.w;
	yaml_document_delete(&doc);
	return r;
}

int web_config_load_file(const char *path, struct web_config **out, struct cfg_error *err)
{
	const char *slash = strrchr(path, '/');
	char *text, *dir;
	size_t len;
	int r;

	*out = NULL;
	r = cfg_read_file(path, &text, &len, err);
	if (r < 0)
		return r;
	dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
	if (!dir) {
		free(text);
		snprintf(err->msg, sizeof(err->msg), "%s: out of memory", path);
		return -ENOMEM;
	}
	r = web_config_load_string(path, dir, text ? text : "", len, out, err);
	free(dir);
	free(text);
	return r;
}

void web_config_free(struct web_config *w)
{
	if (!w)
		return;
	for (unsigned i = 0; i < w->n_users; i++) {
		free(w->users[i].name);
		free(w->users[i].hash);
	}
	free(w->users);
	free(w->cert_file);
	free(w->key_file);
	free(w->client_ca_file);
	free(w->tls12_ciphers);
	free(w->source);
	free(w);
}
