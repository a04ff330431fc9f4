#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Every shape of storage regression, end to end, side by side (issue 29 §6):
# the real daemon (state file on), a real Prometheus loading the SHIPPED
# dashboards/iopulse.rules.yml unchanged and a real Alertmanager running the
# SHIPPED dashboards/alertmanager.yml (receiver and group timers as in
# test_alerting.sh, through alerting.sh), one of each for all the shapes at
# once, so that the rules' windows are waited out once, not once per shape.
#
# Five targets, each a directory on a hangfs mount of its own
# (tests/integration/hangfs.c) over one tmpfs of the test's own, so that no
# latency here is the build disk's; each read-pinged every 500ms (timeout 10s):
#   control  2ms on every read, write and fdatasync from the start (hangfs'
#            slow mode set before the daemon starts: a FIXED latency, never the
#            machine's disk), also write+fdatasync-pinged every 3s: must get NO
#            notification at all, no alert even pending, and stay up;
#   tail     FUSE's own latency, then one read in 20 (5%) delayed by tens of
#            milliseconds (hangfs' HANGFS_SLOW_ONE_IN; the delay: 30ms, or twice
#            the daemon's slow-I/O threshold for the op if that is more), the
#            median unchanged: slow for reason `tail` (and no other), one
#            warning notification naming the share of reads over the threshold;
#   stalls   FUSE's own latency, then frozen for 3s (SIGUSR1, SIGUSR2) every
#            45s, each freeze far shorter than the 10s timeout: slow for reason
#            `stalls`, never `slow`, never stuck; at least a warning naming the
#            stalls and how long they were;
#   fast     FUSE's own latency (tens to a few hundred microseconds), then every
#            I/O delayed by D: 1.5 times the larger of 4x its baseline p50 and
#            its floor as the daemon exports it (slow_floor auto: the baseline
#            p99, at least 100us); under 1ms wherever this machine's FUSE
#            path allows it (the test says when it does not): slow for reason
#            `slow`, a notification naming the op's p50 and its ratio to the
#            baseline, and iopulse_probe_slow_floor_seconds is the baseline p99
#            (at least 100us): derived, not the old fixed 1ms;
#   restart  2ms from the start, then 40ms (20x): slow (`slow`), then the
#            critical notification; then, once the state file was saved with
#            it, the daemon is restarted (SIGTERM, the same config, state file
#            and port) in the middle of it: slow again
#            with the same since, never up in between, its baseline the one of
#            before the incident (not learned from it), the critical told
#            firing once and never "resolved".
# Every incident starts as soon as its target has a baseline and lasts until
# the end: no alert of this test may be told "resolved" (but a critical of
# `fast` handing over to its warning, the ladder's own way). No annotation
# says +Inf, NaN, "<no value>" or holds a template error.
#
# Keys shortened for time, the judgement's own keys left at their defaults
# (slow_factor 4, slow_floor auto, tail_factor 4, tail_share 2%, stall 1s,
# slow_minutes 2, ok_minutes 3): baseline_warmup 1m (3m for `tail`), for the
# default 10m would make the test 10 minutes longer; `tail` warms up longer
# because a tail's first minutes, before the judgement has 5 minutes of window,
# are not slow, and a baseline of 1 or 2 clean minutes would take their p99 in
# (with a day of history, as in production, they are a few minutes among
# 1440). Alertmanager's group_wait and group_interval are 5s and 10s, as in
# test_alerting.sh. Prometheus scrapes and evaluates every second.
#
# Asserts behaviour, never speed: each wait has a generous ceiling (the whole
# test about 12 minutes on a quiet machine, ceilings far over that), and the
# minutes from each cause to its notification are printed, not judged.
# Skipped without hangfs, /dev/fuse, or where FUSE or tmpfs cannot be mounted.
# IOPULSE_TEST_KEEP=1 keeps the directory (notifications.jsonl, states.tsv,
# every log) for a post-mortem.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"

# shellcheck source=alerting.sh
. "$(dirname "$0")/alerting.sh"

require_cmd /usr/bin/kill

TARGETS=(control tail stalls fast restart)
RESTART_US=40000 # the restart target's incident: 20x its 2ms

# hangfs_slow NAME US: NAME's hangfs slow, US microseconds per slowed request
# (a queued SIGRTMIN+3, hangfs.c), and wait until it says so.
hangfs_slow() {
	local n
	n=$(grep -cF "hangfs: slow ($2 us)" "${HANGFS_LOGS[$1]}" || true)
	/usr/bin/kill -s RTMIN+3 -q "$2" "${HANGFS_PIDS[$1]}" ||
		fail "cannot queue SIGRTMIN+3 ($2) to hangfs $1"
	wait_hangfs 60 $((n + 1)) "slow ($2 us)" "$1"
}

