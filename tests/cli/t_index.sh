#!/bin/sh
# The SQLite index: a generated backend of many stacks (plus renamed, deleted and corrupted
# ones); each filter's answer is compared with a brute-force jq scan of the files.
. "$(dirname "$0")/lib.sh"
if ! command -v jq >/dev/null 2>&1 || ! command -v cc >/dev/null 2>&1 ||
	! command -v sqlite3 >/dev/null 2>&1; then
	echo "t_index.sh: jq, cc and sqlite3 are needed (sh quickstart check installs them)"; echo "t_index.sh: 0 passed, 1 failed"; exit 1
fi
B=$T/b
DB=$B/.pulumi/statetool-index.sqlite
cc -O2 -o "$T/gen" "$top_srcdir/bench/gen.c"
mkdir -p "$B/.pulumi/stacks"
printf 'version: 1\n' > "$B/.pulumi/meta.yaml"
n=0
for p in shop web data; do
	mkdir -p "$B/.pulumi/stacks/$p"
	for s in dev stage prod eu; do
		n=$((n + 1))
		"$T/gen" 40 $n --checkpoint --stack $s --project $p > "$B/.pulumi/stacks/$p/$s.json"
	done
done
# a copy of a stack under another name: the same cloud IDs managed twice
cp "$B/.pulumi/stacks/web/eu.json" "$B/.pulumi/stacks/web/eu-copy.json"
# a stack with protected resources and pending operations
mkdir -p "$B/.pulumi/stacks/edit"
# (a stack whose URNs name another stack: the index takes it as it is; convert would refuse to
# write it into the backend, so it is copied there)
st convert "$FIXTURES/edit/base.json" --envelope checkpoint --checkpoint-stack organization/edit/main -o "$T/main.json" >/dev/null
mkdir -p "$B/.pulumi/stacks/edit" && cp "$T/main.json" "$B/.pulumi/stacks/edit/main.json"
files() { find "$B/.pulumi/stacks" -name '*.json' | sort; }
# brute force: "stack urn" pairs of every resource matching a jq condition
brute() { # stacks are named by their place in the backend, as the index names them
	for f in $(files); do
		qn=$(echo "$f" | sed 's|.*/.pulumi/stacks/\([^/]*\)/\(.*\)\.json$|organization/\1/\2|')
		jq -r --arg q "$qn" ".checkpoint.latest.resources[]? | select($1) | \"\\(\$q) \\(.urn)\"" "$f" 2>/dev/null || true
	done | sort
}
q() { "$STATETOOL" query --backend "$B" --csv "$@" | tail -n +2 | awk -F, '{print $1" "$2}' | sort; }
compare() { # NAME JQ_CONDITION QUERY_ARGS...
	name=$1; cond=$2; shift 2
	brute "$cond" > "$T/want"
	q "$@" > "$T/got"
	current="filter $name"
	if [ -s "$T/want" ] && cmp -s "$T/want" "$T/got"; then ok; else bad "$(diff "$T/want" "$T/got" | head -5) (want $(wc -l < "$T/want") rows)"; fi
}

total=$(for f in $(files); do jq '.checkpoint.latest.resources | length' "$f"; done | awk '{s+=$1} END {print s}')
run "build" st index update --backend "$B"
check_rc 0; check_out_has "14 stacks: 14 indexed ($total resources), 0 unchanged, 0 removed, 0 failed"
run "no change" st index update --backend "$B"
check_rc 0; check_out_has "14 stacks: 0 indexed (0 resources), 14 unchanged, 0 removed, 0 failed"
touch "$B/.pulumi/stacks/shop/dev.json"
run "touched, not changed (hash)" st index update --backend "$B"
check_out_has "0 indexed (0 resources), 14 unchanged"

