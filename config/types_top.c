/* SPDX-License-Identifier: MIT */
/*
 * types_top — the types of the top-level keys: 'listen', 'buckets',
 * 'state_directory', and the lists 'targets' and 'probes'.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_int.h"
#include "config/default_buckets.h"
#include "lib/addr.h"

static const uint64_t default_buckets_ns[] = CFG_DEFAULT_BUCKETS_NS;

/* ---- listen ------------------------------------------------------------------ */

/* Why an address did not parse; each has its own message. */
enum listen_error {
	LISTEN_OK,
	LISTEN_E_FORMAT,      /* no ':' */
	LISTEN_E_BRACKET,     /* '[' without "]:" */
	LISTEN_E_V6_BRACKETS, /* IPv6 literal without brackets */
	LISTEN_E_HOST,	      /* not a numeric address */
	LISTEN_E_PORT,	      /* not 0..65535 */
};

/* Splits "HOST:PORT", "[V6]:PORT" or ":PORT"; @host gets the address without brackets. */
static enum listen_error listen_split(const char *s, char *host, size_t host_len, uint16_t *port)
{
	const char *colon, *h, *pt;
	unsigned char addr[16];
	unsigned long v;
	size_t hlen;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return LISTEN_E_BRACKET;
		h = s + 1;
		hlen = (size_t)(close - h);
		pt = close + 2;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return LISTEN_E_FORMAT;
		h = s;
		hlen = (size_t)(colon - s);
		pt = colon + 1;
		if (memchr(h, ':', hlen))
			return LISTEN_E_V6_BRACKETS;
	}
	if (hlen >= host_len) {
		/* Too long for any numeric address: keep a prefix for the message. */
		memcpy(host, h, host_len - 1);
		host[host_len - 1] = '\0';
		return LISTEN_E_HOST;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if ((s[0] == '[' && inet_pton(AF_INET6, host, addr) != 1) ||
	    (s[0] != '[' && hlen && inet_pton(AF_INET, host, addr) != 1))
		return LISTEN_E_HOST;
	if (!*pt || strlen(pt) > 5 || strspn(pt, "0123456789") != strlen(pt))
		return LISTEN_E_PORT;
	v = strtoul(pt, NULL, 10);
	if (v > 65535)
		return LISTEN_E_PORT;
	*port = (uint16_t)v;
	return LISTEN_OK;
}

int cfg_parse_listen(const char *s, char *host, size_t host_len, uint16_t *port)
{
	char buf[INET6_ADDRSTRLEN];
	uint16_t v;

	if (!s || !host || !host_len || !port)
		return -EINVAL;
	if (listen_split(s, buf, sizeof(buf), &v) != LISTEN_OK)
		return -EINVAL;
	if (strlen(buf) >= host_len)
		return -ENAMETOOLONG;
	strcpy(host, buf);
	*port = v;
	return 0;
}

static int parse_listen(struct parser *p, const struct key *k, const yaml_node_t *n,
			struct item *it)
{
	struct config *c = p->c;
	char host[sizeof(c->listen_host)];
	const char *s = NULL;
	uint16_t port = 0;
	int r;

	(void)k;
	(void)it;

	r = cfg_get_scalar(p, n, "listen", "a string", &s);
	if (r < 0)
		return r;
	switch (listen_split(s, host, sizeof(host), &port)) {
	case LISTEN_OK:
		break;
	case LISTEN_E_FORMAT:
		return fail_at(p, n,
			       "invalid address '%s' for 'listen': expected HOST:PORT, "
			       "[IPV6]:PORT or :PORT",
			       s);
	case LISTEN_E_BRACKET:
		return fail_at(p, n, "invalid address '%s' for 'listen': expected [IPV6]:PORT", s);
	case LISTEN_E_V6_BRACKETS:
		return fail_at(p, n,
			       "invalid address '%s' for 'listen': put an IPv6 address in "
			       "brackets, as in [::1]:10035",
			       s);
	case LISTEN_E_HOST:
		return fail_at(p, n,
			       "invalid address '%s' for 'listen': host must be a numeric IPv4 "
			       "or IPv6 address, or empty for any, got '%s'",
			       s, host);
	case LISTEN_E_PORT:
		return fail_at(p, n,
			       "invalid address '%s' for 'listen': port must be a number from 0 "
			       "to 65535",
			       s);
	}
	strcpy(c->listen_host, host);
	c->listen_port = port;
	return 0;
}

