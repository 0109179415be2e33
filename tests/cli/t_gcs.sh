#!/bin/sh
# gs:// on tests/gcsfake.js (a fake of the JSON API and of Google's token endpoint, started here:
# no GCS emulator starts offline), with a service account key file (an RS256 JWT the fake
# checks): stacks, validate, list, an edit and its .bak object, a lock held by a Pulumi-format
# lock object (refused), unlock, a move between gs:// and a file:// backend both ways, index update
# (no change: nothing downloaded), GOOGLE_CREDENTIALS and GOOGLE_OAUTH_ACCESS_TOKEN, wrong key,
# wrong token, no credentials, missing bucket, unreachable endpoint, a server failing half-way
# (nothing changed); no token or key in a message or in STATETOOL_HTTP_LOG. The objects are put
# and checked with curl, as the JSON API sees them.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/gcsfake.sh"
unset PULUMI_BACKEND_URL PULUMI_DIY_BACKEND_GZIP PULUMI_DIY_BACKEND_ZSTD
gcsfake_start t_gcs.sh state
API=http://$GCS_HOST/storage/v1

enc() { printf '%s' "$1" | sed 's#/#%2F#g'; }
# gput KEY FILE / gget KEY FILE: an object of bucket "state" (prints the status)
gput() {
	curl -s -o /dev/null -w '%{http_code}\n' -X POST -H "Authorization: Bearer $GCS_TOKEN" \
		-H 'Content-Type: application/octet-stream' --data-binary "@$2" \
		"http://$GCS_HOST/upload/storage/v1/b/state/o?uploadType=media&name=$(enc "$1")"
}
gget() {
	curl -s -o "$2" -w '%{http_code}\n' -H "Authorization: Bearer $GCS_TOKEN" "$API/b/state/o/$(enc "$1")?alt=media"
}
# gls PREFIX: the names under PREFIX, one a line
gls() {
	curl -s -H "Authorization: Bearer $GCS_TOKEN" "$API/b/state/o?prefix=$(enc "$1")" |
		grep -o '"name":"[^"]*"' | sed 's/^"name":"//; s/"$//'
}
urns() { "$STATETOOL" list --json --backend "$1" --stack "$2" | sed -n 's/^ *"urn": "\(.*\)",$/\1/p'; }
fake() { curl -s -o /dev/null -w '%{http_code}\n' -X POST --data-binary "$2" "http://$GCS_HOST/_fake/$1"; }

P=$FIXTURES/pulumi
printf 'version: 1\n' >"$T/meta.yaml"
cp "$P/valid-checkpoint-v3-diy.json" "$T/dev.json"
sed 's#organization/proj/dev#organization/proj/prod#; s#urn:pulumi:dev::#urn:pulumi:prod::#g' "$P/valid-checkpoint-v3-diy.json" |
	gzip -c >"$T/prod.json.gz"
run "put the backend" gput s/.pulumi/meta.yaml "$T/meta.yaml"
check_out "200"
gput s/.pulumi/stacks/proj/dev.json "$T/dev.json" >/dev/null
gput s/.pulumi/stacks/proj/prod.json.gz "$T/prod.json.gz" >/dev/null
U=gs://state/s

# ---- stacks, validate, list ----
run "stacks" st stacks --backend "$U"
check_rc 0
check_out "organization/proj/dev                           4  v3  .pulumi/stacks/proj/dev.json
organization/proj/prod                          4  v3  .pulumi/stacks/proj/prod.json.gz"
run "validate every stack" st validate --backend "$U"
check_rc 0
check_out "organization/proj/dev: valid, 0 errors, 0 warnings (4 resources)
organization/proj/prod: valid, 0 errors, 0 warnings (4 resources)
2 stacks checked: 0 errors, 0 warnings"
run "list" st list --backend "$U" --stack proj/prod
check_rc 0; check_out_has "urn:pulumi:prod::proj::my:index:Comp::c"
run "PULUMI_BACKEND_URL" env PULUMI_BACKEND_URL="$U" "$STATETOOL" validate --stack proj/dev
check_rc 0; check_out "proj/dev: valid, 0 errors, 0 warnings (4 resources)"

