#!/bin/sh
# The storage figures of bench/run (issue 19): `validate` of the 100,000-resource bench state read
# from each store on loopback beside the same file on disk, and `index update` with no change over
# 300 stacks in an object store. Needs the test servers (sh tests/servers/ctl start); a store whose
# server is not up is left out with a line saying so. gs:// is measured on tests/gcsfake.js (a
# fake of the JSON API in Node, started here as tests/cli/t_gcs.sh starts it; no GCS emulator
# starts offline), so its figure is the fake's, not Google's. Beside each store, the floor its
# server sets: the same object fetched by a bare client (curl GET; psql for postgres) into
# /dev/null, with nothing parsed. Sourced by bench/run, which defines st, out, T, runs, line,
# ratio and report.
top=${top:?}
envfile=${ST_SERVERS_DIR:-/tmp/statetool-servers-$(id -u)}/env
[ -r "$envfile" ] && . "$envfile"
stool=$top/tests/storetool
[ -x "$stool" ] || make -C "$top" tests/storetool >/dev/null
export no_proxy=127.0.0.1,localhost
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy

echo | tee -a "$report"
sn=${BENCH_STORE_SIZE:-100000}
echo "== stores: a $sn-resource state (checkpoint, 4-space) read from each store on loopback" | tee -a "$report"
line "measurement" "median s" "peak MiB" "ratio"
cf=$out/store-$sn.json
[ -s "$cf" ] || "$out/gen" "$sn" 1 --checkpoint --stack dev --project bench > "$cf"
set -- $($T "$runs" "$st" validate -q "$cf"); disk=$1
line "validate, file on disk" "$1" "$(($2 / 1024))" "-"

tag=bench-$(date +%s)-$$
urls=""
if [ -n "${ST_TEST_S3_ENDPOINT:-}" ]; then
	export AWS_ACCESS_KEY_ID="$ST_TEST_S3_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$ST_TEST_S3_SECRET_KEY"
	r=${ST_TEST_S3_REGION:-us-east-1}
	curl -s -o /dev/null -X PUT -H "x-amz-content-sha256: $(printf '' | sha256sum | cut -d' ' -f1)" \
		--aws-sigv4 "aws:amz:$r:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
		"$ST_TEST_S3_ENDPOINT/$tag"
	S3="s3://$tag/b?endpoint=$ST_TEST_S3_ENDPOINT&use_path_style=true&region=$r"
	urls="$urls s3|$S3"
else
	echo "  s3: no test server (sh tests/servers/ctl start)" | tee -a "$report"
