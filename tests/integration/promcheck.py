#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# promcheck.py: checks for test_prometheus.sh and test_hostile_names.sh,
# standard library only. Every page and every string of a protobuf body must
# be valid UTF-8 (Prometheus drops a whole scrape over one that is not).
#
#   promcheck.py series FILE [--om] [--fold=HISTOGRAM]...
#       The series of a text 0.0.4 (or, with --om, OpenMetrics 1.0) page, one per
#       line, sorted: name{label="value",...} with labels sorted by name. With --om
#       the page must end with "# EOF" and have no blank lines; _created series
#       are left out (optional in OpenMetrics, absent from text). --fold=NAME
#       writes NAME's _bucket/_count/_sum series as one series NAME without le
#       (how Prometheus stores a native histogram).
#   promcheck.py pb FILE TEXTFILE
#       Decode a protobuf delimited MetricFamily body; check every native
#       histogram (schema, spans against buckets, counts) and that its count
#       equals iopulse_probe_ios_total of the same labels in the same body; the
#       classic series it carries must be the series of TEXTFILE.
#   promcheck.py label PROM EXPR LABEL
#       The value of LABEL of the one series the instant query EXPR returns, as
#       UTF-8 bytes on stdout with no newline.
#   promcheck.py up PROM | names PROM NAME... [--absent NAME...]
#   promcheck.py quantile PROM EXPR PROBE:OP... | count-rate PROM EXPR PROBE:OP...
#   promcheck.py count-equal PROM WINDOW | prom-series PROM
#   promcheck.py exprs PROM DASHBOARD RULES [--empty=TITLE]... [--may-be-empty=TITLE]...
#       Every query of the Grafana DASHBOARD (template variables substituted:
#       $job, $instance, $target, $probe match everything, $__rate_interval is
#       20s) and every recorded series of RULES returns data without error;
#       panels named by --empty must return an empty result without error,
#       panels named by --may-be-empty any result without error.
#       Queries against the Prometheus at PROM (http://127.0.0.1:PORT).
#
# Exit status 0 when the check holds; 1 with the reason on stdout when it does
# not (the caller polls); 2 on misuse.

import json
import math
import struct
import sys
import urllib.error
import urllib.parse
import urllib.request

PROM_OWN = {"job", "instance"}
SYNTHETIC = {
    "up",
    "scrape_duration_seconds",
    "scrape_samples_scraped",
    "scrape_samples_post_metric_relabeling",
    "scrape_series_added",
}


class Fail(Exception):
    pass


