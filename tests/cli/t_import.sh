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
# the ID `pulumi preview --import-file` leaves for the user to fill in (audit28 D3): refused
# by import and by validate, once per spec (no duplicate-import error for two of them)
cat > "$T/ph.json" <<'J'
{"resources": [
  {"type": "aws:s3/bucket:Bucket", "name": "a", "id": "<PLACEHOLDER>", "outputs": {}},
  {"type": "aws:s3/bucket:Bucket", "name": "b", "id": "<PLACEHOLDER>"},
  {"type": "aws:s3/bucket:Bucket", "name": "c", "id": "c-1"}
]}
J
run "import: the preview's <PLACEHOLDER> ID refused" st import --dest "$D" --file "$T/ph.json" \
	--no-read
check_rc 1
check_err "$T/ph.json: error: resource 'a' of type 'aws:s3/bucket:Bucket' has the ID '<PLACEHOLDER>', the placeholder \`pulumi preview --import-file\` writes: fill in the resource's ID
    at /resources/0/id
$T/ph.json: error: resource 'b' of type 'aws:s3/bucket:Bucket' has the ID '<PLACEHOLDER>', the placeholder \`pulumi preview --import-file\` writes: fill in the resource's ID
    at /resources/1/id
statetool: error: the import file has 2 errors; nothing was imported"
check_same "$E/base.json" "$D"; check_absent "$D.bak"
run "validate: the preview's <PLACEHOLDER> ID refused" st validate "$T/ph.json"
check_rc 1
check_out_has "error: [import/spec] resource 'b' of type 'aws:s3/bucket:Bucket' has the ID '<PLACEHOLDER>', the placeholder \`pulumi preview --import-file\` writes: fill in the resource's ID"
check_out_has "2 errors"
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
check_rc 1; check_err_has "ID '1' of type 'a:b:C' is imported twice (also by /resources/0): two resources would manage one object"
printf '{"resources": [{"type": "a:b:C", "name": "a", "id": "1"},{"type": "a:b:C", "name": "b", "id": "1"},{"type": "a:b:C", "name": "c", "id": "1"}]}' > "$T/dupid3.json"
run "the same ID thrice: once per later spec (audit28 D7)" sh -c "'$STATETOOL' import --no-read --dest '$D' --file '$T/dupid3.json' 2>&1 | grep -c 'imported twice'"
check_out 2
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

# a ciphertext in the file (a provider's inputs as `pulumi preview --import-file` writes them)
# must decrypt with the destination's key, as Pulumi's parseImportFile decrypts the file
# (audit28 D2): a good one is kept, one whose nonce was altered (or a third output that is no
# secret of this stack's) is refused by pointer, nothing written; no passphrase: asked for
printf '%s\n' '{"resources":[{"type":"pulumi:providers:aws","name":"eu","inputs":{"accessKey":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","ciphertext":"v1:f5YxzO11ppTC+EfK:wzzefTg4WK99AziqoVf994s2UBPHauUgmuTZjg=="},"region":"eu-west-1","version":"6.1.0"}},{"type":"aws:s3/bucket:Bucket","name":"logs","id":"logs-1","provider":"eu","version":"6.1.0"}]}' > "$T/provsec.json"
sed 's/v1:f5YxzO11ppTC+EfK:/v1:AAAAAAAAAAAAAAAA:/' "$T/provsec.json" > "$T/provbad.json"
sed 's/"version":"6.1.0"}]}/"version":"6.1.0","outputs":{"k":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","ciphertext":"v1:f5YxzO11ppTC+EfK:wzzefTg4WK99AziqoVf994s2UBPHauUgmuTZjg=="},"o":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","ciphertext":"bad"}}}]}/' "$T/provbad.json" > "$T/provbad2.json"
cp "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/sd.json"
run "a ciphertext that does not decrypt: refused" env PULUMI_CONFIG_PASSPHRASE="correct horse battery staple" "$STATETOOL" import --no-read --dest "$T/sd.json" --file "$T/provbad2.json"
check_rc 1; check_out_empty; check_same "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/sd.json"
check_err "$T/provbad2.json: error: could not deserialize provider inputs for resource 'eu' of type 'pulumi:providers:aws': decrypting secret value: cipher: message authentication failed (wrong key, or the ciphertext was altered)
    at /resources/0/inputs/accessKey
$T/provbad2.json: error: could not deserialize outputs for resource 'logs' of type 'aws:s3/bucket:Bucket': decrypting secret value: bad value
    at /resources/1/outputs/o
statetool: error: the import file has 2 errors; nothing was imported"
run "a ciphertext, no passphrase: asked for, nothing copied blind" env -u PULUMI_CONFIG_PASSPHRASE -u PULUMI_CONFIG_PASSPHRASE_FILE "$STATETOOL" import --no-read --dest "$T/sd.json" --file "$T/provsec.json"
check_rc 1; check_out_empty; check_same "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/sd.json"
check_err "statetool: error: passphrase must be set with PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE environment variables (or --passphrase-file)"
run "a ciphertext of the destination's key: kept" env PULUMI_CONFIG_PASSPHRASE="correct horse battery staple" "$STATETOOL" import --no-read --dest "$T/sd.json" --file "$T/provsec.json"
check_rc 0; check_out_has "2 resources imported"
run "its secrets decrypt" env PULUMI_CONFIG_PASSPHRASE="correct horse battery staple" "$STATETOOL" secrets verify "$T/sd.json"
check_rc 0; check_out "4 secrets, 0 failed to decrypt"

# providers as Pulumi's import creates them (deploy/import.go registerProviders, providers.Set*)
mask() { sed -E 's/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/UUID/g; s/"20[0-9]{2}-[0-9-]+T[0-9:]+Z"/"TIME"/g'; }
showm() { "$STATETOOL" show --json "$@" | mask; }
P=urn:pulumi:dev::shop
# a provider nameTable names and the state lacks: created before its first user, its inputs
# from the deprecated providerInputs (with Pulumi's warning), the user's version and URL added
cat > "$T/named.json" <<'J'
{"nameTable": {"p1": "urn:pulumi:dev::shop::pulumi:providers:aws::p1",
               "p2": "urn:pulumi:dev::shop::pulumi:providers:random::p2"},
 "providerInputs": {"p1": {"region": "x"}},
 "resources": [
  {"type": "aws:s3/bucket:Bucket", "name": "b1", "id": "b", "provider": "p1", "version": "v6.1",
   "pluginDownloadUrl": "https://get.example.com/"},
  {"type": "aws:s3/bucket:Bucket", "name": "b2", "id": "c", "provider": "p1", "version": "7.0.0"},
  {"type": "random:index/randomId:RandomId", "name": "r2", "id": "r", "provider": "p2"}
 ]}
J
fresh
run "named provider: dry run" sh -c "'$STATETOOL' import --dry-run --no-read --dest '$D' --file '$T/named.json' 2>&1 | sed -E 's/ID [0-9a-f-]{36}/ID UUID/'"
check_rc 0
check_out "$T/named.json: warning: the 'providerInputs' field is deprecated: declare the provider in 'resources' and set its configuration via its 'inputs' instead
    at /providerInputs
would add $P::pulumi:providers:aws::p1 (provider named in nameTable, ID UUID)
would add $P::aws:s3/bucket:Bucket::b1 (ID b)
would add $P::aws:s3/bucket:Bucket::b2 (ID c)
would add $P::pulumi:providers:random::p2 (provider named in nameTable, ID UUID)
would add $P::random:index/randomId:RandomId::r2 (ID r)
note: $P::aws:s3/bucket:Bucket::b1: no outputs read; the next \`pulumi refresh\` will fill them in
note: $P::aws:s3/bucket:Bucket::b2: no outputs read; the next \`pulumi refresh\` will fill them in
note: $P::random:index/randomId:RandomId::r2: no outputs read; the next \`pulumi refresh\` will fill them in
dry run: nothing written"
check_same "$E/base.json" "$D"
run "named provider" st import --no-read --dest "$D" --file "$T/named.json"
check_rc 0; check_out_has "5 resources imported"
run "named provider: its state" showm "$D" "$P::pulumi:providers:aws::p1"
check_out '{
    "urn": "urn:pulumi:dev::shop::pulumi:providers:aws::p1",
    "custom": true,
    "id": "UUID",
    "type": "pulumi:providers:aws",
    "inputs": {
        "__internal": {
            "pluginDownloadURL": "https://get.example.com/"
        },
        "region": "x",
        "version": "6.1.0"
    },
    "outputs": {
        "region": "x",
        "version": "6.1.0"
    },
    "created": "TIME",
    "modified": "TIME"
}'
run "named provider without inputs" showm "$D" "$P::pulumi:providers:random::p2"
check_out '{
    "urn": "urn:pulumi:dev::shop::pulumi:providers:random::p2",
    "custom": true,
    "id": "UUID",
    "type": "pulumi:providers:random",
    "created": "TIME",
    "modified": "TIME"
}'
id=$("$STATETOOL" show --json "$D" "$P::pulumi:providers:aws::p1" | "$JSONGET" id)
run "named provider: both users" sh -c "'$STATETOOL' show --json '$D' b1 | '$JSONGET' provider; '$STATETOOL' show --json '$D' b2 | '$JSONGET' provider"
check_out "$P::pulumi:providers:aws::p1::$id
$P::pulumi:providers:aws::p1::$id"
run "named provider: valid" st validate "$D"
check_rc 0; check_out_has "valid, 0 errors, 0 warnings (18 resources)"
run "named provider: the file validates, with the warning" st validate "$T/named.json"
check_rc 0
check_out "$T/named.json: warning: [import/deprecated] the 'providerInputs' field is deprecated: declare the provider in 'resources' and set its configuration via its 'inputs' instead
    at /providerInputs
$T/named.json: valid, 0 errors, 1 warning (3 resources)"
# a provider spec after its first user is created first (Pulumi creates providers before
# resources); its outputs are its inputs, it has no parent unless the spec gives one
printf '{"resources":[{"type":"aws:s3/bucket:Bucket","name":"b3","id":"d","provider":"late"},{"type":"pulumi:providers:aws","name":"late","version":"6.2.0","inputs":{"region":"y"}}]}' > "$T/late.json"
fresh
run "provider spec after its user" sh -c "'$STATETOOL' import --no-read --dest '$D' --file '$T/late.json' | sed -E 's/ID [0-9a-f-]{36}/ID UUID/'"
check_rc 0
check_out "added $P::pulumi:providers:aws::late (provider, ID UUID)
added $P::aws:s3/bucket:Bucket::b3 (ID d)
note: $P::aws:s3/bucket:Bucket::b3: no outputs read; the next \`pulumi refresh\` will fill them in
2 resources imported"
run "provider spec: its state" showm "$D" late
check_out '{
    "urn": "urn:pulumi:dev::shop::pulumi:providers:aws::late",
    "custom": true,
    "id": "UUID",
    "type": "pulumi:providers:aws",
    "inputs": {
        "__internal": {},
        "region": "y",
        "version": "6.2.0"
    },
    "outputs": {
        "region": "y",
        "version": "6.2.0"
    },
    "created": "TIME",
    "modified": "TIME"
}'
# the same file again (audit28 D10): the provider the state now has is reused, as Pulumi's
# registerProviders reuses it, and the bucket (same URN, same ID) is a no-op
cp "$D" "$T/late-before.json"
run "provider spec the state has: reused" sh -c "'$STATETOOL' import --no-read --dest '$D' --file '$T/late.json' | sed -E 's/ID [0-9a-f-]{36}/ID UUID/'"
check_rc 0
check_out "unchanged: $P::aws:s3/bucket:Bucket::b3 already exists with ID d; nothing to do
unchanged: $P::pulumi:providers:aws::late is in the state (ID UUID): used as it is, as Pulumi reuses it
no change: nothing written"
check_same "$T/late-before.json" "$D"
# unknown values in providerInputs: Pulumi's message
printf '{"nameTable":{"p1":"%s::pulumi:providers:aws::p1"},"providerInputs":{"p1":{"region":"04da6b54-80e4-46f7-96ec-b56ff0331ba9"}},"resources":[{"type":"aws:s3/bucket:Bucket","name":"b1","id":"b","provider":"p1"}]}' "$P" > "$T/unknownpi.json"
run "unknowns in providerInputs" st import --no-read --dest "$D" --file "$T/unknownpi.json"
check_rc 1
check_err_has "$T/unknownpi.json: error: the providerInputs for resource 'b1' of type 'aws:s3/bucket:Bucket' contain unknown values; fill them in before importing
    at /resources/0/provider"

# a parameterized package's default provider: the base plugin under __internal
# (providers.SetProviderName/SetProviderParameterization), named by the package's version
printf '{"resources":[{"type":"tfx:index:Thing","name":"t1","id":"t","version":"0.1.0","parameterization":{"pluginName":"terraform-provider","pluginVersion":"v0.8","value":"aGVsbG8="}}]}' > "$T/param.json"
fresh
run "parameterized" st import --no-read --dest "$D" --file "$T/param.json"
check_rc 0; check_out_has "2 resources imported"
run "parameterized default provider" showm "$D" "$P::pulumi:providers:tfx::default_0_1_0"
check_out '{
    "urn": "urn:pulumi:dev::shop::pulumi:providers:tfx::default_0_1_0",
    "custom": true,
    "id": "UUID",
    "type": "pulumi:providers:tfx",
    "inputs": {
        "__internal": {
            "name": "terraform-provider",
            "parameterization": "aGVsbG8=",
            "version": "0.8.0"
        },
        "version": "0.1.0"
    },
    "outputs": {
        "version": "0.1.0"
    },
    "created": "TIME",
    "modified": "TIME"
}'
# --generate-specs gives what names the provider back, so a re-import makes the same one
run "parameterized: generated spec" st import --generate-specs "$D" t1 -o -
check_rc 0
check_out '{
    "resources": [
        {
            "type": "tfx:index:Thing",
            "name": "t1",
            "id": "t",
            "version": "0.1.0",
            "parameterization": {
                "pluginName": "terraform-provider",
                "pluginVersion": "0.8.0",
                "value": "aGVsbG8="
            }
        }
    ]
}'
# Pulumi's errors: a bad plugin version, a parameterization and an extension together, and
# (ToProviderParameterization) a parameterization without the package's version
printf '{"resources":[{"type":"aws:s3/bucket:Bucket","name":"b1","id":"b","parameterization":{"pluginName":"tf","pluginVersion":"x.y","value":"AA=="},"extension":{"name":"e","version":"1.0.0","value":"AA=="}}]}' > "$T/paramext.json"
fresh
run "parameterization and extension" st import --no-read --dest "$D" --file "$T/paramext.json"
check_rc 1; check_out_empty
check_err "$T/paramext.json: error: could not parse parameterization version 'x.y' for resource 'b1' of type 'aws:s3/bucket:Bucket': Invalid character(s) found in version
    at /resources/0/parameterization/pluginVersion
$T/paramext.json: error: resource 'b1' of type 'aws:s3/bucket:Bucket' has a parameterization but no version (the parameterized package's): version must be provided
    at /resources/0/parameterization
$T/paramext.json: error: resource 'b1' of type 'aws:s3/bucket:Bucket' has both a parameterization and an extension, which are mutually exclusive
    at /resources/0/extension
statetool: error: the import file has 3 errors; nothing was imported"
check_same "$E/base.json" "$D"; check_absent "$D.bak"
run "parameterization and extension: validate" st validate "$T/paramext.json"
check_rc 1; check_out_has "invalid, 3 errors, 0 warnings (1 resource)"
# an extension alone is a valid file, but statetool cannot record it yet: refused
printf '{"resources":[{"type":"aws:s3/bucket:Bucket","name":"b1","id":"b","extension":{"name":"e","version":"1.0.0","value":"AA=="}}]}' > "$T/ext.json"
run "extension refused" st import --no-read --dest "$D" --file "$T/ext.json"
check_rc 1; check_out_empty
check_err "statetool: error: $P::aws:s3/bucket:Bucket::b1 has an extension: extension parameterizations are not supported by statetool import yet (at /resources/0/extension)"
check_same "$E/base.json" "$D"; check_absent "$D.bak"
run "extension: the file is valid" st validate "$T/ext.json"
check_rc 0

# default provider names with the download URL (DefaultName, tokens.IntoQName); versions as
# semver prints them
printf '{"resources":[{"type":"foo:index:Thing","name":"t1","id":"t","version":"1.2.3-alpha-1.2+build.5","pluginDownloadUrl":"https://example.com/a b/plugins//x/"},{"type":"bar:index:Thing","name":"t2","id":"t","version":" 01.2"}]}' > "$T/url.json"
fresh
run "default provider: URL in the name" sh -c "'$STATETOOL' import --no-read --dest '$D' --file '$T/url.json' | grep 'default provider' | sed -E 's/ID [0-9a-f-]{36}/ID UUID/'"
check_out "added $P::pulumi:providers:foo::default_1_2_3_alpha-1_2_build_5_https_/example.com/a_b/plugins/x (default provider, ID UUID)
added $P::pulumi:providers:bar::default_1_2_0 (default provider, ID UUID)"
run "default provider: inputs" sh -c "'$STATETOOL' show --json '$D' t1 | '$JSONGET' provider | sed 's/::[^:]*\$//' | xargs '$STATETOOL' show --json '$D' | '$JSONGET' inputs outputs; '$STATETOOL' show --json '$D' '$P::pulumi:providers:bar::default_1_2_0' | '$JSONGET' inputs"
check_out '{"__internal":{"pluginDownloadURL":"https://example.com/a b/plugins//x"},"version":"1.2.3-alpha-1.2+build.5"}
{"version":"1.2.3-alpha-1.2+build.5"}
{"__internal":{},"version":"1.2.0"}'
run "default provider with a URL: generated spec" sh -c "'$STATETOOL' import --generate-specs '$D' '$P::foo:index:Thing::t1' -o - | '$JSONGET' resources"
check_out '[{"type":"foo:index:Thing","name":"t1","id":"t","version":"1.2.3-alpha-1.2+build.5","pluginDownloadUrl":"https://example.com/a b/plugins//x"}]'
printf '{"resources":[{"type":"a:b:C","name":"s","id":"1","version":"1.2-beta"},{"type":"a:b:C","name":"z","id":"2","version":"1.2.3-01"}]}' > "$T/semver.json"
run "short version with a pre-release, leading zero" st validate "$T/semver.json"
check_rc 1
check_out_has "could not parse version '1.2-beta' for resource 's'"
check_out_has "could not parse version '1.2.3-01' for resource 'z'"

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
# the import file as readImportFile reads it (json.NewDecoder(f).Decode, audit26a A3): the first
# value (what follows not read: a warning), the Decoder's errors at the end of the input
printf '{"resources": [{"type": "aws:s3/bucket:Bucket", "name": "tr", "id": "tr-1"}]}\n{"resources": [' > "$T/trail.json"
fresh
run "import file + data after it" st import --no-read --dest "$D" --file "$T/trail.json"
check_rc 0; check_out_has "added urn:pulumi:dev::shop::aws:s3/bucket:Bucket::tr (ID tr-1)"
check_err_has "$T/trail.json: warning: data after the document at line 2, column 1 (byte 78) is not read"
: > "$T/empty.json"
printf '  \n' > "$T/blank.json"
printf '{"resources": [{"type": ' > "$T/cut.json"
for f in empty blank cut; do
	fresh
	run "import file $f" st import --no-read --dest "$D" --file "$T/$f.json"
	check_rc 1; check_same "$E/base.json" "$D"
	case $f in
	empty) check_err "statetool: error: $T/empty.json:1:1: EOF" ;;
	blank) check_err "statetool: error: $T/blank.json:2:1: EOF" ;;
	cut) check_err "statetool: error: $T/cut.json:1:25: unexpected EOF" ;;
	esac
done
# --stack-config: a default provider created gets the stack's config as Pulumi's
# GetPackageConfig gives it (deploy/import.go registerProviders): each aws:<key> the input <key>,
# a string as config.Value.Value spells it, a secure one a secret (the config's own salt opens it)
PW="correct horse battery staple"
SALT='v1:a49wSrN5Np0=:v1:ht5CxZ0Nbc5Jgvk0:agLfiyl2z1UforO+76Rt1arxB7YTww=='
cat > "$T/Pulumi.dev.yaml" <<YAML
encryptionsalt: $SALT
config:
  aws:region: us-west-2
  aws:config:profile: p1
  aws:maxRetries: 8080
  aws:skipMetadataApiCheck: true
  aws:ratio: 1.50
  aws:big: 1e6
  aws:hex: 0x1F
  aws:zip: "0123"
  aws:empty:
  aws:assumeRole:
    roleArn: "arn:aws:iam::1:role/<x>"
    durationSeconds: 3600
    tags: [b, 2.0, true, ~, 9007199254740993]
  aws:snowflake: -9223372036854775808
  aws:secretKey:
    secure: v1:d1xakN6a0R55+pg0:V5QjUawq1T5HK6ssFZAwsexGlUHymg==
  gcp:project: p
  proj:name: x
YAML
printf '{"resources":[{"type":"aws:s3/bucket:Bucket","name":"cb","id":"cb-1","version":"6.1.0"}]}' > "$T/cfgspec.json"
cp "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/cs.json"
P3=urn:pulumi:dev::proj
run "config: import" sh -c "PULUMI_CONFIG_PASSPHRASE='$PW' '$STATETOOL' import --no-read --dest '$T/cs.json' --file '$T/cfgspec.json' --stack-config '$T/Pulumi.dev.yaml' | sed -E 's/ID [0-9a-f-]{36}/ID UUID/'"
check_rc 0
check_out "added $P3::pulumi:providers:aws::default_6_1_0 (default provider, with the stack's config, ID UUID) with encrypted secrets
added $P3::aws:s3/bucket:Bucket::cb (ID cb-1)
note: $P3::aws:s3/bucket:Bucket::cb: no outputs read; the next \`pulumi refresh\` will fill them in
2 resources imported"
if grep -q 's3cr' "$T/cs.json"; then bad "plaintext in the state"; else ok; fi
PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" secrets show "$T/cs.json" > "$T/csplain.json"
run "config: the provider's inputs" sh -c "'$STATETOOL' show --json '$T/csplain.json' '$P3::pulumi:providers:aws::default_6_1_0' | '$JSONGET' inputs"
check_out '{"__internal":{},"assumeRole":"{\"durationSeconds\":3600,\"roleArn\":\"arn:aws:iam::1:role/\\u003cx\\u003e\",\"tags\":[\"b\",2,true,null,9007199254740993]}","big":"1000000","empty":"","hex":"31","maxRetries":"8080","profile":"p1","ratio":"1.5","region":"us-west-2","secretKey":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","plaintext":"\"s3cr\\u003ct\""},"skipMetadataApiCheck":"true","snowflake":"-9223372036854775808","version":"6.1.0","zip":"0123"}'
run "config: outputs are the inputs without __internal" sh -c "'$STATETOOL' show --json '$T/csplain.json' '$P3::pulumi:providers:aws::default_6_1_0' | '$JSONGET' outputs"
check_out '{"assumeRole":"{\"durationSeconds\":3600,\"roleArn\":\"arn:aws:iam::1:role/\\u003cx\\u003e\",\"tags\":[\"b\",2,true,null,9007199254740993]}","big":"1000000","empty":"","hex":"31","maxRetries":"8080","profile":"p1","ratio":"1.5","region":"us-west-2","secretKey":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","plaintext":"\"s3cr\\u003ct\""},"skipMetadataApiCheck":"true","snowflake":"-9223372036854775808","version":"6.1.0","zip":"0123"}'
run "config: secrets verify" env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" secrets verify "$T/cs.json"
check_rc 0; check_out "4 secrets, 0 failed to decrypt"
run "config: valid" st validate "$T/cs.json"
check_rc 0
# the default provider the state has is used as it is (Pulumi reuses it): no config read, no
# passphrase asked although the package holds a secure value
cp "$T/cs.json" "$T/cs2.json"
printf '{"resources":[{"type":"aws:s3/bucket:Bucket","name":"cc","id":"cc-1","version":"6.1.0"}]}' > "$T/cfgspec2.json"
run "config: provider exists" env -u PULUMI_CONFIG_PASSPHRASE -u PULUMI_CONFIG_PASSPHRASE_FILE "$STATETOOL" import --no-read --dest "$T/cs2.json" --file "$T/cfgspec2.json" --stack-config "$T/Pulumi.dev.yaml"
check_rc 0; check_out_has "added $P3::aws:s3/bucket:Bucket::cc (ID cc-1)"; check_out_lacks "providers:aws"
# a wrong passphrase: nothing written, no secret in the message
cp "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/cs.json"
run "config: wrong passphrase" env PULUMI_CONFIG_PASSPHRASE=wrong "$STATETOOL" import --no-read --dest "$T/cs.json" --file "$T/cfgspec.json" --stack-config "$T/Pulumi.dev.yaml"
check_rc 1; check_out_empty; check_same "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/cs.json"
check_err "statetool: error: incorrect passphrase, please set PULUMI_CONFIG_PASSPHRASE to the correct passphrase or set PULUMI_CONFIG_PASSPHRASE_FILE to a file containing the passphrase"
# a secure value the config's key does not open: named by key and line
sed 's/V5QjUawq1T5HK6ssFZAwsexGlUHymg==/W5QjUawq1T5HK6ssFZAwsexGlUHymg==/' "$T/Pulumi.dev.yaml" > "$T/Pbad.yaml"
run "config: value does not decrypt" env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" import --no-read --dest "$T/cs.json" --file "$T/cfgspec.json" --stack-config "$T/Pbad.yaml"
check_rc 1; check_out_empty; check_same "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/cs.json"
check_err_has "config 'aws:secretKey': secure value does not decrypt"; check_err_lacks "s3cr"
# a config without the package's keys: the provider gets only what providers.Set* add
printf 'config:\n  gcp:project: p\n' > "$T/Pgcp.yaml"
run "config: no keys of the package" st import --no-read --dest "$T/cs.json" --file "$T/cfgspec.json" --stack-config "$T/Pgcp.yaml"
check_rc 0; check_out_has "(default provider, ID "
run "config: no keys: inputs" sh -c "'$STATETOOL' show --json '$T/cs.json' '$P3::pulumi:providers:aws::default_6_1_0' | '$JSONGET' inputs"
check_out '{"__internal":{},"version":"6.1.0"}'
# refused, nothing written: not YAML, another secrets provider, ESC environments, NaN, a tag,
# a key config.ParseKey refuses
cp "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/cs.json"
printf 'config:\n  aws:region: [a\n' > "$T/Pparse.yaml"
printf 'secretsprovider: awskms://alias/k?region=x\nconfig:\n  aws:k:\n    secure: AAAA\n' > "$T/Pkms.yaml"
printf 'environment:\n  - shared\nconfig:\n  aws:region: x\n' > "$T/Penv.yaml"
printf 'config:\n  aws:r: .nan\n' > "$T/Pnan.yaml"
printf 'config:\n  aws:r: !!int 1\n' > "$T/Ptag.yaml"
printf 'config:\n  a:b:c: x\n' > "$T/Pkey.yaml"
for f in parse kms env nan tag key; do
	run "config refused: $f" env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" import --no-read --dest "$T/cs.json" --file "$T/cfgspec.json" --stack-config "$T/P$f.yaml"
	check_rc 1; check_out_empty; check_same "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/cs.json"
	case $f in
	parse) check_err "statetool: error: $T/Pparse.yaml:3:1: not valid YAML: did not find expected ',' or ']'" ;;
	kms) check_err "statetool: error: $T/Pkms.yaml:3:3: config 'aws:k' is secured by the secrets provider 'awskms', which statetool cannot open (passphrase only)" ;;
	env) check_err "statetool: error: $T/Penv.yaml:2:3: the file imports ESC environments ('environment'), whose values Pulumi adds to the config: statetool cannot open them" ;;
	nan) check_err "statetool: error: $T/Pnan.yaml:2:10: config 'aws:r': .nan is not a value Pulumi loads (json: unsupported value: NaN)" ;;
	tag) check_err "statetool: error: $T/Ptag.yaml:2:10: a value tagged 'tag:yaml.org,2002:int' is not read by statetool: write it without the tag" ;;
	key) check_err "statetool: error: $T/Pkey.yaml:2:3: could not parse a:b:c as a configuration key (configuration keys should be of the form \`<namespace>:<name>\`)" ;;
	esac
done
finish
