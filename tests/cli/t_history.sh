#!/bin/sh
# Generations as Pulumi's DIY backend keeps them: every statetool change leaves the state before
# and after it in .pulumi/backups/PROJECT/STACK/STACK.UNIXNANO.json; `history` lists them with
# Pulumi's own backups, its update history (.history.json + .checkpoint.json) and the .bak;
# `restore --generation` (with --dry-run) shows the diff and puts one back, itself a change
# that leaves generations. On a file backend, and on S3 (radosgw) when the test server is up.
. "$(dirname "$0")/lib.sh"
: "${STORETOOL:?set STORETOOL to tests/storetool}"
D=$FIXTURES/diff
C='urn:pulumi:dev::proj::my:index:Comp::twin'
# history without its times: each UnixNano in a name is N, each time T
norm() { sed -e '/1[67]00000000000000000/!s/dev\.[0-9]\{19\}\.json/dev.N.json/g' -e 's/[0-9-]\{10\}T[0-9:]\{8\}\(\.[0-9]*\)\{0,1\}Z/T/g'; }
hist() { b=$1; shift; "$STATETOOL" history --backend "$b" --stack proj/dev "$@" | norm; }

run "help" st history --help
check_rc 0; check_out_has "usage: statetool history"

# ---- a file backend ----
B=$T/backend
mkdir -p "$B/.pulumi/stacks/proj"
printf 'version: 1\n' > "$B/.pulumi/meta.yaml"
st convert "$D/a.json" --envelope checkpoint --checkpoint-stack organization/proj/dev -o "$B/.pulumi/stacks/proj/dev.json" >/dev/null
cp "$B/.pulumi/stacks/proj/dev.json" "$T/v1.json"
run "only the current state" hist "$B"
check_rc 0
check_out 'ID       TIME                        SIZE  RESOURCES  KIND
current  T        3173          8  current'

run "a change" st protect --backend "$B" --stack proj/dev "$C"
check_rc 0
run "before and after it" hist "$B"
check_rc 0
check_out 'ID                            TIME                        SIZE  RESOURCES  KIND
current                       T        3188          8  current
dev.N.json  T        3188          8  backup
dev.N.json  T        3173          8  backup
bak                           T        3173          8  bak'
run "backups hold both states" sh -c "cat '$B'/.pulumi/backups/proj/dev/dev.*.json | md5sum; cat '$T/v1.json' '$B/.pulumi/stacks/proj/dev.json' | md5sum"
check_out "$(sed -n 2p "$T/out")
$(sed -n 2p "$T/out")"
run "the older one is the state before" sh -c "ls '$B'/.pulumi/backups/proj/dev/ | head -n 1"
check_same "$B/.pulumi/backups/proj/dev/$(cat "$T/out")" "$T/v1.json"

