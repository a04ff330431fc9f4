/* SPDX-License-Identifier: MIT */
/*
 * main — the command line, the process lifecycle and nothing else:
 *   iopulse run     load the config, listen, start lanes, serve until SIGTERM
 *   iopulse check   validate a config and print the effective schedule
 *   iopulse probe   run probes once in the foreground and print a summary
 *   iopulse version print the version (also --version)
 *   iopulse help    print the commands (also --help, -h)
 * The reference for all of it is man/iopulse.8.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sysexits.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "config/config.h"
#include "config/webconfig.h"
#include "engines/engine.h"
#include "lib/ioprio.h"
#include "daemon/targets/check_dirs.h"
#include "lib/addr.h"
#include "lib/escape.h"
#include "daemon/http/http.h"
#include "daemon/log.h"
#include "daemon/metrics/metrics.h"
#include "daemon/oneshot/oneshot.h"
#include "daemon/probes/cpu_wait.h"
#include "daemon/probes/probe.h"
#include "daemon/oneshot/probe_cli.h"
#include "daemon/metrics/process.h"
#include "daemon/sched/scheduler.h"
#include "daemon/statefile.h"
#include "lib/stack.h"
#include "daemon/http/tls.h"

#include "revision.h" /* IOPULSE_REVISION, generated at build time */

#define STOP_GRACE_NS 800000000ULL /* lanes get this long to finish on SIGTERM */

static const char main_usage[] =
	"Usage: iopulse COMMAND [OPTIONS]\n"
	"\n"
	"Continuous storage latency probes, served as Prometheus metrics.\n"
	"\n"
	"Commands:\n"
	"  run       run the probes and serve /metrics (foreground)\n"
	"  check     validate a configuration and print the effective schedule\n"
	"  probe     run probes once in the foreground and print a summary\n"
	"  version   print the version\n"
	"\n"
	"Run 'iopulse COMMAND --help' for a command's options.\n";

static const char run_usage[] =
	"Usage: iopulse run [--config FILE] [--listen ADDR:PORT] [--web.config.file FILE]\n"
	"                   [--log-level LEVEL]\n"
	"\n"
	"Run the probes of the configuration and serve metrics over HTTP.\n"
	"\n"
	"  -c, --config FILE      YAML configuration (default: the embedded default)\n"
	"  -l, --listen ADDR:PORT listen address, overrides 'listen:' (port 0 picks one)\n"
	"      --web.config.file FILE\n"
	"                         TLS and basic auth, in exporter-toolkit's format\n"
	"      --log-level LEVEL  error, warning, notice, info (default) or debug\n"
	"  -h, --help             show this help\n";

static const char check_usage[] =
	"Usage: iopulse check [--config FILE] [--web.config.file FILE] [--quiet] [--file-only]\n"
	"                     [--timeout TIME]\n"
	"\n"
	"Validate a configuration and print the effective schedule, every default\n"
	"filled in, and what it costs each target. Exits 0 when valid, 78 when not,\n"
	"65 when over a target's budget, 66 when a target directory is missing, 73\n"
	"when one cannot hold a probe file (not writable by the user running the\n"
	"check, or refused as run refuses it: tmpfs, require_mount, a symlink), 75\n"
	"when one did not answer within the timeout (a hung filesystem or disk).\n"
	"\n"
	"  -c, --config FILE      YAML configuration (default: the embedded default)\n"
	"      --web.config.file FILE\n"
	"                         also validate this web configuration (TLS, basic auth)\n"
	"  -q, --quiet            print only errors and warnings, not the schedule\n"
	"      --file-only        check the file alone, not the directory targets on\n"
	"                         this machine: what a reload refuses (ExecReload=)\n"
	"      --timeout TIME     how long each target has to answer (default 10s)\n"
	"  -h, --help             show this help\n";

static const char version_usage[] = "Usage: iopulse version\n\nPrint the version and exit.\n";

enum { OPT_LOG_LEVEL = 0x100, OPT_WEB_CONFIG, OPT_FILE_ONLY, OPT_TIMEOUT };

