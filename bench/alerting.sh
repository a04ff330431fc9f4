#!/usr/bin/env bash
# bench/alerting.sh — how long a storage incident takes to reach the on-call
# engineer with the shipped configuration, for every shape of regression
# (issue 24, "Proven end to end"; issue 29, the tail, the stalls, the fast
# device and the restart).
#
# The shipped figures: Prometheus 2.42 scraping and evaluating at the
# intervals of the shipped dashboards/prometheus.yml (15s), the shipped
# dashboards/iopulse.rules.yml, a real Alertmanager running the shipped
# dashboards/alertmanager.yml with only its receiver URL changed (to
# tests/integration/webhook.py), and the daemon's defaults (baseline_warmup
# 10m, slow_factor 4, slow_floor auto, tail_factor 4, tail_share 2%, stall 1s,
# slow_minutes 2, ok_minutes 3, ping timeout 10s; the default config's rates:
# a read ping every 1s, a write + fdatasync ping every 10s). Only the budget is
# off (max_duty_cycle 100%, max_write_per_day 0), as in the tests, and the
# daemon keeps a state file (state_directory) in the scratch directory.
#
# Targets (all on loopback, in a scratch directory under $BUILD; each on a
# hangfs of its own, tests/integration/hangfs.c, over one tmpfs, so that no
# shape's freeze or delay reaches another):
#   slowdisk  two hangfs stacked: the lower one slow from the start by BASE_US
#             (a ~1ms network disk), the upper one the incident: slowed so
#             that every I/O takes FACTOR (12) x its latency measured before
#             the daemon starts, then frozen, then fast and thawed;
#   moderate  the same stack, slowed at the same moment to MODERATE_FACTOR (5)
#             x (skipped with MODERATE=0); fast again once notified;
#   tail      the same stack; at the same moment one request in TAIL_ONE_IN
#             (25: 4%) waits TAIL_US (40000) more, the median unchanged;
#             fast again once notified;
#   stalls    one hangfs of fixed latency (BASE_US), frozen STALL_SECS (3) every
#             STALL_EVERY (60) seconds, STALL_COUNT (10) times, from the same
#             moment;
#   fast      one hangfs at FUSE's own speed (no delay), slowed at the same
#             moment so that a read takes FAST_FACTOR (6) x its p50 measured
#             before the daemon starts (under 1 ms); fast again once notified;
#   restart   the slowdisk stack, slowed FACTOR x in the last phase; the daemon
#             is stopped (SIGTERM) RESTART_AFTER (3) minutes into it and started
#             again with the same state_directory, the disk kept slow for
#             RESTART_HOLD (8) minutes more, then fast;
#   healthy   the control: one hangfs of fixed latency (BASE_US), untouched;
#   healthydisk  a plain directory on the build disk (shared with whatever
#             else runs), with a small read burst every 2m: reported apart,
#             since it measures the machine as much as the rules.
#
# Phases (one daemon, one Prometheus, one Alertmanager throughout):
#   0. warm-up: until the daemon has a baseline for every op (baseline_warmup);
#   1. healthy (HEALTHY_MINUTES, default 60; 0 skips it): nothing changes;
#      every notification is counted, and each target's largest ratio;
#   2. the shapes, all from one moment: slowdisk's slowdown, then (once its
#      critical notification came, or after CEILING) its hang, then (once the
#      stuck notification came, or after CEILING) its recovery; moderate, tail
#      and fast until each is notified (or CEILING); the stalls until their
#      last freeze;
#   3. the restart: restart's slowdown, the daemon restarted, the recovery;
#      then until no alert is active in Prometheus or Alertmanager (pending
#      included) and every alert told firing was told resolved, CEILING (at
#      least 15) minutes at most.
# Prints, per target, the minutes from each cause to each notification (status,
# alertname, severity, the reason code its text gives) and to each change of
# the daemon's state (with its reason code), any "resolved" delivered before
# the target's recovery, the notifications for the healthy targets, and the
# largest iopulse_probe_latency_ratio of each target while it was healthy
# (max_over_time: the margin under the thresholds). A measurement, not a test:
# exits 0 whenever it ran.
#
#   bench/alerting.sh                            # as root (mounts tmpfs and FUSE)
#   HEALTHY_MINUTES=0 WARMUP=2m bench/alerting.sh  # a quick run (~40 min)
#   SHAPES=0 FIO_IOPS=300 bench/alerting.sh      # an hour of a healthy host, fio beside
#
# Environment:
#   BUILD       build directory (build-bench; configured and built here when
#               it has no iopulse)         IOPULSE  binary ($BUILD/iopulse)
#   HANGFS      hangfs binary (compiled here into $BUILD when unset)
#   WARMUP      baseline_warmup of every target (unset: the default, 10m)
#   HEALTHY_MINUTES  the healthy phase (60; 0: none)
#   SHAPES      0: stop after the healthy phase, no shapes and no restart (1)
#   FIO_IOPS    a real workload beside healthydisk, on its filesystem, from
#               before the daemon starts until the healthy phase ends: fio,
#               4k random reads and writes, O_DIRECT, this many reads and as
#               many writes a second, over a 256MiB file of its own laid out
#               first (0: none)
#   FACTOR      the slowdown of slowdisk and restart (12)
#   MODERATE    1: the moderate target (1)   MODERATE_FACTOR its slowdown (5)
#   BASE_US     the fixed delay of the ~1ms hangfs (1000)
#   TAIL_ONE_IN, TAIL_US   the tail: one request in N (25) delayed by (40000) us
#   STALL_SECS, STALL_EVERY, STALL_COUNT   the stalls (3, 60, 10)
#   FAST_FACTOR the slowdown of fast (6)
#   RESTART_AFTER, RESTART_HOLD   minutes of restart's slowdown before the
#               daemon's restart (3), and after it (8)
#   CEILING     minutes, the longest wait for any one event (30; the last
#               wait, for the alerts' end, at least 15)
# Only ever talks to 127.0.0.1; removes every process, mount and file it made.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$REPO/build-bench}
WARMUP=${WARMUP:-}
HEALTHY_MINUTES=${HEALTHY_MINUTES:-60}
SHAPES=${SHAPES:-1}
FIO_IOPS=${FIO_IOPS:-0}
FACTOR=${FACTOR:-12}
MODERATE=${MODERATE:-1}
MODERATE_FACTOR=${MODERATE_FACTOR:-5}
BASE_US=${BASE_US:-1000}
CEILING=${CEILING:-30}
TAIL_ONE_IN=${TAIL_ONE_IN:-25}
TAIL_US=${TAIL_US:-40000}
STALL_SECS=${STALL_SECS:-3}
STALL_EVERY=${STALL_EVERY:-60}
STALL_COUNT=${STALL_COUNT:-10}
FAST_FACTOR=${FAST_FACTOR:-6}
RESTART_AFTER=${RESTART_AFTER:-3}
RESTART_HOLD=${RESTART_HOLD:-8}
RULES=$REPO/dashboards/iopulse.rules.yml
AM_SHIPPED=$REPO/dashboards/alertmanager.yml
PROM_SHIPPED=$REPO/dashboards/prometheus.yml
AM_BIN=/usr/bin/prometheus-alertmanager