# Pulumi's own: a backup, and an update record with its checkpoint; other names are ignored
cp "$T/v1.json" "$B/.pulumi/backups/proj/dev/dev.1700000000000000000.json"
cp "$T/v1.json" "$B/.pulumi/backups/proj/dev/notes.txt"
mkdir -p "$B/.pulumi/history/proj/dev"
cp "$T/v1.json" "$B/.pulumi/history/proj/dev/dev-1700000000500000000.checkpoint.json"
printf '{"kind":"update","startTime":1700000000,"message":"first deploy","result":"succeeded","endTime":1700000001,"resourceChanges":{"create":8}}' > "$B/.pulumi/history/proj/dev/dev-1700000000500000000.history.json"
printf 'not a state' > "$B/.pulumi/backups/proj/dev/dev.1600000000000000000.json"
run "Pulumi's generations too" st history --backend "$B" --stack proj/dev
check_rc 0
check_out_has 'dev-1700000000500000000.checkpoint.json  2023-11-14T22:13:20Z        3173          8  update (update, succeeded: first deploy)'
check_out_has 'dev.1700000000000000000.json             2023-11-14T22:13:20Z        3173          8  backup'
check_out_has 'dev.1600000000000000000.json             2020-09-13T12:26:40Z          11          -  backup'
run "newest first, names ignored" sh -c "'$STATETOOL' history --backend '$B' --stack proj/dev | awk '{print \$1}'"
norm < "$T/out" > "$T/n"; mv "$T/n" "$T/out"
check_out 'ID
current
dev.N.json
dev.N.json
bak
dev-1700000000500000000.checkpoint.json
dev.1700000000000000000.json
dev.1600000000000000000.json'
run "json" sh -c "'$STATETOOL' history --json --backend '$B' --stack proj/dev"
check_rc 0
check_out_has '"stack": "organization/proj/dev"'
check_out_has '        {
            "id": "dev-1700000000500000000.checkpoint.json",
            "kind": "update",
            "key": ".pulumi/history/proj/dev/dev-1700000000500000000.checkpoint.json",
            "time": "2023-11-14T22:13:20.500000000Z",
            "size": 3173,
            "resources": 8,
            "update": {
                "kind": "update",'
check_out_has '            "id": "dev.1600000000000000000.json",
            "kind": "backup",
            "key": ".pulumi/backups/proj/dev/dev.1600000000000000000.json",
            "time": "2020-09-13T12:26:40.000000000Z",
            "size": 11,
            "resources": null'

# restore a generation: the diff first; --dry-run writes nothing
cp "$B/.pulumi/stacks/proj/dev.json" "$T/v2.json"
run "restore --dry-run" st restore --backend "$B" --stack proj/dev --generation dev-1700000000500000000.checkpoint.json --dry-run
check_rc 0
check_out "~ urn:pulumi:dev::proj::my:index:Comp::twin
    - /protect: true
0 added, 0 removed, 1 changed
dry run: nothing written"
check_same "$B/.pulumi/stacks/proj/dev.json" "$T/v2.json"
run "nothing new" sh -c "ls '$B/.pulumi/backups/proj/dev' | wc -l"
check_out 5
run "restore" st restore --backend "$B" --stack proj/dev --generation dev.1700000000000000000.json
check_rc 0
check_out "~ urn:pulumi:dev::proj::my:index:Comp::twin
    - /protect: true
0 added, 0 removed, 1 changed
restored $B/.pulumi/stacks/proj/dev.json from generation dev.1700000000000000000.json (the replaced version is now its .bak and a generation)"
check_same "$B/.pulumi/stacks/proj/dev.json" "$T/v1.json"
check_same "$B/.pulumi/stacks/proj/dev.json.bak" "$T/v2.json"
run "the restore is a generation" sh -c "ls '$B/.pulumi/backups/proj/dev' | wc -l"
check_out 6
run "and undone by another" st restore --backend "$B" --stack proj/dev --generation bak
check_rc 0; check_same "$B/.pulumi/stacks/proj/dev.json" "$T/v2.json"
run "a generation equal to the state" st restore --backend "$B" --stack proj/dev --generation current
check_rc 0; check_out "no differences
no change: $B/.pulumi/stacks/proj/dev.json is generation current already"
run "no such generation" st restore --backend "$B" --stack proj/dev --generation nope
check_rc 1; check_err "statetool: error: no generation 'nope' of stack 'organization/proj/dev' (\`statetool history\` lists them)"
# --json: the result as one document, with the comparison; a failure as one too
run "restore --json --dry-run" st restore --json --backend "$B" --stack proj/dev --generation dev.1700000000000000000.json --dry-run
check_rc 0; check_err_empty
check_out "{
    \"format_version\": 1,
    \"command\": \"restore\",
    \"target\": \"$B/.pulumi/stacks/proj/dev.json\",
    \"from\": \"dev.1700000000000000000.json\",
    \"dry_run\": true,
    \"written\": false,
    \"same\": false,
    \"added\": [],
    \"removed\": [],
    \"changed\": [
        {
            \"urn\": \"$C\",
            \"type\": \"my:index:Comp\",
            \"changes\": [
                {
                    \"path\": \"/protect\",
                    \"op\": \"remove\",
                    \"old\": true
                }
            ]
        }
    ],
    \"deployment\": []
}"
check_same "$B/.pulumi/stacks/proj/dev.json" "$T/v2.json"
run "restore --json" st restore --json --backend "$B" --stack proj/dev --generation dev.1700000000000000000.json
check_rc 0; check_err_empty
sed -n 1,7p "$T/out" > "$T/head"
check_file_is "$T/head" "{
    \"format_version\": 1,
    \"command\": \"restore\",
    \"target\": \"$B/.pulumi/stacks/proj/dev.json\",
    \"from\": \"dev.1700000000000000000.json\",
    \"dry_run\": false,
    \"written\": true,
