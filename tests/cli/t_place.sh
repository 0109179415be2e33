#!/bin/sh
# A state must be where it claims to be (issue 17 section 3): the place of a stack's object in
# its backend, its checkpoint's `stack` and its URNs' stack and project agree, and a backend
# holds checkpoints, not exports. validate reports a mismatch (place/* rules: an error where
# Pulumi cannot load the stack, warnings where it loads it); every mutation refuses it. `edit`
# refuses a deployment of another stack unless --force (Pulumi's `stack import` rule), and a
# result with warnings the state did not have.
. "$(dirname "$0")/lib.sh"
F=$FIXTURES/edit
B=$T/b
D=$B/.pulumi/stacks/shop
mkdir -p "$D"
printf 'version: 1\n' > "$B/.pulumi/meta.yaml"
# shop/dev: a checkpoint of stack dev of project shop, every URN urn:pulumi:dev::shop::...
st convert "$F/base.json" --envelope checkpoint --checkpoint-stack organization/shop/dev -o "$D/dev.json" >/dev/null
NRES=13

# ---- validate ----
run "in its place" st validate --backend "$B" --stack shop/dev
check_rc 0; check_out "shop/dev: valid, 0 errors, 0 warnings ($NRES resources)"
cp "$D/dev.json" "$D/copy.json"
run "a copy of another stack's object" st validate --backend "$B" --stack shop/copy
check_rc 0
check_out "shop/copy: warning: [place/stack-mismatch] the checkpoint names stack 'organization/shop/dev', but it is the state of stack 'organization/shop/copy' (where it lies in its backend; Pulumi goes by that, and writes 'organization/shop/copy' at its next save)
    at /checkpoint/stack
shop/copy: warning: [place/urn-mismatch] $NRES resource URNs name stack 'dev' of project 'shop' (the first: urn:pulumi:dev::shop::pulumi:pulumi:Stack::shop-dev), but it is the state of stack 'copy' of project 'shop': Pulumi would see none of them in the program's stack
    at /checkpoint/latest/resources/0/urn
shop/copy: valid, 0 errors, 2 warnings ($NRES resources)"
run "--strict: errors" st validate --strict --backend "$B" --stack shop/copy
check_rc 1
run "the whole backend" st validate -q --backend "$B"
check_rc 0; check_out_has "2 stacks checked: 0 errors, 2 warnings"
run "a file named by its path in the backend" st validate "$D/copy.json"
check_rc 0; check_out_has "$D/copy.json: warning: [place/stack-mismatch] the checkpoint names stack 'organization/shop/dev', but it is the state of stack 'organization/shop/copy'"
check_out_has "$D/copy.json: valid, 0 errors, 2 warnings ($NRES resources)"
run "the same file elsewhere: no place" sh -c "cp '$D/copy.json' '$T/copy.json' && '$STATETOOL' validate '$T/copy.json'"
check_rc 0; check_out "$T/copy.json: valid, 0 errors, 0 warnings ($NRES resources)"
# the checkpoint names its place, the URNs another stack: the integrity rule says it once per
# resource, against the checkpoint, and place/urn-mismatch adds nothing
sed 's/organization\/shop\/dev/organization\/shop\/copy/' "$D/dev.json" > "$D/copy.json"
run "URNs of another stack, checkpoint right" st validate --backend "$B" --stack shop/copy
check_rc 0; check_out_has "shop/copy: valid, 0 errors, $NRES warnings ($NRES resources)"
check_out_has "warning: [urn/stack-mismatch] the URN names stack 'dev' of project 'shop', but the state belongs to stack 'copy' of project 'shop'"
check_out_lacks "place/"
# an export in a backend: Pulumi cannot load it
cp "$F/base.json" "$D/export.json"
run "an export in a backend" st validate --backend "$B" --stack shop/export
check_rc 1
check_out_has "shop/export: error: [place/export-in-backend] a DIY backend holds checkpoints ({\"version\", \"checkpoint\"}) and this is a stack export ({\"version\", \"deployment\"}): Pulumi cannot load it (failed to load checkpoint: unexpected end of JSON input); write it as a checkpoint (statetool convert --envelope checkpoint)
    at /deployment"
check_out_has "shop/export: invalid, 1 error, 0 warnings ($NRES resources)"
run "--json" st validate --json --backend "$B" --stack shop/export
check_rc 1; check_out_has '"rule": "place/export-in-backend",'
rm -f "$D/export.json"

