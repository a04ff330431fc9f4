/* SPDX-License-Identifier: MIT */
/*
 * types — the types of value any part of the file may have: names, sizes,
 * rates, durations (whole minutes too), counts, signed numbers, factors,
 * percentages, booleans, enums, the engine and 'io_priority', each read,
 * printed and compared as struct key_type says; and the helpers that print a
 * value.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_int.h"
#include "lib/ioprio.h"

/* ---- printing values ---------------------------------------------------------- */

/* Plain when it reads back as the same string, double-quoted otherwise. */
void cfg_print_str(FILE *f, const char *s)
{
	bool plain = *s && *s != '-' && strcmp(s, "null") && strcmp(s, "Null") && strcmp(s, "NULL");

	for (const char *q = s; plain && *q; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
		      (*q >= '0' && *q <= '9') || *q == '_' || *q == '.' || *q == '-' || *q == '/'))
			plain = false;
	if (plain) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		const unsigned char *u = (const unsigned char *)s;

		/* Escaped: what a double-quoted YAML scalar may not hold as it is
		 * (C0 and C1 controls, DEL, the non-characters U+FFFE and U+FFFF)
		 * or would read back otherwise (NEL, the line and paragraph
		 * separators fold like line breaks; a BOM is dropped). */
		if (u[0] == '"' || u[0] == '\\')
			fprintf(f, "\\%c", u[0]);
		else if (u[0] < 0x20 || u[0] == 0x7f)
			fprintf(f, "\\x%02x", u[0]);
		else if (u[0] == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f) {
			fprintf(f, "\\x%02x", u[1]); /* U+0080..U+009F */
			s += 1;
		} else if (u[0] == 0xe2 && u[1] == 0x80 && (u[2] == 0xa8 || u[2] == 0xa9)) {
			fputs(u[2] == 0xa8 ? "\\u2028" : "\\u2029", f);
			s += 2;
		} else if (u[0] == 0xef && u[1] == 0xbb && u[2] == 0xbf) {
			fputs("\\ufeff", f);
			s += 2;
		} else if (u[0] == 0xef && u[1] == 0xbf && (u[2] == 0xbe || u[2] == 0xbf)) {
			fputs(u[2] == 0xbe ? "\\ufffe" : "\\uffff", f);
			s += 2;
		} else {
			fputc(u[0], f);
		}
	}
	fputc('"', f);
}

/* A path: '$' doubled so that reloading does not expand it again. */
void cfg_print_path(FILE *f, const char *s)
{
	size_t n = strlen(s), dollars = 0;
	char *esc;

	for (size_t i = 0; i < n; i++)
		dollars += s[i] == '$';
	esc = malloc(n + dollars + 1);
	if (!esc) {
		cfg_print_str(f, s);
		return;
	}
	for (size_t i = 0, j = 0; i <= n; i++) {
		esc[j++] = s[i];
		if (s[i] == '$')
			esc[j++] = '$';
	}
	cfg_print_str(f, esc);
	free(esc);
}

static void *field(const struct key *k, void *base)
{
	return (char *)base + k->off;
}

const void *cfg_cfield(const struct key *k, const void *base)
{
	return (const char *)base + k->off;
}

/* "a, b or c" from a NULL-terminated list, for messages and the manual. */
void cfg_enum_word(const char *const *names, char *buf, size_t len)
{
	size_t n = 0, w = 0;

	while (names[n])
		n++;
	buf[0] = '\0';
	for (size_t i = 0; i < n && w < len; i++)
		w += (size_t)snprintf(buf + w, len - w, "%s%s",
				      i == 0	   ? ""
				      : i == n - 1 ? " or "
						   : ", ",
				      names[i]);
}

