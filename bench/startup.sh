#!/usr/bin/env bash
# bench/startup.sh — what iopulse costs before it measures anything, and while
# it waits (issue 15, "Start-up" and "Idle cost").
#
#   serve   exec -> the first successful GET /metrics: `iopulse run` on the
#           embedded default config (its state directory under $WORK, the probe
#           file laid out by a warm-up start) vs Debian's prometheus-node-exporter
#           (default collectors). The client polls every 0.5 ms; a refused
#           connection is tried again, an accepted one waits for the answer.
#   probe   exec -> exit of `iopulse probe -c 1 -q -k DIR` (the probe file kept
#           by a warm-up run, as ioping keeps its own) vs `ioping -c 1 -q DIR`:
#           exit bounds the first I/O from above. Shown once, not compared: a
#           fresh directory, where iopulse first lays out its 64 MiB working set.
#   idle    both servers side by side for IDLE seconds, after SETTLE seconds
#           (iopulse: default config, its probe file laid out): context switches
#           per second (voluntary + nonvoluntary, summed over /proc/PID/task/*),
#           then system calls per second (`strace -c -f`, a second window: the
#           tracer's own stops would count as switches).
#
# ROUNDS interleaved rounds for serve and probe (the order rotates each round):
# min/median/max and the median of the per-round ratios iopulse/peer.
# Targets: serve and probe <= 10 ms; idle context switches per second <= the
# default schedule's I/O rate + 1 (1.2 I/Os/s: a read each second, a write and
# an fdatasync every 10 s).
# A measurement, not a test: exits 0 whenever it ran, whatever the figures.
#
# Environment: BUILD, IOPULSE (lib.sh); ROUNDS (15), IDLE (60), SETTLE (5),
# NODE_EXPORTER (/usr/bin/prometheus-node-exporter). Only talks to 127.0.0.1.
source "$(dirname "$0")/lib.sh"
need ioping curl strace

ROUNDS=${ROUNDS:-15}
IDLE=${IDLE:-60}
SETTLE=${SETTLE:-5}
NODE_EXPORTER=${NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}
[ -x "$NODE_EXPORTER" ] || { say "startup.sh: needs $NODE_EXPORTER (./dev.sh bench installs it)"; exit 69; }

STATE=$WORK/state
PROBE_DIR=$WORK/probe
mkdir "$STATE" "$PROBE_DIR" "$WORK/ioping"
RES=$WORK/results.tsv
: >"$RES"

# A free loopback port: the kernel's pick for a socket bound to port 0.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# serve_ms PORT CMD...: starts CMD, prints ms from just before exec to its first
# 200 on /metrics, then stops it (SIGTERM) and waits for it.
serve_ms() {
	python3 - "$@" <<-'PY'
		import http.client, os, signal, subprocess, sys, time
		port, cmd = int(sys.argv[1]), sys.argv[2:]
		t0 = time.perf_counter()
		p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
		ms = None
		while ms is None and time.perf_counter() - t0 < 10:
		    try:
		        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
		        c.request("GET", "/metrics")
		        r = c.getresponse()
		        r.read()
		        if r.status == 200:
		            ms = (time.perf_counter() - t0) * 1e3
		        c.close()
		    except OSError:
		        time.sleep(0.0005)
		p.send_signal(signal.SIGTERM)
		p.wait()
		if ms is None:
		    sys.exit("no /metrics from " + cmd[0])
		print("%.3f" % ms)
	PY
}

# run_ms CMD...: ms from exec to exit.
run_ms() {
	python3 - "$@" <<-'PY'
		import subprocess, sys, time
		t0 = time.perf_counter()
		subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
		print("%.3f" % ((time.perf_counter() - t0) * 1e3))
	PY
}

run_tool() {
	local port
	case $1 in
	iopulse)
		port=$(free_port)
		echo "serve iopulse $(STATE_DIRECTORY=$STATE serve_ms "$port" "$IOPULSE" run \
			--listen "127.0.0.1:$port")"
		;;
	node_exporter)
		port=$(free_port)
		echo "serve node_exporter $(serve_ms "$port" "$NODE_EXPORTER" \
			--web.listen-address="127.0.0.1:$port")"
		;;
	iopulse_probe)
		echo "probe iopulse $(run_ms "$IOPULSE" probe -c 1 -q -k "$PROBE_DIR")"
		;;
	ioping)
		echo "probe ioping $(run_ms ioping -c 1 -q "$WORK/ioping")"
		;;
	esac
}

say "startup: warm-up (iopulse lays out its probe files)"
port=$(free_port)
STATE_DIRECTORY=$STATE "$IOPULSE" run --listen "127.0.0.1:$port" >"$WORK/warm.log" 2>&1 &
pid=$!
# Until the target is up: its probe file laid out (64 MiB at 32 MiB/s).
for _ in $(seq 600); do
	curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null | grep -q '^iopulse_target_up{.*} 1' && break
	sleep 0.1
