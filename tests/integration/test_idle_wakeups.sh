#!/bin/bash
# SPDX-License-Identifier: MIT
#
# An idle daemon wakes only when something is due: with one read ping a second
# (engine null: the I/O itself never sleeps), the scheduler's thread sleeps
# between pings and wakes for the ping, the status page's figures (every 10s)
# and nothing else, so over WINDOW seconds it switches out about WINDOW + 1
# times (it polled the lanes 4 times a second before: 5 per second). Counts, not
# timings: only voluntary switches (the thread went to sleep; a preemption on a
# busy machine, or a sanitizer build's, is not a wake-up of ours), and limits of
# 2.5 per second for the scheduler's thread and 4 for the whole process.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl
require_disk "$WORK"

WINDOW=8
DIR="$WORK/target"
CFG="$WORK/iopulse.yaml"
mkdir -p "$DIR"
target_config "$CFG" "$DIR" 1MiB "direct: false"
ping_item "$CFG" p1 read "interval: 1s" 'engine: "null"'

pinged() {
	local v
	scrape_metrics
	sample_or v 0 "$PAGE" 'iopulse_probe_ios_total{probe="p1",target="t1",op="read"}'
	num "$v" '>' 0
}

# switches FILE...: voluntary context switches in these status files.
switches() {
	cat "$@" 2>/dev/null | awk '/^voluntary_ctxt_switches:/ { n += $2 } END { print n + 0 }'
}

start_daemon "$CFG"
wait_until 10 "the first ping" pinged
sleep 1 # past start-up's first status tick and scrape
main0=$(switches "/proc/$DAEMON_PID/task/$DAEMON_PID/status")
all0=$(switches /proc/"$DAEMON_PID"/task/*/status)
sleep "$WINDOW"
main1=$(switches "/proc/$DAEMON_PID/task/$DAEMON_PID/status")
all1=$(switches /proc/"$DAEMON_PID"/task/*/status)
require_alive
main=$((main1 - main0))
all=$((all1 - all0))
note "over ${WINDOW}s: scheduler thread $main context switches, whole process $all"
((main * 2 <= 5 * WINDOW)) ||
	fail "the scheduler's thread slept $main times in ${WINDOW}s (at most $((5 * WINDOW / 2))): it polls"
((all <= 4 * WINDOW)) ||
	fail "the process switched $all times in ${WINDOW}s (at most $((4 * WINDOW)))"
stop_daemon TERM 2
note "pass"
