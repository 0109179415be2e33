#!/bin/sh
# statetool doctor: a backend seeded with one problem of each kind gives one report with the
# command that fixes each (exact text and --json), exit 1; a clean backend says "no problems
# found", exit 0; a legacy backend is named as such; the fixes named do fix.
. "$(dirname "$0")/lib.sh"
MAGIC=3ff53efef69f38d19e364655131bbb113e416d3bf64bfb819065fa12acb29250
B=$T/b
D=$B/.pulumi/stacks/shop
mkdir -p "$D"
printf 'version: 1\n' >"$B/.pulumi/meta.yaml"
# ck PROJECT STACK RESOURCES [PENDING]: a checkpoint of organization/PROJECT/STACK
ck() {
	printf '{"version":3,"checkpoint":{"stack":"organization/%s/%s","latest":{"manifest":{"time":"2024-01-02T03:04:05Z","magic":"%s","version":"v3.100.0"},"resources":[%s]%s}}}\n' \
		"$1" "$2" "$MAGIC" "$3" "${4:+,\"pending_operations\":[$4]}"
}
# root PROJECT STACK, bucket PROJECT STACK NAME ID: resources
root() { printf '{"urn":"urn:pulumi:%s::%s::pulumi:pulumi:Stack::%s-%s","custom":false,"type":"pulumi:pulumi:Stack"}' "$2" "$1" "$1" "$2"; }
bucket() { printf '{"urn":"urn:pulumi:%s::%s::aws:s3/bucket:Bucket::%s","custom":true,"id":"%s","type":"aws:s3/bucket:Bucket"}' "$2" "$1" "$3" "$4"; }

ck shop good "$(root shop good),$(bucket shop good b b-1)" >"$D/good.json"
run "a clean backend" st doctor --backend "$B"
check_rc 0; check_out "no problems found (1 stack checked)"; check_err_empty
run "a clean backend, --json" st doctor --backend "$B" --json
check_rc 0; check_out "{
    \"format_version\": 1,
    \"backend\": \"$B\",
    \"stacks\": 1,
    \"problems\": []
}"

# one of each
ck shop twin "$(root shop twin),$(bucket shop twin b2 b-1)" >"$D/twin.json"
ck shop pend "$(root shop pend)" '{"resource":{"urn":"urn:pulumi:pend::shop::aws:sqs/queue:Queue::q","custom":true,"type":"aws:sqs/queue:Queue"},"type":"creating"}' >"$D/pend.json"
ck shop broken "$(root shop broken),{\"urn\":\"urn:pulumi:broken::shop::aws:s3/bucket:Bucket::c\",\"custom\":true,\"id\":\"c-1\",\"type\":\"aws:s3/bucket:Bucket\",\"parent\":\"urn:pulumi:broken::shop::my:C::gone\"}" >"$D/broken.json"
printf '{"version":3,"deployment":{"manifest":{"time":"2024-01-02T03:04:05Z","magic":"%s","version":"v3.100.0"},"resources":[%s]}}\n' "$MAGIC" "$(root shop export)" >"$D/export.json"
printf '{' >"$D/junk.json"
ck shop old "$(root shop old)" >"$B/.pulumi/stacks/old.json"
ck shop good "$(root shop good)" | gzip -n >"$D/good.json.gz"
touch -d '2020-01-01' "$D/good.json.gz"
printf '{}' >"$D/good.json.statetool-journal"
# what interrupted writes leave: an old temporary of a write (reported); a write's temporary
# of a minute ago, and a backup's link with an old time made just now (a write may still be
# running: its link keeps the file's modification time, its change time is now), not reported
printf '{"version":3' >"$D/.good.json.tmp-0123456789abcdef"
touch -d '2024-05-01' "$D/.good.json.tmp-0123456789abcdef"
cp "$D/good.json" "$D/.statetool-bak-fedcba9876543210"
touch -d '2024-05-01' "$D/.statetool-bak-fedcba9876543210"
printf '{' >"$D/.pend.json.tmp-00000000000000aa"
touch -d '1 minute ago' "$D/.pend.json.tmp-00000000000000aa"
mkdir -p "$B/.pulumi/locks/organization/shop/good" "$B/.pulumi/locks/old"
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"2024-05-01T10:00:00Z"}' \
	>"$B/.pulumi/locks/organization/shop/good/6a1f0e2c-0000-4000-8000-000000000001.json"
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"2024-05-01T10:00:00Z"}' \
	>"$B/.pulumi/locks/old/6a1f0e2c-0000-4000-8000-000000000002.json"
