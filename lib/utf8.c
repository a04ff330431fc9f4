/* SPDX-License-Identifier: MIT */
/*
 * utf8 — the one test of a valid UTF-8 sequence (utf8.h), and the copy that
 * replaces what is not valid with U+FFFD.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/utf8.h"

size_t utf8_seq_len(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n;
	uint32_t cp;

	if (u[0] < 0x80)
		return 1;
	if (u[0] >= 0xc2 && u[0] <= 0xdf)
		n = 2, cp = u[0] & 0x1f;
	else if (u[0] >= 0xe0 && u[0] <= 0xef)
		n = 3, cp = u[0] & 0x0f;
	else if (u[0] >= 0xf0 && u[0] <= 0xf4)
		n = 4, cp = u[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (u[i] & 0x3f);
	}
	/* overlong forms, surrogates, past U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

bool utf8_valid(const char *s)
{
	size_t n;

	for (; *s; s += n) {
		n = utf8_seq_len(s);
		if (!n)
			return false;
	}
	return true;
}

char *utf8_scrub_dup(const char *s)
{
	const size_t rlen = sizeof(UTF8_REPLACEMENT) - 1;
	size_t len = 0, n;
	const char *p;
	char *out, *w;

	/* Sized first, allocated once and exactly: a registry keeps these. */
	for (p = s; *p; p += n ? n : 1) {
		n = utf8_seq_len(p);
		len += n ? n : rlen;
	}
	out = malloc(len + 1);
	if (!out)
		return NULL;
	for (p = s, w = out; *p; p += n) {
		n = utf8_seq_len(p);
		if (n) {
			memcpy(w, p, n);
			w += n;
		} else {
			memcpy(w, UTF8_REPLACEMENT, rlen);
			w += rlen;
			n = 1;
		}
	}
	*w = '\0';
	return out;
}
