#!/usr/bin/env bash
# bench/scrape.sh — what a /metrics scrape costs (issue 4, "Scrape cost").
#
# iopulse with PAIRS write pings (sync: fdatasync) and PAIRS read pings, engine
# null, every INTERVAL (50ms; 1s is the realistic setting), on one directory
# target: 3 * PAIRS latency histogram series
# (write, fdatasync, read) with observations, ~390 KB of text at the default 50.
# A probe has at most two ops (write+fdatasync, or a burst's read+write), so
# "50 probes x 3 ops" is 100 probes here. The null engine's latencies are a few
# microseconds: the observations stay in the lowest classic buckets. The text
# page is the same size whatever the counts are (every bucket is written);
# bench/render_bench.c fills the histograms over many buckets instead.
#
# In the same run, on loopback: Debian's prometheus-node-exporter with its
# default collectors. wrk (-t1 -c4, DURATION each) on each /metrics,
# interleaved iopulse / node_exporter, ROUNDS rounds with wrk's default headers
# (no Accept: the text format from both), then one round each with
# Accept-Encoding: gzip. Reported: requests/s (median over rounds) and the ratio
# iopulse / node_exporter, body bytes per response (curl), each server's CPU per
# request (utime+stime from /proc over the wrk run), and iopulse's VmRSS: idle
# (after warm-up and one scrape per kind, as a Prometheus would already have
# scraped it; before any scrape is shown too) and the peak sampled every 0.1s
# during the wrk runs. Then render_bench (built here against the same
# libiopulse_core.a): the renderer's CPU per scrape without HTTP, per format.
#
# Targets: iopulse >= 50x node_exporter's requests/s; RSS peak - idle <= 1024 KiB.
# A measurement, not a test: exits 0 whenever it ran, whatever the figures.
#
#   bench/scrape.sh
#
# Environment:
#   BUILD     build directory (default: build-bench-scrape; Release, configured here)
#   IOPULSE   iopulse binary to measure (default: $BUILD/iopulse, built here)
#   ROUNDS    interleaved plain rounds (2)     DURATION  per wrk run (10s)
#   PAIRS     write+fdatasync / read ping pairs (50)
#   INTERVAL  ping interval (50ms: the worst case for the render cache, every
#             series changes 20 times a second; 1s is iopulse's usual setting)
#   WARMUP    seconds before measuring (3)     NODE_EXPORTER (/usr/bin/prometheus-node-exporter)
# As root, installs wrk, prometheus-node-exporter and curl when missing.
# Only ever talks to 127.0.0.1.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$REPO/build-bench-scrape}
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-10s}
PAIRS=${PAIRS:-50}
WARMUP=${WARMUP:-3}
INTERVAL=${INTERVAL:-50ms}
NODE_EXPORTER=${NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}

say() { printf 'scrape.sh: %s\n' "$*" >&2; }

# ---------------------------------------------------------------- tools

missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v curl >/dev/null 2>&1 || missing+=(curl)
[ -x "$NODE_EXPORTER" ] || missing+=(prometheus-node-exporter)
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		say "needs ${missing[*]} (run as root to install them)"
		exit 69
	fi
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ---------------------------------------------------------------- build

# Release, as dev.sh bench builds it (GCC 12 -O3 maybe-uninitialized false
# positives in config/config.c stay warnings). The library is built even with
# IOPULSE set: render_bench links it. A build directory that is already
# configured (BUILD=build-bench from ./dev.sh bench) keeps its own settings.
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
	cmake -S "$REPO" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DIOPULSE_TESTS=OFF \
		-DCMAKE_C_FLAGS=-Wno-error=maybe-uninitialized >/dev/null
fi
if [ -z "${IOPULSE:-}" ]; then
	cmake --build "$BUILD" -j"$(nproc)" --target iopulse iopulse_core >/dev/null
	IOPULSE=$BUILD/iopulse
else
	cmake --build "$BUILD" -j"$(nproc)" --target iopulse_core >/dev/null
fi
[ -x "$IOPULSE" ] || { say "no iopulse at $IOPULSE"; exit 69; }

