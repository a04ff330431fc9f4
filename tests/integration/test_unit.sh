#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The systemd units: `systemd-analyze verify` reports nothing for the service or
# the socket, and `systemd-analyze security --offline=yes` scores the service at
# most 1.2. The drop-in examples verify cleanly on top of it: the one for raw
# block devices, and the one for a probe directory on another file system
# (ReadWritePaths=), which also keeps the score at most 1.2. When strace can trace here, the daemon's own system calls during a short
# run (given its socket as by iopulse.socket, the packaged default; io_uring,
# libaio and sync engines, pings and bursts, a scrape, SIGTERM) all pass the
# unit's SystemCallFilter=, and none asks for memory that MemoryDenyWriteExecute=
# refuses.
#
# verify checks that ExecStart='s (and ExecReload='s) binary exists; the unit
# names its installed path (/usr/bin/iopulse), so verify runs on a copy whose
# Exec lines point at the built binary ($IOPULSE) instead. Nothing else in the
# copy differs. ExecReload= checks the file before the SIGHUP: quiet on a good
# one, 78 with file:line:column on a broken one.
#
# Skipped (77) only when systemd-analyze is missing. No systemd as PID 1 is needed.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

command -v systemd-analyze >/dev/null || skip "systemd-analyze not found"

MAX_EXPOSURE=1.2
UNIT="$SOURCE_DIR/systemd/iopulse.service"
DROPIN="$SOURCE_DIR/systemd/iopulse-block-device.conf.example"
DIR_DROPIN="$SOURCE_DIR/systemd/iopulse-directory.conf.example"
[[ -f $UNIT ]] || fail "$UNIT is missing"
[[ -f $DROPIN ]] || fail "$DROPIN is missing"
[[ -f $DIR_DROPIN ]] || fail "$DIR_DROPIN is missing"
note "$(systemd-analyze --version | head -n 1)"

# ---- verify ----------------------------------------------------------------

grep -q '^ExecStart=/usr/bin/iopulse ' "$UNIT" || fail "ExecStart= of $UNIT is not /usr/bin/iopulse ..."
UNITS="$WORK/units"
mkdir -p "$UNITS"
sed "s|^\(Exec[A-Za-z]*=\)/usr/bin/iopulse |\1$IOPULSE |" "$UNIT" >"$UNITS/iopulse.service"

# run_analyze NAME ARGS...: systemd-analyze ARGS, stdout+stderr into $WORK/NAME.out
# (printed if the test fails); sets RC.
run_analyze() {
	local name=$1
	shift
	OUT="$WORK/$name.out"
	DAEMON_LOGS+=("$OUT")
	RC=0
	SYSTEMD_COLORS=0 SYSTEMD_PAGER='' systemd-analyze "$@" >"$OUT" 2>&1 || RC=$?
}

run_analyze verify verify "$UNITS/iopulse.service"
((RC == 0)) || fail "systemd-analyze verify exited $RC"
[[ ! -s $OUT ]] || fail "systemd-analyze verify is not silent: $(cat "$OUT")"
note "verify: clean"

# ---- ExecReload= -----------------------------------------------------------

