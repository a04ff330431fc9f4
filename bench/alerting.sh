#!/usr/bin/env bash
# bench/alerting.sh — how long a storage incident takes to reach the on-call
# engineer with the shipped configuration (issue 24, "Proven end to end").
#
# The incident of tests/integration/test_alerting.sh, at the shipped figures:
# Prometheus 2.42 scraping and evaluating at the intervals of the shipped
# dashboards/prometheus.yml (15s), the shipped dashboards/iopulse.rules.yml, a
# real Alertmanager running the shipped dashboards/alertmanager.yml with only
# its receiver URL changed (to tests/integration/webhook.py), and the daemon's
# defaults (baseline_warmup 10m, slow_factor 4, slow_floor 1ms, ping timeout
# 10s; the default config's rates: a read ping every 1s, a write + fdatasync
# ping every 10s). Only the budget is off (max_duty_cycle 100%,
# max_write_per_day 0), as in the tests.
#
# Targets (all on loopback, in a scratch directory under $BUILD):
#   slowdisk  a directory on two hangfs (tests/integration/hangfs.c) stacked
#             over a tmpfs: the lower one is slow from the start by BASE_US
#             (a ~1ms network disk: a baseline over the 1ms floor, so that the
#             slowdown can be FACTOR x and no more), the upper one is the
#             incident: slowed so that every I/O takes FACTOR (12) x its
#             latency measured before the daemon starts, then frozen, then
#             fast and thawed;
#   moderate  the same stack, slowed at the same moment to MODERATE_FACTOR (5)
#             x, over slow_factor 4 (skipped with MODERATE=0): minutes to the
#             warning; made fast again once it came (or after CEILING);
#   healthy   a plain directory on the build disk (shared with whatever else
#             runs), pinged the same way, with a small read burst every 2m.
#
# Phases:
#   0. warm-up: until the daemon has a baseline for every op (baseline_warmup);
#   1. healthy (HEALTHY_MINUTES, default 60; 0 skips it): nothing changes;
#      every notification is counted, and each target's largest ratio;
#   2. the incident: slowdown, then (once the critical notification came, or
#      after CEILING) the hang, then (once the stuck notification came, or
#      after CEILING) the recovery; then until no alert is active in
#      Prometheus or Alertmanager (pending included), CEILING at most.
# Prints the minutes from each cause to each notification, the distinct alerts
# delivered per target, any "resolved" delivered before the recovery, the
# notifications for healthy, and the largest iopulse_probe_latency_ratio of
# each target while it was healthy (max_over_time: the margin under the
# thresholds). A measurement, not a test: exits 0 whenever it ran.
#
#   bench/alerting.sh                            # as root (mounts tmpfs and FUSE)
#   HEALTHY_MINUTES=0 WARMUP=1m bench/alerting.sh  # a quick run (~20 min)
#
# Environment:
#   BUILD       build directory (build-bench; configured and built here when
#               it has no iopulse)         IOPULSE  binary ($BUILD/iopulse)
#   HANGFS      hangfs binary (compiled here into $BUILD when unset)
#   WARMUP      baseline_warmup of every target (unset: the default, 10m)
#   HEALTHY_MINUTES  the healthy phase (60; 0: none)
#   FACTOR      the slowdown of slowdisk (12)
#   MODERATE    1: the moderate target (1)   MODERATE_FACTOR its slowdown (5)
#   BASE_US     the lower hangfs' constant delay (1000)
#   CEILING     minutes, the longest wait for any one event (30)
# Only ever talks to 127.0.0.1; removes every process, mount and file it made.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$REPO/build-bench}
WARMUP=${WARMUP:-}
HEALTHY_MINUTES=${HEALTHY_MINUTES:-60}
FACTOR=${FACTOR:-12}
MODERATE=${MODERATE:-1}
MODERATE_FACTOR=${MODERATE_FACTOR:-5}
BASE_US=${BASE_US:-1000}
CEILING=${CEILING:-30}
RULES=$REPO/dashboards/iopulse.rules.yml
AM_SHIPPED=$REPO/dashboards/alertmanager.yml
PROM_SHIPPED=$REPO/dashboards/prometheus.yml
AM_BIN=/usr/bin/prometheus-alertmanager

