#!/bin/sh
# secrets show/verify/encrypt/rekey: passphrase sources, wrong and missing passphrases,
# tampering, rekey of a state and its config, and no plaintext ever on disk.
. "$(dirname "$0")/lib.sh"
P=$FIXTURES/pulumi
V=$FIXTURES/validate
PW="correct horse battery staple"
unset PULUMI_CONFIG_PASSPHRASE PULUMI_CONFIG_PASSPHRASE_FILE PULUMI_CONFIG_PASSPHRASE_NEW PULUMI_CONFIG_PASSPHRASE_NEW_FILE
penv() { env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" "$@"; }

run "show" penv secrets show "$P/valid-deployment-v3.json" b
check_rc 0
check_out_has '"plaintext": "\"hunter2\""'
if grep -q ciphertext "$T/out"; then bad "a ciphertext is left"; else ok; fi
run "show all" penv secrets show "$P/valid-deployment-v3.json"
check_rc 0; check_out_has '"secrets_providers": {'
run "show -o" penv secrets show "$P/valid-deployment-v3.json" -o "$T/shown.json"
check_rc 0
run "show -o mode" stat -c %a "$T/shown.json"
check_out "600"
rm -f "$T/shown.json"
# over an existing world-readable file: the plaintext must not keep its 0644
echo x > "$T/shown.json"
chmod 644 "$T/shown.json"
run "show -o over a 0644 file" penv secrets show "$P/valid-deployment-v3.json" -o "$T/shown.json"
check_rc 0
run "show -o over a 0644 file: mode" stat -c %a "$T/shown.json"
check_out "600"
rm -f "$T/shown.json"
# -o never writes the plaintext over the state it read (or its .bak), nor into a backend's
# .pulumi folder (a stack's object, which Pulumi would read and copy on): exit 2, nothing written
cp "$P/valid-deployment-v3.json" "$T/so.json"; cp "$T/so.json" "$T/so.json.bak"
run "show -o the state itself" penv secrets show "$T/so.json" -o "$T/so.json"
check_rc 2; check_err_has "statetool: error: refusing to write decrypted secrets over '$T/so.json': it is the state (or its .bak); give a file of its own"
check_same "$P/valid-deployment-v3.json" "$T/so.json"
ln -s so.json "$T/so-link.json"
run "show -o a link to the state" penv secrets show "$T/so.json" -o "$T/so-link.json"
check_rc 2; check_same "$P/valid-deployment-v3.json" "$T/so.json"
run "show -o its .bak" penv secrets show "$T/so.json" -o "$T/so.json.bak"
check_rc 2; check_same "$P/valid-deployment-v3.json" "$T/so.json.bak"
cp "$P/valid-deployment-v3.json" "$T/nb.json"
run "show -o its .bak, none there yet" penv secrets show "$T/nb.json" -o "$T/nb.json.bak"
check_rc 2; check_absent "$T/nb.json.bak"
check_err_has "statetool: error: refusing to write decrypted secrets over '$T/nb.json.bak': it is the state (or its .bak)"
SB=$T/sb
mkdir -p "$SB/.pulumi/stacks/proj"; printf 'version: 1\n' > "$SB/.pulumi/meta.yaml"
gzip -c "$P/valid-checkpoint-v3-diy.json" > "$SB/.pulumi/stacks/proj/dev.json.gz"
cp "$SB/.pulumi/stacks/proj/dev.json.gz" "$T/dev-before.gz"
run "show -o a backend's stack object" penv secrets show --backend "$SB" --stack proj/dev -o "$SB/.pulumi/stacks/proj/dev.json.gz"
check_rc 2; check_err_has "statetool: error: refusing to write decrypted secrets over '$SB/.pulumi/stacks/proj/dev.json.gz': it is the state (or its .bak)"
check_same "$T/dev-before.gz" "$SB/.pulumi/stacks/proj/dev.json.gz"
run "show -o a new stack in a backend" sh -c "cd '$SB/.pulumi/stacks' && PULUMI_CONFIG_PASSPHRASE='$PW' '$STATETOOL' secrets show '$T/so.json' -o proj/new.json"
check_rc 2; check_absent "$SB/.pulumi/stacks/proj/new.json"
check_err_has "statetool: error: refusing to write decrypted secrets to 'proj/new.json': it is inside a Pulumi backend's .pulumi folder, where a plaintext copy would be kept as a stack's object; give a file outside the backend"
run "show -o beside the backend is fine" penv secrets show --backend "$SB" --stack proj/dev -o "$T/dev-plain.json"
check_rc 0; check_out_empty
run "verify" penv secrets verify "$P/valid-deployment-v3.json"
check_rc 0; check_out "2 secrets, 0 failed to decrypt"
# no secret encrypted: a passphrase given is checked against the provider's salt; none given is
# said to be unchecked
SALT='v1:AQIDBAUGBwg=:v1:AAECAwQFBgcICQoL:IYoikRHf10peey65kizoQjW7FClwEA=='
printf '{"version":3,"deployment":{"manifest":{"time":"2024-01-01T00:00:00Z","magic":"","version":""},"secrets_providers":{"type":"passphrase","state":{"salt":"%s"}}}}\n' "$SALT" > "$T/nosecrets.json"
run "verify, no secret, wrong passphrase" env PULUMI_CONFIG_PASSPHRASE=wrong "$STATETOOL" secrets verify "$T/nosecrets.json"
check_rc 1; check_out_empty; check_err_has "incorrect passphrase"
run "verify, no secret, right passphrase" penv secrets verify "$T/nosecrets.json"
check_rc 0; check_out "0 secrets, 0 failed to decrypt"
run "verify, no secret, no passphrase" st secrets verify "$T/nosecrets.json" </dev/null
check_rc 0; check_out "0 secrets, 0 failed to decrypt
the passphrase was not checked: no secret is encrypted and no passphrase was given (PULUMI_CONFIG_PASSPHRASE, PULUMI_CONFIG_PASSPHRASE_FILE or --passphrase-file)"
run "verify, no secret, no passphrase, json" st secrets verify --json "$T/nosecrets.json" </dev/null
check_rc 0; check_out_has '"passphrase_checked": false'
run "verify b64" st secrets verify "$P/checkpoint-secrets.json"
check_rc 0; check_out "10 secrets, 0 failed to decrypt"

# where the passphrase comes from
printf '%s\n' "$PW" > "$T/pw"
run "env file" env PULUMI_CONFIG_PASSPHRASE_FILE="$T/pw" "$STATETOOL" secrets verify "$P/valid-deployment-v3.json"
check_rc 0
run "flag file" st secrets verify --passphrase-file "$T/pw" "$P/valid-deployment-v3.json"
check_rc 0
run "env wins over file" env PULUMI_CONFIG_PASSPHRASE=nope "$STATETOOL" secrets verify --passphrase-file "$T/pw" "$P/valid-deployment-v3.json"
check_rc 1; check_err_has "incorrect passphrase"
run "missing, not interactive" st secrets verify "$P/valid-deployment-v3.json" </dev/null
check_rc 1; check_err "statetool: error: passphrase must be set with PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE environment variables (or --passphrase-file)"
run "passphrase file is a directory" st secrets verify --passphrase-file "$T" "$P/valid-deployment-v3.json"
check_rc 1; check_err "statetool: error: passphrase file '$T' is a directory"
: > "$T/empty"
run "passphrase file empty: the empty passphrase, here a wrong one" st secrets verify --passphrase-file "$T/empty" "$P/valid-deployment-v3.json"
check_rc 1; check_err "statetool: error: incorrect passphrase, please set PULUMI_CONFIG_PASSPHRASE to the correct passphrase or set PULUMI_CONFIG_PASSPHRASE_FILE to a file containing the passphrase"
run "no provider" st secrets verify "$FIXTURES/edit/delete-all-force.json"
check_rc 0
run "other provider" st secrets show "$FIXTURES/pulumi/checkpoint-v3.json"
check_rc 0

# tampering: GCM refuses; reported by URN and pointer
sed 's|LudbcPrKaMQk1R3NNyum5aNq3uSzkG2zCA==|MudbcPrKaMQk1R3NNyum5aNq3uSzkG2zCA==|' "$P/valid-deployment-v3.json" > "$T/tampered.json"
run "tampered" penv secrets verify "$T/tampered.json"
check_rc 1
check_err_has "error: urn:pulumi:dev::proj::my:index:Comp\$aws:s3/bucket:Bucket::b: cipher: message authentication failed"
check_err_has "    at /deployment/resources/3/inputs/tags"
check_out "2 secrets, 2 failed to decrypt"
run "tampered show" penv secrets show "$T/tampered.json"
check_rc 1; check_err_has "message authentication failed"

# encrypt: plaintext secrets become ciphertext; existing ciphertext is kept byte for byte
cp "$V/secrets-plaintext.json" "$T/pt.json"
chmod 644 "$T/pt.json"
run "encrypt" penv secrets encrypt "$T/pt.json"
check_rc 0; check_out_has "1 secret encrypted"
# the version before keeps its plaintext as the .bak: made 0600, and named
check_err_has "statetool: warning: the version before, with 1 plaintext secret, is kept as '$T/pt.json.bak' (made 0600): remove it once the encrypted state is checked"
run "the .bak with the plaintext is 0600" stat -c %a "$T/pt.json.bak"
check_out "600"
if grep -q hunter2 "$T/pt.json"; then bad "plaintext left in the state"; else ok; fi
run "encrypted valid" st validate "$T/pt.json"
check_rc 0; check_out_has "valid, 0 errors, 0 warnings"
run "encrypted verify" penv secrets verify "$T/pt.json"
check_rc 0; check_out "2 secrets, 0 failed to decrypt"
run "old ciphertext kept" grep -c 'LudbcPrKaMQk1R3NNyum5aNq3uSzkG2zCA==' "$T/pt.json"
check_out "1"
# a backend stack: its .bak and its generation are named
EB=$T/eb
mkdir -p "$EB/.pulumi/stacks/proj"; printf 'version: 1\n' > "$EB/.pulumi/meta.yaml"
jq '{version: 3, checkpoint: {stack: "organization/proj/dev", latest: .deployment}}' "$V/secrets-plaintext.json" > "$EB/.pulumi/stacks/proj/dev.json"
run "encrypt a backend stack" penv secrets encrypt --backend "$EB" --stack proj/dev
check_rc 0
check_err_has "statetool: warning: the version before, with 1 plaintext secret, is kept as the stack's .bak (made 0600) and as a generation (\`statetool history\`): remove them once the encrypted state is checked"
run "nothing to encrypt: no warning" penv secrets encrypt --backend "$EB" --stack proj/dev
check_rc 0; check_err_lacks "plaintext secret"
cp "$V/secrets-plaintext.json" "$T/pt2.json"
run "encrypt wrong passphrase" env PULUMI_CONFIG_PASSPHRASE=wrong "$STATETOOL" secrets encrypt "$T/pt2.json"
check_rc 1; check_err_has "incorrect passphrase"
check_same "$V/secrets-plaintext.json" "$T/pt2.json"; check_absent "$T/pt2.json.bak"; check_absent "$T/pt2.json.lock"

# rekey a state and its stack config; the new passphrase works, the old one no longer does
cp "$P/valid-deployment-v3.json" "$T/rk.json"
cat > "$T/Pulumi.dev.yaml" <<'Y'
encryptionsalt: v1:AQIDBAUGBwg=:v1:AAECAwQFBgcICQoL:IYoikRHf10peey65kizoQjW7FClwEA==
config:
  aws:region: us-east-1
  proj:password:
    secure: v1:ZGVmZ2hpamtsbW5v:LudbcPrKaMQk1R3NNyum5aNq3uSzkG2zCA==
Y
cp "$T/Pulumi.dev.yaml" "$T/cfg-before.yaml"
printf 'the new one\n' > "$T/newpw"
run "rekey" penv secrets rekey --new-passphrase-file "$T/newpw" --stack-config "$T/Pulumi.dev.yaml" "$T/rk.json"
check_rc 0
check_out_has "2 secrets re-encrypted"
check_out_has "encryptionsalt: v1:"
check_out_has "$T/Pulumi.dev.yaml: encryptionsalt and 1 secure value rewritten"
salt=$(sed -n 's/^encryptionsalt: //p' "$T/out")
run "config salt" sed -n 's/^encryptionsalt: //p' "$T/Pulumi.dev.yaml"
check_out "$salt"
run "config kept" sed -n 2,4p "$T/Pulumi.dev.yaml"
check_out "config:
  aws:region: us-east-1
  proj:password:"
check_same "$T/cfg-before.yaml" "$T/Pulumi.dev.yaml.bak"
run "new passphrase" env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets verify "$T/rk.json"
check_rc 0; check_out "2 secrets, 0 failed to decrypt"
run "new passphrase show" env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets show "$T/rk.json" b
check_out_has '"plaintext": "\"hunter2\""'
run "old passphrase" penv secrets verify "$T/rk.json"
check_rc 1; check_err_has "incorrect passphrase"
check_absent "$T/Pulumi.dev.yaml.statetool-rekey"
# show and verify with --stack-config check the config's secure values too (audit26b B10)
run "verify --stack-config" env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets verify --stack-config "$T/Pulumi.dev.yaml" "$T/rk.json"
check_rc 0; check_out "2 secrets, 0 failed to decrypt
$T/Pulumi.dev.yaml: 1 secure value, 0 failed to decrypt"
run "verify --stack-config --json" sh -c "PULUMI_CONFIG_PASSPHRASE='the new one' '$STATETOOL' secrets verify --json --stack-config '$T/Pulumi.dev.yaml' '$T/rk.json' | '$JSONGET' stack_config.secure_values"
check_rc 0; check_out "1"
run "show --stack-config" env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets show --stack-config "$T/Pulumi.dev.yaml" "$T/rk.json" b
check_rc 0; check_out_has '"plaintext": "\"hunter2\""'
check_err "$T/Pulumi.dev.yaml: 1 secure value, 0 failed to decrypt"
cp "$T/rk.json" "$T/rk-nochange.json"
printf 'encryptionsalt: %s\nconfig:\n  p:x:\n    secure: v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAAAAAAAA\n' "$salt" > "$T/bad-new.yaml"
run "verify --stack-config, a value that does not decrypt" env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets verify --stack-config "$T/bad-new.yaml" "$T/rk.json"
check_rc 1
check_err "statetool: error: $T/bad-new.yaml:4:13: config 'p:x': secure value does not decrypt (cipher: message authentication failed (wrong key, or the ciphertext was altered))"
check_out "2 secrets, 0 failed to decrypt"
run "show --stack-config, a value that does not decrypt" env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets show --stack-config "$T/bad-new.yaml" "$T/rk.json"
check_rc 1; check_out_empty; check_err_has "config 'p:x': secure value does not decrypt"
# a staged config an interrupted rekey left (tests/cli/t_crash.sh kills one at each step):
# show finishes it when its salt is the state's, and with the config gone it is the only copy:
# refused, nothing removed
cp "$T/Pulumi.dev.yaml" "$T/Pulumi.dev.yaml.statetool-rekey"
cp "$T/cfg-before.yaml" "$T/Pulumi.dev.yaml"
run "show finishes a staged config" env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets show --stack-config "$T/Pulumi.dev.yaml" "$T/rk.json" b
check_rc 0
check_err "statetool: note: completed the interrupted rekey of '$T/Pulumi.dev.yaml': the state and it are under that rekey's new passphrase (the config before is in '$T/Pulumi.dev.yaml.bak')
$T/Pulumi.dev.yaml: 1 secure value, 0 failed to decrypt"
check_same "$T/cfg-before.yaml" "$T/Pulumi.dev.yaml.bak"
check_absent "$T/Pulumi.dev.yaml.statetool-rekey"; check_absent "$T/rk.json.lock"
mv "$T/Pulumi.dev.yaml" "$T/only.yaml"
cp "$T/cfg-before.yaml" "$T/Pulumi.dev.yaml.statetool-rekey"
run "a staged config without its config" env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets verify --stack-config "$T/Pulumi.dev.yaml" "$T/rk.json"
check_rc 1; check_out_empty
check_err "statetool: error: '$T/Pulumi.dev.yaml.statetool-rekey' was left by an interrupted \`secrets rekey\` and '$T/Pulumi.dev.yaml' is missing: the state's encryptionsalt is not the staged one, so either the rekey stopped before the state was written (the staged values are under the new passphrase it was given, the state under the old) or the state was rekeyed and changed since; '$T/Pulumi.dev.yaml.statetool-rekey' is the only copy of the config: rename it to '$T/Pulumi.dev.yaml' and give the passphrase that opens it, or \`statetool restore $T/rk.json\` to put the state's previous version back"
check_same "$T/cfg-before.yaml" "$T/Pulumi.dev.yaml.statetool-rekey"; check_absent "$T/rk.json.lock"
mv "$T/only.yaml" "$T/Pulumi.dev.yaml"; rm -f "$T/Pulumi.dev.yaml.statetool-rekey"
# a dry run stages nothing
run "rekey --dry-run --stack-config" env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets rekey --dry-run --new-passphrase-file "$T/newpw" --stack-config "$T/Pulumi.dev.yaml" "$T/rk.json"
check_rc 0; check_absent "$T/Pulumi.dev.yaml.statetool-rekey"
check_same "$T/rk-nochange.json" "$T/rk.json"
# ... and settles none: a staged file may be a running rekey's (only the lock's holder settles)
printf 'encryptionsalt: v1:AAAAAAAAAAA=:v1:AAAAAAAAAAAAAAAA:AAAA\n' > "$T/Pulumi.dev.yaml.statetool-rekey"
cp "$T/Pulumi.dev.yaml.statetool-rekey" "$T/staged-before.yaml"; cp "$T/Pulumi.dev.yaml" "$T/cfg-dry.yaml"
run "rekey --dry-run with a staged config" env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets rekey --dry-run --new-passphrase-file "$T/newpw" --stack-config "$T/Pulumi.dev.yaml" "$T/rk.json"
check_rc 1; check_err_has "'$T/Pulumi.dev.yaml.statetool-rekey' was left by an interrupted \`secrets rekey\` (or one is running): only a run that takes the stack's lock settles it (a dry run, or a state read from standard input, does not); nothing done"
check_same "$T/staged-before.yaml" "$T/Pulumi.dev.yaml.statetool-rekey"; check_same "$T/cfg-dry.yaml" "$T/Pulumi.dev.yaml"
check_same "$T/rk-nochange.json" "$T/rk.json"
run "secrets show - with a staged config" sh -c "env PULUMI_CONFIG_PASSPHRASE='the new one' '$STATETOOL' secrets show - --stack-config '$T/Pulumi.dev.yaml' < '$T/rk.json'"
check_rc 1; check_err_has "only a run that takes the stack's lock settles it"
check_same "$T/staged-before.yaml" "$T/Pulumi.dev.yaml.statetool-rekey"
rm -f "$T/Pulumi.dev.yaml.statetool-rekey"
# a --stack-config that is missing, or holds a secure value the passphrase does not open, is
# found before anything is written: the state and the config as they were
cp "$P/valid-deployment-v3.json" "$T/rk2.json"
run "rekey, config missing" penv secrets rekey --new-passphrase-file "$T/newpw" --stack-config "$T/nope.yaml" "$T/rk2.json"
check_rc 1
check_err_has "$T/nope.yaml"
check_err_lacks "was rekeyed"
check_same "$P/valid-deployment-v3.json" "$T/rk2.json"; check_absent "$T/rk2.json.bak"
printf 'encryptionsalt: v1:AQIDBAUGBwg=:v1:AAECAwQFBgcICQoL:IYoikRHf10peey65kizoQjW7FClwEA==\nconfig:\n  p:x:\n    secure: v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAAAAAAAA\n' > "$T/badcfg.yaml"
cp "$T/badcfg.yaml" "$T/badcfg.before"
run "rekey, config value does not decrypt" penv secrets rekey --new-passphrase-file "$T/newpw" --stack-config "$T/badcfg.yaml" "$T/rk2.json"
check_rc 1
check_err_has "$T/badcfg.yaml"
check_err_lacks "was rekeyed"
check_same "$P/valid-deployment-v3.json" "$T/rk2.json"; check_absent "$T/rk2.json.bak"
check_same "$T/badcfg.before" "$T/badcfg.yaml"; check_absent "$T/badcfg.yaml.bak"
run "rekey without new passphrase" env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets rekey "$T/rk.json" </dev/null
check_rc 1; check_err_has "passphrase must be set with PULUMI_CONFIG_PASSPHRASE_NEW or PULUMI_CONFIG_PASSPHRASE_NEW_FILE environment variables (or --new-passphrase-file)"

# audit25b E1: the config is read as YAML; a secure value in quotes, in a flow mapping, under a
# quoted key, nested, is rewritten in its style (the old code skipped them and rewrote the salt:
# the secret then under a key nobody had); everything else byte for byte. E2: `secure:` as text
# is no secure value.
C='v1:ZGVmZ2hpamtsbW5v:LudbcPrKaMQk1R3NNyum5aNq3uSzkG2zCA=='
S='v1:AQIDBAUGBwg=:v1:AAECAwQFBgcICQoL:IYoikRHf10peey65kizoQjW7FClwEA=='
cp "$P/valid-deployment-v3.json" "$T/q.json"
cat > "$T/Pq.yaml" <<Y
# secure: see wiki
encryptionsalt: "$S"   # salt
config:
  proj:a:
    secure: "$C"
  proj:b: {"secure": '$C'}
  proj:c:
    "secure": $C
  proj:note: "use secure: always" # secure: x
  proj:insecure: x
  proj:d: {nested: [{secure: $C}]}
Y
cp "$T/Pq.yaml" "$T/Pq.before"
run "rekey, quoted secure values" penv secrets rekey --new-passphrase-file "$T/newpw" --stack-config "$T/Pq.yaml" "$T/q.json"
check_rc 0
check_out_has "$T/Pq.yaml: encryptionsalt and 4 secure values rewritten"
qsalt=$(sed -n 's/^encryptionsalt: //p' "$T/out")
run "quoted: no old ciphertext left" grep -c -e "$C" -e "$S" "$T/Pq.yaml"
check_out "0"
ct='v1:[A-Za-z0-9+/]*=*:[A-Za-z0-9+/]*=*'
sed "s|$S|SALT|; s|$ct|CT|g" "$T/Pq.before" > "$T/Pq.shape"
run "quoted: the rest byte for byte" sed "s|$qsalt|SALT|; s|$ct|CT|g" "$T/Pq.yaml"
if cmp -s "$T/out" "$T/Pq.shape"; then ok; else bad "Pq.yaml changed beyond its values"; fi
check_same "$T/Pq.before" "$T/Pq.yaml.bak"
# E7: the config is opened with its own encryptionsalt, not the state's: a state of the same
# passphrase but another salt (rekeyed on its own) and this config rekey together
cp "$P/valid-deployment-v3.json" "$T/q2.json"
penv secrets rekey --new-passphrase-file "$T/newpw" "$T/q2.json" > /dev/null
printf 'third\n' > "$T/pw3"
run "rekey, config salt is not the state's" env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets rekey --new-passphrase-file "$T/pw3" --stack-config "$T/Pq.yaml" "$T/q2.json"
check_rc 0
check_out_has "$T/Pq.yaml: encryptionsalt and 4 secure values rewritten"
# ... and a passphrase that opens the state but not the config's salt: Pulumi's message, naming
# the file, nothing written
cp "$P/valid-deployment-v3.json" "$T/q3.json"
cp "$T/Pq.yaml" "$T/Pq.before"
run "rekey, config salt of another passphrase" penv secrets rekey --new-passphrase-file "$T/newpw" --stack-config "$T/Pq.yaml" "$T/q3.json"
check_rc 1
check_err "statetool: error: $T/Pq.yaml: its encryptionsalt: incorrect passphrase, please set PULUMI_CONFIG_PASSPHRASE to the correct passphrase or set PULUMI_CONFIG_PASSPHRASE_FILE to a file containing the passphrase"
check_same "$P/valid-deployment-v3.json" "$T/q3.json"; check_absent "$T/q3.json.bak"
check_same "$T/Pq.before" "$T/Pq.yaml"
# E2: a value in a block scalar cannot be rewritten in place: refused by key and line, nothing
# written; a value that does not decrypt likewise
printf 'config:\n  proj:a: x\n  proj:b:\n    secure: >-\n      %s\n' "$C" > "$T/Pb.yaml"
cp "$T/Pb.yaml" "$T/Pb.before"
run "rekey, block scalar" penv secrets rekey --new-passphrase-file "$T/newpw" --stack-config "$T/Pb.yaml" "$T/q3.json"
check_rc 1
check_err "statetool: error: $T/Pb.yaml:4:13: config 'proj:b': a secure value written as a block scalar (| or >) is not rewritten in place: write it as \`secure: v1:...\` (nothing was changed)"
check_same "$P/valid-deployment-v3.json" "$T/q3.json"; check_absent "$T/q3.json.bak"
check_same "$T/Pb.before" "$T/Pb.yaml"; check_absent "$T/Pb.yaml.bak"
run "rekey, config value does not decrypt: key and line" penv secrets rekey --new-passphrase-file "$T/newpw" --stack-config "$T/badcfg.yaml" "$T/q3.json"
check_rc 1
check_err "statetool: error: $T/badcfg.yaml:4:13: config 'p:x': secure value does not decrypt (cipher: message authentication failed (wrong key, or the ciphertext was altered))"
# review25 L2: a key given twice (two encryptionsalt lines): yaml.v3 refuses the file for
# Pulumi; refused by file and line, nothing written (rewriting the last left the first)
printf 'encryptionsalt: %s\nconfig:\n  proj:a:\n    secure: %s\nencryptionsalt: %s\n' "$S" "$C" "$S" > "$T/Pd.yaml"
cp "$T/Pd.yaml" "$T/Pd.before"
run "rekey, encryptionsalt twice" penv secrets rekey --new-passphrase-file "$T/newpw" --stack-config "$T/Pd.yaml" "$T/q3.json"
check_rc 1
check_err "statetool: error: $T/Pd.yaml:5:1: mapping key 'encryptionsalt' already defined at line 1: Pulumi refuses the file (nothing was changed)"
check_same "$P/valid-deployment-v3.json" "$T/q3.json"; check_absent "$T/q3.json.bak"
check_same "$T/Pd.before" "$T/Pd.yaml"; check_absent "$T/Pd.yaml.bak"
# E12: the passphrase provider replaces another provider's secretsprovider and encryptedkey, as
# Pulumi's does (pkg/secrets/passphrase/manager.go)
printf 'secretsprovider: awskms://alias/x  # kms\nencryptedkey: QUJDREVG\nconfig:\n  proj:a: x\n' > "$T/Pk.yaml"
run "rekey, config of another provider" penv secrets rekey --new-passphrase-file "$T/newpw" --stack-config "$T/Pk.yaml" "$T/q3.json"
check_rc 0
check_out_has "$T/Pk.yaml: secretsprovider and encryptedkey removed: the passphrase provider replaces them, as Pulumi does"
ksalt=$(sed -n 's/^encryptionsalt: //p' "$T/out")
check_file_is "$T/Pk.yaml" "encryptionsalt: $ksalt
config:
  proj:a: x
"

# Secrets pass through every other command untouched.
cp "$P/valid-deployment-v3.json" "$T/pass.json"
st protect "$T/pass.json" c >/dev/null
run "ciphertext untouched" grep -c 'v1:ZGVmZ2hpamtsbW5v:LudbcPrKaMQk1R3NNyum5aNq3uSzkG2zCA==' "$T/pass.json"
check_out "2"

# No plaintext on disk: make a state whose secret only this test knows, encrypt it, drop the
# user's own plaintext file, then run every command that touches secrets and scan every file.
M="plain-marker-$$-4711"
sed "s|\\\\\"hunter2\\\\\"|\\\\\"$M\\\\\"|" "$V/secrets-plaintext.json" > "$T/scan.json"
grep -q "$M" "$T/scan.json" && ok || bad "marker not planted"
penv secrets encrypt "$T/scan.json" >/dev/null
rm -f "$T/scan.json.bak" "$T/pt.json.bak" "$T/pt.json" "$T/pt2.json" "$T/out" "$T/err"
penv secrets verify "$T/scan.json" >/dev/null
penv secrets show "$T/scan.json" >/dev/null
penv secrets rekey --new-passphrase-file "$T/newpw" "$T/scan.json" >/dev/null
env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets encrypt "$T/scan.json" >/dev/null
st taint "$T/scan.json" c >/dev/null
st convert "$T/scan.json" --compact --gzip -o "$T/scan.json.gz" >/dev/null
st edit --from "$T/scan.json" "$T/scan.json" >/dev/null
st validate "$T/scan.json" 2>/dev/null
current="plaintext scan"
if grep -rl "$M" "$T" >/dev/null 2>&1; then bad "plaintext found in $(grep -rl "$M" "$T")"; else ok; fi
if zcat "$T/scan.json.gz" | grep -q "$M"; then bad "plaintext in the gzip file"; else ok; fi
run "still decrypts" env PULUMI_CONFIG_PASSPHRASE="the new one" "$STATETOOL" secrets show "$T/scan.json" b
check_out_has "$M"

for c in show verify encrypt rekey; do
	run "secrets $c --help" st secrets $c --help
	check_rc 0; check_out_has "usage: statetool secrets show"
done
run "secrets nothing" st secrets
check_rc 2

# An empty passphrase is a passphrase, as to Pulumi: PULUMI_CONFIG_PASSPHRASE set but empty, or
# an empty passphrase file.
cp "$FIXTURES/pulumi/valid-deployment-v3.json" "$T/empty.json"
: > "$T/empty.pw"
run "rekey to the empty passphrase" env PULUMI_CONFIG_PASSPHRASE="correct horse battery staple" PULUMI_CONFIG_PASSPHRASE_NEW_FILE="$T/empty.pw" "$STATETOOL" secrets rekey "$T/empty.json"
check_rc 0; check_out_has "2 secrets re-encrypted"
run "empty passphrase from the environment" env PULUMI_CONFIG_PASSPHRASE= "$STATETOOL" secrets verify "$T/empty.json"
check_rc 0; check_out "2 secrets, 0 failed to decrypt"
run "empty passphrase file" env -u PULUMI_CONFIG_PASSPHRASE "$STATETOOL" secrets verify --passphrase-file "$T/empty.pw" "$T/empty.json"
check_rc 0; check_out "2 secrets, 0 failed to decrypt"
run "empty passphrase file from the environment" env -u PULUMI_CONFIG_PASSPHRASE PULUMI_CONFIG_PASSPHRASE_FILE="$T/empty.pw" "$STATETOOL" secrets verify "$T/empty.json"
check_rc 0; check_out "2 secrets, 0 failed to decrypt"
run "a non-empty passphrase is wrong" env PULUMI_CONFIG_PASSPHRASE=x "$STATETOOL" secrets verify "$T/empty.json"
check_rc 1
# edit keeps every secret readable (Pulumi's edit decrypts the result): a salt swapped over the
# old ciphertexts is refused without a passphrase, checked with one; a tampered ciphertext too
cp "$P/valid-deployment-v3.json" "$T/es.json"
python3 - "$T/es.json" "$T" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["deployment"]["secrets_providers"]["state"]["salt"] = "v1:fozI5u6B030=:v1:F+6ZduKKd8G0/V7L:PGMFeIzwobWRKmEAzUdaQHqC5mMRIQ=="
json.dump(d, open(sys.argv[2] + "/salt.json", "w"), indent=4)
t = open(sys.argv[1]).read().replace("v1:ZGVmZ2hpamtsbW5v:LudbcPrKaMQk1R3NNyum5aNq3uSzkG2zCA==", "v1:ZGVmZ2hpamtsbW5v:AAAAcPrKaMQk1R3NNyum5aNq3uSzkG2zCA==")
open(sys.argv[2] + "/ct.json", "w").write(t)
d = json.load(open(sys.argv[1]))
d["deployment"]["resources"][1]["protect"] = True
json.dump(d, open(sys.argv[2] + "/prot.json", "w"), indent=4)
PY
cp "$T/es.json" "$T/es.orig"
run "edit: a new salt over old ciphertexts" st edit --from "$T/salt.json" "$T/es.json"
check_rc 1; check_err_has "the edited deployment changes secrets_providers while 2 secrets are still encrypted: they would open under no passphrase; nothing written"
check_same "$T/es.orig" "$T/es.json"
run "edit: a new salt, checked with the passphrase" penv edit --from "$T/salt.json" "$T/es.json"
check_rc 1; check_err_has "incorrect passphrase"; check_err_has "statetool: error: the edited deployment's secrets could not be checked: its secrets provider did not open (above); nothing written"
check_same "$T/es.orig" "$T/es.json"
run "edit: a tampered ciphertext" penv edit --from "$T/ct.json" "$T/es.json"
check_rc 1; check_err_has "2 of the edited deployment's 2 secrets do not decrypt under its secrets provider; nothing written"; check_err_has "at /deployment/resources/3/inputs/tags"
check_same "$T/es.orig" "$T/es.json"
run "edit: a change beside the secrets, checked" penv edit --from "$T/prot.json" "$T/es.json"
check_rc 0
run "edit: a new salt with --force" st edit --force --from "$T/salt.json" "$T/es.orig"
check_rc 0; check_err_has "warning: the edited deployment changes secrets_providers while 2 secrets are encrypted"
finish
