#!/bin/sh
# The index in PostgreSQL (`--db postgres://...`), on the test servers' PostgreSQL
# (tests/servers/ctl start postgres): every query option, output format and --sql statement gives
# the same bytes as on SQLite for the same backend; a statement that writes is refused on both;
# several updaters at once over backends sharing the index (and one killed mid-run) never corrupt
# the index or lose a stack; a stack of a name another backend's stack has in the index is refused
# and a removal touches only the updating backend's stacks (both engines); a reader never sees a half-written stack; a no-change update reads no
# stack. Each run works in a schema of its own (search_path), dropped at the end. Without the
# server the script skips with a message; with $CI set that is a failure.
. "$(dirname "$0")/lib.sh"
envfile=${ST_SERVERS_DIR:-/tmp/statetool-servers-$(id -u)}/env
# shellcheck source=/dev/null
[ -r "$envfile" ] && . "$envfile"
need=""
command -v psql >/dev/null 2>&1 || need="psql"
command -v jq >/dev/null 2>&1 || need="$need jq"
command -v cc >/dev/null 2>&1 || need="$need cc"
if [ -z "${ST_TEST_PG_URL:-}" ] || [ -n "$need" ]; then
	why="no PostgreSQL test server in $envfile (sh tests/servers/ctl start postgres)"
	[ -n "$need" ] && why="needs$need"
	skip_or_fail "postgres test server" "$why"
	finish
	exit
fi
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGPASSWORD PGPASSFILE PGSERVICE PGOPTIONS \
	PGSSLMODE PGREQUIRESSL