def utf8(b, what):
    """@b decoded; Prometheus drops a whole scrape over one string that is not UTF-8."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError as e:
        at = b[max(0, e.start - 120):e.start + 40]
        raise Fail(f"{what} is not valid UTF-8 ({e.reason} at byte {e.start}): ...{at!r}...")


def read_page(path):
    with open(path, "rb") as f:
        return utf8(f.read(), path)


# ---- Prometheus HTTP API ---------------------------------------------------


def api(prom, path, **params):
    url = prom + path
    if params:
        url += "?" + urllib.parse.urlencode(params, doseq=True)
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            doc = json.load(r)
    except urllib.error.HTTPError as e:
        body = e.read().decode("utf-8", "replace")
        raise Fail(f"GET {url}: HTTP {e.code}: {body}")
    except OSError as e:
        raise Fail(f"GET {url}: {e}")
    if doc.get("status") != "success":
        raise Fail(f"GET {url}: {doc}")
    return doc["data"]


def query(prom, expr, **params):
    data = api(prom, "/api/v1/query", query=expr, **params)
    return data["resultType"], data["result"]


def key(name, labels):
    # An empty label value is no label at all to Prometheus (iopulse_target_info's
    # fstype="" before the target opened, model="" on a virtual disk).
    inner = ",".join(f'{k}="{esc(v)}"' for k, v in sorted(labels.items()) if v != "")
    return f"{name}{{{inner}}}"


def esc(v):
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def probe_ops(result, args):
    """{(probe, op): value} of an instant vector, and the pairs asked for."""
    got = {}
    for s in result:
        m = s["metric"]
        got[(m.get("probe"), m.get("op"))] = s
    want = []
    for a in args:
        p, _, o = a.partition(":")
        want.append((p, o))
    return got, want


def cmd_up(prom):
    _, res = query(prom, 'up{job="iopulse"}')
    vals = [s["value"][1] for s in res]
    if vals != ["1"]:
        raise Fail(f'up{{job="iopulse"}} is {vals or "absent"}')
    return "up == 1"


def cmd_label(prom, expr, label):
    _, res = query(prom, expr)
    if len(res) != 1:
        raise Fail(f"{expr}: {len(res)} series, want 1: {res}")
    v = res[0]["metric"].get(label)
    if v is None:
        raise Fail(f"{expr}: no label {label}: {res[0]['metric']}")
    sys.stdout.buffer.write(v.encode("utf-8"))
    return ""


def cmd_names(prom, args):
    want, absent, cur = [], [], None
    for a in args:
        if a == "--absent":
            cur = absent
        else:
            (want if cur is None else cur).append(a)
    have = set(api(prom, "/api/v1/label/__name__/values", **{"match[]": '{job="iopulse"}'}))
    missing = [n for n in want if n not in have]
    extra = [n for n in absent if n in have]
    msg = []
    if missing:
        msg.append("not ingested: " + " ".join(missing))
    if extra:
        msg.append("ingested but should not be: " + " ".join(extra))
    if msg:
        raise Fail("; ".join(msg))
    return f"{len(want)} names ingested" + (f", {len(absent)} absent" if absent else "")


def finite(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return False
    return not math.isnan(f) and not math.isinf(f)


def cmd_quantile(prom, expr, args, positive=False):
    _, res = query(prom, expr)
    got, want = probe_ops(res, args)
    bad = []
    out = []
    for p, o in want:
        s = got.get((p, o))
        if s is None:
            bad.append(f"{p}/{o}: no result")
            continue
        if "value" not in s:
            bad.append(f"{p}/{o}: not a float sample: {s}")
            continue
        v = s["value"][1]
        if not finite(v) or (positive and not float(v) > 0) or float(v) < 0:
            bad.append(f"{p}/{o}: {v}")
            continue
        out.append(f"{p}/{o}={float(v):.6g}")
    if bad:
        raise Fail(f"{expr}: " + ", ".join(bad) + (f" (ok: {' '.join(out)})" if out else ""))
    return " ".join(out)


def cmd_count_equal(prom, window):
    """Every raw native-histogram sample of the last WINDOW has the same count
    as iopulse_probe_ios_total of the same series at the same timestamp: both
    come from one scrape, and iopulse publishes them together."""
    t = api(prom, "/api/v1/query", query="time()")["result"][0]
    _, hist = query(prom, f'iopulse_probe_latency_seconds{{job="iopulse"}}[{window}]', time=t)
    _, ios = query(prom, f'iopulse_probe_ios_total{{job="iopulse"}}[{window}]', time=t)
    if not hist:
        raise Fail("no iopulse_probe_latency_seconds samples (native histogram not ingested)")
    lab = ("probe", "target", "op")
    ios_by = {tuple(s["metric"].get(k) for k in lab): dict((ts, v) for ts, v in s.get("values", []))
              for s in ios}
    bad, ok = [], []
    for s in hist:
        k = tuple(s["metric"].get(x) for x in lab)
        name = "/".join(str(x) for x in k)
        hs = s.get("histograms")
        if not hs:
            bad.append(f"{name}: float samples only, no native histogram: {s.get('values', [])[:2]}")
            continue
        iv = ios_by.get(k)
        if iv is None:
            bad.append(f"{name}: no iopulse_probe_ios_total series")
            continue
        n = 0
        for ts, h in hs:
            c = h.get("count")
            if ts not in iv:
                bad.append(f"{name}@{ts}: histogram sample without an ios_total sample")
                break
            if float(c) != float(iv[ts]):
                bad.append(f"{name}@{ts}: histogram_count {c} != iopulse_probe_ios_total {iv[ts]}")
                break
            n += 1
        else:
            if n < 5:
                bad.append(f"{name}: only {n} sample(s) in {window}")
            else:
                ok.append(f"{name}: {n} scrapes, last count {hs[-1][1]['count']}")
    if bad:
        raise Fail("; ".join(bad))
    return "; ".join(ok)


def cmd_prom_series(prom):
    """The series of job iopulse that Prometheus holds now (instant query),
    without its own labels and synthetic series."""
    _, res = query(prom, '{job="iopulse"}')
    out = set()
    for s in res:
        m = dict(s["metric"])
        name = m.pop("__name__")
        if name in SYNTHETIC:
            continue
        for k in PROM_OWN:
            m.pop(k, None)
        out.add(key(name, m))
    return "\n".join(sorted(out))


def dashboard_exprs(path):
    """(panel title, expr) for every query, rows' nested panels included."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    out = []

    def walk(panels):
        for p in panels:
            walk(p.get("panels", []))
            for t in p.get("targets", []):
                out.append((p["title"], t["expr"]))
    walk(doc["panels"])
    return out


