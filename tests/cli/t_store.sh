#!/bin/sh
# DIY backends read and locked as Pulumi does, whatever way a stack is named: a state file named
# by its path inside a backend takes Pulumi's lock; any object in a lock folder is a lock;
# meta.yaml is YAML; ties between .json, .json.gz and .json.zst; zstd read and written.
. "$(dirname "$0")/lib.sh"
P=$FIXTURES/pulumi
B=$T/backend
S=$B/.pulumi/stacks/proj/dev.json
L=$B/.pulumi/locks/organization/proj/dev
mkdir -p "$B/.pulumi/stacks/proj"
printf 'version: 1\n' > "$B/.pulumi/meta.yaml"
cp "$P/valid-checkpoint-v3-diy.json" "$S"
cp "$S" "$T/before.json"

# ---- a stack named by its path is edited under Pulumi's lock ----
mkdir -p "$L"
printf '{"pid":4242,"username":"alice","hostname":"ci-runner","timestamp":"2024-05-01T10:00:00.123456789+02:00"}' > "$L/6a1f0e2c-0000-4000-8000-000000000001.json"
run "path inside a backend is locked" st protect "$S" --all
check_rc 1
check_err_has "the stack is currently locked by 1 lock(s)"
check_err_has "created by alice@ci-runner (pid 4242) at 2024-05-01T10:00:00+02:00"
check_err_has "statetool unlock --backend $B --stack proj/dev"
check_same "$T/before.json" "$S"; check_absent "$S.lock"; check_absent "$S.bak"
run "path inside a backend: restore is locked too" st restore "$S"
check_rc 1; check_err_has "locked by 1 lock(s)"
run "path inside a backend: convert -o into it is locked" st convert "$T/before.json" -o "$S"
check_rc 1; check_err_has "locked by 1 lock(s)"; check_same "$T/before.json" "$S"
run "unlock by path" st unlock "$S"
check_rc 0; check_out "removed 1 lock of $S"

# ---- any object in the lock folder is someone's lock ----
printf 'whatever' > "$L/notes.txt"
run "any file is a lock" st protect "$S" --all
check_rc 1; check_err_has "locked by 1 lock(s)"
check_err_has "$L/notes.txt: a lock that cannot be parsed (it is not a JSON object); it counts as held"
check_same "$T/before.json" "$S"
rm -f "$L/notes.txt"
printf '{"pid":1,"username":"bob","hostname":"h","timestamp":"yesterday"}' > "$L/0b5e1f3a-1111-4222-8333-444455556666.json"
run "a lock with a bad time blocks" st protect --backend "$B" --stack proj/dev --all
check_rc 1; check_err_has "its timestamp is not an RFC 3339 time"; check_same "$T/before.json" "$S"
printf '{"pid":' > "$L/0b5e1f3a-1111-4222-8333-444455556666.json"
run "an unparseable lock blocks" st protect --backend "$B" --stack proj/dev --all
check_rc 1; check_err_has "a lock that cannot be parsed"; check_same "$T/before.json" "$S"
run "unlock removes every object" st unlock --backend "$B" --stack proj/dev
check_rc 0; check_out "removed 1 lock of proj/dev"
run "edit by path once unlocked" st protect "$S" --all
check_rc 0; check_same "$T/before.json" "$S.bak"; check_absent "$S.lock"
run "no lock left behind" sh -c "ls -A '$L' | wc -l"
check_out "0"
cp "$T/before.json" "$S"; rm -f "$S.bak"

# ---- meta.yaml is YAML ----
for meta in 'version: 1 # project mode' '{version: 1}' '---
version: 1
...'; do
	printf '%s\n' "$meta" > "$B/.pulumi/meta.yaml"
	run "meta.yaml: $meta" st stacks --backend "$B"
	check_rc 0; check_out_has "organization/proj/dev"
