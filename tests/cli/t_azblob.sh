#!/bin/sh
# azblob:// on Azurite (sh tests/servers/ctl start azurite): stacks, validate, an edit with its
# .bak, a lock held by a Pulumi-format lock object, unlock, restore, a save killed at each step
# (STATETOOL_CRASH_AT=write:1..4: old or new object, a stale lock), index update (no change:
# nothing downloaded, seen in STATETOOL_HTTP_LOG), a SAS token alone (and a read-only one), wrong
# key, missing container, bad URL, unreachable endpoint. The objects are put and checked with
# curl and openssl (Shared Key and SAS signed here, independently of statetool's signer).
# Without Azurite: skipped with a message, but a failure when $CI is set.
. "$(dirname "$0")/lib.sh"
ctl=$(dirname "$0")/../servers/ctl
if ! sh "$ctl" status azurite >/dev/null 2>&1 || ! envf=$(sh "$ctl" env 2>/dev/null); then
	skip_or_fail azurite "Azurite is not running (sh tests/servers/ctl start azurite)"
	finish
	exit
fi
. "$envf"
for v in AZURE_STORAGE_ACCOUNT AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN AZURE_STORAGE_CONNECTION_STRING \
	AZURE_STORAGEBLOB_CONNECTIONSTRING AZURE_STORAGE_DOMAIN AZURE_STORAGE_PROTOCOL \
	AZURE_STORAGE_IS_CDN AZURE_STORAGE_IS_LOCAL_EMULATOR PULUMI_BACKEND_URL; do
	unset "$v"
done
A=$ST_TEST_AZURE_ACCOUNT
HOSTPORT=127.0.0.1:$ST_TEST_AZURE_PORT

