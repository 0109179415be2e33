#!/bin/sh
# The crash matrix: every mutating command is killed (SIGKILL) at each step of its atomic write
# (STATETOOL_CRASH_AT=write:N: 1 temporary file written, 2 synced, 3 backup made, 4 renamed).
# Afterwards the state is exactly the old or exactly the new version; the next run reports the
# killed process's lock as stale, with its holder, and after `statetool unlock` proceeds to the
# same result as an uncrashed run. `index update` is killed mid-run and must leave a usable index.
# A move killed after its commit point, completed by the next command, leaves each stack the
# generations an uncrashed move leaves.
. "$(dirname "$0")/lib.sh"
E=$FIXTURES/edit
PW=$(sed -n 's/^PW=//p' "$top_srcdir/tests/cli/t_secrets.sh" | tr -d "'\"")
cells=0
printf '{"resources": [{"type": "aws:s3/bucket:Bucket", "name": "imported", "id": "imp-1", "version": "6.0.0"}]}\n' > "$T/specs.json"

# crash_cell NAME BASE-FILE DETERMINISTIC ARGS... ("@" stands for the state file); when the
# result is not deterministic (new nonces, UUIDs, timestamps: 0), "new" means it validates and
# every secret decrypts
crash_cell() {
	name=$1; base=$2; det=$3; shift 3
	S=$T/s.json
	# the uncrashed result
	cp "$base" "$S"; rm -f "$S.bak" "$S.lock"
	env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" $(echo "$@" | sed "s|@|$S|g") >/dev/null 2>&1 || { current="$name: uncrashed run"; bad "failed"; return; }
	cp "$S" "$T/want.json"
	for step in 1 2 3 4; do
		cells=$((cells + 1))
		cp "$base" "$S"; rm -f "$S.bak" "$S.lock" "$S".tmp* "$T"/.s.json.* 2>/dev/null
		run "$name: crash at write:$step" env STATETOOL_CRASH_AT=write:$step PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" $(echo "$@" | sed "s|@|$S|g")
		check_rc 137
		current="$name: crash at write:$step: old or new"
		if cmp -s "$S" "$base"; then ok
		elif [ "$det" = 1 ] && cmp -s "$S" "$T/want.json"; then ok
		elif [ "$det" = 0 ] && env PULUMI_CONFIG_PASSPHRASE="${VERIFY_PW:-$PW}" "$STATETOOL" secrets verify "$S" >/dev/null 2>&1 && "$STATETOOL" validate -q "$S"; then ok
		else bad "the state is neither the old nor the new version"; fi
		run "$name: after write:$step, the lock is reported stale" env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" $(echo "$@" | sed "s|@|$S|g")
		check_rc 1; check_err_has "stale: that process is no longer running"; check_err_has "statetool unlock"
		run "$name: unlock" st unlock "$S"
		check_rc 0
		cp "$base" "$S"
		run "$name: after write:$step and unlock, the command proceeds" env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" $(echo "$@" | sed "s|@|$S|g")
		check_rc 0
		if [ "$det" = 1 ]; then check_same "$T/want.json" "$S"; fi
	done
}
crash_cell protect "$E/base.json" 1 protect @ logs
crash_cell unprotect "$E/base.json" 1 unprotect @ assets
crash_cell taint "$E/base.json" 1 taint @ logs
crash_cell delete "$E/base.json" 1 delete @ audit
crash_cell rename "$E/base.json" 1 rename @ logs logs2
crash_cell repair "$FIXTURES/validate/parent-order.json" 1 repair @
crash_cell "pending clear" "$E/base.json" 1 pending clear @
crash_cell replace-provider "$E/base.json" 1 replace-provider @ default_6_0_0 eu
crash_cell import "$E/base.json" 0 import --dest @ --file "$T/specs.json" --no-read
crash_cell migrate "$FIXTURES/pulumi/checkpoint-v1.json" 1 migrate @
crash_cell convert "$E/base.json" 1 convert @ --compact -o @
crash_cell "secrets encrypt" "$FIXTURES/validate/secrets-plaintext.json" 0 secrets encrypt @
printf 'the new one\n' > "$T/newpw"
VERIFY_PW="the new one" # a rekeyed state decrypts with the new passphrase
crash_cell "secrets rekey" "$FIXTURES/pulumi/valid-deployment-v3.json" 0 secrets rekey --new-passphrase-file "$T/newpw" @
echo "t_crash: $cells crash cells (13 commands x 4 write steps)"

