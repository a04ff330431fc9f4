#!/usr/bin/env bash
# bench/cpu_wait.sh — a busy CPU is not a slow disk (issue 29): the shipped
# pings (a 4k O_DIRECT read; a 4k write with fdatasync) on a directory of the
# build directory's disk, quiet and then with the CPUs saturated by
# `stress-ng --cpu N` (no I/O), by two daemons side by side, each on a probe
# file of its own, so that each phase is the same for both:
#   net    the default: latencies net of the probe thread's run-queue wait
#   raw    the same daemon with /proc/thread-self hidden (IOPULSE_PROCFS): what
#          a clock around each I/O reads, as iopulse measured before
# For each phase and daemon: the I/Os, their p50/p90/p99 (from the latency
# histogram's deltas over the phase, classic buckets 64 log-spaced bounds from
# 20us to 100ms, interpolated: within ~7%), the share of I/Os that waited for a
# CPU and the share of their time that was waiting.
# Then what measuring the wait costs a ping: CPU per ping of `iopulse probe`
# on the null engine (no device: every microsecond is ours), measured against
# hidden, ROUNDS rounds interleaved, medians.
#
# Environment: PHASE seconds per phase (120), HOGS the stress-ng --cpu counts
# (default "2 6"), INTERVAL the read ping's (100ms; the write's is 10x),
# COST_COUNT null pings per cost run (200000), ROUNDS (5).
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
need stress-ng curl

PHASE=${PHASE:-120}
HOGS=${HOGS:-"2 6"}
INTERVAL=${INTERVAL:-100ms}
COST_COUNT=${COST_COUNT:-200000}
ROUNDS=${ROUNDS:-5}
VARIANTS=(net raw)
mkdir "$WORK/noproc"

