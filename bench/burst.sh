#!/usr/bin/env bash
# bench/burst.sh — burst throughput per I/O: 4k randread, O_DIRECT, QD32, one job,
# on a 256 MiB random-filled file in /dev/shm. RAM answers, so the run is CPU
# bound and IOPS measure each tool's per-I/O cost (plus the kernel's).
# iopulse (`iopulse probe --json`, a burst on a `file:` target with
# allow_memory_backed) against `fio --direct=1` with its defaults otherwise
# (plus --norandommap: pure random offsets, as iopulse), for io_uring then
# libaio. ROUNDS rounds of DURATION each, interleaved, medians reported.
# Target: iopulse IOPS >= 1.15x fio. For io_uring, fio --fixedbufs runs too, as
# an extra column (fio's best: registered buffers, as iopulse uses).
#
# On tmpfs, io_uring O_DIRECT reads are punted to io-wq kernel workers (far
# fewer IOPS than libaio); both tools hit that, so compare ratios, not engines.
# iopulse sends them there directly (IOSQE_ASYNC) with io-wq capped at the CPU
# count; fio tries each inline first.
# CPU per I/O is the whole process's user+sys (io-wq workers are threads of
# the process and count) over the I/Os it reports.
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3}
ENGINES=${ENGINES:-"io_uring libaio"}
SHM=$(mktemp -d /dev/shm/iopulse-bench.XXXXXX)
cleanup_dirs+=("$SHM")
FILE=$SHM/data
RES=$WORK/results.tsv
: >"$RES"

say "burst: laying out 256 MiB of random data in $FILE"
random_file "$FILE" 256M

iopulse_run() { # OUT ENGINE
	cat >"$WORK/burst.yaml" <<-YAML
		targets:
		  - name: shm
		    file: $FILE
		    allow_memory_backed: true
		probes:
		  - name: randread-qd32
		    type: burst
		    target: shm
		    engine: $2
		    rw: randread
		    block_size: 4KiB
		    iodepth: 32
		    duration: ${DURATION}s
		    every: 24h
	YAML
	timed "$1" "$IOPULSE" probe --config "$WORK/burst.yaml" --json
}

fio_run() { # OUT ENGINE [EXTRA...]
	local out=$1 eng=$2
	shift 2
	timed "$out" fio --name=burst --filename="$FILE" --ioengine="$eng" --direct=1 \
		--rw=randread --bs=4k --iodepth=32 --norandommap --randrepeat=0 \
		--time_based --runtime="$DURATION" --output-format=json "$@"
}

# fio at its best on io_uring: registered buffers, as iopulse registers its own.
fiofb_run() { # OUT ENGINE
	fio_run "$1" "$2" --fixedbufs
}

for eng in $ENGINES; do
	say "burst: $eng, $ROUNDS rounds of ${DURATION}s per tool"
	tools=(iopulse fio)
	[ "$eng" = io_uring ] && tools+=(fiofb) # --fixedbufs is io_uring's only
	for r in $(seq "$ROUNDS"); do
		for tool in $(rotated "$r" "${tools[@]}"); do
			"${tool}_run" "$WORK/out" "$eng"
			echo "$tool $eng $r $(parse "$tool" "$WORK/out")" >>"$RES"
		done
	done
done

python3 - "$RES" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
print()
print("4k randread O_DIRECT QD32, 1 job, 256 MiB random file on /dev/shm; medians of %d rounds"
      % max(int(r[2]) for r in rows))
print()
print("%-9s %13s %12s %7s %15s %11s %7s %14s %16s %7s" % ("engine", "iopulse IOPS", "fio IOPS",
      "ratio", "iopulse CPU/IO", "fio CPU/IO", "ratio", "target >=1.15x", "fio-fixedbufs IOPS",
      "ratio"))
for eng in dict.fromkeys(r[1] for r in rows):
    def m(tool, f):
        return st.median([f(r) for r in rows if r[1] == eng and r[0] == tool])
    ip, fp = m("iopulse", lambda r: float(r[4])), m("fio", lambda r: float(r[4]))
    ic = m("iopulse", lambda r: float(r[5]) / float(r[3]) * 1e9)
    fc = m("fio", lambda r: float(r[5]) / float(r[3]) * 1e9)
    has_fb = any(r[1] == eng and r[0] == "fiofb" for r in rows)
    bp = m("fiofb", lambda r: float(r[4])) if has_fb else None
    spread = lambda tool: [round(float(r[4]) / 1e3) for r in rows if r[1] == eng and r[0] == tool]
    print("%-9s %13.0f %12.0f %6.2fx %12.0f ns %8.0f ns %6.2fx %14s %16s %7s" %
          (eng, ip, fp, ip / fp, ic, fc, ic / fc, "met" if ip / fp >= 1.15 else "MISSED",
           "%.0f" % bp if has_fb else "-", "%.2fx" % (ip / bp) if has_fb else "-"))
    print("%-9s   iopulse kIOPS per round %s, fio %s%s" % ("", spread("iopulse"), spread("fio"),
          ", fio --fixedbufs %s" % spread("fiofb") if has_fb else ""))
print()
print("CPU/IO = whole-process user+sys / I/Os (lower is better; ratio = iopulse / fio).")
print("fio-fixedbufs: fio --fixedbufs (io_uring only), not the target, shown as fio's best.")
print("Numbers compare within one run only.")
PY
