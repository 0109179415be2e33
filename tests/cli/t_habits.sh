#!/bin/sh
# Pulumi's habits: -s/--stack, --yes/-y, the backend from PULUMI_BACKEND_URL or the project's
# Pulumi.yaml (with Pulumi's precedence), and a mistyped backend is an error.
. "$(dirname "$0")/lib.sh"
P=$FIXTURES/pulumi
B=$T/backend
mkdir -p "$B/.pulumi/stacks/proj"
printf 'version: 1\n' > "$B/.pulumi/meta.yaml"
cp "$P/valid-checkpoint-v3-diy.json" "$B/.pulumi/stacks/proj/dev.json"
unset PULUMI_BACKEND_URL
BUCKET='urn:pulumi:dev::proj::my:index:Comp$aws:s3/bucket:Bucket::b'

# -s is --stack on every command that takes a stack: the same output, byte for byte.
for cmd in "list" "show $BUCKET" "validate" "convert" "migrate --dry-run" "pending" \
	"protect --dry-run $BUCKET" "unprotect --dry-run $BUCKET" "taint --dry-run $BUCKET" \
	"untaint --dry-run $BUCKET" "delete --dry-run --force $BUCKET" "repair --dry-run" \
	"rename --dry-run $BUCKET b2" "secrets show" "graph" "history" "unlock" \
	"replace-provider --dry-run a b" "restore --dry-run" "edit --dry-run --from $P/valid-checkpoint-v3-diy.json"; do
	set -- $cmd
	c=$1; shift
	run "$c --stack" st "$c" --backend "$B" --stack proj/dev "$@"
	cp "$T/out" "$T/long.out"; cp "$T/err" "$T/long.err"; lrc=$rc
	run "$c -s" st "$c" --backend "$B" -s proj/dev "$@"
	check_rc "$lrc"; check_same "$T/long.out" "$T/out"; check_same "$T/long.err" "$T/err"
done
run "-s with a file too" st list --backend "$B" -s proj/dev "$P/todo.json"
check_rc 2; check_err "statetool: error: give either a STATE file or --stack, not both
Try 'statetool list --help' for more information."
run "import -s" st import --backend "$B" -s proj/dev --no-read --dry-run aws:s3/bucket:Bucket b9 b-9
check_rc 0; check_out_has 'would add urn:pulumi:dev::proj::aws:s3/bucket:Bucket::b9 (ID b-9)'
run "import -s and --dest" st import --backend "$B" -s proj/dev --dest x.json --no-read a:b:C n i
check_rc 2; check_err_has "give --dest or --stack, not both"

# --yes/-y: accepted by every command (and subcommand), and ignored.
st --help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p' > "$T/commands"
run "commands listed" wc -l < "$T/commands"
if [ "$(cat "$T/commands")" != "" ] && [ "$(wc -l < "$T/commands")" -ge 20 ]; then ok; else bad "too few commands"; fi
while read -r c; do
	case $c in
	index) sub=update ;;
	secrets) sub=show ;;
	*) sub= ;;
	esac
	run "$c --yes" st $c $sub --yes -y --help
	check_rc 0; check_out_has "usage: statetool $c"; check_err_empty
done < "$T/commands"
for sub in "pending clear" "secrets rekey" "secrets encrypt" "secrets verify"; do
	run "$sub --yes" st $sub --yes --help
	check_rc 0; check_err_empty
done
cp "$B/.pulumi/stacks/proj/dev.json" "$T/dev.orig"
run "protect -y writes" st unprotect --yes --backend "$B" -s proj/dev "$BUCKET"
check_rc 0; check_err_empty
run "undone" st restore -y --backend "$B" -s proj/dev
check_rc 0; check_same "$T/dev.orig" "$B/.pulumi/stacks/proj/dev.json"