struct options {
	const char *config;
	const char *listen;
	const char *web_config; /* --web.config.file */
	bool quiet;		/* check --quiet: no schedule on stdout */
	bool file_only;		/* check --file-only: the targets are not looked at */
	uint64_t timeout_ns;	/* check --timeout: how long a target has to answer */
};

/* --config @arg for command @cmd into *@config; false (said on stderr) for an
 * empty name, which is a usage error, not a file that cannot be read. */
static bool config_option(const char *cmd, const char *arg, const char **config)
{
	if (!*arg) {
		fprintf(stderr, "iopulse %s: --config: empty file name\n", cmd);
		return false;
	}
	*config = arg;
	return true;
}

/* check --timeout @arg into *@ns: a duration as the configuration writes one,
 * in the range of a probe's 'timeout'; false (said on stderr) for anything
 * else. */
static bool timeout_option(const char *arg, uint64_t *ns)
{
	char e[ESC_SIZE(ESC_ARG_SHOWN)], lo[32], hi[32];

	if (cfg_parse_duration(arg, ns) == 0 && *ns >= CFG_MIN_TIMEOUT_NS &&
	    *ns <= CFG_MAX_TIMEOUT_NS)
		return true;
	cfg_format_duration(CFG_MIN_TIMEOUT_NS, lo, sizeof(lo));
	cfg_format_duration(CFG_MAX_TIMEOUT_NS, hi, sizeof(hi));
	fprintf(stderr,
		"iopulse check: invalid --timeout '%s': use a duration from %s to %s, such as 5s\n",
		esc_str(e, sizeof(e), arg), lo, hi);
	return false;
}

/* Parses a subcommand's options. Returns -1 to go on, or an exit status. */
/* The option getopt_long() just refused, quoted escaped (an argument may hold
 * a newline or an ESC), then the usage. */
static void bad_option(char **argv, const char *usage)
{
	char e[ESC_SIZE(ESC_ARG_SHOWN)];

	if (optopt && optopt < 0x100)
		fprintf(stderr, "iopulse %s: invalid or incomplete option '-%s'\n", argv[0],
			esc_str(e, sizeof(e), (char[]){(char)optopt, 0}));
	else
		fprintf(stderr, "iopulse %s: invalid or incomplete option '%s'\n", argv[0],
			esc_str(e, sizeof(e), argv[optind - 1]));
	fputs(usage, stderr);
}

static int parse_options(int argc, char **argv, const char *usage, bool run, struct options *o)
{
	char e[ESC_SIZE(ESC_ARG_SHOWN)];
	static const struct option run_opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"listen", required_argument, NULL, 'l'},
		{"log-level", required_argument, NULL, OPT_LOG_LEVEL},
		{"web.config.file", required_argument, NULL, OPT_WEB_CONFIG},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	static const struct option check_opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"web.config.file", required_argument, NULL, OPT_WEB_CONFIG},
		{"quiet", no_argument, NULL, 'q'},
		{"file-only", no_argument, NULL, OPT_FILE_ONLY},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c, level;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, run ? "+c:l:h" : "+c:qh", run ? run_opts : check_opts,
				NULL)) != -1) {
		switch (c) {
		case 'c':
			if (!config_option(argv[0], optarg, &o->config))
				return EX_USAGE;
			break;
		case 'l':
			o->listen = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case OPT_FILE_ONLY:
			o->file_only = true;
			break;
		case OPT_TIMEOUT:
			if (!timeout_option(optarg, &o->timeout_ns))
				return EX_USAGE;
			break;
		case OPT_WEB_CONFIG:
			if (!*optarg) {
				fprintf(stderr, "iopulse %s: --web.config.file: empty file name\n",
					argv[0]);
				return EX_USAGE;
			}
			o->web_config = optarg;
			break;
		case OPT_LOG_LEVEL:
			level = log_parse_level(optarg);
			if (level < 0) {
				fprintf(stderr,
					"iopulse: invalid --log-level '%s': use error, warning, "
					"notice, info or debug\n",
					esc_str(e, sizeof(e), optarg));
				return EX_USAGE;
			}
			log_max_level = level;
			break;
		case 'h':
			fputs(usage, stdout);
			return EX_OK;
		default:
			bad_option(argv, usage);
			return EX_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "iopulse %s: unexpected argument '%s'\n", argv[0],
			esc_str(e, sizeof(e), argv[optind]));
		fputs(usage, stderr);
		return EX_USAGE;
	}
	return -1;
}

