/* SPDX-License-Identifier: MIT */
/*
 * types_probe — the types of a probe's keys: 'block_size' (a size, or a range
 * for bursts) and 'target'.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_int.h"

/* ---- probe values ------------------------------------------------------------- */

static int check_block_size(struct parser *p, const yaml_node_t *n, uint64_t v)
{
	int r;

	r = cfg_check_range(p, n, "block_size", v, CFG_MIN_BLOCK_SIZE, CFG_MAX_BLOCK_SIZE, false);
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
static int parse_block_size(struct parser *p, const struct key *k, const yaml_node_t *n,
			    struct item *it)
{
	struct cfg_probe *pr = it->base;
	char *lo_s, a[32], b[32];
	const char *s = NULL, *dash;
	int r;

	(void)k;

	r = cfg_get_plain(p, n, "block_size", "a size", &s);
	if (r < 0)
		return r;
	dash = strchr(s, '-');
	if (!dash || dash == s) {
		r = cfg_get_size(p, n, "block_size", &words_size, &pr->block_size);
		if (r < 0)
			return r;
		pr->block_size_max = pr->block_size;
		return check_block_size(p, n, pr->block_size);
	}
	if (it->kind < 0 || !cfg_kind((enum cfg_probe_kind)it->kind)->block_range)
		return fail_at(p, n,
			       "'block_size' of a %s probe must be one size, got '%s': ranges "
			       "are for burst probes",
			       cfg_probe_kind_name((enum cfg_probe_kind)it->kind), s);
	lo_s = strndup(s, (size_t)(dash - s));
	if (!lo_s)
		return -ENOMEM;
	r = cfg_parse_size(lo_s, &pr->block_size);
	if (r < 0)
		r = cfg_size_error(p, n, "block_size", s, lo_s, r, &words_size);
	free(lo_s);
	if (r < 0)
		return r;
	r = cfg_parse_size(dash + 1, &pr->block_size_max);
	if (r < 0)
		return cfg_size_error(p, n, "block_size", s, dash + 1, r, &words_size);
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

/* ---- types: target ---- */

/* A probe's 'target': resolved to an index once every target is read. */
static int parse_target_ref(struct parser *p, const struct key *k, const yaml_node_t *v,
			    struct item *it)
{
	const char *s = NULL;

	(void)it;
	return cfg_get_scalar(p, v, k->name, "a target name", &s);
}

static void print_target_ref(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	const struct cfg_probe *pr = base;

	(void)k;
	fputc(' ', f);
	cfg_print_str(f, pr->target < c->n_targets ? c->targets[pr->target].name : "");
	fputc('\n', f);
}

/* The same target, by its definition: a probe on a changed target is changed. */
static bool same_target_ref(const struct key *k, const void *a, const void *b,
			    const struct config *ac, const struct config *bc)
{
	const struct cfg_probe *pa = a, *pb = b;

	(void)k;
	return cfg_target_same(&ac->targets[pa->target], &bc->targets[pb->target]);
}

const struct key_type type_target_ref = {"target name", parse_target_ref, print_target_ref,
					 same_target_ref, NULL};

/* ---- types of one key each ---- */

static void print_block_size(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	const struct cfg_probe *pr = base;
	char buf[32];

	(void)k;
	(void)c;
	cfg_format_size(pr->block_size, buf, sizeof(buf));
	fprintf(f, " %s", buf);
	if (pr->block_size_max != pr->block_size) {
		cfg_format_size(pr->block_size_max, buf, sizeof(buf));
		fprintf(f, "-%s", buf);
	}
	fputc('\n', f);
}

static bool same_block_size(const struct key *k, const void *a, const void *b,
			    const struct config *ac, const struct config *bc)
{
	const struct cfg_probe *pa = a, *pb = b;

	(void)k;
	(void)ac;
	(void)bc;
	return pa->block_size == pb->block_size && pa->block_size_max == pb->block_size_max;
}

const struct key_type type_block_size = {"size", parse_block_size, print_block_size,
					 same_block_size, NULL};
/* The same, documented for bursts, which may give a range. */
const struct key_type type_block_range = {"size or range MIN-MAX", parse_block_size,
					  print_block_size, same_block_size, NULL};
