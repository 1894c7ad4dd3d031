#!/bin/bash
# test-timeout: 60
# The benchmark's tables with --reps (tests/bench/benchlib.py report): a
# run whose data was wrong (MISMATCH, SIZE, ERROR) is flagged in the data
# column and enters no median and no ratio.  Before, a run that wrote
# the wrong bytes fast could become the median and make the ratio: in
# this raw.csv the mismatching smbaccel run (10 MB/s) turned a median of
# 1.00 MB/s, 10x direct, into 2.00 MB/s and 20x.  When no run of a
# configuration was ok, its MB/s is the median of them all, flagged, and
# its ratio "-" (it was the median of the wrong runs' ratios).
# No server: the raw results are written here.
. "$(dirname "$0")/lib.sh"
D=$T/bench
mkdir -p "$D"
{
	echo "link,rtt_ms,rate_mbit,loss_pct,workload,block,config,rep,bytes,seconds,mbps,ops,client_cpu_us_per_op,upstream_reqs,proxy_cpu_s,proxy_peak_rss_kib,wan_loss_drops,wan_queue_drops,tun_drops,stats,load1,data,note"
	# w1k: smbaccel 1.00 / 10.00 (MISMATCH) / 2.00 MB/s, direct 0.10
	for r in "1 0.10 ok 1.00 ok" "2 0.10 ok 10.00 MISMATCH" "3 0.10 ok 2.00 ok"; do
		set -- $r
		echo "20ms-100M,40,100,0,w1k,1024,direct,$1,1048576,10,$2,1024,5,,,,0,0,0,,0.5,$3,"
		echo "20ms-100M,40,100,0,w1k,1024,smbaccel,$1,1048576,1,$4,1024,5,,0.1,1000,0,0,0,,0.5,$5,"
	done
	# w64k: every smbaccel run wrong; direct's rep 2 failed
	for r in "1 1.00 ok 3.00" "2 9.00 ERROR 4.00" "3 1.00 ok 5.00"; do
		set -- $r
		echo "20ms-100M,40,100,0,w64k,65536,direct,$1,1048576,1,$2,16,5,,,,0,0,0,,0.5,$3,"
		echo "20ms-100M,40,100,0,w64k,65536,smbaccel,$1,1048576,1,$4,16,5,,0.1,1000,0,0,0,,0.5,SIZE,size 0"
	done
} > "$D/raw.csv"
"$PY" "$TOP/tests/bench/benchlib.py" report "$D" > "$T/report.out" 2>&1 ||
    { cat "$T/report.out"; fail "benchlib.py report failed"; }
cat "$D/table.md"
# row fields: 1 empty, 2 link, 3 workload, 4 MiB, 5 direct, 6 smbaccel MB/s,
# 9 accel / direct, last but one: data
row() { grep "^| 20ms-100M | $1 |" "$D/table.md" | head -n 1; }
col() { awk -F' [|] ' -v n="$2" '{ print $n }' <<<"$(row "$1")"; }
w1k=$(row "write 1 KiB") w64k=$(row "write 64 KiB")
[ -n "$w1k" ] && [ -n "$w64k" ] || fail "table.md lacks the two rows"
assert_eq "0.10 1.00 10.0" "$(col "write 1 KiB" 4) $(col "write 1 KiB" 5) $(col "write 1 KiB" 8)" \
    "w1k: direct MB/s, smbaccel MB/s (median of the ok runs) and accel / direct"
grep -q "smbaccel:MISMATCH (1 of 3 runs)" <<<"$w1k" || fail "w1k: the mismatching run is not flagged: $w1k"
# no ok run: the median of all three (4.00), and no ratio
assert_eq "1.00 4.00 -" "$(col "write 64 KiB" 4) $(col "write 64 KiB" 5) $(col "write 64 KiB" 8)" \
    "w64k: direct MB/s, smbaccel MB/s (all runs wrong) and accel / direct"
grep -q "smbaccel:SIZE (3 of 3 runs)" <<<"$w64k" || fail "w64k: the wrong runs are not flagged: $w64k"
grep -q "direct:ERROR (1 of 3 runs)" <<<"$w64k" || fail "w64k: the failed direct run is not flagged: $w64k"
info "PASS"
