#!/bin/sh
# A stack read from a store (s3 on radosgw, azblob on Azurite, postgres, gs on tests/gcsfake.js)
# is loaded lazily, as the same file on disk is (issue 19): `validate --backend` takes the lazy
# path (STATETOOL_TIMINGS=1 says `load: parsed (lazy)`) and reports exactly what it reports on a
# file:// backend holding the same bytes; the fallbacks (text not as statetool writes it: in
# full; .gz and .zst: decompressed, then lazily; a truncated body: the same error) give the same
# report; an edit through --backend writes the same bytes as the same edit on the file. Without
# the servers: skipped, but a failure when $CI is set.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/gcsfake.sh"
: "${STORETOOL:?set STORETOOL to tests/storetool}"
envfile=${ST_SERVERS_DIR:-/tmp/statetool-servers-$(id -u)}/env
[ -r "$envfile" ] && . "$envfile"
if [ -z "${ST_TEST_S3_ENDPOINT:-}" ] || [ -z "${ST_TEST_AZURE_CONNECTION_STRING:-}" ] ||
	[ -z "${ST_TEST_PG_URL:-}" ]; then
	skip_or_fail "test servers" "radosgw, Azurite or PostgreSQL missing in $envfile (sh tests/servers/ctl start)"
	finish
	exit
fi
gcsfake_start t_store_lazy.sh statetool-lazy
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_DEFAULT_PROFILE AWS_REGION AWS_DEFAULT_REGION \
	AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE \
	AZURE_STORAGE_ACCOUNT AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN PULUMI_BACKEND_URL \
	PULUMI_DIY_BACKEND_GZIP PULUMI_DIY_BACKEND_ZSTD PGPASSWORD PGHOST PGPORT PGUSER PGDATABASE \
	STATETOOL_LAZY
export HOME=$T
export AWS_ACCESS_KEY_ID="$ST_TEST_S3_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$ST_TEST_S3_SECRET_KEY"
export AZURE_STORAGE_CONNECTION_STRING="$ST_TEST_AZURE_CONNECTION_STRING"
export no_proxy=127.0.0.1,localhost
id=$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
S3="s3://statetool-lazy/l-$id?endpoint=$ST_TEST_S3_ENDPOINT&use_path_style=true&region=${ST_TEST_S3_REGION:-us-east-1}"
AZ=azblob://statetool-lazy/l-$id
PG="$ST_TEST_PG_URL?sslmode=disable&table=st_lazy_$id"
GS=gs://statetool-lazy/l-$id
FB=$T/file
run "the S3 bucket" "$STORETOOL" mkbucket "$S3"
check_rc 0
run "the Azure container" "$STORETOOL" mkbucket "$AZ"
check_rc 0

R=$FIXTURES/realworld/04-kloudlib-backup-big-56res.json
K=.pulumi/stacks/pulumi-ts/dev.json
STACK=pulumi-ts/dev

# A state in the layouts to try: as read (canonical), with one resource's outputs out of order
# (not as statetool writes: in full), gzip and zstd, and cut short
cp "$R" "$T/plain.json"
# a state whose one resource's outputs are out of order, and the big one with its first
# resource's so (that one in full, the others lazily)
printf '%s\n' '{"version":3,"checkpoint":{"stack":"organization/pulumi-ts/dev","latest":{"manifest":{"time":"2026-01-01T00:00:00Z","magic":"","version":""},"resources":[{"urn":"urn:pulumi:dev::pulumi-ts::pulumi:pulumi:Stack::pulumi-ts-dev","custom":false,"type":"pulumi:pulumi:Stack","outputs":{"b":1,"a":2}}]}}}' >"$T/unordered.json"
awk '!done && /"outputs": \{$/ { sub(/"outputs": \{$/, "\"outputs\": {\"zz\": 1,"); done = 1 } { print }' "$R" >"$T/one-unordered.json"
if cmp -s "$R" "$T/unordered.json"; then bad "no empty outputs to reorder in $R"; fi
gzip -n <"$R" >"$T/gz.json.gz"
zstd -q -c <"$R" >"$T/zst.json.zst"
head -c 20000 "$R" >"$T/cut.json"

