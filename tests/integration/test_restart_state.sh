#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A restart does not end an incident (issue 29 §3). The target is a directory
# on hangfs (tests/integration/hangfs.c) at a fixed latency: 2ms for every read
# (its slow mode), 30ms during the incident (a queued SIGRTMIN+3), so that the
# healthy level does not depend on the machine's disk. Its read is pinged
# every 500ms with a baseline warm-up of one minute, and slow or good again
# after one minute (slow_minutes, ok_minutes: the hysteresis is the unit tests'
# and test_slow_state's; here it would only add minutes); the state file is in
# a directory of the test's own.
#   1. A few healthy minutes: a baseline near 2ms, the target up.
#   2. The incident: slow, since T; a save after that (the log says so), and
#      the file carries our header.
#   3. SIGTERM and start again: the log says what was restored; the baseline
#      is there at once, the one from before the incident (not the slow
#      level); the target is slow again, since T, in /status.json and
#      /metrics, and never up in between.
#   4. SIGKILL (a crash) after the next save, and start again: the same.
#   5. The disk fast again: up, against the baseline of before the incident.
#   6. A plain file that is not ours at the state file's name, then a
#      symbolic link to a state file of ours elsewhere: ignored at start (the
#      log says why, nothing is restored), never replaced by the saves (the log
#      says so), left exactly as it was (content, inode, the link's target).
#   7. A state file of ours truncated, then one with a byte changed: ignored
#      at start with the reason, nothing restored, not deleted.
# Skipped without hangfs (libfuse3 missing at build time), /dev/fuse, or a kernel
# or container that lets us mount FUSE.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

export HANGFS_DELAY_US=2000 # the healthy level; the incident queues 30000
# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"
require_cmd curl python3 sha256sum stat /usr/bin/kill
require_disk "$WORK"
hangfs_mount
kill -s RTMIN+3 "$HANGFS_PID"
wait_hangfs 60 1 'slow (2000 us)'

STATE="$WORK/state"
FILE="$STATE/.iopulse-state"
mkdir "$STATE"
cat >"$WORK/c.yaml" <<EOF
splay: false
state_directory: $(yaml_str "$STATE")
targets:
  - name: disk
    directory: $(yaml_str "$MNT")
    max_duty_cycle: 100%
    max_write_per_day: 0
    size: 1MiB
    direct: true
    baseline_warmup: 1m
    slow_minutes: 1
    ok_minutes: 1
probes:
  - name: ping
    type: ping
    target: disk
    op: read
    interval: 500ms
EOF

# look: one request each of /status.json?history=1 and /metrics, and what they
# say of the target and its read, as shell variables:
#   J_STATE J_SINCE J_CODE   /status.json: state, since, reason_code
#   J_GOOD J_SLOWMIN         minutes with I/O of the read's ring, not slow / slow
#   M_STATE M_SINCE          /metrics: the state whose gauge is 1 ("many": not
#                            one), iopulse_target_state_since_timestamp_seconds
#   M_BASE                   iopulse_probe_latency_baseline_seconds p50 ("absent")
# The pages of the last look are kept in $WORK for a post-mortem.
look() {
	local rc=0 out
	curl -fsS --max-time 10 -o "$WORK/status.json" "$(url '/status.json?history=1')" || rc=$?
	((rc == 0)) || fail "GET /status.json failed (curl status $rc)"
	curl -fsS --max-time 10 -o "$WORK/metrics.prom" "$(url /metrics)" || rc=$?
	((rc == 0)) || fail "GET /metrics failed (curl status $rc)"
	out=$(python3 - "$WORK/status.json" "$WORK/metrics.prom" <<'EOF'
import json, re, sys

t = next(x for x in json.load(open(sys.argv[1]))["targets"] if x["name"] == "disk")
read = next((p for p in t["probes"] if p["op"] == "read"), {})
mins = [m for m in read.get("minutes", []) if m["count"]]
series = []
for line in open(sys.argv[2]):
    m = re.match(r'([a-z_:]+)(?:\{(.*)\})? (\S+)$', line.strip())
    if m and not line.startswith("#"):
        series.append((m.group(1), dict(re.findall(r'([a-z_]+)="([^"]*)"', m.group(2) or "")),
                       float(m.group(3))))
def one(name, **want):
    got = [v for n, l, v in series if n == name and all(l.get(k) == w for k, w in want.items())]
    return repr(got[0]) if len(got) == 1 else "absent"
states = [l["state"] for n, l, v in series
          if n == "iopulse_target_state" and l.get("target") == "disk" and v == 1]
out = {
    "J_STATE": t["state"], "J_SINCE": repr(t["since"]), "J_CODE": t["reason_code"],
    "J_GOOD": str(sum(not m["slow"] for m in mins)), "J_SLOWMIN": str(sum(m["slow"] for m in mins)),
    "M_STATE": states[0] if len(states) == 1 else "many",
    "M_SINCE": one("iopulse_target_state_since_timestamp_seconds", target="disk"),
    "M_BASE": one("iopulse_probe_latency_baseline_seconds", probe="ping", target="disk",
                  op="read", percentile="50"),
}
for k, v in out.items():
    assert re.fullmatch(r"[A-Za-z0-9_.+-]+", v), (k, v)
    print(f"{k}={v}")
EOF
	) || fail "cannot read /status.json and /metrics"
	eval "$out"
}

