#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Splay end to end, on the real clocks and this host's own id: each burst's
# logged phase is FNV-1a 64 of the machine id (as libsystemd reads it, else the
# host name), a NUL and the probe's name, modulo its 'every', recomputed here
# independently; a restart keeps every phase; the first run starts at that
# phase of the wall clock; 'splay: false' runs the burst at start instead.
# (tests/unit/test_splay.c covers other machine ids with an injected clock.)

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl python3
DIR="$WORK/data"
mkdir "$DIR"
require_disk "$DIR"

# write_config FILE SPLAY: a 20s burst that the test waits for, and two whose
# phases only the log shows.
write_config() {
	cat >"$1" <<-EOF
		splay: $2
		targets:
		  - name: t1
		    directory: $(yaml_str "$DIR")
		    size: 1MiB
		probes:
		  - {name: ping, type: ping, target: t1, interval: 1s}
		  - {name: b-20s, type: burst, target: t1, every: 20s, duration: 100ms}
		  - {name: b-7m, type: burst, target: t1, every: 7m, duration: 100ms}
		  - {name: b.day_1, type: burst, target: t1, every: 24h, duration: 100ms}
	EOF
}

# expected_ms NAME EVERY_S: the phase of NAME in ms, computed from first principles.
expected_ms() {
	python3 - "$1" "$2" <<-'EOF'
		import re, socket, sys
		try:
		    mid = open("/etc/machine-id").read().strip()
		except OSError:
		    mid = ""
		if not re.fullmatch(r"[0-9a-f]{32}", mid) or set(mid) == {"0"}:
		    mid = socket.gethostname()
		h = 0xcbf29ce484222325
		for b in mid.encode() + b"\0" + sys.argv[1].encode():
		    h = ((h ^ b) * 0x100000001b3) % 2**64
		print(h % (int(sys.argv[2]) * 10**9) // 10**6)
	EOF
}

# logged_ms NAME: the phase the daemon logged for NAME, in ms ("7s927ms" -> 7927).
logged_ms() {
	local d
	d=$(sed -n "s/.*Burst $1 runs at \([0-9a-z]*\) past each .*/\1/p" "$DAEMON_LOG" | tail -1)
	[[ -n $d ]] || fail "no splay line for $1 in $DAEMON_LOG"
	python3 - "$d" <<-'EOF'
		import re, sys
		ms = {"h": 3600000, "m": 60000, "s": 1000, "ms": 1}
		print(sum(int(n) * ms[u] for n, u in re.findall(r"(\d+)(ms|h|m|s)", sys.argv[1])))
	EOF
}

check_phases() {
	local name every got want
	for name in b-20s:20 b-7m:420 b.day_1:86400; do
		every=${name#*:}
		name=${name%:*}
		got=$(logged_ms "$name")
		want=$(expected_ms "$name" "$every")
		[[ $got == "$want" ]] || fail "$name: logged phase ${got}ms, want ${want}ms"
		note "$name: phase ${got}ms of ${every}s, as computed"
	done
}

CFG="$WORK/splay.yaml"
write_config "$CFG" true
start_daemon "$CFG"
check_phases
first=$(logged_ms b-20s)
stop_daemon

start_daemon "$CFG"
check_phases
[[ $(logged_ms b-20s) == "$first" ]] || fail "the phase of b-20s moved across a restart"

# The first run waits for the phase. The wait the daemon logged is the phase
# less where the wall clock stood (the log line's own time, to the second it
# rounds to); a burst whose wait is seconds off has not run a moment after start
# (without splay it would have, see below), and it runs in the end.
line=$(grep -m1 "Burst b-20s runs at" "$DAEMON_LOG")
in_s=$(sed -n 's/.* first in \([0-9]*\)s$/\1/p' <<<"$line")
[[ -n $in_s ]] || in_s=0 # "first in 0s" prints as "0s" too; anything else fails below
want_s=$(python3 - "$line" "$first" <<-'EOF'
	import sys, time
	stamp, phase = sys.argv[1][:23], int(sys.argv[2])
	t = time.mktime(time.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S")) * 1000 + int(stamp[20:23])
	print(int((phase - t) % 20000) // 1000)
	EOF
)
((in_s - want_s <= 1 && want_s - in_s <= 1)) ||
	fail "b-20s: logged 'first in ${in_s}s', the phase says ${want_s}s"
# When it ran is the run's own start time (the last-run gauge, stamped as the
# run starts), never when a scrape saw it: a loaded machine may scrape after the
# phase. With RUNS counted, the last began RUNS - 1 'every's after the phase.
RUNS='iopulse_probe_runs_total{probe="b-20s",target="t1"}'
LAST='iopulse_probe_last_run_timestamp_seconds{probe="b-20s",target="t1"}'
wait_until 60 "b-20s to run" scraped "$RUNS" '>=' 1
sample_into runs "$PAGE" "$RUNS"
sample_into last "$PAGE" "$LAST"
late_ms=$(python3 - "$line" "$first" "$runs" "$last" <<-'EOF'
	import sys, time
	stamp, phase, runs, last = sys.argv[1][:23], int(sys.argv[2]), int(float(sys.argv[3])), float(sys.argv[4])
	t = time.mktime(time.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S")) * 1000 + int(stamp[20:23])
	due = t + (phase - t) % 20000 + (runs - 1) * 20000
	print(round(last * 1000 - due))
	EOF
)
# A run at start is in_s (>= 3s) early; one that missed its phase, an 'every'
# (20s) late. Late by up to half an 'every': a timer's wake-up on a loaded
# machine, not a scheduling error. (A wait under 3s cannot tell start from phase.)
if ((in_s >= 3)); then
	((late_ms >= -1000 && late_ms < 10000)) ||
		fail "b-20s: run $runs started ${late_ms}ms after its phase (want 0; at start it is ${in_s}s early)"
fi
note "b-20s waited ${in_s}s for its phase, as computed, then ran (${late_ms}ms after it)"
stop_daemon

write_config "$CFG" false
start_daemon "$CFG"
wait_until 60 "b-20s to run without splay" scraped "$RUNS" '>=' 1
# At start: the first run (the last less RUNS - 1 'every's) began before the
# phase that splay would have waited for, counted from the daemon's first log
# line (a phase under 5s after it cannot tell the two apart on a loaded machine).
sample_into runs "$PAGE" "$RUNS"
sample_into last "$PAGE" "$LAST"
early_ms=$(python3 - "$(head -n 1 "$DAEMON_LOG")" "$first" "$runs" "$last" <<-'EOF'
	import sys, time
	stamp, phase, runs, last = sys.argv[1][:23], int(sys.argv[2]), int(float(sys.argv[3])), float(sys.argv[4])
	t = time.mktime(time.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S")) * 1000 + int(stamp[20:23])
	wait = (phase - t) % 20000
	print(round(t + wait - (last * 1000 - (runs - 1) * 20000)) if wait >= 5000 else "-")
	EOF
)
if [[ $early_ms != - ]]; then
	((early_ms > 1000)) || fail "splay: false: b-20s first ran ${early_ms}ms before its phase, not at start"
	note "without splay, b-20s first ran ${early_ms}ms before its phase"
fi
if grep -q "(splay)" "$DAEMON_LOG"; then
	fail "splay: false still logged splay phases"
fi
stop_daemon