export HOME=$T
SCHEMA=ix_t$$_$(date +%s)
psqlx() {
	PGPASSWORD=$ST_TEST_PGPASSWORD psql -X -q -v ON_ERROR_STOP=1 -h "$ST_TEST_PGHOST" \
		-p "$ST_TEST_PGPORT" -U "$ST_TEST_PGUSER" -d "$ST_TEST_PGDATABASE" "$@"
}
cleanup() {
	psqlx -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE; DROP SCHEMA IF EXISTS ${SCHEMA}_c CASCADE; DROP SCHEMA IF EXISTS ${SCHEMA}_v CASCADE" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
psqlx -c "CREATE SCHEMA $SCHEMA; CREATE SCHEMA ${SCHEMA}_c; CREATE SCHEMA ${SCHEMA}_v" || { echo "t_index_pg.sh: cannot create a schema"; exit 1; }
PG="$ST_TEST_PG_URL?sslmode=disable&search_path=$SCHEMA"
PGC="$ST_TEST_PG_URL?sslmode=disable&search_path=${SCHEMA}_c"
SQ=$T/ix.sqlite

cc -O2 -o "$T/gen" "$top_srcdir/bench/gen.c"
# mkbackend DIR SEED PROJECT... : four stacks of 40 resources per project
mkbackend() {
	d=$1 seed=$2
	shift 2
	mkdir -p "$d/.pulumi/stacks"
	printf 'version: 1\n' >"$d/.pulumi/meta.yaml"
	for p in "$@"; do
		mkdir -p "$d/.pulumi/stacks/$p"
		for s in dev stage prod eu; do
			seed=$((seed + 1))
			"$T/gen" 40 $seed --checkpoint --stack $s --project $p >"$d/.pulumi/stacks/$p/$s.json"
		done
	done
}
B=$T/b
mkbackend "$B" 0 shop web data
cp "$B/.pulumi/stacks/web/eu.json" "$B/.pulumi/stacks/web/eu-copy.json"
st convert "$FIXTURES/edit/base.json" --envelope checkpoint --checkpoint-stack organization/edit/main -o "$T/main.json" >/dev/null
mkdir -p "$B/.pulumi/stacks/edit" && cp "$T/main.json" "$B/.pulumi/stacks/edit/main.json"

# ---- the same index on both engines ----
run "build on sqlite" st index update --backend "$B" --db "$SQ"
check_rc 0; check_out_has "14 stacks: 14 indexed"
run "build on postgres" st index update --backend "$B" --db "$PG"
check_rc 0
total=$(sed -n 's/.*14 indexed (\([0-9]*\) resources).*/\1/p' "$T/out")
redacted=$(printf '%s' "$PG" | sed 's|://\([^:@/]*\):[^@]*@|://\1@|')
check_out "$redacted: 14 stacks: 14 indexed ($total resources), 0 unchanged, 0 removed, 0 failed"
check_err_lacks "$ST_TEST_PGPASSWORD"
run "no change on postgres" st index update --backend "$B" --db "$PG" --json
check_rc 0
check_out_has '"unchanged": 14,'; check_out_has '"parsed": 0,'; check_out_has "\"index\": \"$redacted\","
# a no-change update reads no stack: unreadable stacks with the same listing are not opened
chmod 000 "$B/.pulumi/stacks/shop/dev.json" "$B/.pulumi/stacks/web/prod.json"
if [ -r "$B/.pulumi/stacks/shop/dev.json" ]; then
	current="no-change reads nothing (skipped: running as a user who reads mode 000)"; ok
else
	run "no change reads no stack" st index update --backend "$B" --db "$PG"
	check_rc 0; check_out_has "0 indexed (0 resources), 14 unchanged"
fi
chmod 644 "$B/.pulumi/stacks/shop/dev.json" "$B/.pulumi/stacks/web/prod.json"
touch "$B/.pulumi/stacks/shop/dev.json"
run "touched, not changed (hash) on postgres" st index update --backend "$B" --db "$PG"
check_rc 0; check_out_has "0 indexed (0 resources), 14 unchanged"

# same SQL-ish answer, byte for byte: stdout, exit code and (for queries) an empty stderr
same() { # NAME ARGS...
	name=$1; shift
	"$STATETOOL" query --db "$SQ" "$@" >"$T/sq.out" 2>"$T/sq.err"; src=$?
	"$STATETOOL" query --db "$PG" "$@" >"$T/pg.out" 2>"$T/pg.err"; prc=$?
	current="same on both: $name"
	cp "$T/pg.out" "$T/out"; cp "$T/pg.err" "$T/err"
	if [ $src -ne 0 ] || [ $prc -ne 0 ]; then bad "exit codes $src (sqlite) and $prc (postgres)"
	elif [ -s "$T/sq.err" ] || [ -s "$T/pg.err" ]; then bad "stderr: $(cat "$T/sq.err")"
	elif ! cmp -s "$T/sq.out" "$T/pg.out"; then bad "$(diff "$T/sq.out" "$T/pg.out" | head -6)"
	elif [ "${empty_ok:-}" != 1 ] && [ "$(wc -l <"$T/pg.out")" -lt 2 ]; then bad "no rows: the comparison proves nothing"
	else ok; fi
}
same3() { # NAME ARGS...: table, --json and --csv
	n=$1; shift
	same "$n (table)" "$@"; same "$n (json)" --json "$@"; same "$n (csv)" --csv "$@"
}
someid=$(jq -r '.checkpoint.latest.resources[12].id' "$B/.pulumi/stacks/shop/dev.json")
same3 "type" --type aws:rds/instance:Instance
same3 "id" --id "$someid"
same3 "urn glob" --urn '*::svc-1'
same3 "urn glob, ? and a class" --urn 'urn:pulumi:?ev::shop::*::svc-[1-3]'
same3 "urn glob, a negated class" --urn '*::r-[^0-8]*'
same3 "urn glob with regex specials" --urn '*$my:index:Web$*'
same3 "stack" --stack 'organization/web/*'
same3 "stack exact" --stack organization/edit/main
same3 "provider package@version" --provider aws@6.0.0
same3 "provider package" --provider gcp
same3 "provider urn" --provider 'urn:pulumi:dev::shop::pulumi:providers:gcp::default_7_2_0'
same3 "protected" --protected
# (schema 6: a protected row's URN, parent and provider from its row, on both engines)
same3 "protected, urn glob" --protected --urn '*$*'
same3 "protected, stack" --protected --stack 'edit/*'
same3 "protected, type" --protected --type aws:s3/bucket:Bucket
same3 "protected, a provider (through urns)" --protected --provider aws
same3 "pending" --pending
same3 "dependents-of" --dependents-of 'urn:pulumi:dev::shop::my:index:App$my:index:Web$aws:s3/bucket:Bucket::assets'
same3 "dependents-of a component" --dependents-of 'urn:pulumi:dev::shop::my:index:App::app'
same3 "duplicate ids" --duplicate-ids
same3 "type and stack" --type aws:s3/bucket:Bucket --stack 'organization/shop/*'
same3 "everything" --urn '*'
impid=$("$STATETOOL" query --db "$SQ" --csv --sql "SELECT import_id FROM resources WHERE import_id IS NOT NULL AND import_id != '' LIMIT 1" | tail -n +2)
if [ -n "$impid" ]; then same3 "import id" --import-id "$impid"; fi
empty_ok=1
same3 "nothing matches" --type no:such:Type
empty_ok=
for sql in \
	"SELECT count(*) AS n FROM stacks" \
	"SELECT qname, project, stack, path, size, sha256, version, envelope, resources FROM stacks ORDER BY qname" \
	"SELECT s.qname, r.position, r.urn, r.type, r.name, r.id, r.import_id, r.parent, r.provider, r.custom, r.protect, r.\"delete\", r.external, r.taint, r.pending_replacement, r.retain_on_delete, r.created, r.modified FROM resources r JOIN stacks s ON s.id = r.stack_id ORDER BY s.qname, r.position" \
	"SELECT s.qname, e.from_urn, e.kind, e.to_urn, e.property FROM edges e JOIN stacks s ON s.id = e.stack_id ORDER BY 1, 2, 3, 4, 5" \
	"SELECT s.qname, p.urn, p.id, p.ref, p.package, p.version FROM providers p JOIN stacks s ON s.id = p.stack_id ORDER BY 1, 2" \
	"SELECT s.qname, p.urn, p.type FROM pending p JOIN stacks s ON s.id = p.stack_id ORDER BY 1, 2, 3" \
	"SELECT s.qname, x.urn, x.path FROM secrets x JOIN stacks s ON s.id = x.stack_id ORDER BY 1, 2, 3" \
	"SELECT type, count(*) AS n FROM resources GROUP BY type ORDER BY n DESC, type" \
	"SELECT s.qname, r.position, r.protected_urn, r.protected_parent, r.protected_provider, r.urn_n FROM resource_rows r JOIN stacks s ON s.id = r.stack_id WHERE r.protect <> 0 OR r.protected_urn IS NOT NULL ORDER BY 1, 2" \
	"SELECT value FROM meta WHERE key = 'schema_version'"; do
	same3 "--sql $sql" --sql "$sql"
done
# a statement that writes (or more than one) is refused on both, the index unchanged
for sql in "DELETE FROM resources" "UPDATE stacks SET resources = 0" \
	"INSERT INTO meta VALUES ('x', 'y')" "DROP TABLE edges" "CREATE TABLE t (a INT)" \
	"SELECT 1; DELETE FROM resources"; do
	for db in "$SQ" "$PG"; do
		run "--sql refused on $db: $sql" st query --db "$db" --sql "$sql"
		check_rc 2; check_out_empty; check_err_lacks "$ST_TEST_PGPASSWORD"
		case $sql in "SELECT 1;"*) ;; *) check_err_has "only read-only statements are allowed" ;; esac
	done