compare "type" '.type == "aws:rds/instance:Instance"' --type aws:rds/instance:Instance
someid=$(jq -r '.checkpoint.latest.resources[12].id' "$B/.pulumi/stacks/shop/dev.json")
compare "id" ".id == \"$someid\"" --id "$someid"
compare "urn glob" '.urn | test("::svc-1$")' --urn '*::svc-1'
compare "stack" '$q | startswith("organization/web/")' --stack 'organization/web/*'
compare "protected" '.protect == true' --protected
compare "provider package@version" '(.provider // "") | test("pulumi:providers:aws::(default_6_0_0|explicit-eu|eu)::")' --provider aws@6.0.0
compare "provider urn" '(.provider // "") | startswith("urn:pulumi:dev::shop::pulumi:providers:gcp::default_7_2_0::")' --provider urn:pulumi:dev::shop::pulumi:providers:gcp::default_7_2_0
run "pending" q --pending
check_out "organization/edit/main urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::logs"
run "dependents-of" q --dependents-of 'urn:pulumi:dev::shop::my:index:App$my:index:Web$aws:s3/bucket:Bucket::assets'
# (server twice: its live resource and its delete: true copy share the URN)
check_out "organization/edit/main urn:pulumi:dev::shop::my:index:App\$aws:ec2/instance:Instance::server
organization/edit/main urn:pulumi:dev::shop::my:index:App\$aws:ec2/instance:Instance::server
organization/edit/main urn:pulumi:dev::shop::my:index:App\$my:index:Web\$aws:s3/bucketPolicy:BucketPolicy::assets-policy"
run "dependents-of a component (children, transitively)" sh -c "'$STATETOOL' query --backend '$B' --csv --dependents-of 'urn:pulumi:dev::shop::my:index:App::app' | tail -n +2 | wc -l"
# web, assets, assets-policy and server twice (live and delete: true)
check_out "5"
# duplicate IDs: every custom live resource of web/eu appears twice (its copy), plus the
# policy that shares its bucket's ID in the edit stack; providers left out
for f in $(files); do jq -r '.checkpoint.latest.resources[]? | select(.custom and (.id // "") != "" and (.delete|not) and (.type|startswith("pulumi:providers:")|not)) | "\(.type) \(.id)"' "$f"; done | sort | uniq -d > "$T/dups"
run "duplicate ids" sh -c "'$STATETOOL' query --backend '$B' --json --duplicate-ids | jq -r '.rows[] | \"\\(.type) \\(.id)\"' | sort -u"
if cmp -s "$T/dups" "$T/out" && [ -s "$T/dups" ]; then ok; else bad "duplicate ids differ"; fi
run "json" st query --backend "$B" --json --id "$someid"
check_out_has '"format_version": 1'; check_out_has '"stack": "organization/shop/dev"'

# read-only SQL
run "sql" st query --backend "$B" --sql "SELECT count(*) AS n FROM stacks"
check_out "n
14"
run "sql write refused" st query --backend "$B" --sql "DELETE FROM resources"
check_rc 2; check_err_has "only read-only statements are allowed"
run "sql two statements" st query --backend "$B" --sql "SELECT 1; SELECT 2"
check_rc 2
run "schema version" st query --backend "$B" --sql "SELECT value FROM meta WHERE key = 'schema_version'"
check_out "value
6"
# schema 5: a URN found by (stack, n) in one b-tree search
run "urns without rowid" st query --backend "$B" --csv --sql "SELECT sql LIKE '%WITHOUT ROWID' AS wr FROM sqlite_master WHERE name = 'urns'"
check_out "wr
1"

# schema 6: --protected reads a protected row's URN, parent and provider from its row (the
# covering partial index on SQLite), not from urns: the same rows as through the URNs, for a
# component, a provider, a delete: true copy (taint too) and a provider reference without "::"
jq '.deployment.resources[0].protect = true | .deployment.resources[1].protect = true |
	.deployment.resources[10].protect = true | .deployment.resources[10].taint = true |
	.deployment.resources[12].protect = true | .deployment.resources[12].provider = "odd-ref" |
	.deployment.resources[12].importID = "imp-1"' "$FIXTURES/edit/base.json" > "$T/p.json"
