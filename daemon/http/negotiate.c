/* SPDX-License-Identifier: MIT */
/*
 * negotiate — content negotiation for /metrics: the format an Accept header
 * asks for, whether Accept-Encoding allows gzip (http.h). Pure functions of the
 * header's text, fuzzed by tests/fuzz (fuzz_accept, fuzz_accept_encoding).
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "daemon/expose/expose.h"
#include "daemon/http/http.h"

/*
 * One element of an Accept or Accept-Encoding list:
 *   token [ "/" token ] *( OWS ";" OWS token "=" ( token / quoted-string ) )
 * We keep the type, subtype, q (in thousandths), and the three parameters we match
 * on. Nothing is copied: the fields point into the header.
 */
struct media_range {
	const char *type, *sub; /* sub: NULL in Accept-Encoding */
	size_t type_len, sub_len;
	const char *version, *proto, *encoding; /* parameter values, NULL when absent */
	size_t version_len, proto_len, encoding_len;
	unsigned q; /* 0..1000 */
};

#define IS_OWS(c) ((c) == ' ' || (c) == '\t')

static bool is_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static size_t token_len(const char *p)
{
	size_t n = 0;

	while (is_tchar(p[n]))
		n++;
	return n;
}

/* A qvalue (RFC 9110): "0" [ "." 0*3DIGIT ] / "1" [ "." 0*3"0" ], in thousandths;
 * -1 when malformed. */
static int parse_q(const char *v, size_t n)
{
	unsigned q, i, scale = 100;

	if (n == 0 || (v[0] != '0' && v[0] != '1') || (n > 1 && v[1] != '.') || n > 5)
		return -1;
	q = (unsigned)(v[0] - '0') * 1000;
	for (i = 2; i < n; i++, scale /= 10) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		q += (unsigned)(v[i] - '0') * scale;
	}
	return q > 1000 ? -1 : (int)q;
}

static bool eq(const char *s, size_t n, const char *lit)
{
	return s && n == strlen(lit) && strncasecmp(s, lit, n) == 0;
}

/* The type at *pp (after OWS) and, with @slash, "/" and the subtype; *pp moves
 * past what was read. False when one is missing. */
static bool parse_type(const char **pp, struct media_range *r, bool slash)
{
	const char *p = *pp;

	while (IS_OWS(*p))
		p++;
	r->type = p;
	r->type_len = token_len(p);
	p += r->type_len;
	*pp = p;
	if (!r->type_len)
		return false;
	if (!slash)
		return true;
	if (*p != '/')
		return false;
	r->sub = ++p;
	r->sub_len = token_len(p);
	*pp = p + r->sub_len;
	return r->sub_len > 0;
}

/* A parameter's value at *pp: a token, or a quoted-string (the value is what is
 * inside); *pp moves past it. False for an unterminated quoted-string. */
static bool parse_value(const char **pp, const char **val, size_t *n)
{
	const char *p = *pp;

	if (*p != '"') {
		*val = p;
		*n = token_len(p);
		*pp = p + *n;
		return true;
	}
	*val = ++p;
	while (*p && *p != '"')
		p += p[0] == '\\' && p[1] ? 2 : 1;
	*pp = p;
	if (*p != '"')
		return false;
	*n = (size_t)(p - *val);
	*pp = p + 1;
	return true;
}

/* Keep the parameters we match on; false for a malformed q. */
static bool set_param(struct media_range *r, const char *name, size_t name_len, const char *val,
		      size_t n)
{
	if (eq(name, name_len, "q")) {
		int q = parse_q(val, n);

		if (q < 0)
			return false;
		r->q = (unsigned)q;
	} else if (eq(name, name_len, "version")) {
		r->version = val;
		r->version_len = n;
	} else if (eq(name, name_len, "proto")) {
		r->proto = val;
		r->proto_len = n;
	} else if (eq(name, name_len, "encoding")) {
		r->encoding = val;
		r->encoding_len = n;
	}
	return true;
}

/* The parameters at *pp, *( OWS ";" OWS token "=" value ), up to the first
 * malformed one (then false); *pp moves past what was read. */
static bool parse_params(const char **pp, struct media_range *r)
{
	const char *p = *pp, *name, *val;
	size_t name_len, n;
	bool ok = true;

	for (;;) {
		while (IS_OWS(*p))
			p++;
		if (*p != ';')
			break;
		p++;
		while (IS_OWS(*p))
			p++;
		name = p;
		name_len = token_len(p);
		p += name_len;
		if (!name_len || *p != '=') {
			ok = false;
			break;
		}
		p++;
		if (!parse_value(&p, &val, &n) || !set_param(r, name, name_len, val, n)) {
			ok = false;
			break;
		}
	}
	*pp = p;
	return ok;
}

/* Move *pp past the next top-level comma (a quoted comma does not count), or to
 * the end. False when anything but OWS comes before it: the element is malformed. */
static bool skip_element(const char **pp)
{
	const char *p = *pp;
	bool ok;

	while (IS_OWS(*p))
		p++;
	ok = !*p || *p == ',';
	while (*p && *p != ',') {
		if (*p == '"') {
			for (p++; *p && *p != '"'; p += p[0] == '\\' && p[1] ? 2 : 1)
				;
			if (!*p)
				break;
		}
		p++;
	}
	if (*p == ',')
		p++;
	*pp = p;
	return ok;
}

