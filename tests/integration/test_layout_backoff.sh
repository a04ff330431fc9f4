#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A probe-file layout that fails for want of room is not retried on every ping:
# the next attempt waits 10 s (doubling up to 1 h; tests/unit/test_lane.c checks
# the doubling with a fake clock). On a small tmpfs, a target bigger than the free
# space: over ~5 s of 100 ms pings the layout is tried once, counted once in
# iopulse_target_layout_failures_total, logged once with its retry time, and
# leaves nothing behind; the pings count as target_down.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

require_cmd curl mount umount df

MNT="$WORK/small"
mkdir "$MNT"
mount_tmpfs "$MNT" 8m

CFG="$WORK/backoff.yaml"
target_config "$CFG" "$MNT" 16MiB "allow_memory_backed: true" "direct: false"
ping_item "$CFG" p1 read "interval: 100ms"
T_START=$(now_ms)
start_daemon "$CFG"

FAILURES='iopulse_target_layout_failures_total{target="t1"}'
DOWN='iopulse_probe_errors_total{probe="p1",target="t1",reason="target_down"}'
wait_until 60 "the first layout failure" scraped "$FAILURES" == 1
wait_until 60 "40 pings counted as target_down" scraped "$DOWN" '>=' 40
# Tries come 10s apart at the least (then 20s, 40s...): over the daemon's life
# so far, which the test's clock bounds from above, at most one per 10s, the
# first at start. A loaded machine runs its 40 pings later and may see a retry;
# one try per ping (the bug) counts about 40.
elapsed=$(($(now_ms) - T_START))
sample_into v "$PAGE" "$FAILURES"
num "$v" '<=' $((1 + elapsed / 10000)) || fail "$FAILURES is $v after ${elapsed}ms (40 pings), want one try per 10s at most"
sample_into up "$PAGE" 'iopulse_target_up{target="t1"}'
num "$up" == 0 || fail "t1 up ($up) with no room for its probe file"

lines=$(grep -v ' debug: ' "$DAEMON_LOG" | grep -F 'Target t1' || true)
n=$(grep -c 'retrying in 10s$' <<<"$lines" || true)
((n == 1)) || fail "$n 'retrying in 10s' lines, want one:"$'\n'"$lines"
n=$(grep -c . <<<"$lines" || true)
((n == 1)) || fail "$n lines about t1, want one:"$'\n'"$lines"
grep -q 'error: Target t1 is down: .*, retrying in 10s$' <<<"$lines" ||
	fail "the line does not say t1 is down and when it is retried:"$'\n'"$lines"
note "log: $lines"

used=$(df -k --output=used "$MNT" | tail -n 1)
((used < 1024)) || fail "the failed layout left ${used}KiB on the tmpfs"
note "tmpfs: ${used}KiB used after the failed layout"

require_alive
stop_daemon TERM 5
note "pass"
