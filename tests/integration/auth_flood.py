#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""auth_flood.py PORT USER:PASSWORD ADDRS PER_ADDR STATE_FILE [SECONDS [MAX]]

Floods http://127.0.0.1:PORT/metrics with basic auth USER:PASSWORD (a wrong
one, as an attacker guessing would) from each source address of ADDRS
(comma-separated; loopback only), PER_ADDR kept-alive connections each, every
connection sending its next request as soon as the last is answered (a
connection closed or refused is opened again at once). Writes STATE_FILE
(whole, by rename) at most every 0.2s and at exit: one line per address,
"ADDR CODE COUNT ..." for the status codes it got. Stops on SIGTERM or SIGINT,
after SECONDS (default 120) or after MAX requests in all (default 20000)."""
import base64
import http.client
import os
import signal
import sys
import threading
import time

port, cred = int(sys.argv[1]), sys.argv[2]
addrs, per_addr, state_file = sys.argv[3].split(","), int(sys.argv[4]), sys.argv[5]
limit_s = float(sys.argv[6]) if len(sys.argv) > 6 else 120.0
max_requests = int(sys.argv[7]) if len(sys.argv) > 7 else 20000
assert all(a.startswith("127.") for a in addrs), "loopback sources only"

stop = threading.Event()
lock = threading.Lock()
codes = {a: {} for a in addrs}
sent = 0
auth = "Basic " + base64.b64encode(cred.encode()).decode()


def on_signal(signum, frame):
    stop.set()


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)


def write_state():
    with lock:
        lines = [a + "".join(f" {c} {n}" for c, n in sorted(codes[a].items())) for a in addrs]
    tmp = state_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.rename(tmp, state_file)


def flood(addr):
    global sent
    conn = None
    while not stop.is_set():
        with lock:
            if sent >= max_requests:
                stop.set()
                break
            sent += 1
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30,
                                                  source_address=(addr, 0))
            conn.request("GET", "/metrics", headers={"Authorization": auth})
            resp = conn.getresponse()
            resp.read()
            code = str(resp.status)
            if resp.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException):
            code = "000"
            if conn is not None:
                conn.close()
            conn = None
        with lock:
            codes[addr][code] = codes[addr].get(code, 0) + 1
    if conn is not None:
        conn.close()


threads = [threading.Thread(target=flood, args=(a,), daemon=True)
           for a in addrs for _ in range(per_addr)]
for t in threads:
    t.start()
deadline = time.monotonic() + limit_s
while not stop.is_set() and time.monotonic() < deadline:
    write_state()
    stop.wait(0.2)
stop.set()
for t in threads:
    t.join(35)
write_state()
