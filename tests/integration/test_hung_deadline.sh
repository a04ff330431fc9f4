#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A hung I/O is flagged at its timeout even when nothing else would wake the
# scheduler: one ping an hour (its first at start), timeout 1s, on a target whose
# filesystem hangs from the start (hangfs, frozen: the probe file's layout
# blocks in its first write). The scheduler sleeps until the lane's watch timer
# fires at the I/O's deadline instead of polling, and nothing else would wake it
# for an hour: the timeout must be counted, and the target logged stuck, well
# before that (60s: a loaded machine).
# Skipped where FUSE cannot be mounted (see hangfs.sh).

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"
# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"

require_cmd curl
require_disk "$WORK"
hangfs_mount

cat >"$WORK/c.yaml" <<-EOF
	splay: false
	targets:
	  - name: hung
	    directory: $(yaml_str "$MNT")
	    max_duty_cycle: 100%
	    max_write_per_day: 0
	    size: 1MiB
	probes:
	  - name: ping
	    type: ping
	    target: hung
	    op: read
	    interval: 1h
	    timeout: 1s
EOF
TIMEOUTS='iopulse_probe_errors_total{probe="ping",target="hung",reason="timeout"}'

kill -USR1 "$HANGFS_PID"
wait_hangfs 60 1 frozen
t0=$(now_ms)
start_daemon "$WORK/c.yaml"

counted() {
	local tmo
	scrape_metrics
	sample_or tmo 0 "$PAGE" "$TIMEOUTS"
	num "$tmo" '==' 1
}
# Nothing else would wake the scheduler for an hour: 60 s is a loaded machine,
# not a wake-up that came from somewhere else.
wait_until 60 "the hung layout counted as a timeout (the next wake-up is in 1h)" counted
grep -q 'in flight for over 1s (timeout), target is stuck' "$DAEMON_LOG" ||
	fail "the daemon does not log the hung target as stuck"
note "timeout counted $(($(now_ms) - t0))ms after the start"
stop_daemon TERM 5 # the layout is stuck for good: 0.8 s grace, then abandoned
note "pass"
