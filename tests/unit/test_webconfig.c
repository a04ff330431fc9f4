/* SPDX-License-Identifier: MIT */
/*
 * webconfig and the http auth: every malformed web config gives one exact
 * "file:line:col: message"; valid ones give exporter-toolkit's values, relative
 * paths resolved against the file's directory; the credential cache admits only
 * the exact user and password that verified (CVE-2022-46146), bytes and length
 * (a NUL in either matches nothing); the queue of checks shares its places
 * between networks and keeps room for those that did not fail.
 */
#include <crypt.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/webconfig.h"
#include "daemon/http/auth.h"

/* Bcrypt hashes of "secret" at cost 4 (the cheapest: tests, not security) and 5. */
static char hash[128], hash5[128];

static void make_hash(char *out, size_t n, unsigned long cost)
{
	char salt[CRYPT_GENSALT_OUTPUT_SIZE];
	struct crypt_data cd = {0};

	assert_non_null(crypt_gensalt_rn("$2b$", cost, NULL, 0, salt, sizeof(salt)));
	snprintf(out, n, "%s", crypt_r("secret", salt, &cd));
	assert_int_equal(strlen(out), 60);
}

/* @user and @pass as C strings; CRED() for bytes with a NUL in them. */
static struct web_cred cred(const char *user, const char *pass)
{
	return (struct web_cred){user, pass, strlen(user), strlen(pass)};
}

#define CRED(u, p) (&(struct web_cred){u, p, sizeof(u) - 1, sizeof(p) - 1})

static int load(const char *yaml, struct web_config **w, struct cfg_error *err)
{
	return web_config_load_string("web.yml", "/etc/iopulse", yaml, strlen(yaml), w, err);
}

static void expect_error(const char *yaml, const char *msg)
{
	struct web_config *w = NULL;
	struct cfg_error err;
	int r = load(yaml, &w, &err);

	if (r != -EINVAL || strcmp(err.msg, msg) != 0)
		fail_msg("for:\n%s\ngot %d '%s'\nwant '%s'", yaml, r, err.msg, msg);
	assert_null(w);
}

#define TLS "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n"

/* A bcrypt hash after its cost: 22 characters of salt, 31 of hash. */
#define BCRYPT_TAIL "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0"

