#!/bin/sh
# Output conventions, for every command: the primary result on stdout (a validation report
# included), diagnostics on stderr; --json prints one JSON document on failure too (the error's
# code, message and position); an empty result says so; a dry run with no change says
# "no change"; tables are aligned on a terminal.
. "$(dirname "$0")/lib.sh"
: "${JSONGET:?set JSONGET to tests/jsonget}"
P=$FIXTURES/pulumi
unset PULUMI_BACKEND_URL
# a state cut short: a parse error with a line and column
printf '{\n  "version": 3,\n  "deployment": {\n    "resources": [\n' > "$T/bad.json"
cp "$P/valid-checkpoint-v3-diy.json" "$T/good.json"
printf '{"resources": [{"type": "aws:s3/bucket:Bucket", "name": "x", "id": "x-1"}]}' > "$T/specs.json"
printf 'version: 1\n' > "$T/meta.yaml"

# doc FIELD...: stdout is exactly one JSON document; prints the fields (jsonget)
doc() { "$JSONGET" "$@" < "$T/out"; }

# 1. --json on a bad input: one JSON document on stdout with the error's code and message
#    (and its position), the diagnostic on stderr; for every command that has --json.
B=$T/bad.json
while IFS='|' read -r name args; do
	[ -n "$name" ] || continue
	# shellcheck disable=SC2086
	run "$name --json, bad input" st $args
	if [ "$rc" = 1 ] || [ "$rc" = 2 ]; then ok; else bad "exit code $rc"; fi
	case $name in
	validate | "index update")
		# the command's own report is the document: here it names the problem
		if doc format_version > /dev/null; then ok; else bad "stdout is not one JSON document"; fi
		;;
	*)
		if doc error.code error.message > "$T/fields"; then ok; else bad "stdout is not one JSON document with error.code and error.message"; fi
		if [ "$(sed -n 1p "$T/fields")" != "" ] && [ "$(sed -n 2p "$T/fields")" != "" ]; then ok; else bad "empty code or message"; fi
		check_err_has "statetool: error: "
		;;
	esac
done <<EOF
validate|validate --json $B
list|list --json $B
show|show --json $B x
migrate|migrate --json --dry-run $B
delete|delete --json $B x
rename|rename --json $B x y
protect|protect --json $B x
unprotect|unprotect --json $B x
taint|taint --json $B x
untaint|untaint --json $B x
repair|repair --json $B
pending|pending --json $B
pending clear|pending clear --json $B
replace-provider|replace-provider --json $B a b
edit|edit --json --from $T/good.json $B
move|move --json --source $B --dest $T/good.json x
import|import --json --dest $B --file $T/specs.json --no-read
secrets show|secrets show --json $B
secrets verify|secrets verify --json $B
index update|index update --json --db $T/ix.sqlite $B
query|query --json --db $T/no-such-index.sqlite
stacks|stacks --json --backend $T/no-such-dir
convert|convert --json $B -o $T/never.json
restore|restore --json --dry-run $B
unlock|unlock --json --backend $T/no-such-dir -s a/b
EOF

# the position: file, line and column of a parse error; the code names its kind
run "list --json: position" st list --json "$B"
check_rc 1
doc format_version command ok exit_code error.code error.file error.line error.column > "$T/fields"
check_file_is "$T/fields" "1
list
false
1
parse
$B
5
1
"
check_err "statetool: error: $B:5:1: unexpected end of JSON input"
# a usage error, wherever --json is among the options
run "usage error with --json" st list --bogus --json "$B"
check_rc 2
doc error.code error.message > "$T/fields"
check_file_is "$T/fields" "usage
bad option
"
check_err_has "Try 'statetool list --help' for more information."
# a stack that is not there: the message, no position
run "missing stack" st list --json --backend "$T/nowhere" -s a/b
check_rc 1; doc error.code error.message > "$T/fields"
check_file_is "$T/fields" "not-found
backend directory '$T/nowhere' does not exist
"
# a failure after the command printed its own document: still one document
run "validate --json: its report only" st validate --json "$B"
check_rc 1
doc valid errors > "$T/fields"
check_file_is "$T/fields" "false
1
"
check_err_empty

# 2. the validation report is the primary result: stdout
run "validate report on stdout" st validate "$B"
check_rc 1; check_err_empty
check_out "$B: error: [json/syntax] unexpected end of JSON input (line 5, column 1)
$B: invalid, 1 error, 0 warnings"
run "validate ok on stdout" st validate "$T/good.json"
check_rc 0; check_err_empty
check_out "$T/good.json: valid, 0 errors, 0 warnings (4 resources)"

