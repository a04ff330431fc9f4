#!/usr/bin/env bash
# bench/scrape.sh — what a /metrics scrape costs, as Prometheus makes it (issues 4
# and 15, "Scrape cost").
#
# Two iopulse configurations, one after the other, each beside the same Debian
# prometheus-node-exporter (default collectors) on loopback:
#   default  the embedded default config (a read ping every second, a write +
#            fdatasync ping every 10 s; STATE_DIRECTORY in a scratch directory on
#            the build directory's disk);
#   p20      20 probes on 5 directory targets, engine null: per target a read
#            ping every 1 s, a read ping on a 64 KiB working set every 5 s, a
#            write + fdatasync ping every 10 s and a plain write ping every 10 s.
# Each is scraped with wrk (-t1 -c4, DURATION per run) four ways:
#   text      no Accept, no Accept-Encoding (text 0.0.4, uncompressed);
#   om+gzip   Prometheus 2.42's own headers (captured from a real scrape; 2.42
#             predates scrape_protocols): its Accept preferring OpenMetrics
#             1.0.0, and Accept-Encoding: gzip;
#   pb+gzip   the same with --enable-feature=native-histograms: its Accept
#             preferring protobuf (delimited), and Accept-Encoding: gzip;
#   om+gzip+close  om+gzip with "Connection: close": a new TCP connection per
#             scrape, as Prometheus pays at its usual intervals (15 s and up: a
#             kept-alive connection idle for 5 s is closed). The other kinds
#             reuse wrk's 4 connections.
# Per round, iopulse and node_exporter take turns on each kind (who goes first
# alternates by round). Per run: requests/s and each server's CPU per request
# (utime+stime from /proc over the run / requests; iopulse's includes its
# pings); CPU per sample divides that by the samples on the server's page. The
# ratios iopulse / node_exporter (requests/s; node's CPU per sample over
# iopulse's) are taken per round and shown as min / median / max; the target is
# >= 50x for both, on the median. Also body bytes per kind, and iopulse's VmRSS
# idle and peak under load (sampled every 0.1 s). Then render_bench (built here
# against the same libiopulse_core.a): the renderer's CPU per scrape without
# HTTP, per format, with and without gzip.
#
# A measurement, not a test: exits 0 whenever it ran, whatever the figures.
#
#   bench/scrape.sh
#
# Environment:
#   BUILD     build directory (default: build-bench-scrape; Release, configured here)
#   IOPULSE   iopulse binary to measure (default: $BUILD/iopulse, built here)
#   ROUNDS    interleaved rounds (3)          DURATION  per wrk run (5s)
#   CONFIGS   which configurations ("default p20")
#   KINDS     which kinds ("text om+gzip pb+gzip om+gzip+close")
#   WARMUP    seconds before measuring (3)    NODE_EXPORTER (/usr/bin/prometheus-node-exporter)
# As root, installs wrk, prometheus-node-exporter and curl when missing.
# Only ever talks to 127.0.0.1.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$REPO/build-bench-scrape}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5s}
CONFIGS=${CONFIGS:-default p20}
WARMUP=${WARMUP:-3}
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
# positives in config/ stay warnings). The library is built even with
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
if grep -q 'expose_openmetrics *(' "$REPO/daemon/expose/expose.h"; then defs+=(-DHAVE_EXPOSE_OPENMETRICS); fi
if grep -q 'expose_protobuf *(' "$REPO/daemon/expose/expose.h"; then defs+=(-DHAVE_EXPOSE_PROTOBUF); fi
if [ -f "$REPO/daemon/expose/gzpage.h" ]; then defs+=(-DHAVE_GZPAGE); fi
if grep -q 'http_render_metrics *(' "$REPO/daemon/http/http.h"; then defs+=(-DHAVE_HTTP_RENDER_CACHE); fi
# The libraries libiopulse_core.a was built against (CMakeLists.txt).
libs=()
for pc in yaml-0.1 libmicrohttpd libsystemd zlib liburing gnutls nettle libxcrypt; do
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

