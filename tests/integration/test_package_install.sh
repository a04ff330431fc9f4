#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The .deb installed like a Debian service, in a clean Debian 12 made here:
# `debootstrap --variant=minbase bookworm` into $WORK (about 40 s and 200 MB,
# nothing cached outside $WORK), entered with `systemd-nspawn --pipe` (no --boot:
# systemd is not PID 1 there, so the maintainer scripts see no running systemd
# unless a step fakes one). The package comes from this build tree (`cpack` into
# $WORK); the upgrade is the same package repacked with a higher version.
#   - install (apt-get, dependencies from the archive): the iopulse system user;
#     iopulse.service and iopulse.socket enabled (links under
#     /etc/systemd/system/*.wants, deb-systemd-helper's state); the conffiles
#     /etc/iopulse/iopulse.yaml and /etc/default/iopulse (ARGS=""); started
#     through deb-systemd-invoke when systemd runs (a systemctl that records
#     its calls, and /run/systemd/system);
#   - the drop-in's instructions (systemd/iopulse-directory.conf.example): a
#     probe directory made with `install -d -o iopulse` passes `iopulse check`
#     run as iopulse with runuser, one owned by root does not (exit 73);
#   - iopulse(8) EXAMPLES as written: `iopulse check --config
#     /etc/iopulse/iopulse.yaml` by hand, as root and as iopulse, passes;
#   - upgrade: edited conffiles kept, the service restarted, the socket started;
#   - dpkg -r: service and socket stopped, conffiles and state kept;
#     reinstall: still enabled;
#   - dpkg -P: conffiles, enable links, deb-systemd-helper's state and the state
#     directories (/var/lib/iopulse, /var/lib/private/iopulse) gone; the
#     administrator's probe directory left alone;
#   - dpkg -P with a file system mounted at /var/lib/iopulse/disk and files of
#     the administrator's in /var/lib/iopulse: succeeds, removes iopulse's own
#     files only, touches nothing on the mount, follows no symlink.
# Skipped (77) when not root, without debootstrap, systemd-nspawn or cpack, or
# when deb.debian.org does not resolve.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

(($(id -u) == 0)) || skip "debootstrap and systemd-nspawn need root"
for tool in debootstrap systemd-nspawn cpack dpkg-deb; do
	command -v "$tool" >/dev/null ||
		skip "'$tool' not found (apt-get install debootstrap systemd-container cmake dpkg-dev)"
done
MIRROR=http://deb.debian.org/debian
getent hosts deb.debian.org >/dev/null || skip "deb.debian.org does not resolve (no network?)"
BUILD=$(dirname "$IOPULSE")
[[ -f $BUILD/CPackConfig.cmake ]] || fail "no CPackConfig.cmake next to $IOPULSE"

LOG="$WORK/steps.log"
DAEMON_LOGS=("$LOG")
: >"$LOG"

# ---- the packages ------------------------------------------------------------

(cd "$BUILD" && cpack -G DEB -B "$WORK/pkg") >>"$LOG" 2>&1 || fail "cpack -G DEB failed"
DEB=$(ls "$WORK"/pkg/iopulse_*.deb)
VERSION=$(dpkg-deb -f "$DEB" Version)
# The upgrade: the same files under a higher version (nothing else differs, so
# dpkg keeps edited conffiles without asking).
dpkg-deb -R "$DEB" "$WORK/repack"
sed -i "s/^Version: .*/Version: $VERSION+test1/" "$WORK/repack/DEBIAN/control"
dpkg-deb -b --root-owner-group "$WORK/repack" "$WORK/pkg/upgrade.deb" >>"$LOG" 2>&1 ||
	fail "repacking $DEB as version $VERSION+test1 failed"

# ---- a clean Debian 12 --------------------------------------------------------

ROOT="$WORK/root"
note "debootstrap --variant=minbase bookworm (about 40 s)"
debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 ||
	{
		DAEMON_LOGS+=("$WORK/debootstrap.log")
		fail "debootstrap failed"
	}
cp "$DEB" "$ROOT/root/iopulse.deb" # not /tmp: nspawn mounts a fresh one
cp "$WORK/pkg/upgrade.deb" "$ROOT/root/iopulse-upgrade.deb"

