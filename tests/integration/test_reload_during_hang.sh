#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Reloads while a target hangs (hangfs, frozen) change nothing they do not have
# to, and nothing a lane left in the kernel finishes late can hurt the daemon.
# Targets "hung" (on hangfs) and "ok" (a plain directory), 100ms read pings.
# Twice over, each time from a fresh freeze:
#   1. Frozen until "hung" is stuck; a storm of SIGHUPs of the unchanged file:
#      "hung" keeps its lane (no new thread, no new descriptor) and stays stuck,
#      never down; "ok" keeps pinging.
#   2. Still frozen, a storm of SIGHUPs of files that change "hung" (its label
#      and its probe's interval) every few signals: each change leaves the old
#      lane in the kernel and starts a new one, which waits for the old one and
#      never touches the target meanwhile: at most one thread more than before,
#      "hung" still stuck, never down (not "busy": the probe file's lock is the
#      old lane's until it lets go).
#   3. Still frozen, "hung" removed and added back, moved to another directory
#      and back, its path spelled another way ("$MNT/"): each of its new lanes
#      waits for the one left in the kernel however many reloads came between
#      (one claim per place): still one request blocked in hangfs, "hung"
#      stuck and never down.
#   4. Thawed: the lane left in the kernel returns, lets go of everything (its
#      probe file and lock first) and frees itself; the newest lane takes the
#      target and it is up again, pinging. Threads (/proc/PID/task) and
#      descriptors (/proc/PID/fd) are what they were before the freeze, and
#      the daemon is alive: its late results touched nothing freed (the ASan
#      stage runs this too, and ASan aborts the daemon at the first bad access).
# Skipped where FUSE cannot be mounted (see hangfs.sh).

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"
# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"

require_cmd curl
require_disk "$WORK"
hangfs_mount

CFG="$WORK/iopulse.yaml"
OK_DIR="$WORK/ok"
OTHER_DIR="$WORK/other"
mkdir "$OK_DIR" "$OTHER_DIR"

# write_config VARIANT [DIR]: the schedule, "hung" defined by VARIANT (a, b,
# ...): its label and its ping's interval differ from one variant to the next;
# on DIR ($MNT); "none": without "hung".
write_config() {
	local interval=100ms dir=${2:-$MNT}
	[[ $1 == a ]] || interval=150ms
	{
		echo "splay: false"
		echo "targets:"
		[[ $1 == none ]] || cat <<-EOF
			  - name: hung
			    directory: $(yaml_str "$dir")
			    max_duty_cycle: 100%
			    max_write_per_day: 0
			    size: 1MiB
			    labels: {variant: $1}
		EOF
		cat <<-EOF
			  - name: ok
			    directory: $(yaml_str "$OK_DIR")
			    max_duty_cycle: 100%
			    max_write_per_day: 0
			    size: 1MiB
			probes:
			  - name: okping
			    type: ping
			    target: ok
			    op: read
			    interval: 100ms
		EOF
		[[ $1 == none ]] || cat <<-EOF
			  - name: ping
			    type: ping
			    target: hung
			    op: read
			    interval: $interval
			    timeout: 1s
		EOF
	} >"$CFG.new"
	mv "$CFG.new" "$CFG" # a reload never reads half a file
}

