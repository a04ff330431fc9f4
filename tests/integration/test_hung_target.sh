#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A disk that hangs blocks only its own lane. The target is a directory on hangfs
# (tests/integration/hangfs.c: a FUSE pass-through whose reads, writes and fsyncs
# block while it is frozen), pinged every 100ms with a 1s timeout.
#   1. Reads are measured through FUSE with O_DIRECT.
#   2. Frozen: /metrics answers every scrape promptly; the stuck read shows as
#      iopulse_target_inflight_seconds, turns iopulse_target_up to 0 from the
#      moment it is older than the timeout, and is counted exactly once as
#      reason="timeout" however long it stays stuck. /healthz answers; so do
#      /readyz (503), /status.json and the status page, saying stuck.
#   3. Thawed: the stuck read completes and is recorded (latency > 1s), the
#      target comes back, reads grow again, and the timeout count stays 1.
#   4. Frozen again, SIGTERM: the daemon exits 0 at once (5s: a loaded machine), abandoning the lane
#      that is stuck in FUSE instead of waiting for it.
# Skipped without hangfs (libfuse3 missing at build time), /dev/fuse, or a kernel
# or container that lets us mount FUSE.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"
require_cmd curl
require_disk "$WORK"
hangfs_mount

# ---- 1. reads through FUSE -----------------------------------------------------

# direct: true works: FUSE files have a direct_IO method, so fcntl(F_SETFL,
# O_DIRECT) is accepted; hangfs opens every file with direct_io anyway, so no
# read is answered from the page cache in front of the freeze.
# The engine under test: a ping's default, which is sync (a lane stuck in
# pread), unless the caller names one (test_hung_target_uring.sh runs the same
# scenario on io_uring). ENGINE is the one the probe runs on, from its info series.
hung_config "$WORK/hung.yaml" "${HUNG_ENGINE:-}"

UP='iopulse_target_up{target="hung"}'
INFLIGHT='iopulse_target_inflight_seconds{target="hung"}'
IOS='iopulse_probe_ios_total{probe="ping",target="hung",op="read"}'
TIMEOUTS='iopulse_probe_errors_total{probe="ping",target="hung",reason="timeout"}'
LAT='iopulse_probe_latency_seconds'
LAT_LABELS='probe="ping",target="hung",op="read"'

# scrape_quick: scrape_metrics, but the page must come within 10s: it is made
# from memory, and one that waited for the stuck read would wait for the thaw,
# which only the test sends (10s, not less: a loaded machine).
scrape_quick() {
	local t0 rc=0
	SCRAPE_N=$((SCRAPE_N + 1))
	PAGE="$WORK/scrape.$SCRAPE_N.prom"
	t0=$(now_ms)
	curl -fsS --max-time 10 "$(url /metrics)" >"$PAGE" || rc=$?
	SCRAPE_MS=$(($(now_ms) - t0))
	((rc == 0)) || fail "scrape $SCRAPE_N of /metrics failed (curl status $rc after ${SCRAPE_MS}ms)"
}

IOS0=0
up_and_reading() {
	local up ios
	scrape_quick
	sample_or up 0 "$PAGE" "$UP"
	sample_or ios 0 "$PAGE" "$IOS"
	num "$up" '==' 1 && num "$ios" '>' "$IOS0"
}

start_daemon "$WORK/hung.yaml"
wait_until 60 "reads on hangfs (target_up 1, ios_total > 0)" up_and_reading
sample_into v "$PAGE" "$TIMEOUTS"
num "$v" '==' 0 || fail "$v timeouts counted before any freeze"
[[ -f $BACKING/.iopulse-probe ]] || fail "no probe file in the backing directory $BACKING"
grep -q 'read blocked' "$HANGFS_LOG" && fail "hangfs blocked a read before the freeze"
# What the target is on: FUSE, no block device; the source of its mount (hangfs
# mounts with fsname=hangfs) names it instead, as findmnt does.
SOURCE=$(findmnt -n --nofsroot -o SOURCE -T "$MNT") || fail "findmnt knows no mount at $MNT"
INFO=$(grep '^iopulse_target_info{target="hung",' "$PAGE") || fail "no iopulse_target_info for hung"
[[ $SOURCE == hangfs && $INFO == *',fstype="fuse",device="",model="",source="hangfs"}'* ]] ||
	fail "iopulse_target_info does not name the mount source (findmnt says '$SOURCE'): $INFO"
sample_into IOS0 "$PAGE" "$IOS"
ENGINE=$(sed -n 's/^iopulse_probe_info{probe="ping",.*engine="\([^"]*\)",.*} 1$/\1/p' "$PAGE")
[[ $ENGINE == "${HUNG_ENGINE:-sync}" ]] ||
	fail "the ping runs on '$ENGINE', want ${HUNG_ENGINE:-sync} ('engine: ${HUNG_ENGINE:-auto}')"
note "engine $ENGINE ('engine: ${HUNG_ENGINE:-auto}')"

