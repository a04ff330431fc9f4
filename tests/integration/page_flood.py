#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""page_flood.py PORT ADDRS CONNS STATE_FILE [SECONDS]: flood the status pages.

From each source address of ADDRS (comma-separated; loopback only), CONNS
keep-alive HTTP/1.1 connections to 127.0.0.1:PORT, each asking for /,
/status.json and /readyz in turn (each connection starting at another one), the
next request as soon as the last reply is whole, as a dashboard left open by
many people, or a client gone wrong, would. A connection the server closes is
opened again at once. Stops on SIGTERM or SIGINT, or after SECONDS (default
120).

A reply counts as answered when it is whole (its Content-Length) and right:
200 (/readyz: 503 too, a target not up) with the page's ending ("</html>\\n",
"}\\n", "\\n"); anything else counts as an error, the first few described.
Writes STATE_FILE (whole, by rename) once every connection has its first
reply, then every 0.2 s, and at exit: "replies N", "replies PATH N" for each
path, "errors N", "reconnects N" and "error WHAT" lines.
"""
import errno
import os
import selectors
import signal
import socket
import sys
import time

port, addrs, conns = int(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])
state_file = sys.argv[4]
limit_s = float(sys.argv[5]) if len(sys.argv) > 5 else 120.0
assert all(a.startswith("127.") for a in addrs), "loopback sources only"

# Each path, the statuses it may answer with, and how its body ends.
PAGES = ((b"/", (200,), b"</html>\n"), (b"/status.json", (200,), b"}\n"),
         (b"/readyz", (200, 503), b"\n"))

# SIGTERM as SIGINT: either ends the loop below (KeyboardInterrupt).
signal.signal(signal.SIGTERM, signal.default_int_handler)
sel = selectors.DefaultSelector()
replies = {p[0]: 0 for p in PAGES}
errors = reconnects = 0
described = []


def head_of(data):
    """(status, Content-Length or None, head bytes, closes) once @data holds
    the head of a reply; None before."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = bytes(data[:end]).split(b"\r\n")
    status = int(lines[0].split(b" ")[1])
    length, closes = None, False
    for ln in lines[1:]:
        k, _, v = ln.partition(b":")
        k = k.strip().lower()
        if k == b"content-length":
            length = int(v)
        elif k == b"connection" and b"close" in v.lower():
            closes = True
    return status, length, end + 4, closes


class Conn:
    def __init__(self, addr, n):
        self.addr, self.n = addr, n
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setblocking(False)
        self.sock.bind((addr, 0))
        err = self.sock.connect_ex(("127.0.0.1", port))
        if err not in (0, errno.EINPROGRESS):
            self.sock.close()
            raise OSError(err, os.strerror(err))
        self.ask()
        sel.register(self.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, self)

    def ask(self):
        self.page = PAGES[self.n % len(PAGES)]
        self.n += 1
        self.out = b"GET " + self.page[0] + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        self.buf = bytearray()
        self.head = None

    def close(self):
        sel.unregister(self.sock)
        self.sock.close()


def error(what):
    global errors
    errors += 1
    if len(described) < 5:
        described.append(what)


def reply_done(c):
    """Whether @c's reply is whole; counts it, right or wrong."""
    c.head = c.head or head_of(c.buf)
    if not c.head:
        return False
    status, length, at, _ = c.head
    if length is None:
        error(f"{c.page[0].decode()}: no Content-Length")
        return True
    if len(c.buf) < at + length:
        return False
    path, codes, tail = c.page
    if status not in codes:
        error(f"{path.decode()}: status {status}")
    elif len(c.buf) != at + length or not c.buf.endswith(tail):
        error(f"{path.decode()}: {len(c.buf) - at} bytes not ending in {tail!r}")
    else:
        replies[path] += 1
    return True


def write_state():
    with open(state_file + ".tmp", "w") as f:
        f.write("replies %d\n" % sum(replies.values()))
        for p, n in replies.items():
            f.write("replies %s %d\n" % (p.decode(), n))
        f.write("errors %d\nreconnects %d\n" % (errors, reconnects))
        for d in described:
            f.write("error %s\n" % d)
    os.rename(state_file + ".tmp", state_file)


def serve(c, ev):
    """Handle @ev on @c; False once the server has closed it."""
    try:
        if ev & selectors.EVENT_WRITE and c.out:
            c.out = c.out[c.sock.send(c.out):]
            if not c.out:
                sel.modify(c.sock, selectors.EVENT_READ, c)
        if ev & selectors.EVENT_READ:
            data = c.sock.recv(1 << 18)
            if not data:
                return False
            c.buf += data
    except BlockingIOError:
        return True
    except OSError:
        return False
    if reply_done(c):
        if c.head[3] or c.head[1] is None:
            return False
        c.ask()
        sel.modify(c.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
    return True


addrs_conns = len(addrs) * conns
live = set(Conn(a, i) for a in addrs for i in range(conns))
reopen = []  # (address, next page) of connections to open again
start = time.monotonic()
written = None
try:
    while time.monotonic() - start < limit_s:
        for key, ev in sel.select(timeout=0.2):
            c = key.data
            if not serve(c, ev):
                c.close()
                live.discard(c)
                reconnects += 1
                reopen.append((c.addr, c.n))
        for addr, n in reopen[:]:
            try:
                live.add(Conn(addr, n))
                reopen.remove((addr, n))
            except OSError as e:
                error(f"connect from {addr}: {e}")
                break
        now = time.monotonic()
        if written is None and sum(replies.values()) + errors >= addrs_conns:
            written = 0
        if written is not None and now - written >= 0.2:
            write_state()
            written = now
except KeyboardInterrupt:
    pass
for c in live:
    c.close()
write_state()
