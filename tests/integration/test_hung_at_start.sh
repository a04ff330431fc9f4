#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A daemon started while a target's filesystem hangs — metadata included, like a
# dead NFS server (hangfs with HANGFS_FREEZE_METADATA=1) — serves /metrics anyway.
# This is what a restart during a disk hang looks like.
#   1. Frozen before the start: the daemon serves within 5s, says the hung target
#      could not be compared with the others, shows it down and in flight (its
#      lane waits in the kernel to open it), counts the timeout once, and pings
#      the healthy target all along.
#      A SIGHUP of the same file then reloads without waiting for the hung
#      target either, and keeps its lane as it is: no second open goes into the
#      kernel, the timeout stays counted once, the open in flight grows older.
#   2. Thawed: the hung target's probe file is laid out, and it comes up.
#   3. SIGTERM exits 0.
# Skipped where FUSE cannot be mounted (see hangfs.sh).

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"
# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"

require_cmd curl
require_disk "$WORK"
HANGFS_FREEZE_METADATA=1 hangfs_mount
hangfs_said 1 'freezing metadata too' || fail "hangfs does not say it freezes metadata"

hung_config "$WORK/c.yaml" "" "$WORK/ok"
"$IOPULSE" check --config "$WORK/c.yaml" >/dev/null || fail "the test's configuration is invalid"

UP_HUNG='iopulse_target_up{target="hung"}'
UP_OK='iopulse_target_up{target="ok"}'
INFLIGHT='iopulse_target_inflight_seconds{target="hung"}'
TIMEOUTS='iopulse_probe_errors_total{probe="ping",target="hung",reason="timeout"}'
IOS_OK='iopulse_probe_ios_total{probe="ok",target="ok",op="read"}'
IOS_HUNG='iopulse_probe_ios_total{probe="ping",target="hung",op="read"}'

# ---- 1. started frozen ------------------------------------------------------------

kill -USR1 "$HANGFS_PID"
wait_hangfs 60 1 frozen
t0=$(now_ms)
start_daemon "$WORK/c.yaml"
elapsed=$(($(now_ms) - t0))
# Frozen, the stat never returns: a daemon that waited for it would never serve.
# It gives up after 500 ms (logged below); 30 s allows for a loaded machine.
((elapsed <= 30000)) || fail "the daemon took ${elapsed}ms to serve with a hung target"
grep -q "Target 'hung': stat($MNT) did not return within 500 ms" "$DAEMON_LOG" ||
	fail "the daemon does not say it could not compare the hung target"
wait_hangfs 60 1 'getattr blocked'

# stuck_and_ok N [AGE]: the hung target down and in flight for AGE seconds (2),
# its stuck open counted N times, never more, and the other target pinging.
stuck_and_ok() {
	local up_hung up_ok age tmo ios
	scrape_metrics
	sample_into up_hung "$PAGE" "$UP_HUNG"
	sample_into up_ok "$PAGE" "$UP_OK"
	sample_into age "$PAGE" "$INFLIGHT"
	sample_into tmo "$PAGE" "$TIMEOUTS"
	sample_or ios 0 "$PAGE" "$IOS_OK"
	num "$up_hung" '==' 0 || fail "target hung is up while its filesystem hangs"
	num "$tmo" '<=' "$1" || fail "$1 stuck open(s) counted $tmo times as a timeout"
	num "$age" '>=' "${2:-2}" && num "$tmo" '==' "$1" && num "$up_ok" '==' 1 && num "$ios" '>' 5
}
wait_until 60 "hung target in flight for 2s with one timeout, the other pinging" stuck_and_ok 1
grep -q 'in flight for over 1s (timeout), target is stuck' "$DAEMON_LOG" ||
	fail "the daemon does not log the hung target as stuck"
note "started ${elapsed}ms after launch; hung target down, in flight, 1 timeout; the other pings"

# A reload compares the targets again, on the scheduler's thread: it must not
# wait for the hung one either, and the healthy target keeps being pinged.
sample_into ios_before "$PAGE" "$IOS_OK"
sample_into age_before "$PAGE" "$INFLIGHT"
kill -HUP "$DAEMON_PID"
reloaded() { grep -q 'Configuration reloaded' "$DAEMON_LOG"; }
wait_until 60 "'Configuration reloaded' while a target hangs" reloaded
n=$(grep -c "Target 'hung': stat($MNT) did not return within 500 ms" "$DAEMON_LOG")
((n == 2)) || fail "the hung target's stat was given up $n times, want 2 (start, reload)"
ok_pinging() {
	local ios
	scrape_metrics
	sample_into ios "$PAGE" "$IOS_OK"
	num "$ios" '>' "$((${ios_before%.*} + 5))"
}
wait_until 60 "the healthy target pinged after the reload" ok_pinging
sample_into v "$PAGE" 'iopulse_config_last_reload_successful'
num "$v" '==' 1 || fail "iopulse_config_last_reload_successful is $v after reloading during a hang"
# The reload kept the hung target's lane (the same file): the same open is in
# flight, older than before the reload, and still counted once.
wait_until 60 "the kept lane's open in flight 2s longer than before the reload, one timeout" \
	stuck_and_ok 1 "$(awk -v a="$age_before" 'BEGIN { print a + 2 }')"
grep -q 'lane(s) kept as they were' "$DAEMON_LOG" || fail "the reload does not say it kept the lanes"
note "reloaded while the target hangs: its lane kept"

# ---- 2. thawed --------------------------------------------------------------------

kill -USR2 "$HANGFS_PID"
wait_hangfs 60 1 thawed
hung_up() {
	local up ios
	scrape_metrics
	sample_into up "$PAGE" "$UP_HUNG"
	sample_or ios 0 "$PAGE" "$IOS_HUNG"
	num "$up" '==' 1 && num "$ios" '>' 0
}
wait_until 60 "the hung target up and pinged after the thaw" hung_up
[[ -f $BACKING/.iopulse-probe ]] || fail "no probe file in $BACKING after the thaw"
sample_into tmo "$PAGE" "$TIMEOUTS"
# The open coming back counts nothing more. A ping read through FUSE after the
# thaw that took 1s (a loaded machine) is a timeout of its own: allowed, as many
# as the reads of 1s or more (up is 1 on this page: none is still in flight).
sample_into reads "$PAGE" "iopulse_probe_latency_seconds_count{probe=\"ping\",target=\"hung\",op=\"read\"}"
sample_into fast "$PAGE" "iopulse_probe_latency_seconds_bucket{probe=\"ping\",target=\"hung\",op=\"read\",le=\"1.0\"}"
slow=$((${reads%.*} - ${fast%.*}))
{ num "$tmo" '>=' 1 && num "$tmo" '<=' $((1 + slow)); } ||
	fail "$tmo timeouts after the thaw, want still 1 (+ $slow reads of 1s or more)"
note "thawed: the hung target is up"

# ---- 3. stop ------------------------------------------------------------------------

stop_daemon TERM 5
note "pass"