# azc METHOD PATH QUERY [BODYFILE] [HEADER...]: a request signed with Shared Key by openssl;
# PATH is /CONTAINER[/BLOB]; prints the status, the body goes to $T/azc.
azc() {
	m=$1 p=$2 q=$3 f=${4:-}
	if [ $# -ge 4 ]; then shift 4; else shift $#; fi
	date=$(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S GMT')
	len="" ctype="" inm="" xms=""
	if [ -n "$f" ]; then
		len=$(wc -c <"$f" | tr -d ' ')
		ctype=application/octet-stream
		[ "$len" = 0 ] && len=""
	fi
	for h in "$@"; do
		case $h in
		If-None-Match:*) inm=${h#If-None-Match: } ;;
		x-ms-*) xms="$xms${h%%: *}:${h#*: }
" ;;
		esac
	done
	xms=$(printf 'x-ms-date:%s\nx-ms-version:2021-08-06\n%s' "$date" "$xms" | LC_ALL=C sort)
	res="/$A/$A$p"
	[ -n "$q" ] && res="$res
$(printf '%s\n' "$q" | tr '&' '\n' | sed 's/=/:/' | LC_ALL=C sort)"
	sts=$(printf '%s\n\n\n%s\n\n%s\n\n\n\n%s\n\n\n%s\n%s' "$m" "$len" "$ctype" "$inm" "$xms" "$res")
	sig=$(printf '%s' "$sts" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$(keyhex)" -binary |
		base64 | tr -d '\n')
	n=$#
	while [ "$n" -gt 0 ]; do
		set -- "$@" -H "$1"
		shift
		n=$((n - 1))
	done
	set -- -X "$m" -H "x-ms-date: $date" -H "x-ms-version: 2021-08-06" \
		-H "Authorization: SharedKey $A:$sig" "$@"
	[ -n "$f" ] && set -- --data-binary "@$f" -H "Content-Type: $ctype" "$@"
	url=$ST_TEST_AZURE_ENDPOINT$p
	[ -n "$q" ] && url="$url?$q"
	curl -s -o "$T/azc" -w '%{http_code}\n' "$@" "$url"
}
keyhex() { printf '%s' "$ST_TEST_AZURE_KEY" | base64 -d | od -An -v -tx1 | tr -d ' \n'; }
put() { azc PUT "/$C/$1" "" "$2" 'x-ms-blob-type: BlockBlob' >/dev/null; } # KEY FILE
get() { azc GET "/$C/$1" "" >/dev/null && cp "$T/azc" "$2"; }              # KEY FILE
# a service SAS for the container (version 2021-08-06, for an hour), URL-encoded
sas() { # PERMISSIONS
	se=$(date -u -d '+1 hour' '+%Y-%m-%dT%H:%M:%SZ')
	s=$(printf '%s\n\n%s\n/blob/%s/%s\n\n\n\n2021-08-06\nc\n\n\n\n\n\n\n' "$1" "$se" "$A" "$C" |
		openssl dgst -sha256 -mac HMAC -macopt "hexkey:$(keyhex)" -binary | base64 | tr -d '\n')
	printf 'sv=2021-08-06&sr=c&sp=%s&se=%s&sig=%s' "$1" "$(printf %s "$se" | sed 's/:/%3A/g')" \
		"$(printf %s "$s" | sed 's/+/%2B/g; s#/#%2F#g; s/=/%3D/g')"
}

C=cli-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
trap 'azc DELETE "/$C" restype=container >/dev/null 2>&1; rm -rf "$T"' EXIT
run "container" azc PUT "/$C" restype=container
check_out "201"
P=$FIXTURES/pulumi
printf 'version: 1\n' >"$T/meta.yaml"
cp "$P/valid-checkpoint-v3-diy.json" "$T/dev.json"
sed 's#organization/proj/dev#organization/proj/prod#; s#urn:pulumi:dev::#urn:pulumi:prod::#g' "$P/valid-checkpoint-v3-diy.json" |
	gzip -c >"$T/prod.json.gz"
put state/.pulumi/meta.yaml "$T/meta.yaml"
put state/.pulumi/stacks/proj/dev.json "$T/dev.json"
put state/.pulumi/stacks/proj/prod.json.gz "$T/prod.json.gz"
export AZURE_STORAGE_CONNECTION_STRING="$ST_TEST_AZURE_CONNECTION_STRING"
U=azblob://$C/state

# ---- stacks, validate ----
run "stacks" st stacks --backend "$U"
check_rc 0
check_out "organization/proj/dev                           4  v3  .pulumi/stacks/proj/dev.json
organization/proj/prod                          4  v3  .pulumi/stacks/proj/prod.json.gz"
run "stacks --json" st stacks --backend "$U" --json
check_rc 0; check_out_has '"layout": "project"'; check_out_has '"stack": "organization/proj/prod"'
run "validate every stack" st validate --backend "$U"
check_rc 0
check_out "organization/proj/dev: valid, 0 errors, 0 warnings (4 resources)
organization/proj/prod: valid, 0 errors, 0 warnings (4 resources)
2 stacks checked: 0 errors, 0 warnings"
run "validate one stack" st validate --backend "$U" --stack proj/prod
check_rc 0; check_out "proj/prod: valid, 0 errors, 0 warnings (4 resources)"
# one listing: resolving the stack tells the load which object to read (each listing is a
# round trip); every request is logged (STATETOOL_HTTP_LOG: method, host, path, status)
: >"$T/httplog"
run "validate one stack, requests logged" env STATETOOL_HTTP_LOG="$T/httplog" "$STATETOOL" validate --backend "$U" --stack proj/prod
check_rc 0; check_out "proj/prod: valid, 0 errors, 0 warnings (4 resources)"
check_file_is "$T/httplog" "GET $HOSTPORT /$A/$C/state/.pulumi/meta.yaml 200
GET $HOSTPORT /$A/$C 200
GET $HOSTPORT /$A/$C/state/.pulumi/stacks/proj/prod.json.gz 200
"
: >"$T/httplog"
run "validate every stack, requests logged" env STATETOOL_HTTP_LOG="$T/httplog" "$STATETOOL" validate --backend "$U"
check_rc 0; check_out_has "2 stacks checked: 0 errors, 0 warnings"
check_file_is "$T/httplog" "GET $HOSTPORT /$A/$C/state/.pulumi/meta.yaml 200
GET $HOSTPORT /$A/$C 200
GET $HOSTPORT /$A/$C/state/.pulumi/stacks/proj/dev.json 200
GET $HOSTPORT /$A/$C/state/.pulumi/stacks/proj/prod.json.gz 200
"

# ---- an edit keeps the previous object as .bak, and leaves no lock ----
run "protect" st protect --backend "$U" --stack proj/dev --all
check_rc 0; check_out_has "All resources protected"
get state/.pulumi/stacks/proj/dev.json.bak "$T/dev.bak"
check_same "$P/valid-checkpoint-v3-diy.json" "$T/dev.bak"
get state/.pulumi/stacks/proj/dev.json "$T/dev.now"
run "the new state" sh -c "grep -c '\"protect\": true' '$T/dev.now'"
check_out "4"
run "no lock left" azc GET "/$C" "restype=container&comp=list&prefix=state/.pulumi/locks/"
check_out "200"
if grep -q '<Blob>' "$T/azc"; then bad "a lock object is left"; else ok; fi

# ---- a lock held by Pulumi ----
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"2024-05-01T10:00:00.123456789+02:00"}' >"$T/lock.json"
LK=state/.pulumi/locks/organization/proj/dev/6a1f0e2c-0000-4000-8000-000000000001.json
put "$LK" "$T/lock.json"
run "locked by Pulumi" st unprotect --backend "$U" --stack proj/dev --all
check_rc 1
check_err_has "the stack is currently locked by 1 lock(s)"
check_err_has "created by alice@ci-runner (pid 4242) at 2024-05-01T10:00:00+02:00"
check_err_has "statetool unlock --backend $U --stack proj/dev"
get state/.pulumi/stacks/proj/dev.json "$T/dev.after"
check_same "$T/dev.now" "$T/dev.after"
run "unlock" st unlock --backend "$U" --stack proj/dev
check_rc 0; check_out "removed 1 lock of proj/dev"
run "the lock is gone" azc GET "/$C/$LK" ""
check_out "404"
run "restore the .bak" st restore --backend "$U" --stack proj/dev
check_rc 0
get state/.pulumi/stacks/proj/dev.json "$T/dev.restored"
check_same "$P/valid-checkpoint-v3-diy.json" "$T/dev.restored"