asay() { printf 'alerting.sh: %s\n' "$*" >&2; }
die() { asay "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (it mounts a tmpfs and FUSE filesystems)"
for c in prometheus amtool curl python3 fusermount3 pkg-config gcc /usr/bin/kill; do
	command -v "$c" >/dev/null 2>&1 || die "needs '$c'"
done
[ -x "$AM_BIN" ] || die "needs $AM_BIN (Debian's prometheus-alertmanager)"
[ -c /dev/fuse ] || die "needs /dev/fuse"
for f in "$RULES" "$AM_SHIPPED" "$PROM_SHIPPED"; do
	[ -f "$f" ] || die "no $f"
done
[[ $HEALTHY_MINUTES =~ ^[0-9]+$ && $CEILING =~ ^[1-9][0-9]*$ && $BASE_US =~ ^[1-9][0-9]*$ ]] ||
	die "HEALTHY_MINUTES, CEILING and BASE_US are whole numbers"
[[ $SHAPES =~ ^[01]$ ]] || die "SHAPES is 0 or 1"
[[ $FIO_IOPS =~ ^[0-9]+$ ]] || die "FIO_IOPS is a whole number"
((FIO_IOPS == 0)) || command -v fio >/dev/null 2>&1 || die "FIO_IOPS needs 'fio'"
((SHAPES || HEALTHY_MINUTES)) || die "SHAPES=0 with HEALTHY_MINUTES=0 measures nothing"
for v in "$TAIL_ONE_IN" "$TAIL_US" "$STALL_SECS" "$STALL_EVERY" "$STALL_COUNT" "$RESTART_AFTER" "$RESTART_HOLD"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] ||
		die "TAIL_ONE_IN, TAIL_US, STALL_SECS, STALL_EVERY, STALL_COUNT, RESTART_AFTER and RESTART_HOLD are whole numbers over 0"
