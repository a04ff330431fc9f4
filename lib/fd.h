/* SPDX-License-Identifier: MIT */
/*
 * fd — safe_close(), as systemd's: closes @fd if it is one (>= 0), keeps errno
 * (a close in a cleanup path must not change the error being reported) and
 * returns -1, so that `x->fd = safe_close(x->fd)` leaves no stale number; and
 * fd_pread_full(), a whole read whatever pread(2) hands back at a time. A leaf.
 */
#ifndef IOPULSE_FD_H
#define IOPULSE_FD_H

#include <errno.h>
#include <sys/types.h>
#include <unistd.h>

static inline int safe_close(int fd)
{
	if (fd >= 0) {
		int saved = errno;

		close(fd);
		errno = saved;
	}
	return -1;
}

/* Reads @len bytes at @off of @fd into @buf, on through EINTR and short reads,
 * until they are all there or the file ends: how many it read, or -errno. */
static inline ssize_t fd_pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, off + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

#endif