asay() { printf 'alerting.sh: %s\n' "$*" >&2; }
die() { asay "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (it mounts a tmpfs and FUSE filesystems)"
for c in prometheus amtool curl python3 fusermount3 pkg-config gcc; do
	command -v "$c" >/dev/null 2>&1 || die "needs '$c'"
done
[ -x "$AM_BIN" ] || die "needs $AM_BIN (Debian's prometheus-alertmanager)"
[ -c /dev/fuse ] || die "needs /dev/fuse"
for f in "$RULES" "$AM_SHIPPED" "$PROM_SHIPPED"; do
	[ -f "$f" ] || die "no $f"
done
[[ $HEALTHY_MINUTES =~ ^[0-9]+$ && $CEILING =~ ^[1-9][0-9]*$ && $BASE_US =~ ^[1-9][0-9]*$ ]] ||
	die "HEALTHY_MINUTES, CEILING and BASE_US are whole numbers"
for v in "$FACTOR" "$MODERATE_FACTOR"; do
	awk -v f="$v" 'BEGIN { exit !(f + 0 > 1) }' || die "FACTOR and MODERATE_FACTOR are numbers over 1"
done

# The shipped intervals (global scrape_interval and evaluation_interval).
shipped() {
	sed -n "/^global:/,/^[^ ]/s/^ *$1: *\([0-9a-z]*\).*/\1/p" "$PROM_SHIPPED" | head -1
}
SCRAPE=$(shipped scrape_interval)
EVAL=$(shipped evaluation_interval)
[ -n "$SCRAPE" ] && [ -n "$EVAL" ] || die "cannot read the intervals of $PROM_SHIPPED"

if [ -z "${IOPULSE:-}" ] && [ ! -x "$BUILD/iopulse" ]; then
	asay "building iopulse into $BUILD"
	cmake -S "$REPO" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build "$BUILD" -j"$(nproc)" --target iopulse >/dev/null
fi
# shellcheck source=lib.sh
. "$REPO/bench/lib.sh" # BUILD, IOPULSE, WORK (under $BUILD)

bench_hangfs

# ---------------------------------------------------------------- clean-up

PIDS=()   # the daemon, Prometheus, Alertmanager, the receiver: stopped first
FUSE=()   # "pid mountpoint" of each hangfs, upper ones after their lower one
MOUNTS=() # tmpfs mount points
alerting_cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	[ -z "${NAP_PID:-}" ] || kill "$NAP_PID" 2>/dev/null
	bench_stop asay
	exit "$rc"
}
trap alerting_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- helpers

# nap SECONDS: sleep, but let a signal's trap run at once.
nap() {
	sleep "$1" &
	NAP_PID=$!
	wait "$NAP_PID" || true
	NAP_PID=
}

now() { date +%s.%N | cut -c1-14; }

# free_port: a loopback port nobody listens on (now).
free_port() {
	local port
	while :; do
		port=$((20000 + RANDOM % 40000))
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
	done
}

# serve_ready URL PID LOG: wait until URL answers 200, or die showing LOG.
serve_ready() {
	local i
	for i in $(seq 300); do
		curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || break
		sleep 0.2
	done
	cat "$3" >&2
	die "$1 did not become ready"
}

# hangfs_up LOWER MOUNT DELAY_US NAME: a hangfs of LOWER on MOUNT; sets HFS_PID.
hangfs_up() {
	mkdir -p "$2"
	HANGFS_DELAY_US=$3 "$HANGFS" "$1" "$2" >"$WORK/hangfs.$4.log" 2>&1 &
	HFS_PID=$!
	FUSE+=("$HFS_PID $2")
	wait_for 10 "hangfs on $2" grep -qF " $2 " /proc/self/mountinfo
}

