#!/bin/sh
# Smoke test of the test servers, with curl, openssl and psql only: proves that each server
# started by tests/servers/ctl works and checks credentials.
#
#   sh tests/servers/smoke.sh [ENVFILE]      default "$ST_SERVERS_DIR/env"
#
# For each server present in the env file:
#   S3 (radosgw)      create a bucket, put / get / ListObjectsV2 / delete an object, a second
#                     PUT with If-None-Match: * refused (412), a wrong secret refused (403
#                     SignatureDoesNotMatch); curl --aws-sigv4 signs
#   Azure (Azurite)   create a container, put / get / list / delete a block blob, a second put
#                     with If-None-Match: * refused (409), a wrong key refused (403); signed
#                     here with Shared Key (openssl HMAC-SHA256)
#   PostgreSQL        connect with the password, create / fill / read a table, a wrong password
#                     refused
# Ends with "smoke: N passed, N failed"; exit 1 when something failed. Takes about a second.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
envfile=${1:-$ST_SERVERS_DIR/env}
[ -r "$envfile" ] || die "smoke: no $envfile (start the servers first: sh tests/servers/ctl start)"
# shellcheck source=/dev/null
. "$envfile"
for c in curl openssl sha256sum base64 od; do
	command -v $c >/dev/null || die "smoke: '$c' is missing"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
# expect NAME WANTED GOT [DETAIL]
expect() {
	if [ "$2" = "$3" ]; then
		pass=$((pass + 1))
		echo "ok - $1"
	else
		fail=$((fail + 1))
		echo "not ok - $1: wanted $2, got $3"
		[ -s "$tmp/out" ] && head -c 600 "$tmp/out" | sed 's/^/    /' && echo
	fi
}
# contains NAME FILE TEXT
contains() {
	if grep -qF -- "$3" "$2"; then
		pass=$((pass + 1))
		echo "ok - $1"
	else
		fail=$((fail + 1))
		echo "not ok - $1: no '$3' in:"
		head -c 600 "$2" | sed 's/^/    /'
		echo
	fi
}
run_id=$$-$(date +%s)

