#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Burst probes in the daemon, seen through /metrics.
#
# Target t1: a randrw burst (1s after a 200ms ramp, every 2s, iodepth 8, 70%
# reads) and a read ping every 100ms. Two scrapes that bracket exactly one
# published burst give that burst's I/O counts; the last-burst gauges of the
# second scrape describe the same burst (both are published under one lock),
# so iopulse_burst_iops * iopulse_burst_duration_seconds must give back those
# counts (within 1%: the same numbers, not a timing measurement), bandwidth must
# be IOPS x 4KiB, the read share must be near 70%, the latency gauges ordered,
# the histograms consistent and the page lint-clean.
#
# Target t2: burst A (1.5s every 2.5s) and burst B (500 I/Os every 1s). B falls
# due while A runs at least once per run of A, and must then wait its turn
# (iopulse_probe_deferred_total{reason="burst"}), never run alongside it. A
# burst's counters are published all at once when it ends, so B's I/O count
# only ever grows by whole bursts of 500; and every time B fell due it either
# ran or was skipped.
#
# Target t3: a 12MiB probe file laid out at 5MiB/s (2.4s at least), a ping every
# 1s and a burst every 1s. The layout holds the target as a burst does, by
# design: the ping waits and is skipped for reason="layout", never "busy" (that
# would fire IopulseProbeSkipped on every new host), and the burst waits for the
# file instead of losing its first run. Unsplayed, the burst first falls due
# half a second after the ping, whose run is laying out the file by then; a
# ping runs in a few ms, so only a stall of a whole second could make one wait
# behind another (a 100ms ping would wait as "busy", rightly, on a loaded machine).
# The layout ends about 2.4s into the first ping's run, well away from the
# ping's due times: the ping that follows it in the same run is no layout, and
# a due time falling in those few ms would wait as "busy", rightly (at 4MiB/s
# the layout ended at 3s, on a due time, and the suite saw that once).

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

require_cmd curl promtool
require_disk "$WORK"

mkdir "$WORK/t1" "$WORK/t2" "$WORK/t3"
CFG="$WORK/iopulse.yaml"
cat >"$CFG" <<EOF
splay: false # the bursts run at start, not at a splayed phase
targets:
  - name: t1
    directory: $(yaml_str "$WORK/t1")
    max_duty_cycle: 100%
    max_write_per_day: 0
    size: 16MiB
    layout_rate: 0
    labels: {zone: eu-1, volume_type: gp3}
  - name: t2
    directory: $(yaml_str "$WORK/t2")
    max_duty_cycle: 100%
    max_write_per_day: 0
    size: 16MiB
    layout_rate: 0
  - name: t3
    directory: $(yaml_str "$WORK/t3")
    max_duty_cycle: 100%
    max_write_per_day: 0
    size: 12MiB
    layout_rate: 5MiB/s
probes:
  - name: mix
    type: burst
    target: t1
    rw: randrw
    rwmix_read: 70%
    iodepth: 8
    duration: 1s
    ramp: 200ms
    every: 2s
    io_priority: idle
  - name: rd
    type: ping
    target: t1
    interval: 100ms
  - name: A
    type: burst
    target: t2
    rw: randread
    iodepth: 4
    duration: 1500ms
    every: 2500ms
  - name: B
    type: burst
    target: t2
    rw: randread
    iodepth: 4
    ios: 500
    every: 1s
  - name: L
    type: ping
    target: t3
    interval: 1s
  - name: LB
    type: burst
    target: t3
    rw: randread
    ios: 200
    every: 1s
EOF

START_MS=$(now_ms)
start_daemon "$CFG"

MIX='probe="mix",target="t1"'

# count_into VAR FILE SERIES: a counter as a plain integer for shell arithmetic
# (the page writes large values as 4.096e+08).
count_into() {
	local v
	sample_into v "$2" "$3"
	printf -v "$1" '%s' "$(awk -v v="$v" 'BEGIN { printf "%.0f", v }')"
}

# ---- t1: one burst, bracketed ----------------------------------------------