done
kill "$pid"
wait "$pid" || true
"$IOPULSE" probe -c 1 -q -k "$PROBE_DIR" >/dev/null
fresh=$(mktemp -d "$WORK/fresh.XXXXXX")
fresh_ms=$(run_ms "$IOPULSE" probe -c 1 -q "$fresh")
ioping -c 1 -q "$WORK/ioping" >/dev/null

for r in $(seq "$ROUNDS"); do
	for t in $(rotated "$r" iopulse node_exporter iopulse_probe ioping); do
		run_tool "$t" >>"$RES"
	done
done

# ---------------------------------------------------------------- idle

# Sum of voluntary + nonvoluntary context switches over every thread of PID.
ctxt() {
	cat /proc/"$1"/task/*/status 2>/dev/null |
		awk '/^(non)?voluntary_ctxt_switches:/ { n += $2 } END { print n }'
}
# syscalls PID SECS: system calls per second of PID (every thread) over SECS.
syscalls() {
	timeout -s INT "$2" strace -c -f -p "$1" -o "$WORK/strace.$1" >/dev/null 2>&1 || true
	# No summary at all when nothing was called.
	awk -v s="$2" '$NF == "total" { n = $4 } END { printf "%.2f\n", n / s }' "$WORK/strace.$1"
}

port=$(free_port)
STATE_DIRECTORY=$STATE "$IOPULSE" run --listen "127.0.0.1:$port" >"$WORK/idle.log" 2>&1 &
iop=$!
ne_port=$(free_port)
"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$ne_port" >/dev/null 2>&1 &
ne=$!
cleanup_idle() { kill "$iop" "$ne" 2>/dev/null || true; cleanup; }
trap cleanup_idle EXIT
say "startup: idle, ${SETTLE}s to settle, then ${IDLE}s of context switches, ${IDLE}s of system calls"
sleep "$SETTLE"
a_iop=$(ctxt "$iop")
a_ne=$(ctxt "$ne")
sleep "$IDLE"
b_iop=$(ctxt "$iop")
b_ne=$(ctxt "$ne")
syscalls "$iop" "$IDLE" >"$WORK/sys.iop" &
tracer=$!
syscalls "$ne" "$IDLE" >"$WORK/sys.ne"
wait "$tracer"
rate() { awk -v a="$1" -v b="$2" -v s="$IDLE" 'BEGIN { printf "%.2f", (b - a) / s }'; }
{
	echo "idle_cs iopulse $(rate "$a_iop" "$b_iop")"
	echo "idle_cs node_exporter $(rate "$a_ne" "$b_ne")"
	echo "idle_sys iopulse $(cat "$WORK/sys.iop")"
	echo "idle_sys node_exporter $(cat "$WORK/sys.ne")"
} >>"$RES"

python3 - "$RES" "$ROUNDS" "$fresh_ms" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
rounds, fresh = int(sys.argv[2]), float(sys.argv[3])
v = {}
for kind, tool, x in rows:
    v.setdefault((kind, tool), []).append(float(x))
def mmm(xs):
    return "%7.2f %7.2f %7.2f" % (min(xs), st.median(xs), max(xs))
print(f"start-up, ms, {rounds} interleaved rounds: min median max")
for kind, a, b in (("serve", "iopulse", "node_exporter"), ("probe", "iopulse", "ioping")):
    x, y = v[(kind, a)], v[(kind, b)]
    ratios = sorted(p / q for p, q in zip(x, y))
    what = "exec -> first /metrics" if kind == "serve" else "exec -> exit, -c 1 (kept file)"
    print(f"  {what}")
    print(f"    {a:14s} {mmm(x)}   (target <= 10 ms: {'met' if st.median(x) <= 10 else 'NOT met'})")
    print(f"    {b:14s} {mmm(y)}")
    print(f"    ratio {a}/{b} per round: min {ratios[0]:.2f} median {st.median(ratios):.2f} max {ratios[-1]:.2f}")
print(f"  iopulse probe -c 1 on a fresh directory (lays out 64 MiB first): {fresh:.1f} ms")
print("idle, default config, per second:")
for tool in ("iopulse", "node_exporter"):
    print(f"  {tool:14s} context switches {v[('idle_cs', tool)][0]:6.2f}   system calls {v[('idle_sys', tool)][0]:7.2f}")
cs = v[("idle_cs", "iopulse")][0]
print(f"  target: context switches <= 1.2 I/Os/s + 1 = 2.2: {'met' if cs <= 2.2 else 'NOT met'}")
PY