# ---- S3 ------------------------------------------------------------------------------------
# s3 METHOD PATH [BODYFILE] [CURL ARGS...]: prints the status code; the body goes to $tmp/out.
# radosgw (pacific) needs x-amz-content-sha256: without it, it signs with UNSIGNED-PAYLOAD while
# curl signs with the payload's hash, and the signatures differ.
s3() {
	m=$1 p=$2 f=${3:-/dev/null}
	if [ $# -ge 3 ]; then shift 3; else shift $#; fi
	h=$(sha256sum <"$f" | cut -d' ' -f1)
	set -- -X "$m" -H "x-amz-content-sha256: $h" "$@"
	[ "$f" != /dev/null ] && set -- --data-binary "@$f" -H 'Content-Type: application/octet-stream' "$@"
	curl -s -o "$tmp/out" -w '%{http_code}' --aws-sigv4 "aws:amz:$ST_TEST_S3_REGION:s3" \
		--user "$ST_TEST_S3_ACCESS_KEY:${S3_SECRET:-$ST_TEST_S3_SECRET_KEY}" "$@" "$ST_TEST_S3_ENDPOINT$p"
}
if [ -n "${ST_TEST_S3_ENDPOINT:-}" ]; then
	b=/smoke-$run_id
	printf '{"version": 3, "checkpoint": {}}\n' >"$tmp/state"
	printf 'other\n' >"$tmp/other"
	expect "s3: create bucket" 200 "$(s3 PUT "$b")"
	expect "s3: put object" 200 "$(s3 PUT "$b/.pulumi/stacks/dev.json" "$tmp/state")"
	expect "s3: get object" 200 "$(s3 GET "$b/.pulumi/stacks/dev.json")"
	expect "s3: object content" "$(cat "$tmp/state")" "$(cat "$tmp/out")"
	expect "s3: list objects v2" 200 "$(s3 GET "$b?list-type=2&prefix=.pulumi%2Fstacks%2F")"
	contains "s3: listing has the key" "$tmp/out" "<Key>.pulumi/stacks/dev.json</Key>"
	expect "s3: put If-None-Match * on an existing key refused" 412 \
		"$(s3 PUT "$b/.pulumi/stacks/dev.json" "$tmp/other" -H 'If-None-Match: *')"
	expect "s3: put If-None-Match * on a new key" 200 \
		"$(s3 PUT "$b/.pulumi/locks/dev.json" "$tmp/other" -H 'If-None-Match: *')"
	expect "s3: wrong secret refused" 403 "$(S3_SECRET=wrong-secret s3 GET "$b/.pulumi/stacks/dev.json")"
	contains "s3: wrong secret is SignatureDoesNotMatch" "$tmp/out" "<Code>SignatureDoesNotMatch</Code>"
	expect "s3: delete object" 204 "$(s3 DELETE "$b/.pulumi/stacks/dev.json")"
	expect "s3: deleted object is gone" 404 "$(s3 GET "$b/.pulumi/stacks/dev.json")"
	s3 DELETE "$b/.pulumi/locks/dev.json" >/dev/null
	expect "s3: delete bucket" 204 "$(s3 DELETE "$b")"
fi

# ---- Azure Blob Storage ----------------------------------------------------------------------
# az METHOD PATH QUERY [BODYFILE] [HEADER...]: a request signed with Shared Key (the x-ms-*
# headers and If-None-Match are signed); prints the status code, the body goes to $tmp/out.
az_key_hex() { printf '%s' "${AZ_KEY:-$ST_TEST_AZURE_KEY}" | base64 -d | od -An -v -tx1 | tr -d ' \n'; }
az() {
	m=$1 p=$2 q=$3 f=${4:-}
	if [ $# -ge 4 ]; then shift 4; else shift $#; fi
	date=$(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S GMT')
	len="" ctype="" inm="" xms=""
	if [ -n "$f" ]; then
		len=$(wc -c <"$f" | tr -d ' ')
		ctype=application/octet-stream
	fi
	for h in "$@"; do
		case $h in
		If-None-Match:*) inm=${h#If-None-Match: } ;;
		x-ms-*) xms="$xms${h%%: *}:${h#*: }
" ;;
		esac
	done
	xms=$(printf 'x-ms-date:%s\nx-ms-version:2021-08-06\n%s' "$date" "$xms" | LC_ALL=C sort)
	# canonical resource: /account + the path (which starts with the account again, path-style)
	# + the query's name:value pairs, sorted, one a line
	res="/$ST_TEST_AZURE_ACCOUNT$p"
	[ -n "$q" ] && res="$res
$(printf '%s\n' "$q" | tr '&' '\n' | sed 's/=/:/' | LC_ALL=C sort)"
	sts=$(printf '%s\n\n\n%s\n\n%s\n\n\n\n%s\n\n\n%s\n%s' "$m" "$len" "$ctype" "$inm" "$xms" "$res")
	sig=$(printf '%s' "$sts" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$(az_key_hex)" -binary | base64 | tr -d '\n')
	n=$# # each HEADER becomes -H HEADER
	while [ "$n" -gt 0 ]; do
		set -- "$@" -H "$1"
		shift
		n=$((n - 1))
	done
	set -- -X "$m" -H "x-ms-date: $date" -H "x-ms-version: 2021-08-06" \
		-H "Authorization: SharedKey $ST_TEST_AZURE_ACCOUNT:$sig" "$@"
	[ -n "$f" ] && set -- --data-binary "@$f" -H "Content-Type: $ctype" "$@"
	url=${ST_TEST_AZURE_ENDPOINT%/"$ST_TEST_AZURE_ACCOUNT"}$p
	[ -n "$q" ] && url="$url?$q"
	curl -s -o "$tmp/out" -w '%{http_code}' "$@" "$url"
}
if [ -n "${ST_TEST_AZURE_ENDPOINT:-}" ]; then
	c=/$ST_TEST_AZURE_ACCOUNT/smoke-$run_id
	printf '{"version": 3, "checkpoint": {}}\n' >"$tmp/state"
	printf 'other\n' >"$tmp/other"
	expect "azure: create container" 201 "$(az PUT "$c" restype=container)"
	expect "azure: put blob" 201 "$(az PUT "$c/.pulumi/stacks/dev.json" "" "$tmp/state" 'x-ms-blob-type: BlockBlob')"
	expect "azure: get blob" 200 "$(az GET "$c/.pulumi/stacks/dev.json" "")"
	expect "azure: blob content" "$(cat "$tmp/state")" "$(cat "$tmp/out")"
	expect "azure: list blobs" 200 "$(az GET "$c" 'comp=list&prefix=.pulumi/stacks/&restype=container')"
	contains "azure: listing has the blob" "$tmp/out" "<Name>.pulumi/stacks/dev.json</Name>"
	expect "azure: put If-None-Match * on an existing blob refused" 409 \
		"$(az PUT "$c/.pulumi/stacks/dev.json" "" "$tmp/other" 'x-ms-blob-type: BlockBlob' 'If-None-Match: *')"
	expect "azure: wrong key refused" 403 \
		"$(AZ_KEY=$(printf 'not the key' | base64) az GET "$c/.pulumi/stacks/dev.json" "")"
	contains "azure: wrong key is AuthorizationFailure" "$tmp/out" "AuthorizationFailure"
	expect "azure: delete blob" 202 "$(az DELETE "$c/.pulumi/stacks/dev.json" "")"
	expect "azure: deleted blob is gone" 404 "$(az GET "$c/.pulumi/stacks/dev.json" "")"
	expect "azure: delete container" 202 "$(az DELETE "$c" restype=container)"
fi

# ---- PostgreSQL ------------------------------------------------------------------------------
if [ -n "${ST_TEST_PG_URL:-}" ]; then
	psql=psql
	command -v psql >/dev/null || psql=/usr/lib/postgresql/15/bin/psql
	t=smoke_$(echo "$run_id" | tr -c '0-9\n' _)
	out=$(PGPASSWORD=$ST_TEST_PGPASSWORD PGCONNECT_TIMEOUT=10 $psql -X -q -tA -v ON_ERROR_STOP=1 \
		-h "$ST_TEST_PGHOST" -p "$ST_TEST_PGPORT" -U "$ST_TEST_PGUSER" -d "$ST_TEST_PGDATABASE" 2>&1 <<EOF
CREATE TABLE $t (name text PRIMARY KEY, body jsonb NOT NULL);
INSERT INTO $t VALUES ('dev', '{"version": 3}');
SELECT current_user || ' ' || (body->>'version') FROM $t;
DROP TABLE $t;
EOF
	)
	expect "postgres: connect with the password, write and read a table" "statetool 3" "$out"
	out=$(PGCONNECT_TIMEOUT=10 $psql -X -tA -d "$ST_TEST_PG_URL" -c 'SELECT 1' 2>&1)
	expect "postgres: connect with ST_TEST_PG_URL" 1 "$out"
	out=$(PGPASSWORD=wrong-password PGCONNECT_TIMEOUT=10 $psql -X -tA -h "$ST_TEST_PGHOST" \
		-p "$ST_TEST_PGPORT" -U "$ST_TEST_PGUSER" -d "$ST_TEST_PGDATABASE" -c 'SELECT 1' 2>&1)
	printf '%s\n' "$out" >"$tmp/out"
	contains "postgres: wrong password refused" "$tmp/out" "password authentication failed"
fi

[ $((pass + fail)) -gt 0 ] || die "smoke: $envfile names no server"
echo "smoke: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
