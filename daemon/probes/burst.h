/* SPDX-License-Identifier: MIT */
/*
 * burst — fio-style IOPS bursts: `jobs` threads on one target, each with its own
 * engine queue of `iodepth` I/Os, for a duration or a number of I/Os, after an
 * optional ramp whose I/Os are not counted.
 *
 * burst_new() allocates requests and per-job histograms. The I/O buffers
 * (iodepth x block_size_max per job, aligned for O_DIRECT: the bulk of the
 * memory) exist only during burst_run(): mapped and faulted in before the clock
 * starts, unmapped after the jobs end, so an idle burst holds none whatever its
 * schedule. The submit/reap loop never allocates, locks or logs; a latency is
 * recorded with index arithmetic into the job's own histogram, and job results
 * are merged after the run.
 * Written data is fresh random bytes per I/O. The caller (a lane) owns the
 * target; no other probe runs on it during a burst. Its way in is
 * burst_probe_ops (probe.h), as for every kind: init, run, free; burst.c and
 * burst_job.c have the rest.
 */
#ifndef IOPULSE_BURST_H
#define IOPULSE_BURST_H

#endif
