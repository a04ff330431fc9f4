#!/bin/bash
# SPDX-License-Identifier: MIT
#
# An idle daemon wakes only for its runs: each lane sleeps until its next due
# time and runs everything due then in that one wake-up, and no other thread
# wakes at all (the scheduler's loop no longer hands runs over nor looks at
# idle lanes, the status page's figures need no timer). With engine null the
# I/O itself never sleeps, so over a window the process switches out about once
# per run: at most the runs the window saw plus SLACK (a run at each edge of
# the window), and the scheduler's thread at most once. Before, the scheduler
# woke for every run and again to check the lane after it, and every 10s for
# the status page: about three switches per run.
#
# Two schedules: one read ping a second; a ping a second and one every 10s on
# the same lane (over a window holding a 10s ping). Counts, not timings: only
# voluntary switches (the thread went to sleep; a preemption on a busy
# machine, or a sanitizer build's, is not a wake-up of ours), against runs
# counted from the daemon's own iopulse_probe_runs_total.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl
require_disk "$WORK"

SLACK=2
DIR="$WORK/target"
CFG="$WORK/iopulse.yaml"
mkdir -p "$DIR"

# runs: the runs of every probe so far.
runs() {
	scrape_metrics
	awk '/^iopulse_probe_runs_total[{]/ { n += $2 } END { print n + 0 }' "$PAGE"
}

pinged() {
	(($(runs) > 0))
}

# switches FILE...: voluntary context switches in these status files.
switches() {
	cat "$@" 2>/dev/null | awk '/^voluntary_ctxt_switches:/ { n += $2 } END { print n + 0 }'
}

# measure WINDOW: run the daemon on $CFG idle for WINDOW seconds; fails when it
# switches more than its runs allow.
measure() {
	local window=$1 main0 all0 runs0 main1 all1 runs1 main all ran

	start_daemon "$CFG"
	wait_until 60 "the first ping" pinged
	sleep 1
	runs0=$(runs) # before counting: a scrape wakes the HTTP thread
	main0=$(switches "/proc/$DAEMON_PID/task/$DAEMON_PID/status")
	all0=$(switches /proc/"$DAEMON_PID"/task/*/status)
	sleep "$window"
	main1=$(switches "/proc/$DAEMON_PID/task/$DAEMON_PID/status")
	all1=$(switches /proc/"$DAEMON_PID"/task/*/status)
	runs1=$(runs)
	require_alive
	main=$((main1 - main0))
	all=$((all1 - all0))
	ran=$((runs1 - runs0))
	note "over ${window}s: $ran runs, scheduler thread $main context switches, whole process $all"
	((ran > 0)) || fail "no run in ${window}s"
	((main <= 1)) || fail "the scheduler's thread slept $main times in ${window}s (at most 1): it wakes for runs"
	((all <= ran + SLACK)) ||
		fail "the process switched $all times for $ran runs in ${window}s (at most $((ran + SLACK)))"
	stop_daemon TERM 2
}

target_config "$CFG" "$DIR" 1MiB "direct: false"
ping_item "$CFG" p1 read "interval: 1s" 'engine: "null"'
measure 8

target_config "$CFG" "$DIR" 1MiB "direct: false"
ping_item "$CFG" p1 read "interval: 1s" 'engine: "null"'
ping_item "$CFG" p10 write "interval: 10s" 'engine: "null"' "sync: fdatasync"
measure 12
note "pass"