done
printf 'version:\n' > "$B/.pulumi/meta.yaml"
run "meta.yaml: null version" st stacks --backend "$B"
check_rc 1; check_err 'statetool: error: corrupt store: missing version in ".pulumi/meta.yaml"'
printf 'nothing: here\n' > "$B/.pulumi/meta.yaml"
run "meta.yaml: no version" st stacks --backend "$B"
check_rc 1; check_err 'statetool: error: corrupt store: missing version in ".pulumi/meta.yaml"'
printf 'version: [1]\n' > "$B/.pulumi/meta.yaml"
run "meta.yaml: not a number" st stacks --backend "$B"
check_rc 1; check_err_has 'corrupt store: unmarshal ".pulumi/meta.yaml"'
printf 'version: 2\n' > "$B/.pulumi/meta.yaml"
run "meta.yaml: a newer layout" st stacks --backend "$B"
check_rc 1; check_err_has "state store unsupported: 'meta.yaml' version (2) is not supported"
printf 'version: 1\n' > "$B/.pulumi/meta.yaml"

# ---- legacy detection sees .json.zst ----
LB=$T/legacy
mkdir -p "$LB/.pulumi/stacks"
zstd -q -c "$P/checkpoint-v3.json" > "$LB/.pulumi/stacks/old.json.zst"
run "legacy layout from a .json.zst" st stacks --backend "$LB" --json
check_rc 0; check_out_has '"layout": "legacy"'; check_out_has '"stack": "old"'
check_out_has '"resources": 30'

# ---- ties: newest by time, then the later key (.json < .json.gz < .json.zst) ----
D=$B/.pulumi/stacks/proj
printf '{"version":3,"checkpoint":{"stack":"organization/proj/tie","latest":{"manifest":{"time":"2024-01-01T00:00:00Z","magic":"","version":""},"resources":[]}}}' > "$D/tie.json"
gzip -c "$P/valid-checkpoint-v3-diy.json" | sed 's/x/x/' > "$D/tie.json.gz"
touch -d '2024-01-01 00:00:00' "$D/tie.json" "$D/tie.json.gz"
run "tie: .json.gz over .json" st stacks --backend "$B"
check_rc 0; check_out_has "$D/tie.json.gz"
zstd -q -c "$P/valid-checkpoint-v3-diy.json" > "$D/tie.json.zst"
touch -d '2024-01-01 00:00:00' "$D/tie.json.zst"
run "tie: .json.zst over .json.gz" st stacks --backend "$B"
check_rc 0; check_out_has "$D/tie.json.zst"
touch -d '2024-01-02 00:00:00' "$D/tie.json"
run "the newest wins" st stacks --backend "$B"
check_rc 0; check_out_has "$D/tie.json"
rm -f "$D"/tie.json*

# ---- a stack named s1.json (s1.json.json) sorts between s1.json.gz and s1.json.zst of the
# stack s1: each stack listed once, s1 by its newest variant (Pulumi's stackPath), never
# shadowed or split in two ----
N=$T/named
mkdir -p "$N/.pulumi/stacks/proj"
printf 'version: 1\n' > "$N/.pulumi/meta.yaml"
mkst() { sed -e "s|organization/proj/dev|organization/proj/$1|" -e "s/urn:pulumi:dev::/urn:pulumi:$1::/g" "$P/valid-checkpoint-v3-diy.json"; }
mkst s1 | gzip -c > "$N/.pulumi/stacks/proj/s1.json.gz"
mkst s1 | zstd -q -c > "$N/.pulumi/stacks/proj/s1.json.zst"
mkst s1.json > "$N/.pulumi/stacks/proj/s1.json.json"
touch -d '2024-01-01 00:00:00' "$N/.pulumi/stacks/proj/s1.json.gz"
touch -d '2024-01-02 00:00:00' "$N/.pulumi/stacks/proj/s1.json.zst"
run "s1 and s1.json: each once" sh -c "'$STATETOOL' stacks --backend '$N' --json | grep -e '\"name\"' -e '\"path\"'"
check_rc 0
check_out "            \"name\": \"s1\",
            \"path\": \"$N/.pulumi/stacks/proj/s1.json.zst\",
            \"name\": \"s1.json\",
            \"path\": \"$N/.pulumi/stacks/proj/s1.json.json\","
