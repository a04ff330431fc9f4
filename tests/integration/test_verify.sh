#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A verify probe catches storage that corrupts, misplaces or loses writes. The
# daemon runs verify probe v1 (4 blocks of 4KiB, one rewritten per run, every
# second) on a directory target that a 100ms write ping shares. Once every
# block has been written and checked with no mismatch (all three kinds exported
# as 0 from the start), the test changes the probe's file behind iopulse's back,
# one way at a time, and each time the counter of that kind must move and the
# log name the block's offset:
#   wrong_data    block 1's payload overwritten           (offset 12288)
#   wrong_offset  block 3's contents copied onto block 2  (offset 16384)
#   stale         block 0 put back as it was before its last rewrite (offset 8192)
# (the blocks follow the file's 4096-byte header and its 4096-byte state).
# A change can land while the daemon rewrites that very block, which writes it
# over unseen; each is therefore tried up to three times. Then the file is
# replaced by a copy of itself: one run fails, counted as target_down (not
# setup) and logged once in plain words, and the next starts over. Last, a
# write lost while the daemon was down: block 0 saved, rewritten, the daemon
# stopped, the saved copy put back; the restarted daemon, which has only the
# file's saved state to go by, counts it stale.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl dd od head cp
require_disk "$WORK"

DIR="$WORK/target"
CFG="$WORK/iopulse.yaml"
VF="$DIR/.iopulse-verify.v1"
BS=4096
ping_config "$CFG" "$DIR" 1MiB write "layout_rate: 0"
cat >>"$CFG" <<CFGEOF
  - name: v1
    type: verify
    target: t1
    interval: 1s
    blocks: 4
    blocks_per_run: 1
CFGEOF

start_daemon "$CFG"

series() {
	echo "iopulse_verify_mismatches_total{probe=\"v1\",target=\"t1\",kind=\"$1\"}"
}
CHECKED='iopulse_verify_blocks_checked_total{probe="v1",target="t1"}'

scrape_metrics
for k in wrong_data wrong_offset stale; do
	has_series "$PAGE" "$(series "$k")" || fail "no $(series "$k") at start:"$'\n'"$(cat "$PAGE")"
done
has_series "$PAGE" "$CHECKED" || fail "no $CHECKED at start"

# Four runs write every block once; the fifth and later check all four.
wait_until 60 "8 blocks checked" scraped "$CHECKED" '>=' 8
for k in wrong_data wrong_offset stale; do
	sample_into v "$PAGE" "$(series "$k")"
	num "$v" == 0 || fail "$k is $v before any corruption"
done
[[ -f $DIR/.iopulse-probe ]] || fail "no probe file beside the verify file"

# read_block I FILE / write_block I FILE: block I of the verify file (after its
# header and its state, 4096 bytes each), with O_DIRECT, as the daemon reads it.
read_block() {
	dd if="$VF" of="$2" bs=$BS skip=$((2 + $1)) count=1 iflag=direct status=none
}
write_block() {
	dd if="$2" of="$VF" bs=$BS seek=$((2 + $1)) count=1 oflag=direct conv=notrunc,fsync status=none
}
# gen_into VAR I: the generation block I carries (header bytes 24..31).
gen_into() {
	read_block "$2" "$WORK/gen.bin"
	printf -v "$1" '%s' "$(od -An -t u8 -j 24 -N 8 "$WORK/gen.bin" | tr -d ' ')"
}

# counted KIND N: the counter of KIND is at least N.
counted() {
	scraped "$(series "$1")" '>=' "$2"
}

# expect KIND OFFSET TEXT ACTION: run ACTION until the counter of KIND moves
# (up to three times, 6s each), then the log must name OFFSET and TEXT.
expect() {
	local kind=$1 offset=$2 text=$3 action=$4 try deadline
	for try in 1 2 3; do
		"$action"
		deadline=$(($(now_ms) + 6000))
		while (($(now_ms) < deadline)); do
			if counted "$kind" 1; then
				note "$kind counted after try $try"
				wait_until 60 "the log to name offset $offset" \
					grep -q "block at offset $offset of $VF: $text" "$DAEMON_LOG"
				return 0
			fi
			require_alive
			sleep 0.2
		done
	done
	fail "$kind not counted after 3 tries:"$'\n'"$(cat "$PAGE")"
}

corrupt_payload() {
	read_block 1 "$WORK/b1.bin"
	head -c 64 /dev/urandom | dd of="$WORK/b1.bin" bs=1 seek=2048 conv=notrunc status=none
	write_block 1 "$WORK/b1.bin"
}
expect wrong_data 12288 "wrong data" corrupt_payload

misdirect() {
	read_block 3 "$WORK/b3.bin"
	write_block 2 "$WORK/b3.bin"
}
expect wrong_offset 16384 "wrong offset" misdirect

# Saves block 0 in b0.bin and waits until the daemon has written a newer
# generation of it.
save_until_rewritten() {
	local g0 g
	read_block 0 "$WORK/b0.bin"
	gen_into g0 0
	gen_into g 0
	local deadline=$(($(now_ms) + 10000))
	while ((g <= g0)); do
		(($(now_ms) < deadline)) || fail "block 0 was not rewritten within 10s (generation $g0)"
		sleep 0.1
		gen_into g 0
	done
}
# ...then puts the saved one back: the newer write is lost.
lose_write() {
	save_until_rewritten
	write_block 0 "$WORK/b0.bin"
}
expect stale 8192 "stale" lose_write

# The file replaced under the probe (by a copy of itself: another inode): one
# run fails, counted as target_down and logged once in plain words; the next
# starts over on it.
DOWN='iopulse_probe_errors_total{probe="v1",target="t1",reason="target_down"}'
SETUP='iopulse_probe_errors_total{probe="v1",target="t1",reason="setup"}'
cp -p "$VF" "$VF.copy"
mv -T "$VF.copy" "$VF"
wait_until 60 "$DOWN counted for the replaced file" scraped "$DOWN" '>' 0
line=$(grep -F "Probe v1: $VF" "$DAEMON_LOG" | grep -v "block at offset" || true)
[[ $line == *"Probe v1: $VF was replaced or removed; starting over with a new one" ]] ||
	fail "the log says of the replaced file: '$line'"
sample_into v "$PAGE" "$SETUP"
num "$v" == 0 || fail "$SETUP is $v: a replaced file is not a setup error"
sample_into before "$PAGE" "$CHECKED"
wait_until 60 "blocks checked again" scraped "$CHECKED" '>' "$before"
note "replaced: target_down once, said once, started over"

# ---- a write lost across a restart --------------------------------------------
# Block 0 rewritten, and two more runs published after (so the run that
# rewrote it has saved the state); then the rewrite is lost while the daemon is
# down.
save_until_rewritten
sample_into before "$PAGE" "$CHECKED"
wait_until 60 "two more runs" scraped "$CHECKED" '>=' $((before + 8))
stop_daemon
write_block 0 "$WORK/b0.bin"
start_daemon "$CFG"
wait_until 60 "stale counted after the restart" counted stale 1
wait_until 60 "the log to name offset 8192" \
	grep -q "block at offset 8192 of $VF: stale" "$DAEMON_LOG"
for k in wrong_data wrong_offset; do
	sample_into v "$PAGE" "$(series "$k")"
	num "$v" == 0 || fail "$k is $v after the restart"
done
note "a write lost across a restart: stale"

stop_daemon
