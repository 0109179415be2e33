#!/bin/sh
# Backends named by URL, used through the store calls only: every command that takes --backend
# on a backend, `stack rename` (with a kill and a rerun), `upgrade` of a legacy backend and
# `doctor` before and after it, and `move` between two different stores, with a kill (SIGKILL,
# through the crash hook) at each step of the two-stack journal and recovery from either side.
#
# The two stores are two file:// directories unless the environment names others:
#   STATETOOL_TEST_STORE_A=s3://bucket/x?endpoint=...  STATETOOL_TEST_STORE_B=azblob://c/y ...
# runs the same test between those (each round works under a fresh random prefix in each, so
# the stores need not be empty; a postgres:// URL, whose path is its database, gets a fresh
# table for each round instead, so it must not name one). The test looks at the stores with
# tests/storetool, which reads them through the library's store calls, whatever the scheme.
# tests/cli/t_xstores.sh runs it between stores of different schemes on the test servers.
. "$(dirname "$0")/lib.sh"
: "${STORETOOL:?set STORETOOL to tests/storetool}"
M=$FIXTURES/move
P=$FIXTURES/pulumi
SRC=organization/test/sourceStack
DST=organization/test/destStack
S=sourceStack
SK=.pulumi/stacks/test/sourceStack.json
DK=.pulumi/stacks/test/destStack.json
run_id=$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')

# sub URL NAME: URL with /NAME added to its path (before a query string); postgres:// (whose
# path is the database, and the key prefix too, as Pulumi reads it): a table of its own instead
sub() {
	case "$1" in
	postgres://*\?*) printf '%s&table=%s' "$1" "$(echo "$2" | tr -c 'a-z0-9\n' _)" ;;
	postgres://*) printf '%s?table=%s' "$1" "$(echo "$2" | tr -c 'a-z0-9\n' _)" ;;
	*\?*) printf '%s/%s?%s' "${1%%\?*}" "$2" "${1#*\?}" ;;
	*) printf '%s/%s' "${1%/}" "$2" ;;
	esac
}
# store NAME LETTER: a fresh, empty backend URL for one round
store() {
	eval "base=\${STATETOOL_TEST_STORE_$2:-}"
	if [ -z "$base" ]; then
		mkdir -p "$T/$2/$1"
		printf 'file://%s/%s/%s' "$T" "$2" "$1"
		return
	fi
	case "$base" in
	postgres://*) # the URL's path is the database: one table per round instead
		t=$(printf 'st_%s_%s' "$run_id" "$1" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9_' '_' | cut -c1-60)
		case "$base" in
		*\?*) printf '%s&table=%s' "$base" "$t" ;;
		*) printf '%s?table=%s' "$base" "$t" ;;
		esac
		return
		;;
	esac
	u=$(sub "$base" "t-$run_id-$1")
	case "$u" in
	file://*) p=${u#file://}; mkdir -p "${p%%\?*}" ;;
	*://*) ;;
	*) mkdir -p "$u" ;;
	esac
	printf '%s' "$u"
}
put() { "$STORETOOL" put "$1" "$2"; }              # put URL KEY < data
keys() { "$STORETOOL" ls "$1" "${2:-}"; }            # keys URL [PREFIX]
leftovers() { keys "$1" | grep -c 'statetool-'; }    # staged objects and journals
locks() { keys "$1" | grep -c '^\.pulumi/locks/'; }   # lock objects
bothlocks() { echo "$(locks "$A") $(locks "$B")"; }
bothleft() { echo "$(leftovers "$A") $(leftovers "$B")"; }
dump() { for k in $(keys "$1"); do echo "== $k"; "$STORETOOL" cat "$1" "$k"; done; } # every byte
# unchanged NAME: no byte of either store changed since $T/a.before and $T/b.before (dump)
unchanged() {
	current=$1
	dump "$A" >"$T/a.after"; dump "$B" >"$T/b.after"
	if cmp -s "$T/a.before" "$T/a.after" && cmp -s "$T/b.before" "$T/b.after"; then ok; else bad "a store changed"; fi
}
setup() { # setup ROUND: $A holds the source stack, $B is empty
	A=$(store "$1" A)
	B=$(store "$1" B)
	printf 'version: 1\n' | put "$A" .pulumi/meta.yaml
	printf 'version: 1\n' | put "$B" .pulumi/meta.yaml
	put "$A" "$SK" < "$M/children.json"
}
urns() { "$STATETOOL" list --json --backend "$1" --stack "$2" | sed -n 's/^ *"urn": "\(.*\)",$/\1/p'; }
mv_() { "$STATETOOL" move --source-backend "$A" --dest-backend "$B" --source $SRC --dest $DST "$@"; }

# ---- every command that takes --backend, on a backend named by URL ----
setup cmds
run "stacks" st stacks --backend "$A"
check_rc 0; check_out_has "organization/test/sourceStack"
run "stacks --json names the object" st stacks --backend "$A" --json
check_rc 0; check_out_has "$SK\""
run "validate --backend" st validate --backend "$A"
# (its provider is b64, Pulumi's test one: a warning)
check_rc 0; check_out_has "1 stack checked: 0 errors, 1 warning"
run "validate --stack" st validate --backend "$A" --stack test/sourceStack
check_rc 0; check_out_has "test/sourceStack: valid, 0 errors, 1 warning (3 resources)"
run "list" urns "$A" test/sourceStack
check_out "urn:pulumi:sourceStack::test::pulumi:providers:a::default_1_0_0
urn:pulumi:sourceStack::test::a:b:c::name
urn:pulumi:sourceStack::test::a:b:c\$a:b:c::name2"
run "show" st show --json --backend "$A" --stack test/sourceStack name2
check_rc 0; check_out_has '"parent": "urn:pulumi:sourceStack::test::a:b:c::name"'
run "an edit" st protect --backend "$A" --stack test/sourceStack name
check_rc 0
run "the edit's backup" keys "$A" .pulumi/stacks/
check_out ".pulumi/stacks/test/sourceStack.json
.pulumi/stacks/test/sourceStack.json.bak"
run "the backup is the version before" "$STORETOOL" cat "$A" "$SK.bak"
check_same "$M/children.json" "$T/out"
run "the edit is there" st show --json --backend "$A" --stack test/sourceStack name
check_out_has '"protect": true'
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"2024-05-01T10:00:00Z"}' |
	put "$A" .pulumi/locks/organization/test/sourceStack/6a1f0e2c-0000-4000-8000-000000000001.json
