#!/bin/sh
# PostgreSQL for the tests: a throwaway PostgreSQL 15 cluster (Debian 12's postgresql package,
# binaries in /usr/lib/postgresql/15/bin, or $ST_PG_BINDIR) made by initdb in
# "$ST_SERVERS_DIR/postgres".
#
#   sh tests/servers/postgres.sh start | stop | status      (usually through tests/servers/ctl)
#
# Listens on 127.0.0.1:$ST_PG_PORT (default 24720) and on a Unix socket in that folder. As root
# it runs as the `postgres` OS user (postgres refuses to run as root) and the folder belongs to
# that user; as anyone else it runs as oneself. Durability is off (fsync, full_page_writes):
# nothing here outlives `stop`.
#
# Authentication: TCP connections need a password (scram-sha-256), so a wrong one is refused;
# only the superuser `postgres`, over the Unix socket, is trusted (for setting up). The tests'
# role and database, written to postgres.env:
#   ST_TEST_PG_URL=postgres://statetool:statetool-test-password@127.0.0.1:24720/statetool
#   ST_TEST_PGHOST=127.0.0.1 ST_TEST_PGPORT=24720 ST_TEST_PGUSER=statetool
#   ST_TEST_PGPASSWORD=statetool-test-password ST_TEST_PGDATABASE=statetool
# (not the real PG* names: the tests set those themselves). `statetool` owns its database and
# is no superuser.
#
# Takes about 2-3 s (initdb, start, create the role and database).
# Logs: postgres.log (the server's) and setup.log (initdb and the setup SQL) in that folder.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
exec 9>&- # the lock tests/servers/ctl holds must not be inherited by the server
cd / # initdb, run as `postgres`, fails in a folder that user cannot read (such as /root)

d=$ST_SERVERS_DIR/postgres
bin=${ST_PG_BINDIR:-/usr/lib/postgresql/15/bin}
PASSWORD=statetool-test-password
owner=postgres
[ "$(id -u)" = 0 ] || owner=$(id -un)

status() {
	[ -f "$d/env" ] || return 1
	ours "$d/data/postmaster.pid" "$d/data" || { say "postgres: not running"; return 1; }
	port=$(sed -n 's/^export ST_TEST_PGPORT=//p' "$d/env")
	"$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -t 5 || { say "postgres: not answering on $port"; return 1; }
}

stop() {
	[ -d "$d" ] || return 0
	# SIGQUIT to the postmaster: the "immediate" shutdown (there is nothing to keep)
	stop_pidfile "$d/data/postmaster.pid" "$d/data" QUIT
	rm -rf "$d"
}

start() {
	if status; then
		say "postgres: already running (port $(sed -n 's/^export ST_TEST_PGPORT=//p' "$d/env"))"
		return 0
	fi
	stop
	[ -x "$bin/postgres" ] || die "postgres: no $bin/postgres (apt-get install postgresql)"
	port=$(pick_port ST_PG_PORT 24720) || exit 1
	mkdir -p "$d" || exit 1
	if [ "$(id -u)" = 0 ]; then
		chown "$owner:" "$d" || exit 1
		chmod go+x "$ST_SERVERS_DIR" # `postgres` must reach its folder
	fi
	chmod 700 "$d"
	log=$d/setup.log
	: >"$log"
	[ "$(id -u)" = 0 ] && chown "$owner:" "$log"
	{
		# -N: no fsync of the new files (a throwaway cluster); the superuser is always `postgres`
		run_as "$owner" "$bin/initdb" -N -U postgres -E UTF8 --locale=C -D "$d/data" &&
			run_as "$owner" sh -c "cat >>'$d/data/postgresql.conf'" <<EOF &&
# tests/servers/postgres.sh
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$d'
max_connections = 50
shared_buffers = 32MB
fsync = off
synchronous_commit = off
full_page_writes = off
password_encryption = scram-sha-256
log_line_prefix = '%m [%p] %q%u@%d '
EOF
			run_as "$owner" sh -c "cat >'$d/data/pg_hba.conf'" <<EOF &&
# tests/servers/postgres.sh: passwords everywhere but for the superuser on the Unix socket
local all postgres trust
local all all scram-sha-256
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
EOF
			# setsid: the server stays up when the caller's terminal or make is interrupted
			run_as "$owner" setsid "$bin/pg_ctl" -D "$d/data" -l "$d/postgres.log" -w -t 30 -s start &&
			run_as "$owner" "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$d" -p "$port" -U postgres -d postgres <<EOF
CREATE ROLE statetool LOGIN PASSWORD '$PASSWORD';
CREATE DATABASE statetool OWNER statetool;
EOF
	} >>"$log" 2>&1 </dev/null || fail_log postgres "$log" "$d/postgres.log"
	"$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -t 10 || fail_log postgres "$d/postgres.log"

	cat >"$d/env.tmp" <<EOF
# PostgreSQL 15 (tests/servers/postgres.sh); a wrong password is refused
export ST_TEST_PG_URL=postgres://statetool:$PASSWORD@127.0.0.1:$port/statetool
export ST_TEST_PGHOST=127.0.0.1
export ST_TEST_PGPORT=$port
export ST_TEST_PGUSER=statetool
export ST_TEST_PGPASSWORD=$PASSWORD
export ST_TEST_PGDATABASE=statetool
EOF
	mv "$d/env.tmp" "$d/env"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
*)
	echo "usage: $0 start | stop | status" >&2
	exit 2
	;;
esac
