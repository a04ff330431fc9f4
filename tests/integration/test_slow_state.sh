#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A target slower than its own baseline is "slow"; one that hangs is "stuck";
# one that goes away is "down" with a reason code; each state with the time it
# began, the same in /status.json and in /metrics. The target is a directory on
# hangfs (tests/integration/hangfs.c: a FUSE pass-through that can be made slow,
# SIGRTMIN+3, and fast again, SIGRTMIN+4, or frozen, SIGUSR1, and thawed,
# SIGUSR2), pinged once a second with a 3s timeout and a baseline warm-up of one
# minute. A second target in a directory of its own goes away.
#   1. The second target's directory is moved away: down, reason "missing",
#      since the moment it went, one reason series saying so.
#   2. After a minute of pings the read's baseline appears
#      (iopulse_probe_latency_baseline_seconds), the ratio near 1: up.
#   3. hangfs slow (every I/O 30ms longer, far over 4x the baseline and the 1ms
#      floor): the target becomes slow (at the first slow minute: slow_minutes 1,
#      the unit tests prove the hysteresis) in /status.json and
#      iopulse_target_state{state="slow"}, reason "slow" and the figures in
#      words, since within the slow phase, ratio over iopulse_target_slow_factor;
#      still up and ready.
#   4. hangfs fast again: up (at the first good minute: ok_minutes 1), reason
#      "none", since after the change.
#   5. hangfs frozen: stuck, reason "stuck", since about the read's start plus
#      its timeout; the recent latency and the ratio stay there (at least the
#      stuck read's age), not absent. Thawed: up again.
# Skipped without hangfs (libfuse3 missing at build time), /dev/fuse, or a kernel
# or container that lets us mount FUSE.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

# Every read, write and sync waits this long while hangfs is slow: a FUSE read
# takes some 50us to 1ms here, so this is 30x to 600x the baseline.
export HANGFS_DELAY_US=30000
# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"
require_cmd curl python3 promtool
require_disk "$WORK"
hangfs_mount

GONE="$WORK/gone"
mkdir "$GONE"
cat >"$WORK/slow.yaml" <<EOF
splay: false
targets:
  - name: hung
    directory: $(yaml_str "$MNT")
    max_duty_cycle: 100%
    max_write_per_day: 0
    size: 1MiB
    direct: true
    baseline_warmup: 1m
    slow_floor: 1ms
    slow_minutes: 1
    ok_minutes: 1
  - name: gone
    directory: $(yaml_str "$GONE")
    max_duty_cycle: 100%
    max_write_per_day: 0
    size: 1MiB
probes:
  - name: ping
    type: ping
    target: hung
    op: read
    interval: 1s
    timeout: 3s
  - name: gone
    type: ping
    target: gone
    op: read
    interval: 1s
EOF

