/* SPDX-License-Identifier: MIT */
/*
 * config — YAML schedule -> validated, immutable struct config.
 *
 * libyaml's document API builds the node tree with source marks; we walk it
 * once, in document order, and stop at the first error. Checks that need the
 * whole file (a probe's target must exist, a write probe must not point at a
 * file target, nor at a device target without 'allow_device_writes') run after
 * the walk, in probe order. Checks between the keys of one item (exactly one
 * kind of target, 'duration' or 'ios') run after that item's walk.
 *
 * Which probe keys are valid depends on 'type', which may come last: it is
 * looked up before the walk, so that a burst key on a ping is reported where
 * it is written.
 *
 * Every scalar is read as a string whatever its implicit YAML tag, so
 * "name: 123" is the name "123"; only plain true/false are booleans and only
 * plain "", "~" and "null" count as a missing value.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "config/config.h"
#include "config/default_buckets.h"

#define CFG_FILE_MAX	   (1U << 20) /* largest configuration file we read */
#define CFG_FILE_MAX_NAME  "1 MiB"    /* CFG_FILE_MAX, for messages */
#define CFG_DEFAULT_SOURCE "<embedded default>"

static const uint64_t default_buckets_ns[] = CFG_DEFAULT_BUCKETS_NS;

/* ---- parser state and errors --------------------------------------------- */

struct probe_refs {
	const yaml_node_t *target; /* value node of 'target' */
	const yaml_node_t *writes; /* value node of 'op' (ping) or 'rw' (burst), or NULL */
	const yaml_node_t *ws;	   /* value node of 'working_set', NULL when defaulted */
	const yaml_node_t *bs;	   /* value node of 'block_size', NULL when defaulted */
	const yaml_node_t *item;
};

struct parser {
	const char *name;
	struct cfg_error *err;
	yaml_document_t *doc;
	struct config *c;
	struct probe_refs *refs;
};