def substitute(expr):
    for var, val in (("$__rate_interval", "20s"), ("$job", ".*"), ("$instance", ".*"),
                     ("$target", ".*"), ("$probe", ".*")):
        expr = expr.replace(var, val)
    return expr


def recorded(path):
    """Names recorded by the rules file (its 'record:' lines)."""
    with open(path, encoding="utf-8") as f:
        return [ln.split("record:", 1)[1].strip() for ln in f if ln.strip().startswith("- record:")]


def cmd_exprs(prom, dashboard, rules, args):
    empty_ok = {a[len("--empty="):] for a in args if a.startswith("--empty=")}
    either_ok = {a[len("--may-be-empty="):] for a in args if a.startswith("--may-be-empty=")}
    checks = [(t, substitute(e)) for t, e in dashboard_exprs(dashboard)]
    checks += [("rule " + r, r) for r in recorded(rules)]
    unknown = sorted((empty_ok | either_ok) - {t for t, _ in checks})
    if unknown:
        raise Fail("no such panel: " + ", ".join(unknown))
    bad, ok = [], 0
    for title, expr in checks:
        try:
            _, res = query(prom, expr)
        except Fail as e:
            bad.append(f"'{title}': error: {e}")
            continue
        if title in either_ok:
            ok += 1
        elif title in empty_ok:
            if res:
                bad.append(f"'{title}': should be empty here, has {len(res)} series: {expr}")
            else:
                ok += 1
        elif not res:
            bad.append(f"'{title}': no data: " + " ".join(expr.split())[:160])
        else:
            ok += 1
    if bad:
        raise Fail(f"{len(bad)} of {len(checks)} expressions wrong:\n" + "\n".join(bad))
    return (f"all {len(checks)} expressions right ({len(empty_ok)} panels expected empty"
            + (f", {len(either_ok)} may be" if either_ok else "") + ")")


# ---- text and OpenMetrics pages --------------------------------------------


def parse_line(line):
    i = 0
    n = len(line)
    while i < n and line[i] not in "{ ":
        i += 1
    name = line[:i]
    labels = {}
    if i < n and line[i] == "{":
        i += 1
        while True:
            while i < n and line[i] == " ":
                i += 1
            if i < n and line[i] == "}":
                i += 1
                break
            j = line.index("=", i)
            lname = line[i:j].strip()
            i = j + 1
            if line[i] != '"':
                raise ValueError(f"label value not quoted: {line!r}")
            i += 1
            v = []
            while line[i] != '"':
                if line[i] == "\\":
                    i += 1
                    v.append({"n": "\n", "\\": "\\", '"': '"'}.get(line[i], "\\" + line[i]))
                else:
                    v.append(line[i])
                i += 1
            i += 1
            if lname in labels:
                raise ValueError(f"label {lname} twice: {line!r}")
            labels[lname] = "".join(v)
            while i < n and line[i] == " ":
                i += 1
            if line[i] == ",":
                i += 1
            elif line[i] != "}":
                raise ValueError(f"bad label list: {line!r}")
    rest = line[i:].split()
    if not rest:
        raise ValueError(f"no value: {line!r}")
    float(rest[0].replace("Inf", "inf"))
    return name, labels