# put_stack URL FILE EXT: the backend at URL holds FILE as its one stack (.json EXT)
put_stack() {
	for e in "" .gz .zst; do "$STORETOOL" rm "$1" "$K$e" 2>/dev/null; done
	printf 'version: 1\n' | "$STORETOOL" put "$1" .pulumi/meta.yaml &&
		"$STORETOOL" put "$1" "$K$3" <"$2"
}
# the same report from a store and from the file:// backend, the lazy step when `lazy`
same_as_file() { # same_as_file NAME URL FILE EXT lazy|full
	mkdir -p "$FB"
	put_stack "file://$FB" "$3" "$4"
	put_stack "$2" "$3" "$4"
	STATETOOL_TIMINGS=1 "$STATETOOL" validate --backend "file://$FB" --stack "$STACK" >"$T/want" 2>"$T/want.err"
	wrc=$?
	run "$1: $2" env STATETOOL_TIMINGS=1 "$STATETOOL" validate --backend "$2" --stack "$STACK"
	check_rc "$wrc"
	check_same "$T/want" "$T/out"
	if [ "$5" = lazy ]; then check_err_has "load: parsed (lazy)"; else check_err_lacks "(lazy)"; fi
	# the same steps as from the file (their times aside)
	sed 's/^.* ms) //' "$T/want.err" >"$T/want.steps"
	sed 's/^.* ms) //' "$T/err" | grep -v '^load: downloaded$' >"$T/steps"
	check_same "$T/want.steps" "$T/steps"
	check_err_has "ms) load: downloaded"
}
# the whole backend with --json, too
same_json() { # same_json NAME URL
	"$STATETOOL" validate --json --backend "file://$FB" >"$T/want"
	wrc=$?
	run "$1 --json: $2" st validate --json --backend "$2"
	check_rc "$wrc"
	check_same "$T/want" "$T/out"
}

for U in "$S3" "$AZ" "$PG" "$GS"; do
	same_as_file "canonical" "$U" "$T/plain.json" "" lazy
	check_out "$STACK: valid, 0 errors, 0 warnings (56 resources)"
	same_json "canonical" "$U"
	same_as_file "not canonical: in full" "$U" "$T/unordered.json" "" full
	check_out "$STACK: valid, 0 errors, 0 warnings (1 resource)"
	same_as_file "one resource not canonical" "$U" "$T/one-unordered.json" "" lazy
	check_out "$STACK: valid, 0 errors, 0 warnings (56 resources)"
	same_as_file "gzip: decompressed, then lazily" "$U" "$T/gz.json.gz" .gz lazy
	same_as_file "zstd: decompressed, then lazily" "$U" "$T/zst.json.zst" .zst lazy
	same_json "zstd" "$U"
	same_as_file "truncated" "$U" "$T/cut.json" "" full
	check_out_has "$STACK: error: [json/syntax] unexpected end of JSON input (line 225, column 6942)"
	check_out_has "$STACK: invalid, 1 error, 0 warnings"
	same_json "truncated" "$U"

	# an edit through --backend: the same bytes as the same edit on the file
	put_stack "$U" "$T/plain.json" ""
	cp "$R" "$T/edit.json"
	run "edit on the file" st protect "$T/edit.json" database-deployment
	check_rc 0
	run "edit via --backend: $U" env STATETOOL_TIMINGS=1 "$STATETOOL" protect --backend "$U" --stack "$STACK" database-deployment
	check_rc 0
	check_err_has "load: parsed (lazy)"
	run "the edit's bytes: $U" "$STORETOOL" cat "$U" "$K"
	check_same "$T/edit.json" "$T/out"
	run "the backup is the bytes before: $U" "$STORETOOL" cat "$U" "$K.bak"
	check_same "$R" "$T/out"
done
finish
