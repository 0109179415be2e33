#!/bin/sh
# statetool validate: output, exit codes, --json, --strict, backends, user schemas.
. "$(dirname "$0")/lib.sh"
P=$FIXTURES/pulumi
V=$FIXTURES/validate

run "valid" st validate "$P/valid-deployment-v3.json"
check_rc 0
check_out "$P/valid-deployment-v3.json: valid, 0 errors, 0 warnings (4 resources)"
run "valid: stderr empty (the report is the result)" st validate "$P/valid-deployment-v3.json"
check_err_empty

run "parent order" st validate "$V/parent-order.json"
check_rc 1
check_out "$V/parent-order.json: error: [integrity/parent-order] child resource urn:pulumi:dev::proj::my:index:Comp\$aws:s3/bucket:Bucket::b's parent urn:pulumi:dev::proj::my:index:Comp::c comes after it
    at /deployment/resources/2/parent
$V/parent-order.json: invalid, 1 error, 0 warnings (4 resources)"

run "warnings pass" st validate "$V/urn-stack-mismatch.json"
check_rc 0; check_out_has "warning: [urn/stack-mismatch]"
run "strict" st validate --strict "$V/urn-stack-mismatch.json"
check_rc 1; check_out_has "error: [urn/stack-mismatch]"; check_out_has "invalid, 1 error, 0 warnings"

run "quiet" st validate -q "$P/checkpoint-v3.json"
# (one warning: its b64 provider is Pulumi's test one, secrets/test-provider)
check_rc 1; check_out "$P/checkpoint-v3.json: invalid, 23 errors, 24 warnings (30 resources)"

run "json" st validate --json "$V/dependency-missing.json" "$P/valid-deployment-v3.json"
check_rc 1
check_out '{
    "format_version": 1,
    "valid": false,
    "errors": 1,
    "warnings": 0,
    "files": [
        {
            "file": "'"$V"'/dependency-missing.json",
            "kind": "state",
            "valid": false,
            "errors": 1,
            "warnings": 0,
            "resources": 4,
            "problems": [
                {
                    "severity": "error",
                    "rule": "integrity/dependency-missing",
                    "message": "resource urn:pulumi:dev::proj::my:index:Comp$aws:s3/bucket:Bucket::b'"'"'s dependency urn:pulumi:dev::proj::my:index:Comp::gone refers to missing resource",
                    "pointer": "/deployment/resources/3/dependencies/0",
                    "urn": "urn:pulumi:dev::proj::my:index:Comp$aws:s3/bucket:Bucket::b"
                }
            ]
        },
        {
            "file": "'"$P"'/valid-deployment-v3.json",
            "kind": "state",
            "valid": true,
            "errors": 0,
            "warnings": 0,
            "resources": 4,
            "problems": []
        }
    ]
}'
check_err_empty

run "stdin gzip" sh -c "gzip -c '$P/valid-checkpoint-v3-diy.json' | '$STATETOOL' validate -"
check_rc 0; check_out "<stdin>: valid, 0 errors, 0 warnings (4 resources)"

# Load failures are problems too, with position, and the run goes on to the next file.
run "broken and good" st validate "$FIXTURES/hostile/malformed.json" "$P/valid-deployment-v3.json"
check_rc 1
check_out_has "malformed.json: error: [json/syntax] invalid character '}' looking for beginning of object key string (line 1, column 52)"
check_out_has "valid-deployment-v3.json: valid, 0 errors"
run "unknown feature" st validate "$FIXTURES/hostile/unknown-feature.json"
check_rc 1; check_out_has "[state/feature] this stack's deployment needs support for the following features: warp-drive"
check_out_has "    at /features"

# Import files are recognised and checked as `pulumi import` decodes and checks them.
printf '{"resources":[{"type":"aws:s3/bucket:Bucket","name":"b","id":"x","component":"yes"}]}' > "$T/import.json"
run "import file" st validate "$T/import.json"
check_rc 1; check_out_has "error: [decode/type] json: cannot unmarshal string into Go struct field importSpec.resources.component of type bool"
check_out_has "    at /resources/0/component"

# User schemas.
cat > "$T/tags.json" <<'S'
{"if": {"properties": {"custom": {"const": true}, "type": {"not": {"pattern": "^pulumi:providers:"}}}},
 "then": {"required": ["inputs"], "properties": {"inputs": {"required": ["tags"]}}}}