# ---- every mutation refuses a state out of its place, and changes nothing ----
cp "$D/dev.json" "$D/copy.json"
cp "$D/copy.json" "$T/copy.before"
refused() { # NAME CMD...
	name=$1; shift
	run "$name" "$@"
	check_rc 1
	check_err_has "statetool: error: refusing to change '"
	check_err_has "': it is not where it claims to be (nothing written; \`statetool validate\` lists the mismatches):
  [place/stack-mismatch] the checkpoint names stack 'organization/shop/dev', but it is the state of stack 'organization/shop/copy'"
	check_same "$T/copy.before" "$D/copy.json"
	check_absent "$D/copy.json.bak"
}
refused "protect" st protect --backend "$B" --stack shop/copy logs
refused "protect, named by its path" st protect "$D/copy.json" logs
refused "delete" st delete --backend "$B" --stack shop/copy logs
refused "rename" st rename --backend "$B" --stack shop/copy logs logs2
refused "taint" st taint --backend "$B" --stack shop/copy logs
refused "repair" st repair --backend "$B" --stack shop/copy
refused "pending clear" st pending clear --backend "$B" --stack shop/copy
refused "replace-provider" st replace-provider --backend "$B" --stack shop/copy default_6_0_0 eu
refused "secrets encrypt" env PULUMI_CONFIG_PASSPHRASE=x "$STATETOOL" secrets encrypt --backend "$B" --stack shop/copy
refused "import" st import --no-read --backend "$B" --dest shop/copy aws:s3/bucket:Bucket extra bucket-1
refused "migrate" st migrate --backend "$B" --stack shop/copy
refused "move out of it" st move --backend "$B" --source shop/copy --dest shop/new 'urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::logs'
run "move into it" st move --backend "$B" --source shop/dev --dest shop/copy 'urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::logs'
check_rc 1; check_err_has "refusing to change 'shop/copy': it is not where it claims to be"
check_same "$T/copy.before" "$D/copy.json"
run "convert into a stack's place" st convert "$F/base.json" --envelope checkpoint --checkpoint-stack organization/shop/dev -o "$D/other.json"
check_rc 1; check_err_has "refusing to change '$D/other.json': it is not where it claims to be"
check_absent "$D/other.json"
run "a dry run still reports" st protect --dry-run --backend "$B" --stack shop/copy logs
check_rc 1; check_err_has "refusing to change 'shop/copy'"
# a checkpoint file outside any backend whose URNs name another stack than it does
sed 's/organization\/shop\/dev/organization\/shop\/prod/' "$D/dev.json" > "$T/cp.json"
cp "$T/cp.json" "$T/cp.before"
run "a checkpoint whose URNs name another stack" st protect "$T/cp.json" logs
check_rc 1; check_err_has "refusing to change '$T/cp.json': it is not where it claims to be"
check_err_has "[place/urn-mismatch] $NRES resource URNs name stack 'dev' of project 'shop' (the first: urn:pulumi:dev::shop::pulumi:pulumi:Stack::shop-dev), but the checkpoint names stack 'prod' of project 'shop'"
check_same "$T/cp.before" "$T/cp.json"
# an export file names no stack of its own: edited as before
cp "$F/base.json" "$T/export.json"
run "an export file is not refused" st protect "$T/export.json" logs
check_rc 0

