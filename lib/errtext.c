/* SPDX-License-Identifier: MIT */
/*
 * errtext — see errtext.h.
 */
#include <errno.h>
#include <stdio.h>

#include "lib/errtext.h"

int errtext_v(char *buf, size_t size, int r, const char *fmt, va_list ap)
{
	if (!size)
		return r;
	errno = r < 0 ? -r : r;
	vsnprintf(buf, size, fmt, ap);
	return r;
}

int errtext(char *buf, size_t size, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	errtext_v(buf, size, r, fmt, ap);
	va_end(ap);
	return r;
}