done
# a statement that returns no rows (transaction control, settings) or copies is refused too,
# and nothing of the server's notices reaches stderr
for sql in "BEGIN" "COMMIT" "ROLLBACK" "SAVEPOINT a"; do
	for db in "$SQ" "$PG"; do
		run "--sql refused on $db: $sql" st query --db "$db" --sql "$sql"
		check_rc 2; check_out_empty
		check_err "statetool: error: only queries are allowed (the index is opened read-only): a statement that returns no rows is refused"
	done
done
for sql in "SET TRANSACTION READ WRITE" "NOTIFY x" "COPY stacks TO STDOUT" "PREPARE p AS DELETE FROM meta"; do
	run "--sql refused on postgres: $sql" st query --db "$PG" --sql "$sql"
	check_rc 2; check_out_empty
	check_err "statetool: error: only queries are allowed (the index is opened read-only): a statement that returns no rows is refused"
done
# --sql reads the index and nothing else (lib/index/pgsql.c): what a READ ONLY transaction
# still lets a SELECT do on the server is refused before anything of the statement runs.
# Another session of the same role, busy for a few seconds (another member's update), is
# neither cancelled nor ended, not even by a DO block.
app=st_victim_$$
(PGPASSWORD=$ST_TEST_PGPASSWORD PGAPPNAME=$app psql -X -q -At -v ON_ERROR_STOP=1 \
	-h "$ST_TEST_PGHOST" -p "$ST_TEST_PGPORT" -U "$ST_TEST_PGUSER" -d "$ST_TEST_PGDATABASE" \
	-c "SELECT 'finished' FROM pg_sleep(4)" >"$T/victim.out" 2>&1; echo $? >"$T/victim.rc") &
