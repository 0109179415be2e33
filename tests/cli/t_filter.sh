#!/bin/sh
# Filter mode (issue 22): a STATE of '-' read from standard input and the result written to
# standard output (-o -, or a '-' STATE with no -o), through real pipes. For each command that
# changes a state: the bytes a pipeline writes are exactly those the same command writes to a
# file. A refused or failed command writes zero bytes and exits 1; a dry run writes nothing; a
# reader that closes early (EPIPE) makes the command exit 1. No lock, no .bak, no temporary file
# left behind. (/bin/sh is dash: no pipefail; a command's status goes through a file.)
. "$(dirname "$0")/lib.sh"
F=$FIXTURES/edit
V=$FIXTURES/validate
PW="correct horse battery staple"
unset PULUMI_CONFIG_PASSPHRASE PULUMI_CONFIG_PASSPHRASE_FILE PULUMI_CONFIG_PASSPHRASE_NEW PULUMI_CONFIG_PASSPHRASE_NEW_FILE
mkdir "$T/tmp"
TMPDIR=$T/tmp
export TMPDIR

# pipe IN OUT CMD...: `cat IN | CMD | cat > OUT`; $rc is CMD's status, its stderr in $T/err
pipe() {
	in=$1; out=$2; shift 2
	{ cat "$in" | "$@" 2>"$T/err"; echo $? >"$T/rc"; } | cat >"$out"
	rc=$(cat "$T/rc")
}
bytes() { wc -c <"$1" | tr -d ' '; }
check_empty() { if [ "$(bytes "$1")" = 0 ]; then ok; else bad "$1 has $(bytes "$1") bytes, expected 0"; fi; }
check_no_tmp() { if [ -z "$(ls -A "$T/tmp")" ]; then ok; else bad "temporary files left: $(ls -A "$T/tmp")"; fi; }

# same NAME IN CMD ARGS...: CMD run on a copy of IN as a file, and as a filter in a pipeline
# (`cat IN | statetool CMD - ARGS -o -`): status 0, the same bytes, nothing else on stdout.
same() {
	name=$1; in=$2; cmd=$3; shift 3
	cp "$in" "$T/file.json"
	run "$name (file)" st $cmd "$T/file.json" "$@"
	check_rc 0
	current="$name (pipe)"
	pipe "$in" "$T/piped.json" "$STATETOOL" $cmd - "$@" -o -
	check_rc 0; check_same "$T/file.json" "$T/piped.json"; check_no_tmp
}

# a state bigger than a pipe's buffer, for the readers that close early
awk -v n=4000 'BEGIN {
	printf "{\"version\":3,\"deployment\":{\"manifest\":{\"time\":\"2026-01-01T00:00:00Z\",\"magic\":\"\",\"version\":\"\"},\"resources\":[{\"urn\":\"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev\",\"custom\":false,\"type\":\"pulumi:pulumi:Stack\"}"
	for (i = 1; i <= n; i++)
		printf ",{\"urn\":\"urn:pulumi:dev::p::my:index:Thing::thing-%d\",\"custom\":false,\"type\":\"my:index:Thing\",\"parent\":\"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev\"}", i
	printf "]}}\n" }' >"$T/big.json"

same "delete" "$F/base.json" delete logs
check_err_has "Resource deleted"
check_same "$F/delete-logs.json" "$T/piped.json"
same "delete dependents" "$F/base.json" delete --target-dependents assets-policy
same "rename" "$F/base.json" rename web frontend
same "protect" "$F/base.json" protect logs
same "unprotect" "$F/base.json" unprotect assets
same "taint" "$F/base.json" taint server
same "untaint" "$F/taint-server.json" untaint server
check_same "$F/base.json" "$T/piped.json"
same "repair" "$F/broken.json" repair
check_same "$F/repaired.json" "$T/piped.json"
same "pending clear" "$F/base.json" "pending clear" logs
check_same "$F/pending-clear-logs.json" "$T/piped.json"
check_err_has "the cleared pending operations:"
same "replace-provider" "$F/base.json" replace-provider default_6_0_0 eu
same "edit --from" "$F/base.json" edit --from "$F/protect-logs.json"
check_same "$F/protect-logs.json" "$T/piped.json"

# nothing to change: the state still goes through (an empty stdin would fail the import)
same "nothing to change" "$F/repaired.json" repair
check_same "$F/repaired.json" "$T/piped.json"