# systemd, as on any Debian 12 (its systemctl does the enabling: `systemctl
# preset`), though not running. In front of it, a systemctl that records the
# calls, passes on those that work offline (preset, is-enabled) and answers the
# rest as a running systemd would (units active, jobs done). apt runs dpkg with DPkg::Path, which lacks
# /usr/local: the steps give it one that has it.
must_early() { # SCRIPT: before in_root exists
	systemd-nspawn -q --register=no --keep-unit -D "$ROOT" --pipe \
		--setenv=DEBIAN_FRONTEND=noninteractive /bin/sh -ec "$1" >>"$LOG" 2>&1 </dev/null ||
		fail "in the container, '$1' failed"
}
must_early 'apt-get install -y -qq --no-install-recommends systemd'
cat >"$ROOT/usr/local/sbin/systemctl" <<'EOF'
#!/bin/sh
echo "$*" >>/root/systemctl.log
case " $* " in
*" preset "*) exec /usr/bin/systemctl "$@" ;;
*" is-enabled "*) exec /usr/bin/systemctl --root=/ "$@" ;; # --root: from the files
esac
exit 0
EOF
chmod 755 "$ROOT/usr/local/sbin/systemctl"
APT_PATH='-o DPkg::Path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

# in_root [--systemd] SCRIPT: run SCRIPT with sh in the container, output in
# $LOG; --systemd makes /run/systemd/system (a fresh /run each time) so the
# maintainer scripts believe systemd runs. Sets RC.
in_root() {
	local pre=:
	if [[ $1 == --systemd ]]; then
		pre='mkdir -p /run/systemd/system'
		shift
	fi
	echo "+ $1" >>"$LOG"
	RC=0
	# --register=no --keep-unit: no machined or system bus needed on the host.
	systemd-nspawn -q --register=no --keep-unit -D "$ROOT" --pipe \
		--setenv=DEBIAN_FRONTEND=noninteractive \
		/bin/sh -ec "$pre; $1" >>"$LOG" 2>&1 </dev/null || RC=$?
}
# must SCRIPT...: in_root, and fail unless it exits 0.
must() {
	in_root "$@"
	((RC == 0)) || fail "in the container, '${*: -1}' exited $RC"
}
# calls: the systemctl calls since the last one, then forget them.
calls() {
	CALLS=$(cat "$ROOT/root/systemctl.log" 2>/dev/null || true)
	rm -f "$ROOT/root/systemctl.log"
}

WANTS="$ROOT/etc/systemd/system"
DSH="$ROOT/var/lib/systemd/deb-systemd-helper-enabled"
expect_enabled() { # WHEN
	[[ -L $WANTS/multi-user.target.wants/iopulse.service ]] ||
		fail "$1: iopulse.service is not enabled (no multi-user.target.wants link)"
	[[ -L $WANTS/sockets.target.wants/iopulse.socket ]] ||
		fail "$1: iopulse.socket is not enabled (no sockets.target.wants link)"
	[[ -f $DSH/iopulse.service.dsh-also ]] || fail "$1: deb-systemd-helper has no state for iopulse.service"
}
expect_conffiles() { # WHEN GREP-IN-YAML GREP-IN-DEFAULT
	grep -q "$2" "$ROOT/etc/iopulse/iopulse.yaml" || fail "$1: /etc/iopulse/iopulse.yaml lacks '$2'"
	grep -q "$3" "$ROOT/etc/default/iopulse" || fail "$1: /etc/default/iopulse lacks '$3'"
}

# ---- install ---------------------------------------------------------------------

must --systemd "apt-get install -y -qq --no-install-recommends $APT_PATH /root/iopulse.deb"
calls
note "install: systemctl $(grep -v 'is-enabled\|is-active' <<<"$CALLS" | paste -sd '|')"
expect_enabled install
expect_conffiles install '^targets:' '^ARGS=""$'
[[ $(readlink "$WANTS/multi-user.target.wants/iopulse.service") == */iopulse.service ]] ||
	fail "the enable link points to $(readlink "$WANTS/multi-user.target.wants/iopulse.service")"
grep -qx -- '--quiet --system start iopulse.socket iopulse.service' <<<"$CALLS" ||
	fail "the postinst did not start the socket and the service: $CALLS"
