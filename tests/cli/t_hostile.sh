#!/bin/sh
# Hostile and broken inputs: a clear message, exit 1, and no file changed.
. "$(dirname "$0")/lib.sh"
H=$FIXTURES/hostile

# file | expected stderr fragment
while IFS='|' read -r f msg; do
	[ -n "$f" ] || continue
	cp "$H/$f" "$T/$f"
	run "list $f" st list "$T/$f"
	check_rc 1; check_err_has "$msg"
	run "convert in place $f" st convert "$T/$f" -o "$T/$f"
	check_rc 1; check_same "$H/$f" "$T/$f"; check_absent "$T/$f.bak"; check_absent "$T/$f.lock"
	rm -f "$T/$f"
done <<'CASES'
malformed.json|malformed.json:1:52: invalid character '}' looking for beginning of object key string
truncated.json|truncated.json:2:1: unexpected end of JSON input
truncated.json.gz|truncated gzip data
version5.json|this stack's deployment version is too new (version 5
unknown-feature.json|needs support for the following features: warp-drive (at /features)
wrong-envelope.json|not a Pulumi deployment state
deep.json|exceeded max depth (10000 nested values)
bom.json|byte order mark
huge-number.json|json: cannot unmarshal number 1e999 into Go struct field ResourceV3.resources.inputs of type float64 (at /deployment/resources/0/inputs/n)
zstd.json.zst|truncated zstd data (the stream ends inside a frame after 6 compressed bytes)
truncated.json.zst|truncated zstd data
CASES

# A gzip bomb: 200 MB of zeros in about 200 KB, refused beyond --max-size without inflating it all.
head -c 200000000 /dev/zero | gzip -1 > "$T/bomb.json.gz"
cp "$T/bomb.json.gz" "$T/bomb-before.gz"
run "gzip bomb" st convert --max-size 50M "$T/bomb.json.gz" -o "$T/bomb.json.gz"
check_rc 1; check_err_has "refusing a possible gzip bomb"; check_same "$T/bomb-before.gz" "$T/bomb.json.gz"
rm -f "$T/bomb.json.gz" "$T/bomb-before.gz"

# Deep but within the limit (9,000 levels of inputs): loaded, edited (copy on write), written
# and read back without exhausting the stack.
awk 'BEGIN { printf "{\"version\":3,\"deployment\":{\"manifest\":{\"time\":\"2026-01-01T00:00:00Z\",\"magic\":\"\",\"version\":\"v3.0.0\"},\"resources\":[{\"urn\":\"urn:pulumi:s::p::a:b:C::m\",\"custom\":true,\"id\":\"x\",\"type\":\"a:b:C\",\"inputs\":{\"v\":";
	for (i = 0; i < 9000; i++) printf "[";
	for (i = 0; i < 9000; i++) printf "]";
	printf "}}]}}\n" }' > "$T/deep-ok.json"
run "deep within the limit: protect" st protect "$T/deep-ok.json" m
check_rc 0
run "deep within the limit: read back" st validate --no-schema "$T/deep-ok.json"
check_rc 0
run "deep within the limit: convert" st convert "$T/deep-ok.json" --compact -o "$T/deep-ok-compact.json"
check_rc 0

# A large file is mapped and its pages released as it is parsed; an error near its end still
# gets the right line and column (the pages fault back in), the same as when it is piped.
cc -O2 -o "$T/gen" "$top_srcdir/bench/gen.c"
"$T/gen" 3000 9 > "$T/big.json"
head -c $(( $(wc -c < "$T/big.json") - 200 )) "$T/big.json" > "$T/big-cut.json"
printf '@' >> "$T/big-cut.json"
lines=$(wc -l < "$T/big-cut.json")
run "large file, error at the end (mapped)" st list "$T/big-cut.json"
check_rc 1; check_err_has "big-cut.json:$((lines + 1)):"
sed 's|.*big-cut.json:||' "$T/err" > "$T/mapped-err"
run "large file, error at the end (piped)" sh -c "'$STATETOOL' list - < '$T/big-cut.json'"
check_rc 1
sed 's|.*<stdin>:||' "$T/err" > "$T/piped-err"
check_same "$T/mapped-err" "$T/piped-err"
run "large file validates (mapped)" st validate -q "$T/big.json"
check_rc 0
run "large file round trip (mapped)" st convert "$T/big.json" -o "$T/big-rt.json"
check_rc 0; check_same "$T/big.json" "$T/big-rt.json"

