#!/bin/sh
# statetool upgrade: a legacy DIY backend to the project layout (pulumi state upgrade), through
# the store calls only: on a directory, and on S3 (radosgw) when the test servers run. The moves
# (stack objects with their .bak, history, backups, tags), a stack without a project skipped
# and then given one, --dry-run writing nothing, the refusal while a stack is locked, a kill
# (SIGKILL through the crash hook) at each step and a rerun ending where an uninterrupted
# upgrade ends, and a stray .json beside a .json.gz.
. "$(dirname "$0")/lib.sh"
: "${STORETOOL:?set STORETOOL to tests/storetool}"
F=$FIXTURES/pulumi
put() { "$STORETOOL" put "$1" "$2"; }
keys() { "$STORETOOL" ls "$1" "${2:-}"; }
# dump URL: every key and its bytes' digest
dump() {
	for k in $(keys "$1" .pulumi/ | grep -v '^\.pulumi/locks/'); do
		printf '%s %s\n' "$k" "$("$STORETOOL" cat "$1" "$k" | sha256sum | cut -c1-16)"
	done
}

cp "$F/valid-checkpoint-v3-diy.json" "$T/dev.json"
sed 's/dev::proj/prod::web/g; s/organization\/proj\/dev/prod/' "$F/valid-checkpoint-v3-diy.json" | gzip -n >"$T/prod.json.gz"
printf '{"version":3,"checkpoint":{"stack":"empty","latest":{"manifest":{"time":"2024-01-02T03:04:05Z","magic":"3ff53efef69f38d19e364655131bbb113e416d3bf64bfb819065fa12acb29250","version":"v3.100.0"}}}}\n' >"$T/empty.json"
# seed URL: a legacy backend with three stacks, history, backups and tags
seed() {
	put "$1" .pulumi/stacks/dev.json <"$T/dev.json"
	put "$1" .pulumi/stacks/prod.json.gz <"$T/prod.json.gz"
	put "$1" .pulumi/stacks/empty.json <"$T/empty.json"
	printf '{"version":1,"tags":{"owner":"ops"}}\n' | put "$1" .pulumi/stacks/dev.pulumi-tags
	echo h | put "$1" .pulumi/history/dev/dev-1700000000000000000.history.json
	echo c | put "$1" .pulumi/history/dev/dev-1700000000000000000.checkpoint.json
	echo o | put "$1" .pulumi/history/dev/other-file.json
	echo b | put "$1" .pulumi/backups/dev/dev.1700000000000000000.json
}

DRY='move .pulumi/history/dev/dev-1700000000000000000.checkpoint.json -> .pulumi/history/proj/dev/dev-1700000000000000000.checkpoint.json
move .pulumi/history/dev/dev-1700000000000000000.history.json -> .pulumi/history/proj/dev/dev-1700000000000000000.history.json
move .pulumi/backups/dev/dev.1700000000000000000.json -> .pulumi/backups/proj/dev/dev.1700000000000000000.json
move .pulumi/stacks/dev.pulumi-tags -> .pulumi/stacks/proj/dev.pulumi-tags
move .pulumi/stacks/dev.json -> .pulumi/stacks/proj/dev.json (the old object kept as .pulumi/stacks/dev.json.bak)
move .pulumi/stacks/prod.json.gz -> .pulumi/stacks/web/prod.json.gz (the old object kept as .pulumi/stacks/prod.json.gz.bak)
write .pulumi/meta.yaml (version: 1)
dry run: 2 stack(s) to upgrade, 1 skipped; nothing written'
AFTER='.pulumi/backups/proj/dev/dev.1700000000000000000.json
.pulumi/history/dev/other-file.json
.pulumi/history/proj/dev/dev-1700000000000000000.checkpoint.json
.pulumi/history/proj/dev/dev-1700000000000000000.history.json
.pulumi/meta.yaml
.pulumi/stacks/dev.json.bak
.pulumi/stacks/empty.json
.pulumi/stacks/prod.json.gz.bak
.pulumi/stacks/proj/dev.json
.pulumi/stacks/proj/dev.pulumi-tags
.pulumi/stacks/web/prod.json.gz'
SKIP='statetool: warning: Skipping stack "empty": no project name found (give it one with --project empty=NAME)'