fi
# az_container PUT|DELETE: makes or deletes the container $tag (with its blobs), by one Shared Key
# request (openssl's HMAC)
az_container() {
	d=$(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S GMT')
	sts=$(printf '%s\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:%s\nx-ms-version:2021-08-06\n/%s/%s/%s\nrestype:container' \
		"$1" "$d" "$a" "$a" "$tag")
	sig=$(printf '%s' "$sts" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$k" -binary | base64 | tr -d '\n')
	curl -s -o /dev/null -X "$1" -H "x-ms-date: $d" -H "x-ms-version: 2021-08-06" \
		-H "Authorization: SharedKey $a:$sig" "$ST_TEST_AZURE_ENDPOINT/$tag?restype=container"
}
if [ -n "${ST_TEST_AZURE_ENDPOINT:-}" ]; then
	a=$ST_TEST_AZURE_ACCOUNT
	k=$(printf '%s' "$ST_TEST_AZURE_KEY" | base64 -d | od -An -v -tx1 | tr -d ' \n')
	az_container PUT
	export AZURE_STORAGE_CONNECTION_STRING="$ST_TEST_AZURE_CONNECTION_STRING"
	urls="$urls azblob|azblob://$tag/b"
else
	echo "  azblob: no test server" | tee -a "$report"
fi
if [ -n "${ST_TEST_PG_URL:-}" ]; then
	t=$(echo "$tag" | tr -- - _)
	urls="$urls postgres|$ST_TEST_PG_URL?sslmode=disable&table=$t"
else
	echo "  postgres: no test server" | tee -a "$report"
fi
gcs_pid=""
if command -v node >/dev/null 2>&1; then
	# the fake, on 127.0.0.1, with one bearer token; it stops by itself after an hour
	gtoken=bench-gcs-token
	node "$top/tests/gcsfake.js" --lifetime 3600 --token "$gtoken" --bucket "$tag" \
		>"$out/gcs.port" 2>"$out/gcs.err" &
	gcs_pid=$!
	i=0
	while [ ! -s "$out/gcs.port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	gport=$(head -n 1 "$out/gcs.port")
	if [ -n "$gport" ]; then
		unset GOOGLE_CREDENTIALS GOOGLE_APPLICATION_CREDENTIALS STORAGE_EMULATOR_HOST \
			GOOGLE_BACKEND_STORAGE_CUSTOM_ENDPOINT
		export GOOGLE_OAUTH_ACCESS_TOKEN="$gtoken"
		export GOOGLE_STORAGE_CUSTOM_ENDPOINT="http://127.0.0.1:$gport/storage/v1/"
		urls="$urls gs|gs://$tag/b"
	else
		echo "  gs: the fake (tests/gcsfake.js) did not start: $(cat "$out/gcs.err")" | tee -a "$report"
	fi
else
	echo "  gs: no node for the fake (tests/gcsfake.js)" | tee -a "$report"
fi

# floor NAME: writes $out/floor.sh, which fetches the state's object from store NAME into
# /dev/null with a bare client (its server's part of the time: nothing parsed, nothing checked);
# fails when that client is not installed
key=b/.pulumi/stacks/bench/dev.json
floor() {
	case $1 in
	s3)
		command -v curl >/dev/null || return 1
		cat >"$out/floor.sh" <<-EOF
		curl -sf -o /dev/null -H 'x-amz-content-sha256: $(printf '' | sha256sum | cut -d' ' -f1)' \\
			--aws-sigv4 'aws:amz:$r:s3' --user '$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY' \\
			'$ST_TEST_S3_ENDPOINT/$tag/$key'
		EOF
		;;
	azblob)
		command -v curl >/dev/null || return 1
		# one Shared Key signature (valid for 15 minutes) for every run
		d=$(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S GMT')
		sts=$(printf 'GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:%s\nx-ms-version:2021-08-06\n/%s/%s/%s/%s' \
			"$d" "$a" "$a" "$tag" "$key")
		sig=$(printf '%s' "$sts" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$k" -binary | base64 | tr -d '\n')
		cat >"$out/floor.sh" <<-EOF
		curl -sf -o /dev/null -H 'x-ms-date: $d' -H 'x-ms-version: 2021-08-06' \\
			-H 'Authorization: SharedKey $a:$sig' '$ST_TEST_AZURE_ENDPOINT/$tag/$key'
		EOF
		;;
	gs)
		command -v curl >/dev/null || return 1
		cat >"$out/floor.sh" <<-EOF
		curl -sf -o /dev/null -H 'Authorization: Bearer $gtoken' \\
			'http://127.0.0.1:$gport/storage/v1/b/$tag/o/$(echo "$key" | sed 's#/#%2F#g')?alt=media'
		EOF
		;;
	postgres)
		command -v psql >/dev/null || return 1
		# the row as the store keeps it: its key under the database's name (the URL's path)
		cat >"$out/floor.sh" <<-EOF
		psql -XAtq -o /dev/null '$ST_TEST_PG_URL?sslmode=disable' \\
			-c "SELECT data FROM $t WHERE key = '${ST_TEST_PG_URL##*/}/.pulumi/stacks/bench/dev.json'"
		EOF
		;;
	*) return 1 ;;
	esac
}

