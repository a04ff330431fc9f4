#!/usr/bin/env bash
# bench/fleet.sh — a fleet on one machine (issue 11, "Fleet simulation").
#
# N iopulse instances, each its own process on its own loopback port with its own
# config, all scraped by one Prometheus that discovers them through file_sd and
# loads the shipped rules (RULES). Every host pings one small directory target
# once a second (a read ping; a write ping with fdatasync) and runs a tiny burst
# (engine null, 10000 I/Os) every minute, so the burst series exist as in use.
#
# The targets: every host's directory is on hangfs (tests/integration/hangfs.c,
# a FUSE pass-through) over a tmpfs this script mounts: the N-1 healthy hosts
# share one hangfs, the slow host has its own. All hosts go through the same
# FUSE path, so they are peers (a FUSE read costs ~20 µs where a tmpfs read
# costs ~5: hosts on tmpfs would make the FUSE host "slower than its peers"
# before anything was slowed down). After BASELINE, the slow host's hangfs
# delays every read, write and fdatasync by DELAY_US (a noisy neighbour: a few
# ms on a ~20-50 µs baseline).
#
# Phases and what is measured (through Prometheus' HTTP API and /proc):
#   0. Prometheus alone (no iopulse target) for WARMUP: its RSS and ingestion
#      without the fleet, the base of the "per host" figures.
#   1. The N hosts, healthy, for BASELINE: no alert may be pending or firing.
#      Measured at its end: series per host, Prometheus RSS and ingestion per
#      host, rule group evaluation time, iopulse CPU and RSS per instance.
#   2. The slow host slowed: minutes until IopulseSlowerThanPeers is pending and
#      firing (polled every 5s, up to DURATION), then HOLD more, then every
#      ALERTS series of the whole run (query_range): the only alert allowed is
#      IopulseSlowerThanPeers for the slow instance, after the slow-down.
# A measurement, not a test: exits 0 whenever it ran, whatever the figures.
#
#   bench/fleet.sh                       # as root (mounts tmpfs and FUSE)
#   N=200 DELAY_US=2000 bench/fleet.sh
#   RULES=/path/to/iopulse.rules.yml bench/fleet.sh
#
# Environment:
#   BUILD      build directory (build-bench; Release, configured and built here
#              when it has no iopulse)     IOPULSE  binary ($BUILD/iopulse)
#   N          hosts (100)                 SLOW     index of the slow host (N/2)
#   INTERVAL   scrape and rule evaluation interval (10s)
#   PING       ping interval (1s)          DELAY_US added per I/O on the slow host (3000)
#   WARMUP     Prometheus alone (60s)      BASELINE healthy fleet (5m)
#   DURATION   longest wait for the alert after the slow-down (15m)
#   HOLD       watched after it fired (1m)
#   RULES      rules file (dashboards/iopulse.rules.yml)
#   HANGFS     hangfs binary (compiled here into $BUILD when unset)
# Only ever talks to 127.0.0.1; removes every process, mount and file it made.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$REPO/build-bench}
N=${N:-100}
SLOW=${SLOW:-$((N / 2))}
INTERVAL=${INTERVAL:-10s}
PING=${PING:-1s}
DELAY_US=${DELAY_US:-3000}
WARMUP=${WARMUP:-60}
BASELINE=${BASELINE:-5m}
DURATION=${DURATION:-15m}
HOLD=${HOLD:-1m}
RULES=${RULES:-$REPO/dashboards/iopulse.rules.yml}
ALERT=IopulseSlowerThanPeers

fsay() { printf 'fleet.sh: %s\n' "$*" >&2; }
die() { fsay "$*"; exit 1; }

# seconds DURATION: "90s", "5m", "2h" or a bare number of seconds.
seconds() {
	case $1 in
	*h) echo $((${1%h} * 3600)) ;;
	*m) echo $((${1%m} * 60)) ;;
	*s) echo "${1%s}" ;;
	*) echo "$1" ;;
	esac
}

