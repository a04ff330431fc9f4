#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A configuration file that cannot be read, or only very slowly, never holds up
# the probes, the watchdog or SIGTERM (a reload used to read and parse the file
# on the scheduler's own thread):
#   1. `iopulse check` on a FIFO without a writer fails at once, saying it is
#      not a regular file (it used to wait in open() for a writer).
#   2. The file becomes "[[[[...]]]]" 100,000 deep (200 kB) and SIGHUP is sent:
#      the pings keep being counted, and the reload is refused at once, the
#      depth limit named at file:line:column (libyaml alone took tens of seconds
#      over it). A good file then reloads (the gauge back to 1).
#   3. The file becomes a FIFO without a writer and SIGHUP is sent: the pings
#      keep being counted, the reload is refused ("not a regular file",
#      iopulse_config_last_reload_successful 0), and SIGTERM then exits 0
#      within a second.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

require_cmd curl head mkfifo timeout tr
require_disk "$WORK"

CFG="$WORK/iopulse.yaml"
ping_config "$CFG" "$WORK/t1" 1MiB
cp "$CFG" "$WORK/good.yaml"
P1='iopulse_probe_ios_total{probe="p1",target="t1",op="read"}'
OK='iopulse_config_last_reload_successful'

# cfg_re: $CFG as an extended regular expression.
cfg_re() {
	printf '%s' "$CFG" | sed 's/[][\.*^$+?(){}|]/\\&/g'
}

# ---- 1. iopulse check on a FIFO -----------------------------------------------

mkfifo "$WORK/fifo.yaml"
rc=0
t0=$(now_ms)
timeout 60 "$IOPULSE" check --config "$WORK/fifo.yaml" >"$WORK/check.out" 2>&1 || rc=$?
elapsed=$(($(now_ms) - t0))
((rc != 124)) || fail "iopulse check on a FIFO without a writer did not return within 60s"
((rc == 78)) || fail "iopulse check on a FIFO: exit status $rc, want 78: $(cat "$WORK/check.out")"
grep -qF "$WORK/fifo.yaml: cannot read: it is a FIFO, not a regular file" "$WORK/check.out" ||
	fail "iopulse check on a FIFO says: $(cat "$WORK/check.out")"
note "iopulse check on a FIFO: exit 78 after ${elapsed}ms: $(cat "$WORK/check.out")"

# ---- the daemon -----------------------------------------------------------------

start_daemon "$CFG"

# p1_now VAR: p1's count now, as a whole number.
p1_now() {
	local v
	scrape_metrics
	sample_into v "$PAGE" "$P1"
	printf -v "$1" '%s' "${v%.*}"
}
wait_until 60 "p1 counted 5 times" scraped "$P1" ">=" 5 0

# ---- 2. 100,000 levels deep ---------------------------------------------------------

{
	printf 'targets: '
	head -c 100000 /dev/zero | tr '\0' '['
	head -c 100000 /dev/zero | tr '\0' ']'
	echo
} >"$CFG.new"
mv "$CFG.new" "$CFG"
note "$CFG is now $(wc -c <"$CFG") bytes, 100000 lists deep"
p1_now before
kill -HUP "$DAEMON_PID"
# 10 pings at 100ms: a second's worth, and the refusal, within 12s: the old
# parse took 16s to 65s, and a loaded machine (TSan runs this test too) may
# take several seconds for the pings.
wait_until 12 "p1 counted 10 more times after SIGHUP with a deep file" scraped "$P1" ">=" "$((before + 10))" 0
wait_until 12 "$OK 0 after the deep file" scraped "$OK" == 0 -1
grep -qE "$(cfg_re):1:[0-9]+: lists and mappings nested more than 64 deep" "$DAEMON_LOG" ||
	fail "the refused reload does not name the depth limit at $CFG:line:column"
note "logged: $(grep -F 'nested more than' "$DAEMON_LOG" | tail -1)"
p1_now before
wait_until 60 "p1 counted 10 more times after the refused reload" scraped "$P1" ">=" "$((before + 10))" 0

cp "$WORK/good.yaml" "$CFG.new"
mv "$CFG.new" "$CFG"
kill -HUP "$DAEMON_PID"
wait_until 60 "$OK back to 1 after the good file" scraped "$OK" == 1 -1

# ---- 3. a FIFO without a writer -----------------------------------------------------

rm "$CFG"
mkfifo "$CFG"
p1_now before
kill -HUP "$DAEMON_PID"
wait_until 60 "p1 counted 10 more times after SIGHUP with a FIFO" scraped "$P1" ">=" "$((before + 10))" 0
wait_until 60 "$OK 0 after the FIFO" scraped "$OK" == 0 -1
grep -qF "$CFG: cannot read: it is a FIFO, not a regular file" "$DAEMON_LOG" ||
	fail "the refused reload does not say the FIFO is not a regular file"
require_alive
# The reload's read of the FIFO never returns: a daemon that waited for it would
# never exit. 5 s, not the promised second: a loaded machine, TSan.
stop_daemon TERM 5
note "pass"
