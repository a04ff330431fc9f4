#!/bin/bash
# SPDX-License-Identifier: MIT
#
# 'warmup_after' on real directories (iopulse.yaml(5)):
#   - cold: the only probe of its target, every 200ms with 'warmup_after:
#     50ms': every ping finds the target idle, so each makes a warm-up read
#     first, counted in iopulse_probe_warmup_ios_total and absent from the
#     latency histogram.
#   - warm: a write+fdatasync ping every 1s with 'warmup_after: 500ms', beside
#     another ping on its target every 100ms: its own runs are further apart
#     than 500ms, but the other ping's I/O keeps the target awake, so at most
#     the first run after start (nothing before it) warms up, a write and its
#     fdatasync; were only its own I/O counted, every run would.
#   - plain: that other ping, without 'warmup_after': no warm-up series.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

require_cmd curl
require_disk "$WORK"

# Two daemons, one after the other: the schedules are lib.sh's (target t1).
COLD='probe="cold",target="t1",op="read"'
W='probe="warm",target="t1"'
target_config "$WORK/cold.yaml" "$WORK/cold" 1MiB
ping_item "$WORK/cold.yaml" cold read "interval: 200ms" "warmup_after: 50ms"
target_config "$WORK/busy.yaml" "$WORK/busy" 1MiB
ping_item "$WORK/busy.yaml" warm write "sync: fdatasync" "interval: 1s" "warmup_after: 500ms"
ping_item "$WORK/busy.yaml" plain read "interval: 100ms"
mkdir -p "$WORK/cold" "$WORK/busy"

cold_pinged() {
	local v
	scrape_metrics
	sample_or v 0 "$PAGE" "iopulse_probe_ios_total{$COLD}"
	num "$v" '>=' 4
}

start_daemon "$WORK/cold.yaml"
wait_until 60 "4 pings of cold" cold_pinged
check_histograms "$PAGE" || fail "inconsistent histograms:"$'\n'"$HIST_FINDINGS"

sample_into ios "$PAGE" "iopulse_probe_ios_total{$COLD}"
sample_into warm "$PAGE" "iopulse_probe_warmup_ios_total{$COLD}"
sample_into count "$PAGE" "iopulse_probe_latency_seconds_count{$COLD}"
num "$warm" '==' "$ios" || fail "cold made $warm warm-ups for $ios pings, want one each"
num "$count" '==' "$ios" || fail "cold's histogram has $count reads for $ios pings: warm-ups in it?"
note "cold: $warm warm-ups for $ios pings"
stop_daemon TERM 2

warm_pinged() {
	local v
	scrape_metrics
	sample_or v 0 "$PAGE" "iopulse_probe_ios_total{$W,op=\"write\"}"
	num "$v" '>=' 5
}
start_daemon "$WORK/busy.yaml"
wait_until 60 "5 pings of warm" warm_pinged

sample_into w_ios "$PAGE" "iopulse_probe_ios_total{$W,op=\"write\"}"
sample_into w_write "$PAGE" "iopulse_probe_warmup_ios_total{$W,op=\"write\"}"
sample_into w_sync "$PAGE" "iopulse_probe_warmup_ios_total{$W,op=\"fdatasync\"}"
num "$w_write" '<=' 1 || fail "warm warmed up $w_write times on a target never idle for 500ms"
num "$w_sync" '==' "$w_write" || fail "warm's warm-up: $w_write writes but $w_sync fdatasyncs"

grep -q '^iopulse_probe_warmup_ios_total{probe="plain"' "$PAGE" &&
	fail "plain has no warmup_after but a warm-up series"
grep -q '^# HELP iopulse_probe_warmup_ios_total ' "$PAGE" || fail "no HELP for the warm-up family"
note "warm: $w_write warm-up(s) in $w_ios writes"
stop_daemon TERM 2
note "pass"