state_is() { # TARGET STATE: iopulse_target_state says so
	scraped "iopulse_target_state{target=\"$1\",state=\"$2\"}" == 1
}
threads() { ls "/proc/$DAEMON_PID/task" | wc -l; }
fds() { ls "/proc/$DAEMON_PID/fd" | wc -l; }
threads_at_most() { (($(threads) <= $1)); }
back_to() { # THREADS FDS
	(($(threads) == $1 && $(fds) == $2))
}
okpings() { # VAR: okping's count now
	scrape_metrics
	sample_into "$1" "$PAGE" 'iopulse_probe_ios_total{probe="okping",target="ok",op="read"}'
}
# reloaded_since T: the last successful reload finished after Unix time T (a
# reload that started after the last SIGHUP, coalesced or not, is done).
reloaded_since() {
	scraped iopulse_config_last_reload_success_timestamp_seconds '>' "$1"
}
# storm N VARIANTS...: N SIGHUPs at about 50 a second, the file rewritten to
# the next of VARIANTS (in turn; VARIANT or VARIANT:DIR, as write_config takes
# them) before every 10th; then wait until a reload that began after the last
# one is done.
storm() {
	local n=$1 i=0 last v
	shift
	local variants=("$@")
	while ((i < n)); do
		if ((i % 10 == 0)); then
			v=${variants[i / 10 % ${#variants[@]}]}
			if [[ $v == *:* ]]; then
				write_config "${v%%:*}" "${v#*:}"
			else
				write_config "$v"
			fi
		fi
		# Before the signal: the reload it starts (or that a SIGHUP merged
		# with it starts) ends after this.
		last=$(date +%s.%N)
		kill -HUP "$DAEMON_PID"
		i=$((i + 1))
		sleep 0.02
	done
	wait_until 300 "a reload after the storm's last SIGHUP" reloaded_since "$last"
	require_alive
}

write_config a
start_daemon "$CFG"
wait_until 60 "hung up" state_is hung up
wait_until 60 "ok up" state_is ok up
# Steady: nothing of the start-up left (the reload of a stat helper, a scrape's
# connection closing).
base_threads=$(threads)
base_fds=$(fds)
wait_until 60 "a steady thread and descriptor count" back_to "$base_threads" "$base_fds"
note "before: $base_threads threads, $base_fds descriptors"

for round in 1 2; do
	storm 1 a # the file of the unchanged storm below, in force before the freeze
	kill -USR1 "$HANGFS_PID"
	wait_hangfs 60 "$round" frozen
	wait_until 60 "hung stuck (round $round)" state_is hung stuck

	# ---- 1. the unchanged file: the lane stays ----
	storm 150 a
	state_is hung stuck || fail "hung is not stuck after the unchanged reloads: $(grep 'iopulse_target_state{target="hung"' "$PAGE")"
	threads_at_most "$base_threads" ||
		fail "unchanged reloads during the hang: $(threads) threads, $base_threads before"
	(($(fds) <= base_fds)) || fail "unchanged reloads during the hang: $(fds) descriptors, $base_fds before"
	okpings before
	wait_until 60 "okping counted during the hang" scraped \
		'iopulse_probe_ios_total{probe="okping",target="ok",op="read"}' '>' "$before"
	note "round $round: unchanged reloads kept the stuck lane: $(threads) threads, $(fds) descriptors"

	# ---- 2. files that change "hung": a new lane waits for the stuck one ----
	storm 150 b a
	state_is hung stuck || fail "hung is not stuck after the changing reloads: $(grep 'iopulse_target_state{target="hung"' "$PAGE")"
	threads_at_most $((base_threads + 1)) ||
		fail "changing reloads during the hang: $(threads) threads, $base_threads before (one more at most: the lane left in the kernel)"
	grep -q 'is in use by another iopulse' "$DAEMON_LOG" &&
		fail "a new lane found the probe file busy: it touched the target while the old lane was in the kernel"
	note "round $round: changing reloads: $(threads) threads, $(fds) descriptors during the hang"

	# ---- 3. "hung" gone and back, moved and back, spelled anew: one place ----
	storm 10 none
	storm 10 a
	storm 10 a:"$OTHER_DIR"
	wait_until 60 "hung up on another directory" state_is hung up
	storm 10 a
	storm 10 a:"$MNT/"
	state_is hung stuck || fail "hung is not stuck on its place again: $(grep 'target="hung"' "$PAGE" | grep state)"
	blocked=$(grep -c 'read blocked' "$HANGFS_LOG")
	((blocked == round)) ||
		fail "$blocked reads blocked in hangfs in $round freeze(s): a new lane of hung touched its place while the old one was in the kernel"
	threads_at_most $((base_threads + 1)) ||
		fail "hung gone and back during the hang: $(threads) threads, $base_threads before"
	note "round $round: hung gone, moved, respelled: one read blocked, $(threads) threads"

	# ---- 4. thawed: everything let go, the target back up ----
	kill -USR2 "$HANGFS_PID"
	wait_hangfs 60 "$round" thawed
	wait_until 120 "hung up after the thaw (round $round)" state_is hung up
	wait_until 120 "threads and descriptors as before the freeze (round $round; now $(threads), $(fds))" \
		back_to "$base_threads" "$base_fds"
	scraped 'iopulse_probe_ios_total{probe="ping",target="hung",op="read"}' '>=' 0 ||
		fail "hung's ping has no series after the thaw"
	sample_into pings "$PAGE" 'iopulse_probe_ios_total{probe="ping",target="hung",op="read"}'
	wait_until 60 "hung pinged again after the thaw" scraped \
		'iopulse_probe_ios_total{probe="ping",target="hung",op="read"}' '>' "$pings"
	if grep -q 'target="hung",state="down"} 1' "$WORK"/scrape.*.prom; then
		fail "hung was down at some point: $(grep -l 'target="hung",state="down"} 1' "$WORK"/scrape.*.prom | head -n 1)"
	fi
	note "round $round: after the thaw: $(threads) threads, $(fds) descriptors, hung up"
done

grep -E 'AddressSanitizer|runtime error' "$DAEMON_LOG" && fail "sanitizer report in the log"
stop_daemon TERM 10
note "pass"