# look TARGET: one request each of /status.json and /metrics (within 10s: they
# answer from memory, a hung target included), and what they say of TARGET and
# of its probe's read, as shell variables:
#   J_STATE J_SINCE J_CODE    /status.json: state, since, reason_code
#   J_REASON                  /status.json: the reason in words
#   J_RATIO J_SLOW            its probe op's ratio (none: null) and slow
#   M_STATE M_SINCE M_REASON  /metrics: the state whose iopulse_target_state is 1
#                             ("many" when not exactly one), since, and the
#                             reason of iopulse_target_reason_info ("many": not one)
#   M_UP M_FACTOR M_FLOOR     iopulse_target_up, _slow_factor, _slow_floor_seconds
#   M_BASE M_RECENT M_RATIO   the read's baseline and recent p50, its ratio
#                             ("absent" when there is no series)
#   M_NAN                     the number of NaN or Inf values on the page
LOOKED=0
look() {
	local rc=0
	LOOKED=$((LOOKED + 1))
	curl -fsS --max-time 10 -o "$WORK/status.$LOOKED.json" "$(url /status.json)" || rc=$?
	((rc == 0)) || fail "GET /status.json failed (curl status $rc)"
	curl -fsS --max-time 10 -o "$WORK/metrics.$LOOKED.prom" "$(url /metrics)" || rc=$?
	((rc == 0)) || fail "GET /metrics failed (curl status $rc)"
	LOOK=$(python3 - "$WORK/status.$LOOKED.json" "$WORK/metrics.$LOOKED.prom" "$1" <<'EOF'
import json, re, shlex, sys

status = json.load(open(sys.argv[1]))
target = sys.argv[3]
t = next(x for x in status["targets"] if x["name"] == target)
op = next((p for p in t["probes"] if p["op"] == "read"), {})
series = []
nan = 0
for line in open(sys.argv[2]):
    if line.startswith("#") or not line.strip():
        continue
    m = re.match(r'([a-z_:]+)(?:\{(.*)\})? (\S+)$', line.strip())
    if not m:
        continue
    labels = dict(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
    v = float(m.group(3))
    nan += v != v or v in (float("inf"), float("-inf"))
    series.append((m.group(1), labels, v))

def find(name, **want):
    return [(l, v) for n, l, v in series if n == name and all(l.get(k) == w for k, w in want.items())]

def one(name, **want):
    got = find(name, **want)
    return repr(got[0][1]) if len(got) == 1 else "absent"

states = [l["state"] for l, v in find("iopulse_target_state", target=target) if v == 1]
reasons = [l["reason"] for l, v in find("iopulse_target_reason_info", target=target)]
read = dict(probe=op.get("probe", ""), target=target, op="read")
ratio = op.get("ratio")
out = {
    "J_STATE": t["state"], "J_SINCE": repr(t["since"]), "J_CODE": t["reason_code"],
    "J_RATIO": "null" if ratio is None else repr(ratio), "J_SLOW": str(op.get("slow")).lower(),
    "M_STATE": states[0] if len(states) == 1 else "many",
    "M_SINCE": one("iopulse_target_state_since_timestamp_seconds", target=target),
    "M_REASON": reasons[0] if len(reasons) == 1 else "many",
    "M_UP": one("iopulse_target_up", target=target),
    "M_FACTOR": one("iopulse_target_slow_factor", target=target),
    "M_FLOOR": one("iopulse_target_slow_floor_seconds", target=target),
    "M_BASE": one("iopulse_probe_latency_baseline_seconds", percentile="50", **read),
    "M_RECENT": one("iopulse_probe_latency_recent_seconds", percentile="50", **read),
    "M_RATIO": one("iopulse_probe_latency_ratio", **read),
    "M_NAN": str(nan),
}
for k, v in out.items():
    assert re.fullmatch(r"[A-Za-z0-9_.+-]+", v), (k, v)
    print(f"{k}={v}")
print(f"J_REASON={shlex.quote(t['reason'])}")
EOF
	) || fail "cannot read /status.json and /metrics of target $1"
	eval "$LOOK"
	((M_NAN == 0)) || fail "NaN or Inf on /metrics: $WORK/metrics.$LOOKED.prom"
}

# in_state TARGET STATE CODE: both pages say TARGET is in STATE for CODE.
in_state() {
	look "$1"
	[[ $J_STATE == "$2" && $M_STATE == "$2" && $J_CODE == "$3" && $M_REASON == "$3" ]]
}

# near A B: within a millisecond (the precision of /status.json's since).
near() {
	awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; exit !(d < 0.001 && d > -0.001) }'
}

# since_between LOW HIGH: the state began within [LOW, HIGH] (Unix seconds), the
# same in both pages.
since_between() {
	near "$J_SINCE" "$M_SINCE" || fail "since is $J_SINCE in /status.json, $M_SINCE in /metrics"
	if ! num "$M_SINCE" '>=' "$1" || ! num "$M_SINCE" '<=' "$2"; then
		fail "$M_STATE since $M_SINCE, not within [$1, $2]"
	fi
}

now_s() {
	echo "$EPOCHREALTIME"
}

