#!/bin/bash
# bench/tls_flood.sh — scrapes over TLS during a handshake flood (issue 22).
#
# iopulse serves TLS with an RSA-4096 key (the dearest common one: each
# handshake costs the server a 4096-bit signature, on the HTTP thread), no
# basic auth; tls_flood.py completes handshakes back to back from ADDRS
# source addresses, CONNS at a time each, on loopback; meanwhile curl scrapes
# /metrics SCRAPES times, half a second apart, each on a new connection (a new
# handshake, as Prometheus after a restart). Prints each scrape's seconds and
# how many took over 2 s. A measurement: exits 0 whatever the figures.
#
# Knobs: ADDRS (16), CONNS (4), SCRAPES (12), KEY (rsa:4096, or e.g. ec).
. "$(dirname "$0")/lib.sh"
need curl openssl ss
ADDRS=${ADDRS:-16} CONNS=${CONNS:-4} SCRAPES=${SCRAPES:-12} KEY=${KEY:-rsa:4096}

cd "$WORK" || exit 1
if [[ $KEY == ec ]]; then
	keyopt=(-newkey ec -pkeyopt ec_paramgen_curve:P-256)
else
	keyopt=(-newkey "$KEY")
fi
openssl req -x509 "${keyopt[@]}" -nodes -keyout server.key -subj /CN=localhost \
	-addext subjectAltName=IP:127.0.0.1 -days 2 -out server.crt 2>/dev/null
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n' >web.yml
mkdir data
printf 'targets:\n  - name: t1\n    directory: %s\n    size: 8MiB\n    max_duty_cycle: 100%%\n    max_write_per_day: 0\nprobes:\n  - name: p1\n    type: ping\n    target: t1\n    op: read\n    interval: 1s\n' \
	"$WORK/data" >iopulse.yaml
"$IOPULSE" run --config iopulse.yaml --listen 127.0.0.1:0 --web.config.file web.yml \
	>daemon.log 2>&1 &
pid=$!
fpid=
# The flood stops at its stop file (its children too), the daemon at SIGTERM.
cleanup_pids() {
	touch "$WORK/stop"
	[[ -z $fpid ]] || wait "$fpid" || true
	kill "$pid" 2>/dev/null || true
	cleanup
}
trap cleanup_pids EXIT
for _ in $(seq 100); do
	port=$(sed -n 's|.*Serving metrics on https://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' daemon.log)
	[[ -n $port ]] && break
	sleep 0.1
done
[[ -n $port ]] || { say "the daemon did not start: $(cat daemon.log)"; exit 1; }
addrs=$(seq -s, -f '127.0.1.%g' "$ADDRS")
python3 "$BENCH_DIR/tls_flood.py" "$port" "$addrs" "$CONNS" $((SCRAPES * 10 + 30)) "$WORK/stop" >flood.out &
fpid=$!
# Until every flooding address has a connection (forking 16 Pythons takes a while).
for _ in $(seq 300); do
	(($(ss -Htn state established "( sport = :$port )" | wc -l) >= ADDRS)) && break
	sleep 0.1
done
# The daemon's CPU seconds (user + system, all threads).
cpu_s() { awk '{ printf "%.2f", ($14 + $15) / '"$(getconf CLK_TCK)"' }' "/proc/$pid/stat"; }
cpu0=$(cpu_s) t0=$EPOCHREALTIME
over=0 times=()
for _ in $(seq "$SCRAPES"); do
	t=$(curl -sS -o /dev/null --max-time 10 --cacert server.crt -w '%{time_total}' \
		"https://127.0.0.1:$port/metrics" 2>/dev/null || echo 10)
	times+=("$t")
	awk -v t="$t" 'BEGIN { exit !(t > 2) }' && over=$((over + 1))
	sleep 0.5
done
cpu1=$(cpu_s) t1=$EPOCHREALTIME
touch "$WORK/stop"
wait "$fpid" || true
echo "key $KEY, $ADDRS addresses x $CONNS handshakes at once: $(cat flood.out)"
echo "scrapes (s): ${times[*]}"
echo "over 2 s: $over of $SCRAPES"
echo "daemon CPU during the scrapes: $(awk -v a="$cpu0" -v b="$cpu1" -v s="$t0" -v e="$t1" \
	'BEGIN { printf "%.0f%% of one core over %.1f s", 100 * (b - a) / (e - s), e - s }')"
