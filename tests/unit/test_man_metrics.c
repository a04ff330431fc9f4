/* SPDX-License-Identifier: MIT */
/*
 * iopulse(8) METRICS against the tables of families (tables[]: the probes',
 * the targets', the process's, the reload's, the HTTP server's):
 *   - every row has an entry in the manual: ".TP", ".B name", then "type;"
 *     and a line of labels (.BR probe ", " target .) or "type; no labels.",
 *     with the row's type and the row's labels in their order;
 *   - every entry is a row, or one of the families the daemon declares at
 *     start (elsewhere[]), which a file under daemon/ must name;
 *   - the rows are what a daemon registers: the series of a ping, a burst and
 *     a verify probe, a target and the process fill one family per row, and
 *     no other.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "config/config.h"
#include "daemon/metrics/metrics.h"
#include "daemon/metrics/process.h"
#include "daemon/probes/probe_metrics.h"
#include "daemon/http/http.h"
#include "daemon/sched/scheduler.h"

#define MAN_PAGE     TEST_SOURCE_DIR "/man/iopulse.8"
#define MAX_ENTRIES  128
#define MAX_NAME     96
#define MAX_LABEL_SZ 32

/* @page: test_rows_are_the_families() registers its families (the others need
 * a running scheduler or HTTP server). */
static const struct {
	const char *name;
	const struct metric_def *rows;
	bool page;
} tables[] = {
	{"probe_metric_defs", probe_metric_defs, true},
	{"burst_metric_defs", burst_metric_defs, true},
	{"target_metric_defs", target_metric_defs, true},
	{"process_metric_defs", process_metric_defs, true},
	{"reload_metric_defs", reload_metric_defs, false},
	{"http_metric_defs", http_metric_defs, false},
};

/* Families declared at start, in daemon/main.c (the build and the engines of
 * this binary) and cpu_wait_start.c (whether the kernel gives the CPU wait):
 * the manual lists them, and a file under daemon/ must name them. */
static const char *const elsewhere[] = {
	"iopulse_engine_available",
	"iopulse_build_info",
	"iopulse_cpu_wait_measured",
};

/* One entry of iopulse(8) METRICS. */
struct man_entry {
	char name[MAX_NAME];
	char type[16];
	unsigned n_labels;
	char labels[METRICS_MAX_LABELS][MAX_LABEL_SZ];
	unsigned line;
};

static struct man_entry entries[MAX_ENTRIES];
static unsigned n_entries;

static const char *type_name(enum metric_type t)
{
	return t == METRIC_COUNTER ? "counter" : t == METRIC_GAUGE ? "gauge" : "histogram";
}

static bool metric_name(const char *s)
{
	if (!*s || strspn(s, "abcdefghijklmnopqrstuvwxyz_:0123456789") != strlen(s))
		return false;
	return !(*s >= '0' && *s <= '9');
}

/* The bold arguments of a ".BR" line (its 1st, 3rd...; quoted or bare), the
 * roman ones between them being ", " and the closing "." or ",". */
static void parse_labels(struct man_entry *e, const char *line)
{
	const char *p = line + strlen(".BR");
	unsigned arg = 0;

	for (;;) {
		const char *start, *end;

		p += strspn(p, " ");
		if (!*p)
			break;
		if (*p == '"') {
			start = ++p;
			end = strchr(p, '"');
			if (!end)
				fail_msg("iopulse.8:%u: unterminated quote in '%s'", e->line, line);
			p = end + 1;
		} else {
			start = p;
			end = p + strcspn(p, " ");
			p = end;
		}
		if (arg++ % 2)
			continue;
		if (e->n_labels == METRICS_MAX_LABELS || end - start >= MAX_LABEL_SZ)
			fail_msg("iopulse.8:%u: too many or too long labels in '%s'", e->line,
				 line);
		snprintf(e->labels[e->n_labels++], MAX_LABEL_SZ, "%.*s", (int)(end - start), start);
	}
}

/* Line @i of @lines is the ".B name" of an entry; the type and labels follow. */
static void parse_entry(char **lines, unsigned n, unsigned i)
{
	struct man_entry *e = &entries[n_entries];
	const char *type = i + 1 < n ? lines[i + 1] : "";
	const char *semi = strchr(type, ';');

	assert_true(++n_entries < MAX_ENTRIES);
	memset(e, 0, sizeof(*e));
	e->line = i + 1;
	snprintf(e->name, sizeof(e->name), "%s", lines[i] + strlen(".B "));
	if (!semi || semi - type >= (long)sizeof(e->type))
		fail_msg("iopulse.8:%u: %s: no 'type;' line after its name", e->line + 1, e->name);
	snprintf(e->type, sizeof(e->type), "%.*s", (int)(semi - type), type);
	if (!strcmp(semi, "; no labels."))
		return;
	if (semi[1] || i + 2 >= n || strncmp(lines[i + 2], ".BR ", 4))
		fail_msg("iopulse.8:%u: %s: neither 'no labels.' nor a '.BR' line of labels",
			 e->line + 1, e->name);
	parse_labels(e, lines[i + 2]);
}

