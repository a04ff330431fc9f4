# shellcheck shell=bash
# SPDX-License-Identifier: MIT
#
# lib.sh — shared helpers for the integration tests. Sourced, never run.
#
# Every test_*.sh runs under CTest with:
#   IOPULSE      the built binary
#   SOURCE_DIR   the repository root
#   TEST_TMPDIR  scratch space on a real disk under the build tree
# Exit status: 0 pass, 77 skipped (a needed feature is missing), anything else fail.
#
# Conventions:
#   - Everything a test creates lives in $WORK (a fresh mktemp -d inside
#     $TEST_TMPDIR), removed at exit; daemons started here are stopped at exit.
#     IOPULSE_TEST_KEEP=1 keeps $WORK for a post-mortem.
#   - fail() and helpers that may call it must run in the test's own shell, not
#     inside $(...): a subshell cannot stop the test or print the logs once.
#     Helpers that produce a value therefore store it (sample_into, scrape_metrics).
#   - Nothing here sleeps for a fixed time to "let things settle" except where the
#     test is about time itself; waits poll a condition with a deadline.

set -Eeuo pipefail

: "${IOPULSE:?IOPULSE must be the path of the iopulse binary}"
: "${SOURCE_DIR:?SOURCE_DIR must be the repository root}"
: "${TEST_TMPDIR:?TEST_TMPDIR must be a scratch directory}"

TEST_NAME=$(basename "$0" .sh)
mkdir -p "$TEST_TMPDIR"
WORK=$(mktemp -d "$TEST_TMPDIR/$TEST_NAME.XXXXXX")

DAEMON_PIDS=()	  # daemons started and not yet reaped
DAEMON_LOGS=()	  # every log file worth printing on failure
CLEANUP_HOOKS=()  # shell commands (already quoted) run at exit
DAEMON_PID=	  # the most recently started daemon ...
DAEMON_LOG=	  # ... its log
DAEMON_PORT=	  # ... and the port it serves on
PAGE=		  # file of the most recent scrape_metrics
SCRAPE_N=0
HELD_PORT=	  # the port of the most recent hold_port

# Bursts check first whether their target's disk is busy (iopulse.yaml(5)
# busy_backoff). The tests' targets sit on the build machine's disk, busy with
# other builds and tests at any moment: the daemons here find no disk under a
# sysfs that does not exist (the IOPULSE_SYSFS test hook), so their bursts run.
# test_device_busy.sh, which tests the check, puts the real one back.
export IOPULSE_SYSFS=/nonexistent/iopulse-test-sysfs

# A non-interactive bash starts background commands with SIGINT ignored, and a
# program that finds SIGINT ignored at start-up rightly keeps ignoring it. Start
# daemons the way a terminal or systemd would: SIGINT at its default.
SPAWN=()
if env --default-signal=INT true 2>/dev/null; then
	SPAWN=(env --default-signal=INT)
fi

# ---- reporting -------------------------------------------------------------

note() {
	echo "# $*"
}

dump_logs() {
	local log
	for log in "${DAEMON_LOGS[@]}"; do
		[[ -f $log ]] || continue
		echo "----- $log ($(wc -l <"$log") lines; last 400) -----"
		tail -n 400 "$log"
		echo "----- end of $log -----"
	done
}

# fail MSG...: print MSG and the daemon logs, exit 1 (cleanup runs from the trap).
fail() {
	{
		echo "FAIL: $TEST_NAME: $*"
		dump_logs
	} >&2
	exit 1
}

# skip MSG...: the test needs something this machine lacks.
skip() {
	echo "SKIP: $TEST_NAME: $*" >&2
	exit 77
}

_on_err() {
	local rc=$? line=$1 cmd=$2
	# In a $(...) subshell: let errexit carry the status to the caller, which
	# reports it once.
	[[ $BASHPID == "$$" ]] || return "$rc"
	fail "unexpected status $rc at line $line: $cmd"
}

