#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: the real daemon pings a directory target (a read ping and a write
# ping with fdatasync, 100ms apart) and serves /metrics on a free loopback port.
# The page must lint clean with promtool, counters must grow, every latency
# histogram must be internally consistent and match the I/O counters, the HTTP
# routes must answer as documented, and the probe file must be fully laid out
# with non-zero data.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

require_cmd curl promtool cmp stat gzip
require_disk "$WORK"

SIZE=$((8 << 20))
DIR="$WORK/target"
CFG="$WORK/iopulse.yaml"
ping_config "$CFG" "$DIR" 8MiB write

start_daemon "$CFG"

READ='{probe="p1",target="t1",op="read"}'
WRITE='{probe="w1",target="t1",op="write"}'
SYNC='{probe="w1",target="t1",op="fdatasync"}'

ios_read_positive() {
	scrape_metrics
	local v
	sample_or v 0 "$PAGE" "iopulse_probe_ios_total$READ"
	num "$v" '>' 0
}
wait_until 60 "first read ping counted in iopulse_probe_ios_total$READ" ios_read_positive

# ---- several scrapes about a second apart ----------------------------------

prev=
prev_ms=
first=
first_ms=
for i in 1 2 3 4; do
	sleep 1
	require_alive
	scrape_metrics
	t=$(now_ms)
	sample_into ios "$PAGE" "iopulse_probe_ios_total$READ"
	note "scrape $i: ios_total$READ = $ios"
	if [[ -n $prev ]]; then
		num "$ios" '>' "$prev" ||
			fail "iopulse_probe_ios_total$READ did not grow in $((t - prev_ms))ms: $prev -> $ios"
	else
		first=$ios
		first_ms=$t
	fi
	prev=$ios
	prev_ms=$t

	check_histograms "$PAGE" ||
		fail "histogram inconsistent in scrape $i ($PAGE):"$'\n'"$HIST_FINDINGS"

	lint=$(promtool check metrics <"$PAGE" 2>&1) || fail "promtool check metrics failed on scrape $i:"$'\n'"$lint"
	[[ -z $lint ]] || fail "promtool check metrics has findings on scrape $i:"$'\n'"$lint"
done

# A 100ms ping over the elapsed time: at most one per interval (plus slack for
# the scrape boundaries); a runaway loop or a burst of catch-up pings shows here.
elapsed=$((prev_ms - first_ms))
delta=$(awk -v a="$first" -v b="$prev" 'BEGIN { print b - a }')
max=$((elapsed / 100 + 5))
num "$delta" '<=' "$max" || fail "$delta read pings in ${elapsed}ms at a 100ms interval (max $max)"

# ---- the last page: the series the spec names -----------------------------

note "series checked: $(echo "$HIST_SERIES" | tr '\n' ' ')"
for s in "$READ" "$WRITE" "$SYNC"; do
	grep -qxF "${s:1:${#s}-2}" <<<"$HIST_SERIES" || fail "no latency histogram for $s"
	sample_into v "$PAGE" "iopulse_probe_ios_total$s"
	num "$v" '>' 0 || fail "iopulse_probe_ios_total$s is $v"
done
for s in "$READ" "$WRITE"; do
	sample_into v "$PAGE" "iopulse_probe_bytes_total$s"
	num "$v" '>' 0 || fail "iopulse_probe_bytes_total$s is $v"
done
now_s=$(($(now_ms) / 1000))
for p in p1 w1; do
	sample_into v "$PAGE" "iopulse_probe_runs_total{probe=\"$p\",target=\"t1\"}"
	num "$v" '>' 0 || fail "iopulse_probe_runs_total of $p is $v"
	sample_into v "$PAGE" "iopulse_probe_last_run_timestamp_seconds{probe=\"$p\",target=\"t1\"}"
	if ! num "$v" ">" $((now_s - 30)) || ! num "$v" "<=" $((now_s + 5)); then
		fail "iopulse_probe_last_run_timestamp_seconds of $p is $v, now is $now_s"
	fi
done
sample_into v "$PAGE" 'iopulse_target_up{target="t1"}'
num "$v" '==' 1 || fail "iopulse_target_up{target=\"t1\"} is $v"

grep -q '^iopulse_build_info{version="[^"]\+",revision="[^"]\+"} 1$' "$PAGE" ||
	fail "no iopulse_build_info{version,revision} 1 in $PAGE"
version=$(sed -n 's/^iopulse_build_info{version="\([^"]*\)".*/\1/p' "$PAGE")
vout=$("$IOPULSE" version) || fail "iopulse version failed"
grep -qF -- "$version" <<<"$vout" || fail "build_info version '$version' not in 'iopulse version': $vout"
for m in process_cpu_seconds_total process_resident_memory_bytes process_start_time_seconds \
	process_open_fds process_max_fds process_virtual_memory_bytes; do
	grep -q "^$m [0-9]" "$PAGE" || fail "no $m sample in $PAGE"
done

# ---- HTTP routes -----------------------------------------------------------

ct=$(curl -sS -o /dev/null --max-time 5 -w '%{content_type}' "$(url /metrics)") ||
	fail "GET /metrics failed"
[[ $ct == 'text/plain; version=0.0.4; charset=utf-8' ]] || fail "Content-Type of /metrics is '$ct'"

