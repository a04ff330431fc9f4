/* SPDX-License-Identifier: MIT */
/*
 * probe_cli — see probe_cli.h. Flags are parsed by getopt_long() with
 * permutation, so `iopulse probe DIR -c 5` and `iopulse probe -c 5 DIR` are
 * the same (as ioping and fio read theirs); "--" ends the options.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sysexits.h>
#include <unistd.h>

#include "config/config.h"
#include "lib/escape.h"
#include "lib/utf8.h"
#include "daemon/oneshot/oneshot.h"
#include "daemon/oneshot/probe_cli.h"
#include "daemon/probes/probe.h"
#include "daemon/targets/target.h"

#define PROBE_CLI_DEFAULT_WS (64ULL << 20)  /* as the daemon: see iopulse(8) */
#define PROBE_CLI_SEQ_BS     (256ULL << 10) /* -L without -s, as ioping -L */
#define PROBE_CLI_RATE_NS    3000000000ULL  /* -R without -c or -w: 3s, as ioping -R */

/* What the option handlers return when nothing ends the command: any other
 * value is its exit status. */
#define GO_ON (-1)

static const char usage[] =
	"Usage: iopulse probe [OPTIONS] PATH...\n"
	"       iopulse probe [OPTIONS] [--config FILE] [PROBE...]\n"
	"\n"
	"Measure storage latency like ioping (one request at a time, a line per request)\n"
	"or, with --rw, --duration or --iodepth, run a fio-like burst. PATH is a\n"
	"directory (a probe file of our own is laid out there, unnamed, and removed at\n"
	"exit), a regular file or a block device (both read-only). With --config, run\n"
	"the configuration's probes (default: all) once; with neither, the embedded\n"
	"default's. Ctrl-C prints the summary so far.\n"
	"Exits 0 when every probe ran without error, 1 when one failed, 64 for a usage\n"
	"error, 66 for a PATH that is not there or no directory, file or device, 71 out\n"
	"of memory, 73 for a directory PATH on a read-only filesystem, 77 for a PATH\n"
	"this user may not open (permission denied) or iopulse refuses (a symlink,\n"
	"tmpfs, writes on a file or device), 78 for a bad --config (iopulse(8)).\n"
	"\n"
	"  -c, --count N           stop after N requests (0 or default: until -w or\n"
	"                          Ctrl-C; with --config 10); a burst: N I/Os, or until\n"
	"                          -w if that comes first (-n is the same)\n"
	"  -i, --interval TIME     time between requests (default 1s; 0 back to back)\n"
	"  -w, --deadline TIME     stop after TIME\n"
	"  -s, --size SIZE         request size (default 4k)\n"
	"  -S, --working-set SIZE  working set (default 64m; a file or device: all of it)\n"
	"  -W, --write             write instead of read (directories only: our own file)\n"
	"  -G, --read-write        alternate writes and reads, a write first (as -W)\n"
	"  -Y, --sync              fdatasync after each write, timed on its own\n"
	"  -y, --dsync             writes with O_DSYNC: a write's time includes its sync\n"
	"  -A, --async             the libaio engine (--engine libaio), ioping's async I/O\n"
	"  -C, --cached            cached I/O: no O_DIRECT (the page cache may answer)\n"
	"  -D, --direct            direct I/O (O_DIRECT): always, unless -C (for ioping)\n"
	"  -L, --sequential        sequential requests (request size 256k unless -s)\n"
	"  -R, --rate              rate test: back to back, summary only (-q -i 0 -w 3s)\n"
	"  -q, --quiet             print only the summary\n"
	"  -p, --period N          print a summary line every N requests\n"
	"  -k, --keep              keep the probe file (" PROBE_CLI_KEPT_FILE ") for the next -k\n"
	"  -J, --json              print JSON (schema: docs/probe-output.schema.json); -j too\n"
	"      --rw MODE           burst: randread, randwrite, randrw, read or write\n"
	"      --duration TIME     burst: how long (default 10s)\n"
	"  -Q, --iodepth N         burst: I/Os in flight (default 32)\n"
	"      --engine ENGINE     auto, io_uring, libaio, sync or null (default auto:\n"
	"                          sync for a ping, io_uring/libaio/sync for a burst)\n"
	"      --allow-tmpfs       measure tmpfs/ramfs anyway (that is RAM, not a disk)\n"
	"      --config FILE       run the probes of this YAML configuration\n"
	"  -h, --help              show this help\n"
	"\n"
	"Differences from ioping:\n"
	"  flag        ioping                     iopulse\n"
	"  request 1   a warm-up, not counted     counted, as in the daemon\n"
	"  -Y          O_SYNC, sync inside time=  fdatasync after, timed apart\n"
	"  -W (file)   writes it, with -WWW       refused: never written\n"
	"  -S (dir)    default 1m                 default 64m (caches hold 1m)\n"
	"  -D          O_DIRECT (default cached)  accepted: always, unless -C\n"
	"  -C          no cache invalidation      no O_DIRECT\n"
	"  -p N        raw statistics             a summary line\n"
	"  -k          ioping.tmp                 " PROBE_CLI_KEPT_FILE "\n"
	"  -y, -Y      also with reads            with -W or -G only\n"
	"  -a -b -B -e -I -l -N -o -P -r -t -T    not supported\n"
	"  exit status 1 on any error             64, 66, 71, 73, 77, 78 (above)\n";