"
check_same "$B/.pulumi/stacks/proj/dev.json" "$T/v1.json"
run "restore --json: the same" st restore --json --backend "$B" --stack proj/dev --generation current
check_rc 0
check_out "{
    \"format_version\": 1,
    \"command\": \"restore\",
    \"target\": \"$B/.pulumi/stacks/proj/dev.json\",
    \"from\": \"current\",
    \"dry_run\": false,
    \"written\": false,
    \"same\": true,
    \"added\": [],
    \"removed\": [],
    \"changed\": [],
    \"deployment\": []
}"
run "restore --json: undone" st restore --json --backend "$B" --stack proj/dev --generation bak
check_rc 0; check_same "$B/.pulumi/stacks/proj/dev.json" "$T/v2.json"
run "restore --json: no such generation" st restore --json --backend "$B" --stack proj/dev --generation nope
check_rc 1
check_out "{
    \"format_version\": 1,
    \"command\": \"restore\",
    \"ok\": false,
    \"exit_code\": 1,
    \"error\": {
        \"code\": \"not-found\",
        \"message\": \"no generation 'nope' of stack 'organization/proj/dev' (\`statetool history\` lists them)\"
    }
}"
check_err "statetool: error: no generation 'nope' of stack 'organization/proj/dev' (\`statetool history\` lists them)"
check_same "$B/.pulumi/stacks/proj/dev.json" "$T/v2.json"
run "a generation that is no state" st restore --backend "$B" --stack proj/dev --generation dev.1600000000000000000.json
check_rc 1; check_same "$B/.pulumi/stacks/proj/dev.json" "$T/v2.json"

# restore of the .bak keeps working, and leaves generations too
run "restore .bak" st restore --backend "$B" --stack proj/dev
check_rc 0; check_out_has "restored $B/.pulumi/stacks/proj/dev.json from"
check_same "$B/.pulumi/stacks/proj/dev.json" "$T/v1.json"
run "restore .bak is a generation" sh -c "cmp '$B/.pulumi/stacks/proj/dev.json' \"\$(ls -d '$B'/.pulumi/backups/proj/dev/dev.1[78]*.json | tail -n 1)\""
check_rc 0
run "restore --dry-run of a stack: its .bak" st restore --backend "$B" --stack proj/dev --dry-run
check_rc 0; check_out_has "    + /protect: true"; check_out_has "dry run: nothing written"

# after a change of compression the stack's .bak is the OLD name's, as Pulumi leaves it (and
# names it in its messages): restore, history and --generation bak find it
Z=$T/z
mkdir -p "$Z/.pulumi/stacks/proj"
printf 'version: 1\n' > "$Z/.pulumi/meta.yaml"
cp "$T/v1.json" "$Z/.pulumi/stacks/proj/dev.json"
run "a change to gzip" env PULUMI_DIY_BACKEND_GZIP=1 "$STATETOOL" protect --backend "$Z" --stack proj/dev "$C"
check_rc 0
cp "$Z/.pulumi/stacks/proj/dev.json.gz" "$T/v2.json.gz"
run "the old name's .bak" ls "$Z/.pulumi/stacks/proj"
check_out "dev.json.bak
dev.json.gz"
run "history: its bak" sh -c "'$STATETOOL' history --backend '$Z' --stack proj/dev --json | grep -A1 '\"id\": \"bak\"'"
check_rc 0; check_out '            "id": "bak",
            "kind": "bak",'