# The exact headers Prometheus 2.42 sends (captured from a real scrape): without
# and with --enable-feature=native-histograms.
ACCEPT_OM='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
ACCEPT_PB='application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
KINDS=${KINDS:-text om+gzip pb+gzip om+gzip+close}
# kind_headers KIND: wrk/curl -H options for a kind, one per line.
kind_headers() {
	case $1 in
	text) ;;
	om+gzip) printf '%s\n' "Accept: $ACCEPT_OM" "Accept-Encoding: gzip" ;;
	pb+gzip) printf '%s\n' "Accept: $ACCEPT_PB" "Accept-Encoding: gzip" ;;
	om+gzip+close) printf '%s\n' "Accept: $ACCEPT_OM" "Accept-Encoding: gzip" "Connection: close" ;;
	esac
}
for k in $KINDS; do
	case $k in
	text | om+gzip | pb+gzip | om+gzip+close) ;;
	*) say "unknown kind '$k' in KINDS"; exit 64 ;;
	esac
done
hdr_args() {
	local h
	HDRS=()
	while IFS= read -r h; do
		[ -n "$h" ] && HDRS+=(-H "$h")
	done < <(kind_headers "$1")
	return 0
}

# The 20-probe configuration (see the top of this file).
p20_config() {
	local t
	echo "listen: 127.0.0.1:0"
	echo "targets:"
	for t in 1 2 3 4 5; do
		mkdir -p "$WORK/p20/d$t"
		echo "  - {name: t$t, directory: $WORK/p20/d$t, size: 1MiB, layout_rate: 0, direct: false}"
	done
	echo "probes:"
	for t in 1 2 3 4 5; do
		echo "  - {name: t$t-read, type: ping, target: t$t, op: read, engine: \"null\", interval: 1s}"
		echo "  - {name: t$t-read-hot, type: ping, target: t$t, op: read, engine: \"null\", interval: 5s, working_set: 64KiB}"
		echo "  - {name: t$t-wal, type: ping, target: t$t, op: write, sync: fdatasync, engine: \"null\", interval: 10s}"
		echo "  - {name: t$t-write, type: ping, target: t$t, op: write, engine: \"null\", interval: 10s}"
	done
}

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
	for _ in $(seq 100); do
		kill -0 "$1" 2>/dev/null || return 1
		curl -fsS -o /dev/null "http://127.0.0.1:$2/metrics" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# utime + stime of a process, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)
# samples URL: the number of samples on a text page.
samples() { curl -fsS "$1" | grep -vc '^#' || true; }

for _ in 1 2 3; do
	NE_PORT=$(free_port)
	"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$NE_PORT" >"$WORK/node_exporter.log" 2>&1 &
	NE_PID=$!
	PIDS+=("$NE_PID")
	wait_http "$NE_PID" "$NE_PORT" && break
	NE_PID=
done
[ -n "$NE_PID" ] || { cat "$WORK/node_exporter.log" >&2; say "node_exporter did not start"; exit 1; }
NE_URL="http://127.0.0.1:$NE_PORT/metrics"

RES=$WORK/results.tsv # config kind server round req/s cpu_us_per_req errors
: >"$RES"
INFO=$WORK/info.tsv # config key value
: >"$INFO"
# run_wrk CONFIG KIND SERVER ROUND PID URL
run_wrk() {
	local cfg=$1 kind=$2 server=$3 round=$4 pid=$5 url=$6 out=$WORK/wrk.out c0 c1 rps n err
	hdr_args "$kind"
	c0=$(cpu_ticks "$pid")
	wrk -t1 -c4 -d"$DURATION" "${HDRS[@]}" "$url" >"$out"
	c1=$(cpu_ticks "$pid")
	rps=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
	n=$(awk '/requests in/ { print $1 }' "$out")
	err=$(awk '/Non-2xx|Socket errors/ { printf "%s ", $0 }' "$out")
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$cfg" "$kind" "$server" "$round" "$rps" \
		"$(awk -v d="$((c1 - c0))" -v n="$n" -v t="$TICK" \
			'BEGIN { printf "%.1f", n ? d / t * 1e6 / n : 0 }')" "${err:--}" >>"$RES"
	say "$(printf '%-8s %-8s %-14s round %s %10s req/s' "$cfg" "$kind" "$server" "$round" "$rps")${err:+  ($err)}"
}

