#!/bin/sh
# S3 for the tests: a one-node Ceph cluster with radosgw (Debian 12's ceph-mon, ceph-osd and
# radosgw packages, Ceph pacific 16.2), all on 127.0.0.1, all in "$ST_SERVERS_DIR/radosgw".
#
#   sh tests/servers/radosgw.sh start | stop | status      (usually through tests/servers/ctl)
#
# What runs:
#   ceph-mon  mon.a, msgr2 on 127.0.0.1:$ST_CEPH_MON_PORT (default 24731); no cephx
#             (auth none): radosgw's S3 signatures are what the tests exercise, not Ceph's own
#   ceph-osd  osd.0 with `osd objectstore = memstore`: objects live in the OSD's memory (2 GiB
#             at most) and are gone when it stops; it binds ports in 24740-24759
#   radosgw   beast frontend on 127.0.0.1:$ST_S3_PORT (default 24730); path-style addressing
#             (no `rgw dns name`); SigV4 and V2 signatures checked against the user below
# No ceph-mgr (nothing here needs one; `ceph -s` says HEALTH_WARN "no active mgr", which does not
# block IO). Pools have size 1 / min_size 1; the zonegroup's api_name is us-east-1, so a
# CreateBucket with LocationConstraint us-east-1 (or none) is accepted.
# When a default port is taken, the next free one of +100, +200, ... is used (see common.sh).
#
# S3 user (uid statetool), written to radosgw.env:
#   ST_TEST_S3_ENDPOINT=http://127.0.0.1:24730  ST_TEST_S3_REGION=us-east-1
#   ST_TEST_S3_ACCESS_KEY=STATETOOLTESTKEY0001
#   ST_TEST_S3_SECRET_KEY=statetoolTestSecretKey/0123456789+abcdef
#
# Takes about 10-15 s from nothing (the OSD coming up and radosgw creating its pools).
# Logs: mon.a.log, osd.0.log, client.rgw.log (+ *.out for what the daemons print before they
# detach, and setup.log for the ceph/radosgw-admin commands) in the folder above.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
exec 9>&- # the lock tests/servers/ctl holds must not be inherited by the daemons

d=$ST_SERVERS_DIR/radosgw
conf=$d/ceph.conf
ACCESS_KEY=STATETOOLTESTKEY0001
SECRET_KEY='statetoolTestSecretKey/0123456789+abcdef'
REGION=us-east-1
export CEPH_CONF=$conf # so that no /etc/ceph/ceph.conf is ever read

ceph_cmd() { timeout 60 ceph -c "$conf" --connect-timeout 30 "$@"; }
rgw_admin() { timeout 60 radosgw-admin -c "$conf" "$@"; }

# status: true when all three daemons run and radosgw answers; otherwise says why (on stderr)
status() {
	[ -f "$d/env" ] || return 1
	for p in mon.a osd.0 client.rgw; do
		ours "$d/$p.pid" "$conf" || { say "radosgw: $p is not running"; return 1; }
	done
	port=$(sed -n 's/^export ST_TEST_S3_ENDPOINT=.*:\([0-9]*\)$/\1/p' "$d/env")
	code=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "http://127.0.0.1:$port/")
	[ "$code" = 200 ] || { say "radosgw: GET http://127.0.0.1:$port/ answers $code"; return 1; }
}

# what start waits for: an anonymous ListBuckets answered with 200, or radosgw gone
rgw_answers() { [ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$url")" = 200 ]; }
answers_or_died() { ! ours "$d/client.rgw.pid" "$conf" || rgw_answers; }

stop() {
	[ -d "$d" ] || return 0
	stop_pidfile "$d/client.rgw.pid" "$conf"
	# KILL, not TERM: a memstore OSD would first write all its objects to disk, for nothing
	stop_pidfile "$d/osd.0.pid" "$conf" KILL
	stop_pidfile "$d/mon.a.pid" "$conf"
	rm -rf "$d"
}