# 3. an empty result says so
printf '{"version": 3, "deployment": {"manifest": {"time": "2024-01-01T00:00:00Z", "magic": "", "version": ""}}}' > "$T/empty.json"
run "list: none" st list "$T/empty.json"
check_rc 0; check_out "no resources"; check_err_empty
run "list --json: none" st list --json "$T/empty.json"
check_rc 0; doc resources > "$T/fields"; check_file_is "$T/fields" "[]
"
run "pending: none" st pending "$T/good.json"
check_rc 0; check_out "no pending operations"
E=$T/emptybackend
mkdir -p "$E/.pulumi"
cp "$T/meta.yaml" "$E/.pulumi/meta.yaml"
run "stacks: none" st stacks --backend "$E"
check_rc 0; check_out "no stacks"; check_err_empty
run "stacks --json: none" st stacks --json --backend "$E"
check_rc 0; doc stacks > "$T/fields"; check_file_is "$T/fields" "[]
"
run "index of no stacks" st index update --backend "$E"
check_rc 0
run "query: none" st query --backend "$E"
check_rc 0; check_out "no resources"
run "query --sql: none" st query --backend "$E" --sql "SELECT qname FROM stacks"
check_rc 0; check_out "no rows"

# 4. a dry run with no change says "no change"; a run with none writes nothing and says so
BUCKET='urn:pulumi:dev::proj::my:index:Comp$aws:s3/bucket:Bucket::b'
cp "$T/good.json" "$T/g.json"
run "protect --dry-run: already" st protect --dry-run "$T/g.json" "$BUCKET"
check_rc 0; check_out "no change"
run "protect: already" st protect "$T/g.json" "$BUCKET"
check_rc 0; check_out "no change: nothing written"; check_same "$T/good.json" "$T/g.json"; check_absent "$T/g.json.bak"
run "repair --dry-run: nothing" st repair --dry-run "$T/g.json"
check_rc 0; check_out "The snapshot is already valid; skipping repair
no change"
run "protect --dry-run --json: no change" st protect --dry-run --json "$T/g.json" "$BUCKET"
check_rc 0; doc written resources > "$T/fields"
check_file_is "$T/fields" 'false
{"added":[],"removed":[],"changed":[]}
'
cp "$T/g.json" "$T/g.json.bak"
run "restore --dry-run: the backup is the state" st restore --dry-run "$T/g.json"
check_rc 0; check_err_empty; check_out "no differences
no change"
R=$T/rbackend
mkdir -p "$R/.pulumi/stacks/proj"
cp "$T/meta.yaml" "$R/.pulumi/meta.yaml"
cp "$T/good.json" "$R/.pulumi/stacks/proj/dev.json"
run "restore --dry-run --generation: the same" st restore --dry-run --backend "$R" -s proj/dev --generation current
check_rc 0; check_out "no differences
no change"
run "migrate --dry-run: a version 3 state" st migrate --dry-run "$T/g.json"
check_rc 0; check_out "no change: $T/g.json is already version 3; nothing to migrate"
run "migrate --json --dry-run: a version 3 state" st migrate --json --dry-run "$T/g.json"
check_rc 0
check_out '{
    "format_version": 1,
    "command": "migrate",
    "dry_run": true,
    "from": 3,
    "to": 3,
    "written": false,
    "changes": []
}'
rm -f "$T/g.json.bak"

