#!/usr/bin/env bash
# bench/hist.sh — what recording one latency costs: hist_record() in ns/sample
# against the floor, a plain array increment over the same pre-generated stream.
# Target: <= 10 ns/sample. Builds bench/hist_bench.c with daemon/metrics/hist.c (cc -O2),
# standalone: no iopulse build, fio or disk needed.
#
#   bench/hist.sh [SAMPLES [ROUNDS]]      (default 1048576 samples, 15 rounds)
#
# Environment: CC (default cc), CFLAGS (default -O2).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# shellcheck disable=SC2086 # CFLAGS is a list of flags
"${CC:-cc}" -std=gnu11 ${CFLAGS:--O2} -Wall -Wextra -I"$REPO" -o "$WORK/hist_bench" \
	"$REPO/bench/hist_bench.c" "$REPO/daemon/metrics/hist.c" -lm -lpthread

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
"$WORK/hist_bench" "$@"
