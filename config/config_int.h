/* SPDX-License-Identifier: MIT */
/*
 * config_int — what the files that read a configuration (config.c and the
 * files it is split into) share: the parser's state, the schema's types
 * (struct key, one row per key), and what each file defines for the others.
 * Private to config/: config.h is the interface.
 */
#ifndef IOPULSE_CONFIG_INT_H
#define IOPULSE_CONFIG_INT_H

#include <yaml.h>

#include "config/config.h"

struct probe_refs {
	const yaml_node_t *target; /* value node of 'target' */
	const yaml_node_t *writes; /* value node of 'op' (ping) or 'rw' (burst), or NULL */
	const yaml_node_t *ws;	   /* value node of 'working_set', NULL when defaulted */
	const yaml_node_t *bs;	   /* value node of 'block_size', NULL when defaulted */
	const yaml_node_t *item;
};

struct parser {
	const char *name;
	size_t *str_tagged; /* where the scalars tagged !!str start (cfg_node_tagged_str()) */
	size_t n_str_tagged;
	struct cfg_error *err;
	yaml_document_t *doc;
	struct config *c;
	struct probe_refs *refs;
};

/*
 * Where a key is valid: bits of the items it may appear in. W_TOP is bit 0;
 * from W_PROBE_SHIFT comes a bit for each of the CFG_PROBE_KINDS kinds of
 * probe, then from W_TARGET_SHIFT, last, one for each kind of target. A kind
 * added to either enum gets a bit of its own: the target bits move up with the
 * count of probe kinds, and nothing lies above them.
 */
#define W_TOP		 (1U << 0)
#define W_PROBE_SHIFT	 1
#define W_TARGET_SHIFT	 (W_PROBE_SHIFT + CFG_PROBE_KINDS)
#define W_PROBE_KIND(k)	 (1U << (W_PROBE_SHIFT + (k)))	/* enum cfg_probe_kind */
#define W_TARGET_KIND(k) (1U << (W_TARGET_SHIFT + (k))) /* enum cfg_target_kind */
#define W_DIRECTORY	 W_TARGET_KIND(CFG_TARGET_DIRECTORY)
#define W_FILE		 W_TARGET_KIND(CFG_TARGET_FILE)
#define W_DEVICE	 W_TARGET_KIND(CFG_TARGET_DEVICE)
#define W_TARGET	 (W_DIRECTORY | W_FILE | W_DEVICE)
#define W_PING		 W_PROBE_KIND(CFG_PROBE_PING)
#define W_BURST		 W_PROBE_KIND(CFG_PROBE_BURST)
#define W_VERIFY	 W_PROBE_KIND(CFG_PROBE_VERIFY)
#define W_PROBE		 (((1U << CFG_PROBE_KINDS) - 1) << W_PROBE_SHIFT) /* every kind's */
_Static_assert(W_TARGET_SHIFT + CFG_TARGET_DEVICE < 32, "the W_* bits must fit 'unsigned'");

/* The kind of the lowest target (probe) bit in @w, a row's 'where'. */
#define W_TARGET_KIND_OF(w) ((enum cfg_target_kind)(__builtin_ctz(W_TARGET & (w)) - W_TARGET_SHIFT))
#define W_PROBE_KIND_OF(w)  ((enum cfg_probe_kind)(__builtin_ctz(W_PROBE & (w)) - W_PROBE_SHIFT))

#define SCHEMA_MAX   64 /* rows; struct item has a slot for each */
#define PRINT_GROUPS 3	/* values of struct key.print_group */

struct key;

/* A mapping being read: the top level, a target or a probe. */
struct item {
	const struct section *sec;
	void *base;	/* the struct config, cfg_target or cfg_probe it fills */
	unsigned valid; /* W_* of its kind; all of the section's while not known */
	int kind;	/* a probe's kind from its 'type', -1 while not known */
	const yaml_node_t *key[SCHEMA_MAX];   /* by row: the key as written, or NULL */
	const yaml_node_t *value[SCHEMA_MAX]; /* by row: its value */
};

/* How one kind of value is read, printed and compared. */
struct key_type {
	const char *word; /* as iopulse.yaml(5) names it; NULL: the key's names, "a, b or c" */
	int (*parse)(struct parser *p, const struct key *k, const yaml_node_t *v, struct item *it);
	/* Writes " value\n" (or, for a list, "\n" and the items) after "key:". */
	void (*print)(FILE *f, const struct key *k, const void *base, const struct config *c);
	/* Whether the field is the same in @a and @b (of configurations @ac and @bc). */
	bool (*same)(const struct key *k, const void *a, const void *b, const struct config *ac,
		     const struct config *bc);
	/* Sets the default where it cannot be written as one scalar (NULL: parse .def). */
	void (*set_default)(const struct key *k, void *base);
};

