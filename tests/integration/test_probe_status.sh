#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Every exit status of `iopulse probe`: iopulse(8) EXIT STATUS says which ones
# it exits with ("iopulse probe exits with one of ..."), its --help says the
# same, and each is made to happen here but 71 (out of memory). A read-only
# filesystem is 73, as `iopulse check` says of the same directory; a PATH with
# control characters is measured, shown escaped; one that is not UTF-8 is a
# usage error (64). The read-only filesystem is a bind mount of the test's own
# directory in a mount namespace of its own: nothing outside it sees it, and it
# goes when the namespace does.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd python3
require_disk "$WORK"

SEEN=" "       # the statuses made to happen, " 0 1 64 ... "
UNTESTED=" 71 " # no test can run this machine out of memory on purpose

# status WANT NAME ARGS...: `iopulse probe ARGS` exits WANT (its output in
# $WORK/NAME.out, .err).
status() {
	local want=$1 name=$2
	shift 2
	run_probe "$want" "$WORK/$name.out" "$@"
	[[ $SEEN == *" $want "* ]] || SEEN+="$want "
}

# in_ro SRC DST CMD...: CMD with SRC bind-mounted read-only on DST, in a mount
# namespace of its own; its status.
in_ro() {
	local src=$1 dst=$2
	shift 2
	# shellcheck disable=SC2016 # the inner shell expands them
	unshare --mount --propagation private -- bash -c \
		'mount --bind "$1" "$2" && mount -o remount,bind,ro "$2" || exit 125
		shift 2
		exec "$@"' in_ro "$src" "$dst" "$@"
}

DIR="$WORK/dir"
mkdir "$DIR"

# ---- 0 and 1 ---------------------------------------------------------------

status 0 ok -c 2 -i 0 "$DIR"
grep -q '^read: 2 requests completed' "$WORK/ok.out" || fail "-c 2:"$'\n'"$(cat "$WORK/ok.out")"
status 0 help --help
head -c 100 /dev/urandom >"$WORK/tiny"
status 1 tiny -c 1 "$WORK/tiny"
grep -qF "error: $WORK/tiny is smaller than" "$WORK/tiny.out" || fail "a file too small:"$'\n'"$(cat "$WORK/tiny.out")"

# ---- 64: usage ---------------------------------------------------------------

status 64 unknown --nope "$DIR"
status 64 badcount -c lots "$DIR"
mkdir "$WORK/bad"$'\xff'
status 64 notutf8 -c 1 "$WORK/bad"$'\xff'
grep -qF "PATH '$WORK/bad\\xff' holds bytes that are not UTF-8" "$WORK/notutf8.out.err" ||
	fail "a PATH that is not UTF-8: the message does not name it:"$'\n'"$(cat "$WORK/notutf8.out.err")"
status 64 engine --engine $'sync\xff' -c 1 "$DIR"

# ---- a PATH with control characters: measured, shown escaped ------------------

CTL="$WORK/ctl"$'\n'"forged: line"$'\e[31m\r'
mkdir "$CTL"
CTL_ESC="$WORK/ctl\\nforged: line\\x1b[31m\\r"
status 0 ctl -c 2 -i 0 "$CTL"
grep -qF "<<< $CTL_ESC (" "$WORK/ctl.out" || fail "a PATH with control characters:"$'\n'"$(cat -A "$WORK/ctl.out")"
LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$WORK/ctl.out" "$WORK/ctl.out.err" &&
	fail "a control character of the PATH reached the output:"$'\n'"$(cat -A "$WORK/ctl.out")"
status 0 ctljson -J -c 1 "$CTL"
python3 - "$WORK/ctljson.out" "$CTL" <<'EOF' || fail "-J of a PATH with control characters:"$'\n'"$(cat "$WORK/ctljson.out")"
import json, sys
p = json.load(open(sys.argv[1]))["probes"][0]
assert p["path"] == sys.argv[2] and p["status"] == "ok", p
EOF
[[ -z $(ls -A "$CTL") ]] || fail "the probe left files in the PATH with control characters"

# ---- 66, 77, 78 --------------------------------------------------------------

