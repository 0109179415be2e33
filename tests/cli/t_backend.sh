#!/bin/sh
# DIY backends: stacks, --backend/--stack on every command, locks, crashes.
. "$(dirname "$0")/lib.sh"
P=$FIXTURES/pulumi
B=$T/backend
mkdir -p "$B/.pulumi/stacks/proj" "$B/.pulumi/stacks/other"
printf 'version: 1\n' > "$B/.pulumi/meta.yaml"
cp "$P/valid-checkpoint-v3-diy.json" "$B/.pulumi/stacks/proj/dev.json"
gzip -c "$P/valid-checkpoint-v3-diy.json" > "$B/.pulumi/stacks/proj/prod.json.gz"
printf '{"version":3,"checkpoint":{"stack":"organization/other/empty"}}' > "$B/.pulumi/stacks/other/empty.json"

run "stacks" st stacks --backend "file://$B"
check_rc 0
check_out "organization/other/empty                        0  v3  $B/.pulumi/stacks/other/empty.json
organization/proj/dev                           4  v3  $B/.pulumi/stacks/proj/dev.json
organization/proj/prod                          4  v3  $B/.pulumi/stacks/proj/prod.json.gz"
run "stacks env" env PULUMI_BACKEND_URL="$B" "$STATETOOL" stacks --json
check_rc 0; check_out_has '"layout": "project"'; check_out_has '"resources": 4'
run "list stack" st list --backend "$B" --stack proj/dev
check_rc 0; check_out_has "my:index:Comp::c"
run "list env stack" env PULUMI_BACKEND_URL="file://$B" "$STATETOOL" list --stack organization/proj/prod
check_rc 0; check_out_has "my:index:Comp::c"
# file:// URLs as Pulumi reads them: the path %-decoded, the query (gocloud fileblob's
# parameters) split off and checked
mkdir -p "$T/sp ace"
cp -R "$B/.pulumi" "$T/sp ace/"
run "file:// with %20 and a query" st stacks --backend "file://$T/sp%20ace?no_tmp_dir=false"
check_rc 0; check_out_has "organization/proj/dev                           4  v3  $T/sp ace/.pulumi/stacks/proj/dev.json"
run "file:// with an unknown query parameter" st stacks --backend "file://$B?foo=bar"
check_rc 2; check_err 'statetool: error: file: invalid query parameter "foo" (file:// takes no_tmp_dir, create_dir, dir_file_mode, metadata, base_url and secret_key_path)'
run "stack and file" st list --backend "$B" --stack proj/dev "$P/todo.json"
check_rc 2
run "backend without stack" st list --backend "$B"
check_rc 2; check_err_has "--backend needs --stack NAME"

# A lock held by someone else (Pulumi's format) refuses a mutation and changes nothing.
L=$B/.pulumi/locks/organization/proj/dev
mkdir -p "$L"
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"2024-05-01T10:00:00Z"}' > "$L/6a1f0e2c-0000-4000-8000-000000000001.json"
cp "$B/.pulumi/stacks/proj/dev.json" "$T/before.json"
run "locked" st convert --backend "$B" --stack proj/dev --indent -o "$B/.pulumi/stacks/proj/dev.json"
check_rc 1
check_err_has "the stack is currently locked by 1 lock(s)"
check_err_has "created by alice@ci-runner (pid 4242) at 2024-05-01T10:00:00Z"
check_same "$T/before.json" "$B/.pulumi/stacks/proj/dev.json"
# A dry run takes no lock (nor does Pulumi's preview) but says the real run would be refused
LOCKMSG="the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with \`pulumi cancel\` (or \`statetool unlock --backend $B --stack proj/dev\`).
  $B/.pulumi/locks/organization/proj/dev/6a1f0e2c-0000-4000-8000-000000000001.json: created by alice@ci-runner (pid 4242) at 2024-05-01T10:00:00Z"
