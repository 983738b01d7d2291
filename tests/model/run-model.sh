#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Build and run one SPIN check of rangelock.pml; used by ctest (see
# CMakeLists.txt beside this file), and by hand:
#
#   run-model.sh pass|fail WORKDIR MODEL.pml "SPIN -D FLAGS" "CC FLAGS" "PAN FLAGS"
#
#   pass  the model must verify: exit 0 only if pan finished the whole search
#         (no "max search depth too small", no memory bound hit) with
#         "errors: 0".
#   fail  a mutant: exit 1 (so that ctest's WILL_FAIL passes) only if pan
#         reports an error; exit 0 if it does not, or if the model does not
#         even build (so WILL_FAIL reports the test as failed).  With
#         RL_EXPECT_ERROR set (an ERE), pan's first error line must match it.
#
# pan exits 0 even when it finds errors, hence the parsing.  On an error
# the counterexample is replayed (spin -t) and its tail printed; the whole
# replay stays in WORKDIR/trail.txt.
set -u

expect=$1 dir=$2 model=$3 spinflags=$4 ccflags=$5 panflags=$6
SPIN=${SPIN:-spin}
CC=${CC:-cc}

case $expect in pass) ok=0 bad=1 ;; fail) ok=1 bad=0 ;;
	*) echo "run-model.sh: first argument must be pass or fail" >&2; exit 2 ;; esac

mkdir -p "$dir" && cd "$dir" || exit "$bad"
rm -f pan pan.[bchmpt] pan.out ./*.trail trail.txt model.pml

# spin writes the trail next to the model it was given: work on a copy
cp "$model" model.pml || exit "$bad"

echo "== spin -a $spinflags $(basename "$model")"
# shellcheck disable=SC2086
if ! "$SPIN" -a $spinflags model.pml > spin.log 2>&1; then
	cat spin.log
	echo "run-model.sh: spin could not translate the model"
	exit "$bad"
fi
echo "== $CC -O2 $ccflags -o pan pan.c"
# shellcheck disable=SC2086
if ! "$CC" -O2 -w $ccflags -o pan pan.c > cc.log 2>&1; then
	tail -n 30 cc.log
	echo "run-model.sh: pan did not compile"
	exit "$bad"
fi
echo "== ./pan $panflags"
start=$(date +%s)
# shellcheck disable=SC2086
./pan $panflags > pan.out 2>&1
status=$?
end=$(date +%s)

grep -E '^pan:[0-9]+:|^pan: (wrote|reached|out of)|^error:|max search depth|State-vector|states, stored|transitions|total actual memory|elapsed time|^\s+(assertion|invalid|acceptance|non-progress)' pan.out
echo "== wall time $((end - start)) s, pan exit status $status"

errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.out | tail -n 1)
if [ -z "$errors" ]; then
	tail -n 20 pan.out
	echo "run-model.sh: pan did not finish (no \"errors:\" line)"
	exit "$bad"
fi

if [ "$errors" -gt 0 ]; then
	# shellcheck disable=SC2086
	"$SPIN" -t -p $spinflags model.pml > trail.txt 2>&1
	echo "== counterexample (last 40 lines; all of it in $dir/trail.txt)"
	tail -n 40 trail.txt
	if [ "$expect" = fail ] && [ -n "${RL_EXPECT_ERROR:-}" ] &&
	   ! grep -m1 -E '^pan:[0-9]+:' pan.out | grep -qE "$RL_EXPECT_ERROR"; then
		echo "run-model.sh: an error, but not the one this mutant must cause ($RL_EXPECT_ERROR)"
		exit 0
	elif [ "$expect" = fail ]; then
		echo "run-model.sh: the mutant is caught ($errors error(s)), as it must be"
	else
		echo "run-model.sh: MODEL CHECK FAILED: $errors error(s)"
	fi
	exit 1
fi

if grep -qE 'max search depth too small|reached -DMEMLIM|out of memory|search not completed' pan.out; then
	echo "run-model.sh: the search was not complete: this proves nothing"
	exit "$bad"
fi

if [ "$expect" = fail ]; then
	echo "run-model.sh: MUTANT NOT CAUGHT: pan found no error in a model that must fail"
	exit 0
fi
echo "run-model.sh: verified, errors: 0"
exit "$ok"