# measure CONFIG: start iopulse with it, run the rounds, stop it.
measure() {
	local cfg=$1 log=$WORK/iopulse-$1.log port='' r kind order first sampler
	case $cfg in
	default)
		mkdir -p "$WORK/state"
		STATE_DIRECTORY=$WORK/state "$IOPULSE" run --listen 127.0.0.1:0 >"$log" 2>&1 &
		;;
	p20)
		p20_config >"$WORK/p20.yaml"
		"$IOPULSE" run --config "$WORK/p20.yaml" >"$log" 2>&1 &
		;;
	*) say "unknown configuration '$cfg' in CONFIGS"; exit 64 ;;
	esac
	IOP_PID=$!
	PIDS+=("$IOP_PID")
	for _ in $(seq 300); do
		port=$(sed -n 's|.*Serving metrics on http://127\.0\.0\.1:\([0-9][0-9]*\)/metrics.*|\1|p' "$log" | head -1)
		[ -n "$port" ] && break
		kill -0 "$IOP_PID" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$port" ] || { cat "$log" >&2; say "iopulse ($cfg) did not start"; exit 1; }
	IOP_URL="http://127.0.0.1:$port/metrics"
	sleep "$WARMUP"
	for kind in $KINDS; do # body bytes, and a first scrape of each kind
		hdr_args "$kind"
		printf '%s\tbytes %s iopulse\t%s\n' "$cfg" "$kind" \
			"$(curl -fsS -o /dev/null -w '%{size_download}' "${HDRS[@]}" "$IOP_URL")" >>"$INFO"
		printf '%s\tbytes %s node_exporter\t%s\n' "$cfg" "$kind" \
			"$(curl -fsS -o /dev/null -w '%{size_download}' "${HDRS[@]}" "$NE_URL")" >>"$INFO"
	done
	{
		printf '%s\tsamples iopulse\t%s\n' "$cfg" "$(samples "$IOP_URL")"
		printf '%s\tsamples node_exporter\t%s\n' "$cfg" "$(samples "$NE_URL")"
		printf '%s\trss idle\t%s\n' "$cfg" "$(rss "$IOP_PID")"
	} >>"$INFO"
	(
		max=0
		while kill -0 "$IOP_PID" 2>/dev/null; do
			r=$(rss "$IOP_PID" 2>/dev/null) || break
			[ "${r:-0}" -gt "$max" ] && max=$r && echo "$max" >"$WORK/rss.max"
			sleep 0.1
		done
	) &
	sampler=$!
	for r in $(seq "$ROUNDS"); do
		for kind in $KINDS; do
			if [ $((r % 2)) -eq 1 ]; then order="iopulse node_exporter"; else order="node_exporter iopulse"; fi
			for first in $order; do
				if [ "$first" = iopulse ]; then
					run_wrk "$cfg" "$kind" iopulse "$r" "$IOP_PID" "$IOP_URL"
				else
					run_wrk "$cfg" "$kind" node_exporter "$r" "$NE_PID" "$NE_URL"
				fi
			done
		done
	done
	sleep 0.3
	printf '%s\trss peak\t%s\n' "$cfg" "$(cat "$WORK/rss.max" 2>/dev/null || echo 0)" >>"$INFO"
	kill -0 "$IOP_PID" 2>/dev/null || printf '%s\tdied\tyes\n' "$cfg" >>"$INFO"
	kill "$IOP_PID" "$sampler" 2>/dev/null || true
	wait "$IOP_PID" "$sampler" 2>/dev/null || true
	rm -f "$WORK/rss.max"
}

for cfg in $CONFIGS; do
	measure "$cfg"
done
kill "$NE_PID" 2>/dev/null || true
wait "$NE_PID" 2>/dev/null || true
PIDS=()

# ---------------------------------------------------------------- summary