"$STORETOOL" cat "$A" "$SK" > "$T/locked.before"
run "a Pulumi lock object blocks" st unprotect --backend "$A" --stack test/sourceStack name
check_rc 1; check_err_has "the stack is currently locked by 1 lock(s)"
check_err_has "created by alice@ci-runner (pid 4242) at 2024-05-01T10:00:00Z"
run "nothing written under the lock" "$STORETOOL" cat "$A" "$SK"
check_same "$T/locked.before" "$T/out"
run "unlock" st unlock --backend "$A" --stack test/sourceStack
check_rc 0; check_out "removed 1 lock of test/sourceStack"
run "no lock left" keys "$A" .pulumi/locks/
check_out_empty
run "index update" st index update --backend "$A" --db "$T/cmds.sqlite"
check_rc 0; check_out_has "1 stack: 1 indexed (3 resources), 0 unchanged"
: >"$T/ixlog"
STATETOOL_HTTP_LOG=$T/ixlog
export STATETOOL_HTTP_LOG
run "index update, nothing changed" st index update --backend "$A" --db "$T/cmds.sqlite"
check_rc 0; check_out_has "1 stack: 0 indexed (0 resources), 1 unchanged"
unset STATETOOL_HTTP_LOG
# the listing told: no stack object was read (requests logged by stores on the network)
run "index update, nothing changed, reads no stack" grep -E '^(GET|READ) .*stacks/' "$T/ixlog"
check_rc 1
run "query" st query --db "$T/cmds.sqlite" --sql "SELECT urn FROM resources WHERE protect = 1"
check_out "urn
urn:pulumi:sourceStack::test::a:b:c::name"
run "pending" st pending --backend "$A" --stack test/sourceStack
check_rc 0; check_out "no pending operations"

# ---- stack rename (pulumi stack rename) on a backend named by URL ----
# the new object, its history, backups and tags, the old object kept as its .bak, through the
# store's calls only; to another project; a taken name and a lock refused with nothing changed;
# a kill, then a command on the new stack, end as an uninterrupted rename ends
setup rename
echo h | put "$A" .pulumi/history/test/sourceStack/sourceStack-1700000000000000000.history.json
echo c | put "$A" .pulumi/history/test/sourceStack/sourceStack-1700000000000000000.checkpoint.json
echo b | put "$A" .pulumi/backups/test/sourceStack/sourceStack.1700000000000000000.json
printf '{"version":1,"tags":{"owner":"ops"}}\n' | put "$A" .pulumi/stacks/test/sourceStack.pulumi-tags
sed 's/urn:pulumi:sourceStack::test::/urn:pulumi:prod::test::/g; s/"stack":"organization\/test\/sourceStack"/"stack":"organization\/test\/prod"/' "$M/children.json" > "$T/want-prod.json"
# the keys, each statetool generation's UnixNano as N
gkeys() { keys "$1" | sed 's/\.17[1-9][0-9]\{16\}\.json/.N.json/'; }
run "stack rename" st stack rename --backend "$A" --stack test/sourceStack prod
check_rc 0; check_out "Renamed organization/test/sourceStack to organization/test/prod"
check_err "statetool: note: rename the project's Pulumi.sourceStack.yaml to Pulumi.prod.yaml, as pulumi stack rename does (statetool changes the backend only; the file holds the stack's config and encryptionsalt)"
run "stack rename: the objects" gkeys "$A"
check_out ".pulumi/backups/test/prod/prod.1700000000000000000.json
.pulumi/backups/test/prod/prod.N.json
.pulumi/history/test/prod/prod-1700000000000000000.checkpoint.json
.pulumi/history/test/prod/prod-1700000000000000000.history.json
.pulumi/meta.yaml
.pulumi/stacks/test/prod.json
.pulumi/stacks/test/prod.pulumi-tags
.pulumi/stacks/test/sourceStack.json.bak"
run "stack rename: the new object" "$STORETOOL" cat "$A" .pulumi/stacks/test/prod.json
check_same "$T/want-prod.json" "$T/out"
run "stack rename: the old object is its .bak" "$STORETOOL" cat "$A" "$SK.bak"
check_same "$M/children.json" "$T/out"
run "stack rename: the tags moved" "$STORETOOL" cat "$A" .pulumi/stacks/test/prod.pulumi-tags
check_out '{"version":1,"tags":{"owner":"ops"}}'
run "stack rename: valid in its place" st validate --backend "$A" --stack test/prod
check_rc 0; check_out_has "test/prod: valid, 0 errors, 1 warning (3 resources)"
run "stack rename: to another project" st stack rename --backend "$A" -s test/prod organization/web/prod
check_rc 0; check_out "Renamed organization/test/prod to organization/web/prod"
run "stack rename: to another project, URNs" urns "$A" web/prod
check_out "urn:pulumi:prod::web::pulumi:providers:a::default_1_0_0
urn:pulumi:prod::web::a:b:c::name
urn:pulumi:prod::web::a:b:c\$a:b:c::name2"
run "stack rename: to another project, the history" keys "$A" .pulumi/history/
check_out ".pulumi/history/web/prod/prod-1700000000000000000.checkpoint.json
.pulumi/history/web/prod/prod-1700000000000000000.history.json"
put "$A" "$SK" < "$M/children.json"
keys "$A" > "$T/keys.before"
run "stack rename: a taken name" st stack rename --backend "$A" -s web/prod organization/test/sourceStack
check_rc 1; check_err "statetool: error: a stack named organization/test/sourceStack already exists"
run "stack rename: a taken name changes nothing" keys "$A"
check_same "$T/keys.before" "$T/out"
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"2024-05-01T10:00:00Z"}' |
	put "$A" .pulumi/locks/organization/test/sourceStack/6a1f0e2c-0000-4000-8000-000000000001.json
