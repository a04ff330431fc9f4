#!/usr/bin/env bash
# bench/budget.sh — what iopulse costs the storage and the host it watches, and
# what its busy-disk backoff spares production (issue 14).
#
# 1. Budget: the embedded default config's projection (`iopulse check`: busy
#    seconds an hour, bytes written a day) next to what the daemon really spends
#    running that config on a real disk (STATE_DIRECTORY in the scratch
#    directory under the build directory) for DURATION seconds, counted from
#    after the probe file's layout (which no budget counts):
#    iopulse_target_io_seconds_total and iopulse_target_written_bytes_total over
#    the window, scaled to an hour and a day, and the ratio measured/projected;
#    plus the daemon's own CPU time (utime+stime from /proc/PID/stat) as seconds
#    an hour.
# 2. Backoff: a loop device over a file in the scratch directory (losetup
#    --direct-io=on; the only device this script touches, detached at exit).
#    "Production" is fio, 4k randread QD4 O_DIRECT read-only for PROD_SECS.
#    Each round runs it alone, with an iopulse burst on the same loop device
#    (4k randread QD32 for BURST_SECS, `splay: false`: due at start, LEAD
#    seconds into fio's run) and busy_backoff true, and the same with
#    busy_backoff false, in rotating order. Printed: fio's IOPS over its whole
#    run and over the burst's window (from fio's per-second IOPS log), the
#    ratios to the same round's lone run, and whether the burst was held back
#    (iopulse_probe_skipped_total{reason="device_busy"}, the utilisation and
#    queue depth iopulse saw; the script's own reading of the loop device's
#    stat over fio's run alongside); min/median/max over ROUNDS.
#
# A measurement, not a test: exits 0 whenever it ran, whatever the figures.
# As root (losetup). Knobs: DURATION (120), ROUNDS (3), PROD_SECS (20),
# BURST_SECS (10), LEAD (2), LOOP_SIZE (512M).
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
need curl losetup

DURATION=${DURATION:-120}
ROUNDS=${ROUNDS:-3}
PROD_SECS=${PROD_SECS:-20}
BURST_SECS=${BURST_SECS:-10}
LEAD=${LEAD:-2}
LOOP_SIZE=${LOOP_SIZE:-512M}
[ "$(id -u)" -eq 0 ] || { say "budget: needs root (it sets up a loop device)"; exit 77; }
for v in DURATION ROUNDS PROD_SECS BURST_SECS LEAD; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || { say "budget: $v must be a whole number of seconds, not '${!v}'"; exit 64; }
done
((LEAD + BURST_SECS < PROD_SECS)) ||
	{ say "budget: LEAD + BURST_SECS must be under PROD_SECS (the burst runs inside fio's run)"; exit 64; }

