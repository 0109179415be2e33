#!/usr/bin/env python3
"""Writes fixtures/edit/: base.json (a state with nested components, several providers, a
protected resource, a delete:true duplicate, a secret and pending operations) and, for each
edit case, the exact file statetool must write, built here independently of statetool: Go's
4-space output is what json.dumps(indent=4, ensure_ascii=False) prints for this content.
The fixtures are committed; run this only to regenerate them."""
import copy, hashlib, json, os

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "edit")
ORDER = ["urn", "custom", "delete", "id", "type", "inputs", "outputs", "parent", "protect", "taint",
         "external", "dependencies", "initErrors", "provider", "propertyDependencies",
         "pendingReplacement", "additionalSecretOutputs", "aliases", "customTimeouts", "importID",
         "retainOnDelete", "deletedWith", "replaceWith", "created", "modified"]
S, P = "dev", "shop"
def urn(qt, name): return f"urn:pulumi:{S}::{P}::{qt}::{name}"
ROOT = urn("pulumi:pulumi:Stack", "shop-dev")
PA = urn("pulumi:providers:aws", "default_6_0_0"); PA_ID = "a1a1a1a1-0000-4000-8000-000000000001"
PE = urn("pulumi:providers:aws", "eu"); PE_ID = "a1a1a1a1-0000-4000-8000-000000000002"
PG = urn("pulumi:providers:gcp", "default_7_2_0"); PG_ID = "a1a1a1a1-0000-4000-8000-000000000003"
APP = urn("my:index:App", "app")
WEB = urn("my:index:App$my:index:Web", "web")
ASSETS = urn("my:index:App$my:index:Web$aws:s3/bucket:Bucket", "assets")
POLICY = urn("my:index:App$my:index:Web$aws:s3/bucketPolicy:BucketPolicy", "assets-policy")
SERVER = urn("my:index:App$aws:ec2/instance:Instance", "server")
BACKUP = urn("gcp:storage/bucket:Bucket", "backup")
LOGS = urn("aws:cloudwatch/logGroup:LogGroup", "logs")
AUDIT = urn("aws:cloudwatch/logGroup:LogGroup", "audit")
QUEUE = urn("aws:sqs/queue:Queue", "queue")
SECRET = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
          "ciphertext": "v1:ZGVmZ2hpamtsbW5v:LudbcPrKaMQk1R3NNyum5aNq3uSzkG2zCA=="}
T = "2026-05-01T10:00:00Z"

def res(u, typ, custom=True, id=None, inputs=None, parent=None, provider=None, **kw):
    r = {"urn": u, "custom": custom}
    if kw.pop("delete", False): r["delete"] = True
    if id: r["id"] = id
    r["type"] = typ
    if inputs: r["inputs"] = dict(sorted(inputs.items())); r["outputs"] = dict(sorted(inputs.items()))
    if parent: r["parent"] = parent
    for k in ORDER:
        if k in kw: r[k] = kw.pop(k)
    assert not kw, kw
    if provider: r["provider"] = provider
    # re-sort into Pulumi order
    return {k: r[k] for k in ORDER if k in r}

resources = [
    res(ROOT, "pulumi:pulumi:Stack", custom=False, created=T, modified=T),
    res(PA, "pulumi:providers:aws", id=PA_ID, inputs={"region": "us-east-1", "version": "6.0.0"}, created=T, modified=T),
    res(PE, "pulumi:providers:aws", id=PE_ID, inputs={"region": "eu-west-1", "version": "6.0.0"}, created=T, modified=T),
    res(PG, "pulumi:providers:gcp", id=PG_ID, inputs={"project": "acme", "version": "7.2.0"}, created=T, modified=T),
    res(APP, "my:index:App", custom=False, parent=ROOT, created=T, modified=T),
    res(WEB, "my:index:Web", custom=False, parent=APP, created=T, modified=T),
    res(ASSETS, "aws:s3/bucket:Bucket", id="assets-1234", inputs={"bucket": "assets-1234", "tags": {"team": "web"}},
        parent=WEB, protect=True, provider=f"{PA}::{PA_ID}", propertyDependencies={"bucket": [], "tags": []}, created=T, modified=T),
    res(POLICY, "aws:s3/bucketPolicy:BucketPolicy", id="assets-1234", inputs={"bucket": "assets-1234", "policy": "{\"Version\":\"2012-10-17\"}"},
        parent=WEB, dependencies=[ASSETS], provider=f"{PA}::{PA_ID}", propertyDependencies={"bucket": [ASSETS], "policy": []}, created=T, modified=T),
    res(SERVER, "aws:ec2/instance:Instance", id="i-0abc", inputs={"ami": "ami-123", "instanceType": "t3.micro"},
        parent=APP, dependencies=[POLICY], provider=f"{PE}::{PE_ID}", propertyDependencies={"ami": [], "instanceType": [POLICY]}, created=T, modified=T),
    res(BACKUP, "gcp:storage/bucket:Bucket", id="backup-99", inputs={"location": "EU", "password": SECRET},
        parent=ROOT, provider=f"{PG}::{PG_ID}", created=T, modified=T),
    res(SERVER, "aws:ec2/instance:Instance", id="i-0old", inputs={"ami": "ami-100", "instanceType": "t3.micro"},
        parent=APP, provider=f"{PE}::{PE_ID}", delete=True, created=T, modified=T),
    res(LOGS, "aws:cloudwatch/logGroup:LogGroup", id="logs", inputs={"name": "logs"}, parent=ROOT, provider=f"{PA}::{PA_ID}", created=T, modified=T),
    res(AUDIT, "aws:cloudwatch/logGroup:LogGroup", id="audit", inputs={"name": "audit"}, parent=ROOT, provider=f"{PA}::{PA_ID}", created=T, modified=T),
]
ops = [
    {"resource": res(LOGS, "aws:cloudwatch/logGroup:LogGroup", id="logs", inputs={"name": "logs2"}, parent=ROOT, provider=f"{PA}::{PA_ID}"), "type": "updating"},
    {"resource": res(QUEUE, "aws:sqs/queue:Queue", parent=ROOT, provider=f"{PA}::{PA_ID}"), "type": "creating"},
]
VERSION = "v3.150.0"
def state(rs, ops=ops, features=None):
    d = {"version": 4 if features else 3}
    if features: d["features"] = features
    dep = {"manifest": {"time": "2026-05-01T10:00:00.5Z", "magic": hashlib.sha256(VERSION.encode()).hexdigest(), "version": VERSION},
           "secrets_providers": {"type": "passphrase", "state": {"salt": "v1:AQIDBAUGBwg=:v1:AAECAwQFBgcICQoL:IYoikRHf10peey65kizoQjW7FClwEA=="}}}
    if rs: dep["resources"] = rs
    if ops: dep["pending_operations"] = ops
    dep["metadata"] = {}
    d["deployment"] = dep
    return d