# ---- set-up -------------------------------------------------------------------

mount_tmpfs "$BACKING" 64m
for t in "${TARGETS[@]}"; do
	mkdir "$BACKING/$t"
done
HANGFS_DELAY_US=2000 hangfs_mount control "$BACKING/control"
HANGFS_DELAY_US=30000 HANGFS_SLOW_ONE_IN=20 hangfs_mount tail "$BACKING/tail"
hangfs_mount stalls "$BACKING/stalls"
hangfs_mount fast "$BACKING/fast"
HANGFS_DELAY_US=2000 hangfs_mount restart "$BACKING/restart"
hangfs_slow control 2000
hangfs_slow restart 2000

mkdir "$WORK/state"
CONF="$WORK/iopulse.yaml"
{
	cat <<-EOF
		splay: false
		state_directory: $(yaml_str "$WORK/state")
		targets:
	EOF
	for t in "${TARGETS[@]}"; do
		w=1m
		[[ $t != tail ]] || w=3m
		cat <<-EOF
			  - name: $t
			    directory: $(yaml_str "${HANGFS_MNTS[$t]}")
			    size: 1MiB
			    direct: true
			    max_duty_cycle: 100%
			    max_write_per_day: 0
			    baseline_warmup: $w
		EOF
	done
	echo "probes:"
	for t in "${TARGETS[@]}"; do
		echo "  - {name: ${t}_read, type: ping, target: $t, op: read, interval: 500ms, timeout: 10s}"
	done
	echo "  - {name: control_write, type: ping, target: control, op: write, sync: fdatasync, interval: 3s}"
} >"$CONF"

start_webhook
start_alertmanager
start_daemon "$CONF"
start_monitor
start_alerting_prometheus IopulseLatencyRegression
T_START=$(now_s)

# ---- conditions ------------------------------------------------------------------

# read_figure VAR NAME TARGET [LABEL=VALUE...]: the figure of TARGET's read
# ping in the last scrape ($PAGE) into VAR; status 1 when absent.
read_figure() {
	local var=$1 name=$2 t=$3 v
	shift 3
	v=$(value_of "$PAGE" "$name" probe="${t}_read" target="$t" op=read "$@") || return 1
	printf -v "$var" '%s' "$v"
}

# has_baseline TARGET: its read has a baseline p50 in the last scrape.
has_baseline() {
	local b
	read_figure b iopulse_probe_latency_baseline_seconds "$1" percentile=50
}

