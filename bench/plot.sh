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
#
# Issue 13's opt-in sweeps, when the CSV has them
# (rangelock-bench --sections read-scaling,write-ratio --csv=...):
#   OUTDIR/read-scaling-<ranges>-<empty|work>.<fmt>: read-only throughput vs
#       readers (full range, disjoint ranges; empty critical sections or
#       with work), and OUTDIR/read-scaling-all.<fmt> with all of them;
#   OUTDIR/write-ratio.<fmt>: read-mostly throughput vs the share of writes.
# librangelock_nofast (and _fifo_nofast) is the same tree with fast reads
# off (range_lock_tree_set_fast_read(tree, 0)).
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
# the plain throughput section (not the --targets scenarios); for the
# sweeps, rs-<ranges>-<empty|work>.<lock>.dat (threads median stddev) and
# wr.<lock>.dat (write share, median, stddev, label).
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
$col["section"] == "read-scaling" {
	w = ($col["work_in_ns"] == 0 && $col["work_out_ns"] == 0) ? "empty" : "work"
	key = "rs-" $col["ranges"] "-" w
	file = dir "/" key "." $col["lock"] ".dat"
	print $col["threads"], $col["median"], $col["stddev"] >> file
	close(file)
	rskeys[key] = $col["work_in_ns"] " ns in, " $col["work_out_ns"] " ns out"
}
$col["section"] == "write-ratio" && ("write_every" in col) {
	n = $col["write_every"]
	file = dir "/wr." $col["lock"] ".dat"
	print (n == 0 ? 0 : 1 / n), $col["median"], $col["stddev"], (n == 0 ? "0" : "1/" n) >> file
	close(file)
	wrthreads = $col["threads"]
}
END {
	for (k in keys) print k "\t" work[k] > (dir "/keys")
	for (k in rskeys) print k "\t" rskeys[k] > (dir "/rskeys")
	if (wrthreads) print wrthreads > (dir "/wrkeys")
}' "$csv"

[ -s "$tmp/keys" ] || [ -s "$tmp/rskeys" ] || [ -s "$tmp/wrkeys" ] ||
	{ echo "$0: no throughput or sweep rows in $csv" >&2; exit 1; }
touch "$tmp/keys" "$tmp/rskeys"

locks="pthread_rwlock pthread_rwlock_wp pthread_mutex librangelock librangelock_fifo
librangelock_nofast librangelock_fifo_nofast"

# The plot command of one chart ($1 = key; $2 = using clause, default
# threads on x).
plot_cmd() {
	cmd=""
	using=${2:-'1:($2/1e6):($3/1e6)'}
	for l in $locks; do
		f="$tmp/$1.$l.dat"
		[ -s "$f" ] || continue
		sort -g "$f" -o "$f"
		case $l in
		librangelock) style='lw 2.5 pt 7 lc rgb "#d62728"' ;;
		librangelock_fifo) style='lw 2 pt 11 lc rgb "#ff7f0e" dt 4' ;;
		pthread_rwlock) style='lw 1.5 pt 5 lc rgb "#1f77b4"' ;;
		pthread_rwlock_wp) style='lw 1.5 pt 9 lc rgb "#2ca02c" dt 2' ;;
		pthread_mutex) style='lw 1.5 pt 13 lc rgb "#7f7f7f" dt 3' ;;
		librangelock_nofast) style='lw 1.5 pt 6 lc rgb "#9467bd" dt 2' ;;
		librangelock_fifo_nofast) style='lw 1.5 pt 12 lc rgb "#8c564b" dt 3' ;;
		esac
		[ -n "$cmd" ] && cmd="$cmd, "
		cmd="$cmd\"$f\" using $using with yerrorlines $style title \"$l\""
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
if [ -s "$tmp/keys" ]; then
	gnuplot "$all"
	echo "$outdir/throughput-all.$fmt"
fi

# Issue 13: read scaling, one chart per (ranges, work), and all on one page.
if [ -s "$tmp/rskeys" ]; then
	all="$tmp/rs-all.gp"
	{
		echo "set terminal $allterm"
		echo "set output \"$outdir/read-scaling-all.$fmt\""
		echo "set multiplot layout 2,2 title \"rangelock-bench: read scaling (nofast = fast reads off)\""
		echo "$common"
		echo 'set xlabel "readers"'
	} > "$all"
	for rg in full disjoint; do
		for w in empty work; do
			key="rs-$rg-$w"
			grep -q "^$key	" "$tmp/rskeys" || continue
			work=$(grep "^$key	" "$tmp/rskeys" | cut -f2)
			cmd=$(plot_cmd "$key")
			[ -n "$cmd" ] || continue
			case $rg in full) r="full range" ;; *) r="disjoint ranges" ;; esac
			title="read-only, $r, $work"
			gnuplot <<EOF
set terminal $term
set output "$outdir/read-scaling-$rg-$w.$fmt"
$common
set xlabel "readers"
set title "$title"
plot $cmd
EOF
			{
				echo "set title \"$title\""
				echo "plot $cmd"
			} >> "$all"
			echo "$outdir/read-scaling-$rg-$w.$fmt"
		done
	done
	echo "unset multiplot" >> "$all"
	gnuplot "$all"
	echo "$outdir/read-scaling-all.$fmt"
fi

# Issue 13: read-mostly throughput vs the share of writes (categorical x:
# the points of --write-ratios in increasing order).
if [ -s "$tmp/wrkeys" ]; then
	cmd=$(plot_cmd wr '0:($2/1e6):($3/1e6):xticlabels(4)')
	gnuplot <<EOF
set terminal $term
set output "$outdir/write-ratio.$fmt"
$common
set xtics autofreq
set xlabel "writes per operation"
set title "read-mostly, $(cat "$tmp/wrkeys") threads, random 64-unit ranges, 0.2 us in + 0.2 us out"
plot $cmd
EOF
	echo "$outdir/write-ratio.$fmt"
fi
