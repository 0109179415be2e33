#!/bin/sh
# statetool import: Pulumi's import file and rules, readers, providers, conflicts, secrets.
. "$(dirname "$0")/lib.sh"
E=$FIXTURES/edit
D=$T/d.json
fresh() { cp "$E/base.json" "$D"; rm -f "$D.bak"; }
cat > "$T/specs.json" <<'J'
{"nameTable": {"app": "urn:pulumi:dev::shop::my:index:App::app",
               "eu": "urn:pulumi:dev::shop::pulumi:providers:aws::eu"},
 "resources": [
  {"type": "aws:s3/bucket:Bucket", "name": "imported", "id": "imp-1", "parent": "app", "version": "6.0.0",
   "inputs": {"bucket": "imp-1", "acl": "private"}, "outputs": {"bucket": "imp-1", "arn": "arn:aws:s3:::imp-1"},
   "properties": ["bucket"]},
  {"type": "my:index:Group", "name": "grp", "component": true},
  {"type": "aws:sqs/queue:Queue", "name": "q", "id": "q-1", "parent": "grp", "version": "6.12.1",
   "outputs": {"url": "https://q-1"}},
  {"type": "aws:sns/topic:Topic", "name": "t", "id": "t-1", "provider": "eu", "outputs": {"arn": "t"}},
  {"type": "random:index/randomId:RandomId", "name": "r", "logicalName": "rid", "id": "r-1", "outputs": {"hex": "ab"}}
 ]}
J
fresh
run "import file" st import --dest "$D" --file "$T/specs.json"
check_rc 0
check_out_has "added urn:pulumi:dev::shop::my:index:App\$aws:s3/bucket:Bucket::imported (ID imp-1)"
check_out_has "added urn:pulumi:dev::shop::my:index:Group::grp (ID none: a component)"
check_out_has "added urn:pulumi:dev::shop::pulumi:providers:aws::default_6_12_1 (default provider, ID "
check_out_has "added urn:pulumi:dev::shop::my:index:Group\$aws:sqs/queue:Queue::q (ID q-1)"
check_out_has "added urn:pulumi:dev::shop::pulumi:providers:random::default (default provider, ID "
check_out_has "added urn:pulumi:dev::shop::random:index/randomId:RandomId::rid (ID r-1)"
check_out_has "7 resources imported"
check_same "$E/base.json" "$D.bak"
run "import valid" st validate "$D"
check_rc 0; check_out_has "valid, 0 errors, 0 warnings (20 resources)"
run "imported bucket" st show --json "$D" imported
check_rc 0
check_out_has '"inputs": {
        "bucket": "imp-1"
    },'
check_out_has '"parent": "urn:pulumi:dev::shop::my:index:App::app",'
check_out_has '"protect": true,'
check_out_has '"provider": "urn:pulumi:dev::shop::pulumi:providers:aws::default_6_0_0::a1a1a1a1-0000-4000-8000-000000000001",'
if grep -q importID "$T/out"; then bad "importID set without --keep-import-id"; else ok; fi
run "explicit provider" st show --json "$D" t
check_out_has '"provider": "urn:pulumi:dev::shop::pulumi:providers:aws::eu::a1a1a1a1-0000-4000-8000-000000000002",'
run "default provider inputs" st show --json "$D" default_6_12_1
check_out_has '"version": "6.12.1"'
run "provider before its user" sh -c "'$STATETOOL' list '$D' | grep -n 'default_6_12_1\|Queue::q' | cut -d: -f1 | tr '\n' ' '; echo"
check_out "16 17 "

# the same again: no-ops; another ID: refused
run "again: no-op" st import --dest "$D" --file "$T/specs.json"
check_rc 0; check_out_has "unchanged: urn:pulumi:dev::shop::my:index:App\$aws:s3/bucket:Bucket::imported already exists with ID imp-1; nothing to do"
check_out_has "no change: nothing written"
cp "$D" "$T/before.json"
sed 's/"imp-1"/"imp-2"/g' "$T/specs.json" > "$T/other-id.json"
run "other ID refused" st import --dest "$D" --file "$T/other-id.json"
check_rc 1; check_err_has "error: resource 'urn:pulumi:dev::shop::my:index:App\$aws:s3/bucket:Bucket::imported' already exists"
check_same "$T/before.json" "$D"

