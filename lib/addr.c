/* SPDX-License-Identifier: MIT */
/*
 * addr — "ADDR:PORT", an IPv6 address in brackets (addr.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lib/addr.h"

int addr_format(char *buf, size_t n, const char *host, uint16_t port)
{
	bool v6 = strchr(host, ':');
	int r = snprintf(buf, n, v6 ? "[%s]:%u" : "%s:%u", host, (unsigned)port);

	return r >= 0 && (size_t)r < n ? 0 : -ENOSPC;
}
