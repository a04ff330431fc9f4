# shellcheck shell=bash
# SPDX-License-Identifier: MIT
#
# hangfs.sh — a freezable FUSE filesystem for the tests of hung disks. Sourced
# after lib.sh, never run. tests/integration/hangfs.c is the filesystem: a
# pass-through of $BACKING on $MNT whose reads, writes and fsyncs block while it
# is frozen (SIGUSR1) until thawed (SIGUSR2).
#
#   hangfs_mount [NAME [BACKING]]
#                     mount it (skips the test where FUSE cannot be mounted);
#                     without NAME, $BACKING on $MNT (pid $HANGFS_PID, log
#                     $HANGFS_LOG); with NAME, one more mount of the test's
#                     own: BACKING (default $WORK/NAME.backing, created) on
#                     $WORK/NAME, its pid, mount point, backing directory and
#                     log in HANGFS_PIDS[NAME], HANGFS_MNTS[NAME],
#                     HANGFS_BACKINGS[NAME], HANGFS_LOGS[NAME]. hangfs reads
#                     its environment once, at start: set HANGFS_DELAY_US,
#                     HANGFS_SLOW_ONE_IN (hangfs.c) for one mount with
#                     `HANGFS_DELAY_US=N hangfs_mount NAME`.
#                     HANGFS_UNINTERRUPTIBLE=1 in the environment makes blocked
#                     requests ignore the kernel's interrupts, like a driver
#                     that waits uninterruptibly: a process killed while one of
#                     its threads waits there cannot finish exiting until the thaw;
#                     HANGFS_FREEZE_METADATA=1 freezes stat, statfs, open and
#                     create too, like a dead NFS server
#   hangfs_said N T [NAME]       hangfs (the mount NAME) has logged "hangfs: T" N times
#   wait_hangfs S N T [NAME]     wait up to S seconds for that
#   hung_config F E [D]  write a schedule pinging $MNT with engine E ("": the
#                        default) to file F
#                     (and a healthy target in directory D)
# At exit it thaws every mount before the daemons are stopped, then unmounts them.

[[ -n ${HANGFS:-} ]] || skip "HANGFS is not set: hangfs was not built (libfuse3 not found)"
[[ -x $HANGFS ]] || fail "HANGFS=$HANGFS is not an executable"
[[ -c /dev/fuse ]] || skip "/dev/fuse is missing"
require_cmd fusermount3 umount

BACKING="$WORK/backing"
MNT="$WORK/mnt"
HANGFS_LOG="$WORK/hangfs.log"
HANGFS_PID=
declare -A HANGFS_PIDS=() HANGFS_MNTS=() HANGFS_BACKINGS=() HANGFS_LOGS=() # the named mounts
mkdir "$BACKING" "$MNT"
DAEMON_LOGS+=("$HANGFS_LOG") # printed with the daemon's on failure

# mounted [DIR]: something is mounted on DIR (default $MNT).
mounted() {
	grep -qF " ${1:-$MNT} " /proc/self/mountinfo
}

# _hangfs_pids: the pids of every hangfs started and not yet reaped.
_hangfs_pids() {
	local p
	for p in "$HANGFS_PID" "${HANGFS_PIDS[@]}"; do
		[[ -z $p ]] || echo "$p"
	done
}

# hangfs_cleanup: thaw, unmount, stop every hangfs; never leave a mount behind.
# Runs from lib.sh's cleanup, after the daemons are gone.
hangfs_cleanup() {
	local name
	_hangfs_unmount "$MNT" "$HANGFS_PID"
	HANGFS_PID=
	for name in "${!HANGFS_MNTS[@]}"; do
		_hangfs_unmount "${HANGFS_MNTS[$name]}" "${HANGFS_PIDS[$name]:-}"
		unset "HANGFS_PIDS[$name]"
	done
}

# _hangfs_unmount DIR PID: thaw hangfs PID ("": none), unmount DIR, reap PID.
_hangfs_unmount() {
	local mnt=$1 pid=$2
	if [[ -n $pid ]]; then
		kill -USR2 "$pid" 2>/dev/null || true
	fi
	if mounted "$mnt"; then
		fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" || true
	fi
	if [[ -n $pid ]]; then
		reap "$pid" "hangfs (unmounted)" # unmounted, it leaves by itself
	fi
	if mounted "$mnt"; then
		umount -l "$mnt" || true
	fi
	if mount | grep -F " $mnt "; then
		# Leave $WORK alone: removing it would reach through the mount.
		echo "FAIL: $TEST_NAME: $mnt is still mounted after cleanup" >&2
		exit 1
	fi
}
on_exit hangfs_cleanup

# lib.sh's cleanup stops the daemons before it runs the on_exit hooks, and waits
# for them. A daemon thread blocked in a frozen hangfs must not make that wait
# hang: thaw first, then run the usual cleanup with the test's exit status.
_hung_exit() {
	local rc=$? pid
	set +e
	trap - ERR
	for pid in $(_hangfs_pids); do
		kill -USR2 "$pid" 2>/dev/null
	done
	(exit "$rc")
	_cleanup
}
trap _hung_exit EXIT

