#!/bin/sh
# diff: resources added, removed, changed and their properties, secrets masked, --json, the
# operand forms (files, stdin, URL#STACK, #STACK with --backend, @GENERATION), exit 0/1/2.
. "$(dirname "$0")/lib.sh"
D=$FIXTURES/diff

run "help" st diff --help
check_rc 0; check_out_has "usage: statetool diff"; check_out_has "Exit status (as diff(1))"

run "two files" st diff "$D/a.json" "$D/b.json"
check_rc 1; check_err_empty
check_out '- urn:pulumi:dev::proj::aws:s3/bucket:Bucket::data (delete: true)
- urn:pulumi:dev::proj::my:index:Other::twin
+ urn:pulumi:dev::proj::aws:s3/bucket:Bucket::logs
~ urn:pulumi:dev::proj::aws:lambda/function:Function::fn
    ~ /inputs/memorySize: 128 => 256
    + /inputs/newthing: "x"
    ~ /inputs/password: "[secret]" => "[secret]"
    - /inputs/ratio: 0.25
    ~ /inputs/tags/env: "dev" => "prod"
    ~ /outputs/password: "[secret]" => "[secret]"
    + /protect: true
    + /dependencies: ["urn:pulumi:dev::proj::aws:s3/bucket:Bucket::data"]
~ deployment
    + /pending_operations: [{"resource":{"urn":"urn:pulumi:dev::proj::aws:s3/bucket:Bucket::data","custom":true,"type":"aws:s3/bucket:Bucket"},"type":"updating"}]
1 added, 2 removed, 1 changed, deployment changed'

# no secret reaches the output: neither plaintexts nor ciphertexts
for s in secret other topsecret InNlY3JldCI ImNoYW5nZWQi plaintext ciphertext; do
	run "no '$s' in text" sh -c "'$STATETOOL' diff '$D/a.json' '$D/b.json'; '$STATETOOL' diff '$D/b.json' '$D/a.json'; '$STATETOOL' diff --json '$D/a.json' '$D/b.json'"
	if sed 's/\[secret\]//g' "$T/out" | grep -q -- "$s"; then bad "'$s' in the output"; else ok; fi
done

run "reverse" st diff "$D/b.json" "$D/a.json"
check_rc 1
check_out_has '+ urn:pulumi:dev::proj::my:index:Other::twin'
check_out_has '    - /protect: true'
check_out_has '    ~ /inputs/memorySize: 256 => 128'
check_out_has '    - /pending_operations: [{'
check_out_has '2 added, 1 removed, 1 changed, deployment changed'

run "same" st diff "$D/a.json" "$D/a.json"
check_rc 0; check_out "no differences"
run "same, another form" sh -c "gzip -c '$D/a.json' | '$STATETOOL' diff - '$D/a.json'"
check_rc 0; check_out "no differences"

