/* SPDX-License-Identifier: MIT */
/*
 * config — YAML schedule -> validated, immutable struct config.
 *
 * The configuration is read with libyaml into plain structs, every value checked,
 * every cross-reference resolved. Nothing here logs or touches the disk beyond
 * reading the one file: errors come back in struct cfg_error as
 * "file:line:column: message", naming the key.
 *
 * Schema (see iopulse.yaml(5)):
 *
 *   listen: 127.0.0.1:10035
 *   targets:
 *     - name: state
 *       directory: ${STATE_DIRECTORY:-./iopulse-data}   # or  file: /path/to/existing
 *       size: 64MiB
 *   probes:
 *     - name: read-ping
 *       type: ping
 *       target: state
 *       op: read
 *       interval: 1s
 */
#ifndef IOPULSE_CONFIG_H
#define IOPULSE_CONFIG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/io_op.h"

/* Limits on every user-controlled quantity. */
#define CFG_NAME_MAX	    64 /* bytes, including NUL */
#define CFG_MAX_TARGETS	    64
#define CFG_MAX_PROBES	    256
#define CFG_MAX_BUCKETS	    64
#define CFG_MAX_DEPTH	    64	       /* lists and mappings inside each other (YAML nesting) */
#define CFG_MIN_INTERVAL_NS 1000000ULL /* 1ms */
#define CFG_MAX_INTERVAL_NS 86400000000000ULL /* 24h */
#define CFG_MIN_TIMEOUT_NS  1000000ULL	      /* 1ms */
#define CFG_MAX_TIMEOUT_NS  600000000000ULL   /* 10m */
#define CFG_MIN_BLOCK_SIZE  512ULL
#define CFG_MAX_BLOCK_SIZE  (16ULL << 20) /* 16MiB */
#define CFG_MIN_TARGET_SIZE (1ULL << 20)  /* 1MiB */
#define CFG_MAX_TARGET_SIZE (1ULL << 40)  /* 1TiB */
#define CFG_MAX_IODEPTH	    IO_MAX_DEPTH
#define CFG_MAX_JOBS	    64
#define CFG_MIN_DURATION_NS 100000000ULL    /* 100ms */
#define CFG_MAX_DURATION_NS 600000000000ULL /* 10m */
#define CFG_MAX_IOS	    1000000000ULL
#define CFG_MAX_RATE_IOPS   10000000ULL
#define CFG_MIN_EVERY_NS    1000000000ULL     /* 1s */
#define CFG_MAX_EVERY_NS    86400000000000ULL /* 24h */
#define CFG_MAX_LAYOUT_RATE (1ULL << 40)      /* bytes per second */
#define CFG_MAX_LABELS	    8		      /* a target's 'labels' */
#define CFG_LABEL_VALUE_MAX 128		      /* bytes, without the NUL */
/*
 * A burst's I/O buffers: jobs x iodepth x the largest block_size, each buffer
 * rounded up to CFG_BURST_BUF_ALIGN (cfg_burst_buffer_bytes()). They exist only
 * while the burst runs, but then they are resident (faulted in before the clock
 * starts) and, on io_uring, may be pinned. 256MiB still fits the largest
 * random-I/O burst (64 jobs x 256 x 16KiB) and a heavy sequential one (4 jobs x
 * 64 x 1MiB, or 16MiB blocks at a total depth of 16); more does not measure a
 * device any better, and a monitoring agent that may take more than that on a
 * small VM or a busy database host is a hazard in itself. One lane runs one
 * burst at a time, so this bounds a target's share.
 */
#define CFG_MAX_BURST_BUFFER (256ULL << 20)
#define CFG_BURST_BUF_ALIGN  ((uint64_t)IO_MAX_ALIGN) /* buffer alignment and rounding */

/* A verify probe's 'blocks': each run reads them all back. */
#define CFG_MAX_VERIFY_BLOCKS 65536
/* A verify probe's saved state: one block of this size between its file's
 * header and its blocks, rewritten and synced once a run (daemon/verify.c; the
 * budget counts it). The largest O_DIRECT alignment accepted, so the blocks
 * after it stay aligned whatever the directory's. */
