# shellcheck shell=bash
# SPDX-License-Identifier: MIT
#
# alerting.sh — the real Prometheus, Alertmanager and webhook receiver of the
# end-to-end alerting tests (test_alerting*.sh) and what they ask of them.
# Sourced after lib.sh (and hangfs.sh), never run.

AM_BIN=/usr/bin/prometheus-alertmanager
require_cmd curl prometheus promtool amtool python3
[[ -x $AM_BIN ]] || fail "$AM_BIN not found (Debian's prometheus-alertmanager)"
require_disk "$WORK"
RULES="$SOURCE_DIR/dashboards/iopulse.rules.yml"
AM_SHIPPED="$SOURCE_DIR/dashboards/alertmanager.yml"
[[ -f $RULES ]] || fail "no $RULES"
[[ -f $AM_SHIPPED ]] || fail "no $AM_SHIPPED"

HOOK_LOG="$WORK/notifications.jsonl" # one line per notification (webhook.py)
HOOK_TSV="$HOOK_LOG.tsv"             # one line per alert in a notification
STATES="$WORK/states.tsv"            # one line per state change (the monitor)
DAEMON_LOGS+=("$HOOK_LOG" "$STATES")

# now_s: wall-clock seconds with a fraction.
now_s() {
	echo "${EPOCHREALTIME/,/.}"
}

# mins_since T0 T1: "N.N min" from T0 to T1.
mins_since() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f min", (b - a) / 60 }'
}

# ---- helper processes --------------------------------------------------------

HELPERS=() # "pid name" of each helper process that must stay alive

# helper_started PID NAME: remember PID; stopped at exit like the daemons.
helper_started() {
	DAEMON_PIDS+=("$1")
	HELPERS+=("$1 $2")
}

# helpers_alive: fail when a helper process (or a hangfs) has exited.
helpers_alive() {
	local h
	for h in "${HELPERS[@]}"; do
		alive "${h%% *}" || fail "${h#* } (pid ${h%% *}) exited"
	done
	[[ -z ${HANGFS_PID:-} ]] || alive "$HANGFS_PID" || fail "hangfs exited"
	for h in "${!HANGFS_PIDS[@]}"; do
		alive "${HANGFS_PIDS[$h]}" || fail "hangfs $h (pid ${HANGFS_PIDS[$h]}) exited"
	done
}

# wait_for SECONDS WHAT CMD [ARGS...]: as wait_until, polling every second
# (some conditions ask Prometheus) and failing as soon as a helper dies.
wait_for() {
	local limit=$1 what=$2 deadline
	shift 2
	deadline=$(($(now_ms) + limit * 1000))
	until "$@"; do
		helpers_alive
		require_alive
		(($(now_ms) < deadline)) || fail "timed out after ${limit}s waiting for: $what"
		sleep 1
	done
}

# start_webhook: webhook.py on a free loopback port; sets HOOK_PORT.
start_webhook() {
	python3 "$SOURCE_DIR/tests/integration/webhook.py" "$WORK/hook.port" "$HOOK_LOG" \
		>"$WORK/webhook.log" 2>&1 &
	helper_started $! "the webhook receiver"
	DAEMON_LOGS+=("$WORK/webhook.log")
	wait_until 60 "the webhook receiver listening" test -s "$WORK/hook.port"
	read -r HOOK_PORT <"$WORK/hook.port"
	note "webhook receiver on 127.0.0.1:$HOOK_PORT (notifications in $HOOK_LOG)"
}

# alertmanager_config OUT: the shipped alertmanager.yml with the receiver's URL
# (the example's http://127.0.0.1:9095/, exactly once) pointed at ours and the
# group timers shortened; nothing else changed.
alertmanager_config() {
	local n
	n=$(grep -c 'http://127\.0\.0\.1:9095/' "$AM_SHIPPED" || true)
	((n == 1)) || fail "$AM_SHIPPED: want the receiver URL http://127.0.0.1:9095/ once, found $n"
	sed -e "s|http://127\.0\.0\.1:9095/|http://127.0.0.1:$HOOK_PORT/|" \
		-e 's/^\([[:space:]]*group_wait:\).*/\1 5s/' \
		-e 's/^\([[:space:]]*group_interval:\).*/\1 10s/' "$AM_SHIPPED" >"$1"
	amtool check-config "$1" >"$1.check" 2>&1 ||
		fail "amtool check-config $1 (the shipped config, URL and timers replaced): $(cat "$1.check")"
}

