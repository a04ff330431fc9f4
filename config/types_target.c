/* SPDX-License-Identifier: MIT */
/*
 * types_target — the types of a target's keys: its path ('directory', 'file'
 * or 'device'), 'require_mount', 'keep_free' and 'labels'.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_int.h"

/* ---- target values ------------------------------------------------------------ */

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
int cfg_get_path(struct parser *p, const yaml_node_t *n, const char *key, const char *s, char **out)
{
	int r;

	free(*out);
	*out = NULL;
	r = cfg_expand_env(p, n, key, s, out);
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
static int parse_require_mount(struct parser *p, const struct key *k, const yaml_node_t *v,
			       struct item *it)
{
	struct cfg_target *t = it->base;
	const char *s = NULL;
	bool self = false;
	int r;

	(void)k;

	r = cfg_get_scalar(p, v, "require_mount", "true, false, auto or a path", &s);
	if (r < 0)
		return r;
	if (cfg_scalar_is(v, "auto")) {
		t->require_mount = CFG_MOUNT_AUTO;
		return 0;
	}
	if (cfg_scalar_is(v, "true") || cfg_scalar_is(v, "false")) {
		r = cfg_get_bool(p, v, "require_mount", &self);
		t->require_mount = self ? CFG_MOUNT_SELF : CFG_MOUNT_NO;
		return r;
	}
	/* A relative path is told as such even when it is also too long. */
	r = cfg_get_path(p, v, "require_mount", s, &t->mount_path);
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
static int parse_keep_free(struct parser *p, const struct key *k, const yaml_node_t *v,
			   struct item *it)
{
	struct cfg_target *t = it->base;
	const char *s = NULL;
	int r;

	(void)k;

	r = cfg_get_plain(p, v, "keep_free", "a size or a percentage", &s);
	if (r < 0)
		return r;
	if (*s && s[strlen(s) - 1] == '%') {
		t->keep_free_bytes = 0;
		return cfg_get_percent(p, v, "keep_free", CFG_MAX_KEEP_FREE_FRACTION, "5%",
				       &t->keep_free_fraction);
	}
	t->keep_free_fraction = 0;
	return cfg_get_size(p, v, "keep_free", &words_keep_free, &t->keep_free_bytes);
}

/* ---- types: paths, require_mount, keep_free ---- */

/* 'directory', 'file' or 'device': the path, and so the target's kind (the row's). */
static int parse_target_path(struct parser *p, const struct key *k, const yaml_node_t *v,
			     struct item *it)
{
	struct cfg_target *t = it->base;
	const char *s = NULL;
	int r;

	r = cfg_get_scalar(p, v, k->name, "a path", &s);
	if (r == 0)
		r = cfg_get_path(p, v, k->name, s, &t->path);
	if (r < 0)
		return r;
	if (!*t->path)
		return fail_at(p, v, "'%s' must not be empty", k->name);
	t->kind = W_TARGET_KIND_OF(k->where);
	if (t->kind == CFG_TARGET_DEVICE && !device_path_valid(t->path))
		return fail_at(p, v,
			       "'device' must be a block device under /dev/, as in "
			       "/dev/sdb or /dev/disk/by-id/..., got '%s'",
			       t->path);
	return 0;
}

static void print_target_path(FILE *f, const struct key *k, const void *base,
			      const struct config *c)
{
	const struct cfg_target *t = base;

	(void)k;
	(void)c;
	fputc(' ', f);
	cfg_print_path(f, t->path ? t->path : "");
	fputc('\n', f);
}

static bool same_target_path(const struct key *k, const void *a, const void *b,
			     const struct config *ac, const struct config *bc)
{
	const struct cfg_target *ta = a, *tb = b;

	(void)k;
	(void)ac;
	(void)bc;
	return ta->kind == tb->kind && cfg_str_same(ta->path, tb->path);
}

const struct key_type type_target_path = {"path", parse_target_path, print_target_path,
					  same_target_path, NULL};

static void print_keep_free(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	const struct cfg_target *t = base;
	char buf[32];

	(void)k;
	(void)c;
	if (t->keep_free_fraction > 0)
		cfg_format_percent(t->keep_free_fraction, buf, sizeof(buf));
	else
		cfg_format_size(t->keep_free_bytes, buf, sizeof(buf));
	fprintf(f, " %s\n", buf);
}

static bool same_keep_free(const struct key *k, const void *a, const void *b,
			   const struct config *ac, const struct config *bc)
{
	const struct cfg_target *ta = a, *tb = b;

	(void)k;
	(void)ac;
	(void)bc;
	return ta->keep_free_bytes == tb->keep_free_bytes &&
	       ta->keep_free_fraction == tb->keep_free_fraction;
}

const struct key_type type_keep_free = {"size or percentage", parse_keep_free, print_keep_free,
					same_keep_free, NULL};

static void print_require_mount(FILE *f, const struct key *k, const void *base,
				const struct config *c)
{
	const struct cfg_target *t = base;

	(void)k;
	(void)c;
	fputc(' ', f);
	if (t->require_mount == CFG_MOUNT_PATH)
		cfg_print_path(f, t->mount_path ? t->mount_path : "");
	else
		fputs(cfg_require_mount_name(t->require_mount), f);
	fputc('\n', f);
}

static bool same_require_mount(const struct key *k, const void *a, const void *b,
			       const struct config *ac, const struct config *bc)
{
	const struct cfg_target *ta = a, *tb = b;

	(void)k;
	(void)ac;
	(void)bc;
	return ta->require_mount == tb->require_mount &&
	       cfg_str_same(ta->mount_path, tb->mount_path);
}

const struct key_type type_require_mount = {"true, false, auto or an absolute path",
					    parse_require_mount, print_require_mount,
					    same_require_mount, NULL};

/* ---- types: a target's labels ---- */

/* Set by iopulse_target_info itself (target, kind, path, fstype, device, model,
 * source) or by Prometheus when it scrapes (job, instance): a user label must not
 * hide one. */
static const char *const reserved_labels[] = {"target", "fstype", "kind", "path",     "device",
					      "model",	"source", "job",  "instance", NULL};

/* A Prometheus label name: [a-zA-Z_][a-zA-Z0-9_]*, shorter than CFG_NAME_MAX. */
static bool label_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= CFG_NAME_MAX || (*s >= '0' && *s <= '9'))
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == n;
}