must "dpkg-query -W -f='\${Conffiles}\n' iopulse >/root/conffiles"
grep -q '^ /etc/default/iopulse ' "$ROOT/root/conffiles" || fail "/etc/default/iopulse is not a conffile"
grep -q '^ /etc/iopulse/iopulse.yaml ' "$ROOT/root/conffiles" || fail "/etc/iopulse/iopulse.yaml is not a conffile"
must 'getent passwd iopulse >/root/passwd'
IFS=: read -r _ _ uid _ _ home shell <"$ROOT/root/passwd"
((uid < 1000)) || fail "the iopulse user is not a system user (uid $uid)"
[[ $home == /var/lib/iopulse && $shell == */nologin ]] || fail "the iopulse user: home $home, shell $shell"

# ---- the drop-in's instructions ---------------------------------------------------

# As systemd/iopulse-directory.conf.example says; the configuration is the
# example that measures /srv/data/.iopulse (and $STATE_DIRECTORY: made here, as
# systemd would).
cp "$SOURCE_DIR/config/examples/bursts.yaml" "$ROOT/srv/bursts.yaml"
grep -q 'directory: /srv/data/.iopulse$' "$ROOT/srv/bursts.yaml" ||
	fail "config/examples/bursts.yaml no longer measures /srv/data/.iopulse"
if grep -qa '__asan_init\|__tsan_init' "$IOPULSE"; then
	note "sanitizer build: iopulse check is not run in the container"
else
	must 'mkdir -p /srv/data && install -d -o root -m 0755 /srv/data/.iopulse'
	in_root 'runuser -u iopulse -- iopulse check --config /srv/bursts.yaml'
	((RC == 73)) || fail "iopulse check as iopulse, directory owned by root: status $RC, want 73"
	must 'rmdir /srv/data/.iopulse && install -d -o iopulse -g iopulse -m 0700 /srv/data/.iopulse'
	must 'runuser -u iopulse -- iopulse check --config /srv/bursts.yaml >/dev/null'
	note "iopulse check as iopulse: fails (73) until the directory is iopulse's, then passes"
	# iopulse(8) EXAMPLES as written, by hand (no STATE_DIRECTORY): the
	# packaged file measures the state directory, made here as systemd's
	# StateDirectory= makes it at the service's first start.
	must 'install -d -o iopulse -g iopulse -m 0700 /var/lib/iopulse'
	must 'iopulse check --config /etc/iopulse/iopulse.yaml >/dev/null'
	must 'runuser -u iopulse -- iopulse check --config /etc/iopulse/iopulse.yaml >/dev/null'
	must 'rmdir /var/lib/iopulse'
	note "iopulse check --config /etc/iopulse/iopulse.yaml by hand: passes, as root and as iopulse"
fi

# ---- upgrade keeps edited conffiles ------------------------------------------------

echo '# edited by the administrator' >>"$ROOT/etc/iopulse/iopulse.yaml"
sed -i 's/^ARGS=""$/ARGS="--log-level debug"/' "$ROOT/etc/default/iopulse"
# State as a running service leaves it (and as DynamicUser=yes would).
# A probe file starts with its header (the purge removes only such files).
HEADER=$'IOPULSE-PROBE-FILE\nversion: 1\n'
mkdir -p "$ROOT/var/lib/iopulse" "$ROOT/var/lib/private/iopulse"
printf '%s' "$HEADER" >"$ROOT/var/lib/iopulse/.iopulse-probe"
printf '%s' "$HEADER" >"$ROOT/var/lib/private/iopulse/.iopulse-probe"
must --systemd 'dpkg -i /root/iopulse-upgrade.deb'
calls
[[ $(dpkg-deb -f "$WORK/pkg/upgrade.deb" Version) == "$VERSION+test1" ]] || fail "the upgrade has the wrong version"
must "dpkg-query -W -f='\${Version}' iopulse >/root/version"
[[ $(cat "$ROOT/root/version") == "$VERSION+test1" ]] || fail "installed version after the upgrade: $(cat "$ROOT/root/version")"
expect_conffiles upgrade '^# edited by the administrator$' '^ARGS="--log-level debug"$'
expect_enabled upgrade
grep -qx -- '--quiet --system restart iopulse.service' <<<"$CALLS" ||
	fail "the upgrade did not restart the service: $CALLS"
! grep -q 'restart.*iopulse.socket' <<<"$CALLS" || fail "the upgrade restarted the socket: $CALLS"
! grep -q 'stop' <<<"$CALLS" || fail "the upgrade stopped something: $CALLS"

