#!/bin/bash
# sanitizer: no (performance figures; uses bin/smbaccel)
# The benchmark (tests/bench/run) at tiny sizes, so its code cannot rot:
# every link and every workload, direct and through smbaccel (haproxy on
# loopback).  Asserts only that every cell produced a number, that the data
# was intact (the bench's own checksum and read-verify checks) and that the
# CSV and the chart were written.  Never asserts a speed.
# test-timeout: 900
. "$(dirname "$0")/lib.sh"

command -v gnuplot >/dev/null || skip "gnuplot not installed"
command -v haproxy >/dev/null || skip "haproxy not installed"
[ -x "$TOP/bin/wanem" ] || skip "bin/wanem not built"

OUT=$T/out
info "tests/bench/run --smoke (a few minutes)"
# TMPDIR=$T: the bench's own temp directory (and its smbd) live under ours,
# so the runner can find leftovers if this test is killed.
# two links keep it short; every workload still runs on each
TMPDIR=$T bash "$TOP/tests/bench/run" --smoke --links loopback,20ms-100M --out "$OUT" > "$T/bench.out" 2>&1
rc=$?
cat "$T/bench.out"
[ -f "$OUT/results.csv" ] || fail "no results.csv (bench exit status $rc)"

# Every (link, workload) cell: direct and smbaccel rows (haproxy where it
# ran), each with a positive MB/s and data=ok.
"$PY" - "$OUT/results.csv" <<'EOF' || fail "results.csv is incomplete or shows bad data"
import csv, sys
links = ["loopback", "20ms-100M"]
wls = ["w1k", "w4k", "w64k", "w1m", "r4k", "r1m", "mput", "seed", "r4kbig",
       "doc", "docre", "docl", "doclre", "mget", "save", "savel"]
rows = list(csv.DictReader(open(sys.argv[1])))
got = {(r["link"], r["workload"], r["config"]): r for r in rows}
bad = 0
for l in links:
    for w in wls:
        cfgs = ["direct", "smbaccel"] + (["haproxy"] if l == "loopback" else [])
        for c in cfgs:
            r = got.get((l, w, c))
            if r is None:
                print("missing cell %s %s %s" % (l, w, c)); bad += 1; continue
            try:
                ok = float(r["mbps"]) > 0
            except ValueError:
                ok = False
            if not ok:
                print("no number for %s %s %s: %r" % (l, w, c, r["mbps"])); bad += 1
            if r["data"] != "ok":
                print("data %s for %s %s %s: %s" % (r["data"], l, w, c, r["note"])); bad += 1
            if c == "smbaccel" and w != "mput" and not r["upstream_reqs"]:
                print("no upstream request count for %s %s" % (l, w)); bad += 1
print("%d rows checked, %d problems" % (len(rows), bad))
sys.exit(1 if bad else 0)
EOF
[ -s "$OUT/throughput.png" ] || fail "no chart"
head -c 8 "$OUT/throughput.png" | od -An -c | grep -q 'P   N   G' || fail "throughput.png is not a PNG"
assert_ge 18 "$(grep -c '^| [0-9a-z]' "$OUT/table.md")" "table rows"
assert_eq 0 "$rc" "bench exit status"
info "PASS"
