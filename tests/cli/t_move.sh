#!/bin/sh
# statetool move: Pulumi's own cases (fixtures/move mirror state_move_test.go), secrets under two
# passphrases, pending operations, replaceWith, and a crash at every step of the two writes.
. "$(dirname "$0")/lib.sh"
M=$FIXTURES/move
B=$T/b
SRC=organization/test/sourceStack
DST=organization/test/destStack
S=sourceStack
setup() { # setup SOURCE_FIXTURE [DEST_FIXTURE]
	rm -rf "$B"
	mkdir -p "$B/.pulumi/stacks/test"
	printf 'version: 1\n' > "$B/.pulumi/meta.yaml"
	cp "$M/$1" "$B/.pulumi/stacks/test/sourceStack.json"
	[ -z "${2:-}" ] || cp "$M/$2" "$B/.pulumi/stacks/test/destStack.json"
}
mv_() { "$STATETOOL" move --backend "$B" --source $SRC --dest $DST "$@"; }
urns() { "$STATETOOL" list --json --backend "$B" --stack "$1" | sed -n 's/^ *"urn": "\(.*\)",$/\1/p'; }
both_valid() {
	if "$STATETOOL" validate -q --backend "$B" >/dev/null 2>&1; then ok; else bad "a stack is invalid after $current"; fi
}

setup leaf.json
run "leaf" mv_ "urn:pulumi:$S::test::a:b:c::name"
check_rc 0
check_out "Planning to move the following resources from $SRC to $DST:

  - urn:pulumi:sourceStack::test::a:b:c::name

statetool will also:

  - create the destination's root stack urn:pulumi:destStack::test::pulumi:pulumi:Stack::test-destStack
  - copy provider urn:pulumi:sourceStack::test::pulumi:providers:a::default_1_0_0 -> urn:pulumi:destStack::test::pulumi:providers:a::default_1_0_0
  - the destination had no secrets provider: it takes the source's (b64)

Successfully moved resources from $SRC to $DST"
run "leaf source" urns test/sourceStack
check_out "urn:pulumi:sourceStack::test::pulumi:providers:a::default_1_0_0"
run "leaf dest" urns test/destStack
check_out "urn:pulumi:destStack::test::pulumi:pulumi:Stack::test-destStack
urn:pulumi:destStack::test::pulumi:providers:a::default_1_0_0
urn:pulumi:destStack::test::a:b:c::name"
run "leaf provider ref" st show --json --backend "$B" --stack test/destStack name
check_out_has '"provider": "urn:pulumi:destStack::test::pulumi:providers:a::default_1_0_0::provider_id"'
check_out_has '"parent": "urn:pulumi:destStack::test::pulumi:pulumi:Stack::test-destStack"'
both_valid

setup children.json
run "children move with their parent" mv_ "urn:pulumi:$S::test::a:b:c::name"
check_rc 0
check_out_has "  - urn:pulumi:sourceStack::test::a:b:c::name
  - urn:pulumi:sourceStack::test::a:b:c\$a:b:c::name2"
run "children dest" urns test/destStack
check_out_has "urn:pulumi:destStack::test::a:b:c\$a:b:c::name2"
both_valid

setup children.json
run "include parents" mv_ --include-parents "urn:pulumi:$S::test::a:b:c\$a:b:c::name2"
check_rc 0
run "include parents dest" urns test/destStack
check_out "urn:pulumi:destStack::test::pulumi:pulumi:Stack::test-destStack
urn:pulumi:destStack::test::pulumi:providers:a::default_1_0_0
urn:pulumi:destStack::test::a:b:c::name
urn:pulumi:destStack::test::a:b:c\$a:b:c::name2"
both_valid

setup dependencies.json
run "broken dependencies" mv_ "urn:pulumi:$S::test::a:b:c::resToMove"
check_rc 0
check_out "Planning to move the following resources from $SRC to $DST:

  - urn:pulumi:sourceStack::test::a:b:c::resToMove
  - urn:pulumi:sourceStack::test::a:b:c\$a:b:c::movedChildURN
  - urn:pulumi:sourceStack::test::a:b:c\$a:b:c::dependsOnMovedChildURN

statetool will also:

  - create the destination's root stack urn:pulumi:destStack::test::pulumi:pulumi:Stack::test-destStack
  - copy provider urn:pulumi:sourceStack::test::pulumi:providers:a::default_1_0_0 -> urn:pulumi:destStack::test::pulumi:providers:a::default_1_0_0
  - the destination had no secrets provider: it takes the source's (b64)

The following resources remaining in $SRC have dependencies on resources moved to $DST:

  - urn:pulumi:sourceStack::test::a:b:c::deps has a dependency on urn:pulumi:sourceStack::test::a:b:c::resToMove
  - urn:pulumi:sourceStack::test::a:b:c::deletedWith is marked as deleted with urn:pulumi:sourceStack::test::a:b:c::resToMove
  - urn:pulumi:sourceStack::test::a:b:c::propDeps (key) has a property dependency on urn:pulumi:sourceStack::test::a:b:c::resToMove

The following resources being moved to $DST have dependencies on resources in $SRC:

  - urn:pulumi:sourceStack::test::a:b:c::resToMove has a dependency on urn:pulumi:sourceStack::test::a:b:c::remainingDep

