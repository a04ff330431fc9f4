#!/bin/bash
# SPDX-License-Identifier: MIT
#
# dashboards/: the Prometheus rules (iopulse.rules.yml and the examples of
# iopulse.examples.rules.yml) pass `promtool check rules` and their unit tests
# (`promtool test rules`), the example prometheus.yml passes `promtool check
# config` (which also loads the rules file it names, relative to itself) and
# loads the shipped rules only, the example alertmanager.yml passes `amtool
# check-config`, routes iopulse's alerts to its receiver, inhibits nothing, and
# on a real Alertmanager (loopback, alerts posted by amtool as the rules move
# them, notifications received by webhook.py: no Prometheus, no daemon) tells
# every severity to a route on a label of the scrape target and never a
# "resolved" of an alert it did not tell firing, nor holds one back; and the
# Grafana dashboard is well-formed JSON whose panels all use the
# ${DS_PROMETHEUS} data source, with unique ids. The rules and the dashboard
# may name only metric families the daemon exports.
#
# The JSON is checked with CMake's string(JSON) (CMake >= 3.19): cmake is always
# there where this suite runs (it drives it), whereas node and jq are not
# installed on a fresh Debian 12 (python3, a test dependency, runs webhook.py).
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
# The receivers (webhook.py) this test started, by their own pids only.
WEBHOOK_PIDS=()
stop_webhooks() {
	local p
	for p in "${WEBHOOK_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	WEBHOOK_PIDS=()
}
trap 'stop_alertmanager; stop_webhooks; rm -rf "$WORK"' EXIT

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
for c in promtool amtool prometheus-alertmanager cmake python3; do
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

# No inhibition rules: Alertmanager drops the "resolved" of an alert inhibited
# when it ends (prometheus/alertmanager#2754), which leaves a receiver with an
# alert firing forever; iopulse.rules.yml does what inhibition did (exclusive
# severities, what a hang sets off frozen while it lasts).
check_no_inhibition() {
	local out
	out=$(amtool check-config "$AM_CONFIG") || return 1
	grep -qx ' - 0 inhibit rules' <<<"$out" || { echo "$out"; echo "want no inhibit rules"; return 1; }
}
step "alertmanager inhibits nothing" check_no_inhibition

