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

# write_config FILE DIR: DIR (not created here) as t1, a read and a write ping.
write_config() {
	target_config "$1" "$2" 1MiB
	ping_item "$1" p1 read "interval: 100ms"
	ping_item "$1" w1 write "interval: 100ms"
}

UP='iopulse_target_up{target="t1"}'
READS='iopulse_probe_ios_total{probe="p1",target="t1",op="read"}'

# require_down WHAT: the target is down and nothing was measured on it.
require_down() {
	local v
	scrape_metrics
	sample_into v "$PAGE" "$UP"
	num "$v" '==' 0 || fail "$UP is $v with $1"
	sample_or v 0 "$PAGE" "$READS"
	num "$v" "==" 0 || fail "$v reads counted with $1"
	sample_or v 0 "$PAGE" 'iopulse_probe_ios_total{probe="w1",target="t1",op="write"}'
	num "$v" "==" 0 || fail "$v writes counted with $1"
	sample_into v "$PAGE" 'iopulse_probe_errors_total{probe="p1",target="t1",reason="target_down"}'
	num "$v" '>' 0 || fail "no target_down errors counted for p1 with $1"
	note "with $1: target_up 0, $v target_down errors for p1"
}

# start_down CONFIG WHAT: start the daemon on CONFIG, whose target is down for WHAT;
# after 20 of p1's 100ms pings against it (counted by the daemon: a loaded
# machine runs fewer in a given time), require_down WHAT.
start_down() {
	start_daemon "$1"
	wait_until 60 "$UP 0 for $2" scraped "$UP" == 0
	wait_until 60 "20 pings of p1 against the target down for $2" \
		scraped 'iopulse_probe_errors_total{probe="p1",target="t1",reason="target_down"}' '>=' 20
	require_alive
	require_down "$2"
}

# require_comes_up WHAT DIR: within 10s the target is up and reads grow, and DIR
# holds the laid-out probe file.
require_comes_up() {
	local ios size
	wait_until 60 "$UP 1 after $1" scraped "$UP" == 1
	wait_until 60 "reads counted after $1" scraped "$READS" '>' 0 0
	sample_into ios "$PAGE" "$READS"
	wait_until 60 "reads growing after $1 (from $ios)" scraped "$READS" '>' "$ios" 0
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
start_down "$WORK/missing.yaml" "a missing directory"

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

# skip_b WHY: part B cannot run here; part A passed.
skip_b() {
	note "SKIP part B: $*"
	note "pass (part A only)"
	exit 0
}
if ! msg=$(chattr +i "$IMM" 2>&1); then
	skip_b "chattr +i not possible here: $msg"
fi
if touch "$IMM/x" 2>/dev/null; then
	rm -f "$IMM/x"
	unfreeze
	skip_b "chattr +i did not make $IMM read-only"
fi

write_config "$WORK/immutable.yaml" "$IMM"
start_down "$WORK/immutable.yaml" "an immutable directory"
left=$(ls -A "$IMM")
[[ -z $left ]] || fail "files left in the immutable directory: $left"

unfreeze
require_comes_up "chattr -i $IMM" "$IMM"
stop_daemon TERM 5
note "pass"
