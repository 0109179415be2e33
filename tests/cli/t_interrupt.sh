#!/bin/sh
# Interrupts while a lock is held (audit27 C12): SIGINT, SIGTERM, SIGHUP are held back until the
# command has finished and released its locks, then end the process by that signal (exit 130,
# 143, 129); a closed output pipe (SIGPIPE) is ignored while locked, and the command exits with
# its own status. Without a lock the default applies. A Ctrl-C typed in `edit`'s editor is the
# editor's. STATETOOL_CRASH_AT=OP:N:SIG sends SIG to the process at step N of a durable write
# (the locks are held there), so each case is deterministic.
. "$(dirname "$0")/lib.sh"
# a signal ignored on entry stays ignored (statetool keeps it so, as nohup wants): a suite run in
# the background has SIGINT ignored, so each command here gets the default dispositions
sig() { env --default-signal=INT,TERM,HUP,PIPE "$@"; }
E=$FIXTURES/edit
HELD="statetool: interrupted while holding a lock: finishing the change in progress, then exiting with its locks released (interrupt again to stop at once, leaving them)"
S=$T/s.json

for sig in INT:130 TERM:143 HUP:129; do
	name=${sig%%:*}; code=${sig##*:}
	cp "$E/base.json" "$S"; rm -f "$S.bak"
	run "SIG$name while locked" sig env STATETOOL_CRASH_AT=write:1:$name "$STATETOOL" protect "$S" logs
	check_rc "$code"
	check_out "protected urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::logs
1 resource protected"
	check_err_has "$HELD"
	check_same "$E/protect-logs.json" "$S"; check_same "$E/base.json" "$S.bak"; check_absent "$S.lock"
done
cp "$E/base.json" "$S"; rm -f "$S.bak"
run "SIGPIPE while locked" sig env STATETOOL_CRASH_AT=write:1:PIPE "$STATETOOL" protect "$S" logs
check_rc 0; check_err_lacks "interrupted"
check_same "$E/protect-logs.json" "$S"; check_absent "$S.lock"

# a real closed pipe: `protect --all BIG | head -1` (more output than a pipe holds)
res='{"urn":"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev","custom":false,"type":"pulumi:pulumi:Stack"}'
i=0
while [ $i -lt 1500 ]; do
	res="$res,{\"urn\":\"urn:pulumi:dev::p::aws:s3/bucket:Bucket::bucket-with-a-long-name-$i\",\"custom\":true,\"id\":\"b-$i\",\"type\":\"aws:s3/bucket:Bucket\"}"
	i=$((i + 1))
done
printf '{"version":3,"deployment":{"manifest":{"time":"2024-01-02T03:04:05Z","magic":"","version":""},"resources":[%s]}}\n' "$res" >"$T/big.json"
run "protect --all | head -1" sig sh -c "{ env --default-signal=PIPE '$STATETOOL' protect --all '$T/big.json' 2>'$T/err2'; echo \$? >'$T/rc'; } | head -1"
check_rc 0; check_out "protected urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev"
check_file_is "$T/rc" "0
"
check_absent "$T/big.json.lock"
run "every resource protected" sh -c "grep -o '\"protect\":true' '$T/big.json' | wc -l"
check_out "1501"

# a directory backend: Pulumi's lock object is gone after a SIGTERM
B=$T/b; mkdir -p "$B/.pulumi/stacks/shop"; printf 'version: 1\n' >"$B/.pulumi/meta.yaml"
printf '{"version":3,"checkpoint":{"stack":"organization/shop/dev","latest":{"manifest":{"time":"2024-01-02T03:04:05Z","magic":"","version":""},"resources":[{"urn":"urn:pulumi:dev::shop::pulumi:pulumi:Stack::shop-dev","custom":false,"type":"pulumi:pulumi:Stack"},{"urn":"urn:pulumi:dev::shop::aws:s3/bucket:Bucket::b","custom":true,"id":"b-1","type":"aws:s3/bucket:Bucket"}]}}}\n' >"$B/.pulumi/stacks/shop/dev.json"
run "SIGTERM on a backend stack" sig env STATETOOL_CRASH_AT=write:1:TERM "$STATETOOL" protect --backend "$B" --stack shop/dev b
check_rc 143; check_err_has "$HELD"
run "no lock left" sh -c "find '$B/.pulumi/locks' -type f 2>/dev/null | wc -l"
check_out "0"
run "the next command is not refused" st unprotect --backend "$B" --stack shop/dev b
check_rc 0

# a move: both locks held; the move is finished, then the process ends
M=$FIXTURES/move
PB=$T/pb; mkdir -p "$PB/.pulumi/stacks/test"; printf 'version: 1\n' >"$PB/.pulumi/meta.yaml"
cp "$M/children.json" "$PB/.pulumi/stacks/test/sourceStack.json"
run "SIGINT in a move" sig env STATETOOL_CRASH_AT=pair:1:INT "$STATETOOL" move --backend "$PB" --source test/sourceStack --dest test/destStack "urn:pulumi:sourceStack::test::a:b:c::name"
check_rc 130; check_err_has "$HELD"
run "the move is done, no lock, no journal" sh -c "ls '$PB/.pulumi/stacks/test'; find '$PB/.pulumi/locks' -type f 2>/dev/null | wc -l"
check_out "destStack.json
sourceStack.json
sourceStack.json.bak
0"

# no lock held: the default (index update writes its SQLite file in a transaction)
run "SIGINT without a lock" sig env STATETOOL_CRASH_AT=index:1:INT "$STATETOOL" index update --backend "$B"
check_rc 130; check_err_lacks "interrupted"

# edit: a Ctrl-C typed in the editor (SIGINT to statetool too) is the editor's; the edit is saved
cp "$E/base.json" "$S"; rm -f "$S.bak"
cat >"$T/ed.sh" <<'ED'
#!/bin/sh
kill -INT $PPID
sed 's/"name": "audit"/"name": "audit-2"/' "$1" >"$1.x" && mv "$1.x" "$1"
ED
chmod +x "$T/ed.sh"
run "SIGINT from the editor" sig env EDITOR="$T/ed.sh" VISUAL= "$STATETOOL" edit "$S"
check_rc 0; check_err_lacks "interrupted"; check_absent "$S.lock"
current="the edit was saved"; if cmp -s "$E/base.json" "$S"; then bad "unchanged"; else ok; fi
finish