S
run "resource schema ok" st validate --resource-schema "$T/tags.json" "$P/valid-deployment-v3.json"
check_rc 0
run "resource schema fails" st validate --resource-schema "$T/tags.json" "$V/secrets-no-provider.json" "$P/checkpoint-v3.json"
check_rc 1; check_out_has "error: [resource-schema/required] missing required field 'inputs'"
# a schema that looks into a plaintext secret: the message never quotes the secret's value
# (enum, pattern), nor does --json; a string outside a secret is still quoted
printf '{"properties":{"inputs":{"properties":{"tags":{"properties":{"plaintext":{"enum":["x"]}}}}}}}' > "$T/rs-enum.json"
printf '{"properties":{"inputs":{"properties":{"tags":{"properties":{"plaintext":{"pattern":"^x$"}}},"bucket":{"enum":["other"]}}}}}' > "$T/rs-pattern.json"
for sch in rs-enum rs-pattern; do
	for fmt in "" --json; do
		run "secret not quoted: $sch $fmt" st validate $fmt --resource-schema "$T/$sch.json" "$V/secrets-plaintext.json"
		check_rc 1
		check_out_lacks "hunter2"; check_err_lacks "hunter2"
		check_out_has "/tags/plaintext"
	done
done
run "secret not quoted: enum" st validate --resource-schema "$T/rs-enum.json" "$V/secrets-plaintext.json"
check_out_has "error: [resource-schema/enum] value is not one of the allowed values"
run "secret not quoted: pattern" st validate --resource-schema "$T/rs-pattern.json" "$V/secrets-plaintext.json"
check_out_has "error: [resource-schema/pattern] the string does not match the pattern '^x\$'"
check_out_has "error: [resource-schema/enum] 'b-123' is not one of the allowed values"
printf '{"required": ["nothing-has-this"]}' > "$T/doc.json"
run "document schema" st validate --schema "$T/doc.json" "$P/valid-deployment-v3.json"
check_rc 1; check_out_has "[user-schema/required] missing required field 'nothing-has-this'"
printf '{"$dynamicRef": "#x"}' > "$T/unsup.json"
run "unsupported user schema" st validate --schema "$T/unsup.json" "$P/valid-deployment-v3.json"
check_rc 2; check_err_has "uses '\$dynamicRef', which statetool does not implement"
run "no schema" st validate --no-schema "$V/schema-unknown-field.json"
check_rc 0; check_out_lacks "schema/"
# What Pulumi cannot decode is reported with or without the schemas.
run "no schema, decode error" st validate --no-schema "$V/schema-type.json"
check_rc 1
check_out "$V/schema-type.json: error: [decode/type] json: cannot unmarshal string into Go struct field ResourceV3.resources.protect of type bool
    at /deployment/resources/2/protect
$V/schema-type.json: invalid, 1 error, 0 warnings"

# A whole backend.
B=$T/backend
mkdir -p "$B/.pulumi/stacks/proj"
printf 'version: 1\n' > "$B/.pulumi/meta.yaml"
cp "$P/valid-checkpoint-v3-diy.json" "$B/.pulumi/stacks/proj/dev.json"
cp "$P/checkpoint-v3.json" "$B/.pulumi/stacks/proj/old.json"
# (old.json's URNs are of stack foo of project countdown: one place/urn-mismatch warning more)
run "backend" st validate -q --backend "$B"
check_rc 1
check_out "organization/proj/dev: valid, 0 errors, 0 warnings (4 resources)
organization/proj/old: invalid, 23 errors, 25 warnings (30 resources)
2 stacks checked: 23 errors, 25 warnings"
run "backend stack" st validate --backend "$B" --stack proj/dev
check_rc 0; check_out "proj/dev: valid, 0 errors, 0 warnings (4 resources)"

# a version too big for Go's int: once, with its literal as written; a checkpoint file's first
# decode is Pulumi's "place 1" (UnmarshalVersionedCheckpointToLatestCheckpoint), an export's not
printf '{"version": 99999999999999999999, "deployment": null}' > "$T/vhuge.json"
run "version too big: once, as written" st validate "$T/vhuge.json"
check_rc 1; check_out "$T/vhuge.json: error: [decode/type] json: cannot unmarshal number 99999999999999999999 into Go struct field UntypedDeployment.version of type int
    at /version
$T/vhuge.json: invalid, 1 error, 0 warnings"
printf '{"version": 1e30, "checkpoint": {}}' > "$T/cphuge.json"
run "version too big in a checkpoint: place 1" st validate "$T/cphuge.json"
check_rc 1; check_out "$T/cphuge.json: error: [decode/type] place 1: json: cannot unmarshal number 1e30 into Go struct field VersionedCheckpoint.version of type int
    at /version
