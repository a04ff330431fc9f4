#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Bursts on a block device: a loop device this test attaches over a 64MiB file
# of random data in its own temp dir (never a real disk). As root only.
#   - a randread burst of 2000 I/Os at iodepth 16 runs, and the device is left
#     exactly as it was (device targets are read-only by default);
#   - a randwrite burst without allow_device_writes is a configuration error
#     (`iopulse check` exits 78 and names the key);
#   - with allow_device_writes: true it runs 1000 I/Os and the data changes;
#   - once the device holds a mounted ext4, the write burst is refused before
#     it starts (exit 1, JSON status error, "mounted", no ops).

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

(($(id -u) == 0)) || skip "needs root to attach a loop device"
require_cmd losetup python3 sha256sum mkfs.ext4 mount umount mountpoint

IMG="$WORK/disk.img"
MNT="$WORK/mnt"
mkdir "$MNT"
head -c $((64 << 20)) /dev/urandom >"$IMG"

MOUNTED=
unmount_dev() { # before attach_loop's detach
	if [[ -n $MOUNTED ]] && mountpoint -q "$MNT"; then
		umount "$MNT" || echo "# cannot unmount $MNT" >&2
	fi
}
on_exit unmount_dev
attach_loop "$IMG"

img_sha() {
	sha256sum <"$IMG" | cut -d' ' -f1
}

# write_config FILE ALLOW_WRITES: a read burst and a write burst on the device.
write_config() {
	cat >"$1" <<EOF
targets:
  - name: dev
    device: $(yaml_str "$LOOP")
    max_duty_cycle: 100%
    max_write_per_day: 0
    allow_device_writes: $2
probes:
  - name: rr
    type: burst
    target: dev
    rw: randread
    ios: 2000
    iodepth: 16
  - name: ww
    type: burst
    target: dev
    rw: randwrite
    ios: 1000
    iodepth: 8
EOF
}

# probe_json OUT WANT_RC PROBE: iopulse probe --json for one probe, exit WANT_RC.
probe_json() {
	local out=$1 want=$2 cfg=$3 rc=0
	shift 3
	"$IOPULSE" probe --config "$cfg" --json "$@" >"$out" 2>"$out.err" || rc=$?
	((rc == want)) || fail "iopulse probe $* exited $rc, want $want:"$'\n'"$(cat "$out.err" "$out")"
}

# expect OUT PYTHON: assertions on the single probe entry `p` of OUT, with its
# ops by name in `ops`.
expect() {
	local out
	out=$(python3 - "$1" 2>&1 <<EOF
import json, sys
doc = json.load(open(sys.argv[1]))
assert len(doc["probes"]) == 1, doc
p = doc["probes"][0]
ops = {o["op"]: o for o in p["ops"]}
LOOP = "$LOOP"
$2
EOF
	) || fail "$1: $out"$'\n'"$(cat "$1")"
}

# ---- read-only by default --------------------------------------------------

RO="$WORK/ro.yaml"
write_config "$RO" false
sed -i '/^  - name: ww$/,$d' "$RO" # no write probe: the file must load
rc=0
"$IOPULSE" check --config "$RO" >"$WORK/ro.check" 2>&1 || rc=$?
((rc == 0)) || fail "iopulse check of a read burst on $LOOP exited $rc:"$'\n'"$(cat "$WORK/ro.check")"

sha0=$(img_sha)
probe_json "$WORK/rr.json" 0 "$RO" rr
expect "$WORK/rr.json" '
assert p["name"] == "rr" and p["type"] == "burst" and p["path"] == LOOP, p
assert p["status"] == "ok", p
assert list(ops) == ["read"], list(ops)
assert ops["read"]["ios"] == 2000, ops["read"]
assert ops["read"]["bytes"] == 2000 * 4096, ops["read"]
assert ops["read"]["errors"] == 0 and ops["read"]["short_ios"] == 0, ops["read"]'
sha1=$(img_sha)
[[ $sha1 == "$sha0" ]] || fail "a randread burst on $LOOP changed the backing file ($sha0 -> $sha1)"
note "randread burst: 2000 I/Os, device unchanged"

# ---- a write burst needs allow_device_writes -------------------------------

NOWR="$WORK/nowrite.yaml"
write_config "$NOWR" false
rc=0
"$IOPULSE" check --config "$NOWR" >"$WORK/nowrite.out" 2>&1 || rc=$?
((rc == 78)) || fail "iopulse check of a write burst without allow_device_writes exited $rc, want 78:"$'\n'"$(cat "$WORK/nowrite.out")"
grep -q "allow_device_writes" "$WORK/nowrite.out" ||
	fail "the refusal does not name allow_device_writes:"$'\n'"$(cat "$WORK/nowrite.out")"
grep -q "^$NOWR:[0-9]\+:[0-9]\+: " "$WORK/nowrite.out" ||
	fail "the refusal is not 'file:line:column: message':"$'\n'"$(cat "$WORK/nowrite.out")"
rc=0
"$IOPULSE" probe --config "$NOWR" --json ww >"$WORK/nowrite.json" 2>"$WORK/nowrite.err" || rc=$?
((rc == 78)) || fail "iopulse probe of that file exited $rc, want 78:"$'\n'"$(cat "$WORK/nowrite.err")"
[[ $(img_sha) == "$sha0" ]] || fail "a refused write burst changed $IMG"

# ---- allowed: it writes -----------------------------------------------------

WR="$WORK/write.yaml"
write_config "$WR" true
probe_json "$WORK/ww.json" 0 "$WR" ww
expect "$WORK/ww.json" '
assert p["status"] == "ok", p
assert list(ops) == ["write"], list(ops)
assert ops["write"]["ios"] == 1000, ops["write"]
assert ops["write"]["bytes"] == 1000 * 4096, ops["write"]'
sha2=$(img_sha)
[[ $sha2 != "$sha0" ]] || fail "a randwrite burst of 1000 I/Os with allow_device_writes left $IMG unchanged"
note "randwrite burst: 1000 I/Os, backing file changed"

# ---- refused while mounted --------------------------------------------------

# The exclusive claim of the write burst's descriptor can outlive the iopulse
# process by some milliseconds (io_uring releases a ring's registered files
# asynchronously); mkfs would call the device busy meanwhile.
dev_free() {
	python3 -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL))' \
		"$LOOP" 2>/dev/null
}
wait_until 60 "$LOOP free for an exclusive open after the write burst" dev_free
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$LOOP" >"$WORK/mkfs.out" 2>&1 || fail "mkfs.ext4 $LOOP failed:"$'\n'"$(cat "$WORK/mkfs.out")"
MOUNTED=1
mount -t ext4 -o noatime "$LOOP" "$MNT" 2>"$WORK/mount.err" || skip "cannot mount ext4 on $LOOP: $(cat "$WORK/mount.err")"
mountpoint -q "$MNT" || fail "$MNT is not a mount point after mount"
echo "ours" >"$MNT/canary"
sync

probe_json "$WORK/mounted.json" 1 "$WR" ww
expect "$WORK/mounted.json" '
assert p["status"] == "error", p
assert "mounted" in p["error"], "error does not say mounted: " + p["error"]
assert p["ops"] == [], p["ops"]'
note "mounted: $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["probes"][0]["error"])' "$WORK/mounted.json")"
[[ $(cat "$MNT/canary") == ours ]] || fail "the canary on the mounted filesystem changed"

umount "$MNT" || fail "umount $MNT failed"
MOUNTED=
note "pass"
