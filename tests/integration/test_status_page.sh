#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The status page as a person sees it: a real headless Chromium renders / (the
# screenshot stays in the work directory, path printed), the page's source is
# valid HTML for a strict HTML5 parser, /status.json validates against
# docs/status.schema.json, and what both say agrees with /metrics scraped around
# them: each target's state, each probe's runs (counters: between the scrape
# before and the one after) and the last burst's IOPS (one burst an hour: the
# same in every scrape once it is in).
# The window quantiles lie within the histogram's buckets. Six reloads (a probe
# moved between targets and back) while the pages are read keep all of it true.
# Then one target's directory is renamed away: /readyz turns 503 naming it,
# the page and /status.json say it is down and why, /healthz stays 200. Last,
# a reload of a broken file: both say it failed, with the parser's message.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

# Debian's python3 has python3-html5lib and python3-jsonschema (dev.sh); a
# python3 earlier on PATH (pyenv and the like) may lack them.
PYTHON=python3
[[ -x /usr/bin/python3 ]] && PYTHON=/usr/bin/python3
require_cmd curl chromium "$PYTHON"
require_disk "$WORK"
"$PYTHON" -c 'import html5lib, jsonschema' 2>/dev/null ||
	fail "python3 cannot import html5lib and jsonschema (python3-html5lib, python3-jsonschema)"
SCHEMA="$SOURCE_DIR/docs/status.schema.json"

D1="$WORK/disk one" # a space and nothing else odd: the page shows it as is
D2="$WORK/d2"
mkdir "$D1" "$D2"
CFG="$WORK/iopulse.yaml"
cat >"$CFG" <<EOF
splay: false # the bursts run at start, not at a splayed phase
targets:
  - name: t1
    directory: $(yaml_str "$D1")
    max_duty_cycle: 100%
    max_write_per_day: 0
    size: 4MiB
  - name: t2
    directory: $(yaml_str "$D2")
    max_duty_cycle: 100%
    max_write_per_day: 0
    size: 1MiB
probes:
  - {name: p1, type: ping, target: t1, op: read, interval: 100ms}
  - {name: w1, type: ping, target: t1, op: write, sync: fdatasync, interval: 200ms}
  - {name: b1, type: burst, target: t1, rw: randread, duration: 300ms, every: 1h, engine: sync}
  - {name: p2, type: ping, target: t2, op: read, interval: 100ms}
EOF

# browse WHAT: Chromium renders / into $WORK/WHAT.dom (the DOM after load) and
# $WORK/WHAT.png (a screenshot).
browse() {
	local c=(chromium --headless --no-sandbox --disable-gpu --user-data-dir="$WORK/chromium"
		--window-size=1280,1800)
	timeout 60 "${c[@]}" --dump-dom "$(url /)" >"$WORK/$1.dom" 2>>"$WORK/chromium.log" ||
		fail "chromium --dump-dom failed:"$'\n'"$(tail -n 20 "$WORK/chromium.log")"
	timeout 60 "${c[@]}" --screenshot="$WORK/$1.png" "$(url /)" >>"$WORK/chromium.log" 2>&1 ||
		fail "chromium --screenshot failed:"$'\n'"$(tail -n 20 "$WORK/chromium.log")"
	[[ -s $WORK/$1.png ]] || fail "chromium wrote no screenshot $WORK/$1.png"
	note "screenshot: $WORK/$1.png"
}

# The checker: argv = SCHEMA DOM PAGE JSON BEFORE AFTER [EXPECT...]: the page
# source must parse strictly, JSON must validate, and the DOM, JSON and the two
# /metrics scrapes must agree. EXPECT: TARGET=STATE pairs.
cat >"$WORK/check.py" <<'EOF'
import json, re, sys
import html5lib, jsonschema

schema_f, dom_f, page_f, json_f, before_f, after_f, *expect = sys.argv[1:]
bad = []