# The daemon's descriptor of the probe file really has O_DIRECT (fdinfo flags are
# octal; O_DIRECT's value depends on the architecture).
case $(uname -m) in
arm* | aarch64) o_direct=0200000 ;;
ppc* | powerpc*) o_direct=0400000 ;;
mips*) o_direct=0100000 ;;
*) o_direct=040000 ;;
esac
flags=
for fd in "/proc/$DAEMON_PID/fd/"*; do
	[[ $(readlink "$fd") == "$MNT/.iopulse-probe" ]] || continue
	flags=$(awk '$1 == "flags:" { print $2 }' "/proc/$DAEMON_PID/fdinfo/${fd##*/}")
	break
done
[[ -n $flags ]] || fail "the daemon has no descriptor open on $MNT/.iopulse-probe"
((8#$flags & o_direct)) || fail "the probe file is open without O_DIRECT (flags $flags)"
note "reads through FUSE with O_DIRECT (flags $flags): $IOS0 so far"

# ---- 2. frozen -------------------------------------------------------------------

kill -USR1 "$HANGFS_PID"
wait_hangfs 60 1 frozen
wait_hangfs 60 1 'read blocked'
note "frozen; a read is stuck in hangfs"

# Scrape every 0.2s until the stuck read is 3s old. Each scrape must answer
# within 10s, and every page must be consistent about the stuck read:
#   - older than the 1s timeout  => target_up 0 (computed at scrape time);
#   - older than 2.5s (timeout + a 250ms housekeeping tick + slack for a loaded
#     machine, whose tick may come late) => counted;
#   - never counted more than once, however many ticks pass.
n=0 max_ms=0 first_down=
deadline=$(($(now_ms) + 60000))
while :; do
	scrape_quick
	n=$((n + 1))
	((SCRAPE_MS <= max_ms)) || max_ms=$SCRAPE_MS
	sample_into up "$PAGE" "$UP"
	sample_into age "$PAGE" "$INFLIGHT"
	sample_into tmo "$PAGE" "$TIMEOUTS"
	num "$tmo" '<=' 1 || fail "the stuck read is counted $tmo times as a timeout (age ${age}s), want once"
	if num "$age" '>=' 1; then
		num "$up" '==' 0 || fail "target_up is $up with a read in flight for ${age}s (timeout 1s)"
		[[ -n $first_down ]] || first_down=$age
	fi
	if num "$age" '>=' 2.5; then
		num "$tmo" '==' 1 || fail "a read in flight for ${age}s (timeout 1s) is counted $tmo times as a timeout"
	fi
	# Ten pages at least, however slowly a loaded machine scrapes: frozen, the
	# read stays stuck and its age grows, so later pages test the same.
	num "$age" '<' 3 || ((n < 10)) || break
	(($(now_ms) < deadline)) || fail "the stuck read's age is ${age}s after 60s frozen ($n scrapes)"
	sleep 0.2
done
num "$up" '==' 0 || fail "target_up is $up after 3s frozen"
num "$tmo" '==' 1 || fail "$tmo timeouts after 3s frozen, want 1"
note "frozen: $n scrapes answered (slowest ${max_ms}ms); target_up 0 from age ${first_down}s; inflight ${age}s; timeouts $tmo"

status=$(http_status GET /healthz)
[[ $status == 200 ]] || fail "/healthz answered $status while the target hangs"

# The status endpoints answer from memory too, within 10s, and say stuck.
# quick_get PATH FILE: GET PATH into FILE within 10s, whatever the status (QUICK_CODE).
quick_get() {
	local t0 rc=0
	t0=$(now_ms)
	QUICK_CODE=$(curl -sS --max-time 10 -o "$2" -w '%{http_code}' "$(url "$1")") || rc=$?
	((rc == 0)) || fail "GET $1 failed while the target hangs (curl status $rc after $(($(now_ms) - t0))ms)"
}
quick_get /readyz "$WORK/readyz.txt"
[[ $QUICK_CODE == 503 ]] || fail "/readyz answered $QUICK_CODE while the target is stuck, want 503"
grep -q '^hung: stuck: I/O of probe ping in flight for' "$WORK/readyz.txt" ||
	fail "/readyz does not say the target is stuck: $(cat "$WORK/readyz.txt")"
quick_get /status.json "$WORK/status.json"
[[ $QUICK_CODE == 200 ]] || fail "/status.json answered $QUICK_CODE while the target is stuck"
python3 - "$WORK/status.json" <<'EOF2' || fail "/status.json: $(cat "$WORK/status.json")"
import json, sys
t = json.load(open(sys.argv[1]))["targets"][0]
ok = t["state"] == "stuck" and t["inflight_seconds"] >= 1 and t["inflight_probe"] == "ping"
print(f"target {t['name']}: {t['state']}, in flight {t['inflight_seconds']}s ({t['inflight_probe']})")
sys.exit(0 if ok else 1)
EOF2
quick_get / "$WORK/status.html"
[[ $QUICK_CODE == 200 ]] || fail "/ answered $QUICK_CODE while the target is stuck"
grep -q 'data-target="hung" data-state="stuck"' "$WORK/status.html" ||
	fail "the status page does not say the target is stuck"
grep -q 'I/O in flight for [0-9.]* s (probe ping)' "$WORK/status.html" ||
	fail "the status page does not show the I/O in flight"
note "stuck: /readyz 503 ($(cat "$WORK/readyz.txt")); / and /status.json say stuck"
stuck_lines=$(grep -c 'in flight for over' "$DAEMON_LOG" || true)
((stuck_lines == 1)) || fail "the daemon logged the stuck read $stuck_lines times, want once"
blocked=$(grep -c 'read blocked' "$HANGFS_LOG" || true)
((blocked == 1)) || fail "$blocked reads reached hangfs while frozen, want 1 (one lane, QD1)"
sample_into ios_frozen "$PAGE" "$IOS"

# ---- 3. thawed --------------------------------------------------------------------

kill -USR2 "$HANGFS_PID"
wait_hangfs 60 1 thawed
wait_hangfs 60 1 'read released'
IOS0=$((ios_frozen + 5))
wait_until 60 "target_up 1 and reads growing after the thaw (5 more than $ios_frozen)" up_and_reading
sample_into tmo "$PAGE" "$TIMEOUTS"
num "$tmo" '==' 1 || fail "$tmo timeouts after the thaw, want still 1"
sample_into age "$PAGE" "$INFLIGHT"
num "$age" '<' 1 || fail "iopulse_target_inflight_seconds is $age after the thaw"
# The stuck read finished and was recorded like any other: above 1s.
sample_into le1 "$PAGE" "${LAT}_bucket{$LAT_LABELS,le=\"1.0\"}"
sample_into count "$PAGE" "${LAT}_count{$LAT_LABELS}"
num "$count" '>' "$le1" || fail "no read slower than 1s recorded after the thaw ($count reads, $le1 <= 1s)"
check_histograms "$PAGE" || fail "inconsistent histograms after the thaw:"$'\n'"$HIST_FINDINGS"
sample_into ios "$PAGE" "$IOS"
note "thawed: target up, $ios reads, $((${count%.*} - ${le1%.*})) slower than 1s, timeouts $tmo"

# ---- 4. SIGTERM while stuck ---------------------------------------------------------

kill -USR1 "$HANGFS_PID"
wait_hangfs 60 2 frozen
wait_hangfs 60 2 'read blocked'
# stop_daemon reaps the daemon. Its stuck thread is freed by the kernel's
# FUSE_INTERRUPT when the process exits (hangfs then fails the read with EINTR);
# should that go wrong, thaw after 10s rather than hang until CTest's timeout
# (the check below on 'read interrupted' would then fail the test).
(
	trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
	sleep 10 &
	sleeper=$!
	wait "$sleeper"
	kill -USR2 "$HANGFS_PID"
) >/dev/null 2>&1 &
watchdog=$!
# Not the thaw's 10s: the lane gets 0.8s (STOP_GRACE_NS), then is abandoned;
# 5s allows for a loaded machine.
stop_daemon TERM 5
kill "$watchdog" 2>/dev/null || true
wait "$watchdog" 2>/dev/null || true
# sync cannot be interrupted: its lane stays in the kernel and is abandoned. An
# async engine's wait sees the stop flag and cancels the request instead.
if [[ $ENGINE == sync ]]; then
	grep -q 'lane is stuck in the kernel, abandoning it' "$DAEMON_LOG" ||
		fail "the daemon exited without abandoning its stuck lane"
fi
# sync: the kernel interrupts the FUSE request as the process goes away (give
# hangfs's 50ms poll a moment to see it). io_uring: the request belongs to a
# kernel worker that outlives the process and finishes at the thaw; what matters
# is that the daemon did not wait for it.
if [[ $ENGINE == sync ]]; then
	# Nothing thaws hangfs until the test does, below: 30s is a loaded machine.
	deadline=$(($(now_ms) + 30000))
	until hangfs_said 1 'read interrupted'; do
		(($(now_ms) < deadline)) ||
			fail "the stuck read was not interrupted by the daemon's exit (released by a thaw?)"
		sleep 0.05
	done
	hangfs_said 2 'read released' &&
		fail "the stuck read was released by a thaw, not by the daemon's exit"
fi

kill -USR2 "$HANGFS_PID"
wait_hangfs 60 2 thawed
# io_uring's worker still holds the file until its read returns after the thaw.
[[ $ENGINE == sync ]] || wait_hangfs 60 2 'read released'
deadline=$(($(now_ms) + 30000))
until fusermount3 -u "$MNT" 2>/dev/null; do
	(($(now_ms) < deadline)) || fail "cannot unmount $MNT"
	sleep 0.1
done
wait "$HANGFS_PID" || fail "hangfs exited with status $? after the unmount"
HANGFS_PID=
note "pass (exit ${STOP_MS}ms after SIGTERM with the lane stuck)"
