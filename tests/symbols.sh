#!/bin/sh
# The library exports only its public prefix (st_), and every command is documented in --help,
# the man page and the README.
. "$(dirname "$0")/cli/lib.sh"
so=$(ls "$top_builddir"/lib/.libs/libstatetool.so.* 2>/dev/null | head -n 1)
if [ -n "$so" ]; then
	run "exports" sh -c "nm -D --defined-only '$so' | awk '\$2 ~ /^[TDBR]$/ {print \$3}' | grep -v '^st_' | grep -v '^_' || true"
	check_out_empty
	run "exports st_" sh -c "nm -D --defined-only '$so' | awk '\$2 == \"T\" {print \$3}' | grep -c '^st_'"
	if [ "$(cat "$T/out")" -gt 40 ]; then ok; else bad "too few st_ symbols"; fi
	run "no private" sh -c "nm -D --defined-only '$so' | grep -c ' st__' || true"
	check_out "0"
fi
cmds=$("$STATETOOL" --help | awk '/^Commands:/ {on=1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on=0}')
[ -n "$cmds" ] && ok || bad "no commands listed"
for c in $cmds; do
	if sed 's/\\-/-/g' "$top_srcdir/doc/statetool.1" | grep -q "^\.B $c"; then ok; else bad "man page lacks $c"; fi
	if grep -q "^statetool $c" "$top_srcdir/README"; then ok; else bad "README lacks $c"; fi
done
finish