enum {
	OPT_RW = 0x100,
	OPT_DURATION,
	OPT_ENGINE,
	OPT_ALLOW_TMPFS,
	OPT_CONFIG,
};

struct cli {
	struct oneshot_opts o;
	const char *config;
	uint64_t size, working_set, duration_ns;
	unsigned iodepth;
	const char *engine;
	enum cfg_rw rw;
	bool rw_given; /* --rw */
	bool write, sync, cached, sequential, rate, keep, allow_tmpfs;
	bool read_write;       /* -G: writes and reads in turn */
	bool dsync;	       /* -y: O_DSYNC writes */
	bool async;	       /* -A: the libaio engine */
	bool burst;	       /* --rw, --duration or --iodepth given */
	bool count_given;      /* -c given (0: no limit, as ioping's -c 0) */
	const char *path_only; /* the first option given that --config cannot take */
	bool configured;       /* --config, or no PATH: a configuration's probes */
};

/* ---------------------------------------------------------------- values */

static int bad_value(const char *opt, const char *arg, const char *want)
{
	char e[ESC_SIZE(ESC_ARG_SHOWN)];

	fprintf(stderr, "iopulse probe: invalid %s '%s': %s\n", opt, esc_str(e, sizeof(e), arg),
		want);
	return EX_USAGE;
}

/* @opt's value @arg out of the configuration's range [@lo, @hi] (sizes). */
static int out_of_range(const char *opt, const char *arg, uint64_t lo, uint64_t hi)
{
	char a[32], b[32], e[ESC_SIZE(ESC_ARG_SHOWN)];

	cfg_format_size(lo, a, sizeof(a));
	cfg_format_size(hi, b, sizeof(b));
	fprintf(stderr, "iopulse probe: %s %s: must be between %s and %s\n", opt,
		esc_str(e, sizeof(e), arg), a, b);
	return EX_USAGE;
}

/* A duration as the configuration writes it ("10ms", "1s"), or a bare number of
 * seconds as ioping takes it ("0.5"). */
static int parse_time(const char *s, uint64_t *ns)
{
	char *end;
	double v;

	if (cfg_parse_duration(s, ns) == 0)
		return 0;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || v > 86400.0)
		return -EINVAL;
	*ns = (uint64_t)(v * 1e9 + 0.5);
	return 0;
}