static void test_errors(void **state)
{
	(void)state;
	expect_error("tls_server_config:\n  certfile: a.crt\n",
		     "web.yml:2:3: unknown key 'certfile' in tls_server_config: expected "
		     "cert_file, key_file, client_auth_type, client_ca_file, min_version, "
		     "max_version, cipher_suites or prefer_server_cipher_suites");
	expect_error("tls_config:\n  cert_file: a.crt\n",
		     "web.yml:1:1: unknown key 'tls_config': expected tls_server_config or "
		     "basic_auth_users (exporter-toolkit's web configuration)");
	expect_error(TLS "  client_auth_type: Always\n",
		     "web.yml:4:21: unknown client_auth_type 'Always': expected NoClientCert, "
		     "RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven or "
		     "RequireAndVerifyClientCert");
	expect_error("tls_server_config:\n  key_file: a.key\n",
		     "web.yml:2:3: tls_server_config: missing cert_file");
	expect_error("tls_server_config:\n  cert_file: a.crt\n",
		     "web.yml:2:3: tls_server_config: missing key_file");
	expect_error(TLS "  client_ca_file: ca.crt\n",
		     "web.yml:2:3: tls_server_config: client_ca_file is set but client_auth_type "
		     "is NoClientCert: set client_auth_type, e.g. RequireAndVerifyClientCert");
	expect_error(TLS "  client_auth_type: RequireAndVerifyClientCert\n",
		     "web.yml:2:3: tls_server_config: client_auth_type RequireAndVerifyClientCert "
		     "needs client_ca_file");
	expect_error(TLS "  min_version: TLS14\n",
		     "web.yml:4:16: unknown min_version 'TLS14': expected TLS10, TLS11, TLS12 or "
		     "TLS13");
	expect_error(
		TLS "  min_version: TLS13\n  max_version: TLS12\n",
		"web.yml:2:3: tls_server_config: max_version TLS12 is below min_version TLS13");
	expect_error(TLS "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
		     "web.yml:4:19: cipher suite 'TLS_AES_128_GCM_SHA256' is refused: it is a TLS "
		     "1.3 suite, and TLS 1.3 suites are not configurable (as in Go)");
	expect_error(TLS "  cipher_suites: [TLS_RSA_WITH_AES_128_GCM_SHA256]\n",
		     "web.yml:4:19: cipher suite 'TLS_RSA_WITH_AES_128_GCM_SHA256' is refused: its "
		     "RSA key exchange has no forward secrecy (Go no longer offers it by default)");
	expect_error(
		TLS "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM]\n",
		"web.yml:4:19: unknown cipher suite 'TLS_ECDHE_RSA_WITH_AES_128_GCM': expected a "
		"name from Go's crypto/tls, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 "
		"(iopulse(8) lists those accepted)");
	expect_error(TLS "  cipher_suites: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n",
		     "web.yml:4:18: 'cipher_suites' must be a list of cipher suite names");
	/* Two key exchanges, two ciphers: all four or GnuTLS would allow more. */
	expect_error(TLS "  cipher_suites:\n  - TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n"
			 "  - TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA\n",
		     "web.yml:5:3: cipher_suites: GnuTLS cannot select exactly this list: it takes "
		     "key exchanges and ciphers separately, so this list would also allow "
		     "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256; "
		     "add them, or list fewer key exchanges or ciphers");
	expect_error(TLS "  cert: PEM\n",
		     "web.yml:4:3: 'cert' (inline PEM) is not supported: use 'cert_file'");
	expect_error(TLS "  cert_file: b.crt\n", "web.yml:4:3: 'cert_file' appears twice in "
						 "'tls_server_config'");
	expect_error("basic_auth_users:\n  alice: secret\n",
		     "web.yml:2:10: basic_auth_users: the password of 'alice' is not a bcrypt "
		     "hash (e.g. from htpasswd -nbBC 10 USER PASSWORD)");
	/* Costs crypt(3) does not compute: every password would fail. */
	expect_error("basic_auth_users:\n  alice: '$2y$03$" BCRYPT_TAIL "'\n",
		     "web.yml:2:10: basic_auth_users: the bcrypt cost of 'alice' is 03: expected "
		     "04 to 31");
	expect_error("basic_auth_users:\n  alice: '$2y$32$" BCRYPT_TAIL "'\n",
		     "web.yml:2:10: basic_auth_users: the bcrypt cost of 'alice' is 32: expected "
		     "04 to 31");
	expect_error("basic_auth_users:\n  alice: '$2y$39$" BCRYPT_TAIL "'\n",
		     "web.yml:2:10: basic_auth_users: the bcrypt cost of 'alice' is 39: expected "
		     "04 to 31");
	expect_error("http_server_config:\n  http2: false\n",
		     "web.yml:1:1: 'http_server_config' is not supported by iopulse");
	expect_error("", "web.yml:1:1: web configuration is empty, expected tls_server_config "
			 "or basic_auth_users");
}

/* A long value is shortened, never the message (config/elide.c): a 5,000-byte
 * cipher suite name leaves the reason whole. */
static void test_long_value(void **state)
{
	char *yaml = malloc(6000), want[512];
	size_t n;

	(void)state;
	assert_non_null(yaml);
	n = (size_t)snprintf(yaml, 6000, TLS "  cipher_suites: [");
	memset(yaml + n, 'X', 5000);
	snprintf(yaml + n + 5000, 6000 - n - 5000, "]\n");
	snprintf(want, sizeof(want),
		 "web.yml:4:19: unknown cipher suite '%.48s\u2026' (5000 bytes): expected a name "
		 "from Go's crypto/tls, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 (iopulse(8) "
		 "lists those accepted)",
		 yaml + n);
	expect_error(yaml, want);
	free(yaml);
}