# The backend: --backend, else PULUMI_BACKEND_URL, else the project's Pulumi.yaml backend.url,
# found upwards from the working directory (Pulumi's precedence).
st stacks --backend "$B" > "$T/stacks.expected"
O=$T/other
mkdir -p "$O/.pulumi/stacks/p2" "$T/proj/a/b"
printf 'version: 1\n' > "$O/.pulumi/meta.yaml"
printf '{"version":3,"checkpoint":{"stack":"organization/p2/s"}}' > "$O/.pulumi/stacks/p2/s.json"
printf 'name: proj\nruntime: nodejs\nbackend:\n  url: file://%s\n' "$B" > "$T/proj/Pulumi.yaml"
run "Pulumi.yaml upwards" sh -c "cd '$T/proj/a/b' && '$STATETOOL' stacks"
check_rc 0; check_same "$T/stacks.expected" "$T/out"
run "Pulumi.yaml -s" sh -c "cd '$T/proj/a' && '$STATETOOL' list -s proj/dev"
check_rc 0; check_out_has "$BUCKET"
run "env beats Pulumi.yaml" sh -c "cd '$T/proj/a' && PULUMI_BACKEND_URL='$O' '$STATETOOL' stacks"
check_rc 0; check_out_has "organization/p2/s"
run "empty env is unset" sh -c "cd '$T/proj/a' && PULUMI_BACKEND_URL= '$STATETOOL' stacks"
check_rc 0; check_same "$T/stacks.expected" "$T/out"
run "--backend beats env" sh -c "cd '$T/proj/a' && PULUMI_BACKEND_URL='$O' '$STATETOOL' stacks --backend '$B'"
check_rc 0; check_same "$T/stacks.expected" "$T/out"
# the nearest project file decides, even without backend.url; Pulumi.json before Pulumi.yaml
printf 'name: inner\nruntime: go\n' > "$T/proj/a/Pulumi.yml"
run "nearest project has no backend" sh -c "cd '$T/proj/a/b' && '$STATETOOL' stacks"
check_rc 2; check_err "statetool: error: no backend given ('$T/proj/a/Pulumi.yml' names no backend.url): use --backend URL, set PULUMI_BACKEND_URL, or run in a project whose Pulumi.yaml sets backend.url"
printf '{"name": "inner", "runtime": "go", "backend": {"url": "%s"}}' "$O" > "$T/proj/a/Pulumi.json"
run "Pulumi.json first" sh -c "cd '$T/proj/a/b' && '$STATETOOL' stacks"
check_rc 0; check_out_has "organization/p2/s"
rm "$T/proj/a/Pulumi.json" "$T/proj/a/Pulumi.yml"
printf 'name: proj\nbackend: [\n' > "$T/proj/Pulumi.yaml"
run "Pulumi.yaml not YAML" sh -c "cd '$T/proj/a' && '$STATETOOL' stacks"
check_rc 1; check_err "statetool: error: could not unmarshal '$T/proj/Pulumi.yaml': yaml: line 3: did not find expected node content"
rm "$T/proj/Pulumi.yaml"
run "no backend at all" sh -c "cd '$T/proj/a' && '$STATETOOL' stacks"
check_rc 2; check_err "statetool: error: no backend given: use --backend URL, set PULUMI_BACKEND_URL, or run in a project whose Pulumi.yaml sets backend.url"

# A mistyped backend is an error, never "0 stacks".
mkdir -p "$T/empty"
for cmd in "stacks" "validate" "index update" "query" "list -s proj/dev" "validate -s proj/dev" \
	"protect -s proj/dev x"; do
	run "$cmd: no directory" st $cmd --backend "$T/nope"
	check_rc 1; check_err "statetool: error: backend directory '$T/nope' does not exist"
	run "$cmd: no .pulumi" st $cmd --backend "$T/empty"
	check_rc 1; check_out_empty
	check_err "statetool: error: no Pulumi backend at '$T/empty': it has no .pulumi directory (a mistyped path?)"
done
run "env: no .pulumi" env PULUMI_BACKEND_URL="file://$T/empty" "$STATETOOL" validate
check_rc 1; check_err "statetool: error: no Pulumi backend at 'file://$T/empty': it has no .pulumi directory (a mistyped path?)"
run "nothing created" find "$T/empty" "$T/nope"
check_out "$T/empty"

# The index never answers from stale data silently.
I=$T/ib
mkdir -p "$I/.pulumi/stacks/proj" "$I/.pulumi/stacks/app"
printf 'version: 1\n' > "$I/.pulumi/meta.yaml"
cp "$P/valid-checkpoint-v3-diy.json" "$I/.pulumi/stacks/proj/dev.json"
sed 's/dev::proj::/prod::app::/g; s/organization\/proj\/dev/organization\/app\/prod/g; s/proj-dev/app-prod/' \
	"$P/valid-checkpoint-v3-diy.json" > "$I/.pulumi/stacks/app/prod.json"
