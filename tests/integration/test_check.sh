#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The command line: `iopulse check` accepts every shipped example (and the YAML
# examples of README.md and iopulse.yaml(5)) and prints an
# effective configuration that is itself valid (and stable when checked again);
# it rejects every file in tests/configs/bad/ with status 78 and a
# `file:line:column: message` on stderr, and a schedule over a target's budget
# with 65 (`run` too), naming the costliest probes; usage errors (a bad
# --timeout too) exit 64;
# `version` and every `--help` exit 0.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd timeout

# run_cli NAME ARGS...: run iopulse with ARGS (10s at most), stdout and stderr into
# $WORK/NAME.out and .err; sets RC. The files are printed if the test fails.
run_cli() {
	local name=$1
	shift
	RC=0
	OUT="$WORK/$name.out"
	ERR="$WORK/$name.err"
	timeout 10 "$IOPULSE" "$@" >"$OUT" 2>"$ERR" </dev/null || RC=$?
	DAEMON_LOGS=("$OUT" "$ERR") # on failure, print what the last command said
	((RC != 124)) || fail "iopulse $* did not finish within 10s"
}

# check_cli NAME ARGS...: run_cli NAME check ARGS..., where a shipped example may
# name directories, files or devices this machine lacks (/srv/data/.iopulse,
# /dev/vdb): status 66 with only such targets reported counts as valid (RC=0).
# Anything else stands.
check_cli() {
	local name=$1 path
	shift
	run_cli "$name" check "$@"
	((RC == 66)) || return 0
	while IFS= read -r path; do
		[[ ! -e $path ]] || fail "iopulse check $*: says '$path' does not exist, but it does"
	done < <(sed -n -E "s/^.*: target '[^']*': (directory|file|device) '(.*)' does not exist( \(iopulse never creates it\))?$/\2/p" "$ERR")
	grep -q 'does not exist' "$ERR" || fail "iopulse check $*: status 66 without a missing target"
	RC=0
}

# Comment lines may say where the configuration came from; the schedule may not differ.
strip_comments() {
	sed -e 's/[[:space:]]#.*$//' -e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$/d' "$1"
}

# check_round_trip NAME: $OUT (an effective configuration) passes check again, and
# checking it once more prints the same schedule.
check_round_trip() {
	local name=$1 first="$WORK/$1.effective.yaml"
	cp "$OUT" "$first"
	[[ -s $first ]] || fail "iopulse check printed nothing for $name"
	check_cli "$name.again" --config "$first"
	((RC == 0)) || fail "the effective configuration printed for $name fails iopulse check (status $RC): $(cat "$ERR")"
	if ! diff -u <(strip_comments "$first") <(strip_comments "$OUT") >"$WORK/$name.diff"; then
		fail "the effective configuration of $name changes when checked again:"$'\n'"$(cat "$WORK/$name.diff")"
	fi
}

# ---- examples: valid, and their effective configuration too ---------------