def page_series(text, om):
    lines = text.split("\n")
    if om:
        if lines and lines[-1] == "":
            lines.pop()
        if not lines or lines[-1] != "# EOF":
            raise Fail(f"OpenMetrics page does not end with '# EOF' (last line {lines[-1:]!r})")
        lines.pop()
    out = set()
    for no, line in enumerate(lines, 1):
        if line == "":
            if om:
                raise Fail(f"blank line {no} in an OpenMetrics page")
            continue
        if line.startswith("#"):
            if om and not line.startswith(("# TYPE ", "# HELP ", "# UNIT ")):
                raise Fail(f"line {no}: comment not allowed in OpenMetrics: {line!r}")
            continue
        try:
            name, labels = parse_line(line)
        except (ValueError, IndexError) as e:
            raise Fail(f"line {no}: cannot parse: {line!r} ({e})")
        if om and name.endswith("_created"):
            continue
        out.add(key(name, labels))
    return out


def cmd_series(path, om, fold):
    """fold: histogram families whose classic series stand for one native
    series (what Prometheus 2.42 keeps with native histograms on)."""
    out = page_series(read_page(path), om)
    if fold:
        folded = set()
        for k in out:
            name, labels = parse_line(k + " 0")
            for suf in ("_bucket", "_count", "_sum"):
                if name.endswith(suf) and name[:-len(suf)] in fold:
                    name = name[:-len(suf)]
                    labels.pop("le", None)
                    break
            folded.add(key(name, labels))
        out = folded
    return "\n".join(sorted(out))


# ---- protobuf --------------------------------------------------------------


def varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return r, i
        if s > 63:
            raise Fail("varint too long")


def zz(n):
    return (n >> 1) ^ -(n & 1)


def fields(b):
    """{field number: [(wire type, value)]}; value is int, bytes or 8 raw bytes."""
    out = {}
    i = 0
    while i < len(b):
        tag, i = varint(b, i)
        f, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v = b[i:i + 8]
            i += 8
        elif wt == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            if len(v) != n:
                raise Fail("truncated length-delimited field")
            i += n
        elif wt == 5:
            v = b[i:i + 4]
            i += 4
        else:
            raise Fail(f"wire type {wt} (field {f})")
        out.setdefault(f, []).append((wt, v))
    if i != len(b):
        raise Fail("message overruns its length")
    return out


def one(fs, f, default=None):
    v = fs.get(f)
    return v[-1][1] if v else default


def dbl(raw):
    return struct.unpack("<d", raw)[0] if raw is not None else 0.0


def rep_sint(fs, f):
    out = []
    for wt, v in fs.get(f, []):
        if wt == 2:
            i = 0
            while i < len(v):
                n, i = varint(v, i)
                out.append(zz(n))
        else:
            out.append(zz(v))
    return out


def le_str(f):
    return "+Inf" if math.isinf(f) and f > 0 else repr(float(f))


def norm_le(k):
    """A series key with its le label value as a normalised number."""
    if ',le="' not in k and '{le="' not in k:
        return k
    name, labels = parse_line(k + " 0")
    labels["le"] = le_str(float(labels["le"].replace("Inf", "inf")))
    return key(name, labels)


