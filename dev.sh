#!/usr/bin/env bash
# The two Quick start commands (README.md), run as root on Debian 12:
#   ./dev.sh run [iopulse run options]   install what is missing, build, run in the foreground
#   ./dev.sh test                        install what is missing, build, run the whole suite
#                                        (plain, ASan + UBSan; threaded tests under TSan;
#                                        every stage runs, the failures of all listed at the end)
#   ./dev.sh bench                       install fio/ioping, build Release, run bench/*.sh
#   ./dev.sh fuzz [NAME...]              install clang + libFuzzer, fuzz each tests/fuzz harness
# `./dev.sh build` only installs and builds. .ci/run runs `./dev.sh test`.
#
# `./dev.sh fuzz` builds tests/fuzz/fuzz_*.c with clang (libFuzzer, ASan + UBSan) in
# build-fuzz/ and runs each harness (config, accept, accept_encoding; or those named)
# for $FUZZ_SECONDS (default 180) on a fresh writable copy of its corpus in
# build-fuzz/work/NAME/corpus: the committed corpus never grows by itself. It exits
# non-zero when one crashes, leaks, hangs or runs out of memory, naming the
# reproducer; once fixed, commit that file to tests/fuzz/corpus/NAME/ and the suite
# replays it. Not part of `test` (whose fuzz/* tests replay the corpus only).
set -euo pipefail
cd "$(dirname "$0")"

# Build and run dependencies, then what the tests drive (promtool, curl, chattr; cpack's
# dpkg-shlibdeps and lintian for the .deb).
PACKAGES=(gcc make cmake pkg-config git libyaml-dev libmicrohttpd-dev liburing-dev libaio-dev
	libsystemd-dev zlib1g-dev libgnutls28-dev nettle-dev libcrypt-dev)
# fio loads a loop device for the busy-disk test. openssl makes the web config
# test's certificates, htpasswd (apache2-utils) its
# bcrypt hashes, gnutls-cli (gnutls-bin) offers TLS 1.0/1.1 where curl's OpenSSL won't.
# prometheus-alertmanager (with amtool) checks dashboards/alertmanager.yml and
# receives the alerts of the end-to-end alerting test; prometheus-node-exporter
# answers the dashboard's host disk panels in test_dashboard_modes.
TEST_PACKAGES=(libcmocka-dev prometheus curl e2fsprogs libfuse3-dev fuse3 python3 python3-jsonschema
	ioping dpkg-dev lintian chromium python3-html5lib strace debootstrap systemd-container
	openssl apache2-utils gnutls-bin fio prometheus-alertmanager prometheus-node-exporter)
# What bench/ compares against and measures with.
BENCH_PACKAGES=(fio ioping time wrk prometheus-node-exporter strace curl)
# libFuzzer is in clang's runtime package, which clang only recommends.
FUZZ_PACKAGES=(clang libclang-rt-14-dev)

install_missing() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "dev.sh: missing Debian packages: ${missing[*]}; run as root to install them" >&2
		exit 1
	fi
	echo "dev.sh: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build() { # build DIR [cmake options]; its status also where set -e is off (stage)
	local dir=$1
	shift
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null &&
		cmake --build "$dir" -j"$(nproc)"
}

