#!/bin/sh
# A program that links librangelock statically sees every global symbol of
# the archive, hidden or not: each one must be in the library's namespace
# (range_*, rangelock_*, rl_*), so no internal name can clash with one of
# the program's own.  Names a C program cannot define are allowed: the
# toolchain's (__x86.get_pc_thunk.*, ...) and the probes' _.stapsdt.base.
# Usage: check_namespace.sh NM ARCHIVE...
set -eu
nm=$1
shift
status=0
for lib in "$@"; do
  syms=$("$nm" -g --defined-only "$lib" | awk 'NF == 3 {print $3}' | sort -u)
  if [ -z "$syms" ]; then
    echo "no global symbols found in $lib"
    status=1
    continue
  fi
  stray=$(printf '%s\n' "$syms" |
          grep -v -e '^range_' -e '^rangelock_' -e '^rl_' -e '^__' -e '^_\.' || true)
  if [ -n "$stray" ]; then
    printf 'global symbols outside range_*, rangelock_*, rl_* in %s:\n%s\n' "$lib" "$stray"
    status=1
  else
    echo "$lib: $(printf '%s\n' "$syms" | wc -l) global symbols, all in range_*, rangelock_*, rl_*"
  fi
done
exit $status
