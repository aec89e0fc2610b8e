"""`down --keep-storage` on the graph a real `up` deploys (the preview's urns and edges, as a
checkpoint lists them): the file system and what it needs stay, the cluster never does."""

from __future__ import annotations

import pytest

from reclaunch import clouds
from reclaunch.errors import ProviderError
from reclaunch.runtime.infra import storage_keep_set


def _checkpoint(resources):
    """A Pulumi checkpoint's resource entries (export_stack: urn, type, id, dependencies,
    parent, provider as `urn::id`) for the previewed resources."""
    return [{"urn": r["urn"], "type": r["type"], "id": f"{r['name']}-id",
             "dependencies": r["depends_on"], "parent": r["parent"],
             "provider": f"{r['provider']}::{r['name']}-provider-id" if r["provider"] else None}
            for r in resources]


def _kept_types(plan, resources):
    keep = storage_keep_set(_checkpoint(resources), set(), clouds.get(plan.cloud).compute_types)
    return sorted(r["type"] for r in resources if r["urn"] in keep)


def _storage(plan, kind):
    storage = plan.spec.storage.model_copy(update={"kind": kind})
    return plan.spec.model_copy(update={"storage": storage})


@pytest.mark.parametrize("kind,held", [
    ("fsx-lustre", "aws:fsx/lustreFileSystem:LustreFileSystem"),
    ("efs", "aws:efs/fileSystem:FileSystem")])
def test_keep_storage_keeps_the_file_system_and_never_the_cluster(previews, kind, held):
    plan, _ = previews("aws")
    plan, res = previews("aws", spec=_storage(plan, kind))
    kept = _kept_types(plan, res)
    assert held in kept and "aws:ec2/vpc:Vpc" in kept and "aws:kms/key:Key" in kept
    assert "aws:ec2/securityGroup:SecurityGroup" in kept
    for t in kept:    # no EKS, no nodes, nothing inside the cluster, no provider
        assert not t.startswith(("aws:eks/", "aws:autoscaling/", "kubernetes:", "pulumi:")), t


@pytest.mark.parametrize("case", ["azure", "gcp"])
def test_other_clouds_keep_no_cluster_either(previews, case):
    plan, res = previews(case)
    kept = _kept_types(plan, res)
    assert kept and not [t for t in kept if t.startswith(
        (*clouds.get(plan.cloud).compute_types, "kubernetes:", "pulumi:"))]


def test_a_file_system_that_needs_the_cluster_is_refused_before_anything_goes(previews):
    # What main deployed: the file system's security group referenced the cluster's.
    _, res = previews("aws")
    graph = _checkpoint(res)
    cluster = next(r["urn"] for r in graph if r["type"] == "aws:eks/cluster:Cluster")
    for r in graph:
        if r["type"] == "aws:ec2/securityGroup:SecurityGroup" and r["urn"].endswith("-fsx-lustre"):
            r["dependencies"] = [*r["dependencies"], cluster]
    with pytest.raises(ProviderError, match="would keep the cluster"):
        storage_keep_set(graph, set(), clouds.get("aws").compute_types)
