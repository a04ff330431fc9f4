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
require_cmd ioping strace "$PYTHON"
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
# A layout writes the file (a new one, then its data): the same inode, its
# data and its change time untouched mean the second -k only read it.
was=$(stat -c '%i %y %z' "$KEPT") # nanoseconds
sum=$(sha256sum <"$KEPT")
run_probe 0 "$WORK/keep2.out" -k -S 2m -c 1 -q "$DIR"
[[ $(stat -c '%i %y %z' "$KEPT") == "$was" ]] || fail "the second -k laid $KEPT out again: was $was, now $(stat -c '%i %y %z' "$KEPT")"
[[ $(sha256sum <"$KEPT") == "$sum" ]] || fail "the second -k changed the data of $KEPT"
rm -f "$DIR/ioping.tmp" "$KEPT"

# Whatever else sits at iopulse-probe.tmp is never written, followed or removed.
VICTIM=$WORK/victim
head -c 65536 /dev/urandom >"$VICTIM"
vsum=$(sha256sum <"$VICTIM")
planted() { # planted NAME: refused, and neither it nor the victim changed
	local what=$1 before
	before=$(stat -c '%i %F %s %Y' "$KEPT")
	run_probe 1 "$WORK/plant-$what.out" -k -c 1 -q "$DIR"
	grep -q "iopulse-probe.tmp" "$WORK/plant-$what.out" || fail "-k over a $what: no word of it:"$'\n'"$(cat "$WORK/plant-$what.out")"
	[[ $(stat -c '%i %F %s %Y' "$KEPT") == "$before" ]] || fail "-k changed the planted $what"
	[[ $(sha256sum <"$VICTIM") == "$vsum" ]] || fail "-k over a $what changed $VICTIM"
	rm -rf "$KEPT"
}
ln -s "$VICTIM" "$KEPT" && planted symlink
ln "$VICTIM" "$KEPT" && planted hardlink
mkfifo "$KEPT" && planted fifo
mkdir "$KEPT" && planted directory
if [[ $EUID == 0 ]]; then
	head -c $((4096 + 2 * 1024 * 1024)) /dev/urandom >"$KEPT"
	chown nobody "$KEPT"
	cp "$KEPT" "$VICTIM" && vsum=$(sha256sum <"$VICTIM")
	ksum=$(sha256sum <"$KEPT")
	planted_foreign() { [[ $(sha256sum <"$KEPT") == "$ksum" ]] || fail "-k wrote the foreign file"; }
	before=$(stat -c '%i %U %s %Y' "$KEPT")
	run_probe 1 "$WORK/plant-foreign.out" -k -c 1 -q "$DIR"
	planted_foreign
	[[ $(stat -c '%i %U %s %Y' "$KEPT") == "$before" ]] || fail "-k changed the foreign file"
	rm -f "$KEPT"
else
	note "-k over a foreign file not tested: needs root"
fi
listing "$DIR"
[[ -z $LIST ]] || fail "the planted-file runs left files behind in $DIR: $LIST"

# ---- -W, -Y, -C, -L, -R ----------------------------------------------------