run "index" st index update --backend "$I"
check_rc 0
COMP='urn:pulumi:dev::proj::my:index:Comp::c'
run "query -s project/stack" st query --backend "$I" -s proj/dev --type my:index:Comp --csv
check_rc 0; check_err_empty
check_out "stack,urn,type,id,import_id,parent,provider,flags
organization/proj/dev,$COMP,my:index:Comp,,,urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev,,component"
run "query --stack org/project/stack" st query --backend "$I" --stack organization/app/prod --type my:index:Comp --csv
check_rc 0; check_out_has "organization/app/prod,urn:pulumi:prod::app::my:index:Comp::c"
run "query --stack bare name" st query --backend "$I" --stack prod --type my:index:Comp --csv
check_rc 0; check_out_has "organization/app/prod,"
run "query --stack glob" st query --backend "$I" --stack 'proj/*' --type my:index:Comp --csv
check_rc 0; check_out_has "organization/proj/dev,"
run "query no match" st query --backend "$I" --stack nope/dev
check_rc 0; check_out "no resources"; check_err_empty
# statetool's own change updates the index (only that stack)
run "protect" st protect --backend "$I" -s proj/dev "$COMP"
check_rc 0
run "own change seen" st query --backend "$I" --protected --type my:index:Comp --csv
check_rc 0; check_err_empty
check_out "stack,urn,type,id,import_id,parent,provider,flags
organization/proj/dev,$COMP,my:index:Comp,,,urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev,,\"component,protect\""
# a change by someone else (Pulumi) is noticed from the listing, and --refresh re-indexes
sleep 1
cp "$I/.pulumi/stacks/proj/dev.json.bak" "$I/.pulumi/stacks/proj/dev.json"
mkdir -p "$I/.pulumi/stacks/new"
sed 's/dev::proj::/s::new::/g; s/organization\/proj\/dev/organization\/new\/s/g; s/proj-dev/new-s/' \
	"$P/valid-checkpoint-v3-diy.json" > "$I/.pulumi/stacks/new/s.json"
rm "$I/.pulumi/stacks/app/prod.json"
run "stale" st query --backend "$I" --protected --type my:index:Comp --csv
check_rc 0
check_err "statetool: warning: stack 'organization/app/prod' is in the index but gone from the backend
statetool: warning: stack 'organization/new/s' is not in the index
statetool: warning: stack 'organization/proj/dev' changed since it was indexed
statetool: warning: the answer may be out of date: rerun with --refresh (or run \`statetool index update\`)"
check_out_has "organization/proj/dev,$COMP"
run "refresh" st query --backend "$I" --protected --type my:index:Comp --refresh
check_rc 0
check_err "statetool: refreshed the index: 2 stacks indexed, 1 removed"
check_out "no resources"
run "fresh" st query --backend "$I" --type my:index:Comp --csv
check_rc 0; check_err_empty
check_out "stack,urn,type,id,import_id,parent,provider,flags
organization/new/s,urn:pulumi:s::new::my:index:Comp::c,my:index:Comp,,,urn:pulumi:s::new::pulumi:pulumi:Stack::new-s,,component
organization/proj/dev,$COMP,my:index:Comp,,,urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev,,component"
# --duplicate-ids: the same bucket in two stacks; the shared provider ID only when asked
run "duplicate ids" st query --backend "$I" --duplicate-ids --csv
check_rc 0; check_err_empty
check_out "stack,urn,type,id,import_id,parent,provider,flags
organization/new/s,urn:pulumi:s::new::my:index:Comp\$aws:s3/bucket:Bucket::b,aws:s3/bucket:Bucket,b-123,,urn:pulumi:s::new::my:index:Comp::c,urn:pulumi:s::new::pulumi:providers:aws::default_6_0_0::11111111-2222-3333-4444-555555555555,\"custom,protect\"
organization/proj/dev,urn:pulumi:dev::proj::my:index:Comp\$aws:s3/bucket:Bucket::b,aws:s3/bucket:Bucket,b-123,,urn:pulumi:dev::proj::my:index:Comp::c,urn:pulumi:dev::proj::pulumi:providers:aws::default_6_0_0::11111111-2222-3333-4444-555555555555,\"custom,protect\""
run "duplicate ids with providers" st query --backend "$I" --duplicate-ids --include-providers --csv
check_rc 0
check_out_has "organization/new/s,urn:pulumi:s::new::pulumi:providers:aws::default_6_0_0,pulumi:providers:aws,11111111-2222-3333-4444-555555555555"
run "include-providers alone" st query --backend "$I" --include-providers
check_rc 2; check_err_has "--include-providers goes with --duplicate-ids"

finish
