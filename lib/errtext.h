/* SPDX-License-Identifier: MIT */
/*
 * errtext — a failure in words, into the fixed buffer of whatever failed (a
 * configuration error's msg, a target's error, a burst's or a verify run's why):
 * formatted, cut short to fit, with errno set from the error so that %m names
 * it. It returns the error, so that `return errtext(...)` both says and fails.
 * The one way the daemon writes such a text; a leaf (no log, no allocation).
 */
#ifndef IOPULSE_ERRTEXT_H
#define IOPULSE_ERRTEXT_H

#include <stdarg.h>
#include <stddef.h>

/* @fmt into @buf (@size bytes, NUL-terminated, cut short as vsnprintf() cuts),
 * errno set to -@r (or @r when positive) first. Returns @r. */
__attribute__((format(printf, 4, 0))) int errtext_v(char *buf, size_t size, int r, const char *fmt,
						    va_list ap);
__attribute__((format(printf, 4, 5))) int errtext(char *buf, size_t size, int r, const char *fmt,
						  ...);

#endif