st index update --backend "$B" >/dev/null 2>&1
ck shop twin "$(root shop twin),$(bucket shop twin b2 b-1),$(bucket shop twin b3 b-3)" >"$D/twin.json"
# what a look may not change (SQLite's own -shm/-wal files aside: a reader maps them)
snap() { (cd "$B" && find . -type f ! -name '*.sqlite-shm' ! -name '*.sqlite-wal' | sort | xargs sha256sum); }
snap >"$T/before"

S=$D
run "one of each" st doctor --backend "$B"
check_rc 1
check_out "shop/broken: integrity: 1 integrity error, the first: [integrity/parent-missing] child resource urn:pulumi:broken::shop::aws:s3/bucket:Bucket::c refers to missing parent urn:pulumi:broken::shop::my:C::gone
  at: $S/broken.json
  fix: statetool repair --backend $B --stack shop/broken
shop/export: place: [place/export-in-backend] a DIY backend holds checkpoints ({\"version\", \"checkpoint\"}) and this is a stack export ({\"version\", \"deployment\"}): Pulumi cannot load it (failed to load checkpoint: unexpected end of JSON input); write it as a checkpoint (statetool convert --envelope checkpoint)
  at: $S/export.json
  fix: statetool convert --backend $B --stack shop/export --envelope checkpoint
shop/junk: unreadable: unexpected end of JSON input
  at: $S/junk.json
  fix: statetool validate --backend $B --stack shop/junk
shop/pend: pending: 1 pending operation left by an interrupted update (a \`creating\` one may have made a resource the state does not record: record it by its ID, or clear it)
  at: $S/pend.json
  fix: statetool pending import --backend $B --stack shop/pend 'urn:pulumi:pend::shop::aws:sqs/queue:Queue::q' ID
shop/twin: duplicate-id: urn:pulumi:twin::shop::aws:s3/bucket:Bucket::b2 has ID 'b-1', as urn:pulumi:good::shop::aws:s3/bucket:Bucket::b in stack shop/good, each through a provider of the same configuration: both stacks manage one aws:s3/bucket:Bucket if those providers reach the same account or cluster; keep it in one of them
  at: $S/twin.json
  fix: statetool delete --backend $B --stack shop/twin 'urn:pulumi:twin::shop::aws:s3/bucket:Bucket::b2' (or --stack shop/good 'urn:pulumi:good::shop::aws:s3/bucket:Bucket::b': from the stack whose program no longer declares it)
old: legacy-lock: a lock of the legacy layout, which Pulumi no longer looks at (left by a tool killed while it held it)
  at: $B/.pulumi/locks/old/6a1f0e2c-0000-4000-8000-000000000002.json
  fix: statetool unlock --backend $B --stack old
shop/good: lock: a stale lock: $B/.pulumi/locks/organization/shop/good/6a1f0e2c-0000-4000-8000-000000000001.json: created by alice@ci-runner (pid 4242) at 2024-05-01T10:00:00Z [stale: older than 24 hours]
  at: $B/.pulumi/locks/organization/shop/good/6a1f0e2c-0000-4000-8000-000000000001.json
  fix: statetool unlock --backend $B --stack shop/good
old: legacy-stack: a stack file of the legacy layout, which Pulumi does not see in the project layout (Pulumi: Found legacy stack files in state store)
  at: $B/.pulumi/stacks/old.json
  fix: statetool upgrade --backend $B
shop/good: stray-variant: an older variant beside $S/good.json, the object Pulumi reads: never read, it is the stack's state of some time ago
  at: $S/good.json.gz
  fix: statetool stacks --backend $B (then delete $S/good.json.gz)
shop/good: journal: an interrupted statetool operation left its journal: any statetool command on the stack completes it
  at: $S/good.json.statetool-journal
  fix: statetool list --backend $B --stack shop/good
backend: temporary: a temporary file (12 bytes) an interrupted statetool write left, untouched for over an hour: nothing reads it
  at: $S/.good.json.tmp-0123456789abcdef
  fix: rm $S/.good.json.tmp-0123456789abcdef
backend: index-stale: the index is out of date: 1 stack changed since it was indexed: organization/shop/twin (changed)
  at: $B/.pulumi/statetool-index.sqlite
  fix: statetool index update --backend $B --db $B/.pulumi/statetool-index.sqlite
12 problems found (6 stacks checked)"
run "read-only" snap
check_same "$T/before" "$T/out"

# the fix named for the export in a backend: the stack rewritten as a checkpoint, in place
cp "$D/export.json" "$T/export.json"
run "convert in place needs the envelope" st convert --backend "$B" --stack shop/export
check_rc 1; check_err_has "[place/export-in-backend]"
check_same "$T/export.json" "$D/export.json"
run "the export's fix" st convert --backend "$B" --stack shop/export --envelope checkpoint
check_rc 0; check_out "converted shop/export"
check_same "$T/export.json" "$D/export.json.bak"
run "the export's fix: a checkpoint" st validate --backend "$B" --stack shop/export
check_rc 0
run "convert: IN and --stack without -o" st convert --backend "$B" --stack shop/export "$T/export.json"
check_rc 2; check_err_has "give IN or --stack, not both"
cp "$T/export.json" "$D/export.json"; rm "$D/export.json.bak"; rm -rf "$B/.pulumi/backups/shop/export"
run "one of each, --json" st doctor --backend "$B" --json
check_rc 1
check_out_has '"stacks": 6,'
check_out_has '"kind": "duplicate-id",'
check_out_has "\"fix\": \"statetool unlock --backend $B --stack shop/good\""
cp "$T/out" "$T/doctor.json"
run "--json: one finding per problem" grep -c '"kind":' "$T/doctor.json"
check_out 12

# the fixes named do fix what they name
st unlock --backend "$B" --stack shop/good >/dev/null
st unlock --backend "$B" --stack old >/dev/null 2>&1
st index update --backend "$B" >/dev/null 2>&1
run "after unlock and index update" st doctor --backend "$B"
check_rc 1
check_out_lacks() { if grep -qF -- "$1" "$T/out"; then bad "stdout has: $1"; else ok; fi; }
check_out_lacks ": lock: "; check_out_lacks "index-stale"
check_out_has "10 problems found (6 stacks checked)"

# a legacy backend, and a lock younger than --lock-age whose process may live
L=$T/legacy
mkdir -p "$L/.pulumi/stacks" "$L/.pulumi/locks/dev"
ck shop dev "$(root shop dev)" | sed 's/organization\/shop\/dev/dev/' >"$L/.pulumi/stacks/dev.json"
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"2024-05-01T10:00:00Z"}' \
	>"$L/.pulumi/locks/dev/6a1f0e2c-0000-4000-8000-000000000003.json"
run "legacy layout" st doctor --backend "$L" --lock-age 0
check_rc 1
check_out "backend: legacy-layout: the backend is in the legacy layout (no .pulumi/meta.yaml): Pulumi refuses it (Legacy DIY state is deprecated, please upgrade your state to project mode)
  fix: statetool upgrade --backend $L
1 problem found (1 stack checked)"
run "legacy layout, upgraded" st upgrade --backend "$L"
check_rc 1; check_err_has "the stack is currently locked by 1 lock(s)"
st unlock --backend "$L" --stack dev >/dev/null
st upgrade --backend "$L" >/dev/null
run "legacy layout, after the fix" st doctor --backend "$L"
check_rc 0; check_out "no problems found (1 stack checked)"

# progress on standard error when it is a terminal (script(1) gives the command one), the
# line cleared before the report; in a pipe, none
if command -v script > /dev/null 2>&1; then
	run "progress on a terminal" script -qec "'$STATETOOL' doctor --backend '$L'" /dev/null
	check_rc 0
	if printf '\rdoctor: 1/1 stacks\r\033[Kno problems found (1 stack checked)\r\n' | cmp -s - "$T/out"; then ok; else bad "not the progress, then the report"; fi
fi
run "no progress in a pipe" st doctor --backend "$L"
check_rc 0; check_err_empty

# a legacy stack that names no project (no resources): upgrade skips it, as Pulumi does; the
# fix gives it one (--project STACK=NAME), not the plain upgrade that skips it again
printf '{"version":3,"checkpoint":{"stack":"empty","latest":{"manifest":{"time":"2024-01-01T00:00:00Z","magic":"","version":""}}}}' >"$L/.pulumi/stacks/empty.json"
run "a legacy stack without a project" st doctor --backend "$L"
check_rc 1
check_out "empty: legacy-stack: a stack file of the legacy layout that names no project (it has no resources): Pulumi does not see it in the project layout, and upgrade skips it (no project name found) unless --project gives it one
  at: $L/.pulumi/stacks/empty.json
  fix: statetool upgrade --backend $L --project empty=NAME
1 problem found (1 stack checked)"
run "the fix it names, with a name" st upgrade --backend "$L" --project empty=shop
check_rc 0; check_out "Upgraded 1 stack(s) to project mode"
run "then no problem" st doctor --backend "$L"
check_rc 0; check_out "no problems found (2 stacks checked)"

run "usage: --lock-age" st doctor --backend "$L" --lock-age soon
check_rc 2; check_err_has "invalid --lock-age 'soon'"
run "usage: --lock-age nan" st doctor --backend "$L" --lock-age nan
check_rc 2; check_err_has "invalid --lock-age 'nan'"
# a lock's age: its timestamp with its UTC offset (Go's time.Now() writes the local one); an
# age under a second is one second, not the default
A=$T/age; mkdir -p "$A/.pulumi/stacks/shop" "$A/.pulumi/locks/organization/shop/good"
printf 'version: 1\n' >"$A/.pulumi/meta.yaml"
ck shop good "$(root shop good)" >"$A/.pulumi/stacks/shop/good.json"
LK=$A/.pulumi/locks/organization/shop/good/6a1f0e2c-0000-4000-8000-000000000009.json
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"%s"}' \
	"$(date -u -d '-10 hours' +%Y-%m-%dT%H:%M:%S.123456789-10:00)" >"$LK"
run "a lock of now, ten hours west" st doctor --backend "$A" --lock-age 1
check_rc 0; check_out "no problems found (1 stack checked)"
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"%s"}' \
	"$(date -u -d '-10 seconds' +%Y-%m-%dT%H:%M:%SZ)" >"$LK"
run "--lock-age under a second" st doctor --backend "$A" --lock-age 0.0002
check_rc 1; check_out_has "[stale: older than 1 second]"
run "--lock-age 1 hour" st doctor --backend "$A" --lock-age 1
check_rc 0
run "a missing backend" st doctor --backend "$T/nowhere"
check_rc 1; check_err_has "statetool: error: "
# states in the wrong place: a copy of another stack's object (its checkpoint and URNs name
# 'orig') goes back by `stack rename`, which fixes both; URNs of another stack under a
# checkpoint that names the place (what a --dest-stack could write) are reported too (the
# editing commands refuse that stack), fixed by an edit of the URNs
P2=$T/p2
mkdir -p "$P2/.pulumi/stacks/shop"
printf 'version: 1\n' >"$P2/.pulumi/meta.yaml"
ck shop orig "$(root shop orig),$(bucket shop orig b b-9)" >"$P2/.pulumi/stacks/shop/copy.json"
printf '{"version":3,"checkpoint":{"stack":"organization/shop/mixed","latest":{"manifest":{"time":"2024-01-02T03:04:05Z","magic":"%s","version":"v3.100.0"},"resources":[%s]}}}\n' \
	"$MAGIC" "$(root shop zzz),$(bucket shop zzz m m-1)" >"$P2/.pulumi/stacks/shop/mixed.json"
run "misplaced states" st doctor --backend "$P2"
check_rc 1
check_out "shop/copy: place: [place/stack-mismatch] the checkpoint names stack 'organization/shop/orig', but it is the state of stack 'organization/shop/copy' (where it lies in its backend; Pulumi goes by that, and writes 'organization/shop/copy' at its next save)
  at: $P2/.pulumi/stacks/shop/copy.json
  fix: statetool stack rename --backend $P2 --stack shop/copy shop/orig
shop/copy: place: [place/urn-mismatch] 2 resource URNs name stack 'orig' of project 'shop' (the first: urn:pulumi:orig::shop::pulumi:pulumi:Stack::shop-orig), but it is the state of stack 'copy' of project 'shop': Pulumi would see none of them in the program's stack
  at: $P2/.pulumi/stacks/shop/copy.json
  fix: statetool stack rename --backend $P2 --stack shop/copy shop/orig
shop/mixed: place: [place/urn-mismatch] 2 resource URNs name stack 'zzz' of project 'shop' (the first: urn:pulumi:zzz::shop::pulumi:pulumi:Stack::shop-zzz), but it is the state of stack 'mixed' of project 'shop': Pulumi would see none of them in the program's stack
  at: $P2/.pulumi/stacks/shop/mixed.json
  fix: statetool edit --backend $P2 --stack shop/mixed
3 problems found (2 stacks checked)"
run "the rename it names fixes the copy" st stack rename --backend "$P2" --stack shop/copy shop/orig
check_rc 0
rm "$P2/.pulumi/stacks/shop/mixed.json"
# a copy of a stack that exists cannot go back: the fix is to remove the copy (Pulumi's stack rm
# leaves the resources alone), as the rename would be refused
cp "$P2/.pulumi/stacks/shop/orig.json" "$P2/.pulumi/stacks/shop/dup.json"
run "a copy of an existing stack" st doctor --backend "$P2"
check_rc 1
check_out_has "  fix: pulumi stack rm --force --stack shop/dup (after pulumi login $P2): a copy of shop/orig, which exists"
check_out_lacks "stack rename"
rm "$P2/.pulumi/stacks/shop/dup.json"
run "then no problem" st doctor --backend "$P2"
check_rc 0; check_out "no problems found (1 stack checked)"
# a copy of an existing stack holds that stack's IDs: no duplicate-id (its fix would delete the
# resources from the real stack while the copy, which the place fix removes, kept them)
cp "$P2/.pulumi/stacks/shop/orig.json" "$P2/.pulumi/stacks/shop/aaa.json"
run "a copy sorting first is no holder of IDs" st doctor --backend "$P2"
check_rc 1
check_out_has "  fix: pulumi stack rm --force --stack shop/aaa (after pulumi login $P2): a copy of shop/orig, which exists"
check_out_lacks "duplicate-id"
rm "$P2/.pulumi/stacks/shop/aaa.json"

# one program, two clusters: the same namespace ID through providers configured differently
# is no duplicate; through providers of the same inputs (the version aside) it is
K=$T/k8s; mkdir -p "$K/.pulumi/stacks/app"; printf 'version: 1\n' >"$K/.pulumi/meta.yaml"
kube() { # STACK CONTEXT VERSION
	prov="urn:pulumi:$1::app::pulumi:providers:kubernetes::k8s"
	printf '{"urn":"%s","custom":true,"id":"p-%s","type":"pulumi:providers:kubernetes","inputs":{"context":"%s","version":"%s"}},{"urn":"urn:pulumi:%s::app::kubernetes:core/v1:Namespace::monitoring","custom":true,"id":"monitoring","type":"kubernetes:core/v1:Namespace","provider":"%s::p-%s"}' \
		"$prov" "$1" "$2" "$3" "$1" "$prov" "$1"
}
ck app dev "$(root app dev),$(kube dev dev-cluster 4.18.0)" >"$K/.pulumi/stacks/app/dev.json"
ck app prod "$(root app prod),$(kube prod prod-cluster 4.18.0)" >"$K/.pulumi/stacks/app/prod.json"
run "two clusters" st doctor --backend "$K"
check_rc 0; check_out "no problems found (2 stacks checked)"
ck app prod "$(root app prod),$(kube prod dev-cluster 4.19.1)" >"$K/.pulumi/stacks/app/prod.json"
run "one cluster" st doctor --backend "$K"
check_rc 1
check_out "app/prod: duplicate-id: urn:pulumi:prod::app::kubernetes:core/v1:Namespace::monitoring has ID 'monitoring', as urn:pulumi:dev::app::kubernetes:core/v1:Namespace::monitoring in stack app/dev, each through a provider of the same configuration: both stacks manage one kubernetes:core/v1:Namespace if those providers reach the same account or cluster; keep it in one of them
  at: $K/.pulumi/stacks/app/prod.json
  fix: statetool delete --backend $K --stack app/prod 'urn:pulumi:prod::app::kubernetes:core/v1:Namespace::monitoring' (or --stack app/dev 'urn:pulumi:dev::app::kubernetes:core/v1:Namespace::monitoring': from the stack whose program no longer declares it)
1 problem found (2 stacks checked)"
# a provider configured through a secret (a kubeconfig): its ciphertext differs in each stack,
# so secrets compare as equal (the finding says "may")
skube() { # STACK CIPHERTEXT
	prov="urn:pulumi:$1::app::pulumi:providers:kubernetes::k8s"
	printf '{"urn":"%s","custom":true,"id":"p-%s","type":"pulumi:providers:kubernetes","inputs":{"kubeconfig":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","ciphertext":"%s"}}},{"urn":"urn:pulumi:%s::app::kubernetes:core/v1:Namespace::monitoring","custom":true,"id":"monitoring","type":"kubernetes:core/v1:Namespace","provider":"%s::p-%s"}' \
		"$prov" "$1" "$2" "$1" "$prov" "$1"
}
ck app dev "$(root app dev),$(skube dev v1:AAAA)" >"$K/.pulumi/stacks/app/dev.json"
ck app prod "$(root app prod),$(skube prod v1:BBBB)" >"$K/.pulumi/stacks/app/prod.json"
run "providers through secrets" st doctor --backend "$K"
check_rc 1; check_out_has "app/prod: duplicate-id: urn:pulumi:prod::app::kubernetes:core/v1:Namespace::monitoring has ID 'monitoring'"

# --help says what the journal finding's fixes are: any command, or move --recover for a staged
# object alone; none for a move in progress
run "help: the journal's fixes" sh -c "'$STATETOOL' doctor --help | sed -n '/^  journal /,/^  rename /p' | sed '\$d'"
check_rc 0; check_out "  journal        what an interrupted statetool operation left: a journal (and a
                 staged object beside it), completed by any command on the stack; a
                 staged object alone, only by move --recover with the move's two
                 stacks (the fix names the other as OTHER_URL and OTHER_STACK); a
                 journal whose own lock is held (not stale): in progress, no fix"
# a stack named '..' (audit28 D6): Pulumi's ParseStackName accepts it and lists it; statetool
# does not open it, and says so instead of leaving it out
B6=$T/b6
mkdir -p "$B6/.pulumi/stacks/shop"
printf 'version: 1\n' >"$B6/.pulumi/meta.yaml"
ck shop good "$(root shop good)" >"$B6/.pulumi/stacks/shop/good.json"
ck shop .. "$(root shop ..)" >"$B6/.pulumi/stacks/shop/...json"
ck shop . "$(root shop .)" >"$B6/.pulumi/stacks/shop/..json"
run "stacks named . and .." st doctor --backend "$B6"
check_rc 1
check_out "shop/..: stack-name: a stack named '..', which Pulumi accepts and lists but statetool does not open (its lock and history folders would be '.' or '..'): rename it with Pulumi to use it with statetool
  at: $B6/.pulumi/stacks/shop/...json
  fix: pulumi stack rename --stack organization/shop/.. NEW_NAME
shop/.: stack-name: a stack named '.', which Pulumi accepts and lists but statetool does not open (its lock and history folders would be '.' or '..'): rename it with Pulumi to use it with statetool
  at: $B6/.pulumi/stacks/shop/..json
  fix: pulumi stack rename --stack organization/shop/. NEW_NAME
2 problems found (1 stack checked)"

# the legacy layout's references are bare stack names (Pulumi's legacy store refuses a '/')
mkdir -p "$T/b7/.pulumi/stacks"
ck shop . "$(root shop .)" >"$T/b7/.pulumi/stacks/..json"
run "a stack named . in the legacy layout" st doctor --backend "$T/b7"
check_rc 1
check_out_has "  fix: pulumi stack rename --stack . NEW_NAME"

finish
