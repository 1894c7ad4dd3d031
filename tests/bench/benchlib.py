#!/usr/bin/python3
"""benchlib.py - the arithmetic behind tests/bench/run.

    benchlib.py plan MODE LINK WORKLOAD [TBOX]
                                 sizes of one cell, as shell assignments
    benchlib.py plan-all MODE TBOX|- LINK,.. WORKLOAD,..
                                 every cell's plan as bash PLAN[LINK/WL]=...
    benchlib.py reqs BEFORE.json AFTER.json KIND
                                 upstream requests smbaccel sent between two
                                 `smbaccelctl stats --json` snapshots
    benchlib.py report OUTDIR    raw.csv (+ stats/*.json) -> results.csv,
                                 table.md, plot-*.dat; the table to stdout

Sizes: every cell is sized so that its slowest run (the direct one, and
haproxy, which cannot be faster) takes about MODE's time box on that link,
from a simple latency model (per request: a fixed client/server cost, 1.3 x
the round trip, the payload at the link rate), capped by MODE's maximum.
Direct, smbaccel and haproxy runs of a cell use the same size, except in
the seed cell (250,000 x 1 KiB writes) and r4kbig (4 KiB reads of a 64 MiB
file): smbaccel writes or reads all of it, to show its steady state, while
the direct and haproxy runs are time-boxed to a prefix of the same pattern.
"""
import csv
import json
import os
import sys

KIB = 1024
MIB = 1024 * 1024

# name: (one-way delay ms, rate bit/s; 0 = no emulator)
LINKS = {
    "loopback": (0, 0),
    "2ms-100M": (1, 100e6),
    "2ms-1G": (1, 1e9),
    "20ms-100M": (10, 100e6),
    "20ms-1G": (10, 1e9),
}
LINK_ORDER = list(LINKS)

# name: (kind, block bytes, label)
WORKLOADS = {
    "w1k": ("write", 1 * KIB, "write 1 KiB"),
    "w4k": ("write", 4 * KIB, "write 4 KiB"),
    "w64k": ("write", 64 * KIB, "write 64 KiB"),
    "w1m": ("write", 1 * MIB, "write 1 MiB"),
    "r4k": ("read", 4 * KIB, "read 4 KiB"),
    "r1m": ("read", 1 * MIB, "read 1 MiB"),
    "mput": ("mput", 8 * KIB, "mput 8 KiB files"),
    "seed": ("write", 1 * KIB, "seed: 1 KiB writes"),
    "r4kbig": ("read", 4 * KIB, "read 4 KiB, long file"),
    # documents and small files (tests/bench/docbench.sh): fixed sizes
    "doc": ("read", 4 * KIB, "open a document (400 random 4 KiB reads, 8 MiB)"),
    "docre": ("read", 4 * KIB, "reopen it"),
    "docl": ("read", 4 * KIB, "open a document, R lease, leased"),
    "doclre": ("read", 4 * KIB, "reopen it, R lease, leased"),
    "mget": ("read", 8 * KIB, "mget 100 x 8 KiB"),
    "save": ("write", 4 * KIB, "Office-style save, 1 MiB"),
    "savel": ("write", 4 * KIB, "Office-style save, RWH lease, leased"),
}
DOC_WORKLOADS = ("doc", "docre", "docl", "doclre", "mget", "save", "savel")
WORKLOAD_ORDER = list(WORKLOADS)

# mode: time box (s), seed count, mput file count, per-workload byte caps
MODES = {
    "full": dict(tbox=10.0, seed=250000, big=64 * MIB, files=500, step=64 * KIB, minfiles=10,
                 cap={"w1k": 64 * MIB, "w4k": 128 * MIB, "w64k": 512 * MIB,
                      "w1m": 512 * MIB, "r4k": 128 * MIB, "r1m": 512 * MIB}),
    "quick": dict(tbox=2.0, seed=31250, big=16 * MIB, files=100, step=64 * KIB, minfiles=10,
                  cap={"w1k": 8 * MIB, "w4k": 16 * MIB, "w64k": 64 * MIB,
                       "w1m": 64 * MIB, "r4k": 16 * MIB, "r1m": 64 * MIB}),
    "smoke": dict(tbox=0.3, seed=2000, big=1 * MIB, files=20, step=16 * KIB, minfiles=5,
                  cap={"w1k": 256 * KIB, "w4k": 512 * KIB, "w64k": 2 * MIB,
                       "w1m": 4 * MIB, "r4k": 512 * KIB, "r1m": 4 * MIB}),
}
SEED_STEP = 50          # seed-cell counts are multiples of 50 (50 KiB)


def op_seconds(link, block, kind):
    """Estimated wall time of one direct synchronous request (or one file)."""
    delay_ms, rate = LINKS[link]
    rtt = 2 * delay_ms / 1000.0
    if kind == "mput":
        return 4e-3 + 4.2 * rtt + (block * 8 / rate if rate else 0)
    t = 110e-6 + block / 400e6 + 1.3 * rtt
    if rate:
        t += block * 8 / rate
    return t


