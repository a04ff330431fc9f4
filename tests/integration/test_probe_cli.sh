#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `iopulse probe PATH...`, the ioping-like command line: each ioping flag it
# shares is run through both tools on the same directory and must do the same
# thing (count, quiet, period summaries, deadline, size, working set, keep,
# write, sequential, rate); options in any order; JSON against the schema;
# refusals (symlink, tmpfs, writes on a file) with their exit statuses; the
# daemon and `probe` on one directory at once; SIGINT prints the summary so
# far; the sync engine's iodepth warning; every --help option in iopulse(8).
# Behaviour only, never timings.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

PYTHON=python3
[[ -x /usr/bin/python3 ]] && PYTHON=/usr/bin/python3
require_cmd ioping "$PYTHON"
require_disk "$WORK"
SCHEMA="$SOURCE_DIR/docs/probe-output.schema.json"

DIR="$WORK/dir"
mkdir "$DIR"

# both NAME IOPING_ARGS -- IOPULSE_ARGS: run ioping and iopulse probe on $DIR
# (each given its own arguments; $DIR last), both must exit 0; stdout in
# $WORK/NAME.ioping and $WORK/NAME.iopulse.
both() {
	local name=$1 rc=0 a=()
	shift
	while [[ $1 != -- ]]; do
		a+=("$1")
		shift
	done
	shift
	timeout 60 ioping "${a[@]}" "$DIR" >"$WORK/$name.ioping" 2>"$WORK/$name.ioping.err" || rc=$?
	((rc == 0)) || fail "ioping ${a[*]}: status $rc:"$'\n'"$(cat "$WORK/$name.ioping.err")"
	timeout 60 "$IOPULSE" probe "$@" "$DIR" >"$WORK/$name.iopulse" 2>"$WORK/$name.iopulse.err" || rc=$?
	((rc == 0)) || fail "iopulse probe $*: status $rc:"$'\n'"$(cat "$WORK/$name.iopulse.err" "$WORK/$name.iopulse")"
}

# count FILE REGEX: lines of FILE matching REGEX (grep -E), into N.
count() {
	N=$(grep -cE -- "$2" "$1") || true
}

# same_count NAME REGEX_IOPING REGEX_IOPULSE WANT: both outputs of NAME have
# WANT lines matching their regex.
same_count() {
	local n1 n2
	count "$WORK/$1.ioping" "$2"
	n1=$N
	count "$WORK/$1.iopulse" "$3"
	n2=$N
	((n1 == $4 && n2 == $4)) ||
		fail "$1: ioping has $n1 lines matching '$2', iopulse $n2 matching '$3'; want $4 each:"$'\n'"$(cat "$WORK/$1.ioping")"$'\n---\n'"$(cat "$WORK/$1.iopulse")"
}

# listing DIR: the names in DIR, sorted, one line.
listing() {
	LIST=$(cd "$1" && find . -mindepth 1 -maxdepth 1 | sort | tr '\n' ' ')
}

# ---- -c, request lines and numbering, -s ------------------------------------

both count -c 5 -i 0 -- -c 5 -i 0
same_count count 'request=[0-9]+ time=' 'request=[0-9]+ time=' 5
for f in ioping iopulse; do
	grep -q 'request=5 time=' "$WORK/count.$f" || fail "$f -c 5: no request=5:"$'\n'"$(cat "$WORK/count.$f")"
	grep -q 'request=6' "$WORK/count.$f" && fail "$f -c 5: a request=6"
	# The size column: ioping's "4 KiB", ours "4.0 KiB".
	count "$WORK/count.$f" '^4(\.0)? KiB <<< '
	((N == 5)) || fail "$f -c 5: $N lines start with the 4 KiB read column"
done
grep -q ' (ext4\| ([a-z0-9]* [a-z0-9]*): ' "$WORK/count.iopulse" ||
	fail "no (filesystem device) in the request lines:"$'\n'"$(cat "$WORK/count.iopulse")"
listing "$DIR"
[[ -z $LIST ]] || fail "-c 5 left files behind in $DIR: $LIST"

both size -c 2 -i 0 -s 8k -- -s 8k -c 2 -i 0
same_count size '^8(\.0)? KiB <<< ' '^8(\.0)? KiB <<< ' 2

# ---- -q, -p ---------------------------------------------------------------

both quiet -q -c 3 -i 0 -- -c 3 -i 0 -q
same_count quiet 'request=' 'request=' 0
same_count quiet 'statistics' 'statistics' 1
same_count quiet '^min/avg/max/mdev = |^  min/avg/max/mdev = ' '^  min/avg/max/mdev = ' 1

