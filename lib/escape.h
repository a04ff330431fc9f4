/* SPDX-License-Identifier: MIT */
/*
 * escape — text from the configuration or the system (paths, error messages)
 * made safe for a line-oriented sink: the log, /readyz, sd_notify's STATUS=, the
 * CLI's messages. A path may hold any byte but NUL and '/': a newline in it would
 * forge a line of its own, an ESC would drive the reader's terminal.
 *
 * The form is C's, as systemd's cescape() writes it, and every escape starts
 * with a backslash, so a backslash is escaped too and the text reads back
 * unambiguously:
 *   \\  \n  \r  \t       backslash, newline, carriage return, tab
 *   \xNN                 other C0 controls, DEL, and each byte that is not
 *                        part of valid UTF-8
 *   \u00NN               the C1 controls U+0080..U+009F (CSI, NEL...)
 * Everything else (printable ASCII, valid UTF-8) passes as it is.
 *
 * JSON (json.h) and HTML (status_html.c) have escapings of their own; all three
 * ask utf8_seq_len() (utf8.h) what is valid UTF-8.
 */
#ifndef IOPULSE_ESCAPE_H
#define IOPULSE_ESCAPE_H

#include <stddef.h>

#include "lib/buf.h"

/* The longest escape of one character (a C1 control: "\u0085"), NUL excluded. */
#define ESC_SEQ_MAX 6
/* A buffer that holds any @n bytes escaped in full, with the NUL. */
#define ESC_SIZE(n) (4 * (n) + 1)
/* How much of a command-line argument a CLI message quotes (escaped: what the
 * user typed may hold a newline that would forge a line, or an ESC). */
#define ESC_ARG_SHOWN 256

/* @s escaped into @dst of @n bytes (n > 0), always NUL-terminated; cut before an
 * escape that does not fit, never inside one. Returns @dst. */
char *esc_str(char *dst, size_t n, const char *s);

/* @s escaped, appended to @b. */
void esc_buf(struct buf *b, const char *s);

#endif
