/* SPDX-License-Identifier: MIT */
/*
 * path — see path.h. By hand: realpath(3) and canonicalize_file_name(3) ask
 * the filesystem (lstat each component), which is what a hung mount must not
 * be asked, and glib's or libc's purely lexical helpers keep "." components.
 */
#include <errno.h>
#include <string.h>

#include "lib/path.h"

int path_lexical(const char *path, char *out, size_t n)
{
	size_t o = 0;
	const char *p = path;

	if (!n)
		return -ENAMETOOLONG;
	if (*p == '/' && n > 1)
		out[o++] = '/';
	while (*p) {
		size_t len;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (len == 0 || (len == 1 && p[0] == '.')) {
			p += len;
			continue;
		}
		if (o && out[o - 1] != '/') {
			if (o + 1 >= n)
				goto too_long;
			out[o++] = '/';
		}
		if (o + len >= n)
			goto too_long;
		memcpy(out + o, p, len);
		o += len;
		p += len;
	}
	if (o == 0) {
		if (n < 2)
			goto too_long;
		out[o++] = '.';
	}
	out[o] = '\0';
	return 0;
too_long:
	out[o < n ? o : n - 1] = '\0';
	return -ENAMETOOLONG;
}