# scenario NAME URL-MAKER: the whole round on fresh backends made by the maker ($1 = round)
scenario() {
	sc=$1
	mk=$2
	B=$($mk plain)
	seed "$B"
	dump "$B" >"$T/before"
	run "$sc: dry run" st upgrade --backend "$B" --dry-run
	check_rc 0; check_out "$DRY"; check_err "$SKIP"
	run "$sc: dry run wrote nothing" dump "$B"
	check_same "$T/before" "$T/out"
	run "$sc: upgrade" st upgrade --backend "$B"
	check_rc 0; check_out "Upgraded 2 stack(s) to project mode"; check_err "$SKIP"
	run "$sc: the layout" keys "$B" .pulumi/
	check_out "$AFTER"
	run "$sc: the moved object is the same bytes" "$STORETOOL" cat "$B" .pulumi/stacks/web/prod.json.gz
	check_same "$T/prod.json.gz" "$T/out"
	run "$sc: the old object is its .bak" "$STORETOOL" cat "$B" .pulumi/stacks/dev.json.bak
	check_same "$T/dev.json" "$T/out"
	run "$sc: meta.yaml" "$STORETOOL" cat "$B" .pulumi/meta.yaml
	check_out "version: 1"
	run "$sc: the stacks, now in their projects" st stacks --backend "$B" --json
	check_rc 0; check_out_has '"layout": "project"'; check_out_has '"stack": "organization/web/prod"'
	run "$sc: the skipped stack, given a project" st upgrade --backend "$B" --project misc
	check_rc 0; check_out "Upgraded 1 stack(s) to project mode"; check_err_empty
	run "$sc: it is in its project" keys "$B" .pulumi/stacks/misc/
	check_out ".pulumi/stacks/misc/empty.json"
	run "$sc: again: nothing to do" st upgrade --backend "$B"
	check_rc 0; check_out "no change: the backend is in the project layout already"; check_err_empty
	run "$sc: valid" st validate --backend "$B"
	check_rc 0

	# a lock refuses before anything changes
	B=$($mk locked)
	seed "$B"
	printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"2024-05-01T10:00:00Z"}' |
		put "$B" .pulumi/locks/prod/6a1f0e2c-0000-4000-8000-000000000001.json
	dump "$B" >"$T/before"
	run "$sc: a locked stack refuses the upgrade" st upgrade --backend "$B"
	check_rc 1; check_err_has "the stack is currently locked by 1 lock(s)"
	check_err_has "created by alice@ci-runner (pid 4242) at 2024-05-01T10:00:00Z"
	check_err_has "statetool unlock --backend"
	run "$sc: nothing changed" dump "$B"
	check_same "$T/before" "$T/out"

	# the uninterrupted result, then a kill at each step and a rerun
	B=$($mk want)
	seed "$B"
	st upgrade --backend "$B" --project misc >/dev/null 2>&1
	dump "$B" >"$T/want"
	for step in 1 2 3 4 5; do
		B=$($mk "crash$step")
		seed "$B"
		run "$sc: killed at upgrade:$step" env STATETOOL_CRASH_AT=upgrade:$step "$STATETOOL" upgrade --backend "$B" --project misc
		check_rc 137
		run "$sc: after upgrade:$step, the rerun" st upgrade --backend "$B" --project misc
		if [ "$rc" = 1 ]; then
			check_err_has "[stale: that process is no longer running]"
			hint=$(sed -n 's/.*(or `\(statetool unlock [^`]*\)`).*/\1/p' "$T/err" | head -n 1)
			current="$sc: after upgrade:$step, the hint names the stack"
			case "$hint" in *"--stack dev") ok ;; *) bad "hint: $hint" ;; esac
			run "$sc: after upgrade:$step, unlock" st unlock --backend "$B" --stack dev
			check_rc 0
			run "$sc: after upgrade:$step and unlock, the rerun" st upgrade --backend "$B" --project misc
		fi
		check_rc 0
		run "$sc: after upgrade:$step, as if never killed" dump "$B"
		check_same "$T/want" "$T/out"
	done
}

