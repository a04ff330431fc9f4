#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Storage that acknowledges writes and keeps none of them. A verify probe (4
# blocks, all rewritten every second) runs on a directory on hangfs
# (tests/integration/hangfs.c), alone, so its writes are the only ones. Once its
# blocks were written and checked with no mismatch, hangfs drops every write
# while reporting it done (SIGRTMIN+5): the next run must find the blocks it
# wrote and synced still at their older generation, count them as stale (lost
# writes) and log them; no write or fdatasync error may be reported, since
# none was. Writes kept again (SIGRTMIN+6), the blocks are rewritten and found
# right: the count of lost writes stops, and no other kind was ever counted.
#
# Then a verify probe hung opening its own file must be seen as stuck. Its file
# is replaced by a copy (ours all the same: our header, one name), so that the
# run after the one that notices opens it afresh, reading its header at offset
# 0; with reads frozen that read hangs. The open counts as I/O in flight, as
# the lane's own opening of the target does: iopulse_target_inflight_seconds
# grows, the target is reported stuck past the probe's timeout (logged, up 0),
# and thawed, the probe runs again.
#
# Skipped without hangfs, /dev/fuse, or a kernel or container that lets us
# mount FUSE.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"
require_cmd curl cp
require_disk "$WORK"
hangfs_mount

CFG="$WORK/iopulse.yaml"
cat >"$CFG" <<CFGEOF
splay: false
targets:
  - name: fuse
    directory: $(yaml_str "$MNT")
    size: 1MiB
    layout_rate: 0
    max_duty_cycle: 100%
    max_write_per_day: 0
probes:
  - name: v1
    type: verify
    target: fuse
    interval: 1s
    blocks: 4
    blocks_per_run: 4
    timeout: 1s
CFGEOF

start_daemon "$CFG"

STALE='iopulse_verify_mismatches_total{probe="v1",target="fuse",kind="stale"}'
DATA='iopulse_verify_mismatches_total{probe="v1",target="fuse",kind="wrong_data"}'
OFFSET='iopulse_verify_mismatches_total{probe="v1",target="fuse",kind="wrong_offset"}'
CHECKED='iopulse_verify_blocks_checked_total{probe="v1",target="fuse"}'
ERRORS='iopulse_probe_errors_total{probe="v1",target="fuse",reason="io_error"}'

wait_until 60 "8 blocks checked" scraped "$CHECKED" '>=' 8
for s in "$STALE" "$DATA" "$OFFSET"; do
	sample_into v "$PAGE" "$s"
	num "$v" == 0 || fail "$s is $v before writes were dropped"
done

kill -s RTMIN+5 "$HANGFS_PID"
wait_hangfs 60 1 "dropping writes"
# The run after the first one whose writes were dropped sees all four stale.
wait_until 60 "4 lost writes counted" scraped "$STALE" '>=' 4
wait_until 60 "the log to name a lost write" \
	grep -q "Probe v1: block at offset 8192 of $MNT/.iopulse-verify.v1: stale" "$DAEMON_LOG"
sample_into v "$PAGE" "$ERRORS"
num "$v" == 0 || fail "$v I/O errors reported for writes that 'succeeded'"

kill -s RTMIN+6 "$HANGFS_PID"
wait_hangfs 60 1 "keeping writes"
# Run counts are published at the end of each run: 12 more blocks checked
# means a run that started after the change (its writes kept) and the run after
# it (finding them right) have both been published; from then on the count of
# lost writes stays where it is.
sample_into before "$PAGE" "$CHECKED"
wait_until 60 "12 more blocks checked" scraped "$CHECKED" '>=' $((before + 12))
sample_into lost "$PAGE" "$STALE"
sample_into before "$PAGE" "$CHECKED"
wait_until 60 "8 more blocks checked" scraped "$CHECKED" '>=' $((before + 8))
sample_into v "$PAGE" "$STALE"
sample_into d "$PAGE" "$DATA"
sample_into o "$PAGE" "$OFFSET"
note "stale $v, wrong_data $d, wrong_offset $o"
num "$v" == "$lost" || fail "$STALE went on from $lost to $v with writes kept"
num "$d" == 0 || fail "$DATA is $d: dropped writes are stale, not wrong data"
num "$o" == 0 || fail "$OFFSET is $o"

# ---- hung opening its file ------------------------------------------------------

UP='iopulse_target_up{target="fuse"}'
INFLIGHT='iopulse_target_inflight_seconds{target="fuse"}'
VF="$MNT/.iopulse-verify.v1"
HEADER_READ='read blocked (offset 0, size 4096)'

# A block read or write caught by the freeze (a run was in flight; on a busy
# machine one often is) hangs with the file open, not in its opening: thaw and
# try again until the freeze catches the header read of the new file, which
# only an open does.
for ((try = 1; ; try++)); do
	cp -p "$VF" "$VF.copy"
	mv -T "$VF.copy" "$VF"
	kill -USR1 "$HANGFS_PID"
	wait_hangfs 60 "$try" "frozen"
	blocked() { (($(grep -cF "blocked (" "$HANGFS_LOG") >= try)); }
	wait_until 60 "a request of hangfs blocked (try $try)" blocked
	[[ $(grep -F "blocked (" "$HANGFS_LOG" | tail -n 1) == *"hangfs: $HEADER_READ"* ]] && break
	((try < 5)) || fail "five freezes caught a block read or write, never the header read of an open"
	note "try $try caught a block read or write; again"
	kill -USR2 "$HANGFS_PID"
	wait_hangfs 60 "$try" "thawed"
done
note "the verify file's header read is frozen (try $try)"

wait_until 60 "$INFLIGHT to pass the 1s timeout" scraped "$INFLIGHT" '>' 1
sample_into v "$PAGE" "$UP"
num "$v" == 0 || fail "$UP is $v while the verify probe's open hangs past its timeout"
wait_until 60 "the log to say the target is stuck" \
	grep -q "Probe v1: I/O on target fuse in flight for over 1s (timeout), target is stuck" \
	"$DAEMON_LOG"
note "stuck opening its file: in flight, up 0, logged"

kill -USR2 "$HANGFS_PID"
wait_hangfs 60 "$try" "thawed"
sample_into before "$PAGE" "$CHECKED"
wait_until 60 "blocks checked again after the thaw" scraped "$CHECKED" '>' "$before"
wait_until 60 "$UP 1 after the thaw" scraped "$UP" == 1
stop_daemon
