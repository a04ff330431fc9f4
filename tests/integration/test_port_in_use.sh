#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A second daemon asked to listen where the first one already does exits 69
# (EX_UNAVAILABLE) promptly, saying which address is in use and what to do; the
# first keeps serving. The same for a port held by another program. (A port held
# by an old instance stuck in the kernel is no different: socket activation is
# the way through, see test_stuck_instance.sh.)

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl timeout /usr/bin/python3
require_disk "$WORK"

# write_config FILE DIR: one directory target with a slow read ping.
write_config() {
	mkdir -p "$2"
	target_config "$1" "$2" 1MiB
	ping_item "$1" p1 read "interval: 1s"
}

# Separate directories: the second daemon must not get as far as its lanes, but if
# it did, it should not fight over the first one's probe file.
write_config "$WORK/first.yaml" "$WORK/first"
write_config "$WORK/second.yaml" "$WORK/second"

LOG2="$WORK/second.log"
DAEMON_LOGS+=("$LOG2")

# second_daemon ADDR: run the second daemon on ADDR; it must exit 69 (at once:
# it never retries; 30s only allows for a loaded machine)
# with a line naming ADDR, saying it is in use and pointing to iopulse.socket.
second_daemon() {
	local addr=$1 t0 elapsed line rc=0
	t0=$(now_ms)
	timeout 60 "$IOPULSE" run --config "$WORK/second.yaml" --listen "$addr" --log-level debug \
		>"$LOG2" 2>&1 </dev/null || rc=$?
	elapsed=$(($(now_ms) - t0))
	((rc != 124)) || fail "the second daemon on $addr was still running after 60s"
	((rc == 69)) || fail "the second daemon on $addr exited with status $rc, want 69"
	((elapsed <= 30000)) || fail "the second daemon took ${elapsed}ms to give up on $addr"
	line=$(awk -v a="$addr" 'index($0, a) && tolower($0) ~ /in use/ { print; found = 1; exit }
		END { exit !found }' "$LOG2") ||
		fail "the second daemon's log has no line naming $addr and saying it is in use"
	[[ $line == *iopulse.socket* ]] || fail "the second daemon does not point to iopulse.socket: $line"
	note "second daemon on $addr: status $rc after ${elapsed}ms: $line"
}

# ---- a port held by another iopulse -----------------------------------------

start_daemon "$WORK/first.yaml"
second_daemon "127.0.0.1:$DAEMON_PORT"
require_alive
code=$(http_status GET /metrics)
[[ $code == 200 ]] || fail "the first daemon stopped serving: GET /metrics status $code"
stop_daemon TERM 5

# ---- a port held by another program ----------------------------------------

hold_port
second_daemon "127.0.0.1:$HELD_PORT"
note "pass"