/* C0 and C1 controls and DEL (a NUL too, which would end the value early). */
static bool has_control(const yaml_node_t *n)
{
	const unsigned char *u = n->data.scalar.value;

	for (size_t i = 0; i < n->data.scalar.length; i++)
		if (u[i] < 0x20 || u[i] == 0x7f ||
		    (u[i] == 0xc2 && i + 1 < n->data.scalar.length && u[i + 1] >= 0x80 &&
		     u[i + 1] <= 0x9f))
			return true;
	return false;
}

static int parse_label_name(struct parser *p, const yaml_node_t *kn, struct cfg_target *t)
{
	const char *s;

	if (kn->type != YAML_SCALAR_NODE || cfg_node_has_nul(kn))
		return fail_at(p, kn, "'labels' must map label names to strings, got %s as a name",
			       cfg_node_has_nul(kn) ? "a NUL byte (\\0)" : cfg_node_kind(kn));
	s = cfg_node_str(kn);
	if (!label_name_valid(s))
		return fail_at(p, kn,
			       "invalid label name '%s' in 'labels': use 1 to %d characters from "
			       "A-Z a-z 0-9 _, not starting with a digit",
			       s, CFG_NAME_MAX - 1);
	if (!strncmp(s, "__", 2))
		return fail_at(p, kn,
			       "label name '%s' in 'labels' must not start with '__' (reserved "
			       "by Prometheus)",
			       s);
	for (const char *const *r = reserved_labels; *r; r++)
		if (!strcmp(s, *r))
			return fail_at(p, kn,
				       "label name '%s' in 'labels' is reserved (target, kind, "
				       "path, fstype, device, model and source are "
				       "iopulse_target_info's own, job and instance Prometheus')",
				       s);
	for (unsigned i = 0; i < t->n_labels; i++)
		if (!strcmp(s, t->labels[i].name))
			return fail_at(p, kn, "duplicate label '%s' in 'labels'", s);
	strcpy(t->labels[t->n_labels].name, s);
	return 0;
}