If you go ahead with moving these dependencies, it will be necessary to create the appropriate inputs and outputs in the program for the stack the resources are moved to.

Successfully moved resources from $SRC to $DST"
run "deps kept" st show --json --backend "$B" --stack test/sourceStack deps
check_out_has '"dependencies": [
        "urn:pulumi:sourceStack::test::a:b:c::remainingDep"
    ]'
run "moved child keeps its dependency" st show --json --backend "$B" --stack test/destStack dependsOnMovedChildURN
check_out_has '"urn:pulumi:destStack::test::a:b:c$a:b:c::movedChildURN"'
both_valid

setup reparent.json
run "reparent to root" mv_ "urn:pulumi:$S::test::parentComponent\$targetComponent::component"
check_rc 0
run "chain dropped" urns test/destStack
check_out_has "urn:pulumi:destStack::test::targetComponent::component
urn:pulumi:destStack::test::targetComponent\$pkgA:index:typB::child"
both_valid

setup rooted.json
run "root stack selected: its children move, provider shared" mv_ "urn:pulumi:$S::test::pulumi:pulumi:Stack::test-sourceStack"
check_rc 0
run "rooted source" urns test/sourceStack
check_out "urn:pulumi:sourceStack::test::pulumi:pulumi:Stack::test-sourceStack
urn:pulumi:sourceStack::test::pulumi:providers:a::default_1_0_0"
run "pending moved" st pending --backend "$B" --stack test/destStack
check_out "updating  urn:pulumi:destStack::test::a:b:c::name2"
run "pending gone from source" st pending --backend "$B" --stack test/sourceStack
check_out "no pending operations"
both_valid

setup rooted.json
run "glob, provider shared with a resource that stays" mv_ "urn:pulumi:$S::test::a:b:c::*"
check_rc 0
run "glob source" urns test/sourceStack
check_out "urn:pulumi:sourceStack::test::pulumi:pulumi:Stack::test-sourceStack
urn:pulumi:sourceStack::test::pulumi:providers:a::default_1_0_0
urn:pulumi:sourceStack::test::x:y:Z::stays"
run "glob dest" urns test/destStack
check_out_has "urn:pulumi:destStack::test::a:b:c::name
urn:pulumi:destStack::test::a:b:c::name2"
both_valid

# a bracket and an escaped character in the pattern: only name2 matches; the literal start
# of the pattern decides nothing by itself
setup rooted.json
run "glob with a bracket and an escape" mv_ "urn:pulumi:$S::test::a:b:c::na\\me[2]"
check_rc 0
run "bracket dest" urns test/destStack
check_out_has "urn:pulumi:destStack::test::a:b:c::name2"
if grep -qx "urn:pulumi:destStack::test::a:b:c::name" "$T/out"; then bad "name moved too"; else ok; fi
run "bracket: a literal start no URN has" mv_ "urn:pulumi:$S::test::a:b:c::zz[0-9]"
check_rc 1
check_err_has "not found in source stack"

setup leaf.json dest-same-provider.json
run "provider reused" mv_ "urn:pulumi:$S::test::a:b:c::name"
check_rc 0; check_out_has "reuse provider urn:pulumi:destStack::test::pulumi:providers:a::default_1_0_0::provider_id"
run "reused dest" urns test/destStack
check_out "urn:pulumi:destStack::test::pulumi:pulumi:Stack::test-destStack
urn:pulumi:destStack::test::pulumi:providers:a::default_1_0_0
urn:pulumi:destStack::test::a:b:c::name"
both_valid

# refusals change nothing
refused() { # NAME MESSAGE ARGS...
	name=$1; msg=$2; shift 2
	cp "$B/.pulumi/stacks/test/sourceStack.json" "$T/s.before"
	[ -f "$B/.pulumi/stacks/test/destStack.json" ] && cp "$B/.pulumi/stacks/test/destStack.json" "$T/d.before" || rm -f "$T/d.before"
	run "$name" mv_ "$@"
	check_rc 1; check_err_has "$msg"
	check_same "$T/s.before" "$B/.pulumi/stacks/test/sourceStack.json"
	if [ -f "$T/d.before" ]; then check_same "$T/d.before" "$B/.pulumi/stacks/test/destStack.json"; else check_absent "$B/.pulumi/stacks/test/destStack.json"; fi
	run "$name: no journal" sh -c "ls -a '$B/.pulumi/stacks/test' | grep -c statetool"
	check_out "0"
}
setup leaf.json dest-other-provider.json
refused "different provider" "provider urn:pulumi:destStack::test::pulumi:providers:a::default_1_0_0 already exists in destination stack" "urn:pulumi:$S::test::a:b:c::name"
setup leaf.json dest-existing-resource.json
refused "collision" "resource urn:pulumi:destStack::test::a:b:c::name already exists in destination stack" "urn:pulumi:$S::test::a:b:c::name"
setup leaf.json
run "unknown resource warns" mv_ not-a-urn
check_err "statetool: warning: Resource not-a-urn not found in source stack
statetool: error: no resources found to move"
refused "unknown resource" "no resources found to move" not-a-urn
refused "providers cannot be selected" "cannot move providers. Only resources can be moved, and providers will be included automatically" "urn:pulumi:$S::test::pulumi:providers:a::default_1_0_0"
printf '{"version":3,"checkpoint":{"stack":"organization/test/sourceStack"}}' > "$B/.pulumi/stacks/test/sourceStack.json"
refused "empty source" "source stack has no resources" x

