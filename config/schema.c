/* SPDX-License-Identifier: MIT */
/*
 * schema — the table with one row per key of the configuration, and the
 * sections of the file (the top level, a target, a probe) that the rows
 * belong to.
 */
#include <stddef.h>

#include "config/config.h"
#include "config/config_int.h"

/* ---- the schema ---------------------------------------------------------------- */

/*
 * Every key of the configuration is one row of schema[] below: its name, where
 * it is valid, the type that reads, prints and compares it, the field it fills,
 * its default as written in YAML, its limits and a line of help. The walk over
 * a mapping, the unknown, duplicate, misplaced and missing-key errors and their
 * suggestions, the defaults, cfg_print(), cfg_target_same()/cfg_probe_same()
 * and the key entries of iopulse.yaml(5) (a unit test compares them) all come
 * from the rows (a judgement row, how figures are judged, is left out of the
 * comparisons: a reload applies it and keeps what was measured). Checks
 * between keys stay in code, in check.c: cfg_check_target_kind(), check_ping(),
 * check_burst() and cfg_resolve_probes().
 */

/* ---- the table ---- */

static const char *const op_names[] = {"read", "write", NULL};
static const char *const sync_names[] = {"none", "fdatasync", NULL};
const char *const probe_kind_names[] = {"ping", "burst", "verify", NULL};
static const char *const engine_names[] = {"auto", "io_uring", "libaio", "sync", "null", NULL};
const char *const rw_names[] = {"randread", "randwrite", "randrw", "read", "write", NULL};
_Static_assert(sizeof(probe_kind_names) / sizeof(probe_kind_names[0]) == CFG_PROBE_KINDS + 1,
	       "a name for each kind of probe");

static bool shown_if_randrw(const void *base)
{
	return ((const struct cfg_probe *)base)->rw == CFG_RW_RANDRW;
}

static bool shown_if_by_duration(const void *base)
{
	return ((const struct cfg_probe *)base)->ios == 0;
}

static bool shown_if_by_ios(const void *base)
{
	return ((const struct cfg_probe *)base)->ios != 0;
}

#define FIELD(type, f) .off = offsetof(type, f), .size = sizeof(((type *)0)->f)
#define TOP(f)	       FIELD(struct config, f)
#define TGT(f)	       FIELD(struct cfg_target, f)
#define PRB(f)	       FIELD(struct cfg_probe, f)

/*
 * In each section, the order of the rows is the order of the "valid keys" list
 * and of cfg_print() (by print_group). A key whose type, default or entry in
 * the manual differs between kinds of probe has a row for each.
 */
