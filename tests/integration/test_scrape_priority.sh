#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Scrapes under a flood of status-page views (issue 28). One of two targets
# hangs (hangfs, frozen: its lane sits in the kernel throughout) while 48
# keep-alive clients, 16 from each of 127.0.0.2-127.0.0.4, ask for /,
# /status.json and /readyz back to back (page_flood.py). Meanwhile, from
# 127.0.0.1, each on a new connection:
#   - every scrape of /metrics is answered 200 with the whole page: text that
#     promtool accepts, and OpenMetrics with gzip (Prometheus' headers) that
#     inflates to a page ending in "# EOF";
#   - the pages are rendered at most every 250 ms each, as iopulse(8) says
#     (iopulse_http_status_renders_total against the seconds between the two
#     scrapes that read it), while iopulse_http_requests_total counts more
#     requests for them than renders: the flood is answered from the kept ones;
#   - the flood's requests are answered all along, whole and right.
# Nothing here is timed: how fast a scrape is answered under the flood is
# bench/scrape_flood.sh's to measure.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"

require_cmd curl promtool gzip /usr/bin/python3
require_disk "$WORK"

OTHERS=127.0.0.2,127.0.0.3,127.0.0.4
/usr/bin/python3 -c '
import socket, sys
for a in sys.argv[1].split(","):
    socket.socket().bind((a, 0))' "$OTHERS" 2>/dev/null ||
	skip "cannot bind to $OTHERS (loopback is not 127.0.0.0/8 here)"
ACCEPT_OM='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
SCRAPES=20

hangfs_mount
CFG="$WORK/iopulse.yaml"
hung_config "$CFG" "" "$WORK/ok"
start_daemon "$CFG"

readyz_says() {
	curl -sS --max-time 10 "$(url /readyz)" | grep -q "$1"
}
wait_until 60 "both targets up (/readyz ready)" readyz_says '^ready$'
kill -USR1 "$HANGFS_PID"
wait_hangfs 60 1 frozen
wait_until 60 "target hung stuck in /readyz" readyz_says '^hung: stuck: '

# ---- the flood ------------------------------------------------------------------

STATE="$WORK/flood.state"
/usr/bin/python3 "$SOURCE_DIR/tests/integration/page_flood.py" "$DAEMON_PORT" "$OTHERS" 16 \
	"$STATE" 120 &
FLOOD=$!
on_exit kill "$FLOOD"
wait_until 60 "every flood connection answered once" test -s "$STATE"

# flood_says KEY: the flood's figure KEY ("replies", "replies /readyz", "errors").
flood_says() {
	sed -n "s|^$1 \([0-9]*\)$|\1|p" "$STATE"
}

# counts: the pages' renders and requests so far (RENDERS, REQUESTS), from a
# scrape (PAGE).
counts() {
	scrape_metrics
	RENDERS=$(awk '/^iopulse_http_status_renders_total\{/ { n += $NF } END { print n + 0 }' "$PAGE")
	REQUESTS=$(awk '/^iopulse_http_requests_total\{handler="(landing|status_json|readyz)"/ { n += $NF }
		END { print n + 0 }' "$PAGE")
}

t0=$(now_ms)
counts
renders0=$RENDERS requests0=$REQUESTS replies0=$(flood_says replies)
for ((i = 1; i <= SCRAPES; i++)); do
	require_alive
	scrape_metrics
	promtool check metrics <"$PAGE" >"$WORK/promtool.out" 2>&1 ||
		fail "scrape $i under the flood: promtool check metrics:"$'\n'"$(cat "$WORK/promtool.out")"
	grep -q '^iopulse_target_up{target="hung"} 0$' "$PAGE" ||
		fail "scrape $i under the flood does not say target hung is down: $(grep '^iopulse_target_up' "$PAGE")"
	curl -fsS --max-time 30 -H "Accept: $ACCEPT_OM" -H 'Accept-Encoding: gzip' \
		-o "$WORK/om.gz" "$(url /metrics)" || fail "OpenMetrics scrape $i under the flood failed (curl status $?)"
	gzip -dc <"$WORK/om.gz" >"$WORK/om.txt" || fail "OpenMetrics scrape $i: not a whole gzip member"
	[[ $(tail -n 1 "$WORK/om.txt") == '# EOF' ]] ||
		fail "OpenMetrics scrape $i: does not end with '# EOF': $(tail -c 40 "$WORK/om.txt")"
	sleep 0.1
done
counts
t1=$(now_ms)
replies1=$(flood_says replies)
note "$((2 * SCRAPES)) scrapes under the flood, all 200, whole and valid"

# ---- what the daemon and the flood counted ----------------------------------------

renders=$((RENDERS - renders0)) requests=$((REQUESTS - requests0))
# At most one render of each of the three pages every 250 ms between the two
# reads of the counters: for each, a first one, then one per 250 ms (249: the
# daemon's clock counts whole milliseconds).
most=$((3 * ((t1 - t0) / 249 + 1)))
note "in $((t1 - t0))ms: $requests status requests answered, $renders renders (at most $most)"
((renders <= most)) ||
	fail "$renders status renders in $((t1 - t0))ms of flood: more than one per page every 250 ms ($most)"
((requests > renders)) ||
	fail "$requests status requests and $renders renders: the flood was not answered from kept renders"
((replies1 > replies0)) ||
	fail "the flood had no reply while the scrapes ran ($replies0 before, $replies1 after)"

kill -TERM "$FLOOD"
reap "$FLOOD" "page flood" 10
[[ $(flood_says errors) == 0 ]] || fail "the flood had wrong replies:"$'\n'"$(cat "$STATE")"
for path in / /status.json /readyz; do
	n=$(flood_says "replies $path")
	((n > 0)) || fail "the flood had no reply for $path:"$'\n'"$(cat "$STATE")"
done
note "flood: $(paste -sd' ' "$STATE")"
require_alive

echo "PASS: $TEST_NAME"