# ---- cleanup ---------------------------------------------------------------

# on_exit CMD [ARGS...]: run CMD at exit, before the work directory is removed.
on_exit() {
	CLEANUP_HOOKS+=("$(printf '%q ' "$@")")
}

_forget_pid() {
	local pid=$1 p keep=()
	for p in "${DAEMON_PIDS[@]}"; do
		[[ $p == "$pid" ]] || keep+=("$p")
	done
	DAEMON_PIDS=("${keep[@]}")
}

# alive PID: true while PID exists and is not a zombie.
alive() {
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${st##*) }
	[[ ${st:0:1} != Z ]]
}

# reap PID WHAT [SECONDS]: give the child PID SECONDS (default 5) to exit (it was
# told to), then SIGKILL it, saying so (WHAT names it); reap it. For cleanup:
# never fails.
reap() {
	local pid=$1 limit=${3:-5} i
	for ((i = 0; i < limit * 10; i++)); do
		alive "$pid" || break
		sleep 0.1
	done
	if alive "$pid"; then
		echo "# $2 $pid still running after ${limit}s, killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
}

_kill_daemon() {
	kill -TERM "$1" 2>/dev/null || true
	reap "$1" "daemon (sent SIGTERM)"
}

_cleanup() {
	local rc=$? pid hook
	set +e
	trap - ERR
	for pid in "${DAEMON_PIDS[@]}"; do
		_kill_daemon "$pid"
	done
	DAEMON_PIDS=()
	for hook in "${CLEANUP_HOOKS[@]}"; do
		eval "$hook"
	done
	if [[ -n ${IOPULSE_TEST_KEEP:-} ]]; then
		echo "# keeping $WORK" >&2
	else
		rm -rf "$WORK"
	fi
	exit "$rc"
}

trap '_on_err "$LINENO" "$BASH_COMMAND"' ERR
trap _cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- time and numbers ------------------------------------------------------

# now_ms: wall-clock milliseconds (bash 5 $EPOCHREALTIME, no fork).
now_ms() {
	local t=${EPOCHREALTIME/[.,]/}
	echo $((t / 1000))
}

# num A OP B: numeric comparison (OP one of == != < <= > >=), in awk so that
# 1e+06, 0.5 and 17 all compare as numbers.
num() {
	awk -v a="$1" -v op="$2" -v b="$3" 'BEGIN {
		a += 0; b += 0
		if (op == "==") r = a == b
		else if (op == "!=") r = a != b
		else if (op == "<") r = a < b
		else if (op == "<=") r = a <= b
		else if (op == ">") r = a > b
		else if (op == ">=") r = a >= b
		else exit 2
		exit !r
	}'
}

# _daemon_exited WHEN: the current daemon has exited: reap it and fail with its
# status, WHEN saying at what point.
_daemon_exited() {
	local rc=0
	wait "$DAEMON_PID" || rc=$?
	_forget_pid "$DAEMON_PID"
	fail "daemon exited with status $rc $1"
}

# wait_until SECONDS WHAT CMD [ARGS...]: poll CMD every 0.1s until it succeeds;
# fail (naming WHAT) after SECONDS, or as soon as the current daemon dies.
wait_until() {
	local limit=$1 what=$2 deadline
	shift 2
	deadline=$(($(now_ms) + limit * 1000))
	while :; do
		if "$@"; then
			return 0
		fi
		if [[ -n $DAEMON_PID ]] && ! alive "$DAEMON_PID"; then
			_daemon_exited "while waiting for: $what"
		fi
		if (($(now_ms) > deadline)); then
			fail "timed out after ${limit}s waiting for: $what"
		fi
		sleep 0.1
	done
}

# ---- files -----------------------------------------------------------------

# yaml_str S: S as a single-quoted YAML scalar.
yaml_str() {
	local s=$1
	printf "'%s'" "${s//\'/\'\'}"
}

