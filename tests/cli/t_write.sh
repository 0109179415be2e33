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

# time.Time values as Go marshals them (RFC3339Nano, audit26a A12): the fraction to nanoseconds
# without trailing zeros, a zero offset as Z; an offset Go cannot marshal (+24:00) stays
printf '{"version":3,"deployment":{"manifest":{"time":"2024-01-02T03:04:05.120+00:00","magic":"","version":""},"resources":[{"urn":"urn:pulumi:s::p::a:b:C::x","custom":false,"type":"a:b:C","created":"2024-01-02T03:04:05.000000000-08:00","modified":"2024-01-02T03:04:05,1234567891-00:00"},{"urn":"urn:pulumi:s::p::a:b:C::y","custom":false,"type":"a:b:C","created":"2024-01-02T03:04:05.5+24:00","modified":"2024-01-02T03:04:05Z"}],"metadata":{}}}' > "$T/times.json"
run "canonical: times as Go marshals them" sh -c "'$STATETOOL' convert --canonical '$T/times.json' -o - | grep -o '\"[a-z]*\":\"20[^\"]*\"'"
check_out '"time":"2024-01-02T03:04:05.12Z"
"created":"2024-01-02T03:04:05-08:00"
"modified":"2024-01-02T03:04:05.123456789Z"
"created":"2024-01-02T03:04:05.5+24:00"
"modified":"2024-01-02T03:04:05Z"'
# An edit writes times as read (DESIGN, "Times as read"): Pulumi re-marshals every time of the
# snapshot on `pulumi state protect`, but the times of files Pulumi wrote are already Go's form
# (here 184 of them, and the manifest's, unchanged by --canonical), so only hand-written ones
# differ, and a load and save stays byte for byte
cp "$T/times.json" "$T/tp.json"
run "protect: the edited resource's times as read" st protect "$T/tp.json" urn:pulumi:s::p::a:b:C::x
check_rc 0
run "protect: the times" sh -c "grep -o '\"[a-z]*\":\"20[^\"]*\"' '$T/tp.json'"
check_out '"time":"2024-01-02T03:04:05.120+00:00"
"created":"2024-01-02T03:04:05.000000000-08:00"
"modified":"2024-01-02T03:04:05,1234567891-00:00"
"created":"2024-01-02T03:04:05.5+24:00"
"modified":"2024-01-02T03:04:05Z"'
run "protect: x protected" sh -c "grep -c '\"protect\":true' '$T/tp.json'"
check_out 1
time_strings() { grep -o '"\(created\|modified\|time\)": *"[^"]*"' "$1"; }
st convert --canonical "$R/29-tfmigrate-state-flat.json" -o "$T/c29.json"
time_strings "$R/29-tfmigrate-state-flat.json" > "$T/t29.in"; time_strings "$T/c29.json" > "$T/t29.out"
current="Pulumi's own times are Go's form"; check_same "$T/t29.in" "$T/t29.out"
run "Pulumi's own times: how many" sh -c "grep -c '\"\(created\|modified\)\"' '$T/t29.in'"
check_out 184

# gzip: a new file has the header Go's compress/gzip writes (no name, no time, XFL 0, OS 255);
# the deflate data is zlib's.
run "gzip header" sh -c "'$STATETOOL' convert --gzip '$R/27-tfmigrate-diy-testupsert.json' -o '$T/n.json.gz' && od -An -tx1 -N10 '$T/n.json.gz' | tr -d ' \n'; echo"
check_out "1f8b08000000000000ff"
run "gzip content" sh -c "gzip -dc '$T/n.json.gz' | cmp - '$R/27-tfmigrate-diy-testupsert.json' && echo same"
check_out "same"
# A compressed file whose content would not change is not rewritten (statetool's deflate
# bytes would differ from the file's): every command that saves.
F=$R/30-azure-network.json
fresh_gz() { gzip -9 -c "$F" > "$T/g.json.gz"; cp "$T/g.json.gz" "$T/orig.gz"; rm -f "$T/g.json.gz.bak"; }
untouched() {
	if cmp -s "$T/g.json.gz" "$T/orig.gz" && [ ! -e "$T/g.json.gz.bak" ]; then ok; else bad "$current: the file was rewritten"; fi
}
zcat "$F" > "$T/same.json" 2>/dev/null || cp "$F" "$T/same.json"
P='urn:pulumi:test::network::pulumi:providers:azure::default::7149917b-4139-433d-bb20-1e7b6af4f664'
for cmd in "convert $T/g.json.gz -o $T/g.json.gz" "convert --gzip $T/g.json.gz -o $T/g.json.gz" \
	"migrate $T/g.json.gz" "untaint --all $T/g.json.gz" "unprotect --all $T/g.json.gz" \
	"repair $T/g.json.gz" "pending clear $T/g.json.gz" "edit --from $T/same.json $T/g.json.gz" \
	"replace-provider $T/g.json.gz $P $P"; do
	fresh_gz
	run "no change: $cmd" sh -c "EDITOR=true '$STATETOOL' $cmd"
	check_rc 0; untouched
done
fresh_gz
run "no change: edit" env EDITOR=true "$STATETOOL" edit "$T/g.json.gz"
check_rc 0; untouched
fresh_gz
run "a change is written" st taint "$T/g.json.gz" default
check_rc 0
if [ -e "$T/g.json.gz.bak" ] && cmp -s "$T/g.json.gz.bak" "$T/orig.gz"; then ok; else bad "no backup of the old bytes"; fi
run "written gzip header" sh -c "od -An -tx1 -N10 '$T/g.json.gz' | tr -d ' \n'; echo"
check_out "1f8b08000000000000ff"

finish
