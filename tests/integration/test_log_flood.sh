#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A failing or flapping disk must not flood the log: a probe logs changes of its
# state, at most 5 per 30 s (then one "Suppressed N state changes, the last: ..."
# line), whatever their text.
#   A. every write fails with EIO, the fdatasync after it succeeds: one state,
#      one line ("write: Input/output error"), and never "fdatasync succeeds
#      again" (it never failed);
#   B. write and fdatasync fail and succeed by turns, ping after ping: at most 5
#      lines about the probe however long it goes on;
#   C. the errors stop: once the 30 s are over, one summary line tells how many
#      changes were held back and the state the probe was left in.
# The disk is hangfs (tests/integration/hangfs.c), told by signal to fail writes.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"
# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"

require_cmd curl

hangfs_mount
CFG="$WORK/flood.yaml"
target_config "$CFG" "$MNT" 1MiB "direct: true"
ping_item "$CFG" w1 write "sync: fdatasync" "interval: 100ms" "timeout: 5s"
start_daemon "$CFG"

WRITES='iopulse_probe_ios_total{probe="w1",target="t1",op="write"}'
IOERR='iopulse_probe_errors_total{probe="w1",target="t1",reason="io_error"}'
wait_until 60 "writes counted" scraped "$WRITES" '>' 0 0

# log_from LINE: the daemon's log after its first LINE lines, debug lines left out
# (the test runs the daemon at debug level; the bound is on what an operator sees).
log_from() {
	tail -n "+$(($1 + 1))" "$DAEMON_LOG" | grep -v ' debug: ' || true
}
# lines_now: how many lines the daemon's log has.
lines_now() {
	wc -l <"$DAEMON_LOG"
}
# more_errors N: wait (30 s at most) until io_error has grown by N from now.
more_errors() {
	local v
	scrape_metrics
	sample_or v 0 "$PAGE" "$IOERR"
	wait_until 60 "$1 more io_error counted (from $v)" scraped "$IOERR" '>=' "$(awk -v a="$v" -v n="$1" 'BEGIN { print a + n }')" 0
}

# ---- A. writes fail, fdatasync succeeds ---------------------------------------

L0=$(lines_now)
kill -s RTMIN "$HANGFS_PID"
wait_hangfs 60 1 "eio writes"
more_errors 20 # ~2 s of pings, each failing its write
A=$(log_from "$L0")
n=$(grep -c 'Probe w1' <<<"$A" || true)
((n == 1)) || fail "A: $n lines about w1 over 20 failed writes, want 1:"$'\n'"$A"
grep -q 'error: Probe w1: write: Input/output error$' <<<"$A" ||
	fail "A: no 'Probe w1: write: Input/output error' line:"$'\n'"$A"
! grep -q 'succeeds again' <<<"$A" || fail "A: a recovery was logged while every write failed:"$'\n'"$A"
note "A: 20 failed writes, one line: $(grep 'Probe w1' <<<"$A")"

# ---- B. flapping ---------------------------------------------------------------

scrape_metrics
sample_into w0 "$PAGE" "$WRITES"
kill -s RTMIN+1 "$HANGFS_PID"
wait_hangfs 60 1 "eio flapping"
more_errors 40 # ~4 s: 20 pings failing (write and fdatasync), 20 succeeding
wait_until 60 "writes succeeding between the failures" scraped "$WRITES" '>=' "$(awk -v a="$w0" 'BEGIN { print a + 10 }')"
AB=$(log_from "$L0")
n=$(grep -c 'Probe w1' <<<"$AB" || true)
((n <= 5)) || fail "B: $n lines about w1 over ~4 s of flapping pings (and A), want at most 5:"$'\n'"$AB"
n=$(wc -l <<<"$AB")
((n <= 6)) || fail "B: $n log lines over ~4 s of flapping pings (and A), want at most 6:"$'\n'"$AB"
grep -q 'Probe w1: write succeeds again$' <<<"$AB" || fail "B: no recovery line:"$'\n'"$AB"
note "B: flapping, $(grep -c 'Probe w1' <<<"$AB") lines about w1 in A and B"

# ---- C. the errors stop; the summary after the 30 s -----------------------------

kill -s RTMIN+2 "$HANGFS_PID"
wait_hangfs 60 1 "eio off"
scrape_metrics
sample_into w0 "$PAGE" "$WRITES"
wait_until 60 "writes succeeding again" scraped "$WRITES" '>' "$w0"
# The window opened with A's line; the scheduler reports it when it has ended.
wait_until 60 "the summary of the suppressed state changes" grep -q 'Suppressed [0-9]* state changes, the last: Probe w1: ' "$DAEMON_LOG"
summary=$(grep 'Suppressed [0-9]* state changes' "$DAEMON_LOG")
n=$(grep -c . <<<"$summary")
((n == 1)) || fail "C: $n summary lines, want 1:"$'\n'"$summary"
grep -q 'notice: Suppressed [0-9]* state changes, the last: Probe w1: write succeeds again$' <<<"$summary" ||
	fail "C: the summary does not leave w1 succeeding: $summary"
ALL=$(log_from "$L0")
n=$(grep -c 'Probe w1' <<<"$ALL" || true)
((n <= 6)) || fail "C: $n lines about w1 in all, want at most 6:"$'\n'"$ALL"
note "C: $summary"

require_alive
stop_daemon TERM 5
note "pass"
