#!/bin/bash
# SPDX-License-Identifier: MIT
#
# dashboards/: the Prometheus rules (iopulse.rules.yml and the examples of
# iopulse.examples.rules.yml) pass `promtool check rules` and their unit tests
# (`promtool test rules`), the example prometheus.yml passes `promtool check
# config` (which also loads the rules file it names, relative to itself) and
# loads the shipped rules only, the example alertmanager.yml passes `amtool
# check-config`, routes iopulse's alerts to its receiver and inhibits what it
# should (a real Alertmanager on loopback, alerts posted by amtool: no
# Prometheus, no daemon), and the Grafana dashboard is well-formed JSON whose
# panels all use the ${DS_PROMETHEUS} data source, with unique ids. The rules
# and the dashboard may name only metric families the daemon exports.
#
# The JSON is checked with CMake's string(JSON) (CMake >= 3.19): cmake is always
# there where this suite runs (it drives it), whereas node, python3 and jq are not
# installed on a fresh Debian 12.
#
# Needs only SOURCE_DIR (the repository root); it does not start the daemon:
#   SOURCE_DIR=. bash tests/integration/test_rules.sh

set -euo pipefail

: "${SOURCE_DIR:?SOURCE_DIR must be the repository root}"
DIR="$SOURCE_DIR/dashboards"
RULES="$DIR/iopulse.rules.yml"
EXAMPLES="$DIR/iopulse.examples.rules.yml"
RULE_TESTS="$DIR/iopulse.rules.test.yml"
PROM_CONFIG="$DIR/prometheus.yml"
AM_CONFIG="$DIR/alertmanager.yml"
DASHBOARD="$DIR/grafana-iopulse.json"

WORK=$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/test_rules.XXXXXX" 2>/dev/null ||
	mktemp -d)
AM_PID=
# The Alertmanager this test started, by its own pid only.
stop_alertmanager() {
	if [[ -n $AM_PID ]]; then
		kill "$AM_PID" 2>/dev/null || true
		wait "$AM_PID" 2>/dev/null || true
		AM_PID=
	fi
}
trap 'stop_alertmanager; rm -rf "$WORK"' EXIT

FAILED=()

# step NAME CMD [ARGS...]: run CMD, print its output; remember NAME if it fails.
step() {
	local name=$1 rc=0
	shift
	echo "# $name: $*"
	"$@" >"$WORK/out" 2>&1 || rc=$?
	sed 's/^/    /' "$WORK/out"
	if ((rc != 0)); then
		echo "FAIL: $name (status $rc)"
		FAILED+=("$name")
	else
		echo "ok: $name"
	fi
}

for f in "$RULES" "$EXAMPLES" "$RULE_TESTS" "$PROM_CONFIG" "$AM_CONFIG" "$DASHBOARD"; do
	[[ -f $f ]] || { echo "FAIL: test_rules: $f is missing" >&2; exit 1; }
done
# promtool and amtool are part of the test dependencies (dev.sh installs
# prometheus and prometheus-alertmanager): their absence is a broken test
# machine, not a reason to skip.
for c in promtool amtool prometheus-alertmanager cmake; do
	command -v "$c" >/dev/null || { echo "FAIL: test_rules: $c not found" >&2; exit 1; }
done

step "check rules" promtool check rules "$RULES"
step "check example rules" promtool check rules "$EXAMPLES"
# promtool resolves rule_files in the test file relative to the test file.
step "rule unit tests" promtool test rules "$RULE_TESTS"
# Run from elsewhere: rule_files in prometheus.yml must resolve against its directory.
check_config_from_root() {
	(cd / && promtool check config "$PROM_CONFIG")
}
step "check config" check_config_from_root
# The shipped prometheus.yml loads the shipped rules and not the examples (their
# absolute thresholds are for a reader to tune), and sends alerts somewhere.
check_rule_files() {
	local files
	files=$(awk '/^rule_files:/ { r = 1; next } /^[^ #]/ { r = 0 } r && /^ *- / { print $2 }' "$PROM_CONFIG")
	echo "rule_files: $files"
	[[ $files == iopulse.rules.yml ]] || { echo "want rule_files: iopulse.rules.yml only"; return 1; }
	grep -q '^alerting:' "$PROM_CONFIG" || { echo "no alerting: section"; return 1; }
}
step "prometheus.yml rule_files and alerting" check_rule_files

