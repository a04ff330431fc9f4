#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `iopulse probe`, the one-shot mode: on a directory target, a read ping, a
# write+fdatasync ping (--count 5 --interval 0) and a 2000-I/O randrw burst.
# The --json output must validate against docs/probe-output.schema.json (the
# documented, stable schema) and hold together: the counts asked for, an
# fdatasync op for the write ping, ordered percentiles. Also: an unknown probe
# name and --count 0 are usage errors (64); the human summary has the promised
# lines; a probe whose target directory is missing fails (exit 1) and says why
# in its JSON entry, while the probe next to it still runs.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# Debian's python3 with python3-jsonschema (dev.sh installs both); a python3
# earlier on PATH (pyenv and the like) may lack the module.
PYTHON=python3
[[ -x /usr/bin/python3 ]] && PYTHON=/usr/bin/python3
require_cmd "$PYTHON"
require_disk "$WORK"
SCHEMA="$SOURCE_DIR/docs/probe-output.schema.json"
[[ -f $SCHEMA ]] || fail "no schema at $SCHEMA"
"$PYTHON" -c 'import jsonschema' 2>/dev/null ||
	fail "python3 cannot import jsonschema (Debian package python3-jsonschema)"

DIR="$WORK/target"
mkdir "$DIR"
CFG="$WORK/iopulse.yaml"
target_config "$CFG" "$DIR" 8MiB
ping_item "$CFG" rd read
ping_item "$CFG" wr write "sync: fdatasync"
cat >>"$CFG" <<EOF
  - name: mix
    type: burst
    target: t1
    rw: randrw
    ios: 2000
    iodepth: 8
    engine: sync
EOF

# The validator: argv = SCHEMA DOC [ARGS...]; stdin is Python run with `doc`
# (the parsed document), `probes` (name -> entry) and `args` (ARGS) in scope,
# appending findings to `bad`, once the document matches the schema.
cat >"$WORK/check.py" <<'EOF'
import json, sys
import jsonschema

schema_file, doc_file, args = sys.argv[1], sys.argv[2], sys.argv[3:]
checks = sys.stdin.read()
with open(schema_file) as f:
    schema = json.load(f)
jsonschema.Draft202012Validator.check_schema(schema)
try:
    with open(doc_file) as f:
        doc = json.load(f)
except ValueError as e:
    print(f"not JSON: {e}")
    sys.exit(1)
bad = []
for e in jsonschema.Draft202012Validator(schema).iter_errors(doc):
    bad.append(f"schema: at /{'/'.join(map(str, e.absolute_path))}: {e.message}")
if not bad:
    probes = {p["name"]: p for p in doc["probes"]}
    exec(checks)
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
EOF

# check_json FILE [ARGS...] <CHECKS: validate FILE against the schema, then run
# the Python CHECKS on it (see check.py); fail with every finding.
check_json() {
	local file=$1 out
	shift
	out=$("$PYTHON" "$WORK/check.py" "$SCHEMA" "$file" "$@" 2>&1) ||
		fail "$file:"$'\n'"$out"$'\n'"--- $file ---"$'\n'"$(cat "$file")"
}

# ---- the normal run --------------------------------------------------------

run_probe 0 "$WORK/ok.json" --config "$CFG" --json --count 5 --interval 0

check_json "$WORK/ok.json" <<'EOF'
def op(p, name):
    ops = [o for o in probes[p]["ops"] if o["op"] == name]
    if len(ops) != 1:
        bad.append(f"{p}: {len(ops)} entries for op {name}, want 1")
        return None
    return ops[0]

if [p["name"] for p in doc["probes"]] != ["rd", "wr", "mix"]:
    bad.append(f"probes in order rd, wr, mix expected: {list(probes)}")
