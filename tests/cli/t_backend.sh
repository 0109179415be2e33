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
