/* SPDX-License-Identifier: MIT */
/*
 * probe — what every probe kind implements (struct probe_ops, one table row per
 * kind, as engines; the table is kinds.c's) and the one thing a run produces:
 * a struct probe_outcome. The lane, probe_metrics and oneshot consume outcomes
 * and know no kind: what differs between kinds they ask of the row, its
 * PROBE_F_* flags and hooks.
 */
#ifndef IOPULSE_PROBE_H
#define IOPULSE_PROBE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "engines/engine.h"
#include "daemon/metrics/hist.h"
#include "daemon/targets/target.h"

/* I/O buffers of every probe kind are aligned to this, for O_DIRECT: one
 * constant, so that a ping and a burst refuse the same targets. */
#define PROBE_BUF_ALIGN IO_MAX_ALIGN

/* Why a run failed, as iopulse_probe_errors_total{reason} says it. */
enum probe_err {
	PROBE_ERR_IO,	       /* the I/O returned -errno */
	PROBE_ERR_SHORT,       /* fewer bytes than asked */
	PROBE_ERR_TIMEOUT,     /* in flight longer than the probe's timeout */
	PROBE_ERR_TARGET_DOWN, /* the target could not be opened or changed under us */
	PROBE_ERR_SETUP,       /* the probe cannot run on this target (engine, sizes) */
	PROBE_ERR_COUNT,
};

/* What a verify probe found wrong with a block it read back, as
 * iopulse_verify_mismatches_total{kind} says it. */
enum probe_mismatch {
	PROBE_MISMATCH_WRONG_DATA,   /* checksum fails: the data changed */
	PROBE_MISMATCH_WRONG_OFFSET, /* a block written for another offset: misdirected */
	PROBE_MISMATCH_STALE,	     /* an older generation than the last synced: lost write */
	PROBE_MISMATCH_COUNT,
};

struct probe_op_outcome {
	/* Latencies of the I/Os counted in ios: a ping's and a verify probe's net of
	 * the CPU wait below (cpu_wait.h), a burst's as its jobs' clocks saw them. */
	struct hist *hist;
	uint64_t ios, bytes; /* completed (bursts: short ones too) */
	uint64_t errors;     /* completed with -errno */
	uint64_t short_ios;  /* completed with fewer bytes than asked */
	uint64_t io_ns;	     /* time measured: pings the sum of latencies, bursts their phase */
	/* Pings and verify probes: the run-queue wait taken out of the latencies
	 * of the I/Os counted in ios (io_ns + cpu_wait_ns is what a clock around
	 * them read), and how many of them waited CPU_WAIT_MIN_NS or more. */
	uint64_t cpu_wait_ns, waited_ios;
	uint64_t warmup_ios;   /* unmeasured I/Os completed: a ping's warm-up ('warmup_after'), */
	uint64_t warmup_bytes; /* a burst's ramp; their bytes: written to the device all the same */
};

/* A line for the log that a run has to say (a verify probe's mismatch): handed
 * to the probe's say() as it is found; a probe never logs itself. */
struct probe_note {
	int level;	  /* LOG_LVL_* (daemon/log.h) */
	const char *key;  /* set: limited per key, as a change of state (log.h) */
	const char *text; /* the whole line: "Probe NAME: ..." */
};

