#!/bin/bash
# SPDX-License-Identifier: MIT
#
# RLIMIT_NOFILE too low for the schedule (ulimit -n 16, soft and hard, so it
# cannot be raised): run exits 71 (EX_OSERR) at start, with a message naming
# the figure needed and the limit, instead of failing half-way ("Too many open
# files" from the scheduler's event loop). With the limit at that figure, it
# starts, probes and serves /metrics: the figure is enough.
#
# The figure counts what each probe kind holds (issue 22): 50 verify probes,
# two descriptors apiece (their file and its lock), refused one below the
# figure and all opened at it; the HTTP connection limit leaves the schedule
# what it holds; a reload that needs more than the limit leaves is refused and
# the running schedule goes on.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

require_cmd curl
require_cmd python3
require_disk "$WORK"

CFG="$WORK/iopulse.yaml"
ping_config "$CFG" "$WORK/dir" 1MiB
REAL=$IOPULSE

# needed LOG: the figure LOG's refusal names (sets NEED).
needed() {
	NEED=$(sed -n 's/.*needs at least \([0-9]*\) descriptors.*/\1/p' "$1")
	[[ -n $NEED ]] || fail "no figure in $1:"$'\n'"$(cat "$1")"
}

# A wrapper that runs iopulse under `ulimit -n $NOFILE` (soft and hard).
cat >"$WORK/limited" <<EOF
#!/bin/bash
ulimit -n "\$NOFILE" || exit 99
exec "$REAL" "\$@"
EOF
chmod +x "$WORK/limited"

# refused N CFG LOG: run on CFG under ulimit -n N must exit 71 (EX_OSERR), its
# message in LOG.
refused() {
	local rc=0
	NOFILE=$1 "$WORK/limited" run --config "$2" --listen 127.0.0.1:0 >"$3" 2>&1 || rc=$?
	((rc == 71)) || fail "$2 under ulimit -n $1: exit status $rc, want 71:"$'\n'"$(cat "$3")"
}

# start_limited N CFG: start_daemon on CFG under ulimit -n N.
start_limited() {
	export NOFILE=$1
	IOPULSE="$WORK/limited"
	start_daemon "$2"
	IOPULSE=$REAL
}

refused 16 "$CFG" "$WORK/short.log"
grep -q 'error: RLIMIT_NOFILE is 16 (hard limit 16): this configuration needs at least [0-9]* descriptors' \
	"$WORK/short.log" || fail "run under ulimit -n 16 does not say what it needs:"$'\n'"$(cat "$WORK/short.log")"
need=$(sed -n 's/.*needs at least \([0-9]*\) descriptors.*/\1/p' "$WORK/short.log")
note "ulimit -n 16: exit 71, $(sed 's/.*error: //' "$WORK/short.log")"

# A socket passed by the service manager is the listener, not one more: the
# figure is the same as with a listener of the daemon's own. Both with stdio
# alone open besides (the test's runner may pass descriptors of its own).
CLEAN=(python3 -c 'import os, sys; os.closerange(3, 65536); os.execvp(sys.argv[1], sys.argv[1:])')
rc=0
NOFILE=16 "${CLEAN[@]}" "$WORK/limited" run --config "$CFG" --listen 127.0.0.1:0 \
	>"$WORK/bound.log" 2>&1 || rc=$?
((rc == 71)) || fail "run under ulimit -n 16, stdio alone open: exit status $rc, want 71"
needed "$WORK/bound.log"
rc=0
NOFILE=16 "${CLEAN[@]}" python3 "$SOURCE_DIR/tests/integration/listen_fds.py" "$WORK/port" 1 tcp \
	"$WORK/limited" run --config "$CFG" >"$WORK/activated.log" 2>&1 || rc=$?
((rc == 71)) || fail "run on a passed socket under ulimit -n 16: exit status $rc, want 71:"$'\n'"$(cat "$WORK/activated.log")"
grep -q "needs at least $NEED descriptors" "$WORK/activated.log" ||
	fail "a passed socket changes the figure from $NEED:"$'\n'"$(cat "$WORK/activated.log")"

# At the figure: it starts, the target comes up, /metrics is served.
start_limited "$need" "$CFG"
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

# ---- 50 verify probes on one directory target --------------------------------

# verify_config FILE DIR N: a directory target t1 at DIR with N verify probes.
verify_config() {
	local file=$1 dir=$2 n=$3 i
	mkdir -p "$dir"
	target_config "$file" "$dir" 1MiB
	for ((i = 1; i <= n; i++)); do
		cat >>"$file" <<-EOF
			  - name: v$i
			    type: verify
			    target: t1
			    interval: 1s
			    blocks: 2
			    blocks_per_run: 1
		EOF
	done
}

