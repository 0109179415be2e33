#!/bin/sh
# The SQLite index's upkeep at scale (schema 4): --duplicate-ids from the counts kept as stacks
# are written, changed and removed (id_counts); the page check made only before an update's
# first write (a damaged index is found and rebuilt by an update that writes, and an update
# that writes nothing does not read every page); batches of stacks, each whole.
. "$(dirname "$0")/lib.sh"
if ! command -v sqlite3 >/dev/null 2>&1; then
	echo "t_index_counts.sh: sqlite3 is needed (sh quickstart check installs them)"; echo "t_index_counts.sh: 0 passed, 1 failed"; exit 1
fi
B=$T/b
DB=$T/ix.sqlite
mkdir -p "$B/.pulumi/stacks/p"
printf 'version: 1\n' >"$B/.pulumi/meta.yaml"
# mk STACK "TYPE ID [delete]"... : a checkpoint with an aws provider (ID prov-1) and resources
mk() {
	s=$1; shift
	{
		printf '{"version":3,"checkpoint":{"stack":"organization/p/%s","latest":{"manifest":{"time":"2024-01-01T00:00:00Z","magic":"","version":"v3.0.0"},"resources":[' "$s"
		printf '{"urn":"urn:pulumi:%s::p::pulumi:providers:aws::default","custom":true,"id":"prov-1","type":"pulumi:providers:aws"}' "$s"
		k=0
		for r in "$@"; do
			set -- $r
			k=$((k + 1))
			del=false; [ "${3:-}" = delete ] && del=true
			printf ',{"urn":"urn:pulumi:%s::p::%s::r%d","custom":true,"id":"%s","type":"%s","delete":%s,"provider":"urn:pulumi:%s::p::pulumi:providers:aws::default::prov-1"}' "$s" "$1" "$k" "$2" "$1" "$del" "$s"
		done
		printf ']}}}\n'
	} >"$B/.pulumi/stacks/p/$s.json"
}
dups() { "$STATETOOL" query --backend "$B" --db "$DB" --csv --duplicate-ids "$@"; }
# the counts hold exactly the live custom resources with an ID, none at zero
counts_ok() {
	run "$1: the counts agree with the rows" st query --db "$DB" --csv --sql "SELECT (SELECT coalesce(sum(n), 0) FROM id_counts) AS counted, (SELECT count(*) FROM resources WHERE custom <> 0 AND id IS NOT NULL AND id != '' AND \"delete\" = 0 AND type IS NOT NULL) AS rows, (SELECT count(*) FROM id_counts WHERE n <= 0) AS zero"
	check_rc 0; check_out "counted,rows,zero
$2,$2,0"
}

mk a "aws:s3/bucket:Bucket b-1" "aws:sqs/queue:Queue q-1"
mk b "aws:s3/bucket:Bucket b-1" "aws:sqs/queue:Queue q-2"
run "build" st index update --backend "$B" --db "$DB"
check_rc 0; check_out "$DB: 2 stacks: 2 indexed (6 resources), 0 unchanged, 0 removed, 0 failed"
run "one bucket in two stacks" dups
check_rc 0; check_out "stack,urn,type,id,import_id,parent,provider,flags
organization/p/a,urn:pulumi:a::p::aws:s3/bucket:Bucket::r1,aws:s3/bucket:Bucket,b-1,,,urn:pulumi:a::p::pulumi:providers:aws::default::prov-1,custom
organization/p/b,urn:pulumi:b::p::aws:s3/bucket:Bucket::r1,aws:s3/bucket:Bucket,b-1,,,urn:pulumi:b::p::pulumi:providers:aws::default::prov-1,custom"
run "with the providers" sh -c "'$STATETOOL' query --backend '$B' --db '$DB' --csv --duplicate-ids --include-providers | cut -d, -f1,4"
check_rc 0; check_out "stack,id
organization/p/a,b-1
organization/p/b,b-1
organization/p/a,prov-1
organization/p/b,prov-1"
counts_ok "built" 6

