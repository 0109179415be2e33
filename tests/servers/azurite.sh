#!/bin/sh
# Azure Blob Storage for the tests: Azurite, Microsoft's storage emulator (the version pinned in
# tests/servers/azurite/package-lock.json, 3.33.0: the last whose dependencies all still run on
# Node.js 18, Debian 12's), blob service only, on the machine's `node`.
#
#   sh tests/servers/azurite.sh install                  npm ci into a cache (needs the npm
#                                                        registry; the only step that does)
#   sh tests/servers/azurite.sh start | stop | status    (usually through tests/servers/ctl)
#
# Installed by `npm ci --ignore-scripts` into $ST_AZURITE_HOME, default
# ${XDG_CACHE_HOME:-$HOME/.cache}/statetool/azurite-<first 12 hex of the lock file's sha256>,
# outside the source tree, shared by every worktree with the same lock file, reused until the
# lock file changes.
#
# Runs azurite-blob on 127.0.0.1:$ST_AZURE_PORT (default 24710) with --skipApiVersionCheck (any
# x-ms-version is accepted), its blobs and their metadata in memory (--inMemoryPersistence: lost
# when it stops, as the S3 server's memstore OSD's are; its on-disk extent store made a GET of a
# 185 MB blob 3x slower, 0.28-0.38 s against 0.10-0.11 s, issue 19's bench) and its request log
# (--debug) in "$ST_SERVERS_DIR/azurite".
# Not --loose: unsupported headers are refused, as Azure would. Shared Key and SAS signatures are
# checked: a request signed with another key gets 403 AuthorizationFailure. The well-known
# development account, written to azurite.env:
#   ST_TEST_AZURE_ENDPOINT=http://127.0.0.1:24710/devstoreaccount1   (path-style: account first)
#   ST_TEST_AZURE_ACCOUNT=devstoreaccount1
#   ST_TEST_AZURE_KEY=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==
#   ST_TEST_AZURE_CONNECTION_STRING=DefaultEndpointsProtocol=http;AccountName=...;AccountKey=...;BlobEndpoint=...
#
# Takes about 1-2 s to start. Logs: azurite.log (its output) and debug.log (every request).
# Memory: what the tests and bench/stores.sh leave (it deletes its container) stays until the
# server stops; Azurite refuses writes beyond half the machine's memory.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
exec 9>&- # the lock tests/servers/ctl holds must not be inherited by the server

d=$ST_SERVERS_DIR/azurite
ACCOUNT=devstoreaccount1
KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
lock=$here/azurite/package-lock.json
home=${ST_AZURITE_HOME:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/statetool/azurite-$(sha256sum "$lock" | cut -c1-12)}
main=$home/node_modules/azurite/dist/src/blob/main.js

install() {
	if [ -f "$main" ]; then
		say "azurite: installed in $home"
		return 0
	fi
	command -v npm >/dev/null || die "azurite: npm is missing (apt-get install nodejs npm)"
	# into a new folder first, renamed when complete: a half-done install is never used, and
	# two installs at once do not mix
	mkdir -p "$(dirname "$home")" || exit 1
	tmp=$(mktemp -d "$home.tmp.XXXXXX") || exit 1
	cp "$here/azurite/package.json" "$lock" "$tmp/" || exit 1
	say "azurite: npm ci into $home"
	# package-lock.json pins every package by its sha512 "integrity", which npm checks on every
	# tarball whatever the transport. Where TLS to the registry cannot be verified (a proxy that
	# intercepts TLS with a CA this machine lacks, as in a freshly bootstrapped chroot), the
	# install is retried without TLS verification: the integrity check still pins the bytes.
	if ! (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >npm.log 2>&1) &&
		! { grep -qi 'certificate' "$tmp/npm.log" &&
			say "azurite: the registry's TLS certificate cannot be verified here; retrying" \
			    "without TLS verification (package-lock.json's sha512 hashes still checked)" &&
			(cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error \
				--strict-ssl=false >npm.log 2>&1); }; then
		tail -n 30 "$tmp/npm.log" >&2
		rm -rf "$tmp"
		die "azurite: npm ci failed"
	fi
	if [ -f "$main" ]; then
		rm -rf "$tmp" # another install finished first
	else
		mv "$tmp" "$home" || exit 1
	fi
}

status() {
	[ -f "$d/env" ] || return 1
	ours "$d/azurite.pid" "$d/debug.log" || { say "azurite: not running"; return 1; }
	port=$(sed -n 's/^export ST_TEST_AZURE_PORT=//p' "$d/env")
	http_answers "http://127.0.0.1:$port/$ACCOUNT?comp=list" || { say "azurite: not answering on $port"; return 1; }
}

# answers_or_died: what start waits for
answers_or_died() { ! ours "$d/azurite.pid" "$d/debug.log" || http_answers "$url"; }

stop() {
	[ -d "$d" ] || return 0
	stop_pidfile "$d/azurite.pid" "$d/debug.log"
	rm -rf "$d"
}

start() {
	if status; then
		say "azurite: already running (port $(sed -n 's/^export ST_TEST_AZURE_PORT=//p' "$d/env"))"
		return 0
	fi
	stop
	command -v node >/dev/null || die "azurite: node is missing (apt-get install nodejs)"
	[ -f "$main" ] || die "azurite: not installed in $home; run: sh tests/servers/ctl install (needs the npm registry)"
	# twice at most: once (2026-11-24) it died at once with nothing in its log, in a CI run
	# started seconds after another had stopped its servers; the second try then shows why
	for try in 1 2; do
		port=$(pick_port ST_AZURE_PORT 24710) || exit 1
		mkdir -p "$d" || exit 1
		# setsid: it stays up when the caller's terminal or make is interrupted. In a script
		# (no job control) the background job is no process group leader, so setsid does not
		# fork and $! is node's pid. (No --location: Azurite refuses it beside
		# --inMemoryPersistence; the debug log's path, in $d, tells the process as ours.)
		setsid node "$main" --blobHost 127.0.0.1 --blobPort "$port" --inMemoryPersistence \
			--skipApiVersionCheck --debug "$d/debug.log" >"$d/azurite.log" 2>&1 </dev/null &
		echo $! >"$d/azurite.pid"
		url="http://127.0.0.1:$port/$ACCOUNT?comp=list"
		wait_for 30 answers_or_died
		ours "$d/azurite.pid" "$d/debug.log" && http_answers "$url" && break
		[ "$try" = 2 ] && fail_log azurite "$d/azurite.log" "$d/debug.log"
		say "azurite: did not answer on $port; once more"
		stop_pidfile "$d/azurite.pid" "$d/debug.log"
	done

	ep=http://127.0.0.1:$port/$ACCOUNT
	cat >"$d/env.tmp" <<EOF
# Azure Blob Storage: Azurite $(node -p "require('$home/node_modules/azurite/package.json').version" 2>/dev/null) (tests/servers/azurite.sh); Shared Key checked
export ST_TEST_AZURE_ENDPOINT=$ep
export ST_TEST_AZURE_ACCOUNT=$ACCOUNT
export ST_TEST_AZURE_KEY='$KEY'
export ST_TEST_AZURE_CONNECTION_STRING='DefaultEndpointsProtocol=http;AccountName=$ACCOUNT;AccountKey=$KEY;BlobEndpoint=$ep;'
export ST_TEST_AZURE_PORT=$port
EOF
	mv "$d/env.tmp" "$d/env"
}

case "${1:-}" in
install) install ;;
start) start ;;
stop) stop ;;
status) status ;;
*)
	echo "usage: $0 install | start | stop | status" >&2
	exit 2
	;;
esac
