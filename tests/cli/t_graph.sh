#!/bin/sh
# graph: DOT of parent, provider, dependency (dependencies + propertyDependencies), deletedWith
# and replaceWith edges in a stable order; --urn/--type filters and the edges they drop; SVG
# through Graphviz's dot (installed by the quick start, so CI draws SVG for real) and the error
# without it.
. "$(dirname "$0")/lib.sh"
G=$FIXTURES/graph/g.json

run "help" st graph --help
check_rc 0; check_out_has "usage: statetool graph"; check_out_has "--format dot|svg"

run "dot" st graph "$G"
check_rc 0; check_err_empty
check_out 'digraph state {
	rankdir=LR;
	node [fontsize=10];
	edge [fontsize=8];
	"urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev" [label="proj-dev\npulumi:pulumi:Stack", shape=ellipse];
	"urn:pulumi:dev::proj::pulumi:providers:aws::default" [label="default\npulumi:providers:aws", shape=hexagon];
	"urn:pulumi:dev::proj::my:index:App::app" [label="app\nmy:index:App", shape=ellipse];
	"urn:pulumi:dev::proj::my:index:App$aws:s3/bucket:Bucket::data" [label="data\naws:s3/bucket:Bucket", shape=box];
	"urn:pulumi:dev::proj::my:index:App$aws:s3/bucket:Bucket::old" [label="old\naws:s3/bucket:Bucket", shape=box, style=dashed];
	"urn:pulumi:dev::proj::my:index:App$aws:lambda/function:Function::fn" [label="fn\naws:lambda/function:Function", shape=box];
	"urn:pulumi:dev::proj::ext:index:Thing::gone" [label="missing", style=dashed, color=grey];
	"urn:pulumi:dev::proj::pulumi:providers:aws::default" -> "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev" [kind=parent, style=solid, color=black];
	"urn:pulumi:dev::proj::my:index:App::app" -> "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev" [kind=parent, style=solid, color=black];
	"urn:pulumi:dev::proj::my:index:App$aws:s3/bucket:Bucket::data" -> "urn:pulumi:dev::proj::my:index:App::app" [kind=parent, style=solid, color=black];
	"urn:pulumi:dev::proj::my:index:App$aws:s3/bucket:Bucket::data" -> "urn:pulumi:dev::proj::pulumi:providers:aws::default" [kind=provider, style=bold, color=blue];
	"urn:pulumi:dev::proj::my:index:App$aws:s3/bucket:Bucket::old" -> "urn:pulumi:dev::proj::my:index:App::app" [kind=parent, style=solid, color=black];
	"urn:pulumi:dev::proj::my:index:App$aws:s3/bucket:Bucket::old" -> "urn:pulumi:dev::proj::pulumi:providers:aws::default" [kind=provider, style=bold, color=blue];
	"urn:pulumi:dev::proj::my:index:App$aws:lambda/function:Function::fn" -> "urn:pulumi:dev::proj::my:index:App::app" [kind=parent, style=solid, color=black];
	"urn:pulumi:dev::proj::my:index:App$aws:lambda/function:Function::fn" -> "urn:pulumi:dev::proj::pulumi:providers:aws::default" [kind=provider, style=bold, color=blue];
	"urn:pulumi:dev::proj::my:index:App$aws:lambda/function:Function::fn" -> "urn:pulumi:dev::proj::my:index:App$aws:s3/bucket:Bucket::data" [kind=dependency, style=dashed, label="bucket,environment"];
	"urn:pulumi:dev::proj::my:index:App$aws:lambda/function:Function::fn" -> "urn:pulumi:dev::proj::ext:index:Thing::gone" [kind=dependency, style=dashed];
	"urn:pulumi:dev::proj::my:index:App$aws:lambda/function:Function::fn" -> "urn:pulumi:dev::proj::my:index:App$aws:s3/bucket:Bucket::old" [kind=dependency, style=dashed, label="role"];
	"urn:pulumi:dev::proj::my:index:App$aws:lambda/function:Function::fn" -> "urn:pulumi:dev::proj::my:index:App::app" [kind=deletedWith, style=dotted, color=red];
	"urn:pulumi:dev::proj::my:index:App$aws:lambda/function:Function::fn" -> "urn:pulumi:dev::proj::my:index:App$aws:s3/bucket:Bucket::data" [kind=replaceWith, style=dotted, color=orange];
}'
# a URN with a live copy and a delete: true copy: one node, the edges of both copies, each kind
# and target once; the one only the old copy holds is marked copy=delete
N='urn:pulumi:dev::p::k8s:core/v1:Namespace'
V='urn:pulumi:dev::p::k8s:core/v1:PersistentVolumeClaim::pvc'
printf '{"version":3,"deployment":{"manifest":{"time":"2024-01-02T03:04:05Z","magic":"","version":""},"resources":[%s]}}\n' \
	"{\"urn\":\"$N::old\",\"custom\":true,\"id\":\"o\",\"type\":\"k8s:core/v1:Namespace\",\"delete\":true},{\"urn\":\"$N::new\",\"custom\":true,\"id\":\"n\",\"type\":\"k8s:core/v1:Namespace\"},{\"urn\":\"$V\",\"custom\":true,\"id\":\"v\",\"type\":\"k8s:core/v1:PersistentVolumeClaim\",\"dependencies\":[\"$N::old\"],\"delete\":true},{\"urn\":\"$V\",\"custom\":true,\"id\":\"v\",\"type\":\"k8s:core/v1:PersistentVolumeClaim\",\"dependencies\":[\"$N::new\"]}" >"$T/copies.json"