victim=
for _ in $(seq 100); do
	victim=$(psqlx -At -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$app' AND state = 'active'")
	[ -n "$victim" ] && break
	sleep 0.05
done
current="the other session is running"; if [ -n "$victim" ]; then ok; else bad "no session '$app'"; victim=0; fi
for sql in "SELECT pg_cancel_backend($victim)" "SELECT pg_terminate_backend($victim)" \
	"SELECT 1 AS n FROM stacks WHERE pg_cancel_backend($victim) LIMIT 1" \
	"WITH x AS (SELECT pg_terminate_backend($victim) AS t) SELECT count(*) FROM x"; do
	run "--sql refused: $sql" st query --db "$PG" --sql "$sql"
	check_rc 2; check_out_empty
	check_err_has "statetool: error: --sql reads the index and nothing else: 'function pg_"
	check_err_has "_backend(integer"
done
run "--sql refused: DO" st query --db "$PG" --sql "DO \$\$BEGIN PERFORM pg_cancel_backend($victim); END\$\$"
check_rc 2; check_err "statetool: error: only queries are allowed (the index is opened read-only): a statement that returns no rows is refused"
current="the other session was still running"
if [ -n "$(psqlx -At -c "SELECT pid FROM pg_stat_activity WHERE pid = $victim AND state = 'active'")" ]; then ok; else bad "it ended before the refusals: they prove nothing"; fi
wait
current="the other session's query completed"
if [ "$(cat "$T/victim.rc")" = 0 ] && [ "$(cat "$T/victim.out")" = finished ]; then ok; else bad "$(cat "$T/victim.out")"; fi
# the other functions that act outside the transaction, and what is not the index
psqlx -c "CREATE TABLE $SCHEMA.pg26_other (a INT); CREATE FUNCTION $SCHEMA.pg26_one() RETURNS INT IMMUTABLE LANGUAGE sql AS 'SELECT 1'" >/dev/null
while IFS='|' read -r sql what; do
	run "--sql refused: $sql" st query --db "$PG" --sql "$sql"
	check_rc 2; check_out_empty
	check_err "statetool: error: --sql reads the index and nothing else: $what"
done <<LIST
SELECT 1 AS n FROM stacks WHERE pg_try_advisory_lock(4711)|'function pg_try_advisory_lock(bigint)' is refused
SELECT pg_advisory_lock(4711) IS NULL|'function pg_advisory_lock(bigint)' is refused
SELECT set_config('statement_timeout', '0', false)|'function set_config(text,text,boolean)' is refused
SELECT 1 WHERE pg_notify('pg26', 'x') IS NULL|'function pg_notify(text,text)' is refused
SELECT pg_notify('pg26', 'x')|column 'pg_notify' has no value (void): a function called for what it does is refused
SELECT lo_import('/etc/hostname')|'function lo_import(text)' is refused
SELECT lo_export(lo_from_bytea(0, 'x'), '/tmp/pg26-lo')|'function lo_export(oid,text)' is refused
SELECT pg_sleep(100)|column 'pg_sleep' has no value (void): a function called for what it does is refused
SELECT count(*) FROM stacks WHERE pg_sleep(100) IS NOT NULL|'function pg_sleep(double precision)' is refused
SELECT pg_read_file('postgresql.conf')|'function pg_read_file(text)' is refused
SELECT query_to_xml('DELETE FROM meta', true, false, '')|'function query_to_xml(text,boolean,boolean,text)' is refused
SELECT nextval('stacks_id_seq')|'function nextval(regclass)' is refused
SELECT current_setting('search_path')|'function current_setting(text)' is refused
SELECT pg26_one()|'function pg26_one()' is refused
SELECT count(*) FROM pg_stat_activity|'view pg_stat_activity' is refused
SELECT * FROM pg26_other|'table pg26_other' is refused
SELECT 1::information_schema.cardinal_number|a cast to a domain is refused
SELECT xmlelement(name a)|an XML function is refused
SELECT count(*) FROM stacks TABLESAMPLE BERNOULLI (50)|TABLESAMPLE is refused
SELECT g::regclass::text FROM generate_series(16384,16400) g|'type regclass' is refused
SELECT 10::oid::regrole::text|'type regrole' is refused
SELECT 'stacks'::regclass|'type regclass' is refused
SELECT 11::oid::regnamespace|'type regnamespace' is refused
SELECT ARRAY[1::oid]::regtype[]|'type regtype[]' is refused
LIST
for sql in "EXPLAIN SELECT 1" "SHOW search_path"; do
	run "--sql refused: $sql" st query --db "$PG" --sql "$sql"
	check_rc 2; check_err "statetool: error: only queries are allowed (SELECT, VALUES, TABLE, WITH ... SELECT): '${sql%% *}' is refused"
done
run "--sql refused: a WITH that writes" st query --db "$PG" --sql "WITH d AS (DELETE FROM meta RETURNING key) SELECT count(*) FROM d"
check_rc 2; check_err "statetool: error: only read-only statements are allowed (the index is opened read-only)"
# a statement that runs too long is stopped at statement_timeout (the URL's here: lower than
# the 60 s --sql allows at most)
run "--sql past its time limit" st query --db "$PG&statement_timeout=300" --sql "SELECT count(*) AS n FROM generate_series(1, 100000000000) a"
check_rc 1; check_out_empty
check_err "statetool: error: index '$redacted&statement_timeout=300': the query was stopped at its time limit (statement_timeout 300ms: --sql on PostgreSQL runs at most 60 s, less if the URL or the role sets less)"
# what queries over the index use still works: CTEs, window functions, set operations, json,
# text, date and format functions, records
same3 "--sql a CTE and a window function" --sql "WITH t AS (SELECT type, count(*) AS n FROM resources GROUP BY type) SELECT type, n, rank() OVER (ORDER BY n DESC, type) AS r, sum(n) OVER (ORDER BY n DESC, type ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running FROM t ORDER BY r"
same3 "--sql a union and subqueries" --sql "SELECT qname AS q FROM stacks WHERE id IN (SELECT stack_id FROM pending) OR EXISTS (SELECT 1 FROM secrets x WHERE x.stack_id = stacks.id) UNION SELECT 'none' ORDER BY 1"
run "--sql json, text and format functions" st query --db "$PG" --csv --sql "SELECT split_part(qname, '/', 2) AS project, string_agg(stack, ',' ORDER BY stack) AS stacks, jsonb_build_object('n', count(*))->>'n' AS n, format('%s!', upper(min(stack))) AS f, to_char(count(*), 'FM00') AS c, json_agg(DISTINCT lower(envelope))::text AS j, bool_and(indexed_at::timestamptz <= now() AND length(sha256) = 64 AND sha256 ~ '^[0-9a-f]+\$') AS ok, (min(id) > 0, 'x') AS rec FROM stacks GROUP BY 1 ORDER BY 1"
check_rc 0; check_err_empty
check_out 'project,stacks,n,f,c,j,ok,rec
data,"dev,eu,prod,stage",4,DEV!,04,"[""checkpoint""]",t,"(t,x)"
edit,main,1,MAIN!,01,"[""checkpoint""]",t,"(t,x)"
shop,"dev,eu,prod,stage",4,DEV!,04,"[""checkpoint""]",t,"(t,x)"
web,"dev,eu,eu,prod,stage",5,DEV!,05,"[""checkpoint""]",t,"(t,x)"'
run "--sql named arguments" st query --db "$PG" --csv --sql "SELECT make_interval(days => count(*)::int) AS i FROM stacks"
check_rc 0; check_err_empty; check_out "i
14 days"
same "after refused writes" --sql "SELECT count(*) AS n FROM resources"
check_out "n
$total"

# the URL's forms: credentials from the PG* variables (no password in the URL), a wrong password
base="postgres://$ST_TEST_PGHOST:$ST_TEST_PGPORT/$ST_TEST_PGDATABASE?sslmode=disable&search_path=$SCHEMA"
run "credentials from PGUSER and PGPASSWORD" env PGUSER="$ST_TEST_PGUSER" PGPASSWORD="$ST_TEST_PGPASSWORD" \
	"$STATETOOL" query --db "$base" --sql "SELECT count(*) AS n FROM stacks"
check_rc 0; check_out "n
14"
run "everything from the PG* variables" env PGHOST="$ST_TEST_PGHOST" PGPORT="$ST_TEST_PGPORT" \
	PGDATABASE="$ST_TEST_PGDATABASE" PGUSER="$ST_TEST_PGUSER" PGPASSWORD="$ST_TEST_PGPASSWORD" \
	PGSSLMODE=disable PGOPTIONS="-c search_path=$SCHEMA" \
	"$STATETOOL" query --db "postgres://" --sql "SELECT count(*) AS n FROM stacks"
check_rc 0; check_out "n
14"
wrong=$(printf '%s' "$ST_TEST_PG_URL" | sed 's|:[^:@/]*@|:not-the-password-4711@|')
run "wrong password" st index update --backend "$B" --db "$wrong?sslmode=disable&search_path=$SCHEMA"
check_rc 1; check_err_lacks "not-the-password-4711"; check_err_has "password authentication failed"
run "wrong password in PGPASSWORD" env PGPASSWORD=not-the-password-4711 "$STATETOOL" query \
	--db "postgres://$ST_TEST_PGUSER@$ST_TEST_PGHOST:$ST_TEST_PGPORT/$ST_TEST_PGDATABASE?sslmode=disable" --type x
check_rc 1; check_err_lacks "not-the-password-4711"; check_err_has "PGPASSWORD"
# an index of schema 2 (resources and edges were tables with full URNs; now views): rebuilt
psqlx -c "SET search_path = ${SCHEMA}_v;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES ('schema_version', '2');
CREATE TABLE stacks (id BIGSERIAL PRIMARY KEY, qname TEXT UNIQUE NOT NULL, project TEXT, stack TEXT, path TEXT, size BIGINT, mtime_ns BIGINT, sha256 TEXT, version BIGINT, envelope TEXT, resources BIGINT, indexed_at TEXT, etag TEXT);
CREATE TABLE resources (stack_id BIGINT NOT NULL, position BIGINT NOT NULL, urn TEXT NOT NULL, PRIMARY KEY (stack_id, position));
CREATE TABLE edges (stack_id BIGINT NOT NULL, from_urn TEXT NOT NULL, kind TEXT NOT NULL, to_urn TEXT NOT NULL, property TEXT);
INSERT INTO stacks (id, qname) VALUES (1, 'organization/old/gone'); INSERT INTO resources VALUES (1, 0, 'urn:pulumi:gone::old::a:b:C::x')" >/dev/null
PGV="$ST_TEST_PG_URL?sslmode=disable&search_path=${SCHEMA}_v"
run "schema 2 on postgres: a query says to rebuild" st query --db "$PGV" --type x
check_rc 1; check_err_has "has schema version 2, not 6; run \`statetool index update\` to rebuild it"
run "schema 2 on postgres rebuilt" st index update --backend "$B" --db "$PGV"
check_rc 0; check_err_has "the index had schema version 2; rebuilt as version 6"; check_out_has "14 indexed"
run "schema 2 on postgres rebuilt: the new rows only" st query --db "$PGV" --csv --sql "SELECT (SELECT count(*) FROM stacks) AS stacks, (SELECT count(*) FROM resources WHERE urn LIKE '%gone%') AS old, (SELECT value FROM meta WHERE key = 'schema_version') AS v"
check_rc 0; check_out "stacks,old,v
14,0,6"

run "index --help names the URL's forms" st index update --help
check_rc 0; check_out_has "postgres://[USER[:PASSWORD]@][HOST][:PORT][/DATABASE][?PARAMS]"
check_out_has "PGPASSWORD"; check_out_has "Messages never show the password"
run "query --help" st query --help
check_rc 0; check_out_has "--db PATH|URL"; check_out_has "returns no rows (BEGIN, COMMIT, SET, COPY...)"
check_out_has "is checked before it runs: a function that acts on the server"; check_out_has "json_agg... run); it stops after 60 s (statement_timeout; sooner"

# ---- an index of an older schema version being rebuilt: readers are told ----
psqlx -c "UPDATE $SCHEMA.meta SET value = '5' WHERE key = 'schema_version'"
run "postgres: a rebuild killed before its first stack" env STATETOOL_CRASH_AT=index:1 "$STATETOOL" index update --backend "$B" --db "$PG"
check_rc 137; check_err_has "the index had schema version 5; rebuilt as version 6"
run "postgres: a reader of an index being rebuilt is told" st query --db "$PG" --sql "SELECT count(*) AS n FROM stacks"
check_rc 1
check_err_has "is being rebuilt (it had schema version 5) and holds only the stacks written so far: query it when its update ends (if none is running, one was interrupted: run \`statetool index update\`)"
run "postgres: the rebuild's end" st index update --backend "$B" --db "$PG"
check_rc 0
run "postgres: then the index is read" st query --db "$PG" --csv --sql "SELECT count(*) AS n FROM stacks WHERE qname LIKE 'organization/%'"
check_rc 0; check_out_has "n"
run "postgres: no rebuild mark left" st query --db "$PG" --csv --sql "SELECT count(*) AS n FROM meta WHERE key = 'rebuilding_from'"
check_out "n
0"

# ---- several updaters at once, two on each of two backends sharing the index, into an empty
# database ----
# B1 has shop and core, B2 data and ops (ops: other resource counts).
B1=$T/b1
B2=$T/b2
mkbackend "$B1" 100 shop core
mkbackend "$B2" 200 data ops
for s in dev stage prod eu; do "$T/gen" 55 $((300 + ${#s})) --checkpoint --stack $s --project ops >"$B2/.pulumi/stacks/ops/$s.json"; done
# consistent: every stack's rows are whole (as many resources as its row says and as its file
# at its recorded place holds); prints the stacks that are not
consistent() { # DB
	"$STATETOOL" query --db "$1" --csv --sql "SELECT s.qname, s.path, s.resources, count(r.urn) AS n FROM stacks s LEFT JOIN resources r ON r.stack_id = s.id GROUP BY s.id, s.qname, s.path, s.resources ORDER BY s.qname" >"$T/cons" 2>&1 || { cat "$T/cons"; return; }
	tail -n +2 "$T/cons" | while IFS=, read -r qn path nres n; do
		want=$(jq '.checkpoint.latest.resources | length' "$path" 2>/dev/null)
		[ "$nres" = "$n" ] && [ "$n" = "$want" ] || echo "$qn: row says $nres, $n rows, file $path has $want"
	done
}
stacks_of() { "$STATETOOL" query --db "$1" --csv --sql "SELECT qname FROM stacks ORDER BY qname" | tail -n +2; }
all_qnames="$( (cd "$B1/.pulumi/stacks" && ls */*.json; cd "$B2/.pulumi/stacks" && ls */*.json) | sed 's|^|organization/|; s|\.json$||' | LC_ALL=C sort -u)"

# a reader in a loop: a stack whose rows do not match its row's count is half-written
reader() { # DB FLAGFILE -> prints bad reads; stops when FLAGFILE goes
	fails=0 reads=0
	while [ -e "$2" ]; do
		if out=$("$STATETOOL" query --db "$1" --csv --sql "SELECT s.qname, s.resources, count(r.urn) AS n FROM stacks s LEFT JOIN resources r ON r.stack_id = s.id GROUP BY s.id, s.qname, s.resources HAVING s.resources != count(r.urn)" 2>&1); then
			[ -z "$(printf '%s' "$out" | tail -n +2)" ] || { fails=$((fails + 1)); echo "partial: $out"; }
		else
			case $out in *"no index"*|*"does not exist"*) ;; *) fails=$((fails + 1)); echo "failed: $out" ;; esac
		fi
		reads=$((reads + 1))
	done
	echo "reads $reads"
}
: >"$T/flag"
reader "$PGC" "$T/flag" >"$T/reads" 2>&1 &
rd=$!
pids=""
for i in 1 2 3 4; do
	case $i in 1|3) bk=$B1 ;; *) bk=$B2 ;; esac
	( for round in 1 2 3; do "$STATETOOL" index update --backend "$bk" --db "$PGC" || echo "updater $i round $round: exit $?"; done ) >"$T/upd$i" 2>&1 &
	pids="$pids $!"
