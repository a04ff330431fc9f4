#!/bin/bash
# SPDX-License-Identifier: MIT
#
# SIGHUP reloads the configuration. The daemon starts with probes A (stays as it
# is), B (its block size changes) and C (removed, with its target t2), all 100ms
# read pings; the file is rewritten (A the same, B changed, C and t2 gone, D new)
# and SIGHUP sent. Then:
#   - A's counters never drop and never vanish across the reload, and keep growing;
#   - B starts again from zero (lower than before, then growing);
#   - C's and t2's series are gone; D's appear;
#   - iopulse_config_last_reload_successful is 1, its timestamp advanced.
# A broken file (a YAML error) then changes nothing: the error is logged with
# file:line:column, the gauge goes to 0, and the schedule keeps running (A grows,
# D stays); so does a valid file over its target's budget. The fixed file sets
# the gauge back to 1. Last, a target's spent write budget stays spent across a
# reload of the same file, and its cost counters go on.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

require_cmd curl
require_disk "$WORK"

mkdir "$WORK/t1" "$WORK/t2"
CFG="$WORK/iopulse.yaml"

# target NAME: a 1MiB directory target $WORK/NAME without a budget (the 100ms
# pings here are over any).
target() {
	printf '  - name: %s\n    directory: %s\n    max_duty_cycle: 100%%\n' "$1" "$(yaml_str "$WORK/$1")"
	printf '    max_write_per_day: 0\n    size: 1MiB\n'
}

ping() { # NAME TARGET [EXTRA YAML LINE]
	printf '  - name: %s\n    type: ping\n    target: %s\n    op: read\n    interval: 100ms\n' "$1" "$2"
	[[ -z ${3:-} ]] || printf '    %s\n' "$3"
}

# install_config: move $CFG.new over $CFG at once (a reload never reads half a file).
install_config() {
	mv "$CFG.new" "$CFG"
}

{
	echo "targets:"
	target t1
	target t2
	echo "probes:"
	ping A t1
	ping B t1
	ping C t2
} >"$CFG.new"
install_config

write_second() {
	{
		echo "targets:"
		target t1
		echo "probes:"
		ping A t1
		ping B t1 "block_size: 8KiB"
		ping D t1
	} >"$CFG.new"
	install_config
}

A='iopulse_probe_ios_total{probe="A",target="t1",op="read"}'
B='iopulse_probe_ios_total{probe="B",target="t1",op="read"}'
C='iopulse_probe_ios_total{probe="C",target="t2",op="read"}'
D='iopulse_probe_ios_total{probe="D",target="t1",op="read"}'
OK='iopulse_config_last_reload_successful'
WHEN='iopulse_config_last_reload_success_timestamp_seconds'

start_daemon "$CFG"

# at_least SERIES N: a fresh scrape has SERIES >= N.
at_least() {
	local v
	scrape_metrics
	sample_or v 0 "$PAGE" "$1"
	num "$v" '>=' "$2"
}
first_counts() { at_least "$A" 20 && at_least "$B" 20 && at_least "$C" 1; }
wait_until 60 "A and B counted 20 times, C once" first_counts

scrape_metrics
sample_into ok0 "$PAGE" "$OK"
sample_into when0 "$PAGE" "$WHEN"
num "$ok0" '==' 1 || fail "$OK is $ok0 at start, want 1"
now_s=$(($(now_ms) / 1000))
if ! num "$when0" '>' $((now_s - 60)) || ! num "$when0" '<=' $((now_s + 1)); then
	fail "$WHEN is $when0 at start, now is $now_s"
fi
sample_into b_before "$PAGE" "$B"
sample_into a_prev "$PAGE" "$A"
note "before the reload: A=$a_prev B=$b_before"

# ---- a good reload ----------------------------------------------------------

sleep 0.2 # the timestamp has sub-second resolution; make it advance measurably
write_second
kill -HUP "$DAEMON_PID"

# Scrape as fast as we can through the reload: A never drops, never goes missing.
reloaded() { grep -q 'Configuration reloaded' "$DAEMON_LOG"; }
deadline=$(($(now_ms) + 60000))
n=0
b_after=
while :; do
	require_alive
	scrape_metrics
	sample_into a "$PAGE" "$A" # fails the test when A's series is missing
	num "$a" '>=' "$a_prev" || fail "A's ios_total dropped across the reload: $a_prev -> $a"
	a_prev=$a
	n=$((n + 1))
	if reloaded && has_series "$PAGE" "$D"; then
		[[ -n $b_after ]] || sample_or b_after 0 "$PAGE" "$B"
		((n >= 10)) && break
	fi
	(($(now_ms) < deadline)) || fail "no 'Configuration reloaded' with D's series within 60s"
	sleep 0.05
