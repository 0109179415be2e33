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

# the backend's files (each statetool generation's time, each lock's UUID as a placeholder)
layout() { (cd "$B" && find .pulumi -type f | sed 's/prod\.17[1-9][0-9]\{16\}\.json/prod.<time>.json/; s/[0-9a-f-]\{36\}\.json$/<uuid>.json/' | sort); }
WANT_LAYOUT=".pulumi/backups/shop/prod/prod.1700000000000000000.json
.pulumi/backups/shop/prod/prod.<time>.json
.pulumi/history/shop/prod/prod-1700000000000000000.checkpoint.json
.pulumi/history/shop/prod/prod-1700000000000000000.history.json
.pulumi/meta.yaml
.pulumi/stacks/shop/dev.json.bak
.pulumi/stacks/shop/prod.json
.pulumi/stacks/shop/prod.pulumi-tags"
run "rename" st stack rename --backend "$B" --stack shop/dev prod
check_rc 0; check_out "Renamed organization/shop/dev to organization/shop/prod"
check_err "statetool: note: rename the project's Pulumi.dev.yaml to Pulumi.prod.yaml, as pulumi stack rename does (statetool changes the backend only; the file holds the stack's config and encryptionsalt)"
run "the new object" cat "$D/prod.json"
check_same "$T/want-prod.json" "$T/out"
run "another stack's and another project's URNs left alone" grep -c 'urn:pulumi:dev::lib::aws:s3/bucket:Bucket::x' "$D/prod.json"
check_out 1
run "the old object is its .bak" cat "$D/dev.json.bak"
check_same "$T/dev.json" "$T/out"
run "the layout" layout
check_out "$WANT_LAYOUT"
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

# A kill at each step (1: the new object written; 2: the history, backups and tags moved; 3:
# the old object gone, the markers left). The rename locks both stacks (Pulumi's locks) and
# leaves a marker naming both stacks and both locks beside each; the next statetool command on
# either stack ends it, as if never killed: the rename's own locks and the markers removed.
COMPLETED="statetool: note: completed the interrupted stack rename of organization/shop/dev to organization/shop/prod"
kill_at() {
	rm -rf "$B"; cp -r "$T/b0" "$B"
	run "killed at stack-rename:$1" env STATETOOL_CRASH_AT=stack-rename:$1 "$STATETOOL" stack rename --backend "$B" --stack shop/dev prod
	check_rc 137
}
for step in 1 2 3; do
	kill_at $step
	run "after stack-rename:$step, both stacks locked and marked" sh -c "cd '$B' && find .pulumi/locks .pulumi/stacks -name '*.json' -path '*locks*' -o -name '*.statetool-rename' | sed 's/[0-9a-f-]\{36\}\.json$/<uuid>.json/' | sort"
	check_out ".pulumi/locks/organization/shop/dev/<uuid>.json
.pulumi/locks/organization/shop/prod/<uuid>.json
.pulumi/stacks/shop/dev.json.statetool-rename
.pulumi/stacks/shop/prod.json.statetool-rename"
	run "after stack-rename:$step, a command on the new stack completes it" st list --backend "$B" --stack shop/prod
	check_rc 0; check_err_has "$COMPLETED"
	check_err_has "statetool: note: removed the interrupted stack rename's lock $B/.pulumi/locks/organization/shop/prod/"
	run "after stack-rename:$step, as if never killed" cat "$D/prod.json"
	check_same "$T/want-prod.json" "$T/out"
	run "after stack-rename:$step, the layout (no lock, no marker)" layout
	check_out "$WANT_LAYOUT"
done

# the same command again completes it (and says Renamed, as the uninterrupted one)
kill_at 2
run "after stack-rename:2, the rerun" st stack rename --backend "$B" --stack shop/dev prod
check_rc 0; check_out "Renamed organization/shop/dev to organization/shop/prod"
check_err_has "$COMPLETED"
run "after stack-rename:2 and the rerun, the layout" layout
check_out "$WANT_LAYOUT"

