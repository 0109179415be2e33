#!/bin/sh
# Stacks in Pulumi Cloud (--backend https://... or http://...), against the fake service of
# tests/cloudfake.h (no real Pulumi Cloud can be reached from here): the read-only commands, an
# edit through export and import (the exact deployment the service receives), the access token
# from PULUMI_ACCESS_TOKEN or the Pulumi CLI's credentials file, and the faults (no token, a
# wrong one, an unknown stack, a conflicting update, server errors, rate limits), each with a
# clear message that never shows the token, and nothing changed.
. "$(dirname "$0")/lib.sh"
export HOME=$T/home
mkdir -p "$HOME"
unset PULUMI_ACCESS_TOKEN PULUMI_BACKEND_URL PULUMI_HOME PULUMI_CREDENTIALS_PATH http_proxy \
	https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
export no_proxy=127.0.0.1,localhost STATETOOL_HTTP_BACKOFF_MS=1 STATETOOL_HTTP_RETRIES=3

FAKE=${top_builddir:-.}/tests/cloudfake
S=$T/svc
mkdir -p "$S/stacks/acme/shop" "$S/stacks/acme/web" "$S/stacks/other/shop"
printf 'sekret-token-42\n' >"$S/token"
printf 'acme\n' >"$S/user"
cp "$FIXTURES/cloud/shop-dev.json" "$S/stacks/acme/shop/dev.json"
cp "$FIXTURES/cloud/shop-dev.json" "$S/stacks/other/shop/dev.json"
sed 's/dev::shop/prod::web/g; s/shop-dev/web-prod/g' "$FIXTURES/cloud/shop-dev.json" \
	>"$S/stacks/acme/web/prod.json"
# the fake is part of the test: it must start (a missing one fails, never skips)
"$FAKE" "$S" 2>"$T/fake.err" &
fake=$!
trap 'touch "$S/stop"; kill $fake 2>/dev/null; wait $fake 2>/dev/null; rm -rf "$T"' EXIT
for _i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25; do
	[ -s "$S/port" ] && break
	sleep 0.2
done
current="the fake service starts"
if [ -s "$S/port" ]; then ok; else bad "$FAKE did not start: $(cat "$T/fake.err")"; finish; exit 1; fi
U=http://127.0.0.1:$(cat "$S/port")
export PULUMI_ACCESS_TOKEN=sekret-token-42
ORIG=$T/orig.json
cp "$S/stacks/acme/shop/dev.json" "$ORIG"

# ---- read-only commands ----
run "stacks: every stack the user sees, over pages" st stacks --backend "$U"
check_rc 0
check_out "acme/shop/dev                                  13  v3  acme/shop/dev
acme/web/prod                                  13  v3  acme/web/prod
other/shop/dev                                 13  v3  other/shop/dev"
grep -c 'GET /api/user/stacks' "$S/requests.log" >"$T/n"
check_file_is "$T/n" "2
"
# a URL with a user, password or query: refused without echoing them (a token may be there)
run "a password in the URL is not echoed" env PULUMI_BACKEND_URL='https://u:sekret-token-42@api.pulumi.example' "$STATETOOL" stacks
check_rc 2
check_err "statetool: error: pulumi cloud: 'https://***@api.pulumi.example' is no service URL (https://HOST[:PORT][/PATH]; a user, password or query is not read: the token comes from PULUMI_ACCESS_TOKEN or \`pulumi login\`)"
for u in 'https://us:p@ss@api.pulumi.com' 'https://us:tok/en@api.pulumi.com'; do
	run "a password with '@' or '/' is not echoed: $u" st stacks --backend "$u"
	check_rc 2; check_err_lacks "ss@"; check_err_lacks "tok/en"; check_err_has "'https://***@api.pulumi.com'"
