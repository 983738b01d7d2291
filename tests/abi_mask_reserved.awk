# Used by check_abi.sh.  Removes from an abidw XML file (the last file
# argument) the data members of a public struct that lie in the reserved
# space of the baseline (the first file argument): the bits from each
# member named reserved* to the next member or the end of the struct.
# Later releases may define fields there (docs/abi.md); everything else,
# the struct's size included, is still compared.
#   awk -f abi_mask_reserved.awk BASELINE.abi FILE.abi > FILE.masked.abi
FNR == 1 { file++ }
# inside a masked member: skip to its end (it may nest a union or struct)
skipping {
	if (/<data-member /) skipping++
	if (/<\/data-member>/) skipping--
	next
}
/<class-decl / {
	cls = ""
	if (match($0, / name='[^']*'/))
		cls = substr($0, RSTART + 7, RLENGTH - 8)
	size = 0
	if (match($0, / size-in-bits='[0-9]+'/))
		size = substr($0, RSTART + 15, RLENGTH - 16) + 0
	n = 0
}
file == 1 && /<data-member / {
	match($0, /layout-offset-in-bits='[0-9]+'/)
	off[++n] = substr($0, RSTART + 23, RLENGTH - 24) + 0
}
file == 1 && /<var-decl / && n > 0 && !(n in mname) {
	match($0, / name='[^']*'/)
	mname[n] = substr($0, RSTART + 7, RLENGTH - 8)
}
file == 1 && /<\/class-decl>/ {
	for (i = 1; i <= n; i++)
		if (mname[i] ~ /^reserved/) {
			k = ++nr[cls]
			lo[cls, k] = off[i]
			hi[cls, k] = (i < n) ? off[i + 1] : size
		}
	delete off; delete mname; n = 0
}
file == 1 { next }
# second file: print all but the masked members
/<data-member / && (cls in nr) {
	match($0, /layout-offset-in-bits='[0-9]+'/)
	o = substr($0, RSTART + 23, RLENGTH - 24) + 0
	drop = 0
	for (k = 1; k <= nr[cls]; k++)
		if (o >= lo[cls, k] && o < hi[cls, k])
			drop = 1
	if (drop) { masked++; skipping = !/<\/data-member>/; next }
}
{ print }
END { printf "%d\n", masked > "/dev/stderr" }