for name, p in probes.items():
    if p["status"] != "ok":
        bad.append(f"{name}: status {p['status']}: {p.get('error')}")
    if p["target"] != "t1" or p["timeouts"] != 0:
        bad.append(f"{name}: target {p['target']}, timeouts {p['timeouts']}")
    if p["engine"] == "auto":
        bad.append(f"{name}: engine auto, want the engine that ran")
    for o in p["ops"]:
        w = f"{name}/{o['op']}"
        lat = o["latency_seconds"]
        if o["errors"] or o["short_ios"]:
            bad.append(f"{w}: {o['errors']} errors, {o['short_ios']} short")
        if not (lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99_9"] <= lat["max"]):
            bad.append(f"{w}: percentiles out of order: {lat}")
        if not (0 < lat["min"] <= lat["avg"] <= lat["max"]):
            bad.append(f"{w}: not 0 < min <= avg <= max: {lat}")
        if not lat["min"] <= lat["p50"]:
            bad.append(f"{w}: p50 below min: {lat}")
        want_bytes = 0 if o["op"] == "fdatasync" else o["ios"] * 4096
        if o["bytes"] != want_bytes:
            bad.append(f"{w}: {o['bytes']} bytes for {o['ios']} ios of 4KiB")
        if o["seconds"] <= 0:
            bad.append(f"{w}: seconds {o['seconds']}")
        elif abs(o["iops"] - o["ios"] / o["seconds"]) > 1e-6 * o["iops"]:
            bad.append(f"{w}: iops {o['iops']} != ios/seconds {o['ios'] / o['seconds']}")

o = op("rd", "read")
if o and o["ios"] != 5:
    bad.append(f"rd: {o['ios']} read ios, want 5")
if [o["op"] for o in probes["rd"]["ops"]] != ["read"]:
    bad.append(f"rd: ops {[o['op'] for o in probes['rd']['ops']]}, want [read]")
# A ping sums its latencies (ioping): at most the wall time it took.
if o and not o["seconds"] <= probes["rd"]["wall_seconds"]:
    bad.append(f"rd: seconds {o['seconds']} > wall_seconds {probes['rd']['wall_seconds']}")

if [o["op"] for o in probes["wr"]["ops"]] != ["write", "fdatasync"]:
    bad.append(f"wr: ops {[o['op'] for o in probes['wr']['ops']]}, want [write, fdatasync]")
for name in ("write", "fdatasync"):
    o = op("wr", name)
    if o and o["ios"] != 5:
        bad.append(f"wr: {o['ios']} {name} ios, want 5")

r, w = op("mix", "read"), op("mix", "write")
if r and w:
    if r["ios"] + w["ios"] != 2000:
        bad.append(f"mix: read {r['ios']} + write {w['ios']} ios != 2000")
    if r["ios"] == 0 or w["ios"] == 0:
        bad.append(f"mix: randrw 50% did only one direction: {r['ios']} / {w['ios']}")
    # Both directions share the measured phase.
    if r["seconds"] != w["seconds"]:
        bad.append(f"mix: seconds differ: read {r['seconds']}, write {w['seconds']}")
    if not r["seconds"] <= probes["mix"]["wall_seconds"]:
        bad.append(f"mix: measured {r['seconds']}s > wall {probes['mix']['wall_seconds']}s")
if probes["mix"]["engine"] != "sync":
    bad.append(f"mix: engine {probes['mix']['engine']}, configured sync")

# The schema is strict, not vacuous: an unknown key or an error without its
# message is refused.
import copy
v = jsonschema.Draft202012Validator(schema)
for path, mutate in (
    ("an unknown key in an op", lambda d: d["probes"][0]["ops"][0].update(extra=1)),
    ("an unknown key in a latency", lambda d: d["probes"][0]["ops"][0]["latency_seconds"].update(p75=0)),
    ("status error without error", lambda d: d["probes"][0].update(status="error")),
    ("error with status ok", lambda d: d["probes"][0].update(error="x")),
    ("a missing wall_seconds", lambda d: d["probes"][0].pop("wall_seconds")),
):
    d = copy.deepcopy(doc)
    mutate(d)
    if v.is_valid(d):
        bad.append(f"the schema accepts {path}")
EOF
note "probe --json: schema and counts ok"

# ---- usage errors ----------------------------------------------------------

run_probe 64 "$WORK/nope.out" --config "$CFG" --json rd nope
grep -q "nope" "$WORK/nope.out.err" || fail "unknown probe name: stderr does not name it:"$'\n'"$(cat "$WORK/nope.out.err")"
[[ ! -s $WORK/nope.out ]] || fail "unknown probe name: stdout not empty:"$'\n'"$(cat "$WORK/nope.out")"

# (--count 0 is ioping's "no limit", not an error: test_probe_cli.)
run_probe 64 "$WORK/count0.out" --config "$CFG" --count 10000001 rd
grep -q -- "--count" "$WORK/count0.out.err" || fail "--count 10000001: message does not name --count:"$'\n'"$(cat "$WORK/count0.out.err")"
[[ ! -s $WORK/count0.out ]] || fail "--count 10000001: stdout not empty:"$'\n'"$(cat "$WORK/count0.out")"

# ---- the human summary -----------------------------------------------------

run_probe 0 "$WORK/human.out" --config "$CFG" --count 5 --interval 0
human=$(cat "$WORK/human.out")
# One "requests completed" line per op: rd read, wr write + fdatasync, mix read + write.
n=$(grep -c "requests completed" <<<"$human") || true
((n == 5)) || fail "human output: $n 'requests completed' lines, want 5:"$'\n'"$human"
n=$(grep -c "p50/p90/p99/p99.9 = " <<<"$human") || true
((n == 5)) || fail "human output: $n 'p50/p90/p99/p99.9' lines, want 5:"$'\n'"$human"
grep -q "^read: 5 requests completed" <<<"$human" || fail "human output: no 'read: 5 requests completed':"$'\n'"$human"
grep -q "^fdatasync: 5 requests completed" <<<"$human" ||
	fail "human output: no 'fdatasync: 5 requests completed':"$'\n'"$human"
for p in rd wr mix; do
	grep -q "^--- $p " <<<"$human" || fail "human output: no header for probe $p:"$'\n'"$human"
done

# ---- a probe that fails ----------------------------------------------------

GONE="$WORK/missing"
CFG2="$WORK/missing.yaml"
cat >"$CFG2" <<EOF
targets:
  - name: t1
    directory: $(yaml_str "$DIR")
    max_duty_cycle: 100%
    max_write_per_day: 0
    size: 8MiB
  - name: gone
    directory: $(yaml_str "$GONE")
    max_duty_cycle: 100%
    max_write_per_day: 0
    size: 8MiB
probes:
  - name: lost
    type: ping
    target: gone
  - name: rd
    type: ping
    target: t1
  - name: lostburst
    type: burst
    target: gone
    ios: 100
EOF
run_probe 1 "$WORK/err.json" --config "$CFG2" --json --count 2 --interval 0
[[ ! -e $GONE ]] || fail "iopulse probe created the missing target directory $GONE"
check_json "$WORK/err.json" "$GONE" <<'EOF'
gone = args[0]
for name in ("lost", "lostburst"):
    p = probes.get(name)
    if not p:
        bad.append(f"{name}: missing")
        continue
    if p["status"] != "error":
        bad.append(f"{name}: status {p['status']}, want error")
    elif gone not in p["error"]:
        bad.append(f"{name}: error message does not name {gone}: {p['error']!r}")
    if p["ops"]:
        bad.append(f"{name}: ops {p['ops']} for a probe that could not run")
p = probes.get("rd")
if not p or p["status"] != "ok" or [(o["op"], o["ios"]) for o in p["ops"]] != [("read", 2)]:
    bad.append(f"rd next to the failing probes: {p}")
EOF

# ---- a verify probe ----------------------------------------------------------
# A fresh file has nothing to check; each later process reads the generations
# from the state the last one saved in the file: a block changed behind its
# back is found wrong, a block put back as it was before its last rewrite is
# found stale. (Every block is rewritten each run, so each is one a crash in
# the last run could have torn: the header is what is changed, not the
# payload, which a tear could explain.)

CFG3="$WORK/verify.yaml"
VF="$DIR/.iopulse-verify.v"
target_config "$CFG3" "$DIR" 8MiB
cat >>"$CFG3" <<EOF
  - name: v
    type: verify
    target: t1
    blocks: 4
    blocks_per_run: 4
EOF
# verify_run N CHECKED DATA STALE WRITES SYNCS: one run; its verify counts and
# its writes and syncs (the blocks' and the state's) must be these.
verify_run() {
	run_probe 0 "$WORK/verify$1.json" --config "$CFG3" --json
	check_json "$WORK/verify$1.json" "${@:2}" <<'EOF'
p = probes.get("v")
want = {"blocks_checked": int(args[0]), "wrong_data": int(args[1]), "wrong_offset": 0,
        "stale": int(args[2])}
ops = [("read", 5), ("write", int(args[3])), ("fdatasync", int(args[4]))]
if not p or p["type"] != "verify" or p.get("verify") != want:
    bad.append(f"v: {p and p.get('verify')}, want {want}")
elif [(o["op"], o["ios"]) for o in p["ops"]] != ops:
    bad.append(f"v: ops {p['ops']}, want {ops}")
EOF
}
# vblock I: the 4KiB unit block I of the verify file starts at, after its
# header and its state block.
vblock() {
	echo $((2 + $1))
}
verify_run 1 0 0 0 6 3 # the state saved before the blocks are written, and after
verify_run 2 4 0 0 5 2
printf 'not a block' |
	dd of="$VF" bs=1 seek=$(($(vblock 0) * 4096 + 16)) conv=notrunc,fsync status=none
verify_run 3 4 1 0 5 2
dd if="$VF" of="$WORK/b1.bin" bs=4096 skip="$(vblock 1)" count=1 status=none
verify_run 4 4 0 0 5 2
dd if="$WORK/b1.bin" of="$VF" bs=4096 seek="$(vblock 1)" count=1 conv=notrunc,fsync status=none
verify_run 5 4 0 1 5 2
grep -q "verify: 4 block(s) checked, 0 wrong data, 0 wrong offset, 0 stale" \
	< <("$IOPULSE" probe --config "$CFG3") || fail "no verify line in the human summary"

note "pass"