start() {
	if status; then
		say "radosgw: already running ($(sed -n 's/^export ST_TEST_S3_ENDPOINT=//p' "$d/env"))"
		return 0
	fi
	stop # whatever is left of an earlier one
	for c in ceph ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph-authtool curl; do
		command -v $c >/dev/null || die "radosgw: '$c' is missing (apt-get install ceph-mon ceph-osd radosgw curl)"
	done
	s3_port=$(pick_port ST_S3_PORT 24730) || exit 1
	mon_port=$(pick_port ST_CEPH_MON_PORT $((s3_port + 1))) || exit 1
	osd_min=$((s3_port + 10))
	osd_max=$((s3_port + 29))
	mkdir -p "$d/rgw" || exit 1
	fsid=$(cat /proc/sys/kernel/random/uuid)
	cat >"$conf" <<EOF
# written by tests/servers/radosgw.sh: a throwaway one-node cluster for statetool's tests
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$mon_port
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
ms bind port min = $osd_min
ms bind port max = $osd_max
auth cluster required = none
auth service required = none
auth client required = none
# with auth none only crc mode is possible; clients default to "secure" first and would fail
ms mon client mode = crc secure
run dir = $d
admin socket = $d/\$name.asok
log file = $d/\$name.log
pid file = $d/\$name.pid
mon data = $d/\$name
osd data = $d/\$name
keyring = $d/keyring
mon data avail warn = 1
mon data avail crit = 1
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim = false
mon warn on insecure global id reclaim allowed = false
mon max pg per osd = 1000
osd objectstore = memstore
memstore device bytes = 2147483648
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
osd op num shards = 2
osd op num threads per shard = 1
debug ms = 0

[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$s3_port
rgw data = $d/rgw
rgw thread pool size = 64
rgw init timeout = 60
debug rgw = 1
EOF
	log=$d/setup.log
	{
		monmaptool --create --addv a "[v2:127.0.0.1:$mon_port]" --fsid "$fsid" "$d/monmap" &&
			ceph-authtool --create-keyring "$d/keyring" --gen-key -n mon. --cap mon 'allow *' &&
			ceph-mon -c "$conf" --mkfs -i a --monmap "$d/monmap" &&
			ceph-mon -c "$conf" -i a
	} >>"$log" 2>&1 </dev/null || fail_log radosgw "$log" "$d/mon.a.log"

	uuid=$(cat /proc/sys/kernel/random/uuid)
	id=$(ceph_cmd osd new "$uuid" 2>>"$log") && [ "$id" = 0 ] || fail_log radosgw "$log" "$d/mon.a.log"
	mkdir -p "$d/osd.0"
	{
		ceph-osd -c "$conf" -i 0 --mkfs --osd-uuid "$uuid" &&
			ceph-osd -c "$conf" -i 0
	} >>"$log" 2>&1 </dev/null || fail_log radosgw "$log" "$d/osd.0.log"

	# radosgw-admin waits for the OSD (its pools must be writable); the zonegroup is set before
	# radosgw reads it
	{
		rgw_admin user create --uid=statetool --display-name="statetool tests" \
			--access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >/dev/null &&
			rgw_admin zonegroup modify --rgw-zonegroup=default --api-name="$REGION" >/dev/null
	} 2>>"$log" </dev/null || fail_log radosgw "$log" "$d/osd.0.log" "$d/mon.a.log"

	radosgw -c "$conf" -n client.rgw >"$d/client.rgw.out" 2>&1 </dev/null ||
		fail_log radosgw "$d/client.rgw.out" "$d/client.rgw.log"
	url=http://127.0.0.1:$s3_port/
	wait_for 10 ours "$d/client.rgw.pid" "$conf" # written by the detached radosgw
	wait_for 60 answers_or_died
	ours "$d/client.rgw.pid" "$conf" && rgw_answers ||
		fail_log radosgw "$d/client.rgw.out" "$d/client.rgw.log" "$d/osd.0.log"

	cat >"$d/env.tmp" <<EOF
# S3: Ceph radosgw (tests/servers/radosgw.sh); path-style, SigV4 (send x-amz-content-sha256)
export ST_TEST_S3_ENDPOINT=http://127.0.0.1:$s3_port
export ST_TEST_S3_ACCESS_KEY=$ACCESS_KEY
export ST_TEST_S3_SECRET_KEY='$SECRET_KEY'
export ST_TEST_S3_REGION=$REGION
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
