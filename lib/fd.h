/* SPDX-License-Identifier: MIT */
/*
 * fd — safe_close(), as systemd's: closes @fd if it is one (>= 0), keeps errno
 * (a close in a cleanup path must not change the error being reported) and
 * returns -1, so that `x->fd = safe_close(x->fd)` leaves no stale number. A leaf.
 */
#ifndef IOPULSE_FD_H
#define IOPULSE_FD_H

#include <errno.h>
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

#endif
