#!/bin/bash
# SPDX-License-Identifier: MIT
#
# RLIMIT_NOFILE too low for the schedule (ulimit -n 16, soft and hard, so it
# cannot be raised): run exits 71 (EX_OSERR) at start, with a message naming
# the figure needed and the limit, instead of failing half-way ("Too many open
# files" from the scheduler's event loop). With the limit at that figure, it
# starts, probes and serves /metrics: the figure is enough.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

require_cmd curl
require_disk "$WORK"

CFG="$WORK/iopulse.yaml"
ping_config "$CFG" "$WORK/dir" 1MiB
REAL=$IOPULSE

# A wrapper that runs iopulse under `ulimit -n $NOFILE` (soft and hard).
cat >"$WORK/limited" <<EOF
#!/bin/bash
ulimit -n "\$NOFILE" || exit 99
exec "$REAL" "\$@"
EOF
chmod +x "$WORK/limited"

rc=0
NOFILE=16 "$WORK/limited" run --config "$CFG" --listen 127.0.0.1:0 >"$WORK/short.log" 2>&1 || rc=$?
((rc == 71)) || fail "run under ulimit -n 16: exit status $rc, want 71:"$'\n'"$(cat "$WORK/short.log")"
grep -q 'error: RLIMIT_NOFILE is 16 (hard limit 16): this configuration needs at least [0-9]* descriptors' \
	"$WORK/short.log" || fail "run under ulimit -n 16 does not say what it needs:"$'\n'"$(cat "$WORK/short.log")"
need=$(sed -n 's/.*needs at least \([0-9]*\) descriptors.*/\1/p' "$WORK/short.log")
note "ulimit -n 16: exit 71, $(sed 's/.*error: //' "$WORK/short.log")"

# At the figure: it starts, the target comes up, /metrics is served.
export NOFILE=$need
IOPULSE="$WORK/limited"
start_daemon "$CFG"
IOPULSE=$REAL
wait_until 60 "p1 to read" scraped 'iopulse_probe_ios_total{probe="p1",target="t1",op="read"}' '>' 0 0
scrape_metrics
grep -q '^iopulse_target_up{target="t1"} 1$' "$PAGE" || fail "t1 is not up with ulimit -n $need"
# Scrapes at once fit too (the figure holds HTTP connections).
pids=()
for i in 1 2 3 4 5 6 7 8; do
	curl -fsS --max-time 60 -o "$WORK/par.$i" "$(url /metrics)" &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || fail "a concurrent scrape failed with ulimit -n $need"
done
if grep -q "Too many open files" "$DAEMON_LOG"; then
	fail "EMFILE with ulimit -n $need:"$'\n'"$(cat "$DAEMON_LOG")"
fi
stop_daemon
note "ulimit -n $need: started, probed, served 8 scrapes at once"