static void test_valid(void **state)
{
	struct web_config *w = NULL;
	struct cfg_error err;
	char yaml[512];

	(void)state;
	snprintf(yaml, sizeof(yaml),
		 TLS "  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: /ca.crt\n"
		     "  min_version: TLS13\nbasic_auth_users:\n  alice: '%s'\n",
		 hash);
	assert_int_equal(load(yaml, &w, &err), 0);
	assert_true(w->tls);
	assert_string_equal(w->cert_file, "/etc/iopulse/a.crt");
	assert_string_equal(w->key_file, "/etc/iopulse/a.key");
	assert_string_equal(w->client_ca_file, "/ca.crt");
	assert_int_equal(w->client_auth, WEB_VERIFY_CLIENT_CERT_IF_GIVEN);
	assert_int_equal(w->min_version, 13);
	assert_int_equal(w->n_users, 1);
	assert_string_equal(w->users[0].name, "alice");
	web_config_free(w);

	/* cipher_suites: a whole product, as GnuTLS priorities in the order listed. */
	snprintf(yaml, sizeof(yaml),
		 TLS "  cipher_suites:\n"
		     "  - TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256\n"
		     "  - TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256\n"
		     "  - TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA\n"
		     "  - TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA\n");
	assert_int_equal(load(yaml, &w, &err), 0);
	assert_string_equal(w->tls12_ciphers,
			    "-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:-CIPHER-ALL:"
			    "+CHACHA20-POLY1305:+AES-128-CBC:-MAC-ALL:+AEAD:+SHA1");
	web_config_free(w);
	assert_int_equal(load(TLS "  cipher_suites: []\n", &w, &err), 0);
	assert_null(w->tls12_ciphers);
	web_config_free(w);

	/* Users alone: no TLS; TLS 1.2 the minimum by default. */
	snprintf(yaml, sizeof(yaml), "basic_auth_users:\n  bob: '%s'\n", hash);
	assert_int_equal(load(yaml, &w, &err), 0);
	assert_false(w->tls);
	assert_int_equal(w->min_version, 12);
	web_config_free(w);
}

/* A verifier for alice ("secret", cost 4), from a web config in *@w. */
static struct web_auth *alice_auth(struct web_config **w)
{
	struct web_auth *a;
	struct cfg_error err;
	char yaml[256];
	int e = 0;

	*w = NULL;
	snprintf(yaml, sizeof(yaml), "basic_auth_users:\n  alice: '%s'\n", hash);
	assert_int_equal(load(yaml, w, &err), 0);
	a = web_auth_new(*w, &e);
	assert_non_null(a);
	return a;
}

static void test_auth_cache(void **state)
{
	struct web_config *w;
	struct web_auth *a = alice_auth(&w);

	(void)state;
	assert_false(web_auth_cached(a, CRED("alice", "secret")));
	assert_false(web_auth_verify(a, CRED("alice", "wrong")));
	assert_false(web_auth_verify(a, CRED("bob", "secret"))); /* unknown: the dummy hash */
	assert_true(web_auth_verify(a, CRED("alice", "secret")));
	assert_true(web_auth_cached(a, CRED("alice", "secret")));
	/* CVE-2022-46146: a cached success admits that password only. */
	assert_false(web_auth_cached(a, CRED("alice", "wrong")));
	assert_false(web_auth_cached(a, CRED("alice", "")));
	assert_false(web_auth_cached(a, CRED("alicesecret", "")));
	assert_false(web_auth_cached(a, CRED("bob", "secret")));
	assert_false(web_auth_verify(a, CRED("alice", "wrong")));
	web_auth_free(a);
	web_config_free(w);
}

/* Bytes and their length: "secret\0anything" is not "secret" (crypt(3) would
 * stop at the NUL), nor is the user "alice\0anything" alice. */
static void test_auth_nul(void **state)
{
	struct web_config *w;
	struct web_auth *a = alice_auth(&w);

	(void)state;
	assert_false(web_auth_verify(a, CRED("alice", "secret\0anything")));
	assert_false(web_auth_verify(a, CRED("alice\0anything", "secret")));
	assert_false(web_auth_verify(a, CRED("alice", "secret\0")));
	assert_true(web_auth_verify(a, CRED("alice", "secret")));
	assert_false(web_auth_cached(a, CRED("alice", "secret\0anything")));
	assert_false(web_auth_cached(a, CRED("alice\0", "secret")));
	assert_true(web_auth_cached(a, CRED("alice", "secret")));
	web_auth_free(a);
	web_config_free(w);
}

/* The Authorization header: RFC 7617's scheme, base64, the first ':' splits,
 * and the decoded bytes are kept whole. */