def cmd_pb(path, textpath):
    with open(path, "rb") as f:
        body = f.read()
    i = 0
    series = set()
    ios = {}
    hists = {}
    families = []
    bad = []
    while i < len(body):
        n, i = varint(body, i)
        mf = fields(body[i:i + n])
        if len(body) - i < n:
            raise Fail("truncated MetricFamily")
        i += n
        name = utf8(one(mf, 1, b""), "a family name")
        mtype = one(mf, 3, 0)
        families.append(name)
        natives = []
        for _, mb in mf.get(4, []):
            m = fields(mb)
            labels = {}
            for _, lp in m.get(1, []):
                lf = fields(lp)
                ln = utf8(one(lf, 1, b""), f"a label name of {name}")
                labels[ln] = utf8(one(lf, 2, b""), f"label {ln} of {name}")
            lk = tuple(labels.get(x) for x in ("probe", "target", "op"))
            if mtype in (0, 1, 3):  # counter, gauge, untyped
                sub = fields(one(m, {0: 3, 1: 2, 3: 5}[mtype], b""))
                series.add(key(name, labels))
                if name == "iopulse_probe_ios_total":
                    ios[lk] = dbl(one(sub, 1))
            elif mtype == 4:
                h = fields(one(m, 7, b""))
                count = one(h, 1, 0)
                series.add(key(name + "_count", labels))
                series.add(key(name + "_sum", labels))
                last = None
                for _, bb in h.get(3, []):
                    bf = fields(bb)
                    ub = dbl(one(bf, 2))
                    last = ub
                    series.add(key(name + "_bucket", dict(labels, le=le_str(ub))))
                if last is None or not math.isinf(last):
                    series.add(key(name + "_bucket", dict(labels, le="+Inf")))
                zt = dbl(one(h, 6))
                pd, nd = rep_sint(h, 13), rep_sint(h, 10)
                native = zt > 0 or one(h, 7, 0) > 0 or pd or nd or 11 in h or 14 in h
                natives.append(bool(native))
                where = f"{name}{labels}"
                if not native:
                    bad.append(f"{where}: not a native histogram (zero_threshold 0, no buckets)")
                    continue
                schema = zz(one(h, 5, 0))
                if not -4 <= schema <= 8:
                    bad.append(f"{where}: schema {schema} outside [-4, 8]")
                total = one(h, 7, 0)
                for side, spf, deltas in (("positive", 12, pd), ("negative", 9, nd)):
                    need = sum(one(fields(sp), 2, 0) for _, sp in h.get(spf, []))
                    if need != len(deltas):
                        bad.append(f"{where}: {side} spans cover {need} buckets, {len(deltas)} deltas")
                    c = 0
                    for d in deltas:
                        c += d
                        if c < 0:
                            bad.append(f"{where}: {side} bucket count {c} < 0")
                        total += c
                if total != count:
                    bad.append(f"{where}: zero_count + buckets = {total}, sample_count {count}")
                hists[lk] = (where, count)
            else:
                bad.append(f"{name}: unexpected metric type {mtype}")
        if natives and len(set(natives)) != 1:
            bad.append(f"{name}: native and classic histograms mixed in one family")
    if not hists:
        bad.append("no iopulse_probe_latency_seconds histogram in the protobuf body")
    for lk, (where, count) in hists.items():
        if lk not in ios:
            bad.append(f"{where}: no iopulse_probe_ios_total")
        elif ios[lk] != count:
            bad.append(f"{where}: sample_count {count} != iopulse_probe_ios_total {ios[lk]}")
    # The text page after the body: a string of the body that is not UTF-8 is
    # told as such, even when the text page has the same one.
    text_series = {norm_le(k) for k in page_series(read_page(textpath), False)}
    series = {norm_le(k) for k in series}
    only_pb = sorted(series - text_series)
    only_text = sorted(text_series - series)
    if only_pb:
        bad.append("series in protobuf, not in text: " + " ".join(only_pb[:10]))
    if only_text:
        bad.append("series in text, not in protobuf: " + " ".join(only_text[:10]))
    if bad:
        raise Fail("\n".join(bad))
    return f"{len(families)} families, {len(hists)} native histograms, {len(series)} classic series"


# ---- main ------------------------------------------------------------------


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[1], argv[2:]
    try:
        if cmd == "series":
            fold = {a[len("--fold="):] for a in args[1:] if a.startswith("--fold=")}
            out = cmd_series(args[0], "--om" in args[1:], fold)
        elif cmd == "pb":
            out = cmd_pb(args[0], args[1])
        elif cmd == "label":
            out = cmd_label(args[0], args[1], args[2])
        elif cmd == "up":
            out = cmd_up(args[0])
        elif cmd == "names":
            out = cmd_names(args[0], args[1:])
        elif cmd == "quantile":
            out = cmd_quantile(args[0], args[1], args[2:])
        elif cmd == "count-rate":
            out = cmd_quantile(args[0], args[1], args[2:], positive=True)
        elif cmd == "count-equal":
            out = cmd_count_equal(args[0], args[1])
        elif cmd == "exprs":
            out = cmd_exprs(args[0], args[1], args[2], args[3:])
        elif cmd == "prom-series":
            out = cmd_prom_series(args[0])
        else:
            print(f"unknown command {cmd}", file=sys.stderr)
            return 2
    except Fail as e:
        print(e)
        return 1
    if out:
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