done
run "a query in the URL is not echoed, --json" st list --json --backend 'https://127.0.0.1:1/?token=sekret-token-42' -s a/b/c
check_rc 2; check_out_lacks "sekret"; check_err_lacks "sekret"
check_out_has "pulumi cloud: 'https://127.0.0.1:1/?...' is no service URL"
run "stacks --json: the layout is cloud" st stacks --backend "$U" --json
check_rc 0
check_out_has '"layout": "cloud"'
check_out_has '"stack": "acme/web/prod"'
run "PULUMI_BACKEND_URL names the service" env PULUMI_BACKEND_URL="$U" "$STATETOOL" stacks
check_rc 0
check_out_has "other/shop/dev"
run "validate" st validate --backend "$U" --stack acme/shop/dev
check_rc 0
check_out "acme/shop/dev: valid, 0 errors, 0 warnings (13 resources)"
run "list, the organization from the user" st list --backend "$U" --stack shop/dev
check_rc 0
check_out_has "urn:pulumi:dev::shop::my:index:App::app"
grep -c 'GET /api/user ' "$S/requests.log" >"$T/n"
check_file_is "$T/n" "1
"
run "show" st show --backend "$U" --stack acme/shop/dev app
check_rc 0
check_out_has 'URN:  urn:pulumi:dev::shop::my:index:App::app'
run "show --show-secrets: the service's keys are not here" st show --show-secrets \
	--backend "$U" --stack acme/shop/dev backup
check_rc 1
check_err_has "cannot decrypt secrets of the 'service' secrets provider offline"
run "pending list" st pending --backend "$U" --stack acme/shop/dev
check_rc 0
run "show keeps the service's ciphertexts" st show --json --backend "$U" --stack acme/shop/dev \
	backup
check_rc 0
check_out_has '"ciphertext": "v1:ZGVmZ2hpamtsbW5v:LudbcPrKaMQk1R3NNyum5aNq3uSzkG2zCA=="'
run "secrets show: the service's keys are not here" st secrets show --backend "$U" \
	--stack acme/shop/dev
check_rc 1
check_err_has "cannot decrypt secrets of the 'service' secrets provider offline: Pulumi Cloud holds its keys"
check_out_empty
run "a stack name without a project" st list --backend "$U" --stack dev
check_rc 2
check_err "statetool: error: pulumi cloud: a stack is named ORGANIZATION/PROJECT/STACK (or PROJECT/STACK in your default organization), not 'dev'"
run "unlock: no lock to remove" st unlock --backend "$U" --stack acme/shop/dev
check_rc 1
check_err_has "has no lock statetool could remove"
check_same "$ORIG" "$S/stacks/acme/shop/dev.json"

# ---- edits: export, change, import ----
cp "$ORIG" "$T/local.json"
st protect "$T/local.json" app >/dev/null 2>&1
: >"$S/requests.log"
run "protect through export and import" st protect --backend "$U" --stack acme/shop/dev app
check_rc 0
check_out "protected urn:pulumi:dev::shop::my:index:App::app
1 resource protected"
check_same "$T/local.json" "$S/stacks/acme/shop/dev.json"
sed 's/ [0-9]*$//' "$S/requests.log" >"$T/reqs"
check_file_is "$T/reqs" "GET /api/stacks/acme/shop/dev
GET /api/stacks/acme/shop/dev/export
GET /api/stacks/acme/shop/dev
POST /api/stacks/acme/shop/dev/import
GET /api/stacks/acme/shop/dev/update/u1
GET /api/stacks/acme/shop/dev/update/u1?continuationToken=1
"
st delete "$T/local.json" audit >/dev/null 2>&1
run "delete through export and import" st delete --backend "$U" --stack shop/dev audit
check_rc 0
check_same "$T/local.json" "$S/stacks/acme/shop/dev.json"
cp "$S/stacks/acme/shop/dev.json" "$T/before.json"
run "a dry run imports nothing" st protect --dry-run --backend "$U" --stack acme/shop/dev \
	pulumi:providers:aws::eu
check_rc 0
check_same "$T/before.json" "$S/stacks/acme/shop/dev.json"

# ---- the access token ----
mkdir -p "$HOME/.pulumi"
printf '{"current":"%s","accessTokens":{"%s":"sekret-token-42","https://api.pulumi.com":"x"}}\n' \
	"$U" "$U" >"$HOME/.pulumi/credentials.json"