/* NULL and "" alike: a path that is not set. */
bool cfg_str_same(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

static bool same_bytes(const struct key *k, const void *a, const void *b, const struct config *ac,
		       const struct config *bc)
{
	(void)ac;
	(void)bc;
	return memcmp(cfg_cfield(k, a), cfg_cfield(k, b), k->size) == 0;
}

static bool same_chars(const struct key *k, const void *a, const void *b, const struct config *ac,
		       const struct config *bc)
{
	(void)ac;
	(void)bc;
	return strcmp(cfg_cfield(k, a), cfg_cfield(k, b)) == 0;
}

/* ---- types: names ---- */

static int parse_name(struct parser *p, const struct key *k, const yaml_node_t *v, struct item *it)
{
	return cfg_get_name(p, v, it->sec->noun, field(k, it->base));
}

static void print_chars(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	(void)c;
	fputc(' ', f);
	cfg_print_str(f, cfg_cfield(k, base));
	fputc('\n', f);
}

const struct key_type type_name = {"name", parse_name, print_chars, same_chars, NULL};

/* ---- types: numbers ---- */

/* A size from min to max; a min of 0 reads "at most max". */
static int parse_size(struct parser *p, const struct key *k, const yaml_node_t *v, struct item *it)
{
	uint64_t *out = field(k, it->base);
	char a[32], lim[32];
	int r;

	r = cfg_get_size(p, v, k->name, &words_size, out);
	if (r < 0 || k->min)
		return r < 0 ? r
			     : cfg_check_range(p, v, k->name, *out, (uint64_t)k->min,
					       (uint64_t)k->max, false);
	if (*out <= (uint64_t)k->max)
		return 0;
	cfg_format_size((uint64_t)k->max, lim, sizeof(lim));
	cfg_format_size(*out, a, sizeof(a));
	return fail_at(p, v, "'%s' must be at most %s, got %s", k->name, lim, a);
}

static void print_size(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	char buf[32];

	(void)c;
	cfg_format_size(*(const uint64_t *)cfg_cfield(k, base), buf, sizeof(buf));
	fprintf(f, " %s\n", buf);
}

const struct key_type type_size = {"size", parse_size, print_size, same_bytes, NULL};

/* A size per second: 0 (no limit), or from min to max. */
static int parse_rate(struct parser *p, const struct key *k, const yaml_node_t *v, struct item *it)
{
	uint64_t *out = field(k, it->base);
	char a[32], lim[32];
	int r;

	r = cfg_get_rate(p, v, k->name, out);
	if (r < 0)
		return r;
	cfg_format_size(*out, a, sizeof(a));
	if (*out > (uint64_t)k->max) {
		cfg_format_size((uint64_t)k->max, lim, sizeof(lim));
		return fail_at(p, v, "'%s' must be at most %s/s, got %s/s", k->name, lim, a);
	}
	if (*out && *out < (uint64_t)k->min) {
		cfg_format_size((uint64_t)k->min, lim, sizeof(lim));
		return fail_at(p, v, "'%s' must be at least %s/s, or 0 for no limit, got %s/s",
			       k->name, lim, a);
	}
	return 0;
}

static void print_rate(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	uint64_t v = *(const uint64_t *)cfg_cfield(k, base);
	char buf[32];

	(void)c;
	cfg_format_size(v, buf, sizeof(buf));
	fprintf(f, " %s%s\n", buf, v ? "/s" : "");
}

const struct key_type type_rate = {"size per second", parse_rate, print_rate, same_bytes, NULL};

/* A duration from min to max. */
static int parse_duration(struct parser *p, const struct key *k, const yaml_node_t *v,
			  struct item *it)
{
	uint64_t *out = field(k, it->base);
	int r;

	r = cfg_get_duration(p, v, k->name, out);
	if (r < 0)
		return r;
	return cfg_check_range(p, v, k->name, *out, (uint64_t)k->min, (uint64_t)k->max, true);
}

static void print_duration(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	char buf[32];

	(void)c;
	cfg_format_duration(*(const uint64_t *)cfg_cfield(k, base), buf, sizeof(buf));
	fprintf(f, " %s\n", buf);
}

const struct key_type type_duration = {"duration", parse_duration, print_duration, same_bytes,
				       NULL};

/* A duration from min to max, or "auto" (CFG_SLOW_FLOOR_AUTO: the value is
 * derived from what is measured). */
static int parse_duration_auto(struct parser *p, const struct key *k, const yaml_node_t *v,
			       struct item *it)
{
	if (v->type == YAML_SCALAR_NODE && v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	    strcmp((const char *)v->data.scalar.value, "auto") == 0) {
		*(uint64_t *)field(k, it->base) = CFG_SLOW_FLOOR_AUTO;
		return 0;
	}
	return parse_duration(p, k, v, it);
}

static void print_duration_auto(FILE *f, const struct key *k, const void *base,
				const struct config *c)
{
	if (*(const uint64_t *)cfg_cfield(k, base) == CFG_SLOW_FLOOR_AUTO)
		fputs(" auto\n", f);
	else
		print_duration(f, k, base, c);
}

const struct key_type type_duration_auto = {"duration or auto", parse_duration_auto,
					    print_duration_auto, same_bytes, NULL};

/* A duration of whole minutes from min to max. */
static int parse_minutes(struct parser *p, const struct key *k, const yaml_node_t *v,
			 struct item *it)
{
	uint64_t *out = field(k, it->base);
	char got[32];
	int r;

	r = parse_duration(p, k, v, it);
	if (r < 0 || *out % (60 * 1000000000ULL) == 0)
		return r;
	cfg_format_duration(*out, got, sizeof(got));
	return fail_at(p, v, "'%s' must be whole minutes, as in 10m or 1h30m, got %s", k->name,
		       got);
}

const struct key_type type_minutes = {"duration", parse_minutes, print_duration, same_bytes, NULL};

/* A number over min (not min itself: a factor of 1 is no change), at most max. */
static int parse_factor(struct parser *p, const struct key *k, const yaml_node_t *v,
			struct item *it)
{
	double *out = field(k, it->base);
	char got[32];
	int r;

	r = cfg_get_number(p, v, k->name, out);
	if (r < 0 || (*out > (double)k->min && *out <= (double)k->max))
		return r;
	cfg_format_number(*out, got, sizeof(got));
	return fail_at(p, v, "'%s' must be over %lld and at most %lld, got %s", k->name,
		       (long long)k->min, (long long)k->max, got);
}

static void print_number(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	char buf[32];

	(void)c;
	cfg_format_number(*(const double *)cfg_cfield(k, base), buf, sizeof(buf));
	fprintf(f, " %s\n", buf);
}

const struct key_type type_factor = {"number", parse_factor, print_number, same_bytes, NULL};

/* A count from min to max, into an unsigned or a uint64_t field. */
static int parse_count(struct parser *p, const struct key *k, const yaml_node_t *v, struct item *it)
{
	uint64_t n = 0;
	unsigned u;
	int r;

	r = cfg_get_uint(p, v, k->name, &n);
	if (r == 0)
		r = cfg_check_count(p, v, k->name, n, (uint64_t)k->min, (uint64_t)k->max);
	u = (unsigned)n;
	memcpy(field(k, it->base), k->size == sizeof(u) ? (void *)&u : (void *)&n, k->size);
	return r;
}

static void print_count(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	uint64_t n = 0;
	unsigned u = 0;

	(void)c;
	if (k->size == sizeof(u)) {
		memcpy(&u, cfg_cfield(k, base), sizeof(u));
		n = u;
	} else {
		memcpy(&n, cfg_cfield(k, base), sizeof(n));
	}
	fprintf(f, " %llu\n", (unsigned long long)n);
}

const struct key_type type_count = {"whole number", parse_count, print_count, same_bytes, NULL};

static int parse_int(struct parser *p, const struct key *k, const yaml_node_t *v, struct item *it)
{
	return cfg_get_int(p, v, k->name, (long)k->min, (long)k->max, field(k, it->base));
}

static void print_int(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	(void)c;
	fprintf(f, " %d\n", *(const int *)cfg_cfield(k, base));
}

const struct key_type type_int = {"whole number, may be negative", parse_int, print_int, same_bytes,
				  NULL};

/* A percentage from 0% to 100%, as a fraction. */
static int parse_percent(struct parser *p, const struct key *k, const yaml_node_t *v,
			 struct item *it)
{
	return cfg_get_percent(p, v, k->name, 1.0, "70%", field(k, it->base));
}

static void print_percent(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	char buf[32];

	(void)c;
	cfg_format_percent(*(const double *)cfg_cfield(k, base), buf, sizeof(buf));
	fprintf(f, " %s\n", buf);
}

const struct key_type type_percent = {"percentage", parse_percent, print_percent, same_bytes, NULL};

/* ---- types: booleans and enums ---- */

static int parse_bool(struct parser *p, const struct key *k, const yaml_node_t *v, struct item *it)
{
	return cfg_get_bool(p, v, k->name, field(k, it->base));
}

static void print_bool(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	(void)c;
	fprintf(f, " %s\n", *(const bool *)cfg_cfield(k, base) ? "true" : "false");
}

const struct key_type type_bool = {"boolean", parse_bool, print_bool, same_bytes, NULL};

/* One of the row's names, stored as its index into an enum field. */
static int parse_enum(struct parser *p, const struct key *k, const yaml_node_t *v, struct item *it)
{
	char expect[128];
	unsigned e = 0;
	int r;

	_Static_assert(sizeof(enum cfg_rw) == sizeof(unsigned), "enum fields are unsigned");
	cfg_enum_word(k->names, expect, sizeof(expect));
	r = cfg_get_enum(p, v, k->name, k->names, expect, &e);
	memcpy(field(k, it->base), &e, sizeof(e));
	return r;
}

static void print_enum(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	unsigned e;

	(void)c;
	memcpy(&e, cfg_cfield(k, base), sizeof(e));
	fprintf(f, " %s\n", k->names[e]);
}

const struct key_type type_enum = {NULL, parse_enum, print_enum, same_bytes, NULL};

/* As an enum, kept as the name: the engines look their name up themselves. */
static int parse_engine(struct parser *p, const struct key *k, const yaml_node_t *v,
			struct item *it)
{
	char expect[128];
	unsigned e = 0;
	int r;

	/* The null engine, not YAML's null: nothing else could be meant here. */
	if (cfg_scalar_is(v, "null")) {
		strcpy(field(k, it->base), "null");
		return 0;
	}
	cfg_enum_word(k->names, expect, sizeof(expect));
	r = cfg_get_enum(p, v, k->name, k->names, expect, &e);
	if (r == 0)
		strcpy(field(k, it->base), k->names[e]);
	return r;
}

const struct key_type type_engine = {NULL, parse_engine, print_chars, same_chars, NULL};

/* 'io_priority': none, idle, best-effort:N or realtime:N, kept as ioprio_set(2)'s value. */
static int parse_io_priority(struct parser *p, const struct key *k, const yaml_node_t *v,
			     struct item *it)
{
	const char *s = NULL;
	int r = cfg_get_scalar(p, v, k->name, "none, idle, best-effort:N or realtime:N", &s);

	if (r < 0)
		return r;
	r = ioprio_parse(s, field(k, it->base));
	if (r == -ERANGE)
		return fail_at(p, v, "'%s': the level of '%s' must be 0 (highest) to 7", k->name,
			       s);
	if (r < 0)
		return fail_at(p, v,
			       "'%s' must be none, idle, best-effort:N or realtime:N (N 0 to 7), "
			       "got '%s'",
			       k->name, s);
	return 0;
}

static void print_io_priority(FILE *f, const struct key *k, const void *base,
			      const struct config *c)
{
	char buf[IOPRIO_TEXT_MAX];

	(void)c;
	fprintf(f, " %s\n", ioprio_format(*(const int *)cfg_cfield(k, base), buf, sizeof(buf)));
}

const struct key_type type_io_priority = {"none, idle, best-effort:N or realtime:N",
					  parse_io_priority, print_io_priority, same_bytes, NULL};
