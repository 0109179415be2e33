#!/bin/sh
# The library's layers (doc/DESIGN.md "The layers"), read from the built objects: a function
# or datum of one layer may use those of its own layer and of the layers below it, never one
# above. Bottom to top:
#   util, json, store (the stores), state, check, store (the backends), index, secrets, ops
# An object's undefined symbols are matched to the object that defines them (nm). A call that
# goes up fails the test, unless the list below names it, with its reason. An entry that is no
# longer needed fails too, so the list stays true.
src=${top_srcdir:-$(dirname "$0")/..}
build=${top_builddir:-$src}

# FROM TO  reason (FROM and TO: folder/file without .c)
ALLOW='
state/lazy store/prehash  a lazy load of a file starts the journal'"'"'s ahead hash of it (move hashes the old files while it works)
state/state store/prehash  the state frees its ahead hash
'

T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
cd "$build/lib" || exit 2
# one object per source (libtool keeps PIC objects in .libs/; a static-only build beside)
find . -name 'libstatetool_core_la-*.o' | LC_ALL=C sort | awk '
{
	f = $0; sub(/^\.\//, "", f); o = f; sub(/\.libs\//, "", f)
	dir = f; sub(/\/.*/, "", dir)
	name = f; sub(/.*libstatetool_core_la-/, "", name); sub(/\.o$/, "", name)
	if (dir == f) dir = "lib"
	key = dir "/" name
	if (!(key in seen)) { seen[key] = 1; print key, o }
}' > "$T/objects"
# (an object left by a source since moved or removed is not read)
while read -r key f; do
	[ -f "$src/lib/$key.c" ] || [ -f "$build/lib/$key.c" ] || [ -f "$build/lib/${key#lib/}.c" ] &&
		echo "$key $f"
done < "$T/objects" > "$T/live"
mv "$T/live" "$T/objects"
[ "$(wc -l < "$T/objects")" -gt 50 ] || { echo "layers.sh: too few objects under $build/lib (build first)"; exit 2; }

while read -r key f; do
	nm "$f" | awk -v k="$key" '
	NF == 3 && $2 ~ /^[TDBR]$/ { print "D", k, $3 }
	NF == 2 && $1 == "U" { print "U", k, $2 }'
done < "$T/objects" > "$T/syms"
echo "$ALLOW" | awk 'NF >= 2 { print $1, $2 }' > "$T/allow"

awk -v allowfile="$T/allow" '
function rank(k,   d, f) {
	d = k; sub(/\/.*/, "", d); f = k; sub(/^[^\/]*\//, "", f)
	if (d == "util") return 1
	if (d == "json" || d == "lib") return 2
	if (d == "store") {
		if (f ~ /^(diy|diy_load|diy_meta|project|lock|pairlock|history|upgrade|stack_rename|cloud|journal|journal_names|prehash)$/)
			return 6
		return 3
	}
	if (d == "state") return 4
	if (d == "check") return 5
	if (d == "index") return 7
	if (d == "secrets") return 8
	if (d == "ops") return 9
	return 0
}
BEGIN { while ((getline l < allowfile) > 0) { split(l, a, " "); allow[a[1] " " a[2]] = 1 } }
$1 == "D" { def[$3] = $2; next }
$1 == "U" { use[++n] = $2 " " $3 }
END {
	bad = 0
	for (i = 1; i <= n; i++) {
		split(use[i], u, " ")
		if (!(u[2] in def)) continue
		from = u[1]; to = def[u[2]]
		if (rank(from) == 0 || rank(to) == 0) { print "layers.sh: no layer for " (rank(from) ? to : from); bad = 1; continue }
		if (rank(to) <= rank(from)) continue
		if ((from " " to) in allow) { used[from " " to] = 1; continue }
		print "layers.sh: " from " calls up into " to " (" u[2] ")"
		bad = 1
	}
	for (p in allow) if (!(p in used)) { print "layers.sh: allowed but no longer needed: " p; bad = 1 }
	exit bad
}' "$T/syms"
