#!/bin/sh
# A key given twice is read as Pulumi (Go's encoding/json) reads it: a later object decoded into
# the earlier one (fixtures/dupkey has Go's own results; test_state compares them all).
. "$top_srcdir/tests/cli/lib.sh"

M=3ff53efef69f38d19e364655131bbb113e416d3bf64bfb819065fa12acb29250
HEAD='{"version":3,"checkpoint":{"stack":"dev","latest":{"manifest":{"time":"2024-01-01T00:00:00Z","magic":"'$M'","version":"v3.100.0"},"resources":['
U=urn:pulumi:dev::p::t:m:R::a
printf '%s{"urn":"%s","custom":true,"type":"t:m:R","inputs":{"a":1,"b":{"x":1}},"id":"i","inputs":{"b":{"y":2},"c":3}}]}}}\n' "$HEAD" "$U" > "$T/in.json"
cp "$T/in.json" "$T/orig.json"

run "validate: two inputs merge" st validate "$T/in.json"
check_rc 0
check_out "$T/in.json: warning: [json/duplicate-key] duplicate object key 'inputs': merged into the earlier value, as Pulumi does
    at /checkpoint/latest/resources/0/inputs
$T/in.json: valid, 0 errors, 1 warning (1 resource)"

run "validate --json: the pointer" st validate --json "$T/in.json"
check_rc 0
check_out_has '"message": "duplicate object key '"'inputs'"': merged into the earlier value, as Pulumi does",'
check_out_has '"pointer": "/checkpoint/latest/resources/0/inputs"'

run "protect refused" st protect "$T/in.json" "$U"
check_rc 1
check_err_has "refusing to write: '$T/in.json' has 1 duplicate object key (first at /checkpoint/latest/resources/0/inputs); saving would write one value for each, as Pulumi reads it"
check_same "$T/orig.json" "$T/in.json"; check_absent "$T/in.json.bak"

run "protect --allow-duplicate-keys writes the merged resource" \
	st protect --allow-duplicate-keys "$T/in.json" "$U"
check_rc 0
check_err_has "'$T/in.json' has 1 duplicate object key (first at /checkpoint/latest/resources/0/inputs); each is written as Pulumi reads it"
check_file_is "$T/in.json" "$HEAD"'{"urn":"'$U'","custom":true,"type":"t:m:R","inputs":{"a":1,"b":{"y":2},"c":3},"id":"i","protect":true}]}}}
'
check_same "$T/orig.json" "$T/in.json.bak"
run "validate after: no warning" st validate "$T/in.json"
check_rc 0; check_out "$T/in.json: valid, 0 errors, 0 warnings (1 resource)"

# two resources arrays: the elements decode into the earlier ones (id and protect survive)
printf '%s{"urn":"%s","custom":true,"id":"a-1","type":"t:m:R","inputs":{"x":1},"protect":true}],"resources":[{"urn":"%s","inputs":{"y":2}}]}}}\n' "$HEAD" "$U" "$U" > "$T/res.json"
run "validate: two resources arrays" st validate "$T/res.json"
check_rc 0
check_out "$T/res.json: warning: [json/duplicate-key] duplicate object key 'resources': merged into the earlier value, as Pulumi does
    at /checkpoint/latest/resources
$T/res.json: valid, 0 errors, 1 warning (1 resource)"
run "convert: the merged resources" st convert --allow-duplicate-keys "$T/res.json" -o -
check_rc 0
check_out "$HEAD"'{"urn":"'$U'","custom":true,"id":"a-1","type":"t:m:R","inputs":{"x":1,"y":2},"protect":true}]}}}'

# a property value is replaced whole; a scalar field keeps its value under a later null
printf '%s{"urn":"%s","custom":true,"type":"t:m:R","id":"keep","id":null,"inputs":{"b":{"x":1},"b":{"y":2}}}]}}}\n' "$HEAD" "$U" > "$T/val.json"
run "validate: last and earlier values" st validate "$T/val.json"
check_rc 0
check_out "$T/val.json: warning: [json/duplicate-key] duplicate object key 'id': the earlier value is kept, as Pulumi does; the later value is lost on save
    at /checkpoint/latest/resources/0/id
$T/val.json: warning: [json/duplicate-key] duplicate object key 'b': the last value is kept, as Pulumi does; earlier values are lost on save
    at /checkpoint/latest/resources/0/inputs/b
$T/val.json: valid, 0 errors, 2 warnings (1 resource)"
run "convert: id kept, b replaced" st convert --allow-duplicate-keys "$T/val.json" -o -
check_rc 0
check_out "$HEAD"'{"urn":"'$U'","custom":true,"type":"t:m:R","id":"keep","inputs":{"b":{"y":2}}}]}}}'