touch -d '2024-01-03 00:00:00' "$N/.pulumi/stacks/proj/s1.json.gz"
run "the newest variant, wherever s1.json.json sorts" sh -c "'$STATETOOL' stacks --backend '$N' --json | grep -e '\"path\"'"
check_out "            \"path\": \"$N/.pulumi/stacks/proj/s1.json.gz\",
            \"path\": \"$N/.pulumi/stacks/proj/s1.json.json\","
run "the index: two stacks" st index update --backend "$N"
check_rc 0; check_out_has ": 2 stacks: 2 indexed"
run "doctor: one stray variant, the older" st doctor --backend "$N"
check_out_has "proj/s1: stray-variant: an older variant beside $N/.pulumi/stacks/proj/s1.json.gz"
check_out_has "  at: $N/.pulumi/stacks/proj/s1.json.zst"
check_out_lacks "at: $N/.pulumi/stacks/proj/s1.json.gz"
check_out_has "(2 stacks checked)"

# ---- zstd: written by the zstd tool, read, edited in place, switched by the environment ----
zstd -q -c "$P/valid-checkpoint-v3-diy.json" > "$D/z.json.zst"
sed -e 's/organization\/proj\/dev/organization\/proj\/z/' -e 's/urn:pulumi:dev::/urn:pulumi:z::/g' "$P/valid-checkpoint-v3-diy.json" | zstd -q -c > "$D/z.json.zst"
cp "$D/z.json.zst" "$T/z-before.zst"
run "zstd stack listed" st list --backend "$B" --stack proj/z
check_rc 0; check_out_has "my:index:Comp::c"
run "zstd edit keeps zstd" st protect --backend "$B" --stack proj/z --all
check_rc 0; check_same "$T/z-before.zst" "$D/z.json.zst.bak"
run "the new file is zstd (the zstd tool reads it)" sh -c "zstd -q -d -c '$D/z.json.zst' | jq -r .checkpoint.stack"
check_rc 0; check_out 'organization/proj/z'
run "both variables: Pulumi's error" env PULUMI_DIY_BACKEND_GZIP=1 PULUMI_DIY_BACKEND_ZSTD=true "$STATETOOL" unprotect --backend "$B" --stack proj/z --all
check_rc 1; check_err "statetool: error: DIY_BACKEND_GZIP and DIY_BACKEND_ZSTD cannot both be enabled"
for c in "stacks --backend $B" "validate --backend $B" "list --backend $B --stack proj/z" "index update --backend $B"; do
	run "both variables, $c: exit 1, not a usage error" env PULUMI_DIY_BACKEND_GZIP=true PULUMI_DIY_BACKEND_ZSTD=1 "$STATETOOL" $c
	check_rc 1; check_err "statetool: error: DIY_BACKEND_GZIP and DIY_BACKEND_ZSTD cannot both be enabled"
