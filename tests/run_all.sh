#!/usr/bin/env bash
# The README's test command, and what CI runs (.ci/run): the full ctest
# suite on the default build, a Debug (-O0, checking mode) build of the
# library with its quick unit tests, then unit tests and the torture under
# ThreadSanitizer and AddressSanitizer+UBSan, a clang -Werror build, the
# forced POSIX backend, i386 (both _TIME_BITS), aarch64 and s390x under
# qemu-user, and musl.  About 21-35 minutes on a 2-CPU machine: 21 where
# i386 runs natively, 35 on an AMD EPYC VM without ia32 emulation (i386
# under qemu-i386) with other work beside it; CI adds 1-2 minutes of
# package installation.
#
# Every stage runs, even after one fails; a summary line per stage and a
# total follow, and the exit status is non-zero if any stage failed.  The
# last line is "N passed, N failed, N skipped", counting stages.  A stage
# whose compiler or emulator is missing is SKIPPED, and the pre-flight
# section first lists every optional tool and the tests skipped without it.
#
# Each stage is a CMake preset (CMakePresets.json), so any one can be rerun
# alone, by naming it (tests/run_all.sh tsan musl) or by hand:
#   cmake --preset tsan && cmake --build --preset tsan && ctest --preset tsan
set -uo pipefail
cd "$(dirname "$0")/.."

only=" $* "   # the stages named on the command line; all when none
jobs=$(nproc 2>/dev/null || echo 2)
logs=$(mktemp -d "${TMPDIR:-/tmp}/rangelock-run_all.XXXXXX")
summary=()
stages_passed=0 stages_failed=0 stages_skipped=0
tests_passed=0 tests_failed=0 tests_skipped=0
skipped_names=""

have() { command -v "$1" >/dev/null 2>&1; }
compiles() { # compiles HEADER: can the C compiler include it?
	printf '#include <%s>\nint main(void) { return 0; }\n' "$1" |
		"${CC:-cc}" -x c -fsyntax-only - >/dev/null 2>&1
}
tool() { # tool found|MISSING NAME(PACKAGE) WHAT-IS-SKIPPED-WITHOUT-IT
	printf '  %-7s %-46s %s\n' "$1" "$2" "$3"
}

echo "=== pre-flight: optional tools (MISSING: those tests are skipped or not registered)"
check() { # check CONDITION-STATUS NAME WHAT
	if [ "$1" -eq 0 ]; then tool found "$2" "$3"; else tool MISSING "$2" "$3"; fi
}
pkg-config --exists cmocka 2>/dev/null; check $? "CMocka (libcmocka-dev, pkgconf)" "unit_* of the x86-64 stages"
have pkg-config || have pkgconf; check $? "pkg-config (pkgconf)" "pkg-config consumers in package_consumers_*"
have spin; check $? "spin (spin)" "model_* (the SPIN models)"
have abidw && have abidiff; check $? "abidw, abidiff (abigail-tools)" "package_abi_baseline"
compiles sys/sdt.h; check $? "<sys/sdt.h> (systemtap-sdt-dev)" "USDT probes; tools_probes"
have readelf; check $? "readelf (binutils)" "tools_probes"
have bpftrace; check $? "bpftrace (bpftrace)" "tools_tracer (also skipped where it cannot attach)"
have valgrind; check $? "valgrind (valgrind)" "tools_helgrind_*, tools_drd_*"
compiles sqlite3.h; check $? "SQLite (libsqlite3-dev)" "unit_file_sqlite"
have g++; check $? "g++ (g++)" "cxx_header_gxx, C++ consumers"
have clang++; check $? "clang++ (clang)" "cxx_header_clangxx"
have clang; check $? "clang (clang)" "tools_tsan_clang_*; stages clang, i386, i386-time64"
have mandoc || have groff; check $? "mandoc or groff (mandoc)" "the lint in package_man_pages"
[ -e /usr/lib32/libc.so ]; check $? "i386 libc (libc6-dev-i386, lib32gcc-12-dev)" "stages i386, i386-time64"
have aarch64-linux-gnu-gcc && have qemu-aarch64
check $? "aarch64 (gcc-aarch64-linux-gnu, qemu-user)" "stage aarch64"
have s390x-linux-gnu-gcc && have qemu-s390x
check $? "s390x (gcc-s390x-linux-gnu, qemu-user)" "stage s390x"
have musl-gcc; check $? "musl-gcc (musl-tools)" "stage musl"
echo "  (.ci/run installs all of these but bpftrace: tools_tracer is skipped in CI;"
echo "   logs of this run: $logs)"

