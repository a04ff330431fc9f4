#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Connection floods against the real daemon, on loopback only, bounded in count
# and time (flood.py stops by itself after two minutes and is stopped at exit):
#   - 1,000 idle and 1,000 slowloris connections (a header a byte a second) from
#     127.0.0.2-127.0.0.5, reopened whenever the daemon closes them: every scrape
#     from 127.0.0.1 answers 200 (within 30s: a starved one waits for the flood's
#     two minutes; timings are noisy, a busy machine's more so);
#   - a slowloris from 127.0.0.1 itself is closed once the header deadline (5s)
#     is past, however often it sends a byte, and 16 of them do not keep a scrape
#     from the same address out;
#   - at the lowest descriptor limit the daemon starts with, a flood fills the
#     HTTP connections and never the probes' descriptors: logged at warning
#     level (rate-limited), scrapes are answered during it and once it closes,
#     the pings go on, and nothing says "Too many open files".

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl /usr/bin/python3
require_disk "$WORK"

OTHERS=127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5
DEADLINE_S=5 # HTTP_HEADER_DEADLINE_MS
/usr/bin/python3 -c '
import socket, sys
for a in sys.argv[1].split(","):
    socket.socket().bind((a, 0))' "$OTHERS" 2>/dev/null ||
	skip "cannot bind to $OTHERS (loopback is not 127.0.0.0/8 here)"

CFG="$WORK/iopulse.yaml"
ping_config "$CFG" "$WORK/target" 8MiB

declare -A FLOOD_PID=()

# flood NAME MODE COUNT ADDRS: flood.py in the background, its state in
# $WORK/NAME.state; returns once every connection was opened once.
flood() {
	local name=$1
	/usr/bin/python3 "$SOURCE_DIR/tests/integration/flood.py" "$DAEMON_PORT" "$2" "$3" "$4" \
		"$WORK/$name.state" 120 &
	FLOOD_PID[$name]=$!
	on_exit kill "$!"
	wait_until 60 "flood $name to open its $3 connections" test -s "$WORK/$name.state"
}

# stop_flood NAME: stop it; its connections are closed when it exits.
stop_flood() {
	kill -TERM "${FLOOD_PID[$1]}" 2>/dev/null || true
	reap "${FLOOD_PID[$1]}" "flood $1" 5
}

# flood_closed NAME N: the daemon has closed at least N of the flood's connections.
flood_closed() {
	local n
	n=$(sed -n 's/^closed //p' "$WORK/$1.state")
	((n >= $2))
}

# timed_scrape LIMIT: GET /metrics from 127.0.0.1 must answer 200 within LIMIT
# seconds; sets SCRAPE_MS.
timed_scrape() {
	local out code
	out=$(curl -sS -o /dev/null --max-time "$1" -w '%{http_code} %{time_total}' "$(url)" 2>&1) || true
	code=${out%% *}
	[[ $code == 200 ]] || fail "scrape under flood: want 200 within $1s, got: $out"
	SCRAPE_MS=$(awk -v t="${out##* }" 'BEGIN { printf "%d", t * 1000 }')
}

# scrapes N LIMIT WHAT: N scrapes 0.2s apart, each 200 within LIMIT seconds.
scrapes() {
	local i max=0
	for ((i = 0; i < $1; i++)); do
		require_alive
		timed_scrape "$2"
		if ((SCRAPE_MS > max)); then
			max=$SCRAPE_MS
		fi
		sleep 0.2
	done
	note "$1 scrapes $3: all 200, the slowest in ${max}ms"
}

start_daemon "$CFG"

# ---- 1,000 idle and 1,000 slowloris connections from other addresses ----------

flood idle idle 1000 "$OTHERS"
flood slow slowloris 1000 "$OTHERS"
# The daemon has seen both (it closes what exceeds the limits).
wait_until 60 "the daemon closing idle connections" flood_closed idle 1
wait_until 60 "the daemon closing slowloris connections" flood_closed slow 1
scrapes 20 30 "under 1,000 idle and 1,000 slowloris connections from $OTHERS"
stop_flood idle
stop_flood slow

# ---- a slowloris from the scraper's own address --------------------------------

