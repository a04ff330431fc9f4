#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""listen_fds.py PORT_FILE COUNT KIND PROGRAM [ARGS...]: socket activation as
systemd does it.

Opens COUNT sockets on 127.0.0.1 with a free port each (KIND "tcp": listening
stream sockets; "udp": datagram sockets, which a daemon must refuse), writes the
first one's port to PORT_FILE, places them at descriptors 3, 4, ..., sets
LISTEN_FDS=COUNT and LISTEN_PID to this process's pid, and execs PROGRAM, which
keeps the pid, so LISTEN_PID names the daemon itself."""
import os
import socket
import sys

port_file, count, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
argv = sys.argv[4:]
socks = []
for _ in range(count):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    if kind == "tcp":
        s.listen(64)
    socks.append(s)
with open(port_file, "w") as f:
    f.write("%d\n" % socks[0].getsockname()[1])
# Move them out of the way first, then into 3.. (a socket may already sit at 3).
tmp = [os.dup(s.fileno()) for s in socks]
for s in socks:
    s.close()
for i, fd in enumerate(tmp):
    os.dup2(fd, 3 + i, inheritable=True)
for fd in tmp:
    if fd >= 3 + count:
        os.close(fd)
env = dict(os.environ, LISTEN_FDS=str(count), LISTEN_PID=str(os.getpid()))
env.pop("LISTEN_FDNAMES", None)
os.execve(argv[0], argv, env)
