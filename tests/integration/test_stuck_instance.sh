#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Under socket activation, a restarted iopulse serves while the old one, killed
# in the middle of a hung read, cannot finish exiting and still holds the
# listening socket. socket_holder.py plays systemd with iopulse.socket: it holds
# one listening socket and passes that same socket to each instance.
#   1. Daemon A, given the socket, pings a directory on hangfs (sync engine).
#      hangfs freezes, with interrupts ignored (HANGFS_UNINTERRUPTIBLE=1): A's
#      lane waits in the kernel uninterruptibly, as on a dead disk. SIGKILL: A
#      cannot exit, and its stuck thread keeps the socket open; a request to the
#      port is accepted by the kernel and never answered.
#   2. Daemon B is given the same socket. There is still one listening socket on
#      the port, and B answers 40 scrapes in a row, each on a new connection.
#   3. A daemon that binds the address itself exits 69, saying the address is in
#      use and that iopulse.socket is the way to run.
#   4. Thaw: A's read returns and A exits. B answers 40 of 40 again, and the
#      socket outlives B too, as systemd's does.
# Skipped where FUSE cannot be mounted (see hangfs.sh).

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"
# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"

require_cmd curl timeout /usr/bin/python3
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

# socket_inode PORT: the inode of the socket listening on 127.0.0.1:PORT.
socket_inode() {
	local want
	want=$(printf '0100007F:%04X' "$1")
	awk -v a="$want" '$2 == a && $4 == "0A" { print $10; exit }' /proc/net/tcp
}

