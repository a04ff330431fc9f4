#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Verified by the real thing (issue 4): Debian's Prometheus server scrapes a
# running iopulse every second, and what it ingested is checked through its
# HTTP API.
#
# iopulse pings a directory target every 100ms (a read ping, a write ping with
# fdatasync) and runs a short read burst every 5s, so every probe/op has
# latency samples. Before any Prometheus runs, the exposition itself is checked:
# the text 0.0.4 page lints clean with promtool; OpenMetrics 1.0 is served on
# request (its Content-Type, "# EOF", the same series as the text page);
# Prometheus' own Accept header without native histograms gets OpenMetrics,
# never protobuf; and its Accept header with native histograms gets the
# protobuf delimited format, whose native histograms are well formed, count
# what iopulse_probe_ios_total counts in the same body and carry the text
# page's classic series; and with Prometheus' Accept-Encoding (gzip), 20 scrapes
# in a row of each kind are valid gzip members (CRC and length) of such pages.
#
# Then Prometheus runs twice on a free loopback port, each with its own TSDB in
# $WORK and a 1s scrape interval:
#   (a) plain: up == 1; every family of iopulse(8) METRICS is
#       ingested (the histogram as _bucket/_count/_sum); histogram_quantile(0.99)
#       over rate(..._bucket[1m]) is a number for every probe/op; the series
#       Prometheus holds are exactly those of a text 0.0.4 scrape (Prometheus
#       negotiates OpenMetrics, so this is "OpenMetrics and text yield
#       identical series").
#   (b) --enable-feature=native-histograms: up == 1; every family ingested,
#       the histogram as a native histogram only (2.42 then drops the classic
#       _bucket/_count/_sum); histogram_quantile(0.99) and histogram_count()
#       over rate(...[1m]) return values for every probe/op; at every scrape of
#       the last 20s, histogram_count equals iopulse_probe_ios_total at the
#       same timestamp (iopulse's own _count: both are published together),
#       over at least 5 scrapes per series.
# Each phase polls its conditions for up to 40s. All failures are collected and
# reported together at the end, each naming the check and why it failed.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl promtool prometheus gzip
require_disk "$WORK"

