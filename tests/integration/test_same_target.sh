#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Two targets on one place would run two lanes on one disk at once and fight
# over one probe file: the daemon refuses such a file, at start (exit 78) and
# at a reload (the running schedule kept), naming both targets and the line of
# the second. Two spellings of one path are one place even when the path
# cannot be stat'ed (it does not exist yet, or its filesystem hangs): "a",
# "a/", "a//." and "./a"-like spellings; through a symbolic link, the stat
# tells them apart.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

require_cmd curl
require_disk "$WORK"
mkdir "$WORK/a"
ln -s a "$WORK/link"

# two_targets FILE PATH1 PATH2: a schedule with targets t1 and t2 on them.
two_targets() {
	cat >"$1" <<-EOF
		targets:
		  - {name: t1, directory: $(yaml_str "$2"), size: 1MiB, max_duty_cycle: 100%}
		  - {name: t2, directory: $(yaml_str "$3"), size: 1MiB, max_duty_cycle: 100%}
		probes:
		  - {name: p1, type: ping, target: t1, op: read, interval: 1s}
		  - {name: p2, type: ping, target: t2, op: read, interval: 1s}
	EOF
}

# refused_at_start PATH1 PATH2: `iopulse run` exits 78 saying why (a daemon
# that took the file runs on: stopped after a minute, status 124).
refused_at_start() {
	local rc=0 log="$WORK/start.log"
	two_targets "$WORK/c.yaml" "$1" "$2"
	timeout 60 "$IOPULSE" run --config "$WORK/c.yaml" --listen 127.0.0.1:0 >"$log" 2>&1 ||
		rc=$?
	((rc == 78)) || fail "targets '$1' and '$2': exit $rc, want 78: $(cat "$log")"
	grep -qF "c.yaml:3:5: targets 't1' and 't2' are the same directory" "$log" ||
		fail "targets '$1' and '$2': no message naming both: $(cat "$log")"
}

refused_at_start "$WORK/a" "$WORK/a/"
refused_at_start "$WORK/a" "$WORK//a/."
refused_at_start "$WORK/a" "$WORK/link"       # the stat's answer
refused_at_start "$WORK/gone" "$WORK/gone//"   # no stat to ask: the spelling's
note "refused at start: two spellings, a symbolic link, a missing path spelled twice"

# A reload of such a file is refused; the running schedule goes on.
two_targets "$WORK/run.yaml" "$WORK/a" "$WORK/b"
mkdir "$WORK/b"
start_daemon "$WORK/run.yaml"
two_targets "$WORK/run.yaml" "$WORK/missing" "$WORK/missing/"
kill -HUP "$DAEMON_PID"
refused() { grep -q "Configuration reload failed.*two targets are the same" "$DAEMON_LOG"; }
wait_until 60 "the reload refused" refused
grep -q "targets 't1' and 't2' are the same directory" "$DAEMON_LOG" ||
	fail "the refused reload does not name the targets"
wait_until 60 "the running schedule's t2 still pinged" scraped \
	'iopulse_probe_ios_total{probe="p2",target="t2",op="read"}' '>' 1
sample_into ok "$PAGE" iopulse_config_last_reload_successful
num "$ok" '==' 0 || fail "iopulse_config_last_reload_successful is $ok after a refused reload"
stop_daemon TERM 5
note "pass"