shopt -s nullglob
examples=("$SOURCE_DIR"/config/examples/*.yaml)
bad=("$SOURCE_DIR"/tests/configs/bad/*.yaml)
shopt -u nullglob

((${#examples[@]} > 0)) || fail "no example configurations in $SOURCE_DIR/config/examples/*.yaml"
for f in "${examples[@]}"; do
	name="example-$(basename "$f" .yaml)"
	check_cli "$name" --config "$f"
	((RC == 0)) || fail "iopulse check --config $f: status $RC, want 0: $(cat "$ERR")"
	check_round_trip "$name"
	note "ok: $f"
done

# ---- the documentation's examples: valid as they stand -------------------------

# The README's YAML example is the fenced block after its "readme-example" marker;
# the man page's is the .EX block of iopulse.yaml(5) EXAMPLE, with \- unescaped.
awk '/^<!-- readme-example/ { m = 1; next } m && /^```yaml/ { p = 1; next } p && /^```/ { exit } p' \
	"$SOURCE_DIR/README.md" >"$WORK/readme-example.yaml"
awk '/^\.SH EXAMPLE/ { m = 1; next } m && /^\.EX/ { p = 1; next } p && /^\.EE/ { exit } p' \
	"$SOURCE_DIR/man/iopulse.yaml.5" | sed 's/\\-/-/g' >"$WORK/man-example.yaml"
for name in readme-example man-example; do
	f="$WORK/$name.yaml"
	grep -q '^probes:' "$f" || fail "no YAML example found for $name (its markers moved?)"
	! grep -qF "\\" "$f" || fail "$name still holds a roff escape: $(grep -F "\\" "$f")"
	check_cli "$name" --config "$f"
	((RC == 0)) || fail "iopulse check rejects the $name: status $RC: $(cat "$ERR")"
	check_round_trip "$name"
	note "ok: $name"
done

# ---- bad configurations: 78 and a positioned message ------------------------

((${#bad[@]} > 0)) || fail "no bad configurations in $SOURCE_DIR/tests/configs/bad/*.yaml"
for f in "${bad[@]}"; do
	name="bad-$(basename "$f" .yaml)"
	run_cli "$name" check --config "$f"
	((RC == 78)) || fail "iopulse check --config $f: status $RC, want 78"
	awk -v p="$f" 'index($0, p ":") == 1 && substr($0, length(p) + 2) ~ /^[0-9]+:[0-9]+: ./ { found = 1 }
		END { exit !found }' "$ERR" ||
		fail "iopulse check --config $f: no '$f:LINE:COLUMN: message' line on stderr"
	note "rejected: $(head -n 1 "$ERR")"
done

# What `run` could not do, `check` refuses, naming the keys and the figures.
declare -A want_msg=(
	[burst-buffers-too-big]="12:17: probe 'huge': the I/O buffers of 'jobs' x 'iodepth' x 'block_size' (64 x 256 x 16MiB = 256GiB) must be at most 256MiB"
	[burst-sequential-part]="13:18: probe 'seq': with 'rw: read' each of the 2 'jobs' walks its own part of the working set (1MiB), and a part (512KiB) is smaller than the largest 'block_size' (1MiB)"
	[burst-ios-rate-too-long]="10:16: probe 'slow': 'ios' at 'rate_iops' (1000000000 at 1 per second) take 277777h46m40s, longer than a burst may run (10m)"
)
for name in "${!want_msg[@]}"; do
	f="$SOURCE_DIR/tests/configs/bad/$name.yaml"
	run_cli "bad-$name-msg" check --config "$f"
	((RC == 78)) || fail "iopulse check --config $f: status $RC, want 78"
	grep -qxF "$f:${want_msg[$name]}" "$ERR" ||
		fail "iopulse check --config $f: want '$f:${want_msg[$name]}' on stderr"
done

# ---- the embedded default ---------------------------------------------------

# Its target is $STATE_DIRECTORY, which systemd makes; here, one of the test's.
export STATE_DIRECTORY="$WORK/state"
mkdir "$STATE_DIRECTORY"
run_cli default check
((RC == 0)) || fail "iopulse check (embedded default): status $RC, want 0: $(cat "$ERR")"
for key in listen targets probes; do
	grep -q "^$key:" "$OUT" || fail "iopulse check (embedded default) prints no top-level '$key:'"
done
check_round_trip default
# ...with what the schedule costs its target, as comments after it.
grep -qxF "#   state: busy 8.6s an hour (0.24%, max_duty_cycle 1%), writes 33.8 MiB a day (max_write_per_day 1GiB)" "$OUT" ||
	fail "iopulse check (embedded default) prints no projected cost of target 'state'"

# ---- the state file: which one run would read, and what is there ---------------------

# Beside the target: its path, and that there is none yet; nothing on stderr.
grep -qxF "# state file: $STATE_DIRECTORY/.iopulse-state" "$OUT" ||
	fail "iopulse check (embedded default) does not say which state file run would read"
grep -qxF "#   not there yet: run writes it a minute after it starts" "$OUT" ||
	fail "iopulse check (embedded default) does not say there is no state file yet"
[[ ! -s $ERR ]] || fail "iopulse check (embedded default) warns: $(cat "$ERR")"
run_cli default-quiet check --quiet
if ((RC != 0)) || grep -q 'state file' "$OUT"; then
	fail "iopulse check --quiet: status $RC, or it speaks of the state file"
fi
# One that is not ours: a warning, the same status, the file left as it was.
echo "notes" >"$STATE_DIRECTORY/.iopulse-state"
run_cli state-foreign check
((RC == 0)) || fail "iopulse check with a foreign state file: status $RC, want 0"
grep -qxF "warning: $STATE_DIRECTORY/.iopulse-state: not an iopulse state file (no IOPULSE-STATE-FILE header): run would ignore it and leave it as it is" "$ERR" ||
	fail "iopulse check does not warn of a state file that is not ours"
[[ $(cat "$STATE_DIRECTORY/.iopulse-state") == notes ]] || fail "iopulse check changed the state file"
# --file-only: which file, not what is there.
run_cli state-file-only check --file-only
if ((RC != 0)) || ! grep -qxF "# state file: $STATE_DIRECTORY/.iopulse-state" "$OUT" || [[ -s $ERR ]]; then
	fail "iopulse check --file-only: status $RC, no state file named, or it looked at it: $(cat "$ERR")"
fi
rm "$STATE_DIRECTORY/.iopulse-state"
# A state directory that is not there: a warning, the same status.
cat >"$WORK/state-missing.yaml" <<EOF
state_directory: $(yaml_str "$WORK/nowhere")
targets:
  - {name: d, directory: $(yaml_str "$STATE_DIRECTORY")}
probes:
  - {name: ping, type: ping, target: d}
EOF
run_cli state-missing check --config "$WORK/state-missing.yaml"
((RC == 0)) || fail "iopulse check with no state directory: status $RC, want 0"
grep -q "^warning: $WORK/nowhere: no such directory .*: run would keep no state file$" "$ERR" ||
	fail "iopulse check does not warn of a missing state directory"
# None at all: said so.
sed 1d "$WORK/state-missing.yaml" >"$WORK/no-state.yaml"
env -u STATE_DIRECTORY "$IOPULSE" check --config "$WORK/no-state.yaml" >"$WORK/no-state.out" 2>&1 ||
	fail "iopulse check without a state directory failed: $(cat "$WORK/no-state.out")"
grep -qxF "# state file: none (state_directory is empty): baselines and states start afresh at each restart" "$WORK/no-state.out" ||
	fail "iopulse check without a state directory does not say so: $(cat "$WORK/no-state.out")"

# ---- a schedule over its budget: 65, naming the target and the costliest probes ----

cat >"$WORK/busy.yaml" <<EOF
targets:
  - name: d
    directory: $(yaml_str "$STATE_DIRECTORY")
probes:
  - {name: ping, type: ping, target: d}
  - {name: qd32, type: burst, target: d, duration: 10s, every: 15m}
EOF
run_cli busy check --config "$WORK/busy.yaml"
((RC == 65)) || fail "iopulse check, schedule over max_duty_cycle: status $RC, want 65"
grep -qxF "$WORK/busy.yaml:2:5: target 'd': the schedule keeps it busy 47.2s an hour (1.31%), over 'max_duty_cycle' (1%, 36.0s an hour); most costly: qd32 40.0s (85%), ping 7.2s (15%); probe less often or for less time, or raise 'max_duty_cycle'" "$ERR" ||
	fail "iopulse check, schedule over max_duty_cycle: no positioned message naming the probes"
grep -q '^#   d: busy 47.2s an hour' "$OUT" || fail "iopulse check, over budget: no projection printed"
cat >"$WORK/writes.yaml" <<EOF
targets:
  - name: d
    directory: $(yaml_str "$STATE_DIRECTORY")
    max_duty_cycle: 10%
probes:
  - {name: wal, type: ping, target: d, op: write, interval: 100ms}
EOF
run_cli writes check --config "$WORK/writes.yaml"
((RC == 65)) || fail "iopulse check, schedule over max_write_per_day: status $RC, want 65"
grep -qxF "$WORK/writes.yaml:2:5: target 'd': the schedule writes 3.3 GiB a day, over 'max_write_per_day' (1GiB); most costly: wal 3.3 GiB (100%); write less often or less, or raise 'max_write_per_day'" "$ERR" ||
	fail "iopulse check, schedule over max_write_per_day: no positioned message"
# run refuses it the same way, before it listens.
run_cli writes-run run --config "$WORK/writes.yaml" --listen 127.0.0.1:0
((RC == 65)) || fail "iopulse run, schedule over max_write_per_day: status $RC, want 65"
grep -qF "$WORK/writes.yaml:2:5: target 'd': the schedule writes 3.3 GiB a day" "$ERR" ||
	fail "iopulse run, schedule over max_write_per_day: no message"

# ---- directory targets: missing (66) or not writable (73) on this machine ----

# dir_config FILE DIR: a configuration with one directory target at DIR, on line 2.
dir_config() {
	cat >"$1" <<EOF
targets:
  - name: d
    directory: $(yaml_str "$2")
probes:
  - name: p
    type: ping
    target: d
EOF
}
D="$WORK/probe-dir"
dir_config "$WORK/dir.yaml" "$D"
run_cli dir-missing check --config "$WORK/dir.yaml"
((RC == 66)) || fail "iopulse check, target directory missing: status $RC, want 66"
grep -qxF "$WORK/dir.yaml:2:5: target 'd': directory '$D' does not exist (iopulse never creates it)" "$ERR" ||
	fail "iopulse check, target directory missing: no '$WORK/dir.yaml:2:5: ...' naming $D"
grep -q '^targets:' "$OUT" || fail "iopulse check, target directory missing: no schedule printed"
[[ ! -e $D ]] || fail "iopulse check created $D"
touch "$D"
run_cli dir-file check --config "$WORK/dir.yaml"
((RC == 66)) || fail "iopulse check, target directory is a file: status $RC, want 66"
# run's own words (daemon/targets/walk.c walks the path): the component that is not one.
grep -qxF "$WORK/dir.yaml:2:5: target 'd': $D: '${D##*/}' is not a directory" "$ERR" ||
	fail "iopulse check, target directory is a file: no message"
