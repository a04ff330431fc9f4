/* SPDX-License-Identifier: MIT */
/*
 * status — what the status page (/), /status.json and /readyz show, kept in
 * memory, never read from a disk.
 *
 * Two writers, one short mutex that no I/O ever holds:
 *   - the scheduler's housekeeping (status_tick_*(), every STATUS_STEP_NS)
 *     copies each probe op's latency histogram out of the registry as bucket
 *     counts (STATUS_GROUP fine buckets to one), keeps those counts from a few
 *     past instants (baselines), and from the differences computes the figures
 *     of the last minute and the last hour and the records of the ring: one per
 *     minute for the last hour, one per 10 minutes for the last 24 hours;
 *   - a request (sched_collect(), on the HTTP thread) fills in each target's
 *     live state and each probe's counters from atomics and the registry.
 * Quantiles of a window are those of hist_quantile_ns() on a histogram rebuilt
 * from the window's bucket counts (hist_add_fine()): within 3 % (a stored
 * bucket is 2^(8/128), 4.4 %, wide; see hist.h for the fine buckets).
 */
#ifndef IOPULSE_STATUS_H
#define IOPULSE_STATUS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../config/config.h"
#include "../engines/clock.h"
#include "../engines/io_op.h"
#include "buf.h"
#include "hist.h"
#include "metrics.h"

#define STATUS_GROUP	 8 /* fine histogram buckets per stored bucket */
#define STATUS_N_GROUPS	 (1 + (HIST_N_FINE - 1 + STATUS_GROUP - 1) / STATUS_GROUP)
#define STATUS_STEP_NS	 (10 * NSEC_PER_SEC) /* figures are recomputed this often */
#define STATUS_MINUTE	 6		     /* steps in a minute */
#define STATUS_BLOCK	 60		     /* steps in 10 minutes */
#define STATUS_BASES	 6		     /* baselines per window: 6 steps of it */
#define STATUS_MINUTES	 60		     /* per-minute records: the last hour */
#define STATUS_BLOCKS	 144		     /* per-10-minute records: the last 24 hours */
#define STATUS_REASON	 512		     /* bytes of a target's reason, with the NUL */
#define STATUS_QUANTILES 4		     /* of a record or a window: p50, p90, p99, max */

/* The memory bound of the ring, stated in iopulse(8) and checked by
 * tests/unit/test_status.c: 64 probe ops over 24 hours in 256 KiB. */
#define STATUS_BOUND_SERIES 64
#define STATUS_BOUND_BYTES  (256 * 1024)

/* Latencies in records: 16-bit log-scale codes, 0 for none; a code is
 * 1 + round(1024 * log2(ns)), so it keeps 0.04 % of the value up to 2^41 ns. */
uint16_t status_code(uint64_t ns);
uint64_t status_decode(uint16_t code);

/* One minute, or 10 minutes, of one probe op. */
struct status_rec {
	uint32_t count;		      /* I/Os measured (saturating); 0: none */
	uint16_t q[STATUS_QUANTILES]; /* status_code() of p50, p90, p99, max */
};

/* The ring: records oldest to newest at [(head - n + i) mod size]. */
struct status_ring {
	struct status_rec min[STATUS_MINUTES];
	struct status_rec blk[STATUS_BLOCKS];
	uint16_t min_head, min_n; /* next slot to write, records held */
	uint16_t blk_head, blk_n;
};

/* The figures of one window (exact latencies, not codes). */
struct status_fig {
	uint64_t count;			 /* I/Os in the window */
	uint64_t q_ns[STATUS_QUANTILES]; /* p50, p90, p99, max; 0 when count is 0 */
	uint64_t span_ns;		 /* what the window covers (shorter after start) */
};

/* Bucket counts at a few past instants, newest last (modulo 2^32: a window's
 * difference is exact while one bucket gains fewer than 2^32 samples in it). */
struct status_bases {
	uint32_t c[STATUS_BASES][STATUS_N_GROUPS];
	uint64_t total[STATUS_BASES]; /* the histogram's count then (a reset shows) */
	uint64_t at_ns[STATUS_BASES];
	unsigned head, n;
};

/* The last finished burst of a probe op, as its gauges say. */
struct status_burst {
	bool valid;	/* a burst has finished */
	double iops;	/* I/Os per second */
	double bw;	/* bytes per second */
	double q_s[4];	/* p50, p90, p99, p99.9 in seconds */
	double max_s;	/* largest latency */
	double seconds; /* measured time */
};