static int parse_count(const char *opt, const char *arg, unsigned min, unsigned max, unsigned *out)
{
	uint64_t v;
	char want[64];

	if (cfg_parse_uint(arg, &v) < 0 || v < min || v > max) {
		snprintf(want, sizeof(want), "a whole number from %u to %u", min, max);
		return bad_value(opt, arg, want);
	}
	*out = (unsigned)v;
	return GO_ON;
}

/* A size within the configuration's limits for the key it becomes. */
static int parse_size_opt(const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (cfg_parse_size(arg, out) < 0 || *out == 0)
		return bad_value(opt, arg, "a size such as 4k, 64m or 1g");
	if (*out < lo || *out > hi)
		return out_of_range(opt, arg, lo, hi);
	return GO_ON;
}

/* A TIME from @lo to @hi (nanoseconds), @example in the message. */
static int parse_time_opt(const char *opt, const char *arg, uint64_t lo, uint64_t hi,
			  const char *example, uint64_t *ns)
{
	char a[32], b[32], want[128];

	if (parse_time(arg, ns) == 0 && *ns >= lo && *ns <= hi)
		return GO_ON;
	cfg_format_duration(lo, a, sizeof(a));
	cfg_format_duration(hi, b, sizeof(b));
	snprintf(want, sizeof(want), "a duration from %s to %s, such as %s", a, b, example);
	return bad_value(opt, arg, want);
}

/* ---------------------------------------------------------------- options */

static const struct option long_opts[] = {
	{"count", required_argument, NULL, 'c'},
	{"interval", required_argument, NULL, 'i'},
	{"deadline", required_argument, NULL, 'w'},
	{"size", required_argument, NULL, 's'},
	{"working-set", required_argument, NULL, 'S'},
	{"write", no_argument, NULL, 'W'},
	{"sync", no_argument, NULL, 'Y'},
	{"dsync", no_argument, NULL, 'y'},
	{"read-write", no_argument, NULL, 'G'},
	{"async", no_argument, NULL, 'A'},
	{"cached", no_argument, NULL, 'C'},
	{"direct", no_argument, NULL, 'D'},
	{"sequential", no_argument, NULL, 'L'},
	{"rate", no_argument, NULL, 'R'},
	{"quiet", no_argument, NULL, 'q'},
	{"period", required_argument, NULL, 'p'},
	{"keep", no_argument, NULL, 'k'},
	{"json", no_argument, NULL, 'J'},
	{"iodepth", required_argument, NULL, 'Q'},
	{"rw", required_argument, NULL, OPT_RW},
	{"duration", required_argument, NULL, OPT_DURATION},
	{"engine", required_argument, NULL, OPT_ENGINE},
	{"allow-tmpfs", no_argument, NULL, OPT_ALLOW_TMPFS},
	{"config", required_argument, NULL, OPT_CONFIG},
	{"help", no_argument, NULL, 'h'},
	{0},
};

