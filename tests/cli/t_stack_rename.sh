#!/bin/sh
# statetool stack rename (pulumi stack rename on a DIY backend): every URN naming the stack
# rewritten with Pulumi's edit.RenameStack rules (parents, dependencies, property dependencies,
# aliases, viewOf, provider references, resource references in outputs and in plaintext
# secrets; the root stack's name; URNs of another stack or project left alone), the checkpoint's
# stack, the history, backups and tags moved, the old object kept as .bak; to another project;
# refused when the name is taken or the stack locked; a kill at each step and a rerun end where
# an uninterrupted rename ends; the legacy layout. (On s3://, postgres:// and gs://: t_stores.sh,
# run by t_xstores.sh on the test servers.)
. "$(dirname "$0")/lib.sh"
MAGIC=3ff53efef69f38d19e364655131bbb113e416d3bf64bfb819065fa12acb29250
U=urn:pulumi:dev::shop
cat >"$T/export.json" <<EOF
{"version":3,"deployment":{"manifest":{"time":"2024-01-02T03:04:05Z","magic":"$MAGIC","version":"v3.100.0"},"resources":[
{"urn":"$U::pulumi:pulumi:Stack::shop-dev","custom":false,"type":"pulumi:pulumi:Stack"},
{"urn":"$U::pulumi:providers:aws::default","custom":true,"id":"p-1","type":"pulumi:providers:aws","parent":"$U::pulumi:pulumi:Stack::shop-dev"},
{"urn":"$U::aws:s3/bucket:Bucket::b","custom":true,"id":"b-1","type":"aws:s3/bucket:Bucket","parent":"$U::pulumi:pulumi:Stack::shop-dev","provider":"$U::pulumi:providers:aws::default::p-1","aliases":["$U::aws:s3/bucket:Bucket::old-b"]},
{"urn":"$U::aws:s3/bucketPolicy:BucketPolicy::p","custom":true,"id":"p-2","type":"aws:s3/bucketPolicy:BucketPolicy","parent":"$U::pulumi:pulumi:Stack::shop-dev","provider":"$U::pulumi:providers:aws::default::p-1","dependencies":["$U::aws:s3/bucket:Bucket::b"],"propertyDependencies":{"bucket":["$U::aws:s3/bucket:Bucket::b"]},"outputs":{"ref":{"4dabf18193072939515e22adb298388d":"5cf8f73096256a8f31e491e813e4eb8e","urn":"$U::aws:s3/bucket:Bucket::b"},"other":{"4dabf18193072939515e22adb298388d":"5cf8f73096256a8f31e491e813e4eb8e","urn":"urn:pulumi:dev::lib::aws:s3/bucket:Bucket::x"},"hidden":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","plaintext":"{\"4dabf18193072939515e22adb298388d\":\"5cf8f73096256a8f31e491e813e4eb8e\",\"urn\":\"$U::aws:s3/bucket:Bucket::b\"}"}}},
{"urn":"$U::aws:s3/bucket:Bucket::v","custom":true,"id":"v-1","type":"aws:s3/bucket:Bucket","parent":"$U::pulumi:pulumi:Stack::shop-dev","provider":"$U::pulumi:providers:aws::default::p-1","viewOf":"$U::aws:s3/bucket:Bucket::b"}
]}}
EOF
B=$T/b
D=$B/.pulumi/stacks/shop
mkdir -p "$D" "$B/.pulumi/history/shop/dev" "$B/.pulumi/backups/shop/dev"
printf 'version: 1\n' >"$B/.pulumi/meta.yaml"
st convert "$T/export.json" --envelope checkpoint --checkpoint-stack organization/shop/dev -o "$D/dev.json" >/dev/null
cp "$D/dev.json" "$T/dev.json"
printf '{"version":1,"tags":{"owner":"ops"}}\n' >"$D/dev.pulumi-tags"
echo h >"$B/.pulumi/history/shop/dev/dev-1700000000000000000.history.json"
echo c >"$B/.pulumi/history/shop/dev/dev-1700000000000000000.checkpoint.json"
echo b >"$B/.pulumi/backups/shop/dev/dev.1700000000000000000.json"
cp -r "$B" "$T/b0"
# (the new stack's first save leaves its generation in backups/, as every statetool save does)
# the expected new object: every URN of stack dev of project shop renamed, nothing else
sed 's/urn:pulumi:dev::shop::/urn:pulumi:prod::shop::/g; s/Stack::shop-dev/Stack::shop-prod/g; s/"stack":"organization\/shop\/dev"/"stack":"organization\/shop\/prod"/' "$T/dev.json" >"$T/want-prod.json"