# a writing command on the new name (it locks the stack: the rename's lock is no one else's)
kill_at 1
run "after stack-rename:1, protect on the new name" st protect --backend "$B" --stack shop/prod b
check_rc 0; check_err_has "$COMPLETED"; check_out_has "1 resource protected"
run "protect on the new name: protected there" st show --json --backend "$B" --stack shop/prod b
check_out_has '"protect": true'
run "protect on the new name: the layout" layout
check_out ".pulumi/backups/shop/prod/prod.1700000000000000000.json
.pulumi/backups/shop/prod/prod.<time>.json
.pulumi/backups/shop/prod/prod.<time>.json
.pulumi/history/shop/prod/prod-1700000000000000000.checkpoint.json
.pulumi/history/shop/prod/prod-1700000000000000000.history.json
.pulumi/meta.yaml
.pulumi/stacks/shop/dev.json.bak
.pulumi/stacks/shop/prod.json
.pulumi/stacks/shop/prod.json.bak
.pulumi/stacks/shop/prod.pulumi-tags"
# on the old name: completed, then the old stack is gone
kill_at 2
run "after stack-rename:2, protect on the old name" st protect --backend "$B" --stack shop/dev b
check_rc 1; check_err_has "$COMPLETED"
check_err_has "statetool: error: stack 'organization/shop/dev' has no state in backend"
run "protect on the old name: renamed, nothing protected" layout
check_out "$WANT_LAYOUT"
run "protect on the old name: the new object as the rename made it" cat "$D/prod.json"
check_same "$T/want-prod.json" "$T/out"

# unlock (audit27 C10): the rename's locks keep Pulumi off both stacks until it is ended, so
# unlock ends it first (as any command does) and then has no lock left to remove; --force
# removes the lock and leaves the rename as it is
for step in 1 2; do
	kill_at $step
	run "after stack-rename:$step, unlock of the old name completes the rename" st unlock --backend "$B" --stack shop/dev
	check_rc 0; check_out "removed 0 locks of shop/dev"; check_err_has "$COMPLETED"
	run "after stack-rename:$step and unlock, as if never killed" cat "$D/prod.json"
	check_same "$T/want-prod.json" "$T/out"
	run "after stack-rename:$step and unlock, the layout (no lock, no marker)" layout
	check_out "$WANT_LAYOUT"
done
kill_at 2
run "after stack-rename:2, unlock of the new name completes the rename" st unlock --backend "$B" --stack shop/prod
check_rc 0; check_out "removed 0 locks of shop/prod"; check_err_has "$COMPLETED"
run "after stack-rename:2 and unlock of the new name, the layout" layout
check_out "$WANT_LAYOUT"
kill_at 2
run "after stack-rename:2, unlock --force removes the lock only" st unlock --force --backend "$B" --stack shop/dev
check_rc 0; check_out "removed 1 lock of shop/dev"; check_err_empty
run "unlock --force: the rename still pending, the new stack's lock kept" sh -c "cd '$B' && find .pulumi/locks .pulumi/stacks -name '*.json' -path '*locks*' -o -name '*.statetool-rename' | sed 's/[0-9a-f-]\{36\}\.json$/<uuid>.json/' | sort"
check_out ".pulumi/locks/organization/shop/prod/<uuid>.json
.pulumi/stacks/shop/dev.json.statetool-rename
.pulumi/stacks/shop/prod.json.statetool-rename"

# doctor: one problem, the rename, with the command that finishes it (no duplicate-id per
# resource of the two stacks, no stale lock: the rename's own)
kill_at 2
run "doctor after stack-rename:2" st doctor --backend "$B"
check_rc 1; check_out "shop/dev: rename: an interrupted stack rename of organization/shop/dev to organization/shop/prod: any statetool command on either stack, or the same rename again, finishes it (until then both stacks hold its resources)
  at: $D/dev.json.statetool-rename
  fix: statetool stack rename --backend $B --stack shop/dev prod
1 problem found (2 stacks checked)"