/* The options that take a value: GO_ON, or an exit status. */
static int value_option(struct cli *c, int opt, const char *arg)
{
	uint64_t ns;
	int r;

	switch (opt) {
	case 'c':
	case 'n':
		c->count_given = true;
		return parse_count("-c/--count", arg, 0, ONESHOT_MAX_COUNT, &c->o.count);
	case 'i':
		r = parse_time_opt("-i/--interval", arg, 0, CFG_MAX_INTERVAL_NS, "0, 10ms or 0.5",
				   &ns);
		c->o.interval_ns = (int64_t)ns;
		return r;
	case 'w':
		return parse_time_opt("-w/--deadline", arg, CFG_MIN_INTERVAL_NS,
				      CFG_MAX_INTERVAL_NS, "10s, 1m or 30", &c->o.deadline_ns);
	case 's':
		r = parse_size_opt("-s/--size", arg, CFG_MIN_BLOCK_SIZE, CFG_MAX_BLOCK_SIZE,
				   &c->size);
		/* direct I/O: whole sectors, the smallest block size's multiples */
		if (r == GO_ON && c->size % CFG_MIN_BLOCK_SIZE)
			return bad_value("-s/--size", arg, "a multiple of 512 (direct I/O)");
		return r;
	case 'S':
		return parse_size_opt("-S/--working-set", arg, CFG_MIN_TARGET_SIZE,
				      CFG_MAX_TARGET_SIZE, &c->working_set);
	case 'p':
		return parse_count("-p/--period", arg, 1, ONESHOT_MAX_COUNT, &c->o.period);
	case 'Q':
		c->burst = true;
		return parse_count("-Q/--iodepth", arg, 1, CFG_MAX_IODEPTH, &c->iodepth);
	case OPT_RW:
		c->burst = true;
		c->rw_given = true;
		for (c->rw = 0; c->rw <= CFG_RW_WRITE; c->rw++)
			if (!strcmp(arg, cfg_rw_name(c->rw)))
				return GO_ON;
		return bad_value("--rw", arg, "randread, randwrite, randrw, read or write");
	case OPT_DURATION:
		c->burst = true;
		return parse_time_opt("--duration", arg, CFG_MIN_DURATION_NS, CFG_MAX_DURATION_NS,
				      "10s or 1m", &c->duration_ns);
	case OPT_ENGINE:
		c->engine = arg;
		return GO_ON;
	case OPT_CONFIG:
		if (!*arg) {
			fputs("iopulse probe: --config: empty file name\n", stderr);
			return EX_USAGE;
		}
		c->config = arg;
		return GO_ON;
	}
	return EX_USAGE;
}

/* Flags without a value; false when @opt is none of them. */
static bool flag_option(struct cli *c, int opt)
{
	switch (opt) {
	case 'W':
		c->write = true;
		break;
	case 'Y':
		c->sync = true;
		break;
	case 'y':
		c->dsync = true;
		break;
	case 'G':
		c->read_write = true;
		break;
	case 'A':
		c->async = true;
		break;
	case 'C':
		c->cached = true;
		break;
	case 'D': /* ioping's O_DIRECT: ours unless -C */
		break;
	case 'L':
		c->sequential = true;
		break;
	case 'R':
		c->rate = true;
		break;
	case 'q':
		c->o.quiet = true;
		break;
	case 'k':
		c->keep = true;
		break;
	case 'J':
	case 'j':
		c->o.json = true;
		break;
	case OPT_ALLOW_TMPFS:
		c->allow_tmpfs = true;
		break;
	default:
		return false;
	}
	return true;
}

/* The long name of @opt when it describes a PATH's probe (a configuration sets
 * that in its file), NULL when --config takes it too. */
static const char *path_only_name(int opt)
{
	if (opt == 'c' || opt == 'n' || opt == 'i' || opt == 'w' || opt == 'q' || opt == 'p' ||
	    opt == 'J' || opt == 'j' || opt == 'R' || opt == 'D' || opt == OPT_CONFIG)
		return NULL;
	for (const struct option *o = long_opts; o->name; o++)
		if (o->val == opt)
			return o->name;
	return NULL;
}

static int unknown_option(char **argv)
{
	char e[ESC_SIZE(ESC_ARG_SHOWN)];

	if (optopt && optopt < 0x100) {
		char c[2] = {(char)optopt, 0};

		fprintf(stderr, "iopulse probe: invalid or incomplete option '-%s'\n",
			esc_str(e, sizeof(e), c));
	} else {
		fprintf(stderr, "iopulse probe: invalid or incomplete option '%s'\n",
			esc_str(e, sizeof(e), argv[optind - 1]));
	}
	fputs(usage, stderr);
	return EX_USAGE;
}

/* Parses every option wherever it is; the operands end up from argv[optind].
 * GO_ON, or an exit status. */
static int parse_args(struct cli *c, int argc, char **argv)
{
	int opt, r;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "c:n:i:w:s:S:WGYyACDLRqp:kJjQ:h", long_opts, NULL)) !=
	       -1) {
		if (opt == 'h') {
			fputs(usage, stdout);
			return EX_OK;
		}
		if (opt == '?' || opt == ':')
			return unknown_option(argv);
		if (!flag_option(c, opt)) {
			r = value_option(c, opt, optarg);
			if (r != GO_ON)
				return r;
		}
		if (!c->path_only)
			c->path_only = path_only_name(opt);
	}
	return GO_ON;
}