# ---- edit: a deployment of another stack, Pulumi's `stack import` rule ----
sed 's/urn:pulumi:dev::/urn:pulumi:prod::/g' "$F/base.json" > "$T/prod.json"
cp "$D/dev.json" "$T/dev.before"
run "edit --from another stack's deployment" st edit --from "$T/prod.json" --backend "$B" --stack shop/dev
check_rc 1
check_err_has "statetool: error: resource 'urn:pulumi:prod::shop::pulumi:pulumi:Stack::shop-dev' is from a different stack (prod != dev)
statetool: error: resource 'urn:pulumi:prod::shop::pulumi:providers:aws::default_6_0_0' is from a different stack (prod != dev)"
check_err_has "statetool: error: importing this file could be dangerous; rerun with --force to proceed anyway"
cp "$T/err" "$T/err.import"
run "one line per resource" grep -c 'is from a different stack' "$T/err.import"
check_out "$NRES"
check_same "$T/dev.before" "$D/dev.json"; check_absent "$D/dev.json.bak"
sed 's/::shop::/::web::/g' "$F/base.json" > "$T/web.json"
run "edit --from another project's deployment" st edit --from "$T/web.json" --backend "$B" --stack shop/dev
check_rc 1
check_err_has "statetool: error: resource 'urn:pulumi:dev::web::pulumi:pulumi:Stack::shop-dev' is from a different project (web != shop)"
check_same "$T/dev.before" "$D/dev.json"
cp "$F/base.json" "$T/plain.json"
run "into a plain file: its own stack" st edit --from "$T/prod.json" "$T/plain.json"
check_rc 1; check_err_has "is from a different stack (prod != dev)"; check_same "$F/base.json" "$T/plain.json"
run "edit --from --force" st edit --force --from "$T/prod.json" --backend "$B" --stack shop/dev
check_rc 0
check_err_has "statetool: warning: resource 'urn:pulumi:prod::shop::pulumi:pulumi:Stack::shop-dev' is from a different stack (prod != dev)"
check_err_has "statetool: warning: [urn/stack-mismatch] the URN names stack 'prod' of project 'shop', but the state belongs to stack 'dev' of project 'shop' (at /checkpoint/latest/resources/0/urn)"
check_out_has "State updated"
check_same "$T/dev.before" "$D/dev.json.bak"
run "forced: now out of its place, so refused" st protect --backend "$B" --stack shop/dev logs
check_rc 1; check_err_has "[place/urn-mismatch] $NRES resource URNs name stack 'prod' of project 'shop'"
run "and back, with the right deployment" st edit --from "$F/base.json" --backend "$B" --stack shop/dev
check_rc 0
run "in its place again" st protect --backend "$B" --stack shop/dev logs
check_rc 0
# a save writes the place's name as the checkpoint's stack, as Pulumi's saveStack does
# (D16): shop/copy, a copy of dev, given URNs of its own with edit --force, becomes shop/copy's
# state in full (before, its checkpoint kept 'organization/shop/dev': place/stack-mismatch
# again); a state already naming its place is written as it was
sed 's/urn:pulumi:dev::/urn:pulumi:copy::/g' "$F/base.json" > "$T/copyurns.json"
st convert "$T/copyurns.json" --envelope checkpoint --checkpoint-stack organization/shop/copy -o "$T/copy.want" >/dev/null
cp "$D/copy.json" "$T/copy.before"
run "edit --force: a copy gets URNs of its own" st edit --force --from "$T/copyurns.json" --backend "$B" --stack shop/copy
check_rc 0; check_out_has "State updated"
check_same "$T/copy.want" "$D/copy.json"
check_same "$T/copy.before" "$D/copy.json.bak"
run "the copy is in its place" st validate --backend "$B" --stack shop/copy
check_rc 0; check_out "shop/copy: valid, 0 errors, 0 warnings ($NRES resources)"
run "a save of a state in its place keeps its name" st unprotect --backend "$B" --stack shop/copy --all
check_rc 0
run "its checkpoint's stack" "$JSONGET" checkpoint.stack < "$D/copy.json"
check_out "organization/shop/copy"
# the copy back as it was for what follows
cp "$T/copy.before" "$D/copy.json"; rm -f "$D/copy.json.bak"

# ---- edit: a result with warnings the state did not have ----
cp "$F/base.json" "$T/w.json"
# a secret in plaintext: valid, with a warning
jq '.deployment.resources[11].outputs.pw = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "plaintext": "\"hunter2\""}' "$F/base.json" > "$T/warn.json"
run "a new warning" st edit --from "$T/warn.json" "$T/w.json"
check_rc 1
check_err "statetool: error: the edited deployment has 1 warning the state did not have; nothing written (rerun with --force to write it anyway):
  [secrets/plaintext] secret stored as plaintext (as \`pulumi stack export --show-secrets\` writes it); \`statetool secrets encrypt\` encrypts it
    at /deployment/resources/11/outputs/pw"
check_same "$F/base.json" "$T/w.json"
run "a new warning, forced" st edit --force --from "$T/warn.json" "$T/w.json"
check_rc 0
check_err "statetool: warning: [secrets/plaintext] secret stored as plaintext (as \`pulumi stack export --show-secrets\` writes it); \`statetool secrets encrypt\` encrypts it (at /deployment/resources/11/outputs/pw)"
# a warning the state had already is no reason to refuse
sed 's/"protect": true,/"protect": false,/' "$T/warn.json" > "$T/warn2.json"
run "a warning kept" st edit --from "$T/warn2.json" "$T/w.json"
check_rc 0; check_err_empty; check_out_has "State updated"
run "usage: --force is edit's" st edit --help
check_out_has "  --force            write resources of another stack, new warnings, and secrets"
finish
