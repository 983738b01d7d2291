#!/bin/sh
# The manual pages' EXAMPLES, as the pages show them: each is cut out of its
# page (between .EX and .EE, roff escapes undone), compiled with -Wall
# -Wextra -Werror against the library just built, and run; it must exit 0.
# Every man/examples/*.c must be in a page (man/gen-man.sh puts it there).
#   man_examples.sh <source dir> <librangelock.so or .a> <cc> <work dir> [cflags]
set -eu
src=$1 lib=$2 cc=$3 work=$4 cflags=${5:-}
mkdir -p "$work"
libdir=$(dirname "$lib")
n=0 fail=0
for page in "$src"/man/man3/*.3 "$src"/man/man7/*.7; do
	[ -L "$page" ] && continue
	grep -q '^\.SH EXAMPLES' "$page" || continue
	name=$(basename "$page" | sed 's/\.[37]$//')
	sed -n '/^\.SH EXAMPLES/,/^\.SH /{/^\.EX$/,/^\.EE$/p}' "$page" |
		sed -e '1d;$d' -e 's/^\\&//' -e 's/\\e/\\/g' > "$work/$name.c"
	n=$((n + 1))
	# shellcheck disable=SC2086
	if ! $cc $cflags -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I"$src/include" \
		"$work/$name.c" -o "$work/$name" "$lib" -Wl,-rpath,"$libdir" -pthread -ldl \
		> "$work/$name.log" 2>&1; then
		echo "FAIL: the example of $(basename "$page") does not compile:"
		cat "$work/$name.log"
		fail=1
		continue
	fi
	if out=$("$work/$name" 2>&1); then
		echo "$(basename "$page"): compiled and ran: $out"
	else
		echo "FAIL: the example of $(basename "$page") exits $?: $out"
		fail=1
	fi
done
files=$(ls "$src"/man/examples/*.c 2>/dev/null | wc -l)
if [ "$n" -ne "$files" ]; then
	echo "FAIL: $files files in man/examples, $n pages with an example (run man/gen-man.sh)"
	fail=1
fi
[ "$n" -gt 0 ] || { echo "FAIL: no page has an example"; fail=1; }
[ "$fail" -eq 0 ] && echo "$n examples compiled and ran"
exit "$fail"