run "the token from ~/.pulumi/credentials.json" env -u PULUMI_ACCESS_TOKEN "$STATETOOL" \
	validate --backend "$U" --stack acme/shop/dev
check_rc 0
mkdir -p "$T/pc"
printf '{"accessTokens":{"https://api.pulumi.com":"x"}}\n' >"$T/pc/credentials.json"
run "no token: none set, none stored for this URL" env -u PULUMI_ACCESS_TOKEN \
	PULUMI_CREDENTIALS_PATH="$T/pc" "$STATETOOL" list --backend "$U" --stack acme/shop/dev
check_rc 1
check_err "statetool: error: pulumi cloud: no access token for $U: set PULUMI_ACCESS_TOKEN or run \`pulumi login $U\` ($T/pc/credentials.json has none for it)"
run "a wrong token: 401, named by where it came from, never shown" \
	env PULUMI_ACCESS_TOKEN=wrong-token-7 "$STATETOOL" list --backend "$U" --stack acme/shop/dev
check_rc 1
check_err "statetool: error: pulumi cloud: GetStack 'acme/shop/dev' on 127.0.0.1:${U##*:} failed: HTTP 401 [401] Unauthorized: No credentials provided or are invalid.; backend $U, token from PULUMI_ACCESS_TOKEN"
check_err_lacks "wrong-token-7"
run "a wrong token from the credentials file" env -u PULUMI_ACCESS_TOKEN \
	PULUMI_HOME="$T/ph" sh -c 'mkdir -p "$PULUMI_HOME"; printf "{\"accessTokens\":{\"%s\":\"bad-9\"}}" "$1" >"$PULUMI_HOME/credentials.json"; "$STATETOOL" stacks --backend "$1"' sh "$U"
check_rc 1
check_err_has "HTTP 401 [401] Unauthorized: No credentials provided or are invalid.; backend $U, token from $T/ph/credentials.json"
check_err_lacks "bad-9"

# ---- faults ----
cp "$S/stacks/acme/shop/dev.json" "$T/before.json"
run "an unknown stack" st list --backend "$U" --stack acme/shop/nope
check_rc 1
check_err "statetool: error: stack 'acme/shop/nope' has no state file in backend '$U'"
touch "$S/stacks/acme/shop/dev.busy"
run "an update in progress: the import is refused (409)" st protect --backend "$U" \
	--stack acme/shop/dev pulumi:providers:aws::eu
check_rc 1
check_err_has "statetool: error: pulumi cloud: ImportStack 'acme/shop/dev' on 127.0.0.1:${U##*:} failed: HTTP 409 [409] Conflict: Another update is currently in progress.; backend $U, token from PULUMI_ACCESS_TOKEN"
check_same "$T/before.json" "$S/stacks/acme/shop/dev.json"
rm -f "$S/stacks/acme/shop/dev.busy"
printf 'GET /api/stacks/acme/shop/dev/export 500 2\n' >"$S/faults"
run "500 twice, then success: retried" st list --backend "$U" --stack acme/shop/dev
check_rc 0
check_out_has "urn:pulumi:dev::shop::pulumi:pulumi:Stack::shop-dev"
printf 'GET /api/stacks/acme/shop/dev/export 500 -1\n' >"$S/faults"
run "500 forever: bounded retries" st protect --backend "$U" --stack acme/shop/dev \
	pulumi:providers:aws::eu
check_rc 1
check_err "statetool: error: pulumi cloud: ExportStack 'acme/shop/dev' on 127.0.0.1:${U##*:} failed: HTTP 500 [500] Internal Server Error (4 attempts); backend $U, token from PULUMI_ACCESS_TOKEN"
check_same "$T/before.json" "$S/stacks/acme/shop/dev.json"
printf 'POST /api/stacks/acme/shop/dev/import 500 1\n' >"$S/faults"
run "500 on the import: not repeated (it must not happen twice), nothing changed" \
	st protect --backend "$U" --stack acme/shop/dev pulumi:providers:aws::eu
