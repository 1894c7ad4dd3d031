# plot.gp - throughput against block size, one panel per link.
#
#   gnuplot -e "dir='bench-results'; links='lan 20ms-100M'; rates='0 12.5'; out='x.png'" tests/bench/plot.gp
#
# Reads DIR/plot-LINK-w.dat (writes), DIR/plot-LINK-r.dat (reads) and
# DIR/plot-LINK-l.dat (the long cells: seed, r4kbig, w1mbig, r1mbig), made
# by `benchlib.py report`: columns block, direct, smbaccel, smbaccel with
# upstream_congestion = cubic, haproxy (MB/s).  rates: each link's rate in
# MB/s (0: no emulator), in the order of links.
if (!exists("dir")) dir = "bench-results"
if (!exists("links")) links = "lan"
if (!exists("rates")) rates = "0"
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
set key bottom right font "sans,7" spacing 0.85
set multiplot layout rows, cols title ttl font "sans,11"

do for [i = 1:n] {
	lk = word(links, i)
	rate = real(word(rates, i))
	fw = dir."/plot-".lk."-w.dat"
	fr = dir."/plot-".lk."-r.dat"
	fl = dir."/plot-".lk."-l.dat"
	ltitle = (rate > 0) ? sprintf("%s (%g MB/s each way)", lk, rate) : lk." (veth, no emulator)"
	set title ltitle font "sans,10"
	plot fw u 1:2 w lp lw 2 pt 7 lc rgb "#d62728" t "direct write", \
	     fw u 1:3 w lp lw 2 pt 5 lc rgb "#1f77b4" t "smbaccel write", \
	     fw u 1:4 w lp lw 1 pt 13 lc rgb "#ff7f0e" t "smbaccel (cubic) write", \
	     fw u 1:5 w lp lw 1 pt 9 lc rgb "#7f7f7f" t "haproxy write", \
	     fr u 1:2 w lp lw 2 dt 2 pt 6 lc rgb "#d62728" t "direct read", \
	     fr u 1:3 w lp lw 2 dt 2 pt 4 lc rgb "#1f77b4" t "smbaccel read", \
	     fr u 1:4 w lp lw 1 dt 2 pt 12 lc rgb "#ff7f0e" t "smbaccel (cubic) read", \
	     fr u 1:5 w lp lw 1 dt 2 pt 8 lc rgb "#7f7f7f" t "haproxy read", \
	     fl u 1:3 w p pt 3 ps 2 lc rgb "#2ca02c" t "smbaccel, long runs (seed, r4kbig, 64 MiB copies)", \
	     (rate > 0 ? rate : 1/0) w l lw 1 dt 3 lc rgb "black" t "link rate"
}
unset multiplot