# Pulumi's messages for bad files; nothing written
fresh
cat > "$T/bad.json" <<'J'
{"resources": [
  {"type": "a:b:C", "name": "x"},
  {"name": "y", "id": "1"},
  {"type": "a:b:C", "name": "c", "component": true, "id": "2"},
  {"type": "a:b:C", "name": "rm", "id": "3", "remote": true},
  {"type": "a:b:C", "name": "v", "id": "4", "version": "not-a-version"},
  {"type": "a:b:C", "name": "u", "id": "5", "outputs": {"x": "04da6b54-80e4-46f7-96ec-b56ff0331ba9"}},
  {"type": "pulumi:providers:aws", "name": "p", "id": "6"}
]}
J
run "bad file" st import --dest "$D" --file "$T/bad.json"
check_rc 1
check_err_has "error: resource 'x' of type 'a:b:C' has no ID
    at /resources/0/id"
check_err_has "error: resource 'y' has no type
    at /resources/1/type"
check_err_has "resource 'c' of type 'a:b:C' has an ID, but is marked as a component"
check_err_has "resource 'rm' of type 'a:b:C' is marked as remote, but not as a component"
check_err_has "could not parse version 'not-a-version' for resource 'v' of type 'a:b:C'"
check_err_has "the outputs for resource 'u' of type 'a:b:C' contain unknown values; fill them in before importing"
check_err_has "resource 'p' of type 'pulumi:providers:aws' has an ID, but is a provider, which is created rather than read"
check_err_has "statetool: error: the import file has 7 errors; nothing was imported"
check_same "$E/base.json" "$D"; check_absent "$D.bak"
cat > "$T/bad2.json" <<'J'
{"resources": [
  {"type": "a:b:C", "name": "dup", "id": "1", "outputs": {}},
  {"type": "a:b:C", "name": "dup", "id": "2", "outputs": {}},
  {"type": "a:b:D", "name": "k", "id": "3", "parent": "dup", "outputs": {}},
  {"type": "a:b:D", "name": "m", "id": "4", "parent": "missing", "outputs": {}},
  {"type": "a:b:D", "name": "n", "id": "5", "provider": "nowhere", "outputs": {}}
]}
J
run "bad names" st import --dest "$D" --file "$T/bad2.json"
check_rc 1
check_err_has "resource 'dup' of type 'a:b:C' has an ambiguous URN, set name (or logical name) to be unique"
check_err_has "resource 'k' of type 'a:b:D' has an ambiguous parent"
check_err_has "the parent 'missing' for resource 'm' of type 'a:b:D' has no entry in 'nameTable'"
check_same "$E/base.json" "$D"
printf '{"resources": [{"type": "a:b:D", "name": "n", "id": "5", "provider": "nowhere", "outputs": {}},{"type": "a:b:D", "name": "o", "id": "6", "provider": "n", "outputs": {}}]}' > "$T/bad3.json"
run "bad providers" st import --dest "$D" --file "$T/bad3.json"
check_rc 1
check_err_has "the provider 'nowhere' for resource 'n' of type 'a:b:D' has no entry in 'nameTable' or 'resources'"
check_err_has "the provider 'n' for resource 'o' of type 'a:b:D' is not a provider"
printf '{"resources": [{"type": "a:b:C", "name": "a", "id": "1", "outputs": {}},{"type": "a:b:C", "name": "b", "id": "1", "outputs": {}}]}' > "$T/dupid.json"
run "duplicate import" st import --dest "$D" --file "$T/dupid.json"
check_rc 1; check_err_has "duplicate import '1' of type 'a:b:C'"
printf '{"resources": [{"type": 5}]}' > "$T/schema.json"
run "schema" st import --dest "$D" --file "$T/schema.json"
check_rc 1; check_err_has "json: cannot unmarshal number into Go struct field importSpec.resources.type of type tokens.Type"
# a problem at the document's root has no "at" line (its JSON Pointer is ""), as validate prints it
printf '[]' > "$T/array.json"
run "top level not an object" st import --dest "$D" --file "$T/array.json"
check_rc 1; check_out_empty
check_err "$T/array.json: error: json: cannot unmarshal array into Go value of type operations.importFile
statetool: error: the import file has 1 error; nothing was imported"
check_same "$E/base.json" "$D"

# every error in one run: the schema's, each spec's, names, providers, and the file against
# the state; a spec the schema finds malformed is left to the schema's problem
cat > "$T/all.json" <<'J'
{"resources": [
  {"type": "a:b:C", "name": "x"},
  {"type": 5, "name": "s", "id": "9"},
  {"type": "a:b:D", "name": "m", "id": "4", "parent": "missing", "outputs": {}},
  {"type": "a:b:D", "name": "n", "id": "5", "provider": "nowhere", "outputs": {}},
  {"type": "aws:cloudwatch/logGroup:LogGroup", "name": "logs", "id": "other", "outputs": {}}
]}
J
fresh
run "every error in one run" st import --dest "$D" --file "$T/all.json"
check_rc 1; check_out_empty
check_err "$T/all.json: error: json: cannot unmarshal number into Go struct field importSpec.resources.type of type tokens.Type
    at /resources/1/type