# stage NAME DIR [CMAKE OPTION...] -- [VAR=VALUE...] [CTEST ARG...]: one stage of
# `test`: build DIR with the options, run its suite with ctest (in DIR, the
# variables in its environment). A build that fails or tests that fail are
# recorded in FAILED, with ctest's list of the failed tests, and the next stage
# runs all the same: one run reports every failure. But not after Ctrl-C: ctest
# and make catch SIGINT and exit with a status, so bash (which stops only when
# its child dies of the signal) would go on; the trap (test) and status 130,
# for an interrupt that reached only ctest, stop dev.sh instead.
FAILED=()
interrupted() {
	echo "dev.sh: interrupted" >&2
	exit 130
}
stage() {
	local name=$1 dir=$2 opts=() vars=() rc=0 failed spec
	shift 2
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	while [ $# -gt 0 ] && [[ $1 == *=* ]]; do
		vars+=("$1")
		shift
	done
	echo "=== dev.sh: stage $name ($dir)" >&2
	build "$dir" "${opts[@]}" || rc=$?
	[ "$rc" -ne 130 ] || interrupted
	if [ "$rc" -ne 0 ]; then
		FAILED+=("$name: the build failed")
		return 0
	fi
	# At most 2 tests on the CPUs at a time, besides those that mostly wait
	# (tests/CMakeLists.txt).
	spec=$PWD/tests/resources.json
	rm -f "$dir/Testing/Temporary/LastTestsFailed.log"
	(cd "$dir" && env "${vars[@]}" ctest --output-on-failure --no-tests=error \
		-j6 --resource-spec-file "$spec" "$@") || rc=$?
	[ "$rc" -eq 0 ] && return 0
	[ "$rc" -ne 130 ] || interrupted
	failed=$(sed 's/^[0-9]*://' "$dir/Testing/Temporary/LastTestsFailed.log" 2>/dev/null | paste -sd ' ' -) || true
	FAILED+=("$name: ${failed:-ctest failed with status $rc}")
}

case "${1:-}" in
run)
	shift
	install_missing "${PACKAGES[@]}"
	build build -DIOPULSE_TESTS=OFF
	# The embedded default measures ./iopulse-data ($STATE_DIRECTORY under systemd);
	# iopulse never creates a target directory itself.
	[ -n "${STATE_DIRECTORY:-}" ] || mkdir -p iopulse-data
	exec build/iopulse run "$@"
	;;
build)
	install_missing "${PACKAGES[@]}" "${TEST_PACKAGES[@]}"
	build build -DIOPULSE_TESTS=ON
	;;
