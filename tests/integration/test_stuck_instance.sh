#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A restarted iopulse serves while the old one, killed in the middle of a hung
# read, cannot finish exiting and still holds its listening socket.
#   1. Daemon A pings a directory on hangfs (sync engine). hangfs freezes, with
#      interrupts ignored (HANGFS_UNINTERRUPTIBLE=1): A's lane waits in the kernel
#      uninterruptibly, as on a dead disk. SIGKILL: A cannot exit; its socket still
#      listens, and a connection to the port is accepted by the kernel and never
#      answered.
#   2. Daemon B is started on the same address. It must not exit 69: it shares the
#      port (SO_REUSEPORT), says so, and gets every new connection — 40 scrapes in
#      a row, each on a new connection, all answered. (Without the steering, the
#      kernel's hash sends each connection to A or B at random.)
#   3. A third daemon on the address exits 69: B answers, so the port is in use.
#   4. Thaw: A's read returns, A finally exits and its socket closes. B keeps
#      getting every connection. (With several silent sockets closing one by one,
#      B's spare sockets are what keep this true: unit/test_http covers that.)
# Skipped where FUSE cannot be mounted (see hangfs.sh).

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"
# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"

require_cmd curl timeout
require_disk "$WORK"
HANGFS_UNINTERRUPTIBLE=1 hangfs_mount
hangfs_said 1 'ignoring interrupts' || fail "hangfs does not say it ignores interrupts"

# listeners PORT: how many sockets listen on 127.0.0.1:PORT (/proc/net/tcp: local
# address as hex IP:port, state 0A = LISTEN).
listeners() {
	local want
	want=$(printf '0100007F:%04X' "$1")
	awk -v a="$want" '$2 == a && $4 == "0A" { n++ } END { print n + 0 }' /proc/net/tcp
}

# scrapes_answered N: N scrapes of /metrics, each on a new connection; sets ANSWERED
# to how many got a page within 2s.
scrapes_answered() {
	local i
	ANSWERED=0
	for ((i = 0; i < $1; i++)); do
		if curl -fsS --max-time 2 -o "$WORK/page" "$(url /metrics)" 2>/dev/null; then
			ANSWERED=$((ANSWERED + 1))
		fi
	done
}

# ---- 1. daemon A, stuck and killed ------------------------------------------------

hung_config "$WORK/a.yaml" sync
IOS='iopulse_probe_ios_total{probe="ping",target="hung",op="read"}'
reading() {
	local v
	scrape_metrics
	sample_or v 0 "$PAGE" "$IOS"
	num "$v" '>' 0
}
start_daemon "$WORK/a.yaml"
A_PID=$DAEMON_PID
A_LOG=$DAEMON_LOG
PORT=$DAEMON_PORT
wait_until 10 "daemon A reads through hangfs" reading

kill -USR1 "$HANGFS_PID"
wait_hangfs 5 1 frozen
wait_hangfs 5 1 'read blocked'
kill -KILL "$A_PID"
# Its other threads are gone; the one in hangfs is not, and holds every descriptor.
deadline=$(($(now_ms) + 5000))
while ! grep -q '^State:.*Z' "/proc/$A_PID/status" 2>/dev/null; do
	(($(now_ms) < deadline)) || fail "daemon A's main thread did not die on SIGKILL"
	sleep 0.05
done
[[ -d /proc/$A_PID ]] || fail "daemon A exited although its read is stuck in hangfs"
n=$(listeners "$PORT")
((n == 1)) || fail "$n sockets listen on 127.0.0.1:$PORT after A was killed, want A's 1"
rc=0
curl -sS --max-time 1 -o /dev/null "http://127.0.0.1:$PORT/healthz" 2>/dev/null || rc=$?
((rc == 28)) || fail "a request to the killed daemon A ended with curl status $rc, want 28 (accepted, never answered)"
note "daemon A ($A_PID) killed with a read stuck in hangfs: port $PORT still listens, requests hang"

# ---- 2. daemon B on the same address ----------------------------------------------

ping_config "$WORK/b.yaml" "$WORK/b" 1MiB
start_daemon "$WORK/b.yaml" --listen "127.0.0.1:$PORT"
[[ $DAEMON_PORT == "$PORT" ]] || fail "daemon B serves on port $DAEMON_PORT, not $PORT"
grep -q "Another socket listens on 127.0.0.1:$PORT but does not answer" "$DAEMON_LOG" ||
	fail "daemon B does not say it shares the port with a silent socket"
grep -q "with every new connection steered to this instance (1 silent socket(s) ahead of it)" "$DAEMON_LOG" ||
	fail "daemon B does not say it steers every new connection to itself"
n=$(listeners "$PORT")
((n == 3)) || fail "$n sockets listen on 127.0.0.1:$PORT, want 3 (A's, B's and B's spare)"
scrapes_answered 40
((ANSWERED == 40)) || fail "daemon B answered $ANSWERED of 40 scrapes while A holds the port"
has_series "$WORK/page" 'iopulse_target_up{target="t1"}' ||
	fail "the page answered on port $PORT is not daemon B's"
note "daemon B shares port $PORT and answered 40 of 40 scrapes"

# ---- 3. a third daemon: the port is in use -----------------------------------------

LOG3="$WORK/third.log"
DAEMON_LOGS+=("$LOG3")
ping_config "$WORK/c.yaml" "$WORK/c" 1MiB
rc=0
timeout 10 "$IOPULSE" run --config "$WORK/c.yaml" --listen "127.0.0.1:$PORT" \
	>"$LOG3" 2>&1 </dev/null || rc=$?
((rc == 69)) || fail "a third daemon on 127.0.0.1:$PORT exited with status $rc, want 69"
grep -q "Cannot listen on 127.0.0.1:$PORT: address already in use" "$LOG3" ||
	fail "the third daemon does not say the address is in use"

# ---- 4. thaw: A goes away, B keeps every connection ---------------------------------

kill -USR2 "$HANGFS_PID"
wait_hangfs 5 1 thawed
# A zombie whose last thread is gone: only the leader's entry is left in task/.
a_exited() {
	local tasks=("/proc/$A_PID/task/"*)
	((${#tasks[@]} == 1))
}
wait_until 5 "daemon A's stuck thread returns and A exits after the thaw" a_exited
rc=0
wait "$A_PID" || rc=$?
_forget_pid "$A_PID"
((rc == 137)) || fail "daemon A exited with status $rc after the thaw, want 137 (SIGKILL)"
n=$(listeners "$PORT")
((n == 2)) || fail "$n sockets listen on 127.0.0.1:$PORT after A exited, want B's 2"
scrapes_answered 40
((ANSWERED == 40)) || fail "daemon B answered $ANSWERED of 40 scrapes after A exited"
grep -q 'Received SIGTERM' "$A_LOG" && fail "daemon A logged a SIGTERM it never got"
note "A exited after the thaw; B answered 40 of 40 scrapes"

stop_daemon TERM 5
n=$(listeners "$PORT")
((n == 0)) || fail "$n sockets still listen on 127.0.0.1:$PORT after B stopped"
note "pass"
