/* SPDX-License-Identifier: MIT */
/*
 * yaml — the libyaml side of reading a configuration: the one document of a
 * text loaded within the nesting limit, syntax errors, the position of a node
 * in messages, and what a node holds.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config/config.h"
#include "config/config_int.h"
#include "lib/errtext.h"

/* ---- errors and nodes ---------------------------------------------------- */

/* "name:line:col: " (or "name: ") into @msg; the name's last bytes only when
 * @shorten (cfg_elide_name()). What snprintf() returns. */
static int write_position(char *msg, size_t size, const char *name, const yaml_node_t *n,
			  bool shorten)
{
	const char *shown = shorten ? cfg_elide_name(name) : name;
	const char *dots = shown != name ? "\u2026" : "";

	if (n)
		return snprintf(msg, size, "%s%s:%zu:%zu: ", dots, shown, n->start_mark.line + 1,
				n->start_mark.column + 1);
	return snprintf(msg, size, "%s%s: ", dots, shown);
}

/*
 * A message that would not fit in @err gives up the middle of what the user
 * wrote, not its end: the values it quotes are shortened (elide.c), and so is
 * a long file name, so that the key and the reason are always there.
 */
int cfg_fail_at_v(struct cfg_error *err, const char *name, const yaml_node_t *n, const char *fmt,
		  va_list ap)
{
	char *msg = err->msg, *shorter = NULL;
	size_t size = sizeof(err->msg);
	va_list aq;
	int w, need;

	w = write_position(msg, size, name, n, false);
	va_copy(aq, ap);
	need = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (w >= 0 && need >= 0 && (size_t)w + (size_t)need >= size) {
		shorter = elide_format(fmt, ap);
		w = write_position(msg, size, name, n, true);
	}
	if (w >= 0 && (size_t)w < size)
		errtext_v(msg + w, size - (size_t)w, -EINVAL, shorter ? shorter : fmt, ap);
	free(shorter);
	return -EINVAL;
}

__attribute__((format(printf, 3, 4))) int fail_at(struct parser *p, const yaml_node_t *n,
						  const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = cfg_fail_at_v(p->err, p->name, n, fmt, ap);
	va_end(ap);
	return r;
}

yaml_node_t *cfg_node_get(struct parser *p, int index)
{
	return yaml_document_get_node(p->doc, index);
}

