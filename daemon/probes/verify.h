/* SPDX-License-Identifier: MIT */
/*
 * verify — the verify probe: blocks that carry their own checksum, offset and
 * generation, written into a file of the probe's own in a directory target and
 * read back on later runs, so that storage which loses, misdirects or corrupts
 * writes is caught, not only storage that is slow. The block format and its
 * check are here for the tests; the probe itself is verify_probe_ops (probe.h).
 */
#ifndef IOPULSE_VERIFY_H
#define IOPULSE_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "lib/rng.h"

/* The probe's file in its directory target: VERIFY_FILE_PREFIX + probe name.
 * After target.c's header, a state block of CFG_VERIFY_STATE_SIZE bytes, then
 * the blocks. */
#define VERIFY_FILE_PREFIX ".iopulse-verify."

/* The file name of verify probe @probe into @buf (@n bytes): the probe opens
 * it, `check` looks at it, and both must name the same file. */
void verify_file_name(char *buf, size_t n, const char *probe);

/* Bytes at the start of each block that say what it is (the rest is random). */
#define VERIFY_HEADER_SIZE 40

/* What reading a block back found. */
enum verify_result {
	VERIFY_OK,	     /* ours, intact, at its offset, the generation expected */
	VERIFY_UNWRITTEN,    /* no block of ours there, and none was expected */
	VERIFY_WRONG_DATA,   /* checksum fails, or a block was expected and none is there */
	VERIFY_WRONG_OFFSET, /* intact, but written for another offset (misdirected) */
	VERIFY_STALE,	     /* intact, but an older generation than the last one synced */
	VERIFY_NEWER,	     /* intact, but a newer generation than was ever synced there */
};

/* Fills the block @buf of @size bytes at file offset @offset as generation @gen:
 * header, random payload from @rng (never zeros: compressing backends), checksum. */
void verify_block_fill(void *buf, size_t size, uint64_t offset, uint64_t gen, struct rng *rng);

/*
 * Checks the block @buf of @size bytes read at @offset against @expected, the
 * generation last written there and synced (0: not known, as with no saved state:
 * any intact block of ours is taken as it is). *@found is the generation the
 * block carries (0 when it carries none).
 */
enum verify_result verify_block_check(const void *buf, size_t size, uint64_t offset,
				      uint64_t expected, uint64_t *found);

#endif
