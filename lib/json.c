/* SPDX-License-Identifier: MIT */
/*
 * json — one JSON string written with json.h's escaping, over the UTF-8 rule
 * of utf8.h.
 */
#include "lib/json.h"
#include "lib/utf8.h"

void json_string(struct buf *out, const char *s)
{
	buf_puts(out, "\"");
	while (*s) {
		unsigned char ch = (unsigned char)*s;
		size_t n = utf8_seq_len(s);

		if (ch == '"' || ch == '\\') {
			buf_printf(out, "\\%c", ch);
		} else if (ch < 0x20 || ch == 0x7f) {
			buf_printf(out, "\\u%04x", ch);
		} else if (!n) {
			buf_puts(out, "\\ufffd");
			n = 1;
		} else {
			buf_append(out, s, n);
			s += n;
			continue;
		}
		s++;
	}
	buf_puts(out, "\"");
}
