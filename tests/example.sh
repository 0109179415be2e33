#!/bin/sh
# The example program a backend author copies: protect a resource, saved atomically.
. "$(dirname "$0")/cli/lib.sh"
EX=${top_builddir:-.}/examples/backend_example
cp "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/s.json"
run "example" "$EX" "$T/s.json" c
check_rc 0; check_out "$T/s.json: envelope export, version 3, 4 resources
protected 1 resource(s)"
run "protected" st list "$T/s.json"
if grep -qE '^urn:pulumi:dev::proj::my:index:Comp::c +my:index:Comp +- +component,protect$' "$T/out"; then ok; else bad "c is not protected"; fi
check_same "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/s.json.bak"
run "example miss" "$EX" "$T/s.json" nothing
check_rc 1; check_err_has 'No such resource "nothing"'
finish
