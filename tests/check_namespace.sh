#!/bin/sh
# A program that links librangelock statically sees every global symbol of
# the archive, hidden or not: each one must be in the library's namespace
# (range_*, rangelock_*, rl_*), so no internal name can clash with one of
# the program's own.  Names a C program cannot define are allowed: the
# toolchain's (__x86.get_pc_thunk.*, ...) and the probes' _.stapsdt.base.  Usage: check_namespace.sh librangelock.a [nm]
set -eu
lib=$1 nm=${2:-nm}
syms=$("$nm" -g --defined-only "$lib" | awk 'NF == 3 {print $3}' | sort -u)
[ -n "$syms" ] || { echo "no global symbols found in $lib"; exit 1; }
stray=$(printf '%s\n' "$syms" | grep -v '^range_\|^rangelock_\|^rl_\|^__\|^_\.' || true)
if [ -n "$stray" ]; then
  printf 'global symbols outside range_*, rangelock_*, rl_* in %s:\n%s\n' "$lib" "$stray"
  exit 1
fi
echo "$(printf '%s\n' "$syms" | wc -l) global symbols, all in range_*, rangelock_*, rl_*"
