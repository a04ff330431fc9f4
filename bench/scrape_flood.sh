#!/bin/bash
# bench/scrape_flood.sh — /metrics on new connections while local clients flood
# the status pages (issue 28).
#
# A daemon with 8 targets: 7 directories on the build directory's disk and one,
# "hung", on a hangfs (tests/integration/hangfs.c) that is frozen once the
# target is up, so that its lane sits in the kernel for the whole run. Each
# target has a read ping every second and a write + fdatasync ping every 10 s
# (the embedded default's), the hung one a read ping with a 2 s timeout. Then,
# per round, two phases, each timing SCRAPES scrapes of /metrics PACE seconds
# apart, each on a new connection from 127.0.0.1 with Prometheus 2.42's headers
# (OpenMetrics, gzip), by curl (time_total: connect to the last byte):
#   quiet  nothing else asks the daemon anything;
#   flood  48 keep-alive clients (16 from each of 127.0.0.2-4, the per-address
#          limit) ask for /, /status.json and /readyz in turn, back to back
#          (tests/integration/page_flood.py), from WARM seconds before the first
#          scrape.
# With BASE (an older iopulse binary, e.g. main's), a second daemon of the same
# configuration (its hung target on the same frozen hangfs) runs beside the
# first and takes its turn in every round (who goes first alternates): the two
# are before and after, measured in the same run.
#
# Printed per daemon and phase: the scrapes' p50, p99 and max in ms (all
# rounds pooled), failed scrapes, the flood's requests answered per second (the
# daemon's iopulse_http_requests_total), its status renders per second where
# the daemon counts them (iopulse_http_status_renders_total) and its CPU.
# A measurement: exits 0 whatever the figures.
#
#   bench/scrape_flood.sh                           # as root: mounts FUSE
#   BASE=/tmp/iopulse-main bench/scrape_flood.sh    # before and after
#
# Environment (and lib.sh's BUILD, IOPULSE):
#   BASE     an older iopulse to compare with (none)
#   ROUNDS   rounds (2)          SCRAPES  scrapes per phase and round (200)
#   PACE     seconds between scrapes (0.1)       WARM  seconds of flood first (2)
#   CONNS    flood connections per address (16)  HANGFS  hangfs binary
#            (compiled into $BUILD when unset)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need curl fusermount3 pkg-config gcc
ROUNDS=${ROUNDS:-2} SCRAPES=${SCRAPES:-200} PACE=${PACE:-0.1} WARM=${WARM:-2}
CONNS=${CONNS:-16} BASE=${BASE:-}
FLOOD_ADDRS=127.0.0.2,127.0.0.3,127.0.0.4

[ "$(id -u)" -eq 0 ] || { say "scrape_flood.sh: needs root (it mounts FUSE)"; exit 69; }
[ -c /dev/fuse ] || { say "scrape_flood.sh: needs /dev/fuse"; exit 69; }
[ -z "$BASE" ] || [ -x "$BASE" ] || { say "scrape_flood.sh: BASE=$BASE is not executable"; exit 64; }
bench_hangfs

# ---------------------------------------------------------------- clean-up

PIDS=()  # the daemons
FPID=    # the flood running, if one does
FUSE=()  # "pid mountpoint" of the hangfs (bench_unmount_work)
MOUNTS=() # none here (bench_unmount_work)
flood_cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	[ -z "$FPID" ] || kill -TERM "$FPID" 2>/dev/null
	bench_stop say
	exit "$rc"
}
trap flood_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- hangfs

mkdir "$WORK/backing" "$WORK/mnt"
"$HANGFS" "$WORK/backing" "$WORK/mnt" >"$WORK/hangfs.log" 2>&1 &
HFS_PID=$!
FUSE+=("$HFS_PID $WORK/mnt")
wait_for 10 "hangfs on $WORK/mnt" grep -qF " $WORK/mnt " /proc/self/mountinfo

# ---------------------------------------------------------------- daemons