rm "$D"
mkdir "$D"
run_cli dir-ok check --config "$WORK/dir.yaml"
((RC == 0)) || fail "iopulse check, target directory writable: status $RC, want 0: $(cat "$ERR")"
[[ -z $(ls -A "$D") ]] || fail "iopulse check wrote into $D: $(ls -A "$D")"
# Not writable: as root (who may write anywhere), run the check as nobody, which
# needs to reach $D ($WORK is 0700) and read the configuration.
chmod 0755 "$D"
chmod 0711 "$WORK"
CHECK_AS=()
if (($(id -u) == 0)); then
	CHECK_AS=(setpriv --reuid=65534 --regid=65534 --clear-groups)
else
	chmod 0555 "$D"
fi
if ! "${CHECK_AS[@]}" test -x "$D" -a -r "$WORK/dir.yaml"; then
	note "nobody cannot reach $D (a private build tree?): not-writable case not checked"
else
	RC=0
	"${CHECK_AS[@]}" "$IOPULSE" check --config "$WORK/dir.yaml" >"$WORK/dir-ro.out" 2>"$WORK/dir-ro.err" || RC=$?
	DAEMON_LOGS=("$WORK/dir-ro.err")
	((RC == 73)) || fail "iopulse check, target directory not writable: status $RC, want 73"
	grep -qE "^$WORK/dir.yaml:2:5: target 'd': directory '$D' is not writable by [^:]+: Permission denied\$" \
		"$WORK/dir-ro.err" || fail "iopulse check, target directory not writable: no positioned message naming $D"
	note "not writable by $(id -un 65534 2>/dev/null || id -un): 73"