# replaceWith is rewritten, not duplicated
setup replacewith.json
run "replaceWith" mv_ "urn:pulumi:$S::test::a:b:c::*"
check_rc 0
run "replaceWith dest" st show --json --backend "$B" --stack test/destStack other
check_out_has '"replaceWith": [
        "urn:pulumi:destStack::test::a:b:c::name"
    ],'
both_valid

# plain files; a never-deployed export names no stack: refused until --dest-stack
cp "$M/leaf.json" "$T/src.json"
printf '{"version":3,"deployment":null}\n' > "$T/new.json"
cp "$T/new.json" "$T/new.before"
run "unnamed destination" st move --source "$T/src.json" --dest "$T/new.json" "urn:pulumi:$S::test::a:b:c::name"
check_rc 1; check_err_has "add --dest-stack PROJECT/STACK"; check_same "$T/new.before" "$T/new.json"
run "named destination" st move --source "$T/src.json" --dest "$T/new.json" --dest-stack test/prod "urn:pulumi:$S::test::a:b:c::name"
check_rc 0
run "named destination urns" st list "$T/new.json"
check_out_has "urn:pulumi:prod::test::a:b:c::name"
run "files valid" st validate "$T/src.json" "$T/new.json"
check_rc 0
run "dry run" st move --dry-run --source "$T/new.json" --dest "$T/src.json" "urn:pulumi:prod::test::a:b:c::name"
check_rc 0; check_out_has "dry run: nothing written"

# secrets under two passphrases: re-encrypted for the destination
cp "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/sec-src.json"
printf 'other passphrase\n' > "$T/dpw"
cat > "$T/mkdest.sh" <<'MK'
# a destination stack with its own passphrase provider
MK
st convert "$FIXTURES/edit/delete-all-force.json" -o "$T/sec-dst.json" >/dev/null
env PULUMI_CONFIG_PASSPHRASE="correct horse battery staple" PULUMI_CONFIG_PASSPHRASE_NEW="other passphrase" "$STATETOOL" secrets rekey "$T/sec-dst.json" >/dev/null
run "secrets need both passphrases" st move --source "$T/sec-src.json" --dest "$T/sec-dst.json" --dest-stack shop/dev 'urn:pulumi:dev::proj::my:index:Comp::c' </dev/null
check_rc 1; check_err_has "passphrase must be set"
run "secrets re-encrypted" env STATETOOL_SOURCE_PASSPHRASE="correct horse battery staple" "$STATETOOL" move --dest-passphrase-file "$T/dpw" --source "$T/sec-src.json" --dest "$T/sec-dst.json" --dest-stack shop/dev 'urn:pulumi:dev::proj::my:index:Comp::c'
check_rc 0; check_out_has "re-encrypt 2 secrets of urn:pulumi:dev::proj::my:index:Comp\$aws:s3/bucket:Bucket::b for the destination"
run "decrypts with the destination's passphrase" env PULUMI_CONFIG_PASSPHRASE="other passphrase" "$STATETOOL" secrets show "$T/sec-dst.json" b
check_rc 0; check_out_has '"plaintext": "\"hunter2\""'
run "secret files valid" st validate "$T/sec-src.json" "$T/sec-dst.json"
check_rc 0

# a moved resource's pending operation holds its secrets too: re-encrypted with it
jq '.deployment.pending_operations = [{"resource": (.deployment.resources[] | select(.urn | endswith("Bucket::b"))), "type": "updating"}]' "$FIXTURES/pulumi/valid-deployment-v3.json" > "$T/pend-src.json"
st convert "$FIXTURES/edit/delete-all-force.json" -o "$T/pend-dst.json" >/dev/null
env PULUMI_CONFIG_PASSPHRASE="correct horse battery staple" PULUMI_CONFIG_PASSPHRASE_NEW="other passphrase" "$STATETOOL" secrets rekey "$T/pend-dst.json" >/dev/null
run "a pending operation's secrets re-encrypted" env STATETOOL_SOURCE_PASSPHRASE="correct horse battery staple" "$STATETOOL" move --dest-passphrase-file "$T/dpw" --source "$T/pend-src.json" --dest "$T/pend-dst.json" --dest-stack shop/dev 'urn:pulumi:dev::proj::my:index:Comp::c'
check_rc 0; check_out_has "move pending updating operation on urn:pulumi:dev::proj::my:index:Comp\$aws:s3/bucket:Bucket::b"
run "every secret of the destination decrypts with its passphrase" env PULUMI_CONFIG_PASSPHRASE="other passphrase" "$STATETOOL" secrets verify "$T/pend-dst.json"
check_rc 0; check_out "4 secrets, 0 failed to decrypt"