# status_of TARGET: /status.json's "STATE SINCE REASON_CODE" of TARGET, in
# STATUS_STATE, STATUS_SINCE, STATUS_CODE; status 1 when it cannot be read.
status_of() {
	local out
	out=$(scrape /status.json | python3 -c '
import json, sys
t = next(x for x in json.load(sys.stdin)["targets"] if x["name"] == sys.argv[1])
print(t["state"], repr(t["since"]), t["reason_code"])' "$1") || return 1
	read -r STATUS_STATE STATUS_SINCE STATUS_CODE <<<"$out"
}

# saved_after T: the daemon's log says the state file was saved at T + 1s or later.
saved_after() {
	local last
	last=$(sed -n 's/^\([0-9-]* [0-9:.]*\) .*State file .* saved.*/\1/p' "$DAEMON_LOG" | tail -n 1)
	[[ -n $last ]] || return 1
	num "$(date -d "$last" +%s.%N)" '>=' "$(awk -v t="$1" 'BEGIN { printf "%.3f", t + 1 }')"
}

# stall_loop PID: freeze hangfs PID for 3s every 45s, until killed (the shape
# is about time itself: these are its sleeps).
stall_loop() {
	while :; do
		kill -USR1 "$1" || exit 0
		sleep 3
		kill -USR2 "$1" || exit 0
		sleep 42
	done
}

# ---- the incidents, each as soon as its target has a baseline -------------------------

declare -A T_ON=() # target -> when its incident began
T_RESTART=
RESTART_CHECKED=
STALL_LOOP=
DONE=
FAST_NOTE=
deadline=$(($(now_ms) + 1800 * 1000))
while :; do
	helpers_alive
	require_alive
	(($(now_ms) < deadline)) || break
	# One file, not lib.sh's scrape_metrics' one a scrape: a second's loop for
	# many minutes.
	PAGE="$WORK/metrics.prom"
	scrape /metrics >"$PAGE" || fail "scrape of $(url /metrics) failed (curl status $?)"
	if [[ -z ${T_ON[stalls]:-} ]] && has_baseline stalls; then
		stall_loop "${HANGFS_PIDS[stalls]}" &
		helper_started $! "the stall loop"
		STALL_LOOP=$!
		T_ON[stalls]=$(now_s)
		note "stalls: a 3s freeze every 45s"
	fi
	if [[ -z ${T_ON[fast]:-} ]] && has_baseline fast; then
		read_figure FAST_B50 iopulse_probe_latency_baseline_seconds fast percentile=50
		read_figure FAST_B99 iopulse_probe_latency_baseline_seconds fast percentile=99
		read_figure FAST_FLOOR iopulse_probe_slow_floor_seconds fast ||
			fail "fast: no iopulse_probe_slow_floor_seconds with slow_floor auto"
		# The floor is derived: the baseline p99, at least 100us.
		awk -v f="$FAST_FLOOR" -v b="$FAST_B99" 'BEGIN {
			w = b > 0.0001 ? b : 0.0001; d = f - w; exit !(d < 1e-6 && d > -1e-6) }' ||
			fail "fast: floor ${FAST_FLOOR}s, want its baseline p99 ${FAST_B99}s (at least 100us)"
		FAST_US=$(awk -v b="$FAST_B50" -v f="$FAST_FLOOR" 'BEGIN {
			m = 4 * b > f ? 4 * b : f; d = int((1.5 * m - b) * 1e6 + 0.5)
			print d < 100 ? 100 : d }')
		FAST_NOTE="fast: baseline p50 ${FAST_B50}s, p99 ${FAST_B99}s, floor ${FAST_FLOOR}s; +${FAST_US}us per I/O"
		((FAST_US < 1000)) || FAST_NOTE+=" (NOT under 1ms: this machine's FUSE p99 is too high to show a sub-ms regression)"
		note "$FAST_NOTE"
		hangfs_slow fast "$FAST_US"
		T_ON[fast]=$(now_s)
	fi
	if [[ -z ${T_ON[restart]:-} ]] && has_baseline restart; then
		read_figure RESTART_B0 iopulse_probe_latency_baseline_seconds restart percentile=50
		state_is restart up || fail "restart is not up before its incident"
		hangfs_slow restart "$RESTART_US"
		T_ON[restart]=$(now_s)
		note "restart: baseline p50 ${RESTART_B0}s, now ${RESTART_US}us per I/O"
	fi
	if [[ -z ${T_ON[tail]:-} ]] && has_baseline tail; then
		read_figure TAIL_TH iopulse_probe_slow_io_threshold_seconds tail ||
			fail "tail: a baseline but no slow-I/O threshold"
		TAIL_US=$(awk -v t="$TAIL_TH" 'BEGIN { d = int(2 * t * 1e6 + 0.5); print d < 30000 ? 30000 : d }')
		((TAIL_US < 500000)) || fail "tail: slow-I/O threshold ${TAIL_TH}s, too high for a tail of tens of ms"
		hangfs_slow tail "$TAIL_US"
		T_ON[tail]=$(now_s)
		note "tail: 1 read in 20 +${TAIL_US}us (its slow-I/O threshold ${TAIL_TH}s)"
	fi
	# The restart, once the critical was told and the state file holds the
	# slow state: a save that began a second or more after its since (the
	# file is written once a minute; a restart before that save finds the
	# state of before, as iopulse(8) says).
	if [[ -n ${T_ON[restart]:-} && -z $T_RESTART ]] && state_is restart slow &&
		notified firing IopulseLatencyRegression critical restart &&
		status_of restart && [[ $STATUS_STATE == slow ]] && saved_after "$STATUS_SINCE"; then
		RESTART_SINCE=$STATUS_SINCE
		PORT=$DAEMON_PORT
		T_RESTART=$(now_s)
		stop_daemon TERM 10
		start_daemon "$CONF" --listen "127.0.0.1:$PORT"
		[[ $DAEMON_PORT == "$PORT" ]] || fail "the daemon serves on $DAEMON_PORT after the restart, not $PORT"
		note "restarted $(mins_since "${T_ON[restart]}" "$T_RESTART") into restart's incident (slow since $RESTART_SINCE)"
		grep -F 'state' "$DAEMON_LOG" | grep -iE 'restor|read' | head -5 || true
		continue
	fi
	if [[ -n $T_RESTART && -z $RESTART_CHECKED ]] && status_of restart && [[ $STATUS_STATE == slow ]]; then
		awk -v a="$STATUS_SINCE" -v b="$RESTART_SINCE" 'BEGIN { d = a - b; exit !(d < 0.001 && d > -0.001) }' ||
			fail "restart: slow since $STATUS_SINCE after the restart, since $RESTART_SINCE before"
		[[ $STATUS_CODE == slow ]] || fail "restart: slow for $STATUS_CODE after the restart, want slow"
		RESTART_CHECKED=$(now_s)
		note "restart: slow again $(mins_since "$T_RESTART" "$RESTART_CHECKED") after the restart, the same since"
	fi
	if [[ -n $RESTART_CHECKED && -z ${RESTART_B1:-} ]] &&
		read_figure b iopulse_probe_latency_baseline_seconds restart percentile=50; then
		RESTART_B1=$b
		num "$RESTART_B1" '<' "$(awk -v b="$RESTART_B0" 'BEGIN { print 2 * b }')" ||
			fail "restart: baseline p50 ${RESTART_B1}s after the restart, ${RESTART_B0}s before the incident: learned from it"
	fi
	if [[ -n ${RESTART_B1:-} ]] &&
		notified firing IopulseLatencyRegression warning tail &&
		notified firing IopulseLatencyRegression "" stalls &&
		notified firing IopulseLatencyRegression "" fast; then
		DONE=1
		break
	fi
	sleep 1
