#!/usr/bin/env bash
# The README's test command, and what CI runs: the full ctest suite on the
# default build, then unit tests and the torture under ThreadSanitizer and
# AddressSanitizer+UBSan, a clang -Werror build, the forced POSIX backend
# and musl.  About 15 minutes on 2 cores.  Each step uses a CMake preset
# (CMakePresets.json), so any one can be rerun alone:
#   cmake --preset tsan && cmake --build build-tsan -j2 && ctest --preset tsan
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc 2>/dev/null || echo 2)
start=$(date +%s)
step() {
	echo
	echo "=== $* ($(( $(date +%s) - start )) s so far)"
}
run_preset() {
	local preset=$1 dir=$2
	cmake --preset "$preset" >/dev/null
	cmake --build "$dir" -j"$jobs"
	ctest --preset "$preset"
}

step "default build: every test (unit, torture, model, examples, bench, packaging)"
run_preset default build

step "ThreadSanitizer: unit tests and torture"
run_preset tsan build-tsan

step "AddressSanitizer + UndefinedBehaviorSanitizer: unit tests and torture"
run_preset asan build-asan

step "clang, warnings as errors"
run_preset clang build-clang

step "POSIX semaphore backend forced"
run_preset posix build-posix

if command -v musl-gcc >/dev/null 2>&1; then
	step "musl libc: torture and examples"
	run_preset musl build-musl
else
	step "musl libc: SKIPPED (musl-gcc not installed; apt-get install musl-tools)"
fi

echo
echo "=== all configurations passed in $(( $(date +%s) - start )) s"
