# plot.gp - throughput against block size, one panel per link.
#
#   gnuplot -e "dir='bench-results'; links='loopback 20ms-100M'; out='x.png'" tests/bench/plot.gp
#
# Reads DIR/plot-LINK-w.dat (writes), DIR/plot-LINK-r.dat (reads) and
# DIR/plot-LINK-l.dat (smbaccel's long runs: seed, r4kbig), made by
# `benchlib.py report`: columns block, direct, smbaccel, haproxy (MB/s).
if (!exists("dir")) dir = "bench-results"
if (!exists("links")) links = "loopback"
if (!exists("out")) out = dir."/throughput.png"
if (!exists("ttl")) ttl = "smbaccel: throughput against block size (smbdd, MB/s, log scales)"

n = words(links)
cols = (n >= 3) ? 3 : n
rows = int((n + cols - 1) / cols)

set terminal pngcairo size 520*cols, 420*rows + 40 font "sans,9"
set output out
set datafile missing "NaN"
set logscale xy
set xrange [700:1600000]
set xtics ("1K" 1024, "4K" 4096, "64K" 65536, "1M" 1048576)
set format y "%g"
set grid xtics ytics mytics lc rgb "#dddddd"
set xlabel "block size (bytes per client request)"
set ylabel "MB/s"
set key bottom right font "sans,8" spacing 0.9
set multiplot layout rows, cols title ttl font "sans,11"

do for [i = 1:n] {
	lk = word(links, i)
	fw = dir."/plot-".lk."-w.dat"
	fr = dir."/plot-".lk."-r.dat"
	fl = dir."/plot-".lk."-l.dat"
	# link rate in MB/s from the name (e.g. 20ms-100M), none on loopback
	rate = strstrt(lk, "100M") ? 12.5 : (strstrt(lk, "1G") ? 125.0 : 0)
	ltitle = (rate > 0) ? sprintf("%s (round trip %s, %g MB/s)", lk, lk[1:strstrt(lk, "-") - 1], rate) : lk." (no emulator)"
	set title ltitle font "sans,10"
	plot fw u 1:2 w lp lw 2 pt 7 lc rgb "#d62728" t "direct write", \
	     fw u 1:3 w lp lw 2 pt 5 lc rgb "#1f77b4" t "smbaccel write", \
	     fw u 1:4 w lp lw 1 pt 9 lc rgb "#7f7f7f" t "haproxy write", \
	     fr u 1:2 w lp lw 2 dt 2 pt 6 lc rgb "#d62728" t "direct read", \
	     fr u 1:3 w lp lw 2 dt 2 pt 4 lc rgb "#1f77b4" t "smbaccel read", \
	     fr u 1:4 w lp lw 1 dt 2 pt 8 lc rgb "#7f7f7f" t "haproxy read", \
	     fl u 1:3 w p pt 3 ps 2 lc rgb "#2ca02c" t "smbaccel, long run (seed 1K writes, r4kbig 4K reads)", \
	     (rate > 0 ? rate : 1/0) w l lw 1 dt 3 lc rgb "black" t "link rate"
}
unset multiplot
