#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The daemon speaks sd_notify the way a Type=notify service with WatchdogSec=1s
# expects. This test is the service manager: it owns the NOTIFY_SOCKET datagram
# socket, records every message with its time, and requires exactly
#   READY=1 with STATUS= "1 probe on 1 target, ..."   (once, first)
#   WATCHDOG=1 every ~0.5s (half of WATCHDOG_USEC=1000000), or a STATUS= update
#   RELOADING=1 with MONOTONIC_USEC= (now, on CLOCK_MONOTONIC), then
#   READY=1 with STATUS=, only WATCHDOG=1 in between    (once each, after SIGHUP;
#                                  the file is read off the loop that feeds it)
#   STOPPING=1                                          (once, last, after SIGTERM)
# and exit status 0. With WATCHDOG_PID naming another process there is no
# WATCHDOG=1 at all (the watchdog is not ours). After a reload of a broken file,
# the READY=1 that ends it carries STATUS= with the file:line:column of the error.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl /usr/bin/python3
require_disk "$WORK"

DIR="$WORK/target"
CFG="$WORK/iopulse.yaml"
ping_config "$CFG" "$DIR" 1MiB

# listen OUT: start a notify listener writing to OUT; sets NOTIFY_SOCKET.
listen() {
	local out=$1 pid
	export NOTIFY_SOCKET="@iopulse-test-notify-$$-$RANDOM"
	/usr/bin/python3 "$SOURCE_DIR/tests/integration/notify_listen.py" "$NOTIFY_SOCKET" "$out" &
	pid=$!
	on_exit kill "$pid"
	wait_until 60 "the notify listener to bind $NOTIFY_SOCKET" test -e "$out"
}

# has_msg OUT REGEX: some recorded message (fields joined by ';') matches REGEX.
has_msg() {
	cut -f2 "$1" | grep -Eq "$2"
}

# ---- watchdog requested for this daemon -----------------------------------

MSGS="$WORK/notify.log"
listen "$MSGS"
export WATCHDOG_USEC=1000000
unset WATCHDOG_PID
start_daemon "$CFG"
unset NOTIFY_SOCKET WATCHDOG_USEC
wait_until 60 "READY=1" has_msg "$MSGS" '^READY=1'
# The cadence is the point of the test: let the watchdog run for 3 seconds, with
# a reload of the (unchanged) file in the middle.
sleep 1
kill -HUP "$DAEMON_PID"
wait_until 60 "RELOADING=1 after SIGHUP" has_msg "$MSGS" '^RELOADING=1'
sleep 2
require_alive
[[ $(grep -c $'\tREADY=1' "$MSGS") == 2 ]] || fail "not two READY=1 (start and reload): $(cut -f2 "$MSGS" | tr '\n' ' ')"
stop_daemon TERM 5
wait_until 60 "STOPPING=1" has_msg "$MSGS" '^STOPPING=1$'
note "messages:"
sed 's/^/#   /' "$MSGS"

