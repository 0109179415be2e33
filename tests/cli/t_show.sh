#!/bin/sh
# show: `pulumi state get`'s resource selection (URN, reference identifier, unique name) and
# its text, secrets masked or shown, --json as the resource is stored, --names.
. "$(dirname "$0")/lib.sh"
S=$FIXTURES/show/rich.json
P=$FIXTURES/pulumi
PW="correct horse battery staple"

run "help" st show --help
check_rc 0; check_out_has "usage: statetool show"; check_out_has "--show-secrets"

run "text by name" st show "$S" fn
check_rc 0; check_err_empty
check_out 'Type: aws:lambda/function:Function
URN:  urn:pulumi:dev::proj::aws:lambda/function:Function::fn
ID:   fn-1
Inputs:
    big       : 1.2345675e+06
    code      : archive(assets:abcdef0) {
        "b.txt": asset(file:fedcba9) { ./b.txt }
        "index.js": asset(text:1234567) {
            exports.handler = 1;
            return
        }
    }
    empty     : ""
    enabled   : true
    huge      : 1000000000000000000000
    layers    : [
        [0]: "arn:1"
        [1]: {
            deep: [
                [0]: 1
                [1]: 2
            ]
        }
    ]
    list      : []
    map       : {}
    memorySize: 128
    name      : "fn-abc"
    nothing   : <null>
    password  : [secret]
    policy    : (json) {
        Statement: [
            [0]: {
                Effect: "Allow"
            }
        ]
        Version  : "2012-10-17"
    }

    ratio     : 0.25
    role      : {
        URN: "urn:pulumi:dev::proj::aws:iam/role:Role::r"
        ID : "r-1"
        PackageVersion: "6.0.0"
    }
    tags      : {
        env : "dev"
        team: "a\tbé\x01"
    }
    tiny      : 1e-05
    unknown   : [unknown]

Outputs:
    arn     : "arn:aws:lambda:fn"
    password: [secret]
'
run "no plaintext without --show-secrets" sh -c "'$STATETOOL' show '$S' fn | grep -c -e secret\\\" -e '\"k\"'"
check_out 0

run "by URN" st show "$S" 'urn:pulumi:dev::proj::aws:lambda/function:Function::fn'
check_rc 0; check_out_has "ID:   fn-1"
run "by reference identifier" st show "$S" fn_0ff76e
check_rc 0; check_out_has "ID:   fn-1"
run "by TYPE::NAME" st show "$S" 'aws:lambda/function:Function::fn'
check_rc 0; check_out_has "ID:   fn-1"
run "by #INDEX" st show "$S" '#3'
check_rc 0
check_out 'Type: aws:s3/bucket:Bucket
URN:  urn:pulumi:dev::proj::aws:s3/bucket:Bucket::data
ID:   data-old
Pending deletion: yes'

run "show secrets (b64)" st show --show-secrets "$S" fn
check_rc 0; check_out_has '    password  : "secret"'
check_out_has '    password: {
        k: [
            [0]: true
        ]
    }'

run "passphrase secrets masked" st show "$P/valid-deployment-v3.json" b
check_rc 0
check_out 'Type: aws:s3/bucket:Bucket
URN:  urn:pulumi:dev::proj::my:index:Comp$aws:s3/bucket:Bucket::b
ID:   b-123
Inputs:
    bucket: "b-123"
    tags  : [secret]

Outputs:
    arn   : "arn:aws:s3:::b-123"
    bucket: "b-123"
    tags  : [secret]
'
run "show secrets without a passphrase" env -u PULUMI_CONFIG_PASSPHRASE -u PULUMI_CONFIG_PASSPHRASE_FILE "$STATETOOL" show --show-secrets "$P/valid-deployment-v3.json" b </dev/null
check_rc 1; check_out_empty
check_err "statetool: error: passphrase must be set with PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE environment variables (or --passphrase-file)"
run "show secrets, wrong passphrase" env PULUMI_CONFIG_PASSPHRASE=nope "$STATETOOL" show --show-secrets "$P/valid-deployment-v3.json" b
check_rc 1; check_out_empty; check_err_has "incorrect passphrase"
run "show secrets decrypted" env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" show --show-secrets "$P/valid-deployment-v3.json" b_1ad737
check_rc 0; check_out_has '    tags  : "hunter2"'
printf '%s' "$PW" > "$T/pw"
run "show secrets, passphrase file" env -u PULUMI_CONFIG_PASSPHRASE "$STATETOOL" show --show-secrets --passphrase-file "$T/pw" "$P/valid-deployment-v3.json" b
check_rc 0; check_out_has '    tags  : "hunter2"'
run "no secret, no passphrase needed" env -u PULUMI_CONFIG_PASSPHRASE "$STATETOOL" show --show-secrets "$P/valid-deployment-v3.json" c </dev/null
check_rc 0; check_out 'Type: my:index:Comp
URN:  urn:pulumi:dev::proj::my:index:Comp::c'