/* One probe op: the unit of the page. */
struct status_series {
	char probe[CFG_NAME_MAX];
	char target[CFG_NAME_MAX];
	char kind[8]; /* "ping", "burst" */
	enum io_op op;
	bool seen; /* by the tick in progress */
	/* Scheduler thread only. */
	struct status_bases minute_b; /* at each of the last 6 steps: a minute */
	struct status_bases block_b;  /* at each of the last 6 10-minute marks: an hour */
	unsigned steps;		      /* ticks since the series appeared (or restarted) */
	uint64_t created_ns;	      /* then: the baseline before the first */
	/* Under the mutex. */
	struct status_fig minute, hour;
	uint32_t hour_groups[STATUS_N_GROUPS]; /* the last hour's bucket counts */
	struct status_ring ring;
	double runs, errors;	   /* the probe's (all ops), at the last request */
	double interval_s;	   /* ping interval or burst every */
	struct status_burst burst; /* at the last request */
};

enum status_state {
	STATUS_STARTING, /* not opened and checked yet (or laying out its probe file) */
	STATUS_UP,
	STATUS_DOWN,  /* cannot be opened or checked: reason says why */
	STATUS_STUCK, /* an I/O is in flight past its probe's timeout */
};

const char *status_state_name(enum status_state s);

struct status_target {
	char name[CFG_NAME_MAX];
	char path[1024]; /* as configured (truncated past 1023 bytes) */
	enum status_state state;
	char reason[STATUS_REASON]; /* down, stuck, starting: why; "" when up */
	double inflight_s;	    /* age of the I/O or open in flight, 0 when idle */
	char inflight_probe[CFG_NAME_MAX];
};

struct status {
	pthread_mutex_t mu; /* guards everything below but the tick's own */
	struct status_series **series;
	unsigned n_series;
	size_t cap_series;
	struct status_target *targets;
	unsigned n_targets;
	size_t cap_targets;
	char source[1024];	 /* the configuration in force */
	bool reload_ok;		 /* the last load (start-up or SIGHUP) */
	char reload_error[1024]; /* why it failed, "" when it did not */
	double reload_wall_s;	 /* Unix time of the last load */
	uint64_t start_ns;	 /* eng_now_ns() at status_new() */
	/* Scheduler thread only. */
	uint64_t next_tick_ns; /* 0: at once */
	struct hist *scratch;  /* a window's histogram */
	uint32_t cur[STATUS_N_GROUPS];
};

struct status *status_new(void);
void status_free(struct status *st); /* NULL is a no-op */

/* A configuration load: the one in force is @source; @ok, or @error says why
 * not (then @source is the one still running). */
void status_config(struct status *st, const char *source, bool ok, const char *error);

/*
 * Scheduler thread. status_tick_due() is true when the figures are due (at once
 * the first time, then every STATUS_STEP_NS); then call status_tick_op() for
 * every probe op of the running schedule (@latency: its histogram series) and
 * status_tick_end(). Series not named in a tick are dropped; a series whose
 * histogram restarted from zero (a changed probe) starts over.
 */
bool status_tick_due(struct status *st, uint64_t now_ns);
void status_tick_op(struct status *st, const struct cfg_probe *p, const char *target, enum io_op op,
		    struct metric_series *latency, uint64_t now_ns);
void status_tick_end(struct status *st, uint64_t now_ns);

/*
 * A request (HTTP thread): the targets' state (@n of them, in order) and each
 * probe op's counters. status_targets_begin() makes room (0 or -ENOMEM, then
 * the page shows none); status_set_probe() ignores an op the tick has not seen.
 */
int status_targets_begin(struct status *st, unsigned n);
void status_set_target(struct status *st, unsigned i, const struct status_target *t);
void status_set_probe(struct status *st, const char *probe, enum io_op op, double runs,
		      double errors, double interval_s, const struct status_burst *burst);

/* Readiness: true when every target is up; else @why (may be NULL) gets one
 * line per target that is not, "NAME: STATE: REASON". */
bool status_ready(struct status *st, struct buf *why);
bool status_ready_locked(const struct status *st, struct buf *why); /* mutex held */

/* The length of the valid UTF-8 sequence @s starts with (1 for ASCII, NUL
 * included), 0 when it is not one: the pages put U+FFFD in its place (paths
 * and reasons come from the system, not always in UTF-8). */
size_t status_utf8_len(const char *s);

/* The pages, appended to @out; 0 or -ENOMEM. */
int status_render_json(struct status *st, struct buf *out);
int status_render_html(struct status *st, struct buf *out);

/* @s with & < > " ' as character references, appended to @out. */
void status_html_escape(struct buf *out, const char *s);
/* @s as a JSON string (quotes included), appended to @out. */
void status_json_string(struct buf *out, const char *s);

#endif
