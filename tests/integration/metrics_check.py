#!/usr/bin/python3
"""metrics_check.py METRICS STATS_JSON [--min NAME=N ...] [--since T]

Checks `smbaccelctl metrics` output (METRICS) against `smbaccelctl stats
--json` taken at the same moment (STATS_JSON), for t_metrics:

1. the Prometheus text format 0.0.4, read strictly here: every family
   has one HELP and one TYPE line before its samples, samples of a family
   are together and named after it, counters end in _total, no sample is
   repeated, label values are quoted and escaped;
2. the same text read by a second implementation, the prometheus_client
   library's parser (Debian python3-prometheus-client): same families,
   same types, same samples;
3. every figure of the JSON (scalars, and each labelled breakdown) is in
   the metrics with the same value, and the metrics have nothing the JSON
   has not (but smbaccel_start_time_seconds);
4. --min NAME=N: the metric sample NAME (as written, labels included) is
   at least N; --since T: smbaccel_start_time_seconds is between T and now.

Prints what it checked; exits 1 on the first failure, with the reason.
"""
import json
import re
import sys
import time

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = re.compile(r"^(%s)(\{(.*)\})? (\S+)$" % NAME)
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\\\|\\"|\\n)*)"(,|$)')
# families that may have no sample: reasons and shares are listed as they
# occur
def empty_ok(name):
    return name == "smbaccel_unkeyed_by_total" or \
        name.startswith("smbaccel_share_")


# the JSON's labelled breakdowns and their label
BREAKDOWNS = {"ra_invalidations": "cause", "dc_valid_failed": "cause",
              "dc_drops": "cause", "flush_causes": "cause",
              "closes_not_compounded": "reason", "opaque": "reason",
              "closed": "reason", "unkeyed_by": "reason",
              "commands": "command"}


def die(msg):
    print("metrics_check: FAIL: " + msg)
    sys.exit(1)


def unescape(v):
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), v)


def parse_strict(text):
    """{family: (type, help, {(name, labels): value})}"""
    fams, order = {}, []
    cur = None
    if not text.endswith("\n"):
        die("the text does not end with a newline")
    for n, line in enumerate(text.split("\n")[:-1], 1):
        where = "line %d (%r)" % (n, line)
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if len(parts) < 4 or not re.fullmatch(NAME, parts[2]):
                die(where + ": bad comment line")
            kind, name, rest = parts[1], parts[2], parts[3]
            f = fams.get(name)
            if f is None:
                if cur is not None and not fams[cur]["samples"] and \
                        not empty_ok(cur):
                    die(where + ": family %s has no sample" % cur)
                if name in order:
                    die(where + ": family %s appears twice" % name)
                f = fams[name] = {"type": None, "help": None, "samples": {}}
                order.append(name)
                cur = name
            elif name != cur or f["samples"]:
                die(where + ": %s line after the family's samples" % kind)
            if kind == "HELP":
                if f["help"] is not None:
                    die(where + ": second HELP")
                if not rest.strip():
                    die(where + ": empty HELP")
                f["help"] = rest
            else:
                if f["type"] is not None:
                    die(where + ": second TYPE")
                if rest not in ("counter", "gauge"):
                    die(where + ": type %r" % rest)
                f["type"] = rest
            continue
        if line.startswith("#") or not line.strip():
            die(where + ": unexpected line")
        m = SAMPLE.match(line)
        if not m:
            die(where + ": not a sample")
        name, labels, value = m.group(1), m.group(3), m.group(4)
        if name != cur:
            die(where + ": sample outside its family (current %s)" % cur)
        f = fams[cur]
        if f["type"] is None or f["help"] is None:
            die(where + ": sample before the family's HELP and TYPE")
        if f["type"] == "counter" and not name.endswith("_total"):
            die(where + ": counter not named *_total")
        if not name.startswith("smbaccel_"):
            die(where + ": not named smbaccel_*")
        lab = []
        if labels is not None:
            pos = 0
            while pos < len(labels):
                lm = LABEL.match(labels, pos)
                if not lm:
                    die(where + ": bad labels")
                lab.append((lm.group(1), unescape(lm.group(2))))
                pos = lm.end()
            if not lab:
                die(where + ": empty label set")
        try:
            v = float(value)
        except ValueError:
            die(where + ": value %r" % value)
        if v < 0:
            die(where + ": negative value")
        key = (name, tuple(lab))
        if key in f["samples"]:
            die(where + ": sample repeated")
        f["samples"][key] = v
    if cur is not None and not fams[cur]["samples"] and not empty_ok(cur):
        die("family %s has no sample" % cur)
    return fams


