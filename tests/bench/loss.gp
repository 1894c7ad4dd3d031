# loss.gp - one 20 ms / 100 Mbit/s link at 0, 0.1 and 1 % loss each way:
# MB/s of 1 MiB writes (64 MiB copy), 1 KiB writes (seed) and 1 MiB reads
# (64 MiB copy), direct, through smbaccel (bbr upstream) and through
# smbaccel with upstream_congestion = cubic.
#
#   gnuplot -e "dir='bench-results'; out='loss.png'" tests/bench/loss.gp
#
# Reads DIR/plot-loss.dat (benchlib.py report): loss % (0 drawn at 0.01),
# then direct, smbaccel, cubic for w1mbig, seed and r1mbig.
if (!exists("dir")) dir = "bench-results"
if (!exists("out")) out = dir."/loss.png"
f = dir."/plot-loss.dat"

set terminal pngcairo size 1200, 430 font "sans,9" noenhanced
set output out
set datafile missing "NaN"
set logscale xy
set xrange [0.007:1.5]
set yrange [0.02:20]
set xtics ("0" 0.01, "0.1 %%" 0.1, "1 %%" 1)
set format y "%g"
set grid xtics ytics mytics lc rgb "#dddddd"
set xlabel "loss each way (20 ms round trip, 100 Mbit/s)"
set ylabel "MB/s"
set key bottom left font "sans,8"
set multiplot layout 1, 3 title "smbaccel on a lossy link: what splitting TCP and the upstream congestion control give (client and server: CUBIC)" font "sans,11"
array T[3] = ["1 MiB writes, 64 MiB copy", "1 KiB writes (seed)", "1 MiB reads, 64 MiB copy"]
do for [k = 0:2] {
	set title T[k + 1] font "sans,10"
	plot f u 1:(column(2 + 3 * k)) w lp lw 2 pt 7 lc rgb "#d62728" t "direct", \
	     f u 1:(column(3 + 3 * k)) w lp lw 2 pt 5 lc rgb "#1f77b4" t "smbaccel (bbr upstream)", \
	     f u 1:(column(4 + 3 * k)) w lp lw 2 pt 13 lc rgb "#ff7f0e" t "smbaccel, upstream_congestion = cubic", \
	     12.5 w l lw 1 dt 3 lc rgb "black" t "link rate"
}
unset multiplot
