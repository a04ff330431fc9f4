#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Every exposition format carries valid UTF-8 only, whatever bytes the
# configuration holds (issue 28): Prometheus drops a whole scrape over one label
# value that is not UTF-8.
#
# The daemon runs on a hostile configuration: its target directory, reached
# through ${IOPULSE_HOSTILE_DIR}, is named with bytes that are not UTF-8 (a
# stray continuation byte, 0xff, a truncated sequence, a surrogate, an
# overlong '/'), control characters (tab, SOH, ESC, CR, newline), a double
# quote and a backslash, and a valid 'é'; its labels (the schema bars control
# characters, and YAML text is UTF-8) hold a quote, a backslash and odd but
# valid characters (U+2028, U+FEFF, an emoji).
#   - text 0.0.4 and OpenMetrics 1.0, each plain and gzip: valid UTF-8,
#     `promtool check metrics` passes, the path label is the path with U+FFFD
#     for each byte that is not part of valid UTF-8 (iopulse(8) METRICS),
#     escaped as the format requires, and the user label is as written;
#   - protobuf, plain and gzip: every string valid UTF-8, and its series (label
#     values decoded) those of a text page (promcheck.py pb);
#   - /status.json shows the same path;
#   - Prometheus ingests the scrapes, OpenMetrics and then protobuf (native
#     histograms on): up == 1, and the path and zone labels it stores are
#     the documented ones.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl promtool prometheus gzip
require_disk "$WORK"
[[ $WORK != *[\"\\]* ]] || skip "\$WORK ($WORK) holds a quote or a backslash"

PY=python3
[[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3
require_cmd "$PY"
PC=("$PY" "$SOURCE_DIR/tests/integration/promcheck.py")

ACCEPT_TEXT='text/plain;version=0.0.4'
ACCEPT_OM='application/openmetrics-text;version=1.0.0'
ACCEPT_PB='application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited'

R=$'\xef\xbf\xbd' # U+FFFD
# The directory's name, and what the path label must hold in its place: each
# byte that is not part of valid UTF-8 one U+FFFD, everything else kept.
NAME=$'d\x9b\xff"q\\b\t\x01\x1b\r\n\xe2\x82|\xc3\xa9|\xed\xa0\x80|\xc0\xaf'
WANT="d$R$R\"q\\b"$'\t\x01\x1b\r\n'"$R$R|"$'\xc3\xa9'"|$R$R$R|$R$R"
# WANT in a text or OpenMetrics label: backslash, quote and newline escaped.
WANT_TEXT="d$R$R\\\"q\\\\b"$'\t\x01\x1b\r'"\\n$R$R|"$'\xc3\xa9'"|$R$R$R|$R$R"
# The zone label as written in YAML, as it is, and as the text format escapes it.
ZONE_YAML='q\"b\\s \u2028 \ufeff \U0001F4BE'
ZONE=$'q"b\\s \xe2\x80\xa8 \xef\xbb\xbf \xf0\x9f\x92\xbe'
ZONE_TEXT=$'q\\"b\\\\s \xe2\x80\xa8 \xef\xbb\xbf \xf0\x9f\x92\xbe'

DIR="$WORK/$NAME"
mkdir "$DIR" 2>"$WORK/mkdir.err" ||
	skip "this filesystem refuses a name that is not UTF-8: $(cat "$WORK/mkdir.err")"
export IOPULSE_HOSTILE_DIR=$DIR

CFG="$WORK/iopulse.yaml"
cat >"$CFG" <<EOF
splay: false
targets:
  - name: t1
    directory: \${IOPULSE_HOSTILE_DIR}
    size: 1MiB
    max_duty_cycle: 100%
    max_write_per_day: 0
    labels:
      zone: "$ZONE_YAML"
probes:
  - name: p1
    type: ping
    target: t1
    interval: 100ms
EOF

# info_known: the target was opened (iopulse_target_info has its filesystem
# type: the series is not replaced again) and p1 has read.
info_known() {
	scraped 'iopulse_probe_ios_total{probe="p1",target="t1",op="read"}' '>' 0 0 &&
		LC_ALL=C grep -aq '^iopulse_target_info{.*,fstype="[^"]' "$PAGE"
}

start_daemon "$CFG"
wait_until 60 "t1 opened and p1 reading" info_known

# fetch NAME ACCEPT [gzip]: GET /metrics with that Accept header (and
# Accept-Encoding: gzip, the reply then required to be gzip) into $WORK/NAME,
# inflated; sets CT to its Content-Type.
fetch() {
	local out="$WORK/$1" hdr="$WORK/$1.headers" enc ae=()
	[[ ${3:-} == gzip ]] && ae=(-H 'Accept-Encoding: gzip')
	curl -fsS --max-time 30 -H "Accept: $2" "${ae[@]}" -D "$hdr" -o "$out.body" "$(url /metrics)" ||
		fail "GET /metrics (Accept: $2 ${3:-}) failed"
	CT=$(tr -d '\r' <"$hdr" | sed -n 's/^[Cc]ontent-[Tt]ype: //p')
	enc=$(tr -d '\r' <"$hdr" | sed -n 's/^[Cc]ontent-[Ee]ncoding: //p')
	if [[ ${3:-} == gzip ]]; then
		[[ $enc == gzip ]] || fail "$1: Content-Encoding '$enc', want gzip"
		gzip -dc <"$out.body" >"$out" 2>"$WORK/gzip.err" ||
			fail "$1: not a valid gzip member: $(cat "$WORK/gzip.err")"
	else
		[[ -z $enc ]] || fail "$1: Content-Encoding '$enc' without Accept-Encoding"
		mv "$out.body" "$out"
	fi
}

# has_line FILE WHAT STRING: FILE holds STRING (bytes, on one line).
has_line() {
	LC_ALL=C grep -aqF -- "$3" "$1" ||
		fail "$(basename "$1"): no $2 $(printf '%q' "$3"); its iopulse_target_info:"$'\n'"$(LC_ALL=C grep -a '^iopulse_target_info{' "$1" | cat -A)"
}

# ---- text and OpenMetrics, plain and gzip --------------------------------------

# lint_clean PAGE text|om: `promtool check metrics` parses PAGE (the check that fails on
# a label value that is not UTF-8, status 1) and finds nothing wrong in it.
# promtool 2.42 reads the text format only: on an OpenMetrics page it takes a
# counter's FAMILY_total samples for a family of their own, without the HELP of
# FAMILY ("FAMILY_total no help text", status 3). That finding, for a family the
# page declares a counter, is the one it may make on a page said to be "om".
lint_clean() {
	local rc=0 lint line fam
	lint=$(promtool check metrics <"$1" 2>&1) || rc=$?
	((rc == 0 || rc == 3)) || fail "$(basename "$1"): promtool check metrics failed ($rc):"$'\n'"$lint"
	while IFS= read -r line; do
		[[ -n $line ]] || continue
		fam=${line% no help text}
		fam=${fam%_total}
		if [[ $2 != om || $line != *"_total no help text" ]] ||
			! grep -qxF "# TYPE $fam counter" "$1"; then
			fail "$(basename "$1"): promtool check metrics has findings:"$'\n'"$lint"
		fi
	done <<<"$lint"
}

for page in text text.gz om om.gz; do
	format=${page%.gz} accept=$ACCEPT_TEXT om=() gz=
	if [[ $format == om ]]; then
		accept=$ACCEPT_OM om=(--om)
	fi
	[[ $page == "$format" ]] || gz=gzip
	fetch "$page" "$accept" "$gz"
	# Every byte UTF-8 (and, for OpenMetrics, '# EOF' last).
	out=$("${PC[@]}" series "$WORK/$page" "${om[@]}" 2>&1) || fail "$page ($CT): $out"
	lint_clean "$WORK/$page" "$format"
	has_line "$WORK/$page" "path label" "path=\"$WORK/$WANT_TEXT\""
	has_line "$WORK/$page" "zone label" "zone=\"$ZONE_TEXT\""
	note "$page ($CT): valid UTF-8, promtool clean, path and zone as documented"
done

# ---- protobuf, plain and gzip -------------------------------------------------

# check_pb NAME [gzip]: a protobuf page whose strings are all UTF-8 and whose
# series are those of a text page fetched right after it (a series may appear
# between two scrapes, a first HTTP status code: tried 3 times).
check_pb() {
	local out
	for _ in 1 2 3; do
		fetch "$1" "$ACCEPT_PB" "${2:-}"
		[[ $CT == application/vnd.google.protobuf* ]] || fail "$1: Content-Type '$CT', want protobuf"
		fetch "$1.prom" "$ACCEPT_TEXT"
		if out=$("${PC[@]}" pb "$WORK/$1" "$WORK/$1.prom" 2>&1); then
			note "$1: $out, label values those of the text page"
			return 0
		fi
		sleep 0.3
	done
	fail "$1: $out"
}
check_pb pb
check_pb pb.gz gzip
# And the path's bytes are there as documented (not only decodable).
"$PY" -c 'import sys
body, want = open(sys.argv[1], "rb").read(), sys.argv[2].encode("utf-8", "surrogateescape")
sys.exit(want not in body)' "$WORK/pb" "$WORK/$WANT" || fail "pb: the path label is not the documented value"

# ---- /status.json: the same path ------------------------------------------------

curl -fsS --max-time 30 -o "$WORK/status.json" "$(url /status.json)" || fail "GET /status.json failed"
"$PY" -c 'import json, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"))
path = [t["path"] for t in doc["targets"] if t["name"] == "t1"]
want = sys.argv[2].encode("utf-8", "surrogateescape").decode("utf-8")
sys.exit(0 if path == [want] else f"/status.json path {path!r}, want {want!r}")' \
	"$WORK/status.json" "$WORK/$WANT" || fail "/status.json does not show the path the metrics show"
note "/status.json: the same path"

# ---- Prometheus: OpenMetrics, then protobuf -----------------------------------------

# stored LABEL VALUE: Prometheus stores t1's iopulse_target_info with LABEL VALUE.
stored() {
	local got
	got=$("${PC[@]}" label "$PROM_URL" 'iopulse_target_info{target="t1"}' "$1") || return 1
	[[ $got == "$2" ]]
}

for mode in OpenMetrics protobuf; do
	if [[ $mode == protobuf ]]; then
		start_prometheus --enable-feature=native-histograms
	else
		start_prometheus
	fi
	wait_until 60 "Prometheus ($mode) to scrape iopulse: up == 1" "${PC[@]}" up "$PROM_URL"
	wait_until 60 "Prometheus ($mode) to store the path label" stored path "$WORK/$WANT"
	wait_until 60 "Prometheus ($mode) to store the zone label" stored zone "$ZONE"
	if [[ $mode == protobuf ]]; then
		# Scraped as protobuf indeed: the histogram is native, its classic series dropped.
		wait_until 60 "Prometheus to ingest native histograms" "${PC[@]}" names "$PROM_URL" \
			iopulse_probe_latency_seconds --absent iopulse_probe_latency_seconds_bucket
	fi
	note "Prometheus ($mode): up == 1, path and zone stored as documented"
	stop_prometheus
done

require_alive
stop_daemon
