#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""tls_flood.py PORT ADDRS CONNS SECONDS [STOP_FILE]: TLS handshakes, back to back.

From each source address of ADDRS (comma-separated; loopback only), a process
of its own (the client's half of a handshake must not be what limits the
flood) runs CONNS threads that each connect to 127.0.0.1:PORT, complete a TLS
handshake (the server's certificate is not checked: the server's work is the
same), close, and start again, until SECONDS have passed or STOP_FILE exists.
Prints "handshakes N failed M" (all addresses) at exit."""
import os
import socket
import ssl
import sys
import threading
import time

port, addrs, conns, secs = int(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3]), float(sys.argv[4])
stop_file = sys.argv[5] if len(sys.argv) > 5 else None
assert all(a.startswith("127.") for a in addrs), "loopback sources only"
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
lock = threading.Lock()
started = failed = 0
deadline = time.monotonic() + secs


def flood(addr):
    global started, failed
    while time.monotonic() < deadline:
        if stop_file and os.path.exists(stop_file):
            return
        with lock:
            started += 1
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10,
                                          source_address=(addr, 0)) as s:
                with ctx.wrap_socket(s) as t:
                    t.do_handshake()
        except (OSError, ssl.SSLError):
            with lock:
                failed += 1




def address(addr, w):
    threads = [threading.Thread(target=flood, args=(addr,)) for _ in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    os.write(w, f"{started} {failed}\n".encode())
    os._exit(0)


r, w = os.pipe()
pids = []
for a in addrs:
    pid = os.fork()
    if pid == 0:
        address(a, w)
    pids.append(pid)
os.close(w)
for pid in pids:
    os.waitpid(pid, 0)
with os.fdopen(r) as f:
    totals = [tuple(map(int, line.split())) for line in f]
print(f"handshakes {sum(t[0] for t in totals)} failed {sum(t[1] for t in totals)}")