# ioping prints its raw statistics every N requests past its warm-up one; we
# print a summary line every N requests: with -c 5 -p 2, two of them in both.
both period -c 5 -p 2 -i 0 -- -i 0 -p 2 -c 5
same_count period '^[0-9]+ [0-9]+ [0-9]+ [0-9]+ ' '^--- 2 requests \(to request=[0-9]+\): min/avg/max/mdev = ' 2

# ---- -w ends a run without -c ------------------------------------------------

both deadline -w 1 -i 0.2 -- -w 1 -i 0.2
for f in ioping iopulse; do
	count "$WORK/deadline.$f" 'request='
	((N >= 1)) || fail "$f -w 1 -i 0.2: no request at all"
	grep -q statistics "$WORK/deadline.$f" || fail "$f -w 1: no summary"
done

# ---- -k keeps the file, the next -k reuses it; -S is its size ----------------

both keep -k -c 2 -i 0 -S 2m -- -c 2 -k -i 0 -S 2m
[[ -f $DIR/ioping.tmp ]] || fail "ioping -k left no ioping.tmp"
KEPT=$DIR/iopulse-probe.tmp
[[ -f $KEPT && ! -L $KEPT ]] || fail "iopulse probe -k left no $KEPT"
# -S in both: ioping's file is the working set, ours a 4KiB header and the working set.
size=$(stat -c %s "$DIR/ioping.tmp")
((size == 2 * 1024 * 1024)) || fail "ioping -S 2m: ioping.tmp is $size bytes"
size=$(stat -c %s "$KEPT")
((size == 4096 + 2 * 1024 * 1024)) || fail "iopulse probe -S 2m: $KEPT is $size bytes, want 4096 + 2MiB"
ino=$(stat -c %i "$KEPT")
run_probe 0 "$WORK/keep2.out" -k -S 2m -c 1 -q "$DIR"
[[ $(stat -c %i "$KEPT") == "$ino" ]] || fail "the second -k did not reuse $KEPT (new inode)"
grep -q "Laying out" "$WORK/keep2.out.err" && fail "the second -k laid the file out again"
rm -f "$DIR/ioping.tmp" "$KEPT"

# ---- -W, -Y, -C, -L, -R ----------------------------------------------------

both write -W -c 2 -i 0 -- -W -c 2 -i 0
same_count write '^4(\.0)? KiB >>> ' '^4(\.0)? KiB >>> ' 2
run_probe 0 "$WORK/sync.out" -c 2 -i 0 -W -Y "$DIR"
count "$WORK/sync.out" '>>> .* time=.* fdatasync='
((N == 2)) || fail "-W -Y: $N request lines with fdatasync=, want 2:"$'\n'"$(cat "$WORK/sync.out")"
grep -q '^fdatasync: 2 requests completed' "$WORK/sync.out" || fail "-W -Y: no fdatasync summary"
run_probe 0 "$WORK/cached.out" -C -c 1 -i 0 "$DIR"
grep -q "no O_DIRECT" "$WORK/cached.out.err" || fail "-C does not say it measures without O_DIRECT"
# -L: sequential, and 256k requests unless -s, in both.
both seq -L -c 3 -i 0 -- -L -c 3 -i 0
same_count seq '^256(\.0)? KiB <<< ' '^256(\.0)? KiB <<< ' 3
both rate -R -c 50 -- -R -c 50
same_count rate 'request=' 'request=' 0
same_count rate 'statistics' 'statistics' 1
listing "$DIR"
[[ -z $LIST ]] || fail "probes without -k left files behind in $DIR: $LIST"

# ---- a burst --------------------------------------------------------------

run_probe 0 "$WORK/burst.out" --rw randread -Q 4 -c 200 "$DIR"
grep -q '^read: 200 requests completed' "$WORK/burst.out" || fail "burst -c 200:"$'\n'"$(cat "$WORK/burst.out")"
grep -q 'burst statistics' "$WORK/burst.out" || fail "burst: no burst summary"
grep -q 'p50/p90/p99/p99.9 = ' "$WORK/burst.out" || fail "burst: no percentiles"
run_probe 0 "$WORK/syncq.out" --engine sync --iodepth 8 -c 100 "$DIR"
grep -q "sync engine runs one I/O at a time" "$WORK/syncq.out.err" ||
	fail "a sync burst at iodepth 8 runs without a word:"$'\n'"$(cat "$WORK/syncq.out.err")"
run_probe 0 "$WORK/syncq1.out" --engine sync --iodepth 1 -c 100 "$DIR"
[[ ! -s $WORK/syncq1.out.err ]] || fail "a sync burst at iodepth 1 warns:"$'\n'"$(cat "$WORK/syncq1.out.err")"
CHK="$WORK/sync.yaml"
target_config "$CHK" "$DIR" 8MiB
cat >>"$CHK" <<EOF
  - name: b
    type: burst
    target: t1
    engine: sync
    iodepth: 8
