#!/bin/bash
# SPDX-License-Identifier: MIT
#
# SIGTERM and SIGINT stop the daemon cleanly: exit status 0 within 2 seconds,
# while pings are running (a write ping with fdatasync and a read ping, 100ms).

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl
require_disk "$WORK"

DIR="$WORK/target"
CFG="$WORK/iopulse.yaml"
ping_config "$CFG" "$DIR" 1MiB write

pinging() {
	local v
	scrape_metrics
	sample_or v 0 "$PAGE" 'iopulse_probe_ios_total{probe="w1",target="t1",op="write"}'
	num "$v" '>' 0
}

# The pings run on their default engine, sync: a stop must not wait for it either.
on_sync() {
	local p
	for p in p1 w1; do
		grep -q "^iopulse_probe_info{probe=\"$p\",.*engine=\"sync\"" "$PAGE" ||
			fail "ping $p does not run on sync:"$'\n'"$(grep '^iopulse_probe_info' "$PAGE")"
	done
}

for sig in TERM INT; do
	start_daemon "$CFG"
	wait_until 60 "write pings running before SIG$sig" pinging
	on_sync
	# The promise is a second (lanes get 0.8 s); 5 s allows for a loaded
	# machine and ASan's leak check at exit, and still fails a stop that waits
	# for anything (a keep-alive connection's 10 s, a ping that never ends).
	stop_daemon "$sig" 5
done
note "pass"
