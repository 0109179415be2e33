#!/bin/sh
# Defects an audit of the CLI found (help and docs against behaviour, bad input): each case
# with its exact exit code and message, and every refused file left as it was.
. "$(dirname "$0")/lib.sh"
G=$T/good.json
cp "$FIXTURES/edit/base.json" "$G"

# edit --from checks an envelope's version as a load does
sed '2s/"version": 3,/"version": 99,/' "$FIXTURES/edit/base.json" >"$T/v99.json"
cp "$G" "$T/e.json"
run "edit --from version 99" st edit --from "$T/v99.json" "$T/e.json"
check_rc 1
check_err "statetool: error: $T/v99.json: this stack's deployment version is too new (version 99; the newest supported is 4)"
check_same "$G" "$T/e.json"; check_absent "$T/e.json.bak"
run "list version 99" st list "$T/v99.json"
check_rc 1
check_err "statetool: error: $T/v99.json: this stack's deployment version is too new (version 99; the newest supported is 4)"

# migrate -o: says what it wrote; -o naming the state itself is an in-place migration
cp "$G" "$T/m.json"
ino=$(ls -i "$T/m.json" | cut -d' ' -f1)
run "migrate -o itself, nothing to migrate" st migrate -o "$T/m.json" "$T/m.json"
check_rc 0; check_out "no change: $T/m.json is already version 3; nothing to migrate"
check_same "$G" "$T/m.json"; check_absent "$T/m.json.bak"; check_absent "$T/m.json.lock"
if [ "$(ls -i "$T/m.json" | cut -d' ' -f1)" = "$ino" ]; then ok; else bad "m.json was replaced"; fi
ln -s m.json "$T/m-link.json"
run "migrate -o a link to itself" st migrate -o "$T/m-link.json" "$T/m.json"
check_rc 0; check_out "no change: $T/m.json is already version 3; nothing to migrate"
check_absent "$T/m.json.bak"
run "migrate --json -o other" st migrate --json -o "$T/other.json" "$G"
check_rc 0; check_out_has '"written": true,'; check_same "$G" "$T/other.json"
rm -f "$T/other.json"
run "migrate -o other, text" st migrate -o "$T/other.json" "$G"
check_rc 0
check_out "no change: $G is already version 3; nothing to migrate; copied unchanged to $T/other.json"
check_same "$G" "$T/other.json"
run "migrate --json in place, nothing to migrate" st migrate --json "$T/m.json"
check_rc 0; check_out_has '"written": false,'
cp "$FIXTURES/pulumi/checkpoint-v1.json" "$T/v1.json"
run "migrate -o itself, version 1" st migrate -o "$T/v1.json" "$T/v1.json"
check_rc 0; check_out_has "$T/v1.json migrated from version 1 to 3:"
check_same "$FIXTURES/pulumi/checkpoint-v1.json" "$T/v1.json.bak"; check_absent "$T/v1.json.lock"
run "migrate -o other, version 1" st migrate -o "$T/v1-out.json" "$FIXTURES/pulumi/checkpoint-v1.json"
check_rc 0
check_out_has "$FIXTURES/pulumi/checkpoint-v1.json migrated from version 1 to 3, written to $T/v1-out.json:"
check_same "$T/v1.json" "$T/v1-out.json"

# show --names in JSON
run "show --names --json" st show --names --json "$G"
check_rc 0
check_out '{
    "audit_825454": "urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::audit",
    "logs_8c14dc": "urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::logs",
    "backup_b2770b": "urn:pulumi:dev::shop::gcp:storage/bucket:Bucket::backup",
    "server_f53be2": "urn:pulumi:dev::shop::my:index:App$aws:ec2/instance:Instance::server",
    "assets_d6df26": "urn:pulumi:dev::shop::my:index:App$my:index:Web$aws:s3/bucket:Bucket::assets",
    "assets_policy_2a6045": "urn:pulumi:dev::shop::my:index:App$my:index:Web$aws:s3/bucketPolicy:BucketPolicy::assets-policy",
    "web_207596": "urn:pulumi:dev::shop::my:index:App$my:index:Web::web",
    "app_b9ca6e": "urn:pulumi:dev::shop::my:index:App::app"
}'
run "show --names --output json" st show --names --output json "$G"
check_rc 0
check_out '{
  "app_b9ca6e": "urn:pulumi:dev::shop::my:index:App::app",
  "assets_d6df26": "urn:pulumi:dev::shop::my:index:App$my:index:Web$aws:s3/bucket:Bucket::assets",
  "assets_policy_2a6045": "urn:pulumi:dev::shop::my:index:App$my:index:Web$aws:s3/bucketPolicy:BucketPolicy::assets-policy",
  "audit_825454": "urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::audit",
  "backup_b2770b": "urn:pulumi:dev::shop::gcp:storage/bucket:Bucket::backup",
  "logs_8c14dc": "urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::logs",
  "server_f53be2": "urn:pulumi:dev::shop::my:index:App$aws:ec2/instance:Instance::server",
  "web_207596": "urn:pulumi:dev::shop::my:index:App$my:index:Web::web"
}'
printf '{"version": 3, "deployment": {}}\n' >"$T/empty.json"
run "show --names --output json, none" st show --names --output json "$T/empty.json"
check_rc 0; check_out '{}'