run "protected rows indexed" st index update --db "$T/p.sqlite" "$T/p.json"
check_rc 0
run "protected: the rows" st query --db "$T/p.sqlite" --protected --csv
check_rc 0; check_out "stack,urn,type,id,import_id,parent,provider,flags
$T/p.json,urn:pulumi:dev::shop::pulumi:pulumi:Stack::shop-dev,pulumi:pulumi:Stack,,,,,\"component,protect\"
$T/p.json,urn:pulumi:dev::shop::pulumi:providers:aws::default_6_0_0,pulumi:providers:aws,a1a1a1a1-0000-4000-8000-000000000001,,,,\"custom,protect\"
$T/p.json,urn:pulumi:dev::shop::my:index:App\$my:index:Web\$aws:s3/bucket:Bucket::assets,aws:s3/bucket:Bucket,assets-1234,,urn:pulumi:dev::shop::my:index:App\$my:index:Web::web,urn:pulumi:dev::shop::pulumi:providers:aws::default_6_0_0::a1a1a1a1-0000-4000-8000-000000000001,\"custom,protect\"
$T/p.json,urn:pulumi:dev::shop::my:index:App\$aws:ec2/instance:Instance::server,aws:ec2/instance:Instance,i-0old,,urn:pulumi:dev::shop::my:index:App::app,urn:pulumi:dev::shop::pulumi:providers:aws::eu::a1a1a1a1-0000-4000-8000-000000000002,\"custom,protect,delete,taint\"
$T/p.json,urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::audit,aws:cloudwatch/logGroup:LogGroup,audit,imp-1,urn:pulumi:dev::shop::pulumi:pulumi:Stack::shop-dev,odd-ref,\"custom,protect\""
# the same as the view resources gives (the URNs through urns), filters too
viewq="SELECT s.qname AS stack, r.urn AS urn, r.type, r.id, r.import_id, r.parent AS parent, r.provider AS provider, trim((CASE WHEN r.custom <> 0 THEN 'custom' ELSE 'component' END) || (CASE WHEN r.protect <> 0 THEN ',protect' ELSE '' END) || (CASE WHEN r.\"delete\" <> 0 THEN ',delete' ELSE '' END) || (CASE WHEN r.taint <> 0 THEN ',taint' ELSE '' END) || (CASE WHEN r.external <> 0 THEN ',external' ELSE '' END)) AS flags FROM resources r JOIN stacks s ON s.id = r.stack_id WHERE r.protect <> 0"
for f in "|" "--urn|*::a*|AND r.urn GLOB '*::a*'" "--type|aws:ec2/instance:Instance|AND r.type = 'aws:ec2/instance:Instance'" "--stack|$T/p.js??|AND s.qname GLOB '$T/p.js??'" "--id|audit|AND r.id = 'audit'" "--import-id|imp-1|AND r.import_id = 'imp-1'"; do
	opt=${f%%|*}; rest=${f#*|}; arg=${rest%%|*}; cond=${rest#*|}
	for fmt in --csv --json ""; do
		"$STATETOOL" query --db "$T/p.sqlite" $fmt --sql "$viewq $cond ORDER BY s.qname, r.position" > "$T/want" 2>&1
		if [ -n "$opt" ]; then
			run "protected $opt $fmt: as through the URNs" st query --db "$T/p.sqlite" $fmt --protected "$opt" "$arg"
		else
			run "protected $fmt: as through the URNs" st query --db "$T/p.sqlite" $fmt --protected
		fi
		if [ -s "$T/want" ] && cmp -s "$T/want" "$T/out"; then ok; else bad "$(diff "$T/want" "$T/out" | head -5)"; fi
	done
done
run "protected: the text only on protected rows" st query --db "$T/p.sqlite" --csv --sql "SELECT count(*) AS n, sum(protected_urn IS NOT NULL) AS p, sum((protect <> 0) != (protected_urn IS NOT NULL)) AS wrong FROM resource_rows"
check_out "n,p,wrong
13,5,0"
run "protected: the covering partial index" st query --db "$T/p.sqlite" --csv --sql "SELECT sql LIKE '%protected_urn, protected_parent, protected_provider%WHERE protect <> 0' AS covering FROM sqlite_master WHERE name = 'resource_rows_protect'"
check_out "covering
1"

# the answer goes out in 64 KB pieces: quotes doubled, NULL as '-' (table) or nothing (CSV)
# or null (JSON), a name twice (JSON: its last value in its first place), and a value longer
# than the CLI's buffer whole
ys=$(awk 'BEGIN { while (i++ < 70000) printf "y" }')
for fmt in --csv "" --json; do
	run "a long line $fmt" st query --db "$T/p.sqlite" $fmt --sql "SELECT 'a\"b,c' AS x, NULL AS n, printf('%.70000c', 'y') AS long, 'z' AS z, 'w' AS x UNION ALL SELECT 'q', 'r', 's', 't', 'u'"
	if [ "$fmt" = --csv ]; then
		check_out "x,n,long,z,x
\"a\"\"b,c\",,$ys,z,w
q,r,s,t,u"
	elif [ "$fmt" = --json ]; then
		check_out "{
    \"format_version\": 1,
    \"rows\": [
        {
            \"x\": \"w\",
            \"n\": null,
            \"long\": \"$ys\",
            \"z\": \"z\"
        },
        {
            \"x\": \"u\",
            \"n\": \"r\",
            \"long\": \"s\",
            \"z\": \"t\"
        }
    ]
}"
	else
		check_out "x	n	long	z	x