def plan(mode, link, wl, tbox=None):
    m = dict(MODES[mode])
    if tbox:
        m["tbox"] = float(tbox)
    kind, block, _ = WORKLOADS[wl]
    if wl in DOC_WORKLOADS:
        # docbench.sh sizes these itself (the fixed workloads)
        n = 100 if wl == "mget" else 400
        return dict(kind=kind, block=block, count=n, count_accel=n,
                    est=round(n * op_seconds(link, block, "read"), 1))
    op = op_seconds(link, block, kind)
    if kind == "mput":
        n = max(m["minfiles"], min(m["files"], int(m["tbox"] / op) // 5 * 5))
        return dict(kind=kind, block=block, count=n, count_accel=n,
                    est=round(n * op, 1))
    if wl == "seed":
        full = m["seed"]
        n = int(2 * m["tbox"] / op) // SEED_STEP * SEED_STEP
        n = max(SEED_STEP, min(full, n))
        return dict(kind=kind, block=block, count=n, count_accel=full,
                    est=round(n * op, 1))
    step = max(1, m["step"] // block)       # sizes: multiples of 64 KiB (16 in smoke)
    if wl == "r4kbig":
        full = m["big"] // block
        n = int(m["tbox"] / op) // step * step
        n = max(step, min(full, n))
        return dict(kind=kind, block=block, count=n, count_accel=full,
                    est=round(n * op, 1))
    n = int(m["tbox"] / op) // step * step
    n = max(step, min(m["cap"][wl] // block, n))
    return dict(kind=kind, block=block, count=n, count_accel=n,
                est=round(n * op, 1))


def cmd_plan(args):
    mode, link, wl = args[:3]
    p = plan(mode, link, wl, args[3] if len(args) > 3 else None)
    delay_ms, rate = LINKS[link]
    p.update(delay=delay_ms, rate=int(rate))
    for k, v in p.items():
        print("P_%s=%s" % (k, v))


def cmd_plan_all(args):
    mode, tbox, links, wls = args
    tbox = None if tbox in ("", "-") else tbox
    for l in links.split(","):
        for w in wls.split(","):
            p = plan(mode, l, w, tbox)
            delay_ms, rate = LINKS[l]
            print("PLAN[%s/%s]='%s %d %d %d %s %d %d'" % (
                l, w, p["kind"], p["block"], p["count"], p["count_accel"],
                p["est"], delay_ms, int(rate)))


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def upstream_reqs(before, after, kind):
    """Upstream requests smbaccel sent between two stats snapshots:
    writes = its coalesced writes + client writes it forwarded; reads =
    client READs not served from its caches (forwarded or widened) + its own
    read-ahead and document fetches.  None when a snapshot is missing."""
    a, b = load(before), load(after)
    if not a or not b:
        return None

    def d(key, sub=None):
        x = b.get(sub, {}) if sub else b
        y = a.get(sub, {}) if sub else a
        return int(x.get(key, 0)) - int(y.get(key, 0))
    if kind == "read":
        n = (d("READ", "commands") - d("ra_hits") - d("dc_hits") + d("ra_fetches") +
             d("dc_fetches"))
    else:
        n = d("upstream_writes") + d("writes_forwarded")
    return n


def cmd_reqs(args):
    n = upstream_reqs(*args[:3])
    print("" if n is None else n)


# ------------------------------------------------------------------ report

def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def fmt(x, nd=1):
    if x is None:
        return "-"
    if nd == 0:
        return "%d" % round(x)
    if abs(x) >= 100:
        return "%.0f" % x
    if abs(x) >= 10:
        return "%.*f" % (min(nd, 1), x)
    return "%.*f" % (max(nd, 2) if abs(x) < 1 else nd, x)


def ratio(a, b):
    return a / b if a is not None and b else None


def cmd_report(args):
    out = args[0]
    with open(os.path.join(out, "raw.csv")) as f:
        rows = list(csv.DictReader(f))
    cells = {}
    for r in rows:
        cells.setdefault((r["link"], r["workload"]), {})[r["config"]] = r

    fields = ["link", "rtt_ms", "rate_mbit", "workload", "block", "config",
              "bytes", "seconds", "mbps", "ratio_direct", "ratio_link",
              "ops", "client_cpu_us_per_op", "wall_us_per_op",
              "upstream_reqs", "upstream_reqs_per_mib", "proxy_cpu_s",
              "proxy_cpu_s_per_gib", "proxy_peak_rss_kib", "data", "note"]
    res = []
    for (link, wl), cfgs in cells.items():
        direct = num(cfgs.get("direct", {}).get("mbps"))
        for cfg in ("direct", "smbaccel", "haproxy"):
            r = cfgs.get(cfg)
            if r is None:
                continue
            mbps, b = num(r["mbps"]), num(r["bytes"])
            ops, secs = num(r["ops"]), num(r["seconds"])
            rate = num(r["rate_mbit"])
            reqs = num(r["upstream_reqs"])
            if r["config"] == "smbaccel" and r.get("stats"):
                reqs = upstream_reqs(os.path.join(out, "stats", r["stats"] + "-before.json"),
                                     os.path.join(out, "stats", r["stats"] + "-after.json"),
                                     WORKLOADS.get(r["workload"], ("write",))[0])
            cpu = num(r["proxy_cpu_s"])
            o = dict(r)
            o["upstream_reqs"] = "" if reqs is None else "%d" % reqs
            o["ratio_direct"] = fmt(ratio(mbps, direct), 2)
            o["ratio_link"] = fmt(ratio(mbps, rate / 8 if rate else None), 2)
            o["wall_us_per_op"] = fmt(secs * 1e6 / ops if secs and ops else None)
            o["upstream_reqs_per_mib"] = fmt(reqs * MIB / b if reqs is not None and b else None)
            o["proxy_cpu_s_per_gib"] = fmt(cpu * 2**30 / b if cpu is not None and b else None, 2)
            res.append(o)
    order = lambda o: (LINK_ORDER.index(o["link"]) if o["link"] in LINK_ORDER else 99,
                       WORKLOAD_ORDER.index(o["workload"]) if o["workload"] in WORKLOAD_ORDER else 99,
                       ["direct", "smbaccel", "haproxy"].index(o["config"]))
    res.sort(key=order)
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(res)

    by = {(o["link"], o["workload"], o["config"]): o for o in res}
    lines = []
    lines.append("| link | workload | MiB (direct/accel) | direct MB/s | smbaccel MB/s | haproxy MB/s "
                 "| accel / direct | haproxy / direct | accel / link | req/MiB direct → accel "
                 "| accel CPU s/GiB | accel peak RSS MiB | client CPU µs/op d / a | wall µs/op d / a | data |")
    lines.append("|" + "---|" * 15)
    seen = []
    for o in res:
        key = (o["link"], o["workload"])
        if key in seen:
            continue
        seen.append(key)
        d = by.get(key + ("direct",), {})
        a = by.get(key + ("smbaccel",), {})
        h = by.get(key + ("haproxy",), {})

        def g(r, k):
            return num(r.get(k)) if r else None
        mib_d, mib_a = g(d, "bytes"), g(a, "bytes")
        size = fmt(mib_d / MIB if mib_d else None)
        if mib_a and mib_a != mib_d:
            size += " / %s" % fmt(mib_a / MIB)
        rss = g(a, "proxy_peak_rss_kib")
        datas = sorted({r.get("data", "-") for r in (d, a, h) if r})
        data = "ok" if datas == ["ok"] else ",".join(
            "%s:%s" % (c, r.get("data")) for c, r in (("direct", d), ("smbaccel", a), ("haproxy", h))
            if r and r.get("data") != "ok")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s → %s | %s | %s | %s / %s | %s / %s | %s |" % (
            o["link"], WORKLOADS.get(o["workload"], ("", 0, o["workload"]))[2], size,
            fmt(g(d, "mbps"), 2), fmt(g(a, "mbps"), 2), fmt(g(h, "mbps"), 2),
            fmt(g(a, "ratio_direct"), 2), fmt(g(h, "ratio_direct"), 2),
            fmt(g(a, "ratio_link"), 2),
            fmt(g(d, "upstream_reqs_per_mib"), 0), fmt(g(a, "upstream_reqs_per_mib"), 1),
            fmt(g(a, "proxy_cpu_s_per_gib"), 2), fmt(rss / 1024 if rss else None),
            fmt(g(d, "client_cpu_us_per_op")), fmt(g(a, "client_cpu_us_per_op")),
            fmt(g(d, "wall_us_per_op")), fmt(g(a, "wall_us_per_op")), data))
    table = "\n".join(lines) + "\n"
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(table)
    sys.stdout.write(table)

    # gnuplot data: per link, plot-LINK-w.dat (writes), plot-LINK-r.dat
    # (reads) and plot-LINK-l.dat (the long seed and r4kbig cells), one line
    # per block size: block direct smbaccel haproxy (MB/s)
    links = [l for l in LINK_ORDER if any(o["link"] == l for o in res)]
    for l in links:
        for suffix, pts in (("w", ((1024, "w1k"), (4096, "w4k"), (65536, "w64k"), (1048576, "w1m"))),
                            ("r", ((4096, "r4k"), (1048576, "r1m"))),
                            ("l", ((1024, "seed"), (4096, "r4kbig")))):
            with open(os.path.join(out, "plot-%s-%s.dat" % (l, suffix)), "w") as f:
                f.write("# block direct smbaccel haproxy (MB/s)\n")
                for blk, wl in pts:
                    vals = [str(blk)]
                    for cfg in ("direct", "smbaccel", "haproxy"):
                        v = num(by.get((l, wl, cfg), {}).get("mbps"))
                        vals.append("NaN" if v is None or v <= 0 else "%.4f" % v)
                    f.write(" ".join(vals) + "\n")
    with open(os.path.join(out, "links.txt"), "w") as f:
        f.write(" ".join(links) + "\n")


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    cmd, args = sys.argv[1], sys.argv[2:]
    {"plan": cmd_plan, "plan-all": cmd_plan_all, "reqs": cmd_reqs,
     "report": cmd_report}[cmd](args)


if __name__ == "__main__":
    main()
