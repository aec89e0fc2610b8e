"""Every cloud x storage kind x spot setting previews under mocks and passes every policy;
every example previews; planted faults are caught by the policy they break."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from reclaunch.spec.rules import STORAGE_BY_CLOUD
from stacks.policy import check

from .conftest import EXAMPLES, make_plan

BASE = {"aws": "aws", "azure": "azure", "gcp": "gcp"}
SIZE = 16 * 2**40   # 16 TiB: a valid step for every sized kind
EXISTING = {"cephfs": "ceph-cluster-1/trainfs", "pvc": None}
COMBOS = [(cloud, kind, spot) for cloud in BASE for kind in STORAGE_BY_CLOUD[cloud]
          for spot in (False, True)]


def variant(cloud: str, kind: str, spot: bool):
    plan = make_plan(BASE[cloud])
    spec = plan.spec.model_copy(update={
        "storage": plan.spec.storage.model_copy(update={
            "kind": kind, "size": SIZE, "existing": EXISTING.get(kind)}),
        "spot": plan.spec.spot.model_copy(update={"enabled": spot})})
    return dataclasses.replace(plan, spec=spec, spot=spot)


@pytest.fixture(scope="module")
def matrix():
    from reclaunch.providers import preview_plan as preview

    cache: dict = {}

    def get(cloud, kind, spot):
        key = (cloud, kind, spot)
        if key not in cache:
            plan = variant(cloud, kind, spot)
            cache[key] = (plan, preview(plan))
        return cache[key]
    return get


@pytest.mark.parametrize("cloud,kind,spot", COMBOS,
                         ids=[f"{c}-{k}-{'spot' if s else 'od'}" for c, k, s in COMBOS])
def test_every_combination_previews_and_passes_policy(matrix, cloud, kind, spot):
    plan, res = matrix(cloud, kind, spot)
    assert check(plan, res) == []
    pools = [r for r in res if r["key"].get("instance") == plan.instance_type]
    assert pools, "no GPU pool"
    capacities = {str(r["key"].get("capacity")).lower() for r in pools}
    assert any(c in capacities for c in ("spot", "true")) == spot


def test_azure_lustre_uses_the_sdk_argument_and_sku_steps(matrix):
    _, res = matrix("azure", "azure-lustre", False)
    fs = next(r for r in res if r["type"] == "azure-native:storagecache:AmlFilesystem")
    assert fs["inputs"]["storageCapacityTiB"] == 16
    assert fs["inputs"]["sku"]["name"] == "AMLFS-Durable-Premium-250"
    assert any(r["name"].endswith("azurelustre-csi-driver") for r in res)


def test_amlfs_capacity_rounds_to_steps_and_refuses_too_big():
    from stacks.azure.storage import amlfs_capacity_tib

    assert amlfs_capacity_tib(10 * 2**40) == (16, "storage.size 10 TiB rounded up to 16 TiB: "
                                               "AMLFS-Durable-Premium-250 sells 8 TiB steps")
    assert amlfs_capacity_tib(8 * 2**40) == (8, None)
    with pytest.raises(ValueError, match="over the 128 TiB"):
        amlfs_capacity_tib(200 * 2**40)


@pytest.mark.parametrize("path", sorted(p.name for p in EXAMPLES.glob("*.yaml")
                                        if not p.name.startswith("local")))
def test_every_example_previews_clean(path):
    from reclaunch.planner import make_plan as plan_of
    from reclaunch.providers import preview_plan as preview
    from reclaunch.spec import load_spec

    plan = plan_of(load_spec(str(EXAMPLES / path)))
    assert check(plan, preview(plan)) == []


# ---- planted faults: each policy catches the fault it exists for ----------------------------

def _plant(res, typ, fn):
    res = copy.deepcopy(res)
    for r in res:
        if r["type"] == typ:
            fn(r)
            break
    else:
        raise AssertionError(f"no {typ}")
    return res


def test_policy_catches_planted_faults(matrix):
    plan, res = matrix("aws", "fsx-lustre", True)

    def world_eks(r):
        r["inputs"]["vpcConfig"].update(endpointPublicAccess=True, publicAccessCidrs=["0.0.0.0/0"])
    assert "control-plane" in " ".join(check(plan, _plant(res, "aws:eks/cluster:Cluster", world_eks)))

    def untag(r):
        r["tags"] = {}
    assert any(f.startswith("tagged:") for f in check(plan, _plant(
        res, "aws:ec2/placementGroup:PlacementGroup", untag)))

    def customer_key(r):
        r["inputs"]["blockDeviceMappings"][0]["ebs"]["kmsKeyId"] = "arn:mock:aws:kms/key:Key:" \
            f"{plan.name}-kms"
    assert "service-linked" in " ".join(check(plan, _plant(
        res, "aws:ec2/launchTemplate:LaunchTemplate", customer_key)))

    def full_access(r):
        r["inputs"]["policy"] = ('{"Statement": [{"Effect": "Allow", "Resource": "*", '
                                 '"Action": ["autoscaling:SetDesiredCapacity"]}]}')
    assert any(f.startswith("scoped-iam:") for f in check(plan, _plant(
        res, "aws:iam/rolePolicy:RolePolicy", full_access)))

    def ssh(r):
        r["inputs"]["ingress"] = [{"protocol": "tcp", "fromPort": 22, "toPort": 22,
                                   "cidrBlocks": ["0.0.0.0/0"]}]
    assert any(f.startswith("no-world-ssh:") for f in check(plan, _plant(
        res, "aws:ec2/securityGroup:SecurityGroup", ssh)))

    gplan, gres = matrix("gcp", "filestore", True)

    def upgrades(r):
        if r["inputs"]["nodeConfig"].get("guestAccelerators"):
            r["inputs"]["management"]["autoUpgrade"] = True
    bad = copy.deepcopy(gres)
    for r in bad:
        if r["type"] == "gcp:container/nodePool:NodePool":
            upgrades(r)
    assert any(f.startswith("gpu-pools-pinned:") for f in check(gplan, bad))


def test_api_open_to_world_only_when_the_spec_says_so(matrix):
    from reclaunch.providers import preview_plan as preview

    plan = variant("aws", "none", False)
    spec = plan.spec.model_copy(update={"security": plan.spec.security.model_copy(
        update={"api_cidrs": ["0.0.0.0/0"]})})
    opened = dataclasses.replace(plan, spec=spec)
    res = preview(opened)
    eks = next(r for r in res if r["type"] == "aws:eks/cluster:Cluster")
    assert eks["inputs"]["vpcConfig"]["publicAccessCidrs"] == ["0.0.0.0/0"]
    assert check(opened, res) == []                    # asked for, so allowed
    assert any("control-plane" in f for f in check(plan, res))   # not asked for


def test_storage_limits_at_validate_match_the_stacks():
    from reclaunch.spec.rules import STORAGE_MAX_BYTES
    from stacks.azure.storage import AMLFS_SKU, AMLFS_SKUS

    assert STORAGE_MAX_BYTES["azure-lustre"] == AMLFS_SKUS[AMLFS_SKU][1] * 2**40
    from reclaunch.errors import SpecError
    from reclaunch.spec import parse_spec

    text = (EXAMPLES / "azure-din-nd96amsr.yaml").read_text().replace(
        "kind: azure-files", "kind: azure-lustre")
    import re
    text = re.sub(r"(kind: azure-lustre\n\s+size:) \S+", r"\1 500TiB", text)
    with pytest.raises(SpecError, match="storage.size: 500 TiB is over the 128 TiB"):
        parse_spec(text)
