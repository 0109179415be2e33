#!/bin/sh
# A query never answers from a stale index silently: each stack's file is compared with what was
# indexed (its size, time and tag; not its directory's time, which a write in place leaves as it
# was). A file touched (same size), a file rewritten in place, a file replaced by a copy of the
# same size and time, a new stack, a removed stack and a new project are each named on stderr;
# the same words on SQLite and on PostgreSQL (when the test server is up); --refresh clears them.
. "$(dirname "$0")/lib.sh"
B=$T/b
SQ=$T/ix.sqlite
mkdir -p "$B/.pulumi/stacks/shop" "$B/.pulumi/stacks/web"
printf 'version: 1\n' >"$B/.pulumi/meta.yaml"
st convert "$FIXTURES/edit/base.json" --envelope checkpoint --checkpoint-stack organization/shop/dev \
	-o "$T/base.json" >/dev/null
# mkstack PROJECT STACK [DIR]: the fixture as that stack (its URNs naming it)
mkstack() {
	mkdir -p "$B/.pulumi/stacks/$1"
	sed "s/dev::shop::/$2::$1::/g; s|organization/shop/dev|organization/$1/$2|g; s/shop-dev/$1-$2/" \
		"$T/base.json" >"$B/.pulumi/stacks/$1/$2.json"
}
for p in shop web; do
	for s in dev prod; do mkstack $p $s; done
done
# the engines: SQLite always, PostgreSQL when the test servers run one
envfile=${ST_SERVERS_DIR:-/tmp/statetool-servers-$(id -u)}/env
# shellcheck source=/dev/null
[ -r "$envfile" ] && . "$envfile"
PG=""
if [ -n "${ST_TEST_PG_URL:-}" ] && command -v psql >/dev/null 2>&1; then
	unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGPASSWORD PGPASSFILE PGSERVICE PGOPTIONS
	SCHEMA=ix_st$$_$(date +%s)
	psqlx() {
		PGPASSWORD=$ST_TEST_PGPASSWORD psql -X -q -v ON_ERROR_STOP=1 -h "$ST_TEST_PGHOST" \
			-p "$ST_TEST_PGPORT" -U "$ST_TEST_PGUSER" -d "$ST_TEST_PGDATABASE" "$@"
	}
	cleanup() {
		psqlx -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1
		rm -rf "$T"
	}
	trap cleanup EXIT
	psqlx -c "CREATE SCHEMA $SCHEMA" && PG="$ST_TEST_PG_URL?sslmode=disable&search_path=$SCHEMA"
else
	echo "t_index_stale.sh: no PostgreSQL test server: SQLite only"
fi

# stale NAME EXPECTED-STDERR: a query on each engine says exactly that (and still answers)
stale() {
	name=$1 want=$2
	run "$name" st query --backend "$B" --db "$SQ" --protected --csv
	check_rc 0
	if [ -n "$want" ]; then check_err "$want"; else check_err_empty; fi
	check_out_has "organization/shop/dev,urn:pulumi:dev::shop::my:index:App\$my:index:Web\$aws:s3/bucket:Bucket::assets"
	if [ -n "$PG" ]; then
		cp "$T/err" "$T/sq.err"
		run "$name (postgres)" st query --backend "$B" --db "$PG" --protected --csv
		check_rc 0; check_same "$T/sq.err" "$T/err"
	fi
}
refresh() {
	run "refresh" st query --backend "$B" --db "$SQ" --pending --refresh
	check_rc 0
	if [ -n "$PG" ]; then
		cp "$T/err" "$T/sq.err"
		run "refresh (postgres)" st query --backend "$B" --db "$PG" --pending --refresh
		check_rc 0; check_same "$T/sq.err" "$T/err"
	fi
	stale "fresh again" ""
}
HINT="statetool: warning: the answer may be out of date: rerun with --refresh (or run \`statetool index update\`)"

