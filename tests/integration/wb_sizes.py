#!/usr/bin/python3
"""wb_sizes.py JSON write|read MINFRAC EXPECTED_BYTES [MAXSIZE] [LABEL] [CLIENT]

Checks the output of tests/tools/upstream-sizes (run with --min M):
 write: the WRITE requests carried at least EXPECTED_BYTES, at least
        MINFRAC of their bytes in WRITEs of >= M, none above MAXSIZE.
 read:  of the bytes READ requests asked for, at least MINFRAC were in
        READs of >= M (the tool has no byte fraction for reads; computed
        here from the request histogram), and the READ responses returned
        at least EXPECTED_BYTES.  With CLIENT, READs of CLIENT bytes or
        fewer are the client's own reads, forwarded as they came (no
        lease, a random read): left out of the fraction, which is then of
        the bytes smbaccel's read-ahead asked for.
Prints a summary line (two for read with CLIENT); exit 1 on failure."""
import json
import sys

j = json.load(open(sys.argv[1]))
kind, minfrac, expected = sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
maxsize = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5] else None
label = sys.argv[6] if len(sys.argv) > 6 and sys.argv[6] else kind
client = int(sys.argv[7]) if len(sys.argv) > 7 and sys.argv[7] else 0
ok = True
if kind == "write":
    w = j["write"]
    hist = {int(k): v for k, v in w["histogram"].items()}
    big = max(hist, default=0)
    frac = w["fraction_bytes_ge_min"] or 0
    print("%s: upstream %d WRITEs, %d bytes, mean %s, %.1f%% of bytes in WRITEs >= %d, largest %d"
          % (label, w["count"], w["bytes"], w["mean"], 100 * frac, w["min"], big))
    if w["bytes"] < expected:
        print("  FAIL: only %d of %d bytes went upstream in WRITEs" % (w["bytes"], expected))
        ok = False
    if frac < minfrac:
        print("  FAIL: less than %.0f%% in large WRITEs; histogram %s" % (100 * minfrac, sorted(hist.items())[:40]))
        ok = False
    if maxsize is not None and big > maxsize:
        print("  FAIL: a WRITE of %d bytes exceeds %d" % (big, maxsize))
        ok = False
else:
    r = j["read"]
    req = {int(k): v for k, v in r["histogram"].items()}
    resp = {int(k): v for k, v in r["response_histogram"].items()}
    m = int(j["write"]["min"])
    asked = sum(k * v for k, v in req.items())
    own = sum(k * v for k, v in req.items() if k <= client)
    big = sum(k * v for k, v in req.items() if k >= m)
    got = sum(k * v for k, v in resp.items())
    frac = big / (asked - own) if asked > own else 0
    print("%s: upstream %d READs asking %d bytes, %.1f%% in READs >= %d; responses returned %d bytes"
          % (label, sum(req.values()), asked, 100 * big / asked if asked else 0, m, got))
    if client:
        print("%s: %d bytes in the client's own READs (<= %d); of the other %d, %.1f%% in READs >= %d"
              % (label, own, client, asked - own, 100 * frac, m))
    if got < expected:
        print("  FAIL: READ responses returned only %d of %d bytes" % (got, expected))
        ok = False
    if frac < minfrac:
        print("  FAIL: less than %.0f%% of %s bytes in large READs; histogram %s"
              % (100 * minfrac, "read-ahead's" if client else "read", sorted(req.items())[:40]))
        ok = False
print("other: %s" % j.get("other"))
sys.exit(0 if ok else 1)