# hangfs_said COUNT TEXT [NAME]: hangfs (the mount NAME) has logged a line
# containing TEXT COUNT times (it logs each freeze, thaw and blocked request once
# it is in effect).
hangfs_said() {
	local n log=$HANGFS_LOG
	[[ -z ${3:-} ]] || log=${HANGFS_LOGS[$3]}
	n=$(grep -cF -- "hangfs: $2" "$log" || true)
	((n >= $1))
}

# wait_hangfs SECONDS COUNT TEXT [NAME]: wait for hangfs_said, or fail (or hangfs died).
wait_hangfs() {
	local deadline=$(($(now_ms) + $1 * 1000)) pid=$HANGFS_PID
	[[ -z ${4:-} ]] || pid=${HANGFS_PIDS[$4]}
	until hangfs_said "$2" "$3" "${4:-}"; do
		alive "$pid" || fail "hangfs${4:+ $4} exited while waiting for '$3' (x$2)"
		(($(now_ms) < deadline)) || fail "hangfs${4:+ $4} did not log '$3' (x$2) within $1s"
		sleep 0.05
	done
}

# hangfs_mount [NAME [BACKING]]: start hangfs (see the top) and wait until it is
# mounted.
hangfs_mount() {
	local name=${1:-} backing mnt log
	if [[ -z $name ]]; then
		_hangfs_start "$BACKING" "$MNT" "$HANGFS_LOG" HANGFS_PID
		return 0
	fi
	[[ $name =~ ^[a-z0-9_-]+$ ]] || fail "hangfs_mount: a name of [a-z0-9_-], not '$name'"
	[[ -z ${HANGFS_PIDS[$name]:-} ]] || fail "hangfs_mount: $name is mounted already"
	backing=${2:-$WORK/$name.backing}
	mnt="$WORK/$name"
	log="$WORK/hangfs.$name.log"
	mkdir -p "$backing" "$mnt"
	[[ -n ${HANGFS_LOGS[$name]:-} ]] || DAEMON_LOGS+=("$log")
	HANGFS_MNTS[$name]=$mnt
	# shellcheck disable=SC2034 # for the tests that source this file
	HANGFS_BACKINGS[$name]=$backing
	HANGFS_LOGS[$name]=$log
	_hangfs_start "$backing" "$mnt" "$log" "HANGFS_PIDS[$name]"
}

# _hangfs_start BACKING MNT LOG PIDVAR: run hangfs, its pid in the variable (or
# array element) PIDVAR at once, for the cleanup; wait until MNT is mounted.
_hangfs_start() {
	local backing=$1 mnt=$2 log=$3 deadline rc pid
	: >"$log"
	"$HANGFS" "$backing" "$mnt" >"$log" 2>&1 &
	pid=$!
	printf -v "$4" '%s' "$pid"
	deadline=$(($(now_ms) + 60000))
	until mounted "$mnt"; do
		if ! alive "$pid"; then
			rc=0
			wait "$pid" || rc=$?
			printf -v "$4" '%s' ""
			# No FUSE in this kernel, or a container that may not mount.
			if grep -qiE 'device not found|no such device|not permitted|permission denied' \
				"$log"; then
				skip "cannot mount FUSE here: $(cat "$log")"
			fi
			fail "hangfs exited with status $rc before mounting $mnt"
		fi
		(($(now_ms) < deadline)) || fail "hangfs did not mount $mnt within 60s"
		sleep 0.05
	done
	[[ $(stat -f -c %T "$mnt") == fuseblk || $(stat -f -c %T "$mnt") == fuse ]] ||
		fail "$mnt is mounted but not FUSE: $(stat -f -c %T "$mnt")"
	note "hangfs $pid serves $backing on $mnt"
}

# hung_config FILE ENGINE [DIR]: a schedule with one target, "hung", on $MNT
# (O_DIRECT), read-pinged every 100ms with a 1s timeout by probe "ping" on ENGINE
# ("": no 'engine' key, the default); with DIR, a second target "ok" there
# (created), pinged by probe "ok".
hung_config() {
	{
		cat <<-EOF
			targets:
			  - name: hung
			    directory: $(yaml_str "$MNT")
			    max_duty_cycle: 100%
			    max_write_per_day: 0
			    size: 1MiB
			    direct: true
		EOF
		[[ -z ${3:-} ]] || cat <<-EOF
			  - name: ok
			    directory: $(yaml_str "$3")
			    max_duty_cycle: 100%
			    max_write_per_day: 0
			    size: 1MiB
		EOF
		cat <<-EOF
			probes:
			  - name: ping
			    type: ping
			    target: hung
			    op: read
			    interval: 100ms
			    timeout: 1s
		EOF
		[[ -z $2 ]] || printf '    engine: %s\n' "$2"
		[[ -z ${3:-} ]] || cat <<-EOF
			  - name: ok
			    type: ping
			    target: ok
			    op: read
			    interval: 100ms
		EOF
	} >"$1"
	[[ -z ${3:-} ]] || mkdir -p "$3"
}
