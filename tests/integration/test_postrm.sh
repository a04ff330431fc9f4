#!/bin/bash
# SPDX-License-Identifier: MIT
#
# packaging/postrm's purge, run by dash (Debian's /bin/sh) on a fake root in $WORK
# through DPKG_ROOT, as dpkg --root would: what it takes for iopulse's own files
# in the state directories, and that it never hangs. test_package_install.sh
# purges a real installation; this covers the corners that need a precise set-up:
#   - a name swapped for a FIFO between the script's checks and its read (the
#     swap is made by a mountpoint(1) stub, which the script calls in between):
#     the purge finishes, the FIFO is left;
#   - a header that only starts like the probe file's (IOPULSE-PROBE-FILEX):
#     kept;
#   - a temporary name that is not 16 hex digits: kept, header or not;
#   - an empty temporary of a layout killed before its header (exactly
#     .iopulse-probe.tmp. and 16 hex digits, the directory's owner, one link):
#     removed, and the directory with it; one with a second link: kept;
#   - the state file (.iopulse-state, its own header and NUL) and a save's
#     temporary: removed; a .iopulse-state with the probe file's header, or
#     whose header lacks its NUL: kept.
# deb-systemd-helper and systemctl are stubs: nothing of this host is touched.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd dash mkfifo timeout

POSTRM="$SOURCE_DIR/packaging/postrm"
ROOT="$WORK/root"
VL="$ROOT/var/lib/iopulse"
PRIV="$ROOT/var/lib/private/iopulse"
HEADER=$'IOPULSE-PROBE-FILE\nversion: 1\n'
mkdir -p "$VL" "$PRIV" "$WORK/bin"
# state_file FILE [NUL]: a state file's header (daemon/status/status_persist.h),
# its NUL byte unless NUL is "no", then a few bytes.
state_file() {
	printf 'IOPULSE-STATE-FILE\n' >"$1"
	[[ ${2:-} == no ]] || printf '\0' >>"$1"
	printf '\1\0\0\0rest' >>"$1"
}

# The stubs. mountpoint(1) swaps $SWAP for a FIFO when the script asks about it,
# after its [ -f ] and before it reads the header.
for cmd in deb-systemd-helper systemctl; do
	printf '#!/bin/sh\necho "%s $*" >>"%s/stub.log"\n' "$cmd" "$WORK" >"$WORK/bin/$cmd"
done
MOUNTPOINT=$(command -v mountpoint || echo false)
cat >"$WORK/bin/mountpoint" <<EOF
#!/bin/sh
for a; do
	if [ "\$a" = "$VL/.iopulse-probe" ] && [ ! -p "\$a" ]; then
		rm -f -- "\$a" && mkfifo -- "\$a"
	fi
done
exec $MOUNTPOINT "\$@"
EOF
chmod +x "$WORK/bin"/*

# /var/lib/iopulse: nothing in it may go, so it stays.
printf '%s' "$HEADER" >"$VL/.iopulse-probe" # a FIFO by the time it is read
printf 'IOPULSE-PROBE-FILEX\n' >"$VL/.iopulse-verify.x"
printf '%s' "$HEADER" >"$VL/.iopulse-probe.tmp.0123"
: >"$VL/.iopulse-probe.tmp.0123456789abcdeg"
: >"$WORK/somebodys"
ln "$WORK/somebodys" "$VL/.iopulse-probe.tmp.fedcba9876543210"
printf '%s' "$HEADER" >"$VL/.iopulse-state"  # the probe file's header: not a state file
state_file "$VL/.iopulse-state.tmp.0123456789abcdef" no # no NUL after it: not ours
KEPT=(.iopulse-verify.x .iopulse-probe.tmp.0123 .iopulse-probe.tmp.0123456789abcdeg
	.iopulse-probe.tmp.fedcba9876543210 .iopulse-state .iopulse-state.tmp.0123456789abcdef)
# /var/lib/private/iopulse: all iopulse's, so it goes.
printf '%s' "$HEADER" >"$PRIV/.iopulse-probe"
printf '%s' "$HEADER" >"$PRIV/.iopulse-verify.v"
: >"$PRIV/.iopulse-probe.tmp.0123456789abcdef"
state_file "$PRIV/.iopulse-state"
state_file "$PRIV/.iopulse-state.tmp.fedcba9876543210"
: >"$PRIV/.iopulse-state.tmp.00000000000000ff"

rc=0
PATH="$WORK/bin:$PATH" DPKG_ROOT="$ROOT" timeout 60 dash "$POSTRM" purge \
	>"$WORK/postrm.out" 2>"$WORK/postrm.err" || rc=$?
note "postrm purge: status $rc: $(cat "$WORK/postrm.err")"
((rc != 124)) || fail "postrm purge did not finish in 60s (hung on the FIFO)"
((rc == 0)) || fail "postrm purge: status $rc, want 0"
[[ -p $VL/.iopulse-probe ]] || fail "the stub did not swap in the FIFO, or the purge removed it"
for f in "${KEPT[@]}"; do
	[[ -f $VL/$f ]] || fail "postrm purge removed $f, which is not iopulse's"
done
[[ -f $WORK/somebodys ]] || fail "postrm purge removed a file outside the root"
[[ ! -e $PRIV ]] || fail "postrm purge left $PRIV: $(ls -A "$PRIV")"
grep -q "$VL holds files iopulse did not create" "$WORK/postrm.err" ||
	fail "postrm purge did not say why it left $VL"
grep -q '^deb-systemd-helper purge' "$WORK/stub.log" || fail "postrm purge did not call deb-systemd-helper"
note "pass"