#define CFG_VERIFY_STATE_SIZE IO_MAX_ALIGN
/*
 * The slowest throttled layout, bytes per second (0 is unthrottled). Slower
 * buys nothing: no disk notices 1MiB/s, while the default 64MiB file would
 * already take a minute and the largest one 12 days; and below 64KiB/s each
 * layout write (at least 4KiB) is paid for by a pause of more than 1/16 s, in
 * which a stop or reload is not seen.
 */
#define CFG_MIN_LAYOUT_RATE	       (1ULL << 20)
#define CFG_MAX_KEEP_FREE_FRACTION     0.9  /* 'keep_free' as a percentage: at most 90% */
#define CFG_DEFAULT_KEEP_FREE_FRACTION 0.05 /* 'keep_free: 5%' */

/*
 * The defaults as numbers, for code and tests that build these structs by hand.
 * The configuration's own defaults are the schema rows' (schema.c), as written
 * in YAML; test_config checks that the two agree.
 */
#define CFG_DEFAULT_LISTEN	"127.0.0.1:10035"
#define CFG_DEFAULT_TARGET_SIZE (64ULL << 20)  /* iopulse.yaml(5) "Why 64MiB" */
#define CFG_DEFAULT_INTERVAL_NS 1000000000ULL  /* 1s */
#define CFG_DEFAULT_TIMEOUT_NS	10000000000ULL /* 10s */
#define CFG_DEFAULT_BLOCK_SIZE	4096ULL
#define CFG_DEFAULT_IODEPTH	32
#define CFG_DEFAULT_DURATION_NS 10000000000ULL	 /* 10s */
#define CFG_DEFAULT_EVERY_NS	1800000000000ULL /* 30m: see iopulse.yaml(5) every */
#define CFG_DEFAULT_RWMIX_READ	0.5
#define CFG_DEFAULT_LAYOUT_RATE (32ULL << 20) /* bytes per second */
/* A burst's busy check (iopulse.yaml(5) BURST PROBES, busy_*). */
#define CFG_DEFAULT_BUSY_UTILIZATION 0.5
#define CFG_DEFAULT_BUSY_QUEUE_DEPTH 4
#define CFG_MAX_BUSY_QUEUE_DEPTH     100000
/* A target's budget (config/budget.c; iopulse.yaml(5) says why these). */
#define CFG_DEFAULT_MAX_DUTY_CYCLE    0.01	    /* 'max_duty_cycle: 1%' */
#define CFG_DEFAULT_MAX_WRITE_PER_DAY (1ULL << 30)  /* 1GiB */
#define CFG_DEFAULT_EXPECTED_LATENCY  2000000ULL    /* 2ms */
#define CFG_MIN_EXPECTED_LATENCY_NS   1000ULL	    /* 1us */
#define CFG_MAX_EXPECTED_LATENCY_NS   1000000000ULL /* 1s */
#define CFG_MAX_WRITE_PER_DAY	      (1ULL << 50)  /* 1PiB */
/* A target's slow state (iopulse.yaml(5) slow_factor, slow_floor, baseline_warmup,
 * tail_factor, tail_share, stall, slow_minutes, ok_minutes). */
#define CFG_DEFAULT_SLOW_FACTOR	       4.0
#define CFG_MAX_SLOW_FACTOR	       1000
#define CFG_SLOW_FLOOR_AUTO	       UINT64_MAX /* 'slow_floor: auto', the default */
#define CFG_DEFAULT_SLOW_FLOOR_NS      CFG_SLOW_FLOOR_AUTO
#define CFG_MAX_SLOW_FLOOR_NS	       60000000000ULL /* 1m */
#define CFG_DEFAULT_TAIL_FACTOR	       4.0
#define CFG_DEFAULT_TAIL_SHARE	       0.02
#define CFG_DEFAULT_STALL_NS	       1000000000ULL /* 1s */
#define CFG_DEFAULT_SLOW_MINUTES       2
#define CFG_DEFAULT_OK_MINUTES	       3
#define CFG_MAX_JUDGE_MINUTES	       30
#define CFG_DEFAULT_BASELINE_WARMUP_NS 600000000000ULL	 /* 10m */
#define CFG_MIN_BASELINE_WARMUP_NS     60000000000ULL	 /* 1m: whole minutes */
#define CFG_MAX_BASELINE_WARMUP_NS     86400000000000ULL /* 24h */