# config NAME: the schedule of daemon NAME (see the top).
config() {
	local t
	mkdir -p "$WORK/mnt/$1"
	echo "targets:"
	for t in 1 2 3 4 5 6 7; do
		mkdir -p "$WORK/$1/d$t"
		printf '  - {name: t%s, directory: %s, size: 8MiB}\n' "$t" "$WORK/$1/d$t"
	done
	printf '  - {name: hung, directory: %s, size: 8MiB}\n' "$WORK/mnt/$1"
	echo "probes:"
	for t in 1 2 3 4 5 6 7; do
		echo "  - {name: t$t-read, type: ping, target: t$t, op: read, interval: 1s}"
		echo "  - {name: t$t-wal, type: ping, target: t$t, op: write, sync: fdatasync, interval: 10s}"
	done
	echo "  - {name: hung-read, type: ping, target: hung, op: read, interval: 1s, timeout: 2s}"
}

declare -A PID PORT
# start NAME BINARY: start daemon NAME, wait until it serves.
start() {
	local log=$WORK/$1.log
	config "$1" >"$WORK/$1.yaml"
	"$2" run --config "$WORK/$1.yaml" --listen 127.0.0.1:0 >"$log" 2>&1 &
	PID[$1]=$!
	PIDS+=("$!")
	wait_for 30 "daemon $1 serving" grep -q 'Serving metrics on http://127.0.0.1:' "$log"
	PORT[$1]=$(sed -n 's|.*Serving metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$log")
}
# ready NAME / hung_stuck NAME: what /readyz of daemon NAME says.
ready() { curl -fs -o /dev/null --max-time 10 "http://127.0.0.1:${PORT[$1]}/readyz"; }
hung_stuck() { curl -sS --max-time 10 "http://127.0.0.1:${PORT[$1]}/readyz" | grep -q '^hung: stuck'; }

NAMES=(new)
start new "$IOPULSE"
if [ -n "$BASE" ]; then
	NAMES+=(base)
	start base "$BASE"
fi
for n in "${NAMES[@]}"; do
	wait_for 120 "every target of $n up" ready "$n"
done
kill -USR1 "$HFS_PID"
wait_for 10 "hangfs frozen" grep -q 'hangfs: frozen' "$WORK/hangfs.log"
for n in "${NAMES[@]}"; do
	wait_for 60 "target hung of $n stuck" hung_stuck "$n"
done

# ---------------------------------------------------------------- rounds

# counters NAME: "pages renders cpu_ticks" of daemon NAME now: the status
# requests it answered, the status renders it counted, its CPU.
counters() {
	curl -fsS --max-time 60 "http://127.0.0.1:${PORT[$1]}/metrics" | awk -v cpu="$(
		awk '{ print $14 + $15 }' "/proc/${PID[$1]}/stat"
	)" '
		/^iopulse_http_requests_total\{handler="(landing|status_json|readyz)"/ { p += $NF }
		/^iopulse_http_status_renders_total/ { r += $NF; have = 1 }
		END { printf "%d %s %d\n", p, have ? r : "-", cpu }'
}

RES=$WORK/results.tsv     # name phase ms-or-error
FLOODS=$WORK/floods.tsv   # name seconds "pages renders ticks" before, after; the flood's state
: >"$RES"
: >"$FLOODS"
TICK=$(getconf CLK_TCK)
ACCEPT_OM='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
PACE_US=$(awk -v p="$PACE" 'BEGIN { printf "%d", p * 1e6 }')

# scrapes PORT OUT: SCRAPES scrapes of /metrics, the i-th PACE * i seconds after
# the first (at once when the one before ended later); into OUT each one's
# milliseconds, or "error WHAT" (no 200 within 10 s; curl fails a short body).
scrapes() {
	local port=$1 out=$2 i start now o
	: >"$out"
	start=${EPOCHREALTIME/[.,]/}
	for ((i = 0; i < SCRAPES; i++)); do
		now=${EPOCHREALTIME/[.,]/}
		if ((start + i * PACE_US > now)); then
			sleep "$(awk -v u=$((start + i * PACE_US - now)) 'BEGIN { printf "%.6f", u / 1e6 }')"
		fi
		o=$(curl -sS -o /dev/null --max-time 10 -H "Accept: $ACCEPT_OM" -H 'Accept-Encoding: gzip' \
			-w '%{http_code} %{time_total}' "http://127.0.0.1:$port/metrics" 2>&1) || true
		case $o in
		"200 "*) awk -v t="${o#* }" 'BEGIN { printf "%.3f\n", t * 1000 }' ;;
		*) echo "error ${o//$'\n'/ }" ;;
		esac >>"$out"
	done
}

