#!/usr/bin/env bash
# bench/overhead.sh — instrument overhead: what it costs the tool itself to issue,
# time and record an I/O. The null engine completes every I/O at once, so all the
# CPU either tool burns is its own. iopulse (`iopulse probe --json`, a burst probe,
# engine null, directory target) against `fio --ioengine=null` with the same
# settings: 4k, randread and randwrite, QD1 and QD32, one job.
#
# randwrite: both tools write fresh random data into the buffer before every
# write (iopulse always does; fio with --refill_buffers), so that cost is in.
# fio runs with its defaults otherwise (per-I/O clat/slat/lat timing on, as iopulse
# times every I/O), plus --norandommap (pure random offsets, as iopulse; cheaper
# for fio than its default random map) and --clocksource=cpu: fio picks the TSC
# only when its own start-up calibration of it passes, which on a busy machine
# it sometimes does not, and then reads clock_gettime() instead (~190 against
# ~110 ns per QD1 read); iopulse reads the TSC here, so fio gets it every time.
#
# Each run is sized to last ~SECS seconds (from a short calibration run of each
# tool), ROUNDS rounds interleaved iopulse/fio, medians reported.
# Metric: I/Os per CPU-second of I/O: CPU = user+sys of the whole process (GNU
# time, threads and children included) less the tool's start-up, the median CPU
# of STARTUP_RUNS runs of 1000 I/Os (fio's is ~0.15 s: its clock calibration,
# job set-up and report; iopulse's a few ms), so that a per-I/O comparison does
# not count a fixed cost per run. Also shown: whole-process figures, and plain
# IOPS as each tool reports it.
# Target: iopulse >= 3x fio in I/Os per CPU-second in every round, >= 4x median (issue 15).
#
# IOPULSE_BASE=/path/to/an/older/iopulse adds that binary to every round, as a
# third tool run the same way, and prints new/old: whether a change cost
# anything (issue 23: no regression, old and new binary in the same run).
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-2.5}
STARTUP_RUNS=${STARTUP_RUNS:-5}
SCENARIOS=${SCENARIOS:-"randread:1 randread:32 randwrite:1 randwrite:32"}
RES=$WORK/results.tsv
: >"$RES"
mkdir -p "$WORK/dir"

# iopulse_run OUT RW QD IOS
iopulse_run() {
	cat >"$WORK/overhead.yaml" <<-YAML
		targets:
		  - name: scratch
		    directory: $WORK/dir
		    size: 1MiB
		    layout_rate: 0
		probes:
		  - name: null-burst
		    type: burst
		    target: scratch
		    engine: "null"
		    rw: $2
		    block_size: 4KiB
		    iodepth: $3
		    ios: $4
		    every: 24h
	YAML
	timed "$1" "${BIN:-$IOPULSE}" probe --config "$WORK/overhead.yaml" --json
}

# base_run OUT RW QD IOS: iopulse_run with IOPULSE_BASE.
base_run() { BIN=$IOPULSE_BASE iopulse_run "$@"; }

# fio_run OUT RW QD IOS
fio_run() {
	local extra=()
	[ "$2" = randwrite ] && extra=(--refill_buffers)
	timed "$1" fio --name=overhead --ioengine=null --rw="$2" --bs=4k --iodepth="$3" \
		--size=$(($4 * 4096)) --norandommap --randrepeat=0 --clocksource=cpu "${extra[@]}" \
		--output-format=json
}

# I/O count for ~SECS seconds, from a small calibration run.
calibrate() { # TOOL RW QD
	local out=$WORK/cal ios=200000
	"${1}_run" "$out" "$2" "$3" "$ios"
	parse "$1" "$out" | python3 -c "
import sys; ios, iops = sys.stdin.read().split()[:2]
print(max(100000, min(1000000000, int(float(iops) * $SECS))))"
}

# A tool's start-up CPU seconds: the median of STARTUP_RUNS runs of 1000 I/Os.
startup() { # TOOL RW QD
	local _
	for _ in $(seq "$STARTUP_RUNS"); do
		"${1}_run" "$WORK/su" "$2" "$3" 1000
		parse "$1" "$WORK/su" | cut -d' ' -f3
	done | python3 -c "import sys, statistics; print('%.3f' % statistics.median(map(float, sys.stdin)))"
}