a\"b,c	-	$ys	z	w
q	r	s	t	u"
	fi
	check_rc 0
done
# --json: an answer of many pieces is one document, row by row as the writer makes it (the
# same bytes as jq's 4-space layout for these plain values), no row, the JSON escapes
rows="WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3000)"
run "json in pieces" st query --db "$T/p.sqlite" --json --sql "$rows SELECT i, printf('%.30c', 'v') AS v, NULL AS n FROM c"
check_rc 0
if [ "$(wc -c < "$T/out")" -gt 200000 ] && jq --indent 4 . "$T/out" | cmp -s - "$T/out" &&
	[ "$(jq '.rows | length' "$T/out")" = 3000 ] && [ "$(jq -r '.rows[2999].i' "$T/out")" = 3000 ]; then
	ok
else
	bad "not one document of 3000 rows in jq's layout"
fi
run "json no row" st query --db "$T/p.sqlite" --json --sql "SELECT 1 AS a WHERE 0"
check_out "{
    \"format_version\": 1,
    \"rows\": []
}"
run "json escapes" st query --db "$T/p.sqlite" --json --sql "SELECT '<&>' || char(10, 9, 1, 8232) || '\"\\' AS \"a\"\"b\""
check_out "{
    \"format_version\": 1,
    \"rows\": [
        {
            \"a\\\"b\": \"<&>\\n\\t\\u0001\\u2028\\\"\\\\\"
        }
    ]
}"
# a query that fails: before 64 KB of answer, nothing of it is out (with --json, the error
# document alone); after, the rows before the failure are out, the document unfinished and no
# second one after it
fail="CASE WHEN i < 3000 THEN printf('%.30c', 'v') ELSE abs(-9223372036854775807 - 1) END AS v"
run "json fails early" st query --db "$T/p.sqlite" --json --sql "$(echo "$rows" | sed 's/3000/10/') SELECT i, $(echo "$fail" | sed 's/3000/10/') FROM c"
check_rc 1; check_err_has "query failed: integer overflow"
if [ "$(jq -c '[.ok, .error.code, (.rows | length)]' "$T/out")" = '[false,"io",0]' ]; then ok; else bad "not the error document alone"; fi
run "json fails late" st query --db "$T/p.sqlite" --json --sql "$rows SELECT i, $fail FROM c"
check_rc 1; check_err_has "query failed: integer overflow"
check_out_lacks '"ok": false'
if head -c 200 "$T/out" | grep -q '"rows": \[' && tail -n 4 "$T/out" | tr -d ' \n' | grep -qx '{"i":"2999","v":"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"}'; then
	ok
else
	bad "not the rows up to the failure"
fi
run "csv fails late" st query --db "$T/p.sqlite" --csv --sql "$rows SELECT i, $fail FROM c"
check_rc 1
if [ "$(wc -l < "$T/out")" = 3000 ] && [ "$(tail -n 1 "$T/out")" = "2999,vvvvvvvvvvvvvvvvvvvvvvvvvvvvvv" ]; then ok; else bad "not the rows up to the failure"; fi
run "csv fails early" st query --db "$T/p.sqlite" --csv --sql "$(echo "$rows" | sed 's/3000/10/') SELECT i, $(echo "$fail" | sed 's/3000/10/') FROM c"
check_rc 1; check_out_empty
# standard output that fails: said once, exit 1 (a short answer and one of many pieces)
if [ -w /dev/full ]; then
	for q in "SELECT 1 AS a" "$rows SELECT i FROM c"; do
		run "stdout full" sh -c "'$STATETOOL' query --db '$T/p.sqlite' --json --sql '$q' > /dev/full"
		check_rc 1
		if [ "$(grep -c 'cannot write to standard output' "$T/err")" = 1 ]; then ok; else bad "not said once"; fi
	done