PY=python3
[[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3
require_cmd "$PY"
PC=("$PY" "$SOURCE_DIR/tests/integration/promcheck.py")

PROM_DEADLINE=40 # seconds each Prometheus phase may take to meet its conditions

# The exact Accept headers of Prometheus 2.42 (scrapeAcceptHeader and, with
# native histograms on, scrapeAcceptHeaderWithProtobuf in its scrape/scrape.go).
ACCEPT_PLAIN='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
ACCEPT_NATIVE='application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
ACCEPT_TEXT='text/plain;version=0.0.4'
ACCEPT_OM='application/openmetrics-text;version=1.0.0'
CT_TEXT='text/plain; version=0.0.4; charset=utf-8'
CT_OM='application/openmetrics-text; version=1.0.0; charset=utf-8'
CT_PB='application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited'

FAILURES=()

# soft_fail MSG: record a failed check and go on; the test fails at the end.
soft_fail() {
	echo "# FAILED: $*" >&2
	FAILURES+=("$*")
}

# media_type CT: the media type of a Content-Type, lower case, no parameters.
media_type() {
	local t=${1%%;*}
	t=${t//[[:space:]]/}
	echo "${t,,}"
}

# diff_series A B NAME_A NAME_B: how two sorted series lists differ (the first 20
# lines of each side).
diff_series() {
	local a b
	a=$(LC_ALL=C comm -23 <(echo "$1") <(echo "$2"))
	b=$(LC_ALL=C comm -13 <(echo "$1") <(echo "$2"))
	echo "$(grep -c . <<<"$a" || true) only in $3, $(grep -c . <<<"$b" || true) only in $4"
	[[ -z $a ]] || echo "only in $3:"$'\n'"$(head -20 <<<"$a")"
	[[ -z $b ]] || echo "only in $4:"$'\n'"$(head -20 <<<"$b")"
}

# ---- iopulse ---------------------------------------------------------------

DIR="$WORK/target"
CFG="$WORK/iopulse.yaml"
# A fixed slow_floor: 'auto' (the default) has no iopulse_target_slow_floor_seconds.
ping_config "$CFG" "$DIR" 8MiB write "layout_rate: 0" "slow_floor: 1ms"
# w1 (the last item) with 'warmup_after', for iopulse_probe_warmup_ios_total.
cat >>"$CFG" <<EOF
    warmup_after: 1h
  - name: b1
    type: burst
    target: t1
    rw: randread
    iodepth: 4
    duration: 500ms
    every: 5s
  - name: v1
    type: verify
    target: t1
    interval: 1s
    blocks: 8
    blocks_per_run: 2
EOF

idle_sysfs "$WORK" # the target's disk is idle: the device gauges exist, bursts run
start_daemon "$CFG"

# probe:op of every latency histogram, and their series on the text page.
PROBE_OPS=(p1:read w1:write w1:fdatasync b1:read)

# fetch ACCEPT FILE: GET /metrics with that Accept header into FILE; sets CT.
fetch() {
	CT=$(curl -fsS --max-time 5 -H "Accept: $1" -o "$2" -w '%{content_type}' "$(url /metrics)") ||
		fail "GET /metrics (Accept: $1) failed"
}

all_counted() {
	local po v
	fetch "$ACCEPT_TEXT" "$WORK/first.prom"
	for po in "${PROBE_OPS[@]}"; do
		v=$(sample "$WORK/first.prom" "iopulse_probe_ios_total{probe=\"${po%%:*}\",target=\"t1\",op=\"${po#*:}\"}") ||
			return 1
		num "$v" '>' 0 || return 1
	done
}
wait_until 60 "an I/O counted for each of ${PROBE_OPS[*]}" all_counted

# ---- the exposition, directly ----------------------------------------------

# Text 0.0.4, asked for explicitly.
TEXT="$WORK/page.prom"
fetch "$ACCEPT_TEXT" "$TEXT"
[[ $CT == "$CT_TEXT" ]] || soft_fail "text: Accept '$ACCEPT_TEXT' got Content-Type '$CT', want '$CT_TEXT'"
lint=$(promtool check metrics <"$TEXT" 2>&1) || soft_fail "text: promtool check metrics failed:"$'\n'"$lint"
[[ -z $lint ]] || soft_fail "text: promtool check metrics has findings:"$'\n'"$lint"
out=$("${PC[@]}" series "$TEXT" 2>&1) || fail "cannot parse the text page $TEXT: $out"
note "text page: $(wc -l <<<"$out") series, promtool clean"

# OpenMetrics 1.0, asked for explicitly: Content-Type, "# EOF", and the same series
# as text. A series may appear between two scrapes (a first HTTP status code, a
# first finished burst), so compare a text page fetched right after the OM page,
# and retry a few times before calling a difference real.
check_om() {
	local om="$WORK/page.om" text="$WORK/page.om.prom" oms ts try omct
	for try in 1 2 3; do
		fetch "$ACCEPT_OM" "$om"
		if [[ $(media_type "$CT") != application/openmetrics-text ]]; then
			soft_fail "OpenMetrics: Accept '$ACCEPT_OM' got Content-Type '$CT', want '$CT_OM'"
			return
		fi
		[[ $CT == "$CT_OM" ]] || soft_fail "OpenMetrics: Content-Type '$CT', want '$CT_OM'"
		[[ $(tail -c 6 "$om") == '# EOF' || $(tail -c 5 "$om") == '# EOF' ]] ||
			soft_fail "OpenMetrics: page does not end with '# EOF' (ends with '$(tail -c 20 "$om")')"
		omct=$CT
		fetch "$ACCEPT_TEXT" "$text"
		oms=$("${PC[@]}" series "$om" --om 2>&1) || {
			soft_fail "OpenMetrics: $oms"
			return
		}
		ts=$("${PC[@]}" series "$text") || fail "cannot parse the text page $text"
		if [[ $oms == "$ts" ]]; then
			note "OpenMetrics: $omct, '# EOF', the same $(wc -l <<<"$oms") series as text"
			return
		fi
		sleep 0.3
	done
	soft_fail "OpenMetrics and text pages have different series: $(diff_series "$oms" "$ts" OpenMetrics text)"
}
check_om

# Prometheus 2.42 without native histograms: prefers OpenMetrics 1.0, and must
# never be sent protobuf (a native histogram in it fails the whole scrape).
fetch "$ACCEPT_PLAIN" "$WORK/page.plain"
case $(media_type "$CT") in
application/openmetrics-text) note "Prometheus' plain Accept header gets '$CT'" ;;
*) soft_fail "Prometheus' plain Accept header ($ACCEPT_PLAIN) got Content-Type '$CT', want '$CT_OM'" ;;
esac

# Prometheus 2.42 with native histograms: protobuf with native histograms.
check_pb() {
	local pb="$WORK/page.pb" text="$WORK/page.pb.prom" out try pbct
	for try in 1 2 3; do
		fetch "$ACCEPT_NATIVE" "$pb"
		if [[ $(media_type "$CT") != application/vnd.google.protobuf ]]; then
			soft_fail "protobuf: Prometheus' native-histogram Accept header got Content-Type '$CT', want '$CT_PB'"
			return
		fi
		[[ $CT == "$CT_PB" ]] || soft_fail "protobuf: Content-Type '$CT', want '$CT_PB'"
		pbct=$CT
		fetch "$ACCEPT_TEXT" "$text"
		if out=$("${PC[@]}" pb "$pb" "$text" 2>&1); then
			note "protobuf: $pbct: $out"
			return
		fi
		sleep 0.3
	done
	soft_fail "protobuf body $pb:"$'\n'"$out"
}
check_pb

# Prometheus' own requests, gzip included: 20 in a row of each kind (close
# together, so /metrics keeps most families' compressed bytes and compresses only
# what changed) must each be a gzip member (CRC and length checked) holding a
# page as good as the uncompressed one.
check_gzip() {
	local kind accept gz="$WORK/page.gz" page="$WORK/page.unz" text="$WORK/page.gz.prom" i out enc try
	# gzip_scrape I: one request with Prometheus' headers for $kind, inflated into $page.
	gzip_scrape() {
		enc=$(curl -fsS --max-time 5 -H "Accept: $accept" -H 'Accept-Encoding: gzip' \
			-o "$gz" -D - "$(url /metrics)" | tr -d '\r' | sed -n 's/^[Cc]ontent-[Ee]ncoding: //p') ||
			fail "GET /metrics with Prometheus' $kind headers failed"
		[[ $enc == gzip ]] || { soft_fail "gzip $kind: Content-Encoding '$enc', want gzip"; return 1; }
		gzip -dc <"$gz" >"$page" 2>"$WORK/gzip.err" ||
			{ soft_fail "gzip $kind scrape $1: not a valid gzip member: $(cat "$WORK/gzip.err")"; return 1; }
	}
	for kind in om pb; do
		accept=$ACCEPT_PLAIN
		[[ $kind == pb ]] && accept=$ACCEPT_NATIVE
		for i in $(seq 20); do
			gzip_scrape "$i" || return
		done
		fetch "$ACCEPT_TEXT" "$text"
		if [[ $kind == om ]]; then
			[[ $(tail -c 6 "$page") == '# EOF' || $(tail -c 5 "$page") == '# EOF' ]] ||
				soft_fail "gzip om: the page does not end with '# EOF'"
			out=$("${PC[@]}" series "$page" --om 2>&1) || soft_fail "gzip om: $out"
		else
			# The text page comes after the body, and a series may appear in
			# between (the figures of a minute just ended): as check_pb does,
			# a body and a text page taken again, three times at most.
			for try in 1 2 3; do
				out=$("${PC[@]}" pb "$page" "$text" 2>&1) && break
				((try < 3)) || { soft_fail "gzip pb: $out"; break; }
				sleep 0.3
				gzip_scrape "again $try" || return
				fetch "$ACCEPT_TEXT" "$text"
			done
		fi
	done
	note "gzip: 20 OpenMetrics and 20 protobuf scrapes with Prometheus' headers inflate to valid pages"
}
check_gzip

# ---- Prometheus ------------------------------------------------------------

# iopulse_http_status_renders_total has its first series once a status page is
# rendered: one is, for the families below.
scrape / >/dev/null || fail "GET / failed"

# The families of iopulse(8) METRICS, with their types: each is a ".TP" entry
# whose tag is ".B NAME" and whose text starts with "TYPE;".
MAN_FAMILIES=$(awk '/^\.SH METRICS/ { m = 1; next } /^\.SH / { m = 0 }
	m && prev == ".TP" && /^\.B [a-z_:][a-z0-9_:]*$/ { name = $2; getline; sub(/;.*/, ""); print name, $0 }
	{ prev = $0 }' "$SOURCE_DIR/man/iopulse.8")
nfam=$(wc -l <<<"$MAN_FAMILIES")
((nfam >= 20)) || fail "found only $nfam families in iopulse(8) METRICS:"$'\n'"$MAN_FAMILIES"
for m in iopulse_probe_latency_seconds iopulse_probe_ios_total iopulse_probe_errors_total \
	iopulse_target_up iopulse_build_info iopulse_burst_iops process_cpu_seconds_total; do
	grep -q "^$m " <<<"$MAN_FAMILIES" || fail "iopulse(8) METRICS does not list $m"
done

# expected_names native|classic: the metric names the families are ingested as.
# With native histograms on, 2.42 keeps a histogram carrying native buckets as one
# native series and drops its classic series; those are then named after --absent.
# Families there only once a probe op's baseline has warmed up (a minute at the
# least, iopulse.yaml(5) baseline_warmup), longer than a phase here:
# tests/integration/test_slow_state.sh waits for them.
WARMING=" iopulse_probe_latency_baseline_seconds iopulse_probe_latency_ratio "
WARMING+="iopulse_probe_slow_floor_seconds iopulse_probe_slow_io_threshold_seconds iopulse_probe_slow_io_ratio "
WARMING+="iopulse_probe_stalls "
expected_names() {
	local fam type absent=()
	while read -r fam type; do
		[[ $WARMING != *" $fam "* ]] || continue
		if [[ $type == histogram ]]; then
			if [[ $1 == native ]]; then
				echo "$fam"
				absent+=("${fam}_bucket" "${fam}_count" "${fam}_sum")
			else
				echo "${fam}_bucket" "${fam}_count" "${fam}_sum"
			fi
		else
			echo "$fam"
		fi
	done <<<"$MAN_FAMILIES"
	if ((${#absent[@]})); then
		echo --absent "${absent[@]}"
	fi
}

# poll PHASE CHECK...: run every CHECK (a shell function; status 0 when it holds,
# its output says why not) about once a second until all have held once or
# $PROM_DEADLINE seconds pass; each check that never held is a soft failure
# with its last output.
poll() {
	local phase=$1 deadline c out rc
	shift
	local pending=("$@") left
	declare -A why=()
	deadline=$(($(now_ms) + PROM_DEADLINE * 1000))
	while ((${#pending[@]})); do
		left=()
		for c in "${pending[@]}"; do
			rc=0
			out=$("$c" 2>&1) || rc=$?
			if ((rc == 0)); then
				note "$phase: $c: ${out//$'\n'/; }"
			else
				why[$c]=$out
				left+=("$c")
			fi
		done
		pending=("${left[@]}")
		((${#pending[@]})) || break
		require_alive
		alive "$PROM_PID" || fail "$phase: prometheus exited"
		if (($(now_ms) > deadline)); then
			for c in "${pending[@]}"; do
				soft_fail "$phase: $c (after ${PROM_DEADLINE}s): ${why[$c]}"
			done
			break
		fi
		sleep 1
	done
}

pc() {
	"${PC[@]}" "$@"
}

c_up() { pc up "$PROM_URL"; }

# names_ingested native|classic: Prometheus holds the names of expected_names.
names_ingested() {
	local -a n
	read -r -d '' -a n < <(expected_names "$1") || true
	pc names "$PROM_URL" "${n[@]}"
}
c_names_classic() { names_ingested classic; }
c_names_native() { names_ingested native; }

c_quantile_classic() {
	pc quantile "$PROM_URL" \
		'histogram_quantile(0.99, sum by (le, probe, op) (rate(iopulse_probe_latency_seconds_bucket{job="iopulse"}[1m])))' \
		"${PROBE_OPS[@]}"
}

c_quantile_native() {
	pc quantile "$PROM_URL" \
		'histogram_quantile(0.99, rate(iopulse_probe_latency_seconds{job="iopulse"}[1m]))' \
		"${PROBE_OPS[@]}"
}

c_count_native() {
	pc count-rate "$PROM_URL" \
		'histogram_count(rate(iopulse_probe_latency_seconds{job="iopulse"}[1m]))' \
		"${PROBE_OPS[@]}"
}

c_count_equals_ios() { pc count-equal "$PROM_URL" 20s; }

# same_series [--fold=HISTOGRAM]: the series Prometheus holds now are those of a
# text 0.0.4 scrape taken right after (with --fold, as native histograms).
same_series() {
	local p t f="$WORK/cmp.prom"
	p=$(pc prom-series "$PROM_URL") || {
		echo "$p"
		return 1
	}
	curl -fsS --max-time 5 -H "Accept: $ACCEPT_TEXT" -o "$f" "$(url /metrics)" || return 1
	t=$(pc series "$f" "$@") || return 1
	[[ $p == "$t" ]] && {
		echo "$(wc -l <<<"$p") series"
		return 0
	}
	diff_series "$p" "$t" Prometheus "text scrape"
	return 1
}
c_series_as_text() { same_series; }
c_series_native() { same_series --fold=iopulse_probe_latency_seconds; }

# (a) plain Prometheus: negotiates OpenMetrics, classic histograms.
start_prometheus
poll "plain prometheus" c_up c_names_classic c_quantile_classic c_series_as_text
stop_prometheus

# (b) native histograms: negotiates protobuf.
start_prometheus --enable-feature=native-histograms
poll "native-histogram prometheus" c_up c_names_native c_quantile_native c_count_native \
	c_count_equals_ios c_series_native
stop_prometheus

require_alive
if ((${#FAILURES[@]})); then
	msg="${#FAILURES[@]} check(s) failed:"
	for f in "${FAILURES[@]}"; do
		msg+=$'\n'"  - $f"
	done
	fail "$msg"
fi
stop_daemon TERM 5
note "pass"
