#!/bin/sh
# The README on a fresh Debian 12 machine with only cmake, gcc and make, as
# well as this machine can pretend to be one (there is no container here):
#   - PATH holds only links to the programs of /usr/bin and /bin minus the
#     extra tools CI installs or this machine has (spin, pkg-config, clang,
#     musl-gcc, mandoc, groff, man, valgrind, python), and CMake searches
#     PATH only (CMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF), so spin and
#     pkg-config are not found even by absolute system paths;
#   - PKG_CONFIG_LIBDIR is an empty directory: no cmocka.pc either way.
# Then, as the README says: configure with no options, build, run the
# quick-start example, install (to a staging prefix instead of /usr/local),
# and use the installed library with a plain cc command line and through
# find_package; the manual page of range_write_timedlock must be installed.
# Configure must print one skip message each for CMocka and SPIN, and ctest
# must list no unit_ or model_ test.  A few registered tests are run.
#
# Usage: minimal_host.sh <source dir> <work dir>
set -eu
src=$1 work=$2
rm -rf "$work"
mkdir -p "$work/bin" "$work/no-pkgconfig"

for dir in /usr/bin /bin /usr/sbin /sbin; do
	for p in "$dir"/*; do
		name=${p##*/}
		case $name in
		spin|pkg-config|pkgconf|*-pkg-config|clang*|*-clang*|musl-*|mandoc|\
		groff|nroff|troff|man|valgrind*|python*|gdb) continue ;;
		esac
		[ -e "$work/bin/$name" ] || ln -s "$p" "$work/bin/$name"
	done
done
PATH=$work/bin
export PATH
export PKG_CONFIG_LIBDIR="$work/no-pkgconfig" PKG_CONFIG_PATH=""
for t in spin pkg-config clang musl-gcc; do
	if command -v $t >/dev/null 2>&1; then
		echo "FAIL: $t still on PATH"; exit 1
	fi
done

step() { echo "== $*"; }

# The build type is left to the default (RelWithDebInfo), but built at -O0
# without debug information: this test checks what is found, built,
# installed and registered, not the code (the default stage runs the same
# tests on the -O2 build), and -O0 takes a third of the compile time.
step "configure (README: cmake -S . -B build)"
cmake -S "$src" -B "$work/build" -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF \
	-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O0 -DNDEBUG" \
	> "$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
grep -E "CMocka|spin|SPIN" "$work/configure.log"
for want in "CMocka not found" "spin not found"; do
	n=$(grep -c "$want" "$work/configure.log" || true)
	if [ "$n" -ne 1 ]; then
		echo "FAIL: expected one configure message '$want', got $n"; exit 1
	fi
done

step "build"
cmake --build "$work/build" -j2 > "$work/build.log" 2>&1 ||
	{ tail -40 "$work/build.log"; exit 1; }

step "tests registered: none that need CMocka or SPIN"
(cd "$work/build" && ctest -N) > "$work/ctest-n.log"
tail -1 "$work/ctest-n.log"
if grep -E "Test +#[0-9]+: (unit|model)_" "$work/ctest-n.log"; then
	echo "FAIL: unit or model tests registered without CMocka/SPIN"; exit 1
fi
(cd "$work/build" && ctest --output-on-failure -R \
	'^(example_parallel_writer|torture_tiny|torture_fast_path_tiny|package_exported_symbols)$')

step "README quick start: the example"
"$work/build/bench/parallel_writer" --duration 1 --quiet

step "install (README: cmake --install build, here to a staging prefix)"
cmake --install "$work/build" --prefix "$work/stage" > "$work/install.log"
ls "$work/stage/bin"
for f in bin/rangelock-bench bin/rangelock-torture include/rangelock/rangelock.h \
	 share/man/man3/range_write_timedlock.3 share/man/man7/rangelock.7; do
	[ -e "$work/stage/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
if ls "$work/stage/bin" | grep -v '^rangelock-\(bench\|torture\)$'; then
	echo "FAIL: programs other than the two tools installed"; exit 1
fi
grep -q '^\.TH RANGE_READ_TIMEDLOCK 3' "$work/stage/share/man/man3/range_write_timedlock.3" ||
	{ echo "FAIL: range_write_timedlock(3) is not the timedlock page"; exit 1; }
libdir=$(dirname "$(find "$work/stage" -name 'librangelock.so' | head -1)")

step "use: plain cc command line"
cc "$src/tests/consumer/consumer.c" -I"$work/stage/include" -L"$libdir" \
	-lrangelock -pthread -o "$work/cc_consumer"
LD_LIBRARY_PATH=$libdir "$work/cc_consumer"

step "use: find_package"
cmake -S "$src/tests/consumer/find_package" -B "$work/fp" \
	-DCMAKE_PREFIX_PATH="$work/stage" -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF \
	> "$work/fp.log" 2>&1 || { cat "$work/fp.log"; exit 1; }
cmake --build "$work/fp" > "$work/fp-build.log" 2>&1 || { cat "$work/fp-build.log"; exit 1; }
LD_LIBRARY_PATH=$libdir "$work/fp/consumer"
echo "minimal host: configure, build, example, install, man page and both consumers ok"