# in_state STATE CODE: both pages say so.
in_state() {
	look
	[[ $J_STATE == "$1" && $M_STATE == "$1" && $J_CODE == "$2" ]]
}

# near A B: within a millisecond (the precision of /status.json's since).
near() {
	awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; exit !(d < 0.001 && d > -0.001) }'
}

good_minutes() {
	look
	((J_GOOD >= $1))
}

# saves: the saves the current daemon has logged; saved_since N: more than N.
saves() {
	grep -c "State file $FILE saved" "$DAEMON_LOG" || true
}
saved_since() {
	(($(saves) > $1))
}

logged() {
	grep -qF -- "$1" "$DAEMON_LOG"
}

# base_near B: the baseline is there and within 20% of B (the pre-incident
# level: a baseline learned from the incident would be 15 times it).
base_near() {
	[[ $M_BASE != absent ]] || fail "no baseline on /metrics (want about ${1}s)"
	if ! awk -v a="$M_BASE" -v b="$1" 'BEGIN { exit !(a < b * 1.2 && a > b / 1.2) }'; then
		fail "baseline ${M_BASE}s, want the one from before the incident, about ${1}s"
	fi
}

# restarted_slow WHAT: after a restart, until the target is slow again it is
# never up (starting, then held slow); then slow since $SINCE in both pages.
restarted_slow() {
	local deadline=$(($(now_ms) + 120000))
	while :; do
		look
		[[ $J_STATE != up && $M_STATE != up ]] || fail "$1: up after the restart, while the disk is slow"
		[[ $J_STATE == slow && $M_STATE == slow ]] && break
		require_alive
		(($(now_ms) < deadline)) || fail "$1: not slow again within 120s (state $J_STATE)"
		sleep 0.2
	done
	[[ $J_SINCE == "$SINCE" ]] || fail "$1: slow since $J_SINCE, want the since of before: $SINCE"
	near "$M_SINCE" "$SINCE" || fail "$1: iopulse_target_state_since_timestamp_seconds $M_SINCE, want $SINCE"
	base_near "$BASE"
}

# file_id PATH: its inode and content hash (a symbolic link: the link itself).
file_id() {
	echo "$(stat -c %i -- "$1") $(if [[ -L $1 ]]; then readlink -- "$1"; else sha256sum <"$1"; fi)"
}

# ---- 1. healthy --------------------------------------------------------------------

start_daemon "$WORK/c.yaml"
wait_until 60 "the log saying there is no state file yet" logged "State file $FILE: none yet"
wait_until 600 "three healthy minutes of the read and a baseline" good_minutes 3
[[ $M_BASE != absent && $J_STATE == up ]] || fail "after three good minutes: $J_STATE, baseline $M_BASE"
num "$M_BASE" '<' 0.0075 || skip "FUSE reads take ${M_BASE}s here: the 30ms incident would not be 4x them"
BASE=$M_BASE
note "healthy: baseline ${BASE}s"

# ---- 2. the incident, saved ------------------------------------------------------------

/usr/bin/kill -s RTMIN+3 -q 30000 "$HANGFS_PID"
wait_hangfs 60 1 'slow (30000 us)'
wait_until 200 "the target slow" in_state slow slow
SINCE=$J_SINCE
base_near "$BASE"
n=$(saves)
wait_until 150 "a save while slow" saved_since "$n"
[[ $(head -c 19 "$FILE") == IOPULSE-STATE-FILE ]] || fail "$FILE does not start with our header"
note "slow since $SINCE; saved ($(stat -c %s "$FILE") bytes)"