fi

# renamed, deleted, corrupted stacks
mv "$B/.pulumi/stacks/data/eu.json" "$B/.pulumi/stacks/data/europe.json"
rm "$B/.pulumi/stacks/shop/stage.json"
head -c 300 "$B/.pulumi/stacks/web/prod.json" > "$T/t" && mv "$T/t" "$B/.pulumi/stacks/web/prod.json"
run "update after changes" st index update --backend "$B"
check_rc 1
check_out_has "13 stacks: 1 indexed"
check_out_has "2 removed, 1 failed"
check_err_has "organization/web/prod: "
check_err_has "its rows were removed from the index"
run "renamed" q --stack 'organization/data/europe'
if [ -s "$T/out" ]; then ok; else bad "renamed stack missing"; fi
run "deleted" q --stack 'organization/shop/stage'
check_out_empty
compare "after changes" 'true' --urn '*'

# secrets: paths only, never values
run "secret paths" st query --backend "$B" --sql "SELECT count(*) AS n FROM secrets"
check_out_has "n"
ct=$(jq -r '[.. | objects | select(has("ciphertext")) | .ciphertext][0]' "$B/.pulumi/stacks/shop/dev.json")
current="no ciphertext in the database"
if [ -n "$ct" ] && ! grep -q -F "$ct" "$DB" "$DB-wal" 2>/dev/null; then ok; else bad "a secret value is in the index"; fi
cp "$FIXTURES/validate/secrets-plaintext.json" "$T/pt.json"
run "plaintext state indexed" st index update --db "$T/f.sqlite" "$T/pt.json"
check_rc 0
current="no plaintext in the database"
if ! grep -q hunter2 "$T/f.sqlite" "$T/f.sqlite-wal" 2>/dev/null; then ok; else bad "plaintext in the index"; fi

# a damaged index (SQLite's header, garbage after it) is moved aside and rebuilt, with a message
printf 'SQLite format 3\000 and then garbage, garbage, garbage, garbage, garbage, garbage......' > "$T/bad.sqlite"
run "corrupt index rebuilt" st index update --db "$T/bad.sqlite" "$T/pt.json"
check_rc 0; check_err_has "was damaged: moved aside to '$T/bad.sqlite.corrupt' and rebuilt"
run "query on a damaged index" sh -c "printf 'SQLite format 3\000 garbage garbage garbage garbage garbage garbage garbage!!' > '$T/bad2.sqlite'; '$STATETOOL' query --db '$T/bad2.sqlite' --type x"
check_rc 1; check_err_has "is damaged; run \`statetool index update\` to rebuild it"
# ... but one that cannot be moved aside stays as it was
cp "$T/bad2.sqlite" "$T/bad2.copy"
mkdir "$T/bad2.sqlite.corrupt"
run "damaged index that cannot be moved aside" st index update --db "$T/bad2.sqlite" "$T/pt.json"
check_rc 1
check_err "statetool: error: the index '$T/bad2.sqlite' is damaged and cannot be moved aside to '$T/bad2.sqlite.corrupt': Is a directory; nothing was changed"
check_same "$T/bad2.sqlite" "$T/bad2.copy"
# a file that is no SQLite database (a mistyped --db: a state) is never moved aside or replaced
cp "$T/pt.json" "$T/state-as-db.json"
for how in "index update --db $T/state-as-db.json $T/pt.json" \
	   "query --db $T/state-as-db.json --type x" \
	   "query --backend $B --db $T/state-as-db.json --refresh --type x"; do
	run "not SQLite: $how" st $how
	check_rc 1
	check_err "statetool: error: '$T/state-as-db.json' is not an SQLite database, so not an index: refusing to replace it (give --db an index, or a path where none exists yet)"
	check_same "$T/state-as-db.json" "$T/pt.json"
	check_absent "$T/state-as-db.json.corrupt"
