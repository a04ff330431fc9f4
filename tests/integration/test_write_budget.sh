#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The daily write budget in the daemon: a write burst stops where its writes
# reach it, and a verify probe goes on checking once it is spent.
#
# Target t1 (max_write_per_day 1GiB) has verify probe v1 (4 blocks of 4KiB, all
# rewritten every 2s) and write burst b1 (4KiB random writes for 60s once an
# hour, on the null engine: it writes as fast as a burst can, and to no disk).
# With an expected_latency of 1s the schedule projects 866MiB a day, within
# the budget; the null engine does far more. v1 runs first (unsplayed, in the
# file's order) and writes all its blocks; then b1 must stop where the day's
# writes reach the budget, exactly (4KiB writes, and every count a multiple of
# 4KiB), long before its 60s, counted in iopulse_probe_budget_cut_total and
# without an error. From then on every run of v1 still reads and checks its
# blocks, cut short of its writes (counted as well): a block the test
# overwrites in v1's file is counted as wrong_data, while v1 writes nothing
# (its write bytes and the day's writes stand still, the file does not
# change).

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

require_cmd curl dd cmp
require_disk "$WORK"

DIR="$WORK/target"
VF="$DIR/.iopulse-verify.v1"
CFG="$WORK/iopulse.yaml"
BUDGET=1073741824
mkdir "$DIR"
cat >"$CFG" <<EOF
splay: false
targets:
  - name: t1
    directory: $(yaml_str "$DIR")
    size: 1MiB
    layout_rate: 0
    max_duty_cycle: 100%
    max_write_per_day: 1GiB
    expected_latency: 1s
probes:
  - name: v1
    type: verify
    target: t1
    interval: 2s
    blocks: 4
    blocks_per_run: 4
  - name: b1
    type: burst
    target: t1
    rw: randwrite
    engine: null
    iodepth: 4
    duration: 60s
    every: 1h
EOF
"$IOPULSE" check --config "$CFG" >"$WORK/check.out" 2>&1 ||
	fail "the schedule is refused:"$'\n'"$(cat "$WORK/check.out")"

start_daemon "$CFG"

# add A B: A + B, as integers (the page may write large ones as 1.07e+09).
add() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", a + b }'
}

CUT_B='iopulse_probe_budget_cut_total{probe="b1",target="t1"}'
CUT_V='iopulse_probe_budget_cut_total{probe="v1",target="t1"}'
TODAY='iopulse_target_written_today_bytes{target="t1"}'
V_WRITE='iopulse_probe_bytes_total{probe="v1",target="t1",op="write"}'
B_WRITE='iopulse_probe_bytes_total{probe="b1",target="t1",op="write"}'
CHECKED='iopulse_verify_blocks_checked_total{probe="v1",target="t1"}'
WRONG='iopulse_verify_mismatches_total{probe="v1",target="t1",kind="wrong_data"}'

# ---- the burst stops at the budget --------------------------------------------

wait_until 120 "burst b1 stopped at the budget" scraped "$CUT_B" '>=' 1
sample_into today "$PAGE" "$TODAY"
sample_into b_write "$PAGE" "$B_WRITE"
sample_into v_write "$PAGE" "$V_WRITE"
note "b1 wrote $b_write bytes, v1 $v_write; the day's writes are $today of $BUDGET"
num "$today" == "$BUDGET" || fail "the day's writes are $today, want exactly the budget $BUDGET"
num "$b_write" '>' 0 || fail "b1 wrote nothing"
num "$(add "$b_write" "$v_write")" == "$today" ||
	fail "b1 ($b_write) and v1 ($v_write) do not add up to the day's writes ($today)"
for reason in io_error short_io timeout target_down setup; do
	sample_into e "$PAGE" "iopulse_probe_errors_total{probe=\"b1\",target=\"t1\",reason=\"$reason\"}"
	num "$e" == 0 || fail "b1 counted $e errors of reason $reason"
done
wait_until 60 "the spent budget to be logged" grep -q \
	"Target t1: the probes wrote its max_write_per_day (1GiB) today: .*verify probes check their blocks without rewriting them" \
	"$DAEMON_LOG"

# ---- the verify probe goes on checking, and writes nothing ------------------

# A run of v1 after the burst: cut short, all four blocks checked.
wait_until 30 "a run of v1 cut short by the budget" scraped "$CUT_V" '>=' 1
sample_into checked "$PAGE" "$CHECKED"
wait_until 30 "v1 to check its blocks again" scraped "$CHECKED" '>=' "$(add "$checked" 4)"
sample_into v_write "$PAGE" "$V_WRITE"
sample_into wrong "$PAGE" "$WRONG"
num "$wrong" == 0 || fail "v1 found $wrong wrong blocks before any corruption"
has_series "$PAGE" 'iopulse_probe_skipped_total{probe="v1",target="t1",reason="budget"}' &&
	fail "v1 has a skipped series for the budget: a verify probe is never skipped for it"

# Block 2 (after the file's 4KiB header and 4KiB state) overwritten whole.
dd if=/dev/urandom of="$VF" bs=4096 seek=4 count=1 oflag=direct conv=notrunc,fsync status=none
cp "$VF" "$WORK/corrupted"
wait_until 60 "v1 to count the overwritten block" scraped "$WRONG" '>=' 1
wait_until 60 "the log to name the block" \
	grep -q "Probe v1: block at offset 16384 of $VF: wrong data" "$DAEMON_LOG"
# One more run: still nothing written.
sample_into checked "$PAGE" "$CHECKED"
wait_until 30 "v1 to check its blocks again" scraped "$CHECKED" '>=' "$(add "$checked" 3)"
sample_into v_write2 "$PAGE" "$V_WRITE"
sample_into today2 "$PAGE" "$TODAY"
num "$v_write2" == "$v_write" || fail "v1 wrote $(add "$v_write2" "-$v_write") bytes once the budget was spent"
num "$today2" == "$BUDGET" || fail "the day's writes moved on to $today2 past the budget $BUDGET"
cmp -s "$VF" "$WORK/corrupted" || fail "v1's file changed once the budget was spent"
note "the overwritten block was counted; v1 wrote nothing past the budget"

stop_daemon