# the one rule: a '-' STATE with no -o is written to stdout, as with -o -
pipe "$F/base.json" "$T/implicit.json" "$STATETOOL" delete - logs
check_rc 0; check_same "$F/delete-logs.json" "$T/implicit.json"
# the summary on stderr, stdout only the state; --json too
pipe "$F/base.json" "$T/j.json" "$STATETOOL" delete --json - logs
check_rc 0; check_same "$F/delete-logs.json" "$T/j.json"; check_err_has '"written": true'
check_err_has '"file": "-"'

# a file STATE with -o -: the result to stdout, the file untouched, no lock, no .bak
cp "$F/base.json" "$T/src.json"
{ st delete "$T/src.json" logs -o - 2>"$T/err"; echo $? >"$T/rc"; } | cat >"$T/out.json"
rc=$(cat "$T/rc"); current="file -o -"
check_rc 0; check_same "$F/delete-logs.json" "$T/out.json"; check_same "$F/base.json" "$T/src.json"
check_absent "$T/src.json.bak"; check_absent "$T/src.json.lock"
run "-o FILE refused" st delete "$T/src.json" logs -o "$T/other.json"
check_rc 2; check_err_has "-o takes '-' (standard output) only"; check_absent "$T/other.json"

# dry run: the plan on stderr, nothing on stdout
pipe "$F/base.json" "$T/dry.json" "$STATETOOL" delete --dry-run - logs -o -
check_rc 0; check_empty "$T/dry.json"; check_err_has "dry run: nothing written"
check_err_has "  - urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::logs"

# refusals: zero bytes, exit 1
pipe "$F/base.json" "$T/r.json" "$STATETOOL" delete - assets-policy -o -
check_rc 1; check_empty "$T/r.json"; check_err_has "can't be safely deleted"; check_no_tmp
pipe "$F/base.json" "$T/r.json" "$STATETOOL" delete - no-such-resource -o -
check_rc 1; check_empty "$T/r.json"
pipe "$F/base.json" "$T/r.json" "$STATETOOL" delete --json - no-such-resource -o -
check_rc 1; check_empty "$T/r.json"; check_err_has '"ok": false'   # (--json's failure document on stderr)
printf '{"version": 3, "deployment": {' >"$T/bad.json"
pipe "$T/bad.json" "$T/r.json" "$STATETOOL" delete - logs -o -
check_rc 1; check_empty "$T/r.json"
gzip -c "$F/base.json" | head -c 300 >"$T/cut.json.gz"
pipe "$T/cut.json.gz" "$T/r.json" "$STATETOOL" delete - logs -o -
check_rc 1; check_empty "$T/r.json"
pipe "$F/base.json" "$T/r.json" "$STATETOOL" edit - --from "$F/broken.json" -o -
check_rc 1; check_empty "$T/r.json"; check_err_has "nothing written"
cp "$V/secrets-plaintext.json" "$T/pt.json"
pipe "$T/pt.json" "$T/r.json" env PULUMI_CONFIG_PASSPHRASE=wrong "$STATETOOL" secrets encrypt - -o -
check_rc 1; check_empty "$T/r.json"; check_err_has "incorrect passphrase"
check_no_tmp

# secrets: new ciphertexts (random nonces, a new salt), so checked by what they decrypt to
pipe "$T/pt.json" "$T/enc.json" env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" secrets encrypt - -o -
check_rc 0; check_err_has "1 secret encrypted"
if grep -q hunter2 "$T/enc.json"; then bad "plaintext left"; else ok; fi
run "encrypted verify" env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" secrets verify "$T/enc.json"
check_rc 0; check_out "2 secrets, 0 failed to decrypt"
printf 'the new one\n' >"$T/newpw"
pipe "$T/enc.json" "$T/rk.json" env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" secrets rekey --new-passphrase-file "$T/newpw" - -o -
check_rc 0; check_err_has "2 secrets re-encrypted"
run "rekeyed verify" env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets verify "$T/rk.json"
check_rc 0; check_out "2 secrets, 0 failed to decrypt"

# edit without --from: the editor needs a terminal; standard input cannot be both
run "edit - without a terminal" sh -c "setsid -w '$STATETOOL' edit - -o - < '$F/base.json'"
check_rc 2; check_out_empty; check_err_has "the editor needs a terminal"
run "edit - --from -" st edit - --from - <"$F/base.json"
check_rc 2; check_out_empty; check_err_has "STATE and --from cannot both be standard input"

