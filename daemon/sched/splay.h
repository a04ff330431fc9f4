/* SPDX-License-Identifier: MIT */
#ifndef IOPULSE_SPLAY_H
#define IOPULSE_SPLAY_H

/*
 * Splay: when each probe first runs. With 'splay: true' the runs of a kind
 * with PROBE_F_SPLAY (a burst) fall at wall-clock times whose remainder modulo
 * its 'every' is an offset hashed from the host's id and the probe's name, so
 * one configuration deployed on a fleet spreads its bursts over the interval,
 * host by host, and a restart or reload keeps each host's phase. The others
 * (pings), and every probe with 'splay: false', run within a second of start,
 * a target's spread evenly. Nothing here logs or
 * reads a clock: the caller passes the host id and the times (the unit tests
 * inject them).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

#define SPLAY_FNV_OFFSET  0xcbf29ce484222325ULL /* FNV-1a 64 offset basis */
#define SPLAY_HOST_ID_MAX 256			/* a host name fits (HOST_NAME_MAX 64) */

/* FNV-1a 64 of @len bytes of @data, continuing from @h (SPLAY_FNV_OFFSET to start). */
uint64_t splay_fnv1a(uint64_t h, const void *data, size_t len);

/* The phase of probe @name on host @host_id: FNV-1a 64 of host_id, a NUL and
 * name, modulo @interval_ns (> 0). In [0, interval_ns). */
uint64_t splay_offset(const char *host_id, const char *name, uint64_t interval_ns);

/* The host's id into @buf (@n bytes): the machine id (/etc/machine-id, as 32 hex
 * digits), or the host name when there is none (*@from_hostname then true). 0, or
 * -errno when neither can be read. */
int splay_host_id(char *buf, size_t n, bool *from_hostname);

/* The first due time of every probe of @cfg (see above) into @due (cfg->n_probes entries, in
 * the configuration's order), on the clock of @mono_now; @real_now is the wall
 * clock at the same moment (CLOCK_REALTIME, ns), which the phases refer to. */
void splay_first_due(const struct config *cfg, const char *host_id, uint64_t mono_now,
		     uint64_t real_now, uint64_t *due);

#endif