fi
chmod 0755 "$D"
chmod 0700 "$WORK"

# ---- what run refuses of a directory, check refuses: same code, same words ----

# check_refuses NAME CFG MSG: `check --config CFG` exits 73 with "CFG:2:5: target
# 'd': MSG" on stderr, and `run` with the same file says MSG of the target.
check_refuses() {
	local name=$1 cfg=$2 msg=$3
	run_cli "$name" check --config "$cfg"
	((RC == 73)) || fail "iopulse check ($name): status $RC, want 73"
	grep -qxF "$cfg:2:5: target 'd': $msg" "$ERR" ||
		fail "iopulse check ($name): no '$cfg:2:5: target 'd': $msg' on stderr"
	start_daemon "$cfg"
	wait_until 60 "run to refuse the target ($name)" grep -qF -- "$msg" "$DAEMON_LOG"
	stop_daemon
	note "check and run refuse ($name): $msg"
}

# require_mount: true on a directory that is not a mount point.
dir_config "$WORK/mnt.yaml" "$D"
sed -i '3a\    require_mount: true' "$WORK/mnt.yaml"
check_refuses require-mount "$WORK/mnt.yaml" "$D is not a mount point, and 'require_mount: true' says it must be: not creating a probe file on the filesystem beneath"
[[ -z $(ls -A "$D") ]] || fail "iopulse check wrote into $D: $(ls -A "$D")"