ls -R "$B/.pulumi/locks" > "$T/locks-before"
run "dry run of an edit on a locked stack" st protect --dry-run --backend "$B" --stack proj/dev --all
check_rc 0; check_out_has "dry run: nothing written"
check_err "statetool: note: the real run would be refused: $LOCKMSG
statetool: warning: the program's \`protect\` resource option overrides this flag on the next update"
run "dry run --json: locked" sh -c "'$STATETOOL' protect --dry-run --json --backend '$B' --stack proj/dev --all | '$JSONGET' locked"
check_rc 0; check_out "$LOCKMSG"
printf '{"resources":[{"type":"aws:s3/bucket:Bucket","name":"zz","id":"zz-1","inputs":{}}]}' > "$T/imp1.json"
run "dry run of an import" st import --dry-run --backend "$B" --stack proj/dev --file "$T/imp1.json" --no-read
check_rc 0; check_out_has "dry run: nothing written"; check_err "statetool: note: the real run would be refused: $LOCKMSG"
run "dry run of an import --json" sh -c "'$STATETOOL' import --dry-run --json --backend '$B' --stack proj/dev --file '$T/imp1.json' --no-read | '$JSONGET' locked"
check_rc 0; check_out "$LOCKMSG"
sed -e 's/organization\/proj\/dev/organization\/proj\/src/' -e 's/urn:pulumi:dev::/urn:pulumi:src::/g' -e 's/Comp::c/Comp::m/' -e 's/Bucket::b/Bucket::bm/' "$P/valid-checkpoint-v3-diy.json" > "$B/.pulumi/stacks/proj/src.json"
cp "$B/.pulumi/stacks/proj/src.json" "$T/src-before.json"
run "dry run of a move into it" sh -c "'$STATETOOL' move --dry-run --json --source-backend '$B' --source proj/src --dest-backend '$B' --dest proj/dev 'urn:pulumi:src::proj::my:index:Comp::m' | '$JSONGET' locked.dest"
check_rc 0; check_out "$LOCKMSG"; check_err_has "statetool: note: the real run would be refused: the stack is currently locked"
run "the real move is refused" st move --source-backend "$B" --source proj/src --dest-backend "$B" --dest proj/dev 'urn:pulumi:src::proj::my:index:Comp::m'
check_rc 1; check_err_has "$LOCKMSG"
check_same "$T/before.json" "$B/.pulumi/stacks/proj/dev.json"
check_same "$T/src-before.json" "$B/.pulumi/stacks/proj/src.json"
mv "$B/.pulumi/stacks/proj/src.json" "$T/src.json"
ls -R "$B/.pulumi/locks" > "$T/locks-after"
check_same "$T/locks-before" "$T/locks-after"
run "no note without a lock" st protect --dry-run "$T/src.json" --all
check_rc 0; check_err_lacks "the real run would be refused"
# --dest-stack (--source-stack) naming another stack than a backend stack's place: a usage
# error, nothing written (it wrote URNs of stack 'zzz' into proj/b, which Pulumi's next update
# would delete)
S0=$B/.pulumi/stacks/proj/src.json
cp "$T/src.json" "$S0"
run "move --dest-stack another stack" st move --backend "$B" --source proj/src --dest proj/newb --dest-stack proj/zzz 'urn:pulumi:src::proj::my:index:Comp::m'
check_rc 2
check_err "statetool: error: --dest-stack proj/zzz names another stack than proj/newb: a stack of a backend belongs to the stack and project its place names, as Pulumi sees it (leave --dest-stack out)
Try 'statetool move --help' for more information."
check_same "$T/src.json" "$S0"; check_absent "$B/.pulumi/stacks/proj/newb.json"
run "move --source-stack another stack" st move --backend "$B" --source proj/src --dest proj/newb --source-stack other/src 'urn:pulumi:src::proj::my:index:Comp::m'
check_rc 2; check_err_has "statetool: error: --source-stack other/src names another stack than proj/src"
run "import --dest-stack another stack" st import --backend "$B" --stack proj/src --dest-stack proj/other --file "$T/imp1.json" --no-read
check_rc 2; check_err_has "statetool: error: --dest-stack proj/other names another stack than proj/src"
check_same "$T/src.json" "$S0"
run "import --dest-stack its own names" st import --dry-run --backend "$B" --stack proj/src --dest-stack proj/src --file "$T/imp1.json" --no-read
check_rc 0; check_out_has "would add urn:pulumi:src::proj::aws:s3/bucket:Bucket::zz (ID zz-1)"
rm "$S0"
# a plain file's lock (<file>.lock) alike
cp "$B/.pulumi/stacks/proj/dev.json" "$T/plain.json"
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"2024-05-01T10:00:00Z"}' > "$T/plain.json.lock"
run "dry run on a locked file" st unprotect --dry-run "$T/plain.json" --all
check_rc 0; check_err_has "statetool: note: the real run would be refused: the stack is currently locked by 1 lock(s)"
check_err_has "\`statetool unlock $T/plain.json\`"
run "the real run on a locked file" st unprotect "$T/plain.json" --all
check_rc 1; check_err_has "the stack is currently locked by 1 lock(s)"
rm -f "$T/plain.json.lock"
run "unlock" st unlock --backend "$B" --stack proj/dev
check_rc 0; check_out "removed 1 lock of proj/dev"
run "after unlock" st convert --backend "$B" --stack proj/dev --indent -o "$B/.pulumi/stacks/proj/dev.json"
check_rc 0; check_same "$T/before.json" "$B/.pulumi/stacks/proj/dev.json.bak"
run "no lock left" sh -c "ls '$L' | wc -l"
check_out "0"

# SIGKILL at each write step of a real process: the file is exactly old or exactly new.
cp "$P/todo.json" "$T/c.json"
"$STATETOOL" convert "$P/todo.json" --compact -o "$T/new.json"
for step in 1 2 3 4; do
	cp "$P/todo.json" "$T/c.json"
	run "crash at write:$step" env STATETOOL_CRASH_AT=write:$step "$STATETOOL" convert "$T/c.json" --compact -o "$T/c.json"
	check_rc 137
	if [ $step -le 3 ]; then check_same "$P/todo.json" "$T/c.json"; else check_same "$T/new.json" "$T/c.json"; fi
	# the dead process's file lock is reported as stale, and unlock clears it
	run "stale lock $step" st convert "$T/c.json" -o "$T/c.json"
	check_rc 1; check_err_has "[stale: that process is no longer running]"
	run "unlock $step" st unlock "$T/c.json"
	check_rc 0; check_out "removed 1 lock of $T/c.json"
	rm -f "$T"/.c.json.tmp-*
done
finish