# ---- Alertmanager ---------------------------------------------------------------
step "check alertmanager config" amtool check-config "$AM_CONFIG"
# Every kind of iopulse alert reaches the receiver: the latency and the stuck
# alert of one target, and the alerts of a host without a target label.
check_routes() {
	local labels
	for labels in \
		"alertname=IopulseLatencyRegression severity=critical job=iopulse instance=db1:10035 target=data" \
		"alertname=IopulseLatencyRegression severity=info job=iopulse instance=db1:10035 target=data" \
		"alertname=IopulseTargetStuck severity=critical job=iopulse instance=db1:10035 target=data" \
		"alertname=IopulseDown severity=warning job=iopulse instance=db1:10035"; do
		# shellcheck disable=SC2086 # one word per label
		amtool config routes test --config.file="$AM_CONFIG" --verify.receivers=webhook $labels ||
			{ echo "not routed to webhook: $labels"; return 1; }
	done
}
step "alertmanager routes" check_routes

# The inhibition rules, on a real Alertmanager (loopback, a port of its
# choosing, no cluster): alerts posted as Prometheus would send them; the API
# computes what inhibits what at once (no group_wait). One line per alert:
# alertname severity instance target probe ("-" where the label is absent).
AM_URL=
start_alertmanager() {
	local log="$WORK/alertmanager.log" port="" i
	prometheus-alertmanager --config.file="$AM_CONFIG" --storage.path="$WORK/am" \
		--web.listen-address=127.0.0.1:0 --cluster.listen-address= >"$log" 2>&1 &
	AM_PID=$!
	for ((i = 0; i < 600; i++)); do
		port=$(sed -n 's/.*msg="Listening on" address=127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$log")
		[[ -n $port ]] && break
		kill -0 "$AM_PID" 2>/dev/null || break
		sleep 0.1
	done
	[[ -n $port ]] || { cat "$log"; echo "alertmanager did not say where it listens"; return 1; }
	AM_URL=http://127.0.0.1:$port
}
am_keys() {
	local line l v k
	amtool --alertmanager.url="$AM_URL" alert query -o extended "$@" | while read -r line; do
		[[ $line == alertname=* ]] || continue
		k=
		for l in alertname severity instance target probe; do
			v=$(grep -o " $l=\"[^\"]*\"" <<<" $line" | head -n 1 | cut -d '"' -f 2)
			k+="${v:--} "
		done
		echo "${k% }"
	done | sort
}
indent() {
	local l
	while IFS= read -r l; do echo "  $l"; done
}
check_inhibition() {
	local a got want
	start_alertmanager || return 1
	echo "alertmanager $AM_PID at $AM_URL"
	while read -r a; do
		[[ -z $a || $a == \#* ]] && continue
		[[ $a == *job=* ]] || a="job=iopulse $a"
		# shellcheck disable=SC2086 # one word per label
		amtool --alertmanager.url="$AM_URL" alert add $a || return 1
	done <<'ALERTS'
# db1 data: a 10x regression: critical, warning and info fire; slower than peers too
alertname=IopulseLatencyRegression severity=critical instance=db1:10035 target=data
alertname=IopulseLatencyRegression severity=warning instance=db1:10035 target=data
alertname=IopulseLatencyRegression severity=info instance=db1:10035 target=data
alertname=IopulseSlowerThanPeers severity=warning instance=db1:10035 target=data probe=read-ping op=read
# db1 logs: a 4x regression: warning and info
alertname=IopulseLatencyRegression severity=warning instance=db1:10035 target=logs
alertname=IopulseLatencyRegression severity=info instance=db1:10035 target=logs
# db1 vol: a hang, and what it sets off; a verify mismatch is told regardless
alertname=IopulseTargetStuck severity=critical instance=db1:10035 target=vol
alertname=IopulseLatencyRegression severity=critical instance=db1:10035 target=vol
alertname=IopulseProbesNotRunning severity=warning instance=db1:10035 target=vol probe=read-ping
alertname=IopulseProbeSkipped severity=info instance=db1:10035 target=vol probe=write-ping
alertname=IopulseProbeErrors severity=warning instance=db1:10035 target=vol probe=read-ping reason=timeout
alertname=IopulseLatencyHigh severity=warning instance=db1:10035 target=vol probe=read-ping op=read
alertname=IopulseVerifyMismatch severity=critical instance=db1:10035 target=vol probe=verify kind=stale
# db1 gone: down, and its probes failing
alertname=IopulseTargetDown severity=critical instance=db1:10035 target=gone
alertname=IopulseProbeErrors severity=warning instance=db1:10035 target=gone probe=read-ping reason=io_error
# db1 other: errors of its own, nothing stuck there
alertname=IopulseProbeErrors severity=warning instance=db1:10035 target=other probe=read-ping reason=io_error
# db2: the same target name, on another host: not inhibited by db1's
alertname=IopulseLatencyRegression severity=warning instance=db2:10035 target=vol
# db3: iopulse cannot be scraped: its other alerts are held back, not another exporter's
alertname=IopulseDown severity=warning instance=db3:10035
alertname=IopulseTargetStuck severity=critical instance=db3:10035 target=data
alertname=IopulseConfigReloadFailed severity=warning instance=db3:10035
alertname=NodeFilesystemAlmostFull severity=warning job=node instance=db3:10035
ALERTS
	got=$(am_keys --active)
	want=$(sort <<'WANT'
IopulseLatencyRegression critical db1:10035 data -
IopulseLatencyRegression warning db1:10035 logs -
IopulseTargetStuck critical db1:10035 vol -
IopulseVerifyMismatch critical db1:10035 vol verify
IopulseTargetDown critical db1:10035 gone -
IopulseProbeErrors warning db1:10035 other read-ping
IopulseLatencyRegression warning db2:10035 vol -
IopulseDown warning db3:10035 - -
NodeFilesystemAlmostFull warning db3:10035 - -
WANT
)
	echo "notified (not inhibited):"
	indent <<<"$got"
	echo "inhibited:"
	am_keys --inhibited | indent
	[[ $got == "$want" ]] || { echo "want notified:"; indent <<<"$want"; return 1; }
}
step "alertmanager inhibition" check_inhibition
stop_alertmanager

# ---- the dashboard ----------------------------------------------------------
cat >"$WORK/check_dashboard.cmake" <<'CMAKE'
cmake_minimum_required(VERSION 3.19)
file(READ "${DASHBOARD}" json)
string(JSON title ERROR_VARIABLE err GET "${json}" title)
if(err)
	message(FATAL_ERROR "not valid JSON (or no title): ${err}")
endif()
string(JSON schema GET "${json}" schemaVersion)
if(schema LESS 36)
	message(FATAL_ERROR "schemaVersion ${schema}, want 36 or later")
endif()
set(want_ds "\${DS_PROMETHEUS}")
set(problems "")
set(ids "")
set(npanels 0)
set(ntargets 0)
# The data source template variable must exist.
string(JSON nvars LENGTH "${json}" templating list)
set(have_ds_var FALSE)
math(EXPR last "${nvars} - 1")
foreach(i RANGE ${last})
	string(JSON vname GET "${json}" templating list ${i} name)
	string(JSON vtype GET "${json}" templating list ${i} type)
	if(vname STREQUAL "DS_PROMETHEUS" AND vtype STREQUAL "datasource")
		set(have_ds_var TRUE)
	endif()
endforeach()
if(NOT have_ds_var)
	list(APPEND problems "no datasource template variable DS_PROMETHEUS")
endif()
# check_panel PATH...: one panel at that JSON path (top level, or inside a
# collapsed row's "panels").
macro(check_panel)
	string(JSON id GET "${json}" ${ARGN} id)
	string(JSON ptitle GET "${json}" ${ARGN} title)
	string(JSON ptype GET "${json}" ${ARGN} type)
	if(id IN_LIST ids)
		list(APPEND problems "panel id ${id} used twice (${ptitle})")
	endif()
	list(APPEND ids ${id})
	math(EXPR npanels "${npanels} + 1")
	if(NOT ptype STREQUAL "row")
		string(JSON ds ERROR_VARIABLE e GET "${json}" ${ARGN} datasource uid)
		if(e OR NOT ds STREQUAL want_ds)
			list(APPEND problems "panel '${ptitle}': datasource uid is not \${DS_PROMETHEUS}")
		endif()
		string(JSON nt ERROR_VARIABLE e LENGTH "${json}" ${ARGN} targets)
		if(e OR nt EQUAL 0)
			list(APPEND problems "panel '${ptitle}': no queries")
		else()
			math(EXPR tl "${nt} - 1")
			foreach(t RANGE ${tl})
				string(JSON expr ERROR_VARIABLE e GET "${json}" ${ARGN} targets ${t} expr)
				if(e OR expr STREQUAL "")
					list(APPEND problems "panel '${ptitle}': query ${t} has no expr")
				elseif(NOT expr MATCHES "job=~\"\\$job\"")
					# At a fleet's scale every panel must follow the job selector.
					list(APPEND problems "panel '${ptitle}': query ${t} ignores $job")
				endif()
				string(JSON ds ERROR_VARIABLE e GET "${json}" ${ARGN} targets ${t} datasource uid)
				if(e OR NOT ds STREQUAL want_ds)
					list(APPEND problems "panel '${ptitle}': query ${t} datasource uid is not \${DS_PROMETHEUS}")
				endif()
				math(EXPR ntargets "${ntargets} + 1")
			endforeach()
		endif()
	endif()
endmacro()
string(JSON n LENGTH "${json}" panels)
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
	check_panel(panels ${i})
	string(JSON nin ERROR_VARIABLE e LENGTH "${json}" panels ${i} panels)
	if(NOT e AND nin GREATER 0)
		math(EXPR lin "${nin} - 1")
		foreach(j RANGE ${lin})
			check_panel(panels ${i} panels ${j})
		endforeach()
	endif()
endforeach()
# Grafana's import needs these: the data source input, the requirements, a uid.
foreach(key __inputs __requires uid)
	string(JSON v ERROR_VARIABLE e GET "${json}" ${key})
	if(e OR v STREQUAL "")
		list(APPEND problems "no ${key}")
	endif()
endforeach()
string(JSON in0 ERROR_VARIABLE e GET "${json}" __inputs 0 name)
if(e OR NOT in0 STREQUAL "DS_PROMETHEUS")
	list(APPEND problems "__inputs[0] is not DS_PROMETHEUS")
endif()
if(problems)
	list(JOIN problems "\n  " text)
	message(FATAL_ERROR "dashboard problems:\n  ${text}")
endif()
message("'${title}': schemaVersion ${schema}, ${npanels} panels, ${ntargets} queries")
CMAKE
step "dashboard JSON" cmake -DDASHBOARD="$DASHBOARD" -P "$WORK/check_dashboard.cmake"

# ---- metric names -------------------------------------------------------------
# The families the daemon exports: the ".B NAME" entries of iopulse(8) METRICS,
# plus the process_* families of the exposition. A name in the rules or the
# dashboard that is not one of these (or its _bucket/_sum/_count) is a typo that
# would make a panel empty or an alert silent; the annotations' queries are
# checked too (a typo there prints "unknown" in every notification). Recording
# rules (level:name:ops) are not checked here: promtool test rules covers them.
mapfile -t FAMILIES < <(awk '/^\.SH METRICS/ { m = 1; next } /^\.SH / { m = 0 }
	m && /^\.B iopulse_[a-z0-9_]*$/ { print $2 }' "$SOURCE_DIR/man/iopulse.8")
((${#FAMILIES[@]} > 10)) || { echo "FAIL: test_rules: no metric families in man/iopulse.8 METRICS" >&2; exit 1; }
check_names() {
	local bad=0 name base f f2 known
	for f in "$RULES" "$EXAMPLES" "$DASHBOARD"; do
		# Names preceded by ':' or a letter belong to recording rules; skip them.
		while read -r name; do
			base=${name%_bucket}
			base=${base%_sum}
			base=${base%_count}
			known=0
			for f2 in "${FAMILIES[@]}"; do
				[[ $name == "$f2" || $base == "$f2" ]] && known=1
			done
			if ((!known)); then
				echo "$(basename "$f"): unknown metric $name"
				bad=1
			fi
		done < <(grep -oE '(^|[^a-z_:])iopulse_[a-z_]+' "$f" | sed -E 's/^[^i]//' | sort -u)
	done
	return "$bad"
}
step "metric names" check_names

if ((${#FAILED[@]})); then
	echo "FAIL: test_rules: ${FAILED[*]}" >&2
	exit 1
fi
echo "PASS: test_rules"
