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
                                 table.md, loss.md, docs.md (documents and
                                 small files), policy.md (the default
                                 policy against always, where the leased
                                 config ran), plot-*.dat; the tables to
                                 stdout
    benchlib.py link LINK        the link's parameters, as shell assignments

Sizes: every cell is sized so that its direct run (and haproxy, which
cannot be faster) takes about MODE's time box on that link, from a simple
latency model (per request: a fixed client/server cost, 1.3 x the round
trip, the payload at the rate one CUBIC stream gets: the link rate, or on
a lossy link the Mathis estimate MSS / (RTT x sqrt(p))), capped by MODE's
maximum.  Every configuration of a cell moves the same bytes, except in
the long cells (seed: 250,000 x 1 KiB writes; r4kbig: 4 KiB reads of a 64
MiB file; w1mbig, r1mbig: 1 MiB writes and reads of 64 MiB): there
smbaccel moves all of it (unless its own estimate exceeds 6 time boxes: a
prefix then) to show its steady state, and the others a time-boxed prefix
of the same pattern.  The document workloads (doc, docre, docl, doclre,
mget, save, savel) have fixed sizes: 400 reads, 100 files (--smoke: 50
and 10).
"""
import csv
import json
import os
import sys

KIB = 1024
MIB = 1024 * 1024

# name: (one-way delay ms, rate bit/s, loss each way; rate 0 = no emulator)
LINKS = {
    "lan": (0, 0, 0),
    "2ms-100M": (1, 100e6, 0),
    "2ms-1G": (1, 1e9, 0),
    "20ms-100M": (10, 100e6, 0),
    "20ms-1G": (10, 1e9, 0),
    "20ms-100M-0.1pct": (10, 100e6, 0.001),
    "20ms-100M-1pct": (10, 100e6, 0.01),
    "50ms-50M-0.5pct": (25, 50e6, 0.005),
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
    "w1mbig": ("write", 1 * MIB, "write 1 MiB, 64 MiB copy"),
    "r1mbig": ("read", 1 * MIB, "read 1 MiB, 64 MiB copy"),
    # documents and small files (tests/bench/docbench.sh): fixed sizes
    "doc": ("read", 4 * KIB, "open a document: random 4 KiB reads"),
    "docre": ("read", 4 * KIB, "reopen it (new connection)"),
    "docl": ("read", 4 * KIB, "open a document, R lease, [dur] default policy"),
    "doclre": ("read", 4 * KIB, "reopen it, R lease, same connection, [dur]"),
    "mget": ("read", 8 * KIB, "mget of 8 KiB files"),
    "mputflat": ("mput", 8 * KIB, "mput of 100 x 8 KiB files, one folder"),
    "save": ("write", 4 * KIB, "Office-style save"),
    "savel": ("write", 4 * KIB, "Office-style save, RWH lease, [dur] default policy"),
}
DOC_WORKLOADS = ("doc", "docre", "docl", "doclre", "mget", "save", "savel")
WORKLOAD_ORDER = list(WORKLOADS)
LONG = ("seed", "r4kbig", "w1mbig", "r1mbig")
CONFIGS = ("direct", "smbaccel", "cubic", "leased", "haproxy")
ACCELS = ("smbaccel", "cubic", "leased")     # the smbaccel instances
CONFIG_LABEL = {"direct": "direct", "smbaccel": "smbaccel",
                "cubic": "smbaccel cubic", "leased": "smbaccel leased",
                "haproxy": "haproxy"}
MSS = 1448

# mode: time box (s), seed count, long-copy size, mput file count, caps
MODES = {
    "full": dict(tbox=10.0, seed=250000, big=64 * MIB, files=500, step=64 * KIB, minfiles=10,
                 cap={"w1k": 64 * MIB, "w4k": 128 * MIB, "w64k": 512 * MIB,
                      "w1m": 512 * MIB, "r4k": 128 * MIB, "r1m": 512 * MIB}),
    "quick": dict(tbox=2.0, seed=31250, big=16 * MIB, files=100, step=64 * KIB, minfiles=10,
                  cap={"w1k": 8 * MIB, "w4k": 16 * MIB, "w64k": 64 * MIB,
                       "w1m": 64 * MIB, "r4k": 16 * MIB, "r1m": 64 * MIB}),
    "smoke": dict(tbox=0.3, seed=2000, big=2 * MIB, files=20, step=16 * KIB, minfiles=5,
                  cap={"w1k": 256 * KIB, "w4k": 512 * KIB, "w64k": 2 * MIB,
                       "w1m": 4 * MIB, "r4k": 512 * KIB, "r1m": 4 * MIB}),
}
SEED_STEP = 50          # seed-cell counts are multiples of 50 (50 KiB)


def stream_bps(link):
    """Bit/s one CUBIC stream gets on link: its rate, or on a lossy link the
    Mathis et al. estimate MSS / (RTT sqrt(p)) (constant 1, between the
    1.22 of the paper and what wanlink measures at 1 %); 0 on lan."""
    delay_ms, rate, loss = LINKS[link]
    if not rate:
        return 0
    if not loss:
        return rate
    rtt = 2 * delay_ms / 1000.0
    return min(rate, MSS * 8 / (rtt * loss ** 0.5))


def op_seconds(link, block, kind):
    """Estimated wall time of one direct synchronous request (or one file)."""
    delay_ms, rate, _ = LINKS[link]
    rtt = 2 * delay_ms / 1000.0
    bps = stream_bps(link)
    if kind == "mput":
        return 4e-3 + 4.2 * rtt + (block * 8 / bps if bps else 0)
    t = 110e-6 + block / 400e6 + 1.3 * rtt
    if bps:
        t += block * 8 / bps
    return t


def long_count(full, block, step, secs, bps):
    """Blocks of a long cell that fit in secs at bps (0: unlimited)."""
    if not bps:
        return full
    n = int(secs * bps / 8 / block) // step * step
    return max(step, min(full, n))


def plan(mode, link, wl, tbox=None):
    m = dict(MODES[mode])
    if tbox:
        m["tbox"] = float(tbox)
    kind, block, _ = WORKLOADS[wl]
    if wl == "mputflat":
        # the documents issue's mput: 100 files in one folder (mput's own
        # cell is a time-boxed tree of ten folders)
        n = 100 if mode != "smoke" else 10
        op = op_seconds(link, block, "mput")
        return dict(kind=kind, block=block, count=n, count_accel=n, count_cubic=n,
                    est=round(n * op, 1))
    if wl in DOC_WORKLOADS:
        # the fixed workloads: COUNT reads (or mget's files); the
        # file and save sizes are docbench.sh's
        n = (100 if wl == "mget" else 400) if mode != "smoke" else (10 if wl == "mget" else 50)
        per = op_seconds(link, block, "mput" if wl == "mget" else "read")
        return dict(kind=kind, block=block, count=n, count_accel=n, count_cubic=n,
                    est=round(n * per, 1))
    op = op_seconds(link, block, kind)
    _, rate, _ = LINKS[link]
    if kind == "mput":
        n = max(m["minfiles"], min(m["files"], int(m["tbox"] / op) // 5 * 5))
        return dict(kind=kind, block=block, count=n, count_accel=n,
                    count_cubic=n, est=round(n * op, 1))
    if wl in LONG:
        if wl == "seed":
            full, step, box = m["seed"], SEED_STEP, 2 * m["tbox"]
        else:
            full = m["big"] // block
            step = max(1, m["step"] // block)
            box = m["tbox"] if wl == "r4kbig" else 2 * m["tbox"]
        n = int(box / op) // step * step
        n = max(step, min(full, n))
        # smbaccel: writes leave on its bbr socket (about the link rate);
        # reads come from the server's CUBIC.  cubic: both at CUBIC's rate.
        a_bps = 0.9 * rate if kind == "write" else stream_bps(link)
        c_bps = stream_bps(link)
        na = long_count(full, block, step, 6 * m["tbox"], a_bps)
        nc = long_count(full, block, step, 2 * m["tbox"], c_bps)
        return dict(kind=kind, block=block, count=n, count_accel=na,
                    count_cubic=max(n, nc), est=round(n * op, 1))
    step = max(1, m["step"] // block)       # sizes: multiples of 64 KiB (16 in smoke)
    n = int(m["tbox"] / op) // step * step
    n = max(step, min(m["cap"][wl] // block, n))
    return dict(kind=kind, block=block, count=n, count_accel=n,
                count_cubic=n, est=round(n * op, 1))


def cmd_plan(args):
    mode, link, wl = args[:3]
    p = plan(mode, link, wl, args[3] if len(args) > 3 else None)
    delay_ms, rate, loss = LINKS[link]
    p.update(delay=delay_ms, rate=int(rate), loss=loss)
    for k, v in p.items():
        print("P_%s=%s" % (k, v))


def cmd_plan_all(args):
    mode, tbox, links, wls = args
    tbox = None if tbox in ("", "-") else tbox
    for l in links.split(","):
        for w in wls.split(","):
            p = plan(mode, l, w, tbox)
            delay_ms, rate, loss = LINKS[l]
            print("PLAN[%s/%s]='%s %d %d %d %d %s %d %d %g'" % (
                l, w, p["kind"], p["block"], p["count"], p["count_accel"],
                p["count_cubic"], p["est"], delay_ms, int(rate), loss * 100))


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
    # a cell's runs: one per configuration and repetition (--reps)
    cells = {}
    for r in rows:
        cells.setdefault((r["link"], r["workload"], r.get("rep") or "1"), {})[r["config"]] = r

    fields = ["link", "rtt_ms", "rate_mbit", "loss_pct", "workload", "block",
              "config", "rep", "bytes", "seconds", "mbps", "ratio_direct",
              "ratio_link", "ops", "client_cpu_us_per_op", "wall_us_per_op",
              "upstream_reqs", "upstream_reqs_per_mib", "proxy_cpu_s",
              "proxy_cpu_s_per_gib", "proxy_peak_rss_kib", "wan_loss_drops",
              "wan_queue_drops", "tun_drops", "load1", "data", "note"]
    res = []
    for (link, wl, _), cfgs in cells.items():
        direct = num(cfgs.get("direct", {}).get("mbps"))
        for cfg in CONFIGS:
            r = cfgs.get(cfg)
            if r is None:
                continue
            mbps, b = num(r["mbps"]), num(r["bytes"])
            ops, secs = num(r["ops"]), num(r["seconds"])
            rate = num(r["rate_mbit"])
            reqs = num(r["upstream_reqs"])
            if cfg in ACCELS and r.get("stats"):
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
                       CONFIGS.index(o["config"]), int(o.get("rep") or 1))
    res.sort(key=order)
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(res)

    # With --reps the tables show each configuration's median run (by
    # MB/s; with an even count the lower one), its data verdict the worst
    # of its runs, and as its ratio against direct the median of the
    # ratios of each run against the direct run of the same repetition
    # (made seconds apart, under the same load).  A run whose data was
    # not ok (MISMATCH, SIZE, ERROR) counts in the verdict only: its
    # speed enters no median and no ratio.  When no run of a
    # configuration was ok, its MB/s is the median of them all (flagged)
    # and its ratio "-": a ratio needs an ok run on both sides.
    runs = {}
    for o in res:
        runs.setdefault((o["link"], o["workload"], o["config"]), {})[o.get("rep") or "1"] = o

    def rep_ratios(link, wl, x, y):
        """MB/s of x over MB/s of y, run by run (same repetition)."""
        a, b = runs.get((link, wl, x), {}), runs.get((link, wl, y), {})
        return [ratio(num(a[k]["mbps"]), num(b[k]["mbps"])) for k in sorted(a, key=int)
                if k in b and a[k]["data"] == "ok" and b[k]["data"] == "ok" and
                ratio(num(a[k]["mbps"]), num(b[k]["mbps"])) is not None]

    def median(xs):
        xs = sorted(x for x in xs if x is not None)
        return xs[(len(xs) - 1) // 2] if xs else None

    by = {}
    for key, rk in runs.items():
        rs = list(rk.values())
        timed = [o for o in rs if num(o["mbps"]) is not None]
        ok = [o for o in timed if o["data"] == "ok"] or timed
        srt = sorted(ok, key=lambda o: num(o["mbps"])) or rs
        m = dict(srt[(len(srt) - 1) // 2])
        bad = [o["data"] for o in rs if o["data"] != "ok"]
        if bad:
            m["data"] = bad[0] + ("" if len(rs) == 1 else " (%d of %d runs)" % (len(bad), len(rs)))
        m["runs"] = len(rs)
        m["ratios"] = rep_ratios(key[0], key[1], key[2], "direct")
        if len(rs) > 1:
            m["ratio_direct"] = fmt(median(m["ratios"]), 2)
        by[key] = m
    nreps = max([m["runs"] for m in by.values()] or [1])

    def load_range(cell, cfgs):
        """'lo-hi': the 1-minute load average over every run of a cell."""
        ls = [num(o.get("load1")) for c in cfgs for o in runs.get(cell + (c,), {}).values()]
        ls = [x for x in ls if x is not None]
        return "%.1f-%.1f" % (min(ls), max(ls)) if ls else "-"

    def each(xs):
        """' (a, b, c)': every run's ratio, when there were several."""
        return " (%s)" % ", ".join(fmt(x, 2) for x in xs) if nreps > 1 and xs else ""

    def g(r, k):
        return num(r.get(k)) if r else None

    has_leased = any(o["config"] == "leased" for o in res)
    lines = []
    lines.append("| link | workload | MiB (direct / accel / cubic) | direct MB/s | smbaccel MB/s "
                 "| smbaccel cubic MB/s | " + ("smbaccel leased MB/s | " if has_leased else "") +
                 "haproxy MB/s | accel / direct | cubic / direct | " +
                 ("leased / direct | " if has_leased else "") +
                 "haproxy / direct | accel / link | cubic / link | req/MiB direct → accel "
                 "| accel CPU s/GiB | accel peak RSS MiB | client CPU µs/op d / a "
                 "| wall µs/op d / a | data |")
    lines.append("|" + "---|" * (20 if has_leased else 18))
    seen = []
    for o in res:
        key = (o["link"], o["workload"])
        if key in seen:
            continue
        seen.append(key)
        d, a, c, le, h = (by.get(key + (x,), {}) for x in CONFIGS)
        sizes = []
        for r in (d, a, c):
            b = g(r, "bytes")
            sizes.append(fmt(b / MIB) if b else "-")
        if len(set(x for x in sizes if x != "-")) <= 1:
            size = next((x for x in sizes if x != "-"), "-")
        else:
            size = " / ".join(sizes)
        rss = g(a, "proxy_peak_rss_kib")
        got = [(x, r) for x, r in zip(CONFIGS, (d, a, c, le, h)) if r]
        data = "ok" if all(r.get("data") == "ok" for _, r in got) else ",".join(
            "%s:%s" % (x, r.get("data")) for x, r in got if r.get("data") != "ok")
        lines.append("| %s |" % " | ".join(
            [o["link"], WORKLOADS.get(o["workload"], ("", 0, o["workload"]))[2], size,
             fmt(g(d, "mbps"), 2), fmt(g(a, "mbps"), 2), fmt(g(c, "mbps"), 2)] +
            ([fmt(g(le, "mbps"), 2)] if has_leased else []) +
            [fmt(g(h, "mbps"), 2),
             fmt(g(a, "ratio_direct"), 2), fmt(g(c, "ratio_direct"), 2)] +
            ([fmt(g(le, "ratio_direct"), 2)] if has_leased else []) +
            [fmt(g(h, "ratio_direct"), 2),
             fmt(g(a, "ratio_link"), 2), fmt(g(c, "ratio_link"), 2),
             "%s → %s" % (fmt(g(d, "upstream_reqs_per_mib"), 0), fmt(g(a, "upstream_reqs_per_mib"), 1)),
             fmt(g(a, "proxy_cpu_s_per_gib"), 2), fmt(rss / 1024 if rss else None),
             "%s / %s" % (fmt(g(d, "client_cpu_us_per_op")), fmt(g(a, "client_cpu_us_per_op"))),
             "%s / %s" % (fmt(g(d, "wall_us_per_op")), fmt(g(a, "wall_us_per_op"))),
             data]))
    table = "\n".join(lines) + "\n"
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(table)
    sys.stdout.write(table)

    # lossy links at a glance: large writes, small writes, large reads
    lossy = [l for l in LINK_ORDER if l.startswith(("20ms-100M", "50ms"))
             and any(o["link"] == l for o in res)]
    lt = ["| link | workload | direct MB/s | smbaccel (bbr) MB/s | smbaccel cubic MB/s "
          "| accel / link | cubic / link | accel / direct | cubic / direct |",
          "|" + "---|" * 9]
    for l in lossy:
        for wl in ("w1mbig", "w1m", "seed", "r1mbig", "r1m"):
            d, a, c = (by.get((l, wl, x), {}) for x in ("direct", "smbaccel", "cubic"))
            if not (d or a or c):
                continue
            lt.append("| %s |" % " | ".join([
                l, WORKLOADS[wl][2], fmt(g(d, "mbps"), 2), fmt(g(a, "mbps"), 2),
                fmt(g(c, "mbps"), 2), fmt(g(a, "ratio_link"), 2), fmt(g(c, "ratio_link"), 2),
                fmt(g(a, "ratio_direct"), 2), fmt(g(c, "ratio_direct"), 2)]))
    with open(os.path.join(out, "loss.md"), "w") as f:
        f.write("\n".join(lt) + "\n")
    if lossy:
        sys.stdout.write("\nLossy links (the long cells where they ran):\n\n" + "\n".join(lt) + "\n")

    # documents and small files: seconds of each configuration (the same
    # work in each), ratios against direct, upstream requests
    present = [x for x in CONFIGS if any(o["config"] == x for o in res)]
    others = [x for x in present if x != "direct"]
    dt = ["| link | workload | " + " | ".join("%s s" % CONFIG_LABEL[x] for x in present) + " | " +
          " | ".join("%s / direct" % CONFIG_LABEL[x] for x in others) +
          " | requests upstream: direct → " + " / ".join(CONFIG_LABEL[x] for x in others
                                                         if x in ACCELS) +
          " | load | data |",
          "|" + "---|" * (len(present) + len(others) + 5)]
    for l in LINK_ORDER:
        for wl in DOC_WORKLOADS[:4] + ("mget", "mputflat", "mput", "save", "savel"):
            rs = {x: by.get((l, wl, x)) for x in present}
            if not any(rs.values()):
                continue
            got = [(x, r) for x, r in rs.items() if r]
            data = "ok" if all(r.get("data") == "ok" for _, r in got) else ",".join(
                "%s:%s" % (x, r.get("data")) for x, r in got if r.get("data") != "ok")
            loads = load_range((l, wl), present)
            dt.append("| %s |" % " | ".join(
                [l, WORKLOADS[wl][2]] +
                [fmt(g(rs[x], "seconds"), 3) for x in present] +
                [fmt(g(rs[x], "ratio_direct"), 2) + each((rs[x] or {}).get("ratios"))
                 for x in others] +
                ["%s → %s" % (fmt(g(rs.get("direct"), "ops"), 0), " / ".join(
                    fmt(g(rs[x], "upstream_reqs"), 0) for x in others if x in ACCELS))] +
                [loads, data]))
    if len(dt) > 2:
        with open(os.path.join(out, "docs.md"), "w") as f:
            f.write("\n".join(dt) + "\n")
        sys.stdout.write("\nDocuments and small files (seconds of the timed part; "
                         "ratio = direct s / config s):\n\n" + "\n".join(dt) + "\n")

    # the default policy (leased: leased gates, proxy_lease on) against
    # always (smbaccel), where both ran on a cell
    pt = ["| link | workload | MiB (direct / always / default) | direct MB/s | always MB/s "
          "| default MB/s | default / always | default / direct | req/MiB always → default "
          "| load | data |", "|" + "---|" * 11]
    for key in sorted({k[:2] for k in by if k[2] == "leased"},
                      key=lambda k: (LINK_ORDER.index(k[0]) if k[0] in LINK_ORDER else 99,
                                     WORKLOAD_ORDER.index(k[1]) if k[1] in WORKLOAD_ORDER else 99)):
        d, a, o = (by.get(key + (x,), {}) for x in ("direct", "smbaccel", "leased"))
        if not a:
            continue
        got = [(x, r) for x, r in (("direct", d), ("smbaccel", a), ("leased", o)) if r]
        data = "ok" if all(r.get("data") == "ok" for _, r in got) else ",".join(
            "%s:%s" % (x, r.get("data")) for x, r in got if r.get("data") != "ok")
        loads = load_range(key, ("direct", "smbaccel", "leased"))
        pt.append("| %s |" % " | ".join([
            o["link"], WORKLOADS.get(o["workload"], ("", 0, o["workload"]))[2],
            " / ".join(fmt(g(r, "bytes") / MIB) if g(r, "bytes") else "-" for r in (d, a, o)),
            fmt(g(d, "mbps"), 2), fmt(g(a, "mbps"), 2), fmt(g(o, "mbps"), 2),
            fmt(median(rep_ratios(o["link"], o["workload"], "leased", "smbaccel")), 2) +
            each(rep_ratios(o["link"], o["workload"], "leased", "smbaccel")),
            fmt(g(o, "ratio_direct"), 2),
            "%s → %s" % (fmt(g(a, "upstream_reqs_per_mib"), 1), fmt(g(o, "upstream_reqs_per_mib"), 1)),
            loads, data]))
    if len(pt) > 2:
        with open(os.path.join(out, "policy.md"), "w") as f:
            f.write("\n".join(pt) + "\n")
        sys.stdout.write("\nThe default policy against always (no-lease client):\n\n" +
                         "\n".join(pt) + "\n")

    # gnuplot data: per link, plot-LINK-w.dat (writes), plot-LINK-r.dat
    # (reads) and plot-LINK-l.dat (the long cells), one line per block
    # size: block direct smbaccel cubic haproxy (MB/s)
    links = [l for l in LINK_ORDER if any(o["link"] == l for o in res)]
    for l in links:
        for suffix, pts in (("w", ((1024, "w1k"), (4096, "w4k"), (65536, "w64k"), (1048576, "w1m"))),
                            ("r", ((4096, "r4k"), (1048576, "r1m"))),
                            ("l", ((1024, "seed"), (4096, "r4kbig"), (1048576, "w1mbig"),
                                   (1048576, "r1mbig")))):
            with open(os.path.join(out, "plot-%s-%s.dat" % (l, suffix)), "w") as f:
                f.write("# block direct smbaccel cubic haproxy (MB/s)\n")
                for blk, wl in pts:
                    vals = [str(blk)]
                    for cfg in ("direct", "smbaccel", "cubic", "haproxy"):
                        v = num(by.get((l, wl, cfg), {}).get("mbps"))
                        vals.append("NaN" if v is None or v <= 0 else "%.4f" % v)
                    f.write(" ".join(vals) + "\n")
    # the loss chart: 20 ms / 100 Mbit/s at each loss rate
    with open(os.path.join(out, "plot-loss.dat"), "w") as f:
        f.write("# loss_pct then direct smbaccel cubic (MB/s) for w1mbig, seed, r1mbig\n")
        for l in ("20ms-100M", "20ms-100M-0.1pct", "20ms-100M-1pct"):
            if l not in links:
                continue
            vals = ["%g" % max(LINKS[l][2] * 100, 0.01)]
            for wl in ("w1mbig", "seed", "r1mbig"):
                for cfg in ("direct", "smbaccel", "cubic"):
                    v = num(by.get((l, wl, cfg), {}).get("mbps"))
                    vals.append("NaN" if v is None or v <= 0 else "%.4f" % v)
            f.write(" ".join(vals) + "\n")
    with open(os.path.join(out, "links.txt"), "w") as f:
        f.write(" ".join(links) + "\n")
    with open(os.path.join(out, "rates.txt"), "w") as f:
        f.write(" ".join("%g" % (LINKS.get(l, (0, 0, 0))[1] / 8e6) for l in links) + "\n")


def cmd_link(args):
    """Shell assignments for one link: L_delay L_rate L_loss L_emulated."""
    delay_ms, rate, loss = LINKS[args[0]]
    print("L_delay=%s L_rate=%d L_loss=%g L_emulated=%s" % (
        delay_ms, int(rate), loss * 100, "yes" if rate else "no"))


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    cmd, args = sys.argv[1], sys.argv[2:]
    {"plan": cmd_plan, "plan-all": cmd_plan_all, "reqs": cmd_reqs,
     "report": cmd_report, "link": cmd_link}[cmd](args)


if __name__ == "__main__":
    main()
