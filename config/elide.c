/* SPDX-License-Identifier: MIT */
/*
 * elide — a user's long value in a configuration error, shortened so that the
 * message keeps the key it names and the reason after it: a 5,000-digit
 * 'slow_factor' quoted whole would fill struct cfg_error and cut off both.
 *
 * Every message of config/ (and of the web configuration) about what a file
 * holds is formatted by cfg_fail_at_v(), and each quotes a user's value the
 * same way: '%s' in its format. When a message would not fit, the format is
 * rewritten so that each quoted string argument longer than ELIDE_LONG bytes
 * prints its first ELIDE_SHOWN bytes (whole UTF-8 characters), an ellipsis,
 * and its length:
 *
 *   t.yaml:4:18: invalid number '11111111…' (5000 bytes) for 'slow_factor': too
 *   many digits
 *
 * The arguments are left as they are: only a precision is added to the
 * conversion (%s becomes %.48s), so the rewritten format takes the same
 * va_list. Written by hand: no library rewrites a printf format, and finding
 * which argument is a conversion's takes walking the format's conversions.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_int.h"

#define ELIDE_LONG  64	/* a quoted value longer than this is shortened ... */
#define ELIDE_SHOWN 48	/* ... to at most this many bytes, then "…' (N bytes)" */
#define ELIDE_NAME  120 /* a file name longer than this shows its last bytes */

/* The argument a conversion takes (its length modifier and letter). */
enum elide_arg {
	ARG_NONE, /* %% and %m */
	ARG_INT,
	ARG_LONG,
	ARG_LLONG,
	ARG_SIZE,
	ARG_INTMAX,
	ARG_PTRDIFF,
	ARG_DOUBLE,
	ARG_LDOUBLE,
	ARG_PTR,
	ARG_STR,
	ARG_UNKNOWN, /* %n, a positional argument, anything else: not rewritten */
};

/* One conversion of a format: its text [start, end) and what it takes. */
struct conv {
	const char *start, *end;
	enum elide_arg arg;
	bool width_star, prec_star; /* '*': an int argument before the value */
	long prec;		    /* -1 when none */
};

static enum elide_arg arg_of(char letter, const char *len)
{
	bool l = len[0] == 'l', ll = l && len[1] == 'l';

	switch (letter) {
	case 'd':
	case 'i':
	case 'o':
	case 'u':
	case 'x':
	case 'X':
	case 'c':
		return ll || len[0] == 'q' ? ARG_LLONG
		       : l		   ? ARG_LONG
		       : len[0] == 'z'	   ? ARG_SIZE
		       : len[0] == 'j'	   ? ARG_INTMAX
		       : len[0] == 't'	   ? ARG_PTRDIFF
					   : ARG_INT;
	case 'e':
	case 'E':
	case 'f':
	case 'F':
	case 'g':
	case 'G':
	case 'a':
	case 'A':
		return len[0] == 'L' ? ARG_LDOUBLE : ARG_DOUBLE;
	case 's':
		return l ? ARG_UNKNOWN : ARG_STR; /* %ls: wide */
	case 'p':
		return ARG_PTR;
	case '%':
	case 'm':
		return ARG_NONE;
	}
	return ARG_UNKNOWN;
}

/* The conversion at @s (its '%'), read into @c. */
static void read_conv(const char *s, struct conv *c)
{
	const char *q = s + 1, *len;

	*c = (struct conv){.start = s, .prec = -1};
	q += strspn(q, "-+ #0'");
	if (*q == '*') {
		c->width_star = true;
		q++;
	} else {
		q += strspn(q, "0123456789");
	}
	if (*q == '.') {
		q++;
		if (*q == '*') {
			c->prec_star = true;
			q++;
		} else {
			c->prec = strtol(q, NULL, 10);
			q += strspn(q, "0123456789");
		}
	}
	len = q;
	q += strspn(q, "hlLqjzt");
	/* A positional argument ("%1$s") has a '$' where the letter would be. */
	c->arg = *q ? arg_of(*q, len) : ARG_UNKNOWN;
	c->end = *q ? q + 1 : q;
}

