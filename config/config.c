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
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "config/config.h"
#include "config/config_int.h"
#include "lib/escape.h"

#define CFG_FILE_MAX	   (1U << 20) /* largest configuration file we read */
#define CFG_FILE_MAX_NAME  "1 MiB"    /* CFG_FILE_MAX, for messages */
#define CFG_DEFAULT_SOURCE "<embedded default>"

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
bool is_close(const char *s, const char *cand)
{
	size_t ls = strlen(s), lc = strlen(cand);
	size_t limit = (ls > lc ? ls : lc) / 3;

	if (limit < 1)
		limit = 1;
	if (limit > 3)
		limit = 3;
	return edit_distance(s, cand) <= limit;
}

/* ---- reading an item ---------------------------------------------------------- */

bool in_section(const struct item *it, const struct key *k)
{
	return k->where & it->sec->mask;
}

/* The first row of @it's section named like @kn (a scalar) valid in @valid, or NULL. */
static const struct key *find_key(const struct item *it, const yaml_node_t *kn, unsigned valid)
{
	for (const struct key *k = schema; k < SCHEMA_END; k++)
		if (in_section(it, k) && (k->where & valid) && scalar_is(kn, k->name))
			return k;
	return NULL;
}

/* The key @name as written in @it (by whichever of its rows), or NULL. */
const yaml_node_t *item_key(const struct item *it, const char *name)
{
	for (const struct key *k = schema; k < SCHEMA_END; k++)
		if (in_section(it, k) && it->key[k - schema] && !strcmp(k->name, name))
			return it->key[k - schema];
	return NULL;
}

/* The value of key @name as written in @it, or NULL. */
const yaml_node_t *item_value(const struct item *it, const char *name)
{
	for (const struct key *k = schema; k < SCHEMA_END; k++)
		if (in_section(it, k) && it->value[k - schema] && !strcmp(k->name, name))
			return it->value[k - schema];
	return NULL;
}

/* Whether @k is the first row of its name valid in @valid: the one a list names. */
static bool first_of_name(const struct item *it, const struct key *k, unsigned valid)
{
	for (const struct key *o = schema; o < k; o++)
		if (in_section(it, o) && (o->where & valid) && !strcmp(o->name, k->name))
			return false;
	return true;
}

/* An unknown key: the valid key it is close to, or the list of them all. */
static int unknown_key(struct parser *p, const struct item *it, const yaml_node_t *kn)
{
	const char *ks = node_str(kn);
	char list[512] = "";

	for (const struct key *k = schema; k < SCHEMA_END; k++)
		if (in_section(it, k) && (k->where & it->valid) && is_close(ks, k->name))
			return fail_at(p, kn, "unknown key '%s' %s, did you mean '%s'?", ks,
				       it->sec->where, k->name);
	for (const struct key *k = schema; k < SCHEMA_END; k++) {
		if (!in_section(it, k) || !(k->where & it->valid) ||
		    !first_of_name(it, k, it->valid))
			continue;
		strncat(list, *list ? ", " : "", sizeof(list) - strlen(list) - 1);
		strncat(list, k->name, sizeof(list) - strlen(list) - 1);
	}
	return fail_at(p, kn, "unknown key '%s' %s (valid keys: %s)", ks, it->sec->where, list);
}

/* Reads one pair of @it's mapping into its row. */
static int read_pair(struct parser *p, struct item *it, const yaml_node_t *kn, const yaml_node_t *v)
{
	const char *where = it->sec->where;
	const struct key *k;
	const yaml_node_t *prev;

	if (kn->type != YAML_SCALAR_NODE)
		return fail_at(p, kn, "keys %s must be strings, got %s", where, node_kind(kn));
	if (node_has_nul(kn))
		return fail_at(p, kn, "keys %s must not contain a NUL byte (\\0)", where);
	k = find_key(it, kn, it->valid);
	if (!k)
		k = find_key(it, kn, it->sec->mask);
	if (!k)
		return unknown_key(p, it, kn);
	prev = item_key(it, k->name);
	if (prev)
		return fail_at(p, kn, "duplicate key '%s' %s (first defined at line %zu)", k->name,
			       where, prev->start_mark.line + 1);
	it->key[k - schema] = kn;
	it->value[k - schema] = v;
	if (!(k->where & it->valid))
		return it->sec->misplaced(p, it, k, kn);
	return k->type->parse(p, k, v, it);
}

