# shellcheck shell=bash
# SPDX-License-Identifier: MIT
#
# hangfs.sh — a freezable FUSE filesystem for the tests of hung disks. Sourced
# after lib.sh, never run. tests/integration/hangfs.c is the filesystem: a
# pass-through of $BACKING on $MNT whose reads, writes and fsyncs block while it
# is frozen (SIGUSR1) until thawed (SIGUSR2).
#
#   hangfs_mount      mount it (skips the test where FUSE cannot be mounted);
#                     HANGFS_UNINTERRUPTIBLE=1 in the environment makes blocked
#                     requests ignore the kernel's interrupts, like a driver
#                     that waits uninterruptibly: a process killed while one of
#                     its threads waits there cannot finish exiting until the thaw;
#                     HANGFS_FREEZE_METADATA=1 freezes stat, statfs, open and
#                     create too, like a dead NFS server
#   hangfs_said N T   hangfs has logged "hangfs: T" N times
#   wait_hangfs S N T wait up to S seconds for that
#   hung_config F E [D]  write a schedule pinging $MNT with engine E ("": the
#                        default) to file F
#                     (and a healthy target in directory D)
# At exit it thaws before the daemons are stopped, then unmounts.

[[ -n ${HANGFS:-} ]] || skip "HANGFS is not set: hangfs was not built (libfuse3 not found)"
[[ -x $HANGFS ]] || fail "HANGFS=$HANGFS is not an executable"
[[ -c /dev/fuse ]] || skip "/dev/fuse is missing"
require_cmd fusermount3 umount

BACKING="$WORK/backing"
MNT="$WORK/mnt"
HANGFS_LOG="$WORK/hangfs.log"
HANGFS_PID=
mkdir "$BACKING" "$MNT"
DAEMON_LOGS+=("$HANGFS_LOG") # printed with the daemon's on failure

mounted() {
	grep -qF " $MNT " /proc/self/mountinfo
}

# hangfs_cleanup: thaw, unmount, stop hangfs; never leave the mount behind.
# Runs from lib.sh's cleanup, after the daemons are gone.
hangfs_cleanup() {
	if [[ -n $HANGFS_PID ]]; then
		kill -USR2 "$HANGFS_PID" 2>/dev/null || true
	fi
	if mounted; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" || true
	fi
	if [[ -n $HANGFS_PID ]]; then
		reap "$HANGFS_PID" "hangfs (unmounted)" # unmounted, it leaves by itself
		HANGFS_PID=
	fi
	if mounted; then
		umount -l "$MNT" || true
	fi
	if mount | grep -F " $MNT "; then
		# Leave $WORK alone: removing it would reach through the mount.
		echo "FAIL: $TEST_NAME: $MNT is still mounted after cleanup" >&2
		exit 1
	fi
}
on_exit hangfs_cleanup

# lib.sh's cleanup stops the daemons before it runs the on_exit hooks, and waits
# for them. A daemon thread blocked in a frozen hangfs must not make that wait
# hang: thaw first, then run the usual cleanup with the test's exit status.
_hung_exit() {
	local rc=$?
	set +e
	trap - ERR
	[[ -z $HANGFS_PID ]] || kill -USR2 "$HANGFS_PID" 2>/dev/null
	(exit "$rc")
	_cleanup
}
trap _hung_exit EXIT

# hangfs_said COUNT TEXT: hangfs has logged a line containing TEXT COUNT times
# (it logs each freeze, thaw and blocked request once it is in effect).
hangfs_said() {
	local n
	n=$(grep -cF -- "hangfs: $2" "$HANGFS_LOG" || true)
	((n >= $1))
}

# wait_hangfs SECONDS COUNT TEXT: wait for hangfs_said, or fail (or hangfs died).
wait_hangfs() {
	local deadline=$(($(now_ms) + $1 * 1000))
	until hangfs_said "$2" "$3"; do
		alive "$HANGFS_PID" || fail "hangfs exited while waiting for '$3' (x$2)"
		(($(now_ms) < deadline)) || fail "hangfs did not log '$3' (x$2) within $1s"
		sleep 0.05
	done
}

# hangfs_mount: start hangfs on $MNT and wait until it is mounted.
hangfs_mount() {
	local deadline rc
	: >"$HANGFS_LOG"
	"$HANGFS" "$BACKING" "$MNT" >"$HANGFS_LOG" 2>&1 &
	HANGFS_PID=$!
	deadline=$(($(now_ms) + 60000))
	until mounted; do
		if ! alive "$HANGFS_PID"; then
			rc=0
			wait "$HANGFS_PID" || rc=$?
			HANGFS_PID=
			# No FUSE in this kernel, or a container that may not mount.
			if grep -qiE 'device not found|no such device|not permitted|permission denied' \
				"$HANGFS_LOG"; then
				skip "cannot mount FUSE here: $(cat "$HANGFS_LOG")"
			fi
			fail "hangfs exited with status $rc before mounting $MNT"
		fi
		(($(now_ms) < deadline)) || fail "hangfs did not mount $MNT within 60s"
		sleep 0.05
	done
	[[ $(stat -f -c %T "$MNT") == fuseblk || $(stat -f -c %T "$MNT") == fuse ]] ||
		fail "$MNT is mounted but not FUSE: $(stat -f -c %T "$MNT")"
	note "hangfs $HANGFS_PID serves $BACKING on $MNT"
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