# secrets rekey --stack-config (audit26b B10): the new config is staged beside the old
# (write:1-4 are that write's steps), rekey:1 after it, rekey:2 once the state is written,
# rekey:3 once the config's .bak is kept, before the staged config is renamed into place. After
# a kill at each, the re-run finishes or discards the staged config: with the new passphrase it
# completes (the state and the config then open with it), and where the state was not yet
# written, with the old passphrase it rekeys as if nothing happened.
S=$T/rk.json; C=$T/Pulumi.dev.yaml
salt=$(sed -n 's/.*"salt": "\([^"]*\)".*/\1/p' "$FIXTURES/pulumi/valid-deployment-v3.json" | head -n 1)
printf 'encryptionsalt: %s\nconfig:\n  proj:a:\n    secure: v1:ZGVmZ2hpamtsbW5v:LudbcPrKaMQk1R3NNyum5aNq3uSzkG2zCA==\n' "$salt" > "$T/cfg0.yaml"
chmod 640 "$T/cfg0.yaml"
rk_reset() { cp "$FIXTURES/pulumi/valid-deployment-v3.json" "$S"; cp -p "$T/cfg0.yaml" "$C"; rm -f "$S.bak" "$S.lock" "$C".*; }
rekey() { env PULUMI_CONFIG_PASSPHRASE="$1" "$STATETOOL" secrets rekey --new-passphrase-file "$T/newpw" --stack-config "$C" "$S"; }
for at in write:1 write:2 write:3 write:4 rekey:1 rekey:2 rekey:3; do
	for pw in new old; do
		rk_reset
		run "rekey --stack-config: killed at $at" env STATETOOL_CRASH_AT=$at PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" secrets rekey --new-passphrase-file "$T/newpw" --stack-config "$C" "$S"
		check_rc 137
		st unlock "$S" >/dev/null
		case $at in
		write:4|rekey:1) staged=1; written=0 ;;
		rekey:*) staged=1; written=1 ;;
		*) staged=0; written=0 ;;
		esac
		if [ $staged = 1 ]; then
			run "after $at: the staged config has the config's mode" stat -c %a "$C.statetool-rekey"
			check_out "640"
		fi
		if [ $written = 1 ]; then
			[ $pw = new ] || continue # the old passphrase opens neither now
			run "after $at: the re-run with the new passphrase completes" rekey "the new one"
			check_rc 0
			check_err_has "statetool: note: completed the interrupted rekey of '$C'"
		else
			run "after $at: the re-run with the $pw passphrase" rekey "$([ $pw = new ] && echo "the new one" || echo "$PW")"
			if [ $pw = new ]; then
				check_rc 1; check_err_has "incorrect passphrase"; continue
			fi
			check_rc 0
			if [ $staged = 1 ]; then check_err_has "statetool: note: removed '$C.statetool-rekey', left by a rekey interrupted before the state was written ('$C' is unchanged)"
			else check_err_empty; fi
		fi
		check_out_has "$C: encryptionsalt and 1 secure value rewritten"
		check_absent "$C.statetool-rekey"
		run "after $at and the re-run: the config opens with the new passphrase" env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets verify --stack-config "$C" "$S"
		check_rc 0; check_out "2 secrets, 0 failed to decrypt
$C: 1 secure value, 0 failed to decrypt"
		run "after $at and the re-run: the config's mode" stat -c %a "$C"
		check_out "640"
	done
done

