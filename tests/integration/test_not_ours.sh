#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The README's promise, tried against the real daemon: iopulse never writes to,
# renames over or unlinks a name it did not create, never follows a path that
# changed under it, and never fills a disk.
#   A. the target directory is swapped for a symlink while it is measured
#      (another user's, then root's): the target goes down, nothing appears
#      where the symlink points, and it comes back when the directory does;
#   B. the target sits under a mount point listed in fstab (IOPULSE_FSTAB) that
#      is not mounted, or was lazily unmounted: down, nothing created beneath;
#      mounted, it comes up;
#   C. a probe file larger than the free space: nothing is written, the disk is
#      never filled, and the failure is retried with a backoff, not on every ping;
#   D. iopulse is SIGKILLed in the middle of a layout on a filesystem without
#      O_TMPFILE (hangfs): the next start removes the partial temporary it left,
#      and leaves a user's file named like one alone;
#   E. another directory's probe file (genuinely iopulse's: our user, our
#      header) hard-linked at .iopulse-probe and at a verify probe's
#      .iopulse-verify.NAME: both refused (the target down, then the verify
#      probe with reason target_down), the victim's bytes unchanged; so are a
#      symlink, a FIFO and another user's file put at .iopulse-verify.NAME.
#      Once the name is free iopulse makes its own file, and reuses both of
#      its files across a restart.

# shellcheck source=lib.sh disable=SC2154 # sample_into assigns by name
. "$(dirname "$0")/lib.sh"

require_cmd curl stat mount umount df sha256sum mkfifo cmp
require_disk "$WORK"

UP='iopulse_target_up{target="t1"}'
READS='iopulse_probe_ios_total{probe="p1",target="t1",op="read"}'
RUNS='iopulse_probe_runs_total{probe="p1",target="t1"}'

# entries DIR: what DIR holds, one name per line ("" when empty).
entries() {
	ls -A "$1"
}

# ten_more_runs WHAT: wait until p1 has run ten more times than now. Each run of
# a target that is down tries it again: "nothing happened" means something only
# once the daemon made the attempts that would have done it, however slowly.
ten_more_runs() {
	local runs
	scrape_metrics
	sample_into runs "$PAGE" "$RUNS"
	wait_until 60 "ten more runs of p1 $1" scraped "$RUNS" '>=' $((${runs%.*} + 10))
}

# require_comes_up WHAT: target up and reads growing within 10s.
require_comes_up() {
	local ios
	wait_until 60 "$UP 1 after $1" scraped "$UP" == 1
	wait_until 60 "reads counted after $1" scraped "$READS" '>' 0 0
	sample_into ios "$PAGE" "$READS"
	wait_until 60 "reads growing after $1" scraped "$READS" '>' "$ios" 0
	note "after $1: up, reads growing"
}

# ---- A. a symlink swapped in ------------------------------------------------

BASE="$WORK/a"
DIR="$BASE/data"
OTHER="$WORK/elsewhere"
mkdir -p "$BASE" "$OTHER"
ping_config "$WORK/a.yaml" "$DIR" 1MiB write
start_daemon "$WORK/a.yaml"
require_comes_up "start"

# Another user's symlink (as an attacker would plant one), then root's own: the
# first is never followed, the second leads elsewhere than the pinned directory.
mv "$DIR" "$BASE/data.moved"
ln -s "$OTHER" "$DIR"
chown -h 65534 "$DIR"
wait_until 60 "$UP 0 with a symlink swapped in" scraped "$UP" == 0
# A ping may fall between the mv and the ln (no such directory): the outage is
# logged once, and its later reasons at debug level, which the tests run at.
wait_until 60 "the log to say the path is now somebody's symlink" \
	grep -q "is a symlink owned by uid 65534" "$DAEMON_LOG"
