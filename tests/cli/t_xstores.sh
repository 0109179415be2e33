#!/bin/sh
# t_stores.sh between stores of different schemes (every --backend command, stack rename and
# upgrade on the first, a move between the two with a kill at each step of the two-stack journal
# and recovery from either side): s3 -> azblob, postgres -> file, gs -> s3, on the test servers
# (radosgw, Azurite, PostgreSQL; sh tests/servers/ctl start) and tests/gcsfake.js. Without the
# servers: skipped, but a failure when $CI is set.
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
gcsfake_start t_xstores.sh statetool-xstores
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_DEFAULT_PROFILE AWS_REGION AWS_DEFAULT_REGION \
	AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE \
	AZURE_STORAGE_ACCOUNT AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN PULUMI_BACKEND_URL \
	PULUMI_DIY_BACKEND_GZIP PULUMI_DIY_BACKEND_ZSTD PGPASSWORD PGHOST PGPORT PGUSER PGDATABASE
export HOME=$T
export AWS_ACCESS_KEY_ID="$ST_TEST_S3_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$ST_TEST_S3_SECRET_KEY"
export AZURE_STORAGE_CONNECTION_STRING="$ST_TEST_AZURE_CONNECTION_STRING"
export no_proxy=127.0.0.1,localhost
S3="s3://statetool-xstores/x?endpoint=$ST_TEST_S3_ENDPOINT&use_path_style=true&region=${ST_TEST_S3_REGION:-us-east-1}"
AZ=azblob://statetool-xstores/x
PG="$ST_TEST_PG_URL?sslmode=disable"
GS=gs://statetool-xstores/x
run "the S3 bucket" "$STORETOOL" mkbucket "$S3"
check_rc 0
run "the Azure container" "$STORETOOL" mkbucket "$AZ"
check_rc 0

# pair NAME A B: t_stores.sh from A to B ("" : a file:// directory); its summary must say no
# failure
pair() {
	run "$1" env STATETOOL_TEST_STORE_A="$2" STATETOOL_TEST_STORE_B="$3" sh "$(dirname "$0")/t_stores.sh"
	check_rc 0
	if tail -n 1 "$T/out" | grep -q '^t_stores.sh: [1-9][0-9]* passed, 0 failed$'; then ok; else bad "t_stores.sh did not pass"; fi
	echo "  $1: $(tail -n 1 "$T/out")"
	grep '^FAIL' "$T/err" | head -n 20 | sed 's/^/  /' 
}
pair "s3 -> azblob" "$S3" "$AZ"
pair "postgres -> file" "$PG" ""
pair "gs -> s3" "$GS" "$S3"
finish