run "build" st index update --backend "$B" --db "$SQ"
check_rc 0; check_out_has "4 stacks: 4 indexed"
if [ -n "$PG" ]; then
	run "build (postgres)" st index update --backend "$B" --db "$PG"
	check_rc 0; check_out_has "4 stacks: 4 indexed"
fi
stale "fresh" ""

# touched: a new time, the same size and bytes (the directory's time is not changed by it)
touch -d '2001-02-03 04:05:06' "$B/.pulumi/stacks/shop/prod.json"
stale "touched (same size)" "statetool: warning: stack 'organization/shop/prod' changed since it was indexed
$HINT"
refresh

# rewritten in place (cp writes into the existing file: same inode, same directory)
st convert "$B/.pulumi/stacks/web/dev.json" --indent -o "$T/indented.json" >/dev/null
before=$(stat -c %y "$B/.pulumi/stacks/web")
cp "$T/indented.json" "$B/.pulumi/stacks/web/dev.json"
current="a write in place leaves its directory's time"
if [ "$(stat -c %y "$B/.pulumi/stacks/web")" = "$before" ]; then ok; else bad "it changed"; fi
stale "rewritten in place" "statetool: warning: stack 'organization/web/dev' changed since it was indexed
$HINT"
refresh

# replaced by a copy with the same size and time (a rename: only the inode differs)
cp -p "$B/.pulumi/stacks/web/prod.json" "$T/copy.json"
mv "$T/copy.json" "$B/.pulumi/stacks/web/prod.json"
stale "replaced, same size and time" "statetool: warning: stack 'organization/web/prod' changed since it was indexed
$HINT"
refresh

# its object changed name (PULUMI_DIY_BACKEND_GZIP turned on: dev.json.gz written, dev.json kept
# as its .bak; Pulumi reads the newest variant): the stack changed, it is no stranger
gzip -c "$B/.pulumi/stacks/shop/dev.json" >"$B/.pulumi/stacks/shop/dev.json.gz"
mv "$B/.pulumi/stacks/shop/dev.json" "$B/.pulumi/stacks/shop/dev.json.bak"
stale "compressed" "statetool: warning: stack 'organization/shop/dev' changed since it was indexed
$HINT"
refresh

# a new stack in a known project, a new project, a removed stack
mkstack web eu
mkstack data dev
rm "$B/.pulumi/stacks/shop/prod.json"
stale "new, new project, removed" "statetool: warning: stack 'organization/data/dev' is not in the index
statetool: warning: stack 'organization/shop/prod' is in the index but gone from the backend
statetool: warning: stack 'organization/web/eu' is not in the index
$HINT"
refresh

# more than ten: ten named, then a count
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
	mkstack web "n$i"
done
want=""
for i in 1 10 11 12 2 3 4 5 6 7; do
	want="${want}statetool: warning: stack 'organization/web/n$i' is not in the index
"
done
stale "more than ten" "${want}statetool: warning: and 2 more stacks
$HINT"
refresh
# the same backend named relatively and from another directory: the same stacks (the index
# records each stack's absolute place), for an update and for a query
mkdir -p "$T/sub"
run "relative: update" sh -c 'cd "$1" && "$STATETOOL" index update --backend b --db ix.sqlite' sh "$T"
check_rc 0; check_out_has "0 indexed (0 resources)"; check_out_has ", 0 removed, 0 failed"
run "relative: query" sh -c 'cd "$1/sub" && "$STATETOOL" query --backend ./../b --db ../ix.sqlite --protected --csv' sh "$T"
check_rc 0; check_err_empty
check_out_has "organization/shop/dev,urn:pulumi:dev::shop::my:index:App\$my:index:Web\$aws:s3/bucket:Bucket::assets"
run "relative: recorded absolute" st query --db "$SQ" --sql "SELECT count(*) FROM stacks WHERE path NOT LIKE '$T/b/.pulumi/stacks/%'"
check_rc 0; check_out "count(*)
0"
finish
