#!/bin/sh
# The public header stands alone: a file including only lib/statetool.h compiles as strict C99
# (-std=c99 -pedantic-errors, every warning an error) and, when a C++ compiler is present, as
# C++ (extern "C"); its version macros agree with each other and with the package's version.
. "$(dirname "$0")/cli/lib.sh"
cc=${ST_CC:-cc}
cat > "$T/h.c" <<'EOF'
#include "statetool.h"
#if ST_VERSION_NUMBER != ((ST_VERSION_MAJOR << 16) | (ST_VERSION_MINOR << 8) | ST_VERSION_MICRO)
#error "ST_VERSION_NUMBER disagrees with its parts"
#endif
int main(void)
{
	st_error err;
	st_error_clear(&err);
	return st_strerror(err.code)[0] == 'o' ? 0 : 1;
}
EOF
# shellcheck disable=SC2086 # ST_JANSSON_CFLAGS is a list of flags
run "c99 -pedantic-errors" $cc -std=c99 -pedantic-errors -Wall -Wextra -Werror \
	-I"$top_srcdir/lib" $ST_JANSSON_CFLAGS -c -o "$T/h.o" "$T/h.c"
check_rc 0
# the attribute macro must vanish for a compiler that is not GNU C
run "no GNU attributes" $cc -std=c99 -pedantic-errors -Werror -U__GNUC__ -U__clang__ -E \
	-I"$top_srcdir/lib" $ST_JANSSON_CFLAGS -o "$T/h.i" "$T/h.c"
check_rc 0
run "no __attribute__ left" sh -c "sed -n '/statetool.h/,\$p' '$T/h.i' | grep -c __attribute__ || true"
check_out "0"
cxx=
for c in "${CXX:-}" g++ c++ clang++; do
	if [ -n "$c" ] && command -v "$c" >/dev/null 2>&1; then
		cxx=$c
		break
	fi
done
if [ -n "$cxx" ]; then
	cp "$T/h.c" "$T/h.cc"
	run "c++" $cxx -std=c++11 -pedantic-errors -Wall -Wextra -Werror -I"$top_srcdir/lib" \
		$ST_JANSSON_CFLAGS -c -o "$T/hcc.o" "$T/h.cc"
	check_rc 0
	# and the names are C names (extern "C"): no mangled st_ symbol is referenced
	run "c++ links C names" sh -c "nm -u '$T/hcc.o' | grep -c '_Z.*st_' || true"
	check_out "0"
else
	echo "header.sh: no C++ compiler; the C++ check did not run"
fi
# ST_VERSION is "MAJOR.MINOR.MICRO" and the package's version (configure.ac reads it)
v=$(sed -n 's/^#define ST_VERSION "\(.*\)"$/\1/p' "$top_srcdir/lib/statetool.h")
parts=$(sed -n 's/^#define ST_VERSION_\(MAJOR\|MINOR\|MICRO\) \([0-9]*\)$/\2/p' "$top_srcdir/lib/statetool.h" | paste -sd. -)
if [ "$v" = "$parts" ]; then ok; else bad "ST_VERSION '$v' but its parts say '$parts'"; fi
pv=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$top_builddir/config.h")
if [ "$v" = "$pv" ]; then ok; else bad "ST_VERSION '$v' but the package is '$pv'"; fi
finish