$T/all.json: error: resource 'x' of type 'a:b:C' has no ID
    at /resources/0/id
$T/all.json: error: the parent 'missing' for resource 'm' of type 'a:b:D' has no entry in 'nameTable'
    at /resources/2/parent
$T/all.json: error: the provider 'nowhere' for resource 'n' of type 'a:b:D' has no entry in 'nameTable' or 'resources'
    at /resources/3/provider
$T/all.json: error: resource 'urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::logs' already exists
    at /resources/4
statetool: error: the import file has 4 errors and 1 import conflict with the state; nothing was imported"
check_same "$E/base.json" "$D"; check_absent "$D.bak"
# validate applies every check import makes before it looks at a destination
run "validate an import file: every check" st validate "$T/all.json"
check_rc 1
check_out "$T/all.json: error: [decode/type] json: cannot unmarshal number into Go struct field importSpec.resources.type of type tokens.Type
    at /resources/1/type
$T/all.json: error: [import/spec] resource 'x' of type 'a:b:C' has no ID
    at /resources/0/id
$T/all.json: error: [import/spec] the parent 'missing' for resource 'm' of type 'a:b:D' has no entry in 'nameTable'
    at /resources/2/parent
$T/all.json: error: [import/spec] the provider 'nowhere' for resource 'n' of type 'a:b:D' has no entry in 'nameTable' or 'resources'
    at /resources/3/provider
$T/all.json: invalid, 4 errors, 0 warnings (5 resources)"
run "validate an import file: names" st validate "$T/bad2.json"
check_rc 1; check_out_has "error: [import/spec] resource 'dup' of type 'a:b:C' has an ambiguous URN, set name (or logical name) to be unique"
# an unknown field is a warning, printed as one, and the import goes on
printf '{"resources":[{"type":"a:b:C","name":"w","id":"1","outputs":{},"bogus":1}]}' > "$T/warn.json"
fresh
run "unknown field warns" st import --dest "$D" --file "$T/warn.json"
check_rc 0; check_out_has "2 resources imported"
check_err "$T/warn.json: warning: unknown field 'bogus'
    at /resources/0/bogus"

