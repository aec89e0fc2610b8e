"""The GKE stack as Google's APIs take it (the stacks review, items 4, 9 and 8 on GCP)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml

from reclaunch.errors import ProviderError
from tests.recorded_server import RecordedServer
from tests.stacks.conftest import EXAMPLES

NET, SUB = "gcp:compute/network:Network", "gcp:compute/subnetwork:Subnetwork"
PARAMS = "kubernetes:networking.gke.io/v1:GKENetworkParamSet"


def _plan(**changes):
    from reclaunch.planner import make_plan
    from reclaunch.spec import parse_spec

    doc = yaml.safe_load((EXAMPLES / "gcp-dcnv2-a3mega.yaml").read_text())
    doc.update(changes)
    return make_plan(parse_spec(yaml.safe_dump(doc), "gcp.yaml"))


@pytest.fixture(scope="module")
def ultra():
    from reclaunch.providers import preview_plan

    plan = _plan(name="ultra", instance_type="a3-ultragpu-8g", region="us-central1",
                 interconnect={"intra_node": "nvlink", "inter_node": "rdma"},
                 zones=["us-central1-b"], nodes=2, storage={"kind": "none"},
                 spot={"enabled": False}, autoscaling={"min_nodes": 2, "max_nodes": 2})
    return plan, preview_plan(plan)


def test_a3_ultra_has_one_roce_vpc_with_a_subnet_per_rdma_nic(ultra):
    plan, res = ultra
    roce = [r for r in res if r["type"] == NET
            and str(r["inputs"].get("networkProfile", "")).endswith("/us-central1-b-vpc-roce")]
    assert [r["inputs"]["name"] for r in roce] == ["ultra-rdma"]
    on_roce = [r["inputs"] for r in res if r["type"] == SUB
               and r["inputs"]["network"] == "ultra-rdma-id"]
    assert sorted(s["name"] for s in on_roce) == [f"ultra-rdma-sub-{i}" for i in range(8)]
    assert not [r for r in res if r["type"] == "gcp:compute/firewall:Firewall"
                and r["inputs"]["network"] == "ultra-rdma-id"]     # RoCE VPCs take none
    params = {r["inputs"]["metadata"]["name"]: r["inputs"]["spec"] for r in res
              if r["type"] == PARAMS}
    rdma = {n: p for n, p in params.items() if p["vpc"] == "ultra-rdma"}
    assert sorted(p["vpcSubnet"] for p in rdma.values()) == \
        [f"ultra-rdma-sub-{i}" for i in range(8)]
    assert {p["deviceMode"] for p in rdma.values()} == {"RDMA"}
    assert params["ultra-gvnic-1"]["deviceMode"] == "NetDevice"
    # the pods' interface annotation names exactly the GKE Networks made
    from reclaunch.fabric import get_profile, gke_networks

    wanted = {n["network"] for n in gke_networks(get_profile(plan.fabric), plan.name)} - {"default"}
    assert set(params) == wanted
    pool = next(r for r in res if r["type"] == "gcp:container/nodePool:NodePool"
                and "gpu" in r["name"])
    extra = pool["inputs"]["networkConfig"]["additionalNodeNetworkConfigs"]
    assert len(extra) == 9 and sum(e["network"] == "ultra-rdma" for e in extra) == 8
    assert [e for r in res for e in r["engine"]] == []


def test_gcp_prerequisites_name_kms_and_the_roles_the_stack_needs():
    from stacks.gcp.prerequisites import manual_prerequisites, required_services

    plan = _plan()                                          # filestore
    assert set(required_services(plan)) >= {"cloudkms.googleapis.com", "iam.googleapis.com",
                                             "file.googleapis.com", "container.googleapis.com"}
    text = "\n".join(manual_prerequisites(plan))
    for role in ("roles/cloudkms.admin", "roles/compute.securityAdmin", "roles/file.editor",
                 "roles/iam.serviceAccountUser"):
        assert role in text, role
    bucket = _plan(storage={"kind": "bucket"},
                   job={**yaml.safe_load((EXAMPLES / "gcp-dcnv2-a3mega.yaml").read_text())["job"],
                        "checkpoint": {"path": "gs://acme-ckpt/run"}})
    assert "storage.googleapis.com" in required_services(bucket)
    assert "roles/storage.admin" in "\n".join(manual_prerequisites(bucket))


def _services(srv, names, token=None, query=None):
    srv.add("GET", "/v1/projects/p1/services", query=query or {"filter": "state:ENABLED"},
            body={"services": [{"name": f"projects/1/services/{n}", "config": {"name": n},
                                "state": "ENABLED"} for n in names],
                  **({"nextPageToken": token} if token else {})})


def test_up_stops_before_anything_when_an_api_is_off():
    import requests

    from reclaunch.providers.gcp.services import prerequisites

    plan = _plan()
    with RecordedServer() as srv:
        _services(srv, ["container.googleapis.com", "compute.googleapis.com"], token="p2")
        _services(srv, ["iam.googleapis.com", "file.googleapis.com"],
                  query={"filter": "state:ENABLED", "pageToken": "p2"})
        with pytest.raises(ProviderError) as exc:
            prerequisites(plan, session=requests.Session(), project="p1", endpoint=srv.url)
        assert not srv.unmatched
    assert "APIs not enabled in project p1: cloudkms.googleapis.com" in str(exc.value)
    assert "gcloud services enable cloudkms.googleapis.com --project p1" in str(exc.value)
    with RecordedServer() as srv:
        _services(srv, ["container.googleapis.com", "compute.googleapis.com",
                        "iam.googleapis.com", "file.googleapis.com", "cloudkms.googleapis.com"])
        lines = prerequisites(plan, session=requests.Session(), project="p1", endpoint=srv.url)
    assert any("cloudkms.googleapis.com" in ln for ln in lines)
    with RecordedServer() as srv:                          # no serviceusage.services.list
        srv.add("GET", "/v1/projects/p1/services", status=403,
                body={"error": {"code": 403, "message": "PERMISSION_DENIED"}})
        lines = prerequisites(plan, session=requests.Session(), project="p1", endpoint=srv.url)
    assert lines[-1].startswith("could not check the enabled APIs")


def test_gke_values_are_the_apis():
    from stacks.gcp.api_rules import refusals

    pool = "gcp:container/nodePool:NodePool"
    found = refusals(pool, "x-gpu", {"nodeConfig": {"taints": [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}})
    assert len(found) == 1 and "nodeConfig.taints[0].effect: 'NoSchedule'" in found[0]
    assert refusals(pool, "x-gpu", {"nodeConfig": {"taints": [
        {"key": "k", "value": "v", "effect": "NO_SCHEDULE"}]}}) == []
    assert refusals("gcp:container/cluster:Cluster", "x", {"name": "a" * 41})
    assert refusals("gcp:serviceaccount/account:Account", "x", {"accountId": "ab"})
    assert refusals(NET, "Bad_Name", {})                    # auto-named: Bad_Name + 8


def test_the_gke_value_table_is_what_the_installed_sdk_documents():
    """Every allowed value is in the installed pulumi_gcp's docstrings of that type's module:
    a table drifting from the SDK (or a typo in it) fails here."""
    from stacks.gcp.api_rules import ENUMS

    for typ, paths in ENUMS.items():
        pkg = importlib.import_module(f"pulumi_gcp.{typ.split(':')[1].split('/')[0]}")
        text = "".join(p.read_text() for p in Path(pkg.__file__).parent.glob("*.py"))
        for path, values in paths.items():
            assert not [v for v in values if v not in text], (typ, path)