# Accepted as Pulumi accepts them.
run "duplicate keys load" st list "$H/duplicate-keys.json"
check_rc 0; check_out_has "urn:pulumi:s::p::a:b:C::m"
# ... but never rewritten silently: the earlier value would be lost.
cp "$H/duplicate-keys.json" "$T/dup.json"
run "duplicate keys refused" st convert "$T/dup.json" -o "$T/dup.json"
check_rc 1; check_err_has "refusing to write: '$T/dup.json' has 1 duplicate object key (first at /deployment/resources/0/urn)"
check_same "$H/duplicate-keys.json" "$T/dup.json"; check_absent "$T/dup.json.bak"; check_absent "$T/dup.json.lock"
run "duplicate keys migrate refused" st migrate "$T/dup.json"
check_rc 1; check_same "$H/duplicate-keys.json" "$T/dup.json"
run "duplicate keys allowed" st convert --allow-duplicate-keys "$T/dup.json" -o "$T/dup.json"
check_rc 0; check_err_has "each is written as Pulumi reads it (statetool validate tells what is kept)"
check_same "$H/duplicate-keys.json" "$T/dup.json.bak"
run "duplicate keys gone" st validate "$T/dup.json"
check_rc 0
run "invalid utf8 loads" st list "$H/invalid-utf8.json"
check_rc 0; check_out_has "urn:pulumi:s::p::a:b:C::$(printf '\357\277\275')"
run "big int and NUL" st convert "$H/big-int-nul.json" --compact -o -
check_rc 0; check_out_has '"big":1.2345678901234568e+29'; check_out_has '"s":"a\u0000b"'

# Stack names that try to leave the backend.
mkdir -p "$T/be/.pulumi/stacks/app"
printf 'version: 1\n' > "$T/be/.pulumi/meta.yaml"
cp "$FIXTURES/pulumi/valid-checkpoint-v3-diy.json" "$T/be/.pulumi/stacks/app/dev.json"
for name in ../dev app/../../etc /etc/passwd app/dev/x 'app/d v'; do
	run "stack name $name" st list --backend "$T/be" --stack "$name"
	check_rc 2; check_err_has "invalid"
done
run "symlinked state" sh -c "ln -s '$T/be/.pulumi/stacks/app/dev.json' '$T/be/.pulumi/stacks/app/evil.json' && '$STATETOOL' migrate --backend '$T/be' --stack app/evil"
check_rc 1; check_err_has "symbolic link inside the backend"
# a planted symlink where a lock goes: nothing is written through it
mkdir -p "$T/elsewhere"
cp "$FIXTURES/edit/base.json" "$T/s.json"
ln -s "$T/elsewhere/target" "$T/s.json.lock"
run "symlinked file lock" st protect "$T/s.json" logs
check_rc 1; check_err_has "it is a symbolic link"
check_absent "$T/elsewhere/target"; check_same "$FIXTURES/edit/base.json" "$T/s.json"
rm "$T/s.json.lock"
ln -s "$T/elsewhere" "$T/be/.pulumi/locks"
cp "$T/be/.pulumi/stacks/app/dev.json" "$T/dev-before.json"
run "symlinked backend lock directory" st protect --backend "$T/be" --stack app/dev --all
check_rc 1; check_err_has "symbolic link"
current="nothing written through the symlinked lock directory"
if [ -z "$(ls -A "$T/elsewhere")" ]; then ok; else bad "$(ls -R "$T/elsewhere")"; fi
check_same "$T/dev-before.json" "$T/be/.pulumi/stacks/app/dev.json"
finish
