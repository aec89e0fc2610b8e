"""Contract 3: node pools and add-on facts agree with what the stacks deploy."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from stacks import common as c

from .conftest import make_plan

CASES = ["aws", "aws-p5", "gcp", "azure"]


def _pools(case: str):
    from importlib import import_module

    plan = make_plan(case)
    return plan, import_module(f"stacks.{plan.cloud}").node_pools(plan)


def _facts(name: str) -> dict:
    return next(a for a in c.load_addons() if a["name"] == name)


def test_node_pools_are_pure_and_match_the_plan():
    for case in CASES:
        plan, pools = _pools(case)
        assert [p.role for p in pools][0] == "system"
        gpu = [p for p in pools if p.role == "gpu"]
        assert [p.name for p in gpu] == [p.key for p in c.gpu_pools(plan)]
        for p in gpu:
            assert p.instance_type == plan.instance_type
            assert c.GPU_TAINT in p.taints
            assert p.labels[c.CLUSTER_TAG] == plan.name
            assert p.labels["node.kubernetes.io/instance-type"] == plan.instance_type


@pytest.mark.parametrize("case", CASES)
def test_every_gpu_pool_runs_the_plugins_that_advertise_its_resources(case):
    """Each device plugin / driver add-on for this cluster runs on every GPU pool."""
    plan, pools = _pools(case)
    facts = c.addon_facts(plan)
    advertised = {r for a in facts for r in a["advertises"]}
    assert "nvidia.com/gpu" in advertised
    want = {"efa": "vpc.amazonaws.com/efa", "infiniband": "rdma/ib"}.get(c.fabric_kind(plan))
    if want:
        assert want in advertised
    for pool in (p for p in pools if p.role == "gpu"):
        for a in facts:
            assert c.addon_selects(a, pool.labels) == [], (a["name"], pool.name)
            assert c.untolerated(a["tolerations"], pool.taints) == [], (a["name"], pool.name)


def test_spot_taint_is_what_blocks_a_plugin_without_our_tolerations():
    """The fault the issue found: a plugin tolerating only the GPU taint misses AKS spot nodes."""
    plan, pools = _pools("azure")
    spot = next(p for p in pools if p.spot)
    only_gpu = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert c.untolerated(only_gpu, spot.taints) == [
        {"key": "kubernetes.azure.com/scalesetpriority", "value": "spot", "effect": "NoSchedule"}]
    assert c.addon_selects(_facts("aws-efa-k8s-device-plugin"), spot.labels)


def test_helm_values_carry_the_facts():
    for name in ("nvidia-device-plugin", "aws-efa-k8s-device-plugin", "network-operator",
                 "aws-fsx-csi-driver"):
        a = _facts(name)
        values = c.helm_values(a)
        for fact, path in a["values_paths"].items():
            node = values
            for part in path.split("."):
                node = node[part]
            assert node == a[fact], (name, path)
    # EFA chart: the required affinity keys on the label the stack sets, not an instance list.
    efa = c.helm_values(_facts("aws-efa-k8s-device-plugin"))
    assert efa["supportedInstanceLabels"] == {"keys": ["vpc.amazonaws.com/efa.present"],
                                              "values": ["true"]}


def _daemonsets(path: Path):
    return [d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] == "DaemonSet"]


def test_local_manifests_match_their_facts():
    ncp = yaml.safe_load((c.ADDONS_FILE.parent / "azure-nicclusterpolicy.yaml").read_text())
    facts = _facts("nic-cluster-policy")
    assert ncp["spec"]["tolerations"] == facts["tolerations"]
    terms = ncp["spec"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    exprs = terms["nodeSelectorTerms"][0]["matchExpressions"]
    assert {e["key"]: e["values"][0] for e in exprs} == facts["node_selector"]
    cfg = ncp["spec"]["sriovDevicePlugin"]["config"]
    assert '"resourcePrefix": "rdma"' in cfg and '"resourceName": "ib"' in cfg
    ds = _daemonsets(c.ADDONS_FILE.parent / "azure-nvidia-peermem-reloader.yaml")[0]
    facts = _facts("nvidia-peermem-reloader")
    assert ds["spec"]["template"]["spec"]["tolerations"] == facts["tolerations"]


def test_every_manifest_is_pinned_and_exists():
    for a in c.load_addons():
        if a["kind"] != "manifest":
            continue
        for src in c.manifest_sources(a):
            if "://" in src:
                assert "/master/" not in src and "/main/" not in src, (a["name"], src)
                assert str(a["version"]) in src, (a["name"], src)
            else:
                assert Path(src).is_file(), src


def test_tcpxo_installer_and_rxdm_come_from_one_row():
    row = c.gpudirect_release("tcpxo")
    installer = _facts("nccl-tcpxo-installer")
    assert installer["version"] == row["commit"]
    assert row["commit"] in installer["sources"][0]
    assert row["rxdm_image"].rsplit(":", 1)[1].startswith("v")
    assert row["installer_image"].rsplit(":", 1)[1].startswith("v")


def test_tolerates_follows_kubernetes():
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    assert c.tolerates({"operator": "Exists"}, taint)
    assert c.tolerates({"key": "k", "operator": "Exists"}, taint)
    assert c.tolerates({"key": "k", "operator": "Equal", "value": "v"}, taint)
    assert not c.tolerates({"key": "k", "operator": "Equal", "value": "w"}, taint)
    assert not c.tolerates({"key": "k", "operator": "Exists", "effect": "NoExecute"}, taint)
    assert not c.tolerates({"key": "j", "operator": "Exists"}, taint)


def test_manual_prerequisites_name_what_a_person_must_do():
    import dataclasses

    from stacks import manual_prerequisites, node_pools

    azure = make_plan("azure")
    lines = manual_prerequisites(azure)
    assert any("AKSInfinibandSupport" in ln for ln in lines)
    assert any(ln.startswith("encryption at host is on by default") for ln in lines)
    spec = azure.spec.model_copy(update={"security": azure.spec.security.model_copy(
        update={"encryption_at_host": True})})
    assert any("EncryptionAtHost" in ln for ln in
               manual_prerequisites(dataclasses.replace(azure, spec=spec)))
    aws = make_plan("aws-p5")
    assert any("L-417A185B" in ln for ln in manual_prerequisites(aws))
    from reclaunch.spec.models import Capacity
    spec = aws.spec.model_copy(update={"capacity": Capacity(
        reservation="cr-0123456789abcdef0", kind="capacity-block")})
    block = manual_prerequisites(dataclasses.replace(aws, spec=spec, spot=False))
    assert any("Capacity Block cr-0123456789abcdef0" in ln and "cannot buy" in ln for ln in block)
    assert any("GPUS_ALL_REGIONS" in ln for ln in manual_prerequisites(make_plan("gcp")))
    local = dataclasses.replace(aws, cloud="local")
    assert manual_prerequisites(local) == [] and node_pools(local) == []