burst_published() {
	scrape_metrics
	has_series "$PAGE" "iopulse_burst_duration_seconds{$MIX}"
}
wait_until 60 "a first burst of mix published (iopulse_burst_duration_seconds{$MIX})" burst_published

# Scrape until the I/O count of mix changes from one page to the next while its
# run count does not: exactly one burst was published between them. Runs are
# counted when they start and I/Os when they end, a page is one snapshot, and a
# run starts only after the previous one published: the run in flight at the
# first page is the only one that can have ended by the second, however long
# the scrapes took on a loaded machine. (Two pages less than a second apart
# bracket one burst too: publications are 1.2s apart at least.) Between two
# scrapes only one awk runs, so that on a loaded machine a page still lands in
# the 0.8s between a burst's end and the next one's start.
# mix_state PAGE: "RUNS IOS" of mix (read + write) on PAGE.
mix_state() {
	awk -v r="iopulse_probe_runs_total{$MIX} " -v i="iopulse_probe_ios_total{$MIX," '
		index($0, r) == 1 { runs = $NF }
		index($0, i) == 1 { ios += $NF }
		END { printf "%.0f %.0f\n", runs, ios }' "$1"
}
p_ms=$(now_ms)
scrape_metrics
P=$PAGE
read -r p_runs p_ios < <(mix_state "$P")
deadline=$(($(now_ms) + 60000))
while :; do
	require_alive
	n_ms=$(now_ms)
	scrape_metrics
	c_ms=$(now_ms)
	read -r c_runs c_ios < <(mix_state "$PAGE")
	((c_ios >= p_ios)) || fail "ios of mix went down: $p_ios -> $c_ios"
	if ((c_ios != p_ios && (c_runs == p_runs || c_ms - p_ms < 1000))); then
		break
	fi
	(($(now_ms) < deadline)) || fail "no burst of mix published between two scrapes within 60s"
	P=$PAGE p_ms=$n_ms p_ios=$c_ios p_runs=$c_runs
done
C=$PAGE
note "one burst of mix between $P and $C: $p_ios -> $c_ios I/Os"

count_into runs0 "$P" "iopulse_probe_runs_total{$MIX}"
count_into runs1 "$C" "iopulse_probe_runs_total{$MIX}"
((runs1 - runs0 == 0 || runs1 - runs0 == 1)) ||
	fail "iopulse_probe_runs_total{$MIX} went $runs0 -> $runs1 across one published burst"

sample_into dur "$C" "iopulse_burst_duration_seconds{$MIX}"
# 1s measured; the last completions may run a little past it. A generous bound.
{ num "$dur" '>=' 0.9 && num "$dur" '<=' 5; } || fail "iopulse_burst_duration_seconds{$MIX} is $dur for a 1s burst"

declare -A D
for op in read write; do
	s="$MIX,op=\"$op\""
	count_into i0 "$P" "iopulse_probe_ios_total{$s}"
	count_into i1 "$C" "iopulse_probe_ios_total{$s}"
	count_into b0 "$P" "iopulse_probe_bytes_total{$s}"
	count_into b1 "$C" "iopulse_probe_bytes_total{$s}"
	d=$((i1 - i0))
	D[$op]=$d
	((d > 0)) || fail "no $op I/Os in a randrw burst ($i0 -> $i1)"
	(((b1 - b0) == d * 4096)) || fail "$op: $((b1 - b0)) bytes for $d I/Os of 4KiB"

	sample_into iops "$C" "iopulse_burst_iops{$s}"
	sample_into bw "$C" "iopulse_burst_bandwidth_bytes{$s}"
	got=$(awk -v a="$iops" -v b="$dur" 'BEGIN { printf "%.3f", a * b }')
	note "$op: $d I/Os; iopulse_burst_iops $iops x duration $dur = $got"
	awk -v g="$got" -v d="$d" 'BEGIN { e = g - d; if (e < 0) e = -e; exit !(e <= 0.01 * d) }' ||
		fail "$op: iopulse_burst_iops x iopulse_burst_duration_seconds = $iops x $dur = $got, but the burst did $d I/Os"
	awk -v i="$iops" -v b="$bw" 'BEGIN { e = b - i * 4096; if (e < 0) e = -e; exit !(e <= 1e-9 * b) }' ||
		fail "$op: iopulse_burst_bandwidth_bytes $bw != iopulse_burst_iops $iops x 4096"

	prev=0
	for pc in 50 90 99 99.9; do
		sample_into q "$C" "iopulse_burst_latency_seconds{$s,percentile=\"$pc\"}"
		num "$q" '>' 0 || fail "$op: p$pc latency gauge is $q"
		num "$q" '>=' "$prev" || fail "$op: p$pc latency $q below the previous percentile $prev"
		prev=$q
	done
	sample_into mx "$C" "iopulse_burst_latency_max_seconds{$s}"
	num "$mx" '>=' "$prev" || fail "$op: max latency $mx below p99.9 $prev"