# ---- remove keeps the configuration -------------------------------------------------

must --systemd 'dpkg -r iopulse'
calls
grep -qx -- 'stop iopulse.service iopulse.socket' <<<"$CALLS" ||
	fail "dpkg -r did not stop the service and the socket: $CALLS"
[[ ! -e $ROOT/usr/bin/iopulse && ! -e $ROOT/lib/systemd/system/iopulse.service ]] ||
	fail "dpkg -r left the binary or the unit"
expect_conffiles remove '^# edited by the administrator$' '^ARGS="--log-level debug"$'
[[ -f $ROOT/var/lib/iopulse/.iopulse-probe ]] || fail "dpkg -r removed the state"
# The enable links stay, dangling, as with dh_installsystemd's scripts: whether
# the unit is enabled is the administrator's configuration, purged with it.
must 'dpkg -i /root/iopulse.deb'
expect_enabled reinstall
expect_conffiles reinstall '^# edited by the administrator$' '^ARGS="--log-level debug"$'

# ---- purge removes everything of the package ---------------------------------------

must 'dpkg -P iopulse'
for f in etc/iopulse etc/default/iopulse var/lib/iopulse var/lib/private/iopulse \
	etc/systemd/system/multi-user.target.wants/iopulse.service \
	etc/systemd/system/sockets.target.wants/iopulse.socket \
	var/lib/systemd/deb-systemd-helper-enabled/iopulse.service.dsh-also \
	var/lib/systemd/deb-systemd-helper-enabled/iopulse.socket.dsh-also; do
	[[ ! -e $ROOT/$f && ! -L $ROOT/$f ]] || fail "dpkg -P left /$f"
done
left=$(grep -rl iopulse "$DSH" 2>/dev/null || true)
[[ -z $left ]] || fail "deb-systemd-helper state still names iopulse: $left"
if [[ -d $ROOT/srv/data ]]; then
	[[ -d $ROOT/srv/data/.iopulse ]] || fail "dpkg -P removed the administrator's probe directory"
fi
must "dpkg-query -W -f='\${db:Status-Abbrev}' iopulse >/root/status || true"
[[ $(cat "$ROOT/root/status") != ii* ]] || fail "iopulse still installed after dpkg -P"

# ---- purge leaves what is not iopulse's: a disk mounted below, foreign files -----

# An administrator measures a disk mounted at /var/lib/iopulse/disk (a tmpfs of
# the test's, mounted from here: the container sees it) and keeps a file of
# their own next to the service's. The purge removes the service's files only:
# nothing on the mounted file system (not even a probe file there), no file
# without the header or not a regular file, no symlink's target; dpkg -P
# succeeds and says what it left.
must 'dpkg -i /root/iopulse.deb'
VL="$ROOT/var/lib/iopulse"
mkdir -p "$VL/disk"
mount_tmpfs "$VL/disk" 1M
echo data >"$VL/disk/data"
printf '%s' "$HEADER" >"$VL/disk/.iopulse-probe"
echo "the administrator's" >"$VL/notes"
echo "the administrator's" >"$VL/.iopulse-verify.admin"
printf '%s' "$HEADER" >"$ROOT/root/precious"
ln -s /root/precious "$VL/.iopulse-verify.link"
for f in .iopulse-probe .iopulse-verify.v .iopulse-probe.tmp.0123456789abcdef; do
	printf '%s' "$HEADER" >"$VL/$f"
done
must 'dpkg -P iopulse'
for f in .iopulse-probe .iopulse-verify.v .iopulse-probe.tmp.0123456789abcdef; do
	[[ ! -e $VL/$f ]] || fail "dpkg -P left iopulse's own /var/lib/iopulse/$f"
done
for f in disk/data disk/.iopulse-probe notes .iopulse-verify.admin; do
	[[ -f $VL/$f ]] || fail "dpkg -P removed /var/lib/iopulse/$f, which is not iopulse's"
done
[[ -L $VL/.iopulse-verify.link && -f $ROOT/root/precious ]] ||
	fail "dpkg -P removed a symlink in /var/lib/iopulse, or followed it"
grep -q 'iopulse: purge: .*/var/lib/iopulse holds files iopulse did not create.*left in place' "$LOG" ||
	fail "dpkg -P did not say why it left /var/lib/iopulse"

echo "PASS: $TEST_NAME"