run "stack rename: a Pulumi lock object blocks" st stack rename --backend "$A" -s test/sourceStack dev
check_rc 1; check_err_has "the stack is currently locked by 1 lock(s)"
run "stack rename: nothing written under the lock" keys "$A" .pulumi/stacks/
check_out ".pulumi/stacks/test/prod.json.bak
.pulumi/stacks/test/sourceStack.json
.pulumi/stacks/test/sourceStack.json.bak
.pulumi/stacks/web/prod.json
.pulumi/stacks/web/prod.pulumi-tags"
st unlock --backend "$A" --stack test/sourceStack > /dev/null
# a gzip stack, killed after the new object is written: both stacks locked and marked; another's
# lock on the new stack refuses a command on the old one (not a byte changed); once it is gone
# a command on the new stack completes the rename, as if never killed
setup renamekill
"$STORETOOL" rm "$A" "$SK" 2>/dev/null || true
gzip -c < "$M/children.json" | put "$A" "$SK.gz"
run "stack rename: killed" env STATETOOL_CRASH_AT=stack-rename:2 "$STATETOOL" stack rename --backend "$A" -s test/sourceStack prod
check_rc 137
ukeys() { gkeys "$1" | sed 's/[0-9a-f-]\{36\}\.json$/<uuid>.json/'; }
run "stack rename: after the kill, both stacks locked and marked" ukeys "$A"
check_out ".pulumi/backups/test/prod/prod.N.json.gz
.pulumi/locks/organization/test/prod/<uuid>.json
.pulumi/locks/organization/test/sourceStack/<uuid>.json
.pulumi/meta.yaml
.pulumi/stacks/test/prod.json.gz
.pulumi/stacks/test/prod.json.statetool-rename
.pulumi/stacks/test/sourceStack.json.gz
.pulumi/stacks/test/sourceStack.json.statetool-rename"
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"2024-05-01T10:00:00Z"}' |
	put "$A" .pulumi/locks/organization/test/prod/6a1f0e2c-0000-4000-8000-000000000001.json
dump "$A" > "$T/renamekill.before"
run "stack rename: another's lock refuses a command on the old stack" st list --backend "$A" -s test/sourceStack
check_rc 1; check_err_has "created by alice@ci-runner (pid 4242) at 2024-05-01T10:00:00Z"
check_err_has "an interrupted stack rename of organization/test/sourceStack to organization/test/prod is pending: once the lock is gone"
run "stack rename: refused, not a byte changed" dump "$A"
check_same "$T/renamekill.before" "$T/out"
"$STORETOOL" rm "$A" .pulumi/locks/organization/test/prod/6a1f0e2c-0000-4000-8000-000000000001.json
run "stack rename: a command on the new stack completes it" st list --backend "$A" -s test/prod
check_rc 0; check_err_has "statetool: note: completed the interrupted stack rename of organization/test/sourceStack to organization/test/prod"
run "stack rename: after the kill and the completion, the objects" gkeys "$A"
check_out ".pulumi/backups/test/prod/prod.N.json.gz
.pulumi/meta.yaml
.pulumi/stacks/test/prod.json.gz
.pulumi/stacks/test/sourceStack.json.gz.bak"
run "stack rename: after the kill and the completion, as if never killed" sh -c "'$STORETOOL' cat '$A' .pulumi/stacks/test/prod.json.gz | gzip -dc"
check_same "$T/want-prod.json" "$T/out"

# ---- upgrade (pulumi state upgrade) and doctor on a backend named by URL ----
L=$(store upgrade A)
put "$L" .pulumi/stacks/sourceStack.json < "$M/children.json"
echo h | put "$L" .pulumi/history/sourceStack/sourceStack-1700000000000000000.history.json
run "doctor: the legacy layout" st doctor --backend "$L"
check_rc 1; check_out_has "backend: legacy-layout: the backend is in the legacy layout (no .pulumi/meta.yaml)"
check_out_has "1 problem found (1 stack checked)"
case "$L" in # a URL with a password: the fixes name the backend without it, and say so
*://*:*@*) check_out_has "note: the fixes name the backend without its password, as every message does: give it with PGPASSWORD or ~/.pgpass when you run them" ;;
*) check_out_lacks "note: the fixes name" ;;
esac
case "$L" in # postgres: the password in the URL's userinfo, or in its query (%-escaped or not),
postgres://*:*@*) # and the client key's sslpassword: in no output, each noted
	pw=$(printf '%s' "$L" | sed -n 's|^postgres://[^:@/]*:\([^@/]*\)@.*|\1|p')
	nopw=$(printf '%s' "$L" | sed 's|^\(postgres://[^:@/]*\):[^@/]*@|\1@|')
	run "doctor: the password in the userinfo, in no output" sh -c "'$STATETOOL' doctor --backend '$L' 2>&1; '$STATETOOL' doctor --json --backend '$L' 2>&1"
	check_rc 1; check_out_lacks "$pw"
	for q in "password=$pw&sslpassword=ssl-secret-4711" "pass%77ord=$pw&ssl%70assword=ssl-secret-4711"; do
		run "doctor: $q in the query, in no output" sh -c "'$STATETOOL' doctor --backend '$nopw&$q' 2>&1; '$STATETOOL' doctor --json --backend '$nopw&$q' 2>&1"
		check_rc 1; check_out_lacks "$pw"; check_out_lacks "ssl-secret-4711"
		check_out_has "fix: statetool upgrade --backend '$nopw'"
		check_out_has "note: the fixes name the backend without its password, as every message does: give it with PGPASSWORD or ~/.pgpass when you run them"
		check_out_has "note: the fixes name the backend without its sslpassword, as every message does: add it to the URL when you run them"
	done
	;;