/* ---------------------------------------------------------------- checks */

/* The probe the flags describe, enough for cfg_probe_writes(). */
static bool cli_writes(const struct cli *c)
{
	struct cfg_probe p = {
		.kind = c->burst ? CFG_PROBE_BURST : CFG_PROBE_PING,
		.op = c->write || c->read_write ? IO_WRITE : IO_READ,
		.rw = c->rw,
	};

	return cfg_probe_writes(&p);
}

static int refuse(const char *why)
{
	fprintf(stderr, "iopulse probe: %s\n", why);
	return EX_USAGE;
}

/* Flags that do not go together; GO_ON, or an exit status. */
static int conflicts(const struct cli *c)
{
	char a[32], b[32], m[160];

	if (c->sync && !c->write && !c->read_write)
		return refuse(
			"--sync (-Y) syncs writes: it needs --write (-W) or --read-write (-G)");
	if (c->dsync && !c->write && !c->read_write)
		return refuse(
			"--dsync (-y) syncs writes: it needs --write (-W) or --read-write (-G)");
	if (c->async && c->engine && strcmp(c->engine, "libaio") != 0) {
		snprintf(m, sizeof(m), "--async (-A) is the libaio engine, not --engine %.32s",
			 c->engine);
		return refuse(m);
	}
	if (c->burst && (c->rate || c->sync || c->dsync || c->read_write || c->o.period ||
			 c->o.interval_ns >= 0)) {
		snprintf(m, sizeof(m),
			 "%s is for pings, not for a burst (--rw, --duration, --iodepth)",
			 c->rate	 ? "--rate (-R)"
			 : c->sync	 ? "--sync (-Y)"
			 : c->dsync	 ? "--dsync (-y)"
			 : c->read_write ? "--read-write (-G; a burst: --rw randrw)"
			 : c->o.period	 ? "--period (-p)"
					 : "--interval (-i)");
		return refuse(m);
	}
	if (c->o.period && c->o.json)
		return refuse("--period (-p) prints summary lines: not with --json (-J)");
	if (c->burst && c->write && c->rw_given && !cli_writes(c)) {
		snprintf(m, sizeof(m), "--write with --rw %s, which only reads",
			 cfg_rw_name(c->rw));
		return refuse(m);
	}
	if (c->size && c->working_set && c->size > c->working_set) {
		cfg_format_size(c->size, a, sizeof(a));
		cfg_format_size(c->working_set, b, sizeof(b));
		snprintf(m, sizeof(m), "-s/--size %s is larger than -S/--working-set %s", a, b);
		return refuse(m);
	}
	/* -w becomes the burst's 'duration': its range then. */
	if (c->burst && !c->duration_ns && c->o.deadline_ns &&
	    (c->o.deadline_ns < CFG_MIN_DURATION_NS || c->o.deadline_ns > CFG_MAX_DURATION_NS)) {
		cfg_format_duration(CFG_MIN_DURATION_NS, a, sizeof(a));
		cfg_format_duration(CFG_MAX_DURATION_NS, b, sizeof(b));
		snprintf(m, sizeof(m), "-w/--deadline for a burst is its duration: from %s to %s",
			 a, b);
		return refuse(m);
	}
	return GO_ON;
}

/* What the flags ask for, checked against each other; GO_ON, or an exit
 * status. Fills in ioping's defaults. */