/* @msg on a line of its own on stderr, escaped (escape.h): it quotes values
 * from the file, which may hold a newline or terminal controls. */
static void print_plain(const char *msg)
{
	char esc[ESC_SIZE(sizeof(((struct cfg_error *)0)->msg))];

	fprintf(stderr, "%s\n", esc_str(esc, sizeof(esc), msg));
}

/* Loads the configuration; prints the error and returns EX_CONFIG on failure. The
 * message starts with "file:line:column: " so editors can jump to it; @plain prints
 * it as is (check), otherwise through the log (run). */
static int load_config(const char *path, struct config **cfg, bool plain)
{
	struct cfg_error err = {0};
	int r = path ? cfg_load_file(path, cfg, &err) : cfg_load_default(cfg, &err);

	if (r < 0) {
		if (plain)
			print_plain(err.msg);
		else
			log_error("%s", err.msg);
		return EX_CONFIG;
	}
	return EX_OK;
}

/* A schedule over a target's budget: the message, and EX_DATAERR (a valid file
 * whose figures are refused, as opposed to EX_CONFIG's invalid one). */
static int check_budget(const struct config *cfg, bool plain)
{
	struct cfg_error err = {0};

	if (cfg_check_budget(cfg, &err) == 0)
		return EX_OK;
	if (plain)
		print_plain(err.msg);
	else
		log_error("%s", err.msg);
	return EX_DATAERR;
}

/* Loads --web.config.file (none: *web NULL) as load_config() does the main
 * configuration: EX_CONFIG for a bad or unreadable file. */
static int load_web_config(const char *path, struct web_config **web, bool plain)
{
	struct cfg_error err = {0};

	*web = NULL;
	if (!path || web_config_load_file(path, web, &err) == 0)
		return EX_OK;
	if (plain)
		print_plain(err.msg);
	else
		log_error("%s", err.msg);
	return EX_CONFIG;
}

/* A realtime 'io_priority' this process may not set: run as the same user would
 * refuse the probe. A warning, not an error: the daemon may run with more
 * capabilities than the check. */
static void warn_io_priority(const struct cfg_probe *p)
{
	char buf[IOPRIO_TEXT_MAX];

	if (!ioprio_is_realtime(p->io_priority) || ioprio_check_allowed(p->io_priority) == 0)
		return;
	fprintf(stderr,
		"warning: probe %s: 'io_priority: %s' " IOPRIO_RT_NEEDS ", "
		"which this process lacks; the probe would not run\n",
		p->name, ioprio_format(p->io_priority, buf, sizeof(buf)));
}

/* What is valid but will not do what it says: a burst whose engine cannot
 * queue (as fio warns for iodepth > 1 on a synchronous engine). */
static void check_warnings(const struct config *cfg)
{
	for (unsigned i = 0; i < cfg->n_probes; i++) {
		const struct engine_ops *e = probe_engine_of(&cfg->probes[i], &(int){0});

		oneshot_warn_depth(&cfg->probes[i], e ? e->name : cfg->probes[i].engine);
		warn_io_priority(&cfg->probes[i]);
	}
}

/* The files --web.config.file names, read as run reads them: EX_CONFIG for
 * one that does not load (run would not start either); a certificate out of
 * its validity period is only a warning, since run serves it. */
static int check_web_files(const struct web_config *web)
{
	char msg[512], esc[ESC_SIZE(sizeof(msg))], src[ESC_SIZE(PATH_MAX)];
	int r;

	if (!web || !web->tls)
		return EX_OK;
	r = web_tls_check(web, msg, sizeof(msg));
	esc_str(esc, sizeof(esc), msg); /* it quotes the files' contents */
	/* A newline in the file's name, too. */
	esc_str(src, sizeof(src), web->source);
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", src, esc);
		return EX_CONFIG;
	}
	if (r > 0)
		fprintf(stderr, "warning: %s: %s\n", src, esc);
	return EX_OK;
}

