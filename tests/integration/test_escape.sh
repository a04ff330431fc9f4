#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A path may hold any byte but NUL and '/'. Target directories whose names hold
# a newline, an ESC and a CR (YAML's "\n", "\e", "\r" in a double-quoted
# string) cannot forge a line nor drive a terminal anywhere text leaves iopulse:
#   - the log: every line starts with the timestamp and a level;
#   - /readyz: one line per target that is not up, escaped;
#   - /metrics: promtool check metrics passes, the path label is the real path;
#   - iopulse check and iopulse probe: escaped, no control character but the
#     line ends, also in what they quote of the command line (a PATH, a
#     configuration file's name, a probe name, an option).
# t1's directory exists (up: probes, metrics, iopulse probe); t2's does not
# (down: /readyz says why, quoting its path, and so do the log and check).

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl promtool
require_disk "$WORK"

# The tail of both names: a forged /readyz line, a colour, a return.
TAIL=$'\nt9: up: forged\e[31m\rX'
UP_DIR="$WORK/up$TAIL"
DOWN_DIR="$WORK/down$TAIL"
TAIL_YAML='\nt9: up: forged\e[31m\rX'
TAIL_ESC='\nt9: up: forged\x1b[31m\rX'
mkdir "$UP_DIR"
[[ $WORK != *[\"\\]* ]] || skip "\$WORK ($WORK) holds a quote or a backslash"

CFG="$WORK/iopulse.yaml"
cat >"$CFG" <<EOF
splay: false
targets:
  - name: t1
    directory: "$WORK/up$TAIL_YAML"
    size: 1MiB
    max_duty_cycle: 100%
    max_write_per_day: 0
  - name: t2
    directory: "$WORK/down$TAIL_YAML"
    size: 1MiB
    max_duty_cycle: 100%
    max_write_per_day: 0
probes:
  - name: p1
    type: ping
    target: t1
    interval: 100ms
  - name: p2
    type: ping
    target: t2
    interval: 100ms
EOF

# no_controls FILE WHAT: FILE holds no control character but the newline.
no_controls() {
	if LC_ALL=C grep -n $'[\x01-\x09\x0b-\x1f\x7f]' "$1" >"$WORK/controls"; then
		fail "$2 holds control characters:"$'\n'"$(cat -A "$WORK/controls")"
	fi
}

# ---- iopulse check -----------------------------------------------------------

rc=0
"$IOPULSE" check --config "$CFG" >"$WORK/check.out" 2>"$WORK/check.err" || rc=$?
((rc == 66)) || fail "iopulse check: exit status $rc, want 66 (t2 is missing):"$'\n'"$(cat "$WORK/check.err")"
no_controls "$WORK/check.out" "iopulse check's output"
no_controls "$WORK/check.err" "iopulse check's messages"
want="target 't2': directory '$WORK/down$TAIL_ESC' does not exist"
grep -qF -- "$want" "$WORK/check.err" || fail "iopulse check does not say: $want"$'\n'"$(cat -A "$WORK/check.err")"
(($(wc -l <"$WORK/check.err") == 1)) || fail "iopulse check: more than one line:"$'\n'"$(cat -A "$WORK/check.err")"
note "iopulse check: $(cat "$WORK/check.err")"

# ---- iopulse probe ------------------------------------------------------------

run_probe 0 "$WORK/probe.out" --config "$CFG" -c 2 p1
no_controls "$WORK/probe.out" "iopulse probe's output"
no_controls "$WORK/probe.out.err" "iopulse probe's messages"
grep -qF -- "$WORK/up$TAIL_ESC" "$WORK/probe.out" ||
	fail "iopulse probe does not show the path escaped:"$'\n'"$(cat -A "$WORK/probe.out")"

# ---- what the user typed --------------------------------------------------------
# A PATH, a configuration file's name and probe names come from the command line
# and are quoted back in messages: escaped there too, one line per message.

# one_message NAME WANT STATUS CMD...: CMD exits with STATUS and says WANT (the
# argument escaped) on one line, nothing on stdout but the line ends. A usage
# error is followed by the usage, from a line "Usage: ..." on.
one_message() {
	local name=$1 want=$2 status=$3 rc=0 msg
	shift 3
	"$@" >"$WORK/$name.out" 2>"$WORK/$name.all" || rc=$?
	((rc == status)) || fail "$name: exit status $rc, want $status:"$'\n'"$(cat -A "$WORK/$name.all")"
	no_controls "$WORK/$name.out" "$name's output"
	no_controls "$WORK/$name.all" "$name's messages"
	sed '/^Usage: /,$d' "$WORK/$name.all" >"$WORK/$name.err"
	msg=$(cat -A "$WORK/$name.err")
	grep -qF -- "$want" "$WORK/$name.err" || fail "$name does not say: $want"$'\n'"$msg"
	(($(wc -l <"$WORK/$name.err") == 1)) || fail "$name: not one line:"$'\n'"$msg"
	note "$name: $(cat "$WORK/$name.err")"
}

one_message "probe PATH" "$WORK/nope$TAIL_ESC" 66 "$IOPULSE" probe "$WORK/nope$TAIL"
# A PATH that names a probe of the embedded default adds a hint; with the tail it
# is no probe name, so only that the hint must not be forged either is seen here.
one_message "probe option" "'--nope$TAIL_ESC'" 64 "$IOPULSE" probe "--nope$TAIL"
# The configuration under a name with the tail: t2's line names the file.
NAMED_CFG="$WORK/iopulse$TAIL.yaml"
cp "$CFG" "$NAMED_CFG"
one_message "check --config" "$WORK/iopulse$TAIL_ESC.yaml:" 66 "$IOPULSE" check --config "$NAMED_CFG"
one_message "probe --config NAME" "no probe named 'p9$TAIL_ESC' in $WORK/iopulse$TAIL_ESC.yaml" 64 \
	"$IOPULSE" probe --config "$NAMED_CFG" "p9$TAIL"
one_message "check argument" "'x$TAIL_ESC'" 64 "$IOPULSE" check --config "$CFG" "x$TAIL"

# ---- the daemon ---------------------------------------------------------------

start_daemon "$CFG"
wait_until 60 "t1 up" scraped 'iopulse_target_up{target="t1"}' == 1
wait_until 60 "t2 down" scraped 'iopulse_target_up{target="t2"}' == 0
wait_until 60 "p1 to read" scraped 'iopulse_probe_ios_total{probe="p1",target="t1",op="read"}' '>' 0 0

code=$(curl -sS -o "$WORK/readyz" -w '%{http_code}' --max-time 30 "$(url /readyz)")
[[ $code == 503 ]] || fail "/readyz: HTTP $code, want 503 (t2 is down):"$'\n'"$(cat -A "$WORK/readyz")"
no_controls "$WORK/readyz" "/readyz"
(($(wc -l <"$WORK/readyz") == 1)) || fail "/readyz: not one line for the one target down:"$'\n'"$(cat -A "$WORK/readyz")"
grep -q '^t2: down: ' "$WORK/readyz" || fail "/readyz does not start with t2's line: $(cat -A "$WORK/readyz")"
grep -qF -- "$WORK/down$TAIL_ESC" "$WORK/readyz" || fail "/readyz does not quote t2's path escaped: $(cat -A "$WORK/readyz")"
note "/readyz: $(cat "$WORK/readyz")"

scrape_metrics
promtool check metrics <"$PAGE" >"$WORK/promtool.out" 2>&1 ||
	fail "promtool check metrics:"$'\n'"$(cat "$WORK/promtool.out")"
# The text format escapes the newline; the ESC and CR are valid as they are (and
# the label must be the real path, to match /status.json and the file system).
label="path=\"$WORK/up\\nt9: up: forged"$'\e[31m\r'"X\""
grep -qF -- "$label" "$PAGE" || fail "no series with the label $label:"$'\n'"$(grep -a 'path=' "$PAGE" | cat -A)"

stop_daemon
# Every line of the log is one of the log's: a timestamp, a level, the message.
no_controls "$DAEMON_LOG" "the log"
if grep -Evn '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} (error|warning|notice|info|debug): ' \
	"$DAEMON_LOG" >"$WORK/forged"; then
	fail "lines of the log not of the log's form:"$'\n'"$(cat -A "$WORK/forged")"
fi
grep -qF -- "$WORK/down$TAIL_ESC" "$DAEMON_LOG" || fail "the log does not quote t2's path escaped"
note "every line of the log is the log's, paths escaped"