# target_config FILE DIR SIZE [SETTING...]: write to FILE the start of a schedule:
# one directory target t1 at DIR (not created) of SIZE, each SETTING ("key:
# value") added to it, then "probes:", for the caller to append probe items to
# (ping_item, or a here-document). 'splay: false': every probe runs within a
# second of start, as the tests wait for (a splayed burst could wait its 'every').
# No budget: tests probe far more often than a production target may
# (tests/unit/test_budget.c and test_check.sh test the budget).
target_config() {
	local file=$1 dir=$2 size=$3
	shift 3
	{
		cat <<-EOF
			splay: false
			targets:
			  - name: t1
			    directory: $(yaml_str "$dir")
			    size: $size
			    max_duty_cycle: 100%
			    max_write_per_day: 0
		EOF
		_settings "$@"
		echo "probes:"
	} >"$file"
}

# ping_item FILE NAME OP [SETTING...]: append to FILE a ping probe NAME on t1
# doing OP, each SETTING ("key: value") added to it.
ping_item() {
	local file=$1 name=$2 op=$3
	shift 3
	{
		cat <<-EOF
			  - name: $name
			    type: ping
			    target: t1
			    op: $op
		EOF
		_settings "$@"
	} >>"$file"
}

# _settings [SETTING...]: each SETTING as a line of the item above.
_settings() {
	if (($#)); then
		printf '    %s\n' "$@"
	fi
}

# ping_config FILE DIR SIZE [write] [SETTING...]: write to FILE the schedule most
# tests start from: one directory target t1 at DIR (created) of SIZE, with any
# further target SETTINGs, a 100ms read ping p1 and, with "write", a 100ms
# write+fdatasync ping w1. Probes come last, so a test may append more probe
# items.
ping_config() {
	local file=$1 dir=$2 size=$3 write=
	shift 3
	if [[ ${1:-} == write ]]; then
		write=1
		shift
	fi
	mkdir -p "$dir"
	target_config "$file" "$dir" "$size" "$@"
	ping_item "$file" p1 read "interval: 100ms"
	[[ -n $write ]] || return 0
	ping_item "$file" w1 write "sync: fdatasync" "interval: 100ms"
}

# require_disk DIR: probe files need a real filesystem (tmpfs/ramfs are refused by
# design, they measure RAM).
require_disk() {
	local fs
	fs=$(stat -f -c %T "$1")
	case $fs in
	tmpfs | ramfs) skip "$1 is on $fs; iopulse refuses memory-backed targets" ;;
	esac
}

# require_cmd CMD...: tools the test cannot do without. Their absence is a broken
# test machine, not a missing kernel feature: fail, never skip.
require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || fail "required tool '$c' not found"
	done
}

# hold_port: another program listens on a free loopback port and never
# accepts; HELD_PORT is the port.
# Stopped at exit.
hold_port() {
	local file="$WORK/held-port.$RANDOM" pid
	/usr/bin/python3 "$SOURCE_DIR/tests/integration/hold_port.py" "$file" &
	pid=$!
	on_exit kill "$pid"
	wait_until 60 "the port holder listening" test -s "$file"
	# shellcheck disable=SC2034 # for the tests that source this file
	read -r HELD_PORT <"$file"
}

# ---- the daemon ------------------------------------------------------------

# start_daemon CONFIG [ARGS...]: run the daemon in the background on a free
# loopback port, debug logging to its own log file; wait (60s at most: a loaded
# machine, a sanitizer build) until it logs where it serves. Sets DAEMON_PID,
# DAEMON_LOG, DAEMON_PORT.
start_daemon() {
	local config=$1
	shift
	DAEMON_LOG="$WORK/daemon.${#DAEMON_LOGS[@]}.log"
	DAEMON_LOGS+=("$DAEMON_LOG")
	DAEMON_PORT=
	: >"$DAEMON_LOG" # exists before the child opens it: the wait below reads it at once
	"${SPAWN[@]}" "$IOPULSE" run --config "$config" --listen 127.0.0.1:0 --log-level debug \
		"$@" >"$DAEMON_LOG" 2>&1 &
	DAEMON_PID=$!
	DAEMON_PIDS+=("$DAEMON_PID")
	wait_until 60 "the daemon to log 'Serving metrics on http://127.0.0.1:PORT/metrics'" _logged_port
	note "daemon $DAEMON_PID serving on 127.0.0.1:$DAEMON_PORT (log $DAEMON_LOG)"
}