# b's bucket now another: counted down, no duplicate left
mk b "aws:s3/bucket:Bucket b-2" "aws:sqs/queue:Queue q-2"
run "b changed" st index update --backend "$B" --db "$DB"
check_out "$DB: 2 stacks: 1 indexed (3 resources), 1 unchanged, 0 removed, 0 failed"
run "no duplicate after a change" dups
check_rc 0; check_out_empty
counts_ok "changed" 6
# a resource pending deletion is not counted; the same ID twice in one stack is
mk c "aws:s3/bucket:Bucket b-2 delete" "aws:sqs/queue:Queue q-9" "aws:sqs/queue:Queue q-9"
run "c added" st index update --backend "$B" --db "$DB"
check_out "$DB: 3 stacks: 1 indexed (4 resources), 2 unchanged, 0 removed, 0 failed"
run "twice in one stack, not the deleted one" sh -c "'$STATETOOL' query --backend '$B' --db '$DB' --csv --duplicate-ids | cut -d, -f1,2,4"
check_rc 0; check_out "stack,urn,id
organization/p/c,urn:pulumi:c::p::aws:sqs/queue:Queue::r2,q-9
organization/p/c,urn:pulumi:c::p::aws:sqs/queue:Queue::r3,q-9"
counts_ok "c added" 9
# a stack gone: its counts go with it
rm "$B/.pulumi/stacks/p/c.json"
run "c removed" st index update --backend "$B" --db "$DB"
check_out "$DB: 2 stacks: 0 indexed (0 resources), 2 unchanged, 1 removed, 0 failed"
run "no duplicate after a removal" dups
check_rc 0; check_out_empty
counts_ok "c removed" 6
run "the counts table keeps nothing of c" st query --db "$DB" --csv --sql "SELECT type, id, n FROM id_counts ORDER BY type, id"
check_out "type,id,n
aws:s3/bucket:Bucket,b-1,1
aws:s3/bucket:Bucket,b-2,1
aws:sqs/queue:Queue,q-1,1
aws:sqs/queue:Queue,q-2,1
pulumi:providers:aws,prov-1,2"
# a stack that cannot be read: its rows and its counts go
printf '{"version":3,"checkpoint":' >"$B/.pulumi/stacks/p/b.json"
run "b unreadable" st index update --backend "$B" --db "$DB"
check_rc 1; check_out "$DB: 2 stacks: 0 indexed (0 resources), 1 unchanged, 0 removed, 1 failed"
counts_ok "b unreadable" 3

# a damaged page (the edges' table) that an update writing nothing never reads: no check, no
# rebuild; the next update that writes checks every page first, and rebuilds
mk b "aws:s3/bucket:Bucket b-1" "aws:sqs/queue:Queue q-2"
run "b readable again" st index update --backend "$B" --db "$DB"
check_rc 0; check_out "$DB: 2 stacks: 1 indexed (3 resources), 1 unchanged, 0 removed, 0 failed"
root=$(sqlite3 "$DB" "SELECT rootpage FROM sqlite_master WHERE name = 'edge_rows'")
psize=$(sqlite3 "$DB" "PRAGMA page_size")
[ -e "$DB-wal" ] && { echo "t_index_counts.sh: the index was not checkpointed"; }
printf '\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377' | dd of="$DB" bs=1 seek=$(( (root - 1) * psize )) conv=notrunc 2>/dev/null
run "the index is damaged" sqlite3 "$DB" "PRAGMA quick_check"
if grep -qx ok "$T/out"; then bad "quick_check passes"; else ok; fi
run "nothing changed: nothing read, nothing rebuilt" st index update --backend "$B" --db "$DB"
check_rc 0; check_out "$DB: 2 stacks: 0 indexed (0 resources), 2 unchanged, 0 removed, 0 failed"; check_err_empty
check_absent "$DB.corrupt"
mk a "aws:s3/bucket:Bucket b-1" "aws:sqs/queue:Queue q-1" "aws:sqs/queue:Queue q-3"
run "a changed: checked, rebuilt, everything indexed again" st index update --backend "$B" --db "$DB"
check_rc 0; check_out "$DB: 2 stacks: 2 indexed (7 resources), 0 unchanged, 0 removed, 0 failed"
check_err "statetool: warning: the index '$DB' was damaged: moved aside to '$DB.corrupt' and rebuilt"
run "the rebuilt index answers" dups
check_rc 0; check_out "stack,urn,type,id,import_id,parent,provider,flags
organization/p/a,urn:pulumi:a::p::aws:s3/bucket:Bucket::r1,aws:s3/bucket:Bucket,b-1,,,urn:pulumi:a::p::pulumi:providers:aws::default::prov-1,custom
organization/p/b,urn:pulumi:b::p::aws:s3/bucket:Bucket::r1,aws:s3/bucket:Bucket,b-1,,,urn:pulumi:b::p::pulumi:providers:aws::default::prov-1,custom"
counts_ok "rebuilt" 7
run "rebuilt: quick_check" sqlite3 "$DB" "PRAGMA quick_check"
check_out "ok"

# batches: 450 stacks (three batch transactions) indexed whole, each with its rows
i=0
while [ $i -lt 450 ]; do
	i=$((i + 1))
	mk "m$i" "aws:s3/bucket:Bucket mb-$i" "aws:sqs/queue:Queue shared"
done
run "450 stacks more" st index update --backend "$B" --db "$DB"
check_rc 0; check_out "$DB: 452 stacks: 450 indexed (1350 resources), 2 unchanged, 0 removed, 0 failed"
run "every stack whole" st query --db "$DB" --csv --sql "SELECT count(*) AS stacks, sum(s.resources) AS declared, (SELECT count(*) FROM resources) AS rows FROM stacks s"
check_out "stacks,declared,rows
452,1357,1357"
run "one queue ID in 450 stacks" sh -c "'$STATETOOL' query --backend '$B' --db '$DB' --csv --duplicate-ids | tail -n +2 | cut -d, -f4 | sort | uniq -c | sed 's/^ *//'"
check_out "2 b-1
450 shared"
counts_ok "450 more" 1357
finish
