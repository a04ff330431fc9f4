#!/bin/bash
# SPDX-License-Identifier: MIT
#
# One event, one line: a target that goes away is logged "is down" once, with one
# reason, however the checks and the attempts to open it again fail afterwards
# (with other messages), and "is up again" once when it comes back. Nothing else
# is logged about it in between.
#   A. the target's filesystem is unmounted (a tmpfs mounted on the target
#      directory, lazily unmounted under the open probe file): the check finds the
#      directory on another filesystem, the re-opens refuse to create a probe file
#      on the one underneath. It stays down (a new mount is another filesystem).
#   B. the target directory is moved away, then back;
#   C. the target directory is removed, then made again: another directory
#      (iopulse pins the directory's identity and may keep the target down).

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

require_cmd curl mount umount
require_disk "$WORK"

MNT="$WORK/mnt"
DIR="$WORK/disk"
mkdir "$MNT" "$DIR"
mount_tmpfs "$MNT" 16m

CFG="$WORK/down.yaml"
cat >"$CFG" <<EOF
targets:
  - name: t1
    directory: $(yaml_str "$MNT")
    max_duty_cycle: 100%
    max_write_per_day: 0
    size: 1MiB
    allow_memory_backed: true
  - name: t2
    directory: $(yaml_str "$DIR")
    max_duty_cycle: 100%
    max_write_per_day: 0
    size: 1MiB
probes:
  - name: p1
    type: ping
    target: t1
    op: read
    interval: 100ms
  - name: p2
    type: ping
    target: t2
    op: read
    interval: 100ms
EOF
start_daemon "$CFG"
wait_until 60 "t1 up" scraped 'iopulse_target_up{target="t1"}' == 1
wait_until 60 "t2 up" scraped 'iopulse_target_up{target="t2"}' == 1

# about TARGET FROM: the daemon's lines about TARGET after its first FROM lines,
# debug lines left out (the daemon runs at debug level here; the rule is about
# what an operator sees).
about() {
	tail -n "+$(($2 + 1))" "$DAEMON_LOG" | grep -v ' debug: ' | grep -F "Target $1" || true
}
# down_for PROBE TARGET N: wait until PROBE has counted N more target_down errors
# (N pings against the target while it is down).
down_for() {
	local v s="iopulse_probe_errors_total{probe=\"$1\",target=\"$2\",reason=\"target_down\"}"
	scrape_metrics
	sample_or v 0 "$PAGE" "$s"
	wait_until 60 "$3 target_down errors for $1" scraped "$s" '>=' "$(awk -v a="$v" -v n="$3" 'BEGIN { print a + n }')"
}

# ---- A. unmounted -------------------------------------------------------------

L=$(wc -l <"$DAEMON_LOG")
umount -l "$MNT"
wait_until 60 "t1 down after the unmount" scraped 'iopulse_target_up{target="t1"}' == 0
down_for p1 t1 20 # ~2 s of pings, each checking or re-opening the target
lines=$(about t1 "$L")
n=$(grep -c . <<<"$lines" || true)
((n == 1)) || fail "A: $n lines about t1 after the unmount, want one:"$'\n'"$lines"
grep -q 'error: Target t1 is down: .*unmounted' <<<"$lines" ||
	fail "A: the line does not say t1 is down, or why:"$'\n'"$lines"
[[ ! -e $MNT/.iopulse-probe ]] || fail "A: a probe file was created under the unmounted filesystem"
note "A: $lines"

# ---- B. moved away and back --------------------------------------------------

L=$(wc -l <"$DAEMON_LOG")
mv "$DIR" "$DIR.away"
wait_until 60 "t2 down after the move" scraped 'iopulse_target_up{target="t2"}' == 0
down_for p2 t2 20
mv "$DIR.away" "$DIR"
wait_until 60 "t2 up again after moving it back" scraped 'iopulse_target_up{target="t2"}' == 1
lines=$(about t2 "$L")
n=$(grep -c . <<<"$lines" || true)
((n == 2)) || fail "B: $n lines about t2 for its move and return, want two:"$'\n'"$lines"
grep -q 'error: Target t2 is down: ' <<<"$lines" || fail "B: no 'is down' line:"$'\n'"$lines"
grep -q 'notice: Target t2 is up again' <<<"$lines" || fail "B: no 'is up again' line:"$'\n'"$lines"
note "B: $lines"

# ---- C. removed, made again ----------------------------------------------------

# The new directory is another one: whether iopulse takes it or keeps the target
# down (it pins the directory's identity), the removal is one "is down" line.
L=$(wc -l <"$DAEMON_LOG")
rm -rf "$DIR"
wait_until 60 "t2 down after rm -rf" scraped 'iopulse_target_up{target="t2"}' == 0
down_for p2 t2 20
mkdir "$DIR"
scrape_metrics
sample_into runs "$PAGE" 'iopulse_probe_runs_total{probe="p2",target="t2"}'
wait_until 60 "20 more runs of p2" scraped 'iopulse_probe_runs_total{probe="p2",target="t2"}' '>=' "$(awk -v a="$runs" 'BEGIN { print a + 20 }')"
lines=$(about t2 "$L")
n=$(grep -c 'is down' <<<"$lines" || true)
((n == 1)) || fail "C: $n 'is down' lines about t2 for its removal, want one:"$'\n'"$lines"
n=$(grep -vc 'is up again' <<<"$lines" || true)
((n == 1)) || fail "C: $n lines about t2 for its removal besides 'is up again', want one:"$'\n'"$lines"
note "C: $lines"

# t1 is still down and still said once.
lines=$(about t1 0)
n=$(grep -c 'Target t1 is down' <<<"$lines" || true)
((n == 1)) || fail "t1: $n 'is down' lines in all, want one:"$'\n'"$lines"
require_alive
stop_daemon TERM 5
note "pass"