def check_library(text, fams):
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        die("python3-prometheus-client is not installed")
    lib = {}
    try:
        for fam in text_string_to_metric_families(text):
            samples = {}
            for s in fam.samples:
                samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
            lib[fam.name] = (fam.type, samples)
    except Exception as e:   # the library raises ValueError and others
        die("prometheus_client cannot read it: %r" % e)
    mine = {}
    for name, f in fams.items():
        base = name[:-6] if f["type"] == "counter" else name
        mine[base] = (f["type"], {(n, tuple(sorted(l))): v
                                  for (n, l), v in f["samples"].items()})
    if set(lib) != set(mine):
        die("prometheus_client reads families %s, this check %s" %
            (sorted(set(lib) ^ set(mine))[:5], "differently"))
    for name in mine:
        if lib[name][0] != mine[name][0]:
            die("%s: prometheus_client reads type %s, this check %s" %
                (name, lib[name][0], mine[name][0]))
        if lib[name][1] != mine[name][1]:
            die("%s: prometheus_client reads other samples" % name)
    print("metrics_check: prometheus_client reads the same %d families" % len(lib))


def metric_of(fams, base):
    """The family of JSON name base: smbaccel_BASE or smbaccel_BASE_total."""
    found = [n for n in ("smbaccel_" + base, "smbaccel_" + base + "_total")
             if n in fams]
    if len(found) != 1:
        die("JSON %s: %d metric families for it" % (base, len(found)))
    return found[0]


def check_shares(fams, shares):
    """JSON "shares" (a list of objects: server, share, FIELD: N ...)
    against the families smbaccel_share_FIELD_total{server, share}."""
    want = {}
    for sh in shares:
        key = (("server", sh["server"]), ("share", sh["share"]))
        for f, n in sh.items():
            if f in ("server", "share"):
                continue
            want.setdefault("smbaccel_share_%s_total" % f, {})[key] = float(n)
    names = {n for n in fams if n.startswith("smbaccel_share_")}
    if shares and names != set(want):
        die("per-share families %s, JSON fields %s" %
            (sorted(names), sorted(want)))
    for name in names:
        got = {lab: v for (n, lab), v in fams[name]["samples"].items()}
        if got != want.get(name, {}):
            die("%s differs from the JSON shares: %s" % (
                name, sorted(set(got.items()) ^
                             set(want.get(name, {}).items()))[:4]))
    return names


def check_json(fams, stats):
    seen = set()
    for k, v in stats.items():
        if k == "version":
            continue
        if k == "shares":
            seen |= check_shares(fams, v)
            continue
        name = metric_of(fams, k)
        seen.add(name)
        samples = fams[name]["samples"]
        if isinstance(v, dict):
            label = BREAKDOWNS.get(k)
            if label is None:
                die("JSON %s: a breakdown this check does not know" % k)
            got = {}
            for (n, lab), val in samples.items():
                if len(lab) != 1 or lab[0][0] != label:
                    die("%s: labels %s, want only %s" % (name, lab, label))
                got[lab[0][1]] = val
            if got != {a: float(b) for a, b in v.items()}:
                diff = sorted(set(got.items()) ^
                              set((a, float(b)) for a, b in v.items()))
                die("%s differs from JSON %s: %s" % (name, k, diff[:6]))
        else:
            want = float(v)
            if list(samples) != [(name, ())]:
                die("%s: samples %s, want one without labels" %
                    (name, list(samples)[:3]))
            got = samples[(name, ())]
            # the JSON prints a mean with %.1f or %.0f, as the metric
            if abs(got - want) > 0.051:
                die("%s is %s, JSON %s is %s" % (name, got, k, v))
    extra = set(fams) - seen - {"smbaccel_start_time_seconds"}
    if extra:
        die("metrics not in the JSON: %s" % sorted(extra))
    print("metrics_check: %d JSON figures equal to their metrics" % len(seen))


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        sys.exit(2)
    text = open(args[0], encoding="utf-8").read()
    stats = json.load(open(args[1]))
    mins, since = [], None
    rest = args[2:]
    while rest:
        if rest[0] == "--min" and len(rest) > 1:
            name, n = rest[1].rsplit("=", 1)
            mins.append((name, float(n)))
            rest = rest[2:]
        elif rest[0] == "--since" and len(rest) > 1:
            since = float(rest[1])
            rest = rest[2:]
        else:
            die("bad argument %r" % rest[0])
    fams = parse_strict(text)
    print("metrics_check: %d families, %d samples, format strict-clean" %
          (len(fams), sum(len(f["samples"]) for f in fams.values())))
    check_library(text, fams)
    check_json(fams, stats)
    flat = {}
    for f in fams.values():
        for (n, lab), v in f["samples"].items():
            flat[n + ("{%s}" % ",".join('%s="%s"' % kv for kv in lab)
                      if lab else "")] = v
    for name, n in mins:
        if name not in flat:
            die("no sample %s" % name)
        if flat[name] < n:
            die("%s is %s, want at least %s" % (name, flat[name], n))
        print("metrics_check: %s = %.0f (at least %.0f)" % (name, flat[name], n))
    if since is not None:
        st = flat.get("smbaccel_start_time_seconds")
        if st is None or not since - 2 <= st <= time.time() + 1:
            die("smbaccel_start_time_seconds %s not between %s and now" %
                (st, since))
        print("metrics_check: start time %.0f, after %.0f" % (st, since))


if __name__ == "__main__":
    main()