/* Reads the entries of iopulse(8) METRICS into entries[]. */
static void read_man(void)
{
	size_t len = 0, n_lines = 1;
	char *text = tu_read_all(MAN_PAGE, &len), *save = NULL, **lines;
	unsigned n = 0;
	bool in = false;

	assert_non_null(text);
	for (size_t i = 0; i < len; i++)
		n_lines += text[i] == '\n';
	lines = calloc(n_lines, sizeof(*lines));
	assert_non_null(lines);
	/* strtok_r() would skip empty lines and so misnumber the rest. */
	for (char *l = text; l; l = save) {
		save = strchr(l, '\n');
		if (save)
			*save++ = '\0';
		lines[n++] = l;
	}
	n_entries = 0;
	for (unsigned i = 0; i < n; i++) {
		if (!strncmp(lines[i], ".SH ", 4))
			in = !strcmp(lines[i], ".SH METRICS");
		if (in && i > 0 && !strcmp(lines[i - 1], ".TP") && !strncmp(lines[i], ".B ", 3) &&
		    metric_name(lines[i] + 3))
			parse_entry(lines, n, i);
	}
	free(lines);
	free(text);
	/* A parser that finds nothing would let everything pass. */
	assert_true(n_entries >= 40);
}

static struct man_entry *man_find(const char *name)
{
	for (unsigned i = 0; i < n_entries; i++)
		if (!strcmp(entries[i].name, name))
			return &entries[i];
	return NULL;
}

static const struct metric_def *row_find(const char *name)
{
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (const struct metric_def *d = tables[t].rows; d->name; d++)
			if (!strcmp(d->name, name))
				return d;
	return NULL;
}

/* Whether row @d and entry @e say the same labels, in the same order. */
static bool same_labels(const struct metric_def *d, const struct man_entry *e)
{
	unsigned n = 0;

	for (; d->labels && d->labels[n]; n++)
		if (n >= e->n_labels || strcmp(d->labels[n], e->labels[n]))
			return false;
	return n == e->n_labels;
}

static void test_every_row_documented(void **state)
{
	unsigned bad = 0, rows = 0;

	(void)state;
	read_man();
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
		for (const struct metric_def *d = tables[t].rows; d->name; d++) {
			const struct man_entry *e = man_find(d->name);

			rows++;
			if (row_find(d->name) != d) {
				print_error("%s: %s is a row of another table too\n",
					    tables[t].name, d->name);
				bad++;
			} else if (!e) {
				print_error("%s: %s is not in iopulse(8) METRICS\n", tables[t].name,
					    d->name);
				bad++;
			} else if (strcmp(e->type, type_name(d->type))) {
				print_error("iopulse.8:%u: %s is a %s, its row says %s\n", e->line,
					    d->name, e->type, type_name(d->type));
				bad++;
			} else if (!same_labels(d, e)) {
				print_error("iopulse.8:%u: %s: the labels differ from its row's "
					    "(%s)\n",
					    e->line, d->name, tables[t].name);
				bad++;
			}
		}
	}
	assert_true(rows >= 35);
	assert_int_equal(bad, 0);
}

/* Whether a .c file under @dir (recursively) holds @quoted. */
static bool source_names(const char *dir, const char *quoted)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool found = false;

	assert_non_null(d);
	while (!found && (de = readdir(d))) {
		char path[PATH_MAX];
		size_t len = strlen(de->d_name), size;
		struct stat st;
		char *text;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		assert_int_equal(stat(path, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			found = source_names(path, quoted);
			continue;
		}
		if (len < 2 || strcmp(de->d_name + len - 2, ".c"))
			continue;
		text = tu_read_all(path, &size);
		found = text && strstr(text, quoted);
		free(text);
	}
	closedir(d);
	return found;
}

