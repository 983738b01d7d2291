#!/bin/sh
# Prepare release X.Y.Z in the working tree: one command, then review,
# commit and tag (docs/abi.md, "Release procedure").
#   tools/release.sh 0.3.0
# It
#  1. sets the version in CMakeLists.txt's project() and the header's
#     RANGELOCK_VERSION_* macros (pkg-config, the CMake package and
#     rangelock_version() follow; a configure-time check keeps them equal),
#     and in the README's lines that name the version;
#  2. regenerates the manual pages (man/gen-man.sh: they carry the
#     version) and turns CHANGELOG.md's [Unreleased] section into
#     [X.Y.Z] - today;
#  3. builds the shared library (RelWithDebInfo) in build-release/, checks
#     its exports and that the calls added since the last release are in
#     the RANGELOCK_X.Y node, runs the ABI gate against the baselines of
#     the earlier releases (skipped when the SONAME was bumped on purpose),
#     and records abi/librangelock-X.Y.Z.abi beside them (a SONAME bump
#     removes the old SONAME's baselines instead);
#  4. prints the commands that commit and tag.
#
#   tools/release.sh --baseline
# re-records the baseline of the current version, abi/librangelock-X.Y.Z.abi,
# from the committed tree: step 3 alone, version and changelog untouched.
# For a change abidw sees (a struct's private field put to another use, a
# renamed parameter) made after the version was set and before the tag.
#
# It never commits, tags or pushes.  Needs cmake, a C compiler and
# abigail-tools.
set -eu
cd "$(dirname "$0")/.."
die() { echo "release.sh: $*" >&2; exit 1; }

old=$(sed -n 's/^project(rangelock VERSION \([0-9.]*\) .*/\1/p' CMakeLists.txt)
[ -n "$old" ] || die "no project(rangelock VERSION ...) in CMakeLists.txt"
new=${1:-}
rerecord=0
if [ "$new" = "--baseline" ]; then
	rerecord=1 new=$old
fi
echo "$new" | grep -qx '[0-9]\{1,\}\.[0-9]\{1,\}\.[0-9]\{1,\}' ||
	die "usage: tools/release.sh X.Y.Z, or tools/release.sh --baseline"
[ "$rerecord" -eq 1 ] || [ "$old" != "$new" ] || [ ! -f "abi/librangelock-$old.abi" ] ||
	die "$new is already the version and has a baseline (re-record it: tools/release.sh --baseline)"
command -v abidw >/dev/null 2>&1 || die "abidw not found (apt-get install abigail-tools)"
[ -z "$(git status --porcelain 2>/dev/null)" ] ||
	die "the working tree has changes: commit or stash them first"
[ "$rerecord" -eq 1 ] || grep -q '^## \[Unreleased\]' CHANGELOG.md ||
	die "CHANGELOG.md has no [Unreleased] section"