# formats WHEN: the page as text (promtool-clean), OpenMetrics and protobuf: the
# same series in each (tests/integration/promcheck.py), the new families in
# them. A series could come or go between the three requests: tried 5 times.
PC=(python3 "$SOURCE_DIR/tests/integration/promcheck.py")
formats() {
	local tries=0 text="$WORK/fmt.txt" om="$WORK/fmt.om" pb="$WORK/fmt.pb" lint a b out
	while :; do
		tries=$((tries + 1))
		curl -fsS --max-time 10 -H 'Accept: application/openmetrics-text;version=1.0.0' \
			-o "$om" "$(url /metrics)" || fail "$1: OpenMetrics scrape failed"
		curl -fsS --max-time 10 -o "$text" "$(url /metrics)" || fail "$1: text scrape failed"
		curl -fsS --max-time 10 -H "Accept: $ACCEPT_PB" -o "$pb" "$(url /metrics)" ||
			fail "$1: protobuf scrape failed"
		lint=$(promtool check metrics <"$text" 2>&1) || fail "$1: promtool check metrics:"$'\n'"$lint"
		[[ -z $lint ]] || fail "$1: promtool check metrics has findings:"$'\n'"$lint"
		a=$("${PC[@]}" series "$text" 2>&1) || fail "$1: text page: $a"
		b=$("${PC[@]}" series "$om" --om 2>&1) || fail "$1: OpenMetrics page: $b"
		if [[ $a == "$b" ]] && out=$("${PC[@]}" pb "$pb" "$text" 2>&1); then
			break
		fi
		((tries < 5)) || fail "$1: the formats disagree: ${out:-text and OpenMetrics differ}"
	done
	for m in "$@"; do
		[[ $m == "$1" ]] && continue
		grep -q "^$m{" <<<"$a" || fail "$1: no $m on the page"
	done
}
ACCEPT_PB='application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited'

t_start=$(now_s)
start_daemon "$WORK/slow.yaml"

# ---- 1. a target that goes away: down, missing ----------------------------------

wait_until 60 "target gone up" in_state gone up none
wait_until 60 "target hung up" in_state hung up none
since_between "$t_start" "$(now_s)"
num "$M_FACTOR" '==' 4 || fail "iopulse_target_slow_factor is $M_FACTOR, want the default 4"
num "$M_FLOOR" '==' 0.001 || fail "iopulse_target_slow_floor_seconds is $M_FLOOR, want 0.001"
t0=$(now_s)
mv "$GONE" "$GONE.away"
wait_until 60 "target gone down, reason missing" in_state gone down missing
since_between "$t0" "$(now_s)"
since_gone=$J_SINCE
num "$M_UP" '==' 0 || fail "iopulse_target_up of the missing target is $M_UP"
grep -q '^gone: down: ' <(curl -sS --max-time 10 "$(url /readyz)") ||
	fail "/readyz does not say target gone is down"
note "gone: down since $since_gone, reason missing"

# ---- 2. the baseline --------------------------------------------------------------

# Both sides: /status.json is read before /metrics, so a tick between the two
# can give the page its first baseline after the JSON was copied.
has_baseline() {
	look hung
	[[ $M_BASE != absent && $J_RATIO != null ]]
}
wait_until 200 "a baseline of the read (after a minute of pings)" has_baseline
[[ $J_STATE == up && $M_STATE == up ]] || fail "state $J_STATE/$M_STATE with a fresh baseline"
[[ $M_RECENT != absent && $M_RATIO != absent && $J_RATIO != null ]] ||
	fail "recent $M_RECENT, ratio $M_RATIO/$J_RATIO next to a baseline, with pings every second"
num "$M_RATIO" '<' 4 || fail "ratio $M_RATIO before anything was slowed"
# The slowdown must be far over the factor for this test to mean anything.
num "$M_BASE" '<' 0.005 ||
	skip "FUSE reads take ${M_BASE}s here: the 30ms slowdown would not be 6x their baseline"
look gone
[[ $J_STATE == down && $J_SINCE == "$since_gone" ]] ||
	fail "target gone: $J_STATE since $J_SINCE, want still down since $since_gone"
look hung
formats "with a baseline" iopulse_probe_latency_baseline_seconds \
	iopulse_probe_latency_recent_seconds iopulse_probe_latency_ratio \
	iopulse_target_state iopulse_target_reason_info \
	iopulse_target_state_since_timestamp_seconds iopulse_target_slow_factor \
	iopulse_target_slow_floor_seconds
note "baseline p50 ${M_BASE}s, recent ${M_RECENT}s, ratio $M_RATIO; text, OpenMetrics, protobuf agree"

# ---- 3. slow --------------------------------------------------------------------