done
note "after the reload ($n scrapes): A=$a_prev B=$b_after"
num "$b_after" '<' "$b_before" || fail "B (changed) did not restart: $b_before before, $b_after after"

wait_until 60 "A keeps growing" at_least "$A" $((a_prev + 5))
wait_until 60 "B grows again" at_least "$B" $((${b_after%.*} + 5))
wait_until 60 "D counted" at_least "$D" 5
scrape_metrics
! grep -q 'probe="C"' "$PAGE" || fail "removed probe C still has series: $(grep 'probe="C"' "$PAGE" | head -3)"
! grep -q 'target="t2"' "$PAGE" || fail "removed target t2 still has series: $(grep 'target="t2"' "$PAGE" | head -3)"
sample_into v "$PAGE" 'iopulse_target_up{target="t1"}'
num "$v" '==' 1 || fail "iopulse_target_up{target=\"t1\"} is $v after the reload"
sample_into ok1 "$PAGE" "$OK"
sample_into when1 "$PAGE" "$WHEN"
num "$ok1" '==' 1 || fail "$OK is $ok1 after a good reload"
num "$when1" '>' "$when0" || fail "$WHEN did not advance: $when0 -> $when1"
! grep -q "'listen:' changed\|'buckets:' changed" "$DAEMON_LOG" ||
	fail "a reload without listen/buckets changes warned about them"

# ---- a broken file -----------------------------------------------------------

cp "$CFG" "$WORK/good.yaml"
printf 'targets:\n  - name: t1\n    directory: [unclosed\nprobes: {\n' >"$CFG.new"
install_config
sample_into a_prev "$PAGE" "$A"
kill -HUP "$DAEMON_PID"
wait_until 60 "$OK 0 after a broken file" scraped "$OK" == 0 -1
grep -qE "$(printf '%s' "$CFG" | sed 's/[][\.*^$]/\\&/g'):[0-9]+:[0-9]+: " "$DAEMON_LOG" ||
	fail "the reload error was not logged as $CFG:line:column"
grep -q 'Configuration reload failed' "$DAEMON_LOG" || fail "no 'Configuration reload failed' line"
note "logged: $(grep -F "$CFG:" "$DAEMON_LOG" | tail -1)"
sample_into when2 "$PAGE" "$WHEN"
num "$when2" '==' "$when1" || fail "$WHEN changed on a failed reload: $when1 -> $when2"
wait_until 60 "A keeps growing after the refused reload" at_least "$A" $((${a_prev%.*} + 5))
has_series "$PAGE" "$D" || fail "D's series vanished after a refused reload"
! has_series "$PAGE" "$C" || fail "C came back after a refused reload"

# ---- a valid file over its target's budget: refused the same way ---------------

# The good file without its targets' budget lines: 100ms pings take 2% of t1's time.
grep -v 'max_duty_cycle\|max_write_per_day' "$WORK/good.yaml" >"$CFG.new"
install_config
sample_into a_prev "$PAGE" "$A"
kill -HUP "$DAEMON_PID"
wait_until 60 "the over-budget reload to be logged" grep -q "over 'max_duty_cycle'" "$DAEMON_LOG"
grep -qE "$(printf '%s' "$CFG" | sed 's/[][\.*^$]/\\&/g'):[0-9]+:[0-9]+: target 't1': the schedule keeps it busy .* most costly: " "$DAEMON_LOG" ||
	fail "the over-budget reload was not logged as $CFG:line:column naming the probes"
scraped "$OK" == 0 -1 || fail "$OK is not 0 after an over-budget reload"
wait_until 60 "A keeps growing after the over-budget reload" at_least "$A" $((${a_prev%.*} + 5))
has_series "$PAGE" "$D" || fail "D's series vanished after an over-budget reload"

# ---- fixed --------------------------------------------------------------------

sample_into a_prev "$PAGE" "$A"
cp "$WORK/good.yaml" "$CFG.new"
install_config
kill -HUP "$DAEMON_PID"
wait_until 60 "$OK back to 1 after the fixed file" scraped "$OK" == 1 -1
sample_into a "$PAGE" "$A"
num "$a" '>=' "$a_prev" || fail "A dropped on a reload of an unchanged file: $a_prev -> $a"
sample_into when3 "$PAGE" "$WHEN"
num "$when3" '>' "$when1" || fail "$WHEN did not advance on the fixed file: $when1 -> $when3"

# ---- a spent write budget stays spent across a reload -------------------------