# _logged_port: true once DAEMON_LOG says where the daemon serves; sets DAEMON_PORT.
_logged_port() {
	local out
	out=$(sed -n 's|.*Serving metrics on https\{0,1\}://127\.0\.0\.1:\([0-9][0-9]*\)/metrics.*|\1|p' \
		"$DAEMON_LOG")
	DAEMON_PORT=${out%%$'\n'*}
	[[ -n $DAEMON_PORT ]]
}

# stop_daemon [SIGNAL [SECONDS]]: signal the current daemon (default TERM) and
# require exit status 0 within SECONDS (default 5). Sets STOP_MS (time to exit).
stop_daemon() {
	local sig=${1:-TERM} limit=${2:-5} pid=$DAEMON_PID t0 rc=0
	[[ -n $pid ]] || fail "stop_daemon: no daemon"
	alive "$pid" || fail "daemon $pid had already exited before SIG$sig"
	t0=$(now_ms)
	kill -s "$sig" "$pid" || fail "cannot send SIG$sig to daemon $pid"
	while alive "$pid"; do
		if (($(now_ms) - t0 > limit * 1000)); then
			fail "daemon did not exit within ${limit}s of SIG$sig"
		fi
		sleep 0.02
	done
	STOP_MS=$(($(now_ms) - t0))
	wait "$pid" || rc=$?
	_forget_pid "$pid"
	DAEMON_PID=
	((rc == 0)) || fail "daemon exited with status $rc after SIG$sig (want 0)"
	note "daemon $pid exited 0 ${STOP_MS}ms after SIG$sig"
}

# require_alive: the current daemon is still running.
require_alive() {
	alive "$DAEMON_PID" && return 0
	_daemon_exited "unexpectedly"
}

# ---- small filesystems -------------------------------------------------------

TMPFS_MOUNTS=()

# mount_tmpfs DIR SIZE: a tmpfs of SIZE on DIR (which exists): a small or a separate
# filesystem of the test's own. Skips where this process may not mount; lazily
# unmounted at exit when still mounted.
mount_tmpfs() {
	local msg
	msg=$(mount -t tmpfs -o "size=$2,mode=0700" iopulse-test "$1" 2>&1) ||
		skip "cannot mount a tmpfs here: $msg"
	TMPFS_MOUNTS+=("$1")
}

_unmount_tmpfs() {
	local m
	for m in "${TMPFS_MOUNTS[@]}"; do
		if grep -qF " $m " /proc/self/mountinfo; then
			umount -l "$m" || true
		fi
	done
}
on_exit _unmount_tmpfs

LOOPS=() # loop devices attach_loop attached and nothing has detached yet

# attach_loop IMG: attach a loop device over IMG (a file of the test's own),
# detached at exit (after the hooks registered before this call) unless
# detach_loop did it first; sets LOOP. Skips when losetup cannot.
attach_loop() {
	LOOP=$(losetup --find --show "$1" 2>"$WORK/losetup.err") || LOOP=
	[[ -n $LOOP ]] || skip "losetup --find --show failed: $(cat "$WORK/losetup.err")"
	LOOPS+=("$LOOP")
	on_exit detach_loop "$LOOP"
	# The device must be ours: backed by our file.
	[[ $(losetup -n -O BACK-FILE "$LOOP" | sed 's/[[:space:]]*$//') == "$1" ]] ||
		fail "$LOOP is not backed by $1: $(losetup -l "$LOOP")"
	note "loop device $LOOP over $1"
}