t1=$(now_s)
kill -s RTMIN+3 "$HANGFS_PID"
wait_hangfs 60 1 'slow ('
# Slow at a minute mark: within two minutes; a ceiling for a loaded machine.
wait_until 400 "target hung slow, reason slow" in_state hung slow slow
t2=$(now_s)
since_between "$t1" "$t2"
num "$M_RATIO" '>' "$M_FACTOR" || fail "slow with a ratio of $M_RATIO (factor $M_FACTOR)"
num "$J_RATIO" '>' "$M_FACTOR" || fail "/status.json: slow with a ratio of $J_RATIO"
[[ $J_SLOW == true ]] || fail "/status.json: the read is not slow while the target is"
[[ $J_REASON =~ ^probe\ ping:\ reads\ p50\ [0-9.]+\ ms,\ [0-9.]+x\ its\ baseline\ [0-9.]+\ (µs|ms)$ ]] ||
	fail "/status.json: the slow reason does not say the figures: '$J_REASON'"
num "$M_RECENT" '>' "$M_FLOOR" || fail "slow with a recent p50 of $M_RECENT (floor $M_FLOOR)"
num "$M_UP" '==' 1 || fail "iopulse_target_up is $M_UP while slow, want 1 (slow is up)"
# (not ready all the same: target gone is down)
curl -sS --max-time 10 -o "$WORK/readyz.txt" "$(url /readyz)" || fail "GET /readyz failed"
if ! grep -q '^gone: down: ' "$WORK/readyz.txt" || grep -q '^hung:' "$WORK/readyz.txt"; then
	fail "/readyz while hung is slow and gone down: $(cat "$WORK/readyz.txt")"
fi
since_slow=$J_SINCE
# The state stays, and keeps its since.
look hung
[[ $J_STATE == slow && $M_STATE == slow && $J_SINCE == "$since_slow" ]] ||
	fail "slow since $since_slow, then $J_STATE/$M_STATE since $J_SINCE"
near "$M_SINCE" "$since_slow" || fail "slow since $since_slow, then since $M_SINCE in /metrics"
note "slow since $since_slow ($(awk -v a="$since_slow" -v b="$t1" 'BEGIN { printf "%.0f", a - b }')s after the slowdown): ratio $M_RATIO, recent ${M_RECENT}s"

# ---- 4. fast again ---------------------------------------------------------------

t3=$(now_s)
kill -s RTMIN+4 "$HANGFS_PID"
wait_hangfs 60 1 'fast'
# Good again at the first good minute (a whole one): within two minutes.
wait_until 400 "target hung up again" in_state hung up none
since_between "$t3" "$(now_s)"
note "up again since $J_SINCE, ratio $M_RATIO"

# ---- 5. stuck ---------------------------------------------------------------------

t4=$(now_s)
kill -USR1 "$HANGFS_PID"
wait_hangfs 60 1 frozen
wait_hangfs 60 1 'read blocked'
wait_until 60 "target hung stuck, reason stuck" in_state hung stuck stuck
# Stuck when the read reached its 3s timeout: it started after the freeze.
since_between "$(awk -v t="$t4" 'BEGIN { printf "%.6f", t + 3 - 0.5 }')" "$(now_s)"
since_stuck=$J_SINCE
# While it hangs the read waits on it: its recent latency is at least its age,
# and the ratio stays; neither goes absent. Until the read is 6s old.
n=0
while :; do
	look hung
	n=$((n + 1))
	[[ $J_STATE == stuck && $M_STATE == stuck && $J_SINCE == "$since_stuck" ]] ||
		fail "stuck since $since_stuck, then $J_STATE/$M_STATE since $J_SINCE"
	[[ $M_RECENT != absent && $M_RATIO != absent && $J_RATIO != null ]] ||
		fail "recent $M_RECENT, ratio $M_RATIO/$J_RATIO while the read hangs"
	num "$M_RECENT" '>=' 3 || fail "recent p50 $M_RECENT while the read hangs past its 3s timeout"
	num "$M_UP" '==' 0 || fail "iopulse_target_up is $M_UP while stuck"
	num "$M_RECENT" '<' 6 || break
	sleep 0.5
done
formats "stuck" iopulse_probe_latency_recent_seconds iopulse_probe_latency_ratio
note "stuck since $since_stuck ($n looks): recent ${M_RECENT}s, ratio $M_RATIO"
kill -USR2 "$HANGFS_PID"
wait_hangfs 60 1 thawed
wait_until 60 "target hung up after the thaw" in_state hung up none
note "pass: up again since $J_SINCE"
