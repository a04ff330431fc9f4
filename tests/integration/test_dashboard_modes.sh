#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The shipped dashboard and rules work in both histogram modes (issue 11): a real
# Prometheus (Debian 12's 2.42) scrapes iopulse every second with
# dashboards/iopulse.rules.yml loaded, first plain (classic buckets only), then
# with --enable-feature=native-histograms (2.42 then stores only the native
# histogram). In each mode, every query of dashboards/grafana-iopulse.json, with
# its template variables substituted, and every recorded series of the rules must
# return data through the HTTP API, except the panels listed below, which must
# return an empty result without an error.
#
# iopulse pings a directory target (a read ping and a write ping with fdatasync
# every 100ms) and runs a short read burst every 2s, so every panel has something
# to show once a burst has finished and the rate windows hold two scrapes.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl prometheus
require_disk "$WORK"
PC=(/usr/bin/python3 "$SOURCE_DIR/tests/integration/promcheck.py")
DASHBOARD="$SOURCE_DIR/dashboards/grafana-iopulse.json"
PROM_RULES="$SOURCE_DIR/dashboards/iopulse.rules.yml"
DEADLINE=${DEADLINE:-60} # seconds each mode may take until every expression has data

# Empty on a healthy host in both modes: nothing fails.
EMPTY_ALWAYS=(--empty="Errors by reason")
# Each heatmap reads one histogram kind; Prometheus 2.42 stores only one of them.
EMPTY_PLAIN=(--empty="Ping latency distribution (native histograms)")
EMPTY_NATIVE=(--empty="Ping latency distribution (classic buckets)")

CFG="$WORK/iopulse.yaml"
ping_config "$CFG" "$WORK/target" 8MiB write "layout_rate: 0"
cat >>"$CFG" <<YAML
  - name: b1
    type: burst
    target: t1
    rw: randread
    iodepth: 4
    duration: 300ms
    every: 2s
YAML
start_daemon "$CFG"

# check_mode NAME EMPTY... -- [PROMETHEUS FLAGS...]
check_mode() {
	local name=$1 out deadline
	shift
	local empty=()
	while [[ $1 != -- ]]; do
		empty+=("$1")
		shift
	done
	shift
	start_prometheus "$@"
	deadline=$(($(now_ms) + DEADLINE * 1000))
	until out=$("${PC[@]}" exprs "$PROM_URL" "$DASHBOARD" "$PROM_RULES" "${empty[@]}"); do
		require_alive
		alive "$PROM_PID" || fail "$name: prometheus exited"
		(($(now_ms) < deadline)) || fail "$name: after ${DEADLINE}s: $out"
		sleep 2
	done
	note "$name: $out"
	stop_prometheus
}

check_mode plain "${EMPTY_ALWAYS[@]}" "${EMPTY_PLAIN[@]}" --
check_mode native-histograms "${EMPTY_ALWAYS[@]}" "${EMPTY_NATIVE[@]}" -- \
	--enable-feature=native-histograms
stop_daemon TERM 5
note "pass"
