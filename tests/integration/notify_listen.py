#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""notify_listen.py ADDR OUT: the service manager's end of NOTIFY_SOCKET.

Binds an AF_UNIX datagram socket at ADDR ("@name" for the abstract namespace)
and appends one line per message to OUT: CLOCK_MONOTONIC seconds, a tab, and the
message's fields joined by ';'. Creates OUT (empty) once bound, so a test can
wait for it before starting the daemon. Runs until killed."""
import os
import socket
import sys
import time

addr, out = sys.argv[1], sys.argv[2]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
sock.bind("\0" + addr[1:] if addr.startswith("@") else addr)
with open(out + ".tmp", "w"):
    pass
os.rename(out + ".tmp", out)
with open(out, "a", buffering=1) as f:
    while True:
        msg = sock.recv(65536).decode("utf-8", "replace")
        fields = [x for x in msg.split("\n") if x]
        f.write("%.6f\t%s\n" % (time.monotonic(), ";".join(fields)))
