#!/bin/sh
# DIY backends in S3, on the test servers' radosgw (tests/servers/ctl start radosgw; the server's
# variables come from "$ST_SERVERS_DIR/env"): stacks, list, an edit and its .bak object, a lock
# held by a Pulumi-format lock object, unlock, and the errors: wrong credentials, no credentials, a missing
# bucket, an unreachable endpoint. Objects are put and read back with curl (plain GET and PUT:
# Debian 12's curl signs query strings wrongly, so it lists nothing). Without the server the
# script skips with a message; with $CI set that is a failure.
. "$(dirname "$0")/lib.sh"
envfile=${ST_SERVERS_DIR:-/tmp/statetool-servers-$(id -u)}/env
# shellcheck source=/dev/null
[ -r "$envfile" ] && . "$envfile"
if [ -z "${ST_TEST_S3_ENDPOINT:-}" ]; then
	skip_or_fail "s3 test server" "no S3 test server in $envfile (sh tests/servers/ctl start radosgw)"
	finish
	exit
fi
F=$FIXTURES/pulumi
# only the server's credentials, nothing of the developer's own AWS set-up
export HOME=$T
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_DEFAULT_PROFILE AWS_REGION AWS_DEFAULT_REGION \
	AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE \
	http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
export AWS_ACCESS_KEY_ID="$ST_TEST_S3_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$ST_TEST_S3_SECRET_KEY"
export no_proxy=127.0.0.1,localhost
EP=$ST_TEST_S3_ENDPOINT
bucket=statetool-cli-$(date +%s)-$$
B="s3://$bucket/team?endpoint=$EP&use_path_style=true&region=${ST_TEST_S3_REGION:-us-east-1}"
K=team/.pulumi

# s3 METHOD /PATH [FILE]: a plain signed request (no query string); the body goes to $T/got and
# the status is printed
s3() {
	f=${3:-/dev/null}
	h=$(sha256sum <"$f" | cut -d' ' -f1)
	set -- -X "$1" -H "x-amz-content-sha256: $h" "$EP$2" $([ "$f" != /dev/null ] && echo --data-binary "@$f")
	curl -s -o "$T/got" -w '%{http_code}' --aws-sigv4 "aws:amz:${ST_TEST_S3_REGION:-us-east-1}:s3" \
		--user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$@"
	echo
}
# check_object KEY FILE: the object holds FILE's bytes
check_object() {
	if [ "$(s3 GET "/$bucket/$1")" = 200 ] && cmp -s "$T/got" "$2"; then ok; else bad "s3://$bucket/$1 is not $2"; fi
}

run "create the bucket" s3 PUT "/$bucket"
check_out 200
printf 'version: 1\n' >"$T/meta.yaml"
cp "$F/valid-checkpoint-v3-diy.json" "$T/dev.json"
sed 's/"organization\/proj\/dev"/"organization\/proj\/prod"/' "$F/valid-checkpoint-v3-diy.json" | gzip -n >"$T/prod.json.gz"
run "put meta.yaml" s3 PUT "/$bucket/$K/meta.yaml" "$T/meta.yaml"
check_out 200
run "put a stack" s3 PUT "/$bucket/$K/stacks/proj/dev.json" "$T/dev.json"
check_out 200
run "put a gzip stack" s3 PUT "/$bucket/$K/stacks/proj/prod.json.gz" "$T/prod.json.gz"
check_out 200

