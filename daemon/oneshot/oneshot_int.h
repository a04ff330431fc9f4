/* SPDX-License-Identifier: MIT */
/*
 * oneshot_int — what oneshot.c (running) and oneshot_print.c (printing) share;
 * not used elsewhere.
 */
#ifndef IOPULSE_ONESHOT_INT_H
#define IOPULSE_ONESHOT_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/oneshot/oneshot.h"
#include "daemon/probes/probe.h"
#include "daemon/targets/target.h"

/* Exact latency statistics of single requests (pings), for min/avg/max/mdev as
 * ioping computes them; the histogram gives the percentiles. */
struct lat_stats {
	uint64_t n;
	double sum, sumsq; /* ns, ns^2 */
	uint64_t min, max; /* ns */
};

struct probe_sum {
	const struct cfg_probe *cfg;
	const struct cfg_target *target;
	const char *engine;
	struct probe_outcome out; /* every run of the probe added up */
	uint64_t wall_ns;
	int error;	/* could not run, or stopped by an error */
	int open_error; /* the target could not be opened: its -errno; else 0 */
	char message[PATH_MAX + 640];
	bool interrupted;
	struct target_desc desc;	      /* what the target is on, once open */
	struct lat_stats req[IO_OP_COUNT];    /* pings: every request */
	struct lat_stats period[IO_OP_COUNT]; /* pings: since the last -p summary */
	uint64_t requests;		      /* pings: run so far (with failed ones) */
	enum io_op last_op;		      /* pings: the last request's (-G: in turn) */
};

void stats_add(struct lat_stats *s, uint64_t ns);
/* ioping's mdev: the standard deviation sqrt(E[x^2] - E[x]^2), ns. */
double stats_mdev(const struct lat_stats *s);

/* One ping's line, as ioping prints it; @before: the outcome before it ran. */
void oneshot_print_request(struct probe_sum *ps, const struct probe_outcome *before);
/* The -p summary line of the requests since the last one (and resets them). */
void oneshot_print_period(struct probe_sum *ps);
/* The summary of a probe; @lines: per-request lines were printed before it. */
void oneshot_print_human(const struct probe_sum *ps, const struct oneshot_opts *o, bool lines);
void oneshot_print_json(const struct probe_sum *sums, unsigned n);

#endif