# a new destination gets a passphrase provider of its own: its passphrase, a new salt
cp "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/ns-src.json"
printf '{"version":3,"deployment":null}\n' > "$T/ns-dst.json"
C='urn:pulumi:dev::proj::my:index:Comp::c'
run "new destination: its passphrase missing" env STATETOOL_SOURCE_PASSPHRASE="correct horse battery staple" "$STATETOOL" move --source "$T/ns-src.json" --dest "$T/ns-dst.json" --dest-stack proj/prod "$C" </dev/null
check_rc 1; check_out_empty
check_err "statetool: error: the destination stack's passphrase must be set with STATETOOL_DEST_PASSPHRASE or STATETOOL_DEST_PASSPHRASE_FILE (or --dest-passphrase-file), or PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE"
run "the source's passphrase missing" env STATETOOL_DEST_PASSPHRASE="x" "$STATETOOL" move --source "$T/ns-src.json" --dest "$T/ns-dst.json" --dest-stack proj/prod "$C" </dev/null
check_rc 1
check_err "statetool: error: the source stack's passphrase must be set with STATETOOL_SOURCE_PASSPHRASE or STATETOOL_SOURCE_PASSPHRASE_FILE (or --source-passphrase-file), or PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE"
run "the source's passphrase wrong" env STATETOOL_SOURCE_PASSPHRASE="wrong" STATETOOL_DEST_PASSPHRASE="x" "$STATETOOL" move --source "$T/ns-src.json" --dest "$T/ns-dst.json" --dest-stack proj/prod "$C"
check_rc 1; check_err "statetool: error: the source stack's passphrase (from STATETOOL_SOURCE_PASSPHRASE) is incorrect"
cp "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/w-src.json"
st convert "$FIXTURES/edit/delete-all-force.json" -o "$T/w-dst.json" >/dev/null
env PULUMI_CONFIG_PASSPHRASE="correct horse battery staple" PULUMI_CONFIG_PASSPHRASE_NEW="other passphrase" "$STATETOOL" secrets rekey "$T/w-dst.json" >/dev/null
printf 'wrong\n' > "$T/wrongpw"
run "the destination's passphrase wrong" env STATETOOL_SOURCE_PASSPHRASE="correct horse battery staple" "$STATETOOL" move --dest-passphrase-file "$T/wrongpw" --source "$T/w-src.json" --dest "$T/w-dst.json" --dest-stack shop/dev 'urn:pulumi:dev::proj::my:index:Comp::c'
check_rc 1; check_err "statetool: error: the destination stack's passphrase (from --dest-passphrase-file) is incorrect"
printf '{"version":3,"deployment":null}\n' > "$T/ns-before.json"
check_same "$T/ns-before.json" "$T/ns-dst.json"
run "new destination" env STATETOOL_SOURCE_PASSPHRASE="correct horse battery staple" STATETOOL_DEST_PASSPHRASE="prod passphrase" "$STATETOOL" move --source "$T/ns-src.json" --dest "$T/ns-dst.json" --dest-stack proj/prod "$C"
check_rc 0
check_out_has "  - re-encrypt 2 secrets of urn:pulumi:dev::proj::my:index:Comp\$aws:s3/bucket:Bucket::b for the destination"
check_out_has "  - the destination had no secrets provider: it gets a passphrase provider of its own"
run "its own salt" sh -c "grep -c 'AQIDBAUGBwg=' '$T/ns-dst.json'"
check_out "0"
run "decrypts with its own passphrase" env PULUMI_CONFIG_PASSPHRASE="prod passphrase" "$STATETOOL" secrets verify "$T/ns-dst.json"
check_rc 0; check_out "2 secrets, 0 failed to decrypt"
run "not with the source's" env PULUMI_CONFIG_PASSPHRASE="correct horse battery staple" "$STATETOOL" secrets verify "$T/ns-dst.json"
check_rc 1; check_err_has "incorrect passphrase"

# the same stack or file on both sides is refused as such (not as a lock held by statetool)
run "same file" st move --source "$T/src.json" --dest "$T/src.json" 'urn:pulumi:x::y::a:b:c::n'
check_rc 2; check_err_has "statetool: error: the source and the destination are the same file ($T/src.json): a move needs two different stacks"
run "same file, another spelling" sh -c "cd '$T' && '$STATETOOL' move --source src.json --dest ./src.json 'urn:pulumi:x::y::a:b:c::n'"
check_rc 2; check_err_has "the source and the destination are the same file (src.json)"
setup leaf.json
run "same stack" mv_ --dest $SRC 'urn:pulumi:x::y::a:b:c::n'
check_rc 2; check_err_has "statetool: error: the source and the destination are the same stack ($SRC): a move needs two different stacks"

