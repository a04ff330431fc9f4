# shellcheck shell=bash
# bench/lib.sh — sourced by the bench scripts: paths, a scratch directory, CPU timing
# and reading the timed runs back (parse).
#
# Environment:
#   BUILD    build directory holding the iopulse binary (default: build-bench)
#   IOPULSE  the binary (default: $BUILD/iopulse)
#   ROUNDS   interleaved rounds per comparison (each script has its default)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$BENCH_DIR")
BUILD=${BUILD:-$REPO/build-bench}
IOPULSE=${IOPULSE:-$BUILD/iopulse}

need() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 ||
			{ echo "${0##*/}: needs '$c' (./dev.sh bench installs it)" >&2; exit 69; }
	done
}
need python3 fio
[ -x /usr/bin/time ] || { echo "${0##*/}: needs GNU time at /usr/bin/time" >&2; exit 69; }
[ -x "$IOPULSE" ] || { echo "${0##*/}: no $IOPULSE; build first (./dev.sh bench)" >&2; exit 69; }

# Scratch space on the build directory's filesystem (a real disk, not tmpfs).
WORK=$(mktemp -d "$BUILD/bench.XXXXXX")
cleanup_dirs=("$WORK")
cleanup() { rm -rf "${cleanup_dirs[@]}"; }
trap cleanup EXIT

# timed OUT CMD...: run CMD with stdout in OUT; "user sys elapsed" seconds of the
# whole process (children and threads included: wait4's rusage) go to OUT.time.
timed() {
	local out=$1
	shift
	/usr/bin/time -f '%U %S %e' -o "$out.time" "$@" >"$out"
}

# A file of @2 random bytes at @1 (urandom: nothing for a compressing backend).
random_file() {
	head -c "$2" /dev/urandom >"$1"
	sync "$1"
}

say() { printf '%s\n' "$*" >&2; }

# rotated ROUND TOOL...: the TOOLs in round ROUND's order, rotated by ROUND - 1 so
# that each goes first in turn (drift on a shared machine hits them all).
rotated() {
	local r=$1
	shift
	local k=$(((r - 1) % $#))
	echo "${@:k+1}" "${@:1:k}"
}

# parse TOOL OUT: "ios iops cpu_s own_cpu_s" of one run timed into OUT: TOOL iopulse
# (or base, an older iopulse)
# is `iopulse probe --json` (its first probe's first op), any other fio's JSON (its
# first job's reads, or writes when it read nothing). cpu_s is the whole process's
# user+sys from OUT.time; own_cpu_s is fio's job usr+sys% x runtime (its start-up
# and main thread left out), for iopulse cpu_s again.
parse() {
	python3 - "$1" "$2" <<-'PY'
		import json, sys
		tool, out = sys.argv[1], sys.argv[2]
		u, s, e = map(float, open(out + ".time").read().split()[-3:])
		j = json.load(open(out))
		if tool in ("iopulse", "base"):
		    p = j["probes"][0]
		    assert p["status"] == "ok", p
		    op = p["ops"][0]
		    print(op["ios"], op["iops"], u + s, u + s)
		else:
		    job = j["jobs"][0]
		    d = job["read"] if job["read"]["total_ios"] else job["write"]
		    own = (job["usr_cpu"] + job["sys_cpu"]) / 100 * job["job_runtime"] / 1000
		    print(d["total_ios"], d["iops"], u + s, own)
	PY
}

# wait_for SECONDS WHAT CMD...: until CMD succeeds; after SECONDS, say that WHAT
# did not happen and exit 1.
wait_for() {
	local deadline=$((SECONDS + $1)) what=$2
	shift 2
	until "$@"; do
		((SECONDS < deadline)) || { say "${0##*/}: $what: not within $1s"; exit 1; }
		sleep 0.2
	done
}

# bench_stop SAY: the clean-up (an EXIT trap's, errexit off) of a run of
# processes on hangfs: every hangfs of FUSE fast again and thawed, so that none
# of the processes of PIDS waits on it as they are stopped and waited for; then
# bench_unmount_work SAY.
bench_stop() {
	local f p
	for f in "${FUSE[@]}"; do
		kill -s RTMIN+4 "${f%% *}" 2>/dev/null
		kill -USR2 "${f%% *}" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	bench_unmount_work "$1"
}

# bench_unmount_work SAY: the end of a clean-up, once nothing uses the mounts: each
# hangfs of FUSE ("pid mountpoint", a lower one before the ones stacked on it)
# unmounted, upper ones first, and waited for; the tmpfs of MOUNTS unmounted; then
# $WORK removed, but never through a mount that is still there (SAY says so).
bench_unmount_work() {
	local say=$1 i f mp
	for ((i = ${#FUSE[@]} - 1; i >= 0; i--)); do
		f=${FUSE[i]}
		mp=${f#* }
		if grep -qF " $mp " /proc/self/mountinfo; then
			fusermount3 -u "$mp" 2>/dev/null || umount -l "$mp"
		fi
		wait "${f%% *}" 2>/dev/null
	done
	for mp in "${MOUNTS[@]}"; do
		grep -qF " $mp " /proc/self/mountinfo && umount -l "$mp"
	done
	if grep -qF " $WORK/" /proc/self/mountinfo; then
		"$say" "left $WORK in place: something is still mounted below it"
	else
		rm -rf "$WORK"
	fi
}

# q EXPR: the query's samples from the Prometheus at $PROM's HTTP API, one line
# each, "label=value,... VALUE" (labels sorted, __name__ left out).
q() {
	curl -fsS --max-time 30 --data-urlencode "query=$1" "$PROM/api/v1/query" |
		python3 -c '
import json, sys
for s in json.load(sys.stdin)["data"]["result"]:
    m = s["metric"]
    m.pop("__name__", None)
    print(",".join(f"{k}={v}" for k, v in sorted(m.items())), s["value"][1])'
}

# bench_hangfs: HANGFS is the hangfs binary (tests/integration/hangfs.c, a
# freezable FUSE pass-through): as set, or compiled here into $BUILD/hangfs.
bench_hangfs() {
	local cflags libs
	[ -z "${HANGFS:-}" ] || return 0
	HANGFS=$BUILD/hangfs
	read -ra cflags <<<"$(pkg-config --cflags fuse3)"
	read -ra libs <<<"$(pkg-config --libs fuse3)"
	gcc -std=gnu11 -D_GNU_SOURCE -O2 "${cflags[@]}" -o "$HANGFS" \
		"$REPO/tests/integration/hangfs.c" "${libs[@]}" -lpthread
}