# ---- an edit keeps the previous object as .bak, and leaves no lock ----
run "protect" env STATETOOL_HTTP_LOG="$T/http.log" "$STATETOOL" protect --backend "$U" --stack proj/dev --all
check_rc 0; check_out_has "All resources protected"
run "the .bak" gget s/.pulumi/stacks/proj/dev.json.bak "$T/dev.bak"
check_out "200"
check_same "$P/valid-checkpoint-v3-diy.json" "$T/dev.bak"
gget s/.pulumi/stacks/proj/dev.json "$T/dev.now" >/dev/null
run "the new state" sh -c "grep -c '\"protect\": true' '$T/dev.now'"
check_out "4"
run "no lock left" gls s/.pulumi/locks/
check_out_empty
run "no token or key in the HTTP log" sh -c "grep -c -e ya29 -e PRIVATE -e Bearer '$T/http.log'"
check_out "0"
run "the HTTP log names the token exchange" sh -c "grep -c '^POST $GCS_HOST /token 200' '$T/http.log'"
check_out "1"

# ---- a lock held by Pulumi ----
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"2024-05-01T10:00:00.123456789+02:00"}' >"$T/lock.json"
LK=s/.pulumi/locks/organization/proj/dev/6a1f0e2c-0000-4000-8000-000000000001.json
gput "$LK" "$T/lock.json" >/dev/null
run "locked by Pulumi" st unprotect --backend "$U" --stack proj/dev --all
check_rc 1
check_err_has "the stack is currently locked by 1 lock(s)"
check_err_has "created by alice@ci-runner (pid 4242) at 2024-05-01T10:00:00+02:00"
check_err_has "statetool unlock --backend $U --stack proj/dev"
gget s/.pulumi/stacks/proj/dev.json "$T/dev.after" >/dev/null
check_same "$T/dev.now" "$T/dev.after"
run "unlock" st unlock --backend "$U" --stack proj/dev
check_rc 0; check_out "removed 1 lock of proj/dev"
run "the lock is gone" gget "$LK" "$T/gone"
check_out "404"
run "restore the .bak" st restore --backend "$U" --stack proj/dev
check_rc 0
gget s/.pulumi/stacks/proj/dev.json "$T/dev.restored" >/dev/null
check_same "$P/valid-checkpoint-v3-diy.json" "$T/dev.restored"

# ---- a move between gs:// and a file:// backend, both ways ----
mkdir -p "$T/fb/.pulumi"
printf 'version: 1\n' >"$T/fb/.pulumi/meta.yaml"
F=file://$T/fb
gput s/.pulumi/stacks/test/sourceStack.json "$FIXTURES/move/children.json" >/dev/null
run "move gs:// -> file://" st move --source-backend "$U" --dest-backend "$F" --source organization/test/sourceStack --dest organization/test/destStack 'urn:pulumi:sourceStack::test::a:b:c::name'
check_rc 0; check_out_has "Successfully moved resources from organization/test/sourceStack to organization/test/destStack"
run "moved: the source on gs://" urns "$U" test/sourceStack
check_out "urn:pulumi:sourceStack::test::pulumi:providers:a::default_1_0_0"
run "moved: the destination" st validate --backend "$F" --stack test/destStack
# (its provider is b64, Pulumi's test one: a warning)
check_rc 0; check_out_has "test/destStack: valid, 0 errors, 1 warning (4 resources)"
check_out_has "warning: [secrets/test-provider]"
run "the source's .bak on gs://" gget s/.pulumi/stacks/test/sourceStack.json.bak "$T/src.bak"
check_out "200"; check_same "$FIXTURES/move/children.json" "$T/src.bak"
run "no staged object or journal left on gs://" sh -c "gls s/.pulumi/ | grep -c statetool-"
check_out "0"
run "move file:// -> gs://" st move --source-backend "$F" --dest-backend "$U" --source organization/test/destStack --dest organization/test/sourceStack 'urn:pulumi:destStack::test::a:b:c::name'
check_rc 0
run "back on gs://" urns "$U" test/sourceStack
check_out_has "urn:pulumi:sourceStack::test::a:b:c\$a:b:c::name2"
# a kill after the commit point: any command on the gs:// side completes the move
run "a move killed after its commit point" env STATETOOL_CRASH_AT=pair:5 "$STATETOOL" move --source-backend "$U" --dest-backend "$F" --source organization/test/sourceStack --dest organization/test/destStack 'urn:pulumi:sourceStack::test::a:b:c::name'
check_rc 137
run "list on gs:// completes it" st list --backend "$U" --stack test/sourceStack
check_rc 0; check_err_has "note: completed the interrupted move: wrote $U/.pulumi/stacks/test/sourceStack.json"
check_err_has "note: the interrupted move is complete; its journal is removed"
check_err_has "note: removed the interrupted move's lock $U/.pulumi/locks/organization/test/sourceStack/"
run "completed: the source" urns "$U" test/sourceStack
check_out "urn:pulumi:sourceStack::test::pulumi:pulumi:Stack::test-sourceStack
urn:pulumi:sourceStack::test::pulumi:providers:a::default_1_0_0"
run "completed: the destination" urns "$F" test/destStack
check_out_has "urn:pulumi:destStack::test::a:b:c::name"
run "completed: nothing left on gs://" sh -c "gls s/.pulumi/ | grep -c statetool-"
check_out "0"
run "completed: nothing left in file://" sh -c "find '$T/fb' -name '*statetool-*' | wc -l"
check_out "0"
run "the killed move's locks went with the recovery: unlock" st unlock --backend "$U" --stack test/sourceStack
check_rc 0; check_out "removed 0 locks of test/sourceStack"

