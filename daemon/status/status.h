/* SPDX-License-Identifier: MIT */
/*
 * status — what the status page (/), /status.json and /readyz show, kept in
 * memory, never read from a disk.
 *
 * Two writers, one short mutex that no I/O and no formatting ever holds:
 *   - the tick (status_tick_*(), every STATUS_STEP_NS, under the scheduler's
 *     tick lock; taken late, at its own time, by the first lane about to
 *     publish a run or request for a page after it falls due, status_tick_until():
 *     no thread wakes for it, and until a run publishes the histograms stay
 *     as they were) copies each probe op's latency histogram out of the
 *     registry as bucket counts (STATUS_GROUP fine buckets to one), keeps what
 *     each step added (struct status_sparse) for the last minute and what each
 *     10-minute block added for the last hour, and from those computes the figures of the last
 *     minute (exactly 60 s) and the last hour (the 6 last whole blocks and the
 *     one in progress: 60 to 70 minutes, the span says which) and the records
 *     of the ring: one per minute for the last hour, one per 10 minutes for the
 *     last 24 hours;
 *   - a request (sched_collect(), on the HTTP thread) fills in each target's
 *     live state and each probe's counters from atomics and the registry.
 * A page copies what it shows under the mutex (status_snapshot()) and formats
 * the copy without it.
 * Quantiles of a window are those of hist_quantile_ns() on a histogram rebuilt
 * from the window's bucket counts (hist_add_fine()): within 3 % (a stored
 * bucket is 2^(8/128), 4.4 %, wide; see hist.h for the fine buckets), unless a
 * step or block had more than STATUS_SPARSE distinct buckets (see below).
 *
 * Each probe op is also judged against its own baseline (docs/measurement.md,
 * "Baseline and the slow state"): at each minute mark the tick takes the
 * weighted median of the p50 codes, and apart of the p99 codes, of the ring's
 * records: the minute records (weight 1) and the 10-minute records older than
 * the STATUS_HOUR newest (weight 10; those overlap the minute records). Records
 * without I/O are out, and so are records taken while the series was slow: a
 * minute whose p50 was over slow_factor x the baseline p50 and over
 * slow_floor at its close, a block when more than half of its minutes with I/O
 * were, so that a regression cannot drag its own baseline up. The baseline is
 * used once the records kept are worth warmup_minutes (a block is worth 10);
 * after a whole day slow none are left: it warms up again, on the new level.
 * A request compares the last minute (raised to the age of an I/O waited on)
 * with it: struct status_regress.
 */
#ifndef IOPULSE_STATUS_H
#define IOPULSE_STATUS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "lib/clock.h"
#include "lib/io_op.h"
#include "lib/buf.h"
#include "daemon/metrics/hist.h"
#include "daemon/metrics/metrics.h"

#define STATUS_GROUP	 8 /* fine histogram buckets per stored bucket */
#define STATUS_N_GROUPS	 (1 + (HIST_N_FINE - 1 + STATUS_GROUP - 1) / STATUS_GROUP)
#define STATUS_STEP_NS	 (10 * NSEC_PER_SEC) /* figures are recomputed this often */
#define STATUS_MINUTE	 6		     /* steps in a minute */
#define STATUS_BLOCK	 60		     /* steps in 10 minutes */
#define STATUS_HOUR	 6		     /* whole 10-minute blocks in the hour window */
#define STATUS_MINUTES	 60		     /* per-minute records: the last hour */
#define STATUS_BLOCKS	 144		     /* per-10-minute records: the last 24 hours */
#define STATUS_REASON	 512		     /* bytes of a target's reason, with the NUL */
#define STATUS_QUANTILES 4		     /* of a record or a window: p50, p90, p99, max */
#define STATUS_SPARSE	 160		     /* distinct buckets a step or block keeps */
#define STATUS_BARS	 40		     /* bars of the page's distribution */

/* The memory bound stated in iopulse(8) and checked by tests/unit/test_status.c:
 * everything the status keeps per probe op (struct status_series), for 64. */
#define STATUS_BOUND_SERIES 64
#define STATUS_BOUND_BYTES  (1168 * 1024)

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
	/* Bit i (status_bit()): record [i] was taken while the series was slow;
	 * a 10-minute record: when more than half of its minutes with I/O were
	 * slow or held. */
	uint8_t min_slow[(STATUS_MINUTES + 7) / 8];
	uint8_t blk_slow[(STATUS_BLOCKS + 7) / 8];
	/* Bit i: minute record [i] is kept out of the baseline though it was not
	 * slow (status_minute_held(): a median regression under the floor, or a
	 * tail's share of its own). Set or cleared at every minute mark; stale
	 * under the empty records a quiet op or an aged ring pushes, which the
	 * baseline leaves out anyway. */
	uint8_t min_held[(STATUS_MINUTES + 7) / 8];
};

