#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `iopulse check` never hangs on a hung target. Three targets on hangfs — a
# directory with its probe file laid out, a file, a device (a loop device over
# a file on hangfs) — beside a healthy directory and a missing one; hangfs
# frozen twice:
#   1. data only (reads block; stat and open answer): the directory's
#      probe-file header cannot be read, so the directory is stuck; the file
#      answers (check never reads a file target's data) and passes;
#   2. metadata too (HANGFS_FREEZE_METADATA=1, a dead NFS server): the path
#      walks block, so the directory and the file are stuck.
# The device's reads hang both times (a dd of it waits until the thaw), but
# check never opens a device and its path is under /dev: it answers and passes.
# Each time check returns (under a ceiling that only catches a hang), exits 75,
# says "file:line:col: target 'NAME' (PATH): stuck: ... did not answer within
# T" for each hung target and for no other, still reports the missing target,
# and says nothing of the healthy one. The deadlines are generous, for a loaded
# machine where the healthy targets must answer within them: 20s in phase 1,
# the default (10s) in phase 2. Thawed, check passes again. Skipped where FUSE
# or loop devices are missing.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd losetup timeout
require_disk "$WORK"

# A loop device over a file on hangfs holds the mount: detached before
# hangfs.sh's hook (registered when it is sourced) unmounts.
detach_loops() {
	local d
	for d in "${LOOPS[@]}"; do
		detach_loop "$d"
	done
}
on_exit detach_loops

# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"

CONFIG="$WORK/c.yaml"
CHECK_CEILING=60 # a check that takes longer (20s at most, then exit) hangs

# target NAME: the kind (KIND) and path (TPATH) of target NAME.
target() {
	case $1 in
	dir) KIND=directory TPATH=$MNT/d ;;
	file) KIND=file TPATH=$MNT/f ;;
	dev) KIND=device TPATH=$LOOP ;;
	ok) KIND=directory TPATH=$WORK/ok ;;
	gone) KIND=directory TPATH=$WORK/gone ;;
	esac
}

# config FILE: the schedule, a read ping on each target (the directory's uses
# the probe file, so check reads its header).
config() {
	local name
	{
		echo "targets:"
		for name in dir file dev ok gone; do
			target "$name"
			printf '  - name: %s\n    %s: %s\n    max_duty_cycle: 100%%\n' \
				"$name" "$KIND" "$(yaml_str "$TPATH")"
			[[ $KIND != directory ]] || printf '    size: 1MiB\n    max_write_per_day: 0\n'
		done
		echo "probes:"
		for name in dir file dev ok gone; do
			printf '  - name: %s-read\n    type: ping\n    target: %s\n    op: read\n' \
				"$name" "$name"
		done
	} >"$1"
}

# run_check NAME [ARGS...]: iopulse check --quiet --config $CONFIG ARGS; its
# stderr in $WORK/NAME.err, its status in RC. Fails when it does not return
# within CHECK_CEILING seconds.
run_check() {
	local name=$1
	shift
	RC=0
	ERR="$WORK/$name.err"
	DAEMON_LOGS+=("$ERR")
	timeout "$CHECK_CEILING" "$IOPULSE" check --quiet --config "$CONFIG" "$@" \
		>"$WORK/$name.out" 2>"$ERR" </dev/null || RC=$?
	((RC != 124)) || fail "iopulse check ($name) did not return within ${CHECK_CEILING}s"
}

# line_of NAME: where target NAME's mapping starts in $CONFIG: its line, and
# column 5 (after "  - ").
line_of() {
	local n
	n=$(grep -n -- "- name: $1\$" "$CONFIG" | head -n 1 | cut -d: -f1)
	echo "$n:5"
}