if (($(id -u) == 0)); then
	# A symlink on the way owned by somebody else (not root, not us): not followed.
	mkdir "$WORK/real"
	ln -s "$WORK/real" "$WORK/link"
	chown -h 65534:65534 "$WORK/link"
	dir_config "$WORK/link.yaml" "$WORK/link"
	check_refuses symlink "$WORK/link.yaml" "$WORK/link: 'link' is a symlink owned by uid 65534: iopulse follows only root's or its own; name the real path"

	# tmpfs: run measures no RAM unless told to.
	T="$WORK/tmpfs"
	mkdir "$T"
	mount_tmpfs "$T" 16M
	dir_config "$WORK/tmpfs.yaml" "$T"
	check_refuses tmpfs "$WORK/tmpfs.yaml" "$T is on tmpfs/ramfs: this measures RAM, not a disk; set 'allow_memory_backed: true' if that is what you want"
	sed -i '3a\    allow_memory_backed: true' "$WORK/tmpfs.yaml"
	run_cli tmpfs-allowed check --config "$WORK/tmpfs.yaml"
	((RC == 0)) || fail "iopulse check, tmpfs with allow_memory_backed: status $RC, want 0: $(cat "$ERR")"

	# Read-only, as a directory outside iopulse.service's sandbox looks to it:
	# check and run both name the fix, ReadWritePaths= in a drop-in.
	mount -o remount,ro "$T" || fail "cannot remount $T read-only"
	run_cli tmpfs-ro check --config "$WORK/tmpfs.yaml"
	((RC == 73)) || fail "iopulse check, read-only directory: status $RC, want 73"
	grep -qE "^$WORK/tmpfs.yaml:2:5: target 'd': directory '$T' is not writable by [^:]+: Read-only file system .*ReadWritePaths= of a drop-in" "$ERR" ||
		fail "iopulse check, read-only directory: no message naming ReadWritePaths="
	start_daemon "$WORK/tmpfs.yaml"
	wait_until 60 "run to name ReadWritePaths= for a read-only directory" \
		grep -qE "Target d is down: $T/.iopulse-probe: cannot create the probe file: Read-only file system .*ReadWritePaths= of a drop-in" "$DAEMON_LOG"
	stop_daemon
	note "read-only: check and run name ReadWritePaths="
else
	note "not root: the symlink, tmpfs and read-only cases are not checked"
fi

# ---- a probe file there that is not ours, a file or device run refuses ------

# snap_stat PATH...: each name as it is (lstat: type, inode, size, mode, owner,
# links, access, modification and change times); snap_data PATH...: the bytes of
# each regular file, never a FIFO's (that would block) and never through a
# symlink (following one sets its access time).
snap_stat() {
	stat -c '%n %F %i %s %a %u:%g %h %X %Y %Z' -- "$@"
}
snap_data() {
	local f
	for f; do
		if [[ ! -L $f && -f $f ]]; then sha256sum -- "$f"; fi
	done
}

# check_leaves NAME CFG MSG PATH...: check_refuses NAME CFG MSG, where check
# changes nothing of PATHs (not a byte, not an access time) and run not a byte.
# Reading the bytes may set an access time: they are read before the first
# look at the times and after the second.
check_leaves() {
	local name=$1 cfg=$2 msg=$3 data stat now
	shift 3
	data=$(snap_data "$@")
	stat=$(snap_stat "$@")
	run_cli "$name" check --config "$cfg"
	now=$(snap_stat "$@")
	[[ $now == "$stat" ]] || fail "iopulse check ($name) changed what it looked at:"$'\n'"$stat"$'\n'"now"$'\n'"$now"
	now=$(snap_data "$@")
	[[ $now == "$data" ]] || fail "iopulse check ($name) changed the bytes of what it looked at:"$'\n'"$data"$'\n'"now"$'\n'"$now"
	check_refuses "$name" "$cfg" "$msg"
	# run reads a header, which may set the access time (field 8); the rest stands.
	now=$(snap_stat "$@")
	[[ $(cut -d' ' -f1-7,9- <<<"$now") == $(cut -d' ' -f1-7,9- <<<"$stat") ]] ||
		fail "iopulse run ($name) changed what it refused:"$'\n'"$stat"$'\n'"now"$'\n'"$now"
	now=$(snap_data "$@")
	[[ $now == "$data" ]] || fail "iopulse run ($name) changed the bytes of what it refused"
}