# detach_loop DEV: detach DEV, a loop device of attach_loop's, once: called
# again (its hook at exit), it leaves alone a device that may be another
# program's by then. For cleanup: never fails.
detach_loop() {
	local d keep=() ours=
	for d in "${LOOPS[@]}"; do
		if [[ $d == "$1" ]]; then
			ours=1
		else
			keep+=("$d")
		fi
	done
	[[ -n $ours ]] || return 0
	LOOPS=("${keep[@]}")
	losetup -d "$1" || echo "# cannot detach $1" >&2
}

# idle_sysfs DIR: the daemons started from now on find an idle disk ("idle0",
# whose counters never move) behind DIR's filesystem, in a fake sysfs under
# $WORK: their bursts run, and the device gauges exist (at 0).
idle_sysfs() {
	local sys="$WORK/sysfs"
	mkdir -p "$sys/dev/block" "$sys/block/idle0"
	echo "1 0 8 1 0 0 0 0 0 1 1 0 0 0 0 0 0" >"$sys/block/idle0/stat"
	ln -sfn ../../block/idle0 "$sys/dev/block/$(stat -c '%Hd:%Ld' "$1")"
	export IOPULSE_SYSFS=$sys
}

# ---- iopulse probe ---------------------------------------------------------

# run_probe STATUS OUT [ARGS...]: run `iopulse probe ARGS...` with its stdout in OUT
# and its stderr in OUT.err; fail, showing both, unless it exits with STATUS.
run_probe() {
	local want=$1 out=$2 rc=0
	shift 2
	"$IOPULSE" probe "$@" >"$out" 2>"$out.err" || rc=$?
	((rc == want)) || fail "iopulse probe $*: exit status $rc, want $want:"$'\n'"$(cat "$out.err" "$out")"
}

# ---- HTTP ------------------------------------------------------------------

url() {
	echo "http://127.0.0.1:$DAEMON_PORT${1:-/metrics}"
}

# scrape [PATH]: GET PATH (default /metrics) to stdout; curl's status on error.
scrape() {
	curl -fsS --max-time 30 "$(url "${1:-/metrics}")"
}

# scrape_metrics: GET /metrics into a new file under $WORK; sets PAGE to it.
scrape_metrics() {
	SCRAPE_N=$((SCRAPE_N + 1))
	PAGE="$WORK/scrape.$SCRAPE_N.prom"
	scrape /metrics >"$PAGE" || fail "scrape of $(url /metrics) failed (curl status $?)"
}

# http_status METHOD PATH: prints the status code (000 when no response).
http_status() {
	local method=$1 path=$2
	if [[ $method == HEAD ]]; then
		curl -sS -o /dev/null --max-time 30 --head -w '%{http_code}' "$(url "$path")" || true
	else
		curl -sS -o /dev/null --max-time 30 -X "$method" -w '%{http_code}' "$(url "$path")" || true
	fi
}

# ---- samples ---------------------------------------------------------------

# sample FILE SERIES: print the value of the line whose series text (metric name
# and labels, exactly as exposed) is SERIES; status 1 when there is none.
sample() {
	awk -v s="$2" '
		index($0, s " ") == 1 {
			split(substr($0, length(s) + 2), f, " ")
			print f[1]
			found = 1
			exit
		}
		END { exit !found }' "$1"
}

# sample_into VAR FILE SERIES: as sample, into VAR; fail when SERIES is absent.
sample_into() {
	local out
	out=$(sample "$2" "$3") || fail "series $3 not found in $2"
	printf -v "$1" '%s' "$out"
}

# sample_or VAR DEFAULT FILE SERIES: as sample, into VAR; DEFAULT when absent.
sample_or() {
	local out
	out=$(sample "$3" "$4") || out=$2
	printf -v "$1" '%s' "$out"
}

# has_series FILE SERIES
has_series() {
	sample "$1" "$2" >/dev/null
}

