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
# a write that fails reports nothing but its error (no "written to", no success document)
run "migrate -o into a missing folder" st migrate -o "$T/no-such-dir/out.json" "$FIXTURES/pulumi/checkpoint-v1.json"
check_rc 1; check_out_empty; check_err_has "$T/no-such-dir"
run "migrate --json -o into a missing folder" st migrate --json -o "$T/no-such-dir/out.json" "$FIXTURES/pulumi/checkpoint-v1.json"
check_rc 1; check_out_lacks '"written": true'; check_out_has '"ok": false'

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
W="statetool: warning: no diff shown: $T/r.json: invalid character '\\n' in string literal"
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
check_err "statetool: warning: no diff shown: $B/.pulumi/stacks/shop/dev.json: invalid character '\\n' in string literal"
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

# unlock and history: a mistyped file or stack is an error, '-' a usage error
run "unlock a missing file" st unlock "$T/nope.json"
check_rc 1; check_err "statetool: error: cannot open '$T/nope.json': No such file or directory"; check_out_empty
run "unlock --json a missing file" st unlock --json "$T/nope.json"
check_rc 1; check_out_has '"code": "not-found",'
mkdir "$T/adir"
run "unlock a directory" st unlock "$T/adir"
check_rc 1; check_err "statetool: error: cannot unlock '$T/adir': it is a directory, not a state file"
run "unlock -" st unlock -
check_rc 2
check_err "statetool: error: standard input has no lock (filter mode takes none): unlock works on a file or a stack
Try 'statetool unlock --help' for more information."
printf '{}' >"$T/gone.json.lock"
run "unlock the stray lock of a missing file" st unlock "$T/gone.json"
check_rc 0; check_out "removed 1 lock of $T/gone.json"; check_absent "$T/gone.json.lock"
cp "$G" "$T/u.json"
run "unlock a file with no lock" st unlock "$T/u.json"
check_rc 0; check_out "removed 0 locks of $T/u.json"
cp "$G" "$B/.pulumi/stacks/shop/dev.json"
run "unlock a missing stack" st unlock --backend "$B" -s shop/nosuch
check_rc 1; check_err "statetool: error: stack 'shop/nosuch' has no state file in backend '$B'"
run "unlock a stack with no lock" st unlock --backend "$B" -s shop/dev
check_rc 0; check_out "removed 0 locks of shop/dev"
run "history of a missing stack" st history --backend "$B" -s shop/nosuch
check_rc 1; check_err "statetool: error: stack 'shop/nosuch' has no state file in backend '$B'"
run "history --json of a missing stack" st history --json --backend "$B" -s shop/nosuch
check_rc 1; check_out_has '"code": "not-found",'
run "unlock, missing STATE" st unlock
check_rc 2
check_err "statetool: error: missing STATE (a file, or --backend URL --stack NAME)
Try 'statetool unlock --help' for more information."
run "restore, missing STATE" st restore
check_rc 2
check_err "statetool: error: missing STATE (a file, or --backend URL --stack NAME)
Try 'statetool restore --help' for more information."
run "list, missing STATE" st list
check_rc 2
check_err "statetool: error: missing STATE (a file, '-' for standard input, or --backend URL --stack NAME)
Try 'statetool list --help' for more information."

