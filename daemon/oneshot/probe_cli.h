/* SPDX-License-Identifier: MIT */
/*
 * probe_cli — the command line of `iopulse probe`: ioping's flags (and fio's
 * --rw/--duration/--iodepth/--engine for a burst) in any order, then either
 * PATH... (a directory, a regular file or a block device, measured ad hoc) or
 * the probes of a configuration (--config FILE [NAME...]).
 *
 * Each value is checked where it is parsed, against the configuration's own
 * limits (config.h), so the message names the flag; PATH... is then turned into
 * YAML and loaded with cfg_load_string(), through every check its keys get in a
 * file. What a PATH is comes from target_path_info(): target.c's rules, not a
 * second set. Running and printing is oneshot's.
 */
#ifndef IOPULSE_PROBE_CLI_H
#define IOPULSE_PROBE_CLI_H

/* The name a kept (-k) probe file gets in a directory, reused by the next -k. */
#define PROBE_CLI_KEPT_FILE "iopulse-probe.tmp"

/*
 * `iopulse probe ARGS`: @argv[0] is "probe". Returns the exit status: 0 every
 * probe ran without error, 1 a probe failed, 64 usage, 66 a PATH that is not
 * there or is no directory, file or device, 77 a PATH this user may not open
 * (permission denied) or refused (writes on a file or device, a symlink, tmpfs
 * without --allow-tmpfs), 78 configuration error: oneshot_path_status().
 */
int probe_cli_main(int argc, char **argv);

#endif