# --max-size: digits and a suffix, nothing negative, nothing that overflows
for v in -5 ' 5' +5 0 1x; do
	run "--max-size '$v'" st list --max-size "$v" "$G"
	check_rc 2; check_err "statetool: error: invalid --max-size '$v' (use bytes or a K, M, G suffix)"
	check_out_empty
done
for v in 99999999999999999999 17179869184G; do
	run "--max-size $v" st list --max-size "$v" "$G"
	check_rc 2; check_err "statetool: error: invalid --max-size '$v' (too large)"
done
run "diff --max-size -5" st diff --max-size -5 "$G" "$G"
check_rc 2
check_err "statetool: error: invalid --max-size '-5' (use bytes or a K, M, G suffix)
Try 'statetool diff --help' for more information."
run "--max-size 1K" st list --max-size 1K "$G"
check_rc 1; check_err "statetool: error: '$G' is 11704 bytes, over the limit of 1024 bytes"
run "--max-size 16G" st list --max-size 16G "$G"
check_rc 0

# restore --dry-run predicts the real run: a current state that does not parse is a warning
cp "$G" "$T/r.json.bak"; printf '{"broken\n' >"$T/r.json"
W="statetool: warning: no diff shown: $T/r.json: invalid character '\\x0a' in string literal"
run "restore --dry-run, current broken" st restore --dry-run "$T/r.json"
check_rc 0; check_out "dry run: nothing written"; check_err "$W"
check_same "$G" "$T/r.json.bak"; check_file_is "$T/r.json" '{"broken
'
run "restore --dry-run --json, current broken" st restore --dry-run --json "$T/r.json"
check_rc 0; check_out_has '"dry_run": true,'; check_out_has '"written": false'; check_err "$W"
run "restore, current broken" st restore "$T/r.json"
check_rc 0; check_out "restored $T/r.json from $T/r.json.bak (the replaced version is now $T/r.json.bak)"
check_err "$W"; check_same "$G" "$T/r.json"
printf 'x' >"$T/r.json.bak"
run "restore --dry-run, backup broken" st restore --dry-run "$T/r.json"
check_rc 1; check_err "statetool: error: $T/r.json.bak:1:1: invalid character 'x' looking for beginning of value"
run "restore, backup broken" st restore "$T/r.json"
check_rc 1; check_err "statetool: error: $T/r.json.bak:1:1: invalid character 'x' looking for beginning of value"
B=$T/be
mkdir -p "$B/.pulumi/stacks/shop"
printf 'version: 1\n' >"$B/.pulumi/meta.yaml"
st convert "$G" --envelope checkpoint --checkpoint-stack organization/shop/dev -o "$B/.pulumi/stacks/shop/dev.json" >/dev/null
mv "$B/.pulumi/stacks/shop/dev.json" "$B/.pulumi/stacks/shop/dev.json.bak"
printf '{"broken\n' >"$B/.pulumi/stacks/shop/dev.json"
run "restore --dry-run of a stack, current broken" st restore --dry-run --backend "$B" -s shop/dev
check_rc 0; check_out "dry run: nothing written"
check_err "statetool: warning: no diff shown: $B/.pulumi/stacks/shop/dev.json: invalid character '\\x0a' in string literal"
rm "$B/.pulumi/stacks/shop/dev.json.bak"
run "restore --dry-run of a stack, no backup" st restore --dry-run --backend "$B" -s shop/dev
check_rc 1; check_err "statetool: error: no backup '$B/.pulumi/stacks/shop/dev.json.bak' to restore"
run "restore of a stack, no backup" st restore --backend "$B" -s shop/dev
check_rc 1; check_err "statetool: error: no backup '$B/.pulumi/stacks/shop/dev.json.bak' to restore"

# convert: --checkpoint-stack checked as --stack is; conflicting flags refused
N='names may only contain alphanumerics, hyphens, underscores and periods (at most 100, not '"'.' or '..')"
for c in "organization/../x|invalid project name '..' in 'organization/../x': $N" \
	"organization/shop/..|invalid stack name '..' in 'organization/shop/..': $N" \
	"shop/|invalid stack name '' in 'shop/': $N" \
	"org/shop/dev|invalid stack name 'org/shop/dev': a DIY backend's organization is always 'organization'" \
	"a/b/c/d|invalid stack name 'a/b/c/d': expected organization/project/stack, project/stack or stack"; do
	name=${c%%|*}
	run "convert --checkpoint-stack $name" st convert --envelope checkpoint --checkpoint-stack "$name" "$G" -o "$T/cs.json"
	check_rc 2; check_err "statetool: error: ${c#*|}"; check_absent "$T/cs.json"
done
run "convert --checkpoint-stack organization/shop/dev" st convert --envelope checkpoint --checkpoint-stack organization/shop/dev "$G" -o "$T/cs.json"
check_rc 0
for c in "--gzip --zstd" "--zstd --no-gzip" "--compact --indent" "--escape-html --no-escape-html"; do
	set -- $c
	run "convert $c" st convert "$@" "$G" -o "$T/cf.json"
	check_rc 2
	check_err "statetool: error: give $1 or $2, not both
Try 'statetool convert --help' for more information."
	check_absent "$T/cf.json"
done
run "convert --gzip --gzip" st convert --gzip --gzip "$G" -o "$T/cf.json.gz"
check_rc 0

finish