static int settle(struct cli *c, bool have_paths)
{
	int r;

	/* No PATH: the configuration's probes, the embedded default's without one. */
	c->configured = c->config || !have_paths;
	if (c->configured && c->path_only) {
		fprintf(stderr,
			"iopulse probe: --%s describes a PATH's probe; without a PATH the "
			"configuration's probes run: set it in the configuration file\n",
			c->path_only);
		return EX_USAGE;
	}
	r = conflicts(c);
	if (r != GO_ON)
		return r;
	if (c->async)
		c->engine = "libaio";
	if (c->rate) {
		c->o.interval_ns = 0;
		c->o.quiet = true;
		if (!c->o.count && !c->o.deadline_ns)
			c->o.deadline_ns = PROBE_CLI_RATE_NS;
	}
	if (!c->count_given)
		c->o.count = c->configured ? ONESHOT_DEFAULT_COUNT : 0;
	if (!c->size)
		c->size = c->sequential ? PROBE_CLI_SEQ_BS : CFG_DEFAULT_BLOCK_SIZE;
	if (c->burst && c->o.deadline_ns && !c->duration_ns)
		c->duration_ns = c->o.deadline_ns; /* -w: as long as that, fio's runtime */
	if (c->burst && !c->rw_given)
		c->rw = c->sequential ? (c->write ? CFG_RW_WRITE : CFG_RW_READ)
				      : (c->write ? CFG_RW_RANDWRITE : CFG_RW_RANDREAD);
	return GO_ON;
}

/* A missing PATH that is the name of a probe of the embedded default: the
 * command line of old ran that probe. */
static void did_you_mean(const char *path)
{
	struct cfg_error err = {0};
	struct config *cfg = NULL;
	char e[ESC_SIZE(ESC_ARG_SHOWN)];

	if (cfg_load_default(&cfg, &err) == 0 && cfg_probe_index(cfg, path) >= 0)
		fprintf(stderr,
			"iopulse probe: did you mean `iopulse probe --config FILE %s`? (a PATH "
			"is measured; probes of a configuration need --config)\n",
			esc_str(e, sizeof(e), path));
	cfg_free(cfg);
}

/* What @path is, by target.c's own rules (target_path_info()), checked against
 * the flags: GO_ON and *@kind, or an exit status (the message printed). */
static int path_kind(const struct cli *c, const char *path, enum cfg_target_kind *kind)
{
	struct target_path_info info;
	char err[512], ws[32], sz[32], esc_err[ESC_SIZE(sizeof(err))];
	int r = target_path_info(path, &info, err, sizeof(err));
	char p[ESC_SIZE(PATH_MAX)];

	/* Every message below quotes the PATH as typed: a newline in it must not
	 * start a line, an ESC not reach the terminal. */
	esc_str(p, sizeof(p), path);
	if (r < 0) {
		fprintf(stderr, "iopulse probe: %s\n", esc_str(esc_err, sizeof(esc_err), err));
		if (r == -ENOENT)
			did_you_mean(path);
		return oneshot_path_status(r, EX_NOINPUT);
	}
	*kind = info.kind;
	if ((info.fs_type == TMPFS_MAGIC || info.fs_type == RAMFS_MAGIC) && !c->allow_tmpfs) {
		fprintf(stderr,
			"iopulse probe: %s is on tmpfs/ramfs: that measures RAM, not a disk; add "
			"--allow-tmpfs if that is what you want\n",
			p);
		return EX_NOPERM;
	}
	if (*kind == CFG_TARGET_DIRECTORY)
		return GO_ON;
	if (c->keep) {
		fprintf(stderr,
			"iopulse probe: --keep (-k) keeps a probe file of our own in a directory; "
			"%s is a %s\n",
			p, cfg_target_kind_name(*kind));
		return EX_USAGE;
	}
	if (cli_writes(c)) {
		fprintf(stderr,
			"iopulse probe: %s is a %s: iopulse only reads it; writes go to a probe "
			"file of its own, so give a directory\n",
			p, cfg_target_kind_name(*kind));
		return EX_NOPERM;
	}
	if (c->working_set && info.size && c->working_set > info.size) {
		cfg_format_size(c->working_set, ws, sizeof(ws));
		cfg_format_bytes((double)info.size, sz, sizeof(sz));
		fprintf(stderr,
			"iopulse probe: -S/--working-set %s is larger than %s (%s %s, %" PRIu64
			" bytes)\n",
			ws, p, cfg_target_kind_name(*kind), sz, info.size);
		return EX_USAGE;
	}
	return GO_ON;
}