# readers
cat > "$T/reader.sh" <<'R'
#!/bin/sh
id=$(sed 's/.*"id":"\([^"]*\)".*/\1/')
printf '{"inputs":{"name":"%s"},"outputs":{"name":"%s","arn":"arn:%s"}}' "$id" "$id" "$id"
R
printf '{"resources":[{"type":"aws:s3/bucket:Bucket","name":"read-me","id":"rb-1","version":"6.0.0"}]}' > "$T/toread.json"
fresh
run "reader" st import --dest "$D" --file "$T/toread.json" --reader "sh $T/reader.sh"
check_rc 0; check_out_has "1 resource imported"
run "reader outputs" st show --json "$D" read-me
check_out_has '"arn": "arn:rb-1",'
for r in "exit 3|the reader failed on urn:pulumi:dev::shop::aws:s3/bucket:Bucket::read-me (exit status 3)" \
         "echo not json|with something that is not a JSON object" \
         "echo '{\"outputs\": 5}'|lacks an \"outputs\" object" \
         "echo '{\"error\": \"access denied\"}'|the reader could not read urn:pulumi:dev::shop::aws:s3/bucket:Bucket::read-me: access denied" \
         "sleep 20|the reader timed out after 1 s"; do
	cmd=${r%%|*}; msg=${r#*|}
	fresh
	run "reader: $cmd" st import --dest "$D" --file "$T/toread.json" --reader "$cmd" --reader-timeout 1
	check_rc 1; check_err_has "$msg"; check_same "$E/base.json" "$D"; check_absent "$D.bak"
done
fresh
run "no way to read" st import --dest "$D" --file "$T/toread.json"
check_rc 1; check_err_has "has no outputs in the import file: give them, or a --reader program, or --no-read"
run "no-read" st import --dest "$D" --file "$T/toread.json" --no-read --protect=false --keep-import-id
check_rc 0; check_out_has "note: urn:pulumi:dev::shop::aws:s3/bucket:Bucket::read-me: no outputs read; the next \`pulumi refresh\` will fill them in"
run "no-read state" st show --json "$D" read-me
check_out_has '"importID": "rb-1",'
if grep -q '"protect"' "$T/out"; then bad "protected despite --protect=false"; else ok; fi

# inline form, into a stack never deployed: needs --dest-stack
printf '{"version":3,"deployment":null}\n' > "$T/new.json"
run "inline, unnamed" st import --dest "$T/new.json" --no-read aws:s3/bucket:Bucket b b-1
check_rc 1; check_err_has "add --dest-stack PROJECT/STACK"
run "inline" st import --dest "$T/new.json" --dest-stack app/dev --no-read aws:s3/bucket:Bucket b b-1
check_rc 0
run "inline result" st list "$T/new.json"
check_out_has "urn:pulumi:dev::app::pulumi:pulumi:Stack::app-dev"
check_out_has "urn:pulumi:dev::app::pulumi:providers:aws::default"
check_out_has "urn:pulumi:dev::app::aws:s3/bucket:Bucket::b"
run "inline valid" st validate "$T/new.json"
check_rc 0

# a checkpoint whose stack names no project: said so
printf '{"version":3,"checkpoint":{"stack":"dev","latest":null}}\n' > "$T/noproj.json"
run "checkpoint stack without a project" st import --dest "$T/noproj.json" --no-read aws:s3/bucket:Bucket b b-1
check_rc 1
check_err "statetool: error: cannot tell the destination's stack and project: its checkpoint's stack 'dev' names no project; add --dest-stack PROJECT/STACK"

# secrets in the specs are encrypted under the destination's provider
printf '{"resources":[{"type":"aws:rds/instance:Instance","name":"db","id":"db-1","version":"6.0.0","outputs":{"password":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","plaintext":"\\"import-me-secret\\""}}}]}' > "$T/secret.json"
cp "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/sd.json"
run "secret import" env PULUMI_CONFIG_PASSPHRASE="correct horse battery staple" "$STATETOOL" import --dest "$T/sd.json" --file "$T/secret.json"
check_rc 0; check_out_has "with encrypted secrets"
if grep -q import-me-secret "$T/sd.json"; then bad "plaintext in the state"; else ok; fi
run "secret decrypts" env PULUMI_CONFIG_PASSPHRASE="correct horse battery staple" "$STATETOOL" secrets verify "$T/sd.json"
check_rc 0; check_out "3 secrets, 0 failed to decrypt"
# the file's warnings are printed also when the destination's secrets cannot be opened
sed 's/"name":"db",/"name":"db","name":"db",/' "$T/secret.json" > "$T/secretdup.json"
cp "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/sd.json"
run "secret import, wrong passphrase" env PULUMI_CONFIG_PASSPHRASE=wrong "$STATETOOL" import --dest "$T/sd.json" --file "$T/secretdup.json"
check_rc 1; check_out_empty; check_same "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/sd.json"
check_err "statetool: error: incorrect passphrase, please set PULUMI_CONFIG_PASSPHRASE to the correct passphrase or set PULUMI_CONFIG_PASSPHRASE_FILE to a file containing the passphrase
$T/secretdup.json: warning: duplicate object key 'name': the last value is kept, as Pulumi does; earlier values are lost on save
    at /resources/0/name"

# dry run; --generate-specs reverses it
fresh
run "dry run" st import --dry-run --dest "$D" --file "$T/specs.json"
check_rc 0; check_out_has "would add urn:pulumi:dev::shop::my:index:Group::grp"; check_same "$E/base.json" "$D"
run "generate specs" st import --generate-specs "$E/base.json" -o "$T/gen.json"
check_rc 0
run "generated specs are a valid import file" st validate "$T/gen.json"
check_rc 0; check_out_has "valid, 0 errors"
printf '{"version":3,"deployment":null}\n' > "$T/re.json"
run "re-import elsewhere" st import --dest "$T/re.json" --dest-stack shop/dev --file "$T/gen.json" --no-read
check_rc 0
run "same URNs" sh -c "'$STATETOOL' list '$T/re.json' | awk '{print \$1}' | grep -v providers | sort > '$T/a'; '$STATETOOL' list '$E/base.json' | awk '{print \$1}' | grep -v providers | sort -u > '$T/b'; cmp '$T/a' '$T/b'"
check_rc 0

run "usage: both" st import --dest "$D" --file "$T/specs.json" a b c
check_rc 2; check_err_has "an inline resource may not be specified in conjunction with an import file"
run "usage: short" st import --dest "$D" a b
check_rc 2
run "help" st import --help
check_rc 0; check_out_has "usage: statetool import"
finish