# migrate: a version 1 checkpoint, migrated in place and through the pipe
same "migrate" "$FIXTURES/pulumi/checkpoint-v1.json" migrate
check_err_has "<stdin> migrated from version 1 to 3:"
pipe "$FIXTURES/pulumi/checkpoint-v1.json" "$T/m.json" "$STATETOOL" migrate -
check_rc 0; check_same "$T/file.json" "$T/m.json"
pipe "$F/base.json" "$T/m.json" "$STATETOOL" migrate -
check_rc 0; check_same "$F/base.json" "$T/m.json"; check_err_has "nothing to migrate"

# convert: the bytes -o FILE writes; a gzip input stays gzip, --no-gzip decompresses
st convert "$F/base.json" --envelope checkpoint --compact -o "$T/conv.json"
pipe "$F/base.json" "$T/c.json" "$STATETOOL" convert - --envelope checkpoint --compact -o -
check_rc 0; check_same "$T/conv.json" "$T/c.json"
gzip -c "$F/base.json" >"$T/cin.json.gz"
st convert "$T/cin.json.gz" -o "$T/conv.json.gz"
pipe "$T/cin.json.gz" "$T/c.gz" "$STATETOOL" convert - -o -
check_rc 0; check_same "$T/conv.json.gz" "$T/c.gz"
pipe "$T/cin.json.gz" "$T/c.json" "$STATETOOL" convert - --no-gzip -o -
check_rc 0; check_same "$F/base.json" "$T/c.json"
pipe "$T/cut.json.gz" "$T/r.json" "$STATETOOL" convert - -o -
check_rc 1; check_empty "$T/r.json"

# import: --dest - (the state from stdin, the result to stdout), or --file - as before
# (two imports stamp "created" and "modified" with the time of their run, which a second's
# boundary between them changes: compared without those times)
check_same_times() {
	sed 's/"\(created\|modified\)": "[^"]*"/"\1": T/g' "$1" > "$T/same1"
	sed 's/"\(created\|modified\)": "[^"]*"/"\1": T/g' "$2" > "$T/same2"
	if cmp -s "$T/same1" "$T/same2"; then ok; else bad "$1 and $2 differ (times aside)"; fi
}
cat >"$T/specs.json" <<'J'
{"nameTable": {"eu": "urn:pulumi:dev::shop::pulumi:providers:aws::eu"},
 "resources": [{"type": "aws:sns/topic:Topic", "name": "t", "id": "t-1", "provider": "eu", "outputs": {"arn": "t"}}]}
J
cp "$F/base.json" "$T/i.json"
run "import (file)" st import --dest "$T/i.json" --file "$T/specs.json"
check_rc 0
pipe "$F/base.json" "$T/io.json" "$STATETOOL" import --dest - --file "$T/specs.json"
check_rc 0; check_same_times "$T/i.json" "$T/io.json"; check_err_has "1 resource imported"
cp "$F/base.json" "$T/i2.json"
pipe "$T/specs.json" "$T/io2.json" "$STATETOOL" import --dest "$T/i2.json" --file - -o -
check_rc 0; check_same_times "$T/i.json" "$T/io2.json"; check_same "$F/base.json" "$T/i2.json"
pipe "$F/base.json" "$T/r.json" "$STATETOOL" import --dest - --file "$T/specs.json" --dry-run
check_rc 0; check_empty "$T/r.json"; check_err_has "would add urn:pulumi:dev::shop::aws:sns/topic:Topic::t"
printf '{"resources": [{"type": "aws:sns/topic:Topic", "name": "t"}]}' >"$T/badspec.json"
pipe "$F/base.json" "$T/r.json" "$STATETOOL" import --dest - --file "$T/badspec.json"
check_rc 1; check_empty "$T/r.json"
run "import both -" st import --dest - --file - <"$T/specs.json"
check_rc 2; check_out_empty; check_err_has "--dest and --file cannot both be standard input"