flood own1 slowloris 1 127.0.0.1
wait_until 60 "the daemon closing a slowloris from 127.0.0.1" flood_closed own1 1
lived=$(sed -n 's/^lived //p' "$WORK/own1.state" | head -n 1)
if ! num "$lived" '>=' $((DEADLINE_S - 1)) || ! num "$lived" '<=' $((DEADLINE_S + 10)); then
	fail "a slowloris from 127.0.0.1 was closed after ${lived}s, want about ${DEADLINE_S}s"
fi
note "a slowloris from 127.0.0.1 was closed after ${lived}s (header deadline ${DEADLINE_S}s)"
stop_flood own1

flood own16 slowloris 16 127.0.0.1
sleep 1.5 # they have sent bytes since
scrapes 5 $((DEADLINE_S + 2)) "from 127.0.0.1 next to 16 slowloris connections from 127.0.0.1"
stop_flood own16
stop_daemon TERM 5

# ---- a flood at the descriptor limit --------------------------------------------

# The daemon at the lowest RLIMIT_NOFILE it starts with (the figure its refusal
# below it names, iopulse(8) FILES): its HTTP connection limit is what the
# schedule leaves, so a flood of 300 connections fills that limit and never the
# descriptors the probes need. Scrapes are answered during the flood (the
# longest-waiting connection gives way) and after it; the pings go on.
cat >"$WORK/lowfd" <<EOF
#!/bin/bash
ulimit -n "\$NOFILE" || exit 99
exec $(printf '%q' "$IOPULSE") "\$@"
EOF
chmod +x "$WORK/lowfd"
rc=0
NOFILE=16 "$WORK/lowfd" run --config "$CFG" --listen 127.0.0.1:0 >"$WORK/short.log" 2>&1 || rc=$?
((rc == 71)) || fail "run under ulimit -n 16: status $rc, want 71:"$'\n'"$(cat "$WORK/short.log")"
NOFILE=$(sed -n 's/.*needs at least \([0-9]*\) descriptors.*/\1/p' "$WORK/short.log")
[[ -n $NOFILE ]] || fail "no figure in the refusal:"$'\n'"$(cat "$WORK/short.log")"
export NOFILE
REAL=$IOPULSE
IOPULSE="$WORK/lowfd" start_daemon "$CFG"
IOPULSE=$REAL
unset NOFILE

full() {
	grep -q 'warning: All [0-9]* HTTP connections are in use' "$DAEMON_LOG"
}
answers_200() {
	[[ $(curl -s -o /dev/null --max-time 5 -w '%{http_code}' "$(url)") == 200 ]]
}
READS='iopulse_probe_ios_total{probe="p1",target="t1",op="read"}'
flood fds idle 300 "$OTHERS" # 16 an address at most (HTTP_PER_ADDRESS_LIMIT)
wait_until 60 "a warning that every HTTP connection is in use" full
scrape_metrics
sample_into before "$PAGE" "$READS"
# With so few connections, a scrape's own connection may be the longest
# waiting when the flood's next ones come in before its request is read (seen
# under load: an empty reply): the daemon must go on answering, a scrape that
# was displaced is tried again, as Prometheus would at its next interval.
for ((i = 1; i <= 5; i++)); do
	wait_until 60 "scrape $i of 5 answered with every HTTP connection in use" answers_200
done
wait_until 60 "reads counted during the flood" scraped "$READS" '>' "$before" 0
stop_flood fds
t0=$(now_ms)
wait_until 60 "a 200 after the flood closed" answers_200
note "answered $(($(now_ms) - t0))ms after the flood closed"
if grep -q 'Too many open files' "$DAEMON_LOG"; then
	fail "descriptors ran out at the limit the daemon asked for:"$'\n'"$(grep 'Too many open files' "$DAEMON_LOG" | head -n 3)"
fi
n=$(grep -c 'warning: All [0-9]* HTTP connections are in use' "$DAEMON_LOG")
((n <= 10)) || fail "the warning was logged $n times: not rate-limited"
note "warning logged $n time(s): $(grep -m 1 'warning: All [0-9]* HTTP connections are in use' "$DAEMON_LOG")"
stop_daemon TERM 5

echo "PASS: $TEST_NAME"
