#!/bin/sh
# The ABI gate: the shared library built now against the recorded ABI of
# every release of this SONAME (abi/librangelock-X.Y.Z.abi, one per
# release, kept until a SONAME bump).  docs/abi.md has the rules.
#   check_abi.sh <librangelock.so> <source dir> <work dir> [baseline.abi...]
# (without baselines: every abi/librangelock-*.abi of the source dir)
# Passes on additions (new calls, fields defined in a struct's reserved
# space, tests/abi_mask_reserved.awk).  Fails on anything else abidiff reports
# against any baseline: a removed or re-versioned symbol, a changed parameter
# or return type, a public struct's size or layout.  A deliberate break
# needs a SONAME bump and a regenerated baseline in the same commit
# (tools/release.sh).  Exit 77 (ctest: skipped) when it cannot judge: no
# abigail-tools, no debug information, or another architecture than the
# baselines'.
set -eu
lib=$1 src=$2 work=$3
shift 3
skip() { echo "SKIPPED: $*"; exit 77; }

command -v abidw >/dev/null 2>&1 && command -v abidiff >/dev/null 2>&1 ||
	skip "abidw/abidiff not found (apt-get install abigail-tools)"
[ $# -gt 0 ] || set -- $(ls "$src"/abi/librangelock-*.abi 2>/dev/null | sort -V)
[ $# -gt 0 ] && [ -f "$1" ] ||
	{ echo "FAIL: no baseline: want abi/librangelock-X.Y.Z.abi"; exit 1; }
readelf -S "$lib" | grep -q '\.debug_info' ||
	skip "$lib has no debug information (build RelWithDebInfo or Debug)"

mkdir -p "$work"
cur=$work/librangelock-current.abi
abidw --headers-dir "$src/include/rangelock" --no-corpus-path "$lib" > "$cur"
attr() { sed -n "1s/.* $1='\\([^']*\\)'.*/\\1/p" "$2"; }
syms() { sed -n "s/.*<elf-symbol name='\([^']*\)' version='\([^']*\)'.*/\1 \2/p" "$1" | sort -u; }
syms "$cur" > "$work/current.syms"
# (libabigail 2.2 does not compare the types of functions whose symbol
# versions differ, so an unversioned build would hide every type change.)
if [ "$(grep -c '<elf-symbol ' "$cur")" -ne "$(wc -l < "$work/current.syms")" ]; then
	echo "FAIL: exports without a symbol version (is src/rangelock.map applied?)"
	exit 1
fi

# gate <baseline>: 0 compatible, 1 not, 77 cannot judge
gate() {
	base=$1
	release=$(basename "$base" .abi | sed 's/^librangelock-//')
	w=$work/$release
	mkdir -p "$w"
	[ "$(attr architecture "$cur")" = "$(attr architecture "$base")" ] || {
		echo "SKIPPED: the $release baseline is $(attr architecture "$base"), this build $(attr architecture "$cur")"
		return 77; }
	if [ "$(attr soname "$cur")" != "$(attr soname "$base")" ]; then
		echo "FAIL: SONAME is $(attr soname "$cur"), the $release baseline's is $(attr soname "$base")."
		echo "A SONAME bump is a deliberate ABI break: regenerate the baseline in the"
		echo "same commit (tools/release.sh) and say why in CHANGELOG.md."
		return 1
	fi

	# A call added since the baseline must carry a version node the
	# baseline does not have: released nodes are closed (src/rangelock.map).
	syms "$base" > "$w/baseline.syms"
	late=$(awk 'FNR == NR { had[$1] = 1; node[$2] = 1; next }
		!($1 in had) && ($2 in node) { print "  " $1 "@" $2 }' \
		"$w/baseline.syms" "$work/current.syms")
	if [ -n "$late" ]; then
		echo "FAIL: new calls in a version node that $release already shipped:"
		echo "$late"
		echo "List them in the node of the release being prepared (src/rangelock.map)."
		return 1
	fi

	# The reserved space of the baseline's structs is left out of the
	# comparison on both sides (abi_mask_reserved.awk); their sizes are not.
	mask() { awk -f "$src/tests/abi_mask_reserved.awk" "$base" "$1" > "$2"; }
	mask "$base" "$w/baseline.masked.abi" 2>/dev/null
	nmask=$(mask "$cur" "$w/current.masked.abi" 2>&1 >/dev/null)
	echo "baseline: $(basename "$base"); ignoring $nmask member(s) of this build in the baseline's reserved space"
	rc=0
	abidiff --no-added-syms "$w/baseline.masked.abi" "$w/current.masked.abi" \
		> "$w/abidiff.txt" 2>&1 || rc=$?
	cat "$w/abidiff.txt"
	if [ "$rc" -eq 0 ]; then
		added=$(abidiff "$base" "$cur" 2>/dev/null | grep -c '^  \[A\]' || true)
		echo "ABI compatible with $release: nothing removed or changed, $added call(s) added"
		return 0
	fi
	if [ $((rc & 1)) -ne 0 ]; then
		echo "FAIL: abidiff could not compare with $release (exit $rc)"
	elif [ $((rc & 8)) -ne 0 ]; then
		echo "FAIL: incompatible with $release: a symbol was removed or its version changed (abidiff exit $rc)"
	else
		echo "FAIL: ABI change against $release (abidiff exit $rc): a public struct's size or"
		echo "layout, or a call's types.  Undo it, or bump the SONAME with a new baseline"
		echo "(docs/abi.md)."
	fi
	return 1
}

status=0 judged=0
for base in "$@"; do
	rc=0
	gate "$base" || rc=$?
	case $rc in
	0) judged=$((judged + 1)) ;;
	77) ;;
	*) status=1 ;;
	esac
done
[ "$status" -ne 0 ] && exit 1
[ "$judged" -eq 0 ] && skip "no baseline of this architecture"
exit 0
