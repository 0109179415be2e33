#!/bin/sh
# Write as Pulumi writes: the version 4 feature gate, convert --canonical, gzip.
. "$(dirname "$0")/lib.sh"
W=$FIXTURES/write
PW="correct horse battery staple"
version_line() { tr -d ' \n' < "$1" | sed 's/"deployment".*//'; echo; }

# A bytestring inside an encrypted secret needs byteString; statetool cannot see it there, so
# the feature the state had is kept through an edit (it was dropped: version 3).
cp "$W/bytestring-in-secret.json" "$T/bs.json"
run "edit of a state with a bytestring in a ciphertext" st protect --all "$T/bs.json"
check_rc 0
run "byteString kept" version_line "$T/bs.json"
check_out '{"version":4,"features":["byteString"],'
run "still valid" st validate "$T/bs.json"
check_rc 0
run "the secret holds it" env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" secrets show "$T/bs.json" b
check_out_has '\"803fd3297a5875dc03ca845dda5d2a98\"'
# Seen in a plaintext secret, it is needed; encrypting it keeps it.
sed 's/"version": 4,/"version": 3,/; /"features": \[/,/\],/d' "$W/bytestring-in-secret.json" > "$T/bs3.json"
env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" secrets show "$T/bs3.json" -o "$T/plain.json" >/dev/null 2>&1
run "a plaintext secret's bytestring counts" st taint "$T/plain.json" b
check_rc 0
run "byteString added" version_line "$T/plain.json"
check_out '{"version":4,"features":["byteString","taint"],'
run "encrypted: still there" env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" secrets encrypt "$T/plain.json"
check_rc 0
run "byteString after encrypt" version_line "$T/plain.json"
check_out '{"version":4,"features":["byteString","taint"],'

# convert --canonical: Go's output for every struct. Files a current Pulumi wrote are their own
# canonical form; older ones gain what Go always writes (here the deployment's metadata).
R=$FIXTURES/realworld
for f in 27-tfmigrate-diy-testupsert 35-cloud-containers-v2; do
	run "canonical $f" st convert --canonical "$R/$f.json" -o "$T/c.json"
	check_rc 0; check_same "$R/$f.json" "$T/c.json"
done
run "canonical: Go's keys" st convert --canonical "$R/18-azenv-dev-capitalkeys.json" -o "$T/c.json"
check_rc 0
sed 's/"Stack"/"stack"/; s/"Latest"/"latest"/' "$R/18-azenv-dev-capitalkeys.json" > "$T/c18.json"
check_same "$T/c18.json" "$T/c.json"
run "canonical of an older file" st convert --canonical "$R/01-kloudlib-local.json" -o "$T/c.json"
check_rc 0
run "only the metadata added" sh -c "diff '$R/01-kloudlib-local.json' '$T/c.json'"
check_out '31c31,32
<             ]
---
>             ],
>             "metadata": {}'

finish