# someone else's lock on either stack: refused, the rename named, not a byte changed
kill_at 2
mkdir -p "$B/.pulumi/locks/organization/shop/prod"
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"2024-05-01T10:00:00Z"}' \
	>"$B/.pulumi/locks/organization/shop/prod/6a1f0e2c-0000-4000-8000-000000000001.json"
(cd "$B" && find . -type f | sort | xargs sha256sum) >"$T/before"
for name in prod dev; do
	run "another's lock: a command on shop/$name is refused" st list --backend "$B" --stack shop/$name
	check_rc 1; check_err_has "statetool: error: the stack is currently locked by 1 lock(s)."
	check_err_has "created by alice@ci-runner (pid 4242) at 2024-05-01T10:00:00Z"
	check_err_has "an interrupted stack rename of organization/shop/dev to organization/shop/prod is pending: once the lock is gone, \`statetool stack rename --backend $B --stack shop/dev prod\` (or any statetool command on either stack) completes it"
	run "another's lock, shop/$name: not a byte changed" sh -c "cd '$B' && find . -type f | sort | xargs sha256sum"
	check_same "$T/before" "$T/out"
done
rm "$B/.pulumi/locks/organization/shop/prod/6a1f0e2c-0000-4000-8000-000000000001.json"
run "that lock gone: the rerun completes it" st stack rename --backend "$B" --stack shop/dev prod
check_rc 0; check_err_has "$COMPLETED"
run "that lock gone: the layout" layout
check_out "$WANT_LAYOUT"

# the new stack written since (after an unlock, by Pulumi): the rerun says which holds what
# and what to do, and changes nothing; --keep new or --keep old completes it
kill_at 2
st unlock --force --backend "$B" --stack shop/prod >/dev/null
sed 's/"id":"b-1"/"id":"b-2"/' "$D/prod.json" >"$T/prod-written.json"
cp "$T/prod-written.json" "$D/prod.json"
(cd "$B" && find . -type f | sort | xargs sha256sum) >"$T/before"
run "the new stack written since: the rerun" st stack rename --backend "$B" --stack shop/dev prod
check_rc 1
check_err_has "statetool: error: an interrupted stack rename of organization/shop/dev to organization/shop/prod is pending, but organization/shop/prod no longer holds what the rename made of organization/shop/dev: one of them was written since (organization/shop/dev: 5 resources, last written "
check_err_has "nothing was changed. To keep organization/shop/prod as it is, \`statetool stack rename --backend $B --stack shop/dev prod --keep new\` finishes the rename (organization/shop/dev's state kept as its .bak); to keep organization/shop/dev's state, \`statetool stack rename --backend $B --stack shop/dev prod --keep old\` writes it, renamed, over organization/shop/prod"
check_err_lacks "already exists"
run "the new stack written since: a command on it is refused too" st list --backend "$B" --stack shop/prod
check_rc 1; check_err_has "is pending, but organization/shop/prod no longer holds what the rename made of"
run "the new stack written since: not a byte changed" sh -c "cd '$B' && find . -type f | sort | xargs sha256sum"
check_same "$T/before" "$T/out"
cp -r "$B" "$T/b-written"
run "--keep new" st stack rename --backend "$B" --stack shop/dev prod --keep new
check_rc 0; check_out "Renamed organization/shop/dev to organization/shop/prod"
check_err_has "$COMPLETED (the new stack kept as it was, the old one's state as its .bak)"
run "--keep new: the new stack as it was written" cat "$D/prod.json"
check_same "$T/prod-written.json" "$T/out"
run "--keep new: the old state is the old object's .bak" cat "$D/dev.json.bak"
check_same "$T/dev.json" "$T/out"
run "--keep new: the layout" layout
check_out "$WANT_LAYOUT"
rm -rf "$B"; cp -r "$T/b-written" "$B"
run "--keep old" st stack rename --backend "$B" --stack shop/dev prod --keep old
check_rc 0; check_err_has "$COMPLETED (the old stack's state written over the new one's, kept as its .bak)"
run "--keep old: the old state, renamed" cat "$D/prod.json"
check_same "$T/want-prod.json" "$T/out"
run "--keep old: the new stack's state is its .bak" cat "$D/prod.json.bak"
check_same "$T/prod-written.json" "$T/out"
run "--keep: a bad value" st stack rename --backend "$B" --stack shop/prod dev --keep both
check_rc 2; check_err_has "--keep takes old or new"