ten_more_runs "with the symlink in place" # none may reach the other directory
[[ -z $(entries "$OTHER") ]] || fail "iopulse created files where the symlink points: $(entries "$OTHER")"
rm "$DIR"
ln -s "$OTHER" "$DIR"
wait_until 60 "the log to say the directory was replaced" grep -q "it was replaced" "$DAEMON_LOG"
scrape_metrics
sample_into v "$PAGE" "$UP"
num "$v" == 0 || fail "$UP is $v with root's symlink to another directory"
[[ -z $(entries "$OTHER") ]] || fail "iopulse created files where root's symlink points: $(entries "$OTHER")"
note "symlinks swapped in: down, $OTHER untouched"

rm "$DIR"
mv "$BASE/data.moved" "$DIR"
require_comes_up "the directory came back"
stop_daemon TERM 5
[[ -z $(entries "$OTHER") ]] || fail "files in $OTHER: $(entries "$OTHER")"

# ---- B. a mount point in fstab that is not mounted ----------------------------

FMNT="$WORK/fstab-mnt"
SUB="$FMNT/iopulse"
mkdir -p "$SUB"
printf '# test fstab\n/dev/disk/by-label/data  %s  ext4  defaults,nofail  0  2\n' "$FMNT" >"$WORK/fstab"
ping_config "$WORK/b.yaml" "$SUB" 1MiB write "allow_memory_backed: true"
IOPULSE_FSTAB="$WORK/fstab" start_daemon "$WORK/b.yaml"
wait_until 60 "$UP 0 with $FMNT not mounted" scraped "$UP" == 0
ten_more_runs "with $FMNT not mounted"
[[ -z $(entries "$SUB") ]] || fail "iopulse created files beneath the unmounted $FMNT: $(entries "$SUB")"
grep -q "is not mounted" "$DAEMON_LOG" || fail "the log does not say $FMNT is not mounted"
note "fstab mount point not mounted: down, nothing created beneath"

mount_tmpfs "$FMNT" 16m
mkdir "$SUB"
require_comes_up "mounting $FMNT"
stop_daemon TERM 5

# Lazily unmounted while busy, before iopulse ever saw it: the same refusal.
exec 9<"$SUB/.iopulse-probe" # keeps it busy: only a lazy unmount detaches it
umount -l "$FMNT"
exec 9<&-
[[ -d $SUB ]] || mkdir "$SUB" # the directory beneath, as a provisioning script might make
IOPULSE_FSTAB="$WORK/fstab" start_daemon "$WORK/b.yaml"
wait_until 60 "$UP 0 with $FMNT lazily unmounted" scraped "$UP" == 0
ten_more_runs "with $FMNT lazily unmounted"
[[ -z $(entries "$SUB") ]] || fail "iopulse created files beneath the lazily unmounted $FMNT: $(entries "$SUB")"
stop_daemon TERM 5
note "lazily unmounted before start: down, nothing created beneath"

# ---- C. no room for the probe file ------------------------------------------------

SMALL="$WORK/small"
mkdir "$SMALL"
mount_tmpfs "$SMALL" 16m
free_kib() {
	df --output=avail -k "$SMALL" | tail -n 1 | tr -d ' '
}
BEFORE=$(free_kib)
target_config "$WORK/d.yaml" "$SMALL" 32MiB "allow_memory_backed: true"
ping_item "$WORK/d.yaml" p1 read "interval: 100ms"
T_START=$(now_ms)
start_daemon "$WORK/d.yaml"
min=$BEFORE tries=0
# Free space sampled for 3s of 100ms pings and until the refusal is logged
# (however late a busy machine gets the daemon there).
for ((i = 0; i < 30 || tries == 0; i++)); do
	f=$(free_kib)
	((f < min)) && min=$f
	tries=$(grep -c "keep_free" "$DAEMON_LOG" || true)
	((i < 600)) || fail "no layout attempt logged in 60s"
	sleep 0.1