run "restore --generation bak --dry-run" st restore --backend "$Z" --stack proj/dev --generation bak --dry-run
check_rc 0; check_out_has "    - /protect: true"; check_out_has "dry run: nothing written"
run "restore --dry-run" st restore --backend "$Z" --stack proj/dev --dry-run
check_rc 0; check_out_has "    - /protect: true"; check_out_has "dry run: nothing written"
run "restore: the old name's .bak, as it was" st restore --backend "$Z" --stack proj/dev
check_rc 0; check_out_has "restored $Z/.pulumi/stacks/proj/dev.json from $Z/.pulumi/stacks/proj/dev.json.bak (the replaced version is now $Z/.pulumi/stacks/proj/dev.json.gz.bak)"
check_same "$Z/.pulumi/stacks/proj/dev.json" "$T/v1.json"
check_same "$Z/.pulumi/stacks/proj/dev.json.gz.bak" "$T/v2.json.gz"
run "the gzip object is gone" ls "$Z/.pulumi/stacks/proj"
check_out "dev.json
dev.json.bak
dev.json.gz.bak"
run "and back again" st restore --backend "$Z" --stack proj/dev
check_rc 0; check_out_has "restored $Z/.pulumi/stacks/proj/dev.json.gz from $Z/.pulumi/stacks/proj/dev.json.gz.bak (the replaced version is now $Z/.pulumi/stacks/proj/dev.json.bak)"
check_same "$Z/.pulumi/stacks/proj/dev.json.gz" "$T/v2.json.gz"
check_same "$Z/.pulumi/stacks/proj/dev.json.bak" "$T/v1.json"
run "gzip again" ls "$Z/.pulumi/stacks/proj"
check_out "dev.json.bak
dev.json.gz
dev.json.gz.bak"

# a generation kept compressed (Pulumi's backup while GZIP was on) is saved in the compression a
# save of the stack chooses: neither variable set keeps the stack's own; the message names the
# object written
G=$T/gz
mkdir -p "$G/.pulumi/stacks/proj" "$G/.pulumi/history/proj/dev"
printf 'version: 1\n' > "$G/.pulumi/meta.yaml"
cp "$T/v1.json" "$G/.pulumi/stacks/proj/dev.json"
cp "$T/v2.json.gz" "$G/.pulumi/history/proj/dev/dev-1700000003000000000.checkpoint.json.gz"
run "restore a .json.gz generation on a plain stack" env -u PULUMI_DIY_BACKEND_GZIP -u PULUMI_DIY_BACKEND_ZSTD "$STATETOOL" restore --backend "$G" --stack proj/dev --generation dev-1700000003000000000.checkpoint.json.gz
check_rc 0; check_out_has "restored $G/.pulumi/stacks/proj/dev.json from generation dev-1700000003000000000.checkpoint.json.gz (the replaced version is now its .bak and a generation)"
run "the stack stays plain" ls "$G/.pulumi/stacks/proj"
check_out "dev.json
dev.json.bak"
check_same "$G/.pulumi/stacks/proj/dev.json.bak" "$T/v1.json"
run "zstd asked: the object written is named" env -u PULUMI_DIY_BACKEND_GZIP PULUMI_DIY_BACKEND_ZSTD=1 "$STATETOOL" restore --json --backend "$G" --stack proj/dev --generation bak
check_rc 0; check_out_has "\"target\": \"$G/.pulumi/stacks/proj/dev.json.zst\","
run "now zstd" ls "$G/.pulumi/stacks/proj"
check_out "dev.json.bak
dev.json.zst"