# killed before the new object is written (simulated: it is not there): the rename is undone
kill_at 1
rm "$D/prod.json"
run "the new stack never written: a command on the old one undoes the rename" st list --backend "$B" --stack shop/dev
check_rc 0; check_err_has "statetool: note: undid the interrupted stack rename of organization/shop/dev to organization/shop/prod, which had not written the new stack yet (nothing else had changed)"
run "undone: the old stack as it was" cat "$D/dev.json"
check_same "$T/dev.json" "$T/out"
run "undone: no marker, no lock" sh -c "cd '$B' && find .pulumi -name '*.statetool-rename' -o -path '*locks*' -type f"
check_out_empty

# ... and a command on the NEW name (whose object is missing, its marker there) undoes it too,
# then says the stack has no state (audit27 C6: "has no state file", the rename left pending);
# doctor meanwhile says only the old stack holds the resources
kill_at 1
rm "$D/prod.json"
run "the new stack never written: doctor" st doctor --backend "$B"
check_rc 1; check_out_has "shop/dev: rename: an interrupted stack rename of organization/shop/dev to organization/shop/prod: any statetool command on either stack, or the same rename again, finishes it (the new stack is not written yet: a command on either stack undoes the rename, the same rename again does it)"
run "the new stack never written: a command on the new one undoes the rename" st list --backend "$B" --stack shop/prod
check_rc 1; check_err_has "statetool: note: undid the interrupted stack rename of organization/shop/dev to organization/shop/prod, which had not written the new stack yet (nothing else had changed)"
check_err_has "statetool: note: removed the interrupted stack rename's lock $B/.pulumi/locks/organization/shop/prod/"
check_err_has "statetool: error: stack 'shop/prod' has no state file in backend '$B'"
run "undone from the new name: the old stack as it was" cat "$D/dev.json"
check_same "$T/dev.json" "$T/out"
run "undone from the new name: no marker, no lock" sh -c "cd '$B' && find .pulumi -name '*.statetool-rename' -o -path '*locks*' -type f"
check_out_empty

# a marker of an older statetool (the old name alone, beside the new stack, no lock named):
# every lock is another's until unlocked; then any command completes the rename
kill_at 2
rm "$D/dev.json.statetool-rename"
printf 'organization/shop/dev' >"$D/prod.json.statetool-rename"
run "an older marker: the locks are another's" st list --backend "$B" --stack shop/prod
check_rc 1; check_err_has "[stale: that process is no longer running]"
check_err_has "an interrupted stack rename of organization/shop/dev to organization/shop/prod is pending"
st unlock --backend "$B" --stack shop/dev >/dev/null 2>&1
run "an older marker, unlocked: completed" st unlock --backend "$B" --stack shop/prod
check_rc 0; check_out "removed 1 lock of shop/prod"; check_err_has "$COMPLETED"
run "an older marker: the layout" layout
check_out "$WANT_LAYOUT"

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
# a save that fails after the new object is written (its generation cannot be made) keeps the
# markers: the next command on either name finishes the rename (two live stacks otherwise)
R=$T/r2
mkdir -p "$R/.pulumi/stacks/shop"; printf 'version: 1\n' >"$R/.pulumi/meta.yaml"
cp "$T/dev.json" "$R/.pulumi/stacks/shop/dev.json"
echo x >"$R/.pulumi/backups"
run "a rename whose generation fails" st stack rename --backend "$R" -s shop/dev dev2
check_rc 1; check_err_has "cannot create directory '$R/.pulumi/backups/shop': Not a directory"
for f in dev.json dev.json.statetool-rename dev2.json dev2.json.statetool-rename; do
	current="a rename whose generation fails: $f"
	if [ -e "$R/.pulumi/stacks/shop/$f" ]; then ok; else bad "$f is missing"; fi