done
((STALL_SECS < STALL_EVERY)) || die "STALL_SECS must be under STALL_EVERY"
for v in "$FACTOR" "$MODERATE_FACTOR" "$FAST_FACTOR"; do
	awk -v f="$v" 'BEGIN { exit !(f + 0 > 1) }' || die "FACTOR, MODERATE_FACTOR and FAST_FACTOR are numbers over 1"
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
	# The freezes first: bench_stop thaws every hangfs before it stops the
	# daemon, and a freeze after that would hold the daemon's exit.
	[ -z "${STALL_PID:-}" ] || { kill "$STALL_PID" 2>/dev/null; wait "$STALL_PID" 2>/dev/null; }
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

# hangfs_up LOWER MOUNT DELAY_US NAME [ONE_IN]: a hangfs of LOWER on MOUNT (once
# slow, one request in ONE_IN waits, default every one); sets HFS_PID.
hangfs_up() {
	mkdir -p "$2"
	HANGFS_DELAY_US=$3 HANGFS_SLOW_ONE_IN=${5:-1} "$HANGFS" "$1" "$2" >"$WORK/hangfs.$4.log" 2>&1 &
	HFS_PID=$!
	FUSE+=("$HFS_PID $2")
	wait_for 10 "hangfs on $2" grep -qF " $2 " /proc/self/mountinfo
}

# hangfs_say PID NAME TEXT: wait until hangfs NAME has logged TEXT.
hangfs_said() {
	wait_for 10 "hangfs $2: $3" grep -qF "hangfs: $3" "$WORK/hangfs.$2.log"
}

# stack NAME FACTOR [LOWER_US [OP]]: target NAME's stack on $WORK/mnt/NAME: a
# hangfs slowed by LOWER_US (BASE_US; 0: none, the upper one is then straight
# over the tmpfs, at FUSE's own speed) from the start, and one over it whose
# delay makes every I/O of OP (the slowest op when unset) FACTOR x its p50,
# measured through the stack with iopulse probe, back to back. Sets UPPER_PID,
# UPPER_DELAY, MEASURED (what it measured).
stack() {
	local name=$1 factor=$2 base=${3:-$BASE_US} op=${4:-} lower=$WORK/lower/$1 mnt=$WORK/mnt/$1 delay
	mkdir -p "$WORK/tmpfs/$name"
	if ((base > 0)); then
		hangfs_up "$WORK/tmpfs/$name" "$lower" "$base" "$name-lower"
		kill -s RTMIN+3 "$HFS_PID"
		hangfs_said "$HFS_PID" "$name-lower" "slow ("
	else
		lower=$WORK/tmpfs/$name
	fi
	hangfs_up "$lower" "$mnt" 0 "$name-measure"
	"$IOPULSE" probe -J -q -k -c 50 -i 10ms -S 1m -G -Y "$mnt" >"$WORK/$name.measure.json"
	rm -f "$mnt/iopulse-probe.tmp"
	fusermount3 -u "$mnt"
	wait "$HFS_PID" || true
	unset 'FUSE[${#FUSE[@]}-1]'
	read -r delay MEASURED < <(python3 - "$WORK/$name.measure.json" "$factor" "$op" <<-'PY'
		import json, sys
		ops = json.load(open(sys.argv[1]))["probes"][0]["ops"]
		base = max(o["latency_seconds"]["p50"] for o in ops if sys.argv[3] in ("", o["op"]))
		print(round(base * (float(sys.argv[2]) - 1) * 1e6),
		      ", ".join("%s p50 %.0fus" % (o["op"], o["latency_seconds"]["p50"] * 1e6) for o in ops))
		PY
	)
	hangfs_up "$lower" "$mnt" "$delay" "$name"
	UPPER_PID=$HFS_PID
	UPPER_DELAY=$delay
}

