#!/bin/sh
# The shared library exports exactly the functions lib/statetool.h declares (ST_EXTERN), and
# lib/statetool.sym (the list the link uses) names the same; every command is documented in
# --help, the man page and doc/GUIDE.md (the README is a short front door: at most 125
# lines, its quick start commands as they are, pointers that exist).
. "$(dirname "$0")/cli/lib.sh"
sym=$top_srcdir/lib/statetool.sym
hdr=$top_srcdir/lib/statetool.h
so=$(ls "$top_builddir"/lib/.libs/libstatetool.so.[0-9]* 2>/dev/null | head -n 1)
current="the shared library"
if [ -n "$so" ] && [ -f "$so" ]; then ok; else bad "no lib/.libs/libstatetool.so.N under $top_builddir"; fi

# what the header declares: every declaration at the start of a line is ST_EXTERN...
run "declarations are ST_EXTERN" sh -c "grep -E '^[a-z].*\\<st_[a-z0-9_]+\\(' '$hdr' | grep -v -e '^typedef' -e '^ST_EXTERN ' || true"
check_out_empty
sed -n 's/^ST_EXTERN [^(]*[ *]\(st_[a-z0-9_]*\)(.*/\1/p' "$hdr" | sort > "$T/declared"
run "declared" sh -c "wc -l < '$T/declared'"
if [ "$(cat "$T/out")" -gt 100 ]; then ok; else bad "too few declarations found"; fi
# ... and the list is the declarations, sorted
run "statetool.sym = header" diff "$T/declared" "$sym"
check_rc 0

# what the built library exports (functions and data, any symbol type but undefined)
if [ -n "$so" ]; then
	nm -D --defined-only "$so" | awk 'NF == 3 && $2 != "U" && $2 != "w" && $2 != "v" {print $3}' |
		grep -v -e '^_init$' -e '^_fini$' -e '^_edata$' -e '^_end$' -e '^__bss_start$' |
		sort > "$T/exported"
	run "exports = statetool.sym" diff "$sym" "$T/exported"
	check_rc 0
	# XXH3 is compiled in (XXH_INLINE_ALL: the journal keeps copies of its states, whose layout
	# xxhash does not promise across versions): nothing taken from a libxxhash at run time
	run "no libxxhash at run time" sh -c "nm -D --undefined-only '$so' | grep -i xxh; readelf -d '$so' | grep -i xxhash; true"
	check_out_empty
fi

# the NULL-argument cases of tests/test_contract.c are the header's required pointers
run "tests/nullargs.h = tests/nullargs.sh" sh -c "sh '$top_srcdir/tests/nullargs.sh' '$hdr' | diff - '$top_srcdir/tests/nullargs.h'"
check_rc 0

# every fallible function (an st_error argument) has an err == NULL case: a refused input in
# tests/contract_err.c, or, when only an allocation failure makes it fail, in tests/test_alloc.c
tr '\n' ' ' < "$hdr" | sed 's/;/;\n/g' | grep 'st_error \*err' |
	sed -n 's/.*ST_EXTERN [^(]*[ *]\(st_[a-z0-9_]*\)(.*/\1/p' | sort > "$T/fallible"
current="fallible functions"
if [ "$(wc -l < "$T/fallible")" -gt 60 ]; then ok; else bad "too few fallible functions found"; fi
for f in $(cat "$T/fallible"); do
	short=${f#st_}
	case $f in st_error_clear) continue ;; esac
	current="err NULL: $f"
	if grep -q "CASE($short)" "$top_srcdir/tests/contract_err.c" ||
		grep -q "\"$f\"" "$top_srcdir/tests/contract_err.c" ||
		grep -q "OOM($short)" "$top_srcdir/tests/test_alloc.c"; then
		ok
	else
		bad "$f has no err == NULL case in tests/contract_err.c or tests/test_alloc.c"
	fi
done

cmds=$("$STATETOOL" --help | awk '/^Commands:/ {on=1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on=0}')
[ -n "$cmds" ] && ok || bad "no commands listed"
for c in $cmds; do
	if sed 's/\\-/-/g' "$top_srcdir/doc/statetool.1" | grep -q "^\.B $c"; then ok; else bad "man page lacks $c"; fi
	if grep -q "^statetool $c" "$top_srcdir/doc/GUIDE.md"; then ok; else bad "doc/GUIDE.md lacks $c"; fi
done
current="README"
n=$(wc -l < "$top_srcdir/README")
if [ "$n" -le 125 ]; then ok; else bad "README has $n lines (at most 125)"; fi
for s in "sh quickstart demo" "sh quickstart check"; do
	if grep -qx "       $s" "$top_srcdir/README"; then ok; else bad "README lacks: $s"; fi
done
for f in doc/statetool.1 doc/API.md doc/GUIDE.md doc/DESIGN.md examples/backend_example.c; do
	if grep -q "$f" "$top_srcdir/README" && [ -f "$top_srcdir/$f" ]; then ok; else bad "README: $f"; fi
done
if grep -q "bench/results/latest.txt" "$top_srcdir/README"; then ok; else bad "README: bench"; fi
finish