# start_alertmanager: Alertmanager on a free loopback port, its own storage,
# no cluster; waits until it is ready and is ours. Sets AM_PORT.
start_alertmanager() {
	local dir="$WORK/am" try port log pid code deadline
	mkdir -p "$dir"
	alertmanager_config "$dir/alertmanager.yml"
	for try in 1 2 3 4 5 6 7 8 9 10; do
		port=$((20000 + RANDOM % 40000))
		port_free "$port" || continue
		log="$dir/alertmanager.$try.log"
		DAEMON_LOGS+=("$log")
		"$AM_BIN" --config.file="$dir/alertmanager.yml" --storage.path="$dir/data" \
			--web.listen-address="127.0.0.1:$port" --cluster.listen-address= \
			--log.level=debug >"$log" 2>&1 &
		pid=$!
		deadline=$(($(now_ms) + 30000))
		while :; do
			if ! alive "$pid"; then
				wait "$pid" || true
				grep -qi 'address already in use' "$log" && continue 2
				fail "alertmanager exited before it was ready"
			fi
			code=$(curl -s -o /dev/null --max-time 2 -w '%{http_code}' \
				"http://127.0.0.1:$port/-/ready") || true
			[[ $code == 200 ]] && break
			(($(now_ms) < deadline)) || fail "alertmanager not ready within 30s (/-/ready: $code)"
			sleep 0.2
		done
		helper_started "$pid" alertmanager
		AM_PORT=$port
		# The one that answered is ours: its configuration sends to our receiver.
		curl -fsS --max-time 5 "http://127.0.0.1:$port/api/v2/status" | grep -qF "127.0.0.1:$HOOK_PORT" ||
			fail "the alertmanager on port $port is not ours"
		note "alertmanager $pid on 127.0.0.1:$port (log $log)"
		return 0
	done
	fail "found no free port for alertmanager in 10 tries"
}

# start_monitor: poll /status.json every 0.5s in the background; each change of a
# target's (state, since, reason_code) is a line of $STATES:
# "TIME<TAB>TARGET<TAB>STATE<TAB>SINCE<TAB>REASON_CODE<TAB>PREVIOUS POLL"
# (TIME: when the poll that saw it began; PREVIOUS POLL: when the one before
# it began, 0 for the first).
start_monitor() {
	python3 - "$(url /status.json)" "$STATES" >"$WORK/monitor.log" 2>&1 <<-'PY' &
		import json, sys, time, urllib.request
		url, out = sys.argv[1], sys.argv[2]
		last, prev = {}, 0.0
		while True:
		    try:
		        t0 = time.time()
		        with urllib.request.urlopen(url, timeout=10) as r:
		            targets = json.load(r)["targets"]
		        for t in targets:
		            key = (t.get("state"), t.get("since"), t.get("reason_code"))
		            if last.get(t["name"]) != key:
		                last[t["name"]] = key
		                with open(out, "a") as f:
		                    f.write("\t".join([f"{t0:.3f}", t["name"]] + [str(k) for k in key]
		                                      + [f"{prev:.3f}"]) + "\n")
		        prev = t0
		    except Exception as e:  # the daemon busy or gone: the test sees that itself
		        print(f"{time.time():.3f} {e!r}", flush=True)
		    time.sleep(0.5)
	PY
	helper_started $! "the status monitor"
	DAEMON_LOGS+=("$WORK/monitor.log")
	wait_until 60 "the status monitor's first line" test -s "$STATES"
}

# ---- conditions ----------------------------------------------------------------

