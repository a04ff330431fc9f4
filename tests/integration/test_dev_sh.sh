#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `./dev.sh test` stops at Ctrl-C instead of starting its next stage. ctest
# catches SIGINT and exits with a status of its own, so bash, which stops only
# when its child dies of the signal, went on. dev.sh runs here from a copy in
# $WORK, in a session of its own (setsid: the interrupt reaches nothing else),
# with stubs for dpkg-query (everything installed), cmake (builds succeed) and
# ctest, which logs its call, then either
#   - interrupts the session, as a terminal's Ctrl-C does, and exits 8 as ctest
#     does when tests failed, or
#   - only exits 130, an interrupt that reached ctest alone;
# each time dev.sh must exit 130 after the first stage's ctest, with no other.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd setsid timeout

REPO="$WORK/repo"
mkdir -p "$REPO/build" "$REPO/build-asan" "$REPO/build-tsan" "$WORK/bin"
cp "$SOURCE_DIR/dev.sh" "$REPO/dev.sh"
cat >"$WORK/bin/dpkg-query" <<'SH'
#!/bin/sh
printf 'install ok installed'
SH
printf '#!/bin/sh\nexit 0\n' >"$WORK/bin/cmake"
cat >"$WORK/bin/ctest" <<SH
#!/bin/bash
echo "ctest in \$PWD" >>"$WORK/ctest.log"
if [ "\$CTEST_STUB" = ctrl-c ]; then
	trap '' INT
	kill -INT 0
	exit 8
fi
exit 130
SH
chmod +x "$WORK/bin"/*

for how in ctrl-c ctest-only; do
	: >"$WORK/ctest.log"
	rc=0
	CTEST_STUB=$how PATH="$WORK/bin:$PATH" timeout 60 setsid -w bash "$REPO/dev.sh" test \
		>"$WORK/$how.out" 2>"$WORK/$how.err" </dev/null || rc=$?
	note "$how: status $rc: $(tr '\n' ' ' <"$WORK/$how.err")"
	((rc == 130)) || fail "$how: dev.sh test exited $rc, want 130:"$'\n'"$(cat "$WORK/$how.err")"
	[[ $(cat "$WORK/ctest.log") == "ctest in $REPO/build" ]] ||
		fail "$how: dev.sh went on after the interrupt:"$'\n'"$(cat "$WORK/ctest.log")"
	grep -q '^dev.sh: interrupted$' "$WORK/$how.err" || fail "$how: dev.sh did not say it was interrupted"
done
note "pass"
