#!/bin/sh
# The shared library exports exactly the public API: the functions the
# header marks RANGELOCK_API, each with a RANGELOCK_x.y symbol version
# (src/rangelock.map).  Usage: check_symbols.sh librangelock.so rangelock.h
set -eu
lib=$1 header=$2
want=$(tr '\n' ' ' < "$header" | grep -o 'RANGELOCK_API[^(;]*(' |
       sed 's/($//; s/.*[ *]//' | sort -u)
# _time64 variants of the timespec calls exist only on 32-bit targets
# (docs/abi.md): a 64-bit library need not define them.
if readelf -h "$lib" | grep -q 'Class:.*ELF64'; then
  want=$(printf '%s\n' "$want" | grep -v '_time64$' || true)
fi
# nm -D prints name@@VERSION for a versioned symbol (binutils >= 2.35).
syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' |
       grep -v '^_' | sort -u)
have=$(printf '%s\n' "$syms" | sed 's/@.*//' | sort -u)
# 32-bit glibc targets also export the 64-bit-time ABI of the timed calls
# (rangelock.h, RANGELOCK_TIME64_ABI): range_*_timedlock_time64.
want_time64=$(printf '%s\n' "$want" | grep '_timedlock$' | sed 's/$/_time64/')
extra=$(printf '%s\n' "$have" | grep -vxF "$want" | grep -vxF "$want_time64" || true)
missing=$(printf '%s\n' "$want" | grep -vxF "$have" || true)
unversioned=$(printf '%s\n' "$syms" | grep -v '@@\?RANGELOCK_[0-9][0-9.]*$' || true)
[ -n "$want" ] || { echo "no RANGELOCK_API names found in $header"; exit 1; }
if [ -n "$extra" ] || [ -n "$missing" ] || [ -n "$unversioned" ]; then
  [ -z "$extra" ] || printf 'exported but not public API:\n%s\n' "$extra"
  [ -z "$missing" ] || printf 'public API not exported (add it to src/rangelock.map):\n%s\n' "$missing"
  [ -z "$unversioned" ] || printf 'exported without a RANGELOCK_x.y version:\n%s\n' "$unversioned"
  exit 1
fi
echo "exports: $(printf '%s\n' "$have" | wc -l) public symbols, nothing else;" \
     "$(printf '%s\n' "$syms" | sed 's/.*@//' | sort | uniq -c |
        awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}')"
