#!/bin/bash
# SPDX-License-Identifier: MIT
#
# iopulse never writes to a file it did not create. A `file:` target with a write
# ping is a configuration error for both `check` and `run` (exit 78, the message
# names file:line:column). A read ping on the same file reads it and leaves its
# contents, size, mtime and ctime exactly as they were; nothing is created next
# to it.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

require_cmd curl sha256sum stat timeout
require_disk "$WORK"

DATA="$WORK/data"
mkdir "$DATA"
USER_FILE="$DATA/user.bin"
dd if=/dev/urandom of="$USER_FILE" bs=1M count=4 status=none
# An mtime in the past, so that a rewrite within this second still shows.
touch -d '2020-02-02 02:02:02.123456789' "$USER_FILE"

fingerprint() {
	sha256sum <"$USER_FILE"
	stat -c 'size=%s mtime=%Y %y ctime=%z inode=%i mode=%a' "$USER_FILE"
	ls -A "$DATA"
}
BEFORE=$(fingerprint)
note "user file: ${BEFORE//$'\n'/; }"

require_unchanged() {
	local after
	after=$(fingerprint)
	[[ $after == "$BEFORE" ]] || fail "$1 changed the user file or its directory:"$'\n'"before: $BEFORE"$'\n'"after:  $after"
}

# ---- a write ping on a file target is refused ------------------------------

BAD="$WORK/write-on-file.yaml"
cat >"$BAD" <<EOF
targets:
  - name: f1
    file: $(yaml_str "$USER_FILE")
    max_duty_cycle: 100%
    max_write_per_day: 0
probes:
  - name: w1
    type: ping
    target: f1
    op: write
    interval: 100ms
EOF
nlines=$(wc -l <"$BAD")

rc=0
"$IOPULSE" check --config "$BAD" >"$WORK/check.out" 2>"$WORK/check.err" || rc=$?
DAEMON_LOGS+=("$WORK/check.err")
((rc == 78)) || fail "iopulse check of a write ping on a file target: status $rc, want 78"
pos=$(awk -v p="$BAD" 'index($0, p ":") == 1 {
		rest = substr($0, length(p) + 2)
		if (match(rest, /^[0-9]+:[0-9]+: /)) { split(rest, f, ":"); print f[1]; exit }
	}' "$WORK/check.err")
[[ -n $pos ]] || fail "no '$BAD:LINE:COLUMN: message' on stderr of iopulse check"
((pos >= 1 && pos <= nlines)) || fail "error line $pos is outside $BAD ($nlines lines)"
grep -qiE "never writes?\b.*(did not|didn't) create" "$WORK/check.err" ||
	fail "the error does not say that iopulse never writes files it did not create"
note "check says: $(head -n 3 "$WORK/check.err")"

rc=0
timeout 10 "$IOPULSE" run --config "$BAD" --listen 127.0.0.1:0 --log-level debug \
	>"$WORK/run-bad.log" 2>&1 || rc=$?
DAEMON_LOGS+=("$WORK/run-bad.log")
((rc == 78)) || fail "iopulse run of a write ping on a file target: status $rc, want 78"
grep -qF "$BAD:" "$WORK/run-bad.log" || fail "iopulse run did not name $BAD in its error"
require_unchanged "the refused configuration"

# ---- a read ping on it reads and changes nothing ---------------------------

CFG="$WORK/read-on-file.yaml"
cat >"$CFG" <<EOF
targets:
  - name: f1
    file: $(yaml_str "$USER_FILE")
    max_duty_cycle: 100%
    max_write_per_day: 0
probes:
  - name: r1
    type: ping
    target: f1
    op: read
    interval: 100ms
EOF
"$IOPULSE" check --config "$CFG" >/dev/null 2>"$WORK/check-ok.err" ||
	{ DAEMON_LOGS+=("$WORK/check-ok.err"); fail "iopulse check rejects a read ping on a file target"; }

start_daemon "$CFG"
sleep 2
require_alive
scrape_metrics
sample_into ios "$PAGE" 'iopulse_probe_ios_total{probe="r1",target="f1",op="read"}'
num "$ios" '>' 0 || fail "no reads counted on the file target after 2s (ios_total $ios)"
sample_into up "$PAGE" 'iopulse_target_up{target="f1"}'
num "$up" '==' 1 || fail "iopulse_target_up{target=\"f1\"} is $up, want 1"
sample_or writes 0 "$PAGE" 'iopulse_probe_ios_total{probe="r1",target="f1",op="write"}'
num "$writes" '==' 0 || fail "writes counted on a read-only file target: $writes"
note "$ios reads on the file target"
stop_daemon TERM 5

require_unchanged "reading the file target"
note "pass"
