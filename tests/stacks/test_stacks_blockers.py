"""Issue 24's stack blockers, each read off the preview a real `up` would deploy."""

from __future__ import annotations

import dataclasses

from tests.stacks.conftest import make_plan


def _of(resources, typ):
    return [r for r in resources if r["type"] == typ]


def _with_api_cidrs(case, cidrs):
    plan = make_plan(case)
    spec = plan.spec.model_copy(update={"security": plan.spec.security.model_copy(
        update={"api_cidrs": cidrs})})
    return dataclasses.replace(plan, spec=spec)


def test_aks_authorized_ranges_carry_the_nat_gateway_ip():
    from reclaunch.providers import preview_plan as preview

    res = preview(_with_api_cidrs("azure", ["203.0.113.7/32"]))
    nat_ip = _of(res, "azure-native:network:PublicIPAddress")
    assert len(nat_ip) == 1
    aks = _of(res, "azure-native:containerservice:ManagedCluster")[0]["inputs"]
    ranges = aks["apiServerAccessProfile"]["authorizedIPRanges"]
    assert ranges == ["203.0.113.7/32", "198.51.100.10/32"]   # the caller, then the NAT


def test_gpu_groups_have_their_own_role_and_access_entry(previews):
    _, res = previews("aws")
    system_roles = {r["inputs"]["nodeRoleArn"] for r in _of(res, "aws:eks/nodeGroup:NodeGroup")}
    entries = _of(res, "aws:eks/accessEntry:AccessEntry")
    assert entries and all(e["inputs"]["type"] == "EC2_LINUX" for e in entries)
    # EKS makes the managed node group's entry itself: an explicit one for the same role 409s.
    assert not {e["inputs"]["principalArn"] for e in entries} & system_roles
    profile = _of(res, "aws:iam/instanceProfile:InstanceProfile")[0]["inputs"]
    assert profile["role"] == "criteo-deepfm-gpu-node-role"
    assert [e["inputs"]["principalArn"] for e in entries] == [
        "arn:mock:aws:iam/role:Role:criteo-deepfm-gpu-node-role"]