/* Takes @c's arguments from @ap; its string in *@str when it has one. */
static void take_args(const struct conv *c, va_list *ap, const char **str, long *prec)
{
	*prec = c->prec;
	if (c->width_star)
		(void)va_arg(*ap, int);
	if (c->prec_star)
		*prec = va_arg(*ap, int);
	switch (c->arg) {
	case ARG_NONE:
	case ARG_UNKNOWN:
		break;
	case ARG_INT:
		(void)va_arg(*ap, int);
		break;
	case ARG_LONG:
		(void)va_arg(*ap, long);
		break;
	case ARG_LLONG:
		(void)va_arg(*ap, long long);
		break;
	case ARG_SIZE:
		(void)va_arg(*ap, size_t);
		break;
	case ARG_INTMAX:
		(void)va_arg(*ap, intmax_t);
		break;
	case ARG_PTRDIFF:
		(void)va_arg(*ap, ptrdiff_t);
		break;
	case ARG_DOUBLE:
		(void)va_arg(*ap, double);
		break;
	case ARG_LDOUBLE:
		(void)va_arg(*ap, long double);
		break;
	case ARG_PTR:
		(void)va_arg(*ap, void *);
		break;
	case ARG_STR:
		*str = va_arg(*ap, const char *);
		break;
	}
}

/* How many of the first @max bytes of @s to show: whole UTF-8 characters. */
static size_t shown_bytes(const char *s, size_t max)
{
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

/*
 * Writes @c's text to @f, or, when it is a string quoted in the format (@fmt
 * has a quote just before and just after it) longer than ELIDE_LONG bytes, its
 * shortened form, the closing quote and the length; then *@next is past what
 * was written. Whether it shortened one.
 */
static bool write_conv(FILE *f, const struct conv *c, const char *fmt, const char *str, long prec,
		       const char **next)
{
	size_t len;

	*next = c->end;
	if (c->arg != ARG_STR || !str || c->prec_star || c->width_star || c->start == fmt ||
	    c->start[-1] != '\'' || *c->end != '\'')
		goto as_is;
	len = prec >= 0 ? strnlen(str, (size_t)prec) : strlen(str);
	if (len <= ELIDE_LONG)
		goto as_is;
	fprintf(f, "%%.%zus\u2026' (%zu bytes)", shown_bytes(str, ELIDE_SHOWN), len);
	*next = c->end + 1; /* the closing quote, written above */
	return true;
as_is:
	fwrite(c->start, 1, (size_t)(c->end - c->start), f);
	return false;
}

char *elide_format(const char *fmt, va_list ap)
{
	char *out = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&out, &size);
	bool shortened = false, known = true;
	const char *q = fmt, *next;
	va_list aq;

	if (!f)
		return NULL;
	va_copy(aq, ap);
	while (*q && known) {
		const char *pct = strchr(q, '%'), *str = NULL;
		struct conv c;
		long prec;

		if (!pct) {
			fputs(q, f);
			break;
		}
		fwrite(q, 1, (size_t)(pct - q), f);
		read_conv(pct, &c);
		known = c.arg != ARG_UNKNOWN;
		take_args(&c, &aq, &str, &prec);
		shortened |= write_conv(f, &c, fmt, str, prec, &next);
		q = next;
	}
	va_end(aq);
	if (fclose(f) != 0 || !known || !shortened) {
		free(out);
		return NULL;
	}
	return out;
}

const char *cfg_elide_name(const char *name)
{
	size_t len = strlen(name), skip;

	if (len <= ELIDE_NAME)
		return name;
	skip = len - ELIDE_NAME;
	while (((unsigned char)name[skip] & 0xc0) == 0x80)
		skip++;
	return name + skip;
}