done
rm "$R/.pulumi/backups"
run "the next command finishes it" st list --backend "$R" -s shop/dev2
check_rc 0; check_err_has "note: completed the interrupted stack rename of organization/shop/dev to organization/shop/dev2"
run "one stack left" sh -c "cd '$R/.pulumi/stacks/shop' && ls"
check_out "dev.json.bak
dev2.json"
# the generations a rename carried over (audit27 C11): their checkpoint and URNs name the old
# stack; restore --generation and diff take them as the rename makes them, with a note
H=$T/h
mkdir -p "$H/.pulumi/stacks/shop" "$H/.pulumi/history/shop/dev"; printf 'version: 1\n' >"$H/.pulumi/meta.yaml"
cp "$T/dev.json" "$H/.pulumi/stacks/shop/dev.json"
st protect --backend "$H" -s shop/dev b >/dev/null 2>&1
cp "$T/dev.json" "$H/.pulumi/history/shop/dev/dev-1700000000000000000.checkpoint.json"
st stack rename --backend "$H" -s shop/dev prod >/dev/null 2>&1
OLD=$(cd "$H/.pulumi/backups/shop/prod" && ls | sort | head -n 1)
NOTE="statetool: note: generation $OLD is of organization/shop/dev, a former name of organization/shop/prod (a stack rename carried it over; that stack is gone, its .bak left)"
run "diff against a carried-over generation" st diff "$H#shop/prod" "$H#shop/prod@$OLD"
check_rc 1; check_out "~ urn:pulumi:prod::shop::aws:s3/bucket:Bucket::b
    - /protect: true
0 added, 0 removed, 1 changed"
check_err "$NOTE: compared as the rename makes it (18 URNs rewritten)"
run "restore of a carried-over generation" st restore --backend "$H" -s shop/prod --generation "$OLD"
check_rc 0; check_out_has "restored $H/.pulumi/stacks/shop/prod.json from generation $OLD"
check_err "$NOTE: restored as the rename makes it (18 URNs rewritten)"
run "restored: the old state as the rename makes it" cat "$H/.pulumi/stacks/shop/prod.json"
check_same "$T/want-prod.json" "$T/out"
run "restored: valid" st validate --backend "$H" --stack shop/prod
check_rc 0; check_out_has "shop/prod: valid, 0 errors"
run "a carried-over history checkpoint: the same state" st restore --backend "$H" -s shop/prod --generation prod-1700000000000000000.checkpoint.json
check_rc 0; check_out_has "no change: $H/.pulumi/stacks/shop/prod.json is generation prod-1700000000000000000.checkpoint.json already"
check_err_has "statetool: note: generation prod-1700000000000000000.checkpoint.json is of organization/shop/dev, a former name"
# with the old stack's .bak gone nothing tells it was this stack's: refused as any other
# stack's generation is
rm "$H/.pulumi/stacks/shop/dev.json.bak"
run "no .bak of the old name: refused" st restore --backend "$H" -s shop/prod --generation "$OLD"
check_rc 1; check_err_has "statetool: error: refusing to change 'generation $OLD of organization/shop/prod': it is not where it claims to be"
check_err_lacks "note:"
# Pulumi's organization/NAME (audit28 D18): as NEW_NAME, the same project (Pulumi's
# ParseReference: ORGANIZATION/STACK in the current project), never a project named
# "organization"; as --stack, a project statetool does not know: refused, nothing changed
cp -r "$T/b0" "$T/b9"
run "organization/NAME: the same project" st stack rename --backend "$T/b9" --stack shop/dev organization/prod2
check_rc 0; check_out "Renamed organization/shop/dev to organization/shop/prod2"
run "the object in project shop" test -f "$T/b9/.pulumi/stacks/shop/prod2.json"; check_rc 0
check_absent "$T/b9/.pulumi/stacks/organization"
run "-s organization/NAME names no project" st list --backend "$T/b9" -s organization/prod2
check_rc 2
check_err "statetool: error: 'organization/prod2' names no project: Pulumi reads it as the stack 'prod2' of the project it runs in; name the project (organization/PROJECT/prod2 or PROJECT/prod2)"

finish