# ---- 3. SIGTERM ---------------------------------------------------------------------

stop_daemon TERM
start_daemon "$WORK/c.yaml"
wait_until 60 "the log saying what was restored" \
	logged "State file $FILE: restored the baselines of 1 probe op and the states of 1 target"
logged "Target disk was slow (slow)" || fail "the log does not say the target was slow before the restart"
restarted_slow "after SIGTERM"
note "after SIGTERM: slow since $J_SINCE again, baseline ${M_BASE}s"

# ---- 4. SIGKILL -----------------------------------------------------------------------

n=$(saves)
wait_until 150 "a save after the restart" saved_since "$n"
cp -- "$FILE" "$WORK/valid.state"
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" || true
_forget_pid "$DAEMON_PID"
DAEMON_PID=
start_daemon "$WORK/c.yaml"
wait_until 60 "the log saying what was restored" logged "restored the baselines of 1 probe op"
restarted_slow "after SIGKILL"
note "after SIGKILL: slow since $J_SINCE again"

# ---- 5. fast again --------------------------------------------------------------------

/usr/bin/kill -s RTMIN+3 -q 2000 "$HANGFS_PID"
wait_hangfs 60 2 'slow (2000 us)'
wait_until 200 "the target up again" in_state up none
base_near "$BASE"
note "recovered: up since $J_SINCE, baseline ${M_BASE}s"
stop_daemon TERM

# ---- 6. not ours ------------------------------------------------------------------------

# not_ours WHAT REASON: started with WHAT at the state file's name: ignored for
# REASON, nothing restored, the saves refuse it; left exactly as it was.
not_ours() {
	local before n
	before=$(file_id "$FILE")
	start_daemon "$WORK/c.yaml"
	wait_until 60 "$1 ignored at start" logged "$2"
	! logged "restored the baselines" || fail "$1: something was restored from it"
	n=$(saves)
	wait_until 150 "a save refused for $1" logged "not ours: left alone; trying again each minute"
	(($(saves) == n)) || fail "$1: a save went through"
	[[ $(file_id "$FILE") == "$before" ]] || fail "$1 was changed: $before, now $(file_id "$FILE")"
	stop_daemon TERM
	note "$1: ignored, and left as it was"
}

rm -- "$FILE"
echo "an administrator's notes" >"$FILE"
# A plain file of ours without the header: the saves say so in words of their own.
before=$(file_id "$FILE")
start_daemon "$WORK/c.yaml"
wait_until 60 "a plain file ignored at start" logged "State file $FILE ignored: not an iopulse state file"
! logged "restored the baselines" || fail "a plain file: something was restored from it"
wait_until 150 "a save refused for a plain file" logged "not replacing it; nothing is saved until it is removed"
(($(saves) == 0)) || fail "a plain file: a save went through"
[[ $(file_id "$FILE") == "$before" ]] || fail "the plain file was changed: $before, now $(file_id "$FILE")"
stop_daemon TERM
note "a plain file: ignored, and left as it was"

rm -- "$FILE"
cp -- "$WORK/valid.state" "$WORK/elsewhere.state"
ln -s -- "$WORK/elsewhere.state" "$FILE"
target_before=$(file_id "$WORK/elsewhere.state")
not_ours "a symbolic link to a state file of ours" "is a symbolic link, not ours: left alone"
[[ $(file_id "$WORK/elsewhere.state") == "$target_before" ]] || fail "the link's target was changed"

# ---- 7. ours, damaged -----------------------------------------------------------------

# damaged WHAT REASON: started with a damaged state file of ours: ignored for
# REASON, nothing restored, not deleted.
damaged() {
	local before
	before=$(file_id "$FILE")
	start_daemon "$WORK/c.yaml"
	wait_until 60 "$1 ignored at start" logged "State file $FILE ignored: $2"
	! logged "restored the baselines" || fail "$1: something was restored from it"
	[[ -f $FILE && $(file_id "$FILE") == "$before" ]] || fail "$1 was changed or removed at start"
	stop_daemon TERM
	note "$1: ignored ($2), not deleted"
}

rm -- "$FILE"
head -c 1000 "$WORK/valid.state" >"$FILE"
damaged "a truncated state file" "truncated"
python3 - "$WORK/valid.state" "$FILE" <<'EOF'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[len(data) // 2] ^= 0x10
open(sys.argv[2], "wb").write(data)
EOF
damaged "a state file with one bit changed" "corrupt"
note "pass"