esac
run "upgrade --dry-run" st upgrade --dry-run --backend "$L"
check_rc 0
check_out "move .pulumi/history/sourceStack/sourceStack-1700000000000000000.history.json -> .pulumi/history/test/sourceStack/sourceStack-1700000000000000000.history.json
move .pulumi/stacks/sourceStack.json -> .pulumi/stacks/test/sourceStack.json (the old object kept as .pulumi/stacks/sourceStack.json.bak)
write .pulumi/meta.yaml (version: 1)
dry run: 1 stack(s) to upgrade, 0 skipped; nothing written"
run "upgrade --dry-run writes nothing" keys "$L"
check_out ".pulumi/history/sourceStack/sourceStack-1700000000000000000.history.json
.pulumi/stacks/sourceStack.json"
run "upgrade" st upgrade --backend "$L"
check_rc 0; check_out "Upgraded 1 stack(s) to project mode"; check_err_empty
run "upgrade: the objects" keys "$L"
check_out ".pulumi/history/test/sourceStack/sourceStack-1700000000000000000.history.json
.pulumi/meta.yaml
.pulumi/stacks/sourceStack.json.bak
.pulumi/stacks/test/sourceStack.json"
run "upgrade: the stack's bytes" "$STORETOOL" cat "$L" "$SK"
check_same "$M/children.json" "$T/out"
run "doctor after the upgrade" st doctor --backend "$L"
check_rc 0; check_out "no problems found (1 stack checked)"
run "upgrade again" st upgrade --backend "$L"
check_rc 0; check_out "no change: the backend is in the project layout already"

# ---- move between two stores ----
setup move
run "move to a new stack of another store" mv_ "urn:pulumi:$S::test::a:b:c::name"
check_rc 0; check_out_has "Successfully moved resources from $SRC to $DST"
run "moved: source" urns "$A" test/sourceStack
check_out "urn:pulumi:sourceStack::test::pulumi:providers:a::default_1_0_0"
run "moved: destination" urns "$B" test/destStack
check_out "urn:pulumi:destStack::test::pulumi:pulumi:Stack::test-destStack
urn:pulumi:destStack::test::pulumi:providers:a::default_1_0_0
urn:pulumi:destStack::test::a:b:c::name
urn:pulumi:destStack::test::a:b:c\$a:b:c::name2"
run "the destination is a checkpoint of its stack" "$STORETOOL" cat "$B" "$DK"
check_out_has '{"version":3,"checkpoint":{"stack":"organization/test/destStack","latest":'
run "both valid" st validate --backend "$B"
check_rc 0
run "no leftovers in the source's store" leftovers "$A"
check_out "0"
run "no leftovers in the destination's store" leftovers "$B"
check_out "0"
run "the source's backup" "$STORETOOL" cat "$A" "$SK.bak"
check_same "$M/children.json" "$T/out"
run "and back, into an existing stack" "$STATETOOL" move --source-backend "$B" --dest-backend "$A" --source $DST --dest $SRC "urn:pulumi:destStack::test::a:b:c::name"
check_rc 0
run "back: source" urns "$A" test/sourceStack
check_out "urn:pulumi:sourceStack::test::pulumi:pulumi:Stack::test-sourceStack
urn:pulumi:sourceStack::test::pulumi:providers:a::default_1_0_0
urn:pulumi:sourceStack::test::a:b:c::name
urn:pulumi:sourceStack::test::a:b:c\$a:b:c::name2"
run "nothing to recover" mv_ --recover
check_rc 0; check_out "no interrupted move found"
run "the same stack on both sides" "$STATETOOL" move --backend "$A" --source test/sourceStack --dest test/sourceStack x
check_rc 2; check_err_has "the source and the destination are the same stack (test/sourceStack): a move needs two different stacks"
# another spelling of the same store's URL (its identity is the same): still the same stack,
# refused before any lock is taken (not as a lock held by someone)
case "$A" in
postgres://*) A2="$A&connect_timeout=9" ;;
s3://*) A2=$(printf '%s' "$A" | sed 's|endpoint=\([^&]*\)|endpoint=\1/|; s|use_path_style=true&||') ;;
*\?*) A2="${A%%\?*}/?${A#*\?}" ;;
*) A2="$A/" ;;
esac
run "the same stack through two spellings of its store" "$STATETOOL" move --source-backend "$A" --dest-backend "$A2" --source test/sourceStack --dest test/sourceStack x
check_rc 2; check_err_has "the source and the destination are the same stack (test/sourceStack): a move needs two different stacks"
run "no lock left by it" locks "$A"
check_out "0"