# fixed NAME: target NAME on $WORK/mnt/NAME, one hangfs of the fixed latency
# BASE_US over the tmpfs; sets HFS_PID.
fixed() {
	mkdir -p "$WORK/tmpfs/$1"
	hangfs_up "$WORK/tmpfs/$1" "$WORK/mnt/$1" "$BASE_US" "$1"
	kill -s RTMIN+3 "$HFS_PID"
	hangfs_said "$HFS_PID" "$1" "slow ("
}

# ---------------------------------------------------------------- targets

mkdir -p "$WORK/tmpfs" "$WORK/healthy" "$WORK/am" "$WORK/prom" "$WORK/state"
mount -t tmpfs -o size=128m,mode=0700 iopulse-alerting "$WORK/tmpfs"
MOUNTS+=("$WORK/tmpfs")
stack slowdisk "$FACTOR"
SLOW_FS=$UPPER_PID SLOW_DELAY=$UPPER_DELAY SLOW_MEASURED=$MEASURED
TARGETS=(slowdisk)
MOD_FS=
if [ "$MODERATE" = 1 ]; then
	stack moderate "$MODERATE_FACTOR"
	MOD_FS=$UPPER_PID MOD_DELAY=$UPPER_DELAY MOD_MEASURED=$MEASURED
	TARGETS+=(moderate)
fi
# The tail: the ~1ms stack, its upper hangfs delaying one request in
# TAIL_ONE_IN by TAIL_US once slow.
mkdir -p "$WORK/tmpfs/tail"
hangfs_up "$WORK/tmpfs/tail" "$WORK/lower/tail" "$BASE_US" tail-lower
kill -s RTMIN+3 "$HFS_PID"
hangfs_said "$HFS_PID" tail-lower "slow ("
hangfs_up "$WORK/lower/tail" "$WORK/mnt/tail" "$TAIL_US" tail "$TAIL_ONE_IN"
TAIL_FS=$HFS_PID
fixed stalls
STALL_FS=$HFS_PID
stack fast "$FAST_FACTOR" 0 read
FAST_FS=$UPPER_PID FAST_DELAY=$UPPER_DELAY FAST_MEASURED=$MEASURED
stack restart "$FACTOR"
RESTART_FS=$UPPER_PID RESTART_DELAY=$UPPER_DELAY RESTART_MEASURED=$MEASURED
fixed healthy
TARGETS+=(tail stalls fast restart healthy healthydisk)

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

# ---------------------------------------------------------------- fio beside

# A real workload on healthydisk's filesystem, from before the daemon learns its
# baseline (a host's workload is there all along) to the end of the healthy
# phase: the daemon must judge healthydisk healthy beside it, fdatasync noise
# and all. Its own directory, never the target's.
FIO_PID=
FIO_ARGS=(--name=beside --directory="$WORK/fio" --size=256MiB --rw=randrw --rwmixread=50
	--bs=4k --direct=1 --ioengine=psync)
if ((FIO_IOPS > 0)); then
	mkdir -p "$WORK/fio"
	# Its file laid out first, so that the daemon starts beside the workload
	# itself, not beside 256MiB of sequential writes.
	fio "${FIO_ARGS[@]}" --create_only=1 >"$WORK/fio.log" 2>&1 || die "fio could not lay out its file: $(tail -3 "$WORK/fio.log")"
	fio "${FIO_ARGS[@]}" --rate_iops="$FIO_IOPS" --time_based --runtime=100d \
		--output="$WORK/fio.out" >>"$WORK/fio.log" 2>&1 &
	FIO_PID=$!
	PIDS+=("$FIO_PID")