/* Reads mapping @m into @it, in document order, stopping at the first error. */
static int walk_item(struct parser *p, struct item *it, const yaml_node_t *m)
{
	for (yaml_node_pair_t *pair = m->data.mapping.pairs.start; pair < m->data.mapping.pairs.top;
	     pair++) {
		int r = read_pair(p, it, node_get(p, pair->key), node_get(p, pair->value));

		if (r < 0)
			return r;
	}
	return 0;
}

/* The required keys of @it (at @m) that are missing, in table order. */
static int check_required(struct parser *p, const struct item *it, const yaml_node_t *m)
{
	const struct key *name = NULL;

	for (const struct key *k = schema; k < SCHEMA_END && !name; k++)
		if (in_section(it, k) && !strcmp(k->name, "name"))
			name = k;
	for (const struct key *k = schema; k < SCHEMA_END; k++) {
		if (!in_section(it, k) || !k->required || item_key(it, k->name))
			continue;
		if (!name || k == name)
			return fail_at(p, m, "%s is missing required key '%s'", it->sec->noun,
				       k->name);
		return fail_at(p, m, "%s '%s' is missing required key '%s'", it->sec->noun,
			       (const char *)cfield(name, it->base), k->name);
	}
	return 0;
}

/* Each key valid in @it's kind and not written takes its row's default. */
static int set_defaults(struct parser *p, struct item *it)
{
	for (const struct key *k = schema; k < SCHEMA_END; k++) {
		yaml_node_t n = {.type = YAML_SCALAR_NODE};
		int r;

		if (!in_section(it, k) || !(k->where & it->valid) || item_key(it, k->name))
			continue;
		if (k->type->set_default) {
			k->type->set_default(k, it->base);
			continue;
		}
		if (!k->def)
			continue;
		n.data.scalar.value = (yaml_char_t *)k->def;
		n.data.scalar.length = strlen(k->def);
		n.data.scalar.style = YAML_PLAIN_SCALAR_STYLE;
		r = k->type->parse(p, k, &n, it);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The later of two keys in the document, for "has both" errors. */
const yaml_node_t *later_key(const yaml_node_t *a, const yaml_node_t *b)
{
	return a->start_mark.index > b->start_mark.index ? a : b;
}

/* ---- targets ------------------------------------------------------------------- */

static int parse_target(struct parser *p, const yaml_node_t *m, unsigned idx)
{
	struct cfg_target *t = &p->c->targets[idx];
	struct item it = {.sec = &sec_target, .base = t, .valid = W_TARGET, .kind = -1};
	int r;

	if (m->type != YAML_MAPPING_NODE)
		return fail_at(p, m, "each item of 'targets' must be a mapping, got %s",
			       node_kind(m));
	t->pos.line = (unsigned)m->start_mark.line + 1;
	t->pos.col = (unsigned)m->start_mark.column + 1;
	r = walk_item(p, &it, m);
	if (r == 0)
		r = check_required(p, &it, m);
	if (r == 0)
		r = check_target_kind(p, m, &it);
	if (r == 0)
		r = set_defaults(p, &it);
	if (r < 0)
		return r;
	/* Measured at their own size, never laid out, nothing created beside them. */
	if (t->kind != CFG_TARGET_DIRECTORY)
		t->require_mount = CFG_MOUNT_NO;
	for (unsigned i = 0; i < idx; i++)
		if (!strcmp(p->c->targets[i].name, t->name))
			return fail_at(p, m,
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

int parse_targets(struct parser *p, const struct key *k, const yaml_node_t *n, struct item *it)
{
	int count, r;

	(void)k;
	(void)it;
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

/*
 * The kind of probe, when 'type' is present and valid, or -1. Looked up before
 * the walk, since which keys are valid depends on it and 'type' may come last; a
 * bad or missing 'type' is reported by the walk itself, in document order.
 */
static int probe_kind_early(struct parser *p, const yaml_node_t *m)
{
	for (yaml_node_pair_t *pair = m->data.mapping.pairs.start; pair < m->data.mapping.pairs.top;
	     pair++) {
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

static int parse_probe(struct parser *p, const yaml_node_t *m, unsigned idx)
{
	struct cfg_probe *pr = &p->c->probes[idx];
	struct item it = {.sec = &sec_probe, .base = pr, .valid = W_PROBE};
	struct probe_refs *ref = &p->refs[idx];
	int r;

	if (m->type != YAML_MAPPING_NODE)
		return fail_at(p, m, "each item of 'probes' must be a mapping, got %s",
			       node_kind(m));
	pr->pos.line = (unsigned)m->start_mark.line + 1;
	pr->pos.col = (unsigned)m->start_mark.column + 1;
	it.kind = probe_kind_early(p, m);
	if (it.kind >= 0)
		it.valid = W_PROBE_KIND(it.kind);
	r = walk_item(p, &it, m);
	if (r == 0)
		r = check_required(p, &it, m);
	if (r == 0)
		r = set_defaults(p, &it);
	if (r == 0)
		r = check_probe(p, m, &it, idx);
	if (r < 0)
		return r;
	ref->target = item_value(&it, "target");
	ref->writes = item_value(&it, pr->kind == CFG_PROBE_PING    ? "op"
				      : pr->kind == CFG_PROBE_BURST ? "rw"
								    : "type");
	ref->ws = item_value(&it, "working_set");
	ref->bs = item_value(&it, "block_size");
	ref->item = m;
	return 0;
}

int parse_probes(struct parser *p, const struct key *k, const yaml_node_t *n, struct item *it)
{
	int count, r;

	(void)k;
	(void)it;
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

/* ---- top level ----------------------------------------------------------------- */

static int parse_root(struct parser *p, const yaml_node_t *root)
{
	struct item it = {.sec = &sec_top, .base = p->c, .valid = W_TOP, .kind = -1};
	int r;

	if (root->type != YAML_MAPPING_NODE)
		return fail_at(
			p, root,
			"configuration must be a mapping with 'targets' and 'probes', got %s",
			node_kind(root));
	r = walk_item(p, &it, root);
	if (r == 0)
		r = check_required(p, &it, root);
	if (r == 0)
		r = set_defaults(p, &it);
	if (r < 0)
		return r;
	return resolve_probes(p);
}

int cfg_load_string(const char *name, const char *text, size_t len, struct config **out,
		    struct cfg_error *err)
{
	struct cfg_error dummy;
	yaml_document_t doc;
	struct parser p = {.name = name ? name : "<string>", .err = err ? err : &dummy};
	int r;

	p.err->msg[0] = '\0';
	if (!out || !text)
		return -EINVAL;
	*out = NULL;
	r = cfg_yaml_load(p.name, text, len, &doc, CFG_EMPTY_MESSAGE, p.err);
	if (r < 0)
		return r;
	p.doc = &doc;
	p.c = calloc(1, sizeof(*p.c));
	if (p.c) {
		p.c->source = strdup(p.name);
		r = p.c->source ? parse_root(&p, yaml_document_get_root_node(&doc)) : -ENOMEM;
		if (r == -ENOMEM)
			snprintf(p.err->msg, sizeof(p.err->msg), "%s: out of memory", p.name);
	} else {
		r = -ENOMEM;
	}
	if (r < 0)
		cfg_free(p.c);
	else
		*out = p.c;
	free(p.refs);
	yaml_document_delete(&doc);
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

int cfg_read_file(const char *path, char **text, size_t *len, struct cfg_error *err)
{
	const char *kind = NULL;
	char *buf = NULL;
	struct stat st;
	int fd, r;

	*text = NULL;
	*len = 0;
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
	r = read_bounded(fd, &buf, len);
	if (r < 0)
		goto fail_close;
	close(fd);
	*text = buf;
	return 0;

fail_close:
	close(fd);
fail:
	free(buf);
	*len = 0;
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

int cfg_load_file(const char *path, struct config **out, struct cfg_error *err)
{
	struct cfg_error dummy;
	char *buf;
	size_t len;
	int r;

	if (!err)
		err = &dummy;
	err->msg[0] = '\0';
	if (!out || !path)
		return -EINVAL;
	*out = NULL;
	r = cfg_read_file(path, &buf, &len, err);
	if (r < 0)
		return r;
	r = cfg_load_string(path, buf ? buf : "", len, out, err);
	free(buf);
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

/*
 * Prints the keys of one item valid on its kind (@valid), group by group in
 * table order, the first after @first and the others after @rest.
 */
static void print_item(FILE *f, const struct section *sec, unsigned valid, const void *base,
		       const struct config *c, const char *first, const char *rest)
{
	const char *indent = first;

	for (unsigned group = 0; group < PRINT_GROUPS; group++) {
		for (const struct key *k = schema; k < SCHEMA_END; k++) {
			if (!(k->where & sec->mask) || !(k->where & valid) ||
			    k->print_group != group || (k->shown && !k->shown(base)))
				continue;
			fprintf(f, "%s%s:", indent, k->name);
			k->type->print(f, k, base, c);
			indent = rest;
		}
	}
}

void print_targets(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	(void)k;
	(void)base;
	fputc('\n', f);
	for (unsigned i = 0; i < c->n_targets; i++)
		print_item(f, &sec_target, W_TARGET_KIND(c->targets[i].kind), &c->targets[i], c,
			   "  - ", "    ");
}

void print_probes(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	(void)k;
	(void)base;
	fputc('\n', f);
	for (unsigned i = 0; i < c->n_probes; i++)
		print_item(f, &sec_probe, W_PROBE_KIND(c->probes[i].kind), &c->probes[i], c, "  - ",
			   "    ");
}

void cfg_print(const struct config *c, FILE *f)
{
	char src[ESC_SIZE(PATH_MAX)];

	/* Escaped: a newline in the file's name would end the comment, and what
	 * follows it would be YAML (or drive a terminal). */
	fprintf(f, "# effective configuration from %s\n",
		esc_str(src, sizeof(src), c->source ? c->source : "<unknown>"));
	print_item(f, &sec_top, W_TOP, c, c, "", "");
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

/* Every field a row of @sec names is the same in @a and @b. */
static bool item_same(const struct section *sec, const void *a, const void *b,
		      const struct config *ac, const struct config *bc)
{
	for (const struct key *k = schema; k < SCHEMA_END; k++)
		if ((k->where & sec->mask) && (!k->type->same || !k->type->same(k, a, b, ac, bc)))
			return false;
	return true;
}

bool cfg_target_same(const struct cfg_target *a, const struct cfg_target *b)
{
	return item_same(&sec_target, a, b, NULL, NULL);
}

bool cfg_probe_same(const struct config *ac, const struct cfg_probe *a, const struct config *bc,
		    const struct cfg_probe *b)
{
	return item_same(&sec_probe, a, b, ac, bc);
}

int cfg_key_doc(unsigned i, struct cfg_key_doc *d)
{
	const struct key *k = schema + i;

	if (!d || i >= (unsigned)(SCHEMA_END - schema))
		return -ENOENT;
	if (k->where & W_TOP)
		d->section = "TOP LEVEL";
	else if (k->where & W_TARGET)
		d->section = "TARGETS";
	else if (k->where & W_PING)
		d->section = "PING PROBES";
	else if (k->where & W_BURST)
		d->section = "BURST PROBES";
	else
		d->section = "VERIFY PROBES";
	d->name = k->name;
	if (k->type->word)
		snprintf(d->type, sizeof(d->type), "%s", k->type->word);
	else
		enum_word(k->names, d->type, sizeof(d->type));
	d->def = k->def;
	d->required = k->required;
	d->help = k->help;
	return 0;
}

bool cfg_probe_writes(const struct cfg_probe *p)
{
	if (!p)
		return false;
	if (p->kind == CFG_PROBE_PING)
		return p->op == IO_WRITE;
	if (p->kind == CFG_PROBE_VERIFY)
		return true;
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
	/* The names of the keys that make a target of each kind. */
	static const char *const names[] = {
		[CFG_TARGET_DIRECTORY] = "directory",
		[CFG_TARGET_FILE] = "file",
		[CFG_TARGET_DEVICE] = "device",
	};

	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "unknown";
}

const char *cfg_probe_kind_name(enum cfg_probe_kind k)
{
	return (unsigned)k <= CFG_PROBE_VERIFY ? probe_kind_names[k] : "unknown";
}

const char *cfg_rw_name(enum cfg_rw rw)
{
	return (unsigned)rw <= CFG_RW_WRITE ? rw_names[rw] : "unknown";
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