struct key {
	const char *name;
	unsigned where; /* W_*: the items it is valid in */
	const struct key_type *type;
	size_t off, size; /* of the field it fills (FIELD()) */
	const char *def;  /* the default, as written in YAML; NULL: none */
	bool required;
	int64_t min, max;		 /* limits, for the types that have them */
	const char *const *names;	 /* enums: the values, in enum order, NULL-terminated */
	const char *elsewhere;		 /* written where not valid: why, or what to use instead */
	bool (*shown)(const void *base); /* cfg_print: printed only when this says so */
	unsigned print_group; /* cfg_print prints an item's keys by group, then in table order */
	/* How the figures are judged, not what is measured or how: a change does not
	 * make the target (or probe) another one (cfg_target_same() ignores it), so
	 * a reload keeps its state and its baselines and the new value applies. */
	bool judgement;
	const char *help; /* one line, what it is for */
};

/* A section of the file: the rows whose 'where' meet @mask. */
struct section {
	unsigned mask;
	const char *where; /* for messages: "at top level", "in target", "in probe" */
	const char *noun;  /* "configuration", "target", "probe" */
	/* The error for a key that is valid in another kind of item only. */
	int (*misplaced)(struct parser *p, const struct item *it, const struct key *k,
			 const yaml_node_t *knode);
};

/* elide.c */
/* @fmt rewritten so that each string argument quoted in it ('%s') longer than
 * ELIDE_LONG bytes prints only its first bytes, "…" and its length; the same
 * arguments @ap (not consumed) print it. NULL when none is that long (or @fmt
 * has a conversion it does not know, or out of memory); else free() it. */
__attribute__((format_arg(1))) char *elide_format(const char *fmt, va_list ap);
/* Where the part of the file name @name that a message shows starts: @name, or
 * past its first bytes when it is longer than ELIDE_NAME (shown after "…"). */
const char *cfg_elide_name(const char *name);

/* yaml.c */
__attribute__((format(printf, 3, 4))) int fail_at(struct parser *p, const yaml_node_t *n,
						  const char *fmt, ...);
yaml_node_t *cfg_node_get(struct parser *p, int index);
const char *cfg_node_str(const yaml_node_t *n);
const char *cfg_node_kind(const yaml_node_t *n);
bool cfg_scalar_is(const yaml_node_t *n, const char *lit);
bool cfg_node_is_null(const yaml_node_t *n);
bool cfg_node_has_nul(const yaml_node_t *n);
bool cfg_node_tagged_str(const struct parser *p, const yaml_node_t *n);
/* cfg_yaml_load() with @p's name and error, noting in @p what cfg_node_tagged_str()
 * asks (@p->str_tagged: free() it). */
int cfg_parser_load(struct parser *p, const char *text, size_t len, yaml_document_t *doc,
		    const char *empty);
int cfg_get_scalar(struct parser *p, const yaml_node_t *n, const char *key, const char *what,
		   const char **out);

/* env.c */
int cfg_expand_env(struct parser *p, const yaml_node_t *n, const char *key, const char *in,
		   char **out);

/* values.c */
struct size_words;
int cfg_get_plain(struct parser *p, const yaml_node_t *n, const char *key, const char *what,
		  const char **out);
int cfg_get_bool(struct parser *p, const yaml_node_t *n, const char *key, bool *out);
extern const struct size_words words_size;
extern const struct size_words words_keep_free;
int cfg_size_error(struct parser *p, const yaml_node_t *n, const char *key, const char *range,
		   const char *s, int r, const struct size_words *w);
int cfg_get_size(struct parser *p, const yaml_node_t *n, const char *key,
		 const struct size_words *w, uint64_t *out);
int cfg_get_rate(struct parser *p, const yaml_node_t *n, const char *key, uint64_t *out);
int cfg_get_uint(struct parser *p, const yaml_node_t *n, const char *key, uint64_t *out);
int cfg_check_count(struct parser *p, const yaml_node_t *n, const char *key, uint64_t v,
		    uint64_t lo, uint64_t hi);
int cfg_get_percent(struct parser *p, const yaml_node_t *n, const char *key, double max,
		    const char *example, double *out);
int cfg_get_number(struct parser *p, const yaml_node_t *n, const char *key, double *out);
int cfg_get_duration(struct parser *p, const yaml_node_t *n, const char *key, uint64_t *out);
int cfg_check_range(struct parser *p, const yaml_node_t *n, const char *key, uint64_t v,
		    uint64_t lo, uint64_t hi, bool is_duration);
int cfg_get_enum(struct parser *p, const yaml_node_t *n, const char *key, const char *const *names,
		 const char *expect, unsigned *out);
int cfg_get_name(struct parser *p, const yaml_node_t *n, const char *what, char *out);
int cfg_get_int(struct parser *p, const yaml_node_t *n, const char *key, long lo, long hi,
		int *out);

/* types.c */
const void *cfg_cfield(const struct key *k, const void *base);
void cfg_enum_word(const char *const *names, char *buf, size_t len);
bool cfg_str_same(const char *a, const char *b);
extern const struct key_type type_name;
extern const struct key_type type_size;
extern const struct key_type type_rate;
extern const struct key_type type_duration;
extern const struct key_type type_duration_auto;
extern const struct key_type type_minutes;
extern const struct key_type type_factor;
extern const struct key_type type_count;
extern const struct key_type type_int;
extern const struct key_type type_percent;
extern const struct key_type type_bool;
extern const struct key_type type_enum;
extern const struct key_type type_engine;
extern const struct key_type type_io_priority;