# Pulumi's switch: no backups
n0=$(ls "$B/.pulumi/backups/proj/dev" | wc -l)
run "backups disabled" env PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS=true "$STATETOOL" unprotect --backend "$B" --stack proj/dev "$C"
check_rc 0
run "no new generation" sh -c "ls '$B/.pulumi/backups/proj/dev' | wc -l"
check_out "$n0"
run "disabled, alias" env PULUMI_DISABLE_CHECKPOINT_BACKUPS=1 "$STATETOOL" protect --backend "$B" --stack proj/dev "$C"
check_rc 0
run "still none" sh -c "ls '$B/.pulumi/backups/proj/dev' | wc -l"
check_out "$n0"
run "then the state it replaces is kept first" st unprotect --backend "$B" --stack proj/dev "$C"
run "two more" sh -c "ls '$B/.pulumi/backups/proj/dev' | wc -l"
check_out "$((n0 + 2))"

# a file has no generations
run "history of a file without a .bak" st history "$T/v1.json"
check_rc 1; check_err "statetool: error: '$T/v1.json' is not a stack of a DIY backend: a file has no generations (and it has no .bak)"
run "history of a missing file" st history "$T/missing.json"
check_rc 1; check_err "statetool: error: cannot open '$T/missing.json': No such file or directory"
cp "$T/v1.json" "$T/f.json"
st protect "$T/f.json" "$C" >/dev/null 2>&1
run "history of a file with a .bak" st history "$T/f.json"
check_rc 1; check_err "statetool: error: '$T/f.json' is not a stack of a DIY backend: a file has no generations (only $T/f.json.bak: \`statetool restore $T/f.json\` puts it back)"
run "restore --generation of a file" st restore "$T/f.json" --generation bak
check_rc 1; check_err_has "a file has only its .bak"
run "restore --dry-run of a file" st restore "$T/f.json" --dry-run
check_rc 0; check_out "~ urn:pulumi:dev::proj::my:index:Comp::twin
    - /protect: true
0 added, 0 removed, 1 changed
dry run: nothing written"
run "a stack's file named by its path" st history "$B/.pulumi/stacks/proj/dev.json"
check_rc 0; check_out_has "current "

# move: both stacks keep generations (the source before and after; the new destination after)
M=$T/m
mkdir -p "$M/.pulumi/stacks/test"
printf 'version: 1\n' > "$M/.pulumi/meta.yaml"
cp "$FIXTURES/move/children.json" "$M/.pulumi/stacks/test/sourceStack.json"
run "move" st move --source-backend "$M" --dest-backend "$M" --source organization/test/sourceStack --dest organization/test/destStack 'urn:pulumi:sourceStack::test::a:b:c::name'
check_rc 0
run "move: generations" sh -c "ls '$M/.pulumi/backups/test/sourceStack' | wc -l; ls '$M/.pulumi/backups/test/destStack' | wc -l"
check_out "2
1"
run "move: the source's newest is its state" sh -c "cmp '$M/.pulumi/stacks/test/sourceStack.json' \"\$(ls -d '$M'/.pulumi/backups/test/sourceStack/*.json | tail -n 1)\""
check_rc 0

# ---- S3 (radosgw) ----
envfile=${ST_SERVERS_DIR:-/tmp/statetool-servers-$(id -u)}/env
# shellcheck source=/dev/null
[ -r "$envfile" ] && . "$envfile"
if [ -n "${ST_TEST_S3_ENDPOINT:-}" ]; then
	export HOME=$T AWS_ACCESS_KEY_ID="$ST_TEST_S3_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$ST_TEST_S3_SECRET_KEY"
	unset AWS_SESSION_TOKEN AWS_PROFILE AWS_DEFAULT_PROFILE AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3
	export no_proxy=127.0.0.1,localhost
	EP=$ST_TEST_S3_ENDPOINT
	bucket=statetool-hist-$(date +%s)-$$
	R=${ST_TEST_S3_REGION:-us-east-1}
	S="s3://$bucket/h?endpoint=$EP&use_path_style=true&region=$R"
	run "create the bucket" curl -s -o /dev/null -w '%{http_code}' -X PUT -H "x-amz-content-sha256: $(printf '' | sha256sum | cut -d' ' -f1)" \
		--aws-sigv4 "aws:amz:$R:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$EP/$bucket"
	printf '\n' >> "$T/out"
	check_out 200
	printf 'version: 1\n' | "$STORETOOL" put "$S" .pulumi/meta.yaml
	"$STORETOOL" put "$S" .pulumi/stacks/proj/dev.json < "$T/v1.json"
	run "s3: a change" st protect --backend "$S" --stack proj/dev "$C"
	check_rc 0
	# (the .bak of an object store is a copy, timed when it was made: its rank may differ)
	run "s3: history" sh -c "'$STATETOOL' history --backend '$S' --stack proj/dev | sort"
	check_rc 0
	norm < "$T/out" > "$T/n"; mv "$T/n" "$T/out"
	check_out 'ID                            TIME                        SIZE  RESOURCES  KIND