/* ---------------------------------------------------------------- YAML */

/*
 * Every PATH and the engine go into a configuration (YAML), which holds only
 * UTF-8: a name that is not is refused, naming it. Control characters are
 * fine: a configuration file takes them escaped ("\n"), and so does the one
 * written here (cfg_print_path()). GO_ON, or EX_USAGE.
 */
static int check_utf8(const struct cli *c, char **paths, unsigned n)
{
	char e[ESC_SIZE(ESC_ARG_SHOWN)];

	for (unsigned i = 0; i < n; i++) {
		if (utf8_valid(paths[i]))
			continue;
		fprintf(stderr,
			"iopulse probe: PATH '%s' holds bytes that are not UTF-8: a configuration "
			"(YAML) cannot name it; not supported\n",
			esc_str(e, sizeof(e), paths[i]));
		return EX_USAGE;
	}
	if (c->engine && !utf8_valid(c->engine))
		return bad_value("--engine", c->engine, "auto, io_uring, libaio, sync or null");
	return GO_ON;
}

static void emit_target(FILE *f, const struct cli *c, unsigned i, const char *path,
			enum cfg_target_kind kind)
{
	char ws[32];

	fprintf(f, "  - name: path%u\n    %s: ", i + 1, cfg_target_kind_name(kind));
	cfg_print_path(f, path);
	fputc('\n', f);
	if (kind == CFG_TARGET_DIRECTORY) {
		cfg_format_size(c->working_set ? c->working_set : PROBE_CLI_DEFAULT_WS, ws,
				sizeof(ws));
		/* The user is waiting: lay it out at full speed. */
		fprintf(f, "    size: %s\n    layout_rate: 0\n", ws);
	}
	if (c->cached)
		fputs("    direct: false\n", f);
	if (c->allow_tmpfs)
		fputs("    allow_memory_backed: true\n", f);
}

static void emit_probe(FILE *f, const struct cli *c, unsigned i, enum cfg_target_kind kind)
{
	char v[32];

	fprintf(f, "  - name: %s%u\n    target: path%u\n", c->burst ? "burst" : "ping", i + 1,
		i + 1);
	cfg_format_size(c->size, v, sizeof(v));
	fprintf(f, "    block_size: %s\n", v);
	if (c->working_set && kind != CFG_TARGET_DIRECTORY) {
		cfg_format_size(c->working_set, v, sizeof(v));
		fprintf(f, "    working_set: %s\n", v);
	}
	/* The schema checks the names, as it does in a file. */
	if (c->engine) {
		fputs("    engine: ", f);
		cfg_print_str(f, c->engine);
		fputc('\n', f);
	}
	if (!c->burst) {
		fprintf(f, "    type: ping\n    op: %s\n",
			c->write || c->read_write ? "write" : "read");
		if (c->sync)
			fputs("    sync: fdatasync\n", f);
		return;
	}
	fprintf(f, "    type: burst\n    rw: %s\n", cfg_rw_name(c->rw));
	fprintf(f, "    iodepth: %u\n", c->iodepth ? c->iodepth : CFG_DEFAULT_IODEPTH);
	/* -c and -w: whichever comes first, as for pings. The configuration takes one
	 * of 'ios' and 'duration'; load() adds the other (burst.c stops at either). */
	if (c->o.count && !c->duration_ns) {
		fprintf(f, "    ios: %u\n", c->o.count);
	} else {
		cfg_format_duration(c->duration_ns ? c->duration_ns : CFG_DEFAULT_DURATION_NS, v,
				    sizeof(v));
		fprintf(f, "    duration: %s\n", v);
	}
}

/* The configuration for PATH...: a target and a probe per path, in order. 0,
 * or an exit status (the message printed). */