/* Runs add to it; the consumer clears it when it wants one run's worth. */
struct probe_outcome {
	struct probe_op_outcome op[IO_OP_COUNT];
	uint64_t timeouts;   /* I/Os in flight past the timeout (not claimed before) */
	int error;	     /* first -errno that ended a run early */
	const char *why;     /* words for error or a failed run; NULL: errno says it */
	int io_error;	     /* first I/O failure (-errno), 0 when none */
	const char *io_what; /* what failed then: an io_op_name() or a phrase */
	bool timed_out;	     /* a timeout ended the run (and is logged each time) */
	bool incomplete;     /* stopped or a wait given up: no news about the state */
	bool discard;	     /* shutdown overtook a ping: the daemon keeps none of it */
	/* A run that failed because a file of the probe's own (a verify probe's)
	 * could not be opened or changed under it: reason target_down, not setup,
	 * and why says it whole (errno included, not to be added again). */
	bool target_down;
	bool burst;	     /* the last-burst figures below apply */
	uint64_t elapsed_ns; /* burst: its measured phase */
	/* A burst: its jobs' run-queue wait and their time, all jobs together
	 * (cpu_wait_known: every job measured it), and whether the wait was over
	 * CPU_WAIT_BOUND_RATIO of that time: the run measured the CPU more than
	 * the storage, and the baseline leaves it out (set in burst.c). */
	uint64_t cpu_wait_ns, cpu_thread_ns;
	bool cpu_wait_known;
	bool cpu_bound;
	/* Time the run kept the target busy (iopulse_target_io_seconds_total): a
	 * ping's I/Os' latencies, a burst's whole run, ramp included. */
	uint64_t busy_ns;

	/* A verify probe: blocks it read back and checked, and those found wrong. */
	uint64_t blocks_checked;
	uint64_t mismatches[PROBE_MISMATCH_COUNT];
	/* It wrote less than a run writes, to keep within p->write_left: a burst
	 * stopped there, a verify probe checked its blocks and rewrote none. */
	bool budget_cut;

	/* What the last run has to say in the log, in order: the probe's, valid
	 * until it runs again or is freed. */
	const struct probe_note *notes;
	unsigned n_notes;
};

struct probe;

/* Due while its own previous run is still going: skipped at once, not queued. */
#define PROBE_F_SKIP_IF_RUNNING (1u << 0)
#define PROBE_F_OWN_TIMEOUTS	(1u << 1) /* counts and acts on its timeouts itself */
/* Holds the target for a long run by design (a burst): a probe waiting behind it
 * is expected, not a sign of slow storage (reason "burst", not "busy"). */
#define PROBE_F_EXCLUSIVE (1u << 2)
/* One I/O at a time (a ping): 'engine: auto' is the engine that adds least to
 * each I/O, eng_resolve_qd1(), not the best at keeping a queue full. */
#define PROBE_F_QD1 (1u << 3)
/* Checks data it wrote: the outcome's blocks_checked and mismatches apply. */
#define PROBE_F_VERIFIES (1u << 4)
/* Does its I/O on a file of its own beside the target's probe file (a verify
 * probe's), never on the probe file: a target whose probes all have this needs
 * no probe file (target dir_only). */
#define PROBE_F_OWN_FILE (1u << 5)
/* Keeps its writes within p->write_left itself, stopping them short there
 * (out->budget_cut): a burst, a verify probe. Without it a run writes one I/O
 * (two with a warm-up, when both fit), and the lane's check before the run,
 * that one fits, is the bound. */
#define PROBE_F_BUDGETED (1u << 6)
/* Still runs once its target's write budget is spent, with write_left 0: it
 * reads and checks, and writes nothing (a verify probe: corruption does not
 * wait for the next day). Any other probe that writes is skipped then. */
#define PROBE_F_CHECKS_PAST_BUDGET (1u << 7)
/* Splayed with 'splay: true' (splay.h): its runs fall at a phase of the wall
 * clock hashed from the host and its name, so that a fleet's runs spread over
 * the interval (a burst: in step they would load shared storage together).
 * Without it a probe first runs within a second of start (a ping: small and
 * frequent, and at random phases a lane's pings would collide for ever). */
#define PROBE_F_SPLAY (1u << 8)
/* Held back while other work keeps its target's disks busy, with its
 * 'busy_backoff' (a burst: it would measure the other work, and add to it).
 * The others never are: a ping is the canary, one I/O. */
#define PROBE_F_BUSY_BACKOFF (1u << 9)
/* Keeps its 'iodepth' I/Os in flight (a burst's jobs): on an engine that runs
 * one at a time (sync) that is one, which probe_depth_ignored() says. */
#define PROBE_F_IODEPTH (1u << 10)
/* A run is one request (a ping), as ioping's: `iopulse probe` repeats it -c
 * times at its interval, prints a line per request as ioping does and ioping's
 * exact min/avg/max/mdev of them. Any other kind runs once there, and its -c
 * counts that run's I/Os. */