# 5b. --json of convert, restore and unlock: the result as one document; a failure as one too
cp "$T/good.json" "$T/c.json"
run "convert --json" st convert --json "$T/c.json" -o "$T/c-export.json" --envelope export
check_rc 0; check_err_empty
check_out "{
    \"format_version\": 1,
    \"command\": \"convert\",
    \"input\": \"$T/c.json\",
    \"output\": \"$T/c-export.json\",
    \"written\": true,
    \"envelope\": \"export\",
    \"compression\": \"none\",
    \"version\": 3
}"
cp "$T/c-export.json" "$T/c-export.before"
run "convert --json: OUT holds it already" st convert --json "$T/c-export.json" -o "$T/c-export.json"
check_rc 0; check_out_has '"written": false,'; check_same "$T/c-export.json" "$T/c-export.before"
check_absent "$T/c-export.json.bak"
st convert --gzip "$T/c.json" -o "$T/c.json.gz" > /dev/null
run "convert --json -o -: the state on stdout, the document on stderr" st convert --json --gzip "$T/c.json" -o -
check_rc 0; check_same "$T/out" "$T/c.json.gz"
if printf '%s\n' "{
    \"format_version\": 1,
    \"command\": \"convert\",
    \"input\": \"$T/c.json\",
    \"output\": \"-\",
    \"written\": true,
    \"envelope\": \"checkpoint\",
    \"compression\": \"gzip\",
    \"version\": 3
}" | cmp -s - "$T/err"; then ok; else bad "stderr is not the document"; fi
run "convert --json: a bad input" st convert --json "$B" -o "$T/never.json"
check_rc 1; check_absent "$T/never.json"
check_out "{
    \"format_version\": 1,
    \"command\": \"convert\",
    \"ok\": false,
    \"exit_code\": 1,
    \"error\": {
        \"code\": \"parse\",
        \"message\": \"unexpected end of JSON input\",
        \"file\": \"$B\",
        \"line\": 5,
        \"column\": 1
    }
}"
check_err "statetool: error: $B:5:1: unexpected end of JSON input"
run "convert --json: usage" st convert --json "$T/c.json"
check_rc 2
check_out '{
    "format_version": 1,
    "command": "convert",
    "ok": false,
    "exit_code": 2,
    "error": {
        "code": "usage",
        "message": "missing -o OUT"
    }
}'
st unprotect "$T/c.json" "$BUCKET" > /dev/null 2>&1
cp "$T/c.json" "$T/c.after"
run "restore --json --dry-run" st restore --json --dry-run "$T/c.json"
check_rc 0; check_err_empty; check_same "$T/c.json" "$T/c.after"
check_out "{
    \"format_version\": 1,
    \"command\": \"restore\",
    \"target\": \"$T/c.json\",
    \"from\": \"bak\",
    \"dry_run\": true,
    \"written\": false,
    \"same\": false,
    \"added\": [],
    \"removed\": [],
    \"changed\": [
        {
            \"urn\": \"$BUCKET\",
            \"type\": \"aws:s3/bucket:Bucket\",
            \"id\": \"b-123\",
            \"changes\": [
                {
                    \"path\": \"/protect\",
                    \"op\": \"add\",
                    \"new\": true
                }
            ]
        }
    ],
    \"deployment\": []
}"
run "restore --json" st restore --json "$T/c.json"
check_rc 0; check_err_empty; check_same "$T/c.json" "$T/good.json"; check_same "$T/c.json.bak" "$T/c.after"
check_out "{
    \"format_version\": 1,
    \"command\": \"restore\",
    \"target\": \"$T/c.json\",
    \"from\": \"bak\",
    \"dry_run\": false,
    \"written\": true,
    \"same\": false,
    \"added\": [],
    \"removed\": [],
    \"changed\": [
        {
            \"urn\": \"$BUCKET\",
            \"type\": \"aws:s3/bucket:Bucket\",
            \"id\": \"b-123\",
            \"changes\": [
                {
                    \"path\": \"/protect\",
                    \"op\": \"add\",
                    \"new\": true
                }
            ]
        }
    ],
    \"deployment\": []
}"
# restore shows what it changes first, as restore --generation does
run "restore: the diff first" st restore "$T/c.json"
check_rc 0; check_err_empty; check_same "$T/c.json" "$T/c.after"; check_same "$T/c.json.bak" "$T/good.json"
check_out "~ $BUCKET
    - /protect: true
0 added, 0 removed, 1 changed
restored $T/c.json from $T/c.json.bak (the replaced version is now $T/c.json.bak)"
# a broken state is put right by its backup: no diff, a warning saying why
printf 'garbage' > "$T/c.json"
run "restore of a state that does not load" st restore "$T/c.json"
check_rc 0; check_same "$T/c.json" "$T/good.json"
check_out "restored $T/c.json from $T/c.json.bak (the replaced version is now $T/c.json.bak)"
check_err "statetool: warning: no diff shown: $T/c.json: invalid character 'g' looking for beginning of value"
# a backup that does not load is refused, and nothing changes
run "restore of a backup that does not load" st restore "$T/c.json"
check_rc 1; check_out_empty; check_same "$T/c.json" "$T/good.json"
check_err "statetool: error: $T/c.json.bak:1:1: invalid character 'g' looking for beginning of value"
cp "$T/good.json" "$T/c.json"; rm -f "$T/c.json.bak"
run "restore --json: no backup" st restore --json "$T/c-export.json"
check_rc 1
check_out "{
    \"format_version\": 1,
    \"command\": \"restore\",
    \"ok\": false,
    \"exit_code\": 1,
    \"error\": {
        \"code\": \"not-found\",
        \"message\": \"no backup '$T/c-export.json.bak' to restore\"
    }
}"
check_err "statetool: error: no backup '$T/c-export.json.bak' to restore"
: > "$T/c.json.lock"
run "unlock --json" st unlock --json "$T/c.json"
check_rc 0; check_err_empty; check_absent "$T/c.json.lock"
check_out "{
    \"format_version\": 1,
    \"command\": \"unlock\",
    \"target\": \"$T/c.json\",
    \"removed\": 1
}"
run "unlock --json: no lock" st unlock --json "$T/c.json"
check_rc 0; check_out_has '"removed": 0'
run "unlock --json: no backend" st unlock --json --backend "$T/no-such-dir" -s a/b
check_rc 1
check_out "{
    \"format_version\": 1,
    \"command\": \"unlock\",
    \"ok\": false,
    \"exit_code\": 1,
    \"error\": {
        \"code\": \"not-found\",
        \"message\": \"backend directory '$T/no-such-dir' does not exist\"
    }
}"
check_err "statetool: error: backend directory '$T/no-such-dir' does not exist"

