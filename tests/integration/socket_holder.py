#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""socket_holder.py: what systemd does with iopulse.socket, without systemd.

socket_holder.py hold PORT_FILE UNIX_PATH
    Listens on 127.0.0.1 at a free port and never accepts (the .socket unit),
    writes the port to PORT_FILE, then hands that one listening socket
    (SCM_RIGHTS) to every client of the Unix socket UNIX_PATH, until killed (or
    after 10 minutes without a client).
socket_holder.py pass UNIX_PATH PROGRAM [ARGS...]
    Gets the socket from the holder, places it at descriptor 3, sets LISTEN_FDS=1
    and LISTEN_PID to this process's pid, and execs PROGRAM, which keeps the pid:
    each instance of the service gets the same socket, as from systemd."""
import os
import socket
import sys


def hold(port_file, unix_path):
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(64)
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(unix_path)
    unix.listen(8)
    unix.settimeout(600)
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % tcp.getsockname()[1])
    # The rename makes the file appear whole.
    os.rename(port_file + ".tmp", port_file)
    while True:
        try:
            conn, _ = unix.accept()
        except socket.timeout:
            return
        with conn:
            socket.send_fds(conn, [b"s"], [tcp.fileno()])


def pass_to(unix_path, argv):
    with socket.socket(socket.AF_UNIX) as unix:
        unix.connect(unix_path)
        _, fds, _, _ = socket.recv_fds(unix, 1, 1)
    if fds[0] != 3:
        os.dup2(fds[0], 3)  # inheritable
        os.close(fds[0])
    else:
        os.set_inheritable(3, True)
    env = dict(os.environ, LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
    env.pop("LISTEN_FDNAMES", None)
    os.execve(argv[0], argv, env)


if sys.argv[1] == "hold":
    hold(sys.argv[2], sys.argv[3])
else:
    pass_to(sys.argv[2], sys.argv[3:])