/*
 * Parse the element at *pp into @r and move *pp past it and its comma. Returns
 * false for an empty or malformed element (skipped by the callers: a broken
 * element must not take the whole header down). @slash: the element is a media
 * range (type/subtype).
 */
static bool next_range(const char **pp, struct media_range *r, bool slash)
{
	bool ok;

	memset(r, 0, sizeof(*r));
	r->q = 1000;
	ok = parse_type(pp, r, slash) && parse_params(pp, r);
	/* Always, so that a malformed element is skipped whole. */
	return skip_element(pp) && ok;
}

/* Parameter values compare exactly (case-sensitive), as expfmt does. */
static bool param_is(const char *v, size_t n, const char *lit)
{
	return v && n == strlen(lit) && memcmp(v, lit, n) == 0;
}

/* How specifically @r names format @f: -1 no match, 0 full wildcard, 1 "text/"
 * wildcard, 2 the type, 3 the type with a matching version parameter. */
static int specificity(const struct media_range *r, enum http_format f)
{
	switch (f) {
	case HTTP_FORMAT_PROTOBUF:
		/* Only ever when asked for by name: never through a wildcard. */
		if (eq(r->type, r->type_len, "application") &&
		    eq(r->sub, r->sub_len, "vnd.google.protobuf") &&
		    param_is(r->proto, r->proto_len, "io.prometheus.client.MetricFamily") &&
		    param_is(r->encoding, r->encoding_len, "delimited"))
			return 3;
		return -1;
	case HTTP_FORMAT_OPENMETRICS:
		if (!eq(r->type, r->type_len, "application") ||
		    !eq(r->sub, r->sub_len, "openmetrics-text"))
			return -1;
		if (!r->version)
			return 2;
		/* 0.0.1 is the same text for Prometheus' parser; we answer 1.0.0. */
		return param_is(r->version, r->version_len, "1.0.0") ||
				       param_is(r->version, r->version_len, "0.0.1")
			       ? 3
			       : -1;
	case HTTP_FORMAT_TEXT:
		if (eq(r->type, r->type_len, "*") && eq(r->sub, r->sub_len, "*"))
			return 0;
		if (!eq(r->type, r->type_len, "text"))
			return -1;
		if (eq(r->sub, r->sub_len, "*"))
			return 1;
		if (!eq(r->sub, r->sub_len, "plain"))
			return -1;
		if (!r->version)
			return 2;
		return param_is(r->version, r->version_len, "0.0.4") ? 3 : -1;
	}
	return -1;
}

#define HTTP_MAX_ACCEPT_ELEMENTS 64 /* a longer header is read that far */

enum http_format http_negotiate(const char *accept)
{
	struct {
		int spec;     /* of the deciding range, -1: none matched */
		unsigned q;   /* its q */
		unsigned pos; /* its position in the header */
	} best[3] = {{-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}};
	enum http_format f, pick = HTTP_FORMAT_TEXT;
	const char *p = accept;
	struct media_range r;
	unsigned pos, found = 0;

	for (pos = 0; p && *p && pos < HTTP_MAX_ACCEPT_ELEMENTS; pos++) {
		if (!next_range(&p, &r, true))
			continue;
		for (f = HTTP_FORMAT_TEXT; f <= HTTP_FORMAT_PROTOBUF; f++) {
			int sp = specificity(&r, f);

			/* The most specific range decides; among equals, the best q. */
			if (sp < 0 || sp < best[f].spec || (sp == best[f].spec && r.q <= best[f].q))
				continue;
			best[f].spec = sp;
			best[f].q = r.q;
			best[f].pos = pos;
		}
	}
	for (f = HTTP_FORMAT_TEXT; f <= HTTP_FORMAT_PROTOBUF; f++) {
		if (best[f].spec < 0 || best[f].q == 0)
			continue;
		if (found && (best[f].q < best[pick].q ||
			      (best[f].q == best[pick].q && (best[f].spec < best[pick].spec ||
							     (best[f].spec == best[pick].spec &&
							      best[f].pos >= best[pick].pos)))))
			continue;
		pick = f;
		found = 1;
	}
	return pick;
}

const char *http_format_content_type(enum http_format f)
{
	switch (f) {
	case HTTP_FORMAT_OPENMETRICS:
		return EXPOSE_OPENMETRICS_CONTENT_TYPE;
	case HTTP_FORMAT_PROTOBUF:
		return EXPOSE_PROTOBUF_CONTENT_TYPE;
	case HTTP_FORMAT_TEXT:
		break;
	}
	return EXPOSE_TEXT_CONTENT_TYPE;
}

bool http_accepts_gzip(const char *accept_encoding)
{
	const char *p = accept_encoding;
	int gzip = -1, star = -1; /* q, -1 when not named */
	struct media_range r;
	unsigned pos;

	for (pos = 0; p && *p && pos < HTTP_MAX_ACCEPT_ELEMENTS; pos++) {
		if (!next_range(&p, &r, false))
			continue;
		if (eq(r.type, r.type_len, "gzip") || eq(r.type, r.type_len, "x-gzip"))
			gzip = gzip > (int)r.q ? gzip : (int)r.q;
		else if (eq(r.type, r.type_len, "*"))
			star = star > (int)r.q ? star : (int)r.q;
	}
	return gzip >= 0 ? gzip > 0 : star > 0;
}
