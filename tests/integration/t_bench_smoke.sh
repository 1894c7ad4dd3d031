#!/bin/bash
# sanitizer: no (performance figures; uses bin/smbaccel)
# The benchmark (tests/bench/run) at tiny sizes, so its code cannot rot:
# two links of its branch-office namespaces (lan, and the lossy
# 20ms-100M-1pct through bin/wanlink) and every workload, direct and
# through smbaccel (on lan also haproxy and the default-policy smbaccel,
# "leased"; smbaccel with upstream_congestion = cubic on the lossy link).
# The document workloads (docbench.sh) run on lan only: over the lossy
# link they would add ~45 s to make check.  Asserts only that every cell
# produced a number, that the data was intact (the bench's own checksum
# and read-verify checks) and that the CSV, the tables and the charts
# were written.  Never asserts a speed.
# test-timeout: 900
. "$(dirname "$0")/lib.sh"

command -v gnuplot >/dev/null || skip "gnuplot not installed"
command -v haproxy >/dev/null || skip "haproxy not installed"
[ -x "$TOP/bin/wanlink" ] || skip "bin/wanlink not built"
[ -c /dev/net/tun ] || skip "no /dev/net/tun (the bench's WAN is bin/wanlink)"

OUT=$T/out
info "tests/bench/run --smoke (a few minutes)"
# TMPDIR=$T: the bench's own temp directory (and its smbd) live under ours,
# so the runner can find leftovers if this test is killed.
# two links keep it short; every workload runs on lan, all but the
# document workloads on the lossy link
WLS=w1k,w4k,w64k,w1m,r4k,r1m,mput,seed,r4kbig,w1mbig,r1mbig
DOCS=doc,docre,docl,doclre,mget,save,savel,mputflat
TMPDIR=$T bash "$TOP/tests/bench/run" --smoke --links lan,20ms-100M-1pct --workloads "$WLS" \
    --link-workloads "lan=$WLS,$DOCS" --link-configs lan=direct,smbaccel,leased,haproxy \
    --out "$OUT" > "$T/bench.out" 2>&1
rc=$?
cat "$T/bench.out"
[ -f "$OUT/results.csv" ] || fail "no results.csv (bench exit status $rc)"

# Every (link, workload) cell: direct and smbaccel rows (haproxy where it
# ran), each with a positive MB/s and data=ok.
"$PY" - "$OUT/results.csv" "$WLS" "$DOCS" <<'EOF' || fail "results.csv is incomplete or shows bad data"
import csv, sys
wls, docs = sys.argv[2].split(","), sys.argv[3].split(",")
cells = {"lan": (wls + docs, ["direct", "smbaccel", "leased", "haproxy"]),
         "20ms-100M-1pct": (wls, ["direct", "smbaccel", "cubic"])}
rows = list(csv.DictReader(open(sys.argv[1])))
got = {(r["link"], r["workload"], r["config"]): r for r in rows}
bad = 0
for l, (lwls, cfgs) in cells.items():
    for w in lwls:
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
            if c in ("smbaccel", "cubic", "leased") and w not in ("mput", "mputflat") and not r["upstream_reqs"]:
                print("no upstream request count for %s %s %s" % (l, w, c)); bad += 1
print("%d rows checked, %d problems" % (len(rows), bad))
sys.exit(1 if bad else 0)
EOF
[ -s "$OUT/throughput.png" ] || fail "no chart"
head -c 8 "$OUT/throughput.png" | od -An -c | grep -q 'P   N   G' || fail "throughput.png is not a PNG"
assert_ge 29 "$(grep -c '^| [0-9a-z]' "$OUT/table.md")" "table rows"
assert_ge 9 "$(grep -c '^| lan' "$OUT/docs.md")" "rows of the documents table (7, mputflat and mput)"
assert_ge 18 "$(grep -c '^| lan' "$OUT/policy.md")" "rows of the default-policy table"
assert_ge 5 "$(grep -c '^| 20ms-100M-1pct' "$OUT/loss.md")" "rows of the lossy-link table"
grep -qE 'upstream sockets by congestion control.* bbr .* cubic' "$T/bench.out" ||
    fail "the bench did not run both upstream congestion controls"
assert_eq 0 "$rc" "bench exit status"
info "PASS"
