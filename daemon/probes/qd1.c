/* SPDX-License-Identifier: MIT */
/*
 * qd1 — what the probes that do one I/O at a time share (a ping, a verify
 * probe): for now, where the buffers of requests they abandoned are kept.
 */
#include <pthread.h>
#include <stddef.h>

#include "lib/buf.h"
#include "daemon/probes/qd1.h"

/* Buffers the kernel may still write into are parked here and never freed; kept
 * reachable so that a leak checker does not flag the deliberate leak. */
static pthread_mutex_t parked_mu = PTHREAD_MUTEX_INITIALIZER;
static void **parked;
static size_t n_parked, cap_parked;

void park_buffer(void *buf)
{
	pthread_mutex_lock(&parked_mu);
	if (mem_grow(&parked, &cap_parked, n_parked + 1, sizeof(*parked)) == 0)
		parked[n_parked++] = buf;
	pthread_mutex_unlock(&parked_mu);
}
