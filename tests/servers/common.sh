# Shared helpers for the test-server scripts in tests/servers/ (sourced, not run; POSIX sh).
#
# Every server lives in its own folder under the state directory
#   ST_SERVERS_DIR   default /tmp/statetool-servers-$UID
# with its data, its logs and its pid files there, and writes "$ST_SERVERS_DIR/NAME.env"
# (sourceable `export VAR=value` lines) once it answers. Nothing is written to the source tree.

ST_SERVERS_DIR=${ST_SERVERS_DIR:-/tmp/statetool-servers-$(id -u)}
case $ST_SERVERS_DIR in
/*) ;;
*) ST_SERVERS_DIR=$(pwd)/$ST_SERVERS_DIR ;;
esac
export ST_SERVERS_DIR

say() { echo "servers: $*" >&2; }
die() { say "$*"; exit 1; }

# Milliseconds since the epoch-ish (for timings; `date +%s%N` is GNU, which every Debian has).
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# listening PORT: true when some TCP socket (IPv4 or IPv6, any address) listens on PORT.
# Read from /proc so that neither ss nor netstat is needed.
listening() {
	hex=$(printf '%04X' "$1")
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }'
}

# pick_port VAR DEFAULT [SPAN]: print a port for a server. When the variable named VAR is set
# in the environment, that port and no other (it must be free). Otherwise DEFAULT, or when it
# (or any of the SPAN-1 ports after it) is taken, DEFAULT+100, +200, ... (ten tries), so that
# two state directories (two worktrees, a fresh-ci chroot beside a developer) can coexist.
pick_port() {
	eval "want=\${$1:-}"
	span=${3:-1}
	if [ -n "$want" ]; then
		range_free "$want" "$span" || { say "port $want ($1) is already in use"; return 1; }
		echo "$want"
		return 0
	fi
	p=$2
	for _try in 1 2 3 4 5 6 7 8 9 10; do
		if range_free "$p" "$span"; then
			echo "$p"
			return 0
		fi
		p=$((p + 100))
	done
	say "no free port found for $1 (tried $2, $(($2 + 100)), ... $((p - 100)))"
	return 1
}
range_free() {
	i=0
	while [ "$i" -lt "$2" ]; do
		listening $(($1 + i)) && return 1
		i=$((i + 1))
	done
	return 0
}

# ours PIDFILE PATTERN: true when the pid in PIDFILE is alive and its command line contains
# PATTERN (the server's folder), so a recycled pid is never taken for one of ours.
ours() {
	[ -s "$1" ] || return 1
	pid=$(head -n 1 "$1" 2>/dev/null | tr -cd 0-9)
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$2"
}

# stop_pidfile PIDFILE PATTERN [SIGNAL]: end that process (SIGNAL, default TERM; KILL after
# 10 s) and wait until it is gone.
stop_pidfile() {
	ours "$1" "$2" || return 0
	pid=$(head -n 1 "$1" 2>/dev/null | tr -cd 0-9)
	kill "-${3:-TERM}" "$pid" 2>/dev/null
	i=0
	while [ -d "/proc/$pid" ] && ours "$1" "$2"; do
		i=$((i + 1))
		[ "$i" -eq 100 ] && kill -KILL "$pid" 2>/dev/null
		[ "$i" -gt 200 ] && { say "pid $pid does not go away"; return 1; }
		sleep 0.1
	done
	return 0
}

# wait_for SECONDS COMMAND...: run COMMAND every 0.2 s until it succeeds; false on time-out.
wait_for() {
	_limit=$(($1 * 5))
	shift
	_n=0
	until "$@" >/dev/null 2>&1; do
		_n=$((_n + 1))
		[ "$_n" -ge "$_limit" ] && return 1
		sleep 0.2
	done
	return 0
}

# http_answers URL: true when something answers HTTP there (any status code).
http_answers() {
	code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$1" 2>/dev/null) || true
	[ -n "$code" ] && [ "$code" != 000 ]
}

# fail_log NAME FILE...: print the last lines of the logs of a server that did not start, and
# fail.
fail_log() {
	name=$1
	shift
	for f in "$@"; do
		[ -s "$f" ] || continue
		say "$name: last lines of $f:"
		tail -n 25 "$f" | sed 's/^/    /' >&2
	done
	die "$name: did not start"
}

# run_as USER COMMAND...: as root, run COMMAND as USER; as anyone else, run it as oneself.
run_as() {
	u=$1
	shift
	if [ "$(id -u)" = 0 ]; then
		runuser -u "$u" -- "$@"
	else
		"$@"
	fi
}