done
T_END=$(now_s)
if [[ -z $DONE ]]; then
	missing=
	for t in tail stalls fast; do
		notified firing IopulseLatencyRegression "" "$t" || missing+=" $t"
	done
	[[ -n $T_RESTART ]] || missing+=" restart (no critical, so no restart)"
	[[ -n $RESTART_CHECKED ]] || missing+=" restart (not slow again)"
	[[ -n ${RESTART_B1:-} ]] || missing+=" restart (no baseline after the restart)"
	fail "30 minutes and still waiting for:$missing"
fi
kill "$STALL_LOOP"
wait "$STALL_LOOP" 2>/dev/null || true
_forget_pid "$STALL_LOOP"
kill -USR2 "${HANGFS_PIDS[stalls]}"
# Control: no alert of it even pending, in Prometheus, over the whole test.
CONTROL_ALERTS=$(prom_query "max_over_time(ALERTS{target=\"control\"}[$((${T_END%.*} - ${T_START%.*} + 60))s])")
[[ -z $CONTROL_ALERTS ]] || fail "control had alerts in Prometheus: $CONTROL_ALERTS"

# ---- the checks --------------------------------------------------------------------

python3 - "$HOOK_LOG" "$STATES" "$T_RESTART" <<-'PY' ||
	import json, re, sys
	hook, states, t_restart = sys.argv[1], sys.argv[2], float(sys.argv[3])
	bad = []
	dur = r"\d+(\.\d+)?\s*(ns|us|µs|ms|s)\b"

	# ---- notifications: per target, the (alertname, severity, status) told
	notes = [json.loads(line) for line in open(hook)]
	told = {}   # target -> [(received, status, alertname, severity, text)]
	for n in notes:
	    if "invalid" in n:
	        bad.append(f"a notification that is not JSON: {n['invalid'][:200]!r}")
	        continue
	    for a in n["alerts"]:
	        l = a["labels"]
	        text = " ".join(a["annotations"].values())
	        told.setdefault(l.get("target", ""), []).append(
	            (n["received"], a["status"], l.get("alertname"), l.get("severity", ""), text))
	        for k, v in a["annotations"].items():
	            for word in ("+Inf", "-Inf", "NaN", "<no value>", "error expanding template", "%!"):
	                if word in v:
	                    bad.append(f"{l.get('target')} {l.get('alertname')}/{l.get('severity')} "
	                               f"annotation {k} says {word!r}: {v!r}")
	for t, rows in sorted(told.items()):
	    for r in rows:
	        print(f"# {t}: {r[1]} {r[2]}/{r[3]}: {r[4][:400]}")
	if told.get("control"):
	    bad.append(f"control was notified: {[(r[1], r[2], r[3]) for r in told['control']]}")

	def firing(t):
	    return [r for r in told.get(t, []) if r[1] == "firing"]

	def resolved(t):
	    return [r for r in told.get(t, []) if r[1] == "resolved"]

	def summary_of(t, sev):
	    for r in firing(t):
	        if r[2] == "IopulseLatencyRegression" and r[3] == sev:
	            return r[4]
	    return ""

	want = {
	    "tail": ({("IopulseLatencyRegression", "warning")},
	             [("the share of reads over the threshold", r"\d+(\.\d+)?% of reads over " + dur)]),
	    "stalls": ({("IopulseLatencyRegression", "warning"), ("IopulseLatencyRegression", "critical")},
	               [("the stalls and their length", r"stalls? of up to " + dur)]),
	    "fast": ({("IopulseLatencyRegression", "warning"), ("IopulseLatencyRegression", "critical")},
	             [("the op's p50 and its ratio", r"read p50 " + dur + r", \d+(\.\d+)?x its baseline " + dur)]),
	    "restart": ({("IopulseLatencyRegression", "critical")},
	                [("the op's p50 and its ratio", r"read p50 " + dur + r", \d+(\.\d+)?x its baseline " + dur)]),
	}
	for t, (allowed, pats) in want.items():
	    f = firing(t)
	    kinds = {(r[2], r[3]) for r in f}
	    if not f:
	        bad.append(f"{t}: never told firing")
	    if kinds - allowed:
	        bad.append(f"{t}: told firing {sorted(kinds - allowed)}, want only {sorted(allowed)}")
	    # One notification per severity: nothing told twice.
	    for k in kinds:
	        n = sum(1 for r in f if (r[2], r[3]) == k)
	        if n > 1:
	            bad.append(f"{t}: {'/'.join(k)} told firing {n} times")
	    for r in resolved(t):
	        # The ladder's own hand-over: fast's critical ends as its warning starts.
	        if not (t == "fast" and r[3] == "critical" and ("IopulseLatencyRegression", "warning") in kinds):
	            bad.append(f"{t}: {r[2]}/{r[3]} told resolved while the incident went on")
	    sev = "critical" if t == "restart" else next(
	        (s for s in ("warning", "critical") if ("IopulseLatencyRegression", s) in kinds), "")
	    text = summary_of(t, sev)
	    for name, pat in pats:
	        if text and not re.search(pat, text):
	            bad.append(f"{t}: the {sev} notification does not name {name} (/{pat}/): {text!r}")
	    if t == "restart" and f and min(r[0] for r in f) > t_restart:
	        bad.append("restart: the critical was told only after the restart")

	# ---- states
	seen = {}  # target -> [(time, state, since, reason)]
	for line in open(states):
	    tm, target, state, since, reason, prev = line.rstrip("\n").split("\t")
	    seen.setdefault(target, []).append((float(tm), state, since, reason))
	for t, rows in sorted(seen.items()):
	    print(f"# {t}: " + " -> ".join(f"{s}/{r}" for _, s, _, r in rows))
	def codes(t):
	    return {r for _, s, _, r in seen.get(t, []) if s == "slow"}
	def states_of(t):
	    return {s for _, s, _, _ in seen.get(t, [])}
	if states_of("control") - {"starting", "up"}:
	    bad.append(f"control was {sorted(states_of('control') - {'starting', 'up'})}")
	if codes("tail") != {"tail"}:
	    bad.append(f"tail: slow for {sorted(codes('tail'))}, want tail alone")
	if "stalls" not in codes("stalls") or "slow" in codes("stalls"):
	    bad.append(f"stalls: slow for {sorted(codes('stalls'))}, want stalls (and never the median)")
	if "slow" not in codes("fast"):
	    bad.append(f"fast: slow for {sorted(codes('fast'))}, want slow (the median)")
	if codes("restart") != {"slow"}:
	    bad.append(f"restart: slow for {sorted(codes('restart'))}, want slow (the median)")
	for t in ("tail", "stalls", "fast", "restart"):
	    if states_of(t) & {"stuck", "down"}:
	        bad.append(f"{t} was {sorted(states_of(t) & {'stuck', 'down'})}")
	after = [s for tm, s, _, _ in seen.get("restart", []) if tm > t_restart]
	if "up" in after:
	    bad.append(f"restart: {' -> '.join(after)} after the restart, up in between")
	for b in bad:
	    print("FAIL: " + b)
	sys.exit(1 if bad else 0)
	PY
	fail "the shapes' notifications or states are not as they should be (above)"

for t in tail stalls fast restart; do
	note "$t: notified $(mins_since "${T_ON[$t]}" "$(first_notified firing IopulseLatencyRegression "" "$t")") after its incident began"
done
note "$FAST_NOTE"
note "restart: baseline p50 ${RESTART_B0}s before the incident, ${RESTART_B1}s after the restart"
note "pass in $(mins_since "$T_START" "$T_END") (from Prometheus' start)"
