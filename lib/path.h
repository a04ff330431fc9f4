/* SPDX-License-Identifier: MIT */
#ifndef IOPULSE_PATH_H
#define IOPULSE_PATH_H

/*
 * path — one spelling of a path, found without a system call: telling two
 * targets apart must not wait for a filesystem that may hang. A leaf: no log.
 */

#include <stddef.h>

/*
 * @path lexically normalised into @out (@n bytes): empty and "." components
 * dropped ("a//b/./c/" is "a/b/c"), the leading "/" of an absolute path kept,
 * an empty relative path is ".". ".." and symbolic links stay as they are:
 * resolving them would ask the filesystem. 0, or -ENAMETOOLONG when @out is
 * too small (then it holds as much as fits).
 */
int path_lexical(const char *path, char *out, size_t n);

#endif