check_rc 1
check_err_has "ImportStack 'acme/shop/dev' on 127.0.0.1:${U##*:} failed: HTTP 500 [500] Internal Server Error; backend"
check_same "$T/before.json" "$S/stacks/acme/shop/dev.json"
printf 'POST /api/stacks/acme/shop/dev/import 429 1\n' >"$S/faults"
: >"$S/requests.log"
run "429 on the import: repeated after Retry-After" st protect --backend "$U" \
	--stack acme/shop/dev pulumi:providers:aws::eu
check_rc 0
grep -c 'POST /api/stacks/acme/shop/dev/import' "$S/requests.log" >"$T/n"
check_file_is "$T/n" "2
"
# the import accepted (an updateId), its result unread: the service applied it, so the
# message must not say that nothing changed (audit28 D1); exit 1, --json's code outcome-unknown
cp "$S/stacks/acme/shop/dev.json" "$T/applied.json"
st unprotect "$T/applied.json" pulumi:providers:aws::eu >/dev/null 2>&1
printf 'GET /api/stacks/acme/shop/dev/update/ 500 -1\n' >"$S/faults"
: >"$S/requests.log"
run "the update's result cannot be read (500): outcome unknown, said so" st unprotect \
	--backend "$U" --stack acme/shop/dev pulumi:providers:aws::eu
upd=$(sed -n 's|^GET /api/stacks/acme/shop/dev/update/\(u[0-9]*\) 500$|\1|p' "$S/requests.log" | sed -n 1p)
check_rc 1
check_err "statetool: error: pulumi cloud: the import into 'acme/shop/dev' was sent (update $upd) but its result could not be read, so the stack may or may not have changed (\`pulumi stack history --stack acme/shop/dev\` or \`statetool list\` tells): GetUpdateEvents 'acme/shop/dev' on 127.0.0.1:${U##*:} failed: HTTP 500 [500] Internal Server Error (4 attempts); backend $U, token from PULUMI_ACCESS_TOKEN"
check_same "$T/applied.json" "$S/stacks/acme/shop/dev.json"
st protect "$T/applied.json" pulumi:providers:aws::eu >/dev/null 2>&1
printf 'GET /api/stacks/acme/shop/dev/update/ 403 1\n' >"$S/faults"
run "the update's result refused (403), --json: outcome-unknown" st protect --json \
	--backend "$U" --stack acme/shop/dev pulumi:providers:aws::eu
check_rc 1
check_err_has "but its result could not be read, so the stack may or may not have changed"
check_err_has "GetUpdateEvents 'acme/shop/dev' on 127.0.0.1:${U##*:} failed: HTTP 403"
check_out_has '"code": "outcome-unknown"'
check_same "$T/applied.json" "$S/stacks/acme/shop/dev.json"
: >"$S/faults"
cp "$S/stacks/acme/shop/dev.json" "$T/before.json"
printf 'GET /api/stacks/acme/shop/dev 429 -1\n' >"$S/faults"
run "429 forever: a clear message" st unprotect --backend "$U" --stack acme/shop/dev \
	pulumi:providers:aws::eu
check_rc 1
check_err "statetool: error: pulumi cloud: GetStack 'acme/shop/dev' on 127.0.0.1:${U##*:} failed: HTTP 429 (pulumi service: request rate-limit exceeded) (4 attempts); backend $U, token from PULUMI_ACCESS_TOKEN"
check_same "$T/before.json" "$S/stacks/acme/shop/dev.json"
: >"$S/faults"
grep -c "sekret-token-42" "$S/requests.log" "$T/err" | grep -v ':0$' >"$T/n"
check_file_is "$T/n" ""