const char *cfg_node_str(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* "a list", "a mapping", "'text'" — what the user wrote, for "got ..." */
const char *cfg_node_kind(const yaml_node_t *n)
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
bool cfg_scalar_is(const yaml_node_t *n, const char *lit)
{
	size_t len = strlen(lit);

	return n->type == YAML_SCALAR_NODE && n->data.scalar.length == len &&
	       !memcmp(n->data.scalar.value, lit, len);
}

bool cfg_node_is_null(const yaml_node_t *n)
{
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	return cfg_scalar_is(n, "") || cfg_scalar_is(n, "~") || cfg_scalar_is(n, "null") ||
	       cfg_scalar_is(n, "Null") || cfg_scalar_is(n, "NULL");
}

/*
 * A scalar holding a NUL byte ("a\0b" in double quotes): as a C string it would
 * silently end there, so every value and key is checked for one.
 */
bool cfg_node_has_nul(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE &&
	       memchr(n->data.scalar.value, '\0', n->data.scalar.length);
}

static int cmp_index(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Whether @n is tagged a string in so many words: "!!str 4", "! 4",
 * "&a !!str 4". libyaml's document gives an untagged scalar the same tag, so
 * the scalars written so were noted from the events (scan_events()).
 */
bool cfg_node_tagged_str(const struct parser *p, const yaml_node_t *n)
{
	size_t at = n->start_mark.index;

	return p->n_str_tagged && n->tag &&
	       bsearch(&at, p->str_tagged, p->n_str_tagged, sizeof(at), cmp_index);
}

/* The value of a key that must be a scalar; @what is "a duration", "a string", ... */
int cfg_get_scalar(struct parser *p, const yaml_node_t *n, const char *key, const char *what,
		   const char **out)
{
	if (n->type != YAML_SCALAR_NODE)
		return fail_at(p, n, "'%s' must be %s, got %s", key, what, cfg_node_kind(n));
	if (cfg_node_has_nul(n))
		return fail_at(p, n, "'%s' must not contain a NUL byte (\\0)", key);
	if (cfg_node_is_null(n))
		return fail_at(p, n, "missing value for '%s'", key);
	*out = cfg_node_str(n);
	return 0;
}

/* ---- the document -------------------------------------------------------- */

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

/* Notes the scalar of @ev when it is tagged a string ("!!str", "!"): where it
 * starts, as its node will (cfg_node_tagged_str()). */
static int note_tag(struct parser *p, const yaml_event_t *ev)
{
	const char *tag = (const char *)ev->data.scalar.tag;
	size_t *more;

	size_t n = p->n_str_tagged;

	if (!tag || (strcmp(tag, "!") != 0 && strcmp(tag, YAML_STR_TAG) != 0))
		return 0;
	/* Room for 16, then twice as much each time it is full. */
	if (n == 0 || (n >= 16 && !(n & (n - 1)))) {
		more = reallocarray(p->str_tagged, n ? 2 * n : 16, sizeof(*more));
		if (!more) {
			snprintf(p->err->msg, sizeof(p->err->msg), "%s: out of memory", p->name);
			return -ENOMEM;
		}
		p->str_tagged = more;
	}
	p->str_tagged[p->n_str_tagged++] = ev->start_mark.index;
	return 0;
}

/*
 * libyaml (0.2.5) has no limit on nesting, and its scanner costs time quadratic
 * in the depth: "[[[[..." 100,000 deep takes it a minute to refuse. A schedule is
 * three levels deep. One pass over the events, before the document is built,
 * stops at the first collection deeper than CFG_MAX_DEPTH; the scanner looks
 * ahead a bounded distance, so that takes microseconds whatever follows. A
 * syntax error is left for the document loader to report, as before. The pass
 * also notes the scalars tagged a string, in document order (note_tag()).
 */
static int scan_events(struct parser *p, const char *text, size_t len)
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
		} else if (type == YAML_SCALAR_EVENT) {
			r = note_tag(p, &ev);
		}
		yaml_event_delete(&ev);
		if (r < 0 || type == YAML_STREAM_END_EVENT)
			break;
	}
	yaml_parser_delete(&yp);
	return r;
}

/*
 * Loads the one YAML document of @text into @doc (to be deleted by the caller
 * on success). An empty file, a syntax error and a second document are errors.
 */
static int load_document(struct parser *p, const char *text, size_t len, yaml_document_t *doc,
			 const char *empty)
{
	yaml_parser_t yp;
	yaml_document_t extra;
	const yaml_node_t *root;
	int r = 0;

	if (!yaml_parser_initialize(&yp)) {
		snprintf(p->err->msg, sizeof(p->err->msg), "%s: out of memory", p->name);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
	if (!yaml_parser_load(&yp, doc)) {
		r = syntax_error(p, &yp, text, len);
		yaml_parser_delete(&yp);
		return r;
	}
	root = yaml_document_get_root_node(doc);
	if (!root || cfg_node_is_null(root)) {
		snprintf(p->err->msg, sizeof(p->err->msg), "%s:1:1: %s", p->name, empty);
		r = -EINVAL;
	} else if (!yaml_parser_load(&yp, &extra)) {
		/* A second document would be silently ignored: refuse it. */
		r = syntax_error(p, &yp, text, len);
	} else {
		if (yaml_document_get_root_node(&extra))
			r = fail_at(p, yaml_document_get_root_node(&extra),
				    "only one YAML document is allowed in a configuration");
		yaml_document_delete(&extra);
	}
	yaml_parser_delete(&yp);
	if (r < 0)
		yaml_document_delete(doc);
	return r;
}

int cfg_parser_load(struct parser *p, const char *text, size_t len, yaml_document_t *doc,
		    const char *empty)
{
	int r = scan_events(p, text, len);

	return r < 0 ? r : load_document(p, text, len, doc, empty);
}

int cfg_yaml_load(const char *name, const char *text, size_t len, yaml_document_t *doc,
		  const char *empty, struct cfg_error *err)
{
	struct parser p = {.name = name, .err = err};
	int r = cfg_parser_load(&p, text, len, doc, empty);

	free(p.str_tagged);
	return r;
}
