#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Draw throughput vs threads from rangelock-bench's CSV with gnuplot.
#
#   rangelock-bench --csv=results.csv
#   bench/plot.sh results.csv [OUTDIR] [png|svg]
#
# Writes OUTDIR/throughput-<workload>-<ranges>.<fmt>, one chart per workload
# (read/write/mixed x full/random/disjoint), and OUTDIR/throughput-all.<fmt>
# with all of them on one page.  Each line is one lock type: the median
# over the repetitions, with error bars of one standard deviation
# (librangelock: one line per tree policy, librangelock_fifo is the
# strict-FIFO tree).
# Needs gnuplot with the pngcairo or svg terminal (no X needed).
set -eu

usage() {
	echo "usage: $0 results.csv [outdir] [png|svg]" >&2
	exit 2
}

[ $# -ge 1 ] || usage
csv=$1
outdir=${2:-.}
fmt=${3:-png}
case $fmt in
png) term='pngcairo size 800,560 font "sans,10"'; allterm='pngcairo size 1350,1150 font "sans,9"' ;;
svg) term='svg size 800,560 font "sans,10"'; allterm='svg size 1350,1150 font "sans,9"' ;;
*) usage ;;
esac
[ -r "$csv" ] || { echo "$0: cannot read $csv" >&2; exit 1; }
command -v gnuplot >/dev/null 2>&1 || { echo "$0: gnuplot not found" >&2; exit 1; }
mkdir -p "$outdir"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# One data file per (workload, ranges, lock): threads median stddev, from
# the plain throughput section (not the --targets scenarios).
awk -F, -v dir="$tmp" '
NR == 1 {
	for (i = 1; i <= NF; i++) col[$i] = i
	need = "section scenario workload ranges threads lock median stddev work_in_ns work_out_ns"
	n = split(need, f, " ")
	for (i = 1; i <= n; i++)
		if (!(f[i] in col)) { print "not a rangelock-bench CSV: no column " f[i] > "/dev/stderr"; exit 1 }
	next
}
$col["section"] == "throughput" && $col["scenario"] == "" {
	key = $col["workload"] "-" $col["ranges"]
	file = dir "/" key "." $col["lock"] ".dat"
	print $col["threads"], $col["median"], $col["stddev"] >> file
	close(file)
	keys[key] = 1
	work[key] = $col["work_in_ns"] " ns in, " $col["work_out_ns"] " ns out"
}
END {
	for (k in keys) print k "\t" work[k] > (dir "/keys")
}' "$csv"

[ -s "$tmp/keys" ] || { echo "$0: no throughput rows in $csv" >&2; exit 1; }

locks="pthread_rwlock pthread_rwlock_wp pthread_mutex librangelock librangelock_fifo"

# The plot command of one chart ($1 = key).
plot_cmd() {
	cmd=""
	for l in $locks; do
		f="$tmp/$1.$l.dat"
		[ -s "$f" ] || continue
		sort -n "$f" -o "$f"
		case $l in
		librangelock) style='lw 2.5 pt 7 lc rgb "#d62728"' ;;
		librangelock_fifo) style='lw 2 pt 11 lc rgb "#ff7f0e" dt 4' ;;
		pthread_rwlock) style='lw 1.5 pt 5 lc rgb "#1f77b4"' ;;
		pthread_rwlock_wp) style='lw 1.5 pt 9 lc rgb "#2ca02c" dt 2' ;;
		pthread_mutex) style='lw 1.5 pt 13 lc rgb "#7f7f7f" dt 3' ;;
		esac
		[ -n "$cmd" ] && cmd="$cmd, "
		cmd="$cmd\"$f\" using 1:(\$2/1e6):(\$3/1e6) with yerrorlines $style title \"$l\""
	done
	printf '%s' "$cmd"
}

titles() {
	wl=${1%%-*}
	rg=${1#*-}
	case $wl in read) w="read-only" ;; write) w="write-only" ;; *) w="mixed" ;; esac
	case $rg in full) r="full range" ;; random) r="random ranges" ;; *) r="disjoint ranges" ;; esac
	printf '%s, %s (%s)' "$w" "$r" "$2"
}

common='set termoption noenhanced; set grid; set key top center horizontal maxrows 2 opaque samplen 2; set xlabel "threads"; set ylabel "Mops/s (median, ±1 sd)"; set yrange [0:*]; set xtics 1; set autoscale xfix; set offsets 0.3, 0.3, graph 0.3, 0'

all="$tmp/all.gp"
{
	echo "set terminal $allterm"
	echo "set output \"$outdir/throughput-all.$fmt\""
	echo "set multiplot layout 3,3 title \"rangelock-bench: throughput vs threads\""
	echo "$common"
} > "$all"

for wl in read write mixed; do
	for rg in full random disjoint; do
		key="$wl-$rg"
		grep -q "^$key	" "$tmp/keys" || continue
		work=$(grep "^$key	" "$tmp/keys" | cut -f2)
		cmd=$(plot_cmd "$key")
		[ -n "$cmd" ] || continue
		title=$(titles "$key" "$work")
		gnuplot <<EOF
set terminal $term
set output "$outdir/throughput-$key.$fmt"
$common
set title "$title"
plot $cmd
EOF
		{
			echo "set title \"$title\""
			echo "plot $cmd"
		} >> "$all"
		echo "$outdir/throughput-$key.$fmt"
	done
done
echo "unset multiplot" >> "$all"
gnuplot "$all"
echo "$outdir/throughput-all.$fmt"