status 66 missing -c 1 "$WORK/nope"
mkfifo "$WORK/fifo"
status 66 fifo -c 1 "$WORK/fifo"
ln -s "$WORK/tiny" "$WORK/link"
status 77 symlink -c 1 "$WORK/link"
CFG="$WORK/bad.yaml"
target_config "$CFG" "$DIR" 8MiB
ping_item "$CFG" p read "interval: '1s'"
status 78 badconfig --config "$CFG" -c 1
grep -qF "'interval' must be a duration, got the string '1s' (quoted)" "$WORK/badconfig.out.err" ||
	fail "a bad --config: no word of the quoted number:"$'\n'"$(cat "$WORK/badconfig.out.err")"

# ---- 73: a read-only filesystem ----------------------------------------------

RO="$WORK/ro"
mkdir "$RO" "$WORK/rosrc"
rc=0
in_ro "$WORK/rosrc" "$RO" true || rc=$?
if ((rc != 0)); then
	note "read-only filesystem not tested: cannot bind-mount in a mount namespace here (status $rc)"
	UNTESTED+="73 "
else
	rc=0
	in_ro "$WORK/rosrc" "$RO" "$IOPULSE" probe -c 1 "$RO" >"$WORK/ro.out" 2>"$WORK/ro.out.err" || rc=$?
	((rc == 73)) || fail "a directory on a read-only filesystem: status $rc, want 73:"$'\n'"$(cat "$WORK/ro.out.err" "$WORK/ro.out")"
	grep -q "Read-only file system" "$WORK/ro.out" || fail "read-only: the summary does not say so:"$'\n'"$(cat "$WORK/ro.out")"
	SEEN+="73 "
	# What iopulse check says of the same directory: 73 too.
	ROCFG="$WORK/ro.yaml"
	target_config "$ROCFG" "$RO" 8MiB
	ping_item "$ROCFG" p read
	rc=0
	in_ro "$WORK/rosrc" "$RO" "$IOPULSE" check --config "$ROCFG" >/dev/null 2>"$WORK/rocheck.err" || rc=$?
	((rc == 73)) || fail "iopulse check of a directory on a read-only filesystem: status $rc, want 73:"$'\n'"$(cat "$WORK/rocheck.err")"
	# With --config, a target that fails is a probe that failed (iopulse(8)).
	rc=0
	in_ro "$WORK/rosrc" "$RO" "$IOPULSE" probe --config "$ROCFG" -c 1 >"$WORK/rocfg.out" 2>&1 || rc=$?
	((rc == 1)) || fail "iopulse probe --config, its target read-only: status $rc, want 1:"$'\n'"$(cat "$WORK/rocfg.out")"
	[[ -z $(ls -A "$WORK/rosrc") ]] || fail "something was written under the read-only mount"
fi

# ---- the list: iopulse(8), --help and this test agree --------------------------

# "iopulse probe exits with one of 0, 1, 64, 66, 71, 73, 77 and 78, as below."
man_list=$(tr '\n' ' ' <"$SOURCE_DIR/man/iopulse.8" |
	grep -oE 'iopulse probe exits with one of [0-9, and]+' | grep -oE '[0-9]+' | sort -n | tr '\n' ' ')
[[ -n $man_list ]] || fail "iopulse(8) EXIT STATUS no longer says which statuses probe exits with"
"$IOPULSE" probe --help >"$WORK/help.txt"
help_list=$(tr '\n' ' ' <"$WORK/help.txt" | sed -nE 's/.*Exits (.*)\(iopulse\(8\)\).*/\1/p' |
	grep -oE '\b[0-9]+\b' | sort -n | tr '\n' ' ')
[[ $help_list == "$man_list" ]] || fail "iopulse probe --help lists '$help_list', iopulse(8) '$man_list'"
for s in $man_list; do
	grep -qE "^\.B $s\$" "$SOURCE_DIR/man/iopulse.8" || fail "iopulse(8) EXIT STATUS has no entry for $s"
	[[ $SEEN == *" $s "* || $UNTESTED == *" $s "* ]] || fail "status $s of iopulse(8) was not made to happen here"
done
for s in $SEEN; do
	[[ " $man_list" == *" $s "* ]] || fail "iopulse probe exited $s, which iopulse(8) does not list for it"
done

note "pass"
