/* SPDX-License-Identifier: MIT */
/*
 * buf — the growable byte buffer and array growth (buf.h): doubling, an
 * out-of-memory flag in place of an error on every append.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"

void buf_init(struct buf *b)
{
	memset(b, 0, sizeof(*b));
}

void buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b);
}

/* Room for @n more bytes plus a NUL; false (and oom set) when there is none. */
static int buf_reserve(struct buf *b, size_t n)
{
	size_t ncap;
	char *d;

	if (b->oom)
		return 0;
	if (n < b->cap - b->len && b->data)
		return 1;
	if (n > SIZE_MAX / 2 - b->len - 1)
		goto oom;
	ncap = b->cap ? b->cap : 256;
	while (ncap - b->len <= n)
		ncap *= 2;
	d = realloc(b->data, ncap);
	if (!d)
		goto oom;
	b->data = d;
	b->cap = ncap;
	return 1;
oom:
	b->oom = 1;
	return 0;
}

void buf_append(struct buf *b, const char *s, size_t n)
{
	if (!buf_reserve(b, n))
		return;
	if (n) /* @s may be NULL then (an empty piece): memcpy's arguments may not */
		memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void buf_prealloc(struct buf *b, size_t n)
{
	if (n > b->len)
		buf_reserve(b, n - b->len);
}

void buf_puts(struct buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = 1;
		return;
	}
	if (!buf_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

char *buf_steal(struct buf *b, size_t *len)
{
	char *d = b->data;

	if (len)
		*len = b->len;
	if (!d)
		d = calloc(1, 1); /* an empty page is "", not NULL */
	buf_init(b);
	return d;
}

int mem_grow(void *arrayp, size_t *cap, size_t need, size_t elem)
{
	void **array = arrayp;
	size_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 8;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	n = realloc(*array, ncap * elem);
	if (!n)
		return -ENOMEM;
	*array = n;
	*cap = ncap;
	return 0;
}
