/* SPDX-License-Identifier: MIT */
/*
 * oneshot — `iopulse probe`: run probes once in the foreground and print a line
 * per ping and a summary like ioping's and fio's, or JSON (schema:
 * docs/probe-output.schema.json). The command line is probe_cli's; the printing
 * is oneshot_print.c's.
 *
 * Probes run one after another, never overlapping, exactly as their lanes would
 * run them: same targets, same engines, same ping and burst code.
 */
#ifndef IOPULSE_ONESHOT_H
#define IOPULSE_ONESHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"

#define ONESHOT_DEFAULT_COUNT 10
#define ONESHOT_MAX_COUNT     10000000

struct oneshot_opts {
	unsigned count;	      /* pings per ping probe; 0: until the deadline or a signal */
	int64_t interval_ns;  /* ping interval override; -1: the configured one; 0 back-to-back */
	uint64_t deadline_ns; /* pings: stop each probe after this long; 0: no deadline */
	bool json;	      /* JSON on stdout instead of the summary */
	bool quiet;	      /* no line per ping, only summaries */
	unsigned period;      /* pings: a summary line every this many requests; 0: none */
	bool adhoc;	      /* the targets are command-line PATHs (headers name the path) */
	/* Directory targets: a probe file for this run only, never named (else the
	 * configured one, or file_name) ... */
	bool unnamed;
	const char *file_name;	  /* ... or this name (-k); NULL: the daemon's. Either way a
				   * probe file held by another iopulse falls back to unnamed. */
	const char *const *names; /* probes to run; NULL or empty: all */
	unsigned n_names;
};

/* Says on stderr (", ignoring") when @p is a burst whose 'iodepth' the engine
 * @engine (resolved: not "auto") cannot honour: sync runs one I/O at a time,
 * as fio warns for its synchronous engines. */
void oneshot_warn_depth(const struct cfg_probe *p, const char *engine);

/*
 * The exit status of a PATH that cannot be opened or walked, by its -errno
 * @err: EX_NOPERM (77) when this user may not (-EACCES, -EPERM) or iopulse
 * refuses to (-ELOOP: a symlink it does not follow), EX_NOINPUT (66) when it is
 * not there (-ENOENT, -ENOTDIR), EX_CANTCREAT (73) when the probe file cannot
 * be created on a read-only filesystem (-EROFS; `iopulse check` says 73 of
 * such a directory too), else @otherwise. One rule for files, directories and
 * devices, before and at the open (iopulse(8) EXIT STATUS).
 */
int oneshot_path_status(int err, int otherwise);

/*
 * Runs the probes and prints the results. SIGINT/SIGTERM stop the current probe
 * and print what was measured so far. Returns 0 when every probe ran without
 * error, 1 when any failed, 64 for an unknown probe name (nothing run), 71 out
 * of memory; with o->adhoc, a PATH that could not be opened decides it
 * instead, as oneshot_path_status() says (the first such PATH's).
 */
int oneshot_run(const struct config *cfg, const struct oneshot_opts *o);

#endif