/* types_top.c */
extern const struct key_type type_listen;
extern const struct key_type type_buckets;
extern const struct key_type type_state_directory;
extern const struct key_type type_targets;
extern const struct key_type type_probes;

/* types_target.c */
int cfg_get_path(struct parser *p, const yaml_node_t *n, const char *key, const char *s,
		 char **out);
extern const struct key_type type_target_path;
extern const struct key_type type_keep_free;
extern const struct key_type type_require_mount;
bool cfg_shown_if_labels(const void *base);
extern const struct key_type type_labels;

/* types_probe.c */
extern const struct key_type type_target_ref;
extern const struct key_type type_block_size;
extern const struct key_type type_block_range;

/* schema.c */
extern const struct key schema[];
extern const unsigned schema_rows; /* of schema[] */
#define SCHEMA_END (schema + schema_rows)
extern const char *const probe_kind_names[];
extern const char *const rw_names[];
extern const struct section sec_top;
extern const struct section sec_target;
extern const struct section sec_probe;

/*
 * kinds.c: one row per kind of probe, and the only place in config/ that tells
 * the kinds apart. Its 'type' name is probe_kind_names[] (schema.c); its keys
 * are the schema rows whose 'where' has its W_PROBE_KIND() bit.
 */
struct cfg_kind {
	const char *section; /* its section of iopulse.yaml(5), KEYS */
	/* The key whose value makes a probe of it write: what a refusal of its
	 * writes points at ('type' for a kind that always writes). */
	const char *writes_key;
	/* What a key of another kind is told, after "'KEY' is not a KIND probe
	 * key: "; NULL: the key's own 'elsewhere' text, after its kind. */
	const char *foreign_why;
	bool block_range; /* 'block_size' may be a range */
	/* Checks between its keys; fills in what the other kinds' fields are
	 * for it (a ping's rw, a verify probe's engine...). 0 or -errno. */
	int (*check)(struct parser *p, const struct item *it);
	/* Checks against its target; NULL: those of a probe on the target's
	 * probe file (check.c: writes allowed, working set). 0 or -errno. */
	int (*check_target)(struct parser *p, const struct cfg_probe *pr,
			    const struct probe_refs *ref, const struct cfg_target *t);
	bool (*writes)(const struct cfg_probe *p);
	/* One run's cost, scaled to @runs_per_hour, into @out (budget.c). */
	void (*cost)(const struct cfg_probe *p, const struct cfg_target *t, double runs_per_hour,
		     struct cfg_cost *out);
};
/* The row of @k; NULL for a value that is not a kind. */
const struct cfg_kind *cfg_kind(enum cfg_probe_kind k);

/* check.c */
int cfg_check_ping(struct parser *p, const struct item *it);
int cfg_check_burst(struct parser *p, const struct item *it);
int cfg_check_verify(struct parser *p, const struct item *it);
int cfg_check_verify_target(struct parser *p, const struct cfg_probe *pr,
			    const struct probe_refs *ref, const struct cfg_target *t);
int cfg_target_misplaced(struct parser *p, const struct item *it, const struct key *k,
			 const yaml_node_t *knode);
int cfg_check_target_kind(struct parser *p, const yaml_node_t *m, struct item *it);
int cfg_probe_misplaced(struct parser *p, const struct item *it, const struct key *k,
			const yaml_node_t *knode);
int cfg_check_probe(struct parser *p, const yaml_node_t *m, const struct item *it, unsigned idx);
int cfg_resolve_probes(struct parser *p);

/* walk.c */
bool cfg_is_close(const char *s, const char *cand);
bool cfg_in_section(const struct item *it, const struct key *k);
const yaml_node_t *cfg_item_key(const struct item *it, const char *name);
const yaml_node_t *cfg_item_value(const struct item *it, const char *name);
const yaml_node_t *cfg_later_key(const yaml_node_t *a, const yaml_node_t *b);
int cfg_parse_targets(struct parser *p, const struct key *k, const yaml_node_t *n, struct item *it);
int cfg_parse_probes(struct parser *p, const struct key *k, const yaml_node_t *n, struct item *it);
int cfg_parse_root(struct parser *p, const yaml_node_t *root);

/* budget.c */
void cfg_ping_cost(const struct cfg_probe *p, const struct cfg_target *t, double runs_per_hour,
		   struct cfg_cost *out);
void cfg_burst_cost(const struct cfg_probe *p, const struct cfg_target *t, double runs_per_hour,
		    struct cfg_cost *out);
void cfg_verify_cost(const struct cfg_probe *p, const struct cfg_target *t, double runs_per_hour,
		     struct cfg_cost *out);

/* config.c */
void cfg_print_targets(FILE *f, const struct key *k, const void *base, const struct config *c);
void cfg_print_probes(FILE *f, const struct key *k, const void *base, const struct config *c);

#endif
