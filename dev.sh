#!/usr/bin/env bash
# The two Quick start commands (README.md), run as root on Debian 12:
#   ./dev.sh run [iopulse run options]   install what is missing, build, run in the foreground
#   ./dev.sh test                        install what is missing, build, run the whole suite
#   ./dev.sh bench                       install fio/ioping, build Release, run bench/*.sh
# `./dev.sh build` only installs and builds. .ci/run runs `./dev.sh test`.
set -euo pipefail
cd "$(dirname "$0")"

# Build and run dependencies, then what the tests drive (promtool, curl, chattr; cpack's
# dpkg-shlibdeps and lintian for the .deb).
PACKAGES=(gcc make cmake pkg-config git libyaml-dev libmicrohttpd-dev liburing-dev libaio-dev
	libsystemd-dev zlib1g-dev)
TEST_PACKAGES=(libcmocka-dev prometheus curl e2fsprogs libfuse3-dev fuse3 python3 python3-jsonschema
	dpkg-dev lintian)
# What bench/ compares against and measures with.
BENCH_PACKAGES=(fio ioping time wrk prometheus-node-exporter)

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

build() { # build DIR [cmake options]
	local dir=$1
	shift
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
	cmake --build "$dir" -j"$(nproc)"
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
	install_missing "${PACKAGES[@]}" "${TEST_PACKAGES[@]}"
	start=$(date +%s)
	# IOPULSE_TESTS=ON explicitly: `run` configures build/ without tests, and CMake
	# remembers; --no-tests=error so a suite that finds nothing cannot pass.
	build build -DIOPULSE_TESTS=ON
	(cd build && ctest --output-on-failure --no-tests=error -j2)
	# The same suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
	build build-asan -DIOPULSE_SANITIZE=ON -DIOPULSE_TESTS=ON
	(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure --no-tests=error -j2)
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
*)
	echo "usage: $0 run [iopulse run options] | test | build | bench" >&2
	exit 64
	;;
esac
