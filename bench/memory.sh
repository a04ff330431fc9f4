#!/usr/bin/env bash
# bench/memory.sh — what iopulse keeps resident on the default config, where it
# goes, and what each shared library costs (issue 15); node_exporter's totals
# in the same run.
#
# The daemon runs the embedded default config (STATE_DIRECTORY in the scratch
# directory under the build directory: a real disk) on a free loopback port. Once
# the probe file is laid out and both pings have run, SCRAPES scrapes of each kind
# (plain text; OpenMetrics + gzip with Prometheus' own headers), then SETTLE
# seconds idle. Debian's prometheus-node-exporter runs beside it and gets the same
# scrapes. From /proc/PID/smaps:
#   - iopulse's own private memory (Private_Clean + Private_Dirty) by kind: the
#     binary's mappings, the main heap, other malloc arenas (an rw-p mapping that
#     starts 64 MiB-aligned with its reserve, ---p, after it), and the rest of the
#     anonymous memory: thread stacks, the histograms (mmap'd, daemon/metrics/hist.c) and
#     what else is mapped alone. The kernel merges neighbouring anonymous mappings
#     (a stack with the mapping made after it), so these three are one figure.
#   - per shared library: Rss, Pss and Private, its .bss included (the anonymous
#     mapping ld.so places right after a library's last segment), sorted by Pss.
#     Private counts file pages no other process maps too: a library only iopulse
#     uses is private here and shared where other programs use it; Pss is the fair
#     share. Heap a library allocates (GnuTLS' ASN.1 trees at load) shows under the
#     heap, not here.
#   - totals: VmRSS, Pss and Private (summed over smaps); the same for node_exporter.
#
# A measurement, not a test: exits 0 whenever it ran. Knobs: SCRAPES (5), SETTLE
# (3), NODE_EXPORTER (/usr/bin/prometheus-node-exporter; skipped when absent),
# EXTRA (more arguments for `iopulse run`).
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
need curl

SCRAPES=${SCRAPES:-5}
SETTLE=${SETTLE:-3}
NODE_EXPORTER=${NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}
[[ $SCRAPES =~ ^[1-9][0-9]*$ ]] || { say "memory: SCRAPES must be a whole number, not '$SCRAPES'"; exit 64; }
[[ $SETTLE =~ ^[0-9]+$ ]] || { say "memory: SETTLE must be a whole number of seconds, not '$SETTLE'"; exit 64; }
read -ra EXTRA_ARGS <<<"${EXTRA:-}"

DPID= # the daemon
NPID= # node_exporter
# Stop what this script started, then lib.sh's cleanup (the scratch
# directory). The exit status stays the script's.
stop_servers() {
	local rc=$? pid
	set +e
	for pid in $DPID $NPID; do
		kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	cleanup
	return "$rc"
}
trap stop_servers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# What Prometheus sends (scrape_protocols' default order, and gzip).
PROM_ACCEPT='application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2'
scrape() { # PORT
	curl -fsS -o /dev/null "http://127.0.0.1:$1/metrics"
	curl -fsS -o /dev/null -H "Accept: $PROM_ACCEPT" -H 'Accept-Encoding: gzip' \
		"http://127.0.0.1:$1/metrics"
}

# ready: the probe file is laid out and the write ping (every 10 s) has written.
ready() {
	curl -fsS --max-time 10 "http://127.0.0.1:$PORT/metrics" | awk '
		/^iopulse_target_layout_progress_ratio\{target="state"\}/ { laid = $NF == 1 }
		/^iopulse_probe_bytes_total\{probe="write-ping",.*op="write"\}/ { wrote = $NF > 0 }
		END { exit !(laid && wrote) }'
}