# hangfs_say PID NAME TEXT: wait until hangfs NAME has logged TEXT.
hangfs_said() {
	wait_for 10 "hangfs $2: $3" grep -qF "hangfs: $3" "$WORK/hangfs.$2.log"
}

# stack NAME FACTOR: target NAME's stack on $WORK/mnt/NAME: a hangfs slowed by
# BASE_US from the start, and one over it whose delay makes every I/O FACTOR x
# its latency (measured through the stack with iopulse probe, back to back).
# Sets UPPER_PID, MEASURED (what it measured).
stack() {
	local name=$1 factor=$2 lower=$WORK/lower/$1 mnt=$WORK/mnt/$1 delay
	mkdir -p "$WORK/tmpfs/$name"
	hangfs_up "$WORK/tmpfs/$name" "$lower" "$BASE_US" "$name-lower"
	kill -s RTMIN+3 "$HFS_PID"
	hangfs_said "$HFS_PID" "$name-lower" "slow ("
	hangfs_up "$lower" "$mnt" 0 "$name-measure"
	"$IOPULSE" probe -J -q -k -c 50 -i 10ms -S 1m -G -Y "$mnt" >"$WORK/$name.measure.json"
	rm -f "$mnt/iopulse-probe.tmp"
	fusermount3 -u "$mnt"
	wait "$HFS_PID" || true
	unset 'FUSE[${#FUSE[@]}-1]'
	read -r delay MEASURED < <(python3 - "$WORK/$name.measure.json" "$factor" <<-'PY'
		import json, sys
		ops = json.load(open(sys.argv[1]))["probes"][0]["ops"]
		base = max(o["latency_seconds"]["p50"] for o in ops)
		print(round(base * (float(sys.argv[2]) - 1) * 1e6),
		      ", ".join("%s p50 %.2fms" % (o["op"], o["latency_seconds"]["p50"] * 1e3) for o in ops))
		PY
	)
	hangfs_up "$lower" "$mnt" "$delay" "$name"
	UPPER_PID=$HFS_PID
	UPPER_DELAY=$delay
}

# ---------------------------------------------------------------- targets

mkdir -p "$WORK/tmpfs" "$WORK/healthy" "$WORK/am" "$WORK/prom"
mount -t tmpfs -o size=64m,mode=0700 iopulse-alerting "$WORK/tmpfs"
MOUNTS+=("$WORK/tmpfs")
stack slowdisk "$FACTOR"
SLOW_FS=$UPPER_PID SLOW_DELAY=$UPPER_DELAY SLOW_MEASURED=$MEASURED
TARGETS=(slowdisk healthy)
MOD_FS=
if [ "$MODERATE" = 1 ]; then
	stack moderate "$MODERATE_FACTOR"
	MOD_FS=$UPPER_PID MOD_DELAY=$UPPER_DELAY MOD_MEASURED=$MEASURED
	TARGETS+=(moderate)
fi

# ---------------------------------------------------------------- the receiver, Alertmanager

HOOK=$WORK/notifications.jsonl
python3 "$REPO/tests/integration/webhook.py" "$WORK/hook.port" "$HOOK" >"$WORK/webhook.log" 2>&1 &
PIDS+=($!)
wait_for 30 "the webhook receiver" test -s "$WORK/hook.port"
read -r HOOK_PORT <"$WORK/hook.port"

n=$(grep -c 'http://127\.0\.0\.1:9095/' "$AM_SHIPPED" || true)
[ "$n" = 1 ] || die "$AM_SHIPPED: want the receiver URL http://127.0.0.1:9095/ once, found $n"
sed "s|http://127\.0\.0\.1:9095/|http://127.0.0.1:$HOOK_PORT/|" "$AM_SHIPPED" >"$WORK/am/alertmanager.yml"
amtool check-config "$WORK/am/alertmanager.yml" >/dev/null || die "amtool check-config failed"
AM_PORT=$(free_port)
"$AM_BIN" --config.file="$WORK/am/alertmanager.yml" --storage.path="$WORK/am/data" \
	--web.listen-address="127.0.0.1:$AM_PORT" --cluster.listen-address= >"$WORK/am/log" 2>&1 &