code=$(http_status GET /healthz)
[[ $code == 200 ]] || fail "GET /healthz: status $code, want 200"
body=$(scrape /healthz) || fail "GET /healthz failed"
[[ $body == ok ]] || fail "GET /healthz body is '$body', want 'ok'"

landing=$(scrape /) || fail "GET / failed"
grep -qiE "href=[\"']?/?metrics[\"' >]" <<<"$landing" || fail "landing page has no link to /metrics:"$'\n'"$landing"

code=$(http_status POST /metrics)
[[ $code == 405 ]] || fail "POST /metrics: status $code, want 405"
code=$(http_status GET /nope)
[[ $code == 404 ]] || fail "GET /nope: status $code, want 404"
code=$(http_status HEAD /metrics)
[[ $code == 200 ]] || fail "HEAD /metrics: status $code, want 200"

# ---- gzip, the formats interleaved -----------------------------------------

# The recent-latency gauges appear once an op's first minute has passed: wait
# for them, so that the families of two pages fetched back to back are those of
# one daemon state (the baseline ones come after baseline_warmup, 10m, past the
# test's end).
recent_all() {
	local s
	scrape_metrics
	for s in "$READ" "$WRITE" "$SYNC"; do
		has_series "$PAGE" "iopulse_probe_latency_recent_seconds{${s:1:${#s}-2},percentile=\"50\"}" || return 1
	done
}
wait_until 180 "iopulse_probe_latency_recent_seconds for every op" recent_all

# Each format keeps its last page and its compressed families (gzpage), and the
# heap is trimmed after every reply (issue 15): text and OpenMetrics, gzipped
# and not, in turn on connections of their own, must each inflate to a page
# with the same families, in the same order, as the same format's plain page
# fetched right after it; the text ones lint clean and OpenMetrics ends in EOF.
OM='application/openmetrics-text;version=1.0.0'
type_lines() { grep '^# TYPE ' "$1"; }
for i in 1 2 3 4 5 6; do
	for kind in text om; do
		accept='text/plain;version=0.0.4'
		[[ $kind == om ]] && accept=$OM
		gz="$WORK/scrape.$kind.gz" unz="$WORK/scrape.$kind.unz" plain="$WORK/scrape.$kind.prom"
		enc=$(curl -fsS --max-time 5 -H "Accept: $accept" -H 'Accept-Encoding: gzip' -o "$gz" \
			-D - "$(url /metrics)" | tr -d '\r' | sed -n 's/^[Cc]ontent-[Ee]ncoding: //p') ||
			fail "GET /metrics ($kind, gzip) failed"
		[[ $enc == gzip ]] || fail "$kind scrape $i: Content-Encoding '$enc', want gzip"
		gzip -dc <"$gz" >"$unz" 2>"$WORK/gzip.err" ||
			fail "$kind scrape $i: not a valid gzip member: $(cat "$WORK/gzip.err")"
		curl -fsS --max-time 5 -H "Accept: $accept" -o "$plain" "$(url /metrics)" ||
			fail "GET /metrics ($kind) failed"
		[[ $(type_lines "$unz") == "$(type_lines "$plain")" ]] ||
			fail "$kind scrape $i: the gzipped page's families differ from the plain page's:"$'\n'"$(diff <(type_lines "$unz") <(type_lines "$plain"))"
		if [[ $kind == text ]]; then
			lint=$(promtool check metrics <"$unz" 2>&1) ||
				fail "promtool check metrics failed on gzipped scrape $i:"$'\n'"$lint"
			[[ -z $lint ]] || fail "promtool check metrics has findings on gzipped scrape $i:"$'\n'"$lint"
		else
			[[ $(tail -n 1 "$unz") == '# EOF' ]] || fail "om scrape $i: the gzipped page does not end with '# EOF'"
		fi
	done
done
note "gzip: 6 rounds of text and OpenMetrics, gzipped and not, inflate to the plain pages' families"

# ---- the probe file --------------------------------------------------------

PROBE="$DIR/.iopulse-probe"
[[ -f $PROBE && ! -L $PROBE ]] || fail "no regular file $PROBE"
read -r blocks bsize fsize < <(stat -c '%b %B %s' "$PROBE")
((fsize == 4096 + SIZE)) || fail "$PROBE is $fsize bytes, want $((4096 + SIZE)) (4096 header + 8MiB)"
((blocks * bsize >= fsize)) || fail "$PROBE is sparse: $((blocks * bsize)) bytes allocated of $fsize"
# Random data everywhere, not only where pings happened to write: every MiB of the
# data area differs from zeros (the header alone would make a whole-file cmp differ).
for ((mib = 0; mib < SIZE >> 20; mib++)); do
	rc=0
	cmp -s -i "$((4096 + (mib << 20))):0" -n $((1 << 20)) "$PROBE" /dev/zero || rc=$?
	((rc == 1)) || fail "MiB $mib of the data area of $PROBE is all zeros (cmp status $rc)"
done
rc=0
cmp -s -n "$fsize" "$PROBE" /dev/zero || rc=$?
((rc == 1)) || fail "$PROBE is all zeros (cmp status $rc)"

stop_daemon TERM 5
note "pass"
