# Helpers for the CLI tests: run a command, then assert on its exit code, stdout, stderr.
# Each script sources this, calls `check_*`, and ends with `finish`.
: "${STATETOOL:?set STATETOOL to the statetool binary}"
: "${FIXTURES:?set FIXTURES to the fixtures directory}"
T=$(mktemp -d /tmp/statetool-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT
passed=0
failed=0
current=""

st() { "$STATETOOL" "$@"; }

# run NAME CMD...: runs CMD with stdout/stderr captured in $T/out, $T/err and $? in $rc.
run() {
	current=$1
	shift
	"$@" >"$T/out" 2>"$T/err"
	rc=$?
}

ok() { passed=$((passed + 1)); }
bad() {
	failed=$((failed + 1))
	echo "FAIL: $current: $*" >&2
	echo "  --- stdout:" >&2; head -c 2000 "$T/out" | sed 's/^/  /' >&2
	echo "  --- stderr:" >&2; head -c 2000 "$T/err" | sed 's/^/  /' >&2
}

check_rc() { if [ "$rc" = "$1" ]; then ok; else bad "exit code $rc, expected $1"; fi; }
check_out() { if printf '%s\n' "$1" | cmp -s - "$T/out"; then ok; else bad "stdout differs from: $1"; fi; }
check_out_has() { if grep -qF -- "$1" "$T/out"; then ok; else bad "stdout lacks: $1"; fi; }
check_err_has() { if grep -qF -- "$1" "$T/err"; then ok; else bad "stderr lacks: $1"; fi; }
check_err_lacks() { if grep -qF -- "$1" "$T/err"; then bad "stderr has: $1"; else ok; fi; }
check_out_lacks() { if grep -qF -- "$1" "$T/out"; then bad "stdout has: $1"; else ok; fi; }
check_err() { if printf '%s\n' "$1" | cmp -s - "$T/err"; then ok; else bad "stderr differs from: $1"; fi; }
check_out_empty() { if [ ! -s "$T/out" ]; then ok; else bad "stdout is not empty"; fi; }
check_err_empty() { if [ ! -s "$T/err" ]; then ok; else bad "stderr is not empty"; fi; }
check_same() { if cmp -s "$1" "$2"; then ok; else bad "$1 and $2 differ"; fi; }
check_file_is() { if printf '%s' "$2" | cmp -s - "$1"; then ok; else bad "$1 is not: $2"; fi; }
check_absent() { if [ ! -e "$1" ]; then ok; else bad "$1 exists"; fi; }

# skip_or_fail WHAT WHY: this machine lacks WHY's part for a test: skipped with a message, but a
# failure of WHAT when $CI is set (a skip is a failure in CI).
skip_or_fail() {
	: >"$T/out"
	: >"$T/err"
	if [ -n "${CI:-}" ]; then
		current=$1
		bad "$2 and \$CI is set (a skip is a failure in CI)"
	else
		echo "$(basename "$0"): skipped: $2"
	fi
}

finish() {
	echo "$(basename "$0"): $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