# One pass over the record: the sequence, the watchdog gaps, the last status.
verdict=$(awk -F'\t' '
	function bad(m) { print m; failed = 1; exit }
	NR == 1 {
		if ($2 !~ /^READY=1;STATUS=1 probe on 1 target, [01] up(; last error: .*)?$/)
			bad("first message is not READY=1 with STATUS=: " $2)
		ready = $1; last = $1; status = $2; next
	}
	$2 ~ /^RELOADING=1;MONOTONIC_USEC=[0-9]+$/ {
		if (reloading || nreload) bad("a second RELOADING=1: " $2)
		usec = substr($2, index($2, "USEC=") + 5) / 1e6
		if (usec > $1 + 0.001 || usec < $1 - 1) bad("MONOTONIC_USEC= " usec "s is not the time it was sent, " $1 "s")
		reloading = NR; nreload++; next
	}
	$2 ~ /^READY=1;STATUS=1 probe on 1 target, [01] up(; last error: .*)?$/ {
		if (!reloading) bad("READY=1 without RELOADING=1: " $2)
		status = substr($2, 9); reloading = 0; nready++; next
	}
	$2 == "STOPPING=1" { stop = $1; if (NR != total) bad("STOPPING=1 is not the last message"); next }
	$2 == "WATCHDOG=1" {
		gap = $1 - last
		if (gap > maxgap) maxgap = gap
		if (nwd > 0 && (mingap == "" || gap < mingap)) mingap = gap
		last = $1; nwd++; next
	}
	$2 ~ /^STATUS=[^;]*$/ {
		if (reloading) bad("STATUS= between RELOADING=1 and READY=1: " $2)
		status = $2; nstatus++; next
	}
	{ bad("unexpected message " NR ": " $2) }
	END {
		if (failed) exit 1
		if (!stop) { print "no STOPPING=1"; exit 1 }
		if (nreload != 1 || nready != 1) { print "want RELOADING=1 then READY=1 once, got " nreload " and " nready; exit 1 }
		span = stop - ready
		want = span / 0.5
		printf "span %.2fs, %d WATCHDOG=1 (want ~%.1f), gaps %.3f..%.3fs, %d STATUS= updates, last %s\n",
			span, nwd, want, mingap, maxgap, nstatus, status
		if (nwd < want - 2 || nwd > want + 1) { print "WATCHDOG=1 count off"; exit 1 }
		if (maxgap > 0.9) { print "a gap between keep-alives came close to the 1s watchdog"; exit 1 }
		if (mingap < 0.3) { print "keep-alives sent faster than half the interval"; exit 1 }
		if (stop - last > 0.9) { print "no keep-alive in the last 0.9s before STOPPING"; exit 1 }
	}' total="$(wc -l <"$MSGS")" "$MSGS") || fail "notify sequence: $verdict"
note "$verdict"
[[ $verdict == *"last STATUS=1 probe on 1 target, 1 up"* ]] ||
	fail "the last STATUS= does not report the target up: $verdict"

# ---- watchdog for another process: not ours --------------------------------

MSGS2="$WORK/notify2.log"
listen "$MSGS2"
export WATCHDOG_USEC=200000 WATCHDOG_PID=1
start_daemon "$CFG"
unset NOTIFY_SOCKET WATCHDOG_USEC WATCHDOG_PID
wait_until 60 "READY=1" has_msg "$MSGS2" '^READY=1'
sleep 1 # five would-be keep-alive periods
stop_daemon TERM 5
wait_until 60 "STOPPING=1" has_msg "$MSGS2" '^STOPPING=1$'
! has_msg "$MSGS2" WATCHDOG || fail "WATCHDOG=1 sent although WATCHDOG_PID names another process: $(cut -f2 "$MSGS2" | tr '\n' ' ')"

# ---- a reload of a broken file: STATUS= says where it is broken ----------------

# What `systemctl status` shows: the file:line:column of the error, not only
# that the reload failed.
MSGS3="$WORK/notify3.log"
CFG3="$WORK/reload.yaml"
cp "$CFG" "$CFG3"
listen "$MSGS3"
start_daemon "$CFG3"
unset NOTIFY_SOCKET
wait_until 60 "READY=1" has_msg "$MSGS3" '^READY=1'
printf 'targets:\n  - name: t1\n    directory: [unclosed\nprobes: {\n' >"$CFG3"
kill -HUP "$DAEMON_PID"
ready_after_reload() {
	[[ $(grep -c $'\tREADY=1' "$MSGS3") -ge 2 ]]
}
wait_until 60 "READY=1 after the refused reload" ready_after_reload
status=$(grep $'\tREADY=1' "$MSGS3" | tail -n 1 | cut -f2)
[[ $status == *"last error: Configuration reload failed"*": $CFG3:"[0-9]*:[0-9]*": "* ]] ||
	fail "STATUS= after a refused reload does not say file:line:column: $status"
stop_daemon TERM 5
note "after a refused reload: $status"
note "pass"
