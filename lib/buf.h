/* SPDX-License-Identifier: MIT */
/*
 * buf — the one growable memory of the daemon: a byte buffer for rendered
 * pages and messages, and array growth for registries and lists.
 */
#ifndef IOPULSE_BUF_H
#define IOPULSE_BUF_H

#include <stddef.h>

/* A growable byte buffer. A failed allocation sets @oom and later appends are
 * no-ops, so callers check once at the end. */
struct buf {
	char *data;
	size_t len;
	size_t cap;
	int oom;
};

void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_append(struct buf *b, const char *s, size_t n);
void buf_puts(struct buf *b, const char *s);
/* Make room for @n bytes in all (a hint: a failure sets oom as an append would). */
void buf_prealloc(struct buf *b, size_t n);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the bytes to the caller (to free()); the buffer becomes empty. */
char *buf_steal(struct buf *b, size_t *len);

/* Grows the array *@arrayp of *@cap elements of @elem bytes to hold at least
 * @need, doubling (from 8). 0, or -ENOMEM with the array unchanged. */
int mem_grow(void *arrayp, size_t *cap, size_t need, size_t elem);

#endif