# ---- killed at each step of a save: the object is the old or the new one, the lock is stale ----
put state/.pulumi/stacks/proj/dev.json "$P/valid-checkpoint-v3-diy.json"
st protect --backend "$U" --stack proj/dev --all >/dev/null 2>&1
get state/.pulumi/stacks/proj/dev.json "$T/want.json"
for step in 1 2 3 4; do
	put state/.pulumi/stacks/proj/dev.json "$P/valid-checkpoint-v3-diy.json"
	run "crash at write:$step" env STATETOOL_CRASH_AT=write:$step "$STATETOOL" protect --backend "$U" --stack proj/dev --all
	check_rc 137
	get state/.pulumi/stacks/proj/dev.json "$T/dev.crash"
	current="crash at write:$step: old or new"
	if cmp -s "$T/dev.crash" "$P/valid-checkpoint-v3-diy.json" || cmp -s "$T/dev.crash" "$T/want.json"; then ok; else bad "neither the old nor the new state"; fi
	run "after write:$step, the lock is reported stale" st protect --backend "$U" --stack proj/dev --all
	check_rc 1; check_err_has "stale: that process is no longer running"
	run "after write:$step: unlock" st unlock --backend "$U" --stack proj/dev
	check_rc 0
	run "after write:$step and unlock, the command proceeds" st protect --backend "$U" --stack proj/dev --all
	check_rc 0
	get state/.pulumi/stacks/proj/dev.json "$T/dev.crash"
	check_same "$T/want.json" "$T/dev.crash"
done
put state/.pulumi/stacks/proj/dev.json "$P/valid-checkpoint-v3-diy.json"

# ---- index update: a listing decides, an unchanged stack is not downloaded ----
run "index needs --db" st index update --backend "$U"
check_rc 2; check_err_has "the index of a backend that is not a local directory is a local file: give --db PATH"
run "index build" st index update --backend "$U" --db "$T/ix.sqlite"
check_rc 0; check_out "$T/ix.sqlite: 2 stacks: 2 indexed (8 resources), 0 unchanged, 0 removed, 0 failed"
run "index no change" env STATETOOL_HTTP_LOG="$T/http.log" "$STATETOOL" index update --backend "$U" --db "$T/ix.sqlite"
check_rc 0; check_out "$T/ix.sqlite: 2 stacks: 0 indexed (0 resources), 2 unchanged, 0 removed, 0 failed"
run "nothing downloaded" sh -c "grep -c '/.pulumi/stacks/' '$T/http.log'"
check_out "0"
run "index after an edit" st protect --backend "$U" --stack proj/prod --all
check_rc 0
rm -f "$T/http.log"
run "index one change" env STATETOOL_HTTP_LOG="$T/http.log" "$STATETOOL" index update --backend "$U" --db "$T/ix.sqlite"
check_rc 0; check_out "$T/ix.sqlite: 2 stacks: 1 indexed (4 resources), 1 unchanged, 0 removed, 0 failed"
run "one download" sh -c "grep '^GET .*/.pulumi/stacks/' '$T/http.log' | sed 's/^GET [^ ]* //'"
check_out "/$A/$C/state/.pulumi/stacks/proj/prod.json.gz 200"
run "query the index" st query --db "$T/ix.sqlite" --protected --csv
check_rc 0; check_out_has "organization/proj/prod,urn:pulumi:prod::proj::my:index:Comp::c"