/* Native histograms (protobuf scrapes). */
#define CFG_MIN_NATIVE_SCHEMA	  (-4)		/* Prometheus' coarsest schema */
#define CFG_MAX_NATIVE_SCHEMA	  7		/* the histogram's recording resolution */
#define CFG_DEFAULT_NATIVE_SCHEMA 3		/* buckets 2^(1/8): 9% wide */
#define CFG_MAX_NATIVE_ZERO_NS	  1000000000ULL /* 1s: native_histogram_zero_threshold */

enum cfg_target_kind {
	CFG_TARGET_DIRECTORY, /* iopulse creates and owns a probe file inside it */
	CFG_TARGET_FILE,      /* an existing regular file: read-only, never written */
	CFG_TARGET_DEVICE,    /* a block device: read-only unless allow_device_writes */
};

enum cfg_probe_kind {
	CFG_PROBE_PING,	  /* QD1, one I/O per interval */
	CFG_PROBE_BURST,  /* fio-style: iodepth x jobs for a duration or a number of I/Os */
	CFG_PROBE_VERIFY, /* directory only: writes checksummed blocks, checks them later */
	CFG_PROBE_KINDS,  /* how many there are; not a kind */
};

/* Burst access pattern, as fio's rw=. */
enum cfg_rw {
	CFG_RW_RANDREAD,
	CFG_RW_RANDWRITE,
	CFG_RW_RANDRW,
	CFG_RW_READ,  /* sequential */
	CFG_RW_WRITE, /* sequential */
};

/* Whether a directory target must be on a mounted filesystem ('require_mount'). */
enum cfg_require_mount {
	CFG_MOUNT_AUTO, /* default: when /etc/fstab ($IOPULSE_FSTAB) lists a mount point
			 * at or above the directory, that filesystem must be mounted there */
	CFG_MOUNT_NO,	/* false: no check */
	CFG_MOUNT_SELF, /* true: the directory itself must be a mount point */
	CFG_MOUNT_PATH, /* a path: that mount point must be mounted and hold the directory */
};

enum cfg_sync {
	CFG_SYNC_NONE,
	CFG_SYNC_FDATASYNC, /* write pings only: fdatasync after each write, timed apart */
};

struct cfg_pos {
	unsigned line; /* 1-based, 0 when not from a file */
	unsigned col;  /* 1-based */
};

/* One of a target's 'labels': an extra label of its iopulse_target_info series. */
struct cfg_label {
	char name[CFG_NAME_MAX];	     /* [a-zA-Z_][a-zA-Z0-9_]*, not reserved */
	char value[CFG_LABEL_VALUE_MAX + 1]; /* non-empty, no control characters */
};

