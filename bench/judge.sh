#!/bin/bash
# bench/judge.sh — what the slow judgement makes of healthy storage (issue 29):
# the figures behind slow_floor auto, tail_factor, tail_share, stall and the
# hysteresis, measured on this machine, and how often the old rules (a fixed
# 1 ms floor, the median alone, no hysteresis) would have flipped a healthy
# target.
#
# Two daemons run side by side for MINUTES minutes, each with two targets, both
# healthy (nothing is made slow): "disk", a directory on the build directory's
# disk (shared with whatever else runs here: builds, tests), and "ram", a tmpfs
# of its own (allow_memory_backed), each with the embedded default's probes (a
# read ping every second, a write + fdatasync ping every 10 s) and a one-minute
# baseline warm-up:
#   new  the defaults (slow_floor auto, tails and stalls judged, slow after 2
#        slow minutes, good after 3);
#   old  slow_floor 1ms, tail_share 0%, stall 0s, slow_minutes 1, ok_minutes 1:
#        the judgement before issue 29.
# Printed at the end, per daemon, target and op, from /status.json?history=1:
# the baseline p50 and p99, the largest and smallest minute p50 over the
# baseline p50, the largest minute p99 over the baseline p99, the largest share
# of I/Os over the slow-I/O threshold (4x the baseline p99), the minutes judged
# slow, and the state changes the log has ("is slow", "is no longer slow").
# A measurement: exits 0 whatever the figures.
#
#   bench/judge.sh                 # as root: mounts a tmpfs
#   MINUTES=60 bench/judge.sh      # an hour
#
# Environment (and lib.sh's BUILD, IOPULSE):
#   MINUTES  minutes of measurement after the warm-up (20)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need curl
MINUTES=${MINUTES:-20}
[ "$(id -u)" -eq 0 ] || { say "judge.sh: needs root (it mounts a tmpfs)"; exit 69; }

PIDS=()
FUSE=()
MOUNTS=()
judge_cleanup() {
	trap - EXIT INT TERM
	set +e
	bench_stop say
}
trap judge_cleanup EXIT
trap 'exit 130' INT TERM

# config NAME EXTRA: a schedule for daemon NAME, the target keys EXTRA on both
# targets.
config() {
	local name=$1 extra=$2 t
	mkdir -p "$WORK/$name/disk" "$WORK/$name/ram"
	mount -t tmpfs -o size=80m,mode=0700 iopulse-bench "$WORK/$name/ram"
	MOUNTS+=("$WORK/$name/ram")
	{
		echo "splay: false"
		echo "targets:"
		for t in disk ram; do
			printf '  - name: %s\n    directory: %s\n' "$t" "$WORK/$name/$t"
			printf '    size: 16MiB\n    baseline_warmup: 1m\n'
			[ "$t" = disk ] || printf '    allow_memory_backed: true\n    direct: false\n'
			printf '%s' "$extra"
		done
		echo "probes:"
		for t in disk ram; do
			printf '  - {name: %s-read, type: ping, target: %s, op: read, interval: 1s}\n' \
				"$t" "$t"
			printf '  - {name: %s-write, type: ping, target: %s, op: write, ' "$t" "$t"
			printf 'sync: fdatasync, interval: 10s}\n'
		done
	} >"$WORK/$name.yaml"
}

config new ""
config old "    slow_floor: 1ms
    tail_share: 0%
    stall: 0s
    slow_minutes: 1
    ok_minutes: 1
"
declare -A PORT
for name in new old; do
	"$IOPULSE" run --config "$WORK/$name.yaml" --listen 127.0.0.1:0 --log-level info \
		>"$WORK/$name.log" 2>&1 &
	PIDS+=("$!")
	got_port() { PORT[$1]=$(sed -n 's|.*Serving metrics on http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' \
		"$WORK/$1.log" | head -n 1); [ -n "${PORT[$1]}" ]; }
	wait_for 60 "daemon $name serving" got_port "$name"
done
say "judge.sh: two daemons (new, old) on $WORK; warm-up 2 minutes, then $MINUTES minutes"
# A look every 30 s: the share over the threshold is of the last 5 minutes only.
end=$((SECONDS + (MINUTES + 2) * 60))
i=0
while ((SECONDS < end)); do
	sleep 30
	i=$((i + 1))
	for name in new old; do
		curl -fsS --max-time 30 "http://127.0.0.1:${PORT[$name]}/status.json?history=1" \
			>"$WORK/$name.$i.json" || true
	done
done
for name in new old; do
	cp "$WORK/$name.$i.json" "$WORK/$name.json"
done
python3 - "$WORK" <<'PY'
import glob, json, re, sys
work = sys.argv[1]
print(f"{'daemon':6} {'target':6} {'op':9} {'base p50':>9} {'base p99':>9} {'p50 max/min x':>14} "
      f"{'p99 max x':>9} {'share max':>9} {'slow min':>8} {'changes':>7}")
looks = {}
for name in ("new", "old"):
    looks[name] = {}
    for f in sorted(glob.glob(f"{work}/{name}.*.json")):
        try:
            s = json.load(open(f))
        except ValueError:
            continue
        for t in s["targets"]:
            for p in t["probes"]:
                looks[name].setdefault((t["name"], p["probe"], p["op"]), []).append(p)
for name in ("new", "old"):
    st = json.load(open(f"{work}/{name}.json"))
    log = open(f"{work}/{name}.log").read()
    for t in st["targets"]:
        changes = len(re.findall(rf"Target {t['name']} is (slow|no longer slow)", log))
        for p in t["probes"]:
            b = p["baseline"]
            mins = [m for m in p.get("minutes", []) if m["count"]]
            if not b or not mins:
                print(f"{name:6} {t['name']:6} {p['op']:9} (no baseline)")
                continue
            r50 = [m["p50_seconds"] / b["p50_seconds"] for m in mins]
            r99 = [m["p99_seconds"] / b["p99_seconds"] for m in mins]
            share = max((q["slow_io"] or {}).get("ratio", 0) for q in looks[name]
                        .get((t["name"], p["probe"], p["op"]), [p]))
            slow = sum(m["slow"] for m in mins)
            print(f"{name:6} {t['name']:6} {p['op']:9} {b['p50_seconds']*1e6:7.0f}us "
                  f"{b['p99_seconds']*1e6:7.0f}us {max(r50):6.2f}/{min(r50):5.2f}  "
                  f"{max(r99):9.1f} {share:9.3f} {slow:8d} {changes:7d}")
PY