$T/cphuge.json: invalid, 1 error, 0 warnings"
printf '{"version": "3", "checkpoint": {}}' > "$T/cpvstr.json"
run "version a string in a checkpoint: place 1" st validate "$T/cpvstr.json"
check_rc 1; check_out "$T/cpvstr.json: error: [decode/type] place 1: json: cannot unmarshal string into Go struct field VersionedCheckpoint.version of type int
    at /version
$T/cpvstr.json: invalid, 1 error, 0 warnings"
printf '{"version": 3, "checkpoint": {"stack": 5}}' > "$T/cpstack.json"
run "the checkpoint's own decode: no place 1" st validate "$T/cpstack.json"
check_rc 1; check_out_has "error: [decode/type] json: cannot unmarshal number into Go struct field CheckpointV3.stack of type tokens.QName"

# data after the document (audit26a A3): an export and an import file are read as
# json.Decoder reads them (`pulumi stack import`, `pulumi import --file`: the first value, the
# rest not read): valid, with a warning saying where; a checkpoint is json.Unmarshal's (refused)
{ cat "$P/valid-deployment-v3.json"; printf '\n{"version": 3}\n'; } > "$T/exp2.json"
TW="warning: [json/trailing-data] data after the document at line 80, column 1 (byte 3043) is not read: \`pulumi stack import\` and \`pulumi import --file\` read the first JSON value only (json.Unmarshal refuses it in a checkpoint: invalid character '{' after top-level value)"
for how in lazy full stdin; do
	case $how in
	lazy) run "export + a second document ($how)" st validate "$T/exp2.json"; N=$T/exp2.json ;;
	full) run "export + a second document ($how)" env STATETOOL_LAZY=0 "$STATETOOL" validate "$T/exp2.json"; N=$T/exp2.json ;;
	stdin) run "export + a second document ($how)" sh -c "'$STATETOOL' validate - < '$T/exp2.json'"; N='<stdin>' ;;
	esac
	check_rc 0; check_out "$N: $TW
$N: valid, 0 errors, 1 warning (4 resources)"
done
{ cat "$P/checkpoint-v0.json"; printf 'x'; } > "$T/cp-trail.json"
last=$(($(wc -l < "$P/checkpoint-v0.json") + 1))
for how in lazy stdin; do
	if [ $how = lazy ]; then run "checkpoint + data after it ($how)" st validate "$T/cp-trail.json"; N=$T/cp-trail.json
	else run "checkpoint + data after it ($how)" sh -c "'$STATETOOL' validate - < '$T/cp-trail.json'"; N='<stdin>'; fi
	check_rc 1; check_out "$N: error: [json/syntax] invalid character 'x' after top-level value (line $last, column 1)
$N: invalid, 1 error, 0 warnings"
done
printf '{"resources": [{"type": "aws:s3/bucket:Bucket", "name": "b", "id": "b-1"}]}garbage' > "$T/imp-trail.json"
run "import file + data after it" st validate "$T/imp-trail.json"
check_rc 0; check_out_has "warning: [json/trailing-data] data after the document at line 1, column 76 (byte 75) is not read"
check_out_has "$T/imp-trail.json: valid, 0 errors, 1 warning (1 resource)"

# a number beyond float64 (audit26a A2): where Go never decodes it (an unknown field, the secrets
# provider's state) Pulumi loads the file; where it does (a property value), Go's error
sed 's/"id": "b-123",/"id": "b-123", "futureField": {"n": [1e400]},/' "$P/valid-deployment-v3.json" > "$T/big-unknown.json"
sed 's/"salt": /"future": -1e999, "salt": /' "$P/valid-deployment-v3.json" > "$T/big-secrets.json"
for how in lazy full stdin; do
	for f in big-unknown big-secrets; do
		case $how in
		lazy) run "$f ($how)" st validate --no-schema "$T/$f.json"; N=$T/$f.json ;;
		full) run "$f ($how)" env STATETOOL_LAZY=0 "$STATETOOL" validate --no-schema "$T/$f.json"; N=$T/$f.json ;;
		stdin) run "$f ($how)" sh -c "'$STATETOOL' validate --no-schema - < '$T/$f.json'"; N='<stdin>' ;;
		esac
		check_rc 0; check_out_has "$N: valid, 0 errors, 1 warning (4 resources)"
	done
	check_out "$N: warning: [json/number-range] number -1e999 is out of the range of a float64: Pulumi reads it only where Go never decodes it as a number (an unknown field, a secrets provider's state); statetool cannot write it back
    at /deployment/secrets_providers/state/future