# One at a time at the daemon's probe-file name: an administrator's data, a
# symlink to a victim, a FIFO (which check must not block on), a hard link.
PD="$WORK/planted"
PF="$PD/.iopulse-probe"
VICTIM="$WORK/victim"
mkdir "$PD"
echo "an administrator's data" >"$VICTIM"
dir_config "$WORK/planted.yaml" "$PD"
for i in {1..300}; do echo "admin data $i, not iopulse's"; done >"$PF"
check_leaves foreign-file "$WORK/planted.yaml" "$PF exists but is not an iopulse probe file (no header): refusing to touch it; remove it or choose another directory" "$PF"
rm "$PF"
ln -s "$VICTIM" "$PF"
check_leaves foreign-symlink "$WORK/planted.yaml" "$PF is a symlink, not an iopulse probe file: refusing to touch it; remove it or choose another directory" "$PF" "$VICTIM"
rm "$PF"
mkfifo "$PF"
check_leaves foreign-fifo "$WORK/planted.yaml" "$PF exists and is not a regular file: refusing to touch it; remove it or choose another directory" "$PF"
rm "$PF"
# Another name of somebody's file: writing ours would overwrite it.
ln "$VICTIM" "$PF"
check_leaves foreign-hardlink "$WORK/planted.yaml" "$PF has 2 hard links, and an iopulse probe file has exactly one: another file linked here, not ours; refusing to touch it; remove it or choose another directory" "$PF" "$VICTIM"
rm "$PF"

# A verify probe's own file is refused the same way. With no probe on the
# target that uses the daemon's probe file, run leaves a file at that name
# alone, and so does check.
VF="$PD/.iopulse-verify.v"
{
	printf 'targets:\n  - name: d\n    directory: %s\n' "$(yaml_str "$PD")"
	printf 'probes:\n  - {name: v, type: verify, target: d, interval: 10s, blocks: 2, blocks_per_run: 1}\n'
} >"$WORK/verify.yaml"
for i in {1..300}; do echo "admin data $i, not iopulse's"; done >"$VF"
check_leaves foreign-verify "$WORK/verify.yaml" "$VF exists but is not an iopulse probe file (no header): refusing to touch it; remove it or choose another directory" "$VF"
rm "$VF"
ln -s "$VICTIM" "$PF"
run_cli verify-leaves-probe-file check --config "$WORK/verify.yaml"
((RC == 0)) || fail "iopulse check, a verify probe only, a symlink at $PF: status $RC, want 0 (run leaves it alone): $(cat "$ERR")"
rm "$PF"

# A probe file of ours passes, whoever owns it: as root, check must not fail on
# the service user's (whose it must be depends on who runs the daemon).
dir_config "$WORK/ours.yaml" "$PD"
sed -i '3a\    size: 1MiB' "$WORK/ours.yaml"
start_daemon "$WORK/ours.yaml"
wait_until 60 "the daemon to lay out $PF" grep -qa '^version: 1$' "$PF"
stop_daemon
run_cli ours check --config "$WORK/ours.yaml"
((RC == 0)) || fail "iopulse check, a probe file of ours: status $RC, want 0: $(cat "$ERR")"
if (($(id -u) == 0)); then
	chown 65534:65534 "$PF"
	run_cli ours-other-user check --config "$WORK/ours.yaml"
	((RC == 0)) || fail "iopulse check as root, the service user's probe file: status $RC, want 0: $(cat "$ERR")"
fi
rm "$PF"

# kind_config FILE KIND PATH [LINE...]: one KIND target 'd' at PATH (line 2, as
# check_refuses wants), with LINEs, and a ping on it.
kind_config() {
	local f=$1 kind=$2 path=$3 line
	shift 3
	{
		printf 'targets:\n  - name: d\n    %s: %s\n' "$kind" "$(yaml_str "$path")"
		for line; do printf '    %s\n' "$line"; done
		printf 'probes:\n  - {name: p, type: ping, target: d}\n'
	} >"$f"
}

