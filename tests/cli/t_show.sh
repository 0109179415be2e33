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

run "names and a resource" st show --names "$S" fn
check_rc 2; check_err_has "expected STATE"
run "no resource" st show "$S"
check_rc 2
finish