test)
	trap interrupted INT
	install_missing "${PACKAGES[@]}" "${TEST_PACKAGES[@]}"
	start=$(date +%s)
	# IOPULSE_TESTS=ON explicitly: `run` configures build/ without tests, and CMake
	# remembers; --no-tests=error so a suite that finds nothing cannot pass.
	# Each stage builds and runs even when one before it failed (stage).
	stage plain build -DIOPULSE_TESTS=ON --
	# The same suite again under AddressSanitizer + UndefinedBehaviorSanitizer, but
	# test_alerting and test_alerting_shapes: they prove the rules and
	# Alertmanager's timing (minutes of their for and keep_firing_for windows,
	# whatever the build), and the daemon code they drive (the baseline, the
	# shapes, slow and stuck, the state file) is test_slow_state's,
	# test_restart_state's and the unit tests', which run here. Nor test_package
	# and test_package_install: the first builds the tree afresh with Debian's
	# flags (nothing of this build), the second packs this build into a
	# container where a sanitizer build cannot run its checks; both are minutes
	# of the plain stage's work again.
	stage ASan+UBSan build-asan -DIOPULSE_SANITIZE=ON -DIOPULSE_TESTS=ON -- \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		-E '^integration/test_(alerting(_shapes)?|package(_install)?)$'
	# The tests that run threads again under ThreadSanitizer: lanes (test_golden
	# runs one), the metrics registry, burst jobs, the HTTP server, engines used
	# from another thread, target layout watched from one, calls with a deadline
	# (lib/within), and the reload thread
	# (the real daemon, reloading a FIFO and a deep file, stopped mid-reload; not
	# test_reload_hung, whose 1-second bounds TSan's slowdown can miss under load),
	# lanes retired by reload storms while their target hangs and freed by their
	# own threads at the thaw, the status page (its figures read from the
	# HTTP thread while lanes run), and the state file (its I/O within a
	# deadline, what it keeps collected from the status under its mutex).
	# The first data race fails the test (exit 66, not a skip).
	stage TSan build-tsan -DIOPULSE_TSAN=ON -DIOPULSE_TESTS=ON -- \
		TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1" \
		-R '^(unit/test_(lane|metrics|golden|burst|http|engine|target|within|statefile|status_persist)|integration/test_(reload_blocking|reload_during_hang|status_page))$'
	if [ ${#FAILED[@]} -gt 0 ]; then
		echo "dev.sh: the suite failed in $(($(date +%s) - start))s; stages that failed:" >&2
		printf '  %s\n' "${FAILED[@]}" >&2
		exit 1
	fi
	echo "dev.sh: whole suite passed in $(($(date +%s) - start))s"
	;;
bench)
	install_missing "${PACKAGES[@]}" "${TEST_PACKAGES[@]}" "${BENCH_PACKAGES[@]}"
	cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build build-bench -j"$(nproc)"
	# Every benchmark script (lib.sh is their shared helper, not a benchmark).
	for script in bench/*.sh; do
		[ "$script" = bench/lib.sh ] && continue
		echo "=== $script" >&2
		BUILD=$PWD/build-bench "$script"
	done
	;;
fuzz)
	shift
	install_missing "${PACKAGES[@]}" "${FUZZ_PACKAGES[@]}"
	seconds=${FUZZ_SECONDS:-180}
	if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
		echo "dev.sh: FUZZ_SECONDS must be a number of seconds, not '$seconds'" >&2
		exit 64
	fi
	cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
		-DIOPULSE_TESTS=OFF -DIOPULSE_FUZZ=ON >/dev/null
	cmake --build build-fuzz -j"$(nproc)" --target fuzzers
	# tests/fuzz/CMakeLists.txt writes each harness's seed paths to fuzz_NAME.seeds.
	if [ $# -eq 0 ]; then
		for seeds in build-fuzz/tests/fuzz/fuzz_*.seeds; do
			name=${seeds##*/fuzz_}
			set -- "$@" "${name%.seeds}"
		done
	fi
	found=()
	for name in "$@"; do
		bin=build-fuzz/tests/fuzz/fuzz_$name
		if [ ! -x "$bin" ]; then
			echo "dev.sh: no fuzz harness '$name' (tests/fuzz/fuzz_$name.c)" >&2
			exit 64
		fi
		work=build-fuzz/work/$name
		rm -rf "$work"
		mkdir -p "$work/corpus"
		# A flat copy; names keep their origin (examples_minimal.yaml).
		while read -r seed; do
			[ -n "$seed" ] || continue
			find "$seed" -type f -print0 | while IFS= read -r -d '' f; do
				rel=${f#"$(dirname "$seed")"/}
				cp "$f" "$work/corpus/${rel//\//_}"
			done
		done <"$bin.seeds"
		dict=tests/fuzz/http.dict
		[ "$name" = config ] && dict=tests/fuzz/config.dict
		echo "=== fuzz_$name for ${seconds}s, $(find "$work/corpus" -type f | wc -l) seeds" \
			"(log: $work/fuzz.log)" >&2
		# -timeout: an input that takes 10s is a hang; the run's own limit is
		# -max_total_time. Artifacts (crash-*, leak-*, timeout-*, oom-*) go to $work.
		if UBSAN_OPTIONS=print_stacktrace=1 "$bin" -max_total_time="$seconds" -timeout=10 \
			-rss_limit_mb=2048 -dict="$dict" -artifact_prefix="$work/" \
			-print_final_stats=1 "$work/corpus" >"$work/fuzz.log" 2>&1; then
			grep -E '^(stat::number_of_executed_units|stat::new_units_added)' \
				"$work/fuzz.log" >&2 || true
			continue
		fi
		tail -n 40 "$work/fuzz.log" >&2
		n=${#found[@]}
		for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
			[ -e "$f" ] && found+=("$bin $f")
		done
		[ ${#found[@]} -gt "$n" ] || found+=("$bin: failed without a reproducer, see $work/fuzz.log")
	done
	if [ ${#found[@]} -gt 0 ]; then
		echo "dev.sh: fuzzing found problems; reproduce with:" >&2
		printf '  %s\n' "${found[@]}" >&2
		exit 1
	fi
	echo "dev.sh: fuzzing found nothing in ${seconds}s per harness" >&2
	;;
*)
	echo "usage: $0 run [iopulse run options] | test | build | bench | fuzz [NAME...]" >&2
	exit 64
	;;
esac