run "rename" st stack rename --backend "$B" --stack shop/dev prod
check_rc 0; check_out "Renamed organization/shop/dev to organization/shop/prod"
check_err "statetool: note: rename the project's Pulumi.dev.yaml to Pulumi.prod.yaml, as pulumi stack rename does (statetool changes the backend only; the file holds the stack's config and encryptionsalt)"
run "the new object" cat "$D/prod.json"
check_same "$T/want-prod.json" "$T/out"
run "another stack's and another project's URNs left alone" grep -c 'urn:pulumi:dev::lib::aws:s3/bucket:Bucket::x' "$D/prod.json"
check_out 1
run "the old object is its .bak" cat "$D/dev.json.bak"
check_same "$T/dev.json" "$T/out"
run "the layout" sh -c "cd '$B' && find .pulumi -type f | sed 's/prod\.17[1-9][0-9]\{16\}\.json/prod.<time>.json/' | sort"
check_out ".pulumi/backups/shop/prod/prod.1700000000000000000.json
.pulumi/backups/shop/prod/prod.<time>.json
.pulumi/history/shop/prod/prod-1700000000000000000.checkpoint.json
.pulumi/history/shop/prod/prod-1700000000000000000.history.json
.pulumi/meta.yaml
.pulumi/stacks/shop/dev.json.bak
.pulumi/stacks/shop/prod.json
.pulumi/stacks/shop/prod.pulumi-tags"
run "valid, in its place" st validate --backend "$B" --stack shop/prod
check_rc 0; check_out "shop/prod: warning: [secrets/plaintext] secret stored as plaintext (as \`pulumi stack export --show-secrets\` writes it); \`statetool secrets encrypt\` encrypts it
    at /checkpoint/latest/resources/3/outputs/hidden
shop/prod: valid, 0 errors, 1 warning (5 resources)"

# to another project
run "to another project" st stack rename --backend "$B" -s shop/prod organization/web/prod
check_rc 0; check_out "Renamed organization/shop/prod to organization/web/prod"
run "to another project: URNs" st list --backend "$B" --stack web/prod --json
check_out_has '"urn": "urn:pulumi:prod::web::pulumi:pulumi:Stack::web-prod"'
check_out_has '"urn": "urn:pulumi:prod::web::aws:s3/bucket:Bucket::b"'
run "to another project: valid" st validate --backend "$B" --stack web/prod
check_rc 0

# refusals: the name taken, a lock, a bad name
rm -rf "$B"; cp -r "$T/b0" "$B"
sed 's/dev::shop/taken::shop/g; s/shop-dev/shop-taken/g; s/organization\/shop\/dev/organization\/shop\/taken/' "$T/dev.json" >"$D/taken.json"
(cd "$B" && find . -type f | sort | xargs sha256sum) >"$T/before"
run "the name is taken" st stack rename --backend "$B" --stack shop/dev taken
check_rc 1; check_err "statetool: error: a stack named organization/shop/taken already exists"
run "the name is taken: nothing changed" sh -c "cd '$B' && find . -type f | sort | xargs sha256sum"
check_same "$T/before" "$T/out"
mkdir -p "$B/.pulumi/locks/organization/shop/dev"
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"2024-05-01T10:00:00Z"}' \
	>"$B/.pulumi/locks/organization/shop/dev/6a1f0e2c-0000-4000-8000-000000000001.json"