bak                           T        3173          8  bak
current                       T        3188          8  current
dev.N.json  T        3173          8  backup
dev.N.json  T        3188          8  backup'
	run "s3: the keys" sh -c "'$STORETOOL' ls '$S' .pulumi/backups/ | sed 's/[0-9]\\{19\\}/N/'"
	check_out '.pulumi/backups/proj/dev/dev.N.json
.pulumi/backups/proj/dev/dev.N.json'
	G=$("$STATETOOL" history --backend "$S" --stack proj/dev | awk '$3 == 3173 && $5 == "backup" {print $1}')
	run "s3: restore --generation" st restore --backend "$S" --stack proj/dev --generation "$G"
	check_rc 0; check_out_has "    - /protect: true"
	run "s3: restored" sh -c "'$STORETOOL' cat '$S' .pulumi/stacks/proj/dev.json | cmp - '$T/v1.json'"
	check_rc 0
	run "s3: diff of two generations" st diff "$S#proj/dev@bak" "$S#proj/dev"
	check_rc 1; check_out_has "    - /protect: true"
	# the .bak of a change to zstd (the old name's) is restored; messages name the object,
	# then the URL's query
	Q="?endpoint=$EP&use_path_style=true&region=$R"
	Z3="s3://$bucket/z$Q"
	printf 'version: 1\n' | "$STORETOOL" put "$Z3" .pulumi/meta.yaml
	"$STORETOOL" put "$Z3" .pulumi/stacks/proj/dev.json < "$T/v1.json"
	run "s3: a change to zstd" env PULUMI_DIY_BACKEND_ZSTD=1 "$STATETOOL" protect --backend "$Z3" --stack proj/dev "$C"
	check_rc 0
	run "s3: restore the old name's .bak" st restore --backend "$Z3" --stack proj/dev
	check_rc 0; check_out_has "restored s3://$bucket/z/.pulumi/stacks/proj/dev.json$Q from s3://$bucket/z/.pulumi/stacks/proj/dev.json.bak$Q (the replaced version is now s3://$bucket/z/.pulumi/stacks/proj/dev.json.zst.bak$Q)"
	run "s3: restored" sh -c "'$STORETOOL' cat '$Z3' .pulumi/stacks/proj/dev.json | cmp - '$T/v1.json'"
	check_rc 0
	run "s3: the zstd object is gone" "$STORETOOL" ls "$Z3" .pulumi/stacks/
	check_out ".pulumi/stacks/proj/dev.json
.pulumi/stacks/proj/dev.json.bak
.pulumi/stacks/proj/dev.json.zst.bak"
	run "s3: no backup" st restore --backend "$S" --stack proj/nob
	check_rc 1; check_err "statetool: error: no backup 's3://$bucket/h/.pulumi/stacks/proj/nob.json.bak$Q' to restore"
	run "s3: no backup, --dry-run" st restore --backend "$S" --stack proj/nob --dry-run
	check_rc 1; check_err "statetool: error: no backup 's3://$bucket/h/.pulumi/stacks/proj/nob.json.bak$Q' to restore"
else
	skip_or_fail "s3 test server" "the S3 part: no S3 test server in $envfile"