struct cfg_target {
	char name[CFG_NAME_MAX];
	enum cfg_target_kind kind;
	char *path;		  /* environment-expanded, as written otherwise */
	uint64_t size;		  /* directory: probe-file size; file: 0 (use the file's size) */
	bool direct;		  /* O_DIRECT, default true */
	bool allow_memory_backed; /* allow tmpfs/ramfs (measures RAM), default false */
	bool allow_device_writes; /* device: write probes allowed (destroys data), default false */
	uint64_t layout_rate; /* directory: probe-file layout, bytes per second; 0 = unthrottled */
	enum cfg_require_mount require_mount; /* directory: see enum; others: CFG_MOUNT_NO */
	char *mount_path;		      /* CFG_MOUNT_PATH: the mount point; else NULL */
	/* directory: a layout never leaves less than max(keep_free_bytes,
	 * keep_free_fraction x filesystem size) free ('keep_free': a size or a
	 * percentage, default 5%); one of the two is 0, both on other targets. */
	uint64_t keep_free_bytes;
	double keep_free_fraction;
	struct cfg_label labels[CFG_MAX_LABELS]; /* 'labels', in the order written */
	unsigned n_labels;
	double max_duty_cycle;	    /* budget: share of the time probes may keep it busy; 1: any */
	uint64_t max_write_per_day; /* budget: probe bytes written a day; 0 = no limit */
	uint64_t expected_latency_ns; /* budget: one I/O's time, for the projection */
	/* How its probe ops' figures are judged (docs/measurement.md, "The slow
	 * state"): a minute is slow when its p50 is over slow_factor x the baseline
	 * p50 and over slow_floor_ns (the median), when over tail_share of the last
	 * 5 minutes' I/Os took over tail_factor x the baseline p99 (the tail), or
	 * when I/Os of stall_ns or more came in 2 of the last 5 minutes (stalls);
	 * an op is slow after slow_minutes slow minutes in a row, and no longer
	 * after ok_minutes good ones. The baseline counts once baseline_warmup_ns
	 * of minutes with I/O are in it (whole minutes). */
	double slow_factor;	     /* > 1, at most CFG_MAX_SLOW_FACTOR */
	uint64_t slow_floor_ns;	     /* 0: no floor; CFG_SLOW_FLOOR_AUTO: the baseline's p99 */
	uint64_t baseline_warmup_ns; /* whole minutes, 1m..24h */
	double tail_factor;	     /* > 1, at most CFG_MAX_SLOW_FACTOR */
	double tail_share;	     /* 0..1; 0: tails are not judged */
	uint64_t stall_ns;	     /* 0: stalls are not judged */
	unsigned slow_minutes;	     /* 1..CFG_MAX_JUDGE_MINUTES */
	unsigned ok_minutes;	     /* 1..CFG_MAX_JUDGE_MINUTES */
	struct cfg_pos pos;	     /* of the list item */
};

struct cfg_probe {
	char name[CFG_NAME_MAX];
	enum cfg_probe_kind kind;
	unsigned target;	 /* index into config->targets */
	enum io_op op;		 /* ping: IO_READ or IO_WRITE */
	enum cfg_sync sync;	 /* ping */
	uint64_t interval_ns;	 /* ping: 'interval'; burst: 'every' */
	uint64_t block_size;	 /* bytes; burst with a range: the smallest */
	uint64_t block_size_max; /* bytes; == block_size unless a burst range "2k-16k" */
	uint64_t working_set;	 /* bytes; 0 = the whole target */
	uint64_t timeout_ns;	 /* per I/O */
	uint64_t warmup_idle_ns; /* ping 'warmup_after': the target idle longer than
				  * this, a warm-up I/O goes first; 0 = never */
	char engine[16];	 /* "auto", "io_uring", "libaio", "sync" or "null" */
	int io_priority;	 /* ioprio_set(2)'s value (ioprio.h); 0 = none */
	enum cfg_rw rw;		 /* burst */
	double rwmix_read;	 /* burst, randrw: fraction of reads, 0..1 */
	unsigned iodepth;	 /* burst: I/Os in flight per job */
	unsigned jobs;		 /* burst: threads, each with its own queue */
	uint64_t duration_ns;	 /* burst: measured time (after ramp); 0 when 'ios' is set */
	uint64_t ios;		 /* burst: measured I/Os (after ramp), all jobs; 0 = by duration */
	uint64_t rate_iops;	 /* burst: cap over all jobs; 0 = unlimited */
	uint64_t ramp_ns;	 /* burst: warm-up excluded from results */
	bool busy_backoff;	 /* burst: held back while the target's disk is busy */
	double busy_utilization; /* burst: busy above this share of time (0..1) */
	unsigned busy_depth;	 /* burst: or above this average queue depth */
	unsigned verify_blocks;	 /* verify: blocks in its file ('blocks') */
	unsigned verify_per_run; /* verify: blocks each run writes ('blocks_per_run') */
	bool sequential;	 /* ping: the working set in order, not at random;
				  * not a key: `iopulse probe -L` sets it */
	bool alternate;		 /* ping with op write: every other request a read,
				  * writes first; not a key: `iopulse probe -G` */
	bool dsync;		 /* ping: its own descriptor of the file, O_DSYNC, so a
				  * write's time includes its sync; not a key: -y */
	struct cfg_pos pos;	 /* of the list item */
};