/*
 * Basic auth over plain HTTP: base64 is no cipher, so the password crosses the
 * network as readable as the page, unless only this host can connect. @where
 * is what the daemon serves on (for run, the socket itself, also one systemd
 * passed; for check, 'listen:', which such a socket would override); @plain
 * prints it for check, otherwise it is logged.
 */
static void warn_plain_auth(const struct web_config *web, bool loopback, const char *where,
			    bool plain)
{
	char msg[256];

	if (!web || web->tls || !web->n_users || loopback)
		return;
	snprintf(msg, sizeof(msg),
		 "basic_auth_users without tls_server_config: passwords cross the network in "
		 "clear to %s, which is not a loopback address; add a certificate, or listen on "
		 "127.0.0.1",
		 where);
	if (plain) {
		char src[ESC_SIZE(PATH_MAX)];

		/* The log escapes what it writes; stderr gets it done here. */
		fprintf(stderr, "warning: %s: %s\n", esc_str(src, sizeof(src), web->source), msg);
	} else {
		log_warning("%s: %s", web->source, msg);
	}
}

static int cmd_check(int argc, char **argv)
{
	char where[80];
	struct options o = {.timeout_ns = CHECK_TIMEOUT_DEFAULT_NS};
	struct config *cfg = NULL;
	struct web_config *web;
	int budget, r = parse_options(argc, argv, check_usage, false, &o);

	if (r >= 0)
		return r;
	r = load_config(o.config, &cfg, true);
	if (r != EX_OK)
		return r;
	r = load_web_config(o.web_config, &web, true);
	if (r == EX_OK)
		r = check_web_files(web);
	if (r == EX_OK) {
		addr_format(where, sizeof(where),
			    cfg->listen_host[0] ? cfg->listen_host : "0.0.0.0", cfg->listen_port);
		warn_plain_auth(web, http_host_is_loopback(cfg->listen_host), where, true);
	}
	web_config_free(web);
	if (r != EX_OK) {
		cfg_free(cfg);
		return r;
	}
	if (!o.quiet) {
		cfg_print(cfg, stdout);
		cfg_print_budget(cfg, stdout);
	}
	statefile_check(cfg, o.timeout_ns, o.quiet, o.file_only, stdout);
	budget = check_budget(cfg, true);
	check_warnings(cfg);
	/* --file-only: a target down on this machine (a disk not mounted yet) is
	 * something run lives with, not a reason to refuse the file. */
	r = o.file_only ? EX_OK : check_dirs(cfg, o.timeout_ns);
	cfg_free(cfg);
	return budget != EX_OK ? budget : r;
}

/* The command line is probe_cli's: ioping's flags, PATH... or --config. */
static int cmd_probe(int argc, char **argv)
{
	log_setup();
	(void)cpu_wait_start(NULL);
	return probe_cli_main(argc, argv);
}

static void collect(void *userdata)
{
	void **parts = userdata;

	sched_collect(parts[0]);
	process_metrics_collect(parts[1]);
}

static int set_build_info(struct metrics *m)
{
	static const char *const labels[] = {"version", "revision", NULL};
	const char *values[] = {IOPULSE_VERSION, IOPULSE_REVISION, NULL};
	struct metric_family *f;
	struct metric_series *s;

	f = metrics_family(m, "iopulse_build_info", METRIC_GAUGE,
			   "A metric with a constant '1' value labeled by the version and revision "
			   "iopulse was built from.",
			   labels, NULL, 0);
	s = f ? metrics_series(f, values) : NULL;
	if (!s)
		return -ENOMEM;
	metrics_set(s, 1);
	return 0;
}

