#!/usr/bin/env bash
# bench/ping.sh — ping accuracy: back-to-back QD1 4k O_DIRECT random reads of one
# 256 MiB random-filled file on the build directory's disk (not tmpfs), by
#   iopulse   `iopulse probe --count N --interval 0 --json`, a ping on the engine a
#             ping gets by default ('auto'), or ENGINE when set (sync, io_uring, libaio)
#   bareloop  bench/bareloop.c: pread between two clock_gettime, nothing else
#   fio       --ioengine=psync --direct=1 --rw=randread --bs=4k --iodepth=1 (clat)
#   ioping    -D -i 0 -c N -s 4k -S 256m (per-request times from -J)
# all over the whole file. ROUNDS rounds, the tools interleaved (the order
# rotates each round), p50 and p99 per run; medians over the rounds, and the
# median of each round's ratio to the bare loop (paired: the disk drifts).
# Target: iopulse's p50 within 5% of the bare loop's.
#
# iopulse's quantiles come from its histogram (error <= 0.27% + 0.5 ns, docs/histogram.md);
# the others sort raw samples (fio's from its own log-linear histogram too).
# iopulse runs with its CPU-wait correction off (IOPULSE_PROCFS without
# thread-self/): like the others it then reports what its clocks read, which is
# what this compares; its default, net of the time its thread waited for a CPU,
# reads lower (bench/cpu_wait.sh).
source "$(dirname "$0")/lib.sh"
need cc ioping

ROUNDS=${ROUNDS:-9}
COUNT=${COUNT:-10000}
ENGINE=${ENGINE:-auto}
FILE=$WORK/data
RES=$WORK/results.tsv
: >"$RES"

cc -O2 -Wall -Wextra -o "$WORK/bareloop" "$BENCH_DIR/bareloop.c"
say "ping: laying out 256 MiB of random data in $FILE"
random_file "$FILE" 256M

cat >"$WORK/ping.yaml" <<YAML
targets:
  - name: disk
    file: $FILE
probes:
  - name: read-ping
    type: ping
    target: disk
    engine: $ENGINE
    op: read
    block_size: 4KiB
YAML

# Each prints "p50_ns p99_ns"; iopulse also keeps the engine it ran on ('auto' resolved).
mkdir "$WORK/noproc"
run_iopulse() {
	IOPULSE_PROCFS=$WORK/noproc "$IOPULSE" probe --config "$WORK/ping.yaml" --count "$COUNT" \
		--interval 0 --json 2> >(grep -v "CPU wait" >&2) |
		python3 -c '
import json, sys
p = json.load(sys.stdin)["probes"][0]
assert p["status"] == "ok", p
open(sys.argv[1], "w").write(p["engine"])
l = p["ops"][0]["latency_seconds"]
print(round(l["p50"] * 1e9), round(l["p99"] * 1e9))' "$WORK/engine"
}
run_bareloop() {
	"$WORK/bareloop" "$FILE" "$COUNT" 4096 | cut -d' ' -f1,2
}
run_fio() {
	fio --name=ping --filename="$FILE" --ioengine=psync --direct=1 --rw=randread --bs=4k \
		--iodepth=1 --size=256m --io_size=$((COUNT * 4096)) --norandommap \
		--randrepeat=0 --output-format=json | python3 -c '
import json, sys
p = json.load(sys.stdin)["jobs"][0]["read"]["clat_ns"]["percentile"]
print(p["50.000000"], p["99.000000"])'
}
run_ioping() {
	# One extra request: ioping ignores the first as a warm-up.
	ioping -D -i 0 -c $((COUNT + 1)) -s 4k -S 256m -J "$FILE" | python3 -c '
import re, sys
t = sorted(int(x) for x in re.findall(r"\"time\": (\d+),\s*\"ignored\": false", sys.stdin.read()))
n = len(t)
print(t[(n * 50 + 99) // 100 - 1], t[(n * 99 + 99) // 100 - 1])'
}

TOOLS=(iopulse bareloop fio ioping)
say "ping: $ROUNDS rounds x ${#TOOLS[@]} tools x $COUNT reads"
for r in $(seq "$ROUNDS"); do
	for i in "${!TOOLS[@]}"; do
		tool=${TOOLS[$(((i + r - 1) % ${#TOOLS[@]}))]}
		echo "$tool $r $("run_$tool")" >>"$RES"
	done
done

python3 - "$RES" "$COUNT" "$ENGINE -> $(cat "$WORK/engine")" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
rounds = sorted({int(r[1]) for r in rows})
val = {(r[0], int(r[1])): (int(r[2]), int(r[3])) for r in rows}
med = lambda tool, c: st.median(val[tool, k][c] for k in rounds)
# Paired: each round's ratio to the bare loop of the same round, then the median.
pair = lambda tool, c: st.median(val[tool, k][c] / val["bareloop", k][c] for k in rounds)
print()
print("QD1 4k O_DIRECT random reads, 256 MiB file on disk, %s per run, %d rounds, "
      "iopulse engine %s" % (sys.argv[2], len(rounds), sys.argv[3]))
print()
print("%-9s %8s %8s %10s %10s %12s %12s" % ("tool", "p50 us", "p99 us", "p50/bare",
      "p99/bare", "p50/bare", "p99/bare"))
print("%-9s %8s %8s %10s %10s %12s %12s" % ("", "median", "median", "(medians)",
      "(medians)", "(paired)", "(paired)"))
for tool in ("bareloop", "iopulse", "fio", "ioping"):
    print("%-9s %8.1f %8.1f %9.3fx %9.3fx %11.3fx %11.3fx" % (tool, med(tool, 0) / 1e3,
          med(tool, 1) / 1e3, med(tool, 0) / med("bareloop", 0),
          med(tool, 1) / med("bareloop", 1), pair(tool, 0), pair(tool, 1)))
print()
print("p50 per round (us):")
for tool in ("bareloop", "iopulse", "fio", "ioping"):
    print("  %-9s %s" % (tool, [round(val[tool, k][0] / 1e3, 1) for k in rounds]))
d = pair("iopulse", 0) - 1
print()
print("target: iopulse p50 within 5%% of the bare loop's (paired median): %+.1f%% -> %s" %
      (d * 100, "met" if abs(d) <= 0.05 else "MISSED"))
print("paired = median over rounds of (tool / bare loop in the same round): the device drifts")
print("between rounds more than the tools differ. Numbers compare within one run only.")
PY