const struct key schema[] = {
	/* top level */
	{"listen", W_TOP, &type_listen, TOP(listen_host), .def = "127.0.0.1:10035",
	 .help = "where /metrics is served"},
	{"buckets", W_TOP, &type_buckets, TOP(buckets_ns),
	 .def = "[10us, 25us, 50us, 100us, 250us, 500us, 1ms, 2.5ms, 5ms, 10ms, 25ms, 50ms, "
		"100ms, 250ms, 500ms, 1s, 2.5s, 5s, 10s]",
	 .help = "upper bounds of the classic latency histogram buckets"},
	{"native_histogram_schema", W_TOP, &type_int, TOP(native_schema), .def = "3",
	 .min = CFG_MIN_NATIVE_SCHEMA, .max = CFG_MAX_NATIVE_SCHEMA,
	 .help = "resolution of native histograms on protobuf scrapes"},
	{"native_histogram_zero_threshold", W_TOP, &type_duration, TOP(native_zero_threshold_ns),
	 .def = "0s", .min = 0, .max = CFG_MAX_NATIVE_ZERO_NS,
	 .help = "latencies up to it count in the native histogram's zero bucket"},
	{"splay", W_TOP, &type_bool, TOP(splay), .def = "true",
	 .help = "start each probe at a phase of its own on each host"},
	{"state_directory", W_TOP, &type_state_directory, TOP(state_directory),
	 .def = "${STATE_DIRECTORY:-}",
	 .help = "where baselines and target states are kept across restarts; empty: nowhere"},
	{"targets", W_TOP, &type_targets, TOP(targets), .required = true,
	 .help = "what to measure"},
	{"probes", W_TOP, &type_probes, TOP(probes), .required = true,
	 .help = "how and how often to measure"},

	/* targets */
	{"name", W_TARGET, &type_name, TGT(name), .required = true, .help = "the target label"},
	{"directory", W_DIRECTORY, &type_target_path, TGT(path),
	 .help = "a directory, where iopulse keeps a probe file of its own"},
	{"file", W_FILE, &type_target_path, TGT(path), .help = "an existing file, read only"},
	{"device", W_DEVICE, &type_target_path, TGT(path), .help = "a block device"},
	{"size", W_DIRECTORY, &type_size, TGT(size), .def = "64MiB", .min = CFG_MIN_TARGET_SIZE,
	 .max = CFG_MAX_TARGET_SIZE, .elsewhere = " and is measured at its own size",
	 .help = "size of the probe file"},
	{"layout_rate", W_DIRECTORY, &type_rate, TGT(layout_rate), .def = "32MiB/s",
	 .min = CFG_MIN_LAYOUT_RATE, .max = CFG_MAX_LAYOUT_RATE,
	 .elsewhere = ", which iopulse never lays out",
	 .help = "how fast the probe file is first laid out"},
	{"keep_free", W_DIRECTORY, &type_keep_free, TGT(keep_free_bytes), .def = "5%",
	 .elsewhere = ", which iopulse never lays out",
	 .help = "free space a probe-file layout must leave"},
	{"require_mount", W_DIRECTORY, &type_require_mount, TGT(require_mount), .def = "auto",
	 .elsewhere = ", and iopulse creates nothing beside it",
	 .help = "whether the directory must be on a mounted filesystem"},
	{"direct", W_TARGET, &type_bool, TGT(direct), .def = "true", .help = "use O_DIRECT"},
	{"allow_memory_backed", W_TARGET, &type_bool, TGT(allow_memory_backed), .def = "false",
	 .help = "allow a target on tmpfs or ramfs"},
	{"allow_device_writes", W_DEVICE, &type_bool, TGT(allow_device_writes), .def = "false",
	 .elsewhere = "", .help = "allow write probes on the device"},
	{"max_duty_cycle", W_TARGET, &type_percent, TGT(max_duty_cycle), .def = "1%",
	 .help = "share of the time the probes may keep the target busy"},
	{"max_write_per_day", W_TARGET, &type_size, TGT(max_write_per_day), .def = "1GiB", .min = 0,
	 .max = CFG_MAX_WRITE_PER_DAY,
	 .help = "bytes the probes may write to the target a day; 0: no limit"},
	{"expected_latency", W_TARGET, &type_duration, TGT(expected_latency_ns), .def = "2ms",
	 .min = CFG_MIN_EXPECTED_LATENCY_NS, .max = CFG_MAX_EXPECTED_LATENCY_NS,
	 .help = "time one I/O keeps the target busy, for the projected budget"},
	{"slow_factor", W_TARGET, &type_factor, TGT(slow_factor), .def = "4", .min = 1,
	 .max = CFG_MAX_SLOW_FACTOR, .judgement = true,
	 .help = "slow when recent latency is over this many times its baseline"},
	{"slow_floor", W_TARGET, &type_duration_auto, TGT(slow_floor_ns), .def = "auto", .min = 0,
	 .max = CFG_MAX_SLOW_FLOOR_NS, .judgement = true,
	 .help = "and over this; auto: over the baseline's p99 and 100us; 0s: no floor"},
	{"baseline_warmup", W_TARGET, &type_minutes, TGT(baseline_warmup_ns), .def = "10m",
	 .min = CFG_MIN_BASELINE_WARMUP_NS, .max = CFG_MAX_BASELINE_WARMUP_NS, .judgement = true,
	 .help = "minutes with I/O a baseline needs before it is used"},
	{"tail_factor", W_TARGET, &type_factor, TGT(tail_factor), .def = "4", .min = 1,
	 .max = CFG_MAX_SLOW_FACTOR, .judgement = true,
	 .help = "a slow I/O takes over this many times the baseline's p99"},
	{"tail_share", W_TARGET, &type_percent, TGT(tail_share), .def = "2%", .judgement = true,
	 .help = "slow when over this share of the last 5 minutes' I/Os were; 0%: never"},
	{"stall", W_TARGET, &type_duration, TGT(stall_ns), .def = "1s", .min = 0,
	 .max = CFG_MAX_TIMEOUT_NS, .judgement = true,
	 .help = "slow when I/Os this long came in 2 of the last 5 minutes; 0s: never"},
	{"slow_minutes", W_TARGET, &type_count, TGT(slow_minutes), .def = "2", .min = 1,
	 .max = CFG_MAX_JUDGE_MINUTES, .judgement = true,
	 .help = "slow minutes in a row that make an op slow"},
	{"ok_minutes", W_TARGET, &type_count, TGT(ok_minutes), .def = "3", .min = 1,
	 .max = CFG_MAX_JUDGE_MINUTES, .judgement = true,
	 .help = "good minutes in a row that make a slow op good again"},
	{"labels", W_TARGET, &type_labels, TGT(labels), .shown = cfg_shown_if_labels,
	 .help = "extra labels of the target's iopulse_target_info series"},

	/* probes */
	{"name", W_PROBE, &type_name, PRB(name), .required = true, .help = "the probe label"},
	{"type", W_PROBE, &type_enum, PRB(kind), .names = probe_kind_names, .required = true,
	 .help = "a ping, a burst or a verify probe"},
	{"target", W_PROBE, &type_target_ref, PRB(target), .required = true,
	 .help = "the name of the target it measures"},
	{"op", W_PING, &type_enum, PRB(op), .names = op_names, .def = "read",
	 .elsewhere = "burst probes use 'rw'", .help = "read or write"},
	{"sync", W_PING, &type_enum, PRB(sync), .names = sync_names, .def = "none",
	 .elsewhere = "burst probes do not fdatasync", .help = "fdatasync after each write"},
	{"interval", W_PING, &type_duration, PRB(interval_ns), .def = "1s",
	 .min = CFG_MIN_INTERVAL_NS, .max = CFG_MAX_INTERVAL_NS,
	 .elsewhere = "burst probes use 'every'", .help = "time between two pings"},
	{"block_size", W_PING, &type_block_size, PRB(block_size), .def = "4KiB",
	 .help = "bytes per I/O"},
	{"block_size", W_BURST, &type_block_range, PRB(block_size), .def = "4KiB", .print_group = 1,
	 .help = "bytes per I/O, or a range of them"},
	{"working_set", W_PING | W_BURST, &type_size, PRB(working_set), .def = "0", .min = 0,
	 .max = CFG_MAX_TARGET_SIZE, .print_group = 2, .help = "offsets stay within it"},
	{"timeout", W_PING, &type_duration, PRB(timeout_ns), .def = "10s",
	 .min = CFG_MIN_TIMEOUT_NS, .max = CFG_MAX_TIMEOUT_NS, .print_group = 2,
	 .help = "an I/O slower than this counts as a timeout"},
	{"warmup_after", W_PING, &type_duration, PRB(warmup_idle_ns), .def = "0s", .min = 0,
	 .max = CFG_MAX_INTERVAL_NS, .elsewhere = "burst probes use 'ramp'", .print_group = 2,
	 .help = "idle time after which an unmeasured warm-up I/O goes first; 0s: never"},
	{"timeout", W_BURST, &type_duration, PRB(timeout_ns), .def = "10s",
	 .min = CFG_MIN_TIMEOUT_NS, .max = CFG_MAX_TIMEOUT_NS, .print_group = 2,
	 .help = "an I/O in flight longer than this aborts the burst"},
	{"engine", W_PING | W_BURST, &type_engine, PRB(engine), .names = engine_names,
	 .def = "auto", .print_group = 2, .help = "the I/O engine"},
	{"io_priority", W_PROBE, &type_io_priority, PRB(io_priority), .def = "none",
	 .print_group = 2, .help = "the I/O scheduling class and level of its I/O"},
	{"rw", W_BURST, &type_enum, PRB(rw), .names = rw_names, .def = "randread",
	 .elsewhere = "ping probes use 'op'", .help = "the access pattern, as fio's rw="},
	{"rwmix_read", W_BURST, &type_percent, PRB(rwmix_read), .def = "50%",
	 .elsewhere = "ping probes use 'op'", .shown = shown_if_randrw, .help = "share of reads"},
	{"iodepth", W_BURST, &type_count, PRB(iodepth), .def = "32", .min = 1,
	 .max = CFG_MAX_IODEPTH, .elsewhere = "ping probes have one I/O in flight",
	 .print_group = 1, .help = "I/Os in flight in each job"},
	{"jobs", W_BURST, &type_count, PRB(jobs), .def = "1", .min = 1, .max = CFG_MAX_JOBS,
	 .elsewhere = "ping probes have one I/O in flight", .print_group = 1,
	 .help = "threads, each with its own queue"},
	{"duration", W_BURST, &type_duration, PRB(duration_ns), .def = "10s",
	 .min = CFG_MIN_DURATION_NS, .max = CFG_MAX_DURATION_NS,
	 .elsewhere = "ping probes do one I/O every 'interval'", .shown = shown_if_by_duration,
	 .print_group = 1, .help = "length of the measured part"},
	{"ios", W_BURST, &type_count, PRB(ios), .min = 1, .max = CFG_MAX_IOS,
	 .elsewhere = "ping probes do one I/O every 'interval'", .shown = shown_if_by_ios,
	 .print_group = 1, .help = "I/Os over all jobs in the measured part"},
	{"rate_iops", W_BURST, &type_count, PRB(rate_iops), .def = "0", .min = 0,
	 .max = CFG_MAX_RATE_IOPS, .elsewhere = "ping probes do one I/O every 'interval'",
	 .print_group = 1, .help = "cap on I/Os per second over all jobs"},
	{"ramp", W_BURST, &type_duration, PRB(ramp_ns), .def = "0s", .min = 0,
	 .max = CFG_MAX_DURATION_NS, .elsewhere = "ping probes have no warm-up", .print_group = 1,
	 .help = "warm-up, excluded from the results"},
	{"every", W_BURST, &type_duration, PRB(interval_ns), .def = "30m", .min = CFG_MIN_EVERY_NS,
	 .max = CFG_MAX_EVERY_NS, .elsewhere = "ping probes use 'interval'", .print_group = 1,
	 .help = "time between the starts of two bursts"},
	{"busy_backoff", W_BURST, &type_bool, PRB(busy_backoff), .def = "true",
	 .elsewhere = "pings are never held back for a busy disk", .print_group = 2,
	 .help = "skip the burst while the target's disk is busy"},
	{"busy_utilization", W_BURST, &type_percent, PRB(busy_utilization), .def = "50%",
	 .elsewhere = "pings are never held back for a busy disk", .print_group = 2,
	 .help = "busy above this share of time with I/O in flight"},
	{"busy_queue_depth", W_BURST, &type_count, PRB(busy_depth), .def = "4", .min = 1,
	 .max = CFG_MAX_BUSY_QUEUE_DEPTH, .elsewhere = "pings are never held back for a busy disk",
	 .print_group = 2, .help = "busy above this many requests in flight on average"},
	{"interval", W_VERIFY, &type_duration, PRB(interval_ns), .def = "1m",
	 .min = CFG_MIN_EVERY_NS, .max = CFG_MAX_INTERVAL_NS, .help = "time between two runs"},
	{"block_size", W_VERIFY, &type_block_size, PRB(block_size), .def = "4KiB",
	 .help = "bytes per block, its header included"},
	{"blocks", W_VERIFY, &type_count, PRB(verify_blocks), .def = "64", .min = 2,
	 .max = CFG_MAX_VERIFY_BLOCKS, .elsewhere = "only verify probes keep blocks of their own",
	 .help = "blocks in the probe's file"},
	{"blocks_per_run", W_VERIFY, &type_count, PRB(verify_per_run), .def = "4", .min = 1,
	 .max = CFG_MAX_VERIFY_BLOCKS, .elsewhere = "only verify probes keep blocks of their own",
	 .help = "blocks each run writes anew"},
	{"timeout", W_VERIFY, &type_duration, PRB(timeout_ns), .def = "10s",
	 .min = CFG_MIN_TIMEOUT_NS, .max = CFG_MAX_TIMEOUT_NS,
	 .help = "an I/O slower than this counts as a timeout"},
};

const unsigned schema_rows = sizeof(schema) / sizeof(schema[0]);
_Static_assert(sizeof(schema) / sizeof(schema[0]) <= SCHEMA_MAX, "struct item is too small");

const struct section sec_top = {W_TOP, "at top level", "configuration", NULL};
const struct section sec_target = {W_TARGET, "in target", "target", cfg_target_misplaced};
const struct section sec_probe = {W_PROBE, "in probe", "probe", cfg_probe_misplaced};
