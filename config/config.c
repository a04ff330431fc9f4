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
 * "name: 123" is the name "123"; only plain "", "~" and "null" count as a
 * missing value. The other way round, a value read as a number, a size, a
 * duration, a percentage or a boolean must not be a string in YAML's eyes:
 * quoted or tagged !!str, it is refused (cfg_get_plain()).
 *
 * The work is split by job: yaml.c loads the document and reads its nodes;
 * walk.c walks it by the table of keys in schema.c; values.c and types*.c
 * read, print and compare each kind of value (env.c expands ${NAME} in
 * paths); check.c checks keys against each other and probes against their
 * targets. This file loads from a string, a file or the embedded default,
 * frees, prints and looks up.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>
#include <zlib.h>

#include "config/config.h"
#include "config/config_int.h"
#include "lib/escape.h"

#define CFG_FILE_MAX	  (1U << 20) /* largest configuration file we read */
#define CFG_FILE_MAX_NAME "1 MiB"    /* CFG_FILE_MAX, for messages */

/* ---- loading ----------------------------------------------------------------- */

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
	r = cfg_parser_load(&p, text, len, &doc, CFG_EMPTY_MESSAGE);
	if (r < 0) {
		free(p.str_tagged);
		return r;
	}
	p.doc = &doc;
	p.c = calloc(1, sizeof(*p.c));
	if (p.c) {
		atomic_init(&p.c->refs, 1);
		p.c->source = strdup(p.name);
		r = p.c->source ? cfg_parse_root(&p, yaml_document_get_root_node(&doc)) : -ENOMEM;
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
	free(p.str_tagged);
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
	return cfg_load_string(CFG_EMBEDDED_NAME, cfg_default_yaml, strlen(cfg_default_yaml), out,
			       err);
}

const struct config *cfg_ref(const struct config *c)
{
	/* The count is not part of what the configuration says: a const one is
	 * shared all the same (it was allocated writable, cfg_load_string()). */
	if (c)
		atomic_fetch_add(&((struct config *)c)->refs, 1);
	return c;
}

void cfg_free(const struct config *cc)
{
	struct config *c = (struct config *)cc;

	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	for (unsigned i = 0; c->targets && i < c->n_targets; i++) {
		free(c->targets[i].path);
		free(c->targets[i].mount_path);
	}
	free(c->targets);
	free(c->probes);
	free(c->source);
	free(c->state_directory);
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

void cfg_print_targets(FILE *f, const struct key *k, const void *base, const struct config *c)
{
	(void)k;
	(void)base;
	fputc('\n', f);
	for (unsigned i = 0; i < c->n_targets; i++)
		print_item(f, &sec_target, W_TARGET_KIND(c->targets[i].kind), &c->targets[i], c,
			   "  - ", "    ");
}

void cfg_print_probes(FILE *f, const struct key *k, const void *base, const struct config *c)
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

/* Every field a row of @sec names is the same in @a and @b, but a judgement's. */
static bool item_same(const struct section *sec, const void *a, const void *b,
		      const struct config *ac, const struct config *bc)
{
	for (const struct key *k = schema; k < SCHEMA_END; k++)
		if ((k->where & sec->mask) && !k->judgement &&
		    (!k->type->same || !k->type->same(k, a, b, ac, bc)))
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

/* Every field a row of @sec valid in @valid names but a judgement's, as
 * "key: value" lines, in table order. */
static void print_same_fields(FILE *f, const struct section *sec, unsigned valid, const void *base,
			      const struct config *c)
{
	for (const struct key *k = schema; k < SCHEMA_END; k++)
		if ((k->where & sec->mask) && (k->where & valid) && !k->judgement) {
			fprintf(f, "%s:", k->name);
			k->type->print(f, k, base, c);
		}
}

uint32_t cfg_probe_fingerprint(const struct config *c, const struct cfg_probe *p)
{
	const struct cfg_target *t = &c->targets[p->target];
	char *text = NULL;
	size_t len = 0;
	uLong crc;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return 0;
	print_same_fields(f, &sec_probe, W_PROBE_KIND(p->kind), p, c);
	print_same_fields(f, &sec_target, W_TARGET_KIND(t->kind), t, c);
	if (fclose(f) != 0 || !text) {
		free(text);
		return 0;
	}
	crc = crc32(crc32(0, Z_NULL, 0), (const Bytef *)text, (uInt)len);
	free(text);
	return crc ? (uint32_t)crc : 1; /* 0 says "none" */
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
	else /* a key of several kinds: its first kind's section */
		d->section = cfg_kind(W_PROBE_KIND_OF(k->where))->section;
	d->name = k->name;
	if (k->type->word)
		snprintf(d->type, sizeof(d->type), "%s", k->type->word);
	else
		cfg_enum_word(k->names, d->type, sizeof(d->type));
	d->def = k->def;
	d->required = k->required;
	d->help = k->help;
	return 0;
}

bool cfg_probe_writes(const struct cfg_probe *p)
{
	return p && cfg_kind(p->kind)->writes(p);
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
	return (unsigned)k < CFG_PROBE_KINDS ? probe_kind_names[k] : "unknown";
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