fi
fio_stop() { # fio stopped (it leaves PIDS), its figures kept for the report
	local p keep=()
	[ -n "$FIO_PID" ] || return 0
	kill -0 "$FIO_PID" 2>/dev/null || asay "fio had stopped before the end of the healthy phase: $(tail -3 "$WORK/fio.log")"
	kill -INT "$FIO_PID" 2>/dev/null || true
	wait "$FIO_PID" 2>/dev/null || true
	for p in "${PIDS[@]}"; do [ "$p" = "$FIO_PID" ] || keep+=("$p"); done
	PIDS=("${keep[@]}")
	FIO_SUMMARY=$(grep -E '^ *(read|write): IOPS=|clat percentiles|50\.00th|99\.00th' "$WORK/fio.out" 2>/dev/null | sed 's/^ */  /' || true)
	FIO_PID=
}

# ---------------------------------------------------------------- the daemon

{
	echo "splay: false"
	echo "state_directory: $WORK/state"
	echo "targets:"
	for t in "${TARGETS[@]}"; do
		dir=$WORK/mnt/$t
		[ "$t" = healthydisk ] && dir=$WORK/healthy
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
	echo "  - {name: healthydisk-burst, type: burst, target: healthydisk, rw: randread, iodepth: 4, ios: 5000, every: 2m}"
} >"$WORK/iopulse.yaml"

# daemon_start N: the daemon, its log in iopulse.N.log, on the one port (the
# same instance to Prometheus across a restart); sets IOP_PID.
port=$(free_port)
IOP=http://127.0.0.1:$port
daemon_start() {
	local log=$WORK/iopulse.$1.log
	"$IOPULSE" run --config "$WORK/iopulse.yaml" --listen "127.0.0.1:$port" >"$log" 2>&1 &
	IOP_PID=$!
	PIDS+=("$IOP_PID")
	for _ in $(seq 150); do
		grep -qF "Serving metrics on $IOP/metrics" "$log" && return 0
		kill -0 "$IOP_PID" 2>/dev/null || break
		sleep 0.2
	done
	cat "$log" >&2
	die "iopulse did not start"
}

# daemon_stop: SIGTERM, and wait for the daemon to exit; it leaves PIDS.
daemon_stop() {
	local p keep=()
	kill -TERM "$IOP_PID"
	wait "$IOP_PID" || true
	for p in "${PIDS[@]}"; do
		[ "$p" = "$IOP_PID" ] || keep+=("$p")
	done
	PIDS=("${keep[@]}")
}
daemon_start 1

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
# (a line of states.tsv on each change: "TIME TARGET STATE SINCE REASON") and each
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
    print(t["name"], t.get("state"), t.get("since"), t.get("reason_code") or "-")' 2>/dev/null || true)
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
		kill -0 "$IOP_PID" 2>/dev/null || die "iopulse exited: $(tail -5 "$WORK"/iopulse.*.log)"
		kill -0 "$PROM_PID" 2>/dev/null || die "prometheus exited"
		kill -0 "$AM_PID" 2>/dev/null || die "alertmanager exited"
		nap 5
	done
}