AM_PID=$!
PIDS+=("$AM_PID")
AM=http://127.0.0.1:$AM_PORT
serve_ready "$AM/-/ready" "$AM_PID" "$WORK/am/log"

# ---------------------------------------------------------------- the daemon

{
	echo "splay: false"
	echo "targets:"
	for t in "${TARGETS[@]}"; do
		dir=$WORK/mnt/$t
		[ "$t" = healthy ] && dir=$WORK/healthy
		cat <<-EOF
			  - name: $t
			    directory: $dir
			    size: 4MiB
			    max_duty_cycle: 100%
			    max_write_per_day: 0
		EOF
		[ -z "$WARMUP" ] || echo "    baseline_warmup: $WARMUP"
	done
	echo "probes:"
	for t in "${TARGETS[@]}"; do
		cat <<-EOF
			  - {name: $t-read, type: ping, target: $t, op: read, interval: 1s}
			  - {name: $t-write, type: ping, target: $t, op: write, sync: fdatasync, interval: 10s}
		EOF
	done
	echo "  - {name: healthy-burst, type: burst, target: healthy, rw: randread, iodepth: 4, ios: 5000, every: 2m}"
} >"$WORK/iopulse.yaml"
"$IOPULSE" run --config "$WORK/iopulse.yaml" --listen 127.0.0.1:0 >"$WORK/iopulse.log" 2>&1 &
IOP_PID=$!
PIDS+=("$IOP_PID")
port=
for _ in $(seq 150); do
	port=$(sed -n 's|.*Serving metrics on http://127\.0\.0\.1:\([0-9][0-9]*\)/metrics.*|\1|p' "$WORK/iopulse.log" | head -1)
	[ -n "$port" ] && break
	kill -0 "$IOP_PID" 2>/dev/null || break
	sleep 0.2
done
[ -n "$port" ] || { cat "$WORK/iopulse.log" >&2; die "iopulse did not start"; }
IOP=http://127.0.0.1:$port

# ---------------------------------------------------------------- Prometheus

PROM_PORT=$(free_port)
cat >"$WORK/prom/prometheus.yml" <<EOF
global:
  scrape_interval: $SCRAPE
  evaluation_interval: $EVAL
rule_files:
  - $RULES
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['127.0.0.1:$AM_PORT']
scrape_configs:
  - job_name: iopulse
    scrape_timeout: 10s
    static_configs:
      - targets: ['127.0.0.1:$port']
EOF
prometheus --config.file="$WORK/prom/prometheus.yml" --storage.tsdb.path="$WORK/prom/data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$WORK/prom/log" 2>&1 &
PROM_PID=$!
PIDS+=("$PROM_PID")
PROM=http://127.0.0.1:$PROM_PORT
serve_ready "$PROM/-/ready" "$PROM_PID" "$WORK/prom/log"
T_START=$(now)
asay "$(prometheus --version 2>&1 | awk 'NR == 1 { print $3 }') scraping and evaluating every $SCRAPE/$EVAL; alertmanager $("$AM_BIN" --version 2>&1 | awk 'NR == 1 { print $3 }'), the shipped config; iopulse on $IOP"

# ---------------------------------------------------------------- watching