# ---- reading ----
run "stacks" st stacks --backend "$B"
check_rc 0
check_out "organization/proj/dev                           4  v3  .pulumi/stacks/proj/dev.json
organization/proj/prod                          4  v3  .pulumi/stacks/proj/prod.json.gz"
run "stacks --json" st stacks --backend "$B" --json
check_rc 0; check_out_has "\"backend\": \"$B\""; check_out_has '"path": ".pulumi/stacks/proj/prod.json.gz"'
run "list a stack" st list --backend "$B" --stack proj/prod
check_rc 0; check_out_has "urn:pulumi:dev::proj::my:index:Comp\$aws:s3/bucket:Bucket::b"
run "PULUMI_BACKEND_URL" env PULUMI_BACKEND_URL="$B" "$STATETOOL" list --stack proj/dev
check_rc 0; check_out_has "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev"
# one listing: resolving the stack tells the load which object to read (on radosgw each listing
# is a round trip of ~40 ms); every request is logged (STATETOOL_HTTP_LOG: method, host, path
# without the query, status): a listing is a GET of the bucket
H=${EP#http://}
: >"$T/httplog"
run "validate one stack, requests logged" env STATETOOL_HTTP_LOG="$T/httplog" "$STATETOOL" validate --backend "$B" --stack proj/prod
check_rc 0; check_out_has "proj/prod: valid, 0 errors, 4 warnings (4 resources)"
check_file_is "$T/httplog" "GET $H /$bucket/$K/meta.yaml 200
GET $H /$bucket 200
GET $H /$bucket/$K/stacks/proj/prod.json.gz 200
"
# ---- an edit keeps the previous object as .bak ----
run "edit" st protect --backend "$B" --stack proj/dev --all
check_rc 0; check_out_has "All resources protected"
check_object "$K/stacks/proj/dev.json.bak" "$T/dev.json"
run "the edit is there" st show --json --backend "$B" --stack proj/dev 'urn:pulumi:dev::proj::my:index:Comp::c'
check_rc 0; check_out_has '"protect": true'
s3 GET "/$bucket/$K/stacks/proj/dev.json" >/dev/null
cp "$T/got" "$T/edited.json"
run "no lock left behind" st unlock --backend "$B" --stack proj/dev
check_rc 0; check_out "removed 0 locks of proj/dev"

# the same stack through the URL's parameters in another order: the same-stack usage error,
# not a lock "held by another process" (the command's own, taken for the first side)
B2="s3://$bucket/team?region=${ST_TEST_S3_REGION:-us-east-1}&use_path_style=true&endpoint=$EP"
run "move to itself, parameters reordered" st move --source-backend "$B" --dest-backend "$B2" --source proj/dev --dest proj/dev 'urn:pulumi:dev::proj::my:index:Comp::c'
check_rc 2; check_err_has "the source and the destination are the same stack"
check_err_lacks "currently locked"
check_object "$K/stacks/proj/dev.json" "$T/edited.json"
run "no lock left by it" st unlock --backend "$B" --stack proj/dev
check_rc 0; check_out "removed 0 locks of proj/dev"

# ---- a lock held by Pulumi ----
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"2024-05-01T10:00:00.123456789+02:00"}' >"$T/lock.json"
run "put Pulumi's lock" s3 PUT "/$bucket/$K/locks/organization/proj/dev/6a1f0e2c-0000-4000-8000-000000000001.json" "$T/lock.json"
check_out 200
run "a locked stack is not edited" st unprotect --backend "$B" --stack proj/dev --all
check_rc 1
check_err_has "the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with \`pulumi cancel\`"
check_err_has "created by alice@ci-runner (pid 4242) at 2024-05-01T10:00:00+02:00"
check_err_has "(or \`statetool unlock --backend '$B' --stack proj/dev\`)."
check_object "$K/stacks/proj/dev.json" "$T/edited.json"
check_object "$K/stacks/proj/dev.json.bak" "$T/dev.json"
run "unlock" st unlock --backend "$B" --stack proj/dev
check_rc 0; check_out "removed 1 lock of proj/dev"
run "the lock object is gone" s3 GET "/$bucket/$K/locks/organization/proj/dev/6a1f0e2c-0000-4000-8000-000000000001.json"
check_out 404
run "edit once unlocked" st unprotect --backend "$B" --stack proj/dev --all
check_rc 0
check_object "$K/stacks/proj/dev.json.bak" "$T/edited.json"