# `systemctl reload` runs each ExecReload= in turn and fails at the first that
# fails: the file is checked before the daemon is signalled. The check, run as
# the unit has it (the configuration swapped for the test's own), says nothing
# for a good file and exits 78 with file:line:column for a broken one.
mapfile -t reload < <(sed -n 's/^ExecReload=//p' "$UNIT")
((${#reload[@]} == 2)) || fail "$UNIT: want two ExecReload= lines (check, then SIGHUP), got ${#reload[@]}"
[[ ${reload[1]} == '/bin/kill -HUP $MAINPID' ]] || fail "$UNIT: the last ExecReload= is '${reload[1]}', not the SIGHUP"
read -ra check_cmd <<<"${reload[0]}"
[[ ${check_cmd[0]} == /usr/bin/iopulse && ${check_cmd[1]} == check && ${check_cmd[-2]} == --config &&
	${check_cmd[-1]} == /etc/iopulse/iopulse.yaml ]] ||
	fail "$UNIT: the first ExecReload= does not check /etc/iopulse/iopulse.yaml: ${reload[0]}"
# exec_reload_check FILE: the unit's check with FILE as the configuration; sets RC.
exec_reload_check() {
	local cmd=("$IOPULSE" "${check_cmd[@]:1:${#check_cmd[@]}-3}" --config "$1")
	RC=0
	# STATE_DIRECTORY: systemd sets it for ExecReload= as for ExecStart=; here,
	# a directory that does not exist, which the check must not refuse.
	STATE_DIRECTORY="$WORK/no-state-yet" "${cmd[@]}" >"$WORK/reload.out" 2>"$WORK/reload.err" || RC=$?
	DAEMON_LOGS+=("$WORK/reload.out" "$WORK/reload.err")
}
exec_reload_check "$SOURCE_DIR/config/default.yaml"
((RC == 0)) || fail "the unit's ExecReload= check of config/default.yaml exited $RC"
[[ ! -s $WORK/reload.out && ! -s $WORK/reload.err ]] ||
	fail "the unit's ExecReload= check is not quiet on a good file"
printf 'targets:\n  - name: t1\n    directory: [unclosed\nprobes: {\n' >"$WORK/broken.yaml"
exec_reload_check "$WORK/broken.yaml"
((RC == 78)) || fail "the unit's ExecReload= check of a broken file exited $RC, want 78"
grep -qE "^$WORK/broken.yaml:[0-9]+:[0-9]+: " "$WORK/reload.err" ||
	fail "the unit's ExecReload= check does not say file:line:column of a broken file"
note "ExecReload=: checks the file first (quiet when good, 78 and $(head -c 80 "$WORK/reload.err")...)"

# The socket unit (how the package runs iopulse), next to the service it activates.
cp "$SOURCE_DIR/systemd/iopulse.socket" "$UNITS/iopulse.socket"
run_analyze verify-socket verify "$UNITS/iopulse.socket"
((RC == 0)) || fail "systemd-analyze verify of iopulse.socket exited $RC"
[[ ! -s $OUT ]] || fail "systemd-analyze verify of iopulse.socket is not silent: $(cat "$OUT")"
note "verify iopulse.socket: clean"

# The drop-in example, installed the way the admin would (a .d directory next
# to the unit), found through SYSTEMD_UNIT_PATH (":" keeps the default path).
mkdir -p "$UNITS/iopulse.service.d"
cp "$DROPIN" "$UNITS/iopulse.service.d/block-device.conf"
RC=0
SYSTEMD_UNIT_PATH="$UNITS:" run_analyze verify-dropin verify iopulse.service
((RC == 0)) || fail "systemd-analyze verify with the block-device drop-in exited $RC"
[[ ! -s $OUT ]] || fail "systemd-analyze verify with the block-device drop-in is not silent: $(cat "$OUT")"
SYSTEMD_UNIT_PATH="$UNITS:" run_analyze security-dropin security --offline=yes --no-pager iopulse.service
grep -q '✗ PrivateDevices=' "$OUT" || fail "the block-device drop-in was not applied (PrivateDevices= unchanged)"
rm -r "$UNITS/iopulse.service.d"
note "verify with the block-device drop-in: clean"

# ---- security --------------------------------------------------------------

# exposure NAME: the overall exposure of the last security run (into SCORE).
exposure() {
	SCORE=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9][0-9]*\.[0-9]\).*/\1/p' "$OUT")
	[[ -n $SCORE ]] || fail "no 'Overall exposure level' in the output of systemd-analyze security"
}

# The shipped file itself: security --offline does not look for the binary.
run_analyze security security --offline=yes --no-pager "$UNIT"
exposure
note "exposure of $UNIT: $SCORE (at most $MAX_EXPOSURE)"
grep '✗' "$OUT" | sed 's/^/#   /' || true
# Tenths, as integers: 0.9 -> 9.
if ((10#${SCORE/./} > 10#${MAX_EXPOSURE/./})); then
	fail "exposure $SCORE is above $MAX_EXPOSURE"
fi
BASE_SCORE=$SCORE

# The probe-directory drop-in: verifies cleanly, and is applied (the path shows
# in the unit systemd-analyze reads), at the same bound.
mkdir -p "$UNITS/iopulse.service.d"
cp "$DIR_DROPIN" "$UNITS/iopulse.service.d/directory.conf"
SYSTEMD_UNIT_PATH="$UNITS:" run_analyze verify-dir-dropin verify iopulse.service
((RC == 0)) || fail "systemd-analyze verify with the directory drop-in exited $RC"
[[ ! -s $OUT ]] || fail "systemd-analyze verify with the directory drop-in is not silent: $(cat "$OUT")"
grep -qx 'ReadWritePaths=-/srv/data/.iopulse' "$DIR_DROPIN" ||
	fail "$DIR_DROPIN has no ReadWritePaths=-/srv/data/.iopulse"
# ReadWritePaths= does not show in the score: to see that systemd-analyze reads
# a drop-in there at all, one that also weakens ProtectHome= must show.
echo 'ProtectHome=read-only' >>"$UNITS/iopulse.service.d/directory.conf"
SYSTEMD_UNIT_PATH="$UNITS:" run_analyze security-dir-probe security --offline=yes --no-pager iopulse.service
grep -q '✗ ProtectHome=' "$OUT" || fail "the directory drop-in in $UNITS/iopulse.service.d was not read"
cp "$DIR_DROPIN" "$UNITS/iopulse.service.d/directory.conf"
SYSTEMD_UNIT_PATH="$UNITS:" run_analyze security-dir-dropin security --offline=yes --no-pager iopulse.service
exposure
note "exposure with the directory drop-in: $SCORE (at most $MAX_EXPOSURE)"
if ((10#${SCORE/./} > 10#${MAX_EXPOSURE/./})); then
	fail "exposure with the directory drop-in $SCORE is above $MAX_EXPOSURE"
fi
rm -r "$UNITS/iopulse.service.d"
SCORE=$BASE_SCORE

# ---- the daemon's system calls against the filter ----------------------------

# expand SET...: the system calls of the names and @groups given, one a line.
expand() {
	local s
	for s in "$@"; do
		if [[ $s == @* ]]; then
			# The first line names the group; members are indented, nested groups too.
			# shellcheck disable=SC2046
			expand $(systemd-analyze syscall-filter --no-pager "$s" |
				sed -n '2,$s/^[[:space:]]*\([@a-z0-9_-]\{1,\}\).*/\1/p')
		else
			echo "$s"
		fi
	done
}

# The filter as systemd builds it: the first assignment without "~" is an allow
# list; each "~" assignment removes its calls from it.
: >"$WORK/allowed"
while IFS= read -r line; do
	v=${line#SystemCallFilter=}
	# shellcheck disable=SC2086
	if [[ $v == '~'* ]]; then
		expand ${v#\~} | sort -u >"$WORK/deny"
		sort -u "$WORK/allowed" | comm -23 - "$WORK/deny" >"$WORK/allowed.new"
		mv "$WORK/allowed.new" "$WORK/allowed"
	else
		expand $v >>"$WORK/allowed"
	fi
done < <(grep '^SystemCallFilter=' "$UNIT")
sort -u -o "$WORK/allowed" "$WORK/allowed"
[[ -s $WORK/allowed ]] || fail "no SystemCallFilter= allow list in $UNIT"
grep -qx io_uring_enter "$WORK/allowed" || fail "the filter does not allow io_uring_enter"
grep -qx io_submit "$WORK/allowed" || fail "the filter does not allow io_submit"

trace_ok=true
if ! command -v strace >/dev/null; then
	trace_ok=false
	note "strace not found: the daemon's system calls are not checked"
elif ! strace -f -qq -o /dev/null true 2>/dev/null; then
	trace_ok=false
	note "strace cannot trace here (ptrace refused): the daemon's system calls are not checked"
elif grep -qa '__asan_init\|__tsan_init\|__ubsan_handle' "$IOPULSE"; then
	trace_ok=false
	note "$IOPULSE is a sanitizer build (extra system calls): the filter is not checked against it"
elif [[ $(stat -f -c %T "$WORK") == tmpfs ]]; then
	trace_ok=false
	note "$WORK is on tmpfs: the daemon's system calls are not checked"
fi

if $trace_ok; then
	require_cmd curl timeout prlimit /usr/bin/python3
	DIR="$WORK/state"
	mkdir "$DIR"
	CFG="$WORK/iopulse.yaml"
	cat >"$CFG" <<EOF
splay: false # the bursts run at start, not at a splayed phase
targets:
  - name: state
    directory: $(yaml_str "$DIR")
    max_duty_cycle: 100%
    max_write_per_day: 0
    size: 8MiB
probes:
  - name: r-uring
    type: ping
    target: state
    engine: io_uring
    interval: 100ms
  - name: w-aio
    type: ping
    target: state
    engine: libaio
    op: write
    sync: fdatasync
    interval: 100ms
  - name: r-sync
    type: ping
    target: state
    engine: sync
    interval: 100ms
  - name: b-uring
    type: burst
    target: state
    engine: io_uring
    rw: randrw
    block_size: 4k-64k
    iodepth: 8
    jobs: 2
    duration: 1s
    every: 2s
  - name: b-aio
    type: burst
    target: state
    engine: libaio
    rw: randread
    iodepth: 8
    duration: 1s
    every: 2s
EOF
	# Engines the kernel lacks (io_uring disabled by sysctl, say) would fail
	# the probe, not the check: what matters is which calls were attempted.
	TRACE="$WORK/trace"
	LOG="$WORK/traced.log"
	DAEMON_LOGS+=("$LOG")
	: >"$LOG"
	# The listening socket passed as iopulse.socket passes it (listen_fds.py
	# execs the daemon; only the daemon's calls are checked, from its execve).
	# sd_notify to a socket nobody listens on: the calls are made all the same.
	# A soft descriptor limit below the hard one, as systemd's default
	# LimitNOFILE=1024:524288 gives: the daemon raises it, with that call too.
	NOTIFY_SOCKET="$WORK/notify" STATE_DIRECTORY="$DIR" \
		"${SPAWN[@]}" prlimit --nofile=256: strace -f -qq -o "$TRACE" \
		/usr/bin/python3 "$SOURCE_DIR/tests/integration/listen_fds.py" "$WORK/port" 1 tcp \
		"$IOPULSE" run --config "$CFG" --log-level debug >"$LOG" 2>&1 &
	TRACER=$!
	DAEMON_PIDS+=("$TRACER")
	DAEMON_PID=$TRACER # wait_until notices if it exits
	port=
	wait_port() {
		port=$(sed -n 's|.*Serving metrics on http://127\.0\.0\.1:\([0-9][0-9]*\)/metrics.*|\1|p' "$LOG")
		[[ -n $port ]]
	}
	wait_until 60 "the traced daemon serving metrics" wait_port
	grep -q "Using the socket passed by the service manager (127.0.0.1:$port)" "$LOG" ||
		fail "the traced daemon does not serve on the socket passed to it"
	sleep 3 # pings and at least one burst of each engine (time is the point here)
	curl -fsS "http://127.0.0.1:$port/metrics" >"$WORK/page" || fail "scrape of the traced daemon failed"
	grep -q '^iopulse_' "$WORK/page" || fail "the traced daemon served no iopulse_ metrics"
	# SIGTERM to the daemon itself (strace's only child); strace then exits
	# with the daemon's status.
	daemon=$(ps -o pid= --ppid "$TRACER" | tr -d ' ')
	[[ $daemon =~ ^[0-9]+$ ]] || fail "cannot find the daemon traced by strace $TRACER"
	kill -TERM "$daemon"
	DAEMON_PID=
	rc=0
	wait "$TRACER" || rc=$?
	_forget_pid "$TRACER"
	((rc == 0)) || fail "the traced daemon exited $rc after SIGTERM"

	awk -v exe="execve(\"$IOPULSE\"" 'index($0, exe) { on = 1 } on' "$TRACE" >"$WORK/trace.daemon"
	[[ -s $WORK/trace.daemon ]] || fail "no execve of $IOPULSE in the trace"
	sed -n 's/^[0-9][0-9]* \{1,\}\([a-z_0-9]\{1,\}\)(.*/\1/p' "$WORK/trace.daemon" |
		sort -u >"$WORK/used"
	grep -qx io_uring_enter "$WORK/used" || fail "the traced daemon never called io_uring_enter"
	grep -qx io_submit "$WORK/used" || fail "the traced daemon never called io_submit"
	grep -qx prlimit64 "$WORK/used" || fail "the traced daemon never raised its descriptor limit"
	denied=$(comm -23 "$WORK/used" "$WORK/allowed" | grep -vx 'execve' || true)
	[[ -z $denied ]] || fail "the daemon calls what the unit's SystemCallFilter= refuses: $denied"
	note "$(wc -l <"$WORK/used") distinct system calls, all allowed by the unit"
	wx=$(grep -E '(mmap|mprotect|pkey_mprotect)\(.*PROT_(WRITE\|PROT_EXEC|EXEC\|PROT_WRITE)' "$WORK/trace.daemon" || true)
	[[ -z $wx ]] || fail "writable+executable memory, refused by MemoryDenyWriteExecute=: $wx"
	mx=$(grep -E '^[0-9]+ +mprotect\(.*PROT_EXEC' "$WORK/trace.daemon" || true)
	[[ -z $mx ]] || fail "mprotect adding PROT_EXEC, refused by MemoryDenyWriteExecute=: $mx"
fi

echo "PASS: $TEST_NAME (exposure $SCORE)"
