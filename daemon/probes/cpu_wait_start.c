/* SPDX-License-Identifier: MIT */
/*
 * cpu_wait_start — the CPU-wait measurement as the commands start it
 * (cpu_wait.h): what the kernel gives, said once in the log, and
 * iopulse_cpu_wait_measured.
 */
#include <errno.h>
#include <stdbool.h>

#include "daemon/log.h"
#include "daemon/metrics/metrics.h"
#include "daemon/probes/cpu_wait.h"
#include "daemon/targets/hostload.h"

/* iopulse_cpu_wait_measured, @on. 0 or -ENOMEM. */
static int measured_gauge(struct metrics *m, bool on)
{
	static const char *const none[] = {NULL};
	struct metric_family *f;
	struct metric_series *s;

	f = metrics_family(m, "iopulse_cpu_wait_measured", METRIC_GAUGE,
			   "1 when the latencies of pings and verify probes are net of the time "
			   "their thread waited for a CPU (the kernel gives each thread's "
			   "run-queue wait in /proc/thread-self/schedstat); 0 when they "
			   "include it, as the log said at start.",
			   none, NULL, 0);
	s = f ? metrics_series(f, none) : NULL;
	if (!s)
		return -ENOMEM;
	metrics_set(s, on ? 1 : 0);
	return 0;
}

int cpu_wait_start(struct metrics *m)
{
	const char *proc = hostload_proc_root();
	int r = cpu_wait_setup(proc);

	if (r < 0)
		log_warning_errno(
			r,
			"CPU wait: %s/thread-self/schedstat gives no run-queue wait (%m): "
			"latencies include the time the probe threads waited for a CPU",
			proc);
	else if (m)
		log_info("CPU wait: latencies are net of the probe threads' run-queue wait "
			 "(%s/thread-self/schedstat)",
			 proc);
	return m ? measured_gauge(m, r == 0) : 0;
}