run "copies: the live one, with a warning" st show "$S" data
check_rc 0
check_err "statetool: warning: 1 copy(ies) of this resource are pending deletion; showing the live resource (\`statetool show --json\` lists all copies)"
check_out 'Type: aws:s3/bucket:Bucket
URN:  urn:pulumi:dev::proj::aws:s3/bucket:Bucket::data
ID:   data-new
Inputs:
    bucket: "data"
'
run "copies --json: all" sh -c "'$STATETOOL' show --json '$S' data | grep '\"id\"'"
check_rc 0; check_out '        "id": "data-old",
        "id": "data-new",'

run "name of two" st show "$S" twin
check_rc 1; check_out_empty
check_err 'statetool: error: 2 resources in the stack are named "twin":
    urn:pulumi:dev::proj::my:index:Comp::twin
    urn:pulumi:dev::proj::my:index:Other::twin
specify one by URN'
run "identifier that is another's name" st show "$S" data_400c32
check_rc 1
check_err 'statetool: error: "data_400c32" is ambiguous: it is the reference identifier for
    urn:pulumi:dev::proj::aws:s3/bucket:Bucket::data
but also the name of
    urn:pulumi:dev::proj::my:index:Comp::data_400c32
specify the resource by URN instead'
run "not a URN" st show "$S" 'urn:bad'
check_rc 1; check_err 'statetool: error: "urn:bad" is not a valid resource URN'
run "no such URN" st show "$S" 'urn:pulumi:dev::proj::my:index:Comp::twins'
check_rc 1; check_err_has 'No such resource "urn:pulumi:dev::proj::my:index:Comp::twins" exists in the current state'
check_err_has '  urn:pulumi:dev::proj::my:index:Comp::twin'

run "names" st show --names "$S"
check_rc 0
check_out 'fn_0ff76e           urn:pulumi:dev::proj::aws:lambda/function:Function::fn
data_400c32         urn:pulumi:dev::proj::aws:s3/bucket:Bucket::data
data_400c32_9e5977  urn:pulumi:dev::proj::my:index:Comp::data_400c32
twin_5a348a         urn:pulumi:dev::proj::my:index:Comp::twin
twin_e524fc         urn:pulumi:dev::proj::my:index:Other::twin'

run "json as stored" st show --json "$P/valid-deployment-v3.json" b
check_rc 0; check_out_has '"ciphertext": "v1:'; check_out_has '"protect": true'
run "json --show-secrets" env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" show --json --show-secrets "$P/valid-deployment-v3.json" b
check_rc 0; check_out_has '"plaintext": "\"hunter2\""'

