"""`preview` enforces what the real Pulumi engine and the clouds' APIs refuse but the mocks
accept: duplicate URNs (type + name + the parent's type chain), parents / providers /
dependencies that were never registered, and enum values the installed SDK's API version lacks."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from stacks.policy import check

from .conftest import make_plan


def _run(program):
    from reclaunch.runtime.preview import preview

    plan = make_plan("aws")
    return plan, preview(plan, program=lambda _plan: program(), extra="aws")


def test_a_second_resource_with_one_urn_is_refused():
    import pulumi
    import pulumi_kubernetes as k8s

    def program():
        provider = k8s.Provider("k8s", kubeconfig="{}")
        opts = pulumi.ResourceOptions(provider=provider)
        k8s.core.v1.Namespace("job-ns", metadata={"name": "job"}, opts=opts)
        k8s.core.v1.Namespace("job-ns", metadata={"name": "job"}, opts=opts)
    plan, res = _run(program)
    dup = [p for r in res for p in r["engine"]]
    assert len(dup) == 1 and "duplicate URN" in dup[0] and \
        "kubernetes:core/v1:Namespace::job-ns" in dup[0]
    assert any(f.startswith("engine-rules:") and "duplicate URN" in f for f in check(plan, res))


def test_the_urn_carries_the_parents_type_chain_not_its_name():
    import pulumi
    import pulumi_aws as aws

    class Group(pulumi.ComponentResource):
        def __init__(self, typ: str, name: str):
            super().__init__(typ, name)

    def program():
        # One name under two parents of one type: the same URN (the engine refuses it).
        for parent in (Group("acme:x:Group", "a"), Group("acme:x:Group", "b")):
            aws.ec2.PlacementGroup("pg", strategy="cluster",
                                   opts=pulumi.ResourceOptions(parent=parent))
        # Under a parent of another type: a URN of its own.
        aws.ec2.PlacementGroup("pg", strategy="cluster",
                               opts=pulumi.ResourceOptions(parent=Group("acme:x:Other", "c")))
    _, res = _run(program)
    pgs = sorted((r["urn"].split("::", 2)[2], bool(r["engine"]), r["parent"].rsplit("::", 2)[1])
                 for r in res if r["type"] == "aws:ec2/placementGroup:PlacementGroup")
    # Registration order is the SDK's: exactly one of the two under acme:x:Group is refused.
    group = "acme:x:Group$aws:ec2/placementGroup:PlacementGroup::pg"
    assert [(u, parent_type) for u, _, parent_type in pgs] == [
        (group, "acme:x:Group"), (group, "acme:x:Group"),
        ("acme:x:Other$aws:ec2/placementGroup:PlacementGroup::pg", "acme:x:Other")]
    assert sorted(refused for _, refused, _ in pgs[:2]) == [False, True] and not pgs[2][1]


def test_references_must_name_resources_registered_before():
    from reclaunch.runtime.preview import EngineGraph

    g = EngineGraph(project="p", stack="s")
    root = "urn:pulumi:s::p::pulumi:pulumi:Stack::p-s"

    def req(typ, name, parent=root, provider="", deps=(), deleted_with=""):
        return SimpleNamespace(type=typ, name=name, parent=parent, provider=provider,
                               dependencies=list(deps), propertyDependencies={},
                               deletedWith=deleted_with, importId="", retainOnDelete=False)

    mock = "urn:pulumi:s::p::pulumi:pulumi:Stack$pulumi:providers:kubernetes::k8s"
    ok = g.place(req("pulumi:providers:kubernetes", "k8s"), mock)
    assert ok["engine"] == [] and ok["urn"] == "urn:pulumi:s::p::pulumi:providers:kubernetes::k8s"
    used = g.place(req("kubernetes:core/v1:Namespace", "ns", provider=f"{mock}::k8s-id"),
                   "urn:pulumi:s::p::pulumi:pulumi:Stack$kubernetes:core/v1:Namespace::ns")
    assert used["engine"] == [] and used["provider"] == ok["urn"]
    ghost = "urn:pulumi:s::p::pulumi:pulumi:Stack$aws:iam/role:Role::never"
    bad = g.place(req("kubernetes:core/v1:Secret", "s", parent=ghost,
                      provider="urn:pulumi:s::p::pulumi:providers:kubernetes::gone::id",
                      deps=[ghost], deleted_with=ghost), "m")
    assert [p.split(" ", 1)[0] for p in bad["engine"]] == ["dependency", "parent", "provider",
                                                          "deletedWith"]


def test_an_enum_value_the_sdk_api_version_lacks_fails_preview(monkeypatch):
    """AKS osSKU Ubuntu2404 (Azure/azure-rest-api-specs#38610): what the stack sent before."""
    import stacks.azure.program as program
    from reclaunch.providers import preview_plan

    plan = make_plan("azure")
    monkeypatch.setattr(program, "os_sku", lambda version: "Ubuntu2404")
    found = [f for f in check(plan, preview_plan(plan)) if f.startswith("engine-rules:")]
    assert len(found) == 1 + sum(p.role == "gpu" for p in __import__(
        "stacks").node_pools(plan)), found
    assert all("'Ubuntu2404' is not a value of OSSKU" in f for f in found)


def test_the_enum_walk_reaches_nested_inputs(previews):
    """Every string the Azure stack passes to an enum-typed input is found (nested lists of
    input types included) and is a value the installed SDK knows."""
    from reclaunch.runtime.preview import sdk_package
    from reclaunch.runtime.sdk_enums import enum_inputs, violations

    _, res = previews("azure")
    paths = {(r["type"].rsplit(":", 1)[1], path) for r in res
             for path, _, _ in enum_inputs(r["type"], sdk_package(r["type"]), r["inputs"])}
    assert {("ManagedCluster", "agentPoolProfiles[0].osSKU"), ("AgentPool", "osSKU"),
            ("AgentPool", "scaleSetPriority"), ("ManagedCluster", "networkProfile.outboundType"),
            ("NetworkSecurityGroup", "securityRules[0].access")} <= paths
    assert not [v for r in res for v in violations(r["type"], sdk_package(r["type"]), r["inputs"])]


@pytest.mark.parametrize("typ,module", [("aws:eks/cluster:Cluster", "pulumi_aws.eks"),
                                        ("kubernetes:core/v1:Namespace", "pulumi_kubernetes.core.v1"),
                                        ("azure-native:containerservice:AgentPool",
                                         "pulumi_azure_native.containerservice")])
def test_a_type_token_finds_its_sdk_input_type(typ, module):
    from reclaunch.runtime.sdk_enums import args_class

    pkg = module.split(".")[0]
    cls = args_class(typ, pkg)
    assert cls is not None and cls.__module__.startswith(module)


def test_looking_up_an_input_type_leaves_the_sdk_package_whole():
    """A fresh interpreter: finding aws:eks/cluster:Cluster's input type first must not import
    the module file pulumi_aws.eks.cluster ahead of its package (which would leave
    pulumi_aws.eks without its classes for the stack program that runs next)."""
    import subprocess
    import sys

    code = ("from reclaunch.runtime.sdk_enums import args_class\n"
            "assert args_class('aws:eks/cluster:Cluster', 'pulumi_aws').__name__ == 'ClusterArgs'\n"
            "assert args_class('kubernetes:core/v1:Namespace', 'pulumi_kubernetes').__name__ == "
            "'NamespaceInitArgs'\n"
            "import pulumi_aws.eks\nprint(pulumi_aws.eks.Cluster.__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "Cluster", out.stderr[-2000:]