[ "$(id -u)" -eq 0 ] || die "needs root (it mounts a tmpfs and FUSE filesystems)"
((N >= 6)) || die "N=$N: the peer comparison needs at least 6 hosts"
((SLOW >= 1 && SLOW <= N)) || die "SLOW=$SLOW is not a host in 1..$N"
for c in prometheus promtool curl python3 fusermount3 pkg-config gcc; do
	command -v "$c" >/dev/null 2>&1 || die "needs '$c'"
done
[ -c /dev/fuse ] || die "needs /dev/fuse"
[ -f "$RULES" ] || die "no rules file $RULES"
promtool check rules "$RULES" >/dev/null || die "promtool check rules $RULES failed"
grep -q "alert: *$ALERT\$" "$RULES" ||
	fsay "warning: $RULES has no alert $ALERT: its timing will not be measured"

if [ -z "${IOPULSE:-}" ] && [ ! -x "$BUILD/iopulse" ]; then
	fsay "building iopulse into $BUILD"
	cmake -S "$REPO" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_C_FLAGS=-Wno-error=maybe-uninitialized >/dev/null
	cmake --build "$BUILD" -j"$(nproc)" --target iopulse >/dev/null
fi
# shellcheck source=lib.sh
. "$REPO/bench/lib.sh" # BUILD, IOPULSE, WORK (under $BUILD), say

bench_hangfs

# ---------------------------------------------------------------- clean-up

PIDS=()   # iopulse instances and Prometheus: stopped first
FUSE=()   # "pid mountpoint" of each hangfs
MOUNTS=() # tmpfs mount points
fleet_cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	[ -z "${NAP_PID:-}" ] || kill "$NAP_PID" 2>/dev/null
	bench_stop fsay
	exit "$rc"
}
trap fleet_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- helpers

# q1 EXPR: the first sample's value of q (lib.sh), or "nan" when the result is empty.
q1() {
	local v
	v=$(q "$1" | awk 'NR == 1')
	echo "${v##* }" | grep . || echo nan
}

# nap SECONDS: sleep, but let a signal's trap run at once (bash runs traps only
# between foreground commands; wait returns on a signal).
nap() {
	sleep "$1" &
	NAP_PID=$!
	wait "$NAP_PID" || true
	NAP_PID=
}

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)

# ---------------------------------------------------------------- targets

mkdir "$WORK/tmpfs" "$WORK/mnt" "$WORK/mnt/peers" "$WORK/mnt/slow" "$WORK/hosts" "$WORK/prom"
mount -t tmpfs -o "size=$((N * 2 + 64))m,mode=0700" iopulse-fleet "$WORK/tmpfs"
MOUNTS+=("$WORK/tmpfs")
mkdir "$WORK/tmpfs/peers" "$WORK/tmpfs/slow"

# hangfs_up NAME: a hangfs of $WORK/tmpfs/NAME on $WORK/mnt/NAME; sets HFS_PID.
hangfs_up() {
	local mp=$WORK/mnt/$1
	HANGFS_DELAY_US=$DELAY_US "$HANGFS" "$WORK/tmpfs/$1" "$mp" >"$WORK/hangfs.$1.log" 2>&1 &
	HFS_PID=$!
	FUSE+=("$HFS_PID $mp")
	wait_for 10 "hangfs on $mp" grep -qF " $mp " /proc/self/mountinfo
}
hangfs_up peers
PEERS_FS=$HFS_PID
hangfs_up slow
SLOW_FS=$HFS_PID

# ---------------------------------------------------------------- prometheus