struct config {
	char *source;	      /* file name, or CFG_EMBEDDED_NAME */
	char listen_host[64]; /* numeric IPv4/IPv6 literal without brackets; "" = any */
	uint16_t listen_port;
	uint64_t buckets_ns[CFG_MAX_BUCKETS]; /* classic histogram bounds, ascending */
	unsigned n_buckets;
	int native_schema;		   /* native histograms: schema, -4..7 */
	uint64_t native_zero_threshold_ns; /* their zero bucket; 0 = 2^-128 s, as client_golang */
	bool splay; /* probes start at a per-host phase (daemon/splay.h), default true */
	/* Where the state file lives (baselines and target states across restarts),
	 * environment-expanded; "" (the default with STATE_DIRECTORY unset): none. */
	char *state_directory;
	struct cfg_target *targets;
	unsigned n_targets;
	struct cfg_probe *probes;
	unsigned n_probes;
	atomic_uint refs; /* cfg_ref(), cfg_free(): 1 when loaded */
};

struct cfg_error {
	char msg[512]; /* "file:line:column: message" (or "file: message") */
};

/* The embedded default configuration, as YAML text (config/default.yaml). */
extern const char cfg_default_yaml[];
/* Its name: the source of the configuration it loads, and what messages call it. */
#define CFG_EMBEDDED_NAME "<embedded default>"

/*
 * Parse and validate the YAML file at @path. On success stores a new config in
 * *out (free with cfg_free()) and returns 0. On failure returns -EINVAL for a bad
 * configuration or -errno when the file cannot be read, and fills @err.
 */
int cfg_load_file(const char *path, struct config **out, struct cfg_error *err);

/* As cfg_load_file(), from memory; @name is used in messages. */
int cfg_load_string(const char *name, const char *text, size_t len, struct config **out,
		    struct cfg_error *err);

/* ---- shared with the web configuration (webconfig.h) ---- */

#define CFG_EMPTY_MESSAGE "configuration is empty, expected a mapping with 'targets' and 'probes'"

/* Reads the regular file @path (at most CFG_FILE_MAX bytes, never blocking on a
 * FIFO) into a new buffer *@text of *@len bytes (caller frees; NULL when empty).
 * 0, or -errno with @err filled ("path: cannot read: ..."). */
int cfg_read_file(const char *path, char **text, size_t *len, struct cfg_error *err);

struct yaml_document_s;

/* Loads the one YAML document of @text into @doc (yaml_document_delete() it on
 * success), refusing nesting deeper than CFG_MAX_DEPTH, a syntax error, a
 * second document, and an empty one ("name:1:1: @empty"). 0 or -EINVAL/-ENOMEM
 * with @err filled, positions in @name. */
int cfg_yaml_load(const char *name, const char *text, size_t len, struct yaml_document_s *doc,
		  const char *empty, struct cfg_error *err);

struct yaml_node_s;

/* Fills @err with "name:line:col: " (the position of @n; "name: " when NULL) and
 * the message @fmt; returns -EINVAL, for `return cfg_fail_at(...)`. */
__attribute__((format(printf, 4, 0))) int cfg_fail_at_v(struct cfg_error *err, const char *name,
							const struct yaml_node_s *n,
							const char *fmt, va_list ap);

