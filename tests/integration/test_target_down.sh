#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A target that cannot be opened is reported down, not fatal: the daemon serves,
# iopulse_target_up is 0, due pings count as target_down errors, the log says what
# is wrong once (not once per ping), and nothing is created anywhere. When the
# cause goes away the target comes up by itself.
#   A. the directory does not exist yet (and iopulse must not create it);
#   B. the directory is immutable (chattr +i; as root, permissions would not stop
#      us). Skipped, with a message, where chattr +i is not possible.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

require_cmd curl stat
require_disk "$WORK"

# write_config FILE DIR
write_config() {
	cat >"$1" <<EOF
targets:
  - name: t1
    directory: $(yaml_str "$2")
    size: 1MiB
probes:
  - name: p1
    type: ping
    target: t1
    op: read
    interval: 100ms
  - name: w1
    type: ping
    target: t1
    op: write
    interval: 100ms
EOF
}

READ='{probe="p1",target="t1",op="read"}'

target_up_is() {
	local v
	scrape_metrics
	sample "$PAGE" 'iopulse_target_up{target="t1"}' >/dev/null || return 1
	sample_into v "$PAGE" 'iopulse_target_up{target="t1"}'
	num "$v" '==' "$1"
}

# require_down WHAT: the target is down and nothing was measured on it.
require_down() {
	local v
	scrape_metrics
	sample_into v "$PAGE" 'iopulse_target_up{target="t1"}'
	num "$v" '==' 0 || fail "iopulse_target_up{target=\"t1\"} is $v with $1"
	sample_or v 0 "$PAGE" "iopulse_probe_ios_total$READ"
	num "$v" "==" 0 || fail "$v reads counted with $1"
	sample_or v 0 "$PAGE" 'iopulse_probe_ios_total{probe="w1",target="t1",op="write"}'
	num "$v" "==" 0 || fail "$v writes counted with $1"
	sample_into v "$PAGE" 'iopulse_probe_errors_total{probe="p1",target="t1",reason="target_down"}'
	num "$v" '>' 0 || fail "no target_down errors counted for p1 with $1"
	note "with $1: target_up 0, $v target_down errors for p1"
}

IOS0=0
reads_grow() {
	local v
	scrape_metrics
	sample_or v 0 "$PAGE" "iopulse_probe_ios_total$READ"
	num "$v" '>' "$IOS0"
}

# require_comes_up WHAT DIR: within 10s the target is up and reads grow, and DIR
# holds the laid-out probe file.
require_comes_up() {
	local size
	wait_until 10 "iopulse_target_up{target=\"t1\"} 1 after $1" target_up_is 1
	IOS0=0
	wait_until 5 "reads counted after $1" reads_grow
	sample_into IOS0 "$PAGE" "iopulse_probe_ios_total$READ"
	wait_until 5 "reads growing after $1 (from $IOS0)" reads_grow
	[[ -f $2/.iopulse-probe ]] || fail "no probe file in $2 after $1"
	size=$(stat -c %s "$2/.iopulse-probe")
	((size == 4096 + (1 << 20))) || fail "probe file in $2 is $size bytes after $1"
	note "after $1: target up, reads growing"
}

# ---- A. the directory does not exist ----------------------------------------

PARENT="$WORK/parent"
MISSING="$PARENT/missing"
mkdir "$PARENT"
touch -d '2020-02-02 02:02:02' "$PARENT"
parent_state() {
	stat -c '%y %h' "$PARENT"
	ls -A "$PARENT"
}
PARENT_BEFORE=$(parent_state)
write_config "$WORK/missing.yaml" "$MISSING"

start_daemon "$WORK/missing.yaml"
t0=$(now_ms)
wait_until 5 "iopulse_target_up{target=\"t1\"} 0 for a missing directory" target_up_is 0
# ~2s of 100ms pings (~20 per probe) against the missing directory.
sleep "$(awk -v ms=$((2000 - ($(now_ms) - t0))) 'BEGIN { print (ms > 0 ? ms : 0) / 1000 }')"
require_alive
require_down "a missing directory"

mentions=$(grep -cF -- "$MISSING" "$DAEMON_LOG" || true)
((mentions == 1)) || fail "the log mentions $MISSING $mentions times over ~2s of pings, want exactly once:"$'\n'"$(grep -F -- "$MISSING" "$DAEMON_LOG" | head -n 20 || true)"
note "log: $(grep -F -- "$MISSING" "$DAEMON_LOG")"

[[ ! -e $MISSING ]] || fail "iopulse created the missing directory $MISSING"
PARENT_AFTER=$(parent_state)
[[ $PARENT_AFTER == "$PARENT_BEFORE" ]] ||
	fail "the parent of the missing directory changed:"$'\n'"before: $PARENT_BEFORE"$'\n'"after:  $PARENT_AFTER"

mkdir "$MISSING"
require_comes_up "mkdir $MISSING" "$MISSING"
stop_daemon TERM 5

# ---- B. the directory is immutable --------------------------------------------

IMM="$WORK/immutable"
mkdir "$IMM"
unfreeze() {
	chattr -i "$IMM" 2>/dev/null || true
}
on_exit unfreeze # before trying: chattr -i must run whatever happens next

if ! msg=$(chattr +i "$IMM" 2>&1); then
	note "SKIP part B: chattr +i not possible here: $msg"
	note "pass (part A only)"
	exit 0
fi
if touch "$IMM/x" 2>/dev/null; then
	rm -f "$IMM/x"
	unfreeze
	note "SKIP part B: chattr +i did not make $IMM read-only"
	note "pass (part A only)"
	exit 0
fi

write_config "$WORK/immutable.yaml" "$IMM"
start_daemon "$WORK/immutable.yaml"
t0=$(now_ms)
wait_until 5 "iopulse_target_up{target=\"t1\"} 0 for an immutable directory" target_up_is 0
sleep "$(awk -v ms=$((2000 - ($(now_ms) - t0))) 'BEGIN { print (ms > 0 ? ms : 0) / 1000 }')"
require_alive
require_down "an immutable directory"
left=$(ls -A "$IMM")
[[ -z $left ]] || fail "files left in the immutable directory: $left"

unfreeze
require_comes_up "chattr -i $IMM" "$IMM"
stop_daemon TERM 5
note "pass"
