#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A directory target whose only probe is a verify probe needs no probe file: the
# verify probe keeps its blocks in a file of its own. The daemon must not create,
# lay out or open .iopulse-probe there (64MiB written for nothing on the disk
# being watched), and leave one an older run left alone; the target is up all
# the same and the verify probe runs. The directory is still pinned: one put in
# its place takes the target down, said once in plain words, and nothing is
# created in it; the original back, the target is up again.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

require_cmd curl stat sha256sum
require_disk "$WORK"

DIR="$WORK/target"
CFG="$WORK/iopulse.yaml"
UP='iopulse_target_up{target="t1"}'
CHECKED='iopulse_verify_blocks_checked_total{probe="v1",target="t1"}'
DOWN='iopulse_probe_errors_total{probe="v1",target="t1",reason="target_down"}'

mkdir -p "$DIR"
target_config "$CFG" "$DIR" 64MiB
cat >>"$CFG" <<CFGEOF
  - name: v1
    type: verify
    target: t1
    interval: 1s
    blocks: 2
    blocks_per_run: 1
CFGEOF

# entries DIR: what DIR holds, one name per line ("" when empty).
entries() {
	ls -A "$1"
}

start_daemon "$CFG"
wait_until 60 "$UP 1" scraped "$UP" == 1
wait_until 60 "blocks checked" scraped "$CHECKED" '>=' 4
[[ $(entries "$DIR") == .iopulse-verify.v1 ]] ||
	fail "the directory holds '$(entries "$DIR")', want only .iopulse-verify.v1"
stop_daemon TERM 5
note "verify only: up, blocks checked, no .iopulse-probe"

# An older run's probe file (a ping was configured then): not touched.
head -c 8192 /dev/urandom >"$DIR/.iopulse-probe"
OLD=$(sha256sum <"$DIR/.iopulse-probe"; stat -c '%i %s %Y' "$DIR/.iopulse-probe")
start_daemon "$CFG"
wait_until 60 "$UP 1 beside an older probe file" scraped "$UP" == 1
sample_into before "$PAGE" "$CHECKED"
wait_until 60 "blocks checked beside an older probe file" scraped "$CHECKED" '>' "$before"
[[ $(sha256sum <"$DIR/.iopulse-probe"; stat -c '%i %s %Y' "$DIR/.iopulse-probe") == "$OLD" ]] ||
	fail "an older run's .iopulse-probe was touched"
if grep -q "\.iopulse-probe[^.]" "$DAEMON_LOG"; then
	fail "the log mentions .iopulse-probe"
fi
rm "$DIR/.iopulse-probe"
note "an older run's .iopulse-probe left alone"

# The directory replaced: down, once, and the new one stays empty.
mv "$DIR" "$WORK/target.moved"
mkdir "$DIR"
wait_until 60 "$UP 0 with the directory replaced" scraped "$UP" == 0
wait_until 60 "the log to say the directory was replaced" grep -q "it was replaced" "$DAEMON_LOG"
wait_until 60 "$DOWN counted" scraped "$DOWN" '>' 0
# Two more runs that found it down, each of which would have made its file there.
sample_into down "$PAGE" "$DOWN"
wait_until 60 "two more runs with the directory replaced" scraped "$DOWN" '>=' $((${down%.*} + 2))
[[ -z $(entries "$DIR") ]] || fail "iopulse created files in the new directory: $(entries "$DIR")"
n=$(grep -c "Target t1 is down" "$DAEMON_LOG" || true)
((n == 1)) || fail "$n 'is down' lines for one replacement"
rmdir "$DIR"
mv "$WORK/target.moved" "$DIR"
wait_until 60 "$UP 1 with the directory back" scraped "$UP" == 1
sample_into before "$PAGE" "$CHECKED"
wait_until 60 "blocks checked again" scraped "$CHECKED" '>' "$before"
[[ $(entries "$DIR") == .iopulse-verify.v1 ]] ||
	fail "the directory holds '$(entries "$DIR")', want only .iopulse-verify.v1"
note "replaced: down once, nothing created; back: up again"
stop_daemon