static inline bool status_bit(const uint8_t *bits, unsigned i)
{
	return bits[i / 8] >> (i % 8) & 1;
}

/* The figures of one window (exact latencies, not codes). */
struct status_fig {
	uint64_t count;			 /* I/Os in the window */
	uint64_t q_ns[STATUS_QUANTILES]; /* p50, p90, p99, max; 0 when count is 0 */
	uint64_t span_ns;		 /* what the window covers (shorter after start) */
};

/*
 * The bucket counts a step (or a 10-minute block) added, non-zero ones only,
 * ascending. More than STATUS_SPARSE distinct buckets are coarsened: the
 * smallest and largest stay, the others merge in aligned runs of 2, 4, 8, ...
 * stored buckets into the most frequent bucket of each run, the shortest runs
 * that fit (a quantile falling in a merged run may then be off by its width;
 * counts stay exact).
 */
struct status_sparse {
	uint16_t n;
	uint16_t g[STATUS_SPARSE];
	uint32_t c[STATUS_SPARSE]; /* saturating */
};

/* The last hour's distribution as the page draws it: bar i holds the stored
 * buckets first + i * per .. first + (i + 1) * per - 1. */
struct status_bars {
	uint16_t first, per, n;
	uint32_t c[STATUS_BARS];
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

/* How a probe op (a target) is slow, the narrowest harm first: its reason
 * code, as iopulse_target_reason_info says it (status_shape_code()). A minute
 * that shows more than one is the broadest: most I/Os slower is "slow" even
 * when some took seconds. */
enum status_shape {
	STATUS_SHAPE_NONE,   /* not slow */
	STATUS_SHAPE_TAIL,   /* "tail": a share of its I/Os far slower than usual */
	STATUS_SHAPE_STALLS, /* "stalls": I/Os of seconds, again and again */
	STATUS_SHAPE_MEDIAN, /* "slow": most I/Os slower (the p50 against its baseline) */
};
const char *status_shape_code(enum status_shape s);

/* How a target judges its probe ops' figures: its keys (struct cfg_target). */
struct status_judging {
	double slow_factor; /* 0: never slow */
	uint64_t
		slow_floor_ns; /* CFG_SLOW_FLOOR_AUTO: the baseline p99, at least STATUS_FLOOR_NS */
	unsigned warmup_minutes; /* baseline_warmup, in minutes */
	double tail_factor;	 /* a slow I/O: over this x the baseline p99 */
	double tail_share;	 /* 0: tails not judged */
	uint64_t stall_ns;	 /* 0: stalls not judged */
	unsigned slow_minutes, ok_minutes;
};

/* The judging of @t's keys. */
void status_judging_of(const struct cfg_target *t, struct status_judging *j);

/*
 * The shapes are judged over the last STATUS_JUDGE_MINUTES minutes (the tail,
 * the stalls: a minute that shows one) or the last one (the median). A tail
 * needs STATUS_TAIL_WINDOW I/Os in the window (an op pinged every 10 s has 30:
 * its share swings by 3% an I/O) and STATUS_TAIL_MIN_IOS
 * I/Os over the threshold in the window (a share of 2 in 20 is chance);
 * stalls need STATUS_STALL_MINUTES minutes of the window with one. An op turns
 * slow, or good again, only on a run of minutes holding STATUS_JUDGE_MIN_IOS
 * I/Os in all (status_op_slow()): an op pinged once a minute needs five. A
 * floor, and the tail's threshold, are never under STATUS_FLOOR_NS: below it
 * a latency is the CPU's and the kernel's as much as the storage's
 * (docs/measurement.md).
 */
#define STATUS_JUDGE_MINUTES 5
#define STATUS_JUDGE_MIN_IOS 5
#define STATUS_TAIL_MIN_IOS  3
/* A minute is held out of the baseline (status_minute_held()) with this many
 * I/Os over the threshold at least: one is a hiccup, two in a minute of pings
 * already a tail's share of it. */
#define STATUS_HELD_MIN_IOS  2
#define STATUS_TAIL_WINDOW   100 /* I/Os in the window a share needs */
#define STATUS_STALL_MINUTES 2
#define STATUS_FLOOR_NS	     100000ULL /* 100 us */

/* What the last STATUS_JUDGE_MINUTES minutes of a probe op held, newest last. */
struct status_tally {
	uint32_t count[STATUS_JUDGE_MINUTES];  /* I/Os */
	uint32_t over[STATUS_JUDGE_MINUTES];   /* of them over the slow-I/O threshold then */
	uint32_t stalls[STATUS_JUDGE_MINUTES]; /* of them over the stall threshold then */
	uint16_t max[STATUS_JUDGE_MINUTES];    /* status_code() of the longest */
	/* Its median was slow, or the minute before's was (the end of that
	 * slowdown): its I/Os are the median's, in no tail or stall. */
	bool median[STATUS_JUDGE_MINUTES];
	uint8_t n; /* minutes held */
};

/*
 * A probe op against its own baseline (status_set_probe()): latencies in ns,
 * [0] the p50, [1] the p99.
 */
struct status_regress {
	bool have_baseline;
	uint64_t baseline_ns[2]; /* p50, p99 */
	bool have_recent;
	uint64_t recent_ns[2]; /* p50, p99, raised to waited_ns */
	double ratio;	       /* recent p50 / baseline p50; 0 unless both */
	/* The tail and the stalls, over the last STATUS_JUDGE_MINUTES minutes (a
	 * baseline known): the slow-I/O threshold, the share of I/Os over it, the
	 * longest I/O (raised to waited_ns) and the minutes with a stall. */
	bool have_tail;
	uint64_t threshold_ns;
	double slow_io_ratio;
	bool have_max;
	uint64_t max_ns;
	unsigned stall_minutes, stalls; /* minutes with a stall; stalls in all */
	/* The op's judgement, at its last minute mark: slow (slow_minutes slow
	 * minutes in a row, until ok_minutes good ones), and how. */
	bool slow;
	enum status_shape shape; /* STATUS_SHAPE_NONE unless slow */
};

/* What the pages show of one probe op (under the mutex; copied for a page). */
struct status_view {
	char probe[CFG_NAME_MAX];
	char target[CFG_NAME_MAX];
	char kind[8]; /* "ping", "burst", "verify" */
	enum io_op op;
	struct status_fig minute, hour;
	struct status_bars hour_bars;
	struct status_ring ring;
	double runs, errors;	   /* the probe's (all ops), at the last request */
	double interval_s;	   /* ping interval or burst every */
	struct status_burst burst; /* at the last request */
	bool run_figures;	   /* the kind's runs have figures (PROBE_F_RUN_FIGURES) */
	/* Against the baseline: the target's settings (struct status_op) at the last
	 * tick, the minutes' worth of records the baseline has (kept ones, up to
	 * 1440), and the figures. regress's baseline, tail and judgement fields are
	 * the tick's (written at a minute mark, under the mutex), the others the
	 * last request's. */
	struct status_judging j;
	unsigned base_minutes;
	struct status_regress regress;
	struct status_tally tally; /* the tick's, copied with the view */
	uint32_t fingerprint; /* cfg_probe_fingerprint() of the probe measuring it (the tick's) */
};

/* One probe op: the unit of the page. */
struct status_series {
	struct status_view v;
	/* The tick's own (one tick at a time). */
	bool seen;			/* by the tick in progress */
	bool restart;			/* its probe changed: start over at the next tick */
	uint32_t prev[STATUS_N_GROUPS]; /* bucket counts at the last tick (mod 2^32) */
	uint64_t prev_total, prev_at;	/* the histogram's count then, and when */
	uint64_t prev_cpu_bound;	/* status_op's *cpu_bound_runs then */
	struct status_sparse step[STATUS_MINUTE]; /* the last minute's steps */
	uint64_t step_at[STATUS_MINUTE];	  /* when each began */
	struct status_sparse blk[STATUS_HOUR];	  /* the last whole blocks */
	uint64_t blk_at[STATUS_HOUR];
	struct status_sparse acc; /* the block in progress */
	uint64_t acc_at;
	unsigned steps;		  /* since the series appeared (or restarted) */
	uint8_t blk_io, blk_slow; /* minutes of the block in progress with I/O; slow ones */
	enum status_shape shape;  /* how its last slow minute was slow */
	uint64_t waited_ns;	  /* the last request's (under the mutex) */
};

enum status_state {
	STATUS_STARTING, /* not opened and checked yet (or laying out its probe file) */
	STATUS_UP,
	STATUS_DOWN,  /* cannot be opened or checked: reason says why */
	STATUS_STUCK, /* an I/O is in flight past its probe's timeout */
	STATUS_SLOW,  /* up, but a probe op is slow (struct status_regress) */
};

const char *status_state_name(enum status_state s);

/* A target's judged state, kept from one judgement to the next (and across a
 * restart, in the state file, status_persist.h): what status_judge() decides
 * from. */
struct status_judgement {
	enum status_state state; /* the last judged state */
	double since_s;		 /* Unix time it began; 0: none judged yet */
	char reason_code[16];	 /* its bounded code */
};

/* What a target is, as its lane pinned it at its first open: a state saved for
 * it is trusted only by a target that is still the same (status_persist.h). */
struct status_identity {
	bool known;	 /* the target was opened: the rest is set */
	uint8_t kind;	 /* enum cfg_target_kind */
	uint64_t dev;	 /* st_dev of the directory or file; st_rdev of a device */
	int64_t fs_type; /* statfs f_type of the directory or file; 0 for a device */
};

struct status_target {
	char name[CFG_NAME_MAX];
	char path[1024]; /* as configured (truncated past 1023 bytes) */
	enum status_state state;
	char reason[STATUS_REASON]; /* down, stuck, starting: why; "" when up */
	double inflight_s;	    /* age of the I/O or open in flight, 0 when idle */
	char inflight_probe[CFG_NAME_MAX];
	double since_s;	      /* Unix time the current state began (the lane's) */
	char reason_code[16]; /* bounded code of the state: "none", "slow", "stuck", ... */
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
	/* The tick's own (one tick at a time). */
	uint64_t next_tick_ns; /* 0: at once */
	uint64_t last_tick_ns; /* the tick before the one in progress; 0: none */
	uint64_t tick_ns;      /* the tick in progress */
	struct hist *scratch;  /* a window's histogram */
	uint32_t cur[STATUS_N_GROUPS];
	uint64_t sum[STATUS_N_GROUPS];
	/* The state file's (status_persist.h): what it restored and nothing has
	 * taken yet, and what each target was when last open (under mu; the tick
	 * is the only one to add), and who hears of each minute the ticks reach. */
	struct status_keep *keep;
	void (*minute_fn)(void *arg, uint64_t tick_ns);
	void *minute_arg;
	uint64_t minute_told_ns; /* the tick's: when it last told it; 0: never */
	uint64_t minute_due_ns;	 /* the tick's: a minute to tell (status_tell_minute()) */
};

/* What a page shows, copied under the mutex (status_snapshot()). */
struct status_snap {
	struct status_target *targets;
	unsigned n_targets;
	struct status_view *views;
	unsigned n_views;
	char source[1024];
	bool reload_ok;
	char reload_error[1024];
	double reload_wall_s;
	double uptime_s;
};

struct status *status_new(void);
void status_free(struct status *st); /* NULL is a no-op */

/* A configuration load: the one in force is @source; @ok, or @error says why
 * not (then @source is the one still running). */
void status_config(struct status *st, const char *source, bool ok, const char *error);

/* One probe op of the running schedule, as status_tick_op() takes it. */
struct status_op {
	const struct cfg_probe *p;
	const char *target;
	enum io_op op;
	struct metric_series *latency;
	struct status_judging j;	  /* the target's */
	uint32_t fingerprint;		  /* cfg_probe_fingerprint() of the probe */
	const char *target_path;	  /* the target's path, as configured */
	struct status_identity target_id; /* what its lane pinned (known once it was up) */
	/* A burst's runs marked cpu_bound so far (struct probe_series, written
	 * under the registry's mutex and read with the histogram), or NULL: a
	 * step that took in such a run is left out of the windows, the
	 * judgement and the baseline (it measured the CPU, not the storage). */
	const uint64_t *cpu_bound_runs;
};

/*
 * One tick at a time (the caller serialises them). status_tick_due() is true when the figures are
 * due (at once the first time, then every STATUS_STEP_NS); then call status_tick_op() for every
 * probe op of the running schedule (@op->latency: its histogram series) and status_tick_end().
 * Series are keyed by probe, target and op; those not named in a tick are dropped. A series starts
 * over when status_probe_changed() named its probe (a reload changed it: its histogram was made
 * anew) or when its histogram's total or any bucket went down. Its slow settings are @op's.
 */
bool status_tick_due(struct status *st, uint64_t now_ns);
/* When the next tick is due: 0 before the first (at once). */
uint64_t status_next_tick_ns(const struct status *st);
void status_tick_op(struct status *st, const struct status_op *op, uint64_t now_ns);
void status_tick_end(struct status *st, uint64_t now_ns);
void status_probe_changed(struct status *st, const char *probe);

/*
 * Every tick due by @now_ns, each at its own time, over the @n probe ops @ops
 * (the caller serialises, as for the ticks). Only the first reads anything new
 * (the histograms change when a run publishes, which waits for this); the
 * others take zero steps, and once every series' windows are empty (at most
 * STATUS_QUIET_STEPS after the last change) the rest are taken at once: the
 * cost does not grow with the time since the last tick. After more than
 * STATUS_CATCH_UP_MAX ticks that still read (none do: a safety net), the next
 * one starts from @now_ns. Returns the status_tick_op() calls made.
 */
#define STATUS_QUIET_STEPS  (STATUS_HOUR * STATUS_BLOCK + STATUS_BLOCK)
#define STATUS_CATCH_UP_MAX (STATUS_BLOCKS * STATUS_BLOCK) /* a day of steps */
unsigned status_tick_until(struct status *st, const struct status_op *ops, unsigned n,
			   uint64_t now_ns);

/*
 * A request (HTTP thread): the targets' state (@n of them, in order) and each
 * probe op's counters. status_targets_begin() makes room (0 or -ENOMEM, then
 * the page shows none); status_set_probe() ignores an op the tick has not seen.
 * status_set_probe() also compares the op's last minute, each quantile raised
 * to at least @waited_ns (the age of the I/O the probe waits on: the lane passes the stuck
 * target's; 0: none), with its baseline: into the view and *@out (may be NULL; zeroed for an op the
 * tick has not seen).
 */
int status_targets_begin(struct status *st, unsigned n);
void status_set_target(struct status *st, unsigned i, const struct status_target *t);
void status_set_probe(struct status *st, const char *probe, const char *target, enum io_op op,
		      double runs, double errors, double interval_s,
		      const struct status_burst *burst, uint64_t waited_ns,
		      struct status_regress *out);

/* Readiness: true when every target is up (or slow: up, only slower); else @why (may be NULL) gets
 * one line per target that is not, "NAME: STATE: REASON", name and reason escaped (escape.h) so
 * that each is one line. */
bool status_ready(struct status *st, struct buf *why);
bool status_targets_ready(const struct status_target *t, unsigned n, struct buf *why);

/*
 * The baseline (status_baseline.c). status_baseline(): the p50 and p99 of the
 * records of @r as said at the top, into @ns; false while they are worth fewer
 * than @warmup_minutes minutes (at least 1). @minutes (may be NULL): what they
 * are worth. At most STATUS_MINUTES + STATUS_BLOCKS records, no allocation.
 */
bool status_baseline(const struct status_ring *r, unsigned warmup_minutes, uint64_t ns[2],
		     unsigned *minutes);
/* The floor a p50 must be over to be slow, from @j and the baseline @base_ns
 * (p50, p99): the configured one, or with auto the baseline p99, at least
 * STATUS_FLOOR_NS. */
uint64_t status_floor_ns(const struct status_judging *j, const uint64_t base_ns[2]);
/* A p50 of @p50_ns is slow against the baseline @base_ns (p50, p99): over
 * j->slow_factor times its p50 and over status_floor_ns(); never with a
 * slow_factor of 0. */
bool status_is_slow(uint64_t p50_ns, const uint64_t base_ns[2], const struct status_judging *j);
/* The slow-I/O threshold against the baseline @base_ns: j->tail_factor x its
 * p99, at least the floor (auto: STATUS_FLOOR_NS). */
uint64_t status_slow_io_ns(const struct status_judging *j, const uint64_t base_ns[2]);
/*
 * A minute mark: the minute @minute (its figures) and @dense (its bucket
 * counts, STATUS_N_GROUPS, as the tick keeps them) go into @v->tally, and the
 * minute is judged against @v's baseline (none known: not slow): the shape
 * it shows, STATUS_SHAPE_NONE when it is not slow.
 */
enum status_shape status_minute(struct status_view *v, const struct status_fig *minute,
				const uint64_t *dense);
/* @t as @seconds later, the minutes between without I/O (as status_ring_age()
 * ages a ring): a state file's tally after the daemon was down. */
void status_tally_age(struct status_tally *t, double seconds);
/*
 * After status_minute() judged @minute not slow: whether it is still kept out
 * of the baseline (there being one), as no normal minute of the op:
 *   - its p50 over slow_factor x the baseline p50, under the floor: not news,
 *     but learnt, a median regression the floor hides (a noisy op's p99 is its
 *     floor) became the baseline within minutes, its ratio gone with it;
 *   - its own I/Os over the slow-I/O threshold a tail's share
 *     (STATUS_HELD_MIN_IOS of them at least, and tail_share of its I/Os): the
 *     window that judges a tail needs minutes to gather its I/Os, and a young
 *     baseline learnt the tail's first minutes into its p99 meanwhile; once
 *     they outnumbered its healthy minutes, the threshold rose over the tail
 *     and the tail was never told (docs/alerting.md, run A).
 * Such a minute is not judged slow for it: it only teaches the baseline nothing.
 */
bool status_minute_held(const struct status_view *v, const struct status_fig *minute);
/* Whether an op whose minute records (and their slow bits) are @r is slow:
 * the records replayed oldest first, slow after @j->slow_minutes slow minutes
 * in a row and good again after @j->ok_minutes good ones, each run holding
 * STATUS_JUDGE_MIN_IOS I/Os in all (a minute without I/O that was not slow
 * counts as neither). So the state survives with the ring (a restart). */
bool status_op_slow(const struct status_ring *r, const struct status_judging *j);
/* @v->regress's recent, ratio, tail and stall figures from @v's last minute and
 * tally raised to @waited_ns, its baseline fields and its settings. */
void status_regress_update(struct status_view *v, uint64_t waited_ns);

/*
 * The judge (status_judge.c): a target's state from what its lane gathers and
 * its probe ops' judgements, against its last judgement @prev (state and since
 * at zero: none yet). Fills @t's state, reason, reason_code and since_s (the
 * rest of @t is the caller's) and the judgement to keep in @next (may be
 * @prev). Stuck beats everything; then up (slow when an op is: the worst shape
 * names the reason; and slow still when it was and no op has a baseline yet,
 * as after a restart), down with the lane's reason, or starting. Since is kept
 * while the state stays; on a change it is when the lane knows the state began
 * (if after the last one began and not in the future), else @in->now_s.
 */
struct status_judge_op {
	const char *probe;
	enum io_op op;
	const struct status_regress *g; /* status_set_probe()'s */
};

struct status_judge_in {
	double now_s; /* Unix time */
	/* An I/O (or the target's open) in flight past its probe's timeout. */
	bool stuck;
	const char *inflight_probe;
	double inflight_s, timeout_s;
	/* Opened and checked by the last run, since up_since_s (0: not known). */
	bool up;
	double up_since_s;
	/* Otherwise why not ("" or NULL: not checked yet), its code, since when. */
	const char *down_reason, *down_code;
	double down_since_s;
	/* Not checked yet: laying out its probe file (done, 0 to 1), or not;
	 * start_s: when the lane started. */
	bool layout;
	double layout_share, start_s;
	const struct status_judge_op *ops;
	unsigned n_ops;
	/* The judgement a state file brought back (NULL: none, or no longer):
	 * taken for @prev while @prev is none or starting, so that a target
	 * restarted slow or stuck is so again, since when it was, once its lane
	 * sees it again; and slow while up and no op has a baseline yet. */
	const struct status_judgement *restored;
};

void status_judge(const struct status_judge_in *in, const struct status_judgement *prev,
		  struct status_target *t, struct status_judgement *next);

/* A copy of what the pages show; 0 or -ENOMEM. status_snap_free() it. */
int status_snapshot(struct status *st, struct status_snap *snap);
void status_snap_free(struct status_snap *snap);

/* The pages, appended to @out; 0 or -ENOMEM. /status.json has the records of
 * the ring (the charts' data) only with @history. */
int status_render_json(const struct status_snap *snap, struct buf *out, bool history);
int status_render_html(const struct status_snap *snap, struct buf *out);

/* @s with & < > " ' as character references, appended to @out. */
void status_html_escape(struct buf *out, const char *s);
/* "123 µs", "4.56 ms", "1.2 s" (3 significant digits, carried into the next
 * unit when rounding reaches 1000); "–" when not @have. */
void status_latency(struct buf *out, uint64_t ns, bool have);

#endif
