#!/bin/sh
# Help, version, usage errors, list, show.
. "$(dirname "$0")/lib.sh"
P=$FIXTURES/pulumi

run "version" st --version
check_rc 0; check_out "statetool 0.1.0"
run "help" st --help
check_rc 0; check_out_has "usage: statetool <command>"; check_out_has "Exit status: 0 success"
run "no command" st
check_rc 2
run "unknown command" st frobnicate
check_rc 2; check_err_has "statetool: error: unknown command 'frobnicate'"
for c in list show convert migrate stacks unlock; do
	run "$c --help" st $c --help
	check_rc 0; check_out_has "usage: statetool $c"; check_err_empty
	run "help $c" st help $c
	check_rc 0; check_out_has "usage: statetool $c"
done
run "bad option" st list --nope x
check_rc 2; check_err_has "Try 'statetool list --help'"
run "missing state" st list
check_rc 2; check_err_has "missing STATE"
run "missing file" st list /nonexistent/x.json
check_rc 1; check_err "statetool: error: cannot open '/nonexistent/x.json': No such file or directory"

run "list" st list "$P/valid-deployment-v3.json"
check_rc 0
check_out 'urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev          pulumi:pulumi:Stack   -                                     component
urn:pulumi:dev::proj::pulumi:providers:aws::default_6_0_0    pulumi:providers:aws  11111111-2222-3333-4444-555555555555  custom
urn:pulumi:dev::proj::my:index:Comp::c                       my:index:Comp         -                                     component
urn:pulumi:dev::proj::my:index:Comp$aws:s3/bucket:Bucket::b  aws:s3/bucket:Bucket  b-123                                 custom,protect'
run "list --json" st list --json "$P/valid-deployment-v3.json"
check_rc 0; check_out_has '"format_version": 1'; check_out_has '"flags": [
                "custom",
                "protect"
            ]'
run "list stdin" sh -c "gzip -c '$P/todo.json' | '$STATETOOL' list - | wc -l"
check_rc 0; check_out "$(grep -c '"urn"' "$P/todo.json")"

run "show by name" st show --json "$P/valid-deployment-v3.json" c
check_rc 0
check_out '{
    "urn": "urn:pulumi:dev::proj::my:index:Comp::c",
    "custom": false,
    "type": "my:index:Comp",
    "parent": "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev"
}'
run "show miss" st show "$P/valid-deployment-v3.json" cc
check_rc 1; check_err_has 'No such resource "cc" exists in the current state'
check_err_has "Did you mean:"
run "show one arg" st show "$P/valid-deployment-v3.json"
check_rc 2
finish