filestore() { mkdir -p "$T/file/$1"; printf 'file://%s/file/%s' "$T" "$1"; }
scenario file filestore

# a stray .json beside the newer .json.gz: the stack is the newer, the other kept as its .bak
B=$(filestore stray)
seed "$B"
cp "$T/dev.json" "$T/file/stray/.pulumi/stacks/prod.json"
touch -d '2020-01-01' "$T/file/stray/.pulumi/stacks/prod.json"
run "stray variant" st upgrade --backend "$B" --project misc
check_rc 0; check_out "Upgraded 3 stack(s) to project mode"
run "stray variant: kept as its .bak" keys "$B" .pulumi/stacks/
check_out ".pulumi/stacks/dev.json.bak
.pulumi/stacks/empty.json.bak
.pulumi/stacks/misc/empty.json
.pulumi/stacks/prod.json.bak
.pulumi/stacks/prod.json.gz.bak
.pulumi/stacks/proj/dev.json
.pulumi/stacks/proj/dev.pulumi-tags
.pulumi/stacks/web/prod.json.gz"

# a stack that cannot be read stops everything before a write (Pulumi: "guess stack ... project")
B=$(filestore broken)
seed "$B"
printf '{"version":3,' | put "$B" .pulumi/stacks/bad.json
dump "$B" >"$T/before"
run "unreadable stack" st upgrade --backend "$B"
check_rc 1; check_err_has "statetool: error: guess stack bad project: read checkpoint: "
run "unreadable stack: nothing changed" dump "$B"
check_same "$T/before" "$T/out"
run "bad --project" st upgrade --backend "$B" --project 'a/b'
check_rc 2; check_err_has "invalid project name 'a/b'"

# progress on standard error when it is a terminal (script(1) gives the command one); in a
# pipe, none (the runs above)
if command -v script > /dev/null 2>&1; then
	G=$T/tty
	mkdir -p "$G/.pulumi/stacks"
	cp "$F/valid-checkpoint-v3-diy.json" "$G/.pulumi/stacks/dev.json"
	cp "$F/valid-checkpoint-v3-diy.json" "$G/.pulumi/stacks/dev2.json"
	run "progress on a terminal" script -qec "'$STATETOOL' upgrade --backend '$G'" /dev/null
	check_rc 0
	if printf '\rupgrading: 1/2 stacks\rupgrading: 2/2 stacks\r\nUpgraded 2 stack(s) to project mode\r\n' | cmp -s - "$T/out"; then ok; else bad "not the progress, then the summary"; fi
fi

# on S3, when the test server runs
envfile=${ST_SERVERS_DIR:-/tmp/statetool-servers-$(id -u)}/env
# shellcheck source=/dev/null
[ -r "$envfile" ] && . "$envfile"
if [ -n "${ST_TEST_S3_ENDPOINT:-}" ]; then
	export HOME=$T
	unset AWS_SESSION_TOKEN AWS_PROFILE AWS_DEFAULT_PROFILE AWS_REGION AWS_DEFAULT_REGION \
		AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE \
		http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
	export AWS_ACCESS_KEY_ID="$ST_TEST_S3_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$ST_TEST_S3_SECRET_KEY"
	export no_proxy=127.0.0.1,localhost
	EP=$ST_TEST_S3_ENDPOINT
	bucket=statetool-upgrade-$(date +%s)-$$
	h=$(sha256sum </dev/null | cut -d' ' -f1)
	code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "x-amz-content-sha256: $h" \
		--aws-sigv4 "aws:amz:${ST_TEST_S3_REGION:-us-east-1}:s3" \
		--user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$EP/$bucket")
	current="s3: create the bucket"
	if [ "$code" = 200 ]; then ok; else bad "status $code"; fi
	s3store() { printf 's3://%s/%s?endpoint=%s&use_path_style=true&region=%s' "$bucket" "$1" "$EP" "${ST_TEST_S3_REGION:-us-east-1}"; }
	scenario s3 s3store
else
	skip_or_fail "s3 test server" "the s3 part: no S3 test server in $envfile"
fi
finish
