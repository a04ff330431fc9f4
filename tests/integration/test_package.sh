#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Install and package: a fresh Release build (with Debian's hardening flags from
# dpkg-buildflags, as a Debian build would use) in $WORK, `cpack -G DEB`, then:
#   - the control fields (name, version, architecture, section, priority,
#     maintainer, description) and the computed runtime Depends;
#   - the file list: binary, service and socket units, /etc/iopulse/iopulse.yaml,
#     man pages, dashboards, README, copyright, changelog; owners root/root,
#     modes 0755 (directories, the binary) and 0644 (everything else);
#   - /etc/iopulse/iopulse.yaml (the shipped default) and /etc/default/iopulse
#     are the conffiles; the maintainer scripts are there, executable, and the
#     Depends name what they run (adduser, init-system-helpers);
#   - `lintian` reports no error (E:); warnings are printed, not fatal;
#   - `dpkg -x` into $WORK (never dpkg -i: the machine is not touched): the binary
#     is stripped, runs `version` and `check`s the shipped configuration;
#   - `cmake --install` with DESTDIR puts the same files in place and does not
#     overwrite an edited configuration when run again.
# test_package_install.sh installs the package in a Debian 12 container.
# Skipped (77) when cpack, dpkg-deb, dpkg-shlibdeps or lintian is missing.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

for tool in cpack dpkg-deb dpkg-shlibdeps lintian; do
	command -v "$tool" >/dev/null || skip "'$tool' not found (apt-get install cmake dpkg-dev lintian)"
done
require_cmd cmake readelf tar

BUILD="$WORK/build"
LOG="$WORK/build.log"
DAEMON_LOGS=("$LOG")

# ---- build and package -------------------------------------------------------

if command -v dpkg-buildflags >/dev/null; then
	export DEB_BUILD_MAINT_OPTIONS=hardening=+all
	CFLAGS="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
	LDFLAGS=$(dpkg-buildflags --get LDFLAGS)
	export CFLAGS LDFLAGS # CMake reads them at the first configure
fi
cmake -S "$SOURCE_DIR" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DIOPULSE_TESTS=OFF \
	>"$LOG" 2>&1 || fail "cmake configure failed"
cmake --build "$BUILD" -j"$(nproc)" >>"$LOG" 2>&1 || fail "build failed"
(cd "$BUILD" && cpack -G DEB) >>"$LOG" 2>&1 || fail "cpack -G DEB failed"

ARCH=$(dpkg --print-architecture)
VERSION=$(sed -n 's/^project(iopulse VERSION \([0-9.]*\).*/\1/p' "$SOURCE_DIR/CMakeLists.txt")
[[ -n $VERSION ]] || fail "cannot read the version from CMakeLists.txt"
DEB="$BUILD/iopulse_${VERSION}_${ARCH}.deb"
[[ -f $DEB ]] || fail "cpack did not produce $DEB: $(ls "$BUILD"/*.deb 2>/dev/null)"
note "built $(basename "$DEB") ($(stat -c %s "$DEB") bytes)"

# ---- control fields ----------------------------------------------------------

field() { dpkg-deb -f "$DEB" "$1"; }
expect_field() { # NAME VALUE
	local got
	got=$(field "$1")
	[[ $got == "$2" ]] || fail "control field $1 is '$got', expected '$2'"
}
expect_field Package iopulse
expect_field Version "$VERSION"
expect_field Architecture "$ARCH"
expect_field Section admin
expect_field Priority optional
[[ $(field Maintainer) == *\<*@*\> ]] || fail "Maintainer '$(field Maintainer)' has no address"
[[ $(field Description) == *$'\n '* ]] || fail "Description has no extended part"

DEPENDS=$(field Depends)
note "Depends: $DEPENDS"
# One package per library the binary links (Debian 12 names; t64 for later).
# adduser and init-system-helpers: what the maintainer scripts run.
for pkg in libyaml-0-2 libmicrohttpd12 liburing2 'libaio1(t64)?' libsystemd0 zlib1g libc6 \
	adduser init-system-helpers; do
	[[ ", $DEPENDS," =~ [\ ,]${pkg}[\ ,] ]] || fail "Depends lacks $pkg: $DEPENDS"
done

# ---- file list ----------------------------------------------------------------

