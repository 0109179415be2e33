#!/bin/sh
# Read as Pulumi reads: Go's encoding/json matches struct keys in any case, and what Pulumi's
# decoder refuses is refused with Pulumi's (Go's) message.
. "$(dirname "$0")/lib.sh"
R=$FIXTURES/realworld
E=$FIXTURES/edit
CAPS=$R/18-azenv-dev-capitalkeys.json

# `pulumi stack init` wrote {"checkpoint": {"Stack", "Latest"}}: Pulumi reads stack and latest.
run "capital keys: valid, nothing unknown" st validate "$CAPS"
check_rc 0
check_out "$CAPS: valid, 0 errors, 0 warnings (0 resources)"
run "capital keys: unchanged bytes" st convert "$CAPS" -o "$T/caps.json"
check_rc 0; check_same "$CAPS" "$T/caps.json"
run "capital keys: the deployment is found" st convert --envelope export "$CAPS" -o -
check_rc 0
check_out '{
    "version": 3,
    "deployment": {
        "manifest": {
            "time": "2025-02-24T21:50:22.235411Z",
            "magic": "e6f9b63eec1c02224f3d9bb9346dbfaeb256b3b4d71dc3ee7581d37b584369c2",
            "version": "v3.152.0"
        },
        "secrets_providers": {
            "type": "passphrase",
            "state": {
                "salt": "v1:vDB9gMHira0=:v1:BN7AUpFGvH3nRSM3:+LBWJiHSrc3vwILNNLMuGU4Zn/WeOQ=="
            }
        },
        "metadata": {}
    }
}'
run "capital keys: list" st list "$CAPS"
check_rc 0; check_out "no resources"
# A move into it keeps its secrets provider; the file written has Pulumi's keys.
cp "$FIXTURES/move/leaf.json" "$T/src.json"
cp "$CAPS" "$T/dst.json"
run "move into a stack with capital keys" st move --source "$T/src.json" --dest "$T/dst.json" --dest-stack dev/dev "urn:pulumi:sourceStack::test::a:b:c::name"
check_rc 0
check_out_lacks() { if grep -qF -- "$1" "$T/out"; then bad "stdout has: $1"; else ok; fi; }
check_out_lacks "secrets provider"
if grep -q '"salt": "v1:vDB9gMHira0=:v1:BN7AUpFGvH3nRSM3:+LBWJiHSrc3vwILNNLMuGU4Zn/WeOQ=="' "$T/dst.json"; then ok; else bad "the destination lost its secrets provider"; fi
if grep -q '"stack": "organization/dev/dev"' "$T/dst.json" && ! grep -q '"Stack"\|"Latest"' "$T/dst.json"; then ok; else bad "the destination was not written with Pulumi's keys"; fi
run "move result valid" st validate "$T/dst.json"
check_rc 0

# An import file is decoded the same way.
cp "$E/base.json" "$T/imp.json"
cat > "$T/specs.json" <<'J'
{"Resources": [{"Type": "random:index/randomId:RandomId", "NAME": "r", "Id": "r-1", "Outputs": {"Hex": "ab"}}]}
J
run "import file keys in any case: valid" st validate "$T/specs.json"
check_rc 0; check_out "$T/specs.json: valid, 0 errors, 0 warnings (1 resource)"
run "import file keys in any case" st import --dest "$T/imp.json" --file "$T/specs.json"
check_rc 0
check_out_has "added urn:pulumi:dev::shop::random:index/randomId:RandomId::r (ID r-1)"
run "imported outputs kept as written" st show --json "$T/imp.json" r
check_out_has '"Hex": "ab"'

# A deployment given to edit is decoded as Pulumi will: keys in any case, nothing Go refuses.
cp "$R/27-tfmigrate-diy-testupsert.json" "$T/e.json"
st convert --envelope export "$T/e.json" -o "$T/x.json"
sed 's/"custom":/"CUSTOM":/' "$T/x.json" > "$T/caps.json"
run "edit --from with keys in any case" st edit --from "$T/caps.json" "$T/e.json"
check_rc 0; check_out "no change: nothing written"
check_same "$R/27-tfmigrate-diy-testupsert.json" "$T/e.json"
sed '0,/"created": "2025-12-03T20:58:41.349537Z"/s//"created": "yesterday"/' "$T/x.json" > "$T/bad.json"
run "edit --from what Pulumi cannot decode" st edit --from "$T/bad.json" "$T/e.json"
check_rc 1
# (a whole state is decoded as a load decodes it: the file and the place in it named)
check_err "statetool: error: $T/bad.json: parsing time \"yesterday\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"yesterday\" as \"2006\" (at /deployment/resources/0/created)"
check_same "$R/27-tfmigrate-diy-testupsert.json" "$T/e.json"

# A document is what Pulumi would decode it as: a state, an import file, or neither.
printf '{"apiVersion":"kustomize.config.k8s.io/v1beta1","kind":"Kustomization","resources":["deployment.yaml"]}' > "$T/k1.json"
run "kustomization: not an import file" st validate "$T/k1.json"
check_rc 1
check_out "$T/k1.json: error: [decode/type] json: cannot unmarshal string into Go struct field importFile.resources of type operations.importSpec
    at /resources/0
$T/k1.json: invalid, 1 error, 0 warnings (1 resource)"
printf '{"apiVersion":"v1","kind":"List","resources":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}]}' > "$T/k2.json"
run "kubernetes list: import checks" st validate -q "$T/k2.json"
check_rc 1
check_out "$T/k2.json: invalid, 3 errors, 5 warnings (1 resource)"
run "kubernetes list: the reasons" st validate "$T/k2.json"
check_out_has "error: [import/spec] resource 0 has no type"
check_out_has "error: [import/spec] resource 0 has no ID"
printf '{"apiVersion":"v1","kind":"Pod","spec":{}}' > "$T/k3.json"
run "neither" st validate --json "$T/k3.json"
check_rc 1
check_out_has '"kind": "unknown"'
check_out_has '"rule": "file/not-pulumi"'

finish