# conflicting flags: a usage error naming both
usage_err() { check_rc 2; check_err "statetool: error: $1
Try 'statetool $2 --help' for more information."; check_out_empty; }
run "query --json --csv" st query --json --csv --db "$T/ix.db"
check_rc 2; check_out_has '"message": "give --json or --csv, not both"'
run "query --csv --json" st query --csv --json --db "$T/ix.db"
check_rc 2; check_err_has "statetool: error: give --csv or --json, not both"
run "query --protected --sql" st query --protected --sql 'select 1' --db "$T/ix.db"
usage_err "give --sql or --protected, not both" query
run "query --sql --type" st query --sql 'select 1' --type aws:s3/bucket:Bucket --db "$T/ix.db"
usage_err "give --sql or --type, not both" query
check_absent "$T/ix.db"
run "graph --format dot -o x.svg" st graph --format dot -o "$T/x.svg" "$G"
usage_err "give --format dot or -o '$T/x.svg' (a .svg name means --format svg), not both" graph
check_absent "$T/x.svg"
run "graph --output x.dot" st graph --output "$T/x.dot" "$G"
check_rc 0; check_out_empty
if head -n 1 "$T/x.dot" | grep -q '^digraph'; then ok; else bad "x.dot is not DOT"; fi
run "secrets verify --new-passphrase-file" st secrets verify --new-passphrase-file "$T/pw" "$G"
usage_err "--new-passphrase-file goes with \`secrets rekey\`" "secrets verify"
run "secrets show --dry-run" st secrets show --dry-run "$G"
usage_err "--dry-run goes with \`secrets encrypt\` and \`secrets rekey\` (secrets show writes no state)" "secrets show"
run "secrets encrypt --new-passphrase-file" st secrets encrypt --new-passphrase-file "$T/pw" "$G"
usage_err "--new-passphrase-file goes with \`secrets rekey\`" "secrets encrypt"
check_same "$FIXTURES/edit/base.json" "$G"

# edit with no terminal and no editor named: refused before vi runs
cp "$G" "$T/ed.json"
run "edit, no terminal" env -u VISUAL -u EDITOR "$STATETOOL" edit "$T/ed.json" </dev/null
usage_err "standard input is not a terminal, which the default editor (vi) needs: run edit on a terminal, set \$VISUAL or \$EDITOR to an editor that needs none, or give the new deployment with --from FILE" edit
check_same "$G" "$T/ed.json"; check_absent "$T/ed.json.bak"; check_absent "$T/ed.json.lock"
run "edit, an editor that needs no terminal" env VISUAL= EDITOR=true "$STATETOOL" edit "$T/ed.json" </dev/null
check_rc 0; check_out "no change: nothing written"

# messages and codes: a file is not a backend directory; missing is not-found everywhere
run "stacks --backend a file" st stacks --backend "$G"
check_rc 1; check_err "statetool: error: backend '$G' is not a directory"
for c in "list" "show" "convert -o $T/y.json" "migrate" "delete" "secrets show" "diff" "edit --from"; do
	case $c in
	show|delete) run "--json $c, a missing file" st $c --json "$T/nope.json" x ;;
	diff) run "--json diff, a missing file" st diff --json "$T/nope.json" "$G" ;;
	"edit --from") run "--json edit --from a missing file" st edit --json --from "$T/nope.json" "$T/ed.json" ;;
	*) run "--json $c, a missing file" st $c --json "$T/nope.json" ;;
	esac
	if [ "$c" = diff ]; then check_rc 2; else check_rc 1; fi # (diff: 2 is trouble, as diff(1))
	check_out_has '"code": "not-found",'
	check_out_has "\"message\": \"cannot open '$T/nope.json': No such file or directory\""
done
run "restore --json, no backup" st restore --json "$T/u.json"
check_rc 1; check_out_has '"code": "not-found",'
run "import --dest-stack ../x" st import --dest "$T/u.json" --dest-stack ../x aws:s3/bucket:Bucket b b-1
check_rc 2
check_err "statetool: error: invalid project name '..' in '../x': $N"
run "move --dest-stack organization/x/.." st move --source "$T/u.json" --dest "$T/m2.json" --dest-stack organization/x/.. logs
check_rc 2
check_err "statetool: error: invalid stack name '..' in 'organization/x/..': $N"
check_absent "$T/m2.json"

# show --show-secrets --json asks for the passphrase only when what it shows holds a ciphertext
run "show --show-secrets --json, no ciphertext" env -u PULUMI_CONFIG_PASSPHRASE -u PULUMI_CONFIG_PASSPHRASE_FILE "$STATETOOL" show --show-secrets --json "$G" logs </dev/null
check_rc 0; check_err_empty
check_out_has '"urn": "urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::logs",'
run "show --show-secrets --json, a ciphertext, no passphrase" env -u PULUMI_CONFIG_PASSPHRASE -u PULUMI_CONFIG_PASSPHRASE_FILE "$STATETOOL" show --show-secrets --json "$G" backup </dev/null
check_rc 1
check_err "statetool: error: passphrase must be set with PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE environment variables (or --passphrase-file)"
run "show --show-secrets --json, a ciphertext" env PULUMI_CONFIG_PASSPHRASE='correct horse battery staple' "$STATETOOL" show --show-secrets --json "$G" backup
check_rc 0; check_out_has '"plaintext": "\"hunter2\""'