/* As cfg_load_string() on cfg_default_yaml, named CFG_EMBEDDED_NAME. */
int cfg_load_default(struct config **out, struct cfg_error *err);

/*
 * A configuration is shared by whoever runs from it: the scheduler and each lane
 * built from it, a lane left in the kernel by a reload included, which may
 * outlive the scheduler's interest in it by hours. cfg_ref() takes one more
 * reference and returns @c (NULL: NULL); cfg_free() drops one, freeing the
 * configuration with the last (a loaded one has one). NULL is a no-op. The
 * count is atomic: lanes drop theirs on their own threads.
 */
const struct config *cfg_ref(const struct config *c);
void cfg_free(const struct config *c);

/* Prints the effective schedule (every value, defaults filled in) as YAML. */
void cfg_print(const struct config *c, FILE *f);

/* Writes the UTF-8 string @s as a YAML scalar that reads back as @s: plain when
 * it can be, else double-quoted with escapes (control characters, and what
 * YAML would fold or drop). cfg_print_path() also doubles each '$', so that
 * the path is not expanded again (${NAME}). */
void cfg_print_str(FILE *f, const char *s);
void cfg_print_path(FILE *f, const char *s);

/* Looks a target up by name; returns its index or -1. */
int cfg_target_index(const struct config *c, const char *name);

/* Looks a probe up by name; returns its index or -1. */
int cfg_probe_index(const struct config *c, const char *name);

/*
 * Parses a listen address as the 'listen' key does: "HOST:PORT", "[IPV6]:PORT" or
 * ":PORT" (any address), HOST a numeric literal, PORT 0..65535 (0: any free port).
 * Stores the host without brackets ("" = any) in @host. Returns 0, -EINVAL when
 * malformed, -ENAMETOOLONG when @host_len is too small. For --listen.
 */
int cfg_parse_listen(const char *s, char *host, size_t host_len, uint16_t *port);

/*
 * Whether two targets have the same definition: every key, not the position in
 * the file, nor the keys that judge its figures (slow_factor, slow_floor,
 * baseline_warmup): those apply without making it another target. A reload
 * keeps a target's lane state (and its probes' figures) only when it is.
 */
bool cfg_target_same(const struct cfg_target *a, const struct cfg_target *b);

/*
 * Whether two probes have the same definition: every key, their targets' too,
 * not the position in the file. A reload keeps a probe (and its state) only
 * when it is. @ac and @bc are the configurations @a and @b belong to.
 */
bool cfg_probe_same(const struct config *ac, const struct cfg_probe *a, const struct config *bc,
		    const struct cfg_probe *b);

/*
 * A hash (CRC-32) of what probe @p of @c measures and how: every key of the
 * probe and of its target but the judgement keys, as cfg_probe_same() compares
 * them. Figures saved under one hash (the state file) are another probe's
 * under another. 0 only when out of memory, which matches nothing.
 */
uint32_t cfg_probe_fingerprint(const struct config *c, const struct cfg_probe *p);

/* Whether the probe writes (a write ping, a burst with randwrite/randrw/write, a
 * verify probe). */
bool cfg_probe_writes(const struct cfg_probe *p);

/* The memory a burst's I/O buffers take while it runs (see CFG_MAX_BURST_BUFFER):
 * jobs x iodepth x block_size_max, each buffer rounded up to CFG_BURST_BUF_ALIGN. */
uint64_t cfg_burst_buffer_bytes(const struct cfg_probe *p);

/*
 * The budget (config/budget.c): what a schedule costs each target, projected
 * from the configuration alone (the model is iopulse.yaml(5)'s, NOTES, Budget).
 */
struct cfg_cost {
	double busy_s_per_hour;	    /* seconds an hour with the probes' I/O in flight */
	double write_bytes_per_day; /* bytes the probes write a day (no layout) */
};