# --output json: as `pulumi state get --output json` prints it (renderResourceStateJSON: id,
# inputs, outputs, pendingDeletion, type, urn; the properties through MassageSecrets and
# SerializeProperties, 2-space indented by Go's encoder, keys sorted, HTML not escaped)
run "--output json" st show --output json "$S" fn
check_rc 0; check_err_empty
check_out '{
  "id": "fn-1",
  "inputs": {
    "big": 1234567.5,
    "code": {
      "4dabf18193072939515e22adb298388d": "0def7320c3a5731c473e5ecbe6d01bc7",
      "assets": {
        "b.txt": {
          "4dabf18193072939515e22adb298388d": "c44067f5952c0a294b673a41bacd8c17",
          "hash": "fedcba9876",
          "path": "./b.txt"
        },
        "index.js": {
          "4dabf18193072939515e22adb298388d": "c44067f5952c0a294b673a41bacd8c17",
          "hash": "1234567890",
          "text": "exports.handler = 1;\nreturn"
        }
      },
      "hash": "abcdef0123456789"
    },
    "empty": "",
    "enabled": true,
    "huge": 1e+21,
    "layers": [
      "arn:1",
      {
        "deep": [
          1,
          2
        ]
      }
    ],
    "list": [],
    "map": {},
    "memorySize": 128,
    "name": "fn-abc",
    "nothing": null,
    "password": "[secret]",
    "policy": "{\"Version\": \"2012-10-17\", \"Statement\": [{\"Effect\": \"Allow\"}]}",
    "ratio": 0.25,
    "role": {
      "4dabf18193072939515e22adb298388d": "5cf8f73096256a8f31e491e813e4eb8e",
      "id": "r-1",
      "packageVersion": "6.0.0",
      "urn": "urn:pulumi:dev::proj::aws:iam/role:Role::r"
    },
    "tags": {
      "env": "dev",
      "team": "a\tbé\u0001"
    },
    "tiny": 0.00001,
    "unknown": "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
  },
  "outputs": {
    "arn": "arn:aws:lambda:fn",
    "password": "[secret]"
  },
  "type": "aws:lambda/function:Function",
  "urn": "urn:pulumi:dev::proj::aws:lambda/function:Function::fn"
}'
run "--output json, passphrase secrets masked (no passphrase asked)" env -u PULUMI_CONFIG_PASSPHRASE -u PULUMI_CONFIG_PASSPHRASE_FILE "$STATETOOL" show --output json "$P/valid-deployment-v3.json" b </dev/null
check_rc 0; check_err_empty
check_out '{
  "id": "b-123",
  "inputs": {
    "bucket": "b-123",
    "tags": "[secret]"
  },
  "outputs": {
    "arn": "arn:aws:s3:::b-123",
    "bucket": "b-123",
    "tags": "[secret]"
  },
  "type": "aws:s3/bucket:Bucket",
  "urn": "urn:pulumi:dev::proj::my:index:Comp$aws:s3/bucket:Bucket::b"
}'
run "--output json --show-secrets: decrypted" env PULUMI_CONFIG_PASSPHRASE="$PW" "$STATETOOL" show --output json --show-secrets "$P/valid-deployment-v3.json" b
check_rc 0
check_out '{
  "id": "b-123",
  "inputs": {
    "bucket": "b-123",
    "tags": "hunter2"
  },
  "outputs": {
    "arn": "arn:aws:s3:::b-123",
    "bucket": "b-123",
    "tags": "hunter2"
  },
  "type": "aws:s3/bucket:Bucket",
  "urn": "urn:pulumi:dev::proj::my:index:Comp$aws:s3/bucket:Bucket::b"
}'
run "--output json --show-secrets without a passphrase" env -u PULUMI_CONFIG_PASSPHRASE -u PULUMI_CONFIG_PASSPHRASE_FILE "$STATETOOL" show --output json --show-secrets "$P/valid-deployment-v3.json" b </dev/null
check_rc 1; check_out_empty
check_err "statetool: error: passphrase must be set with PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE environment variables (or --passphrase-file)"
# a copy pending deletion; internal keys of the top level left out (not deeper); a resource
# reference's packageVersion; bytes that are not UTF-8; output values (known, unknown, secret);
# a plaintext secret shown decoded
cat > "$T/pj.json" <<'EOF'
{"version": 3, "deployment": {"manifest": {"time": "2024-01-01T00:00:00Z", "magic": "", "version": ""}, "resources": [
{"urn": "urn:pulumi:dev::proj::a:b:C::gone", "custom": true, "id": "g-1", "type": "a:b:C", "delete": true,
 "inputs": {"__defaults": ["name"], "z": {"__kept": 1}, "ref": {"4dabf18193072939515e22adb298388d": "5cf8f73096256a8f31e491e813e4eb8e", "urn": "urn:pulumi:dev::proj::a:b:C::x"}},
 "outputs": {"bytes": {"4dabf18193072939515e22adb298388d": "803fd3297a5875dc03ca845dda5d2a98", "value": "/w=="},
  "later": {"4dabf18193072939515e22adb298388d": "d0e6a833031e9bbcd3f4e8bde6ca49a4", "dependencies": ["urn:pulumi:dev::proj::a:b:C::x"]},
  "known": {"4dabf18193072939515e22adb298388d": "d0e6a833031e9bbcd3f4e8bde6ca49a4", "value": "<v>"},
  "hidden": {"4dabf18193072939515e22adb298388d": "d0e6a833031e9bbcd3f4e8bde6ca49a4", "value": "s", "secret": true},
  "pt": {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "plaintext": "{\"b\":[1,\"<&>\"],\"a\":true}"}}}
]}}
EOF
run "--output json: pending deletion, output values, references, bytes" st show --output json "$T/pj.json" gone
check_rc 0
check_out '{
  "id": "g-1",
  "inputs": {
    "ref": {
      "4dabf18193072939515e22adb298388d": "5cf8f73096256a8f31e491e813e4eb8e",
      "packageVersion": "",
      "urn": "urn:pulumi:dev::proj::a:b:C::x"
    },
    "z": {
      "__kept": 1
    }
  },
  "outputs": {
    "bytes": "b\"/w==\"",
    "hidden": "[secret]",
    "known": "<v>",
    "later": "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
    "pt": "[secret]"
  },
  "pendingDeletion": true,
  "type": "a:b:C",
  "urn": "urn:pulumi:dev::proj::a:b:C::gone"
}'
run "--output json --show-secrets: plaintexts" sh -c "'$STATETOOL' show --output json --show-secrets '$T/pj.json' gone | sed -n '/\"hidden\"/,/\"pendingDeletion\"/p'"
check_rc 0
check_out '    "hidden": {
      "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
      "plaintext": "\"s\""
    },
    "known": "<v>",
    "later": "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
    "pt": {
      "a": true,
      "b": [
        1,
        "<&>"
      ]
    }
  },
  "pendingDeletion": true,'
run "--output default" st show --output default "$S" fn
check_rc 0; check_out_has "Type: aws:lambda/function:Function"
run "--output yaml" st show --output yaml "$S" fn
check_rc 2; check_out_empty
check_err "statetool: error: output \"yaml\" not supported, valid values are: default or json
Try 'statetool show --help' for more information."
run "--output and --json" st show --output json --json "$S" fn
check_rc 2; check_err_has "give --json or --output, not both"

run "names and a resource" st show --names "$S" fn
check_rc 2; check_err_has "expected STATE"
run "no resource" st show "$S"
check_rc 2
finish
