# shellcheck shell=bash
# bench/lib.sh — sourced by the bench scripts: paths, a scratch directory, CPU timing.
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
