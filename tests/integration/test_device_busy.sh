#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A burst held back while its disk is busy: a loop device this test attaches over
# a file in its own hangfs mount (never a real disk), loaded by fio reading from
# that loop device only. As root only.
#   - while 4 fio jobs keep reading, the burst due at start is skipped with
#     reason device_busy, the log says the disk is busy, the device gauges say
#     what was measured, and the ping on the same target keeps running;
#   - once fio stops, a retry (its next run is 10m away) runs the burst
#     (runs_total 1, its I/Os counted), and the log says the disk is no longer
#     busy;
#   - the steal counters exist from the start for both probes, and the ping's
#     run time adds up.
# The loop device's file is on hangfs, made slow (4 ms a request) while fio
# runs: a loop device over the page cache answers in microseconds, so fio's
# load is then CPU-bound and its utilisation falls under the 50% threshold
# when the CPUs are busy (as low as 0% in a quarter second, with 6 CPU hogs
# on 2 cores; ASan's stage of the suite saw a burst run). At 4 ms a request,
# 4 jobs keep the device busy whatever the CPUs do.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

(($(id -u) == 0)) || skip "needs root to attach a loop device"
require_cmd losetup fio curl
unset IOPULSE_SYSFS # lib.sh hides the disks from the daemons: this test wants them

FIO_PID=
stop_fio() {
	if [[ -n $FIO_PID ]]; then
		kill "$FIO_PID" 2>/dev/null || true
		wait "$FIO_PID" 2>/dev/null || true
	fi
}
on_exit stop_fio
# The hooks run in the order registered: fio stops, the loop device lets go of
# its file, and only then is hangfs unmounted (hangfs.sh's hook).
# A device still open (udev's probe) is detached only once closed: wait for it,
# or hangfs's unmount would find its file busy.
detach_ours() {
	local i
	[[ -n ${LOOP:-} ]] || return 0
	detach_loop "$LOOP"
	for ((i = 0; i < 100; i++)); do
		[[ -e /sys/block/${LOOP#/dev/}/loop ]] || return 0
		sleep 0.1
	done
	echo "# $LOOP is still attached 10s after losetup -d" >&2
}
on_exit detach_ours
# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"

HANGFS_DELAY_US=4000 hangfs_mount
head -c $((64 << 20)) /dev/urandom >"$BACKING/disk.img"
attach_loop "$MNT/disk.img"
DEV=${LOOP#/dev/}
[[ -r /sys/block/$DEV/stat ]] || skip "no /sys/block/$DEV/stat"
kill -s RTMIN+3 "$HANGFS_PID"
wait_hangfs 60 1 'slow (4000 us)'

# io_ticks of the loop device (the 10th field of its stat).
io_ticks() {
	awk '{ print $10 }' "/sys/block/$DEV/stat"
}

# loaded: io_ticks moved since the last call (fio has I/O in flight).
LAST_TICKS=$(io_ticks)
loaded() {
	local t
	t=$(io_ticks)
	[[ $t != "$LAST_TICKS" ]] || return 1
	LAST_TICKS=$t
	sleep 0.3
	[[ $(io_ticks) != "$t" ]]
}

# The load: 4 jobs of random reads on our loop device, read-only.
fio --name=load --filename="$LOOP" --readonly --rw=randread --bs=4k --direct=1 \
	--ioengine=psync --numjobs=4 --time_based --runtime=300 \
	--output="$WORK/fio.out" >/dev/null 2>&1 &
FIO_PID=$!
wait_until 60 "fio to load $LOOP" loaded

CFG="$WORK/busy.yaml"
cat >"$CFG" <<EOF
splay: false
targets:
  - name: dev
    device: $(yaml_str "$LOOP")
    max_duty_cycle: 100% # a 200ms ping is 1% alone
probes:
  - name: p
    type: ping
    target: dev
    interval: 200ms
  - name: b
    type: burst
    target: dev
    rw: randread
    ios: 500
    iodepth: 4
    every: 10m # far off: only a retry can run it within the test
EOF
start_daemon "$CFG"

S_BUSY='iopulse_probe_skipped_total{probe="b",target="dev",reason="device_busy"}'
S_BRUNS='iopulse_probe_runs_total{probe="b",target="dev"}'
S_PRUNS='iopulse_probe_runs_total{probe="p",target="dev"}'
S_BIOS='iopulse_probe_ios_total{probe="b",target="dev",op="read"}'
S_UTIL='iopulse_target_device_utilization_ratio{target="dev"}'
S_QUEUE='iopulse_target_device_queue_depth{target="dev"}'

wait_until 60 "the burst to be held back as device_busy" scraped "$S_BUSY" '>=' 1
sample_into runs "$PAGE" "$S_BRUNS"
num "$runs" == 0 || fail "the burst ran ($runs) while $LOOP was busy"
sample_into pings "$PAGE" "$S_PRUNS"
# The ping keeps running while the burst is held back.
wait_until 60 "the ping to run on while the burst is held back" scraped "$S_PRUNS" '>' "$pings"
sample_into util "$PAGE" "$S_UTIL"
sample_into queue "$PAGE" "$S_QUEUE"
num "$util" '>' 0.5 || num "$queue" '>' 4 ||
	fail "held back, yet utilisation $util and queue depth $queue are under the defaults"
grep -q "Target dev: $DEV is busy (.*): burst b held back, trying again in 10s" "$DAEMON_LOG" ||
	fail "the log does not say $DEV is busy"
sample_into runs "$PAGE" "$S_BRUNS"
num "$runs" == 0 || fail "the burst ran ($runs) while $LOOP was busy"
has_series "$PAGE" 'iopulse_probe_cpu_steal_seconds_total{probe="p",target="dev"}' ||
	fail "no steal counter for the ping"
has_series "$PAGE" 'iopulse_probe_cpu_steal_seconds_total{probe="b",target="dev"}' ||
	fail "no steal counter for the burst"
sample_into run_s "$PAGE" 'iopulse_probe_run_seconds_total{probe="p",target="dev"}'
num "$run_s" '>' 0 || fail "the ping ran, yet its run seconds are $run_s"
note "burst held back while fio loads $LOOP (utilisation $util, queue depth $queue); ping runs on"

# The load stops: a retry runs the burst.
kill -s RTMIN+4 "$HANGFS_PID" # fast before the load stops: a retry finds it so
wait_hangfs 60 1 fast
kill "$FIO_PID"
wait "$FIO_PID" 2>/dev/null || true
FIO_PID=
wait_until 60 "the held-back burst to run once the load stopped" scraped "$S_BRUNS" '>=' 1
wait_until 60 "the burst's I/Os to be counted" scraped "$S_BIOS" '>=' 500
grep -q "Target dev: $DEV is no longer busy (.*): bursts run again" "$DAEMON_LOG" ||
	fail "the log does not say $DEV is no longer busy"
sample_into util "$PAGE" "$S_UTIL"
num "$util" '<=' 0.5 || fail "the burst ran at utilisation $util"
sample_into skipped "$PAGE" "$S_BUSY"
note "burst ran once the load stopped, after $skipped device_busy skip(s)"
stop_daemon