# holds_socket PID INODE: a thread of PID has socket INODE open.
holds_socket() {
	local fd
	for fd in /proc/"$1"/task/*/fd/*; do
		[[ $(readlink "$fd" 2>/dev/null) == "socket:[$2]" ]] && return 0
	done
	return 1
}

# scrapes_answered N: N scrapes of /metrics, each on a new connection; sets ANSWERED
# to how many got a page within 10s (one that A's frozen queue took would never
# be answered: 10s, not less, for a loaded machine).
scrapes_answered() {
	local i
	ANSWERED=0
	for ((i = 0; i < $1; i++)); do
		if curl -fsS --max-time 10 -o "$WORK/page" "$(url /metrics)" 2>/dev/null; then
			ANSWERED=$((ANSWERED + 1))
		fi
	done
}

# ---- the socket, held as systemd would hold it --------------------------------------

PORT_FILE="$WORK/port"
HOLDER="$SOURCE_DIR/tests/integration/socket_holder.py"
HOLDER_LOG="$WORK/holder.log"
DAEMON_LOGS+=("$HOLDER_LOG")
/usr/bin/python3 "$HOLDER" hold "$PORT_FILE" "$WORK/holder.sock" >"$HOLDER_LOG" 2>&1 &
on_exit kill "$!"
wait_until 60 "the socket holder listening" test -s "$PORT_FILE"
read -r PORT <"$PORT_FILE"
INODE=$(socket_inode "$PORT")
[[ -n $INODE ]] || fail "no socket listens on 127.0.0.1:$PORT"

# Every daemon started from here gets the held socket (its --listen is ignored).
REAL=$IOPULSE
IOPULSE="$WORK/iopulse-activated"
printf '#!/bin/sh\nexec /usr/bin/python3 %q pass %q %q "$@"\n' \
	"$HOLDER" "$WORK/holder.sock" "$REAL" >"$IOPULSE"
chmod +x "$IOPULSE"

# started_on_held_socket: the daemon just started serves on the held socket.
started_on_held_socket() {
	[[ $DAEMON_PORT == "$PORT" ]] || fail "daemon $DAEMON_PID serves on port $DAEMON_PORT, not $PORT"
	grep -q "Using the socket passed by the service manager (127.0.0.1:$PORT)" "$DAEMON_LOG" ||
		fail "daemon $DAEMON_PID does not say it uses the passed socket"
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
started_on_held_socket
A_PID=$DAEMON_PID
A_LOG=$DAEMON_LOG
wait_until 60 "daemon A reads through hangfs" reading

kill -USR1 "$HANGFS_PID"
wait_hangfs 60 1 frozen
wait_hangfs 60 1 'read blocked'
kill -KILL "$A_PID"
# Its other threads are gone; the one in hangfs is not, and holds every descriptor.
deadline=$(($(now_ms) + 30000))
while ! grep -q '^State:.*Z' "/proc/$A_PID/status" 2>/dev/null; do
	(($(now_ms) < deadline)) || fail "daemon A's main thread did not die on SIGKILL"
	sleep 0.05
done
[[ -d /proc/$A_PID ]] || fail "daemon A exited although its read is stuck in hangfs"
holds_socket "$A_PID" "$INODE" || fail "the killed daemon A does not hold the listening socket"
rc=0
curl -sS --max-time 1 -o /dev/null "http://127.0.0.1:$PORT/healthz" 2>/dev/null || rc=$?
((rc == 28)) || fail "a request to the killed daemon A ended with curl status $rc, want 28 (accepted, never answered)"
note "daemon A ($A_PID) killed with a read stuck in hangfs: it holds the socket, requests hang"

# ---- 2. daemon B on the same socket -------------------------------------------------

ping_config "$WORK/b.yaml" "$WORK/b" 1MiB
start_daemon "$WORK/b.yaml"
started_on_held_socket
n=$(listeners "$PORT")
((n == 1)) || fail "$n sockets listen on 127.0.0.1:$PORT, want 1 (the held one)"
holds_socket "$A_PID" "$INODE" || fail "daemon A let go of the socket before the thaw"
scrapes_answered 40
((ANSWERED == 40)) || fail "daemon B answered $ANSWERED of 40 scrapes while A holds the socket"
has_series "$WORK/page" 'iopulse_target_up{target="t1"}' ||
	fail "the page answered on port $PORT is not daemon B's"
note "daemon B serves on the same socket and answered 40 of 40 scrapes"

# ---- 3. a daemon that binds the address itself: in use -------------------------------

LOG3="$WORK/third.log"
DAEMON_LOGS+=("$LOG3")
ping_config "$WORK/c.yaml" "$WORK/c" 1MiB
rc=0
timeout 60 "$REAL" run --config "$WORK/c.yaml" --listen "127.0.0.1:$PORT" \
	>"$LOG3" 2>&1 </dev/null || rc=$?
((rc == 69)) || fail "a daemon binding 127.0.0.1:$PORT exited with status $rc, want 69"
grep -q "Cannot listen on 127.0.0.1:$PORT: address already in use; .*iopulse.socket" "$LOG3" ||
	fail "the daemon binding 127.0.0.1:$PORT does not say the address is in use and what to do"

# ---- 4. thaw: A goes away, B keeps serving ------------------------------------------

kill -USR2 "$HANGFS_PID"
wait_hangfs 60 1 thawed
# A zombie whose last thread is gone: only the leader's entry is left in task/.
a_exited() {
	local tasks=("/proc/$A_PID/task/"*)
	((${#tasks[@]} == 1))
}
wait_until 60 "daemon A's stuck thread returns and A exits after the thaw" a_exited
rc=0
wait "$A_PID" || rc=$?
_forget_pid "$A_PID"
((rc == 137)) || fail "daemon A exited with status $rc after the thaw, want 137 (SIGKILL)"
scrapes_answered 40
((ANSWERED == 40)) || fail "daemon B answered $ANSWERED of 40 scrapes after A exited"
grep -q 'Received SIGTERM' "$A_LOG" && fail "daemon A logged a SIGTERM it never got"
note "A exited after the thaw; B answered 40 of 40 scrapes"

stop_daemon TERM 5
n=$(listeners "$PORT")
((n == 1)) || fail "$n sockets listen on 127.0.0.1:$PORT after B stopped, want the held one"
note "pass"