# render_bench: the optional formats are compiled in when the headers declare them.
defs=()
if grep -q 'expose_openmetrics *(' "$REPO/daemon/expose.h"; then defs+=(-DHAVE_EXPOSE_OPENMETRICS); fi
if grep -q 'expose_protobuf *(' "$REPO/daemon/expose.h"; then defs+=(-DHAVE_EXPOSE_PROTOBUF); fi
if grep -q 'http_gzip *(' "$REPO/daemon/http.h"; then defs+=(-DHAVE_HTTP_GZIP); fi
if grep -q 'http_render_metrics *(' "$REPO/daemon/http.h"; then defs+=(-DHAVE_HTTP_RENDER_CACHE); fi
# The libraries libiopulse_core.a was built against (CMakeLists.txt).
libs=()
for pc in yaml-0.1 libmicrohttpd libsystemd zlib liburing; do
	if pkg-config --exists "$pc"; then
		read -ra l <<<"$(pkg-config --libs "$pc")"
		libs+=("${l[@]}")
	fi
done
aio=$(sed -n 's/^AIO_LIBRARY:FILEPATH=//p' "$BUILD/CMakeCache.txt")
if [ -n "$aio" ] && [ -e "$aio" ]; then libs+=("$aio"); fi
"${CC:-cc}" -std=gnu11 -O2 -Wall -Wextra -I"$REPO" "${defs[@]}" -o "$BUILD/render_bench" \
	"$REPO/bench/render_bench.c" "$BUILD/libiopulse_core.a" "${libs[@]}" -lpthread -lm

# ---------------------------------------------------------------- set-up

WORK=$(mktemp -d "$BUILD/scrape.XXXXXX")
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

mkdir "$WORK/data"
{
	cat <<-YAML
		listen: 127.0.0.1:0
		targets:
		  - name: bench
		    directory: $WORK/data
		    size: 1MiB
		    layout_rate: 0
		    direct: false
		probes:
	YAML
	for i in $(seq -f %02g 1 "$PAIRS"); do
		echo "  - {name: w$i, type: ping, target: bench, op: write, sync: fdatasync, engine: \"null\", interval: $INTERVAL}"
		echo "  - {name: r$i, type: ping, target: bench, op: read, engine: \"null\", interval: $INTERVAL}"
	done
} >"$WORK/iopulse.yaml"

# A loopback port nothing listens on (bash's /dev/tcp: connect fails).
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 40000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}