def write(name, doc):
    with open(os.path.join(out, name), "w") as f:
        f.write(json.dumps(doc, indent=4, ensure_ascii=False) + "\n")
def set_ordered(r, k, v):
    r[k] = v
    return {kk: r[kk] for kk in ORDER if kk in r} | {kk: r[kk] for kk in r if kk not in ORDER}
def without(rs, *idx): return [r for i, r in enumerate(rs) if i not in idx]

write("base.json", state(resources))
R = copy.deepcopy(resources)
write("delete-logs.json", state(without(R, 11)))
write("delete-policy-dependents.json", state(without(R, 7, 8)))
write("delete-assets-force-dependents.json", state(without(R, 6, 7, 8)))
write("delete-all-force.json", state([]))
# rename web -> frontend: its URN changes; children keep their URNs, their parent is rewritten
R = copy.deepcopy(resources)
FRONT = urn("my:index:App$my:index:Web", "frontend")
R[5]["urn"] = FRONT
R[6]["parent"] = FRONT; R[7]["parent"] = FRONT
write("rename-web.json", state(R))
# rename the default aws provider: every reference to it follows
R = copy.deepcopy(resources); O = copy.deepcopy(ops)
MAIN = urn("pulumi:providers:aws", "aws-main")
R[1]["urn"] = MAIN
for r in R + [o["resource"] for o in O]:
    if r.get("provider") == f"{PA}::{PA_ID}": r["provider"] = f"{MAIN}::{PA_ID}"
write("rename-provider.json", state(R, O))
# protect logs; unprotect assets; taint server (live copy only) -> version 4
R = copy.deepcopy(resources); R[11] = set_ordered(R[11], "protect", True)
write("protect-logs.json", state(R))
R = copy.deepcopy(resources); del R[6]["protect"]
write("unprotect-assets.json", state(R))
R = copy.deepcopy(resources); R[8] = set_ordered(R[8], "taint", True)
write("taint-server.json", state(R, features=["taint"]))
# pending clear: all, and the one on logs
write("pending-clear-all.json", state(resources, ops=[]))
write("pending-clear-logs.json", state(resources, ops=ops[1:]))
# replace-provider default aws -> eu
R = copy.deepcopy(resources); O = copy.deepcopy(ops)
for r in R:
    if r.get("provider") == f"{PA}::{PA_ID}": r["provider"] = f"{PE}::{PE_ID}"
write("replace-provider.json", state(R, O))
# repair: a broken state (web after its children, a dangling dependency) and its repair
B = copy.deepcopy(resources)
B.insert(8, B.pop(5))                          # web moved after assets and policy
B[11]["dependencies"] = [urn("aws:kms/key:Key", "gone")]  # logs depends on a missing key
write("broken.json", state(B))
R = copy.deepcopy(resources)                   # the sort puts web back before its children...
R[11].pop("dependencies", None)                # ...and the dangling dependency is dropped
                                               # (an empty list is omitted, as Go omits it)
write("repaired.json", state(R))
# an aws provider that comes after the resources it would serve
L = copy.deepcopy(resources)
LATE = urn("pulumi:providers:aws", "late")
L.append(res(LATE, "pulumi:providers:aws", id="a1a1a1a1-0000-4000-8000-000000000009", inputs={"region": "us-west-2", "version": "6.0.0"}, created=T, modified=T))
write("late-provider.json", state(L))
print("ok")
