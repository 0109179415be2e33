#!/bin/sh
# validate on a lazy state (a file's property values left in the mapped text when they are what
# statetool writes): the report, exit code and --json document are the full load's for every
# fixture (standard input is always loaded in full), and the fallbacks.
. "$(dirname "$0")/lib.sh"

# The same file both ways: FILE (lazy where it can) and standard input (in full).
same_both() {
	f=$1
	shift
	"$STATETOOL" validate "$@" "$f" >"$T/lazy" 2>"$T/lazy.err"
	lrc=$?
	"$STATETOOL" validate "$@" - <"$f" >"$T/full.raw" 2>"$T/full.err"
	frc=$?
	# the name shown is the only difference ('<stdin>'; in --json, a JSON string)
	F="$f" awk '{ i = index($0, "<stdin>"); while (i) { $0 = substr($0, 1, i - 1) ENVIRON["F"] substr($0, i + 7); i = index($0, "<stdin>") } print }' "$T/full.raw" >"$T/full"
	current="$f $*"
	if [ "$lrc" = "$frc" ]; then ok; else bad "exit code $lrc lazily, $frc in full"; fi
	check_same "$T/lazy" "$T/full"
	check_same "$T/lazy.err" "$T/full.err"
}

n=0
for f in $(find "$FIXTURES" \( -name '*.json' -o -name '*.json.gz' \) ! -path '*/.pulumi/*' | sort); do
	same_both "$f"
	n=$((n + 1))
done
[ "$n" -gt 100 ] && ok || bad "only $n fixtures"
for f in "$FIXTURES"/realworld/*.json "$FIXTURES"/pulumi/checkpoint-v3.json; do
	same_both "$f" --json
	same_both "$f" --strict -q
	same_both "$f" --no-schema
done

# the lazy path ran (a real state: its step says so), and not on standard input
R=$FIXTURES/realworld/04-kloudlib-backup-big-56res.json
run "lazy: the step" env STATETOOL_TIMINGS=1 "$STATETOOL" validate "$R"
check_rc 0
check_err_has "load: parsed (lazy)"
run "stdin: in full" sh -c 'STATETOOL_TIMINGS=1 "$STATETOOL" validate - <"$1"' sh "$R"
check_err_lacks "(lazy)"

# fallbacks: each file loads in full (or fails) exactly as from standard input
V=$T/v.json
head='{"version":3,"deployment":{"manifest":{"time":"2026-01-01T00:00:00Z","magic":"","version":""},"resources":[{"urn":"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev","custom":false,"type":"pulumi:pulumi:Stack","outputs":'
tail='}]}}'
for outputs in '{"a":1}' '{"b":1,"a":2}' '{"a":1,"a":2}' '{"a":"\/"}' '{"a":1.50}' \
	'{"a":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","ciphertext":"x"}}' \
	'{"a":[1,]}' '{"a":tru}' '{"a":1e999}' '{"a":"\ud800"}' '{"a":' '[]' \
	'{"a":1},"outputs":{"b":2}' '{},"outputs":null' 'null,"outputs":{}' \
	'{},"inputs":{},"outputs":{}'; do
	printf '%s%s%s\n' "$head" "$outputs" "$tail" >"$V"
	same_both "$V"
	same_both "$V" --json
done
# invalid UTF-8
printf '%s{"a":"\377"}%s\n' "$head" "$tail" >"$V"
same_both "$V"
# a value nested past the schema walk's 1,000 levels: its schema/depth warning, as in full (the
# scan once skipped the value and the warning was missing; found by tests/test_lazydiff)
deep=$(awk 'BEGIN { for (i = 0; i < 1000; i++) printf "["; printf "1"; for (i = 0; i < 1000; i++) printf "]" }')
printf '%s{"a":%s}%s\n' "$head" "$deep" "$tail" >"$V"
same_both "$V"
run "deep value: the warning" "$STATETOOL" validate "$V"
check_rc 0
check_out "$V: warning: [schema/depth] values nested deeper than 1000 levels were not checked against the schema
$V: valid, 0 errors, 1 warning (1 resource)"
# canonical and compact: lazy; with keys out of order: in full
printf '%s{"a":1,"b":[true,null]}%s\n' "$head" "$tail" >"$V"
run "compact: lazy" env STATETOOL_TIMINGS=1 "$STATETOOL" validate "$V"
check_err_has "load: parsed (lazy)"
printf '%s{"b":1,"a":2}%s\n' "$head" "$tail" >"$V"
run "keys out of order: in full" env STATETOOL_TIMINGS=1 "$STATETOOL" validate "$V"
check_rc 0
check_out "$V: valid, 0 errors, 0 warnings (1 resource)"
check_err_lacks "(lazy)"
# more white space than the layout's: Python's json.dumps (one line, ": " and ", "), two spaces
# after a colon, a tab: valid, and the report is standard input's (the lazy scan once took the
# space after a resource's "urn": for the value and reported a syntax error)
pyhead='{"version": 3, "deployment": {"manifest": {"time": "2026-01-01T00:00:00Z", "magic": "", "version": ""}, "resources": [{"urn": "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev", "custom": false, "type": "pulumi:pulumi:Stack", "outputs": {"a": 1}}, {"urn": "urn:pulumi:dev::p::aws:s3/bucket:Bucket::b", "custom": true, "type": "aws:s3/bucket:Bucket", "parent": "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev", "inputs": {"b": [true, null]}}]}}'
for text in "$pyhead" \
	"$(printf '%s' "$pyhead" | sed 's/"urn": /"urn":  /g')" \
	"$(printf '%s' "$pyhead" | sed 's/"custom": /"custom":\t/g')" \
	"$(printf '%s' "$pyhead" | sed 's/, "inputs"/,"inputs"/; s/"inputs": /"inputs":/')"; do
	printf '%s\n' "$text" >"$V"
	run "white space: valid" "$STATETOOL" validate "$V"
	check_rc 0
	check_out "$V: valid, 0 errors, 0 warnings (2 resources)"
	same_both "$V"
	same_both "$V" --json
done
# --schema looks into values: the full load
printf '%s{"a":1}%s\n' "$head" "$tail" >"$V"
printf '{"properties":{"deployment":{"properties":{"resources":{"items":{"properties":{"outputs":{"properties":{"a":{"type":"string"}}}}}}}}}}\n' >"$T/s.json"
run "--schema: in full" env STATETOOL_TIMINGS=1 "$STATETOOL" validate --schema "$T/s.json" "$V"
check_rc 1
check_out_has "/deployment/resources/0/outputs/a"
check_err_lacks "(lazy)"
finish
