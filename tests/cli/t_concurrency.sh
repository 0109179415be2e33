#!/bin/sh
# Two processes mutate the same state file at once, 200 times each (protect/unprotect of two
# resources, one per process). Every operation must either apply or be refused for the lock;
# the final state must hold each process's last applied operation (no update lost) and validate.
# The same for a stack of a DIY backend, under Pulumi's lock.
. "$(dirname "$0")/lib.sh"
N=${CONCURRENCY_OPS:-200}
worker() { # STATE-ARGS RESOURCE LOG
	i=1
	while [ $i -le $N ]; do
		if [ $((i % 2)) -eq 1 ]; then op=protect; else op=unprotect; fi
		if "$STATETOOL" $op $1 "$2" >/dev/null 2>"$3.err.$i"; then
			echo "$i $op applied" >> "$3"
		elif grep -q "locked" "$3.err.$i"; then
			echo "$i $op locked" >> "$3"
		else
			echo "$i $op FAILED: $(cat "$3.err.$i")" >> "$3"
		fi
		rm -f "$3.err.$i"
		i=$((i + 1))
	done
}
protected() { # STATE-FILE NAME -> true/false
	jq -r --arg n "$2" '[(.deployment // .checkpoint.latest).resources[] | select(.urn | endswith("::" + $n)) | select(.delete != true) | (.protect // false)][0]' "$1"
}
expect() { # LOG -> true/false: the last applied operation
	last=$(grep " applied$" "$1" | tail -1 | cut -d' ' -f2)
	if [ "$last" = protect ]; then echo true; else echo false; fi
}
round() { # NAME STATE-FILE STATE-ARGS
	name=$1; file=$2; args=$3
	rm -f "$T/a.log" "$T/b.log"
	worker "$args" logs "$T/a.log" &
	pa=$!
	worker "$args" audit "$T/b.log" &
	pb=$!
	wait $pa; wait $pb
	applied=$(cat "$T/a.log" "$T/b.log" | grep -c " applied$")
	locked=$(cat "$T/a.log" "$T/b.log" | grep -c " locked$")
	failedops=$(cat "$T/a.log" "$T/b.log" | grep -c " FAILED")
	echo "t_concurrency: $name: $((2 * N)) operations: $applied applied, $locked refused for the lock, $failedops failed otherwise"
	current="$name: every operation applied or was refused for the lock"
	if [ "$failedops" -eq 0 ] && [ $((applied + locked)) -eq $((2 * N)) ] && [ "$applied" -gt 0 ]; then ok; else bad "$(grep FAILED "$T/a.log" "$T/b.log" | head -3)"; fi
	current="$name: no update lost (logs)"
	got=$(protected "$file" logs); want=$(expect "$T/a.log")
	if [ "$got" = "$want" ]; then ok; else bad "logs protect=$got, the last applied operation says $want"; fi
	current="$name: no update lost (audit)"
	got=$(protected "$file" audit); want=$(expect "$T/b.log")
	if [ "$got" = "$want" ]; then ok; else bad "audit protect=$got, the last applied operation says $want"; fi
	run "$name: final state valid" st validate -q "$file"
	check_rc 0
}

S=$T/state.json
cp "$FIXTURES/edit/base.json" "$S"
round "plain file" "$S" "$S"
check_absent "$S.lock"

B=$T/backend
mkdir -p "$B/.pulumi/stacks/shop"
printf 'version: 1\n' > "$B/.pulumi/meta.yaml"
st convert "$FIXTURES/edit/base.json" --envelope checkpoint --checkpoint-stack organization/shop/dev -o "$B/.pulumi/stacks/shop/dev.json" >/dev/null
round "backend stack" "$B/.pulumi/stacks/shop/dev.json" "--backend $B --stack shop/dev"
current="backend stack: no lock left behind"
if [ -z "$(find "$B/.pulumi/locks" -type f 2>/dev/null)" ]; then ok; else bad "$(find "$B/.pulumi/locks" -type f)"; fi
finish