$N: valid, 0 errors, 1 warning (4 resources)"
done
sed 's/"id": "b-123",/"id": "b-123", "outputs": {"n": [1e400]},/' "$P/valid-deployment-v3.json" > "$T/big-outputs.json"
run "a number beyond float64 in a property value: Go's error" st validate --no-schema "$T/big-outputs.json"
check_rc 1; check_out_has "error: [decode/type] json: cannot unmarshal number 1e400 into Go struct field ResourceV3.resources.outputs of type float64
    at /deployment/resources/3/outputs/n/0"
# after 100 other reader warnings (invalid UTF-8 here) the number is still judged (review27 R9:
# the decoder looked for it only when the capped warnings listed one)
bad=$(i=0; while [ $i -lt 120 ]; do printf '"s%d": "a\377b", ' $i; i=$((i + 1)); done)
sed "s/\"id\": \"b-123\",/\"id\": \"b-123\", \"outputs\": {$bad\"n\": [1e400]},/" "$P/valid-deployment-v3.json" > "$T/big-late.json"
for lazy in 1 0; do
	run "a number beyond float64 after 120 warnings (lazy $lazy)" env STATETOOL_LAZY=$lazy "$STATETOOL" validate --no-schema "$T/big-late.json"
	check_rc 1; check_out_has "error: [decode/type] json: cannot unmarshal number 1e400 into Go struct field ResourceV3.resources.outputs of type float64"
done
# kept in place, it cannot be written back: a write is refused, the file unchanged
cp "$T/big-unknown.json" "$T/big-w.json"
run "protect a state holding a number beyond float64" st protect "$T/big-w.json" b
check_rc 1; check_same "$T/big-unknown.json" "$T/big-w.json"; check_absent "$T/big-w.json.bak"
check_err "statetool: error: refusing to write: '$T/big-w.json' holds a number beyond the float64 range at /deployment/resources/3/futureField/n/0, which Pulumi never decodes there but statetool cannot write back (json/number-range); nothing written"

# version 0 (absent, null or 0) of a checkpoint file (audit26a A5): Pulumi reads the whole file
# as the unversioned CheckpointV1, so a flat one loads with its resources whatever the version
# says, and one holding a 'checkpoint' member is a stack with no deployment (refused, saying so)
st list "$P/checkpoint-v0.json" > "$T/v0.list"
for v in 0 null; do
	sed "1s/{/{\"version\": $v,/" "$P/checkpoint-v0.json" > "$T/v0-$v.json"
	run "flat checkpoint with \"version\": $v loads" st list "$T/v0-$v.json"
	check_rc 0; check_same "$T/v0.list" "$T/out"
done
V0MSG="a checkpoint file of version 0 (or none) is read by Pulumi as an unversioned checkpoint, whose 'stack' and 'latest' stand at the top: with none here, Pulumi loads a stack with no deployment and ignores every resource in 'checkpoint'"
printf '{"checkpoint": {"stack": "dev", "latest": {"resources": []}}}' > "$T/cp-nov.json"
printf '{"version": 0, "checkpoint": {"stack": "dev", "latest": {"resources": []}}}' > "$T/cp-v0.json"
for f in cp-nov cp-v0; do
	run "$f: a stack with no deployment to Pulumi" st validate "$T/$f.json"
	check_rc 1; check_out "$T/$f.json: error: [state/format] $V0MSG
$T/$f.json: invalid, 1 error, 0 warnings"
done
# "checkpoint": null is an empty stack to Pulumi (json.Unmarshal of null leaves the
# CheckpointV3 empty): loaded so, and written back as an empty checkpoint object
for v in 1 3 4; do
	printf '{"version": %s, "checkpoint": null}' $v > "$T/cp-null.json"
	run "checkpoint null (version $v): an empty stack, as Pulumi reads it" st validate "$T/cp-null.json"
	check_rc 0; check_out "$T/cp-null.json: valid, 0 errors, 0 warnings (0 resources)"
done
run "checkpoint null: no resources to list" st list "$T/cp-null.json"
check_rc 0; check_out "no resources"
run "checkpoint null: converted to Pulumi's empty checkpoint" st convert "$T/cp-null.json" -o "$T/cp-null.out"
check_rc 0; check_out_empty
printf '{"version":4,"checkpoint":{}}' > "$T/cp-empty.json"
check_same "$T/cp-empty.json" "$T/cp-null.out"

run "usage: nothing" st validate
check_rc 2
run "usage: both" st validate --backend "$B" "$P/todo.json"
check_rc 2
finish