run "copies: the edges of each" st graph "$T/copies.json"
check_rc 0
check_out "digraph state {
	rankdir=LR;
	node [fontsize=10];
	edge [fontsize=8];
	\"$N::old\" [label=\"old\\nk8s:core/v1:Namespace\", shape=box, style=dashed];
	\"$N::new\" [label=\"new\\nk8s:core/v1:Namespace\", shape=box];
	\"$V\" [label=\"pvc\\nk8s:core/v1:PersistentVolumeClaim\", shape=box];
	\"$V\" -> \"$N::new\" [kind=dependency, style=dashed];
	\"$V\" -> \"$N::old\" [kind=dependency, style=dashed, copy=delete];
}"
run "same bytes twice" sh -c "'$STATETOOL' graph '$G' > '$T/1.dot' && '$STATETOOL' graph '$G' > '$T/2.dot' && cmp '$T/1.dot' '$T/2.dot'"
check_rc 0

run "filter by URN" st graph --urn '*Bucket::*' --urn '*::app' "$G"
check_rc 0
check_out 'digraph state {
	// filtered: 3 resources kept, 3 edges to resources filtered out dropped
	rankdir=LR;
	node [fontsize=10];
	edge [fontsize=8];
	"urn:pulumi:dev::proj::my:index:App::app" [label="app\nmy:index:App", shape=ellipse];
	"urn:pulumi:dev::proj::my:index:App$aws:s3/bucket:Bucket::data" [label="data\naws:s3/bucket:Bucket", shape=box];
	"urn:pulumi:dev::proj::my:index:App$aws:s3/bucket:Bucket::old" [label="old\naws:s3/bucket:Bucket", shape=box, style=dashed];
	"urn:pulumi:dev::proj::my:index:App$aws:s3/bucket:Bucket::data" -> "urn:pulumi:dev::proj::my:index:App::app" [kind=parent, style=solid, color=black];
	"urn:pulumi:dev::proj::my:index:App$aws:s3/bucket:Bucket::old" -> "urn:pulumi:dev::proj::my:index:App::app" [kind=parent, style=solid, color=black];
}'
run "filter by type" st graph --type 'aws:lambda/*' --type pulumi:providers:aws "$G"
check_rc 0
check_out 'digraph state {
	// filtered: 2 resources kept, 7 edges to resources filtered out dropped
	rankdir=LR;
	node [fontsize=10];
	edge [fontsize=8];
	"urn:pulumi:dev::proj::pulumi:providers:aws::default" [label="default\npulumi:providers:aws", shape=hexagon];
	"urn:pulumi:dev::proj::my:index:App$aws:lambda/function:Function::fn" [label="fn\naws:lambda/function:Function", shape=box];
	"urn:pulumi:dev::proj::my:index:App$aws:lambda/function:Function::fn" -> "urn:pulumi:dev::proj::pulumi:providers:aws::default" [kind=provider, style=bold, color=blue];
}'
run "both filters" st graph --urn '*::data' --type 'aws:lambda/*' "$G"
check_rc 0; check_out_has '// filtered: 0 resources kept, 0 edges to resources filtered out dropped'
run "-o FILE" st graph "$G" -o "$T/g.dot"
check_rc 0; check_out_empty; check_same "$T/g.dot" "$T/1.dot"
run "stack of a backend" sh -c "mkdir -p '$T/b/.pulumi/stacks/proj' && printf 'version: 1\n' > '$T/b/.pulumi/meta.yaml' && '$STATETOOL' convert '$G' --envelope checkpoint --checkpoint-stack organization/proj/dev -o '$T/b/.pulumi/stacks/proj/dev.json' && '$STATETOOL' graph --backend '$T/b' --stack proj/dev"
check_rc 0; check_out_has '[kind=replaceWith, style=dotted, color=orange];'

if command -v dot >/dev/null; then
	run "svg" st graph --format svg "$G"
	check_rc 0; check_err_empty; check_out_has '<svg'; check_out_has '<title>urn:pulumi:dev::proj::my:index:App::app</title>'
	run "-o x.svg" st graph "$G" -o "$T/g.svg"
	check_rc 0; check_out_empty
	run "the svg file" head -c 200 "$T/g.svg"
	check_out_has '<?xml version="1.0"'
else
	skip_or_fail graphviz "the SVG: no Graphviz dot on PATH (sh quickstart check installs it)"
fi
# without dot: a PATH holding everything but dot
mkdir "$T/nodot"
for f in /usr/local/bin/* /usr/bin/* /bin/*; do
	n=$(basename "$f")
	[ "$n" = dot ] || [ -e "$T/nodot/$n" ] || ln -s "$f" "$T/nodot/$n" 2>/dev/null
done
run "svg without dot" env PATH="$T/nodot" "$STATETOOL" graph --format svg "$G"
check_rc 1; check_out_empty
check_err "statetool: error: --format svg needs Graphviz's dot, which is not installed (not on PATH): install graphviz, or write DOT (--format dot)"
run "-o x.svg without dot" env PATH="$T/nodot" "$STATETOOL" graph "$G" -o "$T/none.svg"
check_rc 1; check_absent "$T/none.svg"
run "bad format" st graph --format png "$G"
check_rc 2; check_err_has "unknown format 'png' (dot or svg)"
run "no state" st graph
check_rc 2; check_err_has "missing STATE"
finish