# expect_stuck WITHIN HUNG...: $ERR says each HUNG target is stuck (the exact
# message), the missing one does not exist, and nothing else; RC is 75.
expect_stuck() {
	local within=$1 name want n
	shift
	((RC == 75)) || fail "iopulse check: status $RC with hung targets, want 75 (EX_TEMPFAIL)"
	for name in "$@"; do
		target "$name"
		want="$CONFIG:$(line_of "$name"): target '$name' ($TPATH): stuck: the $KIND did not"
		want+=" answer within $within (a hung filesystem or disk?)"
		grep -qxF -- "$want" "$ERR" || fail "iopulse check does not say: $want"
	done
	want="$CONFIG:$(line_of gone): target 'gone': directory '$WORK/gone' does not exist"
	want+=" (iopulse never creates it)"
	grep -qxF -- "$want" "$ERR" || fail "iopulse check no longer reports the missing target"
	n=$(wc -l <"$ERR")
	((n == $# + 1)) || fail "iopulse check said $n lines, want $(($# + 1)) (no word of the others)"
	! grep -q "target 'ok'" "$ERR" || fail "iopulse check reports the healthy target"
}

# setup: on a fresh hangfs mount, the targets: the directory's probe file laid
# out by `iopulse probe`, a file, a loop device over a file on hangfs.
setup() {
	mkdir -p "$BACKING/d" "$WORK/ok"
	head -c 1048576 /dev/urandom >"$BACKING/f"
	head -c 1048576 /dev/urandom >"$BACKING/disk.img"
	attach_loop "$MNT/disk.img"
	config "$CONFIG"
	"$IOPULSE" probe --config "$CONFIG" -c 1 dir-read >"$WORK/probe.out" 2>&1 ||
		fail "iopulse probe could not lay out the probe file: $(cat "$WORK/probe.out")"
	[[ -f $BACKING/d/.iopulse-probe ]] || fail "no probe file in $BACKING/d"
	# Thawed, only the missing target is reported: the others are fine.
	run_check thawed-before
	((RC == 66)) || fail "iopulse check before the freeze: status $RC, want 66: $(cat "$ERR")"
	(($(wc -l <"$ERR") == 1)) || fail "iopulse check before the freeze says more than the missing target"
}

# freeze: freeze hangfs, and start a direct read of the device that blocks
# (hangfs logs it) until the thaw: the device hangs too.
freeze() {
	local blocked
	blocked=$(grep -c 'hangfs: read blocked' "$HANGFS_LOG" || true)
	kill -USR1 "$HANGFS_PID"
	wait_hangfs 60 1 frozen
	dd if="$LOOP" of=/dev/null bs=4096 count=1 iflag=direct status=none &
	DD_PID=$!
	DAEMON_PIDS+=("$DD_PID") # stopped at exit, after the thaw
	wait_hangfs 60 $((blocked + 1)) 'read blocked'
}

# thaw_passes NAME: thawed, and the missing directory made, check passes.
thaw_passes() {
	kill -USR2 "$HANGFS_PID"
	wait_hangfs 60 1 thawed
	wait "$DD_PID" || fail "the read of the device failed after the thaw"
	_forget_pid "$DD_PID"
	mkdir "$WORK/gone"
	run_check "$1"
	((RC == 0)) || fail "iopulse check after the thaw: status $RC, want 0: $(cat "$ERR")"
	[[ ! -s $ERR ]] || fail "iopulse check after the thaw says: $(cat "$ERR")"
	rmdir "$WORK/gone"
}

# teardown: the loop device detached, hangfs unmounted (a hung request of the
# check's, killed with it, is gone).
teardown() {
	detach_loops
	hangfs_cleanup
	rm -rf "${BACKING:?}"/* "$WORK/ok"
}

# ---- 1. data frozen -----------------------------------------------------------------

hangfs_mount
setup
freeze
run_check data-frozen --timeout 20s
expect_stuck 20s dir
# The check did reach the frozen read (the dd's was the first), and its helper,
# killed when it exited, gave up.
hangfs_said 2 'read blocked' || fail "hangfs saw no read of the check's blocked"
wait_hangfs 60 1 'read interrupted'
note "data frozen: check returned with status 75, the directory stuck, the device not"
thaw_passes data-thawed
teardown

# ---- 2. metadata frozen too -----------------------------------------------------------

HANGFS_FREEZE_METADATA=1 hangfs_mount
setup
freeze
run_check meta-frozen
expect_stuck 10s dir file
hangfs_said 1 'getattr blocked' || fail "hangfs saw no getattr blocked"
note "metadata frozen: check returned with status 75, the directory and the file stuck"
thaw_passes meta-thawed
teardown
note "pass"
