"""Every cloud x storage kind x checkpoint bucket x spot setting (from the clouds' facts) previews
under mocks and passes every policy, the engine's own rules included (unique URNs, references
to registered resources, enum values the SDK knows); every example previews; planted faults are
caught by the policy they break."""

from __future__ import annotations

import copy
import dataclasses

import pytest
import yaml

from reclaunch import clouds
from reclaunch.errors import SpecError
from reclaunch.spec.buckets import reachable
from stacks.policy import check

from .conftest import EXAMPLES, make_plan

SIZE = "16TiB"   # a valid step for every sized kind
EXISTING = {"cephfs": "ceph-cluster-1/trainfs"}


def _example(cloud: str) -> str:
    """The first example spec of this cloud (every cloud with a stack ships one)."""
    return next(p.name for p in sorted(EXAMPLES.glob("*.yaml"))
                if (yaml.safe_load(p.read_text()) or {}).get("cloud") == cloud)


def _scheme(cloud: str) -> str:
    return next(iter(reachable(cloud)))   # the first object store the cloud's facts name


# A container the user already has must name its storage account (the stack makes none), and
# the account's resource id in storage.existing for the stack to grant on it (or, where a
# storage kind uses storage.existing itself, security.bucket_grants: manual).
OWN_CONTAINER = {"az": "abfs://acme-ckpt@acmeckpt.dfs.core.windows.net/run-1"}
ACCOUNT_ID = ("/subscriptions/0000/resourceGroups/acme/providers/Microsoft.Storage/"
              "storageAccounts/acmeckpt")


def _url(scheme: str, created: bool) -> str:
    return f"{scheme}://acme-ckpt/run-1" if created else OWN_CONTAINER.get(
        scheme, f"{scheme}://acme-ckpt/run-1")


STACK_CLOUDS = list(clouds.kube_names())   # each has a stack (stacks.facts refuses one without)
COMBOS = [(cloud, kind.name, bucket, spot) for cloud in STACK_CLOUDS
          for kind in clouds.get(cloud).storage for bucket in (False, True)
          for spot in (False, True)]


def spec_text(cloud: str, kind: str, bucket: bool, spot: bool) -> str:
    doc = yaml.safe_load((EXAMPLES / _example(cloud)).read_text())
    rec = clouds.storage_kind(kind)
    doc["storage"] = {"kind": kind, **({"size": SIZE} if rec.sized else {}),
                      **({"existing": EXISTING[kind]} if kind in EXISTING else {}),
                      **({"mount_path": "/data"} if rec.mounted else {})}
    doc["spot"] = {"enabled": spot, **({"fallback": "on-demand"} if spot else {})}
    ckpt = _url(_scheme(cloud), created=kind == "bucket") if bucket else "/data/ckpt"
    doc["job"]["checkpoint"] = {"path": ckpt, "every_minutes": 15}
    if bucket and kind != "bucket" and reachable(cloud)[_scheme(cloud)].grant_scope:
        if kind in EXISTING:
            doc["security"] = {**doc.get("security", {}), "bucket_grants": "manual"}
        else:
            doc["storage"]["existing"] = ACCOUNT_ID
    if not rec.mounted:
        doc["job"]["dataset"].pop("path", None)
    return yaml.safe_dump(doc)


def variant(cloud: str, kind: str, spot: bool, bucket: bool = False):
    from reclaunch.planner import make_plan as plan_of
    from reclaunch.spec import parse_spec

    return plan_of(parse_spec(spec_text(cloud, kind, bucket, spot),
                              f"{cloud}-{kind}-{bucket}-{spot}.yaml"))


@pytest.fixture(scope="module")
def matrix():
    from reclaunch.providers import preview_plan as preview

    cache: dict = {}

    def get(cloud, kind, spot, bucket=False):
        key = (cloud, kind, spot, bucket)
        if key not in cache:
            plan = variant(cloud, kind, spot, bucket)
            cache[key] = (plan, preview(plan))
        return cache[key]
    return get


@pytest.mark.parametrize("cloud,kind,bucket,spot", COMBOS, ids=[
    f"{c}-{k}-{'bucket' if b else 'fs'}-{'spot' if s else 'od'}" for c, k, b, s in COMBOS])
def test_every_combination_previews_and_passes_policy(matrix, cloud, kind, bucket, spot):
    try:
        plan = variant(cloud, kind, spot, bucket)
    except SpecError as exc:
        # What validate refuses never reaches a stack: a bucket kind without a bucket URL, or
        # spot with checkpoints on no storage that outlives a node.
        assert (kind == "bucket" and not bucket) or (spot and not bucket and kind == "none"), exc
        return
    plan, res = matrix(cloud, kind, spot, bucket)
    assert check(plan, res) == []
    urns = [r["urn"] for r in res]
    assert len(urns) == len(set(urns))
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
    from reclaunch import clouds
    from stacks.azure.storage import AMLFS_SKU, AMLFS_SKUS

    assert clouds.storage_kind("azure-lustre").steps.maximum_gib * 2**30 == AMLFS_SKUS[AMLFS_SKU][1] * 2**40
    from reclaunch.errors import SpecError
    from reclaunch.spec import parse_spec

    text = (EXAMPLES / "azure-din-nd96amsr.yaml").read_text().replace(
        "kind: azure-files", "kind: azure-lustre")
    import re
    text = re.sub(r"(kind: azure-lustre\n\s+size:) \S+", r"\1 500TiB", text)
    with pytest.raises(SpecError, match="storage.size: 500 TiB is over the 128 TiB"):
        parse_spec(text)