#define PROBE_F_REQUESTS (1u << 11)
/* Each run has figures of its own (a burst's IOPS, bandwidth, quantiles): the
 * status page shows the last run's in a table of the kind's runs. */
#define PROBE_F_RUN_FIGURES (1u << 12)
/* Times each of its I/Os on its own, one at a time (qd1.h: a ping, a verify
 * probe): its latencies are net of the time its thread waited for a CPU
 * meanwhile (cpu_wait.h), counted per op. Without it (a burst, whose jobs keep
 * a queue) the latencies are as its clocks read them, and its runs' wait is
 * counted as a whole, with its share of the run (outcome cpu_wait_ns). */
#define PROBE_F_NET_LATENCY (1u << 13)

/* What a probe holds open, counted on a running daemon (ls /proc/PID/fd,
 * iopulse(8) Descriptors). */
struct probe_fds {
	unsigned held; /* from set-up or its first run on, between runs too */
	unsigned run;  /* more, at most, during a run (its lane runs one at a time) */
};

struct probe_ops {
	enum cfg_probe_kind kind;
	unsigned flags;				       /* PROBE_F_* */
	unsigned (*io_ops)(const struct cfg_probe *c); /* bit (1 << io_op) per op issued */
	/* What it does, as iopulse_probe_info's op label: "read", "randrw"... */
	const char *(*op_name)(const struct cfg_probe *c);
	int (*init)(struct probe *p); /* 0 or -errno; nothing to free then */
	/* Adds one run on p->target (open) to @out: 0, or -errno when it could not run
	 * (out->why then says why, if errno does not). */
	int (*run)(struct probe *p, const _Atomic bool *stop, struct probe_outcome *out);
	uint64_t (*inflight_since)(const struct probe *p); /* 0 when idle; lock-free */
	void (*free)(struct probe *p);
	/* Descriptors a probe of @c on engine @e holds, for RLIMIT_NOFILE. */
	void (*descriptors)(const struct cfg_probe *c, const struct engine_ops *e,
			    struct probe_fds *out);
	/* A kind with a file of its own (PROBE_F_OWN_FILE): that file's name in the
	 * target's directory for the probe named @probe, into @buf (@n bytes), for
	 * `check` to look at the file the probe opens. NULL for the others. */
	void (*own_file_name)(char *buf, size_t n, const char *probe);
};

struct probe {
	const struct probe_ops *ops;
	const struct cfg_probe *cfg;
	const struct engine_ops *engine; /* cfg->engine resolved (probe_engine_of()) */
	struct target *target;		 /* the caller's; open before each run */
	const uint64_t *bounds_ns;	 /* classic histogram bounds */
	unsigned n_bounds;
	_Atomic uint64_t *timeout_claimed; /* if set: see probe_claim_timeout() */
	/* Bytes the next run may write: what is left of the target's
	 * 'max_write_per_day' today. UINT64_MAX (probe_init()): no limit; the lane
	 * sets it before each run of a probe that writes. */
	uint64_t write_left;
	/* Where a run's notes go the moment they are found (a lane's and oneshot's:
	 * probe_note_log(), the log), so that a run stuck in the kernel after it
	 * found something has said it already. NULL: kept on the outcome (tests). */
	void (*say)(const struct probe_note *note);
	/* The kind's own; NULL until init succeeded. Atomic: the scheduler reads the
	 * in-flight time through it while the lane may replace it (a burst after -EBUSY). */
	void *_Atomic state;
};

/* The rows, each in its kind's own file; kinds.c's table lists them. */
extern const struct probe_ops ping_probe_ops, burst_probe_ops, verify_probe_ops;

/* The row of @kind (kinds.c); never NULL for a kind the configuration accepts. */
const struct probe_ops *probe_ops_of(enum cfg_probe_kind kind);

/* What probe @c holds open (its row's descriptors(), on the engine it resolves
 * to: none counted for an engine that is not there, it does not start). */
