#!/usr/bin/env python3
"""Writes fixtures/move/: source and destination stacks modelled on Pulumi's own `state move`
tests (pkg/cmd/pulumi/state/state_move_test.go: the same stacks, URNs and b64 secrets provider),
as DIY checkpoint files. The fixtures are committed; run this only to regenerate them."""
import json, os
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "move")
def urn(stack, qt, name): return f"urn:pulumi:{stack}::test::{qt}::{name}"
S = "sourceStack"
PROV = urn(S, "pulumi:providers:a", "default_1_0_0")
ROOT = urn(S, "pulumi:pulumi:Stack", "test-sourceStack")
def r(u, typ, custom=False, id=None, parent=None, provider=None, **kw):
    d = {"urn": u, "custom": custom}
    if id: d["id"] = id
    d["type"] = typ
    for k in ["inputs", "outputs"]:
        if k in kw: d[k] = kw.pop(k)
    if parent: d["parent"] = parent
    if "dependencies" in kw: d["dependencies"] = kw.pop("dependencies")
    if provider: d["provider"] = provider
    for k in ["propertyDependencies", "deletedWith", "replaceWith"]:
        if k in kw: d[k] = kw.pop(k)
    assert not kw
    return d
def stack(name, resources, ops=None, secrets="b64"):
    dep = {"manifest": {"time": "2026-01-01T00:00:00Z", "magic": "", "version": ""}}
    if secrets == "b64": dep["secrets_providers"] = {"type": "b64", "state": {}}
    elif secrets: dep["secrets_providers"] = secrets
    if resources: dep["resources"] = resources
    if ops: dep["pending_operations"] = ops
    dep["metadata"] = {}
    return {"version": 3, "checkpoint": {"stack": f"organization/test/{name}", "latest": dep}}
def write(name, doc):
    with open(os.path.join(out, name), "w") as f:
        f.write(json.dumps(doc, separators=(",", ":"), ensure_ascii=False))
provider = r(PROV, "pulumi:providers:a", custom=True, id="provider_id")
P = PROV + "::provider_id"
NAME = urn(S, "a:b:c", "name")
write("leaf.json", stack(S, [provider, r(NAME, "a:b:c", provider=P)]))
write("children.json", stack(S, [provider, r(NAME, "a:b:c", provider=P),
                                 r(urn(S, "a:b:c$a:b:c", "name2"), "a:b:c", provider=P, parent=NAME)]))
RES = urn(S, "a:b:c", "resToMove"); REM = urn(S, "a:b:c", "remainingDep")
write("dependencies.json", stack(S, [
    provider,
    r(REM, "a:b:c", provider=P),
    r(RES, "a:b:c", provider=P, dependencies=[REM]),
    r(urn(S, "a:b:c$a:b:c", "movedChildURN"), "a:b:c", provider=P, parent=RES),
    r(urn(S, "a:b:c$a:b:c", "dependsOnMovedChildURN"), "a:b:c", provider=P, parent=RES, dependencies=[urn(S, "a:b:c$a:b:c", "movedChildURN")]),
    r(urn(S, "a:b:c", "deps"), "a:b:c", provider=P, dependencies=[RES, REM]),
    r(urn(S, "a:b:c", "deletedWith"), "a:b:c", provider=P, deletedWith=RES),
    r(urn(S, "a:b:c", "propDeps"), "a:b:c", provider=P, propertyDependencies={"key": [RES, REM]}),
]))
# reparenting to the root drops the parent-type chain
PAR = urn(S, "parentComponent", "parent"); COMP = urn(S, "parentComponent$targetComponent", "component")
write("reparent.json", stack(S, [
    r(urn(S, "pulumi:providers:pkgA", "default_1_0_0"), "pulumi:providers:pkgA", custom=True, id="provider_id"),
    r(PAR, "parentComponent"), r(COMP, "targetComponent", parent=PAR),
    r(urn(S, "parentComponent$targetComponent$pkgA:index:typB", "child"), "pkgA:index:typB", custom=True, id="id2",
      parent=COMP, provider=urn(S, "pulumi:providers:pkgA", "default_1_0_0") + "::provider_id")]))
# a root stack whose children move; the provider is shared with a resource that stays
write("rooted.json", stack(S, [
    r(ROOT, "pulumi:pulumi:Stack"),
    r(PROV, "pulumi:providers:a", custom=True, id="provider_id", parent=ROOT),
    r(NAME, "a:b:c", parent=ROOT, provider=P),
    r(urn(S, "a:b:c", "name2"), "a:b:c", parent=ROOT, provider=P),
    r(urn(S, "x:y:Z", "stays"), "x:y:Z", custom=True, id="s1", parent=ROOT, provider=P),
], ops=[{"resource": r(urn(S, "a:b:c", "name2"), "a:b:c", parent=ROOT, provider=P), "type": "updating"}]))
# destination already holding the same provider (reused) or a different one (refused)
write("dest-same-provider.json", stack("destStack", [
    r(urn("destStack", "pulumi:pulumi:Stack", "test-destStack"), "pulumi:pulumi:Stack"),
    r(urn("destStack", "pulumi:providers:a", "default_1_0_0"), "pulumi:providers:a", custom=True, id="provider_id",
      parent=urn("destStack", "pulumi:pulumi:Stack", "test-destStack"))]))
write("dest-other-provider.json", stack("destStack", [
    r(urn("destStack", "pulumi:providers:a", "default_1_0_0"), "pulumi:providers:a", custom=True, id="other_provider_id",
      inputs={"key": "different value"})]))
write("dest-existing-resource.json", stack("destStack", [
    r(urn("destStack", "pulumi:providers:a", "default_1_0_1"), "pulumi:providers:a", custom=True, id="other_provider_id"),
    r(urn("destStack", "a:b:c", "name"), "a:b:c", provider=urn("destStack", "pulumi:providers:a", "default_1_0_1") + "::other_provider_id")]))
# replaceWith: a moved resource replaced with another moved one
write("replacewith.json", {**stack(S, [provider, r(NAME, "a:b:c", provider=P),
    r(urn(S, "a:b:c", "other"), "a:b:c", provider=P, replaceWith=[NAME])]), "version": 4, "features": ["replaceWith"]})
print("ok")
