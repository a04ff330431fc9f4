/* SPDX-License-Identifier: MIT */
/*
 * utf8 — what is valid UTF-8, and text made valid. Paths and what the system
 * names come as any bytes; every sink that must carry UTF-8 (JSON, HTML, the
 * metrics, the log's escaping) asks utf8_seq_len() the same question, and
 * those that replace what is not valid do it by one rule: each byte that does
 * not begin a valid sequence becomes U+FFFD (a stray continuation byte, each
 * byte of a truncated, overlong or surrogate sequence, 0xc0, 0xc1, 0xf5..0xff).
 */
#ifndef IOPULSE_UTF8_H
#define IOPULSE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* U+FFFD REPLACEMENT CHARACTER, in UTF-8. */
#define UTF8_REPLACEMENT "\xef\xbf\xbd"

/* The length of the valid UTF-8 sequence @s starts with (1 for ASCII, NUL
 * included), 0 when it is not one (overlong, surrogate, past U+10FFFF). */
size_t utf8_seq_len(const char *s);

/* Whether @s is valid UTF-8 throughout. */
bool utf8_valid(const char *s);

/* A copy of @s (malloc'ed, the caller frees it) with each byte that does not
 * begin a valid sequence replaced by U+FFFD; valid text is copied unchanged.
 * NULL when out of memory. */
char *utf8_scrub_dup(const char *s);

#endif