void probe_descriptors(const struct cfg_probe *c, struct probe_fds *out);

/* Whether probe @c does I/O on its target's probe file (not PROBE_F_OWN_FILE). */
bool probe_uses_probe_file(const struct cfg_probe *c);

/* The engine @c runs on: its 'engine' resolved for its kind ("auto": sync for a
 * kind with PROBE_F_QD1, else the first available of io_uring, libaio, sync).
 * NULL with *err as eng_resolve(). */
const struct engine_ops *probe_engine_of(const struct cfg_probe *c, int *err);
/* Why "auto" means what probe_engine_of() says for @c, in a few words. */
const char *probe_engine_why(const struct cfg_probe *c);

/* Sets up @p for @cfg on @t. 0 or -errno (-ENOENT: engine not built in,
 * -EOPNOTSUPP: not available here, -EPERM: its 'io_priority' is realtime and
 * this process may not set that). p->ops is set either way; probe_free() is
 * safe after a failure. */
int probe_init(struct probe *p, const struct cfg_probe *cfg, struct target *t,
	       const uint64_t *bounds_ns, unsigned n_bounds);
void probe_free(struct probe *p);
/*
 * One run of @p (its ops->run) with the probe's 'io_priority' set on the calling
 * thread for the run and the thread's own put back after: a lane thread runs
 * several probes. 0 or -errno as ops->run; a priority the kernel refuses fails
 * the run (out->why says so) rather than measuring at another one.
 */
int probe_run(struct probe *p, const _Atomic bool *stop, struct probe_outcome *out);
/* Submit time of the oldest I/O in flight, 0 when none (or not set up). */
uint64_t probe_inflight_since(const struct probe *p);

/* Counts the I/O submitted at @since_ns as timed out unless @claimed says it was:
 * the scheduler (still in flight) and the probe (completed late) both see a slow
 * I/O, and whichever comes first counts it. */
bool probe_claim_timeout(_Atomic uint64_t *claimed, uint64_t since_ns);

/* Histograms for every op; 0 or -ENOMEM (-EINVAL: bad bounds). */
int probe_outcome_init(struct probe_outcome *o, const uint64_t *bounds_ns, unsigned n_bounds);
void probe_outcome_clear(struct probe_outcome *o);
void probe_outcome_free(struct probe_outcome *o);
/* Records the first I/O failure of a run. */
void probe_outcome_io_error(struct probe_outcome *o, int err, const char *what);
/* Says @note in the log (the lane's and oneshot's struct probe say). */
void probe_note_log(const struct probe_note *note);
/*
 * One I/O of a probe that times each of its own (a ping, a verify probe) into
 * @out->op[@op]: submitted at @submit_ns, @lat_ns long, @result bytes or -errno,
 * @want bytes asked for (0 for an fdatasync). Counts its timeout (see
 * probe_claim_timeout()), the time it kept the target busy, and a failure or
 * short transfer; true when it completed in full, for the caller to count it
 * (probe_outcome_measured(), or as a warm-up). -ETIME, a wait given up
 * (shutdown), measured nothing: the run is incomplete.
 */
bool probe_outcome_io(struct probe *p, struct probe_outcome *out, enum io_op op, int64_t result,
		      uint64_t submit_ns, uint64_t lat_ns, uint64_t want);
/* A measured I/O of @bytes, @lat_ns long of which the thread waited @wait_ns
 * for a CPU (0: none, or not measured), into @out->op[@op]: its latency net of
 * the wait into the histogram, the wait counted apart. */
void probe_outcome_measured(struct probe_outcome *out, enum io_op op, uint64_t bytes,
			    uint64_t lat_ns, uint64_t wait_ns);

/* Whether @p's iodepth (PROBE_F_IODEPTH) is more than @engine can do (sync: one
 * I/O at a time, so a burst runs at queue depth 1 whatever it says, as fio
 * warns); if so, the warning in @why. */
bool probe_depth_ignored(const struct cfg_probe *p, const char *engine, char *why, size_t len);

#endif
