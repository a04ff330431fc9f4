#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""hold_port.py PORT_FILE: another program holding a port.

Listens on 127.0.0.1 at a free port, writes the port to PORT_FILE and never
accepts a connection, until killed (or after 10 minutes)."""
import os
import socket
import sys
import time

s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
# The rename makes the file appear whole.
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
