#!/bin/sh
# Replays every fuzz target over its seeds (fixtures/ and tests/fuzz/seeds/, where past findings
# are kept) with tests/fuzz_regress: the fuzz corpora as plain regression tests, no clang needed.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bin=${FUZZ_REGRESS:-./tests/fuzz_regress}
F=$top/fixtures; S=$top/tests/fuzz/seeds
pass=0; fail=0
run() { # TARGET DIR...
	t=$1; shift
	if out=$("$bin" "$t" "$@" 2>&1); then pass=$((pass + 1)); echo "$out"
	else fail=$((fail + 1)); echo "FAIL $t: $out"; fi
}
states="$F/pulumi $F/hostile $F/validate $F/edit $F/move $S/load"
run load $states
run validate $states
run roundtrip $states
run diff $states $S/urn $S/secrets $S/import $S/diff
run split $states $S/urn $S/secrets $S/import $S/diff
run import $S/import $F/pulumi
run urn $S/urn
run secrets $S/secrets
echo "fuzz.sh: $pass passed, $fail failed"
[ $fail -eq 0 ]