banner() {
	echo
	echo "=== $* ($SECONDS s so far)"
}

record() { # record NAME STATUS SECONDS DETAIL
	summary+=("$(printf '%-12s %-7s %5s s  %s' "$1" "$2" "$3" "$4")")
	case $2 in
	PASS) stages_passed=$((stages_passed + 1)) ;;
	FAIL) stages_failed=$((stages_failed + 1)) ;;
	*) stages_skipped=$((stages_skipped + 1)) ;;
	esac
}

wanted() { [ "$only" = "  " ] || [[ $only == *" $1 "* ]]; }

skip_stage() { # skip_stage NAME WHY
	wanted "$1" || return 0
	banner "$1: SKIPPED ($2)"
	record "$1" SKIPPED 0 "$2"
}

# tested_targets BUILD-DIR TEST-PRESET: the targets whose programs the
# test preset's tests run (a program in BUILD-DIR named on a test's command
# line that is a target of the build), one a line; none if a test names no
# such program but a file of the source tree (then the stage builds
# everything).  A program the list misses makes its test fail (not found),
# never pass.
tested_targets() {
	local dir=$1 names targets found="" name line arg
	names=" $(ctest --preset "$2" -N 2>/dev/null |
		sed -n 's/^ *Test *#[0-9]*: \(.*\)$/\1/p' | tr '\n' ' ') "
	# Makefiles list "... target", Ninja "target: phony"
	targets=" $(cmake --build "$dir" --target help 2>/dev/null |
		sed -n -e 's/^\.\.\. \([^ ]*\).*/\1/p' -e 's/^\([^ :]*\): .*/\1/p' |
		tr '\n' ' ') "
	while read -r line; do
		name=${line#add_test(}
		name=${name%% *}
		[[ $names == *" $name "* ]] || continue
		local mine=""
		for arg in $line; do
			arg=${arg//\"/}
			arg=${arg%)}
			[[ $arg == "$dir"/* ]] || continue
			arg=${arg##*/}
			case $arg in lib*.a | lib*.so*) arg=${arg#lib} arg=${arg%%.*} ;; esac
			[[ $targets == *" $arg "* ]] && mine+=" $arg"
		done
		# a test naming no program built here but a file of the source
		# tree (a script): build everything; naming neither (a skip
		# notice: cmake -E echo): nothing to build for it
		[ -n "$mine" ] || [[ $line != *"$PWD/"* ]] || return 0
		found+="$mine"
	done < <(find "$dir" -name CTestTestfile.cmake -exec grep -h '^add_test(' {} +)
	printf '%s\n' $found | sort -u
}

# stage PRESET DESCRIPTION [--test-preset TEST-PRESET] [--build-tested]
# [ctest arguments]: configure, build, ctest (with the test preset of the
# same name, or the one given).  With --build-tested, only the programs the
# test preset runs are built (tested_targets), for stages whose tests are a
# subset and whose build preset names no targets.
stage() {
	local preset=$1 what=$2 t0=$SECONDS log=$logs/$1.log status detail
	local total failed skipped test_preset=$1 build_tested="" targets=()
	wanted "$preset" || return 0
	shift 2
	if [ "${1:-}" = --test-preset ]; then
		test_preset=$2
		shift 2
	fi
	if [ "${1:-}" = --build-tested ]; then
		build_tested=1
		shift
	fi
	banner "$preset: $what"
	if ! cmake --preset "$preset" > "$logs/$preset.configure.log" 2>&1; then
		cat "$logs/$preset.configure.log"
		status=FAIL detail="configure failed"
	elif [ -n "$build_tested" ] &&
	     mapfile -t targets < <(tested_targets "$PWD/build-$preset" "$test_preset") &&
	     [ ${#targets[@]} -gt 0 ] && echo "building the ${#targets[@]} programs the tests run" &&
	     ! cmake --build --preset "$preset" -j"$jobs" --target "${targets[@]}"; then
		status=FAIL detail="build failed"
	elif [ ${#targets[@]} -eq 0 ] && ! cmake --build --preset "$preset" -j"$jobs"; then
		status=FAIL detail="build failed"
	else
		ctest --preset "$test_preset" "$@" 2>&1 | tee "$log"
		if [ "${PIPESTATUS[0]}" -eq 0 ]; then status=PASS; else status=FAIL; fi
		# "97% tests passed, 3 tests failed out of 100"; skipped tests
		# count as passed there, and are listed as "(Skipped)".
		total=$(sed -n 's/.* tests failed out of \([0-9]*\)$/\1/p' "$log")
		failed=$(sed -n 's/.* tests passed, \([0-9]*\) tests failed out of .*/\1/p' "$log")
		skipped=$(grep -c '(Skipped)$' "$log")
		skipped_names+=$(sed -n "s/^[[:space:]]*[0-9]* - \(.*\) (Skipped)\$/ $preset:\1/p" "$log" | tr -d '\n')
		if [ -n "$total" ] && [ -n "$failed" ]; then
			detail="tests: $((total - failed - skipped)) passed, $failed failed, $skipped skipped"
			tests_passed=$((tests_passed + total - failed - skipped))
			tests_failed=$((tests_failed + failed))
			tests_skipped=$((tests_skipped + skipped))
		else
			detail="ctest printed no count"
		fi
	fi
	record "$preset" "$status" $((SECONDS - t0)) "$detail"
}

stage default "every test (unit, torture, model, examples, bench, packaging)"
# Debug (-O0, the checking mode on): what a new user's first
# `cmake -DCMAKE_BUILD_TYPE=Debug` builds must link, and the quick unit
# tests of the library as configured must pass.  The build preset builds
# only those programs, and test_segments_configured: the -O0 link check of
# a test that includes private headers (its 70 s run is left to the other
# stages).  About a minute on 2 cores.
stage debug "Debug build (-O0, checking mode): quick unit tests, one torture mix"
stage tsan "ThreadSanitizer: unit tests and torture" --build-tested
stage asan "AddressSanitizer + UndefinedBehaviorSanitizer: unit tests and torture" --build-tested
if have clang; then
	stage clang "clang, warnings as errors"
else
	skip_stage clang "needs clang"
fi
stage posix "POSIX backend forced"

# Other targets.  Emulation on an x86 host does not reproduce weak memory
# ordering: these runs check layout, endianness, 64-bit time and the ABI;
# the SPIN model and ThreadSanitizer are the evidence for the memory orders.
if have clang && [ -e /usr/lib32/libc.so ]; then
	i386_qemu=""
	if ! /lib/ld-linux.so.2 --version >/dev/null 2>&1; then
		# No ia32 emulation in this kernel: tests/run-i386.sh uses
		# qemu-i386, whose signal delivery reports EINTR with no handler
		# run, so the torture's interruptible mixes are left out there:
		# the test presets i386-qemu and i386-time64-qemu, whose filters
		# add that exclusion to their include lists (the i386 preset's
		# segments torture has no interruptible calls).
		if wanted i386 || wanted i386-time64; then
			echo
			echo "=== i386: no ia32 emulation here: under qemu-i386 (test presets" \
				"i386-qemu, i386-time64-qemu), without" \
				"torture_*interruptible_* and torture_*all_calls"
		fi
		i386_qemu=-qemu
	fi
	for preset in i386 i386-time64; do
		stage "$preset" "unit tests and torture (clang -m32)" \
			--test-preset "$preset$i386_qemu"
	done
else
	for preset in i386 i386-time64; do
		skip_stage "$preset" "needs clang, libc6-dev-i386, lib32gcc-12-dev"
	done
fi
for arch in aarch64 s390x; do
	if have "$arch-linux-gnu-gcc" && have "qemu-$arch"; then
		stage "$arch" "under qemu-$arch: unit tests and a short torture"
	else
		skip_stage "$arch" "needs gcc-$arch-linux-gnu, libc6-dev-*-cross, qemu-user"
	fi
done
if have musl-gcc; then
	stage musl "musl libc: unit tests, torture and examples" --build-tested
else
	skip_stage musl "needs musl-gcc (apt-get install musl-tools)"
fi

echo
echo "=== summary ($SECONDS s; logs in $logs)"
printf '%s\n' "${summary[@]}"
[ -z "$skipped_names" ] || echo "skipped tests (stage:test):$skipped_names"
echo "tests, all stages: $tests_passed passed, $tests_failed failed, $tests_skipped skipped"
echo "stages (CMake presets), the count CI reads:"
echo "$stages_passed passed, $stages_failed failed, $stages_skipped skipped"
[ "$stages_failed" -eq 0 ]