both write -W -c 2 -i 0 -- -W -c 2 -i 0
same_count write '^4(\.0)? KiB >>> ' '^4(\.0)? KiB >>> ' 2
run_probe 0 "$WORK/sync.out" -c 2 -i 0 -W -Y "$DIR"
count "$WORK/sync.out" '>>> .* time=.* fdatasync='
((N == 2)) || fail "-W -Y: $N request lines with fdatasync=, want 2:"$'\n'"$(cat "$WORK/sync.out")"
grep -q '^fdatasync: 2 requests completed' "$WORK/sync.out" || fail "-W -Y: no fdatasync summary"
run_probe 0 "$WORK/cached.out" -C -c 1 -i 0 "$DIR"
grep -q "no O_DIRECT" "$WORK/cached.out.err" || fail "-C does not say it measures without O_DIRECT"
# The probe file's open flags while a probe waits between requests: O_DIRECT
# (040000 on x86 and arm64) unless -C; -D is ioping's O_DIRECT, a no-op here.
# probe_file_flags FLAGS...: the open flags of iopulse probe FLAGS -i 1h's
# descriptors of its probe file once its first request is in, OR-ed, in FLAGS.
probe_file_flags() {
	local pid fd f all=0
	"${SPAWN[@]}" "$IOPULSE" probe -i 1h "$@" "$DIR" >"$WORK/flags.out" 2>&1 &
	pid=$!
	on_exit reap "$pid" "iopulse probe"
	probe_fds() {
		all=0
		grep -q 'request=1 ' "$WORK/flags.out" || return 1
		for fd in /proc/"$pid"/fd/*; do
			[[ $(readlink "$fd") == "$DIR/"*' (deleted)' ]] || continue
			f=$(awk '/^flags:/ {print $2}' /proc/"$pid"/fdinfo/"${fd##*/}" 2>/dev/null) || continue
			[[ -z $f ]] || all=$((all | 8#$f))
		done
		((all != 0))
	}
	wait_until 60 "the probe file open in iopulse probe $*" probe_fds
	kill -INT "$pid"
	wait "$pid" || fail "iopulse probe $* -i 1h: status $? after SIGINT:"$'\n'"$(cat "$WORK/flags.out")"
	FLAGS=$all
}
# o_direct FLAGS... : "0" or "1" in ODIRECT.
o_direct() {
	probe_file_flags "$@"
	ODIRECT=$(((FLAGS & 8#40000) != 0))
}
o_direct
((ODIRECT == 1)) || fail "the probe file is open without O_DIRECT"
o_direct -D
((ODIRECT == 1)) || fail "-D: the probe file is open without O_DIRECT"
o_direct -C
((ODIRECT == 0)) || fail "-C: the probe file is open with O_DIRECT"
# -L: sequential, and 256k requests unless -s, in both.
both seq -L -c 3 -i 0 -- -L -c 3 -i 0
same_count seq '^256(\.0)? KiB <<< ' '^256(\.0)? KiB <<< ' 3
# ... and the offsets follow each other by the request size (random: they do not).
offsets() { # offsets FLAGS...: the pread offsets into the probe file, in OFFS
	# LeakSanitizer cannot run under ptrace: off for this run of the ASan build.
	ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
		strace -f -qq -e trace=pread64 -o "$WORK/strace.out" "$IOPULSE" probe --engine sync -q -c 6 -i 0 -s 8k "$@" "$DIR" >/dev/null 2>&1 ||
		fail "iopulse probe under strace: status $?"
	OFFS=$(grep -oE 'pread64\([0-9]+, .*, 8192, [0-9]+\) = 8192' "$WORK/strace.out" | sed -E 's/.*, ([0-9]+)\) = 8192$/\1/' | tail -6 | tr '\n' ' ')
}
steps() { # steps OFFSETS...: whether each is the one before plus 8k
	local prev=-1 o
	for o in "$@"; do
		((prev < 0 || o == prev + 8192)) || return 1
		prev=$o
	done
}
offsets -L
# shellcheck disable=SC2086
set -- $OFFS
(($# == 6)) || fail "-L under strace: $# preads of 8k, want 6:"$'\n'"$(cat "$WORK/strace.out")"
steps "$@" || fail "-L: offsets do not follow each other by 8k: $OFFS"
offsets
# shellcheck disable=SC2086
steps $OFFS && fail "without -L, 6 offsets follow each other by 8k: $OFFS"
# -R: back to back (-i 0) and quiet: 100 requests that would take 100s at the
# default 1s are done within both()'s timeout; without -c, its 3s deadline ends it.
both rate -R -c 100 -- -R -c 100
same_count rate 'request=' 'request=' 0
same_count rate 'statistics' 'statistics' 1
grep -q '^read: 100 requests completed' "$WORK/rate.iopulse" || fail "-R -c 100:"$'\n'"$(cat "$WORK/rate.iopulse")"
rc=0
timeout 60 "$IOPULSE" probe -R -J "$DIR" >"$WORK/rate2.out" 2>&1 || rc=$?
((rc == 0)) || fail "-R without -c or -w: status $rc (no deadline?)"
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
# The daemon below lays out a probe file in its target: a directory of its own,
# not $DIR, which later checks find empty.
CHK="$WORK/sync.yaml"
mkdir "$WORK/syncdir"
target_config "$CHK" "$WORK/syncdir" 8MiB
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
wait_until 60 "the daemon's warning of a sync burst at iodepth 8" \
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

# Symlinks: exactly daemon/targets/'s rules, as the daemon applies them. Our own
# link to a directory is followed; to a file, refused (a file target names the
# file); another user's, in a sticky directory, refused with the daemon's words.
ln -s "$DIR" "$WORK/link"
run_probe 0 "$WORK/link.out" -c 1 -i 0 -q "$WORK/link"
run_probe 0 "$WORK/link2.out" -c 1 -i 0 -q "$WORK/link/"
head -c 65536 /dev/urandom >"$WORK/file"
ln -s "$WORK/file" "$WORK/flink"
run_probe 77 "$WORK/flink.out" -c 1 "$WORK/flink"
grep -q "flink is a symlink: name the file itself" "$WORK/flink.out.err" || fail "a symlinked file:"$'\n'"$(cat "$WORK/flink.out.err")"
if [[ $EUID == 0 ]]; then
	mkdir -m 1777 "$WORK/sticky"
	ln -s "$DIR" "$WORK/sticky/foreign"
	chown -h nobody "$WORK/sticky/foreign"
	run_probe 77 "$WORK/foreign.out" -c 1 "$WORK/sticky/foreign"
	grep -q "'foreign' is a symlink owned by uid" "$WORK/foreign.out.err" ||
		fail "another user's symlink: no word of its owner:"$'\n'"$(cat "$WORK/foreign.out.err")"
	# The daemon's (and --config's) open of the same path says the same.
	FCFG=$WORK/foreign.yaml
	target_config "$FCFG" "$WORK/sticky/foreign" 8MiB
	ping_item "$FCFG" p read
	run_probe 1 "$WORK/foreign-cfg.out" --config "$FCFG" -c 1
	msg=$(sed 's/^iopulse probe: //' "$WORK/foreign.out.err")
	grep -qF -- "$msg" "$WORK/foreign-cfg.out" ||
		fail "iopulse probe PATH and the configuration disagree on a foreign symlink: '$msg' vs"$'\n'"$(cat "$WORK/foreign-cfg.out")"
else
	note "another user's symlink not tested: needs root"
fi
run_probe 77 "$WORK/wfile.out" -W -c 1 "$WORK/file"
grep -q "only reads it" "$WORK/wfile.out.err" || fail "-W on a file: no clear message"
run_probe 0 "$WORK/rfile.out" -c 2 -i 0 -q "$WORK/file"
grep -q '^read: 2 requests completed' "$WORK/rfile.out" || fail "reading a file:"$'\n'"$(cat "$WORK/rfile.out")"
run_probe 66 "$WORK/missing.out" -c 1 "$WORK/nope"
# Any UTF-8 name, quotes and '$' included, as is; bytes that are not UTF-8
# cannot go through the configuration: refused, saying so.
ODD="$WORK/dé \$x\"q"
mkdir "$ODD" "$WORK/d"$'\xff'
run_probe 0 "$WORK/odd.out" -c 1 -S 1m "$ODD"
grep -qF "<<< $ODD (" "$WORK/odd.out" || fail "a path with é, \$ and a quote:"$'\n'"$(cat "$WORK/odd.out")"
run_probe 64 "$WORK/notutf8.out" -c 1 -S 1m "$WORK/d"$'\xff'
grep -q "not UTF-8" "$WORK/notutf8.out.err" || fail "a path that is not UTF-8: no clear message"
run_probe 64 "$WORK/ysync.out" -Y -c 1 "$DIR"
run_probe 64 "$WORK/cfgsize.out" --config "$CHK" -s 8k
grep -q -- "--size" "$WORK/cfgsize.out.err" || fail "--config with -s: the message does not name --size"

# Bad values name the flag and the configuration's limits, checked up front.
# bad STATUS MESSAGE ARGS...: exits STATUS, stderr has MESSAGE (fixed string).
bad() {
	local want=$1 msg=$2
	shift 2
	run_probe "$want" "$WORK/bad.out" "$@"
	grep -qF -- "$msg" "$WORK/bad.out.err" || fail "iopulse probe $*: want '$msg', got:"$'\n'"$(cat "$WORK/bad.out.err")"
	[[ ! -s $WORK/bad.out ]] || fail "iopulse probe $*: ran something:"$'\n'"$(cat "$WORK/bad.out")"
}
bad 64 "-S/--working-set 8k: must be between 1MiB and 1TiB" -S 8k "$DIR"
# IOPULSE_CLOCK: monotonic forces the clock_gettime path (lib/clock.c), which
# must measure as well; anything else is refused before anything runs.
IOPULSE_CLOCK=monotonic run_probe 0 "$WORK/mono.out" --rw randread -Q 4 -c 200 "$DIR"
grep -q '^read: 200 requests completed' "$WORK/mono.out" || fail "IOPULSE_CLOCK=monotonic burst:"$'\n'"$(cat "$WORK/mono.out")"
IOPULSE_CLOCK=rdtsc bad 64 "IOPULSE_CLOCK='rdtsc': expected auto or monotonic" -c 1 "$DIR"
bad 64 "-s/--size '3000': a multiple of 512" -s 3000 "$DIR"
bad 64 "-s/--size 2MiB is larger than -S/--working-set 1MiB" -s 2m -S 1m "$DIR"
bad 64 "-w/--deadline '25h': a duration from 1ms to 24h" -w 25h "$DIR"
bad 64 "--duration '1h': a duration from 100ms to 10m" --duration 1h "$DIR"
bad 64 "-w/--deadline for a burst is its duration: from 100ms to 10m" --rw read -w 1h "$DIR"
bad 64 "--rw 'sideways': randread, randwrite, randrw, read or write" --rw sideways "$DIR"
# -S past a regular file: refused before anything runs, with the file's size.
head -c $((8 << 20)) /dev/urandom >"$WORK/file8m"
bad 64 "-S/--working-set 1GiB is larger than $WORK/file8m (file 8.0 MiB, 8388608 bytes)" -c 1 -S 1g "$WORK/file8m"
# Flags that do not go together.
bad 64 "--interval (-i) is for pings" -i 1 --rw randread "$DIR"
bad 64 "--period (-p) prints summary lines: not with --json (-J)" -p 2 -J -c 2 -i 0 "$DIR"
bad 64 "--keep (-k) keeps a probe file of our own in a directory; $WORK/file is a file" -k "$WORK/file"
# A PATH that is not there but names a probe of the embedded default: the
# command line of old ran that probe (see iopulse(8)).
name=$(STATE_DIRECTORY="$WORK" "$IOPULSE" check | awk '/^probes:/ {p = 1} p && /- name:/ {print $3; exit}')
[[ -n $name ]] || fail "no probe name in the embedded default"
(cd "$WORK" && "$IOPULSE" probe "$name" >/dev/null 2>"$WORK/dym.err") && fail "probe $name ran"
grep -qF "did you mean \`iopulse probe --config FILE $name\`?" "$WORK/dym.err" || fail "probe $name: no hint:"$'\n'"$(cat "$WORK/dym.err")"
run_probe 66 "$WORK/nodym.out" "$WORK/nope"
grep -q "did you mean" "$WORK/nodym.out.err" && fail "a hint for a name that is no probe"
# A target that fails to open: its header and message name the PATH only.
head -c 100 /dev/urandom >"$WORK/tiny"
run_probe 1 "$WORK/tiny.out" -c 1 "$WORK/tiny"
grep -qE 'path1|\? \?|engine auto' "$WORK/tiny.out" && fail "a failed PATH's summary names our synthetic names:"$'\n'"$(cat "$WORK/tiny.out")"
grep -qF "error: $WORK/tiny is smaller than" "$WORK/tiny.out" || fail "a too small file:"$'\n'"$(cat "$WORK/tiny.out")"

# ioping's -c 0 (no limit: -w ends it) and -D (O_DIRECT, ours anyway).
run_probe 0 "$WORK/c0.out" -c 0 -w 1 -i 0.1 -q -D "$DIR"
grep -qE '^read: [0-9]+ requests completed' "$WORK/c0.out" || fail "-c 0 -w 1:"$'\n'"$(cat "$WORK/c0.out")"

# A burst with -c and -w: whichever comes first, as for pings. 10^7 I/Os do
# not fit in 1s on any disk here; -w ends it, without an error.
rc=0
timeout 60 "$IOPULSE" probe --rw randread -Q 4 -c 10000000 -w 1 -q "$DIR" >"$WORK/cw.out" 2>&1 || rc=$?
((rc == 0)) || fail "burst -c 10000000 -w 1: status $rc:"$'\n'"$(cat "$WORK/cw.out")"
n=$(sed -nE 's/^read: ([0-9]+) requests completed.*/\1/p' "$WORK/cw.out")
{ [[ -n $n ]] && ((n > 0 && n < 10000000)); } || fail "burst -c 10000000 -w 1: $n I/Os:"$'\n'"$(cat "$WORK/cw.out")"
run_probe 0 "$WORK/cw2.out" --rw randread -Q 4 -c 100 -w 60 -q "$DIR"
grep -q '^read: 100 requests completed' "$WORK/cw2.out" || fail "burst -c 100 -w 60:"$'\n'"$(cat "$WORK/cw2.out")"

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
	# A device through a symlink (as /dev/disk/by-id/ names it; a device is
	# under /dev/), read only.
	DEVLINK=$(mktemp -u /dev/iopulse-test-link.XXXXXX)
	ln -s "$LOOP" "$DEVLINK"
	on_exit rm -f "$DEVLINK"
	run_probe 0 "$WORK/devlink.out" -c 2 -i 0 -q "$DEVLINK"
	grep -q '^read: 2 requests completed' "$WORK/devlink.out" || fail "a symlinked device:"$'\n'"$(cat "$WORK/devlink.out")"
	run_probe 64 "$WORK/devbig.out" -c 1 -S 1g "$DEVLINK"
	grep -q -- "-S/--working-set 1GiB is larger than .*(device 8.0 MiB" "$WORK/devbig.out.err" || fail "-S past a device:"$'\n'"$(cat "$WORK/devbig.out.err")"
	run_probe 64 "$WORK/devk.out" -k -c 1 "$LOOP"
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
wait_until 60 "two requests of a probe without -c" have_requests
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
((rc == 0)) || fail "SIGINT: status $rc, want 0:"$'\n'"$(cat "$WORK/int.err")"
grep -q "statistics" "$WORK/int.out" || fail "SIGINT: no summary:"$'\n'"$(cat "$WORK/int.out")"
grep -q "interrupted: results so far" "$WORK/int.out" || fail "SIGINT: the summary does not say it was interrupted"

# SIGINT while the probe file is laid out (a large one, at full speed): an
# interruption too, not an error, and nothing left behind.
# The 8g file must fit (the layout checks for room first) and must take longer
# than the signal takes to arrive; only a few MiB are written before it does.
AVAIL=$(df -B1 --output=avail "$DIR" | tail -n 1)
if ((AVAIL < 12 * 1024 * 1024 * 1024)); then
	note "SIGINT during a layout: not tried, $((AVAIL >> 20)) MiB free in $DIR (needs 12 GiB)"
else
	"${SPAWN[@]}" "$IOPULSE" probe -S 8g "$DIR" >"$WORK/lint.out" 2>"$WORK/lint.err" &
	pid=$!
	on_exit reap "$pid" "iopulse probe"
	laying_out() { # the unnamed probe file open, some of it written
		local fd
		for fd in /proc/"$pid"/fd/*; do
			[[ $(readlink "$fd") == "$DIR/"*' (deleted)' ]] && (($(stat -L -c %s "$fd") > 0)) && return 0
		done
		return 1
	}
	wait_until 60 "the probe file's layout" laying_out
	kill -INT "$pid"
	rc=0
	wait "$pid" || rc=$?
	((rc == 0)) || fail "SIGINT during the layout: status $rc, want 0:"$'\n'"$(cat "$WORK/lint.err" "$WORK/lint.out")"
	grep -q "request=" "$WORK/lint.out" && fail "the 8g layout was over before SIGINT: nothing tested"
	grep -q "error" "$WORK/lint.out" "$WORK/lint.err" && fail "SIGINT during the layout is an error:"$'\n'"$(cat "$WORK/lint.err" "$WORK/lint.out")"
	grep -q "interrupted" "$WORK/lint.out" || fail "SIGINT during the layout: no word of it:"$'\n'"$(cat "$WORK/lint.out")"
	listing "$DIR"
	[[ -z $LIST ]] || fail "SIGINT during the layout left $LIST in $DIR"
fi

# ---- the daemon and probe on one directory ---------------------------------

DDIR="$WORK/daemon"
CFG="$WORK/daemon.yaml"
ping_config "$CFG" "$DDIR" 8MiB "layout_rate: 0"
start_daemon "$CFG"
wait_until 60 "the daemon's probe file" test -f "$DDIR/.iopulse-probe"
pinged() { scrape_metrics && num "$(sample "$PAGE" 'iopulse_probe_ios_total{probe="p1",target="t1",op="read"}')" '>=' 2; }
wait_until 60 "two pings of the daemon" pinged
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
wait_until 60 "the daemon pinging on after the probes" more_pings
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

# ---- a PATH this user may not open: 77, for files, directories and devices --

# iopulse(8): permission denied (EACCES, EPERM) is 77, whether the PATH fails
# when it is walked or when it is opened; a PATH that is not there stays 66.
# As nobody, against the test's own root-only files and loop device.
if [[ $EUID != 0 ]]; then
	note "permission denied not tested: needs root (to run as nobody)"
else
	AS_NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	chmod 0711 "$WORK"
	mkdir -m 0700 "$WORK/private"
	head -c $((1 << 20)) /dev/urandom >"$WORK/private/inside"
	head -c $((1 << 20)) /dev/urandom >"$WORK/rootfile"
	chmod 0700 "$WORK/rootfile"
	mkdir -m 0755 "$WORK/rodir" # searchable, but nobody may create a probe file there
	if ! "${AS_NOBODY[@]}" test -x "$WORK" -a -x "$IOPULSE"; then
		note "nobody cannot reach $WORK or $IOPULSE (a private build tree?): permission denied not tested"
	else
		# denied STATUS NAME PATH: iopulse probe PATH as nobody exits STATUS.
		denied() {
			local rc=0
			"${AS_NOBODY[@]}" "$IOPULSE" probe -c 1 -i 0 "$3" >"$WORK/$2.out" 2>"$WORK/$2.err" || rc=$?
			((rc == $1)) || fail "iopulse probe $3 as nobody: exit status $rc, want $1:"$'\n'"$(cat "$WORK/$2.err" "$WORK/$2.out")"
		}
		denied 77 denied-dir "$WORK/private"
		grep -q "Permission denied" "$WORK/denied-dir.out" "$WORK/denied-dir.err" ||
			fail "a directory nobody may not write: no word of permission:"$'\n'"$(cat "$WORK/denied-dir.err" "$WORK/denied-dir.out")"
		denied 77 denied-rodir "$WORK/rodir"
		denied 77 denied-file "$WORK/rootfile"
		grep -q "Permission denied" "$WORK/denied-file.out" "$WORK/denied-file.err" ||
			fail "a file nobody may not read: no word of permission:"$'\n'"$(cat "$WORK/denied-file.err" "$WORK/denied-file.out")"
		denied 77 denied-inside "$WORK/private/inside"
		denied 66 denied-missing "$WORK/nope"
		if [[ -n $LOOP ]]; then
			denied 77 denied-dev "$LOOP"
			grep -q "Permission denied" "$WORK/denied-dev.out" "$WORK/denied-dev.err" ||
				fail "$LOOP as nobody: no word of permission:"$'\n'"$(cat "$WORK/denied-dev.err" "$WORK/denied-dev.out")"
		else
			note "permission denied on a device not tested: no loop device here"
		fi
		listing "$WORK/rodir"
		[[ -z $LIST ]] || fail "iopulse probe as nobody left $LIST in $WORK/rodir"
	fi
fi

# ---- ioping's -G, -y and -A -----------------------------------------------

# A directory of this section's own (both(), probe_file_flags() measure $DIR),
# empty whatever the sections above left.
DIR="$WORK/dir-gya"
mkdir "$DIR"

# -G: ioping's read-write ping, writes and reads in turn, a write first, each
# at its own offset; as many of each as ioping with the same -c.
both rw -G -c 6 -i 0 -- -G -c 6 -i 0
same_count rw '^4(\.0)? KiB >>> ' '^4(\.0)? KiB >>> ' 3
same_count rw '^4(\.0)? KiB <<< ' '^4(\.0)? KiB <<< ' 3
for f in ioping iopulse; do
	grep -qE '>>> .*request=1 ' "$WORK/rw.$f" || fail "$f -G: request 1 is not a write:"$'\n'"$(cat "$WORK/rw.$f")"
	grep -qE '<<< .*request=2 ' "$WORK/rw.$f" || fail "$f -G: request 2 is not a read:"$'\n'"$(cat "$WORK/rw.$f")"
done
{ grep -q '^read: 3 requests completed' "$WORK/rw.iopulse" && grep -q '^write: 3 requests completed' "$WORK/rw.iopulse"; } ||
	fail "-G -c 6: not 3 reads and 3 writes in the summary:"$'\n'"$(cat "$WORK/rw.iopulse")"
run_probe 0 "$WORK/rwsync.out" -G -Y -c 4 -i 0 -p 2 "$DIR"
count "$WORK/rwsync.out" '>>> .* fdatasync='
((N == 2)) || fail "-G -Y: $N writes with fdatasync=, want 2:"$'\n'"$(cat "$WORK/rwsync.out")"
count "$WORK/rwsync.out" '<<< .* fdatasync='
((N == 0)) || fail "-G -Y: a read with fdatasync=:"$'\n'"$(cat "$WORK/rwsync.out")"
count "$WORK/rwsync.out" '^--- 2 requests \(to request=[0-9]+\)'
((N == 2)) || fail "-G -p 2: $N period lines, want 2:"$'\n'"$(cat "$WORK/rwsync.out")"
# It writes: only in a directory, as -W; pings only.
sum=$(sha256sum <"$WORK/file")
run_probe 77 "$WORK/rwfile.out" -G -c 2 "$WORK/file"
[[ $(sha256sum <"$WORK/file") == "$sum" ]] || fail "-G changed $WORK/file"
if [[ -n $LOOP ]]; then
	sum=$(sha256sum <"$IMG")
	run_probe 77 "$WORK/rwdev.out" -G -c 2 "$LOOP"
	run_probe 77 "$WORK/ydev.out" -G -y -c 2 "$LOOP"
	[[ $(sha256sum <"$IMG") == "$sum" ]] || fail "-G changed $LOOP"
fi
bad 64 "--read-write (-G; a burst: --rw randrw) is for pings" -G --rw randrw "$DIR"

# -y: the writes go through a descriptor opened with O_DSYNC (010000 on x86 and
# arm64), as ioping's; without it, none has it. O_SYNC (04010000) is not asked for.
probe_file_flags -W -y
((FLAGS & 8#10000)) || fail "-W -y: no descriptor of the probe file has O_DSYNC (flags $(printf %o "$FLAGS"))"
((FLAGS & 8#4000000)) && fail "-W -y: the probe file is open with O_SYNC (flags $(printf %o "$FLAGS"))"
((FLAGS & 8#40000)) || fail "-W -y: no descriptor of the probe file has O_DIRECT (flags $(printf %o "$FLAGS"))"
probe_file_flags -W
((FLAGS & 8#10000)) && fail "-W: a descriptor of the probe file has O_DSYNC (flags $(printf %o "$FLAGS"))"
both dsync -W -y -c 2 -i 0 -- -W -y -c 2 -i 0
same_count dsync '^4(\.0)? KiB >>> ' '^4(\.0)? KiB >>> ' 2
bad 64 "--dsync (-y) syncs writes: it needs --write (-W) or --read-write (-G)" -y -c 1 "$DIR"
bad 64 "--dsync (-y) is for pings" -W -y --rw randwrite "$DIR"

# -A: ioping's asynchronous I/O, the libaio engine; the summary and the JSON
# name it.
both async -A -c 2 -i 0 -- -A -c 2 -i 0
same_count async 'request=[0-9]+ time=' 'request=[0-9]+ time=' 2
grep -q 'statistics, engine libaio ---' "$WORK/async.iopulse" || fail "-A: the summary does not name libaio:"$'\n'"$(cat "$WORK/async.iopulse")"
run_probe 0 "$WORK/async.json" -A -J -c 2 -i 0 "$DIR"
"$PYTHON" - "$SCHEMA" "$WORK/async.json" <<'EOF' || fail "-A -J:"$'\n'"$(cat "$WORK/async.json")"
import json, sys, jsonschema
doc = json.load(open(sys.argv[2]))
jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate(doc)
assert doc["probes"][0]["engine"] == "libaio", doc["probes"][0]
EOF
run_probe 0 "$WORK/async2.out" -A --engine libaio -c 1 -q "$DIR"
bad 64 "--async (-A) is the libaio engine, not --engine sync" -A --engine sync "$DIR"
listing "$DIR"
[[ -z $LIST ]] || fail "-G, -y and -A left files behind in $DIR: $LIST"

# ---- every option of every --help is in iopulse(8) ---------------------------

for cmd in run check probe; do
	"$IOPULSE" $cmd --help >"$WORK/help.$cmd"
	for opt in $(grep -oE -- '--[a-z][a-z-]+' "$WORK/help.$cmd" | sort -u); do
		grep -qF -- "${opt//-/\\-}" "$SOURCE_DIR/man/iopulse.8" ||
			fail "iopulse $cmd --help has $opt, iopulse(8) does not"
	done
done

note "pass"
