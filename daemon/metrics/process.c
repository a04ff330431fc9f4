/* SPDX-License-Identifier: MIT */
/*
 * process — process_* metrics from /proc, with the names, types and help texts
 * of client_golang's process collector so that existing dashboards and alerts
 * work unchanged. Collected at scrape time; nothing here logs: a source that
 * cannot be read leaves the previous value in place.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/metrics/process.h"
#include "lib/fd.h"

/* The rows of process_metric_defs[]. */
enum {
	PROC_CPU,
	PROC_RSS,
	PROC_VSIZE,
	PROC_START,
	PROC_OPEN_FDS,
	PROC_MAX_FDS,
	PROC_COUNT,
};

/* client_golang's names, types and help texts; none has labels. */
const struct metric_def process_metric_defs[PROC_COUNT + 1] = {
	[PROC_CPU] = {"process_cpu_seconds_total", METRIC_COUNTER, NULL,
		      "Total user and system CPU time spent in seconds."},
	[PROC_RSS] = {"process_resident_memory_bytes", METRIC_GAUGE, NULL,
		      "Resident memory size in bytes."},
	[PROC_VSIZE] = {"process_virtual_memory_bytes", METRIC_GAUGE, NULL,
			"Virtual memory size in bytes."},
	[PROC_START] = {"process_start_time_seconds", METRIC_GAUGE, NULL,
			"Start time of the process since unix epoch in seconds."},
	[PROC_OPEN_FDS] = {"process_open_fds", METRIC_GAUGE, NULL,
			   "Number of open file descriptors."},
	[PROC_MAX_FDS] = {"process_max_fds", METRIC_GAUGE, NULL,
			  "Maximum number of open file descriptors."},
	[PROC_COUNT] = {NULL},
};

struct process_metrics {
	struct metric_series *series[PROC_COUNT]; /* by row of process_metric_defs[] */
	long clk_tck;				  /* sysconf(_SC_CLK_TCK) */
	long page_size;				  /* sysconf(_SC_PAGESIZE) */
	int statm_fd;				  /* /proc/self/statm, kept open; -1 until opened */
	DIR *fd_dir;				  /* /proc/self/fd, kept open; NULL until opened */
	bool list_fds;				  /* count by listing fd_dir, not by its size */
};

/*
 * What a scrape costs here matters: under load, opening, reading and closing
 * /proc/self/stat and listing /proc/self/fd was a third of a scrape's CPU. So
 * the sources are opened once and read again in place at each scrape, each as
 * cheaply as the kernel allows, always fresh:
 *   - CPU time from getrusage(), the same sum over threads as /proc/self/stat's
 *     utime and stime (thread_group_cputime_adjusted()), without formatting
 *     fifty other fields;
 *   - memory from /proc/self/statm (pread() at 0 makes the kernel regenerate
 *     it), the same counters as /proc/self/stat's vsize and rss;
 *   - open descriptors from the size of /proc/self/fd (Linux 6.2 and later
 *     report the count there), or by listing it again (rewinddir()) on kernels
 *     whose directory has no size;
 *   - the start time once: it does not change.
 * The kept descriptors are open descriptors like any other, and counted.
 */

static int read_at_zero(int fd, char *buf, size_t size)
{
	ssize_t n = fd_pread_full(fd, buf, size - 1, 0);

	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	return 0;
}

static int read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = read_at_zero(fd, buf, size);
	close(fd);
	return r;
}

/* Field 22 of /proc/self/stat (proc(5) numbering): the start, in clock ticks
 * after boot. */
static int read_starttime(unsigned long long *starttime)
{
	char buf[2048], *p, *end;
	int field, r;

	r = read_file("/proc/self/stat", buf, sizeof(buf));
	if (r < 0)
		return r;
	/* comm (field 2) may hold spaces and parentheses: skip to the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p++;
	/* Field 3 is the state letter; numbers start at field 4. */
	while (*p == ' ')
		p++;
	if (!*p)
		return -EINVAL;
	p++;
	for (field = 4; field <= 22; field++) {
		errno = 0;
		*starttime = strtoull(p, &end, 10);
		if (end == p || errno)
			return -EINVAL;
		p = end;
	}
	return 0;
}

static int read_btime(unsigned long long *btime)
{
	char *line = NULL;
	size_t cap = 0;
	int r = -ENOENT;
	FILE *f;

	f = fopen("/proc/stat", "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		if (sscanf(line, "btime %llu", btime) == 1) {
			r = 0;
			break;
		}
	}
	free(line);
	fclose(f);
	return r;
}