done
# nor is another program's SQLite database changed, nor a directory used
sqlite3 "$T/other.db" "CREATE TABLE notes(a TEXT); INSERT INTO notes VALUES ('mine');"
cp "$T/other.db" "$T/other.copy"
run "another SQLite database" st index update --db "$T/other.db" "$T/pt.json"
check_rc 1
check_err "statetool: error: '$T/other.db' is an SQLite database but not a statetool index: refusing to change it (give --db an index, or a path where none exists yet)"
check_same "$T/other.db" "$T/other.copy"
run "another SQLite database, query" st query --db "$T/other.db" --type x
check_rc 1; check_err_has "is an SQLite database but not a statetool index"
# held locked by another program past SQLite's 10 s wait: an error, never taken for damage
mkfifo "$T/sqlin"
sqlite3 "$T/other.db" < "$T/sqlin" &
holder=$!
exec 9> "$T/sqlin"
echo "BEGIN EXCLUSIVE; INSERT INTO notes VALUES ('busy');" >&9
sleep 1
run "another program holds the database" st index update --db "$T/other.db" "$T/pt.json"
check_rc 1
check_err "statetool: error: the index '$T/other.db' is held by another program (SQLite: database is locked); nothing was changed: try again"
check_absent "$T/other.db.corrupt"
exec 9>&- # end of its input: sqlite3 rolls back and exits
wait "$holder"
check_same "$T/other.db" "$T/other.copy"
run "a directory as the index" st index update --db "$T" "$T/pt.json"
check_rc 1; check_err "statetool: error: the index '$T' is a directory, not a file"
run "no index yet" st query --db "$T/none.sqlite" --type x
check_rc 1; check_err_has "no index at"
run "old schema set up" sqlite3 "$T/f.sqlite" "UPDATE meta SET value='0' WHERE key='schema_version'"
check_rc 0
run "old schema" st index update --db "$T/f.sqlite" "$T/pt.json"
check_rc 0; check_err_has "the index had schema version 0; rebuilt as version 6"
# an index of schema 2 (resources and edges were tables, with full URNs; now views): rebuilt
sqlite3 "$T/v2.sqlite" "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES ('schema_version', '2');
CREATE TABLE stacks (id INTEGER PRIMARY KEY, qname TEXT UNIQUE NOT NULL, project TEXT, stack TEXT, path TEXT, size INTEGER, mtime_ns INTEGER, sha256 TEXT, version INTEGER, envelope TEXT, resources INTEGER, indexed_at TEXT, etag TEXT);
CREATE TABLE resources (stack_id INTEGER NOT NULL, position INTEGER NOT NULL, urn TEXT NOT NULL, type TEXT, name TEXT, id TEXT, import_id TEXT, parent TEXT, provider TEXT, custom INTEGER, protect INTEGER, \"delete\" INTEGER, external INTEGER, taint INTEGER, pending_replacement INTEGER, retain_on_delete INTEGER, created TEXT, modified TEXT, PRIMARY KEY (stack_id, position));
CREATE TABLE edges (stack_id INTEGER NOT NULL, from_urn TEXT NOT NULL, kind TEXT NOT NULL, to_urn TEXT NOT NULL, property TEXT);
CREATE TABLE providers (stack_id INTEGER NOT NULL, urn TEXT NOT NULL, id TEXT, ref TEXT, package TEXT, version TEXT);
CREATE TABLE pending (stack_id INTEGER NOT NULL, urn TEXT, type TEXT); CREATE TABLE secrets (stack_id INTEGER NOT NULL, urn TEXT, path TEXT);
INSERT INTO stacks (id, qname) VALUES (1, 'organization/old/gone'); INSERT INTO resources (stack_id, position, urn) VALUES (1, 0, 'urn:pulumi:gone::old::a:b:C::x')"
run "schema 2 rebuilt" st index update --db "$T/v2.sqlite" "$T/pt.json"
check_rc 0; check_err_has "the index had schema version 2; rebuilt as version 6"
run "schema 2 rebuilt: the new rows only" st query --db "$T/v2.sqlite" --csv --sql "SELECT (SELECT count(*) FROM stacks) AS stacks, (SELECT count(*) FROM resources WHERE urn LIKE '%gone%') AS old, (SELECT value FROM meta WHERE key = 'schema_version') AS v"
check_rc 0; check_out "stacks,old,v
1,0,6"

# readers during updates never fail and never see a half-written stack: each round rewrites
# every stack file (another layout, so another size) and reindexes all of them
( for i in 1 2 3 4; do
	for f in $(files); do
		case $i in 1|3) "$STATETOOL" convert "$f" --indent -o "$f" ;; *) "$STATETOOL" convert "$f" --compact -o "$f" ;; esac >/dev/null 2>&1
	done
	"$STATETOOL" index update --backend "$B" >/dev/null 2>&1
  done ) &