# verified N: every one of v1..vN has checked blocks (scrapes, sets PAGE).
verified() {
	local i v
	scrape_metrics
	for ((i = 1; i <= $1; i++)); do
		v=$(sample "$PAGE" "iopulse_verify_blocks_checked_total{probe=\"v$i\",target=\"t1\"}") ||
			return 1
		num "$v" '>' 0 || return 1
	done
}

V50="$WORK/v50.yaml"
verify_config "$V50" "$WORK/vdir" 50
refused 16 "$V50" "$WORK/v16.log"
needed "$WORK/v16.log"
v_need=$NEED
note "50 verify probes: $(sed 's/.*error: //' "$WORK/v16.log")"

# One below the figure: refused, naming it.
refused "$((v_need - 1))" "$V50" "$WORK/vshort.log"
grep -q "RLIMIT_NOFILE is $((v_need - 1)) .*needs at least $v_need descriptors" "$WORK/vshort.log" ||
	fail "ulimit -n $((v_need - 1)) does not name the figure $v_need:"$'\n'"$(cat "$WORK/vshort.log")"

# At the figure: every verify probe opens its file and checks its blocks.
start_limited "$v_need" "$V50"
wait_until 60 "all 50 verify probes to check blocks with ulimit -n $v_need" verified 50
if grep -q "Too many open files" "$DAEMON_LOG"; then
	fail "EMFILE with 50 verify probes at ulimit -n $v_need:"$'\n'"$(cat "$DAEMON_LOG")"
fi
stop_daemon
note "ulimit -n $v_need: all 50 verify probes opened and checked"

# ---- the HTTP connection limit leaves the schedule what it holds -------------

# At 300 the server may admit connections: those it admits, plus what the
# daemon holds with every probe open, fit in the limit.
start_limited 300 "$V50"
wait_until 60 "all 50 verify probes to check blocks with ulimit -n 300" verified 50
held=$(find "/proc/$DAEMON_PID/fd" -mindepth 1 -maxdepth 1 | wc -l)
conns=$(sed -n 's/.*RLIMIT_NOFILE is 300: serving at most \([0-9]*\) HTTP connections at once.*/\1/p' \
	"$DAEMON_LOG")
[[ -n $conns ]] || fail "the HTTP connection limit is not logged at ulimit -n 300"
((conns + held <= 300)) ||
	fail "ulimit -n 300: $conns HTTP connections admitted while the daemon holds $held descriptors"
stop_daemon
note "ulimit -n 300: at most $conns HTTP connections, $held descriptors held"

# ---- a reload beyond the limit is refused -------------------------------------

V10="$WORK/v10.yaml"
verify_config "$V10" "$WORK/rdir" 10
refused 16 "$V10" "$WORK/r16.log"
needed "$WORK/r16.log"
start_limited "$NEED" "$V10"
wait_until 60 "10 verify probes to check blocks" verified 10
verify_config "$V10" "$WORK/rdir" 50
kill -HUP "$DAEMON_PID"
wait_until 60 "the reload to be applied or refused" \
	grep -q "Configuration reload\(ed\| failed\)" "$DAEMON_LOG"
grep -q "Configuration reload failed, the running schedule is unchanged: .*RLIMIT_NOFILE is $NEED: the new schedule needs [0-9]* descriptors" \
	"$DAEMON_LOG" ||
	fail "a reload to 50 verify probes at ulimit -n $NEED was not refused:"$'\n'"$(cat "$DAEMON_LOG")"
# The old schedule goes on: v1 keeps checking, v11 never started.
scrape_metrics
sample_into before "$PAGE" 'iopulse_verify_blocks_checked_total{probe="v1",target="t1"}'
wait_until 60 "v1 to go on checking after the refused reload" \
	scraped 'iopulse_verify_blocks_checked_total{probe="v1",target="t1"}' '>' "$before"
if has_series "$PAGE" 'iopulse_verify_blocks_checked_total{probe="v11",target="t1"}'; then
	fail "the refused reload started v11"
fi
if grep -q "Too many open files" "$DAEMON_LOG"; then
	fail "EMFILE after a refused reload:"$'\n'"$(cat "$DAEMON_LOG")"
fi
stop_daemon
note "ulimit -n $NEED: a reload to 50 verify probes refused, the 10 go on"
