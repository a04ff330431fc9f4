#!/bin/bash
# SPDX-License-Identifier: MIT
#
# dashboards/: the Prometheus rules pass `promtool check rules` and their unit
# tests (`promtool test rules`), the example prometheus.yml passes `promtool
# check config` (which also loads the rules file it names, relative to itself),
# and the Grafana dashboard is well-formed JSON whose panels all use the
# ${DS_PROMETHEUS} data source, with unique ids. The rules and the dashboard may
# name only metric families the daemon exports.
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
RULE_TESTS="$DIR/iopulse.rules.test.yml"
PROM_CONFIG="$DIR/prometheus.yml"
DASHBOARD="$DIR/grafana-iopulse.json"

WORK=$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/test_rules.XXXXXX" 2>/dev/null ||
	mktemp -d)
trap 'rm -rf "$WORK"' EXIT

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

for f in "$RULES" "$RULE_TESTS" "$PROM_CONFIG" "$DASHBOARD"; do
	[[ -f $f ]] || { echo "FAIL: test_rules: $f is missing" >&2; exit 1; }
done
# promtool is part of the test dependencies (dev.sh installs prometheus): its
# absence is a broken test machine, not a reason to skip.
command -v promtool >/dev/null || { echo "FAIL: test_rules: promtool not found" >&2; exit 1; }
command -v cmake >/dev/null || { echo "FAIL: test_rules: cmake not found" >&2; exit 1; }

step "check rules" promtool check rules "$RULES"
# promtool resolves rule_files in the test file relative to the test file.
step "rule unit tests" promtool test rules "$RULE_TESTS"
# Run from elsewhere: rule_files in prometheus.yml must resolve against its directory.
check_config_from_root() {
	(cd / && promtool check config "$PROM_CONFIG")
}
step "check config" check_config_from_root

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
# would make a panel empty or an alert silent. Recording rules (level:name:ops)
# are not checked here: promtool test rules covers them.
mapfile -t FAMILIES < <(awk '/^\.SH METRICS/ { m = 1; next } /^\.SH / { m = 0 }
	m && /^\.B iopulse_[a-z0-9_]*$/ { print $2 }' "$SOURCE_DIR/man/iopulse.8")
((${#FAMILIES[@]} > 10)) || { echo "FAIL: test_rules: no metric families in man/iopulse.8 METRICS" >&2; exit 1; }
check_names() {
	local bad=0 name base f f2 known
	for f in "$RULES" "$DASHBOARD"; do
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
