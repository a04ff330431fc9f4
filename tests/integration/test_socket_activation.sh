#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Socket activation: given a listening socket the way systemd passes one (fd 3,
# LISTEN_FDS=1, LISTEN_PID = the daemon's pid), the daemon serves on it — not on
# --listen — and says so. More than one socket, or one that is not a listening
# TCP socket, is refused with exit status 64 and a line saying why.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl /usr/bin/python3
require_disk "$WORK"

DIR="$WORK/target"
CFG="$WORK/iopulse.yaml"
ping_config "$CFG" "$DIR" 1MiB

REAL=$IOPULSE
PORT_FILE="$WORK/port"

# activated COUNT KIND: make $IOPULSE a wrapper that execs the real binary with
# COUNT sockets of KIND passed. The pid stays the same through both execs, so
# start_daemon's pid is the daemon's and LISTEN_PID matches it.
activated() {
	local wrapper="$WORK/iopulse-activated-$1-$2"
	printf '#!/bin/sh\nexec /usr/bin/python3 %q %q %q %q %q "$@"\n' \
		"$SOURCE_DIR/tests/integration/listen_fds.py" "$PORT_FILE" "$1" "$2" "$REAL" >"$wrapper"
	chmod +x "$wrapper"
	IOPULSE=$wrapper
}

# ---- one listening TCP socket: served on ------------------------------------

activated 1 tcp
start_daemon "$CFG" # its --listen 127.0.0.1:0 must be ignored
IOPULSE=$REAL
read -r want <"$PORT_FILE"
[[ $DAEMON_PORT == "$want" ]] ||
	fail "the daemon serves on port $DAEMON_PORT, not on the passed socket's port $want"
grep -q "Using the socket passed by the service manager (127.0.0.1:$want)" "$DAEMON_LOG" ||
	fail "the log does not say the passed socket is used"

wait_until 60 "pings counted on /metrics through the passed socket" \
	scraped 'iopulse_probe_ios_total{probe="p1",target="t1",op="read"}' '>' 0 0
has_series "$PAGE" 'iopulse_build_info{version="'"$("$REAL" version | awk '{ print $2 }')"'",revision="'"$("$REAL" version | sed 's/.*revision \(.*\))/\1/')"'"}' ||
	fail "no iopulse_build_info in the page scraped through the passed socket"
stop_daemon TERM 5

# ---- what a daemon must refuse ---------------------------------------------

# refused COUNT KIND WHAT: exit 64, with a log line matching WHAT.
refused() {
	local log="$WORK/refused-$1-$2.log" rc=0
	DAEMON_LOGS+=("$log")
	activated "$1" "$2"
	timeout 10 "$IOPULSE" run --config "$CFG" --listen 127.0.0.1:0 >"$log" 2>&1 </dev/null || rc=$?
	IOPULSE=$REAL
	((rc == 64)) || fail "$1 $2 socket(s) passed: exit status $rc, want 64"
	grep -Eq "$3" "$log" || fail "$1 $2 socket(s) passed: no log line matching '$3'"
	note "$1 $2 socket(s): status 64: $(grep -E "$3" "$log")"
}
refused 2 tcp 'passed 2 sockets; iopulse serves on exactly one'
refused 1 udp 'not a listening TCP socket'
note "pass"
