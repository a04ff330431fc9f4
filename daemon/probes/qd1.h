/* SPDX-License-Identifier: MIT */
/*
 * qd1 — what the probes that do one I/O at a time share (a ping, a verify
 * probe).
 */
#ifndef IOPULSE_QD1_H
#define IOPULSE_QD1_H

/* Keeps @buf, the buffer of a request abandoned in flight, for good: the
 * kernel may still write into it. */
void park_buffer(void *buf);

#endif