static void test_parse_basic(void **state)
{
	char buf[2 * WEB_AUTH_FIELD_MAX + 2], big[1024];
	struct web_cred cr;

	(void)state;
	assert_int_equal(web_auth_parse_basic("Basic YWxpY2U6c2VjcmV0AHg=", buf, sizeof(buf), &cr),
			 0);
	assert_int_equal(cr.user_len, 5);
	assert_memory_equal(cr.user, "alice", 5);
	assert_int_equal(cr.pass_len, 8);
	assert_memory_equal(cr.pass, "secret\0x", 8);
	assert_int_equal(web_auth_parse_basic(" basic \tYWxpY2U6c2VjcmV0 ", buf, sizeof(buf), &cr),
			 0);
	assert_int_equal(cr.pass_len, 6);
	assert_int_equal(web_auth_parse_basic("Basic YWxpY2U6", buf, sizeof(buf), &cr), 0);
	assert_int_equal(cr.user_len, 5);
	assert_int_equal(cr.pass_len, 0);
	assert_int_equal(web_auth_parse_basic("Basic YWxpY2VzZWNyZXQ=", buf, sizeof(buf), &cr),
			 -EINVAL);
	assert_int_equal(web_auth_parse_basic("Bearer YWxpY2U6c2VjcmV0", buf, sizeof(buf), &cr),
			 -EINVAL);
	assert_int_equal(web_auth_parse_basic("BasicYWxpY2U6c2VjcmV0", buf, sizeof(buf), &cr),
			 -EINVAL);
	assert_int_equal(web_auth_parse_basic("Basic YWxp!2U6c2VjcmV0", buf, sizeof(buf), &cr),
			 -EINVAL);
	assert_int_equal(web_auth_parse_basic(NULL, buf, sizeof(buf), &cr), -EINVAL);
	/* "a:" and 257 'p': a password over WEB_AUTH_FIELD_MAX. */
	assert_int_equal(
		web_auth_parse_basic(
			"Basic "
			"YTpwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH"
			"BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBw"
			"cHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH"
			"BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBw"
			"cHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcA==",
			buf, sizeof(buf), &cr),
		-E2BIG);
	memset(big, 'Q', sizeof(big) - 1);
	memcpy(big, "Basic ", 6);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(web_auth_parse_basic(big, buf, sizeof(buf), &cr), -E2BIG);
}

/* Verdicts of submitted checks, for the test below. */
struct verdicts {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	unsigned n, ok;
};

static void on_verdict(void *cls, bool ok)
{
	struct verdicts *v = cls;

	pthread_mutex_lock(&v->mu);
	v->n++;
	v->ok += ok;
	pthread_cond_broadcast(&v->cond);
	pthread_mutex_unlock(&v->mu);
}

static void wait_verdicts(struct verdicts *v, unsigned n)
{
	pthread_mutex_lock(&v->mu);
	while (v->n < n)
		pthread_cond_wait(&v->cond, &v->mu);
	pthread_mutex_unlock(&v->mu);
}

/* Reserve a place for the address "N<net><addr>" (network "N<net>"). */
static int reserve(struct web_auth *a, char net, char addr)
{
	const char who[3] = {'N', net, addr};

	return web_auth_reserve(a, who, sizeof(who), 2);
}

/* Submit @n reserved @slots with @cr and wait for their verdicts. */
static void run(struct web_auth *a, struct verdicts *v, const int *slots, unsigned n,
		const struct web_cred *cr)
{
	unsigned i, before = v->n;

	for (i = 0; i < n; i++) {
		assert_true(slots[i] >= 0);
		web_auth_submit(a, slots[i], cr, on_verdict, v);
	}
	wait_verdicts(v, before + n);
}

/* The queue's shares (what keeps a scraper in during a flood of wrong
 * passwords from many addresses, issue 22): a network's addresses that did not
 * fail hold WEB_AUTH_NET_JOBS places, however many addresses it has; failed
 * addresses WEB_AUTH_FAILED_JOBS; failed networks WEB_AUTH_SUSPECT_JOBS; the
 * rest is for networks that never failed. A success clears its address, not
 * its network. Reserved and not submitted, places stay taken. */
