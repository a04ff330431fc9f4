#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A busy CPU is not a slow disk. The shipped pings (a 4k read, a 4k write with
# fdatasync; faster here) on a directory of the build machine's real disk, a
# one-minute baseline learned, then every CPU saturated by busy loops of the
# test's own (no extra I/O):
#   0. first, a daemon whose /proc hides the figure (IOPULSE_PROCFS: a
#      directory without thread-self/) says so in its log,
#      iopulse_cpu_wait_measured is 0 and its CPU-wait counters stay 0 while
#      its pings run, under busy loops;
#   1. the daemon says at start that latencies are net of the CPU wait, and
#      iopulse_cpu_wait_measured is 1;
#   2. under the busy loops the CPU-wait counters move (the probe thread waited
#      in the run queue after some I/Os completed), waited I/Os <= I/Os;
#   3. every I/O's latency is net of its wait: in a scrape between runs, the
#      histograms' sums plus the waits are exactly the time the pings kept the
#      target busy (iopulse_target_io_seconds_total: the clocks' figure), and
#      each sum is below it;
#   4. the target stays up for two whole judged minutes of busy loops;
#   5. the lane keeps one schedstat descriptor, not one per I/O.
# Behaviour only: no figure of the machine's speed is a pass or fail
# (bench/cpu_wait.sh prints those).

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"
require_cmd curl
require_disk "$WORK"
P='probe="p1",target="t1"'

# hogs_start: every CPU busy, twice over: a loop of bash each, until
# hogs_stop (or the exit).
HOGS=()
hogs_start() {
	local i
	for ((i = 0; i < 2 * $(nproc) + 2; i++)); do
		bash -c 'while :; do :; done' &
		HOGS+=("$!")
	done
	note "${#HOGS[@]} busy loops on $(nproc) CPUs"
}
hogs_stop() {
	((${#HOGS[@]})) || return 0
	kill "${HOGS[@]}" 2>/dev/null || true
	wait "${HOGS[@]}" 2>/dev/null || true
	HOGS=()
}
on_exit hogs_stop

# 0. Hidden: said, 0, raw latencies (the counters never move), busy loops and all.
mkdir "$WORK/noproc"
hogs_start
ping_config "$WORK/hidden.yaml" "$WORK/hidden" 16MiB
IOPULSE_PROCFS="$WORK/noproc" start_daemon "$WORK/hidden.yaml"
grep -q "warning: CPU wait: $WORK/noproc/thread-self/schedstat gives no run-queue wait" \
	"$DAEMON_LOG" || fail "the daemon did not say that the kernel gives no CPU wait"
wait_until 120 "50 reads on the hidden daemon" \
	scraped "iopulse_probe_ios_total{$P,op=\"read\"}" '>=' 50
for s in iopulse_cpu_wait_measured "iopulse_probe_cpu_wait_seconds_total{$P,op=\"read\"}" \
	"iopulse_probe_cpu_waited_ios_total{$P,op=\"read\"}"; do
	sample_into V "$PAGE" "$s"
	[[ $V == 0 ]] || fail "$s is $V with the figure hidden, want 0"
done
stop_daemon
hogs_stop
note "hidden: said in the log, iopulse_cpu_wait_measured 0, no CPU wait counted"

DIR="$WORK/data"
ping_config "$WORK/cpu.yaml" "$DIR" 16MiB "baseline_warmup: 1m"
ping_item "$WORK/cpu.yaml" w1 write "sync: fdatasync" "interval: 1s"

start_daemon "$WORK/cpu.yaml"
grep -q "info: CPU wait: latencies are net of the probe threads' run-queue wait" "$DAEMON_LOG" ||
	fail "the daemon did not say that latencies are net of the CPU wait"
scrape_metrics
sample_into MEASURED "$PAGE" iopulse_cpu_wait_measured
[[ $MEASURED == 1 ]] || fail "iopulse_cpu_wait_measured is $MEASURED, want 1 (this kernel has schedstat)"

wait_until 240 "the read's baseline (a minute of pings)" \
	scraped "iopulse_probe_latency_baseline_seconds{$P,op=\"read\",percentile=\"50\"}" '>' 0
sample_or WAITED0 0 "$PAGE" "iopulse_probe_cpu_waited_ios_total{$P,op=\"read\"}"
note "baseline learned; $WAITED0 read(s) waited for a CPU so far"

hogs_start

# 2. The counters move.
wait_until 240 "a read that waited for a CPU under the busy loops" \
	scraped "iopulse_probe_cpu_waited_ios_total{$P,op=\"read\"}" '>' "$WAITED0"
sample_into WAIT_S "$PAGE" "iopulse_probe_cpu_wait_seconds_total{$P,op=\"read\"}"
num "$WAIT_S" '>' 0 || fail "reads waited, yet their CPU wait is $WAIT_S s"

# 3. net + wait == what the clocks read, in a scrape between runs (the probe's
# series move before the target's); each histogram's sum under it.
consistent() {
	scrape_metrics
	CHECK=$(awk '
		function val() { return $NF + 0 }
		/^iopulse_probe_latency_seconds_sum\{/ { net += val(); if (val() > max) max = val() }
		/^iopulse_probe_cpu_wait_seconds_total\{/ { wait += val() }
		/^iopulse_probe_cpu_waited_ios_total\{/ { waited += val() }
		/^iopulse_probe_ios_total\{/ { ios += val() }
		/^iopulse_target_io_seconds_total\{/ { io = val() }
		END {
			printf "net %.9f wait %.9f io %.9f waited %d ios %d\n", net, wait, io, waited, ios
			d = net + wait - io; if (d < 0) d = -d
			exit !(io > 0 && max < io && waited <= ios && d <= 1e-6 * io + 1e-6)
		}' "$PAGE")
}
wait_until 60 "histogram sums + CPU waits == the target's I/O time" consistent
note "net + wait == raw: $CHECK"

# 4. Up through two whole judged minutes of busy loops.
t_end=$(($(now_ms) + 125000))
while (($(now_ms) < t_end)); do
	require_alive
	scrape_metrics
	sample_into UP "$PAGE" 'iopulse_target_state{target="t1",state="up"}'
	[[ $UP == 1 ]] || fail "target t1 left 'up' under busy loops alone: $(grep '^iopulse_target_state{' "$PAGE" | tr '\n' ' ')"
	sleep 2
done
sample_into WAITED "$PAGE" "iopulse_probe_cpu_waited_ios_total{$P,op=\"read\"}"
sample_into IOS "$PAGE" "iopulse_probe_ios_total{$P,op=\"read\"}"
note "t1 up for two minutes of busy loops; $WAITED of $IOS reads waited for a CPU"

# 5. One schedstat descriptor for the lane (the only one that does I/O here).
fds=$(find "/proc/$DAEMON_PID/fd" -mindepth 1 -lname '*/schedstat' 2>/dev/null | wc -l)
((fds == 1)) || fail "$fds schedstat descriptors open in the daemon, want 1 (its lane's)"
stop_daemon

