#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Compare two builds of rangelock-bench (the previous library and a new
# one) on the same scenarios, the two binaries alternating, and print per
# measured row the ratio new/base.
#
#   bench/compare.sh [options] BASE NEW
#   bench/compare.sh --set word build-base/bench/rangelock-bench \
#       build-bench/bench/rangelock-bench
#
# Sets of scenarios (--set):
#   targets  the --targets tables (2 threads; threads outnumbering the CPUs)
#            and the --targets=13 table (reader fast path), as they are:
#            "no other row may lose more than 3%";
#   word     the word-mode scenarios (2 writers with empty critical
#            sections; 2x and 4x as many writers as CPUs, and 4x readers +
#            writers, 1 us in + 1 us out; full range), run through the plain
#            throughput section, which both builds have: the default
#            policy's gain, and the FIFO tree's "no worse than today";
#   many     the --targets=many table (a set of ranges in one call against
#            single calls, grow/shrink, one contended case);
#   segments the --targets=segments table (ranges that conflict with
#            nothing: disjoint writers, disjoint empty critical sections,
#            read-mostly random ranges, 1 to 8 threads);
#   all      the four (the default);
#   readers  the --targets=readers table (4 writers + 2 readers, 2 + 2,
#            1 + 1 on random ranges of one buffer; per class), not in
#            "all": both builds need --targets=readers; it compares the
#            totals (the per-class rows are in the program's own table).
#
# Method: --rounds rounds; in each, every invocation of the set runs once on
# each binary (base first in odd rounds, new first in even ones), with
# --reps repetitions inside the program (interleaved across locks as
# usual).  A row's value in a round is the program's median; its ratio is
# new/base of that round ("speed": for costs in ns, base/new), so > 1 means
# the new build is faster.  Printed: base and new medians over the rounds,
# the median ratio with [min..max] over the rounds, and "LOSS" where the
# median ratio is below 0.97.  The pthread locks run the same code in both
# builds: their rows ("control") show how far the machine's noise alone
# moves a ratio.  Run it on a quiet machine; the load average before and
# after is printed.
#
# Options:
#   --set targets|word|many|segments|readers|all   (default all)
#   --rounds N               (default 3)
#   --reps N                 repetitions per invocation (default 5)
#   --duration-ms N          length of one run (default: the program's;
#                            250 for the word set, as --targets)
#   --quick                  pass --quick (a smoke run of the script)
#   --keep DIR               keep the CSVs and the programs' stderr in DIR
set -eu

usage() {
	sed -n '3,/^set -eu/p' "$0" | sed 's/^# \{0,1\}//; /^set -eu/d' >&2
	exit 2
}

set_name=all rounds=3 reps=5 dur='' quick='' keep=''
while [ $# -gt 0 ]; do
	case $1 in
	--set) set_name=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--duration-ms) dur=$2; shift 2 ;;
	--quick) quick=--quick; shift ;;
	--keep) keep=$2; shift 2 ;;
	-h|--help) usage ;;
	--) shift; break ;;
	-*) echo "compare.sh: unknown option $1" >&2; usage ;;
	*) break ;;
	esac
done
[ $# -eq 2 ] || usage
base=$1 new=$2
for b in "$base" "$new"; do
	[ -x "$b" ] || { echo "compare.sh: $b: not an executable" >&2; exit 2; }
done
case $set_name in targets|word|many|segments|readers|all) ;; *) usage ;; esac

if [ -n "$keep" ]; then
	mkdir -p "$keep"
	dir=$keep
else
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi

ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)
t2=$((2 * ncpu)) t4=$((4 * ncpu))
wdur=${dur:-250}

# One invocation a line: "name|arguments".
invocations() {
	if [ "$set_name" = targets ] || [ "$set_name" = all ]; then
		echo "targets|--targets${dur:+ --duration-ms $dur}"
		echo "targets13|--targets=13${dur:+ --duration-ms $dur}"
	fi
	if [ "$set_name" = many ] || [ "$set_name" = all ]; then
		echo "many|--targets=many${dur:+ --duration-ms $dur}"
	fi
	if [ "$set_name" = segments ] || [ "$set_name" = all ]; then
		echo "segments|--targets=segments${dur:+ --duration-ms $dur}"
	fi
	if [ "$set_name" = readers ]; then
		echo "readers|--targets=readers${dur:+ --duration-ms $dur}"
	fi
	if [ "$set_name" = word ] || [ "$set_name" = all ]; then
		w="--sections throughput --ranges full --locks range,mutex --duration-ms $wdur"
		echo "word-empty|$w --workloads write --threads 2 --work-in-ns 0 --work-out-ns 0"
		echo "word-writers|$w --workloads write --threads $t2,$t4 --work-in-ns 1000 --work-out-ns 1000"
		echo "word-mixed|$w --workloads mixed --threads $t4 --work-in-ns 1000 --work-out-ns 1000"
	fi
}

echo "compare.sh: base $base"
echo "compare.sh: new  $new"
echo "compare.sh: set $set_name, $rounds rounds x $reps repetitions, $ncpu CPUs," \
	"load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