# import files (`pulumi import --file`) as Go decodes them (operations.importFile): a resources
# array given twice decodes its elements into the earlier ones, a map given twice (nameTable,
# a spec's outputs) keeps the earlier keys and takes the later value of each key given again
: "${JSONGET:?set JSONGET to tests/jsonget}"
cp "$FIXTURES/edit/base.json" "$T/dest.json"
cp "$T/dest.json" "$T/dest.orig"
printf '{"resources":[{"type":"a:b:C","name":"x","id":"1","outputs":{"k":1}}],"resources":[{"name":"y"}]}\n' > "$T/imp-res.json"
run "import: resources given twice" st import --dry-run --dest "$T/dest.json" --file "$T/imp-res.json"
check_rc 0
check_out_has "would add urn:pulumi:dev::shop::a:b:C::y (ID 1)"
check_err "$T/imp-res.json: warning: duplicate object key 'resources': merged into the earlier value, as Pulumi does
    at /resources"
check_same "$T/dest.orig" "$T/dest.json"
run "validate: an import file's resources given twice" st validate "$T/imp-res.json"
check_rc 0
check_out "$T/imp-res.json: warning: [json/duplicate-key] duplicate object key 'resources': merged into the earlier value, as Pulumi does
    at /resources
$T/imp-res.json: valid, 0 errors, 1 warning (1 resource)"

printf '{"nameTable":{"p":"urn:pulumi:dev::shop::my:index:App::app"},"resources":[{"type":"a:b:C","name":"m","id":"2","parent":"p","outputs":{"a":1,"b":{"x":1}},"outputs":{"b":{"y":2},"c":3}}],"nameTable":{"q":"urn:pulumi:dev::shop::my:index:App::app"}}\n' > "$T/imp-map.json"
run "import: maps given twice" st import --dest "$T/dest.json" --file "$T/imp-map.json"
check_rc 0
check_out_has "added urn:pulumi:dev::shop::my:index:App\$a:b:C::m (ID 2)"
check_err "$T/imp-map.json: warning: duplicate object key 'outputs': merged into the earlier value, as Pulumi does
    at /resources/0/outputs
$T/imp-map.json: warning: duplicate object key 'nameTable': merged into the earlier value, as Pulumi does
    at /nameTable"
run "the imported outputs" sh -c "'$STATETOOL' show --json '$T/dest.json' m | '$JSONGET' outputs parent"
check_rc 0
check_out '{"a":1,"b":{"y":2},"c":3}
urn:pulumi:dev::shop::my:index:App::app'

# with secrets to encrypt the import runs again with the destination's secrets manager: the
# reader's warning is said once, the file decoded once
printf '{"resources":[{"type":"aws:rds/instance:Instance","name":"db","id":"db-1","version":"6.0.0","outputs":{"a":1}}],"resources":[{"outputs":{"password":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","plaintext":"\\"import-me\\""}}}]}\n' > "$T/imp-sec.json"
cp "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/sd.json"
run "import: secrets and resources given twice" env PULUMI_CONFIG_PASSPHRASE="correct horse battery staple" "$STATETOOL" import --dest "$T/sd.json" --file "$T/imp-sec.json"
check_rc 0
check_out_has "with encrypted secrets"
check_err "$T/imp-sec.json: warning: duplicate object key 'resources': merged into the earlier value, as Pulumi does
    at /resources"
run "the secret's resource" sh -c "'$STATETOOL' show --json '$T/sd.json' db | '$JSONGET' id outputs.a"
check_rc 0
check_out 'db-1
1'

# an earlier value of the wrong type is Go's error even when a later one fits: encoding/json
# records the UnmarshalTypeError, goes on, and returns the earliest such error (audit28 D17;
# no Go here: from encoding/json's documented behaviour, "Unmarshal skips that field and
# completes the unmarshaling as best it can ... returns an UnmarshalTypeError describing the
# earliest such error")
printf '%s{"urn":1,"urn":"%s","custom":true,"type":"t:m:R","id":"i"}]}}}\n' "$HEAD" "$U" > "$T/ty.json"
run "validate: an earlier number under urn" st validate "$T/ty.json"
check_rc 1
check_out "$T/ty.json: warning: [json/duplicate-key] duplicate object key 'urn': the last value is kept, as Pulumi does; earlier values are lost on save
    at /checkpoint/latest/resources/0/urn
$T/ty.json: error: [decode/type] json: cannot unmarshal number into Go struct field ResourceV3.latest.resources.urn of type urn.URN
    at /checkpoint/latest/resources/0/urn
$T/ty.json: invalid, 1 error, 1 warning"
printf '%s{"urn":"%s","custom":"yes","custom":true,"type":"t:m:R","id":"i"}]}}}\n' "$HEAD" "$U" > "$T/ty2.json"
run "validate: an earlier string under custom" st validate "$T/ty2.json"
check_rc 1
check_out_has "$T/ty2.json: error: [decode/type] json: cannot unmarshal string into Go struct field ResourceV3.latest.resources.custom of type bool
    at /checkpoint/latest/resources/0/custom"
run "protect refused: Pulumi cannot load it" st protect --allow-duplicate-keys "$T/ty2.json" "$U"
check_rc 1
check_err_has "cannot unmarshal string into Go struct field ResourceV3.latest.resources.custom of type bool"

finish
