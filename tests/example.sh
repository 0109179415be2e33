#!/bin/sh
# The example program a backend author copies: protect a resource, saved atomically.
. "$(dirname "$0")/cli/lib.sh"
EX=${top_builddir:-.}/examples/backend_example
cp "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/s.json"
run "example" "$EX" "$T/s.json" c
check_rc 0; check_out "$T/s.json: envelope export, version 3, 4 resources
protected 1 resource(s)"
run "protected" st list "$T/s.json"
if grep -qE '^urn:pulumi:dev::proj::my:index:Comp::c +my:index:Comp +- +component,protect$' "$T/out"; then ok; else bad "c is not protected"; fi
check_same "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/s.json.bak"
run "example miss" "$EX" "$T/s.json" nothing
check_rc 1; check_err_has 'No such resource "nothing"'
# the README's "library in ten lines" compiles as it is (warnings are errors)
cc=${ST_CC:-cc}
sed -n '/^The library in ten lines/,/^More/p' "$top_srcdir/README" | sed -n 's/^    //p' > "$T/snippet"
{
	echo '#include <stdio.h>'
	grep '^#include' "$T/snippet"
	echo 'int main(void) {'
	grep -v '^#include' "$T/snippet"
	echo 'return 0; }'
} > "$T/readme.c"
# shellcheck disable=SC2086 # ST_JANSSON_CFLAGS is a list of flags
run "README snippet compiles" $cc -std=c99 -Wall -Wextra -Werror -fsyntax-only \
	-I"$top_srcdir/lib" $ST_JANSSON_CFLAGS "$T/readme.c"
check_rc 0
if [ "$(wc -l < "$T/snippet")" -le 11 ] && [ "$(wc -l < "$T/snippet")" -ge 5 ]; then ok; else bad "the snippet is not about ten lines"; fi
finish