# ---- credentials from a profile of the shared files ----
mkdir -p "$T/.aws"
printf '[ci]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" >"$T/.aws/credentials"
run "a profile of ~/.aws/credentials" env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_PROFILE=ci "$STATETOOL" stacks --backend "$B"
check_rc 0; check_out_has "organization/proj/dev"
run "the URL's profile" env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$STATETOOL" stacks --backend "$B&profile=ci"
check_rc 0; check_out_has "organization/proj/dev"
rm -rf "$T/.aws"

# ---- errors: clear, naming what was read, never a secret ----
run "wrong secret" env AWS_SECRET_ACCESS_KEY=S3cr3tNotToPrint "$STATETOOL" stacks --backend "$B"
check_rc 1
check_err_has "statetool: error: s3: $EP refused the credentials for "
check_err_has ": SignatureDoesNotMatch"
check_err_has "they came from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (environment), region 'us-east-1' from the URL"
check_err_lacks "S3cr3tNotToPrint"; check_err_lacks "$ST_TEST_S3_SECRET_KEY"
run "unknown key id" env AWS_ACCESS_KEY_ID=NOSUCHKEY0000000000 "$STATETOOL" stacks --backend "$B"
check_rc 1; check_err_has ": InvalidAccessKeyId"; check_err_lacks "$ST_TEST_S3_SECRET_KEY"
run "no credentials" env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$STATETOOL" stacks --backend "$B"
check_rc 1
check_err "statetool: error: s3: no credentials for bucket '$bucket': set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give profile 'default' aws_access_key_id and aws_secret_access_key (read: AWS_ACCESS_KEY_ID (unset), AWS_SECRET_ACCESS_KEY (unset), AWS_SESSION_TOKEN (unset), AWS_PROFILE (unset), $T/.aws/credentials (not found), $T/.aws/config (not found)); instance, container and SSO credentials are not supported, anonymous=true reads a public bucket"
run "missing bucket" st stacks --backend "s3://statetool-no-such-bucket?endpoint=$EP&use_path_style=true"
check_rc 1
check_err "statetool: error: s3: bucket 'statetool-no-such-bucket' does not exist at $EP (NoSuchBucket)"
run "unreachable endpoint" env STATETOOL_HTTP_RETRIES=1 STATETOOL_HTTP_BACKOFF_MS=1 "$STATETOOL" stacks --backend "s3://$bucket?endpoint=http://127.0.0.1:1&use_path_style=true"
check_rc 1
check_err_has "statetool: error: s3: cannot reach 127.0.0.1:1 (GetObject '$bucket/.pulumi/meta.yaml'): "
check_err_has "(2 attempts)"
run "unknown parameter" st stacks --backend "s3://$bucket?endpoint=$EP&colour=blue"
check_rc 2; check_err 'statetool: error: s3: unknown query parameter "colour"'
run "a parameter's bad value" st stacks --backend "s3://$bucket?endpoint=$EP&fips=maybe"
check_rc 2; check_err 'statetool: error: s3: invalid value "maybe" for query parameter "fips": a boolean (true, false, 1, 0, t, f) is expected'
run "not a number" st stacks --backend "s3://$bucket?endpoint=$EP&rate_limiter_capacity=abc"
check_rc 2; check_err 'statetool: error: s3: invalid value "abc" for query parameter "rate_limiter_capacity": a whole number is expected'
run "no such ssetype" st stacks --backend "s3://$bucket?endpoint=$EP&ssetype=bogus"
check_rc 2; check_err 'statetool: error: s3: invalid value "bogus" for query parameter "ssetype": AES256, aws:kms or aws:kms:dsse is expected'
run "nothing changed by the errors" st stacks --backend "$B"
check_rc 0; check_out_has "organization/proj/dev"
check_object "$K/stacks/proj/dev.json.bak" "$T/edited.json"

finish