# a store with no .pulumi is no backend to write a stack into; a failed command leaves no lock
# folders (nor a .pulumi that only they made)
mkdir "$T/empty"
run "convert -o into an empty directory" st convert "$G" -o "$T/empty/.pulumi/stacks/shop/dev.json"
check_rc 1
check_err "statetool: error: no Pulumi backend at '$T/empty': it has no .pulumi directory (a mistyped path?)"
run "nothing left in it" find "$T/empty"
check_out "$T/empty"
run "stacks of it" st stacks --backend "$T/empty"
check_rc 1
check_err "statetool: error: no Pulumi backend at '$T/empty': it has no .pulumi directory (a mistyped path?)"
run "import into an empty directory" st import --backend "$T/empty" -s shop/dev aws:s3/bucket:Bucket b b-1
check_rc 1
check_err "statetool: error: no Pulumi backend at '$T/empty': it has no .pulumi directory (a mistyped path?)"
run "nothing left in it after import" find "$T/empty"
check_out "$T/empty"
B5=$T/be5
mkdir -p "$B5/.pulumi/stacks/shop"
printf 'version: 1\n' >"$B5/.pulumi/meta.yaml"
printf '{"broken\n' >"$B5/.pulumi/stacks/shop/broken.json"
run "stack rename of a stack that does not parse" st stack rename --backend "$B5" -s shop/broken x
check_rc 1
check_err "statetool: error: $B5/.pulumi/stacks/shop/broken.json:1:9: invalid character '\\n' in string literal"
check_absent "$B5/.pulumi/locks"
st convert "$G" --envelope checkpoint --checkpoint-stack organization/shop/dev -o "$B5/.pulumi/stacks/shop/dev.json" >/dev/null
run "protect a stack" st protect --backend "$B5" -s shop/dev logs
check_rc 0
check_absent "$B5/.pulumi/locks"
mkdir -p "$B5/.pulumi/locks/organization/shop/dev"
run "protect a stack whose lock folder Pulumi left" st unprotect --backend "$B5" -s shop/dev logs
check_rc 0
run "the folder Pulumi left stays" find "$B5/.pulumi/locks"
check_out "$B5/.pulumi/locks
$B5/.pulumi/locks/organization
$B5/.pulumi/locks/organization/shop
$B5/.pulumi/locks/organization/shop/dev"

cp "$G" "$T/mv.json"
run "move into an empty directory" st move --source "$T/mv.json" --dest "$T/empty/.pulumi/stacks/shop/dev.json" 'urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::logs'
check_rc 1
check_err "statetool: error: no Pulumi backend at '$T/empty': it has no .pulumi directory (a mistyped path?)"
check_same "$G" "$T/mv.json"
run "nothing left in it after move" find "$T/empty"
check_out "$T/empty"
run "move into a backend by path names it" st move --dry-run --source "$T/mv.json" --dest "$B5/.pulumi/stacks/shop/new.json" 'urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::audit'
check_rc 0
check_out_has "Planning to move the following resources from $T/mv.json to $B5/.pulumi/stacks/shop/new.json:"

B7=$T/be7
mkdir -p "$B7/.pulumi"
printf 'version: 1\n' >"$B7/.pulumi/meta.yaml"
run "convert -o a new project's stack in a backend" st convert "$G" --envelope checkpoint -o "$B7/.pulumi/stacks/shop/dev.json"
check_rc 0; check_out_empty
run "it is a stack of it" st stacks --backend "$B7"
check_rc 0
check_out "organization/shop/dev                          13  v3  $B7/.pulumi/stacks/shop/dev.json"
check_absent "$B7/.pulumi/locks"

finish
