# tests/bench/medci.awk - how far the median of a few noisy figures can be
# trusted: a percentile bootstrap interval of the median.
#
#   echo "12 3 21 11 24" | awk -f tests/bench/medci.awk [-v level=90] [-v b=4000]
#
# Reads numbers (any whitespace, any number of lines), draws b samples of
# the same size with replacement (a fixed seed: the same input gives the
# same answer), takes the median of each, and prints "lo hi": the
# (100-level)/2 and (100+level)/2 percentiles of those medians.  Fewer
# than 2 numbers: prints nothing and exits 1.  Plain POSIX awk (Debian's
# default is mawk, which has no asort).

function isort(a, n,    i, j, v) {
	for (i = 2; i <= n; i++) {
		v = a[i]
		for (j = i - 1; j >= 1 && a[j] > v; j--)
			a[j + 1] = a[j]
		a[j + 1] = v
	}
}

function med(a, n) {
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}

# shell sort: b medians, too many for insertion sort
function ssort(a, n,    gap, i, j, v) {
	for (gap = int(n / 2); gap > 0; gap = int(gap / 2))
		for (i = gap + 1; i <= n; i++) {
			v = a[i]
			for (j = i - gap; j >= 1 && a[j] > v; j -= gap)
				a[j + gap] = a[j]
			a[j + gap] = v
		}
}

{
	for (i = 1; i <= NF; i++)
		x[++n] = $i + 0
}

END {
	if (n < 2)
		exit 1
	if (level == "")
		level = 90
	if (b == "")
		b = 4000
	srand(1)
	for (k = 1; k <= b; k++) {
		for (i = 1; i <= n; i++)
			s[i] = x[int(rand() * n) + 1]
		isort(s, n)
		m[k] = med(s, n)
	}
	ssort(m, b)
	lo = int(b * (100 - level) / 200) + 1
	hi = int(b * (100 + level) / 200)
	if (lo < 1)
		lo = 1
	if (hi > b)
		hi = b
	printf "%g %g\n", m[lo], m[hi]
}
