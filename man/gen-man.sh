#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Generate the manual pages from the header's kernel-doc comments, the one
# source of truth:
#
#   man/gen-man.sh            regenerate man/man3/*.3 and man/man7/rangelock.7
#                             (run it after every change to rangelock.h and
#                             commit the result)
#   man/gen-man.sh --check    exit 1 unless the committed pages are what the
#                             header gives (ctest: man_pages_current)
#
# Pages: one per group below (the other names are link pages: symbolic
# links to the group's page, as mandoc recommends over ".so"); every RANGELOCK_API function in no group gets a page
# of its own, so a new call always has a page.  rangelock(7) is the header's
# opening comment plus a list of the pages.  A page keeps its date while its
# text does not change.  Needs only sh, awk, sed, diff and date; --check
# also lints the pages with mandoc -T lint (or groff -ww -z) when present.
#
# From the header's kernel-doc: "Return:" gives RETURN VALUE (a page with a
# call that returns something must have one); "Since: X.Y" gives VERSIONS
# (every documented name needs one, and a call's must be its node in
# src/rangelock.map); indented "-EXXX: ..." lines become a tagged list; in
# a call's page "<section> above" (a section of the opening comment) reads
# "<section> in rangelock(7)"; the synopsis leaves out the _TIME_BITS=64
# redirect.  man/examples/PAGE.c, if present, is the page's EXAMPLES
# section (PAGE.c for PAGE(3), rangelock.c for rangelock(7)); ctest
# package_man_examples compiles and runs the examples as the pages show them.
# Generation fails, and --check too, when a page would name a file that is
# not installed (docs/, bench/, the README), or rangelock(7) would miss an
# errno value the header uses.
set -eu
cd "$(dirname "$0")/.."
header=include/rangelock/rangelock.h
out=man

# page|what the page covers|names (functions, macros, "struct name")|related
# pages.  SEE ALSO of a page: its related pages, every page whose calls its
# text names, and rangelock(7).
groups='range_lock_tree_init|initialise, configure and check a range lock tree|range_lock_tree_init range_lock_tree_set_fifo range_lock_tree_destroy RANGE_LOCK_TREE_INITIALIZER RANGE_LOCK_TREE_INITIALIZER_FIFO DEFINE_RANGE_LOCK_TREE DEFINE_RANGE_LOCK_TREE_FIFO|range_lock_init range_read_lock range_lock_tree_set_segments range_lock_tree_set_fast_read range_lock_tree_set_file range_lock_tree_enable_stats range_lock_tree_dump
range_lock_init|prepare a range lock request|range_lock_init range_lock_init_full RANGE_LOCK_INITIALIZER DEFINE_RANGE_LOCK DEFINE_RANGE_LOCK_FULL|range_lock_tree_init range_read_lock range_read_trylock range_read_timedlock range_read_unlock
range_read_lock|lock a range for reading or writing, waiting as needed|range_read_lock range_write_lock range_read_lock_interruptible range_write_lock_interruptible range_read_lock_killable range_write_lock_killable|range_lock_init range_read_trylock range_read_timedlock range_read_unlock range_read_lock_nested range_lock_many range_read_lock_async range_lock_grow
range_read_trylock|lock a range only if that needs no wait|range_read_trylock range_write_trylock|range_lock_init range_read_lock range_read_timedlock range_read_unlock
range_read_timedlock|lock a range, waiting until a deadline at most|range_read_timedlock range_write_timedlock|range_lock_init range_read_lock range_read_trylock range_read_unlock
range_read_unlock|release a range, or downgrade a write hold|range_read_unlock range_write_unlock range_downgrade_write|range_read_lock range_read_trylock range_read_timedlock range_lock_many range_lock_grow
range_read_lock_nested|lock calls with lock-order annotations|range_read_lock_nested range_write_lock_nested range_write_lock_killable_nested range_write_lock_nest_lock|range_read_lock range_read_unlock
range_lock_tree_enable_stats|statistics of a range lock tree|range_lock_tree_enable_stats range_lock_tree_get_stats range_lock_tree_reset_stats struct_range_lock_stats range_lock_tree_get_segment_stats struct_range_lock_segment_stats|range_lock_tree_init range_lock_tree_dump
range_lock_tree_dump|print the requests of a range lock tree|range_lock_tree_dump|range_lock_tree_init range_lock_tree_enable_stats
range_lock_many|lock several ranges of one tree at once, all or nothing|range_lock_many range_lock_many_interruptible range_lock_many_killable range_lock_many_timed range_lock_many_try range_unlock_many struct_range_lock_item|range_read_lock range_read_unlock
range_read_lock_async|acquire a range without blocking a thread: asynchronous requests for event loops|range_read_lock_async range_write_lock_async range_lock_async_cancel range_lock_async_init struct_range_lock_async range_lock_async_fn|range_read_lock range_read_unlock
range_lock_grow|grow or shrink a held range without letting it go|range_lock_grow range_lock_grow_interruptible range_lock_grow_killable range_lock_grow_timed range_lock_grow_try range_lock_shrink|range_read_lock range_read_unlock
rangelock_version|the version of librangelock|rangelock_version|'