/* ---- buckets ------------------------------------------------------------------ */

static int parse_buckets(struct parser *p, const struct key *k, const yaml_node_t *n,
			 struct item *it)
{
	struct config *c = it->base;
	size_t count;

	(void)k;
	if (n->type != YAML_SEQUENCE_NODE)
		return fail_at(p, n, "'buckets' must be a list of durations, got %s",
			       cfg_node_kind(n));
	count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (count < 1)
		return fail_at(p, n, "'buckets' must not be empty");
	if (count > CFG_MAX_BUCKETS)
		return fail_at(p, n, "'buckets' has %zu items, at most %d are allowed", count,
			       CFG_MAX_BUCKETS);
	c->n_buckets = 0;
	for (size_t i = 0; i < count; i++) {
		const yaml_node_t *item = cfg_node_get(p, n->data.sequence.items.start[i]);
		uint64_t v;
		char a[32], b[32];
		int r;

		r = cfg_get_duration(p, item, "buckets", &v);
		if (r < 0)
			return r;
		if (v == 0)
			return fail_at(p, item, "'buckets' values must be greater than 0s");
		if (i && v <= c->buckets_ns[i - 1]) {
			cfg_format_duration(v, a, sizeof(a));
			cfg_format_duration(c->buckets_ns[i - 1], b, sizeof(b));
			return fail_at(p, item,
				       "'buckets' must be strictly ascending, got %s after %s", a,
				       b);
		}
		c->buckets_ns[i] = v;
		c->n_buckets++;
	}
	return 0;
}

/* ---- types ---- */

static void print_listen(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	char buf[96];

	(void)k;
	(void)base;
	addr_format(buf, sizeof(buf), c->listen_host, c->listen_port);
	fputc(' ', f);
	cfg_print_str(f, buf);
	fputc('\n', f);
}

const struct key_type type_listen = {"address", parse_listen, print_listen, NULL, NULL};

static void print_buckets(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	char buf[32];

	(void)k;
	(void)base;
	fputs(" [", f);
	for (unsigned i = 0; i < c->n_buckets; i++) {
		cfg_format_duration(c->buckets_ns[i], buf, sizeof(buf));
		fprintf(f, "%s%s", i ? ", " : "", buf);
	}
	fputs("]\n", f);
}

/* The benchmarks share the default bounds (default_buckets.h), so not from .def. */
static void default_buckets(const struct key *k, void *base)
{
	struct config *c = base;

	(void)k;
	memcpy(c->buckets_ns, default_buckets_ns, sizeof(default_buckets_ns));
	c->n_buckets = sizeof(default_buckets_ns) / sizeof(default_buckets_ns[0]);
}

const struct key_type type_buckets = {"list of durations", parse_buckets, print_buckets, NULL,
				      default_buckets};

/* ---- state_directory -------------------------------------------------------------- */

/* A path, environment-expanded as a target's; empty: none (no state file). */
static int parse_state_directory(struct parser *p, const struct key *k, const yaml_node_t *v,
				 struct item *it)
{
	struct config *c = it->base;
	const char *s = NULL;
	int r = cfg_get_scalar(p, v, k->name, "a path", &s);

	return r < 0 ? r : cfg_get_path(p, v, k->name, s, &c->state_directory);
}

static void print_state_directory(FILE *f, const struct key *k, const void *base,
				  const struct config *c)
{
	(void)k;
	(void)base;
	fputc(' ', f);
	cfg_print_path(f, c->state_directory ? c->state_directory : "");
	fputc('\n', f);
}

static bool same_state_directory(const struct key *k, const void *a, const void *b,
				 const struct config *ac, const struct config *bc)
{
	(void)k;
	(void)a;
	(void)b;
	return cfg_str_same(ac->state_directory, bc->state_directory);
}

const struct key_type type_state_directory = {"path", parse_state_directory, print_state_directory,
					      same_state_directory, NULL};

const struct key_type type_targets = {"list of targets", cfg_parse_targets, cfg_print_targets, NULL,
				      NULL};
const struct key_type type_probes = {"list of probes", cfg_parse_probes, cfg_print_probes, NULL,
				     NULL};