/* iopulse_engine_available{engine}, and which engine 'auto' means here, once. */
static int set_engines(struct metrics *m)
{
	static const char *const labels[] = {"engine", NULL};
	const struct engine_ops *best;
	struct metric_family *f;
	int r;

	f = metrics_family(m, "iopulse_engine_available", METRIC_GAUGE,
			   "1 if the I/O engine is built in and works on this system (io_uring "
			   "may be disabled by sysctl or seccomp), 0 otherwise.",
			   labels, NULL, 0);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; eng_table[i]; i++) {
		const char *values[] = {eng_table[i]->name, NULL};
		struct metric_series *s = metrics_series(f, values);
		bool ok = eng_available(eng_table[i]);

		if (!s)
			return -ENOMEM;
		metrics_set(s, ok ? 1 : 0);
		if (!ok)
			log_notice("Engine %s is built in but not available on this system",
				   eng_table[i]->name);
	}
	best = eng_resolve("auto", &r);
	if (best)
		log_info("Engine 'auto' is %s for bursts and sync for pings on this system",
			 best->name);
	return 0;
}

/*
 * The daemon's own descriptors, whatever the schedule, counted on a running
 * daemon (ls /proc/PID/fd, iopulse(8) Descriptors): the scheduler's epoll,
 * signalfd, timerfd, two eventfds and the watchdog's timerfd; the HTTP thread's
 * epoll and two eventfds; the /proc files process.c keeps open. The listener
 * is open by the time of the check (bound, or passed by systemd), counted
 * with what is open then.
 */
#define NOFILE_DAEMON 11
/* The fewest descriptors HTTP connections are given: HTTP_CONNECTIONS_MIN, and
 * what one turn may accept beyond the limit (http.h). */
#define NOFILE_HTTP (HTTP_CONNECTIONS_MIN + HTTP_ACCEPT_BATCH)

/* What a configuration needs (check_nofile()). */
struct nofile {
	uint64_t limit;	   /* RLIMIT_NOFILE (soft, raised), UINT64_MAX: none */
	unsigned open_now; /* open at the check: stdio, the listener */
	struct sched_fds sched;
	uint64_t besides_http; /* all of it but the HTTP connections */
};

/* Descriptors open now (0 if /proc cannot say). */
static unsigned open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	const struct dirent *e;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n ? n - 1 : 0; /* less opendir()'s own */
}

/* EX_OK when RLIMIT_NOFILE (raised first) holds what @cfg needs, with the
 * figures in @nf; otherwise the figure and why, and EX_OSERR: running short
 * would fail later, one target or one scrape at a time, where "Too many open
 * files" no longer says why. */
