#!/bin/sh
# Defects an audit of the CLI found (help and docs against behaviour, bad input): each case
# with its exact exit code and message, and every refused file left as it was.
. "$(dirname "$0")/lib.sh"
G=$T/good.json
cp "$FIXTURES/edit/base.json" "$G"

# edit --from checks an envelope's version as a load does
sed '2s/"version": 3,/"version": 99,/' "$FIXTURES/edit/base.json" >"$T/v99.json"
cp "$G" "$T/e.json"
run "edit --from version 99" st edit --from "$T/v99.json" "$T/e.json"
check_rc 1
check_err "statetool: error: $T/v99.json: this stack's deployment version is too new (version 99; the newest supported is 4)"
check_same "$G" "$T/e.json"; check_absent "$T/e.json.bak"
run "list version 99" st list "$T/v99.json"
check_rc 1
check_err "statetool: error: $T/v99.json: this stack's deployment version is too new (version 99; the newest supported is 4)"

finish