# ---- notifications, on a real Alertmanager ------------------------------------
# The shipped alertmanager.yml on loopback (a port of its choosing, no cluster),
# its receiver pointed at webhook.py, its timers shortened (group_wait 1s,
# group_interval 2s) and one route added, as a user would, for env="prod" to a
# receiver of its own. Alerts are posted as Prometheus sends them, in timed
# sequences; each step waits for the notifications it must cause (ceilings of
# 60s, never a speed). Every notification is a line of OUT.tsv (webhook.py):
# RECEIVED STATUS ALERT_STATUS ALERTNAME SEVERITY TARGET INSTANCE.
AM_URL=
# start_webhook NAME: webhook.py on a free loopback port; its notifications in
# $WORK/NAME.out.tsv, its port in $WORK/NAME.port.
start_webhook() {
	local i
	python3 "$SOURCE_DIR/tests/integration/webhook.py" "$WORK/$1.port" "$WORK/$1.out" \
		>"$WORK/$1.log" 2>&1 &
	WEBHOOK_PIDS+=($!)
	for ((i = 0; i < 600; i++)); do
		[[ -s $WORK/$1.port ]] && return 0
		kill -0 "${WEBHOOK_PIDS[-1]}" 2>/dev/null || break
		sleep 0.1
	done
	cat "$WORK/$1.log"
	echo "webhook.py $1 did not say where it listens"
	return 1
}
# start_alertmanager CONFIG
start_alertmanager() {
	local log="$WORK/alertmanager.log" port="" i
	prometheus-alertmanager --config.file="$1" --storage.path="$WORK/am" \
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
# post STATUS LABEL=VALUE...: one alert as Prometheus sends it, firing (ends in
# an hour unless sent again) or resolved (ended a second ago). "resolved" of an
# alert never posted firing is one that fired and ended between two
# notifications of its group.
post() {
	local status=$1 end
	shift
	if [[ $status == firing ]]; then
		end=$(date -u -d '+1 hour' +%FT%TZ)
	else
		end=$(date -u -d '-1 second' +%FT%TZ)
	fi
	amtool --alertmanager.url="$AM_URL" alert add "$@" \
		--start="$(date -u -d '-10 seconds' +%FT%TZ)" --end="$end"
}
# lat STATUS SEVERITY TARGET [LABEL=VALUE...]: post IopulseLatencyRegression of
# TARGET on db1:10035.
lat() {
	local status=$1 severity=$2 target=$3
	shift 3
	post "$status" alertname=IopulseLatencyRegression severity="$severity" job=iopulse \
		instance=db1:10035 target="$target" "$@"
}
# notified RECEIVER ALERT_STATUS ALERTNAME SEVERITY TARGET [COUNT]: RECEIVER
# got at least COUNT (1) notifications of that alert in that status.
notified() {
	local n
	n=$(awk -F '\t' -v s="$2" -v a="$3" -v v="$4" -v t="$5" \
		'$3 == s && $4 == a && $5 == v && $6 == t' "$WORK/$1.out.tsv" | wc -l)
	((n >= ${6:-1}))
}
# wait_for WHAT CMD...: until CMD succeeds, at most 60s.
wait_for() {
	local what=$1 i
	shift
	for ((i = 0; i < 600; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	echo "no $what within 60s"
	return 1
}
# expect RECEIVER STATUS SEVERITY TARGET [COUNT]: wait_for that many
# notifications of IopulseLatencyRegression in that status at RECEIVER.
expect() {
	wait_for "$3 $4 $2 (${5:-1}) at $1" notified "$1" "$2" IopulseLatencyRegression "$3" "$4" "${5:-1}"
}
# told_before_resolved RECEIVER: every alert RECEIVER was told resolved it was
# told firing before (since its last resolved): no "resolved" out of nowhere.
told_before_resolved() {
	awk -F '\t' '{ k = $4 " " $5 " " $6 " " $7 }
		$3 == "firing" { told[k] = 1 }
		$3 == "resolved" { if (!told[k]) { print "resolved, never told firing: " k; bad = 1 } told[k] = 0 }
		END { exit bad }' "$WORK/$1.out.tsv"
}
check_notifications() {
	local prod
	start_webhook hook || return 1
	start_webhook prod || return 1
	prod=$(cat "$WORK/prod.port")
	sed -e "s|http://127\.0\.0\.1:9095/|http://127.0.0.1:$(cat "$WORK/hook.port")/|" \
		-e 's/^\([[:space:]]*group_wait:\).*/\1 1s/' \
		-e 's/^\([[:space:]]*group_interval:\).*/\1 2s/' \
		-e "s|^\(  repeat_interval:.*\)|\1\n  routes:\n    - matchers: [env = prod]\n      receiver: prod|" \
		-e "s|^receivers:|receivers:\n  - name: prod\n    webhook_configs:\n      - url: http://127.0.0.1:$prod/\n        send_resolved: true|" \
		"$AM_CONFIG" >"$WORK/am.yml"
	amtool check-config "$WORK/am.yml" >/dev/null || { cat "$WORK/am.yml"; return 1; }
	start_alertmanager "$WORK/am.yml" || return 1
	echo "alertmanager $AM_PID at $AM_URL"
	# 1. The ladder of one target, scraped with env="prod", as the rules move
	# it: warning, critical (the warning ends in the same evaluation), warning
	# again (the critical ends), resolved. A route on env gets every severity,
	# each told firing, then resolved.
	lat firing warning t1 env=prod
	expect prod firing warning t1 || return 1
	lat firing critical t1 env=prod
	lat resolved warning t1 env=prod
	expect prod firing critical t1 && expect prod resolved warning t1 || return 1
	lat resolved critical t1 env=prod
	lat firing warning t1 env=prod
	expect prod resolved critical t1 && expect prod firing warning t1 2 || return 1
	lat resolved warning t1 env=prod
	expect prod resolved warning t1 2 || return 1

	# 2. Issue 29's orphan: a critical told firing; a warning of the same
	# target (inhibited, before) firing beside it; both resolved at once. The
	# warning is told firing before it is told resolved.
	lat firing critical t2
	expect hook firing critical t2 || return 1
	lat firing warning t2
	expect hook firing warning t2 || return 1
	lat resolved critical t2
	lat resolved warning t2
	expect hook resolved critical t2 && expect hook resolved warning t2 || return 1

	# 3. An alert that starts and ends between two notifications of its group
	# (a warning a critical took over from within a minute) is never told at
	# all, no "resolved" either: in a group of several alerts it would be told
	# resolved with the critical's next change. The critical's "resolved" is
	# the mark: posted after the warning, in the group the warning would share.
	lat firing critical t3
	expect hook firing critical t3 || return 1
	lat resolved warning t3
	lat resolved critical t3
	expect hook resolved critical t3 || return 1
	if notified hook resolved IopulseLatencyRegression warning t3; then
		echo "warning t3 told resolved, never told firing"
		return 1
	fi

	# 4. prometheus/alertmanager#2754 the other way: a warning told firing ends
	# while a critical of the same target fires (a hang's alert, once, beside a
	# latency alert): its "resolved" is told, not held back.
	lat firing warning t4
	expect hook firing warning t4 || return 1
	post firing alertname=IopulseTargetStuck severity=critical job=iopulse instance=db1:10035 target=t4
	lat resolved warning t4
	expect hook resolved warning t4 || return 1

	echo "notifications, default receiver:"
	cut -f 2- "$WORK/hook.out.tsv" | sed 's/^/  /'
	echo "notifications, the env=prod route:"
	cut -f 2- "$WORK/prod.out.tsv" | sed 's/^/  /'
	grep -q $'\tt1\t' "$WORK/hook.out.tsv" && { echo "t1 (env=prod) reached the default receiver"; return 1; }
	told_before_resolved hook && told_before_resolved prod
}
step "alertmanager notifications" check_notifications
stop_alertmanager
stop_webhooks

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
# plus the process_* families of the exposition. A name in the rules, their
# unit tests' input series or the dashboard that is not one of these (or its
# _bucket/_sum/_count) is a typo, or a gauge the daemon no longer exports, that
# would make a panel empty or an alert silent (and a unit test pass on series no
# daemon sends); the annotations' queries are
# checked too (a typo there prints "unknown" in every notification). Recording
# rules (level:name:ops) are not checked here: promtool test rules covers them.
# The manual is true to the daemon (the unit test test_man_metrics checks its
# entries against the families the daemon registers), so a gauge the daemon
# dropped (iopulse_probe_stall_minutes, iopulse_probe_slow_io_baseline_ratio)
# is an unknown metric here; no name is let through ahead of the daemon.
mapfile -t FAMILIES < <(awk '/^\.SH METRICS/ { m = 1; next } /^\.SH / { m = 0 }
	m && /^\.B iopulse_[a-z0-9_]*$/ { print $2 }' "$SOURCE_DIR/man/iopulse.8")
((${#FAMILIES[@]} > 10)) || { echo "FAIL: test_rules: no metric families in man/iopulse.8 METRICS" >&2; exit 1; }
check_names() {
	local bad=0 name base f f2 known
	for f in "$RULES" "$EXAMPLES" "$RULE_TESTS" "$DASHBOARD"; do
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
