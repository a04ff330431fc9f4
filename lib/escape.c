/* SPDX-License-Identifier: MIT */
/*
 * escape — the C-style escaping of escape.h, one sequence at a time.
 */
#include <string.h>

#include "lib/escape.h"
#include "lib/utf8.h"

/*
 * The sequence @s starts with (not at its NUL): how it is shown, in @out (which
 * is not terminated) or, when it passes as it is, nowhere (*@out_len 0). Returns
 * how many bytes of @s it covers.
 */
static size_t esc_next(const char *s, char out[ESC_SEQ_MAX], size_t *out_len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = utf8_seq_len(s);
	static const char hex[] = "0123456789abcdef";
	const char *two = NULL;

	switch (u[0]) {
	case '\\':
		two = "\\\\";
		break;
	case '\n':
		two = "\\n";
		break;
	case '\r':
		two = "\\r";
		break;
	case '\t':
		two = "\\t";
		break;
	}
	if (two) {
		memcpy(out, two, 2);
		*out_len = 2;
		return 1;
	}
	if (u[0] < 0x20 || u[0] == 0x7f || !n) {
		memcpy(out, "\\x", 2);
		out[2] = hex[u[0] >> 4];
		out[3] = hex[u[0] & 0xf];
		*out_len = 4;
		return 1;
	}
	if (n == 2 && u[0] == 0xc2 && u[1] <= 0x9f) { /* U+0080..U+009F */
		memcpy(out, "\\u00", 4);
		out[4] = hex[u[1] >> 4];
		out[5] = hex[u[1] & 0xf];
		*out_len = 6;
		return 2;
	}
	*out_len = 0;
	return n;
}

char *esc_str(char *dst, size_t n, const char *s)
{
	char seq[ESC_SEQ_MAX];
	size_t used = 0, len;

	while (*s) {
		size_t in = esc_next(s, seq, &len);
		const char *show = len ? seq : s;

		if (!len)
			len = in;
		if (used + len >= n)
			break;
		memcpy(dst + used, show, len);
		used += len;
		s += in;
	}
	dst[used] = '\0';
	return dst;
}

void esc_buf(struct buf *b, const char *s)
{
	char seq[ESC_SEQ_MAX];
	size_t len;

	while (*s) {
		size_t in = esc_next(s, seq, &len);

		if (len)
			buf_append(b, seq, len);
		else
			buf_append(b, s, in);
		s += in;
	}
}