static int parse_label_value(struct parser *p, const yaml_node_t *kn, const yaml_node_t *v,
			     struct cfg_target *t)
{
	struct cfg_label *l = &t->labels[t->n_labels];

	if (v->type != YAML_SCALAR_NODE)
		return fail_at(p, v, "label '%s' in 'labels' must be a string, got %s", l->name,
			       cfg_node_kind(v));
	if (cfg_node_is_null(v) || !v->data.scalar.length)
		return fail_at(p, cfg_node_is_null(v) ? kn : v,
			       "label '%s' in 'labels' must not be empty", l->name);
	if (v->data.scalar.length > CFG_LABEL_VALUE_MAX)
		return fail_at(p, v,
			       "label '%s' in 'labels' is %zu bytes long, at most %d are allowed",
			       l->name, v->data.scalar.length, CFG_LABEL_VALUE_MAX);
	if (has_control(v))
		return fail_at(p, v, "label '%s' in 'labels' must not contain control characters",
			       l->name);
	memcpy(l->value, v->data.scalar.value, v->data.scalar.length);
	l->value[v->data.scalar.length] = '\0';
	return 0;
}

/* 'labels': a mapping of at most CFG_MAX_LABELS names to bounded values. */
static int parse_labels(struct parser *p, const struct key *k, const yaml_node_t *n,
			struct item *it)
{
	struct cfg_target *t = it->base;
	size_t count;

	(void)k;
	if (n->type != YAML_MAPPING_NODE)
		return fail_at(p, n, "'labels' must be a mapping of label names to strings, got %s",
			       cfg_node_is_null(n) ? "nothing" : cfg_node_kind(n));
	count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
	if (count > CFG_MAX_LABELS)
		return fail_at(p, n, "'labels' has %zu entries, at most %d are allowed", count,
			       CFG_MAX_LABELS);
	t->n_labels = 0;
	for (size_t i = 0; i < count; i++) {
		const yaml_node_pair_t *pair = &n->data.mapping.pairs.start[i];
		const yaml_node_t *kn = cfg_node_get(p, pair->key),
				  *v = cfg_node_get(p, pair->value);
		int r = parse_label_name(p, kn, t);

		if (r == 0)
			r = parse_label_value(p, kn, v, t);
		if (r < 0)
			return r;
		t->n_labels++;
	}
	return 0;
}

static void print_labels(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	const struct cfg_target *t = base;

	(void)k;
	(void)c;
	fputc('\n', f);
	for (unsigned i = 0; i < t->n_labels; i++) {
		fputs("      ", f);
		cfg_print_str(f, t->labels[i].name);
		fputs(": ", f);
		cfg_print_str(f, t->labels[i].value);
		fputc('\n', f);
	}
}

/* In the order written: a reordered mapping is another target, as for any other
 * change of the file (simple, and it never keeps a wrong series). */
static bool same_labels(const struct key *k, const void *a, const void *b, const struct config *ac,
			const struct config *bc)
{
	const struct cfg_target *ta = a, *tb = b;

	(void)k;
	(void)ac;
	(void)bc;
	if (ta->n_labels != tb->n_labels)
		return false;
	for (unsigned i = 0; i < ta->n_labels; i++)
		if (strcmp(ta->labels[i].name, tb->labels[i].name) ||
		    strcmp(ta->labels[i].value, tb->labels[i].value))
			return false;
	return true;
}

bool cfg_shown_if_labels(const void *base)
{
	return ((const struct cfg_target *)base)->n_labels > 0;
}

const struct key_type type_labels = {"mapping of label names to strings", parse_labels,
				     print_labels, same_labels, NULL};
