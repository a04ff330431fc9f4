#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""flood.py PORT MODE COUNT ADDRS STATE_FILE [SECONDS]: hold COUNT connections.

Connects COUNT times to 127.0.0.1:PORT from the source addresses ADDRS
(comma-separated, taken in turn; loopback only) and holds the connections:
MODE "idle" sends nothing, "slowloris" sends a request line and then one byte of
an endless header every second, so the headers never end. A connection the
server closes is opened again a second later (as an attacker would), at most
100 * COUNT times in all. Writes STATE_FILE (whole, by rename) once every
connection was opened once, then at most every 0.2s while connections close,
and at exit: "opened N", "closed N" (by the server), and the seconds each of the
last 1000 closed connections lived ("lived S"). Stops on SIGTERM or SIGINT, or
after SECONDS (default 120); every connection is closed at exit."""
import errno
import os
import resource
import selectors
import signal
import socket
import sys
import time

port, mode, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
addrs, state_file = sys.argv[4].split(","), sys.argv[5]
limit_s = float(sys.argv[6]) if len(sys.argv) > 6 else 120.0
assert mode in ("idle", "slowloris")
assert all(a.startswith("127.") for a in addrs), "loopback sources only"

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < count + 64:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

stop = False


def on_signal(signum, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)

sel = selectors.DefaultSelector()
HEAD = b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
PAD = b"X-Pad: " + b"y" * 60 + b"\r\n"
opened = closed = 0
max_opens = 100 * count
lived = []
reopen = []  # (when, slot)
start = time.monotonic()


class Conn:
    def __init__(self, slot):
        self.slot = slot
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setblocking(False)
        try:
            self.sock.bind((addrs[slot % len(addrs)], 0))
        except OSError:
            self.sock.close()
            raise
        self.born = time.monotonic()
        # Spread the bytes over the second.
        self.next_send = self.born + 1.0 + (slot % 100) / 100.0
        self.pad = 0
        err = self.sock.connect_ex(("127.0.0.1", port))
        if err not in (0, errno.EINPROGRESS):
            self.sock.close()
            raise OSError(err, os.strerror(err))
        if mode == "slowloris":
            self.pending = HEAD
        else:
            self.pending = b""
        sel.register(self.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, self)

    def close(self):
        sel.unregister(self.sock)
        self.sock.close()


conns = {}


def open_slot(slot):
    global opened
    try:
        conns[slot] = Conn(slot)
        opened += 1
    except OSError:
        reopen.append((time.monotonic() + 1.0, slot))


def write_state(path):
    with open(path + ".tmp", "w") as f:
        f.write("opened %d\nclosed %d\n" % (opened, closed))
        for s in lived:
            f.write("lived %.3f\n" % s)
    os.rename(path + ".tmp", path)


for slot in range(count):
    open_slot(slot)
write_state(state_file)
written = time.monotonic()
dirty = False

while not stop and time.monotonic() - start < limit_s:
    now = time.monotonic()
    for key, ev in sel.select(timeout=0.05):
        c = key.data
        gone = False
        if ev & selectors.EVENT_READ:
            try:
                gone = c.sock.recv(4096) == b""
            except BlockingIOError:
                pass
            except OSError:
                gone = True
        if not gone and ev & selectors.EVENT_WRITE:
            try:
                if c.pending:
                    c.sock.send(c.pending)
                    c.pending = b""
                sel.modify(c.sock, selectors.EVENT_READ, c)
            except BlockingIOError:
                pass
            except OSError:
                gone = True
        if gone:
            closed += 1
            dirty = True
            lived.append(now - c.born)
            del lived[:-1000]
            c.close()
            del conns[c.slot]
            if opened < max_opens:
                reopen.append((now + 1.0, c.slot))
    if mode == "slowloris":
        for c in list(conns.values()):
            if now >= c.next_send:
                c.next_send = now + 1.0
                try:
                    c.sock.send(PAD[c.pad % len(PAD):c.pad % len(PAD) + 1])
                    c.pad += 1
                except (BlockingIOError, OSError):
                    pass
    due = [r for r in reopen if r[0] <= now]
    reopen = [r for r in reopen if r[0] > now]
    for _, slot in due:
        if opened < max_opens:
            open_slot(slot)
    if dirty and now - written >= 0.2:
        write_state(state_file)
        written = now
        dirty = False

for c in list(conns.values()):
    c.close()
write_state(state_file)