# ---- index update: the listing decides, an unchanged stack is not downloaded ----
run "index build" st index update --backend "$U" --db "$T/ix.sqlite"
check_rc 0; check_out "$T/ix.sqlite: 3 stacks: 3 indexed (10 resources), 0 unchanged, 0 removed, 0 failed"
run "index no change" env STATETOOL_HTTP_LOG="$T/http2.log" "$STATETOOL" index update --backend "$U" --db "$T/ix.sqlite"
check_rc 0; check_out "$T/ix.sqlite: 3 stacks: 0 indexed (0 resources), 3 unchanged, 0 removed, 0 failed"
run "nothing downloaded" sh -c "grep -c 'stacks%2F' '$T/http2.log'"
check_out "0"
run "index after an edit" st protect --backend "$U" --stack proj/prod --all
check_rc 0
run "index one change" env STATETOOL_HTTP_LOG="$T/http3.log" "$STATETOOL" index update --backend "$U" --db "$T/ix.sqlite"
check_rc 0; check_out "$T/ix.sqlite: 3 stacks: 1 indexed (4 resources), 2 unchanged, 0 removed, 0 failed"
run "one download" sh -c "grep 'stacks%2F' '$T/http3.log' | sed 's/^GET [^ ]* //'"
check_out "/storage/v1/b/state/o/s%2F.pulumi%2Fstacks%2Fproj%2Fprod.json.gz 200"

# ---- other credentials: GOOGLE_CREDENTIALS (the JSON itself), GOOGLE_OAUTH_ACCESS_TOKEN ----
run "GOOGLE_CREDENTIALS" env -u GOOGLE_APPLICATION_CREDENTIALS GOOGLE_CREDENTIALS="$(cat "$GCS_KEY")" "$STATETOOL" validate --backend "$U" --stack proj/prod
check_rc 0; check_out "proj/prod: valid, 0 errors, 0 warnings (4 resources)"
run "GOOGLE_OAUTH_ACCESS_TOKEN" env -u GOOGLE_APPLICATION_CREDENTIALS GOOGLE_OAUTH_ACCESS_TOKEN="$GCS_TOKEN" "$STATETOOL" validate --backend "$U" --stack proj/prod
check_rc 0; check_out "proj/prod: valid, 0 errors, 0 warnings (4 resources)"
# credentials that do not parse: the reason and the place, never the text (jansson's "near
# '<token>'" would print a secret's first characters)
run "GOOGLE_CREDENTIALS not JSON" env -u GOOGLE_APPLICATION_CREDENTIALS GOOGLE_CREDENTIALS='SECRETword-not-json' "$STATETOOL" list --backend "$U" --stack proj/prod
check_rc 2; check_err "statetool: error: gs: unable to parse credentials from \$GOOGLE_CREDENTIALS: not JSON (at line 1, column 10)"
run "GOOGLE_CREDENTIALS cut short, --json" env -u GOOGLE_APPLICATION_CREDENTIALS GOOGLE_CREDENTIALS='{"type":"authorized_user","refresh_token":"1//0gSECRET' "$STATETOOL" list --json --backend "$U" --stack proj/prod
check_rc 2; check_out_lacks "SECRET"; check_err_lacks "SECRET"; check_out_has "not JSON (at line 1, column"