upd=$!
fails=0; reads=0
while kill -0 $upd 2>/dev/null; do
	if out=$("$STATETOOL" query --backend "$B" --sql "SELECT s.qname, s.resources, count(r.urn) AS n FROM stacks s LEFT JOIN resources r ON r.stack_id = s.id GROUP BY s.id HAVING s.resources != n" 2>"$T/qerr"); then
		# (stderr names the stacks rewritten since they were indexed: expected here)
		[ -z "$(printf '%s' "$out" | tail -n +2)" ] || { fails=$((fails + 1)); echo "partial: $out" >&2; }
	else
		fails=$((fails + 1)); echo "failed: $out $(cat "$T/qerr")" >&2
	fi
	reads=$((reads + 1))
done
wait $upd
current="concurrent readers ($reads reads)"
if [ $fails -eq 0 ] && [ $reads -gt 2 ]; then ok; else bad "$fails of $reads reads saw a partial stack or failed"; fi

# the database is smaller than the states it indexes (schema 3 keeps each URN of a stack once):
# a generated backend of 200 stacks
S=$T/size
mkdir -p "$S/.pulumi/stacks"
printf 'version: 1\n' >"$S/.pulumi/meta.yaml"
for p in 1 2 3 4 5 6 7 8 9 10; do
	mkdir -p "$S/.pulumi/stacks/p$p"
	for s in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
		"$T/gen" 100 $((p * 100 + s)) --checkpoint --stack "s$s" --project "p$p" >"$S/.pulumi/stacks/p$p/s$s.json"
	done
done
run "200 stacks indexed" st index update --backend "$S" --db "$T/size.sqlite"
check_rc 0; check_out_has "200 stacks: 200 indexed"
states=$(find "$S/.pulumi/stacks" -name '*.json' -exec cat {} + | wc -c)
db=$(cat "$T/size.sqlite" "$T/size.sqlite-wal" 2>/dev/null | wc -c)
current="the index ($db bytes) is smaller than the 200 states ($states bytes)"
if [ "$db" -gt 0 ] && [ "$db" -lt "$states" ]; then ok; else bad "it is not"; fi
# and holds the same answers as the files: every edge of one stack, URNs and all
f=$S/.pulumi/stacks/p3/s7.json
jq -r '.checkpoint.latest.resources[] | select(.parent) | "\(.urn),parent,\(.parent)"' "$f" | LC_ALL=C sort >"$T/want"
run "edges by URN" sh -c "'$STATETOOL' query --db '$T/size.sqlite' --csv --sql \"SELECT e.from_urn, e.kind, e.to_urn FROM edges e JOIN stacks s ON s.id = e.stack_id WHERE s.qname = 'organization/p3/s7' AND e.kind = 'parent'\" | tail -n +2 | LC_ALL=C sort"
check_rc 0; check_same "$T/want" "$T/out"
jq -r '.checkpoint.latest.resources[] | "\(.urn),\(.parent // ""),\(.provider // "")"' "$f" >"$T/want"
run "resources by URN" sh -c "'$STATETOOL' query --db '$T/size.sqlite' --csv --sql \"SELECT r.urn, r.parent, r.provider FROM resources r JOIN stacks s ON s.id = r.stack_id WHERE s.qname = 'organization/p3/s7' ORDER BY r.position\" | tail -n +2"
check_rc 0; check_same "$T/want" "$T/out"