done
for reason in io_error short_io timeout target_down setup; do
	sample_into e "$C" "iopulse_probe_errors_total{$MIX,reason=\"$reason\"}"
	num "$e" '==' 0 || fail "iopulse_probe_errors_total{$MIX,reason=\"$reason\"} is $e"
done
# The share of reads: each I/O is drawn at random, 70% reads. With N I/Os the
# standard deviation is sqrt(0.21/N), under 0.015 for N >= 1000.
total=$((D[read] + D[write]))
((total >= 1000)) || note "only $total I/Os in a 1s burst: the mix check is loose"
awk -v r="${D[read]}" -v t="$total" 'BEGIN { s = r / t; exit !(s >= 0.65 && s <= 0.75) }' ||
	fail "read share of the burst is ${D[read]}/$total, want 0.70 +- 0.05"
note "read share ${D[read]}/$total"

check_histograms "$C" || fail "histograms inconsistent in $C:"$'\n'"$HIST_FINDINGS"
grep -qxF "probe=\"mix\",target=\"t1\",op=\"write\"" <<<"$HIST_SERIES" || fail "no latency histogram for mix/write"
lint=$(promtool check metrics <"$C" 2>&1) || fail "promtool check metrics failed:"$'\n'"$lint"
[[ -z $lint ]] || fail "promtool check metrics has findings:"$'\n'"$lint"

# ---- t2: B falls due while A runs -------------------------------------------

A='probe="A",target="t2"'
B='probe="B",target="t2"'
b_whole() { # every scrape: B's reads are a whole number of 500-I/O bursts
	local ios runs
	count_into ios "$PAGE" "iopulse_probe_ios_total{$B,op=\"read\"}"
	count_into runs "$PAGE" "iopulse_probe_runs_total{$B}"
	((ios % 500 == 0)) || fail "iopulse_probe_ios_total{$B,op=\"read\"} is $ios, not a whole number of 500-I/O bursts"
	# Runs are counted when they start, I/Os when they end: one may be in flight.
	((runs - ios / 500 == 0 || runs - ios / 500 == 1)) ||
		fail "B: $runs runs started but $((ios / 500)) bursts of I/O published"
}
# B falls due while burst A holds the target: it waits its turn (deferred, reason
# "burst") instead of being dropped, so schedules that always collide (15m and 1h)
# still run both.
b_deferred() {
	local v a
	B_SCRAPE_MS=$(now_ms)
	scrape_metrics
	b_whole
	sample_or v 0 "$PAGE" "iopulse_probe_deferred_total{$B,reason=\"burst\"}"
	sample_or a 0 "$PAGE" "iopulse_probe_runs_total{$A}"
	num "$v" '>' 0 && num "$a" '>=' 2
}
wait_until 60 "B deferred behind burst A (iopulse_probe_deferred_total{$B,reason=\"burst\"} > 0) and A run twice" b_deferred
now=$(now_ms)
check_histograms "$PAGE" || fail "histograms inconsistent in $PAGE:"$'\n'"$HIST_FINDINGS"
lint=$(promtool check metrics <"$PAGE" 2>&1) || fail "promtool check metrics failed:"$'\n'"$lint"
[[ -z $lint ]] || fail "promtool check metrics has findings:"$'\n'"$lint"