for sc in $SCENARIOS; do
	rw=${sc%:*} qd=${sc#*:}
	n_iop=$(calibrate iopulse "$rw" "$qd")
	n_fio=$(calibrate fio "$rw" "$qd")
	su_iop=$(startup iopulse "$rw" "$qd")
	su_fio=$(startup fio "$rw" "$qd")
	tools=(iopulse fio)
	if [ -n "${IOPULSE_BASE:-}" ]; then
		tools+=(base)
		su_base=$(startup base "$rw" "$qd")
	fi
	say "overhead: $rw QD$qd: iopulse ios=$n_iop start-up ${su_iop}s," \
		"fio ios=$n_fio start-up ${su_fio}s, $ROUNDS rounds"
	for r in $(seq "$ROUNDS"); do
		for tool in $(rotated "$r" "${tools[@]}"); do
			n=$n_iop su=$su_iop
			[ "$tool" = fio ] && n=$n_fio su=$su_fio
			[ "$tool" = base ] && su=$su_base
			"${tool}_run" "$WORK/out" "$rw" "$qd" "$n"
			echo "$tool $rw QD$qd $r $(parse "$tool" "$WORK/out") $su" >>"$RES"
		done
	done
done

python3 - "$RES" <<'PY'
import sys, statistics as st
# Rows: tool rw QD round ios iops cpu_s own_cpu_s startup_s
rows = [l.split() for l in open(sys.argv[1])]
med = lambda xs: st.median(xs)
print()
print("null engine, 4k, 1 job; medians of %d rounds" % max(int(r[3]) for r in rows))
print("randwrite: fresh random data per write (iopulse always, fio --refill_buffers)")
print()
hdr = ("scenario", "iopulse IOPS", "fio IOPS", "iopulse IO/CPU-s", "fio IO/CPU-s", "ratio",
       "rounds min/med/max", "whole", "ratio'", "target")
print("%-14s %13s %12s %17s %13s %7s %20s %7s %7s %s" % hdr)
for sc in dict.fromkeys((r[1], r[2]) for r in rows):
    def col(tool, f):
        return {int(r[3]): f(r) for r in rows if (r[1], r[2]) == sc and r[0] == tool}
    ips, fps = col("iopulse", lambda r: float(r[5])), col("fio", lambda r: float(r[5]))
    # I/Os per CPU-second of I/O (start-up subtracted), and of the whole process.
    net = lambda r: float(r[4]) / max(float(r[6]) - float(r[8]), 1e-3)
    ic, fc = col("iopulse", net), col("fio", net)
    iw = col("iopulse", lambda r: float(r[4]) / float(r[6]))
    fw = col("fio", lambda r: float(r[4]) / float(r[6]))
    fo = col("fio", lambda r: float(r[4]) / float(r[7]))
    # Per round: each round's iopulse over the same round's fio (drift cancels).
    per = sorted(ic[k] / fc[k] for k in ic if k in fc)
    ok = per[0] >= 3 and med(per) >= 4
    print("%-14s %13.0f %12.0f %17.0f %13.0f %6.2fx %20s %6.2fx %6.2fx %s" %
          (sc[0] + " " + sc[1], med(ips.values()), med(fps.values()), med(ic.values()),
           med(fc.values()), med(ic.values()) / med(fc.values()),
           "%.2f/%.2f/%.2fx" % (per[0], med(per), per[-1]),
           med(iw.values()) / med(fw.values()), med(iw.values()) / med(fo.values()),
           "met" if ok else "MISSED"))
print()
print("IO/CPU-s = I/Os per CPU-second, CPU = whole-process user+sys less the tool's")
print("start-up (median of short runs). ratio = iopulse / fio; rounds = each round's ratio")
print("(iopulse over fio in the same round): min/median/max. whole = the ratio with")
print("start-up counted; ratio' = iopulse's whole process over fio's own job CPU")
print("(usr+sys% x runtime: its start-up and main thread left out). Target: >= 3x in")
print("every round, >= 4x median. Numbers compare within one run only.")
base = [r for r in rows if r[0] == "base"]
if base:
    print()
    print("new/old: this iopulse over IOPULSE_BASE in I/Os per CPU-second, each round's")
    print("pair in that round (min/median/max); below 1.00 is a regression.")
    for sc in dict.fromkeys((r[1], r[2]) for r in rows):
        net = lambda r: float(r[4]) / max(float(r[6]) - float(r[8]), 1e-3)
        new = {int(r[3]): net(r) for r in rows if (r[1], r[2]) == sc and r[0] == "iopulse"}
        old = {int(r[3]): net(r) for r in base if (r[1], r[2]) == sc}
        per = sorted(new[k] / old[k] for k in new if k in old)
        print("%-14s new/old %.2f/%.2f/%.2fx" % (sc[0] + " " + sc[1], per[0], med(per), per[-1]))
PY