run "json" st diff --json "$D/a.json" "$D/b.json"
check_rc 1
check_out_has '"same": false'
check_out_has '"changed": [
        {
            "urn": "urn:pulumi:dev::proj::aws:lambda/function:Function::fn",
            "type": "aws:lambda/function:Function",
            "id": "fn-1",
            "changes": [
                {
                    "path": "/inputs/memorySize",
                    "op": "change",
                    "old": 128,
                    "new": 256
                },'
check_out_has '"removed": [
        {
            "urn": "urn:pulumi:dev::proj::aws:s3/bucket:Bucket::data",
            "type": "aws:s3/bucket:Bucket",
            "id": "data-old",
            "delete": true
        },'
run "json same" st diff --json "$D/a.json" "$D/a.json"
check_rc 0
check_out "{
    \"format_version\": 1,
    \"a\": \"$D/a.json\",
    \"b\": \"$D/a.json\",
    \"same\": true,
    \"added\": [],
    \"removed\": [],
    \"changed\": [],
    \"deployment\": []
}"

# stacks of a backend, and generations
B=$T/backend
mkdir -p "$B/.pulumi/stacks/proj"
printf 'version: 1\n' > "$B/.pulumi/meta.yaml"
st convert "$D/a.json" --envelope checkpoint --checkpoint-stack organization/proj/dev -o "$B/.pulumi/stacks/proj/dev.json" >/dev/null
B2=$T/backend2
mkdir -p "$B2/.pulumi/stacks/proj"
printf 'version: 1\n' > "$B2/.pulumi/meta.yaml"
st convert "$D/a.json" --envelope checkpoint --checkpoint-stack organization/proj/dev -o "$B2/.pulumi/stacks/proj/dev.json" >/dev/null
st protect --backend "$B2" --stack proj/dev 'urn:pulumi:dev::proj::my:index:Comp::twin' >/dev/null 2>&1
run "URL#STACK" st diff "$B#proj/dev" "$B2#proj/dev"
check_rc 1
check_out '~ urn:pulumi:dev::proj::my:index:Comp::twin
    + /protect: true
0 added, 0 removed, 1 changed'
run "#STACK with --backend" st diff --backend "$B" '#proj/dev' "file://$B2#proj/dev"
check_rc 1; check_out_has '    + /protect: true'
run "#STACK@bak" st diff --backend "$B2" '#proj/dev@bak' '#dev'
check_rc 1; check_out_has '    + /protect: true'
run "#STACK@current" st diff --backend "$B2" '#proj/dev@current' '#proj/dev'
check_rc 0; check_out 'no differences'
run "a file named with #" sh -c "cp '$D/a.json' '$T/x#y' && '$STATETOOL' diff '$T/x#y' '$D/a.json'"
check_rc 0; check_out 'no differences'

run "no such generation" st diff --backend "$B" '#proj/dev@nope' '#proj/dev'
check_rc 2; check_out_empty
check_err "statetool: error: no generation 'nope' of stack 'proj/dev' (\`statetool history\` lists them)"
run "no such stack" st diff "$B#proj/nope" "$B#proj/dev"
check_rc 2; check_out_empty; check_err_has "statetool: error:"
run "no such file" st diff "$T/nope.json" "$D/a.json"
check_rc 2; check_err "statetool: error: cannot open '$T/nope.json': No such file or directory"
run "one operand" st diff "$D/a.json"
check_rc 2; check_err_has "expected two states"
run "stdin twice" st diff - -
check_rc 2; check_err_has "standard input can be only one side"
run "no stack" st diff "$B#" "$D/a.json"
check_rc 2; check_err_has "names no stack"
# a property key holding "\u0000" equals itself (jansson's json_equal looks keys up as C strings)
M=3ff53efef69f38d19e364655131bbb113e416d3bf64bfb819065fa12acb29250
printf '{"version":3,"checkpoint":{"stack":"dev","latest":{"manifest":{"time":"2024-01-01T00:00:00Z","magic":"%s","version":"v3.100.0"},"resources":[{"urn":"urn:pulumi:dev::p::t:m:R::a","custom":true,"type":"t:m:R","inputs":{"a\\u0000b":{"x\\u0000":1}}}]}}}\n' "$M" > "$T/nul1.json"
cp "$T/nul1.json" "$T/nul2.json"
run "a key with NUL: no differences" st diff "$T/nul1.json" "$T/nul2.json"
check_rc 0; check_out "no differences"
# keys holding "\u0000" in a change's JSON Pointer: whole, the NUL written \u0000 (as
# validate writes it), in byte order; the deployment's own members too
printf '{"version":3,"checkpoint":{"stack":"dev","latest":{"manifest":{"time":"2024-01-01T00:00:00Z","magic":"%s","version":"v3.100.0"},"k\\u0000":1,"resources":[{"urn":"urn:pulumi:dev::p::t:m:R::a","custom":true,"type":"t:m:R","inputs":{"a\\u0000c":1,"a":0,"a\\u0000b":{"x\\u0000":2}}}]}}}\n' "$M" > "$T/nul3.json"
run "keys with NUL: the pointers" st diff "$T/nul1.json" "$T/nul3.json"
check_rc 1
check_out '~ urn:pulumi:dev::p::t:m:R::a
    + /inputs/a: 0
    ~ /inputs/a\u0000b/x\u0000: 1 => 2
    + /inputs/a\u0000c: 1
~ deployment
    + /k\u0000: 1
0 added, 0 removed, 1 changed, deployment changed'
printf '{"version":3,"checkpoint":{"stack":"dev","latest":{"resources":[{"urn":"urn:pulumi:dev::p::t:m:R::a","custom":true,"type":"t:m:R","inputs":{"a\\u0000b":1,"a\\u0000b":2}}]}}}\n' > "$T/nul4.json"
run "validate: the same pointer" st validate --json "$T/nul4.json"
check_rc 0
check_out_has '"pointer": "/checkpoint/latest/resources/0/inputs/a\\u0000b"'
finish