EOF
"$IOPULSE" check --config "$CHK" >/dev/null 2>"$WORK/check.err" || fail "iopulse check of a sync burst failed"
grep -q "Probe b: the sync engine runs one I/O at a time" "$WORK/check.err" ||
	fail "iopulse check says nothing of a sync burst at iodepth 8:"$'\n'"$(cat "$WORK/check.err")"
# The daemon logs it at start-up too.
start_daemon "$CHK"
wait_until 10 "the daemon's warning of a sync burst at iodepth 8" \
	grep -q "warning: Probe b: the sync engine runs one I/O at a time" "$DAEMON_LOG"
stop_daemon

# ---- JSON ------------------------------------------------------------------

run_probe 0 "$WORK/json.out" "$DIR" -J -c 3 -i 0 -W -Y
"$PYTHON" - "$SCHEMA" "$WORK/json.out" <<'EOF' || fail "-J output:"$'\n'"$(cat "$WORK/json.out")"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
jsonschema.Draft202012Validator(schema).validate(doc)
p = doc["probes"][0]
assert p["requests"] == 3 and p["target_kind"] == "directory" and p["status"] == "ok", p
ops = {o["op"]: o for o in p["ops"]}
assert ops["write"]["ios"] == 3 and ops["fdatasync"]["ios"] == 3, ops
assert "mdev" in ops["write"]["latency_seconds"], ops
EOF

# ---- refusals and usage errors --------------------------------------------

ln -s "$DIR" "$WORK/link"
run_probe 77 "$WORK/link.out" -c 1 "$WORK/link"
grep -q "symlink" "$WORK/link.out.err" || fail "a symlinked PATH: no word of the symlink"
head -c 65536 /dev/urandom >"$WORK/file"
run_probe 77 "$WORK/wfile.out" -W -c 1 "$WORK/file"
grep -q "only reads it" "$WORK/wfile.out.err" || fail "-W on a file: no clear message"
run_probe 0 "$WORK/rfile.out" -c 2 -i 0 -q "$WORK/file"
grep -q '^read: 2 requests completed' "$WORK/rfile.out" || fail "reading a file:"$'\n'"$(cat "$WORK/rfile.out")"
run_probe 66 "$WORK/missing.out" -c 1 "$WORK/nope"
run_probe 64 "$WORK/ysync.out" -Y -c 1 "$DIR"
run_probe 64 "$WORK/cfgsize.out" --config "$CHK" -s 8k
grep -q -- "--size" "$WORK/cfgsize.out.err" || fail "--config with -s: the message does not name --size"

if [[ $EUID == 0 ]] && mkdir "$WORK/tmpfs" && mount -t tmpfs -o size=16m iopulse-test "$WORK/tmpfs" 2>/dev/null; then
	TMPFS_MOUNTS+=("$WORK/tmpfs")
	run_probe 77 "$WORK/tmpfs.out" -c 1 "$WORK/tmpfs"
	grep -q -- "--allow-tmpfs" "$WORK/tmpfs.out.err" || fail "tmpfs: the message does not name --allow-tmpfs"
	run_probe 0 "$WORK/tmpfs2.out" -c 1 -C -S 1m --allow-tmpfs "$WORK/tmpfs"
else
	note "tmpfs refusal not tested: needs root and mount"
fi

# ---- a block device of the test's own: read, never written ------------------

IMG="$WORK/disk.img"
head -c $((8 << 20)) /dev/urandom >"$IMG"
LOOP=
detach() { [[ -z $LOOP ]] || losetup -d "$LOOP" || echo "# cannot detach $LOOP" >&2; }
on_exit detach
if command -v losetup >/dev/null && LOOP=$(losetup --find --show "$IMG" 2>/dev/null) &&
	[[ $(losetup -n -O BACK-FILE "$LOOP" | sed 's/[[:space:]]*$//') == "$IMG" ]]; then
	sum=$(sha256sum <"$IMG")
	run_probe 0 "$WORK/dev.out" -c 3 -i 0 "$LOOP"
	count "$WORK/dev.out" "<<< $LOOP .*request=[0-9]+ time="
	((N == 3)) || fail "reading $LOOP: $N request lines, want 3:"$'\n'"$(cat "$WORK/dev.out")"
	run_probe 77 "$WORK/devw.out" -W -c 1 "$LOOP"
	run_probe 77 "$WORK/devrw.out" --rw randwrite -c 10 "$LOOP"
	[[ $(sha256sum <"$IMG") == "$sum" ]] || fail "$LOOP changed"