# index update killed while it runs: the next update completes, and no stack is partial
cc -O2 -o "$T/gen" "$top_srcdir/bench/gen.c"
B=$T/b; mkdir -p "$B/.pulumi/stacks/p"; printf 'version: 1\n' > "$B/.pulumi/meta.yaml"
i=1; while [ $i -le 40 ]; do "$T/gen" 150 $i --checkpoint --stack "s$i" --project p > "$B/.pulumi/stacks/p/s$i.json"; i=$((i + 1)); done
kills=0
for delay in 0.05 0.15 0.3 0.5; do
	rm -f "$B/.pulumi/statetool-index.sqlite"*
	"$STATETOOL" index update --backend "$B" >/dev/null 2>&1 &
	pid=$!
	sleep $delay
	kill -9 $pid 2>/dev/null && kills=$((kills + 1))
	wait $pid 2>/dev/null
	run "index: reads after a kill at ${delay}s" st query --backend "$B" --sql "SELECT s.qname FROM stacks s LEFT JOIN resources r ON r.stack_id = s.id GROUP BY s.id HAVING s.resources != count(r.urn)"
	# no stack is partial (no rows), or an index killed before its first commit says so
	if [ "$rc" = 0 ]; then ok; check_out "no rows"
	elif [ ! -e "$B/.pulumi/statetool-index.sqlite" ]; then ok; ok
	else check_rc 1; check_err_has "is empty (its first update was interrupted?)"; fi
	run "index: update after a kill at ${delay}s" st index update --backend "$B"
	check_rc 0; check_out_has "40 stacks:"; check_out_has "0 failed"
	run "index: complete" st query --backend "$B" --sql "SELECT count(*) AS n FROM resources"
	check_out "n
$((40 * 150 + 40 * 7))"
done
echo "t_crash: index update killed $kills times mid-run"

# a move killed after its commit point (pair:4 the second journal written ... pair:7 the first
# journal removed) and completed by the next command: each side gets the generation a save
# writes after writing (GENERATIONS), as an uncrashed move gives it
M=$FIXTURES/move
for step in 4 5 6 7; do
	PB=$T/pb$step
	mkdir -p "$PB/.pulumi/stacks/test"
	printf 'version: 1\n' > "$PB/.pulumi/meta.yaml"
	cp "$M/children.json" "$PB/.pulumi/stacks/test/sourceStack.json"
	run "move: crash at pair:$step" env STATETOOL_CRASH_AT=pair:$step "$STATETOOL" move --backend "$PB" --source test/sourceStack --dest test/destStack "urn:pulumi:sourceStack::test::a:b:c::name"
	check_rc 137
	run "move: completed after pair:$step" st list --backend "$PB" --stack test/sourceStack
	check_rc 0; check_err_has "the interrupted move is complete"
	for stk in sourceStack destStack; do
		# the source: its state before and after; the destination (new): after only
		want=1; [ $stk = sourceStack ] && want=2
		run "move after pair:$step: $stk's generations" sh -c "ls '$PB/.pulumi/backups/test/$stk' 2>/dev/null | wc -l"
		check_out "$want"
		newest=$(ls "$PB/.pulumi/backups/test/$stk" 2>/dev/null | sort | tail -n 1)
		current="move after pair:$step: $stk's newest generation is its state"
		if [ -n "$newest" ] && cmp -s "$PB/.pulumi/stacks/test/$stk.json" "$PB/.pulumi/backups/test/$stk/$newest"; then ok; else bad "differs or missing"; fi
	done
	run "move after pair:$step: another command writes no generation again" st list --backend "$PB" --stack test/destStack
	check_rc 0
	run "move after pair:$step: still 3 generations" sh -c "ls '$PB/.pulumi/backups/test/'* | grep -c json"
	check_out "3"
done
# a new index appears whole or not at all: killed once it is made but before it is in place,
# there is no index (its first update was killed while SQLite switched the new file to WAL, a
# reader found a rollback journal it cannot roll back and called the index damaged)
rm -f "$B/.pulumi/statetool-index.sqlite"*
run "index: killed before a new index is in place" env STATETOOL_CRASH_AT=index:2 "$STATETOOL" index update --backend "$B"
check_rc 137; check_absent "$B/.pulumi/statetool-index.sqlite"
run "index: none to read" st query --backend "$B" --sql "SELECT 1"
check_rc 1; check_err "statetool: error: no index at '$B/.pulumi/statetool-index.sqlite' (build it with \`statetool index update\`)"
run "index: made next time" st index update --backend "$B"
check_rc 0; check_out_has "40 stacks:"
finish
