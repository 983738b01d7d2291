#!/bin/sh
# The shared library exports exactly the public API: the functions the
# header marks RANGELOCK_API.  Usage: check_symbols.sh librangelock.so rangelock.h
set -eu
lib=$1 header=$2
want=$(tr '\n' ' ' < "$header" | grep -o 'RANGELOCK_API[^(;]*(' |
       sed 's/($//; s/.*[ *]//' | sort -u)
have=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' |
       grep -v '^_' | sort -u)
# 32-bit glibc targets also export the 64-bit-time ABI of the timed calls
# (rangelock.h, RANGELOCK_TIME64_ABI): range_*_timedlock_time64.
want_time64=$(printf '%s\n' "$want" | grep '_timedlock$' | sed 's/$/_time64/')
extra=$(printf '%s\n' "$have" | grep -vxF "$want" | grep -vxF "$want_time64" || true)
missing=$(printf '%s\n' "$want" | grep -vxF "$have" || true)
[ -n "$want" ] || { echo "no RANGELOCK_API names found in $header"; exit 1; }
if [ -n "$extra" ] || [ -n "$missing" ]; then
  [ -z "$extra" ] || printf 'exported but not public API:\n%s\n' "$extra"
  [ -z "$missing" ] || printf 'public API not exported:\n%s\n' "$missing"
  exit 1
fi
echo "exports: $(printf '%s\n' "$have" | wc -l) public symbols, nothing else"