# The baselines of the earlier releases, oldest first; the last one is the
# release before this one.
older=$(ls abi/librangelock-*.abi 2>/dev/null | grep -vx "abi/librangelock-$new.abi" | sort -V || true)
[ -n "$older" ] || die "no baseline of an earlier release in abi/"
oldbase=$(printf '%s\n' $older | tail -n 1)
major=${new%%.*} rest=${new#*.} minor=${rest%%.*} patch=${new##*.}
node="RANGELOCK_$major.$minor"
soversion=$(sed -n 's/^set(RANGELOCK_SOVERSION \([0-9]*\).*/\1/p' CMakeLists.txt)
[ "$soversion" = "$major" ] ||
	die "RANGELOCK_SOVERSION is $soversion but $new's major is $major: they go together"
today=$(date -u +%Y-%m-%d)

if [ "$rerecord" -eq 0 ]; then
	echo "== version $old -> $new"
	sed -i "s/^project(rangelock VERSION [0-9.]* /project(rangelock VERSION $new /" CMakeLists.txt
	sed -i -e "s/^#define RANGELOCK_VERSION_MAJOR .*/#define RANGELOCK_VERSION_MAJOR $major/" \
		-e "s/^#define RANGELOCK_VERSION_MINOR .*/#define RANGELOCK_VERSION_MINOR $minor/" \
		-e "s/^#define RANGELOCK_VERSION_PATCH .*/#define RANGELOCK_VERSION_PATCH $patch/" \
		-e "s/^#define RANGELOCK_VERSION_STRING .*/#define RANGELOCK_VERSION_STRING \"$new\"/" \
		include/rangelock/rangelock.h
	sed -i -e "s/\(| \`rangelock_version()\`.*| \"\)[0-9.]*\(\" |\)/\1$new\2/" \
		-e "s/librangelock\.so\.[0-9]*\.[0-9]*\.[0-9]*/librangelock.so.$new/" \
		README.md

	echo "== manual pages (they carry the version)"
	sh man/gen-man.sh >/dev/null

	echo "== CHANGELOG.md: [Unreleased] -> [$new] - $today"
	awk -v v="$new" -v d="$today" '
		/^## \[Unreleased\]/ { print; print ""; print "## [" v "] - " d; next }
		{ print }' CHANGELOG.md > CHANGELOG.md.new
	mv CHANGELOG.md.new CHANGELOG.md
fi

echo "== build (RelWithDebInfo, shared) in build-release/"
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DBUILD_SHARED_LIBS=ON -DBUILD_TESTING=OFF -DRANGELOCK_BUILD_BENCH=OFF >/dev/null
cmake --build build-release -j2 --target rangelock >/dev/null
lib=build-release/src/librangelock.so
sh tests/check_symbols.sh "$lib" include/rangelock/rangelock.h

echo "== calls added since $(basename "$oldbase") must be in $node"
newsyms=$(nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}' | while read -r s; do
	grep -q "<elf-symbol name='${s%%@*}'" "$oldbase" || echo "$s"; done)
bad=$(printf '%s\n' "$newsyms" | grep -v "@@$node\$" | grep . || true)
[ -z "$bad" ] || die "in the wrong node of src/rangelock.map (want $node): $bad"
if [ -n "$newsyms" ] && [ "$patch" -ne 0 ]; then
	die "a patch release adds no calls: $newsyms"
fi
printf '  %s\n' $newsyms

oldso=$(sed -n "1s/.* soname='\([^']*\)'.*/\1/p" "$oldbase")
newso=$(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
if [ "$oldso" = "$newso" ]; then
	echo "== ABI gate against the earlier releases:" $older
	sh tests/check_abi.sh "$lib" . build-release/abi-gate $older ||
		die "the ABI gate fails: fix the break, or bump RANGELOCK_SOVERSION (docs/abi.md)"
else
	echo "== SONAME $oldso -> $newso: a deliberate break, gate against the old baselines skipped"
	echo "   (CHANGELOG.md's [$new] section must say why)"
fi

echo "== baseline abi/librangelock-$new.abi"
abidw --headers-dir include/rangelock --no-corpus-path "$lib" > "abi/librangelock-$new.abi"
if [ "$oldso" != "$newso" ]; then
	for b in $older; do	# the old SONAME's ABI is not this library's
		git rm -q "$b"
	done
fi
git add "abi/librangelock-$new.abi"
sh tests/check_abi.sh "$lib" . build-release/abi-gate >/dev/null ||
	die "the gate fails with the new baseline"
ls -l abi/

if [ "$rerecord" -eq 1 ]; then
	cat <<EOF

Baseline abi/librangelock-$new.abi re-recorded from the working tree.
Review and commit it:
  git diff --cached --stat
  git commit -m "abi: re-record the $new baseline" abi/librangelock-$new.abi
EOF
	exit 0
fi
cat <<EOF

Release $new prepared.  Review, run the tests, then:
  git diff HEAD            # version, README, CHANGELOG.md, baseline
  bash tests/run_all.sh
  git commit -am "Release $new"
  git tag -a v$new -m "librangelock $new"
Next calls after this release go into a new node after $node in
src/rangelock.map (docs/abi.md).
EOF