else
	LOOP=
	note "block device PATH not tested: no loop device here"
fi

# ---- SIGINT prints the summary so far -------------------------------------

"${SPAWN[@]}" "$IOPULSE" probe -i 50ms "$DIR" >"$WORK/int.out" 2>"$WORK/int.err" &
pid=$!
on_exit reap "$pid" "iopulse probe"
have_requests() { count "$WORK/int.out" 'request='; ((N >= 2)); }
wait_until 20 "two requests of a probe without -c" have_requests
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
((rc == 0)) || fail "SIGINT: status $rc, want 0:"$'\n'"$(cat "$WORK/int.err")"
grep -q "statistics" "$WORK/int.out" || fail "SIGINT: no summary:"$'\n'"$(cat "$WORK/int.out")"
grep -q "interrupted: results so far" "$WORK/int.out" || fail "SIGINT: the summary does not say it was interrupted"

# ---- the daemon and probe on one directory ---------------------------------

DDIR="$WORK/daemon"
CFG="$WORK/daemon.yaml"
ping_config "$CFG" "$DDIR" 8MiB "layout_rate: 0"
start_daemon "$CFG"
wait_until 20 "the daemon's probe file" test -f "$DDIR/.iopulse-probe"
pinged() { scrape_metrics && num "$(sample "$PAGE" 'iopulse_probe_ios_total{probe="p1",target="t1",op="read"}')" '>=' 2; }
wait_until 20 "two pings of the daemon" pinged
listing "$DDIR"
before=$LIST
sample_into ios0 "$PAGE" 'iopulse_probe_ios_total{probe="p1",target="t1",op="read"}'
ino=$(stat -c %i "$DDIR/.iopulse-probe")
head -c 4096 "$DDIR/.iopulse-probe" >"$WORK/header.before"
run_probe 0 "$WORK/beside.out" -c 3 -i 0 "$DDIR"
count "$WORK/beside.out" 'request=[0-9]+ time='
((N == 3)) || fail "iopulse probe beside the daemon:"$'\n'"$(cat "$WORK/beside.out" "$WORK/beside.out.err")"
run_probe 0 "$WORK/beside-cfg.out" --config "$CFG" -c 2 -i 0
grep -q "in use by another iopulse" "$WORK/beside-cfg.out.err" ||
	fail "--config beside the daemon does not say it uses a file of its own"
listing "$DDIR"
[[ $LIST == "$before" ]] || fail "iopulse probe beside the daemon changed $DDIR: was $before, now $LIST"
[[ $(stat -c %i "$DDIR/.iopulse-probe") == "$ino" ]] || fail "the daemon's probe file was replaced"
cmp -s "$WORK/header.before" <(head -c 4096 "$DDIR/.iopulse-probe") || fail "the daemon's probe-file header changed"
scrape_metrics
sample_into errs "$PAGE" 'iopulse_probe_errors_total{probe="p1",target="t1",reason="io_error"}'
num "$errs" == 0 || fail "the daemon counted $errs I/O errors"
sample_into up "$PAGE" 'iopulse_target_up{target="t1"}'
num "$up" == 1 || fail "the daemon's target went down"
more_pings() { scrape_metrics && num "$(sample "$PAGE" 'iopulse_probe_ios_total{probe="p1",target="t1",op="read"}')" '>' "$ios0"; }
wait_until 20 "the daemon pinging on after the probes" more_pings
stop_daemon

# ---- options in any order; --config with names ----------------------------

CFG2="$WORK/names.yaml"
target_config "$CFG2" "$DIR" 8MiB
ping_item "$CFG2" rd read
ping_item "$CFG2" other read
run_probe 0 "$WORK/names.out" --config "$CFG2" rd -c 2 -i 0
count "$WORK/names.out" 'request=[0-9]+ time='
((N == 2)) || fail "--config NAME -c 2 -i 0: $N request lines, want 2:"$'\n'"$(cat "$WORK/names.out")"
grep -q "^--- other " "$WORK/names.out" && fail "--config rd also ran probe 'other'"

# ---- every option of every --help is in iopulse(8) ---------------------------

for cmd in run check probe; do
	"$IOPULSE" $cmd --help >"$WORK/help.$cmd"
	for opt in $(grep -oE -- '--[a-z][a-z-]+' "$WORK/help.$cmd" | sort -u); do
		grep -qF -- "${opt//-/\\-}" "$SOURCE_DIR/man/iopulse.8" ||
			fail "iopulse $cmd --help has $opt, iopulse(8) does not"
	done
done

note "pass"