# ---- move between a cloud stack and another backend ----
B=$T/diy
mkdir -p "$B/.pulumi/stacks/shop"
printf 'version: 1\n' >"$B/.pulumi/meta.yaml"
cp "$S/stacks/acme/shop/dev.json" "$T/cloud-before.json"
# a resource whose secrets Pulumi Cloud keeps for the source stack ('service' provider) cannot
# go to a stack without a provider: the service's state names the source stack (the DIY stack
# took it, and its secrets were lost with the cloud stack); nothing changed on either side
SECRET_M=urn:pulumi:dev::shop::gcp:storage/bucket:Bucket::backup
run "move service-held secrets to a stack without a provider: refused" st move \
	--source-backend "$U" --source acme/shop/dev --dest-backend "$B" --dest shop/dev "$SECRET_M"
check_rc 1
check_err_has "the resources to move hold secrets that Pulumi Cloud keeps for the source stack (its 'service' secrets provider), and the destination has no secrets provider: give it one first"
check_same "$T/cloud-before.json" "$S/stacks/acme/shop/dev.json"
check_absent "$B/.pulumi/stacks/shop/dev.json"
M=urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::logs
cp "$T/cloud-before.json" "$T/a.json"
# what a move between two files gives: the reference for the bytes the service gets
run "move between two files (the reference)" st move --source "$T/a.json" --dest "$T/b.json" \
	--dest-stack shop/dev "$M"
check_rc 0
run "move cloud -> DIY backend" st move --source-backend "$U" --source acme/shop/dev \
	--dest-backend "$B" --dest shop/dev "$M"
check_rc 0
check_same "$T/a.json" "$S/stacks/acme/shop/dev.json"
run "the DIY side has the resource" st list --backend "$B" --stack shop/dev
check_rc 0
check_out_has "$M"
current="the DIY side took no 'service' secrets provider"
if grep -qF '"service"' "$B/.pulumi/stacks/shop/dev.json"; then bad "it names the service"; else ok; fi
run "move DIY backend -> cloud" st move --source-backend "$B" --source shop/dev \
	--dest-backend "$U" --dest acme/shop/dev "$M"
check_rc 0
run "the cloud side has it again" st list --backend "$U" --stack acme/shop/dev
check_out_has "$M"
run "the DIY side lost it" st list --backend "$B" --stack shop/dev
check_rc 0
current="the DIY side lost it: $M"
if grep -qF "$M" "$T/out"; then bad "still there"; else ok; fi
cp "$S/stacks/acme/shop/dev.json" "$T/cloud-before.json"
cp "$B/.pulumi/stacks/shop/dev.json" "$T/diy-before.json"
touch "$S/stacks/acme/shop/dev.busy"
run "move to the cloud during an update: refused, nothing changed" st move \
	--source-backend "$B" --source shop/dev --dest-backend "$U" --dest acme/shop/dev "$M"
check_rc 1
rm -f "$S/stacks/acme/shop/dev.busy"
check_same "$T/cloud-before.json" "$S/stacks/acme/shop/dev.json"
check_same "$T/diy-before.json" "$B/.pulumi/stacks/shop/dev.json"
cp "$S/stacks/acme/shop/dev.json" "$T/cloud-before.json"
printf 'POST /api/stacks/acme/shop/dev/import 500 1\n' >"$S/faults"
run "move cloud -> DIY, the source's import fails: in both, and said so" st move \
	--source-backend "$U" --source acme/shop/dev --dest-backend "$B" --dest shop/dev "$M"
check_rc 1
check_err_has "ImportStack 'acme/shop/dev' on 127.0.0.1:${U##*:} failed: HTTP 500 [500] Internal Server Error; backend"
check_err_has "statetool: error: the resources were written to 'shop/dev' but could not be removed from 'acme/shop/dev': they are in both now; remove them from 'acme/shop/dev' (statetool delete) once it can be written"
check_same "$T/cloud-before.json" "$S/stacks/acme/shop/dev.json"
run "the DIY side has them" st list --backend "$B" --stack shop/dev
check_out_has "$M"
: >"$S/faults"
# the import's result unread (audit28 D1): the source's (the service removed them: not "in
# both"), then the destination's (the source is as it was, the service may hold them)
run "setup: the DIY side loses them" st delete --backend "$B" --stack shop/dev "$M"
check_rc 0
cp "$T/cloud-before.json" "$T/a.json"
st move --source "$T/a.json" --dest "$T/b2.json" --dest-stack shop/dev "$M" >/dev/null 2>&1
printf 'GET /api/stacks/acme/shop/dev/update/ 500 -1\n' >"$S/faults"
run "move cloud -> DIY, the source's import result unread: not said to be in both" st move \
	--source-backend "$U" --source acme/shop/dev --dest-backend "$B" --dest shop/dev "$M"
check_rc 1
check_err_has "statetool: error: pulumi cloud: the import into 'acme/shop/dev' was sent (update"
check_err_has "statetool: error: the resources were written to 'shop/dev', and whether they were removed from 'acme/shop/dev' is not known: if they are still there (statetool list), remove them from 'acme/shop/dev' (statetool delete)"
check_err_lacks "in both"
check_same "$T/a.json" "$S/stacks/acme/shop/dev.json"
cp "$B/.pulumi/stacks/shop/dev.json" "$T/diy-before.json"
run "move DIY -> cloud, the destination's import result unread: not said to be nothing" st move \
	--source-backend "$B" --source shop/dev --dest-backend "$U" --dest acme/shop/dev "$M"
check_rc 1
check_err_has "statetool: error: pulumi cloud: the import into 'acme/shop/dev' was sent (update"
check_err_has "statetool: error: 'shop/dev' is as it was, and whether the resources reached 'acme/shop/dev' is not known: if they are there (statetool list), remove them from 'shop/dev' (statetool delete)"
check_err_lacks "nothing was moved"
check_same "$T/diy-before.json" "$B/.pulumi/stacks/shop/dev.json"
: >"$S/faults"
run "the service took them" st list --backend "$U" --stack acme/shop/dev
check_out_has "$M"

# ---- index update over the organisation's stacks ----
run "index update over every cloud stack" st index update --backend "$U" --db "$T/ix.sqlite"
check_rc 0
check_out "$T/ix.sqlite: 3 stacks: 3 indexed (38 resources), 0 unchanged, 0 removed, 0 failed"
run "index query finds a resource of a cloud stack" st query --db "$T/ix.sqlite" --type \
	aws:cloudwatch/logGroup:LogGroup
check_rc 0
check_out_has "acme/web/prod"
run "index update again: nothing changed" st index update --backend "$U" --db "$T/ix.sqlite"
check_rc 0
check_out "$T/ix.sqlite: 3 stacks: 0 indexed (0 resources), 3 unchanged, 0 removed, 0 failed"
rm "$S/stacks/other/shop/dev.json"
st protect --backend "$U" --stack acme/web/prod web-prod >/dev/null 2>&1
run "index update after a change and a removal" st index update --backend "$U" --db "$T/ix.sqlite"
check_rc 0
check_out "$T/ix.sqlite: 2 stacks: 1 indexed (13 resources), 1 unchanged, 1 removed, 0 failed"
printf 'GET /api/stacks/acme/web/prod/export 500 -1\n' >"$S/faults"
run "index update: a stack the service fails on" st index update --backend "$U" --db "$T/ix.sqlite"
check_rc 1
check_err_has "acme/web/prod: pulumi cloud: ExportStack 'acme/web/prod' on 127.0.0.1:${U##*:} failed: HTTP 500 [500] Internal Server Error (4 attempts)"
: >"$S/faults"
# listed, then deleted before its export is read (404): taken as removed, not a failure
run "index update after the stack is indexed again" st index update --backend "$U" --db "$T/ix.sqlite"
check_rc 0; check_out_has "1 indexed"
printf 'GET /api/stacks/acme/web/prod/export 404 -1\n' >"$S/faults"
run "index update: a stack deleted between the listing and its export" st index update --backend "$U" --db "$T/ix.sqlite"
check_rc 0
check_out "$T/ix.sqlite: 2 stacks: 0 indexed (0 resources), 1 unchanged, 1 removed, 0 failed"
check_err "statetool: warning: acme/web/prod: gone from the backend since it was listed (removed meanwhile): taken as removed"
: >"$S/faults"

finish