# check_missing KIND CFG PATH: `check --config CFG` exits 66 saying the KIND
# target at PATH does not exist.
check_missing() {
	run_cli "$1-missing" check --config "$2"
	((RC == 66)) || fail "iopulse check, $1 target missing: status $RC, want 66"
	grep -qxF "$2:2:5: target 'd': $1 '$3' does not exist" "$ERR" ||
		fail "iopulse check, $1 target missing: no positioned message naming $3"
}

# File targets: everything run checks, through a read-only open.
F="$WORK/data-file"
kind_config "$WORK/file.yaml" file "$F"
check_missing file "$WORK/file.yaml" "$F"
head -c 1000 /dev/urandom >"$F"
check_leaves file-small "$WORK/file.yaml" "$F is smaller than 4096 bytes: nothing to measure" "$F"
rm "$F"
mkfifo "$F"
check_leaves file-fifo "$WORK/file.yaml" "$F: not a regular file" "$F"
rm "$F"
ln -s "$VICTIM" "$F"
check_leaves file-symlink "$WORK/file.yaml" "$F is a symlink: name the file itself" "$F" "$VICTIM"
rm "$F"

# Device targets: a block device (under /dev/, as the configuration wants: the
# cases of an existing one are loop devices of the test's own, below), big
# enough, unused when written to; found without opening the device.
NODEV="/dev/iopulse-test-no-such-device-$$"
kind_config "$WORK/dev.yaml" device "$NODEV"
check_missing device "$WORK/dev.yaml" "$NODEV"

if (($(id -u) == 0)); then
	# A file on tmpfs: run measures no RAM unless told to.
	T2="$WORK/tmpfs-file"
	mkdir "$T2"
	mount_tmpfs "$T2" 1M
	head -c 8192 /dev/urandom >"$T2/file"
	kind_config "$WORK/tmpfs-file.yaml" file "$T2/file"
	check_leaves file-tmpfs "$WORK/tmpfs-file.yaml" "$T2/file is on tmpfs/ramfs: this measures RAM, not a disk; set 'allow_memory_backed: true' if that is what you want" "$T2/file"
	kind_config "$WORK/tmpfs-file-ok.yaml" file "$T2/file" "allow_memory_backed: true"
	run_cli file-tmpfs-allowed check --config "$WORK/tmpfs-file-ok.yaml"
	((RC == 0)) || fail "iopulse check, a file on tmpfs with allow_memory_backed: status $RC, want 0: $(cat "$ERR")"
fi

if (($(id -u) == 0)) && command -v losetup >/dev/null; then
	# Loop devices of the test's own, over files in $WORK: too small to measure...
	head -c 2048 /dev/zero >"$WORK/tiny.img"
	attach_loop "$WORK/tiny.img"
	kind_config "$WORK/tiny.yaml" device "$LOOP"
	check_leaves device-tiny "$WORK/tiny.yaml" "$LOOP has 2048 bytes (no medium?): nothing to measure" "$WORK/tiny.img"
	# ...and mounted, with a probe that writes.
	if command -v mkfs.ext4 >/dev/null; then
		head -c $((8 << 20)) /dev/zero >"$WORK/fs.img"
		mkfs.ext4 -q -F "$WORK/fs.img" || fail "mkfs.ext4 $WORK/fs.img failed"
		attach_loop "$WORK/fs.img"
		mkdir "$WORK/mnt"
		mount "$LOOP" "$WORK/mnt" || fail "cannot mount $LOOP on $WORK/mnt"
		umount_fs() { ! grep -qF " $WORK/mnt " /proc/self/mountinfo || umount -l "$WORK/mnt"; }
		CLEANUP_HOOKS=("umount_fs" "${CLEANUP_HOOKS[@]}") # before the loop is detached
		kind_config "$WORK/mounted.yaml" device "$LOOP" "allow_device_writes: true"
		sed -i 's/type: ping,/type: ping, op: write,/' "$WORK/mounted.yaml"
		check_refuses device-mounted "$WORK/mounted.yaml" "$LOOP is mounted at $WORK/mnt: refusing to write to it"
		umount "$WORK/mnt"
	else
		note "no mkfs.ext4: the mounted device case is not checked"
	fi
else
	note "not root, or no losetup: the loop device cases are not checked"
fi