static void test_auth_shares(void **state)
{
	struct verdicts v = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
	struct web_config *w;
	struct web_auth *a = alice_auth(&w);
	struct web_cred wrong = cred("alice", "wrong"), right = cred("alice", "secret");
	int slots[WEB_AUTH_JOBS], bad[WEB_AUTH_JOBS];
	unsigned n = 0, n_bad = 0, i;
	char net;

	(void)state;
	/* A network that never failed: its share, whoever else waits. */
	for (i = 0; i < WEB_AUTH_NET_JOBS; i++)
		slots[n++] = reserve(a, '1', (char)('a' + i));
	assert_int_equal(reserve(a, '1', 'z'), -EBUSY);
	slots[n++] = reserve(a, '2', 'a');
	run(a, &v, slots, n, &right);
	assert_int_equal(v.ok, n);

	/* Addresses 1a, 4a and 5a fail: they and networks 1, 4 and 5 are suspects. */
	slots[0] = reserve(a, '1', 'a');
	slots[1] = reserve(a, '4', 'a');
	slots[2] = reserve(a, '5', 'a');
	run(a, &v, slots, 3, &wrong);

	/* 1a holds the failed addresses' share, then not one place more... */
	for (i = 0; i < WEB_AUTH_FAILED_JOBS; i++)
		bad[n_bad++] = reserve(a, '1', 'a');
	assert_int_equal(reserve(a, '1', 'a'), -EBUSY);
	assert_int_equal(reserve(a, '4', 'a'), -EBUSY);
	/* ...network 1's other addresses, however many, and network 4's their
	 * share, up to the suspects' share... */
	for (net = '1'; net <= '4'; net += 3)
		for (i = 0; i < WEB_AUTH_NET_JOBS; i++)
			bad[n_bad++] = reserve(a, net, (char)('b' + i));
	assert_int_equal(reserve(a, '1', 'y'), -EBUSY);
	assert_int_equal(n_bad, WEB_AUTH_SUSPECT_JOBS);
	assert_int_equal(reserve(a, '5', 'b'), -EBUSY);
	/* ...and networks that never failed the rest. */
	n = 0;
	for (net = '6'; n < WEB_AUTH_JOBS - WEB_AUTH_SUSPECT_JOBS; net++)
		for (i = 0; i < WEB_AUTH_NET_JOBS; i++)
			slots[n++] = reserve(a, net, (char)('a' + i));
	assert_int_equal(reserve(a, net, 'a'), -EBUSY);
	run(a, &v, bad, n_bad, &wrong);
	run(a, &v, slots, n, &right);
	assert_int_equal(v.ok, WEB_AUTH_NET_JOBS + 1 + n);

	/* 1a succeeds: it is no failed address (it gets fewer places than one, as
	 * its network still failed) and network 1's share is its own again. */
	slots[0] = reserve(a, '1', 'a');
	run(a, &v, slots, 1, &right);
	for (i = 0; i < WEB_AUTH_NET_JOBS; i++)
		slots[i] = reserve(a, '1', 'a');
	assert_int_equal(reserve(a, '1', 'a'), -EBUSY);
	assert_int_equal(reserve(a, '1', 'y'), -EBUSY);
	run(a, &v, slots, WEB_AUTH_NET_JOBS, &right);
	web_auth_free(a);
	web_config_free(w);
}

/* An unknown user costs what the dearest user does, whichever comes first:
 * otherwise its quicker answer tells it apart. */
static void test_dummy_cost(void **state)
{
	struct web_config *w = NULL;
	struct web_auth *a;
	struct cfg_error err;
	char yaml[512];
	int e = 0;

	(void)state;
	snprintf(yaml, sizeof(yaml), "basic_auth_users:\n  alice: '%s'\n  bob: '%s'\n", hash,
		 hash5);
	assert_int_equal(load(yaml, &w, &err), 0);
	a = web_auth_new(w, &e);
	assert_non_null(a);
	assert_int_equal(web_auth_dummy_cost(a), 5);
	web_auth_free(a);
	web_config_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errors),	    cmocka_unit_test(test_long_value),
		cmocka_unit_test(test_valid),	    cmocka_unit_test(test_auth_cache),
		cmocka_unit_test(test_auth_nul),    cmocka_unit_test(test_parse_basic),
		cmocka_unit_test(test_auth_shares), cmocka_unit_test(test_dummy_cost),
	};

	make_hash(hash, sizeof(hash), 4);
	make_hash(hash5, sizeof(hash5), 5);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