fi
# a generation that is another stack's state (a copied backups folder, a hand-placed file) is
# refused as every change of a misplaced state is, --dry-run too: nothing written
G2=$T/g2
mkdir -p "$G2/.pulumi/stacks/proj" "$G2/.pulumi/backups/proj/dev"
printf 'version: 1\n' > "$G2/.pulumi/meta.yaml"
cp "$FIXTURES/pulumi/valid-checkpoint-v3-diy.json" "$G2/.pulumi/stacks/proj/dev.json"
printf '{"version":3,"checkpoint":{"stack":"organization/proj/other","latest":{"manifest":{"time":"2024-01-01T00:00:00Z","magic":"","version":""},"resources":[{"urn":"urn:pulumi:other::proj::pulumi:pulumi:Stack::proj-other","custom":false,"type":"pulumi:pulumi:Stack"}]}}}' > "$G2/.pulumi/backups/proj/dev/dev.1700000007000000000.json"
for dry in "" --dry-run; do
	run "restore another stack's generation $dry" st restore $dry --backend "$G2" --stack proj/dev --generation dev.1700000007000000000.json
	check_rc 1; check_out_empty
	check_err_has "statetool: error: refusing to change 'generation dev.1700000007000000000.json of organization/proj/dev': it is not where it claims to be"
	check_err_has "[place/urn-mismatch] 1 resource URN names stack 'other' of project 'proj'"
	check_same "$FIXTURES/pulumi/valid-checkpoint-v3-diy.json" "$G2/.pulumi/stacks/proj/dev.json"
	check_absent "$G2/.pulumi/stacks/proj/dev.json.bak"
done
# ... and a .bak that is another stack's state (a hand copy, a .bak an old rename left), for the
# restore of the .bak as for --generation (review25 L4): refused, nothing written, no generation
printf '{"version":3,"checkpoint":{"stack":"organization/proj/other","latest":{"manifest":{"time":"2024-01-01T00:00:00Z","magic":"","version":""},"resources":[{"urn":"urn:pulumi:other::proj::pulumi:pulumi:Stack::proj-other","custom":false,"type":"pulumi:pulumi:Stack"}]}}}' > "$G2/.pulumi/stacks/proj/dev.json.bak"
cp "$G2/.pulumi/stacks/proj/dev.json.bak" "$T/other.bak"
n0=$(ls "$G2/.pulumi/backups/proj/dev" | wc -l)
for dry in "" --dry-run; do
	run "restore another stack's .bak $dry" st restore $dry --backend "$G2" --stack proj/dev
	check_rc 1; check_out_empty
	check_err_has "statetool: error: refusing to change 'backup $G2/.pulumi/stacks/proj/dev.json.bak': it is not where it claims to be"
	check_err_has "[place/urn-mismatch] 1 resource URN names stack 'other' of project 'proj'"
	check_same "$FIXTURES/pulumi/valid-checkpoint-v3-diy.json" "$G2/.pulumi/stacks/proj/dev.json"
	check_same "$T/other.bak" "$G2/.pulumi/stacks/proj/dev.json.bak"
	run "no generation kept $dry" sh -c "ls '$G2/.pulumi/backups/proj/dev' | wc -l"
	check_out "$n0"
done
# a file's .bak whose URNs name another stack than its checkpoint: refused likewise
cp "$T/other.bak" "$T/mis.json"
sed 's|organization/proj/other|organization/proj/dev|' "$T/other.bak" > "$T/mis.json.bak"
cp "$T/mis.json.bak" "$T/mis.before"
run "restore a file's misplaced .bak" st restore "$T/mis.json"
check_rc 1; check_out_empty
check_err_has "statetool: error: refusing to change 'backup $T/mis.json.bak': it is not where it claims to be"
check_err_has "[place/urn-mismatch] 1 resource URN names stack 'other' of project 'proj'"
check_same "$T/mis.before" "$T/mis.json.bak"; check_same "$T/other.bak" "$T/mis.json"
finish