# Every time a burst fell due it either ran or was skipped: about one per
# `every` since start (the first falls due within the first second). How long
# the daemon had run by that scrape, bounded by its own log (it served from
# then on: at least from then to the scrape's start) and by the test's clock
# (at most from before its launch to now), not the test's clock alone: a loaded
# machine starts the daemon late.
serving_ms=$(date -d "$(grep -m1 'Serving metrics on' "$DAEMON_LOG" | cut -c1-23)" +%s%3N)
lo_s=$(awk -v a="$B_SCRAPE_MS" -v b="$serving_ms" 'BEGIN { print (a - b) / 1000 }')
elapsed=$(awk -v a="$now" -v b="$START_MS" 'BEGIN { print (a - b) / 1000 }')
for p in A:2.5 B:1; do
	name=${p%%:*}
	every=${p#*:}
	sample_into runs "$PAGE" "iopulse_probe_runs_total{probe=\"$name\",target=\"t2\"}"
	sample_or busy 0 "$PAGE" "iopulse_probe_skipped_total{probe=\"$name\",target=\"t2\",reason=\"busy\"}"
	sample_or behind 0 "$PAGE" "iopulse_probe_skipped_total{probe=\"$name\",target=\"t2\",reason=\"burst\"}"
	skipped=$((busy + behind))
	note "$name: $runs runs, $skipped skipped in ${lo_s}s to ${elapsed}s (every ${every}s)"
	awk -v n="$((runs + skipped))" -v lo="$lo_s" -v t="$elapsed" -v e="$every" \
		'BEGIN { exit !(n >= lo / e - 2 && n <= t / e + 2) }' ||
		fail "$name: runs $runs + skipped $skipped in ${lo_s}s to ${elapsed}s at every ${every}s"
	for reason in io_error short_io timeout target_down setup; do
		sample_into e "$PAGE" "iopulse_probe_errors_total{probe=\"$name\",target=\"t2\",reason=\"$reason\"}"
		num "$e" '==' 0 || fail "iopulse_probe_errors_total of $name, reason $reason, is $e"
	done
done

# ---- a ping waiting behind a burst: expected, counted apart ---------------

# rd (every 100ms) on t1 falls due while mix (1.2s every 2s) holds the target:
# it waits (deferred) and is skipped for reason="burst", which alerts ignore.
RD='probe="rd",target="t1"'
rd_waited_for_burst() {
	local skipped deferred
	scrape_metrics
	sample_or skipped 0 "$PAGE" "iopulse_probe_skipped_total{$RD,reason=\"burst\"}"
	sample_or deferred 0 "$PAGE" "iopulse_probe_deferred_total{$RD,reason=\"burst\"}"
	num "$skipped" ">" 0 && num "$deferred" ">" 0
}
wait_until 60 "rd skipped and deferred for reason=\"burst\"" rd_waited_for_burst
for s in "iopulse_probe_skipped_total{$RD,reason=\"busy\"}" \
	"iopulse_probe_deferred_total{$RD,reason=\"busy\"}" \
	"iopulse_probe_skipped_total{probe=\"mix\",target=\"t1\",reason=\"busy\"}"; do
	has_series "$PAGE" "$s" || fail "no series $s"
done

# ---- t3: probes waiting for the probe file's layout ---------------------------

L='probe="L",target="t3"'
LB='probe="LB",target="t3"'
t3_laid_out() {
	local ping_skipped burst_waited burst_ios
	scrape_metrics
	sample_or ping_skipped 0 "$PAGE" "iopulse_probe_skipped_total{$L,reason=\"layout\"}"
	sample_or burst_waited 0 "$PAGE" "iopulse_probe_deferred_total{$LB,reason=\"layout\"}"
	sample_or burst_ios 0 "$PAGE" "iopulse_probe_ios_total{$LB,op=\"read\"}"
	num "$ping_skipped" '>' 0 && num "$burst_waited" '>' 0 && num "$burst_ios" '>' 0
}
wait_until 60 "L skipped and LB deferred for reason=\"layout\", then LB run" t3_laid_out
sample_into ping_layout "$PAGE" "iopulse_probe_skipped_total{$L,reason=\"layout\"}"
note "L: $ping_layout runs skipped behind the layout"
# Only the layout and the burst ever held t3 for the ping: never "busy".
for s in "iopulse_probe_skipped_total{$L,reason=\"busy\"}" \
	"iopulse_probe_deferred_total{$L,reason=\"busy\"}"; do
	sample_into v "$PAGE" "$s"
	num "$v" '==' 0 || fail "$s is $v: a layout or a burst counted as busy"
done
for s in "iopulse_probe_skipped_total{$RD,reason=\"layout\"}" \
	"iopulse_probe_deferred_total{$MIX,reason=\"layout\"}"; do
	sample_into v "$PAGE" "$s" # every reason exists for every probe
done

# ---- what each probe and target is -------------------------------------------

# "auto" resolved: for the burst the best queueing engine here, the one the
# daemon says 'auto' is; for the ping sync (QD1: least added to each I/O). Each
# says so in the log, with its reason.
ENGINE=$(sed -n 's/^iopulse_probe_info{probe="mix",.*engine="\([^"]*\)",.*} 1$/\1/p' "$PAGE")
[[ $ENGINE =~ ^(io_uring|libaio|sync)$ ]] || fail "mix's engine is '$ENGINE'"
grep -qF "Engine 'auto' is $ENGINE for bursts and sync for pings" "$DAEMON_LOG" ||
	fail "the daemon does not say 'auto' is $ENGINE for bursts:"$'\n'"$(cat "$DAEMON_LOG")"
grep -qF "Probe mix: engine auto -> $ENGINE (a queue to keep full:" "$DAEMON_LOG" ||
	fail "no log line saying why mix runs on $ENGINE"
grep -qF "Probe rd: engine auto -> sync (QD1: no queue to fill;" "$DAEMON_LOG" ||
	fail "no log line saying why rd runs on sync"
for s in "iopulse_probe_info{$MIX,type=\"burst\",op=\"randrw\",engine=\"$ENGINE\",io_priority=\"idle\"} 1" \
	"iopulse_probe_info{$RD,type=\"ping\",op=\"read\",engine=\"sync\",io_priority=\"none\"} 1" \
	"iopulse_probe_interval_seconds{$MIX} 2" "iopulse_probe_interval_seconds{$RD} 0.1" \
	"iopulse_probe_interval_seconds{probe=\"A\",target=\"t2\"} 2.5"; do
	grep -qxF "$s" "$PAGE" || fail "no line '$s' in:"$'\n'"$(grep '^iopulse_probe_in' "$PAGE")"
done
FSTYPE=$(stat -f -c %T "$WORK/t1")
# The source of the mount it is on, as findmnt reads it from mountinfo.
SOURCE=$(findmnt -n --nofsroot -o SOURCE -T "$WORK/t1") || fail "findmnt knows no mount at $WORK/t1"
info=$(grep '^iopulse_target_info{target="t1",' "$PAGE") || fail "no iopulse_target_info for t1"
(($(wc -l <<<"$info") == 1)) || fail "more than one iopulse_target_info for t1:"$'\n'"$info"
[[ $info == *",kind=\"directory\",path=\"$WORK/t1\",fstype=\""[!\"]*'",device="'*"\",source=\"$SOURCE\",zone=\"eu-1\",volume_type=\"gp3\"} 1" ]] ||
	fail "iopulse_target_info for t1 is not as configured (stat -f says $FSTYPE, findmnt $SOURCE): $info"
note "$info"
(($(grep -c '^iopulse_target_info{' "$PAGE") == 3)) || fail "not one iopulse_target_info per target"

# 'iopulse check' prints the labels.
"$IOPULSE" check --config "$CFG" >"$WORK/check.out" 2>&1 || fail "iopulse check failed: $(cat "$WORK/check.out")"
grep -qxF '      volume_type: gp3' "$WORK/check.out" || fail "check does not print the labels:"$'\n'"$(cat "$WORK/check.out")"

stop_daemon TERM 5
note "pass"
