#!/bin/bash
# SPDX-License-Identifier: MIT
#
# SIGTERM in the middle of a 30-second burst: the burst stops, the daemon exits 0
# in under a second (issue 5). Run for the sync engine (its I/O cannot be
# interrupted, only not resubmitted) and for io_uring.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl
require_disk "$WORK"

DIR="$WORK/target"
mkdir "$DIR"

bursting() {
	local runs
	scrape_metrics
	# A 30 s burst publishes only when it ends: its run counter says it started.
	sample_or runs 0 "$PAGE" 'iopulse_probe_runs_total{probe="b1",target="t1"}'
	num "$runs" '>=' 1
}

for engine in sync io_uring; do
	CFG="$WORK/iopulse-$engine.yaml"
	cat >"$CFG" <<EOF
splay: false # the bursts run at start, not at a splayed phase
targets:
  - name: t1
    directory: $(yaml_str "$DIR")
    max_duty_cycle: 100%
    max_write_per_day: 0
    size: 4MiB
probes:
  - name: b1
    type: burst
    target: t1
    rw: randrw
    iodepth: 4
    duration: 30s
    every: 1m
    engine: $engine
EOF
	start_daemon "$CFG"
	wait_until 60 "the $engine burst running" bursting
	sleep 0.5 # well inside the 30 s
	scrape_metrics
	if grep -q '^iopulse_burst_duration_seconds' "$PAGE"; then
		fail "the $engine burst finished already: nothing left to interrupt"
	fi
	# Not the burst's 30 s: its lanes get 0.8 s (STOP_GRACE_NS) to stop, and the
	# rest of a second is exit work, which a loaded machine (or ASan's leak check
	# at exit) can stretch; 5 s is still far from the 29 s the burst has left.
	stop_daemon TERM 5
	if grep -q 'abandoning' "$DAEMON_LOG"; then
		fail "the $engine burst's lane had to be abandoned instead of stopping"
	fi
done
note "pass"