# A freshly linked binary's pages are dirty in the page cache until written back,
# and smaps would count them Private_Dirty.
sync "$IOPULSE"
STATE=$WORK/state
mkdir "$STATE"
: >"$WORK/iopulse.log" # before the daemon opens it: the loop below reads it at once
STATE_DIRECTORY=$STATE "$IOPULSE" run --listen 127.0.0.1:0 "${EXTRA_ARGS[@]}" >"$WORK/iopulse.log" 2>&1 &
DPID=$!
PORT=
for _ in $(seq 100); do
	PORT=$(sed -n 's|.*Serving metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$WORK/iopulse.log")
	[ -z "$PORT" ] || break
	kill -0 "$DPID" 2>/dev/null || break
	sleep 0.1
done
[ -n "$PORT" ] || { cat "$WORK/iopulse.log" >&2; say "memory: iopulse did not start"; exit 1; }
deadline=$((SECONDS + 600))
until ready; do
	((SECONDS < deadline)) || { say "memory: no layout and first pings within 10 minutes"; exit 1; }
	sleep 0.5
done

if [ -x "$NODE_EXPORTER" ]; then
	for _ in 1 2 3; do
		NPORT=$((20000 + RANDOM % 40000))
		"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$NPORT" >"$WORK/node_exporter.log" 2>&1 &
		NPID=$!
		for _ in $(seq 50); do
			curl -fsS -o /dev/null "http://127.0.0.1:$NPORT/metrics" 2>/dev/null && break 2
			kill -0 "$NPID" 2>/dev/null || break
			sleep 0.1
		done
		kill "$NPID" 2>/dev/null || true # another port next time
		wait "$NPID" 2>/dev/null || true
		NPID=
	done
	[ -n "$NPID" ] || say "memory: node_exporter did not start; iopulse alone"
else
	say "memory: no $NODE_EXPORTER (./dev.sh bench installs it); iopulse alone"
fi

for _ in $(seq "$SCRAPES"); do
	scrape "$PORT"
	[ -z "$NPID" ] || scrape "$NPORT"
	sleep 0.2
done
sleep "$SETTLE"
cp "/proc/$DPID/smaps" "$WORK/iopulse.smaps"
cp "/proc/$DPID/status" "$WORK/iopulse.status"
if [ -n "$NPID" ]; then
	cp "/proc/$NPID/smaps" "$WORK/node_exporter.smaps"
	cp "/proc/$NPID/status" "$WORK/node_exporter.status"
fi
EXE=$(readlink -f "/proc/$DPID/exe")

python3 - "$WORK" "$EXE" <<-'PY'
	import os, re, sys
	work, exe = sys.argv[1], sys.argv[2]
	HDR = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$")

	def smaps(path):
	    maps = []
	    for line in open(path):
	        m = HDR.match(line)
	        if m:
	            maps.append({"lo": int(m[1], 16), "hi": int(m[2], 16), "perm": m[3], "name": m[4].strip()})
	            continue
	        k, _, v = line.partition(":")
	        v = v.split()
	        if len(v) == 2 and v[1] == "kB":
	            maps[-1][k] = int(v[0])
	    return maps

	def priv(m):
	    return m.get("Private_Clean", 0) + m.get("Private_Dirty", 0)

	def vmrss(path):
	    return next(int(l.split()[1]) for l in open(path) if l.startswith("VmRSS:"))

	def classify(maps, exe):
	    """(kind, library) per mapping: kind is one of OWN, library, file or kernel."""
	    out, owner = [], None  # owner: the file the previous mapping came from
	    for i, m in enumerate(maps):
	        n, prev = m["name"], maps[i - 1] if i else None
	        nxt = maps[i + 1] if i + 1 < len(maps) else None
	        touching = prev is not None and prev["hi"] == m["lo"]
	        if n in ("[vdso]", "[vvar]", "[vvar_vclock]", "[vsyscall]"):
	            kind = ("kernel", None)
	        elif n == exe:
	            kind = ("binary", None)
	        elif n == "[heap]":
	            kind = ("heap", None)
	        elif n == "[stack]":
	            kind = ("anon", None)
	        elif n.startswith("/") and ".so" in os.path.basename(n):
	            kind = ("library", os.path.basename(n))
	        elif n.startswith("/"):
	            kind = ("file", n)
	        elif touching and owner and m["perm"] == "rw-p":
	            # ld.so's .bss of the file mapped just below
	            kind = ("binary", None) if owner == exe else ("library", os.path.basename(owner))
	        elif (m["perm"] == "rw-p" and m["lo"] % (64 << 20) == 0 and nxt
	              and nxt["lo"] == m["hi"] and nxt["perm"] == "---p"):
	            kind = ("arena", None)
	        else:
	            kind = ("anon", None)
	        owner = n if n.startswith("/") else None
	        out.append(kind)
	    return out

	def totals(tag):
	    maps = smaps(os.path.join(work, tag + ".smaps"))
	    rss = vmrss(os.path.join(work, tag + ".status"))
	    pss = sum(m.get("Pss", 0) for m in maps)
	    return maps, rss, pss, sum(priv(m) for m in maps)

	OWN = ("binary", "heap", "arena", "anon")
	LABEL = {"binary": "binary", "heap": "main heap", "arena": "other malloc arenas",
	         "anon": "stacks, histograms, other"}
	maps, rss, pss, private = totals("iopulse")
	kinds = classify(maps, exe)
	own, libs = {}, {}
	for m, (kind, lib) in zip(maps, kinds):
	    if kind == "library":
	        r = libs.setdefault(lib, [0, 0, 0])
	        r[0] += m.get("Rss", 0); r[1] += m.get("Pss", 0); r[2] += priv(m)
	    elif kind in OWN:
	        r = own.setdefault(kind, [0, 0])
	        r[0] += m.get("Rss", 0); r[1] += priv(m)

	print("iopulse's own mappings (KiB)")
	print("  %-28s %7s %8s" % ("", "Rss", "Private"))
	for kind in OWN:
	    r = own.get(kind, [0, 0])
	    print("  %-28s %7d %8d" % (LABEL[kind], r[0], r[1]))
	own_priv = sum(r[1] for r in own.values())
	print("  %-28s %7d %8d  (%.2f MB)" % ("total", sum(r[0] for r in own.values()), own_priv,
	                                       own_priv * 1024 / 1e6))
	print()
	print("shared libraries (KiB), by Pss")
	print("  %-28s %7s %7s %8s" % ("", "Rss", "Pss", "Private"))
	lsum = [0, 0, 0]
	for lib, r in sorted(libs.items(), key=lambda kv: -kv[1][1]):
	    print("  %-28s %7d %7d %8d" % (lib, r[0], r[1], r[2]))
	    lsum = [a + b for a, b in zip(lsum, r)]
	print("  %-28s %7d %7d %8d  (%d libraries)" % ("total", lsum[0], lsum[1], lsum[2], len(libs)))
	print()
	print("totals (KiB)       %8s %8s %8s" % ("VmRSS", "Pss", "Private"))
	print("  iopulse          %8d %8d %8d" % (rss, pss, private))
	if os.path.exists(os.path.join(work, "node_exporter.smaps")):
	    _, nrss, npss, npriv = totals("node_exporter")
	    print("  node_exporter    %8d %8d %8d" % (nrss, npss, npriv))
	    print("  iopulse / node_exporter: VmRSS %.2fx, Pss %.2fx" % (rss / nrss, pss / npss))
PY