done
# and a fifth, killed mid-run
sleep 1
"$STATETOOL" index update --backend "$B1" --db "$PGC" >/dev/null 2>&1 &
victim=$!
sleep 0.3
kill -9 $victim 2>/dev/null
wait $victim 2>/dev/null
for p in $pids; do wait "$p"; done
rm -f "$T/flag"
wait $rd
current="4 concurrent updaters never fail"
cat "$T/upd1" "$T/upd2" "$T/upd3" "$T/upd4" >"$T/err"; : >"$T/out"
if grep -q "exit" "$T/err"; then bad "an updater failed"; else ok; fi
current="a reader never sees a half-written stack ($(grep '^reads' "$T/reads"))"
cp "$T/reads" "$T/out"
if [ "$(grep -vc '^reads' "$T/reads")" = 0 ] && grep -q '^reads' "$T/reads"; then ok; else bad "$(head -3 "$T/reads")"; fi
current="no stack lost"
stacks_of "$PGC" >"$T/out"
if [ "$(cat "$T/out")" = "$all_qnames" ]; then ok; else bad "$(printf '%s\n' "$all_qnames" | diff - "$T/out" | head -5)"; fi
current="no stack corrupted"
consistent "$PGC" >"$T/out"
if [ ! -s "$T/out" ]; then ok; else bad "inconsistent stacks"; fi