# value_of FILE NAME LABEL=VALUE...: the value of the first series of metric NAME
# in FILE having each of these labels; status 1 when there is none.
value_of() {
	local file=$1 name=$2
	shift 2
	awk -v name="$name" -v want="$*" '
		BEGIN { n = split(want, w, " ") }
		index($0, name "{") == 1 {
			for (i = 1; i <= n; i++) {
				eq = index(w[i], "=")
				l = substr(w[i], 1, eq - 1) "=\"" substr(w[i], eq + 1) "\""
				if (!index($0, "{" l) && !index($0, "," l)) next
			}
			print $NF
			found = 1
			exit
		}
		END { exit !found }' "$file"
}

# state_is TARGET STATE: the last state the monitor saw for TARGET is STATE.
state_is() {
	[[ $(awk -F'\t' -v t="$1" '$2 == t { s = $3 } END { print s }' "$STATES") == "$2" ]]
}

# notified STATUS ALERTNAME SEVERITY TARGET: a notification held that alert with
# that status (firing, resolved); SEVERITY "" matches any.
notified() {
	[[ -f $HOOK_TSV ]] || return 1
	awk -F'\t' -v st="$1" -v a="$2" -v sev="$3" -v t="$4" '
		$3 == st && $4 == a && (sev == "" || $5 == sev) && $6 == t { found = 1; exit }
		END { exit !found }' "$HOOK_TSV"
}

# first_notified STATUS ALERTNAME SEVERITY TARGET: the time it first arrived.
first_notified() {
	awk -F'\t' -v st="$1" -v a="$2" -v sev="$3" -v t="$4" '
		$3 == st && $4 == a && (sev == "" || $5 == sev) && $6 == t { print $1; exit }' "$HOOK_TSV"
}

# prom_query EXPR: the result of an instant query, one "labels value" line per
# sample (labels as {k="v",...} sorted).
prom_query() {
	curl -fsS --max-time 30 --data-urlencode "query=$1" "$PROM_URL/api/v1/query" |
		python3 -c '
import json, sys
for s in json.load(sys.stdin)["data"]["result"]:
    m = s["metric"]
    print("{" + ",".join(f"{k}=\"{v}\"" for k, v in sorted(m.items())) + "}", s["value"][1])'
}

# prom_has EXPR: the query returns a sample.
prom_has() {
	[[ -n $(prom_query "$1") ]]
}

# all_quiet: neither Prometheus nor Alertmanager has an alert active (pending
# included); says what is still there now and then.
QUIET_N=0
all_quiet() {
	local prom am
	prom=$(curl -fsS --max-time 30 "$PROM_URL/api/v1/alerts" | python3 -c '
import json, sys
for a in json.load(sys.stdin)["data"]["alerts"]:
    l = a["labels"]
    print(a["state"], l.get("alertname"), l.get("severity", ""), l.get("target", ""))') ||
		return 1
	am=$(curl -fsS --max-time 30 "http://127.0.0.1:$AM_PORT/api/v2/alerts" | python3 -c '
import json, sys
for a in json.load(sys.stdin):
    l = a["labels"]
    print(a["status"]["state"], l.get("alertname"), l.get("severity", ""), l.get("target", ""))') ||
		return 1
	[[ -z $prom && -z $am ]] && return 0
	((QUIET_N++ % 30)) || note "still active: prometheus [${prom//$'\n'/; }] alertmanager [${am//$'\n'/; }]"
	return 1
}

# start_alerting_prometheus: lib.sh's Prometheus (scrape and evaluation every
# second) with the shipped rules, sending to our Alertmanager; fails unless it
# loaded the alerts named (ALERTNAME...). The alerting section goes after the
# job (a line at column 0 ends the job's YAML and starts a top-level key).
start_alerting_prometheus() {
	local a
	PROM_RULES=$RULES PROM_JOB_EXTRA="alerting:
  alertmanagers:
    - static_configs:
        - targets: ['127.0.0.1:$AM_PORT']" start_prometheus
	HELPERS+=("$PROM_PID prometheus") # stopped at exit by lib.sh
	curl -fsS --max-time 30 "$PROM_URL/api/v1/rules" >"$WORK/rules.json" ||
		fail "cannot read $PROM_URL/api/v1/rules"
	for a in "$@"; do
		grep -qF "\"name\":\"$a\"" "$WORK/rules.json" || fail "prometheus has not loaded an alert $a from $RULES"
	done
}