# notified STATUS ALERTNAME SEVERITY TARGET (webhook.py's .tsv; ALERTNAME or
# SEVERITY "" for any).
notified() {
	awk -F'\t' -v st="$1" -v a="$2" -v sev="$3" -v t="$4" '
		$3 == st && (a == "" || $4 == a) && (sev == "" || $5 == sev) && $6 == t { found = 1; exit }
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

# told_resolved: every alert told firing was told resolved after (webhook.py's
# .tsv, in the order received): Alertmanager tells a resolution at its group's
# next group_interval, after the alert left its API.
told_resolved() {
	awk -F'\t' '{ last[$4 FS $5 FS $6] = $3 }
		END { for (k in last) if (last[k] == "firing") exit 1 }' "$HOOK.tsv"
}
settled() { quiet && told_resolved; }

mark() { # mark NAME: the time of an event, for the report
	echo "$1 $(now)" >>"$WORK/marks"
	MARK_S[$1]=$SECONDS
	asay "$(date +%T) $1"
}
declare -A MARK_S
elapsed() { # elapsed MARK MINUTES: MINUTES have passed since MARK
	((SECONDS - MARK_S[$1] >= $2 * 60))
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
fio_stop

if ((SHAPES)); then

# ---------------------------------------------------------------- 2. the shapes

# stall_loop: the stalls target frozen STALL_SECS every STALL_EVERY seconds,
# STALL_COUNT times (in the background: STALL_PID).
stall_loop() {
	local i
	for ((i = 1; i <= STALL_COUNT; i++)); do
		kill -USR1 "$STALL_FS"
		sleep "$STALL_SECS"
		kill -USR2 "$STALL_FS"
		((i == STALL_COUNT)) || sleep $((STALL_EVERY - STALL_SECS))
	done
	echo "stalls_recovery $(now)" >>"$WORK/marks"
}

asay "phase 2: the shapes: slowdisk ${SLOW_DELAY}us per I/O (${FACTOR}x)${MOD_FS:+; moderate ${MOD_DELAY:-}us (${MODERATE_FACTOR}x)}; tail 1 in $TAIL_ONE_IN +${TAIL_US}us; stalls ${STALL_SECS}s every ${STALL_EVERY}s x$STALL_COUNT; fast +${FAST_DELAY}us (${FAST_FACTOR}x)"
kill -s RTMIN+3 "$SLOW_FS"
[ -z "$MOD_FS" ] || kill -s RTMIN+3 "$MOD_FS"
kill -s RTMIN+3 "$TAIL_FS"
kill -s RTMIN+3 "$FAST_FS"
stall_loop &
STALL_PID=$!
mark slow
SLOW_RATIOS=
slow_ratios() { # the daemon's ratios once slowdisk is slow
	grep -q ' slowdisk slow ' "$WORK/states.tsv" || return 1
	SLOW_RATIOS=$(q 'iopulse_probe_latency_ratio' | sed 's/^/  /')
	notified firing IopulseLatencyRegression critical slowdisk
}
# The shapes that end once notified (any alert firing for the target), or
# after CEILING: target -> its hangfs.
declare -A PENDING=([tail]=$TAIL_FS [fast]=$FAST_FS)
[ -z "$MOD_FS" ] || PENDING[moderate]=$MOD_FS
SLOW_STEP=slow
# shapes_step: move every shape on as its notifications come; true once all
# have ended (the stalls included).
shapes_step() {
	local t
	if [ "$SLOW_STEP" = slow ] && { slow_ratios || elapsed slow "$CEILING"; }; then
		notified firing IopulseLatencyRegression critical slowdisk ||
			asay "no critical notification for slowdisk within $CEILING minutes"
		kill -USR1 "$SLOW_FS"
		mark hang
		SLOW_STEP=hang
	fi
	if [ "$SLOW_STEP" = hang ] && { notified firing IopulseTargetStuck critical slowdisk || elapsed hang "$CEILING"; }; then
		notified firing IopulseTargetStuck critical slowdisk ||
			asay "no stuck notification for slowdisk within $CEILING minutes"
		kill -s RTMIN+4 "$SLOW_FS"
		kill -USR2 "$SLOW_FS"
		mark recovery
		SLOW_STEP=ended
	fi
	for t in "${!PENDING[@]}"; do
		notified firing "" "" "$t" || elapsed slow "$CEILING" || continue
		notified firing "" "" "$t" || asay "no notification for $t within $CEILING minutes"
		kill -s RTMIN+4 "${PENDING[$t]}"
		unset 'PENDING[$t]'
		mark "${t}_recovery"
	done
	[ "$SLOW_STEP" = ended ] && [ "${#PENDING[@]}" = 0 ] && ! kill -0 "$STALL_PID" 2>/dev/null
}
watch_until "$((3 * CEILING))" shapes_step || asay "the shapes did not all end"
wait "$STALL_PID" || true
STALL_PID=
[ -n "$SLOW_RATIOS" ] || SLOW_RATIOS=$(q 'iopulse_probe_latency_ratio' | sed 's/^/  /')

# ---------------------------------------------------------------- 3. the restart

asay "phase 3: restart ${RESTART_DELAY}us per I/O (${FACTOR}x); the daemon restarted $RESTART_AFTER minutes into it, slow $RESTART_HOLD more"
kill -s RTMIN+3 "$RESTART_FS"
mark restart_slow
watch_until "$RESTART_AFTER" false || true
daemon_stop
mark restart
daemon_start 2
watch_until "$RESTART_HOLD" false || true
kill -s RTMIN+4 "$RESTART_FS"
mark restart_recovery
END_WAIT=$((CEILING > 15 ? CEILING : 15))
watch_until "$END_WAIT" settled || asay "alerts still active, or not told resolved, $END_WAIT minutes after the recovery"
fi # SHAPES
SLOW_RATIOS=${SLOW_RATIOS:-  (no shapes: SHAPES=0)}
mark end
T_END=$(now)
RUN_RATIOS=$(q "max by (target) (max_over_time(iopulse_probe_latency_ratio[$(awk -v a="$T_START" -v b="$T_END" 'BEGIN { printf "%d", b - a + 60 }')s]))")

# ---------------------------------------------------------------- report

cat <<EOF

== alerting: every shape at the shipped settings ==
machine:     $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $(prometheus --version 2>&1 | head -1); alertmanager $("$AM_BIN" --version 2>&1 | awk 'NR == 1 { print $3 }')
prometheus:  scrape $SCRAPE, evaluation $EVAL, $RULES
alertmanager: $AM_SHIPPED, receiver URL only changed
daemon:      baseline_warmup ${WARMUP:-10m (default)}, read ping 1s, write+fdatasync ping 10s, state_directory, defaults otherwise
slowdisk:    ${SLOW_MEASURED} before the daemon (hangfs x2, lower +${BASE_US}us); slowdown +${SLOW_DELAY}us (${FACTOR}x)
EOF
[ -z "$MOD_FS" ] || echo "moderate:    ${MOD_MEASURED} before the daemon; slowdown +${MOD_DELAY}us (${MODERATE_FACTOR}x)"
cat <<EOF
tail:        hangfs x2, lower +${BASE_US}us; one request in $TAIL_ONE_IN +${TAIL_US}us
stalls:      hangfs +${BASE_US}us; frozen ${STALL_SECS}s every ${STALL_EVERY}s, $STALL_COUNT times
fast:        ${FAST_MEASURED} before the daemon (hangfs over tmpfs, no delay); slowdown +${FAST_DELAY}us (${FAST_FACTOR}x the read p50)
restart:     ${RESTART_MEASURED} before the daemon (as slowdisk); slowdown +${RESTART_DELAY}us (${FACTOR}x), daemon restarted after ${RESTART_AFTER}m, slow ${RESTART_HOLD}m more
healthy:     hangfs +${BASE_US}us, untouched; healthydisk: a directory on the build disk, burst every 2m
fio beside:  $( ((FIO_IOPS > 0)) && echo "healthydisk's filesystem, randrw 4k direct, $FIO_IOPS reads and $FIO_IOPS writes a second, from before the daemon to the end of the healthy phase" || echo none)
${FIO_SUMMARY:-}
baselines (p50) when the warm-up ended:
$BASELINES
ratios when slowdisk was slow (at its critical notification):
$SLOW_RATIOS
EOF
python3 - "$HOOK" "$WORK/marks" "$WORK/states.tsv" "$WORK/prom.tsv" <<-'PY'
	import json, re, sys
	hook, marks, states, prom = sys.argv[1:5]
	m = {}
	for line in open(marks):
	    k, t = line.split()
	    m.setdefault(k, float(t))
	notes = [json.loads(line) for line in open(hook)]
	def rel(t, since):
	    return f"{(t - m[since]) / 60:+.1f}" if since in m else "?"
	def reason(a):
	    for k in ("description", "summary"):
	        r = re.search(r"reason (\w+)", a.get("annotations", {}).get(k, ""))
	        if r:
	            return r.group(1)
	    return "-"
	alerts = [(n["received"], a) for n in notes for a in n.get("alerts", [])]
	# target, its cause, its recovery (marks), what it is
	shapes = [("slowdisk", "slow", "recovery", "every I/O slower, then hung"),
	          ("moderate", "slow", "moderate_recovery", "every I/O slower, moderately"),
	          ("tail", "slow", "tail_recovery", "a slow tail, the median unchanged"),
	          ("stalls", "slow", "stalls_recovery", "a freeze of seconds every minute"),
	          ("fast", "slow", "fast_recovery", "a fast device slowed under 1 ms"),
	          ("restart", "restart_slow", "restart_recovery", "every I/O slower, the daemon restarted"),
	          ("healthy", "baseline", None, "the control, fixed latency"),
	          ("healthydisk", "baseline", None, "the build disk, bursts")]
	summary = []
	for target, cause, rec, what in shapes:
	    if "slow" not in m and "restart_slow" not in m:
	        # SHAPES=0: every target untouched, judged from the baseline on
	        cause, rec, what = "baseline", None, what + " (untouched: SHAPES=0)"
	    if cause not in m:
	        continue
	    print(f"\n-- {target}: {what}; minutes from {cause}"
	          + (f", recovery at {rel(m[rec], cause)}" if rec in m else "")
	          + (f", hang at {rel(m['hang'], cause)}" if target == "slowdisk" and "hang" in m else "")
	          + (f", daemon restarted at {rel(m['restart'], cause)}" if target == "restart" and "restart" in m else ""))
	    for line in open(states):
	        t, tg, state, since, why = (line.split() + ["-"])[:5]
	        if tg == target and float(t) >= m[cause] - 5:
	            try:
	                sn = rel(float(since), cause)
	            except ValueError:
	                sn = since
	            print(f"   {rel(float(t), cause)}  daemon: {state} ({why}), since {sn}")
	    for line in open(prom):
	        t, name, sev, tg, state = line.split()
	        if tg == target and float(t) >= m[cause] - 5:
	            print(f"   {rel(float(t), cause)}  prometheus: {name}/{sev} {state}")
	    first, early, after = None, [], None
	    for t, a in alerts:
	        if a["labels"].get("target") != target or t < m[cause] - 5:
	            continue
	        l = a["labels"]
	        after_rec = rec in m and t >= m[rec]
	        text = a.get("annotations", {}).get("summary", "").replace("\n", " ")
	        print(f"   {rel(t, cause)}  NOTIFIED {a['status']} {l.get('alertname')}/{l.get('severity', '-')}, reason {reason(a)}"
	              + (f" ({rel(t, rec)} after the recovery)" if after_rec else "")
	              + (f": {text[:160]}" if a["status"] == "firing" else ""))
	        if a["status"] == "firing" and first is None:
	            first = (t, l.get("alertname"), l.get("severity", "-"), reason(a))
	        if a["status"] == "resolved" and rec and not after_rec:
	            early.append(t)
	        if a["status"] == "resolved" and after_rec and after is None:
	            after = t
	    n = sum(1 for t, a in alerts if a["labels"].get("target") == target)
	    if rec:
	        print(f"   resolved before the recovery: {len(early)}")
	    summary.append((target, cause, first, early, after, rec, n))
	print("\n| target | first notification | minutes after the cause | \"resolved\" before the recovery | first \"resolved\", minutes after the recovery | notifications (alerts) |")
	print("|---|---|---|---|---|---|")
	for target, cause, first, early, after, rec, n in summary:
	    print(f"| {target} | " + (f"{first[1]} {first[2]}, reason {first[3]}" if first else "none")
	          + f" | {rel(first[0], cause) if first else '-'} | {len(early) if rec else '-'}"
	          + f" | {rel(after, rec) if after and rec else '-'} | {n} |")
	known = [s[0] for s in shapes]
	other = sorted({(a["labels"].get("alertname"), a["labels"].get("target", "")) for t, a in alerts
	                if a["labels"].get("target", "") not in known})
	if other:
	    print("other alerts delivered: " + ", ".join("/".join(o) for o in other))
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