static void test_every_entry_exists(void **state)
{
	unsigned bad = 0;

	(void)state;
	read_man();
	for (unsigned i = 0; i < n_entries; i++) {
		const char *name = entries[i].name;
		bool other = false;

		for (size_t k = 0; k < sizeof(elsewhere) / sizeof(elsewhere[0]); k++)
			other = other || !strcmp(elsewhere[k], name);
		if (!row_find(name) && !other) {
			print_error("iopulse.8:%u: %s is a row of no table\n", entries[i].line,
				    name);
			bad++;
		}
	}
	for (size_t k = 0; k < sizeof(elsewhere) / sizeof(elsewhere[0]); k++) {
		char quoted[MAX_NAME + 2];

		snprintf(quoted, sizeof(quoted), "\"%s\"", elsewhere[k]);
		if (row_find(elsewhere[k])) {
			print_error("%s is a row now: take it out of elsewhere[]\n", elsewhere[k]);
			bad++;
		} else if (!man_find(elsewhere[k])) {
			print_error("%s is not in iopulse(8) METRICS\n", elsewhere[k]);
			bad++;
		} else if (!source_names(TEST_SOURCE_DIR "/daemon", quoted)) {
			print_error("no source file under daemon/ names %s\n", elsewhere[k]);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static const char test_yaml[] = "targets:\n"
				"  - name: t\n"
				"    directory: /nonexistent/iopulse-test\n"
				"    max_duty_cycle: 100%\n"
				"    max_write_per_day: 1TiB\n"
				"    slow_floor: 1ms\n" /* auto has no floor gauge */
				"    labels:\n"
				"      zone: z1\n"
				"probes:\n"
				"  - name: w\n"
				"    type: ping\n"
				"    target: t\n"
				"    op: write\n"
				"    sync: fdatasync\n"
				"    warmup_after: 1m\n"
				"  - name: b\n"
				"    type: burst\n"
				"    target: t\n"
				"    rw: randwrite\n"
				"    ios: 100\n"
				"  - name: v\n"
				"    type: verify\n"
				"    target: t\n";

/* A burst's outcome with an empty histogram for every op, its CPU wait
 * measured, and the run @cpu_bound or not. */
static void publish_burst(struct probe_series *s, const struct config *cfg, bool cpu_bound)
{
	struct probe_outcome o = {.burst = true,
				  .elapsed_ns = 1000000000,
				  .cpu_wait_known = true,
				  .cpu_thread_ns = 1000000000,
				  .cpu_bound = cpu_bound};

	for (int op = 0; op < IO_OP_COUNT; op++) {
		o.op[op].hist = hist_new(cfg->buckets_ns, cfg->n_buckets);
		assert_non_null(o.op[op].hist);
	}
	probe_metrics_publish(s, &o);
	for (int op = 0; op < IO_OP_COUNT; op++)
		hist_free(o.op[op].hist);
}

/* Every family of the rows has a series on the page, and no other family. */
static void check_page(struct metrics *m)
{
	struct metrics_snapshot *snap = metrics_snapshot(m);
	unsigned rows = 0;

	assert_non_null(snap);
	for (unsigned i = 0; i < snap->n_families; i++) {
		const struct snap_family *sf = &snap->families[i];
		const struct metric_def *d = row_find(sf->name);

		if (!d)
			fail_msg("%s is on the page but a row of no table", sf->name);
		assert_int_equal(sf->type, d->type);
		assert_string_equal(sf->help, d->help);
	}
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (const struct metric_def *d = tables[t].rows; tables[t].page && d->name;
		     d++, rows++)
			if (!tu_find_family(snap, d->name))
				fail_msg("%s (%s) has no series on the page", d->name,
					 tables[t].name);
	assert_int_equal(snap->n_families, rows);
	metrics_snapshot_free(snap);
}

static void test_rows_are_the_families(void **state)
{
	static const struct target_desc desc = {.fstype = "ext4", .device = "sda"};
	struct config *cfg = NULL;
	struct cfg_error err = {0};
	struct metrics *m = metrics_new();
	struct probe_series ps[3];
	struct target_series ts = {0};
	struct process_metrics *proc;

	(void)state;
	assert_non_null(m);
	if (cfg_load_string("t.yaml", test_yaml, strlen(test_yaml), &cfg, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(cfg->n_probes, 3);
	assert_int_equal(probe_metrics_target_init(&ts, m, &cfg->targets[0]), 0);
	assert_int_equal(probe_metrics_target_info(&ts, &desc), 0);
	assert_int_equal(probe_metrics_target_device(&ts, 0.5, 1), 0);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(probe_metrics_init(&ps[i], m, cfg, &cfg->probes[i], "t", "sync"),
				 0);
	publish_burst(&ps[1], cfg, false);
	assert_int_equal(ps[1].cpu_bound_runs, 0);
	/* A CPU-bound run is counted, for the status tick to leave it out. */
	publish_burst(&ps[1], cfg, true);
	assert_int_equal(ps[1].cpu_bound_runs, 1);
	/* What a scrape adds: a state, and a ping's op against its baseline. */
	assert_int_equal(probe_metrics_target_state(&ts, "up", 1700000000, "none"), 0);
	assert_int_equal(
		probe_metrics_regress(
			&ps[0], IO_WRITE,
			&(struct probe_regress){.baseline_ns = (const uint64_t[]){1000, 2000},
						.recent_ns = (const uint64_t[]){3000, 4000},
						.ratio = 3,
						.floor_ns = 2000,
						.have_tail = true,
						.threshold_ns = 8000,
						.slow_io_ratio = 0.03,
						.have_max = true,
						.max_ns = 9000,
						.stalls = 1}),
		0);
	proc = process_metrics_new(m);
	assert_non_null(proc);
	check_page(m);

	process_metrics_free(proc);
	for (unsigned i = 0; i < 3; i++)
		probe_metrics_drop(&ps[i]);
	probe_metrics_target_drop(&ts);
	metrics_free(m);
	cfg_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_row_documented),
		cmocka_unit_test(test_every_entry_exists),
		cmocka_unit_test(test_rows_are_the_families),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
