#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Past one Prometheus (issue 24, section 5): the shipped fleet topology works
# with the real thing. Two iopulse daemons (host A, host B) on loopback, each
# scraped every second by its own Prometheus 2.42 in agent mode, built from the
# shipped dashboards/prometheus-agent.yml, both remote-writing to one central
# Prometheus built from dashboards/prometheus-central.yml, which loads the
# shipped dashboards/iopulse.rules.yml unchanged (evaluated every second):
#   - agent A runs with --enable-feature=agent,native-histograms (the shipped
#     way: native histograms scraped and sent), external label site=site-native;
#   - agent B with --enable-feature=agent only (an agent without native
#     histograms: it scrapes and sends classic buckets), site=site-classic.
# Only the addresses, the intervals and the site label are changed from the
# shipped files, each by an exact, once-only substitution (a shipped file that
# no longer has the text fails the test: update it here).
#
# On the central side, polled together for up to $DEADLINE seconds:
#   up        up{job="iopulse"} == 1 for both hosts, with their agent's site
#             label; the agents' own up (job prometheus-agent) too;
#   kinds     host A's latency histogram is stored native (no _bucket series),
#             host B's as classic buckets (no native series);
#   quantile  histogram_quantile(0.5, sum by (job, instance, probe, target, op)
#             (rate(iopulse_probe_latency_seconds[1m]))) answers for host A's
#             read, write and fdatasync pings with a value in 1us..1s, and the
#             classic form (..._bucket, by ... le) for host B's;
#   rules     every rule of the shipped file evaluates without error, and the
#             latency and IOPS recording rules it defines (p50_5m at least)
#             have a finite, positive series for both hosts and every ping op;
#   vars      every query variable of dashboards/grafana-iopulse.json lists
#             values, the instance variable both hosts;
#   series    the series the central side holds for each host, recording-rule
#             outputs and up/scrape_* aside, are exactly those of a text scrape
#             of that host (host A's histogram folded into one native series),
#             each with job, instance and the agent's site label.
# Then it prints, per host, the series the central side holds (what a host
# costs it: docs/fleet.md) and the bytes per sample each agent sent.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl prometheus promtool
require_disk "$WORK"
PY=python3
[[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3
require_cmd "$PY"

DEADLINE=${DEADLINE:-120} # seconds the central side may take to meet every condition
AGENT_YML="$SOURCE_DIR/dashboards/prometheus-agent.yml"
CENTRAL_YML="$SOURCE_DIR/dashboards/prometheus-central.yml"
RULES="$SOURCE_DIR/dashboards/iopulse.rules.yml"
DASHBOARD="$SOURCE_DIR/dashboards/grafana-iopulse.json"
PING_OPS=(read:read write:write write:fdatasync) # probe:op of the pings below
# The latency and IOPS recording rules checked when the rules file defines them
# (the first one it must); the others are only counted.
RECORDED=(probe_op:iopulse_probe_latency_seconds:p50_5m probe_op:iopulse_probe_latency_seconds:p99_5m
	probe_op:iopulse_probe_latency_seconds:mean5m probe_op:iopulse_probe_ios:rate5m)

# ---- checks on the central side (Python, on promcheck.py's HTTP helpers) -----

RW="$WORK/rw.py"
cat >"$RW" <<'PY'
import json, math, re, sys, urllib.parse
sys.path.insert(0, sys.argv[1])
import promcheck as pc
from promcheck import Fail, api, query

def sel(**labels):
    return ",".join(f'{k}="{v}"' for k, v in labels.items())

def sub(path, out, *pairs):
    """PATH to OUT ("-": stdout) with each FROM replaced by TO; each FROM
    must occur once."""
    text = open(path, encoding="utf-8").read()
    for frm, to in zip(pairs[::2], pairs[1::2]):
        n = text.count(frm)
        if n != 1:
            raise Fail(f"{path}: {frm!r} occurs {n} times, want once (the shipped file changed?)")
        text = text.replace(frm, to)
    if out == "-":
        sys.stdout.write(text)
    else:
        open(out, "w", encoding="utf-8").write(text)
    return ""

def up(prom, inst, site):
    bad = []
    for job, want in (("iopulse", inst), ("prometheus-agent", None)):
        m = sel(job=job, site=site) + (f',instance="{want}"' if want else "")
        _, res = query(prom, f"up{{{m}}}")
        vals = [s["value"][1] for s in res]
        if vals != ["1"]:
            bad.append(f"up{{{m}}} is {vals or 'absent'}")
    if bad:
        raise Fail("; ".join(bad))
    return f"up{{instance={inst},site={site}}} == 1, its agent's too"

def kinds(prom, inst, mode):
    _, nat = query(prom, f"iopulse_probe_latency_seconds{{{sel(instance=inst)}}}")
    _, buc = query(prom, f"count(iopulse_probe_latency_seconds_bucket{{{sel(instance=inst)}}})")
    nbuc = int(buc[0]["value"][1]) if buc else 0
    if mode == "native":
        if not nat or any("histogram" not in s for s in nat) or nbuc:
            raise Fail(f"{inst}: want native histograms only: {len(nat)} series "
                       f"({sum('histogram' in s for s in nat)} native), {nbuc} _bucket series")
        return f"{inst}: {len(nat)} native histogram series, no _bucket"
    if nat or not nbuc:
        raise Fail(f"{inst}: want classic buckets only: {len(nat)} native series, {nbuc} _bucket series")
    return f"{inst}: {nbuc} _bucket series, no native histogram"

def quantile(prom, expr, lo, hi, *ops):
    _, res = query(prom, expr)
    got = {(s["metric"].get("probe"), s["metric"].get("op")): s for s in res}
    bad, ok = [], []
    for po in ops:
        p, _, o = po.partition(":")
        s = got.get((p, o))
        v = s["value"][1] if s and "value" in s else None
        if v is None or not pc.finite(v) or not float(lo) <= float(v) <= float(hi):
            bad.append(f"{p}/{o}: {v if s else 'no result'}")
        else:
            ok.append(f"{p}/{o}={float(v) * 1e3:.3g}ms")
    if bad:
        raise Fail(f"{' '.join(expr.split())}: want {lo}..{hi}: " + ", ".join(bad)
                   + (f" (ok: {' '.join(ok)})" if ok else ""))
    return " ".join(ok)

def rules(prom, path):
    groups = api(prom, "/api/v1/rules")["groups"]
    mine = [r for g in groups if g["file"] == path for r in g["rules"]]
    bad = [f"{r.get('name')}: {r.get('health')} {r.get('lastError', '')}".strip()
           for r in mine if r.get("health") != "ok"]
    if not mine or bad:
        raise Fail(f"{len(mine)} rules from {path} loaded; not ok: " + "; ".join(bad[:10]))
    return f"all {len(mine)} rules of the shipped file evaluate without error"

def recorded(prom, path, insts, ops, *names):
    defined = pc.recorded(path)
    if names[0] not in defined:
        raise Fail(f"{path} records no {names[0]}: update the test's RECORDED")
    bad, ok = [], 0
    for name in (n for n in names if n in defined):
        for inst in insts.split():
            _, res = query(prom, f"{name}{{{sel(instance=inst)}}}")
            got = {(s["metric"].get("probe"), s["metric"].get("op")): s["value"][1] for s in res}
            for po in ops.split():
                v = got.get(tuple(po.split(":")))
                if v is None or not pc.finite(v) or not float(v) > 0:
                    bad.append(f"{name}{{instance={inst},{po}}}: {v}")
                else:
                    ok += 1
    if bad:
        raise Fail(", ".join(bad))
    return f"{ok} recorded series (probe op x host) finite and positive"

def dash_vars(prom, dashboard, insts):
    doc = json.load(open(dashboard, encoding="utf-8"))
    bad, out = [], []
    for v in doc.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", q)
        if not m:
            bad.append(f"${v['name']}: not label_values(...): {q}")
            continue
        vals = api(prom, f"/api/v1/label/{m.group(2)}/values", **{"match[]": pc.substitute(m.group(1))})
        want = insts.split() if v["name"] == "instance" else []
        if not vals or any(w not in vals for w in want):
            bad.append(f"${v['name']}: {q} -> {vals}, want {want or 'values'}")
        out.append(f"${v['name']}={','.join(vals)}")
    if bad or not out:
        raise Fail("; ".join(bad) or "no query variables in the dashboard")
    return " ".join(out)

def same(prom, inst, site, page, fold):
    """The central side's series of INST are those of the text PAGE."""
    _, res = query(prom, f"{{{sel(instance=inst)}}}")
    held, bad = set(), []
    for s in res:
        m = dict(s["metric"])
        name = m.pop("__name__")
        if ":" in name:  # a recording rule's output, made on the central side
            continue
        if m.get("job") != "iopulse" or m.get("site") != site:
            bad.append(f"{name}: job={m.get('job')} site={m.get('site')}")
        if name in pc.SYNTHETIC:
            continue
        for k in ("job", "instance", "site"):
            m.pop(k, None)
        held.add(pc.key(name, m))
    want = set(pc.cmd_series(page, False, {fold} if fold else set()).split("\n"))
    if bad:
        raise Fail(f"{len(bad)} series without job iopulse and site {site}: " + "; ".join(bad[:5]))
    if held != want:
        a, b = sorted(held - want), sorted(want - held)
        raise Fail(f"{inst}: {len(a)} series only on the central side {a[:10]}, "
                   f"{len(b)} only in the scrape {b[:10]}")
    return f"{inst}: the {len(held)} series of its scrape, each with job, instance and site"

def count(prom, inst):
    """forwarded recorded: the central side's series of INST."""
    def n(expr):
        _, res = query(prom, expr)
        return int(res[0]["value"][1]) if res else 0
    fwd = n('count({%s, __name__!~".+:.+"})' % sel(instance=inst))
    rec = n('count({%s, __name__=~".+:.+"})' % sel(instance=inst))
    return f"{fwd} {rec}"

try:
    out = globals()[sys.argv[2].replace("-", "_")](*sys.argv[3:])
except Fail as e:
    print(e)
    sys.exit(1)
if out:
    print(out)
PY

rw() {
	"$PY" "$RW" "$SOURCE_DIR/tests/integration" "$@"
}

# ---- the shipped files -------------------------------------------------------

for f in "$AGENT_YML" "$CENTRAL_YML"; do
	out=$(promtool check config "$f" 2>&1) || fail "promtool check config $f:"$'\n'"$out"
done
grep -q '^    send_native_histograms: true$' "$AGENT_YML" ||
	fail "$AGENT_YML: remote_write has no 'send_native_histograms: true'"
for flag in --enable-feature=agent,native-histograms --storage.agent.path; do
	grep -qF -- "$flag" "$AGENT_YML" || fail "$AGENT_YML does not say to run with $flag"
done
for flag in --web.enable-remote-write-receiver --enable-feature=native-histograms; do
	grep -qF -- "$flag" "$CENTRAL_YML" || fail "$CENTRAL_YML does not say to run with $flag"
done
note "shipped agent and central configurations check clean"

# ---- the hosts ---------------------------------------------------------------

# host_config FILE DIR: the host of bench/fleet.sh (a read ping, a write ping
# with fdatasync, a null burst), on faster schedules.
host_config() {
	mkdir -p "$2"
	target_config "$1" "$2" 1MiB "layout_rate: 0"
	cat >>"$1" <<-EOF
		  - {name: read, type: ping, target: t1, op: read, interval: 100ms}
		  - {name: write, type: ping, target: t1, op: write, sync: fdatasync, interval: 100ms}
		  - {name: burst, type: burst, target: t1, rw: randread, engine: "null", iodepth: 4, ios: 10000, every: 2s}
	EOF
}
host_config "$WORK/a.yaml" "$WORK/a"
host_config "$WORK/b.yaml" "$WORK/b"
start_daemon "$WORK/a.yaml"
A_PID=$DAEMON_PID A_PORT=$DAEMON_PORT A=127.0.0.1:$DAEMON_PORT
start_daemon "$WORK/b.yaml"
B_PID=$DAEMON_PID B_PORT=$DAEMON_PORT B=127.0.0.1:$DAEMON_PORT

# ---- Prometheus: the central one and two agents ------------------------------

# start_prom NAME WRITER FLAGS...: a Prometheus on a free loopback port with its
# own directory $WORK/NAME (data in $WORK/NAME/data), its configuration written
# by "WRITER PORT"; waits until it is ready and is ours. Sets PORT_OF[NAME],
# PID_OF[NAME].
declare -A PORT_OF=() PID_OF=()
start_prom() {
	local name=$1 writer=$2 dir="$WORK/$1" try port log pid code path key
	shift 2
	mkdir "$dir"
	key=storage.tsdb.path
	[[ " $* " == *" --enable-feature=agent"* ]] && key=storage.agent.path
	for try in 1 2 3 4 5 6 7 8 9 10; do
		port=$((20000 + RANDOM % 40000))
		port_free "$port" || continue
		"$writer" "$port" >"$dir/prometheus.yml" ||
			fail "$name: cannot write its configuration: $(cat "$dir/prometheus.yml")"
		log="$dir/prometheus.$try.log"
		DAEMON_LOGS+=("$log")
		prometheus --config.file="$dir/prometheus.yml" "--$key=$dir/data" \
			--web.listen-address="127.0.0.1:$port" --log.level=warn "$@" >"$log" 2>&1 &
		pid=$!
		DAEMON_PIDS+=("$pid")
		local deadline=$(($(now_ms) + 60000))
		while :; do
			if ! alive "$pid"; then
				wait "$pid" || true
				_forget_pid "$pid"
				grep -qi 'address already in use' "$log" && continue 2
				fail "$name: prometheus $* exited before it was ready"
			fi
			code=$(curl -s -o /dev/null --max-time 2 -w '%{http_code}' "http://127.0.0.1:$port/-/ready") || true
			[[ $code == 200 ]] && break
			(($(now_ms) < deadline)) || fail "$name: prometheus not ready within 60s (/-/ready: $code)"
			sleep 0.2
		done
		path=$(curl -fsS --max-time 5 "http://127.0.0.1:$port/api/v1/status/flags" |
			"$PY" -c "import json, sys; print(json.load(sys.stdin)['data']['$key'])") ||
			fail "$name: cannot read http://127.0.0.1:$port/api/v1/status/flags"
		[[ $path == "$dir/data" ]] || fail "$name: 127.0.0.1:$port is not our prometheus ($key '$path')"
		PORT_OF[$name]=$port
		PID_OF[$name]=$pid
		note "$name: prometheus $pid $* ready on 127.0.0.1:$port (log $log)"
		return 0
	done
	fail "$name: found no free port for prometheus in 10 tries"
}

# The shipped central configuration: rules evaluated every second, the shipped
# rules file by its absolute path, its self-scrape on its port.
central_config() {
	rw sub "$CENTRAL_YML" - \
		'  evaluation_interval: 15s' '  evaluation_interval: 1s' \
		'  - iopulse.rules.yml' "  - '$RULES'" \
		"targets: ['localhost:9090']" "targets: ['127.0.0.1:$1']"
}

# The shipped agent configuration, scraping host $AGENT_HOST every second,
# labelled site=$AGENT_SITE, writing to the central Prometheus.
agent_config() {
	rw sub "$AGENT_YML" - \
		'  scrape_interval: 15s' '  scrape_interval: 1s' \
		'  scrape_timeout: 10s' '  scrape_timeout: 1s' \
		'    site: site-a' "    site: $AGENT_SITE" \
		$'          - db1.site-a.example.net:10035\n          - db2.site-a.example.net:10035' \
		"          - $AGENT_HOST" \
		"targets: ['localhost:9090']" "targets: ['127.0.0.1:$1']" \
		'http://prometheus-central.example.net:9090/api/v1/write' "$CENTRAL/api/v1/write"
}

start_prom central central_config --web.enable-remote-write-receiver --enable-feature=native-histograms
CENTRAL=http://127.0.0.1:${PORT_OF[central]}
AGENT_HOST=$A AGENT_SITE=site-native start_prom agent-native agent_config \
	--enable-feature=agent,native-histograms
AGENT_HOST=$B AGENT_SITE=site-classic start_prom agent-classic agent_config --enable-feature=agent
# At exit (a failure), stop the agents before the central side too.
others=()
for pid in "${DAEMON_PIDS[@]}"; do
	[[ $pid == "${PID_OF[agent-native]}" || $pid == "${PID_OF[agent-classic]}" ]] || others+=("$pid")
done
DAEMON_PIDS=("${PID_OF[agent-native]}" "${PID_OF[agent-classic]}" "${others[@]}")

# ---- the central side --------------------------------------------------------

# page HOST_PORT FILE: a text scrape of a host, as a condition may need it.
page() {
	curl -fsS --max-time 5 -H 'Accept: text/plain;version=0.0.4' -o "$2" "http://127.0.0.1:$1/metrics"
}

c_up_a() { rw up "$CENTRAL" "$A" site-native; }
c_up_b() { rw up "$CENTRAL" "$B" site-classic; }
c_kind_a() { rw kinds "$CENTRAL" "$A" native; }
c_kind_b() { rw kinds "$CENTRAL" "$B" classic; }
c_quantile_a() {
	rw quantile "$CENTRAL" \
		"histogram_quantile(0.5, sum by (job, instance, probe, target, op) (rate(iopulse_probe_latency_seconds{instance=\"$A\"}[1m])))" \
		1e-6 1 "${PING_OPS[@]}"
}
c_quantile_b() {
	rw quantile "$CENTRAL" \
		"histogram_quantile(0.5, sum by (job, instance, probe, target, op, le) (rate(iopulse_probe_latency_seconds_bucket{instance=\"$B\"}[1m])))" \
		1e-6 1 "${PING_OPS[@]}"
}
c_rules() { rw rules "$CENTRAL" "$RULES"; }
c_recorded() { rw recorded "$CENTRAL" "$RULES" "$A $B" "${PING_OPS[*]}" "${RECORDED[@]}"; }
c_vars() { rw dash-vars "$CENTRAL" "$DASHBOARD" "$A $B"; }
c_series_a() {
	page "$A_PORT" "$WORK/a.prom" || return 1
	rw same "$CENTRAL" "$A" site-native "$WORK/a.prom" iopulse_probe_latency_seconds
}
c_series_b() {
	page "$B_PORT" "$WORK/b.prom" || return 1
	rw same "$CENTRAL" "$B" site-classic "$WORK/b.prom" ""
}

# poll CHECK...: run every CHECK (status 0 when it holds, its output says why
# not) about once a second until each has held once; fail after $DEADLINE
# seconds naming those that never did, or at once when a process exits.
poll() {
	local deadline c out pid pending=("$@") left
	declare -A why=()
	deadline=$(($(now_ms) + DEADLINE * 1000))
	while ((${#pending[@]})); do
		left=()
		for c in "${pending[@]}"; do
			if out=$("$c" 2>&1); then
				note "$c: ${out//$'\n'/; }"
			else
				why[$c]=$out
				left+=("$c")
			fi
		done
		pending=("${left[@]}")
		((${#pending[@]})) || break
		for pid in "$A_PID" "$B_PID" "${PID_OF[@]}"; do
			alive "$pid" || fail "process $pid exited (see its log below)"
		done
		if (($(now_ms) > deadline)); then
			out="after ${DEADLINE}s, ${#pending[@]} condition(s) never held:"
			for c in "${pending[@]}"; do
				out+=$'\n'"  - $c: ${why[$c]}"
			done
			fail "$out"
		fi
		sleep 1
	done
}

poll c_up_a c_up_b c_kind_a c_kind_b c_quantile_a c_quantile_b c_rules c_recorded c_vars \
	c_series_a c_series_b

# ---- what a host costs the central side --------------------------------------

# sent AGENT: bytes the agent sent per sample (float or histogram), from its
# own counters.
sent() {
	curl -fsS --max-time 5 "http://127.0.0.1:${PORT_OF[$1]}/metrics" | awk '
		/^prometheus_remote_storage_bytes_total\{/ { b += $2 }
		/^prometheus_remote_storage_samples_total\{/ { s += $2 }
		/^prometheus_remote_storage_histograms_total\{/ { h += $2 }
		END { if (s + h) printf "%d floats + %d histograms sent, %.1f bytes each (snappy)", s, h, b / (s + h) }'
}

read -r A_FWD A_REC <<<"$(rw count "$CENTRAL" "$A")"
read -r B_FWD B_REC <<<"$(rw count "$CENTRAL" "$B")"
note "series per host on the central side (forwarded from the scrape incl. up/scrape_*, + recording-rule outputs):"
note "  native (host A): $A_FWD + $A_REC = $((A_FWD + A_REC))"
note "  classic (host B): $B_FWD + $B_REC = $((B_FWD + B_REC))"
note "agent-native: $(sent agent-native)"
note "agent-classic: $(sent agent-classic)"

# The agents first, while the central side still takes what they flush on the
# way out (with it gone they would retry until killed), then the rest.
for name in agent-native agent-classic central; do
	kill -TERM "${PID_OF[$name]}"
	reap "${PID_OF[$name]}" "$name (sent SIGTERM)" 30
	_forget_pid "${PID_OF[$name]}"
done
DAEMON_PID=$A_PID
stop_daemon TERM 5
DAEMON_PID=$B_PID
stop_daemon TERM 5
note "pass"
