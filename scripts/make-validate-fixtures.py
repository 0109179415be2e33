#!/usr/bin/env python3
"""Writes fixtures/validate/: one state per validation rule, each breaking exactly that rule,
and expected.txt listing, per case, the problems statetool must report (severity rule pointer).
The fixtures are committed; run this only to regenerate them."""
import copy, json, os, sys

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "..", "fixtures", "validate")
base = json.load(open(os.path.join(here, "..", "fixtures", "pulumi", "valid-deployment-v3.json")))
SIG = "4dabf18193072939515e22adb298388d"
ROOT = "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev"
PROV = "urn:pulumi:dev::proj::pulumi:providers:aws::default_6_0_0"
C = "urn:pulumi:dev::proj::my:index:Comp::c"
B = "urn:pulumi:dev::proj::my:index:Comp$aws:s3/bucket:Bucket::b"
MISSING = "urn:pulumi:dev::proj::my:index:Comp::gone"
cases = []

def case(name, expect, mutate=None, raw=None):
    d = copy.deepcopy(base)
    res = d["deployment"]["resources"]
    if mutate:
        mutate(d, res)
    text = raw if raw is not None else json.dumps(d, indent=4) + "\n"
    with open(os.path.join(out, name + ".json"), "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
    cases.append((name, expect))

R = "/deployment/resources/"
case("valid", [])
case("valid-delete-duplicate", [], lambda d, r: r.append(dict(copy.deepcopy(r[2]), delete=True)))
case("valid-pending-replacement-provider", [], lambda d, r: (r[3].update(provider=PROV + "::other-id", pendingReplacement=True)))
case("magic", [("error", "integrity/magic", "/deployment/manifest/magic")],
     lambda d, r: d["deployment"]["manifest"].update(magic="0" * 64))
case("missing-urn", [("error", "integrity/missing-urn", R + "3")], lambda d, r: r[3].pop("urn"))
case("missing-type", [("error", "integrity/missing-type", R + "2")], lambda d, r: r[2].pop("type"))
case("custom-with-id", [("error", "integrity/custom-with-id", R + "2/id")], lambda d, r: r[2].update(id="x"))
def bad_provider(d, r):
    r[1]["urn"] = "urn:pulumi:dev::proj::pulumi:providers:aws"
    r[3].pop("provider")
case("provider-not-referenceable", [("error", "integrity/provider-not-referenceable", R + "1/urn"),
                                    ("warning", "urn/invalid", R + "1/urn")], bad_provider)
case("provider-parse", [("error", "integrity/provider-parse", R + "3/provider")], lambda d, r: r[3].update(provider="nocolons"))
case("provider-unknown", [("error", "integrity/provider-unknown", R + "3/provider")],
     lambda d, r: r[3].update(provider=PROV + "::another-id"))
def provider_after(d, r):
    p = r.pop(1)
    r.append(p)
case("provider-after-user", [("error", "integrity/provider-unknown", R + "2/provider")], provider_after)
def parent_after(d, r):
    r[3].pop("dependencies")
    c = r.pop(2)
    r.append(c)
case("parent-order", [("error", "integrity/parent-order", R + "2/parent")], parent_after)
case("parent-missing", [("error", "integrity/parent-missing", R + "3/parent")], lambda d, r: r[3].update(parent=MISSING))
case("dependency-order", [("error", "integrity/dependency-order", R + "2/dependencies/0")], lambda d, r: r[2].update(dependencies=[B]))
case("dependency-missing", [("error", "integrity/dependency-missing", R + "3/dependencies/0")], lambda d, r: r[3].update(dependencies=[MISSING]))
case("property-dependency-order", [("error", "integrity/property-dependency-order", R + "2/propertyDependencies/x/0")],
     lambda d, r: r[2].update(propertyDependencies={"x": [B]}))
case("property-dependency-missing", [("error", "integrity/property-dependency-missing", R + "3/propertyDependencies/bucket/0")],
     lambda d, r: r[3]["propertyDependencies"].update(bucket=[MISSING]))
case("deleted-with-order", [("error", "integrity/deleted-with-order", R + "2/deletedWith")], lambda d, r: r[2].update(deletedWith=B))
case("deleted-with-missing", [("error", "integrity/deleted-with-missing", R + "3/deletedWith")], lambda d, r: r[3].update(deletedWith=MISSING))
def feat(d):
    d["version"] = 4
    d["features"] = ["replaceWith"]
case("replace-with-order", [("error", "integrity/replace-with-order", R + "2/replaceWith/0")], lambda d, r: (feat(d), r[2].update(replaceWith=[B])))
case("replace-with-missing", [("error", "integrity/replace-with-missing", R + "3/replaceWith/0")], lambda d, r: (feat(d), r[3].update(replaceWith=[MISSING])))
case("duplicate-urn", [("error", "integrity/duplicate-urn", R + "4")], lambda d, r: r.append(copy.deepcopy(r[2])))
case("snippet-uuid", [("error", "integrity/snippet-uuid", "/deployment/snippets/0")],
     lambda d, r: (d.update(version=4, features=["snippets-prototype"]), d["deployment"].update(snippets=[{"name": "s", "type": "t", "code": "x"}])))
case("snippet-duplicate", [("error", "integrity/snippet-duplicate", "/deployment/snippets/1")],
     lambda d, r: (d.update(version=4, features=["snippets-prototype"]), d["deployment"].update(snippets=[{"uuid": "u1"}, {"uuid": "u1"}])))
case("secrets-no-provider", [("error", "secrets/no-provider", R + "3/inputs/tags")], lambda d, r: d["deployment"].pop("secrets_providers"))
case("secrets-malformed", [("error", "secrets/malformed", R + "3/inputs/tags")], lambda d, r: r[3]["inputs"]["tags"].update(plaintext="\"x\""))
def plaintext(d, r):
    r[3]["inputs"]["tags"] = {SIG: "1b47061264138c4ac30d75fd1eb44270", "plaintext": "\"hunter2\""}
case("secrets-plaintext", [("warning", "secrets/plaintext", R + "3/inputs/tags")], plaintext)
case("secrets-ciphertext-format", [("warning", "secrets/ciphertext-format", R + "3/outputs/tags")],
     lambda d, r: r[3]["outputs"]["tags"].update(ciphertext="not-passphrase-form"))
case("unknown-signature", [("error", "property/unknown-signature", R + "3/inputs/odd/0")],
     lambda d, r: r[3]["inputs"].update(odd=[{SIG: "deadbeef", "value": 1}]))
def extra(res):
    return lambda d, r: r.append(res)
case("urn-invalid", [("warning", "urn/invalid", R + "4/urn")], extra({"urn": "bogus", "custom": False, "type": "x:y:Z"}))
case("urn-type-mismatch", [("warning", "urn/type-mismatch", R + "4/urn")], extra({"urn": "urn:pulumi:dev::proj::x:y:Z::n", "custom": False, "type": "x:y:W"}))
case("urn-stack-mismatch", [("warning", "urn/stack-mismatch", R + "4/urn")], extra({"urn": "urn:pulumi:prod::proj::x:y:Z::n", "custom": False, "type": "x:y:Z"}))
case("urn-parent-type", [("warning", "urn/parent-type", R + "4/urn")], extra({"urn": "urn:pulumi:dev::proj::x:y:Z::n", "custom": False, "type": "x:y:Z", "parent": C}))
case("root-multiple", [("warning", "root/multiple", R + "4")], extra({"urn": "urn:pulumi:dev::proj::pulumi:pulumi:Stack::again", "custom": False, "type": "pulumi:pulumi:Stack"}))
def ops(*o):
    return lambda d, r: d["deployment"].update(pending_operations=list(o))
case("pending-no-urn", [("warning", "pending/no-urn", "/deployment/pending_operations/0")], ops({"resource": {"custom": True, "type": "a:b:C"}, "type": "creating"}))
case("pending-duplicate", [("warning", "pending/duplicate", "/deployment/pending_operations/1")],
     ops({"resource": {"urn": B, "custom": True, "type": "aws:s3/bucket:Bucket"}, "type": "updating"},
         {"resource": {"urn": B, "custom": True, "type": "aws:s3/bucket:Bucket"}, "type": "updating"}))
case("pending-already-exists", [("warning", "pending/already-exists", "/deployment/pending_operations/0")],
     ops({"resource": {"urn": C, "custom": False, "type": "my:index:Comp"}, "type": "creating"}))
case("pending-unknown-resource", [("warning", "pending/unknown-resource", "/deployment/pending_operations/0")],
     ops({"resource": {"urn": MISSING, "custom": False, "type": "my:index:Comp"}, "type": "deleting"}))
case("pending-valid", [], ops({"resource": {"urn": MISSING, "custom": False, "type": "my:index:Comp"}, "type": "creating"}))
case("aliases-collision", [("warning", "aliases/collision", R + "3/aliases/0")],
     lambda d, r: (r[2].update(aliases=["urn:pulumi:dev::proj::old:index:Thing::x"]), r[3].update(aliases=["urn:pulumi:dev::proj::old:index:Thing::x"])))
case("schema-type", [("error", "schema/type", R + "2/protect")], lambda d, r: r[2].update(protect="yes"))
case("schema-unknown-field", [("warning", "schema/additionalProperties", R + "2/futureField")], lambda d, r: r[2].update(futureField=1))
case("schema-enum", [("error", "schema/enum", "/deployment/pending_operations/0/type")],
     ops({"resource": {"urn": MISSING, "custom": False, "type": "my:index:Comp"}, "type": "exploding"}))
case("schema-required", [("error", "schema/required", "/deployment/secrets_providers")], lambda d, r: d["deployment"]["secrets_providers"].pop("type"))
text = json.dumps(base, indent=4) + "\n"
case("json-duplicate-key", [("warning", "json/duplicate-key", R + "2/type")],
     raw=text.replace('"type": "my:index:Comp",', '"type": "my:index:Comp",\n                "type": "my:index:Comp",', 1))
case("json-invalid-utf8", [("warning", "json/invalid-utf8", "/deployment/resources/0/outputs/bucketName")],
     raw=text.replace('"bucketName": "b-123"', '"bucketName": "b-12\udcff"', 1))
with open(os.path.join(out, "expected.txt"), "w") as f:
    f.write("# case severity rule pointer: the exact problems statetool validate reports\n")
    for name, exp in cases:
        if not exp:
            f.write(f"{name} - - -\n")
        for sev, rule, ptr in exp:
            f.write(f"{name} {sev} {rule} {ptr}\n")
print(f"{len(cases)} cases")