# then one more update of each, in turn, on both engines: the same index
for bk in "$B1" "$B2"; do
	run "final update on postgres" st index update --backend "$bk" --db "$PGC"
	check_rc 0
	run "final update on sqlite" st index update --backend "$bk" --db "$T/c.sqlite"
	check_rc 0
done
for sql in "SELECT qname, path, size, sha256, resources FROM stacks ORDER BY qname" \
	"SELECT s.qname, r.position, r.urn, r.type, r.id, r.parent, r.provider, r.protect FROM resources r JOIN stacks s ON s.id = r.stack_id ORDER BY s.qname, r.position" \
	"SELECT s.qname, count(*) AS n FROM edges e JOIN stacks s ON s.id = e.stack_id GROUP BY s.qname ORDER BY s.qname"; do
	"$STATETOOL" query --db "$T/c.sqlite" --csv --sql "$sql" >"$T/want" 2>&1
	run "after the concurrent updates: $sql" st query --db "$PGC" --csv --sql "$sql"
	check_rc 0; check_same "$T/want" "$T/out"
done
# a stack gone from B1 is dropped by B1's update; B2's stacks stay
rm "$B1/.pulumi/stacks/shop/eu.json"
run "a stack gone from one backend" st index update --backend "$B1" --db "$PGC"
check_rc 0; check_out_has "1 removed"
run "the other backend's stacks stay" st query --db "$PGC" --csv --sql "SELECT count(*) AS n FROM stacks WHERE project = 'data'"
check_out "n
4"
run "the same on sqlite" st index update --backend "$B1" --db "$T/c.sqlite"
check_rc 0; check_out_has "1 removed"
run "the other backend's stacks stay on sqlite" st query --db "$T/c.sqlite" --csv --sql "SELECT count(*) AS n FROM stacks WHERE project = 'data'"
check_out "n
4"

