/* SPDX-License-Identifier: MIT */
/*
 * env — ${NAME} and ${NAME:-fallback} in a path value, expanded from the
 * environment; "$$" is a '$'.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_int.h"

/* ---- environment expansion ---------------------------------------------------- */

static bool env_name_char(char c, bool first)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

/* The reference [@ref, @end] is neither ${NAME} nor ${NAME:-fallback}. Copied
 * to be quoted with '%s': a long one is then shortened, not the message. */
static int bad_ref(struct parser *p, const yaml_node_t *n, const char *key, const char *ref,
		   const char *end)
{
	char *text = strndup(ref, (size_t)(end - ref + 1));
	int r;

	if (!text)
		return -ENOMEM;
	r = fail_at(p, n,
		    "invalid variable reference '%s' in '%s': use ${NAME} or "
		    "${NAME:-fallback}",
		    text, key);
	free(text);
	return r;
}

/*
 * Writes the value of the reference "${NAME}" or "${NAME:-fallback}" at @in to
 * @f; *@in is left after its '}'.
 */
static int expand_ref(struct parser *p, const yaml_node_t *n, const char *key, const char **in,
		      FILE *f)
{
	const char *ref = *in, *name = ref + 2, *end = strchr(name, '}'), *fb = NULL, *val;
	char var[256];
	size_t nlen;

	if (!end)
		return fail_at(p, n, "unterminated '${' in '%s'", key);
	for (nlen = 0; env_name_char(name[nlen], nlen == 0); nlen++)
		;
	if (name == end)
		return fail_at(p, n,
			       "empty variable name '${}' in '%s': use ${NAME} or "
			       "${NAME:-fallback}, or $$ for a literal '$'",
			       key);
	if (name + nlen != end) {
		if (!nlen || name[nlen] != ':' || name[nlen + 1] != '-')
			return bad_ref(p, n, key, ref, end);
		fb = name + nlen + 2;
	}
	if (nlen >= sizeof(var))
		return fail_at(p, n, "variable name too long in '%s'", key);
	memcpy(var, name, nlen);
	var[nlen] = '\0';
	val = getenv(var);
	*in = end + 1;
	if (fb && (!val || !*val))
		return fwrite(fb, 1, (size_t)(end - fb), f) == (size_t)(end - fb) ? 0 : -ENOMEM;
	if (!val)
		return fail_at(p, n,
			       "environment variable '%s' used in '%s' is not set "
			       "(write ${%s:-fallback} to give a default)",
			       var, key, var);
	return fputs(val, f) < 0 ? -ENOMEM : 0;
}

/* Writes @in to @f with its references expanded (see cfg_expand_env()). */
static int expand_into(struct parser *p, const yaml_node_t *n, const char *key, const char *in,
		       FILE *f)
{
	int r = 0;

	while (*in && r == 0) {
		size_t k = strcspn(in + 1, "$") + 1;

		if (in[0] == '$' && in[1] == '$') {
			r = fputc('$', f) == EOF ? -ENOMEM : 0;
			in += 2;
		} else if (in[0] == '$' && in[1] == '{') {
			r = expand_ref(p, n, key, &in, f);
		} else {
			r = fwrite(in, 1, k, f) == k ? 0 : -ENOMEM;
			in += k;
		}
	}
	return r;
}

/*
 * Expands ${NAME} and ${NAME:-fallback} (fallback when NAME is unset or empty,
 * taken literally) and "$$" as "$". Any other '$' is itself. Into a new string
 * in *@out (the caller frees it).
 */
int cfg_expand_env(struct parser *p, const yaml_node_t *n, const char *key, const char *in,
		   char **out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int r;

	if (!f)
		return -ENOMEM;
	r = expand_into(p, n, key, in, f);
	if (fclose(f) != 0 && r == 0)
		r = -ENOMEM;
	if (r == -ENOMEM)
		fail_at(p, n, "out of memory expanding '%s'", key);
	if (r < 0) {
		free(buf);
		return r;
	}
	*out = buf;
	return 0;
}
