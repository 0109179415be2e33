#!/bin/sh
# Byte-faithful round trips of the files Pulumi wrote, envelopes, gzip, migration.
. "$(dirname "$0")/lib.sh"
P=$FIXTURES/pulumi

for f in checkpoint-v0.json checkpoint-v3.json checkpoint-secrets.json crawler.json todo.json; do
	run "round trip $f" st convert "$P/$f" -o "$T/rt.json"
	check_rc 0; check_same "$P/$f" "$T/rt.json"
	run "compact $f" st convert "$P/$f" --compact -o "$T/c.json"
	check_rc 0
	run "indent again $f" st convert "$T/c.json" --indent --escape-html -o "$T/i.json"
	check_rc 0; check_same "$P/$f" "$T/i.json"
	run "to stdout $f" sh -c "'$STATETOOL' convert '$P/$f' -o - | cmp - '$P/$f'"
	check_rc 0
	rm -f "$T"/*.json "$T"/*.bak
done

# gzip in and out, detected by magic bytes whatever the name
run "gzip out" st convert "$P/checkpoint-v3.json" --gzip -o "$T/s.json"
check_rc 0
run "gzip magic" sh -c "head -c 2 '$T/s.json' | od -An -tx1"
check_out " 1f 8b"
run "gzip back" st convert "$T/s.json" --no-gzip -o "$T/plain.json"
check_rc 0; check_same "$P/checkpoint-v3.json" "$T/plain.json"
# zstd out (Pulumi's .json.zst), from gzip, and back
run "zstd out" st convert "$T/s.json" --zstd -o "$T/z.json" --json
check_rc 0; check_out_has '"compression": "zstd"'
run "zstd magic" sh -c "head -c 4 '$T/z.json' | od -An -tx1"
check_out " 28 b5 2f fd"
run "zstd back" st convert "$T/z.json" --no-gzip -o "$T/plain2.json"
check_rc 0; check_same "$P/checkpoint-v3.json" "$T/plain2.json"

# envelopes
run "to checkpoint" st convert "$P/valid-deployment-v3.json" --envelope checkpoint -o "$T/cp.json"
check_rc 0
run "checkpoint stack" cat "$T/cp.json"
check_out_has '{"version":3,"checkpoint":{"stack":"organization/proj/dev","latest":{"manifest'
run "back to export" st convert "$T/cp.json" --envelope export -o "$T/ex.json"
check_rc 0
# the synthetic file was not written by Pulumi: compare with its Pulumi-style rewrite
run "export reference" st convert "$P/valid-deployment-v3.json" --indent -o "$T/ref.json"
check_rc 0; check_same "$T/ref.json" "$T/ex.json"
run "export ends in newline" sh -c "tail -c 2 '$T/ex.json' | od -An -c"
check_out "   }  \\n"
run "bad envelope" st convert "$P/todo.json" --envelope yaml -o "$T/x.json"
check_rc 2; check_absent "$T/x.json"
run "no -o" st convert "$P/todo.json"
check_rc 2; check_err_has "missing -o OUT"

# an existing output is kept as .bak
printf 'previous' > "$T/out.json"
run "backup" st convert "$P/todo.json" -o "$T/out.json"
check_rc 0; check_same "$P/todo.json" "$T/out.json"
check_file_is "$T/out.json.bak" "previous"

# migration
cp "$P/checkpoint-v1.json" "$T/v1.json"
run "migrate dry" st migrate --dry-run "$T/v1.json"
check_rc 0; check_out_has "would be migrated from version 1 to 3:"
check_same "$P/checkpoint-v1.json" "$T/v1.json"
run "migrate" st migrate "$T/v1.json"
check_rc 0; check_out_has "migrated from version 1 to 3:"
check_out_has "dropped deprecated 'defaults' (1 value)"
check_same "$P/checkpoint-v1.json" "$T/v1.json.bak"
run "migrated lists" st list "$T/v1.json"
check_rc 0
run "migrate again" st migrate "$T/v1.json"
check_rc 0; check_out_has "is already version 3; nothing to migrate"
run "migrate json" st migrate --json --dry-run "$P/checkpoint-v0.json"
check_rc 0; check_out_has '"from": 0,'; check_out_has '"to": 3,'
run "migrate lock gone" ls "$T"
check_rc 0
if grep -q '\.lock$' "$T/out"; then bad "a lock file was left behind"; else ok; fi
# a checkpoint envelope for a state with no resources needs its stack named: by the option
# convert has for it
printf '{"version":3,"deployment":{"manifest":{"time":"2024-01-01T00:00:00Z","magic":"","version":""}}}\n' > "$T/empty.json"
run "checkpoint of nothing" st convert "$T/empty.json" --envelope checkpoint -o "$T/empty-cp.json"
check_rc 1; check_absent "$T/empty-cp.json"
check_err "statetool: error: cannot tell the stack's name for the checkpoint envelope: the state has no resources to take it from; give it with --checkpoint-stack organization/PROJECT/STACK"
run "checkpoint of nothing, named" st convert "$T/empty.json" --envelope checkpoint --checkpoint-stack organization/p/dev -o "$T/empty-cp.json"
check_rc 0

finish