/* The projected cost of probe @p of @c. */
void cfg_probe_cost(const struct config *c, const struct cfg_probe *p, struct cfg_cost *out);
/* The projected cost of all probes of target @ti of @c. */
void cfg_target_cost(const struct config *c, unsigned ti, struct cfg_cost *out);
/* 0 when every target's projection is within its 'max_duty_cycle' and
 * 'max_write_per_day'; otherwise -EDQUOT with @err "file:line:col: target ...",
 * at the first target over budget, naming its most costly probes. */
int cfg_check_budget(const struct config *c, struct cfg_error *err);
/* Each target's projection as YAML comment lines, for `iopulse check`. */
void cfg_print_budget(const struct config *c, FILE *f);

/* One key of the configuration, as iopulse.yaml(5) documents it. */
struct cfg_key_doc {
	const char *section; /* the manual's: "TOP LEVEL", "TARGETS", "PING PROBES", ... */
	const char *name;
	char type[96];	  /* "size", "read or write", ... */
	const char *def;  /* as written in YAML: "64MiB"; NULL: none */
	bool required;	  /* and so no default */
	const char *help; /* one line */
};

/*
 * The @i-th key of the schema (0, 1, ...) into @doc: 0, or -ENOENT past the
 * last. A key documented apart for pings and bursts comes once for each.
 */
int cfg_key_doc(unsigned i, struct cfg_key_doc *doc);

/* Names for enums, for messages and labels. */
const char *cfg_target_kind_name(enum cfg_target_kind k);
const char *cfg_probe_kind_name(enum cfg_probe_kind k);
const char *cfg_rw_name(enum cfg_rw rw);
/* As written in 'require_mount': "auto", "true", "false"; "path" for CFG_MOUNT_PATH. */
const char *cfg_require_mount_name(enum cfg_require_mount m);

/*
 * Units (config/units.c). Each parses the whole string or fails; returns 0, or
 * -EINVAL (malformed) / -ERANGE (overflow) / -EDOM (durations: units repeated or
 * out of order), never logs.
 *
 * Sizes are binary as in fio: "4096", "4k", "4K", "4KiB", "1m", "1MiB", "1g",
 * "1GiB", "1t", "1TiB", optional trailing "B" after a bare number ("512B").
 * "KB", "MB" ... are rejected as ambiguous, and "kib", "KIB" ... as misspelt
 * (-EINVAL): the IEC units are written KiB, MiB, GiB, TiB only.
 * Durations: a sequence of <number><unit> with units ns, us, ms, s, m, h, d
 * ("500ms", "10s", "1m30s"); a bare number is an error (no unit). Decimal
 * fractions allowed ("1.5s"). Each unit at most once, largest first: "1s1s"
 * and "30s1m" are -EDOM.
 * Percentages: "75%", "12.5%" -> 0.75, 0.125; range 0..100%.
 * Counts (cfg_parse_uint): plain decimal digits only, "32"; no sign, fraction or unit.
 * Numbers (cfg_parse_number): "4", "2.5"; no sign, exponent or unit, at most 18 digits.
 */
int cfg_parse_uint(const char *s, uint64_t *out);
int cfg_parse_size(const char *s, uint64_t *out);
int cfg_parse_duration(const char *s, uint64_t *out_ns);
int cfg_parse_percent(const char *s, double *out);
int cfg_parse_number(const char *s, double *out);

/* Formats for cfg_print() and messages: "4KiB", "64MiB", "4097"; "500ms", "10s", "1m30s". */
void cfg_format_size(uint64_t bytes, char *buf, size_t len);
/* For people, not for reading back: "1.5 MiB", "410.0 KiB", "512 B". */
void cfg_format_bytes(double bytes, char *buf, size_t len);
void cfg_format_duration(uint64_t ns, char *buf, size_t len);
/* "70%", "12.5%": the shortest form cfg_parse_percent() reads back to @fraction exactly. */
void cfg_format_percent(double fraction, char *buf, size_t len);
/* "4", "2.5": the shortest form cfg_parse_number() reads back to @v exactly. */
void cfg_format_number(double v, char *buf, size_t len);

#endif