# ---- a third backend with stacks of the names B1's have (core/*): one index keeps one stack
# of a name, so B3's are refused and B1's rows kept; a removal in B3 never drops B1's ----
B3=$T/b3
mkbackend "$B3" 300 core
paths_core() { "$STATETOOL" query --db "$1" --csv --sql "SELECT qname, path, resources FROM stacks WHERE project = 'core' ORDER BY qname"; }
for db in "$PGC" "$T/c.sqlite"; do
	case $db in postgres*) e=postgres ;; *) e=sqlite ;; esac
	paths_core "$db" >"$T/core_before"
	run "$e: another backend's stacks of the same names are refused" st index update --backend "$B3" --db "$db"
	check_rc 1
	check_out_has "4 stacks: 0 indexed (0 resources), 0 unchanged, 0 removed, 4 failed"
	check_err_has "organization/core/dev: the index holds a stack of this name from another backend ('$B1/.pulumi/stacks/core/dev.json'), and one index keeps one stack of a name: '$B3/.pulumi/stacks/core/dev.json' was not indexed and the other's rows were left as they are (give this backend its own --db; if the other backend no longer has the stack, update the index from it first)"
	run "$e: the first backend's rows are as they were" paths_core "$db"
	check_same "$T/core_before" "$T/out"
	grep -q "$B1/.pulumi/stacks/core/dev.json" "$T/core_before" || bad "core/dev is not B1's"
done
rm "$B3/.pulumi/stacks/core/dev.json"
for db in "$PGC" "$T/c.sqlite"; do
	case $db in postgres*) e=postgres ;; *) e=sqlite ;; esac
	run "$e: a stack gone from B3 is not B1's to drop" st index update --backend "$B3" --db "$db"
	check_rc 1; check_out_has "3 stacks: 0 indexed (0 resources), 0 unchanged, 0 removed, 3 failed"
	run "$e: B1's core/dev stays" paths_core "$db"
	check_same "$T/core_before" "$T/out"
done
rm -r "$B3/.pulumi/stacks/core"
for db in "$PGC" "$T/c.sqlite"; do
	case $db in postgres*) e=postgres ;; *) e=sqlite ;; esac
	run "$e: a backend listing no stack drops none of another's" st index update --backend "$B3" --db "$db"
	check_rc 0; check_out_has "0 stacks: 0 indexed (0 resources), 0 unchanged, 0 removed, 0 failed"
	run "$e: B1's stacks stay" paths_core "$db"
	check_same "$T/core_before" "$T/out"
done
finish
