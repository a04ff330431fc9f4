#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What a write burst leaves on disk. Compressing or deduplicating storage answers
# zeros and repeated blocks for free, so every write must carry fresh random
# bytes. A read ping (`iopulse probe`) first creates and lays out the probe file
# of a 16MiB directory target; a 4096-I/O 4k randwrite burst (iodepth 4) then
# rewrites part of it. Compared block by block with the file before, the blocks
# the burst changed must be distinct and incompressible (gzip keeps > 95%), the
# whole data region too; the 4096-byte header must be untouched, the file the
# same size and without holes; and a second burst must change the data again.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd python3 gzip sha256sum stat
require_disk "$WORK"

SIZE=$((16 << 20))
HDR=4096
DIR="$WORK/target"
mkdir "$DIR"
PROBE="$DIR/.iopulse-probe"
CFG="$WORK/iopulse.yaml"
target_config "$CFG" "$DIR" 16MiB "layout_rate: 0"
cat >>"$CFG" <<EOF
  - name: init
    type: ping
    target: t1
  - name: wr
    type: burst
    target: t1
    rw: randwrite
    ios: 4096
    block_size: 4k
    iodepth: 4
EOF

# probe_json OUT PROBE...: iopulse probe --json, which must exit 0 with every
# probe ok.
probe_json() {
	local out=$1
	shift
	run_probe 0 "$out" --config "$CFG" --json --count 1 "$@"
}

# data_copy OUT: the data region of the probe file (after the header).
data_copy() {
	[[ -f $PROBE && ! -L $PROBE ]] || fail "no regular file $PROBE"
	tail -c +$((HDR + 1)) "$PROBE" >"$1"
	local n
	n=$(stat -c %s "$1")
	((n == SIZE)) || fail "data region of $PROBE is $n bytes, want $SIZE"
}

check_file() {
	local blocks bsize fsize
	read -r blocks bsize fsize < <(stat -c '%b %B %s' "$PROBE")
	((fsize == HDR + SIZE)) || fail "$PROBE is $fsize bytes, want $((HDR + SIZE))"
	((blocks * bsize >= fsize)) || fail "$PROBE has holes: $((blocks * bsize)) bytes allocated of $fsize"
}

# ---- lay out, then write ---------------------------------------------------

probe_json "$WORK/init.json" init
check_file
head -c $HDR "$PROBE" | sha256sum >"$WORK/header.sha"
data_copy "$WORK/before.bin"

probe_json "$WORK/wr1.json" wr
python3 - "$WORK/wr1.json" <<'EOF' || fail "burst result:"$'\n'"$(cat "$WORK/wr1.json")"
import json, sys
p = json.load(open(sys.argv[1]))["probes"][0]
ops = {o["op"]: o for o in p["ops"]}
assert p["name"] == "wr" and p["status"] == "ok", p
assert list(ops) == ["write"], list(ops)
assert ops["write"]["ios"] == 4096 and ops["write"]["bytes"] == 4096 * 4096, ops["write"]
EOF
check_file
head -c $HDR "$PROBE" | sha256sum | cmp -s - "$WORK/header.sha" ||
	fail "the burst changed the 4096-byte header of $PROBE"
data_copy "$WORK/after.bin"

# ---- what the burst wrote --------------------------------------------------

out=$(python3 - "$WORK/before.bin" "$WORK/after.bin" <<'EOF' 2>&1
import hashlib, sys, zlib

BS = 4096
before = open(sys.argv[1], "rb").read()
after = open(sys.argv[2], "rb").read()
changed = [i for i in range(len(after) // BS)
           if after[i * BS:(i + 1) * BS] != before[i * BS:(i + 1) * BS]]
n = len(changed)
print(f"{n} of {len(after) // BS} blocks changed")
bad = []
# 4096 writes to random 4k blocks of 4096: about 63% distinct if drawn with
# replacement, all of them without. Far fewer means writes went elsewhere (or
# rewrote the same data).
if not 1500 <= n <= 4096:
    bad.append(f"{n} blocks changed by 4096 random 4k writes over 4096 blocks")
blocks = [after[i * BS:(i + 1) * BS] for i in changed]
digests = {hashlib.sha256(b).digest() for b in blocks}
if len(digests) != n:
    bad.append(f"only {len(digests)} distinct contents among {n} written blocks (buffers reused?)")
zero = sum(1 for b in blocks if b.count(0) > BS // 2)
if zero:
    bad.append(f"{zero} written blocks are mostly zero bytes")
halves = sum(1 for b in blocks if b[:BS // 2] == b[BS // 2:])
if halves:
    bad.append(f"{halves} written blocks repeat their first half")
written = b"".join(blocks)
if written:
    ratio = len(zlib.compress(written, 9)) / len(written)
    print(f"written blocks compress to {ratio:.4f}")
    if ratio <= 0.95:
        bad.append(f"the written blocks compress to {ratio:.3f} of their size")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
EOF
) || fail "written data:"$'\n'"$out"
note "$out"

# The whole data region, as the spec states it: gzip keeps more than 95%.
gz=$(gzip -c "$WORK/after.bin" | wc -c)
((gz * 100 > SIZE * 95)) || fail "data region of $PROBE gzips to $gz bytes of $SIZE (<= 95%)"
note "data region gzips to $gz of $SIZE bytes"

# ---- a second burst writes new data ----------------------------------------

sha1=$(sha256sum <"$WORK/after.bin")
rm -f "$WORK/before.bin"
probe_json "$WORK/wr2.json" wr
check_file
data_copy "$WORK/after2.bin"
sha2=$(sha256sum <"$WORK/after2.bin")
[[ $sha1 != "$sha2" ]] || fail "a second randwrite burst left the data region unchanged ($sha2)"
if cmp -s "$WORK/after.bin" "$WORK/after2.bin"; then fail "cmp: data region unchanged by the second burst"; fi
head -c $HDR "$PROBE" | sha256sum | cmp -s - "$WORK/header.sha" ||
	fail "the second burst changed the 4096-byte header of $PROBE"
gz=$(gzip -c "$WORK/after2.bin" | wc -c)
((gz * 100 > SIZE * 95)) || fail "after the second burst, the data region gzips to $gz bytes of $SIZE"

note "pass"
