/* SPDX-License-Identifier: MIT */
/*
 * walk — the document read into struct config by the schema: each mapping in
 * document order, its unknown (with a suggestion), duplicate, misplaced and
 * missing keys, its defaults; the lists of targets and probes, and the root.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_int.h"

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
bool cfg_is_close(const char *s, const char *cand)
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

bool cfg_in_section(const struct item *it, const struct key *k)
{
	return k->where & it->sec->mask;
}

/* The first row of @it's section named like @kn (a scalar) valid in @valid, or NULL. */
static const struct key *find_key(const struct item *it, const yaml_node_t *kn, unsigned valid)
{
	for (const struct key *k = schema; k < SCHEMA_END; k++)
		if (cfg_in_section(it, k) && (k->where & valid) && cfg_scalar_is(kn, k->name))
			return k;
	return NULL;
}

/* The key @name as written in @it (by whichever of its rows), or NULL. */
const yaml_node_t *cfg_item_key(const struct item *it, const char *name)
{
	for (const struct key *k = schema; k < SCHEMA_END; k++)
		if (cfg_in_section(it, k) && it->key[k - schema] && !strcmp(k->name, name))
			return it->key[k - schema];
	return NULL;
}

/* The value of key @name as written in @it, or NULL. */
const yaml_node_t *cfg_item_value(const struct item *it, const char *name)
{
	for (const struct key *k = schema; k < SCHEMA_END; k++)
		if (cfg_in_section(it, k) && it->value[k - schema] && !strcmp(k->name, name))
			return it->value[k - schema];
	return NULL;
}

/* Whether @k is the first row of its name valid in @valid: the one a list names. */
static bool first_of_name(const struct item *it, const struct key *k, unsigned valid)
{
	for (const struct key *o = schema; o < k; o++)
		if (cfg_in_section(it, o) && (o->where & valid) && !strcmp(o->name, k->name))
			return false;
	return true;
}

/* An unknown key: the valid key it is close to, or the list of them all. */
static int unknown_key(struct parser *p, const struct item *it, const yaml_node_t *kn)
{
	const char *ks = cfg_node_str(kn);
	char list[512] = "";

	for (const struct key *k = schema; k < SCHEMA_END; k++)
		if (cfg_in_section(it, k) && (k->where & it->valid) && cfg_is_close(ks, k->name))
			return fail_at(p, kn, "unknown key '%s' %s, did you mean '%s'?", ks,
				       it->sec->where, k->name);
	for (const struct key *k = schema; k < SCHEMA_END; k++) {
		if (!cfg_in_section(it, k) || !(k->where & it->valid) ||
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
		return fail_at(p, kn, "keys %s must be strings, got %s", where, cfg_node_kind(kn));
	if (cfg_node_has_nul(kn))
		return fail_at(p, kn, "keys %s must not contain a NUL byte (\\0)", where);
	k = find_key(it, kn, it->valid);
	if (!k)
		k = find_key(it, kn, it->sec->mask);
	if (!k)
		return unknown_key(p, it, kn);
	prev = cfg_item_key(it, k->name);
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
		int r = read_pair(p, it, cfg_node_get(p, pair->key), cfg_node_get(p, pair->value));

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
		if (cfg_in_section(it, k) && !strcmp(k->name, "name"))
			name = k;
	for (const struct key *k = schema; k < SCHEMA_END; k++) {
		if (!cfg_in_section(it, k) || !k->required || cfg_item_key(it, k->name))
			continue;
		if (!name || k == name)
			return fail_at(p, m, "%s is missing required key '%s'", it->sec->noun,
				       k->name);
		return fail_at(p, m, "%s '%s' is missing required key '%s'", it->sec->noun,
			       (const char *)cfg_cfield(name, it->base), k->name);
	}
	return 0;
}

/* Each key valid in @it's kind and not written takes its row's default. */
static int set_defaults(struct parser *p, struct item *it)
{
	for (const struct key *k = schema; k < SCHEMA_END; k++) {
		yaml_node_t n = {.type = YAML_SCALAR_NODE};
		int r;

		if (!cfg_in_section(it, k) || !(k->where & it->valid) || cfg_item_key(it, k->name))
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
const yaml_node_t *cfg_later_key(const yaml_node_t *a, const yaml_node_t *b)
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
			       cfg_node_kind(m));
	t->pos.line = (unsigned)m->start_mark.line + 1;
	t->pos.col = (unsigned)m->start_mark.column + 1;
	r = walk_item(p, &it, m);
	if (r == 0)
		r = check_required(p, &it, m);
	if (r == 0)
		r = cfg_check_target_kind(p, m, &it);
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
		if (cfg_node_is_null(n))
			return fail_at(p, n, "'%s' must not be empty", key);
		return fail_at(p, n, "'%s' must be a list, got %s", key, cfg_node_kind(n));
	}
	count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (count < 1)
		return fail_at(p, n, "'%s' must not be empty", key);
	if (count > max)
		return fail_at(p, n, "'%s' has %zu items, at most %u are allowed", key, count, max);
	return (int)count;
}

int cfg_parse_targets(struct parser *p, const struct key *k, const yaml_node_t *n, struct item *it)
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
		r = parse_target(p, cfg_node_get(p, n->data.sequence.items.start[i]), (unsigned)i);
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
		const yaml_node_t *v = cfg_node_get(p, pair->value);

		if (!cfg_scalar_is(cfg_node_get(p, pair->key), "type"))
			continue;
		for (int i = 0; probe_kind_names[i]; i++)
			if (cfg_scalar_is(v, probe_kind_names[i]))
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
			       cfg_node_kind(m));
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
		r = cfg_check_probe(p, m, &it, idx);
	if (r < 0)
		return r;
	ref->target = cfg_item_value(&it, "target");
	ref->writes = cfg_item_value(&it, cfg_kind(pr->kind)->writes_key);
	ref->ws = cfg_item_value(&it, "working_set");
	ref->bs = cfg_item_value(&it, "block_size");
	ref->item = m;
	return 0;
}

int cfg_parse_probes(struct parser *p, const struct key *k, const yaml_node_t *n, struct item *it)
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
		r = parse_probe(p, cfg_node_get(p, n->data.sequence.items.start[i]), (unsigned)i);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- top level ----------------------------------------------------------------- */

int cfg_parse_root(struct parser *p, const yaml_node_t *root)
{
	struct item it = {.sec = &sec_top, .base = p->c, .valid = W_TOP, .kind = -1};
	int r;

	if (root->type != YAML_MAPPING_NODE)
		return fail_at(
			p, root,
			"configuration must be a mapping with 'targets' and 'probes', got %s",
			cfg_node_kind(root));
	r = walk_item(p, &it, root);
	if (r == 0)
		r = check_required(p, &it, root);
	if (r == 0)
		r = set_defaults(p, &it);
	if (r < 0)
		return r;
	return cfg_resolve_probes(p);
}