dpkg-deb -c "$DEB" >"$WORK/contents"
DAEMON_LOGS+=("$WORK/contents")
has() { # PATH (as dpkg-deb -c prints it, ./...)
	awk '{print $6}' "$WORK/contents" | grep -qxF "$1" || fail "the package lacks $1"
}
has ./usr/bin/iopulse
UNIT=$(awk '{print $6}' "$WORK/contents" | grep -E '^\./(usr/)?lib/systemd/system/iopulse\.service$' || true)
[[ -n $UNIT ]] || fail "the package lacks the unit iopulse.service under lib/systemd/system"
has "${UNIT%.service}.socket" # socket activation: the packaged default
has ./etc/iopulse/iopulse.yaml
has ./etc/default/iopulse
has ./usr/share/doc/iopulse/iopulse-directory.conf.example
has ./usr/share/man/man8/iopulse.8.gz
has ./usr/share/man/man5/iopulse.yaml.5.gz
for f in "$SOURCE_DIR"/dashboards/*; do
	has "./usr/share/iopulse/$(basename "$f")"
done
for f in copyright changelog.gz README.md; do
	has "./usr/share/doc/iopulse/$f"
done
# Owners and modes: root/root; directories and the binary 0755, files 0644.
awk '$2 != "root/root" { print "owner " $2 ": " $6 }
	/^d/ && $1 != "drwxr-xr-x" { print "mode " $1 ": " $6 }
	/^-/ && $6 == "./usr/bin/iopulse" && $1 != "-rwxr-xr-x" { print "mode " $1 ": " $6 }
	/^-/ && $6 != "./usr/bin/iopulse" && $1 != "-rw-r--r--" { print "mode " $1 ": " $6 }
	/^[^-d]/ { print "not a file or directory: " $6 }' "$WORK/contents" >"$WORK/bad-modes"
[[ ! -s $WORK/bad-modes ]] || fail "bad owners or modes: $(cat "$WORK/bad-modes")"

# ---- conffiles ------------------------------------------------------------------

dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./conffiles >"$WORK/conffiles" 2>/dev/null ||
	fail "the package has no conffiles"
[[ $(sort "$WORK/conffiles") == $'/etc/default/iopulse\n/etc/iopulse/iopulse.yaml' ]] ||
	fail "conffiles is '$(cat "$WORK/conffiles")', expected /etc/default/iopulse and /etc/iopulse/iopulse.yaml"
sort -o "$WORK/conffiles" "$WORK/conffiles"
grep -qx 'ARGS=""' <(dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./etc/default/iopulse) ||
	fail "/etc/default/iopulse does not set ARGS=\"\""
# The maintainer scripts: executable, shell, and doing what their names promise.
dpkg-deb --ctrl-tarfile "$DEB" | tar -tvf - >"$WORK/control-files"
for script in postinst prerm postrm; do
	grep -qE "^-rwxr-xr-x root/root .* \./$script\$" "$WORK/control-files" ||
		fail "the package has no executable $script: $(cat "$WORK/control-files")"
done
dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./postinst | grep -q 'deb-systemd-helper enable' ||
	fail "the postinst does not enable the units"
# Every file under /etc must be a conffile (lintian: file-in-etc-not-marked-as-conffile).
awk '/^-/ && $6 ~ /^\.\/etc\// { print substr($6, 2) }' "$WORK/contents" | sort >"$WORK/etc-files"
diff -u "$WORK/conffiles" "$WORK/etc-files" >&2 || fail "files under /etc and conffiles differ"

# ---- lintian --------------------------------------------------------------------

lintian --pedantic --display-info "$DEB" >"$WORK/lintian.out" 2>&1 || true
# (lintian exits non-zero for errors; the E: lines below are what decides.)
note "lintian:"
sed 's/^/#   /' "$WORK/lintian.out"
if grep -q '^E: ' "$WORK/lintian.out"; then
	fail "lintian reports errors: $(grep '^E: ' "$WORK/lintian.out")"
fi

# ---- extracted package ------------------------------------------------------------

ROOT="$WORK/root"
dpkg-deb -x "$DEB" "$ROOT"
BIN="$ROOT/usr/bin/iopulse"
! readelf -S "$BIN" | grep -qE '\.symtab|\.debug_' || fail "the packaged binary is not stripped"
"$BIN" version >"$WORK/version.out" 2>&1 || fail "the packaged iopulse version failed: $(cat "$WORK/version.out")"
grep -qF "$VERSION" "$WORK/version.out" ||
	fail "iopulse version says '$(cat "$WORK/version.out")', not $VERSION"
# config/default.yaml, but for the target's fallback: the service's own state
# directory, so that the command of iopulse(8) EXAMPLES, run by hand (no
# STATE_DIRECTORY), checks what the service measures.
diff "$SOURCE_DIR/config/default.yaml" "$ROOT/etc/iopulse/iopulse.yaml" |
	grep '^[<>] *directory:' >"$WORK/yaml.diff" || true
[[ $(cat "$WORK/yaml.diff") == "< "*'directory: ${STATE_DIRECTORY:-./iopulse-data}'$'\n'"> "*'directory: ${STATE_DIRECTORY:-/var/lib/iopulse}' ]] ||
	fail "the packaged /etc/iopulse/iopulse.yaml does not fall back to /var/lib/iopulse: $(diff "$SOURCE_DIR/config/default.yaml" "$ROOT/etc/iopulse/iopulse.yaml")"
# The state file goes to the same directory.
diff "$SOURCE_DIR/config/default.yaml" "$ROOT/etc/iopulse/iopulse.yaml" |
	grep '^[<>] *state_directory:' >"$WORK/state.diff" || true
[[ $(cat "$WORK/state.diff") == "< "*'state_directory: ${STATE_DIRECTORY:-./iopulse-data}'$'\n'"> "*'state_directory: ${STATE_DIRECTORY:-/var/lib/iopulse}' ]] ||
	fail "the packaged /etc/iopulse/iopulse.yaml does not keep its state file in /var/lib/iopulse: $(diff "$SOURCE_DIR/config/default.yaml" "$ROOT/etc/iopulse/iopulse.yaml")"
[[ $(diff "$SOURCE_DIR/config/default.yaml" "$ROOT/etc/iopulse/iopulse.yaml" | grep -c '^[<>]') == 8 ]] ||
	fail "the packaged /etc/iopulse/iopulse.yaml differs from config/default.yaml in more than its fallback: $(diff "$SOURCE_DIR/config/default.yaml" "$ROOT/etc/iopulse/iopulse.yaml")"
STATE_DIRECTORY="$WORK" "$BIN" check --config "$ROOT/etc/iopulse/iopulse.yaml" \
	>"$WORK/check.out" 2>&1 || fail "iopulse check rejects the packaged configuration: $(cat "$WORK/check.out")"
grep -qxF "    directory: '$WORK'" "$WORK/check.out" || grep -qxF "    directory: $WORK" "$WORK/check.out" ||
	fail "iopulse check with STATE_DIRECTORY=$WORK does not measure it: $(cat "$WORK/check.out")"
# By hand, as the man page shows it: the service's directory (whether this
# machine has one or not: only the schedule printed is looked at).
RC=0
env -u STATE_DIRECTORY "$BIN" check --config "$ROOT/etc/iopulse/iopulse.yaml" \
	>"$WORK/check-by-hand.out" 2>"$WORK/check-by-hand.err" || RC=$?
DAEMON_LOGS+=("$WORK/check-by-hand.out" "$WORK/check-by-hand.err")
grep -qE "^ +directory: '?/var/lib/iopulse'?$" "$WORK/check-by-hand.out" ||
	fail "iopulse check of the packaged configuration without STATE_DIRECTORY does not measure /var/lib/iopulse"
! grep -q 'iopulse-data' "$WORK/check-by-hand.err" ||
	fail "iopulse check of the packaged configuration still looks at ./iopulse-data: $(cat "$WORK/check-by-hand.err")"
for page in man8/iopulse.8.gz man5/iopulse.yaml.5.gz; do
	if command -v man >/dev/null; then
		warnings=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 \
			man --warnings -E UTF-8 -l -Tutf8 -Z "$ROOT/usr/share/man/$page" 2>&1 >/dev/null)
		[[ -z $warnings ]] || fail "man warns about $page: $warnings"
	fi
done

# ---- cmake --install keeps an edited configuration -------------------------------

INST="$WORK/inst"
DESTDIR="$INST" cmake --install "$BUILD" --prefix /usr >>"$LOG" 2>&1 || fail "cmake --install failed"
[[ -x $INST/usr/bin/iopulse && -f $INST/etc/iopulse/iopulse.yaml && -f $INST/etc/default/iopulse &&
	-f $INST/usr/share/man/man8/iopulse.8.gz ]] || fail "cmake --install left files out: $(cd "$INST" && find . | sort)"
[[ -f $INST${UNIT#.} ]] || fail "cmake --install did not put the unit at ${UNIT#.}"
echo "# edited by the administrator" >>"$INST/etc/iopulse/iopulse.yaml"
echo "# edited by the administrator" >>"$INST/etc/default/iopulse"
DESTDIR="$INST" cmake --install "$BUILD" --prefix /usr >>"$LOG" 2>&1 || fail "cmake --install (again) failed"
for f in /etc/iopulse/iopulse.yaml /etc/default/iopulse; do
	grep -q "edited by the administrator" "$INST$f" || fail "cmake --install overwrote an edited $f"
done

note "package contents:"
sed 's/^/#   /' "$WORK/contents"
echo "PASS: $TEST_NAME"