/* /proc/self/statm's first two fields: virtual size and resident set, pages. */
static int read_statm(struct process_metrics *p, unsigned long long *size,
		      unsigned long long *resident)
{
	char buf[256];
	int r;

	if (p->statm_fd < 0)
		p->statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (p->statm_fd < 0)
		return -errno;
	r = read_at_zero(p->statm_fd, buf, sizeof(buf));
	if (r < 0)
		return r;
	return sscanf(buf, "%llu %llu", size, resident) == 2 ? 0 : -EINVAL;
}

static int count_open_fds(struct process_metrics *p, unsigned long *n)
{
	struct dirent *de;
	struct stat st;
	unsigned long c = 0;

	if (!p->fd_dir)
		p->fd_dir = opendir("/proc/self/fd");
	if (!p->fd_dir)
		return -errno;
	/* Never 0 where it is the count: fd_dir itself is open. */
	if (!p->list_fds && fstat(dirfd(p->fd_dir), &st) == 0 && st.st_size > 0) {
		*n = (unsigned long)st.st_size;
		return 0;
	}
	rewinddir(p->fd_dir);
	errno = 0;
	while ((de = readdir(p->fd_dir)))
		if (de->d_name[0] != '.')
			c++;
	if (errno)
		return -errno;
	*n = c;
	return 0;
}

/* @tv in whole clock ticks, rounded down as /proc/self/stat's utime and stime
 * are: the counter reads exactly as it did from there (and as client_golang's
 * does), and moves once a tick rather than at every scrape, so that a family
 * that did not change keeps its rendering and its compressed bytes. */
static unsigned long long ticks(const struct process_metrics *p, const struct timeval *tv)
{
	return (unsigned long long)tv->tv_sec * (unsigned long long)p->clk_tck +
	       (unsigned long long)tv->tv_usec * (unsigned long long)p->clk_tck / 1000000u;
}

void process_metrics_collect(struct process_metrics *p)
{
	unsigned long long size, resident;
	struct rusage ru;
	struct rlimit rl;
	unsigned long fds = 0;

	if (!p)
		return;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		metrics_set(p->series[PROC_CPU],
			    (double)(ticks(p, &ru.ru_utime) + ticks(p, &ru.ru_stime)) /
				    (double)p->clk_tck);
	if (read_statm(p, &size, &resident) == 0) {
		metrics_set(p->series[PROC_RSS], (double)resident * (double)p->page_size);
		metrics_set(p->series[PROC_VSIZE], (double)size * (double)p->page_size);
	}
	if (count_open_fds(p, &fds) == 0)
		metrics_set(p->series[PROC_OPEN_FDS], (double)fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		metrics_set(p->series[PROC_MAX_FDS], (double)rl.rlim_cur);
}

void process_metrics_list_fds(struct process_metrics *p, bool list)
{
	p->list_fds = list;
}

/* process_start_time_seconds, once: without /proc it stays 0. */
static void set_start_time(struct process_metrics *p)
{
	unsigned long long starttime, btime;

	if (read_starttime(&starttime) == 0 && read_btime(&btime) == 0)
		metrics_set(p->series[PROC_START],
			    (double)btime + (double)starttime / (double)p->clk_tck);
}

/* The one series of each family, which has no labels. 0 or -ENOMEM. */
static int declare(struct process_metrics *p, struct metrics *m)
{
	struct metric_family *f[PROC_COUNT];

	if (metrics_declare(m, process_metric_defs, PROC_COUNT, NULL, 0, f) < 0)
		return -ENOMEM;
	for (int i = 0; i < PROC_COUNT; i++) {
		p->series[i] = metrics_series(f[i], NULL);
		if (!p->series[i])
			return -ENOMEM;
	}
	return 0;
}

struct process_metrics *process_metrics_new(struct metrics *m)
{
	struct process_metrics *p;

	if (!m)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->clk_tck = sysconf(_SC_CLK_TCK);
	if (p->clk_tck <= 0)
		p->clk_tck = 100;
	p->page_size = sysconf(_SC_PAGESIZE);
	if (p->page_size <= 0)
		p->page_size = 4096;

	if (declare(p, m) < 0) {
		free(p);
		return NULL;
	}
	p->statm_fd = -1;
	set_start_time(p);
	process_metrics_collect(p);
	return p;
}

void process_metrics_free(struct process_metrics *p)
{
	if (!p)
		return;
	p->statm_fd = safe_close(p->statm_fd);
	if (p->fd_dir)
		closedir(p->fd_dir);
	free(p);
}
