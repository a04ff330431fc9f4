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
#
# Prometheus also scrapes a prometheus-node-exporter on loopback (the diskstats
# collector only: it reads /proc/diskstats, never a disk), as on a host where
# both run, so that the panels joining node_disk_* to the target's device must
# return data; and it evaluates, beside the shipped rules, one test alert that
# fires at once for every target, so that the panels on ALERTS must return data
# too (with the shipped rules alone they are empty on a healthy host).

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl prometheus prometheus-node-exporter
require_disk "$WORK"
PC=(/usr/bin/python3 "$SOURCE_DIR/tests/integration/promcheck.py")
DASHBOARD="$SOURCE_DIR/dashboards/grafana-iopulse.json"
RULES="$SOURCE_DIR/dashboards/iopulse.rules.yml"
DEADLINE=${DEADLINE:-60} # seconds each mode may take until every expression has data
# The first mode waits for the baseline too: it exists once baseline_warmup (1m
# here) of whole minutes with pings is recorded, two minutes after start at most.
FIRST_DEADLINE=${FIRST_DEADLINE:-180}

# Empty on a healthy host in both modes: nothing fails.
EMPTY_ALWAYS=(--empty="Errors by reason")
# Each heatmap reads one histogram kind; Prometheus 2.42 stores only one of them.
EMPTY_PLAIN=(--empty="Ping latency distribution (native histograms)")
EMPTY_NATIVE=(--empty="Ping latency distribution (classic buckets)")
# The panels that join node_exporter's node_disk_* to the target's device.
NODE_PANELS=("\$target: is it the disk or my app? Probe p50 and the host's own disk latency"
	"\$target: the host's disk busy and its IOPS (node_exporter)")

CFG="$WORK/iopulse.yaml"
# baseline_warmup at its least (1m): the baseline panels have data after a minute
# or two of pings rather than ten. slow_floor 0: the ratio rule
# (target:iopulse_probe_latency_ratio:max) keeps only ops whose p50 is over their
# floor, and with the default (auto: the op's baseline p99) a healthy op's never is.
ping_config "$CFG" "$WORK/target" 8MiB write "layout_rate: 0" "baseline_warmup: 1m" \
	"slow_floor: 0s"
cat >>"$CFG" <<YAML
  - name: b1
    type: burst
    target: t1
    rw: randread
    iodepth: 4
    duration: 300ms
    every: 2s
YAML
idle_sysfs "$WORK/target" # the device gauges exist (at 0), and bursts run on a busy machine
start_daemon "$CFG"

# ---- node_exporter ---------------------------------------------------------

# start_node_exporter: prometheus-node-exporter with the diskstats collector only
# on a free loopback port, its default device filter kept (partitions, loop and
# ram devices left out, as in production); sets NODE_PORT once it serves them.
start_node_exporter() {
	local try log pid deadline
	for try in 1 2 3 4 5 6 7 8 9 10; do
		NODE_PORT=$((20000 + RANDOM % 40000))
		port_free "$NODE_PORT" || continue
		log="$WORK/node_exporter.$try.log"
		DAEMON_LOGS+=("$log")
		prometheus-node-exporter --collector.disable-defaults --collector.diskstats \
			--web.listen-address="127.0.0.1:$NODE_PORT" --log.level=warn >"$log" 2>&1 &
		pid=$!
		DAEMON_PIDS+=("$pid")
		deadline=$(($(now_ms) + 30000))
		until curl -fsS --max-time 5 "http://127.0.0.1:$NODE_PORT/metrics" >"$WORK/node.prom" 2>/dev/null &&
			grep -q '^node_disk_reads_completed_total{' "$WORK/node.prom"; do
			if ! alive "$pid"; then
				wait "$pid" || true
				_forget_pid "$pid"
				grep -qi 'address already in use' "$log" && continue 2
				fail "prometheus-node-exporter exited before it served node_disk_*"
			fi
			(($(now_ms) < deadline)) || fail "prometheus-node-exporter: no node_disk_* within 30s"
			sleep 0.2
		done
		note "prometheus-node-exporter $pid serving on 127.0.0.1:$NODE_PORT (log $log)"
		return 0
	done
	fail "found no free port for prometheus-node-exporter in 10 tries"
}
start_node_exporter

# The device iopulse names behind the target (known once the target is open),
# and its whole disk, which node_exporter reports (the kernel's own answer, not
# the dashboard's regular expression, which this checks). Where the target has
# no block device that node_exporter reports (an overlay, a loop device), the
# joined panels are rightly empty: they may be, and the test says so.
target_device() {
	scrape_metrics
	DEVICE=$(sed -n 's/^iopulse_target_info{.*fstype="[^"]\{1,\}".*device="\([^"]*\)".*/\1/p' "$PAGE")
	grep -q '^iopulse_target_info{.*fstype="[^"]\{1,\}"' "$PAGE"
}
wait_until 60 "iopulse_target_info to name the target's filesystem" target_device
DISK=$DEVICE
if [[ -n $DEVICE && -e /sys/class/block/$DEVICE/partition ]]; then
	DISK=$(basename "$(dirname "$(readlink -f "/sys/class/block/$DEVICE")")")
fi
NODE_EMPTY=()
if [[ -n $DISK ]] && grep -q "^node_disk_reads_completed_total{device=\"$DISK\"}" "$WORK/node.prom"; then
	note "target on device '$DEVICE' (disk $DISK), which node_exporter reports: the joined panels must have data"
else
	note "target on device '${DEVICE:-none}' (disk ${DISK:-none}), not in node_exporter's diskstats: the joined panels may be empty"
	for p in "${NODE_PANELS[@]}"; do
		NODE_EMPTY+=(--may-be-empty="$p")
	done
fi
# Prometheus scrapes it as a job of its own, after job iopulse.
PROM_JOB_EXTRA="  - job_name: node
    static_configs:
      - targets: ['127.0.0.1:$NODE_PORT']"

# The shipped rules and a test alert firing at once for every target (job,
# instance and target labels, like the shipped per-target alerts).
mkdir "$WORK/rules"
ln -s "$RULES" "$WORK/rules/iopulse.rules.yml"
cat >"$WORK/rules/test.rules.yml" <<'YAML'
groups:
  - name: dashboard-test
    rules:
      - alert: DashboardTestTargetAlert
        expr: iopulse_target_up{job="iopulse"} >= 0
        labels:
          severity: info
YAML
PROM_RULES="$WORK/rules/*.rules.yml"

# check_mode NAME SECONDS EMPTY... -- [PROMETHEUS FLAGS...]
check_mode() {
	local name=$1 limit=$2 out deadline
	shift 2
	local empty=()
	while [[ $1 != -- ]]; do
		empty+=("$1")
		shift
	done
	shift
	start_prometheus "$@"
	deadline=$(($(now_ms) + limit * 1000))
	until out=$("${PC[@]}" exprs "$PROM_URL" "$DASHBOARD" "$RULES" "${empty[@]}"); do
		require_alive
		alive "$PROM_PID" || fail "$name: prometheus exited"
		(($(now_ms) < deadline)) || fail "$name: after ${limit}s: $out"
		sleep 2
	done
	note "$name: $out"
	stop_prometheus
}

check_mode plain "$FIRST_DEADLINE" "${EMPTY_ALWAYS[@]}" "${EMPTY_PLAIN[@]}" "${NODE_EMPTY[@]}" --
check_mode native-histograms "$DEADLINE" "${EMPTY_ALWAYS[@]}" "${EMPTY_NATIVE[@]}" "${NODE_EMPTY[@]}" -- \
	--enable-feature=native-histograms
stop_daemon TERM 5
note "pass"