# 5. tables aligned on a terminal (script(1) gives the command one); tab-separated in a pipe
st index update --backend "$E" > /dev/null 2>&1
mkdir -p "$E/.pulumi/stacks/proj"
cp "$T/good.json" "$E/.pulumi/stacks/proj/dev.json"
st index update --backend "$E" > /dev/null 2>&1
if command -v script > /dev/null 2>&1; then
	run "query on a terminal" script -qec "'$STATETOOL' query --backend '$E' --type my:index:Comp" /dev/null
	check_rc 0
	tr -d '\r' < "$T/out" > "$T/tty"
	check_file_is "$T/tty" "stack                  urn                                     type           id  import_id  parent                                               provider  flags
organization/proj/dev  urn:pulumi:dev::proj::my:index:Comp::c  my:index:Comp  -   -          urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev  -         component
"
	run "stacks on a terminal" script -qec "'$STATETOOL' stacks --backend '$E'" /dev/null
	check_rc 0
	tr -d '\r' < "$T/out" > "$T/tty"
	check_file_is "$T/tty" "organization/proj/dev  4  v3  $E/.pulumi/stacks/proj/dev.json
"
fi
run "query in a pipe" st query --backend "$E" --type my:index:Comp
check_rc 0
check_out "$(printf 'stack\turn\ttype\tid\timport_id\tparent\tprovider\tflags\norganization/proj/dev\turn:pulumi:dev::proj::my:index:Comp::c\tmy:index:Comp\t-\t-\turn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev\t-\tcomponent')"

# 6. SIGBUS (another program truncated a file the command was reading through a mapping): a
# message and exit 1, not a crash, and with --json the failure document. A truncation between
# the library's checks cannot be timed in a test, so the signal itself is sent, while the
# command waits in read(2) on standard input (a FIFO whose writer never writes).
mkfifo "$T/fifo"
sleep 120 > "$T/fifo" &
holder=$!
"$STATETOOL" validate --json - < "$T/fifo" > "$T/out" 2> "$T/err" &
pid=$!
# wait_in_syscall PID 'NR ARG0': until PID is statetool itself (not a wrapper script that
# has not exec'd it yet) and waits in that system call (x86-64 numbers; elsewhere 3 s)
wait_in_syscall() {
	i=0
	if [ -r /proc/self/syscall ] && [ "$(uname -m)" = x86_64 ]; then
		while [ $i -lt 600 ] && ! { readlink "/proc/$1/exe" | grep -q statetool &&
			grep -q "^$2 " "/proc/$1/syscall"; } 2>/dev/null; do
			sleep 0.1
			i=$((i + 1))
		done
	else
		sleep 3
	fi
}
wait_in_syscall "$pid" "0 0x0"
current="SIGBUS"
kill -BUS "$pid"
wait "$pid"
rc=$?
kill "$holder" 2>/dev/null
check_rc 1
check_out '{
    "format_version": 1,
    "command": "validate",
    "ok": false,
    "exit_code": 1,
    "error": {
        "code": "conflict",
        "message": "a file was truncated by another program while statetool was reading it (SIGBUS); no state was left half-written: run the command again"
    }
}'
check_err "statetool: error: a file was truncated by another program while statetool was reading it (SIGBUS); no state was left half-written: run the command again"
# with a lock taken (secrets encrypt locks the state, then waits to open its passphrase file,
# a FIFO): the message names how to remove the lock, which stays
cp "$FIXTURES/validate/secrets-plaintext.json" "$T/bus.json"
mkfifo "$T/passfifo"
env -u PULUMI_CONFIG_PASSPHRASE PULUMI_CONFIG_PASSPHRASE_FILE="$T/passfifo" "$STATETOOL" secrets encrypt "$T/bus.json" > "$T/out" 2> "$T/err" &
pid=$!
wait_in_syscall "$pid" "257 0xffffff9c"
current="SIGBUS with a lock"
kill -BUS "$pid"
wait "$pid"
rc=$?
check_rc 1
check_err "statetool: error: a file was truncated by another program while statetool was reading it (SIGBUS); no state was left half-written, but the lock it took may remain: remove it with \`statetool unlock $T/bus.json\`; then run the command again"
check_same "$FIXTURES/validate/secrets-plaintext.json" "$T/bus.json"
run "the lock stays" st unlock "$T/bus.json"
check_rc 0; check_out_has "removed 1 lock"

finish