run "locked" st stack rename --backend "$B" --stack shop/dev prod
check_rc 1; check_err_has "the stack is currently locked by 1 lock(s)"
rm -rf "$B/.pulumi/locks"
run "a bad name" st stack rename --backend "$B" --stack shop/dev 'a b'
check_rc 2; check_err_has "invalid stack name 'a b'"
run "no such stack" st stack rename --backend "$B" --stack shop/nope x
check_rc 1; check_err_has "no stack named 'shop/nope' found"
run "usage" st stack rename --backend "$B" prod
check_rc 2; check_err_has "--stack NAME names the stack to rename"

# a kill at each step; the same command again finishes the rename
for step in 1 2; do
	rm -rf "$B"; cp -r "$T/b0" "$B"
	run "killed at stack-rename:$step" env STATETOOL_CRASH_AT=stack-rename:$step "$STATETOOL" stack rename --backend "$B" --stack shop/dev prod
	check_rc 137
	run "after stack-rename:$step, the rerun names the stale lock" st stack rename --backend "$B" --stack shop/dev prod
	check_rc 1; check_err_has "[stale: that process is no longer running]"
	st unlock --backend "$B" --stack shop/dev >/dev/null
	run "after stack-rename:$step and unlock, the rerun" st stack rename --backend "$B" --stack shop/dev prod
	check_rc 0; check_out "Renamed organization/shop/dev to organization/shop/prod"
	run "after stack-rename:$step, as if never killed" cat "$D/prod.json"
	check_same "$T/want-prod.json" "$T/out"
	run "after stack-rename:$step, the layout" sh -c "cd '$B' && find .pulumi -type f | sed 's/prod\.17[1-9][0-9]\{16\}\.json/prod.<time>.json/' | sort"
	check_out ".pulumi/backups/shop/prod/prod.1700000000000000000.json
.pulumi/backups/shop/prod/prod.<time>.json
.pulumi/history/shop/prod/prod-1700000000000000000.checkpoint.json
.pulumi/history/shop/prod/prod-1700000000000000000.history.json
.pulumi/meta.yaml
.pulumi/stacks/shop/dev.json.bak
.pulumi/stacks/shop/prod.json
.pulumi/stacks/shop/prod.pulumi-tags"
done

# killed once the old object is gone: the rename is complete, its marker and lock left
rm -rf "$B"; cp -r "$T/b0" "$B"
run "killed at stack-rename:3" env STATETOOL_CRASH_AT=stack-rename:3 "$STATETOOL" stack rename --backend "$B" --stack shop/dev prod
check_rc 137
run "after stack-rename:3, the new stack is complete" cat "$D/prod.json"
check_same "$T/want-prod.json" "$T/out"
run "after stack-rename:3, the old one is gone" st stack rename --backend "$B" --stack shop/dev prod
check_rc 1; check_err "statetool: error: no stack named 'shop/dev' found"

# the legacy layout: stacks have no project
L=$T/legacy
mkdir -p "$L/.pulumi/stacks"
sed 's/"stack":"organization\/shop\/dev"/"stack":"dev"/' "$T/dev.json" >"$L/.pulumi/stacks/dev.json"
run "legacy" st stack rename --backend "$L" --stack dev prod
check_rc 0; check_out "Renamed dev to prod"
run "legacy: URNs" st list --backend "$L" --stack prod --json
check_out_has '"urn": "urn:pulumi:prod::shop::aws:s3/bucket:Bucket::b"'
run "legacy: no project" st stack rename --backend "$L" --stack prod web/prod
check_rc 2; check_err_has "the backend is in the legacy layout, which has none"
# a backend with an index: the rename updates it (the old name dropped, the new one indexed),
# as every statetool change to a stack does, so a query answers without a staleness warning
X=$T/ix
mkdir -p "$X/.pulumi/stacks/shop"; printf 'version: 1\n' > "$X/.pulumi/meta.yaml"
cp "$T/dev.json" "$X/.pulumi/stacks/shop/dev.json"
st index update --backend "$X" >/dev/null 2>&1
run "rename with an index" st stack rename --backend "$X" --stack shop/dev prod
check_rc 0
run "the index has the new name only" st query --backend "$X" --csv --urn '*'
check_rc 0; check_err_empty
check_out_has "organization/shop/prod"; check_out_lacks "organization/shop/dev"
finish