# Target t3's budget is 256KiB a day; with 'expected_latency: 1s' the schedule
# projects one 4KiB write for each run of burst X, which on the null engine
# writes far more in its first run: the budget is spent at once. A reload that
# adds a read probe on t3 starts a new lane for it (a reload keeps only the
# lane of a target whose probes are all as they were), which falls due at
# once and takes over the old lane's day: X and the write ping W stay skipped
# for the budget, and t3's cost counters go on (none goes back).
mkdir "$WORK/t3"
write_third() { # [EXTRA PROBE ITEM]
{
	echo "splay: false"
	echo "targets:"
	target t1
	echo "  - name: t3"
	echo "    directory: $(yaml_str "$WORK/t3")"
	echo "    size: 1MiB"
	echo "    expected_latency: 1s"
	echo "    max_write_per_day: 256KiB"
	echo "probes:"
	ping A t1
	echo "  - {name: W, type: ping, target: t3, op: write, engine: null, interval: 1h}"
	echo "  - {name: X, type: burst, target: t3, rw: randwrite, engine: null, iodepth: 1,"
	echo "     duration: 100ms, every: 1h}"
	[[ -z ${1:-} ]] || echo "  - $1"
} >"$CFG.new"
install_config
}
write_third

reload_count() { grep -c 'Configuration reloaded' "$DAEMON_LOG"; }
reloaded_since() { (($(reload_count) > $1)); }
# The series compared across the reload: runs and budget skips of X and W,
# then t3's cost counters and today's count.
SERIES=(
	'iopulse_probe_runs_total{probe="X",target="t3"}'
	'iopulse_probe_runs_total{probe="W",target="t3"}'
	'iopulse_probe_skipped_total{probe="X",target="t3",reason="budget"}'
	'iopulse_probe_skipped_total{probe="W",target="t3",reason="budget"}'
	'iopulse_target_io_seconds_total{target="t3"}'
	'iopulse_target_written_bytes_total{target="t3"}'
	'iopulse_target_written_today_bytes{target="t3"}'
)
# values: the SERIES in a fresh scrape, into VALUES (absent ones as 0).
values() {
	local i
	scrape_metrics
	for i in "${!SERIES[@]}"; do
		sample_or "VALUES[$i]" 0 "$PAGE" "${SERIES[$i]}"
	done
}
# spent: X ran and spent the budget, and W fell due too (ran or was skipped).
spent() {
	values
	num "${VALUES[0]}" '==' 1 && num "${VALUES[6]}" '>=' 262144 &&
		num "$(awk -v a="${VALUES[1]}" -v b="${VALUES[3]}" 'BEGIN { print a + b }')" '>=' 1
}
# due_again: X and W fell due since BEFORE (ran or were skipped).
due_again() {
	local i
	values
	for i in 0 1; do
		num "$(awk -v a="${VALUES[i]}" -v b="${VALUES[i + 2]}" \
			-v c="${BEFORE[i]}" -v d="${BEFORE[i + 2]}" 'BEGIN { print a + b - c - d }')" '>' 0 ||
			return 1
	done
}

n=$(reload_count)
kill -HUP "$DAEMON_PID"
wait_until 60 "the reload adding t3" reloaded_since "$n"
wait_until 60 "X to spend t3's budget, and W to fall due" spent
BEFORE=("${VALUES[@]}")
note "budget spent: today ${BEFORE[6]} bytes, W ran ${BEFORE[1]} time(s)"

n=$(reload_count)
write_third "{name: R, type: ping, target: t3, op: read, engine: null, interval: 1h}"
kill -HUP "$DAEMON_PID"
wait_until 60 "the reload adding R on t3" reloaded_since "$n"
wait_until 60 "X and W to fall due after the reload" due_again
for i in 0 1; do
	num "${VALUES[i]}" '==' "${BEFORE[i]}" ||
		fail "the reload granted t3's spent budget again: ${SERIES[i]} ${BEFORE[i]} -> ${VALUES[i]}"
done
for i in 2 3; do
	num "${VALUES[i]}" '>' "${BEFORE[i]}" ||
		fail "${SERIES[i]} did not grow after the reload: ${BEFORE[i]} -> ${VALUES[i]}"
done
# The I/O time goes on: R's read adds its own (on the null engine a few hundred
# ns, or none, as the clock reads it). Nothing was written since.
num "${VALUES[4]}" '>=' "${BEFORE[4]}" ||
	fail "${SERIES[4]} went back across the reload: ${BEFORE[4]} -> ${VALUES[4]}"
for i in 5 6; do
	num "${VALUES[i]}" '==' "${BEFORE[i]}" ||
		fail "${SERIES[i]} changed across the reload: ${BEFORE[i]} -> ${VALUES[i]}"
done
c=$(grep -c "Target t3: the probes wrote its max_write_per_day" "$DAEMON_LOG")
((c == 1)) || fail "the spent budget was logged $c times, want once"

stop_daemon TERM 5
note "pass"