# tick: one look at everything (every 5s): each target's state in /status.json
# (a line of states.tsv on each change: "TIME TARGET STATE SINCE") and each
# alert's state in Prometheus (a line of prom.tsv on each change: "TIME
# ALERTNAME SEVERITY TARGET STATE"); notifications arrive by themselves.
declare -A LAST_STATE LAST_ALERT
tick() {
	local t line key
	t=$(now)
	while read -r line; do
		key=${line%% *}
		[ "${LAST_STATE[$key]:-}" = "$line" ] && continue
		LAST_STATE[$key]=$line
		echo "$t $line" >>"$WORK/states.tsv"
	done < <(curl -fsS --max-time 10 "$IOP/status.json" 2>/dev/null | python3 -c '
import json, sys
for t in json.load(sys.stdin)["targets"]:
    print(t["name"], t.get("state"), t.get("since"))' 2>/dev/null || true)
	local now_alerts=()
	while read -r line; do
		[ -n "$line" ] || continue
		now_alerts+=("$line")
	done < <(curl -fsS --max-time 10 "$PROM/api/v1/alerts" 2>/dev/null | python3 -c '
import json, sys
for a in json.load(sys.stdin)["data"]["alerts"]:
    l = a["labels"]
    print(l.get("alertname"), l.get("severity", "-"), l.get("target", "-"), a["state"])' 2>/dev/null || true)
	local seen=" "
	for line in "${now_alerts[@]}"; do
		key=${line% *}
		seen+="$key|"
		[ "${LAST_ALERT[$key]:-}" = "$line" ] && continue
		LAST_ALERT[$key]=$line
		echo "$t $line" >>"$WORK/prom.tsv"
	done
	for key in "${!LAST_ALERT[@]}"; do
		[[ $seen == *"$key|"* ]] && continue
		unset 'LAST_ALERT[$key]'
		echo "$t $key inactive" >>"$WORK/prom.tsv"
	done
}
: >"$WORK/states.tsv"
: >"$WORK/prom.tsv"

# watch_until MINUTES CMD...: tick every 5s until CMD succeeds (status 0) or
# MINUTES have passed (status 1).
watch_until() {
	local deadline
	deadline=$(awk -v s="$SECONDS" -v m="$1" 'BEGIN { printf "%d", s + m * 60 }')
	shift
	while :; do
		tick
		"$@" && return 0
		((SECONDS < deadline)) || return 1
		kill -0 "$IOP_PID" 2>/dev/null || die "iopulse exited: $(tail -5 "$WORK/iopulse.log")"
		kill -0 "$PROM_PID" 2>/dev/null || die "prometheus exited"
		kill -0 "$AM_PID" 2>/dev/null || die "alertmanager exited"
		nap 5
	done
}

# notified STATUS ALERTNAME SEVERITY TARGET (webhook.py's .tsv; SEVERITY ""
# for any).
notified() {
	awk -F'\t' -v st="$1" -v a="$2" -v sev="$3" -v t="$4" '
		$3 == st && $4 == a && (sev == "" || $5 == sev) && $6 == t { found = 1; exit }
		END { exit !found }' "$HOOK.tsv"
}

baselines() { # every ping op of every target has its baseline
	[ "$(q 'count(iopulse_probe_latency_baseline_seconds{percentile="50",probe=~".*-(read|write)"})' |
		awk '{ print $NF }')" = $((${#TARGETS[@]} * 3)) ]
}
quiet() {
	[ -z "$(curl -fsS --max-time 10 "$PROM/api/v1/alerts" | python3 -c '
import json, sys
print(len(json.load(sys.stdin)["data"]["alerts"]) or "")')" ] &&
		[ "$(curl -fsS --max-time 10 "$AM/api/v2/alerts" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')" = 0 ]
}

mark() { # mark NAME: the time of an event, for the report
	echo "$1 $(now)" >>"$WORK/marks"
	asay "$(date +%T) $1"
}
: >"$WORK/marks"

# ---------------------------------------------------------------- 0. warm-up

asay "phase 0: warm-up (baseline_warmup ${WARMUP:-10m (default)})"
mark start
watch_until "$((CEILING + 30))" baselines || die "no baseline for every op after $((CEILING + 30)) minutes"
mark baseline
BASELINES=$(q 'iopulse_probe_latency_baseline_seconds{percentile="50"}' | sed 's/^/  /')

# ---------------------------------------------------------------- 1. healthy

if ((HEALTHY_MINUTES > 0)); then
	asay "phase 1: $HEALTHY_MINUTES minutes healthy"
	mark healthy_start
	watch_until "$HEALTHY_MINUTES" false || true
	mark healthy_end
	HEALTHY_RATIOS=$(q "max by (target) (max_over_time(iopulse_probe_latency_ratio[${HEALTHY_MINUTES}m]))")
fi

# ---------------------------------------------------------------- 2. the incident

asay "phase 2: slowdown (slowdisk ${SLOW_DELAY}us per I/O, ${FACTOR}x${MOD_FS:+; moderate ${MOD_DELAY:-}us, ${MODERATE_FACTOR}x})"
kill -s RTMIN+3 "$SLOW_FS"
[ -z "$MOD_FS" ] || kill -s RTMIN+3 "$MOD_FS"
mark slow
SLOW_RATIOS=
slow_ratios() { # the daemon's ratios once slowdisk is slow
	grep -q ' slowdisk slow ' "$WORK/states.tsv" || return 1
	SLOW_RATIOS=$(q 'iopulse_probe_latency_ratio' | sed 's/^/  /')
	notified firing IopulseLatencyRegression critical slowdisk
}
watch_until "$CEILING" slow_ratios || asay "no critical notification for slowdisk within $CEILING minutes"
[ -n "$SLOW_RATIOS" ] || SLOW_RATIOS=$(q 'iopulse_probe_latency_ratio' | sed 's/^/  /')

kill -USR1 "$SLOW_FS"
mark hang
watch_until "$CEILING" notified firing IopulseTargetStuck critical slowdisk ||
	asay "no stuck notification for slowdisk within $CEILING minutes"

kill -s RTMIN+4 "$SLOW_FS"
kill -USR2 "$SLOW_FS"
mark recovery
if [ -n "$MOD_FS" ]; then
	watch_until "$CEILING" notified firing IopulseLatencyRegression warning moderate ||
		asay "no warning for moderate within $CEILING minutes of the slowdown"
	kill -s RTMIN+4 "$MOD_FS"
	mark moderate_recovery
fi
watch_until "$CEILING" quiet || asay "alerts still active $CEILING minutes after the recovery"
mark end
T_END=$(now)
RUN_RATIOS=$(q "max by (target) (max_over_time(iopulse_probe_latency_ratio[$(awk -v a="$T_START" -v b="$T_END" 'BEGIN { printf "%d", b - a + 60 }')s]))")

# ---------------------------------------------------------------- report

cat <<EOF

== alerting: one incident at the shipped settings ==
machine:     $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $(prometheus --version 2>&1 | head -1); alertmanager $("$AM_BIN" --version 2>&1 | awk 'NR == 1 { print $3 }')
prometheus:  scrape $SCRAPE, evaluation $EVAL, $RULES
alertmanager: $AM_SHIPPED, receiver URL only changed
daemon:      baseline_warmup ${WARMUP:-10m (default)}, read ping 1s, write+fdatasync ping 10s, defaults otherwise
slowdisk:    ${SLOW_MEASURED} before the daemon (hangfs x2, lower +${BASE_US}us); slowdown +${SLOW_DELAY}us (${FACTOR}x)
EOF
[ -z "$MOD_FS" ] || echo "moderate:    ${MOD_MEASURED} before the daemon; slowdown +${MOD_DELAY}us (${MODERATE_FACTOR}x)"
cat <<EOF
baselines (p50) when the warm-up ended:
$BASELINES
ratios when slowdisk was slow (at its critical notification):
$SLOW_RATIOS
EOF
python3 - "$HOOK" "$WORK/marks" "$WORK/states.tsv" "$WORK/prom.tsv" <<-'PY'
	import json, sys
	hook, marks, states, prom = sys.argv[1:5]
	m = {}
	for line in open(marks):
	    k, t = line.split()
	    m.setdefault(k, float(t))
	notes = [json.loads(line) for line in open(hook)]
	def mins(t, since):
	    return f"{(t - m[since]) / 60:.1f} min" if t is not None and since in m else "-"
	first = {}  # (status, alertname, severity, target) -> first received
	for n in notes:
	    for a in n.get("alerts", []):
	        l = a["labels"]
	        key = (a["status"], l.get("alertname"), l.get("severity", ""), l.get("target", ""))
	        first.setdefault(key, n["received"])
	print("\n| from | to | minutes |\n|---|---|---|")
	rows = [("slow", "firing", "IopulseLatencyRegression", "critical", "slowdisk"),
	        ("slow", "firing", "IopulseLatencyRegression", "warning", "slowdisk"),
	        ("hang", "firing", "IopulseTargetStuck", "critical", "slowdisk"),
	        ("recovery", "resolved", "IopulseTargetStuck", "critical", "slowdisk"),
	        ("recovery", "resolved", "IopulseLatencyRegression", "critical", "slowdisk"),
	        ("slow", "firing", "IopulseLatencyRegression", "warning", "moderate"),
	        ("moderate_recovery", "resolved", "IopulseLatencyRegression", "warning", "moderate")]
	for since, *key in rows:
	    t = first.get(tuple(key))
	    print(f"| {since} | {key[1]} {key[2]} {key[3]} {key[0]} | {mins(t, since) if t else 'not delivered'} |")
	# The daemon and Prometheus on the way (first time seen by the 5s poll).
	for line in open(states):
	    t, target, state, since = line.split()[:4]
	    if target == "slowdisk" and state in ("slow", "stuck") and "slow" in m:
	        ref = "slow" if state == "slow" else "hang"
	        if f"state_{state}" not in m and float(t) >= m[ref]:
	            m[f"state_{state}"] = float(t)
	            print(f"| {ref} | daemon: slowdisk {state} (/status.json) | {mins(float(t), ref)} |")
	seen = set()
	for line in open(prom):
	    t, name, sev, target, state = line.split()
	    if target == "slowdisk" and state == "firing" and (name, sev) not in seen and "slow" in m:
	        seen.add((name, sev))
	        ref = "hang" if name == "IopulseTargetStuck" else "slow"
	        print(f"| {ref} | prometheus: {name} {sev} firing | {mins(float(t), ref)} |")
	print()
	for target in ("slowdisk", "moderate", "healthy"):
	    fired = sorted({(k[1], k[2]) for k in first if k[0] == "firing" and k[3] == target})
	    print(f"{target}: {len(fired)} distinct alerts delivered: "
	          + (", ".join(f"{a}/{s}" for a, s in fired) or "none"))
	other = sorted({(k[1], k[2], k[3]) for k in first if k[0] == "firing"
	                and k[3] not in ("slowdisk", "moderate", "healthy")})
	if other:
	    print("other alerts delivered: " + ", ".join("/".join(o) for o in other))
	early = [(a["labels"].get("alertname"), a["labels"].get("target"), n["received"])
	         for n in notes for a in n.get("alerts", [])
	         if a["status"] == "resolved" and "recovery" in m and n["received"] < m["recovery"]
	         and a["labels"].get("target") == "slowdisk"]
	print(f"resolved for slowdisk before its recovery: {len(early)}"
	      + "".join(f"\n  {a} {mins(t, 'slow')} after the slowdown" for a, _, t in early))
	healthy = [n for n in notes for a in n.get("alerts", []) if a["labels"].get("target") == "healthy"]
	print(f"notifications for healthy over the run: {len(healthy)}")
	if "healthy_start" in m:
	    h = [n for n in notes if m["healthy_start"] <= n["received"] <= m["healthy_end"]]
	    print(f"notifications of any target during the healthy phase "
	          f"({(m['healthy_end'] - m['healthy_start']) / 60:.0f} min): {len(h)}")
	print(f"notifications in all: {len(notes)}; the warm-up took {(m['baseline'] - m['start']) / 60:.1f} min, "
	      f"the rest {(m['end'] - m['baseline']) / 60:.1f} min")
	PY
cat <<EOF
largest iopulse_probe_latency_ratio during the healthy phase (max_over_time):
$(sed 's/^/  /' <<<"${HEALTHY_RATIOS:-(no healthy phase)}")
largest iopulse_probe_latency_ratio over the whole run:
$(sed 's/^/  /' <<<"$RUN_RATIOS")
EOF
