/* SPDX-License-Identifier: MIT */
/*
 * oneshot — `iopulse probe`: run probes once in the foreground and print a
 * summary like ioping's and fio's, or JSON (schema: docs/probe-output.schema.json).
 *
 * Probes run one after another, never overlapping, exactly as their lanes would
 * run them: same targets, same engines, same ping and burst code.
 */
#ifndef IOPULSE_ONESHOT_H
#define IOPULSE_ONESHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "../config/config.h"

#define ONESHOT_DEFAULT_COUNT 10
#define ONESHOT_MAX_COUNT     10000000

struct oneshot_opts {
	unsigned count;	     /* pings per ping probe */
	int64_t interval_ns; /* ping interval override; -1: the configured one; 0 back-to-back */
	bool json;	     /* JSON on stdout instead of the summary */
	const char *const *names; /* probes to run; NULL or empty: all */
	unsigned n_names;
};

/*
 * Runs the probes and prints the results. SIGINT/SIGTERM stop the current probe
 * and print what was measured so far. Returns 0 when every probe ran without
 * error, 1 when any failed, 64 for an unknown probe name (nothing run).
 */
int oneshot_run(const struct config *cfg, const struct oneshot_opts *o);

#endif