BUCKETS=$(python3 -c '
lo, hi, n = 20e-6, 0.1, 64
print(", ".join("%dns" % round(lo * (hi / lo) ** (i / (n - 1)) * 1e9) for i in range(n)))')
WRITE_INTERVAL=$(python3 -c '
import re, sys
m = re.fullmatch(r"(\d+(?:\.\d+)?)(us|ms|s)", sys.argv[1])
assert m, "INTERVAL: a number and us, ms or s"
print("%g%s" % (float(m.group(1)) * 10, m.group(2)))' "$INTERVAL")

# daemon VARIANT: one daemon, its environment as VARIANT says; its port in
# $WORK/VARIANT.port once it serves.
declare -A PIDS=()
daemon() {
	local v=$1 env=()
	mkdir -p "$WORK/$v"
	cat >"$WORK/$v.yaml" <<-YAML
		splay: false
		buckets: [$BUCKETS]
		targets:
		  - name: state
		    directory: $WORK/$v
		    size: 64MiB
		    max_duty_cycle: 100%
		    max_write_per_day: 0
		probes:
		  - name: read-ping
		    type: ping
		    target: state
		    op: read
		    block_size: 4k
		    interval: $INTERVAL
		  - name: write-ping
		    type: ping
		    target: state
		    op: write
		    sync: fdatasync
		    block_size: 4k
		    interval: $WRITE_INTERVAL
	YAML
	[ "$v" = raw ] && env=(IOPULSE_PROCFS="$WORK/noproc")
	env "${env[@]}" "$IOPULSE" run --config "$WORK/$v.yaml" --listen 127.0.0.1:0 \
		>"$WORK/$v.log" 2>&1 &
	PIDS[$v]=$!
}
stop_daemons() {
	local v
	for v in "${!PIDS[@]}"; do
		kill "${PIDS[$v]}" 2>/dev/null || true
		wait "${PIDS[$v]}" 2>/dev/null || true
	done
}
HOG_PID=
stop_hogs() {
	[ -z "$HOG_PID" ] && return 0
	kill "$HOG_PID" 2>/dev/null || true
	wait "$HOG_PID" 2>/dev/null || true
	HOG_PID=
}
trap 'stop_hogs; stop_daemons; cleanup' EXIT

port_of() {
	sed -n 's|.*Serving metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$WORK/$1.log"
}
# scrape VARIANT OUT: its page into OUT.
scrape() {
	curl -fsS --max-time 30 "http://127.0.0.1:$(port_of "$1")/metrics" >"$2"
}

say "cpu_wait: starting ${VARIANTS[*]} (probe files laid out, pings at $INTERVAL and $WRITE_INTERVAL)"
for v in "${VARIANTS[@]}"; do
	daemon "$v"
done
for v in "${VARIANTS[@]}"; do
	for _ in $(seq 600); do
		[ -n "$(port_of "$v")" ] && scrape "$v" "$WORK/$v.0.prom" 2>/dev/null &&
			grep -q '^iopulse_probe_ios_total{probe="write-ping",target="state",op="fdatasync"} [1-9]' \
				"$WORK/$v.0.prom" && break
		kill -0 "${PIDS[$v]}" 2>/dev/null || { cat "$WORK/$v.log" >&2; exit 1; }
		sleep 0.2
	done
done
for v in "${VARIANTS[@]}"; do
	grep -h "CPU wait" "$WORK/$v.log" | sed "s/^[0-9-]* [0-9:.]* /  $v: /" >&2 || true
done

# Phase names: quiet, then cpuN for each N of HOGS (cpuN.2 for its second...).
PHASES=(quiet)
declare -A SEEN=()
for n in $HOGS; do
	SEEN[$n]=$((${SEEN[$n]:-0} + 1))
	if [ "${SEEN[$n]}" -eq 1 ]; then PHASES+=("cpu$n"); else PHASES+=("cpu$n.${SEEN[$n]}"); fi
done
for ph in "${PHASES[@]}"; do
	if [ "$ph" != quiet ]; then
		n=${ph#cpu}
		stress-ng --cpu "${n%%.*}" --timeout $((PHASE + 30))s >/dev/null 2>&1 &
		HOG_PID=$!
		sleep 2
	fi
	say "cpu_wait: phase $ph, ${PHASE}s"
	for v in "${VARIANTS[@]}"; do scrape "$v" "$WORK/$v.$ph.a.prom"; done
	sleep "$PHASE"
	for v in "${VARIANTS[@]}"; do scrape "$v" "$WORK/$v.$ph.b.prom"; done
	stop_hogs
	sleep 2
done

python3 - "$WORK" "$(nproc)" "$INTERVAL" "$PHASE" "${PHASES[@]}" -- "${VARIANTS[@]}" <<'PY'
import re, sys
work, cpus, interval, phase = sys.argv[1:5]
rest = sys.argv[5:]
phases, variants = rest[:rest.index("--")], rest[rest.index("--") + 1:]
OPS = [("read-ping", "read"), ("write-ping", "write"), ("write-ping", "fdatasync")]

def page(path):
    out = {}
    for line in open(path):
        m = re.match(r'(\w+)\{([^}]*)\} (\S+)$', line.strip())
        if m:
            out[(m.group(1), m.group(2))] = float(m.group(3))
    return out

def figures(a, b, probe, op):
    lab = 'probe="%s",target="state",op="%s"' % (probe, op)
    d = lambda name, labels=lab: b.get((name, labels), 0) - a.get((name, labels), 0)
    buckets = sorted((float(k[1].split('le="')[1].rstrip('"')), d(*k)) for k in b
                     if k[0] == "iopulse_probe_latency_seconds_bucket"
                     and k[1].startswith(lab + ",") and 'le="+Inf"' not in k[1])
    n = d("iopulse_probe_latency_seconds_count")
    def q(p):  # as histogram_quantile: linear within the bucket
        rank, prev_b, prev_c = p * n, 0.0, 0.0
        for x, c in buckets:
            if c >= rank:
                return prev_b + (x - prev_b) * ((rank - prev_c) / (c - prev_c) if c > prev_c else 1)
            prev_b, prev_c = x, c
        return float("inf")
    s, w = d("iopulse_probe_latency_seconds_sum"), d("iopulse_probe_cpu_wait_seconds_total")
    waited = d("iopulse_probe_cpu_waited_ios_total")
    return n, q(0.5), q(0.9), q(0.99), waited / n if n else 0, w / (s + w) if s + w else 0

print()
print("The shipped pings on %s's disk, %s CPUs, read every %s, %ss a phase" %
      (work, cpus, interval, phase))
print("(p50/p90/p99 from classic buckets 20us-100ms, 64 log-spaced, interpolated: within ~7%)")
for probe, op in OPS:
    print()
    print("%-12s %7s %9s %9s %9s %8s %9s" % (op, "I/Os", "p50 us", "p90 us", "p99 us",
                                              "waited", "wait/io"))
    for ph in phases:
        for v in variants:
            a = page("%s/%s.%s.a.prom" % (work, v, ph))
            b = page("%s/%s.%s.b.prom" % (work, v, ph))
            n, p50, p90, p99, waited, share = figures(a, b, probe, op)
            print("%-6s %-5s %7d %9.1f %9.1f %9.1f %7.1f%% %8.1f%%" % (
                ph, v, n, p50 * 1e6, p90 * 1e6, p99 * 1e6, waited * 100, share * 100))
print()
print("net: latency net of the run-queue wait (the default); raw: the clocks' figure")
print("(the wait hidden, as before issue 29). waited: share of I/Os that waited 1us or")
print("more for a CPU; wait/io: share of their clock time spent waiting (net only: raw")
print("cannot see it).")
PY

# ---- what the measurement costs a ping ----
mkdir -p "$WORK/null"
cat >"$WORK/null.yaml" <<YAML
targets:
  - name: scratch
    directory: $WORK/null
    size: 1MiB
probes:
  - name: null-ping
    type: ping
    target: scratch
    engine: "null"
    op: read
    block_size: 4k
YAML
say "cpu_wait: cost, $ROUNDS rounds x $COST_COUNT null pings, measured and hidden"
: >"$WORK/cost.tsv"
for r in $(seq "$ROUNDS"); do
	for v in measured hidden; do
		env=()
		[ "$v" = hidden ] && env=(IOPULSE_PROCFS="$WORK/noproc")
		timed "$WORK/cost.$v.$r" env "${env[@]}" "$IOPULSE" probe --config "$WORK/null.yaml" \
			--count "$COST_COUNT" --interval 0 --json 2>/dev/null
		echo "$v $r $(parse iopulse "$WORK/cost.$v.$r")" >>"$WORK/cost.tsv"
	done
done
python3 - "$WORK/cost.tsv" "$COST_COUNT" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
count = int(sys.argv[2])
cpu = {v: [float(r[4]) / count * 1e9 for r in rows if r[0] == v] for v in ("measured", "hidden")}
pair = [m - h for m, h in zip(cpu["measured"], cpu["hidden"])]
print()
print("CPU per null-engine ping (iopulse probe, %d pings a run, %d rounds):" % (count, len(pair)))
print("  measured %.0f ns, hidden %.0f ns (medians); the measurement adds %.0f ns a ping"
      " (paired median: two pread() of schedstat)" % (st.median(cpu["measured"]),
      st.median(cpu["hidden"]), st.median(pair)))
PY
