#!/bin/sh
# Symbol versions at load time.  A program built against this release that
# calls a RANGELOCK_0.2 function must refuse to start on a library that has
# only RANGELOCK_0.1, with the loader naming the missing version, instead
# of starting and failing at its first call; programs that use only 0.1
# calls, old or new, run on both.
#   check_versions.sh <dir of librangelock.so.N> <dir of the 0.1-only one>
#                     <user_0_1_old> <user_0_1> <user_0_2>
set -u
now=$1 only01=$2 old=$3 user01=$4 user02=$5
fail=0
run() { # expect(ok|fail) libdir program
	out=$(LD_LIBRARY_PATH=$2 "$3" 2>&1)
	rc=$?
	echo "$(basename "$3") on $(basename "$2"): exit $rc: $out"
	if [ "$1" = ok ] && [ "$rc" -ne 0 ]; then fail=1; fi
	if [ "$1" = fail ] && [ "$rc" -eq 0 ]; then fail=1; fi
}
run ok "$now" "$old"        # built against 0.1.0 (no versions), runs now
run ok "$now" "$user01"
run ok "$now" "$user02"
run ok "$only01" "$old"
run ok "$only01" "$user01"  # built now, only 0.1 calls: runs on 0.1
run fail "$only01" "$user02"
case $out in
*"version \`RANGELOCK_0.2' not found"*) ;;
*) echo "FAIL: the loader did not name the missing version RANGELOCK_0.2"; fail=1 ;;
esac
case $out in
*"ran against"*) echo "FAIL: the 0.2 program started on a 0.1 library"; fail=1 ;;
esac
[ "$fail" -eq 0 ] && echo "symbol versions: as expected"
exit "$fail"