# wait_http PID PORT: until /metrics answers (10s), or the process is gone.
wait_http() {
	local i
	for i in $(seq 100); do
		kill -0 "$1" 2>/dev/null || return 1
		curl -fsS -o /dev/null "http://127.0.0.1:$2/metrics" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

"$IOPULSE" run --config "$WORK/iopulse.yaml" >"$WORK/iopulse.log" 2>&1 &
IOP_PID=$!
PIDS+=("$IOP_PID")
IOP_PORT=
for i in $(seq 100); do
	IOP_PORT=$(sed -n 's|.*Serving metrics on http://127\.0\.0\.1:\([0-9][0-9]*\)/metrics.*|\1|p' \
		"$WORK/iopulse.log" | head -1)
	[ -n "$IOP_PORT" ] && break
	kill -0 "$IOP_PID" 2>/dev/null || break
	sleep 0.1
done
[ -n "$IOP_PORT" ] || { cat "$WORK/iopulse.log" >&2; say "iopulse did not start"; exit 1; }

for _ in 1 2 3; do
	NE_PORT=$(free_port)
	"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$NE_PORT" >"$WORK/node_exporter.log" 2>&1 &
	NE_PID=$!
	PIDS+=("$NE_PID")
	wait_http "$NE_PID" "$NE_PORT" && break
	NE_PID=
done
[ -n "$NE_PID" ] || { cat "$WORK/node_exporter.log" >&2; say "node_exporter did not start"; exit 1; }

sleep "$WARMUP"

# The ceiling: the same HTTP library serving a constant page of iopulse's size,
# with no work per request (bench/static_page.c).
CEIL_BYTES=$(curl -fsS -o /dev/null -w '%{size_download}' "http://127.0.0.1:$IOP_PORT/metrics")
read -ra mhd <<<"$(pkg-config --cflags --libs libmicrohttpd)"
cc -O2 -o "$WORK/static_page" "$REPO/bench/static_page.c" "${mhd[@]}"
CEIL_PORT=$(free_port)
"$WORK/static_page" "$CEIL_PORT" "$CEIL_BYTES" &
CEIL_PID=$!
PIDS+=("$CEIL_PID")
wait_http "$CEIL_PID" "$CEIL_PORT" || { say "static_page did not start"; exit 1; }

rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# utime + stime of a process, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)

RSS_COLD=$(rss "$IOP_PID")
IOP_URL="http://127.0.0.1:$IOP_PORT/metrics"
NE_URL="http://127.0.0.1:$NE_PORT/metrics"
body_bytes() { curl -fsS -o /dev/null -w '%{size_download}' "$@"; }
IOP_BYTES=$(body_bytes "$IOP_URL")
IOP_GZ_BYTES=$(body_bytes -H 'Accept-Encoding: gzip' "$IOP_URL")
NE_BYTES=$(body_bytes "$NE_URL")
NE_GZ_BYTES=$(body_bytes -H 'Accept-Encoding: gzip' "$NE_URL")
curl -fsS "$IOP_URL" >"$WORK/page.prom"
HIST_SERIES=$(grep -c '^iopulse_probe_latency_seconds_count' "$WORK/page.prom" || true)
EMPTY_HIST=$(grep -c '^iopulse_probe_latency_seconds_count.* 0$' "$WORK/page.prom" || true)
RSS_IDLE=$(rss "$IOP_PID")
# iopulse's own background CPU (the 100 pings): part of the CPU per request below.
c0=$(cpu_ticks "$IOP_PID")
sleep 2
IDLE_PCT=$(awk -v d="$(($(cpu_ticks "$IOP_PID") - c0))" -v t="$TICK" \
	'BEGIN { printf "%.1f", d / t / 2 * 100 }')

# Peak VmRSS of iopulse, sampled every 0.1s into $WORK/rss.max while it runs.
(
	max=0
	while kill -0 "$IOP_PID" 2>/dev/null; do
		r=$(rss "$IOP_PID" 2>/dev/null) || break
		[ "${r:-0}" -gt "$max" ] && max=$r && echo "$max" >"$WORK/rss.max"
		sleep 0.1
	done
) &
SAMPLER=$!
PIDS+=("$SAMPLER")

RES=$WORK/results.tsv # kind server req/s cpu_us_per_req errors
: >"$RES"
# run_wrk KIND SERVER PID URL [wrk options]
run_wrk() {
	local kind=$1 server=$2 pid=$3 url=$4 out=$WORK/wrk.out c0 c1 rps n err
	shift 4
	c0=$(cpu_ticks "$pid")
	wrk -t1 -c4 -d"$DURATION" "$@" "$url" >"$out"
	c1=$(cpu_ticks "$pid")
	rps=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
	n=$(awk '/requests in/ { print $1 }' "$out")
	err=$(awk '/Non-2xx|Socket errors/ { printf "%s ", $0 }' "$out")
	printf '%s\t%s\t%s\t%s\t%s\n' "$kind" "$server" "$rps" \
		"$(awk -v d="$((c1 - c0))" -v n="$n" -v t="$TICK" \
			'BEGIN { printf "%.0f", n ? d / t * 1e6 / n : 0 }')" "${err:--}" >>"$RES"
	say "$(printf '%-6s %-14s %10s req/s' "$kind" "$server" "$rps")${err:+  ($err)}"
}

for r in $(seq "$ROUNDS"); do
	run_wrk plain iopulse "$IOP_PID" "$IOP_URL"
	run_wrk plain node_exporter "$NE_PID" "$NE_URL"
	run_wrk plain ceiling "$CEIL_PID" "http://127.0.0.1:$CEIL_PORT/metrics"
done
run_wrk gzip iopulse "$IOP_PID" "$IOP_URL" -H 'Accept-Encoding: gzip'
run_wrk gzip node_exporter "$NE_PID" "$NE_URL" -H 'Accept-Encoding: gzip'
sleep 0.3 # a last RSS sample after the load
RSS_MAX=$(cat "$WORK/rss.max" 2>/dev/null || echo "$RSS_IDLE")
[ "$RSS_MAX" -ge "$RSS_IDLE" ] || RSS_MAX=$RSS_IDLE
IOP_ALIVE=yes
kill -0 "$IOP_PID" 2>/dev/null || IOP_ALIVE=no

# Stop both before render_bench, so it has the CPU to itself.
cleanup_servers() {
	local p
	for p in "$IOP_PID" "$NE_PID" "$CEIL_PID" "$SAMPLER"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	PIDS=()
}
cleanup_servers

# ---------------------------------------------------------------- summary

# med KIND SERVER COLUMN [DECIMALS]: median over the rounds.
med() {
	awk -F'\t' -v k="$1" -v s="$2" -v c="$3" -v d="${4:-0}" '$1 == k && $2 == s { v[n++] = $c }
		END { if (!n) { print 0; exit }
		      for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		      printf "%.*f\n", d, (n % 2) ? v[int(n / 2)] : (v[n / 2 - 1] + v[n / 2]) / 2 }' "$RES"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

P_IOP=$(med plain iopulse 3 1)
P_NE=$(med plain node_exporter 3 1)
G_IOP=$(med gzip iopulse 3 1)
G_NE=$(med gzip node_exporter 3 1)
P_CEIL=$(med plain ceiling 3 1)
C_RATIO=$(ratio "$P_CEIL" "$P_NE")
P_RATIO=$(ratio "$P_IOP" "$P_NE")
G_RATIO=$(ratio "$G_IOP" "$G_NE")
RSS_DELTA=$((RSS_MAX - RSS_IDLE))
verdict() { awk -v x="$1" -v op="$2" -v t="$3" \
	'BEGIN { ok = op == ">=" ? x >= t : x <= t; print ok ? "met" : "NOT met" }'; }

cat <<EOF

== scrape cost: iopulse vs node_exporter, same machine, same run ==
cpu:        $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)
iopulse:    $IOPULSE, $((2 * PAIRS)) null-engine pings every $INTERVAL, $HIST_SERIES latency histogram series ($EMPTY_HIST empty), ${IDLE_PCT}% of a CPU when not scraped$( [ "$IOP_ALIVE" = yes ] || echo ', DIED during the run')
node:       $NODE_EXPORTER ($("$NODE_EXPORTER" --version 2>&1 | head -1 | awk '{ print $3 }'), default collectors)
wrk:        -t1 -c4 -d$DURATION; plain: $ROUNDS rounds interleaved (median); gzip: 1 round

| scrape | iopulse req/s | node_exporter req/s | ratio | iopulse CPU/req | node CPU/req | iopulse bytes | node bytes |
|---|---|---|---|---|---|---|---|
| text | $P_IOP | $P_NE | ${P_RATIO}x | $(med plain iopulse 4) us | $(med plain node_exporter 4) us | $IOP_BYTES | $NE_BYTES |
| text + gzip | $G_IOP | $G_NE | ${G_RATIO}x | $(med gzip iopulse 4) us | $(med gzip node_exporter 4) us | $IOP_GZ_BYTES | $NE_GZ_BYTES |

ceiling: a constant ${CEIL_BYTES}-byte page through the same HTTP library, no work per
request (bench/static_page.c): $P_CEIL req/s = ${C_RATIO}x node_exporter; iopulse reaches
$(ratio "$P_IOP" "$P_CEIL")x of it

iopulse VmRSS: before any scrape ${RSS_COLD} KiB, idle ${RSS_IDLE} KiB, peak under load ${RSS_MAX} KiB: +${RSS_DELTA} KiB over idle, +$((RSS_MAX - RSS_COLD)) KiB over before any scrape

target: text req/s ratio >= 50x: ${P_RATIO}x, $(verdict "$P_RATIO" ">=" 50); gzip ${G_RATIO}x, $(verdict "$G_RATIO" ">=" 50)
target: RSS under load - idle <= 1024 KiB: +${RSS_DELTA} KiB, $(verdict "$RSS_DELTA" "<=" 1024)
EOF
errs=$(awk -F'\t' '$5 != "-" { print $1 " " $2 ": " $5 }' "$RES")
[ -z "$errs" ] || printf 'wrk errors:\n%s\n' "$errs"

echo
echo "== renderer CPU per scrape (bench/render_bench.c, ${defs[*]:-text only}) =="
"$BUILD/render_bench" "$PAIRS"
