#!/usr/bin/python3
# SPDX-License-Identifier: MIT
#
# webhook.py — an Alertmanager webhook receiver for the tests and bench/.
#
#   webhook.py PORT_FILE OUT_FILE
#
# Listens on a free loopback port, writes the port to PORT_FILE (once it
# listens: written to PORT_FILE.tmp, then renamed, so a reader never sees half
# of it), and appends every notification POSTed to it to OUT_FILE as one line
# of compact JSON: Alertmanager's webhook payload (version 4: status, alerts[]
# with status, labels, annotations, startsAt, endsAt), plus "received", the Unix
# time it arrived. A body that is not JSON is kept too, as
# {"received": T, "invalid": "<the body>"}, for the test to fail on. Each alert
# of a notification is also a line of OUT_FILE.tsv, for grep and awk:
#   RECEIVED<TAB>NOTIFICATION STATUS<TAB>ALERT STATUS<TAB>ALERTNAME<TAB>SEVERITY<TAB>TARGET<TAB>INSTANCE
# (a label the alert lacks is empty). Answers 200 to every POST, 404 to anything
# else. Runs until killed.
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        now = time.time()
        try:
            rec = json.loads(body)
            if not isinstance(rec, dict):
                raise ValueError("not an object")
            rec["received"] = now
        except ValueError:
            rec = {"received": now, "invalid": body.decode("utf-8", "replace")}
        with open(self.server.out, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec, separators=(",", ":"), sort_keys=True) + "\n")
        rows = []
        for a in rec.get("alerts") or []:
            lab = a.get("labels") or {}
            cols = [f"{now:.3f}", str(rec.get("status", "")), str(a.get("status", ""))]
            cols += [str(lab.get(k, "")) for k in ("alertname", "severity", "target", "instance")]
            rows.append("\t".join(c.replace("\t", " ").replace("\n", " ") for c in cols) + "\n")
        with open(self.server.out + ".tsv", "a", encoding="utf-8") as f:
            f.writelines(rows)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, fmt, *args):  # quiet: the test prints OUT_FILE
        pass


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: webhook.py PORT_FILE OUT_FILE")
    port_file, out = sys.argv[1], sys.argv[2]
    srv = HTTPServer(("127.0.0.1", 0), Handler)
    srv.out = out
    open(out, "a").close()
    open(out + ".tsv", "a").close()
    with open(port_file + ".tmp", "w") as f:
        f.write(f"{srv.server_address[1]}\n")
    os.rename(port_file + ".tmp", port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