done
scrape_metrics
sample_into v "$PAGE" "$UP"
num "$v" == 0 || fail "$UP is $v with no room for the probe file"
((min >= BEFORE - 64)) || fail "free space fell from ${BEFORE}KiB to ${min}KiB: iopulse wrote to a disk without room"
[[ -z $(entries "$SMALL") ]] || fail "files left on the full filesystem: $(entries "$SMALL")"
# The backoff: at most one attempt per 10s since launch (the test's clock
# bounds the daemon's from above), against one per 100ms ping without it.
tries=$(grep -c "keep_free" "$DAEMON_LOG" || true)
elapsed=$(($(now_ms) - T_START))
((tries >= 1 && tries <= 1 + elapsed / 10000)) ||
	fail "$tries layout attempts logged in ${elapsed}ms of 100ms pings, want one per 10s at most (backoff)"
grep -q "keep_free" "$DAEMON_LOG" || fail "the log does not say why the layout was refused"
stop_daemon TERM 5
note "no room: nothing written (free ${BEFORE}KiB, lowest ${min}KiB), $tries attempt(s) in ${elapsed}ms"
# ---- E. hard links, and what else may be planted at a verify file's name ------

VICTIM_DIR="$WORK/other"
VICTIM="$VICTIM_DIR/.iopulse-probe"
ping_config "$WORK/e0.yaml" "$VICTIM_DIR" 1MiB write
start_daemon "$WORK/e0.yaml"
require_comes_up "start on $VICTIM_DIR"
stop_daemon TERM 5
victim_print() {
	sha256sum <"$VICTIM"
	stat -c 'size=%s mtime=%y inode=%i' "$VICTIM"
}
VICTIM_BEFORE=$(victim_print)
# victim_unchanged WHEN: the other directory's probe file is exactly as it was.
victim_unchanged() {
	[[ $(victim_print) == "$VICTIM_BEFORE" ]] ||
		fail "$1: $VICTIM changed: was '$VICTIM_BEFORE', now '$(victim_print)'"
}

EDIR="$WORK/e"
VF="$EDIR/.iopulse-verify.v"
ping_config "$WORK/e.yaml" "$EDIR" 1MiB
cat >>"$WORK/e.yaml" <<EOF
  - name: v
    type: verify
    target: t1
    interval: 1s
    blocks: 2
    blocks_per_run: 1
EOF
ln "$VICTIM" "$EDIR/.iopulse-probe"
ln "$VICTIM" "$VF"
start_daemon "$WORK/e.yaml"
wait_until 60 "the log to refuse the hard-linked .iopulse-probe" \
	grep -q "$EDIR/.iopulse-probe has 3 hard links" "$DAEMON_LOG"
scrape_metrics
sample_into v "$PAGE" "$UP"
num "$v" == 0 || fail "$UP is $v with a hard link at .iopulse-probe"
victim_unchanged "a hard link at .iopulse-probe"
note "a hard link at .iopulse-probe: refused, target down"

VDOWN='iopulse_probe_errors_total{probe="v",target="t1",reason="target_down"}'
VCHECKED='iopulse_verify_blocks_checked_total{probe="v",target="t1"}'
rm "$EDIR/.iopulse-probe" # the target comes up on a file of its own
require_comes_up "the hard link at .iopulse-probe removed"
wait_until 60 "the log to refuse the hard-linked verify file" \
	grep -q "Probe v: $VF has 2 hard links" "$DAEMON_LOG"
wait_until 60 "$VDOWN counted" scraped "$VDOWN" '>' 0
victim_unchanged "a hard link at $VF"
note "a hard link at $VF: refused"

# Each put in place of the last at once (rename), so the name is never free.
ln -s "$VICTIM" "$VF.new"
mv -T "$VF.new" "$VF"
wait_until 60 "the log to refuse the symlink" grep -q "Probe v: $VF is a symlink" "$DAEMON_LOG"
mkfifo "$VF.new"
mv -T "$VF.new" "$VF"
wait_until 60 "the log to refuse the FIFO" \
	grep -q "Probe v: $VF exists and is not a regular file" "$DAEMON_LOG"