# ---- --quiet and --file-only: what the unit's ExecReload= runs -----------------

# Quiet on success: not a byte.
run_cli quiet check --quiet --config "$WORK/dir.yaml"
((RC == 0)) || fail "iopulse check --quiet: status $RC, want 0: $(cat "$ERR")"
[[ ! -s $OUT && ! -s $ERR ]] || fail "iopulse check --quiet printed something on success"
# The file is still checked, errors still said.
run_cli quiet-bad check -q --file-only --config "$SOURCE_DIR/tests/configs/bad/burst-buffers-too-big.yaml"
((RC == 78)) || fail "iopulse check -q --file-only, a bad file: status $RC, want 78"
grep -qF "burst-buffers-too-big.yaml:12:17: " "$ERR" || fail "iopulse check -q --file-only: no positioned error"
[[ ! -s $OUT ]] || fail "iopulse check -q printed the schedule of a bad file"
# A target directory missing on this machine is run's to live with (the target
# is down), not a reason to refuse a reload.
rmdir "$D"
run_cli file-only check --quiet --file-only --config "$WORK/dir.yaml"
((RC == 0)) || fail "iopulse check --file-only, target directory missing: status $RC, want 0: $(cat "$ERR")"
mkdir "$D"

# ---- a missing file ---------------------------------------------------------

missing="$WORK/does-not-exist.yaml"
run_cli missing check --config "$missing"
((RC == 78)) || fail "iopulse check --config $missing: status $RC, want 78"
grep -qF "$missing" "$ERR" || fail "the error for a missing configuration does not name $missing"

# ---- usage errors -------------------------------------------------------------

run_cli bogus bogus
((RC == 64)) || fail "iopulse bogus: status $RC, want 64"
[[ -s $ERR ]] || fail "iopulse bogus: nothing on stderr"
run_cli run-bogus run --bogus --listen 127.0.0.1:0
((RC == 64)) || fail "iopulse run --bogus: status $RC, want 64"
run_cli check-bogus check --bogus
((RC == 64)) || fail "iopulse check --bogus: status $RC, want 64"
# --timeout: a duration in a probe timeout's range (test_check_hung.sh uses it).
for arg in 5 0s 11m soon; do
	run_cli "check-timeout-$arg" check --timeout "$arg" --config "$WORK/dir.yaml"
	((RC == 64)) || fail "iopulse check --timeout $arg: status $RC, want 64"
	grep -qxF "iopulse check: invalid --timeout '$arg': use a duration from 1ms to 10m, such as 5s" "$ERR" ||
		fail "iopulse check --timeout $arg: no clear message: $(cat "$ERR")"
done
run_cli check-timeout check --quiet --timeout 1m30s --config "$WORK/dir.yaml"
((RC == 0)) || fail "iopulse check --timeout 1m30s: status $RC, want 0: $(cat "$ERR")"
# An empty file name is a usage error, not a file that cannot be read.
for cmd in check run probe; do
	run_cli "$cmd-empty-config" "$cmd" --config ""
	((RC == 64)) || fail "iopulse $cmd --config '': status $RC, want 64"
	grep -qx "iopulse $cmd: --config: empty file name" "$ERR" ||
		fail "iopulse $cmd --config '': no 'iopulse $cmd: --config: empty file name' on stderr"
done

# ---- version and help ---------------------------------------------------------

run_cli version version
((RC == 0)) || fail "iopulse version: status $RC, want 0"
grep -qE '[0-9]+\.[0-9]+(\.[0-9]+)?' "$OUT" || fail "iopulse version prints no version number on stdout"
note "version: $(head -n 1 "$OUT")"
run_cli version-extra version --config /nonexistent
((RC == 64)) || fail "iopulse version --config: status $RC, want 64 (version takes no options)"
grep -q "unexpected argument '--config'" "$ERR" || fail "iopulse version --config: no clear message"

for cmd in "" run check version; do
	name="help${cmd:+-$cmd}"
	# shellcheck disable=SC2086 # an empty $cmd is no argument
	run_cli "$name" $cmd --help
	((RC == 0)) || fail "iopulse ${cmd:+$cmd }--help: status $RC, want 0"
	grep -qi usage "$OUT" || fail "iopulse ${cmd:+$cmd }--help: no usage on stdout"
done

note "pass"
