/* SPDX-License-Identifier: MIT */
/*
 * verify — the verify probe: blocks that carry their own checksum, offset and
 * generation, written into a file of the probe's own in a directory target and
 * read back on later runs, so that storage which loses, misdirects or corrupts
 * writes is caught, not only storage that is slow. Its way in is
 * verify_probe_ops (probe.h), as for every kind; here is what others need of
 * its file: its name, and how much of each block says what it is.
 */
#ifndef IOPULSE_VERIFY_H
#define IOPULSE_VERIFY_H

#include <stddef.h>

/* The probe's file in its directory target: VERIFY_FILE_PREFIX + probe name.
 * After target.c's header, a state block of CFG_VERIFY_STATE_SIZE bytes, then
 * the blocks. */
#define VERIFY_FILE_PREFIX ".iopulse-verify."

/* The file name of verify probe @probe into @buf (@n bytes): the probe opens
 * it, `check` looks at it, and both must name the same file. */
void verify_file_name(char *buf, size_t n, const char *probe);

/* Bytes at the start of each block that say what it is (the rest is random). */
#define VERIFY_HEADER_SIZE 40

#endif