# ---- a healthy index where it cannot be written is read, not called damaged; an update says
# why it cannot. Two ways to make such a place: a bind mount remounted read-only in a mount
# namespace of its own (root and unshare -m: EROFS), else, where containers refuse that (CI's),
# the directory read by another user, nobody (root and setpriv: EACCES) ----
R=$T/ro
mkdir -p "$R/.pulumi/stacks/shop"
printf 'version: 1\n' >"$R/.pulumi/meta.yaml"
"$T/gen" 30 77 --checkpoint --stack dev --project shop >"$R/.pulumi/stacks/shop/dev.json"
st index update --backend "$R" >/dev/null
RDB=$R/.pulumi/statetool-index.sqlite
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
ro=""
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	ro=mount; why="Read-only file system"
elif [ "$(id -u)" = 0 ] && chmod 755 "$T" && $NOBODY "$STATETOOL" --version >/dev/null 2>&1; then
	ro=nobody; why="Permission denied"
fi
ro() { # ARGS...: statetool where $R cannot be written
	if [ "$ro" = mount ]; then
		unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"' \
			sh "$R" "$STATETOOL" "$@"
	else
		$NOBODY "$STATETOOL" "$@"
	fi
}
if [ -n "$ro" ]; then
	"$STATETOOL" query --backend "$R" --csv --type pulumi:providers:aws >"$T/want" 2>&1
	rm -f "$RDB-shm" "$RDB-wal" # (that reader's): the file alone, as a snapshot has it
	run "a read-only index is read ($ro)" ro query --backend "$R" --csv --type pulumi:providers:aws
	check_rc 0; check_same "$T/want" "$T/out"; check_same /dev/null "$T/err"
	run "--sql on a read-only index" ro query --db "$RDB" --sql "SELECT count(*) AS n FROM stacks"
	check_rc 0; check_out "n
1"
	run "an update where the index cannot be written says so" ro index update --backend "$R"
	check_rc 1
	check_err "statetool: error: cannot update the index '$RDB': $why (its directory or the file cannot be written); nothing was changed"
	: >"$RDB-shm" # the same with an -shm left by a reader
	run "the same with an -shm left by a reader" ro index update --backend "$R"
	check_rc 1
	check_err "statetool: error: cannot update the index '$RDB': $why (its directory or the file cannot be written); nothing was changed"
	rm -f "$RDB-shm"
	printf 'not empty' >"$RDB-wal"
	run "a read-only index with a write-ahead log cannot be read: said why" ro query --db "$RDB" --sql "SELECT 1"
	check_rc 1
	check_err "statetool: error: cannot read the index '$RDB': its directory cannot be written ($why) and it has a write-ahead log ('$RDB-wal'), which SQLite reads only with a '$RDB-shm' file it makes there: run the query where the index can be written"
	rm -f "$RDB-wal"
else
	skip_or_fail "read-only index" "needs root with unshare -m or setpriv"
fi

# ---- an index of an older schema version being rebuilt: readers are told, never shown a
# nearly empty index (the rebuild killed before its first stack is written) ----
sqlite3 "$RDB" "UPDATE meta SET value = '5' WHERE key = 'schema_version'"
run "a rebuild killed before its first stack" env STATETOOL_CRASH_AT=index:1 "$STATETOOL" index update --backend "$R"
check_rc 137; check_err_has "the index had schema version 5; rebuilt as version 6"
run "a reader of an index being rebuilt is told" st query --backend "$R" --sql "SELECT count(*) AS n FROM stacks"
check_rc 1
check_err "statetool: error: the index '$RDB' is being rebuilt (it had schema version 5) and holds only the stacks written so far: query it when its update ends (if none is running, one was interrupted: run \`statetool index update\`)"
run "an update of one stack (after an edit) does not end the rebuild" st protect --backend "$R" -s shop/dev --all
check_rc 0
run "still being rebuilt" st query --backend "$R" --sql "SELECT count(*) AS n FROM stacks"
check_rc 1; check_err_has "is being rebuilt"
run "the rebuild's end" st index update --backend "$R"
check_rc 0
run "then the index is read" st query --backend "$R" --sql "SELECT count(*) AS n FROM stacks"
check_rc 0; check_out "n
1"

run "index --help" st index --help
check_rc 0; check_out_has "usage: statetool index update"
run "query --help" st query --help
check_rc 0; check_out_has "usage: statetool query"
run "files need --db" st index update "$T/pt.json"
check_rc 2
finish