# scraped SERIES OP N [ABSENT]: scrape /metrics (sets PAGE) and compare the value
# of SERIES with N, as num does; a missing SERIES counts as ABSENT, or is false
# when there is no ABSENT. A condition for wait_until.
scraped() {
	local v
	scrape_metrics
	if ! v=$(sample "$PAGE" "$1"); then
		(($# > 3)) || return 1
		v=$4
	fi
	num "$v" "$2" "$3"
}

# check_histograms FILE: every iopulse_probe_latency_seconds series in FILE is
# internally consistent and agrees with iopulse_probe_ios_total:
#   - `le` is the last label; buckets appear in strictly ascending `le` order and
#     their counts never decrease (they are cumulative);
#   - the finite bounds run from 10us to 10s (the default classic buckets);
#   - le="+Inf" == _count, _sum present (and > 0 once something was counted);
#   - _count == iopulse_probe_ios_total of the same {probe,target,op} and every
#     ios_total series has a histogram (both are published under one lock, so a
#     scrape never sees one without the other).
# Status 1 when anything is wrong; sets HIST_FINDINGS (one line per finding) and
# HIST_SERIES (the label sets checked, one per line).
check_histograms() {
	local rc=0
	# shellcheck disable=SC2034 # read by the tests
	HIST_FINDINGS=$(awk '
		function err(m) { print m; bad = 1 }
		/^#/ { next }
		{
			name = $1; labels = ""
			b = index($1, "{")
			if (b) { name = substr($1, 1, b - 1); labels = substr($1, b + 1, length($1) - b - 1) }
			v = $2 + 0
		}
		name == "iopulse_probe_ios_total" { ios[labels] = v; next }
		name == "iopulse_probe_latency_seconds_count" { cnt[labels] = v; next }
		name == "iopulse_probe_latency_seconds_sum" { sum[labels] = v; hassum[labels] = 1; next }
		name == "iopulse_probe_latency_seconds_bucket" {
			if (!match(labels, /,le="[^"]*"$/)) { err("le is not the last label: " $1); next }
			key = substr(labels, 1, RSTART - 1)
			le = substr(labels, RSTART + 5, RLENGTH - 6)
			if (!(key in nb)) { nb[key] = 0; order[++nkeys] = key }
			if (key in inf) { err("bucket after le=\"+Inf\": " $1); next }
			if (le == "+Inf") {
				inf[key] = v
			} else {
				lev = le + 0
				if (nb[key] > 0 && !(lev > lastle[key])) err("le not ascending: " $1)
				if (!(key in first)) first[key] = lev
				lastfin[key] = lev
				lastle[key] = lev
			}
			if (nb[key] > 0 && v < lastv[key]) err("bucket count decreases: " $1 " after " lastv[key])
			lastv[key] = v
			nb[key]++
		}
		END {
			for (i = 1; i <= nkeys; i++) {
				k = order[i]
				print "series " k > "/dev/stderr"
				if (!(k in inf)) { err("{" k "}: no le=\"+Inf\" bucket"); continue }
				if (!(k in cnt)) err("{" k "}: no _count")
				else if (inf[k] != cnt[k]) err("{" k "}: le=\"+Inf\" " inf[k] " != _count " cnt[k])
				if (!(k in hassum)) err("{" k "}: no _sum")
				else if (cnt[k] > 0 && !(sum[k] > 0)) err("{" k "}: _count " cnt[k] " but _sum " sum[k])
				if (first[k] != 0.00001) err("{" k "}: first bucket le=" first[k] ", want 1e-05 (10us)")
				if (lastfin[k] != 10) err("{" k "}: last finite bucket le=" lastfin[k] ", want 10 (10s)")
				if (!(k in ios)) err("{" k "}: histogram without iopulse_probe_ios_total")
				else if (ios[k] != cnt[k]) err("{" k "}: _count " cnt[k] " != iopulse_probe_ios_total " ios[k])
			}
			for (k in ios) if (!(k in nb)) err("{" k "}: iopulse_probe_ios_total without a histogram")
			for (k in cnt) if (!(k in nb)) err("{" k "}: _count without buckets")
			exit bad
		}' "$1" 2>"$WORK/.hist_series") || rc=$?
	# shellcheck disable=SC2034 # read by the tests
	HIST_SERIES=$(sed 's/^series //' "$WORK/.hist_series")
	return "$rc"
}

# ---- Prometheus --------------------------------------------------------------

PROM_PID=
PROM_URL=
PROM_N=0

# port_free PORT: nothing listens on 127.0.0.1:PORT (bind succeeds).
port_free() {
	/usr/bin/python3 -c 'import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)' "$1"
}

# start_prometheus [FLAGS...]: a Prometheus scraping iopulse (job "iopulse") every
# second, with its own TSDB under $WORK, on a free loopback port; waits until it
# is ready. It scrapes the daemons at PROM_TARGETS (ports; default the current
# daemon's), with PROM_JOB_EXTRA (YAML lines indented for the job: scheme,
# basic_auth, tls_config) and, when PROM_RULES names a rules file, evaluates it every second.
# Sets PROM_PID, PROM_URL. Its log is printed if the test fails.
start_prometheus() {
	local dir port try log deadline code path
	PROM_N=$((PROM_N + 1))
	dir="$WORK/prom.$PROM_N"
	mkdir "$dir"
	local targets="" p
	for p in ${PROM_TARGETS:-$DAEMON_PORT}; do
		targets+="${targets:+, }'127.0.0.1:$p'"
	done
	cat >"$dir/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: iopulse
    static_configs:
      - targets: [$targets]
${PROM_JOB_EXTRA:-}
EOF
	if [[ -n ${PROM_RULES:-} ]]; then
		printf 'rule_files:\n  - %s\n' "$PROM_RULES" >>"$dir/prometheus.yml"
	fi
	for try in 1 2 3 4 5 6 7 8 9 10; do
		port=$((20000 + RANDOM % 40000))
		port_free "$port" || continue
		log="$dir/prometheus.$try.log"
		DAEMON_LOGS+=("$log")
		prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
			--web.listen-address="127.0.0.1:$port" --log.level=warn "$@" >"$log" 2>&1 &
		PROM_PID=$!
		DAEMON_PIDS+=("$PROM_PID")
		PROM_URL="http://127.0.0.1:$port"
		deadline=$(($(now_ms) + 30000))
		while :; do
			if ! alive "$PROM_PID"; then
				wait "$PROM_PID" || true
				_forget_pid "$PROM_PID"
				grep -qi 'address already in use' "$log" && continue 2
				fail "prometheus $* exited before it was ready"
			fi
			code=$(curl -s -o /dev/null --max-time 2 -w '%{http_code}' "$PROM_URL/-/ready") || true
			[[ $code == 200 ]] && break
			(($(now_ms) < deadline)) || fail "prometheus $* not ready within 30s ($PROM_URL/-/ready: $code)"
			sleep 0.2
		done
		# The server that answered is ours, not another one that won the port.
		path=$(curl -fsS --max-time 5 "$PROM_URL/api/v1/status/flags" |
			/usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["storage.tsdb.path"])') ||
			fail "cannot read $PROM_URL/api/v1/status/flags"
		[[ $path == "$dir/data" ]] || fail "$PROM_URL is not our prometheus (tsdb path '$path')"
		note "prometheus $PROM_PID $* ready on $PROM_URL (log $log)"
		return 0
	done
	fail "found no free port for prometheus in 10 tries"
}

stop_prometheus() {
	kill -TERM "$PROM_PID" 2>/dev/null || true
	reap "$PROM_PID" "prometheus (sent SIGTERM)" 10
	_forget_pid "$PROM_PID"
	PROM_PID=
}