DPID= # the daemon running, if any
FPID= # the production fio running, if any
LOOP= # the loop device this script set up
budget_cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	[ -z "$DPID" ] || { kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; }
	[ -z "$FPID" ] || { kill "$FPID" 2>/dev/null; wait "$FPID" 2>/dev/null; }
	# Only the device losetup gave this script, and only while it still
	# points at this script's file.
	if [ -n "$LOOP" ] && losetup -j "$WORK/loop.img" | grep -q "^$LOOP:"; then
		losetup -d "$LOOP" || say "budget: could not detach $LOOP"
	fi
	cleanup
	exit "$rc"
}
trap budget_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="${2:-$(now)}" 'BEGIN { printf "%.3f", b - a }'; } # T0 [T1]
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# daemon_start LOG ARGS...: iopulse run ARGS on a free loopback port; sets DPID
# and PORT once the daemon says where it serves.
daemon_start() {
	local log=$1 _
	shift
	"$IOPULSE" run --listen 127.0.0.1:0 "$@" >"$log" 2>&1 &
	DPID=$!
	for _ in $(seq 100); do
		PORT=$(sed -n 's|.*Serving metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$log")
		[ -z "$PORT" ] || return 0
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.1
	done
	say "budget: iopulse did not start serving; its log:"
	cat "$log" >&2
	exit 1
}
daemon_stop() {
	kill "$DPID"
	wait "$DPID" || say "budget: iopulse exited with status $?"
	DPID=
}

# metric NAME LABELS: the sum of the samples of NAME whose labels contain every
# comma-separated k="v" of LABELS, from a fresh scrape (nan when there is none).
metric() {
	curl -fsS --max-time 10 "http://127.0.0.1:$PORT/metrics" | python3 -c '
import sys
name, want = sys.argv[1], [w for w in sys.argv[2].split(",") if w]
vals = []
for line in sys.stdin:
    if line.startswith(name + "{") or line.startswith(name + " "):
        labels, value = line.rsplit(" ", 1)
        if all(w in labels for w in want):
            vals.append(float(value))
print(sum(vals) if vals else "nan")' "$1" "$2"
}

# ---------------------------------------------------------------- 1. budget

STATE=$WORK/state
mkdir "$STATE"
STATE_DIRECTORY=$STATE "$IOPULSE" check >"$WORK/check.out"
PROJ=$(sed -n 's/^#   state: //p' "$WORK/check.out")
[ -n "$PROJ" ] || { say "budget: no projection for target 'state' in iopulse check's output"; exit 1; }

say "budget: the default config on $STATE for ${DURATION}s (after its layout)"
t_start=$(now)
STATE_DIRECTORY=$STATE daemon_start "$WORK/budget.log"
# The window opens once the layout is done and the first ping has run.
deadline=$((SECONDS + 600))
until [ "$(metric iopulse_target_layout_progress_ratio 'target="state"')" = 1.0 ] &&
	[ "$(metric iopulse_target_io_seconds_total 'target="state"')" != 0.0 ]; do
	((SECONDS < deadline)) || { say "budget: the layout did not finish within 10 minutes"; exit 1; }
	sleep 0.5
done
snap() {
	echo "$(now) $(metric iopulse_target_io_seconds_total 'target="state"')" \
		"$(metric iopulse_target_written_bytes_total 'target="state"') $(cpu_ticks "$DPID")"
}
s0=$(snap)
sleep "$DURATION"
s1=$(snap)
daemon_stop
echo "$PROJ" >"$WORK/budget.txt"
echo "$t_start $s0 $s1 $(getconf CLK_TCK)" >>"$WORK/budget.txt"

# ---------------------------------------------------------------- 2. backoff

say "budget: laying out $LOOP_SIZE of random data for the loop device"
random_file "$WORK/loop.img" "$LOOP_SIZE"
LOOP=$(losetup --find --show --direct-io=on "$WORK/loop.img")
DEV=${LOOP#/dev/}
[ "$(cat "/sys/block/$DEV/loop/dio")" = 1 ] || say "budget: $LOOP does not do direct I/O on its file"
say "budget: $LOOP over $WORK/loop.img; $ROUNDS rounds of ${PROD_SECS}s of production fio"

# stat_of: "io_ticks time_in_queue" (ms) of the loop device (fields 10 and 11).
stat_of() { awk '{ print $10, $11 }' "/sys/block/$DEV/stat"; }

prod_start() { # OUT
	fio --name=prod --filename="$LOOP" --readonly --ioengine=libaio --direct=1 \
		--rw=randread --bs=4k --iodepth=4 --norandommap --randrepeat=0 \
		--time_based --runtime="$PROD_SECS" --write_iops_log="$1" --log_avg_msec=1000 \
		--output-format=json >"$1.json" &
	FPID=$!
}

# one MODE OUT: one production run, alone or beside an iopulse burst with
# busy_backoff on or off; appends a result line to $RES.
one() {
	local mode=$1 out=$2 t0 d_off=nan st0 st1 t1 skipped=nan util=nan qd=nan runs=nan first="nan nan" freed="nan nan"
	st0=$(stat_of)
	t0=$(now)
	prod_start "$out"
	if [ "$mode" != alone ]; then
		cat >"$WORK/burst.yaml" <<-YAML
			splay: false
			targets:
			  - name: loop
			    device: $LOOP
			probes:
			  - name: burst
			    type: burst
			    target: loop
			    rw: randread
			    block_size: 4k
			    iodepth: 32
			    duration: ${BURST_SECS}s
			    every: 1h
			    busy_backoff: $([ "$mode" = backoff ] && echo true || echo false)
		YAML
		sleep "$LEAD"
		d_off=$(since "$t0")
		daemon_start "$out.log" --config "$WORK/burst.yaml"
	fi
	wait "$FPID"
	FPID=
	t1=$(now)
	st1=$(stat_of)
	if [ "$mode" != alone ]; then
		skipped=$(metric iopulse_probe_skipped_total 'probe="burst",reason="device_busy"')
		util=$(metric iopulse_target_device_utilization_ratio 'target="loop"')
		qd=$(metric iopulse_target_device_queue_depth 'target="loop"')
		runs=$(metric iopulse_probe_run_seconds_total 'probe="burst"')
		daemon_stop
		# What the first check saw, from the log's notice (the gauges hold the last).
		first=$(sed -n 's/.* is busy (\([0-9.]*\)% utilised, queue depth \([0-9.]*\)).*/\1 \2/p' \
			"$out.log" | head -n 1)
		[ -n "$first" ] || first="nan nan"
		# A retry that found the disk idle enough lets the burst run after all.
		freed=$(sed -n 's/.* is no longer busy (\([0-9.]*\)% utilised, queue depth \([0-9.]*\)).*/\1 \2/p' \
			"$out.log" | head -n 1)
		[ -n "$freed" ] || freed="nan nan"
	fi
	echo "$mode $r $d_off $skipped $util $qd $runs $st0 $st1 $(since "$t0" "$t1") $first $freed $out" >>"$RES"
}

RES=$WORK/backoff.txt
: >"$RES"
for r in $(seq "$ROUNDS"); do
	for mode in $(rotated "$r" alone backoff nobackoff); do
		say "budget: round $r, $mode"
		one "$mode" "$WORK/prod.$r.$mode"
	done
done

# ---------------------------------------------------------------- summary

python3 - "$WORK/budget.txt" "$RES" "$DURATION" "$LEAD" "$BURST_SECS" "$PROD_SECS" "$LOOP" <<'PY'
import json, re, sys, statistics as st
budget, res, duration, lead, burst, prod, loop = sys.argv[1:]
lead, burst, prod = float(lead), float(burst), float(prod)
proj, nums = open(budget).read().splitlines()
units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
m = re.search(r"busy ([0-9.]+)s an hour.*writes ([0-9.]+) (B|KiB|MiB|GiB|TiB) a day", proj)
p_busy, p_bytes = float(m[1]), float(m[2]) * units[m[3]]
v = nums.split()
t_start, (t0, io0, wb0, c0), (t1, io1, wb1, c1), tck = float(v[0]), map(float, v[1:5]), \
    map(float, v[5:9]), float(v[9])
span = t1 - t0
m_busy, m_bytes = (io1 - io0) / span * 3600, (wb1 - wb0) / span * 86400
cpu_h = (c1 - c0) / tck / span * 3600
print()
print("1. Budget: the embedded default config (read ping 1s, write+fdatasync ping 10s, 64 MiB")
print("   probe file on the build directory's disk), %.0f s measured after the layout" % span)
print()
print("%-28s %14s %14s %8s" % ("", "projected", "measured", "ratio"))
print("%-28s %12.2f s %12.3f s %7.3fx" % ("busy per hour", p_busy, m_busy, m_busy / p_busy))
print("%-28s %10.1f MiB %10.1f MiB %7.3fx" % ("written per day", p_bytes / 2**20, m_bytes / 2**20,
                                              m_bytes / p_bytes))
print("%-28s %14s %12.2f s" % ("iopulse CPU per hour", "-", cpu_h))
print("   (%.2f%% of one CPU; start-up and the layout: %.2f s of CPU before the window)"
      % (cpu_h / 36, c0 / tck))
print("   iopulse check: %s" % proj)

rows = [l.split() for l in open(res)]
def fio(out):
    j = json.load(open(out + ".json"))["jobs"][0]["read"]
    return j["iops"]
def window(out, start, end):
    # fio's per-second IOPS log: "msec, iops, ..." over the second ending at msec.
    vals = [float(l.split(",")[1]) for l in open(out + "_iops.1.log")
            if start < float(l.split(",")[0]) / 1000 - 0.5 <= end]
    return st.mean(vals) if vals else float("nan")
by = {}
for mode, r, d_off, skipped, util, qd, runs, a0, q0, a1, q1, el, futil, fqd, rutil, rqd, out in rows:
    start = float(d_off) if mode != "alone" else lead
    by[(mode, r)] = dict(iops=fio(out), win=window(out, start + 0.5, start + 0.5 + burst),
                         skipped=float(skipped), util=float(util), qd=float(qd),
                         runs=float(runs), futil=float(futil) / 100, fqd=float(fqd),
                         rutil=float(rutil) / 100, rqd=float(rqd),
                         sutil=(float(a1) - float(a0)) / (float(el) * 1000),
                         sqd=(float(q1) - float(q0)) / (float(el) * 1000))
rounds = sorted({r for _, r in by}, key=int)
def mmm(xs):
    xs = [x for x in xs if x == x]
    return "%.2f / %.2f / %.2f" % (min(xs), st.median(xs), max(xs)) if xs else "-"
print()
print("2. Backoff: production = fio 4k randread QD4 O_DIRECT, %gs, read-only on %s" % (prod, loop))
print("   (loop device, direct I/O, over a file on the build directory's disk); iopulse burst")
print("   4k randread QD32 for %gs on the same device, due %gs into fio's run; %d rounds" %
      (burst, lead, len(rounds)))
print()
print("%-26s %12s %14s %9s %9s %9s %12s %12s" % ("", "fio IOPS", "IOPS in burst", "skipped",
      "util seen", "qd seen", "burst", "util (stat)"))
for mode in ("alone", "backoff", "nobackoff"):
    g = lambda k: st.median(by[(mode, r)][k] for r in rounds)
    held = sum(by[(mode, r)]["rutil"] != by[(mode, r)]["rutil"] for r in rounds)
    what = {"alone": "-", "backoff": "held %d/%d" % (held, len(rounds)),
            "nobackoff": "ran %.1fs" % g("runs")}[mode]
    label = {"alone": "production alone", "backoff": "+ burst, busy_backoff true",
             "nobackoff": "+ burst, busy_backoff false"}[mode]
    print("%-26s %12.0f %14.0f %9s %9s %9s %12s %11.0f%%" % (label, g("iops"), g("win"),
          "-" if mode == "alone" else "%.0f" % g("skipped"),
          "-" if g("futil") != g("futil") else "%.0f%%" % (100 * g("futil")),
          "-" if g("fqd") != g("fqd") else "%.1f" % g("fqd"),
          what, 100 * g("sutil")))
print("   (medians over rounds; IOPS in burst = fio's IOPS over the burst's %gs window, in the" % burst)
print("   lone run over the same seconds; util/qd seen = what iopulse's first check saw, from its")
print("   log, none with the check off; util (stat) = the loop device's io_ticks over fio's whole")
print("   run, read by this script; held = rounds where no retry let the burst run beside fio)")
print()
print("%-44s %22s" % ("ratio, per round", "min / median / max"))
def ratio(a, b, k):
    return [by[(a, r)][k] / by[(b, r)][k] for r in rounds]
print("%-44s %22s" % ("production IOPS, backoff on / alone", mmm(ratio("backoff", "alone", "iops"))))
print("%-44s %22s" % ("production IOPS, backoff off / alone", mmm(ratio("nobackoff", "alone", "iops"))))
print("%-44s %22s" % ("production IOPS, backoff on / off", mmm(ratio("backoff", "nobackoff", "iops"))))
print("%-44s %22s" % ("  in the burst's window, on / alone", mmm(ratio("backoff", "alone", "win"))))
print("%-44s %22s" % ("  in the burst's window, off / alone", mmm(ratio("nobackoff", "alone", "win"))))
print("%-44s %22s" % ("  in the burst's window, on / off", mmm(ratio("backoff", "nobackoff", "win"))))
print()
for r in rounds:
    b, n = by[("backoff", r)], by[("nobackoff", r)]
    print("round %s: backoff on: skipped %d, first check util %.0f%% qd %.1f, last %.0f%% qd %.1f; %s"
          % (r, b["skipped"], 100 * b["futil"], b["fqd"], 100 * b["util"], b["qd"],
             "held back while fio ran" if b["rutil"] != b["rutil"] else
             "RELEASED at a retry (util %.0f%% qd %.1f): the burst ran beside fio"
             % (100 * b["rutil"], b["rqd"])))
    print("         backoff off: burst ran %.1fs" % n["runs"])
print()
print("Numbers compare within one run only.")
PY