printf 'version: 1\n' > "$out/meta.yaml"
for u in $urls; do
	name=${u%%|*}; url=${u#*|}
	"$stool" put "$url" .pulumi/meta.yaml < "$out/meta.yaml" &&
		"$stool" put "$url" .pulumi/stacks/bench/dev.json < "$cf" ||
		{ echo "  $name: could not upload the state" | tee -a "$report"; continue; }
	set -- $($T "$runs" "$st" validate -q --backend "$url" --stack bench/dev)
	line "validate, $name$([ "$name" = gs ] && echo ' (a fake)')" "$1" "$(($2 / 1024))" "$(ratio "$1" "$disk") x disk"
	if floor "$name" && set -- $($T "$runs" sh "$out/floor.sh"); then
		line "  floor: $([ "$name" = postgres ] && echo psql SELECT || echo curl GET) of the object" \
			"$1" "$(($2 / 1024))" "$(ratio "$1" "$disk") x disk"
	else
		echo "  $name: the floor (a bare client's fetch of the object) could not be measured" | tee -a "$report"
	fi
done

# PostgreSQL keeps a big row compressed (TOAST, pglz by default, also in the table Pulumi makes):
# the server's decompression is most of its SELECT. The same state in a table whose column an
# operator set to lz4 (`ALTER TABLE pulumi_state ALTER COLUMN data SET COMPRESSION lz4`: new
# writes only; Pulumi and statetool read it the same), to show what that server setting gives.
if [ -n "${ST_TEST_PG_URL:-}" ] && command -v psql >/dev/null 2>&1; then
	pu="$ST_TEST_PG_URL?sslmode=disable&table=${t}_lz4"
	if "$stool" put "$pu" .pulumi/meta.yaml < "$out/meta.yaml" &&
		psql -XAtq "$ST_TEST_PG_URL?sslmode=disable" \
			-c "ALTER TABLE ${t}_lz4 ALTER COLUMN data SET COMPRESSION lz4" 2>/dev/null &&
		"$stool" put "$pu" .pulumi/stacks/bench/dev.json < "$cf"; then
		set -- $($T "$runs" "$st" validate -q --backend "$pu" --stack bench/dev)
		line "validate, postgres (lz4 column)" "$1" "$(($2 / 1024))" "$(ratio "$1" "$disk") x disk"
		t=${t}_lz4
		floor postgres && set -- $($T "$runs" sh "$out/floor.sh") &&
			line "  floor: psql SELECT of the object" "$1" "$(($2 / 1024))" "$(ratio "$1" "$disk") x disk"
	else
		echo "  postgres: no lz4 column compression on this server" | tee -a "$report"
	fi
fi

# index update with no change, 300 stacks of 100 resources in the first object store
first=$(echo "$urls" | tr ' ' '\n' | grep -E '^(s3|azblob)\|' | head -n 1)
if [ -n "$first" ]; then
	name=${first%%|*}; url=${first#*|}
	url=$(echo "$url" | sed 's#/b?#/idx?#; s#/b$#/idx#')
	echo | tee -a "$report"
	echo "== stores: index update over ${BENCH_STORE_STACKS:-300} stacks of 100 resources in $name" | tee -a "$report"
	line "measurement" "median s" "peak MiB" "ratio"
	"$stool" put "$url" .pulumi/meta.yaml < "$out/meta.yaml"
	i=1
	while [ $i -le "${BENCH_STORE_STACKS:-300}" ]; do
		"$out/gen" 100 $((2000 + i)) --checkpoint --stack "s$i" --project bench > "$out/one-stack.json"
		"$stool" put "$url" ".pulumi/stacks/bench/s$i.json" < "$out/one-stack.json"
		i=$((i + 1))
	done
	db=$out/store-index.sqlite
	ir=${BENCH_INDEX_RUNS:-3}
	set -- $($T "$ir" sh -c "rm -f '$db' '$db-wal' '$db-shm'; '$st' index update --backend '$url' --db '$db'"); full=$1
	line "index update, full build" "$1" "$(($2 / 1024))" "-"
	set -- $($T "$runs" "$st" index update --backend "$url" --db "$db")
	line "index update, nothing changed" "$1" "$(($2 / 1024))" "$(ratio "$1" "$full") x full"
	rm -f "$db" "$db-wal" "$db-shm" "$out/one-stack.json"
fi
# the test Azurite keeps blobs in memory until it stops (tests/servers/azurite.sh): the state's
# 185 MB and the stacks are not left there
[ -n "${ST_TEST_AZURE_ENDPOINT:-}" ] && az_container DELETE
rm -f "$out/meta.yaml" "$out/gcs.port" "$out/gcs.err" "$out/floor.sh"
[ -n "$gcs_pid" ] && kill "$gcs_pid" 2>/dev/null
:
