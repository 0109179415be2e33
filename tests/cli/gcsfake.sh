# Sourced by CLI tests (after lib.sh): gcsfake_start NAME BUCKET... starts tests/gcsfake.js (a
# fake of Google Cloud Storage's JSON API and token endpoint: no GCS emulator starts offline) on
# 127.0.0.1, stops it on exit, and points gs:// at it: GOOGLE_APPLICATION_CREDENTIALS names a
# service account key file of the test account (fixtures/gcs/sa-key.pem, token_uri at the fake)
# and GOOGLE_STORAGE_CUSTOM_ENDPOINT the fake's JSON API. Sets GCS_PORT, GCS_HOST, GCS_KEY,
# GCS_TOKEN (a token the fake takes, for the test's own requests). Without node: skipped, but a
# failure when $CI is set.
GCS_EMAIL=statetool-test@statetool-test.iam.gserviceaccount.com
GCS_KID=4f1c0b5e7a2d
GCS_TOKEN=ya29.statetool-cli-test
gcsfake_start() {
	_name=$1
	shift
	if ! command -v node >/dev/null 2>&1; then
		skip_or_fail node "node is not installed (needed by the gs:// fake; apt-get install nodejs)"
		finish
		exit
	fi
	_args=""
	for _b in "$@"; do _args="$_args --bucket $_b"; done
	# shellcheck disable=SC2086
	node "${top_srcdir:-$(dirname "$0")/../..}/tests/gcsfake.js" --lifetime 900 --token "$GCS_TOKEN" \
		--sa "$GCS_EMAIL=$FIXTURES/gcs/sa-pub.pem:$GCS_KID" $_args >"$T/gcs.port" 2>"$T/gcs.err" &
	GCS_PID=$!
	trap 'kill "$GCS_PID" 2>/dev/null; rm -rf "$T"' EXIT
	_i=0
	while [ ! -s "$T/gcs.port" ] && [ $_i -lt 100 ]; do
		sleep 0.1
		_i=$((_i + 1))
	done
	GCS_PORT=$(head -n 1 "$T/gcs.port")
	if [ -z "$GCS_PORT" ]; then
		echo "$_name: the GCS fake did not start: $(cat "$T/gcs.err")"
		echo "$_name: 0 passed, 1 failed"
		exit 1
	fi
	GCS_HOST=127.0.0.1:$GCS_PORT
	GCS_KEY=$T/gcs-key.json
	gcsfake_key "$FIXTURES/gcs/sa-key.pem" >"$GCS_KEY"
	for _v in GOOGLE_CREDENTIALS GOOGLE_OAUTH_ACCESS_TOKEN STORAGE_EMULATOR_HOST \
		GOOGLE_BACKEND_STORAGE_CUSTOM_ENDPOINT; do
		unset "$_v"
	done
	GOOGLE_APPLICATION_CREDENTIALS=$GCS_KEY
	GOOGLE_STORAGE_CUSTOM_ENDPOINT=http://$GCS_HOST/storage/v1/
	export GOOGLE_APPLICATION_CREDENTIALS GOOGLE_STORAGE_CUSTOM_ENDPOINT
}
# gcsfake_key PEM: a service account key file (JSON) holding PEM's key, tokens from the fake
gcsfake_key() {
	printf '{"type":"service_account","project_id":"statetool-test","private_key_id":"%s","private_key":"' "$GCS_KID"
	awk '{ printf "%s\\n", $0 }' "$1"
	printf '","client_email":"%s","client_id":"1234","token_uri":"http://%s/token"}\n' "$GCS_EMAIL" "$GCS_HOST"
}
