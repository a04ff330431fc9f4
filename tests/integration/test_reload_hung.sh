#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A reload whose file hangs in read() — the configuration on a filesystem that
# stopped answering (hangfs, frozen) — is waited for off the scheduler's thread.
# The test is the service manager (NOTIFY_SOCKET, WATCHDOG_USEC=1s):
#   1. Frozen, SIGHUP: RELOADING=1 goes out at once; while the reload waits, the
#      pings keep being counted and WATCHDOG=1 keeps coming. A second SIGHUP is
#      coalesced: logged, nothing sent.
#   2. Thawed: the reload completes (READY=1), then the coalesced one runs
#      (RELOADING=1, READY=1): two "Configuration reloaded", the gauge at 1.
#   3. Frozen again, SIGHUP, then SIGTERM: exit 0 within a second, the stuck
#      reload abandoned.
# Skipped where FUSE cannot be mounted (see hangfs.sh).

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"
# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"

require_cmd curl /usr/bin/python3
require_disk "$WORK"
hangfs_mount

# The probes measure a real disk; only the configuration is on hangfs.
ping_config "$BACKING/iopulse.yaml" "$WORK/t1" 1MiB
CFG="$MNT/iopulse.yaml"
P1='iopulse_probe_ios_total{probe="p1",target="t1",op="read"}'
OK='iopulse_config_last_reload_successful'
MSGS="$WORK/notify.log"

export NOTIFY_SOCKET="@iopulse-test-notify-$$-$RANDOM"
/usr/bin/python3 "$SOURCE_DIR/tests/integration/notify_listen.py" "$NOTIFY_SOCKET" "$MSGS" &
on_exit kill "$!"
wait_until 60 "the notify listener to bind $NOTIFY_SOCKET" test -e "$MSGS"

# count_msgs REGEX: how many recorded messages (fields joined by ';') match REGEX.
count_msgs() {
	cut -f2 "$MSGS" | grep -cE "$1" || true
}
# msgs_are N REGEX: exactly N recorded messages match REGEX.
msgs_are() {
	(($(count_msgs "$2") == $1))
}
# watchdogs_since_reloading N: N WATCHDOG=1 came after the last RELOADING=1.
watchdogs_since_reloading() {
	local n
	n=$(cut -f2 "$MSGS" | awk '/^RELOADING=1/ { n = 0; next } $0 == "WATCHDOG=1" { n++ }
		END { print n + 0 }')
	((n >= $1))
}
# p1_now VAR: p1's count now, as a whole number.
p1_now() {
	local v
	scrape_metrics
	sample_into v "$PAGE" "$P1"
	printf -v "$1" '%s' "${v%.*}"
}
logged() {
	(($(grep -c -- "$2" "$DAEMON_LOG") >= $1))
}

export WATCHDOG_USEC=1000000
unset WATCHDOG_PID
start_daemon "$CFG"
unset NOTIFY_SOCKET WATCHDOG_USEC
wait_until 60 "READY=1" msgs_are 1 '^READY=1'
wait_until 60 "p1 counted 5 times" scraped "$P1" ">=" 5 0

# ---- 1. frozen: the reload waits, nothing else does ------------------------------

kill -USR1 "$HANGFS_PID"
wait_hangfs 60 1 frozen
p1_now before
kill -HUP "$DAEMON_PID"
wait_hangfs 60 1 'read blocked'
wait_until 60 "RELOADING=1 after SIGHUP" msgs_are 1 '^RELOADING=1;MONOTONIC_USEC=[0-9]+$'
wait_until 60 "p1 counted 10 more times while the reload hangs" scraped "$P1" ">=" "$((before + 10))" 0
wait_until 60 "two WATCHDOG=1 while the reload hangs" watchdogs_since_reloading 2
kill -HUP "$DAEMON_PID"
wait_until 60 "the second SIGHUP coalesced" logged 1 'Received SIGHUP during a reload'
msgs_are 1 '^READY=1' || fail "READY=1 came while the reload hangs"
msgs_are 1 '^RELOADING=1' || fail "a second RELOADING=1 came while the reload hangs"
note "reload stuck in read(): p1 still counted, keep-alives still sent"

# ---- 2. thawed: that reload, then the coalesced one -----------------------------

kill -USR2 "$HANGFS_PID"
wait_until 60 "two 'Configuration reloaded'" logged 2 'Configuration reloaded'
wait_until 60 "READY=1 after each reload" msgs_are 3 '^READY=1'
order=$(cut -f2 "$MSGS" | grep -vE '^(WATCHDOG=1|STATUS=.*)$' | sed 's/;.*//' | tr '\n' ' ')
[[ $order == "READY=1 RELOADING=1 READY=1 RELOADING=1 READY=1 " ]] ||
	fail "notify messages out of order: $order"
scrape_metrics
sample_into ok "$PAGE" "$OK"
num "$ok" '==' 1 || fail "$OK is $ok after the reloads"

# ---- 3. frozen again: SIGTERM does not wait for the reload -----------------------

kill -USR1 "$HANGFS_PID"
wait_hangfs 60 2 frozen
kill -HUP "$DAEMON_PID"
wait_hangfs 60 2 'read blocked'
# The reload stays stuck until the thaw at exit: a daemon that waited for it
# would never exit. It does not wait (0.8 s for lanes, STOP_GRACE_NS); 5 s
# allows for a loaded machine.
stop_daemon TERM 5
grep -q 'reload from .* has not finished, abandoning it' "$DAEMON_LOG" ||
	fail "the daemon does not say it abandoned the stuck reload"
note "pass"
