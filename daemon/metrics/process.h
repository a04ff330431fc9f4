/* SPDX-License-Identifier: MIT */
/*
 * process — the standard process_* metrics, as client_golang's process
 * collector exports them: CPU time, resident and virtual memory, start time,
 * open and maximum file descriptors. Read from /proc at scrape time.
 */
#ifndef IOPULSE_PROCESS_H
#define IOPULSE_PROCESS_H

#include <stdbool.h>

#include "daemon/metrics/metrics.h"

struct process_metrics;

/* The process_* families, one row each (process.c): what process_metrics_new()
 * declares, and what test_man_metrics compares with iopulse(8). Ends with a row
 * whose name is NULL. */
extern const struct metric_def process_metric_defs[];

/* Declares the process_* families in @m, creates their series and collects once.
 * The series belong to @m; the returned object only points at them and must be
 * freed before @m. NULL on allocation failure or when a family of the same name
 * but another type or labels already exists. */
struct process_metrics *process_metrics_new(struct metrics *m);

/* Reads the CPU time, /proc/self/statm, /proc/self/fd (both kept open: see
 * process.c) and the fd limit, and updates the series. A source that cannot be
 * read (no /proc) leaves its values as they were. */
void process_metrics_collect(struct process_metrics *p);

/* With @list, count open descriptors by listing /proc/self/fd even where its
 * size is the count (Linux 6.2 and later): the older kernels' way, for tests. */
void process_metrics_list_fds(struct process_metrics *p, bool list);

/* NULL is a no-op. The series stay in the registry. */
void process_metrics_free(struct process_metrics *p);

#endif