# ---- errors: each names gs and what was read, never a secret ----
gcsfake_key "$FIXTURES/gcs/wrong-key.pem" >"$T/wrong.json"
gget s/.pulumi/stacks/proj/dev.json "$T/dev.before" >/dev/null
run "wrong key" env GOOGLE_APPLICATION_CREDENTIALS="$T/wrong.json" "$STATETOOL" protect --backend "$U" --stack proj/dev --all
check_rc 1
check_err "statetool: error: gs: token exchange '$GCS_EMAIL' on $GCS_HOST failed: HTTP 400 invalid_grant: Invalid JWT Signature.; credentials: service account '$GCS_EMAIL' from the file '$T/wrong.json' named by GOOGLE_APPLICATION_CREDENTIALS, tokens from http://$GCS_HOST/token (GOOGLE_CREDENTIALS, GOOGLE_OAUTH_ACCESS_TOKEN unset), endpoint $API from GOOGLE_STORAGE_CUSTOM_ENDPOINT"
check_err_lacks "PRIVATE"
run "wrong token" env -u GOOGLE_APPLICATION_CREDENTIALS GOOGLE_OAUTH_ACCESS_TOKEN=ya29.not-this-one "$STATETOOL" protect --backend "$U" --stack proj/dev --all
check_rc 1
check_err "statetool: error: gs: objects.get 'state/s/.pulumi/meta.yaml' on $GCS_HOST failed: HTTP 401 authError: Invalid Credentials; credentials: the access token in GOOGLE_OAUTH_ACCESS_TOKEN (GOOGLE_CREDENTIALS unset), endpoint $API from GOOGLE_STORAGE_CUSTOM_ENDPOINT"
check_err_lacks "not-this-one"
run "no credentials" env -u GOOGLE_APPLICATION_CREDENTIALS HOME="$T/nohome" "$STATETOOL" stacks --backend "$U"
check_rc 1
check_err "statetool: error: gs: no credentials: set GOOGLE_CREDENTIALS (a key file's JSON), GOOGLE_OAUTH_ACCESS_TOKEN or GOOGLE_APPLICATION_CREDENTIALS (a key file's path), or run 'gcloud auth application-default login' (read: those three variables and $T/nohome/.config/gcloud/application_default_credentials.json; the metadata server of Compute Engine, which Pulumi asks last, is not asked)"
run "missing bucket" st validate --backend gs://no-such-bucket
check_rc 1
check_err_has "statetool: error: gs: objects.get 'no-such-bucket/.pulumi/meta.yaml' on $GCS_HOST failed: HTTP 404 notFound: The specified bucket does not exist.; credentials: service account '$GCS_EMAIL' from the file '$GCS_KEY' named by GOOGLE_APPLICATION_CREDENTIALS"
run "unreachable" env STATETOOL_HTTP_RETRIES=1 STATETOOL_HTTP_BACKOFF_MS=1 GOOGLE_STORAGE_CUSTOM_ENDPOINT=http://127.0.0.1:9/storage/v1 "$STATETOOL" stacks --backend "$U"
check_rc 1
# (the token endpoint is the key file's token_uri, the fake: the JSON API is what cannot be reached)
check_err_has "statetool: error: gs: cannot reach 127.0.0.1:9 (objects.get 'state/s/.pulumi/meta.yaml'): "
check_err_has "(2 attempts); credentials: service account '$GCS_EMAIL' from the file '$GCS_KEY' named by GOOGLE_APPLICATION_CREDENTIALS"
run "unreachable, with a token" env -u GOOGLE_APPLICATION_CREDENTIALS GOOGLE_OAUTH_ACCESS_TOKEN="$GCS_TOKEN" STATETOOL_HTTP_RETRIES=1 STATETOOL_HTTP_BACKOFF_MS=1 GOOGLE_STORAGE_CUSTOM_ENDPOINT=http://127.0.0.1:9/storage/v1 "$STATETOOL" stacks --backend "$U"
check_rc 1
check_err_has "statetool: error: gs: cannot reach 127.0.0.1:9 (objects.get 'state/s/.pulumi/meta.yaml'): "
check_err_has "(2 attempts); credentials: the access token in GOOGLE_OAUTH_ACCESS_TOKEN (GOOGLE_CREDENTIALS unset), endpoint http://127.0.0.1:9/storage/v1 from GOOGLE_STORAGE_CUSTOM_ENDPOINT"
check_err_lacks "$GCS_TOKEN"
run "unknown parameter" st stacks --backend "$U?region=eu"
check_rc 2; check_err_has "gs: "
# a server failing half-way: every upload of the save refused (503), bounded, nothing changed
fake fail '[{"path":"/upload/","action":"status","status":503,"times":99}]' >/dev/null
run "uploads fail" env STATETOOL_HTTP_RETRIES=2 STATETOOL_HTTP_BACKOFF_MS=1 "$STATETOOL" protect --backend "$U" --stack proj/dev --all
check_rc 1
check_err_has "failed: HTTP 503 backendError: Backend Error (3 attempts); credentials: service account"
fake fail '[]' >/dev/null
gget s/.pulumi/stacks/proj/dev.json "$T/dev.after2" >/dev/null
check_same "$T/dev.before" "$T/dev.after2"
run "no lock left after the failure" gls s/.pulumi/locks/
check_out_empty
finish