static int check_nofile(const struct config *cfg, struct nofile *nf)
{
	struct rlimit rl;
	uint64_t need;

	nf->open_now = open_fds();
	sched_descriptors(cfg, &nf->sched);
	nf->besides_http = nf->open_now + NOFILE_DAEMON + nf->sched.lanes + nf->sched.probes;
	need = nf->besides_http + NOFILE_HTTP;
	nf->limit = UINT64_MAX;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return EX_OK;
	nf->limit = rl.rlim_cur;
	if (rl.rlim_cur >= need)
		return EX_OK;
	log_error("RLIMIT_NOFILE is %llu (hard limit %llu): this configuration needs at least "
		  "%llu descriptors (%u open at start, %u for the daemon, %llu for %u target%s: "
		  "lanes, files and room to open them, %llu held by %u probe%s, %u for HTTP "
		  "connections); raise it (ulimit -n, LimitNOFILE=)",
		  (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
		  (unsigned long long)need, nf->open_now, NOFILE_DAEMON,
		  (unsigned long long)nf->sched.lanes, cfg->n_targets,
		  cfg->n_targets == 1 ? "" : "s", (unsigned long long)nf->sched.probes,
		  cfg->n_probes, cfg->n_probes == 1 ? "" : "s", NOFILE_HTTP);
	return EX_OSERR;
}

/* The soft RLIMIT_NOFILE up to the hard one: each HTTP connection takes a
 * descriptor, and the server sizes its connection limit from this (see http.h).
 * The soft limit is low by default only for select(), which nothing here uses. */
static void raise_nofile(void)
{
	struct rlimit rl;
	rlim_t was;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	was = rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		(void)log_warning_errno(-errno,
					"Cannot raise RLIMIT_NOFILE from %llu to %llu: %m, "
					"ignoring",
					(unsigned long long)was, (unsigned long long)rl.rlim_max);
	else
		log_debug("Raised RLIMIT_NOFILE from %llu to %llu", (unsigned long long)was,
			  (unsigned long long)rl.rlim_max);
}

/* Every thread inherits this mask; the scheduler takes the signals from a signalfd. */
static void block_signals(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* The registry with the process, build and engine metrics, the CPU-wait
 * measurement started (cpu_wait.h). NULL: out of memory. */
static struct metrics *new_registry(const struct config *cfg, struct process_metrics **pm)
{
	struct metrics *m = metrics_new();

	if (m) /* 0 ns: the registry's default, 2^-128 s */
		metrics_set_native(m, cfg->native_schema, cfg->native_zero_threshold_ns / 1e9);
	*pm = m ? process_metrics_new(m) : NULL;
	if (!m || !*pm || set_build_info(m) < 0 || set_engines(m) < 0 || cpu_wait_start(m) < 0) {
		process_metrics_free(*pm);
		*pm = NULL;
		metrics_free(m);
		return NULL;
	}
	return m;
}

/* Probes, scheduler and HTTP server on @listen_fd (taken) until SIGTERM; the exit status. */
static void reload_tls(void *userdata)
{
	http_reload_tls(userdata);
}

static int serve(const struct config *cfg, const char *config_path, const struct web_config *web,
		 int listen_fd, const char *where, const struct nofile *nf)
{
	/* Connections get what the schedule leaves (a flood must not starve a lane
	 * that opens its probe file again), and a reload's schedule must fit in
	 * what the connections leave: the limit is fixed here. */
	const struct http_limits lim = {.fd_reserve = nf->besides_http};
	const uint64_t conns = http_connection_limit(nf->limit, nf->besides_http);
	struct process_metrics *pm = NULL;
	struct metrics *m = new_registry(cfg, &pm);
	struct http_server *h = NULL;
	struct statefile *sf = NULL;
	struct sched *s = NULL;
	int r, status = EXIT_FAILURE;
	void *parts[2];

	if (!m) {
		log_error("Out of memory");
		close(listen_fd);
		return status;
	}
	s = sched_new(cfg, m, &r);
	if (!s) {
		if (r == -EINVAL) /* a configuration the file alone could not reveal */
			status = EX_CONFIG;
		else
			log_error_errno(r, "Failed to set up the probes: %m");
		close(listen_fd);
		goto out;
	}
	if (sched_set_config_path(s, config_path) < 0) {
		log_error("Out of memory");
		close(listen_fd);
		goto out;
	}
	/* Restored before anything can tick: the lanes and the pages. */
	sf = statefile_open(cfg, sched_status(s));
	statefile_start(sf);
	parts[0] = s;
	parts[1] = pm;
	h = http_start(listen_fd, &lim, web, sched_status(s), m, collect, parts, &r);
	if (!h) {
		if (r == -EINVAL) /* a certificate or key that does not load: logged */
			status = EX_CONFIG;
		else
			log_error_errno(r, "Failed to start the HTTP server: %m");
		goto out;
	}
	if (nf->limit != UINT64_MAX)
		sched_set_nofile(
			s, nf->limit - nf->open_now - NOFILE_DAEMON - conns - HTTP_ACCEPT_BATCH,
			nf->limit);
	sched_on_sighup(s, reload_tls, h);
	if (sched_start(s) < 0)
		goto out;
	log_info("iopulse %s: %u probe(s) on %u target(s) from %s", IOPULSE_VERSION, cfg->n_probes,
		 cfg->n_targets, cfg->source);
	log_info("Serving metrics on %s://%s/metrics%s", web && web->tls ? "https" : "http", where,
		 web && web->n_users ? " (basic auth)" : "");
	sched_notify_ready(s);
	/* Loading and checking the configuration went deeper than the scheduler's
	 * loop will (issue 15, memory). */
	stack_release();
	r = sched_run(s);
	sd_notify(0, "STOPPING=1");
	status = r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
out:
	http_stop(h);
	/* A lane stuck in the kernel cannot be joined: leave without tearing down
	 * what it may still touch. */
	if (s && sched_stop(s, STOP_GRACE_NS) > 0)
		_exit(status);
	statefile_stop(sf);
	sched_free(s);
	process_metrics_free(pm);
	metrics_free(m);
	return status;
}

static int cmd_run(int argc, char **argv)
{
	struct options o = {0};
	struct config *cfg = NULL;
	struct web_config *web = NULL;
	struct nofile nf;
	char where[80];
	int r, listen_fd = -1;

	r = parse_options(argc, argv, run_usage, true, &o);
	if (r >= 0)
		return r;
	/* One malloc arena for every thread (issue 15, memory): by default each
	 * thread that allocates gets an arena of its own (the HTTP thread, the
	 * lanes), each with its own partly used pages. What allocates off the main
	 * thread is the HTTP thread's scrapes and a lane's opening: never the path of
	 * an I/O, so one lock costs nothing. bench/memory.sh: heap and arenas 480 ->
	 * 456 KiB. */
	mallopt(M_ARENA_MAX, 1);
	log_setup();
	r = load_config(o.config, &cfg, false);
	if (r == EX_OK)
		r = check_budget(cfg, false);
	if (r == EX_OK)
		r = load_web_config(o.web_config, &web, false);
	if (r != EX_OK) {
		cfg_free(cfg);
		return r;
	}
	raise_nofile();
	block_signals();
	r = http_open_listener(o.listen, cfg, &listen_fd, where, sizeof(where));
	/* With the listener open, bound or passed by systemd: counted once. */
	if (r == EX_OK)
		r = check_nofile(cfg, &nf);
	if (r != EX_OK && listen_fd >= 0)
		close(listen_fd);
	if (r == EX_OK)
		warn_plain_auth(web, http_socket_is_loopback(listen_fd), where, false);
	if (r == EX_OK)
		r = serve(cfg, o.config, web, listen_fd, where, &nf);
	web_config_free(web);
	cfg_free(cfg);
	return r;
}

/* version takes --help and nothing else. */
static int cmd_version(int argc, char **argv)
{
	if (argc == 1) {
		printf("iopulse %s (revision %s)\n", IOPULSE_VERSION, IOPULSE_REVISION);
		return EX_OK;
	}
	if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		fputs(version_usage, stdout);
		return EX_OK;
	}
	char e[ESC_SIZE(ESC_ARG_SHOWN)];

	fprintf(stderr, "iopulse version: unexpected argument '%s'\n",
		esc_str(e, sizeof(e), argv[1]));
	fputs(version_usage, stderr);
	return EX_USAGE;
}

/* IOPULSE_CLOCK: auto (the TSC where trusted) or monotonic; lib/clock.c. */
static int clock_from_env(void)
{
	const char *v = getenv("IOPULSE_CLOCK");

	if (!v || !*v || strcmp(v, "auto") == 0)
		eng_clock_init(ENG_CLOCK_AUTO);
	else if (strcmp(v, "monotonic") == 0)
		eng_clock_init(ENG_CLOCK_MONOTONIC);
	else {
		char e[ESC_SIZE(ESC_ARG_SHOWN)];

		fprintf(stderr, "iopulse: IOPULSE_CLOCK='%s': expected auto or monotonic\n",
			esc_str(e, sizeof(e), v));
		return EX_USAGE;
	}
	return EX_OK;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;
	int r = clock_from_env();

	if (r != EX_OK)
		return r;
	if (!cmd) {
		fputs(main_usage, stderr);
		return EX_USAGE;
	}
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		fputs(main_usage, stdout);
		return EX_OK;
	}
	if (strcmp(cmd, "run") == 0)
		return cmd_run(argc - 1, argv + 1);
	if (strcmp(cmd, "check") == 0)
		return cmd_check(argc - 1, argv + 1);
	if (strcmp(cmd, "probe") == 0)
		return cmd_probe(argc - 1, argv + 1);
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0)
		return cmd_version(argc - 1, argv + 1);
	char e[ESC_SIZE(ESC_ARG_SHOWN)];

	fprintf(stderr, "iopulse: unknown command '%s'\n\n%s", esc_str(e, sizeof(e), cmd),
		main_usage);
	return EX_USAGE;
}