# move: one side '-'. The source from stdin: the destination file written first, then the
# changed source to stdout; the destination from stdin: the changed destination to stdout.
M=$FIXTURES/move
U='urn:pulumi:sourceStack::test::a:b:c::name'
cp "$M/leaf.json" "$T/src.json"; cp "$M/dest-same-provider.json" "$T/dst.json"
run "move (files)" st move --source "$T/src.json" --dest "$T/dst.json" "$U"
check_rc 0
cp "$M/dest-same-provider.json" "$T/dst2.json"
pipe "$M/leaf.json" "$T/mv.json" "$STATETOOL" move --source - --dest "$T/dst2.json" "$U" -o -
check_rc 0; check_same "$T/src.json" "$T/mv.json"; check_same "$T/dst.json" "$T/dst2.json"
check_same "$M/dest-same-provider.json" "$T/dst2.json.bak"; check_absent "$T/dst2.json.lock"
check_err_has "Successfully moved resources from <stdin> to $T/dst2.json"
cp "$M/leaf.json" "$T/src2.json"
pipe "$M/dest-same-provider.json" "$T/mv.json" "$STATETOOL" move --source "$T/src2.json" --dest - "$U"
check_rc 0; check_same "$T/dst.json" "$T/mv.json"; check_same "$T/src.json" "$T/src2.json"
check_same "$M/leaf.json" "$T/src2.json.bak"
# refused: nothing on stdout, the file side as it was
cp "$M/dest-same-provider.json" "$T/dst3.json"
pipe "$M/leaf.json" "$T/r.json" "$STATETOOL" move --source - --dest "$T/dst3.json" 'urn:pulumi:sourceStack::test::no:such:thing::x'
check_rc 1; check_empty "$T/r.json"; check_same "$M/dest-same-provider.json" "$T/dst3.json"; check_absent "$T/dst3.json.bak"
pipe "$M/leaf.json" "$T/r.json" "$STATETOOL" move --source - --dest "$T/dst3.json" "$U" --dry-run
check_rc 0; check_empty "$T/r.json"; check_same "$M/dest-same-provider.json" "$T/dst3.json"
check_err_has "dry run: nothing written"
run "move both -" st move --source - --dest - "$U"
check_rc 2; check_err_has "--source and --dest cannot both be standard input"
run "move -o - with files" st move --source "$T/src.json" --dest "$T/dst.json" "$U" -o -
check_rc 2; check_err_has "-o takes '-' only, with a side of '-'"
# a source from stdin whose result cannot reach stdout (a reader that closes early): the
# destination was written first, and the message says the resources are in both
current="move, EPIPE"
{ cat "$T/big.json" | "$STATETOOL" move --source - --dest "$T/new.json" --dest-stack p/prod 'urn:pulumi:dev::p::my:index:Thing::thing-1' 2>"$T/err"; echo $? >"$T/rc"; } | head -c 1 >/dev/null
rc=$(cat "$T/rc")
check_rc 1; check_err_has "cannot write to standard output: Broken pipe"; check_err_has "they are in both now"
run "move, EPIPE: the destination" st list "$T/new.json"
check_out_has "urn:pulumi:prod::p::my:index:Thing::thing-1"
check_no_tmp

# doc/GUIDE.md's recipe (also in the man page): an export into a DIY backend's stack file, and back, byte for byte
mkdir -p "$T/diy/.pulumi/stacks/shop"; printf 'version: 1\n' >"$T/diy/.pulumi/meta.yaml"
pipe "$F/base.json" "$T/r.json" "$STATETOOL" convert - --envelope checkpoint --checkpoint-stack organization/shop/dev -o "$T/diy/.pulumi/stacks/shop/dev.json"
check_rc 0; check_empty "$T/r.json"
run "into DIY: valid there" st validate "$T/diy/.pulumi/stacks/shop/dev.json"
check_rc 0
{ st convert --envelope export "$T/diy/.pulumi/stacks/shop/dev.json" -o - 2>"$T/err"; echo $? >"$T/rc"; } | cat >"$T/back.json"
rc=$(cat "$T/rc"); current="back from DIY"
check_rc 0; check_same "$F/base.json" "$T/back.json"

# restore does not apply to standard input
run "restore -" st restore - <"$F/base.json"
check_rc 2; check_out_empty; check_err_has "standard input has no backup"

# gzip in, gzip out: the bytes a file write makes (decompress with `convert --no-gzip`)
gzip -c "$F/base.json" >"$T/base.json.gz"
cp "$T/base.json.gz" "$T/g.json.gz"
run "gzip file" st delete "$T/g.json.gz" logs
check_rc 0
pipe "$T/base.json.gz" "$T/g.out" "$STATETOOL" delete - logs
check_rc 0; check_same "$T/g.json.gz" "$T/g.out"

# a reader that closes early (EPIPE), a closed stdout: exit 1, a clear message
current="EPIPE"
{ cat "$T/big.json" | "$STATETOOL" delete - thing-1 -o - 2>"$T/err"; echo $? >"$T/rc"; } | head -c 1 >/dev/null
rc=$(cat "$T/rc")
check_rc 1; check_err_has "cannot write to standard output: Broken pipe"; check_no_tmp
run "closed stdout" sh -c "'$STATETOOL' delete - logs -o - < '$F/base.json' >&-"
check_rc 1; check_err_has "cannot write to standard output: Bad file descriptor"

finish
