/* SPDX-License-Identifier: MIT */
/*
 * addr — a numeric address and a port as text: "127.0.0.1:10035", an IPv6
 * address in brackets, "[::1]:10035", as 'listen:' and --listen take them. The
 * one place that writes the form; a leaf (no log, no allocation).
 */
#ifndef IOPULSE_ADDR_H
#define IOPULSE_ADDR_H

#include <stddef.h>
#include <stdint.h>

/* "@host:@port" into @buf (@n bytes, cut short as snprintf() cuts), with @host
 * in brackets when it has a ':' (IPv6). 0, or -ENOSPC when it was cut short. */
int addr_format(char *buf, size_t n, const char *host, uint16_t port);

#endif
