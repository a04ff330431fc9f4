/* SPDX-License-Identifier: MIT */
/*
 * ping — one QD1 I/O over an engine per run: offsets, fresh random data per
 * write, per-I/O timing. No allocation, lock or log per I/O; buffers are
 * allocated once at set-up. Its way in is ping_probe_ops (probe.h), as for
 * every kind: init, run, free; ping.c has the rest.
 */
#ifndef IOPULSE_PING_H
#define IOPULSE_PING_H

#endif