__attribute__((format(printf, 3, 4))) static int fail_at(struct parser *p, const yaml_node_t *n,
							 const char *fmt, ...)
{
	char *msg = p->err->msg;
	size_t size = sizeof(p->err->msg);
	va_list ap;
	int w;

	if (n)
		w = snprintf(msg, size, "%s:%zu:%zu: ", p->name, n->start_mark.line + 1,
			     n->start_mark.column + 1);
	else
		w = snprintf(msg, size, "%s: ", p->name);
	if (w < 0 || (size_t)w >= size)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(msg + w, size - (size_t)w, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static yaml_node_t *node_get(struct parser *p, int index)
{
	return yaml_document_get_node(p->doc, index);
}

static const char *node_str(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* "a list", "a mapping", "'text'" — what the user wrote, for "got ..." */
static const char *node_kind(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_MAPPING_NODE:
		return "a mapping";
	default:
		return "a string";
	}
}

/*
 * Whether @n is a scalar holding exactly @lit. By length, not as a C string:
 * "null\0x" (a NUL byte in double quotes) is not "null".
 */
static bool scalar_is(const yaml_node_t *n, const char *lit)
{
	size_t len = strlen(lit);

	return n->type == YAML_SCALAR_NODE && n->data.scalar.length == len &&
	       !memcmp(n->data.scalar.value, lit, len);
}

static bool node_is_null(const yaml_node_t *n)
{
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	return scalar_is(n, "") || scalar_is(n, "~") || scalar_is(n, "null") ||
	       scalar_is(n, "Null") || scalar_is(n, "NULL");
}

/*
 * A scalar holding a NUL byte ("a\0b" in double quotes): as a C string it would
 * silently end there, so every value and key is checked for one.
 */
static bool node_has_nul(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE &&
	       memchr(n->data.scalar.value, '\0', n->data.scalar.length);
}

/* The value of a key that must be a scalar; @what is "a duration", "a string", ... */
static int get_scalar(struct parser *p, const yaml_node_t *n, const char *key, const char *what,
		      const char **out)
{
	if (n->type != YAML_SCALAR_NODE)
		return fail_at(p, n, "'%s' must be %s, got %s", key, what, node_kind(n));
	if (node_has_nul(n))
		return fail_at(p, n, "'%s' must not contain a NUL byte (\\0)", key);
	if (node_is_null(n))
		return fail_at(p, n, "missing value for '%s'", key);
	*out = node_str(n);
	return 0;
}

/* ---- suggestions ------------------------------------------------------------ */

/* Optimal string alignment distance: edits plus adjacent transpositions. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t d[CFG_NAME_MAX + 1][CFG_NAME_MAX + 1];

	if (la > CFG_NAME_MAX || lb > CFG_NAME_MAX)
		return SIZE_MAX;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t v = d[i - 1][j] + 1;

			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

/* Is @cand close enough to @s to be what the user meant? */
static bool is_close(const char *s, const char *cand)
{
	size_t ls = strlen(s), lc = strlen(cand);
	size_t limit = (ls > lc ? ls : lc) / 3;

	if (limit < 1)
		limit = 1;
	if (limit > 3)
		limit = 3;
	return edit_distance(s, cand) <= limit;
}

/* ---- mappings with a fixed set of keys -------------------------------------- */

#define KEYS_MAX 32 /* keys a mapping may have: bits of a uint32_t mask */

/*
 * Walks the pairs of mapping @m whose keys must come from @keys (NULL-terminated,
 * at most KEYS_MAX). Calls @fn(p, index, key, value, ctx) for each pair in document order.
 * Unknown and duplicate keys are errors at the key.
 */
typedef int (*pair_fn)(struct parser *p, unsigned key, const yaml_node_t *knode,
		       const yaml_node_t *value, void *ctx);

/* The error for a key of the schema that is not valid here (at @knode). */
typedef int (*misplaced_fn)(struct parser *p, unsigned key, const yaml_node_t *knode, void *ctx);

/*
 * As walk_mapping(), where only the keys whose bit is set in @valid may appear
 * (probes of one kind): a known key outside it is reported by @misplaced, and
 * suggestions and the list of valid keys for an unknown key come from @valid only.
 */
static int walk_mapping_valid(struct parser *p, const yaml_node_t *m, const char *where,
			      const char *const *keys, uint32_t valid, misplaced_fn misplaced,
			      pair_fn fn, void *ctx)
{
	const yaml_node_t *seen[KEYS_MAX] = {0};

	for (yaml_node_pair_t *pair = m->data.mapping.pairs.start; pair < m->data.mapping.pairs.top;
	     pair++) {
		const yaml_node_t *k = node_get(p, pair->key);
		const yaml_node_t *v = node_get(p, pair->value);
		const char *ks;
		unsigned i;
		int r;

		if (k->type != YAML_SCALAR_NODE)
			return fail_at(p, k, "keys %s must be strings, got %s", where,
				       node_kind(k));
		if (node_has_nul(k))
			return fail_at(p, k, "keys %s must not contain a NUL byte (\\0)", where);
		ks = node_str(k);
		for (i = 0; keys[i]; i++)
			if (scalar_is(k, keys[i]))
				break;
		if (!keys[i]) {
			char list[512] = "";
			bool first = true;

			for (i = 0; keys[i]; i++)
				if ((valid >> i & 1) && is_close(ks, keys[i]))
					return fail_at(p, k,
						       "unknown key '%s' %s, did you mean '%s'?",
						       ks, where, keys[i]);
			for (i = 0; keys[i]; i++) {
				if (!(valid >> i & 1))
					continue;
				strncat(list, first ? "" : ", ", sizeof(list) - strlen(list) - 1);
				strncat(list, keys[i], sizeof(list) - strlen(list) - 1);
				first = false;
			}
			return fail_at(p, k, "unknown key '%s' %s (valid keys: %s)", ks, where,
				       list);
		}
		if (seen[i])
			return fail_at(p, k, "duplicate key '%s' %s (first defined at line %zu)",
				       ks, where, seen[i]->start_mark.line + 1);
		seen[i] = k;
		if (!(valid >> i & 1) && misplaced)
			return misplaced(p, i, k, ctx);
		r = fn(p, i, k, v, ctx);
		if (r < 0)
			return r;
	}
	return 0;
}

static int walk_mapping(struct parser *p, const yaml_node_t *m, const char *where,
			const char *const *keys, pair_fn fn, void *ctx)
{
	return walk_mapping_valid(p, m, where, keys, UINT32_MAX, NULL, fn, ctx);
}

/* ---- typed values ----------------------------------------------------------- */

static int get_bool(struct parser *p, const yaml_node_t *n, const char *key, bool *out)
{
	const char *s = NULL;
	int r;

	r = get_scalar(p, n, key, "true or false", &s);
	if (r < 0)
		return r;
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return fail_at(p, n, "'%s' must be true or false without quotes, got '%s'", key, s);
	/* Only the two spellings everyone reads the same way: no yes/no/on/off. */
	if (scalar_is(n, "true"))
		*out = true;
	else if (scalar_is(n, "false"))
		*out = false;
	else
		return fail_at(p, n, "'%s' must be true or false, got '%s'", key, s);
	return 0;
}

/* "64MB", "1kb" in @s[0..len): a number, then a k/m/g/t and a B; in @unit the two letters. */
static bool size_is_ambiguous(const char *s, size_t len, char unit[3])
{
	if (len >= 3 && (s[len - 1] == 'B' || s[len - 1] == 'b') &&
	    strchr("kKmMgGtT", s[len - 2]) && s[len - 3] >= '0' && s[len - 3] <= '9') {
		unit[0] = s[len - 2];
		unit[1] = s[len - 1];
		unit[2] = '\0';
		return true;
	}
	return false;
}

/*
 * "4kib", "64MIB" in @s[0..n): a number, then k/m/g/t and "ib" in any case but
 * the IEC one; in @fixed the IEC spelling ("4KiB").
 */
static bool size_is_miscased(const char *s, size_t n, char *fixed, size_t len)
{
	size_t digits = strspn(s, "0123456789");

	if (!digits || n != digits + 3 || !strchr("kKmMgGtT", s[digits]) ||
	    (s[digits + 1] != 'i' && s[digits + 1] != 'I') ||
	    (s[digits + 2] != 'b' && s[digits + 2] != 'B'))
		return false;
	snprintf(fixed, len, "%.*s%ciB", (int)digits, s, s[digits] & ~0x20);
	return true;
}

/* How the messages of size_error() name a size-like value. */
struct size_words {
	const char *noun;      /* "invalid <noun> '64MB' for ...": "size", "rate" */
	const char *suffix;    /* after the number and unit: "" or "/s" */
	const char *per;       /* after "a number of bytes": "" or " per second" */
	const char *hint_noun; /* the noun when no unit is to blame */
	const char *hint;      /* then, what was expected */
};

static const struct size_words words_size = {
	.noun = "size",
	.suffix = "",
	.per = "",
	.hint_noun = "size",
	.hint = "expected bytes or a number with a unit (k, m, g, t, KiB, MiB, GiB, TiB)",
};
static const struct size_words words_rate = {
	.noun = "rate",
	.suffix = "/s",
	.per = " per second",
	.hint_noun = "rate",
	.hint = "expected a size per second, as in 32MiB/s, or 0 for no limit",
};
/* 'keep_free' that is not a percentage: a size, or what the user meant. */
static const struct size_words words_keep_free = {
	.noun = "size",
	.suffix = "",
	.per = "",
	.hint_noun = "value",
	.hint = "expected a size, as in 2GiB, or a percentage of the filesystem, as in 5%",
};

/* The length of @s without @suffix where it ends in it: 4 for "32MB/s" and "/s". */
static size_t len_without(const char *s, const char *suffix)
{
	size_t len = strlen(s), sl = strlen(suffix);

	return len >= sl && !strcmp(s + len - sl, suffix) ? len - sl : len;
}

/*
 * The message for cfg_parse_size() failing with @r on @s, less the suffix of
 * @w where @s ends in it; @what is "'size'", ...
 */
static int size_error(struct parser *p, const yaml_node_t *n, const char *what, const char *s,
		      int r, const struct size_words *w)
{
	size_t len = len_without(s, w->suffix);
	char unit[3], fixed[64];

	if (r == -ERANGE)
		return fail_at(p, n, "invalid %s '%s' for %s: too large", w->noun, s, what);
	if (size_is_ambiguous(s, len, unit))
		return fail_at(p, n,
			       "invalid %s '%s' for %s: '%s' is ambiguous, write '%ciB%s' "
			       "(binary, 1024-based) or a number of bytes%s",
			       w->noun, s, what, unit, unit[0] & ~0x20, w->suffix, w->per);
	if (size_is_miscased(s, len, fixed, sizeof(fixed)))
		return fail_at(p, n,
			       "invalid %s '%s' for %s: write '%s%s' (binary units are KiB, MiB, "
			       "GiB and TiB, or k, m, g and t)",
			       w->noun, s, what, fixed, w->suffix);
	return fail_at(p, n, "invalid %s '%s' for %s: %s", w->hint_noun, s, what, w->hint);
}

/* A size; @w names it in messages (&words_size but for 'keep_free'). */
static int get_size(struct parser *p, const yaml_node_t *n, const char *key,
		    const struct size_words *w, uint64_t *out)
{
	char what[64];
	const char *s = NULL;
	int r;

	r = get_scalar(p, n, key, "a size", &s);
	if (r < 0)
		return r;
	r = cfg_parse_size(s, out);
	if (r < 0) {
		snprintf(what, sizeof(what), "'%s'", key);
		return size_error(p, n, what, s, r, w);
	}
	return 0;
}

/* A size per second: "32MiB/s", or a size alone ("32MiB", "0"). */
static int get_rate(struct parser *p, const yaml_node_t *n, const char *key, uint64_t *out)
{
	char what[64], *num;
	const char *s = NULL;
	int r;

	r = get_scalar(p, n, key, "a size per second", &s);
	if (r < 0)
		return r;
	num = strndup(s, len_without(s, words_rate.suffix));
	if (!num)
		return -ENOMEM;
	r = cfg_parse_size(num, out);
	free(num);
	if (r < 0) {
		snprintf(what, sizeof(what), "'%s'", key);
		return size_error(p, n, what, s, r, &words_rate);
	}
	return 0;
}

/* A count: plain decimal digits, as "iodepth: 32". */
static int get_uint(struct parser *p, const yaml_node_t *n, const char *key, uint64_t *out)
{
	const char *s = NULL, *q;
	int r;

	r = get_scalar(p, n, key, "a whole number", &s);
	if (r < 0)
		return r;
	r = cfg_parse_uint(s, out);
	if (r == -ERANGE)
		return fail_at(p, n, "invalid number '%s' for '%s': too large", s, key);
	if (r == 0)
		return 0;
	if (s[0] == '-' || s[0] == '+')
		return fail_at(p, n,
			       "invalid number '%s' for '%s': write a whole number without "
			       "a sign, as in 32",
			       s, key);
	for (q = s; *q >= '0' && *q <= '9'; q++)
		;
	if (q > s && *q == '.')
		return fail_at(p, n,
			       "invalid number '%s' for '%s': must be a whole number, not a "
			       "fraction",
			       s, key);
	if (q > s && strspn(q, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == strlen(q))
		return fail_at(p, n,
			       "invalid number '%s' for '%s': write a plain number, without "
			       "a unit",
			       s, key);
	return fail_at(p, n, "invalid number '%s' for '%s': expected a whole number, as in 32", s,
		       key);
}

/* As check_range(), for counts: printed as plain numbers. */
static int check_count(struct parser *p, const yaml_node_t *n, const char *key, uint64_t v,
		       uint64_t lo, uint64_t hi)
{
	if (v >= lo && v <= hi)
		return 0;
	return fail_at(p, n, "'%s' must be between %llu and %llu, got %llu", key,
		       (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)v);
}

/* A percentage from 0% to @max (a fraction); @example ("70%") is for the message. */
static int get_percent(struct parser *p, const yaml_node_t *n, const char *key, double max,
		       const char *example, double *out)
{
	char max_s[32];
	const char *s = NULL;
	int r;

	r = get_scalar(p, n, key, "a percentage", &s);
	if (r < 0)
		return r;
	r = cfg_parse_percent(s, out);
	if (r == 0 && *out > max)
		r = -ERANGE;
	if (r == -ERANGE) {
		cfg_format_percent(max, max_s, sizeof(max_s));
		return fail_at(p, n, "invalid percentage '%s' for '%s': must be between 0%% and %s",
			       s, key, max_s);
	}
	if (r < 0)
		return fail_at(p, n,
			       "invalid percentage '%s' for '%s': expected a number and %%, "
			       "as in %s or 12.5%%",
			       s, key, example);
	return 0;
}

static int get_duration(struct parser *p, const yaml_node_t *n, const char *key, uint64_t *out)
{
	const char *s = NULL;
	bool number = true;
	int r;

	r = get_scalar(p, n, key, "a duration", &s);
	if (r < 0)
		return r;
	r = cfg_parse_duration(s, out);
	if (r == -ERANGE)
		return fail_at(p, n, "invalid duration '%s' for '%s': too large", s, key);
	if (r == -EDOM)
		return fail_at(p, n,
			       "invalid duration '%s' for '%s': write each unit once, largest "
			       "first, as in 1h30m or 1s500ms",
			       s, key);
	if (r < 0) {
		for (const char *q = s; *q; q++)
			if (!((*q >= '0' && *q <= '9') || *q == '.'))
				number = false;
		return fail_at(p, n, "invalid duration '%s' for '%s': %s", s, key,
			       number ? "missing unit (ns, us, ms, s, m, h, d)"
				      : "expected a number and a unit, as in 500ms, 10s or 1m30s "
					"(units: ns, us, ms, s, m, h, d)");
	}
	return 0;
}

static int check_range(struct parser *p, const yaml_node_t *n, const char *key, uint64_t v,
		       uint64_t lo, uint64_t hi, bool is_duration)
{
	char a[32], b[32], c[32];
	void (*fmt)(uint64_t, char *, size_t) = is_duration ? cfg_format_duration : cfg_format_size;

	if (v >= lo && v <= hi)
		return 0;
	fmt(lo, a, sizeof(a));
	fmt(hi, b, sizeof(b));
	fmt(v, c, sizeof(c));
	return fail_at(p, n, "'%s' must be between %s and %s, got %s", key, a, b, c);
}

/* One of @names (NULL-terminated); @expect is the list for the message. */
static int get_enum(struct parser *p, const yaml_node_t *n, const char *key,
		    const char *const *names, const char *expect, unsigned *out)
{
	const char *s = NULL;
	int r;

	r = get_scalar(p, n, key, "a string", &s);
	if (r < 0)
		return r;
	for (unsigned i = 0; names[i]; i++) {
		if (scalar_is(n, names[i])) {
			*out = i;
			return 0;
		}
	}
	return fail_at(p, n, "invalid value '%s' for '%s': expected %s", s, key, expect);
}

static bool name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n >= CFG_NAME_MAX)
		return false;
	for (; *s; s++) {
		char c = *s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

static int get_name(struct parser *p, const yaml_node_t *n, const char *what, char *out)
{
	const char *s = NULL;
	int r;

	r = get_scalar(p, n, "name", "a string", &s);
	if (r < 0)
		return r;
	if (!name_valid(s))
		return fail_at(
			p, n, "invalid %s name '%s': use 1 to %d characters from A-Z a-z 0-9 _ . -",
			what, s, CFG_NAME_MAX - 1);
	strcpy(out, s);
	return 0;
}

/* ---- environment expansion ---------------------------------------------------- */

struct strbuf {
	char *s;
	size_t len, cap;
};

static int sb_add(struct strbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		char *ns;

		while (cap < b->len + n + 1)
			cap *= 2;
		ns = realloc(b->s, cap);
		if (!ns)
			return -ENOMEM;
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

static bool env_name_char(char c, bool first)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

/*
 * Expands ${NAME} and ${NAME:-fallback} (fallback when NAME is unset or empty,
 * taken literally) and "$$" as "$". Any other '$' is itself.
 */
static int expand_env(struct parser *p, const yaml_node_t *n, const char *key, const char *in,
		      char **out)
{
	struct strbuf b = {0};
	int r = 0;

	while (*in) {
		const char *name, *end, *fb = NULL, *val;
		size_t nlen;

		if (in[0] != '$' || (in[1] != '{' && in[1] != '$')) {
			size_t k = strcspn(in + 1, "$") + 1;

			r = sb_add(&b, in, k);
			in += k;
			goto next;
		}
		if (in[1] == '$') {
			r = sb_add(&b, "$", 1);
			in += 2;
			goto next;
		}
		name = in + 2;
		end = strchr(name, '}');
		if (!end) {
			r = fail_at(p, n, "unterminated '${' in '%s'", key);
			goto out;
		}
		for (nlen = 0; env_name_char(name[nlen], nlen == 0); nlen++)
			;
		if (name == end) {
			r = fail_at(p, n,
				    "empty variable name '${}' in '%s': use ${NAME} or "
				    "${NAME:-fallback}, or $$ for a literal '$'",
				    key);
			goto out;
		}
		if (name + nlen != end) {
			if (nlen && name[nlen] == ':' && name[nlen + 1] == '-')
				fb = name + nlen + 2;
			else {
				r = fail_at(p, n,
					    "invalid variable reference '%.*s' in '%s': use "
					    "${NAME} or ${NAME:-fallback}",
					    (int)(end - in + 1), in, key);
				goto out;
			}
		}
		{
			char var[256];

			if (nlen >= sizeof(var)) {
				r = fail_at(p, n, "variable name too long in '%s'", key);
				goto out;
			}
			memcpy(var, name, nlen);
			var[nlen] = '\0';
			val = getenv(var);
			if (fb && (!val || !*val))
				r = sb_add(&b, fb, (size_t)(end - fb));
			else if (!val) {
				r = fail_at(p, n,
					    "environment variable '%s' used in '%s' is not set "
					    "(write ${%s:-fallback} to give a default)",
					    var, key, var);
				goto out;
			} else
				r = sb_add(&b, val, strlen(val));
		}
		in = end + 1;
	next:
		if (r < 0) {
			r = fail_at(p, n, "out of memory expanding '%s'", key);
			r = -ENOMEM;
			goto out;
		}
	}
	if (!b.s && sb_add(&b, "", 0) < 0) {
		r = fail_at(p, n, "out of memory expanding '%s'", key);
		r = -ENOMEM;
		goto out;
	}
	*out = b.s;
	return 0;
out:
	free(b.s);
	return r;
}

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

static int parse_listen(struct parser *p, const yaml_node_t *n)
{
	struct config *c = p->c;
	char host[sizeof(c->listen_host)];
	const char *s = NULL;
	uint16_t port = 0;
	int r;

	r = get_scalar(p, n, "listen", "a string", &s);
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

static int parse_buckets(struct parser *p, const yaml_node_t *n)
{
	struct config *c = p->c;
	size_t count;

	if (n->type != YAML_SEQUENCE_NODE)
		return fail_at(p, n, "'buckets' must be a list of durations, got %s", node_kind(n));
	count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (count < 1)
		return fail_at(p, n, "'buckets' must not be empty");
	if (count > CFG_MAX_BUCKETS)
		return fail_at(p, n, "'buckets' has %zu items, at most %d are allowed", count,
			       CFG_MAX_BUCKETS);
	c->n_buckets = 0;
	for (size_t i = 0; i < count; i++) {
		const yaml_node_t *it = node_get(p, n->data.sequence.items.start[i]);
		uint64_t v;
		char a[32], b[32];
		int r;

		r = get_duration(p, it, "buckets", &v);
		if (r < 0)
			return r;
		if (v == 0)
			return fail_at(p, it, "'buckets' values must be greater than 0s");
		if (i && v <= c->buckets_ns[i - 1]) {
			cfg_format_duration(v, a, sizeof(a));
			cfg_format_duration(c->buckets_ns[i - 1], b, sizeof(b));
			return fail_at(p, it,
				       "'buckets' must be strictly ascending, got %s after %s", a,
				       b);
		}
		c->buckets_ns[i] = v;
		c->n_buckets++;
	}
	return 0;
}

/* ---- targets ------------------------------------------------------------------- */

enum {
	TK_NAME,
	TK_DIRECTORY,
	TK_FILE,
	TK_DEVICE,
	TK_SIZE,
	TK_LAYOUT_RATE,
	TK_KEEP_FREE,
	TK_REQUIRE_MOUNT,
	TK_DIRECT,
	TK_ALLOW_MEMORY_BACKED,
	TK_ALLOW_DEVICE_WRITES,
	TK_COUNT,
};
static const char *const target_keys[] = {
	"name",
	"directory",
	"file",
	"device",
	"size",
	"layout_rate",
	"keep_free",
	"require_mount",
	"direct",
	"allow_memory_backed",
	"allow_device_writes",
	NULL,
};

_Static_assert(TK_COUNT <= KEYS_MAX, "target keys must fit walk_mapping()");

struct target_ctx {
	struct cfg_target *t;
	const yaml_node_t *key[TK_COUNT];
	const yaml_node_t *value[TK_COUNT];
};

/*
 * A device path: under /dev/, with no ".." component to leave it. Nothing is
 * looked up: checking a configuration never touches the disk, so a device that
 * does not exist (yet) is the daemon's error, not the configuration's.
 */
static bool device_path_valid(const char *path)
{
	const char *q;

	if (strncmp(path, "/dev/", 5) || !path[5])
		return false;
	for (q = path + 5; *q; q += strcspn(q, "/"), q += *q == '/')
		if (!strncmp(q, "..", 2) && (q[2] == '/' || !q[2]))
			return false;
	return true;
}

/*
 * The value @s of path key @key, environment-expanded into @out (what was there
 * is freed): at most PATH_MAX - 1 bytes. When it is longer, @out holds it still.
 */
static int get_path(struct parser *p, const yaml_node_t *n, const char *key, const char *s,
		    char **out)
{
	int r;

	free(*out);
	*out = NULL;
	r = expand_env(p, n, key, s, out);
	if (r < 0)
		return r;
	if (strlen(*out) >= PATH_MAX)
		return fail_at(p, n, "'%s' is too long (at most %d bytes)", key, PATH_MAX - 1);
	return 0;
}

/*
 * 'require_mount': true, false, auto, or the mount point as an absolute path,
 * environment-expanded as the target's own path.
 */
static int get_require_mount(struct parser *p, const yaml_node_t *v, struct cfg_target *t)
{
	const char *s = NULL;
	bool self = false;
	int r;

	r = get_scalar(p, v, "require_mount", "true, false, auto or a path", &s);
	if (r < 0)
		return r;
	if (scalar_is(v, "auto")) {
		t->require_mount = CFG_MOUNT_AUTO;
		return 0;
	}
	if (scalar_is(v, "true") || scalar_is(v, "false")) {
		r = get_bool(p, v, "require_mount", &self);
		t->require_mount = self ? CFG_MOUNT_SELF : CFG_MOUNT_NO;
		return r;
	}
	/* A relative path is told as such even when it is also too long. */
	r = get_path(p, v, "require_mount", s, &t->mount_path);
	if (t->mount_path && t->mount_path[0] != '/')
		return fail_at(p, v,
			       "'require_mount' must be true, false, auto or the absolute path of "
			       "a mount point, got '%s'",
			       t->mount_path);
	if (r < 0)
		return r;
	t->require_mount = CFG_MOUNT_PATH;
	return 0;
}

/* 'keep_free': a size, or a percentage of the filesystem up to 90%; 0 keeps nothing. */
static int get_keep_free(struct parser *p, const yaml_node_t *v, struct cfg_target *t)
{
	const char *s = NULL;
	int r;

	r = get_scalar(p, v, "keep_free", "a size or a percentage", &s);
	if (r < 0)
		return r;
	if (*s && s[strlen(s) - 1] == '%') {
		t->keep_free_bytes = 0;
		return get_percent(p, v, "keep_free", CFG_MAX_KEEP_FREE_FRACTION, "5%",
				   &t->keep_free_fraction);
	}
	t->keep_free_fraction = 0;
	return get_size(p, v, "keep_free", &words_keep_free, &t->keep_free_bytes);
}

static int target_pair(struct parser *p, unsigned key, const yaml_node_t *knode,
		       const yaml_node_t *v, void *ctx)
{
	static const enum cfg_target_kind kinds[] = {
		[TK_DIRECTORY] = CFG_TARGET_DIRECTORY,
		[TK_FILE] = CFG_TARGET_FILE,
		[TK_DEVICE] = CFG_TARGET_DEVICE,
	};
	struct target_ctx *tc = ctx;
	struct cfg_target *t = tc->t;
	const char *s = NULL;
	int r;

	tc->key[key] = knode;
	tc->value[key] = v;
	switch (key) {
	case TK_NAME:
		return get_name(p, v, "target", t->name);
	case TK_DIRECTORY:
	case TK_FILE:
	case TK_DEVICE:
		r = get_scalar(p, v, target_keys[key], "a path", &s);
		if (r == 0)
			r = get_path(p, v, target_keys[key], s, &t->path);
		if (r < 0)
			return r;
		if (!*t->path)
			return fail_at(p, v, "'%s' must not be empty", target_keys[key]);
		if (key == TK_DEVICE && !device_path_valid(t->path))
			return fail_at(p, v,
				       "'device' must be a block device under /dev/, as in "
				       "/dev/sdb or /dev/disk/by-id/..., got '%s'",
				       t->path);
		t->kind = kinds[key];
		return 0;
	case TK_SIZE:
		r = get_size(p, v, "size", &words_size, &t->size);
		if (r < 0)
			return r;
		return check_range(p, v, "size", t->size, CFG_MIN_TARGET_SIZE, CFG_MAX_TARGET_SIZE,
				   false);
	case TK_LAYOUT_RATE:
		r = get_rate(p, v, "layout_rate", &t->layout_rate);
		if (r < 0)
			return r;
		if (t->layout_rate > CFG_MAX_LAYOUT_RATE) {
			char a[32];

			cfg_format_size(t->layout_rate, a, sizeof(a));
			return fail_at(p, v, "'layout_rate' must be at most 1TiB/s, got %s/s", a);
		}
		if (t->layout_rate && t->layout_rate < CFG_MIN_LAYOUT_RATE) {
			char a[32];

			cfg_format_size(t->layout_rate, a, sizeof(a));
			return fail_at(p, v,
				       "'layout_rate' must be at least 1MiB/s, or 0 for no limit, "
				       "got %s/s",
				       a);
		}
		return 0;
	case TK_KEEP_FREE:
		return get_keep_free(p, v, t);
	case TK_REQUIRE_MOUNT:
		return get_require_mount(p, v, t);
	case TK_DIRECT:
		return get_bool(p, v, "direct", &t->direct);
	case TK_ALLOW_MEMORY_BACKED:
		return get_bool(p, v, "allow_memory_backed", &t->allow_memory_backed);
	case TK_ALLOW_DEVICE_WRITES:
		return get_bool(p, v, "allow_device_writes", &t->allow_device_writes);
	}
	return 0;
}

/* Exactly one of directory, file and device; keys that only fit another kind. */
static int check_target_kind(struct parser *p, const yaml_node_t *item, struct target_ctx *tc)
{
	static const unsigned path_keys[] = {TK_DIRECTORY, TK_FILE, TK_DEVICE};
	const struct cfg_target *t = tc->t;
	const yaml_node_t *first = NULL;
	unsigned first_key = 0;

	for (unsigned i = 0; i < 3; i++) {
		unsigned k = path_keys[i];
		const yaml_node_t *second;

		if (!tc->key[k])
			continue;
		if (!first) {
			first = tc->key[k];
			first_key = k;
			continue;
		}
		second =
			tc->key[k]->start_mark.index > first->start_mark.index ? tc->key[k] : first;
		return fail_at(p, second, "target '%s' has both '%s' and '%s', use one", t->name,
			       target_keys[first_key], target_keys[k]);
	}
	if (!first)
		return fail_at(p, item, "target '%s' needs 'directory', 'file' or 'device'",
			       t->name);
	if (t->kind != CFG_TARGET_DIRECTORY && tc->key[TK_SIZE])
		return fail_at(p, tc->key[TK_SIZE],
			       "'size' is only valid on directory targets: target '%s' is a %s and "
			       "is measured at its own size",
			       t->name, cfg_target_kind_name(t->kind));
	if (t->kind != CFG_TARGET_DIRECTORY && tc->key[TK_LAYOUT_RATE])
		return fail_at(p, tc->key[TK_LAYOUT_RATE],
			       "'layout_rate' is only valid on directory targets: target '%s' is a "
			       "%s, which iopulse never lays out",
			       t->name, cfg_target_kind_name(t->kind));
	if (t->kind != CFG_TARGET_DIRECTORY && tc->key[TK_KEEP_FREE])
		return fail_at(p, tc->key[TK_KEEP_FREE],
			       "'keep_free' is only valid on directory targets: target '%s' is a "
			       "%s, which iopulse never lays out",
			       t->name, cfg_target_kind_name(t->kind));
	if (t->kind != CFG_TARGET_DIRECTORY && tc->key[TK_REQUIRE_MOUNT])
		return fail_at(p, tc->key[TK_REQUIRE_MOUNT],
			       "'require_mount' is only valid on directory targets: target '%s' is "
			       "a %s, and iopulse creates nothing beside it",
			       t->name, cfg_target_kind_name(t->kind));
	if (t->kind != CFG_TARGET_DEVICE && tc->key[TK_ALLOW_DEVICE_WRITES])
		return fail_at(p, tc->key[TK_ALLOW_DEVICE_WRITES],
			       "'allow_device_writes' is only valid on device targets: target '%s' "
			       "is a %s",
			       t->name, cfg_target_kind_name(t->kind));
	return 0;
}

static int parse_target(struct parser *p, const yaml_node_t *item, unsigned idx)
{
	struct cfg_target *t = &p->c->targets[idx];
	struct target_ctx tc = {.t = t};
	int r;

	if (item->type != YAML_MAPPING_NODE)
		return fail_at(p, item, "each item of 'targets' must be a mapping, got %s",
			       node_kind(item));
	t->pos.line = (unsigned)item->start_mark.line + 1;
	t->pos.col = (unsigned)item->start_mark.column + 1;
	t->size = CFG_DEFAULT_TARGET_SIZE;
	t->layout_rate = CFG_DEFAULT_LAYOUT_RATE;
	t->require_mount = CFG_MOUNT_AUTO;
	t->keep_free_fraction = CFG_DEFAULT_KEEP_FREE_FRACTION;
	t->direct = true;
	r = walk_mapping(p, item, "in target", target_keys, target_pair, &tc);
	if (r < 0)
		return r;
	if (!tc.value[TK_NAME])
		return fail_at(p, item, "target is missing required key 'name'");
	r = check_target_kind(p, item, &tc);
	if (r < 0)
		return r;
	if (t->kind != CFG_TARGET_DIRECTORY) {
		/* Measured at their own size, never laid out, nothing created. */
		t->size = 0;
		t->layout_rate = 0;
		t->keep_free_bytes = 0;
		t->keep_free_fraction = 0;
		t->require_mount = CFG_MOUNT_NO;
	}
	for (unsigned i = 0; i < idx; i++)
		if (!strcmp(p->c->targets[i].name, t->name))
			return fail_at(p, item,
				       "duplicate target name '%s' (first defined at line %u)",
				       t->name, p->c->targets[i].pos.line);
	return 0;
}

/* A list of 1..max mappings under @key; returns the count or -EINVAL. */
static int list_size(struct parser *p, const yaml_node_t *n, const char *key, unsigned max)
{
	size_t count;

	if (n->type != YAML_SEQUENCE_NODE) {
		if (node_is_null(n))
			return fail_at(p, n, "'%s' must not be empty", key);
		return fail_at(p, n, "'%s' must be a list, got %s", key, node_kind(n));
	}
	count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (count < 1)
		return fail_at(p, n, "'%s' must not be empty", key);
	if (count > max)
		return fail_at(p, n, "'%s' has %zu items, at most %u are allowed", key, count, max);
	return (int)count;
}

static int parse_targets(struct parser *p, const yaml_node_t *n)
{
	int count, r;

	count = list_size(p, n, "targets", CFG_MAX_TARGETS);
	if (count < 0)
		return count;
	p->c->targets = calloc((size_t)count, sizeof(*p->c->targets));
	if (!p->c->targets)
		return -ENOMEM;
	for (int i = 0; i < count; i++) {
		p->c->n_targets = (unsigned)i + 1; /* so cfg_free() sees paths set so far */
		r = parse_target(p, node_get(p, n->data.sequence.items.start[i]), (unsigned)i);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- probes --------------------------------------------------------------------- */

enum {
	PK_NAME,
	PK_TYPE,
	PK_TARGET,
	PK_OP,
	PK_SYNC,
	PK_INTERVAL,
	PK_BLOCK_SIZE,
	PK_WORKING_SET,
	PK_TIMEOUT,
	PK_ENGINE,
	PK_RW,
	PK_RWMIX_READ,
	PK_IODEPTH,
	PK_JOBS,
	PK_DURATION,
	PK_IOS,
	PK_RATE_IOPS,
	PK_RAMP,
	PK_EVERY,
	PK_COUNT,
};
static const char *const probe_keys[] = {
	"name",	       "type",	  "target",    "op",   "sync",	     "interval", "block_size",
	"working_set", "timeout", "engine",    "rw",   "rwmix_read", "iodepth",	 "jobs",
	"duration",    "ios",	  "rate_iops", "ramp", "every",	     NULL,
};
#define PK_BIT(k) (1U << (k))
#define PK_COMMON                                                                                  \
	(PK_BIT(PK_NAME) | PK_BIT(PK_TYPE) | PK_BIT(PK_TARGET) | PK_BIT(PK_BLOCK_SIZE) |           \
	 PK_BIT(PK_WORKING_SET) | PK_BIT(PK_TIMEOUT) | PK_BIT(PK_ENGINE))
#define PK_PING_ONLY  (PK_BIT(PK_OP) | PK_BIT(PK_SYNC) | PK_BIT(PK_INTERVAL))
#define PK_BURST_ONLY (((1U << PK_COUNT) - 1) & ~PK_COMMON & ~PK_PING_ONLY)
_Static_assert(PK_COUNT <= KEYS_MAX, "probe keys must fit a walk_mapping_valid() mask");

/* For a key used on the other kind of probe: what that kind does instead. */
static const char *const probe_key_elsewhere[PK_COUNT] = {
	[PK_OP] = "burst probes use 'rw'",
	[PK_SYNC] = "burst probes do not fdatasync",
	[PK_INTERVAL] = "burst probes use 'every'",
	[PK_RW] = "ping probes use 'op'",
	[PK_RWMIX_READ] = "ping probes use 'op'",
	[PK_IODEPTH] = "ping probes have one I/O in flight",
	[PK_JOBS] = "ping probes have one I/O in flight",
	[PK_DURATION] = "ping probes do one I/O every 'interval'",
	[PK_IOS] = "ping probes do one I/O every 'interval'",
	[PK_RATE_IOPS] = "ping probes do one I/O every 'interval'",
	[PK_RAMP] = "ping probes have no warm-up",
	[PK_EVERY] = "ping probes use 'interval'",
};

static const char *const op_names[] = {"read", "write", NULL};
static const char *const sync_names[] = {"none", "fdatasync", NULL};
static const char *const probe_kind_names[] = {"ping", "burst", NULL};
static const char *const engine_names[] = {"auto", "io_uring", "libaio", "sync", "null", NULL};
static const char *const rw_names[] = {"randread", "randwrite", "randrw", "read", "write", NULL};

struct probe_ctx {
	struct cfg_probe *pr;
	int kind; /* from a valid 'type' anywhere in the mapping, -1 before it is known */
	const yaml_node_t *key[PK_COUNT];
	const yaml_node_t *value[PK_COUNT];
};

/*
 * The kind of probe, when 'type' is present and valid, or -1. Looked up before
 * the walk, since which keys are valid depends on it and 'type' may come last; a
 * bad or missing 'type' is reported by the walk itself, in document order.
 */
static int probe_kind_early(struct parser *p, const yaml_node_t *item)
{
	for (yaml_node_pair_t *pair = item->data.mapping.pairs.start;
	     pair < item->data.mapping.pairs.top; pair++) {
		const yaml_node_t *v = node_get(p, pair->value);

		if (!scalar_is(node_get(p, pair->key), "type"))
			continue;
		for (int i = 0; probe_kind_names[i]; i++)
			if (scalar_is(v, probe_kind_names[i]))
				return i;
		return -1;
	}
	return -1;
}

static int probe_misplaced(struct parser *p, unsigned key, const yaml_node_t *knode, void *ctx)
{
	const struct probe_ctx *pc = ctx;
	const char *owner = pc->kind == CFG_PROBE_PING ? "burst" : "ping";

	return fail_at(p, knode, "'%s' is a %s key; %s", probe_keys[key], owner,
		       probe_key_elsewhere[key]);
}

static int check_block_size(struct parser *p, const yaml_node_t *n, uint64_t v)
{
	int r;

	r = check_range(p, n, "block_size", v, CFG_MIN_BLOCK_SIZE, CFG_MAX_BLOCK_SIZE, false);
	if (r < 0)
		return r;
	if (v % 512)
		return fail_at(p, n,
			       "'block_size' must be a multiple of 512 (direct I/O), got %llu",
			       (unsigned long long)v);
	return 0;
}

/*
 * 'block_size': one size, or for bursts "MIN-MAX" as fio's bsrange: each I/O is a
 * random multiple of MIN up to MAX, so MAX must be a multiple of MIN.
 */
static int get_block_size(struct parser *p, const yaml_node_t *n, int kind, struct cfg_probe *pr)
{
	char *lo_s, what[128], a[32], b[32];
	const char *s, *dash;
	int r;

	r = get_scalar(p, n, "block_size", "a size", &s);
	if (r < 0)
		return r;
	dash = strchr(s, '-');
	if (!dash || dash == s) {
		r = get_size(p, n, "block_size", &words_size, &pr->block_size);
		if (r < 0)
			return r;
		pr->block_size_max = pr->block_size;
		return check_block_size(p, n, pr->block_size);
	}
	if (kind == CFG_PROBE_PING)
		return fail_at(p, n,
			       "'block_size' of a ping probe must be one size, got '%s': ranges "
			       "are for burst probes",
			       s);
	snprintf(what, sizeof(what), "'block_size' range '%s'", s);
	lo_s = strndup(s, (size_t)(dash - s));
	if (!lo_s)
		return -ENOMEM;
	r = cfg_parse_size(lo_s, &pr->block_size);
	if (r < 0)
		r = size_error(p, n, what, lo_s, r, &words_size);
	free(lo_s);
	if (r < 0)
		return r;
	r = cfg_parse_size(dash + 1, &pr->block_size_max);
	if (r < 0)
		return size_error(p, n, what, dash + 1, r, &words_size);
	r = check_block_size(p, n, pr->block_size);
	if (r == 0)
		r = check_block_size(p, n, pr->block_size_max);
	if (r < 0)
		return r;
	cfg_format_size(pr->block_size, a, sizeof(a));
	cfg_format_size(pr->block_size_max, b, sizeof(b));
	if (pr->block_size > pr->block_size_max)
		return fail_at(p, n,
			       "invalid range '%s' for 'block_size': write the smaller size first, "
			       "as in %s-%s",
			       s, b, a);
	if (pr->block_size_max % pr->block_size)
		return fail_at(p, n,
			       "invalid range '%s' for 'block_size': the largest size (%s) must be "
			       "a multiple of the smallest (%s)",
			       s, b, a);
	return 0;
}

static int probe_pair(struct parser *p, unsigned key, const yaml_node_t *knode,
		      const yaml_node_t *v, void *ctx)
{
	struct probe_ctx *pc = ctx;
	struct cfg_probe *pr = pc->pr;
	const char *s = NULL;
	uint64_t n;
	unsigned e = 0;
	int r;

	pc->key[key] = knode;
	pc->value[key] = v;
	switch (key) {
	case PK_NAME:
		return get_name(p, v, "probe", pr->name);
	case PK_TYPE:
		r = get_enum(p, v, "type", probe_kind_names, "ping or burst", &e);
		pr->kind = (enum cfg_probe_kind)e;
		return r;
	case PK_TARGET:
		return get_scalar(p, v, "target", "a target name", &s);
	case PK_OP:
		r = get_enum(p, v, "op", op_names, "read or write", &e);
		pr->op = (enum io_op)e;
		return r;
	case PK_SYNC:
		r = get_enum(p, v, "sync", sync_names, "none or fdatasync", &e);
		pr->sync = (enum cfg_sync)e;
		return r;
	case PK_INTERVAL:
		r = get_duration(p, v, "interval", &pr->interval_ns);
		if (r < 0)
			return r;
		return check_range(p, v, "interval", pr->interval_ns, CFG_MIN_INTERVAL_NS,
				   CFG_MAX_INTERVAL_NS, true);
	case PK_BLOCK_SIZE:
		return get_block_size(p, v, pc->kind, pr);
	case PK_WORKING_SET:
		r = get_size(p, v, "working_set", &words_size, &pr->working_set);
		if (r < 0)
			return r;
		if (pr->working_set > CFG_MAX_TARGET_SIZE) {
			char a[32];

			cfg_format_size(pr->working_set, a, sizeof(a));
			return fail_at(p, v, "'working_set' must be at most 1TiB, got %s", a);
		}
		return 0;
	case PK_TIMEOUT:
		r = get_duration(p, v, "timeout", &pr->timeout_ns);
		if (r < 0)
			return r;
		return check_range(p, v, "timeout", pr->timeout_ns, CFG_MIN_TIMEOUT_NS,
				   CFG_MAX_TIMEOUT_NS, true);
	case PK_ENGINE:
		/* The null engine, not YAML's null: nothing else could be meant here. */
		if (scalar_is(v, "null")) {
			strcpy(pr->engine, "null");
			return 0;
		}
		r = get_enum(p, v, "engine", engine_names, "auto, io_uring, libaio, sync or null",
			     &e);
		if (r == 0)
			strcpy(pr->engine, engine_names[e]);
		return r;
	case PK_RW:
		r = get_enum(p, v, "rw", rw_names, "randread, randwrite, randrw, read or write",
			     &e);
		pr->rw = (enum cfg_rw)e;
		return r;
	case PK_RWMIX_READ:
		return get_percent(p, v, "rwmix_read", 1.0, "70%", &pr->rwmix_read);
	case PK_IODEPTH:
		r = get_uint(p, v, "iodepth", &n);
		if (r == 0)
			r = check_count(p, v, "iodepth", n, 1, CFG_MAX_IODEPTH);
		pr->iodepth = (unsigned)n;
		return r;
	case PK_JOBS:
		r = get_uint(p, v, "jobs", &n);
		if (r == 0)
			r = check_count(p, v, "jobs", n, 1, CFG_MAX_JOBS);
		pr->jobs = (unsigned)n;
		return r;
	case PK_DURATION:
		r = get_duration(p, v, "duration", &pr->duration_ns);
		if (r < 0)
			return r;
		return check_range(p, v, "duration", pr->duration_ns, CFG_MIN_DURATION_NS,
				   CFG_MAX_DURATION_NS, true);
	case PK_IOS:
		r = get_uint(p, v, "ios", &pr->ios);
		if (r < 0)
			return r;
		return check_count(p, v, "ios", pr->ios, 1, CFG_MAX_IOS);
	case PK_RATE_IOPS:
		r = get_uint(p, v, "rate_iops", &pr->rate_iops);
		if (r < 0)
			return r;
		return check_count(p, v, "rate_iops", pr->rate_iops, 0, CFG_MAX_RATE_IOPS);
	case PK_RAMP:
		r = get_duration(p, v, "ramp", &pr->ramp_ns);
		if (r < 0)
			return r;
		return check_range(p, v, "ramp", pr->ramp_ns, 0, CFG_MAX_DURATION_NS, true);
	case PK_EVERY:
		r = get_duration(p, v, "every", &pr->interval_ns);
		if (r < 0)
			return r;
		return check_range(p, v, "every", pr->interval_ns, CFG_MIN_EVERY_NS,
				   CFG_MAX_EVERY_NS, true);
	}
	return 0;
}

/* "the largest " before 'block_size' in a message when it is a range. */
static const char *largest_if_range(const struct cfg_probe *pr)
{
	return pr->block_size_max != pr->block_size ? "the largest " : "";
}

/* The later of two keys in the document, for "has both" errors. */
static const yaml_node_t *later_key(const yaml_node_t *a, const yaml_node_t *b)
{
	return a->start_mark.index > b->start_mark.index ? a : b;
}

/* The value written last among @keys of a probe, for an error that several keys
 * cause together; 'type' when none is written (a burst always has one). */
static const yaml_node_t *last_value(const struct probe_ctx *pc, const unsigned *keys, size_t n)
{
	const yaml_node_t *last = NULL;

	for (size_t i = 0; i < n; i++)
		if (pc->value[keys[i]] && (!last || later_key(last, pc->value[keys[i]]) != last))
			last = pc->value[keys[i]];
	return last ? last : pc->value[PK_TYPE];
}

/* A burst's I/O buffers (resident while it runs) within CFG_MAX_BURST_BUFFER. */
static int check_burst_buffers(struct parser *p, const struct probe_ctx *pc)
{
	static const unsigned keys[] = {PK_JOBS, PK_IODEPTH, PK_BLOCK_SIZE};
	const struct cfg_probe *pr = pc->pr;
	uint64_t total = cfg_burst_buffer_bytes(pr);
	uint64_t buf = total / pr->jobs / pr->iodepth;
	char bs[32], sum[32], max[32], rounded[96] = "";

	if (total <= CFG_MAX_BURST_BUFFER)
		return 0;
	cfg_format_size(buf, bs, sizeof(bs));
	cfg_format_size(total, sum, sizeof(sum));
	cfg_format_size(CFG_MAX_BURST_BUFFER, max, sizeof(max));
	if (buf != pr->block_size_max) {
		char want[32], align[32];

		cfg_format_size(pr->block_size_max, want, sizeof(want));
		cfg_format_size(CFG_BURST_BUF_ALIGN, align, sizeof(align));
		snprintf(rounded, sizeof(rounded), ", %s rounded up to %s", want, align);
	}
	return fail_at(p, last_value(pc, keys, sizeof(keys) / sizeof(keys[0])),
		       "probe '%s': the I/O buffers of 'jobs' x 'iodepth' x %s'block_size' "
		       "(%u x %u x %s%s = %s) must be at most %s",
		       pr->name, largest_if_range(pr), pr->jobs, pr->iodepth, bs, rounded, sum,
		       max);
}

/* A burst of 'ios' at 'rate_iops' lasts ios / rate_iops: within the longest
 * 'duration' (a burst holds its target, pings wait) and, after its ramp, within
 * 'every'. Without a rate the length depends on the device: the burst stops
 * itself after that long (see burst.h). */
static int check_burst_ios_length(struct parser *p, const struct probe_ctx *pc)
{
	static const unsigned keys[] = {PK_IOS, PK_RATE_IOPS};
	const struct cfg_probe *pr = pc->pr;
	/* ios <= 10^9, so ios x 10^9 < 2^64 */
	uint64_t len = (pr->ios * 1000000000ULL + pr->rate_iops - 1) / pr->rate_iops;
	char every[32], ramp[32], l[32], max[32];

	cfg_format_duration(len, l, sizeof(l));
	cfg_format_duration(CFG_MAX_DURATION_NS, max, sizeof(max));
	if (len > CFG_MAX_DURATION_NS)
		return fail_at(
			p, last_value(pc, keys, 2),
			"probe '%s': 'ios' at 'rate_iops' (%llu at %llu per second) take %s, "
			"longer than a burst may run (%s)",
			pr->name, (unsigned long long)pr->ios, (unsigned long long)pr->rate_iops, l,
			max);
	if (pr->interval_ns > pr->ramp_ns + len)
		return 0;
	cfg_format_duration(pr->interval_ns, every, sizeof(every));
	cfg_format_duration(pr->ramp_ns, ramp, sizeof(ramp));
	return fail_at(p, pc->value[PK_EVERY] ? pc->value[PK_EVERY] : last_value(pc, keys, 2),
		       "probe '%s': 'every' (%s) must be longer than 'ramp' + 'ios' / "
		       "'rate_iops' (%s + %s), or the burst would overlap itself",
		       pr->name, every, ramp, l);
}

/* Checks between the keys of a burst, once all are read; fills in derived defaults. */
static int check_burst(struct parser *p, const struct probe_ctx *pc)
{
	struct cfg_probe *pr = pc->pr;
	char a[32], b[32], c[32];
	int r;

	if (pc->key[PK_DURATION] && pc->key[PK_IOS])
		return fail_at(p, later_key(pc->key[PK_DURATION], pc->key[PK_IOS]),
			       "probe '%s' has both 'duration' and 'ios', use one", pr->name);
	if (pc->value[PK_RWMIX_READ] && pr->rw != CFG_RW_RANDRW)
		return fail_at(p, pc->value[PK_RWMIX_READ],
			       "probe '%s': 'rwmix_read' needs 'rw: randrw'", pr->name);
	if (pc->value[PK_IOS])
		pr->duration_ns = 0;
	if (!pc->value[PK_EVERY])
		pr->interval_ns = CFG_DEFAULT_EVERY_NS;
	/* The effective fraction of reads, whatever the pattern. */
	if (pr->rw == CFG_RW_RANDREAD || pr->rw == CFG_RW_READ)
		pr->rwmix_read = 1.0;
	else if (pr->rw == CFG_RW_RANDWRITE || pr->rw == CFG_RW_WRITE)
		pr->rwmix_read = 0.0;

	r = check_burst_buffers(p, pc);
	if (r < 0)
		return r;
	cfg_format_duration(pr->interval_ns, a, sizeof(a));
	cfg_format_duration(pr->ramp_ns, b, sizeof(b));
	if (pr->duration_ns) {
		cfg_format_duration(pr->duration_ns, c, sizeof(c));
		if (pr->ramp_ns >= pr->duration_ns)
			return fail_at(
				p, pc->value[PK_RAMP],
				"probe '%s': 'ramp' (%s) must be shorter than 'duration' (%s)",
				pr->name, b, c);
		if (pr->interval_ns <= pr->ramp_ns + pr->duration_ns)
			/* 'every' defaulted: only a long 'duration' gets here. */
			return fail_at(p,
				       pc->value[PK_EVERY] ? pc->value[PK_EVERY]
							   : pc->value[PK_DURATION],
				       "probe '%s': 'every' (%s) must be longer than 'ramp' + "
				       "'duration' (%s + %s), or the burst would overlap itself",
				       pr->name, a, b, c);
	} else if (pr->rate_iops) {
		return check_burst_ios_length(p, pc);
	} else if (pr->interval_ns <= pr->ramp_ns) {
		return fail_at(p, pc->value[PK_EVERY] ? pc->value[PK_EVERY] : pc->value[PK_RAMP],
			       "probe '%s': 'every' (%s) must be longer than 'ramp' (%s), or the "
			       "burst would overlap itself",
			       pr->name, a, b);
	}
	return 0;
}

static int parse_probe(struct parser *p, const yaml_node_t *item, unsigned idx)
{
	struct cfg_probe *pr = &p->c->probes[idx];
	struct probe_ctx pc = {.pr = pr};
	uint32_t valid = UINT32_MAX;
	int r;

	if (item->type != YAML_MAPPING_NODE)
		return fail_at(p, item, "each item of 'probes' must be a mapping, got %s",
			       node_kind(item));
	pr->pos.line = (unsigned)item->start_mark.line + 1;
	pr->pos.col = (unsigned)item->start_mark.column + 1;
	pr->op = IO_READ;
	pr->sync = CFG_SYNC_NONE;
	pr->interval_ns = CFG_DEFAULT_INTERVAL_NS;
	pr->block_size = CFG_DEFAULT_BLOCK_SIZE;
	pr->block_size_max = CFG_DEFAULT_BLOCK_SIZE;
	pr->working_set = 0;
	pr->timeout_ns = CFG_DEFAULT_TIMEOUT_NS;
	strcpy(pr->engine, "auto");
	pr->rw = CFG_RW_RANDREAD;
	pr->rwmix_read = CFG_DEFAULT_RWMIX_READ;
	pr->iodepth = CFG_DEFAULT_IODEPTH;
	pr->jobs = 1;
	pr->duration_ns = CFG_DEFAULT_DURATION_NS;
	pr->ios = 0;
	pr->rate_iops = 0;
	pr->ramp_ns = 0;
	pc.kind = probe_kind_early(p, item);
	if (pc.kind == CFG_PROBE_PING)
		valid = PK_COMMON | PK_PING_ONLY;
	else if (pc.kind == CFG_PROBE_BURST)
		valid = PK_COMMON | PK_BURST_ONLY;
	r = walk_mapping_valid(p, item, "in probe", probe_keys, valid, probe_misplaced, probe_pair,
			       &pc);
	if (r < 0)
		return r;
	if (!pc.value[PK_NAME])
		return fail_at(p, item, "probe is missing required key 'name'");
	if (!pc.value[PK_TYPE])
		return fail_at(p, item, "probe '%s' is missing required key 'type'", pr->name);
	if (!pc.value[PK_TARGET])
		return fail_at(p, item, "probe '%s' is missing required key 'target'", pr->name);
	if (pr->kind == CFG_PROBE_PING) {
		if (pr->sync == CFG_SYNC_FDATASYNC && pr->op != IO_WRITE)
			return fail_at(p, pc.value[PK_SYNC],
				       "probe '%s': 'sync: fdatasync' needs 'op: write'", pr->name);
		/* A ping as a burst would describe it: one random I/O at a time. */
		pr->rw = pr->op == IO_WRITE ? CFG_RW_RANDWRITE : CFG_RW_RANDREAD;
		pr->rwmix_read = pr->op == IO_WRITE ? 0.0 : 1.0;
		pr->iodepth = 1;
		pr->duration_ns = 0;
	} else {
		r = check_burst(p, &pc);
		if (r < 0)
			return r;
	}
	if (pr->working_set && pr->working_set < pr->block_size_max) {
		char a[32], b[32];

		cfg_format_size(pr->working_set, a, sizeof(a));
		cfg_format_size(pr->block_size_max, b, sizeof(b));
		return fail_at(
			p, pc.value[PK_WORKING_SET],
			"probe '%s': 'working_set' (%s) must be at least %s'block_size' (%s)",
			pr->name, a, largest_if_range(pr), b);
	}
	for (unsigned i = 0; i < idx; i++)
		if (!strcmp(p->c->probes[i].name, pr->name))
			return fail_at(p, item,
				       "duplicate probe name '%s' (first defined at line %u)",
				       pr->name, p->c->probes[i].pos.line);
	p->refs[idx].target = pc.value[PK_TARGET];
	p->refs[idx].writes = pr->kind == CFG_PROBE_PING ? pc.value[PK_OP] : pc.value[PK_RW];
	p->refs[idx].ws = pc.value[PK_WORKING_SET];
	p->refs[idx].bs = pc.value[PK_BLOCK_SIZE];
	p->refs[idx].item = item;
	return 0;
}

static int parse_probes(struct parser *p, const yaml_node_t *n)
{
	int count, r;

	count = list_size(p, n, "probes", CFG_MAX_PROBES);
	if (count < 0)
		return count;
	p->c->probes = calloc((size_t)count, sizeof(*p->c->probes));
	p->refs = calloc((size_t)count, sizeof(*p->refs));
	if (!p->c->probes || !p->refs)
		return -ENOMEM;
	p->c->n_probes = (unsigned)count;
	for (int i = 0; i < count; i++) {
		r = parse_probe(p, node_get(p, n->data.sequence.items.start[i]), (unsigned)i);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * A working set the probe can use, on a directory target (whose size is known
 * here; a file's or a device's is known only when it is opened, and the probe
 * says then what does not fit): at least the largest block, and for a
 * sequential burst, where each job walks its own part (a whole number of
 * blocks), a part per job of at least the largest block.
 */
static int check_working_set(struct parser *p, const struct cfg_probe *pr,
			     const struct probe_refs *ref, const struct cfg_target *t)
{
	uint64_t ws = pr->working_set ? pr->working_set : t->size, part;
	char a[32], b[32], c[32];

	cfg_format_size(pr->block_size_max, b, sizeof(b));
	if (ws < pr->block_size_max) { /* 'working_set' was checked: the whole target */
		cfg_format_size(t->size, a, sizeof(a));
		return fail_at(p, ref->bs,
			       "probe '%s': %s'block_size' (%s) is larger than target '%s' (%s)",
			       pr->name, largest_if_range(pr), b, t->name, a);
	}
	if (pr->kind != CFG_PROBE_BURST || (pr->rw != CFG_RW_READ && pr->rw != CFG_RW_WRITE))
		return 0;
	/* A part is a whole number of blocks, and the largest is a multiple of the
	 * smallest: it holds one when ws / jobs does. */
	part = ws / pr->jobs;
	if (part >= pr->block_size_max)
		return 0;
	cfg_format_size(ws, a, sizeof(a));
	cfg_format_size(part, c, sizeof(c));
	/* A sequential burst wrote its 'rw': ref->writes is not NULL. */
	return fail_at(p, ref->ws ? ref->ws : ref->writes,
		       "probe '%s': with 'rw: %s' each of the %u 'jobs' walks its own part of "
		       "the working set (%s), and a part (%s) is smaller than %s'block_size' (%s)",
		       pr->name, cfg_rw_name(pr->rw), pr->jobs, a, c, largest_if_range(pr), b);
}

/* Cross-references, once every target and probe is read. */
static int resolve_probes(struct parser *p)
{
	struct config *c = p->c;

	for (unsigned i = 0; i < c->n_probes; i++) {
		struct cfg_probe *pr = &c->probes[i];
		const struct probe_refs *ref = &p->refs[i];
		const char *want = node_str(ref->target);
		const struct cfg_target *t;
		int ti = cfg_target_index(c, want);

		if (ti < 0) {
			for (unsigned j = 0; j < c->n_targets; j++)
				if (is_close(want, c->targets[j].name))
					return fail_at(p, ref->target,
						       "probe '%s' references undefined target "
						       "'%s', did you mean '%s'?",
						       pr->name, want, c->targets[j].name);
			return fail_at(p, ref->target,
				       "probe '%s' references undefined target '%s'", pr->name,
				       want);
		}
		pr->target = (unsigned)ti;
		t = &c->targets[ti];
		/* A writing probe set its 'op' or 'rw': ref->writes is not NULL. */
		if (cfg_probe_writes(pr) && t->kind == CFG_TARGET_FILE)
			return fail_at(p, ref->writes,
				       "probe '%s' writes to file target '%s': iopulse never "
				       "writes to a file it did not create, use a 'directory' "
				       "target for write probes",
				       pr->name, t->name);
		if (cfg_probe_writes(pr) && t->kind == CFG_TARGET_DEVICE && !t->allow_device_writes)
			return fail_at(p, ref->writes,
				       "probe '%s' writes to device target '%s': this destroys the "
				       "data on %s; set 'allow_device_writes: true' on the target "
				       "if you mean it",
				       pr->name, t->name, t->path);
		if (t->kind == CFG_TARGET_DIRECTORY && pr->working_set > t->size) {
			char a[32], b[32];

			cfg_format_size(pr->working_set, a, sizeof(a));
			cfg_format_size(t->size, b, sizeof(b));
			return fail_at(p, ref->ws,
				       "probe '%s': 'working_set' (%s) is larger than the size of "
				       "target '%s' (%s)",
				       pr->name, a, t->name, b);
		}
		if (t->kind == CFG_TARGET_DIRECTORY) {
			int r = check_working_set(p, pr, ref, t);

			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* ---- top level ----------------------------------------------------------------- */

/* A signed whole number, as "native_histogram_schema: -2", within [lo, hi]. */
static int get_int(struct parser *p, const yaml_node_t *n, const char *key, long lo, long hi,
		   int *out)
{
	const char *s = NULL;
	char *end;
	long v;
	int r;

	r = get_scalar(p, n, key, "a whole number", &s);
	if (r < 0)
		return r;
	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || !((s[0] >= '0' && s[0] <= '9') || s[0] == '-' || s[0] == '+'))
		return fail_at(p, n,
			       "invalid number '%s' for '%s': expected a whole number, as in %ld",
			       s, key, hi);
	if (errno == ERANGE || v < lo || v > hi)
		return fail_at(p, n, "'%s' must be between %ld and %ld, got %s", key, lo, hi, s);
	*out = (int)v;
	return 0;
}

static int parse_native_zero_threshold(struct parser *p, const yaml_node_t *n)
{
	const char *key = "native_histogram_zero_threshold";
	int r = get_duration(p, n, key, &p->c->native_zero_threshold_ns);

	if (r < 0)
		return r;
	return check_range(p, n, key, p->c->native_zero_threshold_ns, 0, CFG_MAX_NATIVE_ZERO_NS,
			   true);
}

enum {
	KEY_LISTEN,
	KEY_BUCKETS,
	KEY_NATIVE_SCHEMA,
	KEY_NATIVE_ZERO_THRESHOLD,
	KEY_TARGETS,
	KEY_PROBES,
	_KEY_TOP_MAX,
};
static const char *const top_keys[] = {"listen",
				       "buckets",
				       "native_histogram_schema",
				       "native_histogram_zero_threshold",
				       "targets",
				       "probes",
				       NULL};

static int top_pair(struct parser *p, unsigned key, const yaml_node_t *knode, const yaml_node_t *v,
		    void *ctx)
{
	bool *seen = ctx;

	(void)knode;
	seen[key] = true;
	switch (key) {
	case KEY_LISTEN:
		return parse_listen(p, v);
	case KEY_BUCKETS:
		return parse_buckets(p, v);
	case KEY_NATIVE_SCHEMA:
		return get_int(p, v, "native_histogram_schema", CFG_MIN_NATIVE_SCHEMA,
			       CFG_MAX_NATIVE_SCHEMA, &p->c->native_schema);
	case KEY_NATIVE_ZERO_THRESHOLD:
		return parse_native_zero_threshold(p, v);
	case KEY_TARGETS:
		return parse_targets(p, v);
	case KEY_PROBES:
		return parse_probes(p, v);
	}
	return 0;
}

static int parse_root(struct parser *p, const yaml_node_t *root)
{
	bool seen[_KEY_TOP_MAX] = {false};
	int r;

	if (root->type != YAML_MAPPING_NODE)
		return fail_at(
			p, root,
			"configuration must be a mapping with 'targets' and 'probes', got %s",
			node_kind(root));
	r = walk_mapping(p, root, "at top level", top_keys, top_pair, seen);
	if (r < 0)
		return r;
	if (!seen[KEY_TARGETS])
		return fail_at(p, root, "configuration is missing required key 'targets'");
	if (!seen[KEY_PROBES])
		return fail_at(p, root, "configuration is missing required key 'probes'");
	return resolve_probes(p);
}

static int syntax_error(struct parser *p, yaml_parser_t *yp, const char *text, size_t len)
{
	size_t line = yp->problem_mark.line, col = yp->problem_mark.column;

	if (yp->error == YAML_MEMORY_ERROR) {
		snprintf(p->err->msg, sizeof(p->err->msg), "%s: out of memory", p->name);
		return -ENOMEM;
	}
	if (yp->error == YAML_READER_ERROR) {
		/* The reader reports a byte offset only. */
		line = col = 0;
		for (size_t i = 0; i < yp->problem_offset && i < len; i++) {
			if (text[i] == '\n') {
				line++;
				col = 0;
			} else {
				col++;
			}
		}
	}
	snprintf(p->err->msg, sizeof(p->err->msg), "%s:%zu:%zu: YAML syntax error: %s%s%s%s",
		 p->name, line + 1, col + 1, yp->problem ? yp->problem : "unknown error",
		 yp->context ? " (" : "", yp->context ? yp->context : "", yp->context ? ")" : "");
	return -EINVAL;
}

static void set_defaults(struct config *c)
{
	strcpy(c->listen_host, "127.0.0.1");
	c->listen_port = 10035;
	memcpy(c->buckets_ns, default_buckets_ns, sizeof(default_buckets_ns));
	c->n_buckets = sizeof(default_buckets_ns) / sizeof(default_buckets_ns[0]);
	c->native_schema = CFG_DEFAULT_NATIVE_SCHEMA;
	c->native_zero_threshold_ns = 0;
}

/*
 * libyaml (0.2.5) has no limit on nesting, and its scanner costs time quadratic
 * in the depth: "[[[[..." 100,000 deep takes it a minute to refuse. A schedule is
 * three levels deep. One pass over the events, before the document is built,
 * stops at the first collection deeper than CFG_MAX_DEPTH; the scanner looks
 * ahead a bounded distance, so that takes microseconds whatever follows. A
 * syntax error is left for the document loader to report, as before.
 */
static int check_depth(struct parser *p, const char *text, size_t len)
{
	yaml_parser_t yp;
	yaml_event_t ev;
	unsigned depth = 0;
	int r = 0;

	if (!yaml_parser_initialize(&yp)) {
		snprintf(p->err->msg, sizeof(p->err->msg), "%s: out of memory", p->name);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
	while (yaml_parser_parse(&yp, &ev)) {
		yaml_event_type_t type = ev.type;

		if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) {
			if (++depth > CFG_MAX_DEPTH) {
				snprintf(p->err->msg, sizeof(p->err->msg),
					 "%s:%zu:%zu: lists and mappings nested more than %u deep, "
					 "the limit for a configuration file",
					 p->name, ev.start_mark.line + 1, ev.start_mark.column + 1,
					 CFG_MAX_DEPTH);
				r = -EINVAL;
			}
		} else if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT) {
			depth--;
		}
		yaml_event_delete(&ev);
		if (r < 0 || type == YAML_STREAM_END_EVENT)
			break;
	}
	yaml_parser_delete(&yp);
	return r;
}

int cfg_load_string(const char *name, const char *text, size_t len, struct config **out,
		    struct cfg_error *err)
{
	struct cfg_error dummy;
	yaml_parser_t yp;
	yaml_document_t doc, extra;
	struct parser p = {.name = name ? name : "<string>", .err = err ? err : &dummy};
	const yaml_node_t *root;
	int r;

	p.err->msg[0] = '\0';
	if (!out || !text)
		return -EINVAL;
	*out = NULL;
	r = check_depth(&p, text, len);
	if (r < 0)
		return r;
	if (!yaml_parser_initialize(&yp)) {
		snprintf(p.err->msg, sizeof(p.err->msg), "%s: out of memory", p.name);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
	if (!yaml_parser_load(&yp, &doc)) {
		r = syntax_error(&p, &yp, text, len);
		yaml_parser_delete(&yp);
		return r;
	}
	p.doc = &doc;
	root = yaml_document_get_root_node(&doc);
	if (!root || node_is_null(root)) {
		snprintf(p.err->msg, sizeof(p.err->msg),
			 "%s:1:1: configuration is empty, expected a mapping with 'targets' and "
			 "'probes'",
			 p.name);
		r = -EINVAL;
		goto out_doc;
	}
	/* A second document would be silently ignored: refuse it. */
	if (!yaml_parser_load(&yp, &extra)) {
		r = syntax_error(&p, &yp, text, len);
		goto out_doc;
	}
	if (yaml_document_get_root_node(&extra)) {
		r = fail_at(&p, yaml_document_get_root_node(&extra),
			    "only one YAML document is allowed in a configuration");
		yaml_document_delete(&extra);
		goto out_doc;
	}
	yaml_document_delete(&extra);

	p.c = calloc(1, sizeof(*p.c));
	if (!p.c) {
		r = -ENOMEM;
		goto out_doc;
	}
	set_defaults(p.c);
	p.c->source = strdup(p.name);
	r = p.c->source ? parse_root(&p, root) : -ENOMEM;
	if (r == -ENOMEM)
		snprintf(p.err->msg, sizeof(p.err->msg), "%s: out of memory", p.name);
	if (r < 0) {
		cfg_free(p.c);
		goto out_doc;
	}
	*out = p.c;
out_doc:
	free(p.refs);
	yaml_document_delete(&doc);
	yaml_parser_delete(&yp);
	return r;
}

/* What a path that is not a regular file is, for messages. */
static const char *file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISSOCK(mode))
		return "a socket";
	return "something else";
}

/*
 * Reads @fd to its end into a new buffer (*@buf, *@len; caller frees), at most
 * CFG_FILE_MAX bytes: to the end rather than st_size's worth, as the file may
 * grow meanwhile. 0, -EFBIG past the limit, or another -errno.
 */
static int read_bounded(int fd, char **buf, size_t *len)
{
	size_t cap = 0;
	char *nb;

	for (;;) {
		ssize_t n;

		if (*len == cap) {
			cap = cap ? cap * 2 : 4096;
			if (cap > CFG_FILE_MAX + 1)
				cap = CFG_FILE_MAX + 1;
			if (*len == cap)
				return -EFBIG;
			nb = realloc(*buf, cap);
			if (!nb)
				return -ENOMEM;
			*buf = nb;
		}
		n = read(fd, *buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		*len += (size_t)n;
	}
}

int cfg_load_file(const char *path, struct config **out, struct cfg_error *err)
{
	struct cfg_error dummy;
	const char *kind = NULL;
	char *buf = NULL;
	size_t len = 0;
	struct stat st;
	int fd, r;

	if (!err)
		err = &dummy;
	err->msg[0] = '\0';
	if (!out || !path)
		return -EINVAL;
	*out = NULL;
	/*
	 * A reload must not hang on the file: O_NONBLOCK, so that opening a FIFO does
	 * not wait for a writer (nor a file under a lease for its holder), and nothing
	 * but a regular file is read at all (a FIFO, a terminal or a device may never
	 * reach end of file).
	 */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		goto fail;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto fail_close;
	}
	if (!S_ISREG(st.st_mode)) {
		kind = file_kind(st.st_mode);
		r = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto fail_close;
	}
	if (st.st_size > (off_t)CFG_FILE_MAX) {
		r = -EFBIG;
		goto fail_close;
	}
	r = read_bounded(fd, &buf, &len);
	if (r < 0)
		goto fail_close;
	close(fd);
	r = cfg_load_string(path, buf ? buf : "", len, out, err);
	free(buf);
	return r;

fail_close:
	close(fd);
fail:
	free(buf);
	if (kind)
		snprintf(err->msg, sizeof(err->msg),
			 "%s: cannot read: it is %s, not a regular file", path, kind);
	else if (r == -EFBIG)
		snprintf(err->msg, sizeof(err->msg),
			 "%s: cannot read: larger than " CFG_FILE_MAX_NAME
			 ", the limit for a configuration file",
			 path);
	else
		snprintf(err->msg, sizeof(err->msg), "%s: cannot read: %s", path, strerror(-r));
	return r;
}

int cfg_load_default(struct config **out, struct cfg_error *err)
{
	return cfg_load_string(CFG_DEFAULT_SOURCE, cfg_default_yaml, strlen(cfg_default_yaml), out,
			       err);
}

void cfg_free(struct config *c)
{
	if (!c)
		return;
	for (unsigned i = 0; c->targets && i < c->n_targets; i++) {
		free(c->targets[i].path);
		free(c->targets[i].mount_path);
	}
	free(c->targets);
	free(c->probes);
	free(c->source);
	free(c);
}

/* ---- printing ------------------------------------------------------------------ */

/* Plain when it reads back as the same string, double-quoted otherwise. */
static void print_str(FILE *f, const char *s)
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
		 * (C0 and C1 controls, DEL) or would read back otherwise (NEL, the
		 * line and paragraph separators fold like line breaks; a BOM is
		 * dropped). */
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
		} else {
			fputc(u[0], f);
		}
	}
	fputc('"', f);
}

/* A path: '$' doubled so that reloading does not expand it again. */
static void print_path(FILE *f, const char *s)
{
	size_t n = strlen(s), dollars = 0;
	char *esc;

	for (size_t i = 0; i < n; i++)
		dollars += s[i] == '$';
	esc = malloc(n + dollars + 1);
	if (!esc) {
		print_str(f, s);
		return;
	}
	for (size_t i = 0, j = 0; i <= n; i++) {
		esc[j++] = s[i];
		if (s[i] == '$')
			esc[j++] = '$';
	}
	print_str(f, esc);
	free(esc);
}

static void print_target(const struct cfg_target *t, FILE *f)
{
	char buf[32];

	fputs("  - name: ", f);
	print_str(f, t->name);
	fprintf(f, "\n    %s: ", cfg_target_kind_name(t->kind));
	print_path(f, t->path ? t->path : "");
	fputc('\n', f);
	if (t->kind == CFG_TARGET_DIRECTORY) {
		cfg_format_size(t->size, buf, sizeof(buf));
		fprintf(f, "    size: %s\n", buf);
		cfg_format_size(t->layout_rate, buf, sizeof(buf));
		fprintf(f, "    layout_rate: %s%s\n", buf, t->layout_rate ? "/s" : "");
		if (t->keep_free_fraction > 0)
			cfg_format_percent(t->keep_free_fraction, buf, sizeof(buf));
		else
			cfg_format_size(t->keep_free_bytes, buf, sizeof(buf));
		fprintf(f, "    keep_free: %s\n", buf);
		fputs("    require_mount: ", f);
		if (t->require_mount == CFG_MOUNT_PATH)
			print_path(f, t->mount_path ? t->mount_path : "");
		else
			fputs(cfg_require_mount_name(t->require_mount), f);
		fputc('\n', f);
	}
	fprintf(f, "    direct: %s\n", t->direct ? "true" : "false");
	fprintf(f, "    allow_memory_backed: %s\n", t->allow_memory_backed ? "true" : "false");
	if (t->kind == CFG_TARGET_DEVICE)
		fprintf(f, "    allow_device_writes: %s\n",
			t->allow_device_writes ? "true" : "false");
}

/* The keys of a ping only. */
static void print_ping_keys(const struct cfg_probe *pr, FILE *f)
{
	char buf[32];

	fprintf(f, "    op: %s\n", io_op_name(pr->op));
	fprintf(f, "    sync: %s\n", pr->sync == CFG_SYNC_FDATASYNC ? "fdatasync" : "none");
	cfg_format_duration(pr->interval_ns, buf, sizeof(buf));
	fprintf(f, "    interval: %s\n", buf);
	cfg_format_size(pr->block_size, buf, sizeof(buf));
	fprintf(f, "    block_size: %s\n", buf);
}

/* The keys of a burst only, 'every' and 'timeout' aside. */
static void print_burst_keys(const struct cfg_probe *pr, FILE *f)
{
	char buf[32];

	fprintf(f, "    rw: %s\n", cfg_rw_name(pr->rw));
	if (pr->rw == CFG_RW_RANDRW) {
		cfg_format_percent(pr->rwmix_read, buf, sizeof(buf));
		fprintf(f, "    rwmix_read: %s\n", buf);
	}
	cfg_format_size(pr->block_size, buf, sizeof(buf));
	fprintf(f, "    block_size: %s", buf);
	if (pr->block_size_max != pr->block_size) {
		cfg_format_size(pr->block_size_max, buf, sizeof(buf));
		fprintf(f, "-%s", buf);
	}
	fprintf(f, "\n    iodepth: %u\n    jobs: %u\n", pr->iodepth, pr->jobs);
	if (pr->ios) {
		fprintf(f, "    ios: %llu\n", (unsigned long long)pr->ios);
	} else {
		cfg_format_duration(pr->duration_ns, buf, sizeof(buf));
		fprintf(f, "    duration: %s\n", buf);
	}
	fprintf(f, "    rate_iops: %llu\n", (unsigned long long)pr->rate_iops);
	cfg_format_duration(pr->ramp_ns, buf, sizeof(buf));
	fprintf(f, "    ramp: %s\n", buf);
	cfg_format_duration(pr->interval_ns, buf, sizeof(buf));
	fprintf(f, "    every: %s\n", buf);
}

void cfg_print(const struct config *c, FILE *f)
{
	char buf[96];

	fprintf(f, "# effective configuration from %s\n", c->source ? c->source : "<unknown>");
	if (strchr(c->listen_host, ':'))
		snprintf(buf, sizeof(buf), "[%s]:%u", c->listen_host, c->listen_port);
	else
		snprintf(buf, sizeof(buf), "%s:%u", c->listen_host, c->listen_port);
	fputs("listen: ", f);
	print_str(f, buf);
	fputs("\nbuckets: [", f);
	for (unsigned i = 0; i < c->n_buckets; i++) {
		cfg_format_duration(c->buckets_ns[i], buf, sizeof(buf));
		fprintf(f, "%s%s", i ? ", " : "", buf);
	}
	fprintf(f, "]\nnative_histogram_schema: %d\n", c->native_schema);
	cfg_format_duration(c->native_zero_threshold_ns, buf, sizeof(buf));
	fprintf(f, "native_histogram_zero_threshold: %s\n", buf);
	fputs("targets:\n", f);
	for (unsigned i = 0; i < c->n_targets; i++)
		print_target(&c->targets[i], f);
	fputs("probes:\n", f);
	for (unsigned i = 0; i < c->n_probes; i++) {
		const struct cfg_probe *pr = &c->probes[i];

		fputs("  - name: ", f);
		print_str(f, pr->name);
		fprintf(f, "\n    type: %s\n", cfg_probe_kind_name(pr->kind));
		fputs("    target: ", f);
		print_str(f, pr->target < c->n_targets ? c->targets[pr->target].name : "");
		fputc('\n', f);
		if (pr->kind == CFG_PROBE_BURST)
			print_burst_keys(pr, f);
		else
			print_ping_keys(pr, f);
		cfg_format_size(pr->working_set, buf, sizeof(buf));
		fprintf(f, "    working_set: %s\n", buf);
		cfg_format_duration(pr->timeout_ns, buf, sizeof(buf));
		fprintf(f, "    timeout: %s\n", buf);
		fputs("    engine: ", f);
		print_str(f, pr->engine);
		fputc('\n', f);
	}
}

/* ---- look-ups and names ------------------------------------------------------------ */

int cfg_target_index(const struct config *c, const char *name)
{
	if (!c || !name)
		return -1;
	for (unsigned i = 0; i < c->n_targets; i++)
		if (!strcmp(c->targets[i].name, name))
			return (int)i;
	return -1;
}

int cfg_probe_index(const struct config *c, const char *name)
{
	if (!c || !name)
		return -1;
	for (unsigned i = 0; i < c->n_probes; i++)
		if (!strcmp(c->probes[i].name, name))
			return (int)i;
	return -1;
}

/* NULL and "" alike: a path that is not set. */
static bool str_same(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

bool cfg_target_same(const struct cfg_target *a, const struct cfg_target *b)
{
	return strcmp(a->name, b->name) == 0 && a->kind == b->kind && str_same(a->path, b->path) &&
	       a->size == b->size && a->direct == b->direct &&
	       a->allow_memory_backed == b->allow_memory_backed &&
	       a->allow_device_writes == b->allow_device_writes &&
	       a->layout_rate == b->layout_rate && a->require_mount == b->require_mount &&
	       str_same(a->mount_path, b->mount_path) && a->keep_free_bytes == b->keep_free_bytes &&
	       a->keep_free_fraction == b->keep_free_fraction;
}

bool cfg_probe_writes(const struct cfg_probe *p)
{
	if (!p)
		return false;
	if (p->kind == CFG_PROBE_PING)
		return p->op == IO_WRITE;
	return p->rw == CFG_RW_RANDWRITE || p->rw == CFG_RW_RANDRW || p->rw == CFG_RW_WRITE;
}

uint64_t cfg_burst_buffer_bytes(const struct cfg_probe *p)
{
	uint64_t buf = (p->block_size_max + CFG_BURST_BUF_ALIGN - 1) & ~(CFG_BURST_BUF_ALIGN - 1);

	/* Within the schema's limits (jobs <= 64, iodepth <= 256, 16MiB) this is at
	 * most 2^38: callers with unchecked values check the ranges first. */
	return (uint64_t)p->jobs * p->iodepth * buf;
}

const char *cfg_target_kind_name(enum cfg_target_kind k)
{
	switch (k) {
	case CFG_TARGET_DIRECTORY:
		return "directory";
	case CFG_TARGET_FILE:
		return "file";
	case CFG_TARGET_DEVICE:
		return "device";
	}
	return "unknown";
}

const char *cfg_probe_kind_name(enum cfg_probe_kind k)
{
	switch (k) {
	case CFG_PROBE_PING:
		return "ping";
	case CFG_PROBE_BURST:
		return "burst";
	}
	return "unknown";
}

const char *cfg_rw_name(enum cfg_rw rw)
{
	switch (rw) {
	case CFG_RW_RANDREAD:
		return "randread";
	case CFG_RW_RANDWRITE:
		return "randwrite";
	case CFG_RW_RANDRW:
		return "randrw";
	case CFG_RW_READ:
		return "read";
	case CFG_RW_WRITE:
		return "write";
	}
	return "unknown";
}

const char *cfg_require_mount_name(enum cfg_require_mount m)
{
	switch (m) {
	case CFG_MOUNT_AUTO:
		return "auto";
	case CFG_MOUNT_NO:
		return "false";
	case CFG_MOUNT_SELF:
		return "true";
	case CFG_MOUNT_PATH:
		return "path";
	}
	return "unknown";
}
