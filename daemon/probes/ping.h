/* SPDX-License-Identifier: MIT */
/*
 * ping — one QD1 I/O over an engine per run: offsets, fresh random data per
 * write, per-I/O timing. No allocation, lock or log per I/O; buffers are
 * allocated once in probe_ping_init(). ping_probe_ops runs it as a probe kind.
 */
#ifndef IOPULSE_PING_H
#define IOPULSE_PING_H

#endif