# ---- a move's generations (statetool(1), GENERATIONS) ----
# each state of both stacks a backup of its own, the one after a save named by the time of the
# save, history in the order of the saves; no copy replaces a backup. (s3's and azblob's
# Last-Modified is in whole seconds: a copy named by it replaced a backup of that second, and
# sorted before a copy made earlier in it.)
setup gens
GA=.pulumi/backups/test/sourceStack/
GB=.pulumi/backups/test/destStack/
sec=$(st history --json --backend "$A" --stack test/sourceStack | sed -n 's/^ *"time": "\([0-9-]*T[0-9:]*\).*/\1/p' | head -n 1)
planted=${GA}sourceStack.$(TZ=UTC date -d "$sec" +%s)000000000.json
echo '{"planted":1}' | put "$A" "$planted"
run "gens: move" mv_ "urn:pulumi:$S::test::a:b:c::name"
check_rc 0
start=$(date +%s%N)
run "gens: and back" "$STATETOOL" move --source-backend "$B" --dest-backend "$A" --source $DST --dest $SRC "urn:pulumi:destStack::test::a:b:c::name"
check_rc 0
run "gens: a backup of the second the stack was written is kept" "$STORETOOL" cat "$A" "$planted"
check_out '{"planted":1}'
run "gens: the source's generations (planted, before, after each move)" sh -c "'$STORETOOL' ls '$A' $GA | wc -l"
check_out "4"
run "gens: the destination's generations (after each move)" sh -c "'$STORETOOL' ls '$B' $GB | wc -l"
check_out "2"
for side in "A:$GA:$SK" "B:$GB:$DK"; do
	eval "u=\$${side%%:*}"; dir=${side#*:}; dir=${dir%%:*}; cur=${side##*:}
	newest=$(keys "$u" "$dir" | sort | tail -n 1)
	"$STORETOOL" cat "$u" "$cur" > "$T/gens.cur"
	run "gens: ${side%%:*}'s newest backup is its current state" "$STORETOOL" cat "$u" "$newest"
	check_same "$T/gens.cur" "$T/out"
	ns=$(echo "$newest" | sed 's/.*\.\([0-9]*\)\.json$/\1/')
	current="gens: ${side%%:*}'s copy after the second move is named by the time of the save"
	if [ "$ns" -ge "$start" ]; then ok; else bad "$newest is older than the move's start ($start)"; fi
done

# two saves: a generation each, the state before them kept once (PostgreSQL's listing gives no
# size: the dedupe compared none and kept every state twice)
st protect --backend "$A" --stack test/sourceStack name >/dev/null 2>&1
st protect --backend "$A" --stack test/sourceStack name2 >/dev/null 2>&1
run "gens: two saves, two generations more, no copy twice" sh -c "for k in \$('$STORETOOL' ls '$A' $GA); do '$STORETOOL' cat '$A' \$k | cksum; done | sort | uniq -d | wc -l; '$STORETOOL' ls '$A' $GA | wc -l"
check_out "0
6"

# ---- PULUMI_RETAIN_CHECKPOINTS: every save that replaces a stack's checkpoint writes its bytes
# again as <object>.<UnixNano> (Pulumi's saveCheckpoint): a move's two saves, restore, and the
# recovery of a killed move (a move and restore wrote none) ----
# retained KEY URL: how many retained copies of KEY, and whether the newest holds its bytes
retained() {
	n=$(keys "$2" .pulumi/stacks/ | grep -cE "^$(echo "$1" | sed 's/\./\\./g')\.[0-9]{18,}\$")
	newest=$(keys "$2" .pulumi/stacks/ | grep -E "^$(echo "$1" | sed 's/\./\\./g')\.[0-9]{18,}\$" | sort | tail -n 1)
	if [ -n "$newest" ] && [ "$("$STORETOOL" cat "$2" "$1" | cksum)" = "$("$STORETOOL" cat "$2" "$newest" | cksum)" ]; then
		echo "$n same"
	else
		echo "$n"
	fi
}
setup retain
run "retain: move" env PULUMI_RETAIN_CHECKPOINTS=1 "$STATETOOL" move --source-backend "$A" --dest-backend "$B" --source $SRC --dest $DST "urn:pulumi:$S::test::a:b:c::name"
check_rc 0
run "retain: the source's checkpoint retained" retained "$SK" "$A"
check_out "1 same"
run "retain: the destination's checkpoint retained" retained "$DK" "$B"
check_out "1 same"
run "retain: restore" env PULUMI_RETAIN_CHECKPOINTS=1 "$STATETOOL" restore --backend "$A" --stack test/sourceStack
check_rc 0
run "retain: the restored checkpoint retained" retained "$SK" "$A"
check_out "2 same"
run "retain: a retained copy is no stack" st stacks --backend "$A"
check_rc 0; check_out_has "organization/test/sourceStack "; check_out_lacks "sourceStack.json."
setup retaincrash
run "retain: crash at pair:5" env PULUMI_RETAIN_CHECKPOINTS=1 STATETOOL_CRASH_AT=pair:5 "$STATETOOL" move --source-backend "$A" --dest-backend "$B" --source $SRC --dest $DST "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
run "retain: the recovery" env PULUMI_RETAIN_CHECKPOINTS=1 "$STATETOOL" list --backend "$A" --stack test/sourceStack
check_rc 0; check_err_has "note: the interrupted move is complete"
run "retain: the source's checkpoint retained by the recovery" retained "$SK" "$A"
check_out "1 same"
run "retain: the destination's checkpoint retained by the move" retained "$DK" "$B"
check_out "1 same"

# ---- a kill at each step of the journal, then recovery ----
# invariant: every selected resource in exactly one stack; before the commit point (the second
# journal, step 4) nothing moved, from it on the move completed; nothing left behind
crash_round() { # STEP [ENV...]: one kill and its recovery
	step=$1; shift
	setup "crash$step$*"
	run "crash at pair:$step $*" env STATETOOL_CRASH_AT=pair:$step "$@" "$STATETOOL" move --source-backend "$A" --dest-backend "$B" --source $SRC --dest $DST "urn:pulumi:$S::test::a:b:c::name"
	check_rc 137
	# doctor's fix for what the kill left on the destination's side works (audit27 C3: for a
	# staged object alone, `list`, which never removes it)
	case "$step:$#" in
	2:0)
		run "doctor after pair:2: the staged object" st doctor --backend "$B"
		check_rc 1; check_out_has "test/destStack: journal: an interrupted move left a staged object (killed before it was committed: nothing had changed; or just at it, the journal beside the move's other stack): \`statetool move --recover\` with the move's two stacks removes it, or completes the move; no other command does"
		check_out_has " --source test/destStack --dest-backend OTHER_URL --dest OTHER_STACK (OTHER_URL and OTHER_STACK: the move's other stack, which nothing here names; either stack as --source)"
		check_out_lacks "fix: statetool list" ;;
	4:0)
		run "doctor after pair:4: the journal, the staged object beside it" st doctor --backend "$B"
		check_rc 1; check_out_has "test/destStack: journal: an interrupted statetool operation left its journal: any statetool command on the stack completes it"
		check_out_has "test/destStack: journal: an interrupted statetool operation left a staged object beside its journal: any statetool command on the stack completes it"
		check_out_has " --stack test/destStack" ;;
	esac
	run "recover after pair:$step $*" env "$@" "$STATETOOL" move --recover --source-backend "$A" --dest-backend "$B" --source $SRC --dest $DST
	check_rc 0
	cp "$T/out" "$T/recover.out"
	src_names=$(urns "$A" test/sourceStack | tr '\n' ' ')
	dst_names=$(urns "$B" test/destStack 2>/dev/null | tr '\n' ' ')
	case "$src_names" in *"::name "*|*"::name2 "*) in_src=1 ;; *) in_src=0 ;; esac
	case "$dst_names" in *"::name "*) in_dst=1 ;; *) in_dst=0 ;; esac
	current="invariant after pair:$step $*"
	if [ $((in_src + in_dst)) -eq 1 ]; then ok; else bad "src: $src_names / dst: $dst_names"; fi
	if [ "$step" -le 2 ] && [ $in_src -ne 1 ]; then bad "moved although not committed"; fi
	if [ "$step" -ge 4 ] && [ $in_dst -ne 1 ]; then bad "committed but not completed"; fi
	run "valid after pair:$step $*" st validate -q --backend "$A"
	check_rc 0
	run "no leftovers in A after pair:$step $*" leftovers "$A"
	check_out "0"
	run "no leftovers in B after pair:$step $*" leftovers "$B"
	check_out "0"
	# from the first journal on, the recovery removes the killed move's locks (the journal
	# names them); before it, nothing names them: a lock on each side of one process gone from
	# this host is the killed move's (audit27: they stayed on s3 and azblob)
	run "the killed move's locks removed after pair:$step $*" bothlocks
	check_out "0 0"
	if [ "$step" -le 2 ]; then
		current="the removed locks named after pair:$step $*"
		if [ "$(grep -c "^removed the lock .*/\.pulumi/locks/organization/test/.* of the interrupted move (process [0-9]*, which held both stacks' locks, is gone from this host)\$" "$T/recover.out")" = 2 ]; then ok; else bad "$(cat "$T/recover.out")"; fi
	fi
}
for step in 1 2 3 4 5 6 7; do
	crash_round $step
done
# a change of compression on the way (the old object kept as its .bak, then removed)
for step in 2 4 5 6 7; do
	crash_round $step PULUMI_DIY_BACKEND_GZIP=true
	run "gzip after pair:$step" keys "$A" .pulumi/stacks/
	if [ "$step" -le 2 ]; then
		check_out "$SK"
	else
		check_out "$SK.bak
$SK.gz"
	fi
done

# doctor while a move runs (held at its commit point by SIGSTOP): its journal beside its own
# live lock is a move in progress, with no fix (audit27: "interrupted", fixed by `list`, which
# refuses for the lock); killed, it is interrupted (crash_round above)
setup running
env STATETOOL_CRASH_AT=pair:4:STOP "$STATETOOL" move --source-backend "$A" --dest-backend "$B" --source $SRC --dest $DST "urn:pulumi:$S::test::a:b:c::name" >"$T/running.out" 2>&1 &
mvpid=$!
n=0
while [ "$(leftovers "$B")" != 2 ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
run "doctor while a move runs" st doctor --backend "$B"
check_rc 1; check_out_has "test/destStack: journal: a statetool operation is in progress (its journal beside its own lock, held: "
check_out_has "/.pulumi/locks/organization/test/destStack/"
check_out_has " (pid $mvpid) at "
check_out_has "): nothing to fix while it runs; it removes its journal when it ends"
check_out_lacks "fix:"; check_out_lacks "stale"
run "doctor --json while a move runs: no fix" st doctor --json --backend "$B"
check_rc 1; check_out_has '"fix": null'; check_out_lacks '"fix": "'
kill -CONT $mvpid
wait $mvpid
mvrc=$?
current="the move held, then let go, completes"
if [ $mvrc -eq 0 ]; then ok; else bad "exit $mvrc: $(cat "$T/running.out")"; fi
run "the move let go: nothing left" bothleft
check_out "0 0"

# any command on either side completes a committed move, opening the other side's store
# from the URL in the journal
setup other
run "crash at pair:5" env STATETOOL_CRASH_AT=pair:5 "$STATETOOL" move --source-backend "$A" --dest-backend "$B" --source $SRC --dest $DST "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
run "the journal, version 4" "$STORETOOL" cat "$B" "$DK.statetool-journal"
check_out_has '"statetool_journal":4,"hash":"xxh3-128","operation":"move","sides":[{"store":"'
check_out_has '","key":".pulumi/stacks/test/destStack.json","old_hash":"","new_hash":"'
check_out_has '","key":".pulumi/stacks/test/sourceStack.json","old_hash":"'
check_out_has '"staged":".pulumi/stacks/test/sourceStack.json.statetool-new","journal":".pulumi/stacks/test/sourceStack.json.statetool-journal","lock":".pulumi/locks/organization/test/sourceStack/'
check_out_has '"journal":".pulumi/stacks/test/destStack.json.statetool-journal","lock":".pulumi/locks/organization/test/destStack/'
run "the killed move's locks" sh -c "'$STORETOOL' ls '$A' .pulumi/locks/organization/test/sourceStack/ | wc -l; '$STORETOOL' ls '$B' .pulumi/locks/organization/test/destStack/ | wc -l"
check_out "1
1"
run "list on the source side completes it" st list --backend "$A" --stack test/sourceStack
check_rc 0; check_err_has "note: completed the interrupted move: wrote "
check_err_has "note: the interrupted move is complete; its journal is removed"
check_err_has "note: removed the interrupted move's lock "
check_out_has "urn:pulumi:sourceStack::test::pulumi:providers:a::default_1_0_0"
current="both locks named"
if [ "$(grep -c "note: removed the interrupted move's lock .*/\.pulumi/locks/organization/test/" "$T/err")" = 2 ]; then ok; else bad "not both locks named"; fi
run "the killed move's locks are gone" bothlocks
check_out "0 0"
run "the source after the move" urns "$A" test/sourceStack
check_out "urn:pulumi:sourceStack::test::pulumi:providers:a::default_1_0_0"
run "destination complete" urns "$B" test/destStack
check_out_has "urn:pulumi:destStack::test::a:b:c::name"
run "no leftovers (A)" leftovers "$A"
check_out "0"
run "no leftovers (B)" leftovers "$B"
check_out "0"

# unlock of a side of a committed move (audit27 C10): the move's locks keep Pulumi off both
# stacks until it is finished, so unlock completes it first (its recovery removes them)
setup unlock
run "crash at pair:4 (unlock)" env STATETOOL_CRASH_AT=pair:4 "$STATETOOL" move --source-backend "$A" --dest-backend "$B" --source $SRC --dest $DST "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
run "unlock of the source completes the move" st unlock --backend "$A" --stack test/sourceStack
check_rc 0; check_out "removed 0 locks of test/sourceStack"
check_err_has "note: the interrupted move is complete; its journal is removed"
run "unlock: the killed move's locks are gone" bothlocks
check_out "0 0"
run "unlock: no leftovers" bothleft
check_out "0 0"
run "unlock: destination complete" urns "$B" test/destStack
check_out_has "urn:pulumi:destStack::test::a:b:c::name"
# --force removes the lock and leaves the move; once the source is written since (by Pulumi),
# unlock removes nothing and the error names both journals in full
setup unlockforce
run "crash at pair:4 (unlock --force)" env STATETOOL_CRASH_AT=pair:4 "$STATETOOL" move --source-backend "$A" --dest-backend "$B" --source $SRC --dest $DST "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
run "unlock --force of the source: its lock only" st unlock --force --backend "$A" --stack test/sourceStack
check_rc 0; check_out "removed 1 lock of test/sourceStack"; check_err_empty
run "unlock --force: the move pending" bothleft
check_out "2 2"
"$STORETOOL" cat "$A" "$SK" | sed 's/::name2"/::name3"/g' >"$T/written.json"
put "$A" "$SK" <"$T/written.json"
dump "$A" >"$T/a.before"; dump "$B" >"$T/b.before"
run "written since: unlock is refused" st unlock --backend "$A" --stack test/sourceStack
check_rc 1; check_err_has "statetool: error: an interrupted move left the journal '"
check_err_has "has changed since (it is neither the version before nor the version after); resolve it by hand"
check_err_has "note: no lock was removed: the locks keep Pulumi off the stack until the operation is finished; \`statetool unlock --force\` removes them anyway"
# the twin in full: the other store's journal (a URL's query after the key, secrets left out)
current="written since: the twin named in full"
if grep -q "sourceStack.json.statetool-journal[^']*' and its twin '[^']*/\.pulumi/stacks/test/destStack\.json\.statetool-journal" "$T/err"; then ok; else bad "the twin is not named: $(cat "$T/err")"; fi
unchanged "written since: unlock changed no byte"

# another's lock on the OTHER side of a committed move only (fixd27's note): unlock of this side
# refuses and keeps every lock and byte (its move lock keeps Pulumi off a stack the journal still
# claims), naming that lock and --force; --force removes this side's lock as before. Another's
# lock on this side is the one to remove: unlock removes it and completes the move.
setup unlockother
run "crash at pair:4 (unlock, another's lock on the other side)" env STATETOOL_CRASH_AT=pair:4 "$STATETOOL" move --source-backend "$A" --dest-backend "$B" --source $SRC --dest $DST "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
printf '{"pid":4242,"username":"alice","hostname":"ci.example","timestamp":"2026-11-24T22:00:00Z"}' |
	put "$B" .pulumi/locks/organization/test/destStack/99999999-0000-0000-0000-000000000000.json
dump "$A" >"$T/a.before"; dump "$B" >"$T/b.before"
run "unlock: another's lock on the other side refuses" st unlock --backend "$A" --stack test/sourceStack
check_rc 1; check_out_empty
check_err_has "statetool: error: the stack is currently locked by 1 lock(s)."
check_err_has "/.pulumi/locks/organization/test/destStack/99999999-0000-0000-0000-000000000000.json"
check_err_has ": created by alice@ci.example (pid 4242) at 2026-11-24T22:00:00Z"
check_err_has "statetool: note: no lock was removed: the unfinished operation cannot be completed while that lock, on its other stack, is held, and this stack's locks keep Pulumi off it until then; once that lock is gone, \`statetool unlock\` again completes it; \`statetool unlock --force\` removes this stack's locks anyway"
unchanged "unlock refused: no lock or byte changed"
run "unlock --json: the lock conflict's code" st unlock --json --backend "$A" --stack test/sourceStack
check_rc 1; check_out_has '"code": "locked"'
run "unlock --force: this side's lock removed, as before" st unlock --force --backend "$A" --stack test/sourceStack
check_rc 0; check_out "removed 1 lock of test/sourceStack"
run "unlock --force: the move still pending" bothleft
check_out "2 2"
# the other's lock on this side (the destination's), the source's side clear: removed, completed
run "unlock of the side with another's lock completes the move" env PGPASSWORD="${ST_TEST_PGPASSWORD:-}" "$STATETOOL" unlock --backend "$B" --stack test/destStack
check_rc 0; check_out "removed 2 locks of test/destStack"
check_err_has "note: the interrupted move is complete; its journal is removed"
run "unlock: no lock left" bothlocks
check_out "0 0"
run "unlock: no journal or staged object left" bothleft
check_out "0 0"

# ... and on the destination's side too when the move was into a new stack, killed before its
# object was written: the command completes it, then lists it (audit27 C8: "has no state file"
# and nothing completed). The journal keeps no password: PostgreSQL's from the environment.
setup newdest
run "crash at pair:4 (a new destination)" env STATETOOL_CRASH_AT=pair:4 "$STATETOOL" move --source-backend "$A" --dest-backend "$B" --source $SRC --dest $DST "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
run "the new destination: no object yet, its journal" keys "$B" .pulumi/stacks/
check_out "$DK.statetool-journal
$DK.statetool-new"
run "list on the new destination completes it" env PGPASSWORD="${ST_TEST_PGPASSWORD:-}" "$STATETOOL" list --backend "$B" --stack test/destStack
check_rc 0; check_err_has "note: completed the interrupted move: wrote "
check_err_has "note: the interrupted move is complete; its journal is removed"
check_out_has "urn:pulumi:destStack::test::a:b:c::name"
run "the new destination completed: the source" urns "$A" test/sourceStack
check_out "urn:pulumi:sourceStack::test::pulumi:providers:a::default_1_0_0"
run "the new destination completed: no lock left" bothlocks
check_out "0 0"
run "the new destination completed: no journal or staged object left" bothleft
check_out "0 0"

# recovery honours locks: with another's lock on a side (a `pulumi up` started after someone
# removed the killed move's lock with `pulumi cancel`), no command completes the move and no byte
# changes on either side; once that lock is gone, it completes
setup foreign
run "crash at pair:5 (foreign)" env STATETOOL_CRASH_AT=pair:5 "$STATETOOL" move --source-backend "$A" --dest-backend "$B" --source $SRC --dest $DST "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
for k in $(keys "$A" | grep '^\.pulumi/locks/'); do "$STORETOOL" rm "$A" "$k"; done
printf '{"pid":4242,"username":"alice","hostname":"ci.example","timestamp":"2026-11-24T22:00:00Z"}' |
	put "$A" .pulumi/locks/organization/test/sourceStack/99999999-0000-0000-0000-000000000000.json
dump "$A" >"$T/a.before"; dump "$B" >"$T/b.before"
for how in "list A:st list --backend $A --stack test/sourceStack" \
	"list B:st list --backend $B --stack test/destStack" \
	"move --recover:mv_ --recover"; do
	run "${how%%:*} while another holds a lock" ${how#*:}
	check_rc 1
	case "${how%%:*}:$A" in
	"list B:postgres://"*)
		# the journal keeps no password and PGPASSWORD is unset: from B's side, A's store
		# cannot be opened; the message says which move and where credentials come from
		check_err_has "statetool: error: cannot complete the interrupted move recorded in '"
		check_err_has "/.pulumi/stacks/test/destStack.json.statetool-journal': postgres: cannot connect to "
		check_err_has "; the journal keeps no credentials: they come from the environment (PGPASSWORD or PGPASSFILE: the URL's password is not kept), or \`statetool move --recover\` with the same URLs completes it"
		unchanged "list B: A cannot be opened: no byte changed"
		continue ;;
	esac
	check_err_has "the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with \`pulumi cancel\` (or \`statetool unlock --backend "
	check_err_has "/.pulumi/locks/organization/test/sourceStack/99999999-0000-0000-0000-000000000000.json"
	check_err_has ": created by alice@ci.example (pid 4242) at 2026-11-24T22:00:00Z"
	check_err_has "an interrupted move is pending (journal '"
	check_err_has "'): once the lock is gone, \`statetool move --recover --source-backend "
	check_err_has " --source test/sourceStack --dest-backend "
	check_err_has " --dest test/destStack\` (or any statetool command on either stack) completes it"
	unchanged "${how%%:*}: no byte changed"
done
run "list --json while another holds a lock" st list --json --backend "$A" --stack test/sourceStack
check_rc 1; check_out_has '"code": "locked"'
"$STORETOOL" rm "$A" .pulumi/locks/organization/test/sourceStack/99999999-0000-0000-0000-000000000000.json
case "$A" in
postgres://*) # (B's side cannot open A's store: above) from A's side
	run "the lock gone: list on the source side completes it" st list --backend "$A" --stack test/sourceStack
	check_rc 0; check_out_has "urn:pulumi:sourceStack::test::pulumi:providers:a::default_1_0_0" ;;
*)
	run "the lock gone: list on the destination side completes it" st list --backend "$B" --stack test/destStack
	check_rc 0; check_out_has "urn:pulumi:destStack::test::a:b:c::name" ;;
esac
check_err_has "note: the interrupted move is complete; its journal is removed"
check_err_has "note: removed the interrupted move's lock "
run "completed: the destination" urns "$B" test/destStack
check_out_has "urn:pulumi:destStack::test::a:b:c::name"
run "completed: the source" urns "$A" test/sourceStack
check_out "urn:pulumi:sourceStack::test::pulumi:providers:a::default_1_0_0"
run "completed: no lock left" bothlocks
check_out "0 0"
run "completed: no journal or staged object left" bothleft
check_out "0 0"

# history on any store: a size the listing does not give (PostgreSQL's) is unknown, never -1
run "history: no size of -1" st history --backend "$A" --stack test/sourceStack
check_rc 0; check_out_has "backup"; check_out_lacks " -1 "
run "history --json: no size of -1" st history --json --backend "$A" --stack test/sourceStack
check_rc 0; check_out_lacks '"size": -1'

# a journal this statetool does not know is refused, and nothing is touched
setup unknown
run "crash at pair:4" env STATETOOL_CRASH_AT=pair:4 "$STATETOOL" move --source-backend "$A" --dest-backend "$B" --source $SRC --dest $DST "urn:pulumi:$S::test::a:b:c::name"
check_rc 137
"$STORETOOL" cat "$A" "$SK.statetool-journal" | sed 's/"statetool_journal":4/"statetool_journal":5/' > "$T/j4"
put "$A" "$SK.statetool-journal" < "$T/j4"
run "unknown journal version" st list --backend "$A" --stack test/sourceStack
check_rc 1; check_err_has "is of a version this statetool does not know (5); a newer statetool wrote it"
run "the source untouched" "$STORETOOL" cat "$A" "$SK"
check_same "$M/children.json" "$T/out"
finish
