/* SPDX-License-Identifier: MIT */
/*
 * io_op — the one read/write vocabulary of the configuration ('op'), the
 * engines' requests, the probes' results and the metrics' op label. A header
 * of its own so that config/ speaks it without depending on the engines.
 */
#ifndef IOPULSE_IO_OP_H
#define IOPULSE_IO_OP_H

enum io_op {
	IO_READ,
	IO_WRITE,
	IO_FDATASYNC,
	IO_OP_COUNT,
};

/* The data directions, IO_READ and IO_WRITE: what a ping's or a burst's I/Os do. */
#define IO_DIR_COUNT 2

/* I/Os in flight on one engine queue: the engines' limit and 'iodepth''s. */
#define IO_MAX_DEPTH 256

/* The largest direct-I/O alignment a target may ask for (statx's dio_mem_align
 * and dio_offset_align): what probe buffers are aligned to, and what a burst's
 * buffers are rounded up to. */
#define IO_MAX_ALIGN 4096u

/* "read", "write", "fdatasync": config values, the op label, messages. */
static inline const char *io_op_name(enum io_op op)
{
	static const char *const names[IO_OP_COUNT] = {
		[IO_READ] = "read",
		[IO_WRITE] = "write",
		[IO_FDATASYNC] = "fdatasync",
	};

	return (unsigned)op < IO_OP_COUNT ? names[op] : "?";
}

#endif