# a crash at every step of the two writes: afterwards every selected resource is in exactly
# one stack, and nothing else changed
for step in 1 2 3 4 5 6 7; do
	setup children.json
	run "crash at pair:$step" env STATETOOL_CRASH_AT=pair:$step "$STATETOOL" move --backend "$B" --source $SRC --dest $DST "urn:pulumi:$S::test::a:b:c::name"
	check_rc 137
	if [ $step -eq 5 ]; then
		# any later command on either stack completes the move
		run "list completes the move ($step)" st list --backend "$B" --stack test/sourceStack
		check_rc 0; check_err_has "note: completed the interrupted move"
	fi
	run "recover ($step)" st move --recover --backend "$B" --source $SRC --dest $DST
	check_rc 0
	src_names=$(urns test/sourceStack | tr '\n' ' ')
	dst_names=$(urns test/destStack 2>/dev/null | tr '\n' ' ')
	case "$src_names" in *"::name "*|*"::name2 "*) in_src=1 ;; *) in_src=0 ;; esac
	case "$dst_names" in *"::name "*) in_dst=1 ;; *) in_dst=0 ;; esac
	current="invariant after pair:$step"
	if [ $((in_src + in_dst)) -eq 1 ]; then ok; else bad "src: $src_names / dst: $dst_names"; fi
	if [ $step -ge 4 ] || [ $step -le 2 ]; then :; fi
	# before the journal is complete nothing moved; from step 4 on, the move completed
	if [ $step -le 2 ]; then
		if [ $in_src -eq 1 ]; then ok; else bad "moved although not committed"; fi
	elif [ $step -ge 4 ]; then
		if [ $in_dst -eq 1 ]; then ok; else bad "committed but not completed"; fi
	fi
	both_valid
	run "no leftovers ($step)" sh -c "ls -a '$B/.pulumi/stacks/test' | grep -c 'statetool-'"
	check_out "0"
	rm -f "$B"/.pulumi/stacks/test/*.lock
done

# a journal that names no lock (a statetool before journals named them): every lock there is
# another's, the killed move's too; once they are removed (statetool unlock), it completes
setup children.json
run "crash at pair:5 (no lock named)" env STATETOOL_CRASH_AT=pair:5 "$STATETOOL" move --backend "$B" --source $SRC --dest $DST "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
for j in "$B"/.pulumi/stacks/test/*.statetool-journal; do
	sed 's/,"lock":"[^"]*"//g; s/,"lock_hash":"[^"]*"//g; s/,"lock_made":"[^"]*"//g' "$j" > "$T/j" && cat "$T/j" > "$j"
done
run "journals without lock members" sh -c "cat '$B'/.pulumi/stacks/test/*.statetool-journal | grep -c lock"
check_out "0"
(cd "$B" && find . -type f | sort | xargs md5sum) > "$T/before"
run "an unnamed lock is another's" st list --backend "$B" --stack test/sourceStack
check_rc 1; check_err_has "statetool: error: the stack is currently locked by 1 lock(s)."
check_err_has "[stale: that process is no longer running]"
check_err_has "an interrupted move is pending (journal '$B/.pulumi/stacks/test/"
check_err_has "statetool move --recover --source-backend file://$B --source test/sourceStack --dest-backend file://$B --dest test/destStack\` (or any statetool command on either stack) completes it"
run "refused: no byte changed" sh -c "cd '$B' && find . -type f | sort | xargs md5sum"
check_same "$T/before" "$T/out"
# unlock completes the move first (audit27 C10); another's lock in the way is removed and the
# completion tried again: refused while the other side's lock stays (a warning), done once
# that one is removed too
run "unlock the source" st unlock --backend "$B" --stack test/sourceStack
check_rc 0; check_out "removed 1 lock of test/sourceStack"
check_err_has "statetool: warning: the stack is currently locked by 1 lock(s)."
check_err_has "; the locks of test/sourceStack are removed, but the unfinished operation is still pending"
run "unlock the destination: the move completed" st unlock --backend "$B" --stack test/destStack
check_rc 0; check_out "removed 1 lock of test/destStack"
check_err_has "note: the interrupted move is complete; its journal is removed"
check_err_lacks "warning"
run "unlocked: a writing command" st protect --backend "$B" --stack test/sourceStack --all
check_rc 0
run "unlocked: no lock left" sh -c "find '$B/.pulumi' -path '*locks*' -type f | wc -l"
check_out "0"
run "completed (no lock named)" urns test/destStack
check_out_has "urn:pulumi:destStack::test::a:b:c::name"

# plain files: a file's lock has one name (<file>.lock), so the journal keeps the hash of the
# killed move's lock too: another's lock under that name is no lock of the move
PF=$T/pf
rm -rf "$PF"; mkdir -p "$PF"; cp "$M/children.json" "$PF/a.json"
run "crash at pair:5 (plain files)" env STATETOOL_CRASH_AT=pair:5 "$STATETOOL" move --source "$PF/a.json" --dest "$PF/b.json" --dest-stack test/prod "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
run "the journal names the file's lock" cat "$PF/a.json.statetool-journal"
check_out_has '"lock":"a.json.lock","lock_hash":"'
printf '{"pid":4242,"username":"alice","hostname":"ci.example","timestamp":"2026-11-24T22:00:00Z"}' > "$PF/a.json.lock"
(cd "$PF" && ls -A | sort | xargs md5sum) > "$T/before"
run "another's lock on a plain file" st list "$PF/b.json"
check_rc 1; check_err_has "statetool: error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with \`pulumi cancel\` (or \`statetool unlock $PF/a.json\`)."
check_err_has "$PF/a.json.lock: created by alice@ci.example (pid 4242) at 2026-11-24T22:00:00Z"
check_err_has "\`statetool move --recover --source $PF/a.json --dest $PF/b.json\` (or any statetool command on either stack) completes it"
run "plain files: no byte changed" sh -c "cd '$PF' && ls -A | sort | xargs md5sum"
check_same "$T/before" "$T/out"
rm "$PF/a.json.lock"
run "plain files: the lock gone, list completes it" st list "$PF/b.json"
check_rc 0; check_err_has "note: removed the interrupted move's lock $PF/b.json.lock"
check_out_has "urn:pulumi:prod::test::a:b:c::name"
run "plain files: nothing left" ls -A "$PF"
check_out "a.json
a.json.bak
b.json"

# a plain file's side of a recovery is locked as a save locks it (review25 M1: it was only
# checked, so a save starting meanwhile raced the install): killed in the middle of its install
# (bak:1, the backup of a.json made), the recovery leaves its own lock on each file in place
# of the killed move's, which the next command reports as another's (stale)
rm -rf "$PF"; mkdir -p "$PF"; cp "$M/children.json" "$PF/a.json"
run "crash at pair:5 (plain files, locks)" env STATETOOL_CRASH_AT=pair:5 "$STATETOOL" move --source "$PF/a.json" --dest "$PF/b.json" --dest-stack test/prod "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
cp "$PF/a.json.lock" "$T/a.lock.move"; cp "$PF/b.json.lock" "$T/b.lock.move"
run "the recovery killed while it installs" env STATETOOL_CRASH_AT=bak:1 "$STATETOOL" list "$PF/b.json"
check_rc 137
current="the recovery's own locks, in place of the move's"
if [ -f "$PF/a.json.lock" ] && ! cmp -s "$T/a.lock.move" "$PF/a.json.lock" &&
	[ -f "$PF/b.json.lock" ] && ! cmp -s "$T/b.lock.move" "$PF/b.json.lock"; then ok; else bad "a.json.lock or b.json.lock is still the move's (or gone)"; fi
run "the killed recovery's lock is another's" st list "$PF/b.json"
check_rc 1; check_err_has "the stack is currently locked by 1 lock(s)"; check_err_has "stale: that process is no longer running"
run "unlocked: the move completed" sh -c "'$STATETOOL' unlock '$PF/a.json' && '$STATETOOL' unlock '$PF/b.json'"
check_rc 0; check_err_has "note: the interrupted move is complete"
run "then complete" st list "$PF/b.json"
check_rc 0; check_out_has "urn:pulumi:prod::test::a:b:c::name"
run "no lock left" sh -c "ls -A '$PF' | grep -c 'lock$'"
check_out "0"
# a refused recovery's hint names the sides by the roles the journal records, whatever their
# order in it (review25 L6: the first side was taken for the destination)
rm -rf "$PF"; mkdir -p "$PF"; cp "$M/children.json" "$PF/a.json"
run "crash at pair:5 (plain files, roles)" env STATETOOL_CRASH_AT=pair:5 "$STATETOOL" move --source "$PF/a.json" --dest "$PF/b.json" --dest-stack test/prod "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
run "the journal records the sides' roles" cat "$PF/a.json.statetool-journal"
check_out_has '"key":"b.json",'; check_out_has '"role":"dest"}'; check_out_has '"role":"source"}'
for j in "$PF/a.json.statetool-journal" "$PF/b.json.statetool-journal"; do
	sed 's/"sides":\[\({[^}]*}\),\({[^}]*}\)\]/"sides":[\2,\1]/' "$j" > "$T/j" && cat "$T/j" > "$j"
done
run "the source first in the journal now" grep -c '"sides":\[{"store":"[^"]*","key":"a.json"' "$PF/a.json.statetool-journal"
check_out "1"
printf '{"pid":4242,"username":"alice","hostname":"ci.example","timestamp":"2026-11-24T22:00:00Z"}' > "$PF/a.json.lock"
run "the hint names the source as the source" st list "$PF/b.json"
check_rc 1; check_err_has "\`statetool move --recover --source $PF/a.json --dest $PF/b.json\` (or any statetool command on either stack) completes it"
rm "$PF/a.json.lock"
run "and completes it once the lock is gone" st list "$PF/b.json"
check_rc 0; check_out_has "urn:pulumi:prod::test::a:b:c::name"
# a lock that cannot be read (a symbolic link that loops) counts as held: refused, naming it,
# nothing written (a stat that fails is an error too: test_journal, on a store that fails it)
rm -rf "$PF"; mkdir -p "$PF"; cp "$M/children.json" "$PF/a.json"
run "crash at pair:5 (plain files, a lock that cannot be read)" env STATETOOL_CRASH_AT=pair:5 "$STATETOOL" move --source "$PF/a.json" --dest "$PF/b.json" --dest-stack test/prod "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
rm "$PF/a.json.lock"; mkdir "$PF/loop"; ln -s loop/x "$PF/loop/x"; ln -s loop/x "$PF/a.json.lock"
(cd "$PF" && find . -type f | sort | xargs md5sum) > "$T/before"
run "a lock that cannot be read" st list "$PF/b.json"
check_rc 1; check_err_has "a.json.lock: a lock that cannot be parsed (it cannot be read); it counts as held"
run "nothing written" sh -c "cd '$PF' && find . -type f | sort | xargs md5sum"
check_same "$T/before" "$T/out"

# a journal whose lock names another object than the side's lock (damaged, hand-edited) is
# refused: its recovery would have removed that object as the move's lock
rm -rf "$PF"; mkdir -p "$PF"; cp "$M/children.json" "$PF/a.json"; cp "$M/children.json" "$PF/c.json"
run "crash at pair:5 (plain files, again)" env STATETOOL_CRASH_AT=pair:5 "$STATETOOL" move --source "$PF/a.json" --dest "$PF/b.json" --dest-stack test/prod "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
H=$(b2sum -l 256 "$PF/c.json" | cut -d' ' -f1)
for j in "$PF/a.json.statetool-journal" "$PF/b.json.statetool-journal"; do
	sed "s/\"lock\":\"a.json.lock\",\"lock_hash\":\"[0-9a-f]*\"/\"lock\":\"c.json\",\"lock_hash\":\"$H\"/" "$j" > "$T/j" && cat "$T/j" > "$j"
done
rm -f "$PF/a.json.lock"
run "the journal names c.json as a lock" grep -c '"lock":"c.json"' "$PF/a.json.statetool-journal"
check_out "1"
run "a journal naming another object as its lock is refused" st list "$PF/b.json"
check_rc 1; check_err_has "the journal names a side it cannot describe"
check_same "$M/children.json" "$PF/c.json"

# the other side's store cannot be opened from the journal's URL (which keeps no credentials):
# the message says which interrupted move, and where the credentials come from
setup children.json
run "crash at pair:5 (other store)" env STATETOOL_CRASH_AT=pair:5 "$STATETOOL" move --backend "$B" --source $SRC --dest $DST "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
JS=$B/.pulumi/stacks/test/sourceStack.json.statetool-journal
sed 's|"store":"file://[^"]*","key":".pulumi/stacks/test/destStack.json"|"store":"postgres://statetool@127.0.0.1:1/nodb?sslmode=disable","key":".pulumi/stacks/test/destStack.json"|
s|\("key":".pulumi/stacks/test/destStack.json"[^}]*"store_id":"\)[^"]*"|\1postgres://127.0.0.1:1/nodb?table=pulumi_state\&prefix=nodb/"|' "$JS" > "$T/j" && cat "$T/j" > "$JS"
run "the journal names the other store's identity" grep -c '"store_id":"postgres://127.0.0.1:1/nodb?table=pulumi_state&prefix=nodb/"' "$JS"
check_out "1"
run "the journal names the other store" grep -c '"store":"postgres://statetool@127.0.0.1:1/nodb?sslmode=disable"' "$JS"
check_out "1"
(cd "$B" && find . -type f | sort | xargs md5sum) > "$T/before"
run "the other store cannot be opened" env -u PGPASSWORD -u PGPASSFILE -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE -u PGSERVICE "$STATETOOL" list --backend "$B" --stack test/sourceStack
check_rc 1
check_err "statetool: error: cannot complete the interrupted move recorded in '$JS': postgres: cannot connect to 127.0.0.1:1 (database 'nodb', user 'statetool'): Connection refused (5 attempts; no PG* variable set); the journal keeps no credentials: they come from the environment (PGPASSWORD or PGPASSFILE: the URL's password is not kept), or \`statetool move --recover\` with the same URLs completes it"
run "cannot open: no byte changed" sh -c "cd '$B' && find . -type f | sort | xargs md5sum"
check_same "$T/before" "$T/out"

# a crash between the hard link that becomes the source's .bak and its rename (inside the
# first install, after the commit point): recovery completes the move, the source's .bak holds
# its bytes before the move with its mode, and the link left under its temporary name is gone
setup children.json
chmod 640 "$B/.pulumi/stacks/test/sourceStack.json"
run "crash at bak:1" env STATETOOL_CRASH_AT=bak:1 "$STATETOOL" move --backend "$B" --source $SRC --dest $DST "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
run "bak:1 left the link" sh -c "ls -A '$B/.pulumi/stacks/test' | grep -c '^\.statetool-bak-[0-9a-f]\{16\}\$'"
check_out "1"
run "recover (bak:1)" st move --recover --backend "$B" --source $SRC --dest $DST
check_rc 0; check_out_has "completed the interrupted move"
run "moved (bak:1)" urns test/destStack
check_out_has "urn:pulumi:destStack::test::a:b:c::name"
check_same "$M/children.json" "$B/.pulumi/stacks/test/sourceStack.json.bak"
run "the .bak's mode (bak:1)" stat -c %a "$B/.pulumi/stacks/test/sourceStack.json.bak"
check_out "640"
current="after bak:1"; both_valid
run "no leftovers (bak:1)" sh -c "ls -A '$B/.pulumi/stacks/test' | grep -c 'statetool-'"
check_out "0"

# a journal left by a statetool of journal version 1 (SHA-256) is still completed; an unknown
# version is refused with the files left as they are
journal_files() { # DIR: two files, each with its staged new version and the expected result
	J=$1
	rm -rf "$J"; mkdir -p "$J"
	cp "$M/leaf.json" "$J/a.json"; cp "$M/leaf.json" "$J/b.json"
	sed 's/::name"/::renamed"/' "$M/leaf.json" > "$J/a.json.statetool-new"
	cp "$J/a.json.statetool-new" "$J/a.expected"
	cp "$M/leaf.json" "$J/b.json.statetool-new"; printf '\n' >> "$J/b.json.statetool-new"
	cp "$J/b.json.statetool-new" "$J/b.expected"
}
journal_files "$T/j1"
sha() { sha256sum "$1" | cut -d' ' -f1; }
journal() { # VERSION OLDKEY NEWKEY
	printf '{"statetool_journal":%s,"operation":"move","files":[{"path":"%s","%s":"%s","%s":"%s","staged":"%s"},{"path":"%s","%s":"%s","%s":"%s","staged":"%s"}]}\n' \
		"$1" "$J/a.json" "$2" "$(sha "$J/a.json")" "$3" "$(sha "$J/a.json.statetool-new")" "$J/a.json.statetool-new" \
		"$J/b.json" "$2" "$(sha "$J/b.json")" "$3" "$(sha "$J/b.json.statetool-new")" "$J/b.json.statetool-new"
}
journal 7 old_sha256 new_sha256 > "$J/a.json.statetool-journal"
cp "$J/a.json.statetool-journal" "$J/b.json.statetool-journal"
run "journal of an unknown version" st move --recover --source "$J/a.json" --dest "$J/b.json"
check_rc 1; check_err_has "is of a version this statetool does not know (7)"
run "unknown journal: files untouched" cmp "$M/leaf.json" "$J/a.json"
check_rc 0
journal 1 old_sha256 new_sha256 > "$J/a.json.statetool-journal"
cp "$J/a.json.statetool-journal" "$J/b.json.statetool-journal"
run "journal version 1 (SHA-256) completes" st move --recover --source "$J/a.json" --dest "$J/b.json"
check_rc 0; check_out_has "completed the interrupted move: wrote $J/a.json"
check_same "$J/a.expected" "$J/a.json"
check_same "$J/b.expected" "$J/b.json"
run "v1 journal: no leftovers" sh -c "ls -a '$J' | grep -c 'statetool-'"
check_out "0"

# a journal left by the statetool before XXH3 (version 3: both sides by store and key, the
# BLAKE2b-256 of each object) is still completed; a later version naming a hash this statetool
# does not know is refused with the files left as they are
journal_files "$T/j3"
b2() { b2sum -l 256 "$1" | cut -d' ' -f1; }
side3() { # KEY
	printf '{"store":"file://%s","key":"%s","old_hash":"%s","new_hash":"%s","staged":"%s.statetool-new","journal":"%s.statetool-journal"}' \
		"$(cd "$J" && pwd -P)" "$1" "$(b2 "$J/$1")" "$(b2 "$J/$1.statetool-new")" "$1" "$1"
}
journal3() { # VERSION HASH
	printf '{"statetool_journal":%s,"hash":"%s","operation":"move","sides":[%s,%s]}\n' \
		"$1" "$2" "$(side3 b.json)" "$(side3 a.json)"
}
journal3 4 sha3-256 > "$J/a.json.statetool-journal"
cp "$J/a.json.statetool-journal" "$J/b.json.statetool-journal"
run "journal naming an unknown hash" st move --recover --source "$J/a.json" --dest "$J/b.json"
check_rc 1; check_err_has "names a hash this statetool does not know (sha3-256)"
run "unknown hash: files untouched" sh -c "cmp '$M/leaf.json' '$J/a.json' && cmp '$M/leaf.json' '$J/b.json'"
check_rc 0
journal3 3 blake2b-256 > "$J/a.json.statetool-journal"
cp "$J/a.json.statetool-journal" "$J/b.json.statetool-journal"
run "journal version 3 (BLAKE2b-256) completes" st move --recover --source "$J/a.json" --dest "$J/b.json"
check_rc 0; check_out_has "completed the interrupted move: wrote $J/b.json"
check_same "$J/a.expected" "$J/a.json"
check_same "$J/b.expected" "$J/b.json"
run "v3 journal: no leftovers" sh -c "ls -a '$J' | grep -c 'statetool-'"
check_out "0"

run "usage: no sides" st move x
check_rc 2; check_err_has "at least one of --source or --dest must be provided"
run "usage: no resource" st move --source "$T/src.json" --dest "$T/new.json"
check_rc 2
# unlock of a side whose pending move's other side cannot be opened (its credentials): the
# locks stay, as for any failure but the journal's own (review27 R10: it removed them, calling
# the journal unreadable)
J=$T/ju; mkdir -p "$J"
cp "$FIXTURES/move/children.json" "$J/a.json"; cp "$FIXTURES/move/children.json" "$J/a.json.statetool-new"
h=$(b2sum -l 256 "$J/a.json" | cut -d' ' -f1)
printf '{"statetool_journal":3,"hash":"blake2b-256","operation":"move","sides":[{"store":"file://%s","key":"a.json","old_hash":"%s","new_hash":"%s","staged":"a.json.statetool-new","journal":"a.json.statetool-journal"},{"store":"gs://somebucket","key":".pulumi/stacks/p/b.json","old_hash":"%s","new_hash":"%s","staged":".pulumi/stacks/p/b.json.statetool-new","journal":".pulumi/stacks/p/b.json.statetool-journal"}]}' \
	"$J" "$h" "$h" "$h" "$h" >"$J/a.json.statetool-journal"
printf '{"pid":4242,"username":"alice","hostname":"elsewhere","timestamp":"2024-05-01T10:00:00Z"}' >"$J/a.json.lock"
run "unlock: the other side's store does not open" env GOOGLE_APPLICATION_CREDENTIALS="$T/nonexistent" "$STATETOOL" unlock "$J/a.json"
check_rc 1; check_err_has "no lock was removed"
test -e "$J/a.json.lock"; rc=$?; check_rc 0
finish