check=0
[ "${1:-}" = "--check" ] && check=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/man3" "$tmp/man7"
version=$(sed -n 's/^#define RANGELOCK_VERSION_STRING "\(.*\)"$/\1/p' "$header")
# each exported call and its version node: "name X.Y"
awk '/^RANGELOCK_[0-9]+\.[0-9]+ \{/ { node = substr($1, 11) }
     node != "" && /^ +[a-z_0-9]+;/ { n = $1; sub(/;.*/, "", n); print n, node }' \
	src/rangelock.map > "$tmp/nodes"

printf '%s\n' "$groups" | awk -v hdr="$header" -v dir="$tmp" -v version="$version" \
	-v nodes="$tmp/nodes" -v examples="$out/examples" '
function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
# roff text: escape, bold name(), italic @param
function fmt(s,   o, m) {
	gsub(/\\/, "\\e", s)
	# in the page of a call, a section of the opening comment is in
	# rangelock(7): "Conventions above", "\"Fast reads\" above" (a name or a
	# quoted title; other words before "above" are not cross references)
	if (xref)
		s = xrefs(s)
	o = ""
	while (match(s, /@[A-Za-z_][A-Za-z_0-9]*|[A-Za-z_][A-Za-z_0-9]*\(\)/)) {
		m = substr(s, RSTART, RLENGTH)
		o = o substr(s, 1, RSTART - 1)
		if (substr(m, 1, 1) == "@")
			o = o "\\fI" substr(m, 2) "\\fP"
		else {
			o = o "\\fB" substr(m, 1, RLENGTH - 2) "\\fP()"
			refd[substr(m, 1, RLENGTH - 2)] = 1
		}
		s = substr(s, RSTART + RLENGTH)
	}
	o = o s
	gsub(/rangelock\(7\)/, "\\fBrangelock\\fP(7)", o)
	return wrap(o)
}
# "Section above" -> "Section in rangelock(7)", for a capitalised word or a
# quoted title before "above"
function xrefs(s,   o) {
	o = ""
	while (match(s, /(^|[ (])([A-Z][A-Za-z]*|"[^"]+") above/)) {
		o = o substr(s, 1, RSTART + RLENGTH - 7) " in rangelock(7)"
		s = substr(s, RSTART + RLENGTH)
	}
	return o s
}
# Break filled text into lines of at most 78 bytes (at spaces); no line may
# start with a control character.
function wrap(s,   out, line, nw, w, i) {
	out = ""; line = ""
	nw = split(s, w, " ")
	for (i = 1; i <= nw; i++) {
		if (w[i] == "")
			continue
		if (line != "" && length(line) + 1 + length(w[i]) > 78) {
			out = out guard(line) "\n"; line = ""
		}
		line = (line == "") ? w[i] : line " " w[i]
	}
	return out guard(line)
}
function guard(l) { return (l ~ /^[.\047]/) ? "\\&" l : l }
function lit(s) { gsub(/\\/, "\\e", s); if (s ~ /^[.\047]/) s = "\\&" s; return s }
# Render comment lines doc[d, 1..n] as roff paragraphs into the global
# "body" (and "ret", the Return: paragraph; "params", the @name: list).
function render(d, skip_summary,   i, n, l, para, inparam, pname, inbullet, isret, inerr, errs, etag) {
	body = ""; ret = ""; params = ""; para = ""; inparam = 0; inbullet = 0
	inerr = 0; errs = 0
	n = doclen[d]
	i = 1
	if (skip_summary && doc[d, 1] ~ /^[A-Za-z_][A-Za-z_0-9 ]*(\(\))? - /) {
		while (i <= n && doc[d, i] != "" && doc[d, i] !~ /^@/)
			i++
	}
	for (; i <= n + 1; i++) {
		l = (i <= n) ? doc[d, i] : ""
		if (l ~ /^@[A-Za-z_0-9]+:/ || l ~ /^ - / || l == "" || (l ~ /^Return:/) ||
		    l ~ /^ +-E[A-Z]+(, -E[A-Z]+)*:/) {
			# flush the paragraph or item being collected
			if (para != "") {
				if (inerr)
					body = body ".TP\n.B " etag "\n" fmt(para) "\n"
				else if (inparam)
					params = params ".TP\n.I " pname "\n" fmt(para) "\n"
				else if (isret)
					ret = ret fmt(para) "\n"
				else if (inbullet)
					body = body ".IP \\(bu 2\n" fmt(para) "\n"
				else
					body = body ".PP\n" fmt(para) "\n"
			}
			para = ""; inparam = 0; inbullet = 0; isret = 0; inerr = 0
			# errno values: a tagged list, indented, until another kind of line
			if (l ~ /^ +-E[A-Z]+(, -E[A-Z]+)*:/) {
				if (!errs)
					body = body ".RS 2\n"
				errs = inerr = 1
				etag = trim(substr(l, 1, index(l, ":") - 1))
				gsub(/-/, "\\-", etag)
				para = trim(substr(l, index(l, ":") + 1))
				continue
			}
			if (errs) {
				body = body ".RE\n"
				errs = 0
			}
			if (l ~ /^@/) {
				inparam = 1
				pname = substr(l, 2, index(l, ":") - 2)
				para = trim(substr(l, index(l, ":") + 1))
			} else if (l ~ /^ - /) {
				inbullet = 1
				para = trim(substr(l, 4))
			} else if (l ~ /^Return:/) {
				isret = 1
				para = trim(substr(l, 8))
			}
			continue
		}
		para = (para == "") ? trim(l) : para " " trim(l)
	}
}
function summary(d,   i, s) {
	s = ""
	for (i = 1; i <= doclen[d] && doc[d, i] != "" && doc[d, i] !~ /^@/; i++)
		s = s (s == "" ? "" : " ") trim(doc[d, i])
	sub(/^(struct )?[^ ]*(\(\))? - /, "", s)
	return s
}
function th(name, sec) {
	return ".\\\" Generated by man/gen-man.sh from include/rangelock/rangelock.h: do not edit.\n" \
	       ".TH " toupper(name) " " sec " @DATE@ \"librangelock " version "\" librangelock\n"
}

# ---- the group table (stdin)
FILENAME == "-" || FILENAME == "" {
	split($0, f, "|")
	ng++; gpage[ng] = f[1]; gwhat[ng] = f[2]
	gn[ng] = split(f[3], tmpn, " ")
	grel[ng] = f[4]
	for (k = 1; k <= gn[ng]; k++) {
		gname[ng, k] = tmpn[k]; grouped[tmpn[k]] = 1
	}
	next
}

# ---- the header
# comments: the first multi-line one is the overview (rangelock(7))
incom {
	if ($0 ~ /^ \*\/$/) { incom = 0; ndoc_done = 1; next }
	l = $0; sub(/^ \* ?/, "", l); if (l == " *" || l == "*") l = ""
	sub(/^ \*$/, "", l)
	if (l ~ /^Since: /) { since[nd] = substr(l, 8); next }
	doc[nd, ++doclen[nd]] = l
	next
}
/^\/\*\*? .*\*\/$/ {       # one-line comment: /** name() - text */
	l = $0; sub(/^\/\*\*? /, "", l); sub(/ *\*\/$/, "", l)
	if (l ~ /^SPDX/) next
	nd++; doclen[nd] = 1; doc[nd, 1] = l; cur = nd
	next
}
/^\/\*\*?$/ { nd++; doclen[nd] = 0; incom = 1; cur = nd; if (!topdoc) topdoc = nd; next }
/^$/ { cur = 0; next }
/^RANGELOCK_API/ {
	decl = $0
	while (decl !~ /;/ && (getline l) > 0)
		decl = decl " " trim(l)
	sub(/^RANGELOCK_API /, "", decl); gsub(/[ \t]+/, " ", decl)
	sub(/ RANGELOCK_TIME64_REDIRECT\([^)]*\)/, "", decl)
	name = decl; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
	add(name, decl)
	next
}
/^#define [A-Za-z_0-9]+\(/ && cur {
	name = $2; sub(/\(.*/, "", name)
	decl = $0; sub(/\).*/, ")", decl); gsub(/[ \t]+/, " ", decl)
	add(name, decl)
	next
}
/^typedef .*;$/ && cur {       # typedef ... name(...); or typedef ... name;
	decl = $0
	name = decl; sub(/^typedef [^(]*[ *]/, "", name); sub(/[(;].*/, "", name)
	add(name, decl)
	next
}
/^struct ([A-Z0-9_]+ )?[a-z_]+ \{$/ && cur {
	name = "struct_" $(NF - 1)
	decl = $0; sub(/ RANGELOCK_ALIGN8/, "", decl)
	while ((getline l) > 0) {
		gsub(/\t/, "        ", l)
		decl = decl "\n" l
		if (l ~ /^};/) break
	}
	add(name, decl)
	next
}
function add(name, decl) {
	nr++; rname[nr] = name; rdecl[nr] = decl; rdoc[nr] = cur; byname[name] = nr
	if (name !~ /^struct_/ && name !~ /^[A-Z]/ && decl !~ /^#define/)
		api[name] = 1
}

# "Since librangelock X.Y: names." lines for the names n[1..k] of a page
function versions(nn, nm,   k, v, e, nv, vl, vn, i, j, t, out, sym, r) {
	nv = 0
	for (k = 1; k <= nn; k++) {
		r = byname[nm[k]]
		split(since[rdoc[r]], e, " ")
		v = e[1]; e[1] = since[rdoc[r]]; sub(/^[^ ]* ?/, "", e[1])
		if (!(v in vn)) { vl[++nv] = v; vn[v] = "" }
		t = nm[k]; sub(/^struct_/, "struct ", t)
		if (t !~ /^struct /) t = t "()"
		if (e[1] != "") t = t " " e[1]
		vn[v] = vn[v] (vn[v] == "" ? "" : ", ") t
		if (nm[k] in node) sym[v] = 1
	}
	for (i = 2; i <= nv; i++)	# oldest first
		for (j = i; j > 1 && vless(vl[j], vl[j - 1]); j--) {
			t = vl[j]; vl[j] = vl[j - 1]; vl[j - 1] = t
		}
	out = ""
	for (i = 1; i <= nv; i++) {
		v = vl[i]
		t = "Since librangelock " v
		if (v in sym) t = t " (symbol version RANGELOCK_" v ")"
		out = out (i == 1 ? "" : ".PP\n") fmt(nv == 1 && vn[v] !~ / \(/ ? t "." : t ": " vn[v] ".") "\n"
	}
	return out
}
function vless(a, b,   x, y) {
	split(a, x, "."); split(b, y, ".")
	return x[1] + 0 < y[1] + 0 || (x[1] + 0 == y[1] + 0 && x[2] + 0 < y[2] + 0)
}
# the EXAMPLES section of PAGE from man/examples/PAGE.c, if there is one
function example(page,   f, l, o) {
	f = examples "/" page ".c"
	o = ""
	while ((getline l < f) > 0) {
		gsub(/\t/, "    ", l)
		o = o lit(l) "\n"
	}
	close(f)
	return o == "" ? "" : ".SH EXAMPLES\n.EX\n" o ".EE\n"
}

# SEE ALSO of group g: its related pages and the pages of the calls its
# text names (refd), sorted, then rangelock(7)
function seealso(g,   sa, ns, nrel, n, i, j, t, o, rel, srt) {
	ns = 0
	nrel = split(grel[g], rel, " ")
	for (i = 1; i <= nrel; i++) {
		if (!(rel[i] in ispage)) {
			printf "gen-man.sh: %s names %s as related, which has no page\n", gpage[g], rel[i] > "/dev/stderr"
			exit 1
		}
		sa[rel[i]] = 1
	}
	for (n in refd)
		if ((n in pageof) && pageof[n] != gpage[g])
			sa[pageof[n]] = 1
	for (n in sa)
		srt[++ns] = n
	for (i = 2; i <= ns; i++)
		for (j = i; j > 1 && srt[j] < srt[j - 1]; j--) {
			t = srt[j]; srt[j] = srt[j - 1]; srt[j - 1] = t
		}
	o = ""
	for (i = 1; i <= ns; i++)
		o = o ".BR " srt[i] " (3),\n"
	return o ".BR rangelock (7)\n"
}

END {
	if (failed)
		exit 1
	while ((getline l < nodes) > 0) {
		split(l, f, " "); node[f[1]] = f[2]
	}
	# every documented name says since when; a call, its symbol version
	bad = 0
	for (r = 1; r <= nr; r++) {
		if (!(rname[r] in grouped) && !(rname[r] in api))
			continue	# no page
		if (rdoc[r] == 0 || since[rdoc[r]] == "") {
			printf "gen-man.sh: %s has no \"Since: X.Y\" line in %s\n", rname[r], hdr > "/dev/stderr"
			bad = 1
			continue
		}
		v = since[rdoc[r]]; sub(/ .*/, "", v)
		if ((rname[r] in node) && node[rname[r]] != v) {
			printf "gen-man.sh: %s: \"Since: %s\" in %s, but node RANGELOCK_%s in src/rangelock.map\n", rname[r], v, hdr, node[rname[r]] > "/dev/stderr"
			bad = 1
		}
	}
	if (bad)
		exit 1
	# calls in no group get a page of their own
	for (r = 1; r <= nr; r++)
		if (!(rname[r] in grouped) && (rname[r] in api)) {
			ng++; gpage[ng] = rname[r]; gwhat[ng] = summary(rdoc[r])
			gn[ng] = 1; gname[ng, 1] = rname[r]; grouped[rname[r]] = 1
		}
	# the page of every name that has one
	for (g = 1; g <= ng; g++) {
		ispage[gpage[g]] = 1
		for (k = 1; k <= gn[g]; k++)
			pageof[gname[g, k]] = gpage[g]
	}
	xref = 1
	for (g = 1; g <= ng; g++) {
		file = dir "/man3/" gpage[g] ".3"
		split("", refd)
		names = ""
		for (k = 1; k <= gn[g]; k++) {
			n = gname[g, k]
			if (!(n in byname)) {
				printf "gen-man.sh: %s is in the group table but not in %s\n", n, hdr > "/dev/stderr"
				exit 1
			}
			if (n !~ /^struct_/)
				names = names (names == "" ? "" : ", ") n
		}
		printf "%s", th(gpage[g], 3) > file
		printf ".SH NAME\n%s\n", wrap(names " \\- " gwhat[g]) > file
		printf ".SH LIBRARY\nlibrangelock (\\fI\\-lrangelock\\fP; \\fIpkg\\-config \\-\\-libs rangelock\\fP)\n" > file
		printf ".SH SYNOPSIS\n.nf\n.B #include <rangelock/rangelock.h>\n" > file
		for (k = 1; k <= gn[g]; k++) {
			r = byname[gname[g, k]]
			m = split(rdecl[r], dl, "\n")
			printf ".PP\n" > file
			for (j = 1; j <= m; j++)
				printf "%s\n", lit(dl[j]) > file
			# (prototypes stay on one line each: .nf keeps them as written)
		}
		printf ".fi\n.SH DESCRIPTION\n" > file
		rets = ""
		for (k = 1; k <= gn[g]; k++) {
			r = byname[gname[g, k]]
			# consecutive names sharing one comment: one heading, one text
			head = rname[r]
			while (k < gn[g] && rdoc[byname[gname[g, k + 1]]] == rdoc[r]) {
				k++; head = head ", " gname[g, k]
			}
			gsub(/struct_/, "struct ", head)
			hl = ""
			hn = split(head, hp, ", ")
			for (j = 1; j <= hn; j++)
				hl = hl (j > 1 ? ", " : "") (hp[j] ~ /^struct / ? hp[j] : hp[j] "()")
			printf ".SS %s\n", wrap(hl) > file
			render(rdoc[r], 1)
			s = summary(rdoc[r])
			if (s != "" && doc[rdoc[r], 1] ~ / - /)
				printf "%s\n", fmt(s ~ /^[a-z]+ / ? toupper(substr(s, 1, 1)) substr(s, 2) : s) > file
			else if (params == "")
				sub(/^\.PP\n/, "", body)
			if (params != "")
				printf "%s", params > file
			if (body != "")
				printf "%s", body > file
			if (ret != "")	# (a tag too long for one line: no tag)
				rets = rets (length(hl) > 78 ? ".PP" : ".TP\n" hl) "\n" ret
		}
		printf ".SH RETURN VALUE\n" > file
		if (rets != "") {
			sub(/^\.PP\n/, "", rets)
			printf "%s", rets > file
		} else {
			for (k = 1; k <= gn[g]; k++) {
				r = byname[gname[g, k]]
				if ((rname[r] in api) && rdecl[r] !~ /^void /) {
					printf "gen-man.sh: %s returns a value but its page has no \"Return:\" paragraph in %s\n", rname[r], hdr > "/dev/stderr"
					exit 1
				}
			}
			printf "These calls return no value.\n" > file
		}
		for (k = 1; k <= gn[g]; k++)
			vnm[k] = gname[g, k]
		printf ".SH VERSIONS\n%s", versions(gn[g], vnm) > file
		printf "%s", example(gpage[g]) > file
		printf ".SH SEE ALSO\n%s", seealso(g) > file
		close(file)
		for (k = 1; k <= gn[g]; k++) {
			n = gname[g, k]
			if (n == gpage[g] || n ~ /^struct_/)
				continue
			printf "%s %s\n", n, gpage[g] > (dir "/links")
		}
	}
	# rangelock(7): the header opening comment and the list of pages
	xref = 0
	file = dir "/man7/rangelock.7"
	printf "%s", th("rangelock", 7) > file
	printf ".SH NAME\nrangelock \\- range reader/writer locks for POSIX threads (librangelock)\n" > file
	printf ".SH SYNOPSIS\n.nf\n.B #include <rangelock/rangelock.h>\n.fi\n.PP\n" > file
	printf "Link with \\fI\\-lrangelock\\fP, or use \\fIpkg\\-config rangelock\\fP\nor the CMake package \\fBrangelock::rangelock\\fP.\n" > file
	printf ".SH DESCRIPTION\n" > file
	render(topdoc, 1)
	sub(/^\.PP\n/, "", body)
	printf "%s", body > file
	printf ".SH FUNCTIONS\n" > file
	for (g = 1; g <= ng; g++) {
		names = ""
		for (k = 1; k <= gn[g]; k++)
			if (gname[g, k] !~ /^struct_/)
				names = names (names == "" ? "" : ", ") gname[g, k]
		printf ".TP\n.BR %s (3)\n%s\n", gpage[g], wrap(gwhat[g] ": " names ".") > file
	}
	nlist = ""
	for (n in node)
		nv[node[n]] = 1
	for (v in nv)
		nsort[++nn] = v
	for (i = 2; i <= nn; i++)
		for (j = i; j > 1 && vless(nsort[j], nsort[j - 1]); j--) {
			t = nsort[j]; nsort[j] = nsort[j - 1]; nsort[j - 1] = t
		}
	for (i = 1; i <= nn; i++)
		nlist = nlist (i == 1 ? "" : i == nn ? " and " : ", ") "RANGELOCK_" nsort[i]
	printf ".SH VERSIONS\n%s\n", fmt("This manual describes librangelock " version ". Each call carries the symbol version of the release that added it (" nlist "), and each page says under VERSIONS which release that was. A program built against an earlier release of the same major version runs unchanged; one that uses a call added after the library it runs with does not start: the dynamic linker names the symbol version it misses. rangelock_version() tells the version of the library that runs, RANGELOCK_VERSION_STRING (and RANGELOCK_VERSION_MAJOR, _MINOR, _PATCH) that of the header a program was compiled with.") > file
	printf "%s", example("rangelock") > file
	printf ".SH SEE ALSO\n" > file
	for (g = 1; g <= ng; g++)
		printf ".BR %s (3)%s\n", gpage[g], g < ng ? "," : "" > file
	close(file)
}
' - "$header"

# What the pages must not say, whatever the header says.
status=0
bad() { echo "gen-man.sh: $*" >&2; status=1; }
# files that are not installed (cmake/install.cmake installs the header,
# the library, the package files and these pages)
grep -HnE 'docs/|bench/|tests/|README|[A-Za-z]\.md\b' "$tmp"/man3/*.3 "$tmp"/man7/*.7 |
	sed "s|^$tmp/||" | while read -r l; do
	echo "gen-man.sh: names a file that is not installed: $l" >&2; done
grep -qE 'docs/|bench/|tests/|README|[A-Za-z]\.md\b' "$tmp"/man3/*.3 "$tmp"/man7/*.7 &&
	bad "rewrite those references in $header (a manual page, or plain words)"
# a cross reference names its page: "above" in a page of section 3 would be
# a section of rangelock(7) (the header's opening comment)
xre='(^|[ (])([A-Z][A-Za-z]*|"[^"]+") above'
grep -lE "$xre" "$tmp"/man3/*.3 >/dev/null 2>&1 &&
	bad "\"above\" in $(grep -lE "$xre" "$tmp"/man3/*.3 | sed "s|^$tmp/||" | tr '\n' ' ')"
# the title line at 80 columns: "NAME(3)  librangelock  NAME(3)" for the
# longest page name, with at least two spaces on each side of the middle
for f in "$tmp"/man3/*.3; do
	n=$(basename "$f" .3)
	[ $(( 2 * (${#n} + 3) + 12 + 4 )) -le 80 ] ||
		bad "the title line of $n(3) is wider than 80 columns (the volume in .TH is too long)"
done
grep -l 'RANGELOCK_TIME64_REDIRECT' "$tmp"/man3/*.3 >/dev/null 2>&1 &&
	bad "a synopsis shows RANGELOCK_TIME64_REDIRECT"
# every errno value the header documents is in rangelock(7)'s list (but
# -EDEADLK, which the header names to say that no call returns it)
for e in $(grep -o -- '-E[A-Z][A-Z]*' "$header" | sort -u | grep -vx -- -EDEADLK); do
	grep -q "^\.B .*\\$e\b" "$tmp/man7/rangelock.7" ||
		bad "rangelock(7) does not list $e (an indented \"$e: calls\" line of the header's conventions)"
done
[ $status -eq 0 ] || exit 1

# Dates: a page whose text did not change keeps the date it has.
today=$(date -u +%Y-%m-%d)
for f in "$tmp"/man3/*.3 "$tmp"/man7/*.7; do
	rel=${f#"$tmp"/}
	old="$out/$rel"
	date=$today
	if [ -f "$old" ]; then
		olddate=$(sed -n '2s/^\.TH [^ ]* [0-9] \([0-9-]*\) .*/\1/p' "$old")
		if [ -n "$olddate" ] && sed "s/@DATE@/$olddate/" "$f" | cmp -s - "$old"; then
			date=$olddate
		fi
	fi
	sed "s/@DATE@/$date/" "$f" > "$f.new" && mv "$f.new" "$f"
done

if [ $check -eq 1 ]; then
	status=0
	while read -r link page; do
		if [ "$(readlink "$out/man3/$link.3" 2>/dev/null)" != "$page.3" ]; then
			echo "link page $out/man3/$link.3 should be a symlink to $page.3 (run man/gen-man.sh)"
			status=1
		fi
	done < "$tmp/links"
	# Every exported call (RANGELOCK_API in the header) has a page.
	for sym in $(tr '\n' ' ' < "$header" | grep -o 'RANGELOCK_API[^(;]*(' |
		     sed 's/($//; s/.*[ *]//' | sort -u); do
		if [ ! -f "$out/man3/$sym.3" ]; then
			echo "no manual page for $sym: run man/gen-man.sh and commit man/"
			status=1
		fi
	done
	for f in "$tmp"/man3/*.3 "$tmp"/man7/*.7; do
		rel=${f#"$tmp"/}
		if [ ! -f "$out/$rel" ]; then
			echo "missing: $out/$rel (run man/gen-man.sh and commit man/)"
			status=1
			continue
		fi
		sed '2s/^\(\.TH [^ ]* [0-9]\) [0-9-]*/\1 D/' "$out/$rel" > "$tmp/a"
		sed '2s/^\(\.TH [^ ]* [0-9]\) [0-9-]*/\1 D/' "$f" > "$tmp/b"
		if ! diff -u "$tmp/a" "$tmp/b" > "$tmp/d"; then
			echo "out of date: $out/$rel (run man/gen-man.sh and commit man/):"
			sed 's/^/  /' "$tmp/d" | head -20
			status=1
		fi
	done
	for f in "$out"/man3/*.3 "$out"/man7/*.7; do
		rel=${f#"$out"/}
		[ -f "$tmp/$rel" ] || [ -L "$f" ] || { echo "stale: $f (no longer generated)"; status=1; }
	done
	# Lint: mandoc if present, else groff; any message fails.
	if command -v mandoc >/dev/null 2>&1; then
		lint=$(cd "$out" && mandoc -T lint man3/*.3 man7/*.7 2>&1 || true)
		linter="mandoc -T lint"
	elif command -v groff >/dev/null 2>&1; then
		lint=$(cd "$out" && for f in man3/*.3 man7/*.7; do groff -ww -z -man "$f"; done 2>&1)
		linter="groff -ww -z"
	else
		lint="" linter="no linter (neither mandoc nor groff installed: lint skipped)"
	fi
	if [ -n "$lint" ]; then
		printf '%s:\n%s\n' "$linter" "$lint"
		status=1
	fi
	[ $status -eq 0 ] && echo "$linter: clean"
	[ $status -eq 0 ] && echo "manual pages agree with $header ($(ls "$out"/man3 | wc -l) in man3, every exported call has one)"
	exit $status
fi

rm -rf "$out/man3" "$out/man7"
mkdir -p "$out/man3" "$out/man7"
cp "$tmp"/man3/*.3 "$out/man3/"
cp "$tmp"/man7/*.7 "$out/man7/"
while read -r link page; do
	ln -s "$page.3" "$out/man3/$link.3"
done < "$tmp/links"
echo "wrote $(ls "$out"/man3 | wc -l) pages to $out/man3 and $out/man7/rangelock.7"