static int build_config(struct cli *c, char **paths, unsigned n, struct config **cfg)
{
	struct cfg_error err = {0};
	enum cfg_target_kind *kinds = calloc(n, sizeof(*kinds));
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int r = GO_ON;

	if (!kinds || !f) {
		fputs("iopulse probe: out of memory\n", stderr);
		r = EX_OSERR;
		goto out;
	}
	r = check_utf8(c, paths, n);
	for (unsigned i = 0; i < n && r == GO_ON; i++)
		r = path_kind(c, paths[i], &kinds[i]);
	if (r != GO_ON)
		goto out;
	fputs("targets:\n", f);
	for (unsigned i = 0; i < n; i++)
		emit_target(f, c, i, paths[i], kinds[i]);
	fputs("probes:\n", f);
	for (unsigned i = 0; i < n; i++)
		emit_probe(f, c, i, kinds[i]);
	r = fclose(f);
	f = NULL;
	if (r != 0) {
		fputs("iopulse probe: out of memory\n", stderr);
		r = EX_OSERR;
		goto out;
	}
	r = EX_OK;
	if (cfg_load_string("iopulse probe options", text, len, cfg, &err) < 0) {
		/* Which key is named, not which line of text nobody sees. */
		const char *m = strstr(err.msg, ": ");
		char e[ESC_SIZE(sizeof(err.msg))];

		fprintf(stderr, "iopulse probe: %s\n", esc_str(e, sizeof(e), m ? m + 2 : err.msg));
		r = EX_USAGE;
	}
out:
	if (f)
		fclose(f);
	free(text);
	free(kinds);
	return r;
}

/* The configuration to run: --config's (or the embedded default), or PATH's. */
static int load(struct cli *c, char **operands, unsigned n, struct config **cfg)
{
	struct cfg_error err = {0};
	int r;

	if (!c->configured) {
		r = build_config(c, operands, n, cfg);
		if (r != EX_OK)
			return r;
		for (unsigned i = 0; i < (*cfg)->n_probes; i++) {
			struct cfg_probe *p = &(*cfg)->probes[i];

			p->sequential = c->sequential;
			p->alternate = c->read_write;
			p->dsync = c->dsync;
			/* -c of a kind not run request by request: its one run's I/Os. */
			if (!(probe_ops_of(p->kind)->flags & PROBE_F_REQUESTS) && c->o.count &&
			    c->duration_ns)
				p->ios = c->o.count; /* with its 'duration', the first to come */
		}
		return EX_OK;
	}
	r = c->config ? cfg_load_file(c->config, cfg, &err) : cfg_load_default(cfg, &err);
	if (r < 0) {
		char e[ESC_SIZE(sizeof(err.msg))];

		/* It names the file and quotes its values. */
		fprintf(stderr, "%s\n", esc_str(e, sizeof(e), err.msg));
		return EX_CONFIG;
	}
	c->o.names = (const char *const *)operands;
	c->o.n_names = n;
	return EX_OK;
}

int probe_cli_main(int argc, char **argv)
{
	struct cli c = {.o = {.interval_ns = -1}};
	struct config *cfg = NULL;
	int r = parse_args(&c, argc, argv);

	if (r != GO_ON)
		return r;
	r = settle(&c, optind < argc);
	if (r != GO_ON)
		return r;
	r = load(&c, argv + optind, (unsigned)(argc - optind), &cfg);
	if (r != EX_OK)
		return r;
	if (!c.configured) {
		c.o.adhoc = true;
		c.o.unnamed = !c.keep;
		c.o.file_name = c.keep ? PROBE_CLI_KEPT_FILE : NULL;
	}
	if (c.cached)
		fputs("iopulse probe: --cached (-C): no O_DIRECT, so the page cache may answer "
		      "instead of the disk\n",
		      stderr);
	r = oneshot_run(cfg, &c.o);
	cfg_free(cfg);
	return r;
}
