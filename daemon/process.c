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
#include <sys/resource.h>
#include <unistd.h>

#include "process.h"

struct process_metrics {
	struct metric_series *cpu;	/* process_cpu_seconds_total */
	struct metric_series *rss;	/* process_resident_memory_bytes */
	struct metric_series *vsize;	/* process_virtual_memory_bytes */
	struct metric_series *start;	/* process_start_time_seconds */
	struct metric_series *open_fds; /* process_open_fds */
	struct metric_series *max_fds;	/* process_max_fds */
	long clk_tck;			/* sysconf(_SC_CLK_TCK) */
	long page_size;			/* sysconf(_SC_PAGESIZE) */
	unsigned long long btime;	/* boot time, seconds since the epoch; 0 unknown */
};

/* The /proc/self/stat fields we use (proc(5) numbering). */
struct proc_stat {
	unsigned long long utime;     /* 14, clock ticks */
	unsigned long long stime;     /* 15, clock ticks */
	unsigned long long starttime; /* 22, clock ticks after boot */
	unsigned long long vsize;     /* 23, bytes */
	unsigned long long rss;	      /* 24, pages */
};

static int read_file(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len < size - 1) {
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return (int)n;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return 0;
}

static int read_proc_stat(struct proc_stat *st)
{
	unsigned long long v;
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
	for (field = 4; field <= 24; field++) {
		errno = 0;
		v = strtoull(p, &end, 10);
		if (end == p || errno)
			return -EINVAL;
		p = end;
		switch (field) {
		case 14:
			st->utime = v;
			break;
		case 15:
			st->stime = v;
			break;
		case 22:
			st->starttime = v;
			break;
		case 23:
			st->vsize = v;
			break;
		case 24:
			st->rss = v;
			break;
		}
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

static int count_open_fds(unsigned long *n)
{
	struct dirent *de;
	unsigned long c = 0;
	DIR *d;

	d = opendir("/proc/self/fd");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		/* Not the descriptor we are reading the directory through. */
		if (atoi(de->d_name) == dirfd(d))
			continue;
		c++;
	}
	closedir(d);
	*n = c;
	return 0;
}

void process_metrics_collect(struct process_metrics *p)
{
	struct proc_stat st = {0};
	struct rlimit rl;
	unsigned long fds = 0;

	if (!p)
		return;
	if (read_proc_stat(&st) == 0) {
		metrics_set(p->cpu, (double)(st.utime + st.stime) / (double)p->clk_tck);
		metrics_set(p->rss, (double)st.rss * (double)p->page_size);
		metrics_set(p->vsize, (double)st.vsize);
		if (!p->btime)
			(void)read_btime(&p->btime);
		if (p->btime)
			metrics_set(p->start,
				    (double)p->btime + (double)st.starttime / (double)p->clk_tck);
	}
	if (count_open_fds(&fds) == 0)
		metrics_set(p->open_fds, (double)fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		metrics_set(p->max_fds, (double)rl.rlim_cur);
}

static struct metric_series *declare(struct metrics *m, const char *name, enum metric_type type,
				     const char *help)
{
	static const char *const no_labels[] = {NULL};
	struct metric_family *f;

	f = metrics_family(m, name, type, help, no_labels, NULL, 0);
	if (!f)
		return NULL;
	return metrics_series(f, no_labels);
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

	p->cpu = declare(m, "process_cpu_seconds_total", METRIC_COUNTER,
			 "Total user and system CPU time spent in seconds.");
	p->rss = declare(m, "process_resident_memory_bytes", METRIC_GAUGE,
			 "Resident memory size in bytes.");
	p->vsize = declare(m, "process_virtual_memory_bytes", METRIC_GAUGE,
			   "Virtual memory size in bytes.");
	p->start = declare(m, "process_start_time_seconds", METRIC_GAUGE,
			   "Start time of the process since unix epoch in seconds.");
	p->open_fds =
		declare(m, "process_open_fds", METRIC_GAUGE, "Number of open file descriptors.");
	p->max_fds = declare(m, "process_max_fds", METRIC_GAUGE,
			     "Maximum number of open file descriptors.");
	if (!p->cpu || !p->rss || !p->vsize || !p->start || !p->open_fds || !p->max_fds) {
		free(p);
		return NULL;
	}
	process_metrics_collect(p);
	return p;
}

void process_metrics_free(struct process_metrics *p)
{
	free(p);
}