done
cp "$D/z.json.zst" "$T/z-mid.zst"
run "switch to gzip" env PULUMI_DIY_BACKEND_GZIP=true "$STATETOOL" unprotect --backend "$B" --stack proj/z --all
check_rc 0; check_absent "$D/z.json.zst"; check_same "$T/z-mid.zst" "$D/z.json.zst.bak"
run "the new file is gzip" sh -c "gzip -d -c '$D/z.json.gz' | jq -r .checkpoint.stack"
check_out 'organization/proj/z'
run "alias of the gzip variable, and back to zstd" env PULUMI_SELF_MANAGED_STATE_GZIP=0 PULUMI_DIY_BACKEND_ZSTD=1 "$STATETOOL" protect --backend "$B" --stack proj/z --all
check_rc 0; check_absent "$D/z.json.gz"; check_absent "$D/z.json"
run "zstd again" sh -c "zstd -q -d -c '$D/z.json.zst' | jq -r .checkpoint.stack"
check_out 'organization/proj/z'
run "a variable set to false: plain" env PULUMI_DIY_BACKEND_ZSTD=false "$STATETOOL" unprotect --backend "$B" --stack proj/z --all
check_rc 0; check_absent "$D/z.json.zst"
run "plain is plain" jq -r .checkpoint.stack "$D/z.json"
check_out 'organization/proj/z'
# Pulumi's alias of the zstd variable (env.Alternative("SELF_MANAGED_STATE_ZSTD")), read only
# when PULUMI_DIY_BACKEND_ZSTD is unset
run "alias of the zstd variable" env PULUMI_SELF_MANAGED_STATE_ZSTD=true "$STATETOOL" protect --backend "$B" --stack proj/z --all
check_rc 0; check_absent "$D/z.json"
run "the alias's file is zstd" sh -c "zstd -q -d -c '$D/z.json.zst' | jq -r .checkpoint.stack"
check_out 'organization/proj/z'
run "gzip and the zstd alias: Pulumi's error" env PULUMI_DIY_BACKEND_GZIP=1 PULUMI_SELF_MANAGED_STATE_ZSTD=1 "$STATETOOL" unprotect --backend "$B" --stack proj/z --all
check_rc 1; check_err "statetool: error: DIY_BACKEND_GZIP and DIY_BACKEND_ZSTD cannot both be enabled"
run "the main zstd variable wins over its alias" env PULUMI_DIY_BACKEND_ZSTD=0 PULUMI_SELF_MANAGED_STATE_ZSTD=1 "$STATETOOL" unprotect --backend "$B" --stack proj/z --all
check_rc 0; check_absent "$D/z.json.zst"
run "plain again" jq -r .checkpoint.stack "$D/z.json"
check_out 'organization/proj/z'
# PULUMI_DIY_BACKEND_RETAIN_CHECKPOINTS (alias PULUMI_RETAIN_CHECKPOINTS): each save's bytes
# again as <object>.<UnixNano> beside it (Pulumi's saveCheckpoint), which no listing takes for a stack
run "retained checkpoint" env PULUMI_DIY_BACKEND_RETAIN_CHECKPOINTS=true "$STATETOOL" protect --backend "$B" --stack proj/z --all
check_rc 0
run "one copy, named <object>.<digits>" sh -c "cd '$D' && ls | grep -E '^z\.json\.[0-9]{18,}\$' | wc -l"
check_out "1"
check_same "$D/z.json" "$D/$(cd "$D" && ls | grep -E '^z\.json\.[0-9]+$')"
run "the alias, read when the main variable is unset" env PULUMI_RETAIN_CHECKPOINTS=1 "$STATETOOL" unprotect --backend "$B" --stack proj/z --all
check_rc 0
run "two copies" sh -c "cd '$D' && ls | grep -cE '^z\.json\.[0-9]+\$'"
check_out "2"
run "the main variable wins over its alias" env PULUMI_DIY_BACKEND_RETAIN_CHECKPOINTS=false PULUMI_RETAIN_CHECKPOINTS=1 "$STATETOOL" protect --backend "$B" --stack proj/z --all
check_rc 0
run "still two" sh -c "cd '$D' && ls | grep -cE '^z\.json\.[0-9]+\$'"
check_out "2"
run "a retained copy is no stack" st list --backend "$B" --stack proj/z
check_rc 0; check_out_has "my:index:Comp::c"
run "stacks lists z once" sh -c "'$STATETOOL' stacks --backend '$B' | grep -c 'organization/proj/z '"
check_out "1"
rm -f "$D"/z.json.[0-9]*
# a truncated zstd stack: refused with a clear message, nothing changed
zstd -q -c "$P/valid-checkpoint-v3-diy.json" | head -c 300 > "$D/t.json.zst"
cp "$D/t.json.zst" "$T/t-before.zst"
run "truncated zstd refused" st protect --backend "$B" --stack proj/t --all
check_rc 1; check_err_has "truncated zstd data (the stream ends inside a frame after 300 compressed bytes)"
check_same "$T/t-before.zst" "$D/t.json.zst"; check_absent "$D/t.json.zst.bak"
run "no lock left by the refusal" sh -c "ls -A '$B/.pulumi/locks/organization/proj/t' | wc -l"
check_out "0"
finish