# phase NAME PHASE: time the scrapes of daemon NAME, with or without the flood.
phase() {
	local n=$1 ph=$2 port=${PORT[$1]} c0 c1 t0 t1
	if [ "$ph" = flood ]; then
		rm -f "$WORK/flood.state"
		python3 "$REPO/tests/integration/page_flood.py" "$port" "$FLOOD_ADDRS" "$CONNS" \
			"$WORK/flood.state" 600 &
		FPID=$!
		wait_for 60 "every flood connection answered" test -s "$WORK/flood.state"
		sleep "$WARM"
		c0=$(counters "$n")
	fi
	t0=$EPOCHREALTIME
	scrapes "$port" "$WORK/times"
	t1=$EPOCHREALTIME
	sed "s/^/$n\t$ph\t/" "$WORK/times" >>"$RES"
	if [ -n "$FPID" ]; then
		c1=$(counters "$n")
		kill -TERM "$FPID"
		wait "$FPID"
		FPID=
		printf '%s\t%s\t%s\t%s\t%s\n' "$n" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
			"$c0" "$c1" "$(paste -sd' ' "$WORK/flood.state")" >>"$FLOODS"
	fi
	say "$(printf '%-5s %-5s done' "$n" "$ph")"
}

for r in $(seq "$ROUNDS"); do
	for n in $(rotated "$r" "${NAMES[@]}"); do
		phase "$n" quiet
		phase "$n" flood
	done
done

# ---------------------------------------------------------------- summary

echo
echo "== /metrics on new connections, quiet and under a status-page flood =="
echo "cpu:    $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "new:    $IOPULSE${BASE:+
base:   $BASE}"
echo "setup:  8 targets (one on a frozen hangfs, stuck), $ROUNDS rounds x $SCRAPES scrapes ${PACE}s apart per phase;"
echo "        flood: $CONNS keep-alive clients from each of $FLOOD_ADDRS asking /, /status.json, /readyz in turn"
echo
echo "| daemon | phase | scrapes | failed | p50 ms | p99 ms | max ms | flood req/s | status renders/s | daemon CPU |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for n in "${NAMES[@]}"; do
	for ph in quiet flood; do
		awk -F'\t' -v n="$n" -v ph="$ph" -v tick="$TICK" -v floods="$FLOODS" '
			function q(p,   i) { i = int(p * (k - 1) + 0.5) + 1; return v[i] }
			$1 == n && $2 == ph { if ($3 ~ /^error/) bad++; else v[++k] = $3 + 0 }
			END {
				for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
				rate = "-"; rend = "-"; cpu = "-"
				if (ph == "flood") {
					while ((getline line < floods) > 0) {
						split(line, f, "\t")
						if (f[1] != n) continue
						split(f[3], a, " "); split(f[4], b, " ")
						secs += f[2]; pages += b[1] - a[1]; ticks += b[3] - a[3]
						if (a[2] != "-") { renders += b[2] - a[2]; have = 1 }
					}
					rate = sprintf("%.0f", pages / secs)
					if (have) rend = sprintf("%.1f", renders / secs)
					cpu = sprintf("%.0f%%", 100 * ticks / tick / secs)
				}
				printf "| %s | %s | %d | %d | %.1f | %.1f | %.1f | %s | %s | %s |\n",
					n, ph, k + bad, bad, q(0.5), q(0.99), v[k], rate, rend, cpu
			}' "$RES"
	done
done
echo
echo "per flood phase: daemon, seconds, pages renders CPU-ticks before and after, the flood's own counts:"
sed 's/^/  /' "$FLOODS"
errs=$(awk -F'\t' '$3 ~ /^error/ { print "  " $1 " " $2 ": " $3 }' "$RES" | sort | uniq -c | head -n 10)
[ -z "$errs" ] || printf 'failed scrapes:\n%s\n' "$errs"