failed=0
r=1
while [ "$r" -le "$rounds" ]; do
	if [ $((r % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
	invocations > "$dir/invocations"
	while IFS='|' read -r name args; do
		for which in $order; do
			if [ "$which" = base ]; then bin=$base; else bin=$new; fi
			echo "compare.sh: round $r/$rounds $name $which" >&2
			# shellcheck disable=SC2086 # $args is a list of words
			if ! "$bin" $args --reps "$reps" $quick --no-progress \
				--csv="$dir/$which.$r.$name.csv" </dev/null >/dev/null \
				2>>"$dir/$which.$r.$name.err"; then
				echo "compare.sh: $which failed in round $r ($name):" \
					"see $dir/$which.$r.$name.err" >&2
				failed=1
			fi
		done
	done < "$dir/invocations"
	r=$((r + 1))
done
echo "compare.sh: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# The rows: key = invocation + what the program says a point is.
for f in "$dir"/*.csv; do [ -s "$f" ] && echo "$f"; done > "$dir/files"
[ -s "$dir/files" ] || { echo "compare.sh: no results" >&2; exit 1; }
# shellcheck disable=SC2046 # the file names have no blanks (mktemp, names above)
awk -F, -v loss=0.97 '
FNR == 1 {
	n = split(FILENAME, parts, "/")
	split(parts[n], p, ".")       # which.round.name.csv
	which = p[1]; round = p[2]; inv = p[3]; invs[inv] = 1
	delete col
	for (i = 1; i <= NF; i++) col[$i] = i
	nh = NF
	waitend = ("write_wait_max_us_median" in col) ? col["write_wait_max_us_median"] : nh
	next
}
# Builds before the CSV fix wrote one wait column too few in rows without
# single waits: the columns after the wait columns stand one further left.
function f(name,    i) {
	if (!(name in col)) return ""
	i = col[name]
	if (NF < nh && i > waitend) i -= nh - NF
	return $i
}
{
	key = inv SUBSEP f("section") SUBSEP f("scenario") SUBSEP f("workload") SUBSEP \
	      f("ranges") SUBSEP f("threads") SUBSEP f("lock") SUBSEP f("held") SUBSEP \
	      f("work_in_ns") SUBSEP f("work_out_ns") SUBSEP f("metric") SUBSEP \
	      f("write_every") SUBSEP f("range_len")
	if (!(key in seen)) { seen[key] = 1; order[++nkeys] = key }
	val[key, which, round] = f("median")
	rounds[round] = 1
}
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	printf "| set | section | scenario | workload | ranges | threads | lock | work in/out ns | metric | base | new | new/base [min..max] | rounds | flag |\n"
	printf "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
	losses = 0
	for (k = 1; k <= nkeys; k++) {
		key = order[k]
		split(key, c, SUBSEP)
		nb = nn = nr = 0
		delete rb; delete rn; delete rr
		for (r in rounds) {
			b = val[key, "base", r]; n = val[key, "new", r]
			if (b != "") rb[++nb] = b + 0
			if (n != "") rn[++nn] = n + 0
			if (b != "" && n != "" && b + 0 > 0 && n + 0 > 0)
				rr[++nr] = (c[11] ~ /^ns/) ? (b + 0) / (n + 0) : (n + 0) / (b + 0)
		}
		if (!nr) continue   # measured by one build only
		lo = hi = rr[1]
		for (i = 2; i <= nr; i++) { if (rr[i] < lo) lo = rr[i]; if (rr[i] > hi) hi = rr[i] }
		m = median(rr, nr)
		flag = (c[7] ~ /^librangelock/) ? "" : "control"
		if (m < loss) { flag = flag (flag ? ", " : "") "LOSS"; if (c[7] ~ /^librangelock/) losses++ }
		desc = c[3]; if (desc == "") desc = "-"
		if (c[2] == "held") desc = c[8] " held"
		if (c[12] != "" && c[12] != "0") desc = desc " 1/" c[12] " writes"
		printf "| %s | %s | %s | %s | %s | %s | %s | %s/%s | %s | %.4g | %.4g | %.3f [%.3f..%.3f] | %d | %s |\n", \
			c[1], c[2], desc, c[4], c[5], c[6], c[7], c[9], c[10], c[11], \
			median(rb, nb), median(rn, nn), m, lo, hi, nr, flag
		rows++
		matched[c[1]]++
	}
	printf "\n%d rows; librangelock rows below %.2f (LOSS): %d\n", rows, loss, losses
	printf "new/base: > 1 = the new build is faster (costs in ns: base/new); " \
	       "median over the rounds of the per-round ratio of the programs medians\n"
	bad = 0
	for (i in invs)
		if (!(i in matched)) {
			printf "compare.sh: no row of %s was measured by both builds\n", i > "/dev/stderr"
			bad = 1
		}
	if (bad) exit 1
}' $(cat "$dir/files") || failed=1
exit "$failed"
