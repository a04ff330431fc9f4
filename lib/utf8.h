/* SPDX-License-Identifier: MIT */
/*
 * utf8 — what is valid UTF-8. Paths and what the system names come as any
 * bytes; every sink that must carry UTF-8 (JSON, HTML, the log's escaping)
 * asks utf8_seq_len() the same question.
 */
#ifndef IOPULSE_UTF8_H
#define IOPULSE_UTF8_H

#include <stddef.h>

/* The length of the valid UTF-8 sequence @s starts with (1 for ASCII, NUL
 * included), 0 when it is not one (overlong, surrogate, past U+10FFFF). */
size_t utf8_seq_len(const char *s);

#endif