# ---- a SAS token alone ----
unset AZURE_STORAGE_CONNECTION_STRING
export AZURE_STORAGE_ACCOUNT="$A"
AZURE_STORAGE_SAS_TOKEN=$(sas racwdl)
export AZURE_STORAGE_SAS_TOKEN
SIG=${AZURE_STORAGE_SAS_TOKEN##*sig=}
SU="azblob://$C/state?domain=$HOSTPORT&protocol=http"
rm -f "$T/http.log"
run "SAS: stacks" env STATETOOL_HTTP_LOG="$T/http.log" "$STATETOOL" stacks --backend "$SU"
check_rc 0; check_out_has "organization/proj/dev"; check_out_has "organization/proj/prod"
run "SAS: validate" st validate --backend "$SU"
check_rc 0; check_out_has "2 stacks checked: 0 errors, 0 warnings"
run "SAS: an edit (the .bak is a server-side copy of a SAS-signed source)" env STATETOOL_HTTP_LOG="$T/http.log" "$STATETOOL" taint --backend "$SU" --stack proj/dev 'urn:pulumi:dev::proj::my:index:Comp$aws:s3/bucket:Bucket::b'
check_rc 0
get state/.pulumi/stacks/proj/dev.json.bak "$T/dev.bak2"
check_same "$P/valid-checkpoint-v3-diy.json" "$T/dev.bak2"
run "SAS: no signature in the log" sh -c "grep -c -e 'sig=' -e '$SIG' '$T/http.log'"
check_out "0"
put "$LK" "$T/lock.json"
run "SAS: locked" st untaint --backend "$SU" --stack proj/dev 'urn:pulumi:dev::proj::my:index:Comp$aws:s3/bucket:Bucket::b'
check_rc 1; check_err_has "the stack is currently locked by 1 lock(s)"
run "SAS: unlock" st unlock --backend "$SU" --stack proj/dev
check_rc 0; check_out "removed 1 lock of proj/dev"
# no delete permission: the change is made, but its lock cannot be removed: a warning naming
# the lock and the unlock that removes it (Pulumi's message), exit 0 (it was silent)
AZURE_STORAGE_SAS_TOKEN=$(sas racwl)
SIG=${AZURE_STORAGE_SAS_TOKEN##*sig=}
run "SAS without delete: an edit leaves its lock, and says so" st protect --backend "$SU" --stack proj/dev 'urn:pulumi:dev::proj::my:index:Comp::c'
check_rc 0; check_out_has "protected"
check_err_has "statetool: warning: there was a problem deleting the lock at azblob://$C/state/.pulumi/locks/organization/proj/dev/"
check_err_has "manual clean up may be required: azblob: DeleteBlob"
check_err_has "; remove it with \`statetool unlock -s organization/proj/dev\` (and its --backend)"
check_err_lacks "$SIG"; check_err_lacks "sig="
AZURE_STORAGE_SAS_TOKEN=$(sas racwdl)
run "SAS: the left lock is removed" st unlock --backend "$SU" --stack proj/dev
check_rc 0; check_out "removed 1 lock of proj/dev"
# a move that fails after its commit point (the staged object cannot be deleted once
# installed) says it is committed and how it is completed; the next command completes it
AZURE_STORAGE_SAS_TOKEN=$(sas racwl)
run "SAS without delete: a move fails after its commit" env PULUMI_CONFIG_PASSPHRASE="correct horse battery staple" "$STATETOOL" move --backend "$SU" --source proj/prod --dest proj/moved 'urn:pulumi:prod::proj::my:index:Comp::c'
check_rc 1
check_err_has "statetool: note: the move is committed but not finished: \`statetool move --recover\` with the same --source and --dest (and backends), or any statetool command on either stack, completes it"
AZURE_STORAGE_SAS_TOKEN=$(sas racwdl)
run "SAS: the next command completes it" env PULUMI_CONFIG_PASSPHRASE="correct horse battery staple" "$STATETOOL" move --recover --backend "$SU" --source proj/prod --dest proj/moved
check_rc 0; check_out_has "the interrupted move is complete; its journal is removed"
run "SAS: the moved resource is in the destination" st list --backend "$SU" --stack proj/moved
check_rc 0; check_out_has "my:index:Comp::c"
st unlock --backend "$SU" --stack proj/prod >/dev/null 2>&1
st unlock --backend "$SU" --stack proj/moved >/dev/null 2>&1
# read-only: reading works, a change is refused and changes nothing
AZURE_STORAGE_SAS_TOKEN=$(sas rl)
SIG=${AZURE_STORAGE_SAS_TOKEN##*sig=}
get state/.pulumi/stacks/proj/dev.json "$T/dev.ro"
run "SAS read-only: list" st list --backend "$SU" --stack proj/dev
check_rc 0; check_out_has "taint"
run "SAS read-only: an edit is refused" st untaint --backend "$SU" --stack proj/dev 'urn:pulumi:dev::proj::my:index:Comp$aws:s3/bucket:Bucket::b'
check_rc 1
check_err_has "azblob: PutBlob '$C/state/.pulumi/locks/organization/proj/dev/"
check_err_has "failed: HTTP 403 AuthorizationPermissionMismatch"
check_err_has "credentials: the SAS token in AZURE_STORAGE_SAS_TOKEN, service http://$HOSTPORT/$A from AZURE_STORAGE_ACCOUNT, parameter domain, parameter protocol"
check_err_lacks "$SIG"; check_err_lacks "sig="
get state/.pulumi/stacks/proj/dev.json "$T/dev.ro2"
check_same "$T/dev.ro" "$T/dev.ro2"
unset AZURE_STORAGE_SAS_TOKEN

# ---- errors: each names azblob and what was read, never a secret ----
export AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=$A;AccountKey=c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0;BlobEndpoint=$ST_TEST_AZURE_ENDPOINT;"
unset AZURE_STORAGE_ACCOUNT
run "wrong key" st stacks --backend "$U"
check_rc 1
check_err "statetool: error: azblob: GetBlob '$C/state/.pulumi/meta.yaml' on $HOSTPORT failed: HTTP 403 AuthorizationFailure: Server failed to authenticate the request. Make sure the value of the Authorization header is formed correctly including the signature; credentials: Shared Key of account '$A' from AZURE_STORAGE_CONNECTION_STRING (AccountName, AccountKey), service $ST_TEST_AZURE_ENDPOINT from AZURE_STORAGE_CONNECTION_STRING"
check_err_lacks "c2VjcmV0"
export AZURE_STORAGE_CONNECTION_STRING="$ST_TEST_AZURE_CONNECTION_STRING"
run "missing container" st validate --backend "azblob://no-such-container-$C"
check_rc 1
check_err_has "azblob: GetBlob 'no-such-container-$C/.pulumi/meta.yaml' on $HOSTPORT failed: HTTP 404 ContainerNotFound: The specified container does not exist; credentials: Shared Key"
run "unknown parameter" st stacks --backend "$U?region=eu"
check_rc 2
check_err "statetool: error: azblob: unknown query parameter \"region\" (azblob:// takes storage_account, domain, protocol, cdn and localemu)"
run "no credentials" env -u AZURE_STORAGE_CONNECTION_STRING AZURE_STORAGE_ACCOUNT="$A" "$STATETOOL" stacks --backend "$U"
check_rc 1; check_err_has "azblob: no credentials: set AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY"
unset AZURE_STORAGE_CONNECTION_STRING
run "unreachable" env AZURE_STORAGE_ACCOUNT="$A" AZURE_STORAGE_KEY="$ST_TEST_AZURE_KEY" STATETOOL_HTTP_RETRIES=1 STATETOOL_HTTP_BACKOFF_MS=1 "$STATETOOL" stacks --backend "azblob://$C?domain=127.0.0.1:9&protocol=http"
check_rc 1
check_err_has "statetool: error: azblob: cannot reach 127.0.0.1:9 (GetBlob '$C/.pulumi/meta.yaml'): "
check_err_has "(2 attempts); credentials: Shared Key of account '$A' from AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, service http://127.0.0.1:9/$A from AZURE_STORAGE_ACCOUNT, parameter domain, parameter protocol"
check_err_lacks "$ST_TEST_AZURE_KEY"
finish