def metrics(path):
    out = {}
    for line in open(path):
        m = re.match(r'^([a-z_]+)\{([^}]*)\} (\S+)$', line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            out[(m.group(1), tuple(sorted(labels.items())))] = float(m.group(3))
    return out

def value(ms, name, **labels):
    return ms.get((name, tuple(sorted(labels.items()))))

# Strict: the first parse error raises; report them all with their positions.
parser = html5lib.HTMLParser(strict=False)
parser.parse(open(page_f, "rb").read())
for pos, code, data in parser.errors:
    bad.append(f"HTML {page_f}:{pos[0]}:{pos[1]}: {code} {data}")
try:
    html5lib.HTMLParser(strict=True).parse(open(page_f, "rb").read())
except Exception as e:
    bad.append(f"HTML: the strict parser refuses the page: {e}")

doc = json.load(open(json_f))
schema = json.load(open(schema_f))
for e in jsonschema.Draft202012Validator(schema).iter_errors(doc):
    bad.append(f"JSON schema: at /{'/'.join(map(str, e.absolute_path))}: {e.message}")

m1, m2 = metrics(before_f), metrics(after_f)
tree = html5lib.parse(open(dom_f, "rb").read(), namespaceHTMLElements=False)
sections = {s.get("data-target"): s for s in tree.iter("section")}
jt = {t["name"]: t for t in doc["targets"]}
for pair in expect:
    name, state = pair.split("=")
    up = 1.0 if state == "up" else 0.0
    for ms, when in ((m1, "before"), (m2, "after")):
        v = value(ms, "iopulse_target_up", target=name)
        if v != up:
            bad.append(f"/metrics {when}: iopulse_target_up{{target={name}}} is {v}, want {up}")
    s = sections.get(name)
    if s is None or s.get("data-state") != state:
        bad.append(f"page: target {name} is {s is not None and s.get('data-state')}, want {state}")
    if name not in jt or jt[name]["state"] != state:
        bad.append(f"status.json: target {name} is {jt.get(name, {}).get('state')}, want {state}")
    if state == "down":
        reason = "".join("".join(p.itertext()) for p in s.iter("p") if p.get("class") == "reason") if s is not None else ""
        if "no such directory" not in reason:
            bad.append(f"page: target {name} is down without the reason: {reason!r}")
        if "no such directory" not in jt.get(name, {}).get("reason", ""):
            bad.append(f"status.json: target {name} is down without the reason")

# Every probe op on the page: runs between the two scrapes, IOPS as the gauge.
rows = bursts = 0
for s in sections.values():
    target = s.get("data-target")
    for tr in s.iter("tr"):
        probe, op = tr.get("data-probe"), tr.get("data-op")
        if not probe:
            continue
        cells = {td.get("class"): "".join(td.itertext()) for td in tr.iter("td")}
        if tr.get("data-table") == "burst":
            i1 = value(m1, "iopulse_burst_iops", probe=probe, target=target, op=op)
            i2 = value(m2, "iopulse_burst_iops", probe=probe, target=target, op=op)
            if i1 is not None and i1 == i2 and cells["iops"] != f"{i1:.0f}":
                bad.append(f"page: {probe} {op}: IOPS {cells['iops']}, /metrics says {i1:.0f}")
            if (i1 is None) != (cells["iops"] == "\u2013"):
                bad.append(f"page: {probe} {op}: IOPS {cells['iops']!r} with the gauge at {i1}")
            bursts += 1
            continue
        rows += 1
        lo = value(m1, "iopulse_probe_runs_total", probe=probe, target=target)
        hi = value(m2, "iopulse_probe_runs_total", probe=probe, target=target)
        runs = float(cells["runs"])
        if lo is None or hi is None or not lo <= runs <= hi:
            bad.append(f"page: {probe} {op}: {runs} runs, /metrics said {lo} before and {hi} after")
        jp = [p for p in jt[target]["probes"] if p["probe"] == probe and p["op"] == op]
        if len(jp) != 1:
            bad.append(f"status.json: {len(jp)} entries for {probe} {op}")
        elif not lo <= jp[0]["runs"] <= hi:
            bad.append(f"status.json: {probe} {op}: {jp[0]['runs']} runs, /metrics {lo}..{hi}")
# Window quantiles against the histogram of /metrics scraped after them: the
# window holds no more I/Os than the histogram, and its p50, p99 and max lie
# within the histogram's non-empty buckets (3% for the window's resolution).
def latency_buckets(ms, probe, target, op):
    want = {"probe": probe, "target": target, "op": op}
    out = []
    for (name, labels), v in ms.items():
        d = dict(labels)
        if name == "iopulse_probe_latency_seconds_bucket" and \
                {k: d.get(k) for k in want} == want:
            out.append((float(d["le"]), v))
    return sorted(out)

for t in doc["targets"]:
    for p in t["probes"]:
        w, where = p["last_minute"], f"status.json: {p['probe']} {p['op']} last minute"
        b = latency_buckets(m2, p["probe"], t["name"], p["op"])
        if not b:
            bad.append(f"{where}: no iopulse_probe_latency_seconds buckets in /metrics")
            continue
        if w["count"] > b[-1][1]:
            bad.append(f"{where}: {w['count']} I/Os, the histogram has {b[-1][1]:.0f}")
        if not w["count"]:
            continue
        counts = [c - (b[i - 1][1] if i else 0) for i, (le, c) in enumerate(b)]
        filled = [i for i, c in enumerate(counts) if c > 0]
        lo = b[filled[0] - 1][0] if filled[0] else 0.0
        hi = b[filled[-1]][0]
        for q in ("p50_seconds", "p99_seconds", "max_seconds"):
            if not lo / 1.03 <= w[q] <= hi * 1.03:
                bad.append(f"{where}: {q} {w[q]} outside the histogram's {lo}..{hi}")
        if not w["p50_seconds"] <= w["p99_seconds"] <= w["max_seconds"] * 1.03:
            bad.append(f"{where}: p50 {w['p50_seconds']}, p99 {w['p99_seconds']}, max {w['max_seconds']} out of order")
if bursts != 1:
    bad.append(f"page: {bursts} last-burst rows, want 1 (b1 read)")
if rows != 5:
    bad.append(f"page: {rows} probe rows, want 5 (p1 read, w1 write and fdatasync, b1 read, p2 read)")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
EOF

# snapshot WHAT EXPECT...: /metrics, then the page in Chromium, its source and
# /status.json, then /metrics again; check them all.
snapshot() {
	local what=$1 before after out
	shift
	scrape_metrics
	before=$PAGE
	# A page rendered before that scrape answers for 250 ms more (iopulse(8)):
	# past them, every page read below is rendered after it.
	sleep 0.3
	browse "$what"
	scrape / >"$WORK/$what.html" || fail "GET / failed"
	scrape "/status.json?history=1" >"$WORK/$what.json" || fail "GET /status.json?history=1 failed"
	scrape_metrics
	after=$PAGE
	out=$("$PYTHON" "$WORK/check.py" "$SCHEMA" "$WORK/$what.dom" "$WORK/$what.html" \
		"$WORK/$what.json" "$before" "$after" "$@" 2>&1) ||
		fail "$what: the page, /status.json and /metrics disagree:"$'\n'"$out"
	note "$what: page, /status.json and /metrics agree ($*)"
}

readyz() {
	[[ $(http_status GET /readyz) == "$1" ]]
}

burst_done() {
	scrape_metrics
	sample "$PAGE" 'iopulse_burst_iops{probe="b1",target="t1",op="read"}' >/dev/null
}

start_daemon "$CFG"
wait_until 60 "/readyz 200 (both targets up)" readyz 200
wait_until 60 "the first burst of b1" burst_done
[[ $(scrape /readyz) == ready ]] || fail "/readyz says '$(scrape /readyz)', want 'ready'"
snapshot up t1=up t2=up
grep -qF "$D1" "$WORK/up.dom" || fail "the page does not show the path $D1"
# Without ?history=1, /status.json leaves the ring's records out (it stays small).
scrape /status.json >"$WORK/plain.json" || fail "GET /status.json failed"
! grep -qF '"ten_minutes"' "$WORK/plain.json" ||
	fail "/status.json without ?history=1 has the ring's records"
grep -qF '"ten_minutes"' "$WORK/up.json" || fail "/status.json?history=1 has no ring records"

# ---- reloads while the pages are read -----------------------------------------

# p2 moves to t1 and back, b1's engine changes, every 0.3s, while a reader
# fetches the three pages without a pause (run under TSan by dev.sh: the HTTP
# thread reads what lanes and reloads change).
cp "$CFG" "$WORK/a.yaml"
sed -e 's/{name: p2, type: ping, target: t2, op: read, interval: 100ms}/{name: p2, type: ping, target: t1, op: read, interval: 50ms}/' \
	-e 's/engine: sync}/engine: auto}/' "$CFG" >"$WORK/b.yaml"
! cmp -s "$WORK/a.yaml" "$WORK/b.yaml" || fail "the reload variant is the same config"
(
	while :; do
		for path in / /status.json /readyz; do
			curl -s -o /dev/null --max-time 5 "$(url "$path")"
		done
	done
) &
READER=$!
on_exit kill "$READER"
for i in 1 2 3 4 5 6; do
	cp "$WORK/$([[ $((i % 2)) == 1 ]] && echo b || echo a).yaml" "$CFG"
	kill -HUP "$DAEMON_PID"
	sleep 0.3
	require_alive
done
kill "$READER"
wait "$READER" 2>/dev/null || true
# Back on the first config, everything as before the reloads.
moved_back() {
	scrape "/status.json" >"$WORK/back.json" &&
		"$PYTHON" -c 'import json, sys
t = {t["name"]: [p["probe"] for p in t["probes"]] for t in json.load(open(sys.argv[1]))["targets"]}
sys.exit(0 if "p2" in t.get("t2", []) and "p2" not in t.get("t1", []) else 1)' "$WORK/back.json"
}
wait_until 60 "p2 back under t2 in /status.json" moved_back
wait_until 60 "/readyz 200 after the reloads" readyz 200
# Windows are recomputed every 10s: wait for one with I/Os in it, so that the
# quantile checks have something to check.
p1_window() {
	scrape "/status.json" >"$WORK/w.json" &&
		"$PYTHON" -c 'import json, sys
p = [p for t in json.load(open(sys.argv[1]))["targets"] for p in t["probes"] if p["probe"] == "p1"]
sys.exit(0 if p and p[0]["last_minute"]["count"] > 0 else 1)' "$WORK/w.json"
}
wait_until 60 "a last-minute window of p1 with I/Os" p1_window
snapshot reloaded t1=up t2=up

# ---- a target goes down ---------------------------------------------------------

mv "$D2" "$D2.away"
wait_until 60 "/readyz 503 with t2 away" readyz 503
body=$(curl -sS --max-time 5 "$(url /readyz)")
[[ $body == "t2: down: "*"no such directory"* ]] ||
	fail "/readyz body does not say t2 is down and why: '$body'"
status=$(http_status GET /healthz)
[[ $status == 200 ]] || fail "/healthz answered $status with a target down, want 200"
snapshot down t1=up t2=down

# ---- a reload that fails ----------------------------------------------------------

# reload_failed: /status.json says the last load failed, and why (file:line:col).
reload_failed() {
	scrape /status.json >"$WORK/reload.json" &&
		"$PYTHON" -c 'import json, sys
c = json.load(open(sys.argv[1]))["config"]
sys.exit(0 if not c["last_reload_successful"] and sys.argv[2] + ":" in c["last_reload_error"] else 1)' \
			"$WORK/reload.json" "$CFG"
}
printf 'targets: [\n' >"$CFG"
kill -HUP "$DAEMON_PID"
wait_until 60 "/status.json to say the reload failed" reload_failed
# The page may still answer from a render made before the reload (within the
# 250 ms iopulse(8) allows), as the snapshot above asked for it.
page_says_failed() {
	scrape / >"$WORK/reload.html" && grep -qF "failed: $CFG:" "$WORK/reload.html"
}
wait_until 60 "the page to say the reload of $CFG failed and why" page_says_failed
note "pass; readyz: $body"