info() { awk -F'\t' -v c="$1" -v k="$2" '$1 == c && $2 == k { print $3; exit }' "$INFO"; }

echo
echo "== scrape cost: iopulse vs node_exporter, same machine, same run =="
echo "cpu:   $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "node:  $NODE_EXPORTER ($("$NODE_EXPORTER" --version 2>&1 | head -1 | awk '{ print $3 }'), default collectors)"
echo "wrk:   -t1 -c4 -d$DURATION, $ROUNDS interleaved rounds; ratios per round, min / median / max"
echo "kinds: text = no Accept/Accept-Encoding; om+gzip, pb+gzip = Prometheus 2.42's Accept"
echo "       (without / with native histograms) and Accept-Encoding: gzip; om+gzip+close ="
echo "       om+gzip on a new connection per scrape (no target: the TCP set-up is the kernel's)"
echo
echo "| config | scrape | iopulse req/s | node req/s | req/s ratio (min / med / max) | iopulse CPU/req | node CPU/req | iopulse CPU/sample | node CPU/sample | CPU/sample ratio (min / med / max) | bytes iopulse / node | >= 50x |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for cfg in $CONFIGS; do
	si=$(info "$cfg" "samples iopulse")
	sn=$(info "$cfg" "samples node_exporter")
	for kind in $KINDS; do
		awk -F'\t' -v c="$cfg" -v k="$kind" -v si="$si" -v sn="$sn" \
			-v bi="$(info "$cfg" "bytes $kind iopulse")" -v bn="$(info "$cfg" "bytes $kind node_exporter")" '
			function sort(a, n,   i, j, t) { for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } }
			function med(a, n) { sort(a, n); return n % 2 ? a[int(n / 2)] : (a[n / 2 - 1] + a[n / 2]) / 2 }
			$1 == c && $2 == k { if ($3 == "iopulse") { ir[$4] = $5; ic[$4] = $6 } else { nr[$4] = $5; nc[$4] = $6 } rounds[$4] = 1 }
			END {
				n = 0
				for (r in rounds) if ((r in ir) && (r in nr)) {
					a[n] = ir[r]; b[n] = nr[r]; x[n] = ic[r]; y[n] = nc[r]
					rr[n] = nr[r] > 0 ? ir[r] / nr[r] : 0
					cr[n] = (ic[r] > 0 && si > 0 && sn > 0) ? (nc[r] / sn) / (ic[r] / si) : 0
					n++
				}
				if (!n) exit
				mrr = med(rr, n); mcr = med(cr, n)
				v = (mrr >= 50 ? "req/s met" : "req/s NOT met") ", " (mcr >= 50 ? "CPU/sample met" : "CPU/sample NOT met")
				printf "| %s | %s | %.0f | %.1f | %.1f / %.1f / %.1fx | %.0f us | %.0f us | %.3f us | %.2f us | %.1f / %.1f / %.1fx | %s / %s | %s |\n",
					c, k, med(a, n), med(b, n), rr[0], mrr, rr[n - 1], med(x, n), med(y, n),
					med(x, n) / si, med(y, n) / sn, cr[0], mcr, cr[n - 1], bi, bn,
					k ~ /close$/ ? "(no target)" : v
			}' "$RES"
	done
done
echo
for cfg in $CONFIGS; do
	echo "$cfg: iopulse $(info "$cfg" "samples iopulse") samples, node_exporter $(info "$cfg" "samples node_exporter");" \
		"iopulse VmRSS idle $(info "$cfg" "rss idle") KiB, peak under load $(info "$cfg" "rss peak") KiB$( [ -z "$(info "$cfg" died)" ] || echo ', iopulse DIED during the run')"
done
errs=$(awk -F'\t' '$7 != "-" { print $1 " " $2 " " $3 ": " $7 }' "$RES")
[ -z "$errs" ] || printf 'wrk errors:\n%s\n' "$errs"

echo
echo "== renderer CPU per scrape (bench/render_bench.c, ${defs[*]:-text only}; 7+7 pings: ~p20's page) =="
"$BUILD/render_bench" 7
