#!/bin/sh
# Race detectors and tracers against the normal librangelock (ctest; exit 77
# = skipped, with the reason on stdout).  See tools_prog.c.
#   run.sh tsan CC SRCDIR LIBDIR WORKDIR clean|racy
#   run.sh valgrind TOOL PROGRAM clean|racy VALGRIND_SUPPORT(0|1)
#   run.sh probes LIBRARY HAVE_SDT
#   run.sh tracer LIBRARY PROGRAM
set -u
SKIP=77
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIPPED: $*"; exit $SKIP; }

case $1 in
tsan)
	cc=$2 src=$3 libdir=$4 work=$5 mode=$6
	command -v "$cc" >/dev/null 2>&1 || skip "$cc not installed"
	exe=$work/tools_tsan_${cc}_$mode
	racy=0; [ "$mode" = racy ] && racy=1
	echo 'int main(void){return 0;}' > "$exe.probe.c"
	"$cc" -fsanitize=thread "$exe.probe.c" -o "$exe.probe" 2>/dev/null ||
		skip "$cc cannot build with -fsanitize=thread (no ThreadSanitizer runtime)"
	# Instrumented program, UNinstrumented library: the user's situation.
	"$cc" -fsanitize=thread -g -O1 -DRACY=$racy -I"$src/include" \
		"$src/tests/tools/tools_prog.c" -L"$libdir" -lrangelock \
		-Wl,-rpath,"$libdir" -pthread -o "$exe" || fail "cannot build $exe"
	out=$(TSAN_OPTIONS="halt_on_error=0 exitcode=66" "$exe" 2>&1); rc=$?
	echo "$out"
	if [ $racy = 0 ]; then
		[ $rc = 0 ] || fail "exit $rc: ThreadSanitizer reported a correct program"
		echo "$out" | grep -q ThreadSanitizer && fail "ThreadSanitizer output on a correct program"
	else
		[ $rc = 66 ] || fail "exit $rc: the deliberate races were not reported"
		echo "$out" | grep -q "WARNING: ThreadSanitizer: data race" || fail "no race report"
		echo "$out" | grep -q " race_here" || fail "no report about race_here()"
		echo "$out" | grep -q fast_race_here ||
			fail "no report about fast_race_here(): fast readers ordered each other"
		n=$(echo "$out" | grep -c "WARNING: ThreadSanitizer")
		[ "$n" = 2 ] || fail "$n reports, want exactly the two deliberate races"
	fi
	echo "$out" | grep -q "tools_prog: ok" || fail "wrong counts"
	;;
valgrind)
	tool=$2 prog=$3 mode=$4 support=$5
	[ "$support" = 1 ] ||
		skip "library built with RANGELOCK_VALGRIND=OFF: $tool is not told about the lock"
	command -v valgrind >/dev/null 2>&1 ||
		skip "valgrind not installed (apt-get install valgrind)"
	out=$(valgrind --tool="$tool" --error-exitcode=3 "$prog" 2>&1); rc=$?
	echo "$out"
	echo "$out" | grep -q "tools_prog: ok" || fail "wrong counts or crash"
	if [ "$mode" = clean ]; then
		[ $rc = 0 ] || fail "exit $rc: $tool reported errors in a correct program"
		echo "$out" | grep -q "ERROR SUMMARY: 0 errors" || fail "no clean summary"
	else
		[ $rc = 3 ] || fail "exit $rc: $tool missed the deliberate races"
		# The two reports must be about `unguarded` and `fast_unguarded`
		# (Helgrind: "race ... at 0x10C0E0", DRD: "Conflicting store ...
		# at 0x0010c0e0"), one each.
		got=$(echo "$out" | sed -n 's/.*\(data race\|Conflicting\).* at \(0x[0-9a-fA-F]*\).*/\2/p')
		for var in unguarded fast_unguarded; do
			want=$(echo "$out" | sed -n "s/^tools_prog: $var = .* at \(0x[0-9a-f]*\)\$/\1/p")
			[ -n "$want" ] || fail "no address printed for $var"
			hit=0
			for g in $got; do
				[ $((want)) = $((g)) ] && hit=$((hit + 1))
			done
			[ $hit = 1 ] || fail "$hit reports about $var (at $want), want 1; reports at: $got"
		done
		echo "$out" | grep -q "ERROR SUMMARY: 2 errors from 2 contexts" ||
			fail "want exactly the two deliberate races"
	fi
	;;
probes)
	lib=$2 have_sdt=$3
	[ "$have_sdt" = 1 ] || [ "$have_sdt" = TRUE ] ||
		skip "built without <sys/sdt.h> (apt-get install systemtap-sdt-dev): no probes"
	command -v readelf >/dev/null 2>&1 || skip "readelf not installed (binutils)"
	notes=$(readelf -n "$lib") || fail "readelf -n $lib"
	for p in wait_begin wait_end wait_give_up; do
		echo "$notes" | grep -A1 "Provider: rangelock" | grep -q "Name: $p$" ||
			fail "probe rangelock:$p missing in $lib"
		echo "rangelock:$p present"
	done
	;;
tracer)
	lib=$2 prog=$3
	# bpftrace needs root and a kernel with uprobes; containers rarely
	# have either.  Check that it can run at all before trusting a miss.
	command -v bpftrace >/dev/null 2>&1 ||
		skip "no tracer (bpftrace not installed); probes checked by readelf only"
	bpftrace -e 'BEGIN { exit(); }' >/dev/null 2>&1 ||
		skip "bpftrace cannot attach here (needs root, uprobes, tracefs)"
	out=$(bpftrace -e "usdt:$lib:rangelock:wait_begin { @waits = count(); }" \
		-c "$prog" 2>&1) || fail "bpftrace failed: $out"
	echo "$out"
	echo "$out" | grep -Eq '@waits: [1-9]' || fail "rangelock:wait_begin never fired"
	;;
*)
	fail "unknown mode $1"
	;;
esac
echo PASS