echo '[]' >"$WORK/prom/targets.json"
prom_config() {
	cat <<-EOF
		global:
		  scrape_interval: $INTERVAL
		  scrape_timeout: 5s
		  evaluation_interval: $INTERVAL
		rule_files:
		  - $RULES
		scrape_configs:
		  - job_name: iopulse
		    file_sd_configs:
		      - files: ['$WORK/prom/targets.json']
		        refresh_interval: 10s
		  - job_name: prometheus
		    static_configs:
		      - targets: ['127.0.0.1:$1']
	EOF
}
PROM_PID=
for _ in 1 2 3 4 5; do
	port=$((20000 + RANDOM % 40000))
	(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
	prom_config "$port" >"$WORK/prom/prometheus.yml"
	prometheus --config.file="$WORK/prom/prometheus.yml" --storage.tsdb.path="$WORK/prom/data" \
		--web.listen-address="127.0.0.1:$port" --log.level=warn >"$WORK/prom/log" 2>&1 &
	PROM_PID=$!
	PROM=http://127.0.0.1:$port
	for _ in $(seq 150); do
		curl -fsS -o /dev/null --max-time 2 "$PROM/-/ready" 2>/dev/null && break 2
		kill -0 "$PROM_PID" 2>/dev/null || break
		sleep 0.2
	done
	kill "$PROM_PID" 2>/dev/null || true
	wait "$PROM_PID" 2>/dev/null || true
	PROM_PID=
done
[ -n "$PROM_PID" ] || { cat "$WORK/prom/log" >&2; die "prometheus did not start"; }
PIDS+=("$PROM_PID")
fsay "prometheus $(prometheus --version 2>&1 | awk 'NR == 1 { print $3 }') on $PROM, scrape and evaluation every $INTERVAL, rules $RULES"

# Prometheus alone: its RSS and ingestion without the fleet.
fsay "phase 0: prometheus alone for ${WARMUP}s"
nap "$WARMUP"
RSS0=$(rss_kib "$PROM_PID")
ING0=$(q1 'rate(prometheus_tsdb_head_samples_appended_total[1m])')
HEAD0=$(q1 'prometheus_tsdb_head_series')

# ---------------------------------------------------------------- the fleet

# host_config I DIR: host I's configuration, pinging DIR.
host_config() {
	cat <<-EOF
		listen: 127.0.0.1:0
		targets:
		  - name: data
		    directory: $2
		    size: 1MiB
		    layout_rate: 0
		    require_mount: false
		probes:
		  - {name: read, type: ping, target: data, op: read, interval: $PING}
		  - {name: write, type: ping, target: data, op: write, sync: fdatasync, interval: $PING}
		  - {name: burst, type: burst, target: data, rw: randread, engine: "null", iodepth: 4, ios: 10000, every: 1m}
	EOF
}

IOP_PIDS=()
PORTS=()
fsay "starting $N iopulse instances (host $SLOW is the slow one)"
for i in $(seq "$N"); do
	h=$(printf 'h%03d' "$i")
	fs=peers
	((i == SLOW)) && fs=slow
	mkdir "$WORK/mnt/$fs/$h"
	host_config "$i" "$WORK/mnt/$fs/$h" >"$WORK/hosts/$h.yaml"
	"$IOPULSE" run --config "$WORK/hosts/$h.yaml" >"$WORK/hosts/$h.log" 2>&1 &
	IOP_PIDS+=($!)
	PIDS+=($!)
done
# Their ports, from their logs.
for i in $(seq "$N"); do
	h=$(printf 'h%03d' "$i")
	port=
	for _ in $(seq 150); do
		port=$(sed -n 's|.*Serving metrics on http://127\.0\.0\.1:\([0-9][0-9]*\)/metrics.*|\1|p' \
			"$WORK/hosts/$h.log" | head -1)
		[ -n "$port" ] && break
		kill -0 "${IOP_PIDS[i - 1]}" 2>/dev/null || break
		sleep 0.2
	done
	[ -n "$port" ] || { cat "$WORK/hosts/$h.log" >&2; die "iopulse $h did not start"; }
	PORTS+=("$port")
done
SLOW_INSTANCE=127.0.0.1:${PORTS[SLOW - 1]}
python3 - "${PORTS[@]}" >"$WORK/prom/targets.json.new" <<-'PY'
	import json, sys
	print(json.dumps([{"targets": [f"127.0.0.1:{p}" for p in sys.argv[1:]]}], indent=1))
PY
mv "$WORK/prom/targets.json.new" "$WORK/prom/targets.json"
T_HOSTS=$(date +%s)
all_up() { [ "$(q1 'count(up{job="iopulse"} == 1)')" = "$N" ]; }
wait_for 120 "all $N hosts up in prometheus" all_up
T_START=$(date +%s)
fsay "all $N hosts scraped; slow host $SLOW_INSTANCE"

# ---------------------------------------------------------------- phase 1

fsay "phase 1: healthy fleet for $BASELINE"
# iopulse CPU over the second half of the phase (layout and start-up left out).
half=$(($(seconds "$BASELINE") / 2))
nap "$half"
cpu_sum() {
	local p s=0
	for p in "$@"; do s=$((s + $(cpu_ticks "$p"))); done
	echo "$s"
}
c0=$(cpu_sum "${IOP_PIDS[@]}")
p0=$(cpu_ticks "$PROM_PID")
f0=$(cpu_sum "$PEERS_FS" "$SLOW_FS")
t0=$(date +%s.%N)
nap $(($(seconds "$BASELINE") - half))
c1=$(cpu_sum "${IOP_PIDS[@]}")
p1=$(cpu_ticks "$PROM_PID")
f1=$(cpu_sum "$PEERS_FS" "$SLOW_FS")
t1=$(date +%s.%N)
pct() { awk -v d="$1" -v t="$TICK" -v s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" -v n="${2:-1}" \
	'BEGIN { printf "%.2f", d / t / s / n * 100 }'; }
IOP_CPU=$(pct $((c1 - c0)) "$N")
IOP_CPU_ALL=$(pct $((c1 - c0)))
PROM_CPU=$(pct $((p1 - p0)))
FS_CPU=$(pct $((f1 - f0)))
IOP_RSS=$(for p in "${IOP_PIDS[@]}"; do rss_kib "$p"; done | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')

RSS1=$(rss_kib "$PROM_PID")
ING1=$(q1 'rate(prometheus_tsdb_head_samples_appended_total[1m])')
HEAD1=$(q1 'prometheus_tsdb_head_series')
HEAP1=$(q1 'go_memstats_heap_inuse_bytes{job="prometheus"}')
# Series per host: everything Prometheus holds with the host's instance label
# (iopulse's own, the scrape's up/scrape_*, and the recording rules' outputs).
series_stats() {
	q "count by (instance) ($1)" | awk '{ print $2 }' | sort -n | awk '{ v[NR] = $1 } END {
		if (!NR) { print "0 0 0"; exit }
		printf "%d %d %d\n", v[1], v[int((NR + 1) / 2)], v[NR] }'
}
read -r S_ALL_MIN S_ALL_MED S_ALL_MAX <<<"$(series_stats '{job="iopulse"}')"
read -r S_OWN_MIN S_OWN_MED S_OWN_MAX <<<"$(series_stats '{job="iopulse",__name__=~"iopulse_.*"}')"
read -r S_REC_MIN S_REC_MED S_REC_MAX <<<"$(series_stats '{job="iopulse",__name__=~".+:.+"}')"
SAMPLES=$(q1 'avg(scrape_samples_scraped{job="iopulse"})')
SCRAPE_S=$(q1 'quantile(0.99, scrape_duration_seconds{job="iopulse"})')
# rule_groups FUNC RANGE: "group X ms, ..." FUNC_over_time (avg, max) of each
# group's evaluation time over RANGE.
rule_groups() {
	q "max by (rule_group) ($1_over_time(prometheus_rule_group_last_duration_seconds[$2]))" |
		awk '{ sub(/^rule_group=[^;]*;/, ""); printf "%s%s %.1f ms", (NR > 1 ? ", " : ""), $1, $2 * 1e3 }'
}
RULES_AVG1=$(rule_groups avg "$BASELINE")
RULES_MAX1=$(rule_groups max "$BASELINE")
RULES_EVALS1=$(q1 "sum(increase(prometheus_rule_evaluation_failures_total[$BASELINE]))")
MISSED1=$(q1 "sum(increase(prometheus_rule_group_iterations_missed_total[$BASELINE]))")
P99_PEERS=$(q1 'quantile(0.5, histogram_quantile(0.99, sum by (instance, probe, op, le) (rate(iopulse_probe_latency_seconds_bucket{job="iopulse",probe="read"}[2m]))))')
ALERTS1=$(q 'ALERTS' || true)
fsay "phase 1 done: alerts now: ${ALERTS1:-none}"

# ---------------------------------------------------------------- phase 2

kill -s RTMIN+3 "$SLOW_FS"
wait_for 10 "hangfs slow" grep -qF "hangfs: slow (" "$WORK/hangfs.slow.log"
T_SLOW=$(date +%s)
fsay "phase 2: $SLOW_INSTANCE slowed by ${DELAY_US}us per I/O; waiting up to $DURATION for $ALERT"
T_PENDING=
T_FIRING=
deadline=$((T_SLOW + $(seconds "$DURATION")))
while (($(date +%s) < deadline)); do
	st=$(q "ALERTS{alertname=\"$ALERT\",instance=\"$SLOW_INSTANCE\"}" | grep -o 'alertstate=[a-z]*' | sort -u || true)
	if [ -z "$T_PENDING" ] && [ -n "$st" ]; then
		T_PENDING=$(date +%s)
		fsay "pending after $((T_PENDING - T_SLOW))s"
	fi
	if grep -q firing <<<"$st"; then
		T_FIRING=$(date +%s)
		fsay "firing after $((T_FIRING - T_SLOW))s"
		break
	fi
	nap 5
done
[ -n "$T_FIRING" ] && nap "$(seconds "$HOLD")"
T_END=$(date +%s)
P99_SLOW=$(q1 "histogram_quantile(0.99, sum by (le) (rate(iopulse_probe_latency_seconds_bucket{job=\"iopulse\",instance=\"$SLOW_INSTANCE\",probe=\"read\"}[2m])))")
RSS2=$(rss_kib "$PROM_PID")
RULES_MAX2=$(rule_groups max "$((T_END - T_START))s")

# Every ALERTS sample of the run, raw (a range selector keeps each sample's own
# timestamp): each series' labels, and its first and last sample.
curl -fsS --max-time 60 --data-urlencode "query=ALERTS[$((T_END - T_HOSTS + 60))s]" \
	--data-urlencode "time=$T_END" "$PROM/api/v1/query" >"$WORK/alerts.json"
ALERT_REPORT=$(python3 - "$WORK/alerts.json" "$T_SLOW" "$ALERT" "$SLOW_INSTANCE" <<-'PY'
	import json, sys
	path, t_slow, alert, slow = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
	# Per phase: the series seen (pending, firing) and the hosts they name.
	seen = {"healthy": [set(), set(), set()], "unexpected": [set(), set(), set()]}
	lines = []
	for s in json.load(open(path))["data"]["result"]:
	    m = s["metric"]
	    ts = [v[0] for v in s["values"]]
	    key = ",".join(f"{k}={v}" for k, v in sorted(m.items()) if k not in ("__name__", "alertstate"))
	    state = m.get("alertstate")
	    expected = m.get("alertname") == alert and m.get("instance") == slow
	    for phase, stamps in (("healthy", [t for t in ts if t < t_slow]),
	                          ("unexpected", [t for t in ts if t >= t_slow and not expected])):
	        if stamps:
	            seen[phase][0 if state == "pending" else 1].add(key)
	            seen[phase][2].add(m.get("instance"))
	    mark = "ok " if expected and ts[0] >= t_slow else "BAD"
	    lines.append(f"  {mark} {state} {key}: {len(ts)} samples, "
	                 f"{(ts[0] - t_slow) / 60:+.1f} .. {(ts[-1] - t_slow) / 60:+.1f} min")
	for phase, (p, f, hosts) in seen.items():
	    print(f"{phase}: {len(p)} pending, {len(f)} firing series on {len(hosts)} hosts")
	print("\n".join(sorted(lines, key=lambda l: (l[2:5] != "ok ", l))))
	PY
)
HEALTHY_ALERTS=$(sed -n 's/^healthy: //p' <<<"$ALERT_REPORT")
OTHER_ALERTS=$(sed -n 's/^unexpected: //p' <<<"$ALERT_REPORT")

# ---------------------------------------------------------------- report

kib_mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
per_host() { awk -v a="$1" -v b="$2" -v n="$N" -v s="${3:-1}" 'BEGIN { printf "%.2f", (b - a) / n / s }'; }
mins() { [ -n "$1" ] && awk -v d="$(($1 - T_SLOW))" 'BEGIN { printf "%.1f min", d / 60 }' || echo "not within $DURATION"; }

cat <<EOF

== fleet: $N iopulse instances, one Prometheus, one slow host ==
machine:     $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg); $(prometheus --version 2>&1 | head -1)
hosts:       $N x (read ping + write/fdatasync ping every $PING, null burst of 10000 I/Os every 1m),
             on hangfs over tmpfs; scrape and rule evaluation every $INTERVAL; rules $RULES
slow host:   $SLOW_INSTANCE (h$(printf %03d "$SLOW")), +${DELAY_US} us per read/write/fdatasync after $BASELINE healthy
read p99:    median host $(awk -v v="$P99_PEERS" 'BEGIN { printf "%.1f us", v * 1e6 }') (healthy phase), slow host $(awk -v v="$P99_SLOW" 'BEGIN { printf "%.2f ms", v * 1e3 }') (slowed)

| figure | value |
|---|---|
| series per host, all (min / median / max) | $S_ALL_MIN / $S_ALL_MED / $S_ALL_MAX |
| ... of which iopulse_* from the scrape | $S_OWN_MIN / $S_OWN_MED / $S_OWN_MAX |
| ... of which recording-rule outputs | $S_REC_MIN / $S_REC_MED / $S_REC_MAX |
| samples per scrape (mean) | $SAMPLES |
| Prometheus head series: alone / with the fleet | $HEAD0 / $HEAD1 ($(per_host "$HEAD0" "$HEAD1") per host) |
| Prometheus RSS: alone / end of phase 1 / end of run | $(kib_mib "$RSS0") / $(kib_mib "$RSS1") / $(kib_mib "$RSS2") MiB |
| Prometheus RSS per host (end of phase 1, end of run) | $(per_host "$RSS0" "$RSS1") / $(per_host "$RSS0" "$RSS2") KiB |
| Prometheus Go heap in use, end of phase 1 | $(awk -v v="$HEAP1" 'BEGIN { printf "%.1f MiB", v / 1048576 }') |
| ingestion: alone / with the fleet (samples/s) | $(printf %.1f "$ING0") / $(printf %.1f "$ING1") |
| ingestion per host (samples/s) | $(per_host "$ING0" "$ING1") |
| scrape duration p99 over hosts | $(awk -v v="$SCRAPE_S" 'BEGIN { printf "%.1f ms", v * 1e3 }') |
| rule group evaluation time, mean over phase 1 | $RULES_AVG1 |
| rule group evaluation time, max over phase 1 | $RULES_MAX1 |
| rule group evaluation time, max over the run | $RULES_MAX2 |
| rule evaluation failures / missed iterations, phase 1 | $RULES_EVALS1 / $MISSED1 |
| Prometheus CPU (second half of phase 1) | ${PROM_CPU}% of one CPU |
| iopulse CPU per instance / all $N (second half of phase 1) | ${IOP_CPU}% / ${IOP_CPU_ALL}% of one CPU |
| iopulse RSS per instance (median) | $(kib_mib "$IOP_RSS") MiB |
| hangfs CPU, both (second half of phase 1) | ${FS_CPU}% of one CPU |
| alerts during the healthy phase | $HEALTHY_ALERTS |
| alerts after the slow-down, other than $ALERT of the slow host | $OTHER_ALERTS |
| $ALERT pending after the slow-down | $(mins "$T_PENDING") |
| $ALERT firing after the slow-down | $(mins "$T_FIRING") |

every alert series of the run (ALERTS; minutes from the slow-down, first .. last
sample; a series may come and go in between):
$(sed '/^[a-z]*: /d' <<<"$ALERT_REPORT")
EOF