cp "$VICTIM" "$VF.new"
chown 65534 "$VF.new"
mv -T "$VF.new" "$VF"
wait_until 60 "the log to refuse another user's file" \
	grep -q "Probe v: $VF is owned by uid 65534" "$DAEMON_LOG"
cmp -s "$VICTIM" "$VF" || fail "another user's file at $VF changed"
victim_unchanged "a symlink, a FIFO, another user's file at $VF"
scrape_metrics
sample_or checked 0 "$PAGE" "$VCHECKED"
num "$checked" == 0 || fail "$VCHECKED is $checked while nothing of ours was at $VF"
note "a symlink, a FIFO, another user's file at $VF: refused"

# The name free: a file of its own, made once and kept across a restart.
rm "$VF"
wait_until 60 "blocks checked in a verify file of our own" scraped "$VCHECKED" '>' 0
stop_daemon TERM 5
OWN=$(stat -c %i "$EDIR/.iopulse-probe" "$VF")
start_daemon "$WORK/e.yaml"
require_comes_up "restart"
wait_until 60 "blocks checked after the restart" scraped "$VCHECKED" '>' 0
sample_or v 0 "$PAGE" "$VDOWN"
num "$v" == 0 || fail "$VDOWN is $v after a restart with the verify file of our own"
[[ $(stat -c %i "$EDIR/.iopulse-probe" "$VF") == "$OWN" ]] ||
	fail "iopulse did not reuse its own files across a restart"
stop_daemon TERM 5
victim_unchanged "the end"
note "own files reused across a restart; $VICTIM untouched throughout"

# ---- D. SIGKILL during a layout without O_TMPFILE ----------------------------

# hangfs has no O_TMPFILE, so iopulse lays out under a temporary name there.
# shellcheck source=hangfs.sh
. "$(dirname "$0")/hangfs.sh"
hangfs_mount
USER_TMP="$BACKING/.iopulse-probe.tmp.$$"
echo "a user's file" >"$USER_TMP"
target_config "$WORK/c.yaml" "$MNT" 32MiB "layout_rate: 4MiB"
ping_item "$WORK/c.yaml" p1 read "interval: 100ms"
start_daemon "$WORK/c.yaml"
partial() {
	local f
	for f in "$BACKING"/.iopulse-probe.tmp.*; do
		[[ $f != "$USER_TMP" && -f $f && $(stat -c %s "$f") -gt 4096 ]] && return 0
	done
	return 1
}
wait_until 60 "a partial temporary probe file in $BACKING" partial
kill -KILL "$DAEMON_PID"
reap "$DAEMON_PID" "daemon (SIGKILLed)"
_forget_pid "$DAEMON_PID"
left=$(find "$BACKING" -name '.iopulse-probe.tmp.*' ! -path "$USER_TMP" | wc -l)
((left == 1)) || fail "$left temporaries after SIGKILL, want 1: $(entries "$BACKING")"
note "SIGKILL mid-layout left $(entries "$BACKING" | tr '\n' ' ')"

target_config "$WORK/c2.yaml" "$MNT" 1MiB
ping_item "$WORK/c2.yaml" p1 read "interval: 100ms"
start_daemon "$WORK/c2.yaml"
require_comes_up "restart after SIGKILL"
grep -q "removed 1 temporary probe file" "$DAEMON_LOG" || fail "the restart does not log the removal"
stop_daemon TERM 5
after=$(entries "$BACKING" | sort | tr '\n' ' ')
want=$(printf '%s\n' .iopulse-probe "$(basename "$USER_TMP")" | sort | tr '\n' ' ')
[[ $after == "$want" ]] || fail "after the restart $BACKING holds '$after', want '$want'"
[[ $(cat "$USER_TMP") == "a user's file" ]] || fail "the user's file named like a temporary changed"
note "restart: the stale temporary removed, the user's file kept"

note "pass"
