"""The Kubernetes minor: asked of each cloud at `up` (recorded answers on 127.0.0.1), chosen
inside the pinned add-ons' ranges, with the dated table as fallback (issue 24)."""

from __future__ import annotations

import datetime as dt
import json
import types
from pathlib import Path

import pytest

from reclaunch.errors import ProviderError
from reclaunch.providers.versions import resolve
from stacks import versions
from tests.recorded_server import RecordedServer
from tests.stacks.conftest import make_plan

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded" / "versions"
KEY = "reclaunch:kubernetesVersion"


def _eks_client(url: str):
    import boto3

    return boto3.client("eks", region_name="us-east-1", endpoint_url=url,
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def test_eks_answer_drives_the_choice_inside_the_autoscaler_range():
    from reclaunch.providers.aws.versions import offered

    plan = make_plan("aws")
    with RecordedServer() as srv:
        srv.load(RECORDED / "eks.json")
        answer = offered(plan, client=_eks_client(srv.url))
        assert not srv.unmatched
    assert answer == ["1.37", "1.36", "1.35"]          # both pages, standard support only
    # 1.37 is offered but cluster-autoscaler has no 1.37 release: the newest that fits.
    assert resolve(plan, lambda p: answer, where="aws") == {KEY: "1.36"}


def test_aks_answer_skips_preview_and_lts_only_and_respects_the_network_operator():
    from reclaunch.providers.azure.versions import offered, parse

    doc = json.loads((RECORDED / "aks.json").read_text())
    assert parse(doc) == ["1.37", "1.36", "1.35"]
    calls = []

    def run(cmd, **kw):
        calls.append(cmd)
        return types.SimpleNamespace(stdout=json.dumps(doc))

    plan = make_plan("azure")                           # ND InfiniBand: network-operator
    answer = offered(plan, run=run)
    assert calls == [["az", "aks", "get-versions", "--location", "eastus", "-o", "json"]]
    assert resolve(plan, lambda p: answer, where="azure") == {KEY: "1.35"}


def test_gke_answer_from_server_config():
    import requests

    from reclaunch.providers.gcp.versions import offered

    plan = make_plan("gcp")
    with RecordedServer() as srv:
        srv.load(RECORDED / "gke.json")
        answer = offered(plan, session=requests.Session(), project="mock-project",
                         endpoint=srv.url)
    assert resolve(plan, lambda p: answer, where="gcp") == {KEY: "1.37"}


def test_no_offered_minor_fits_the_pins_stops_with_the_addon_named():
    with pytest.raises(ProviderError, match="cluster-autoscaler supports 1.33..1.36"):
        resolve(make_plan("aws"), lambda p: ["1.37", "1.38"], where="aws in us-east-1")


def test_a_failed_call_falls_back_to_the_dated_table_by_today():
    plan = make_plan("aws")

    def boom(p):
        raise RuntimeError("AccessDeniedException: eks:DescribeClusterVersions")
    # 1.34 leaves EKS standard support on 2026-12-02 (the table): then 1.35.
    assert resolve(plan, boom, where="aws", today=lambda: dt.date(2026, 11, 1)) == {KEY: "1.35"}
    assert resolve(plan, boom, where="aws", today=lambda: dt.date(2026, 12, 15)) == {KEY: "1.35"}
    with pytest.raises(ProviderError, match="no Kubernetes version fits"):   # table too old
        resolve(plan, boom, where="aws", today=lambda: dt.date(2027, 6, 1))


def test_the_resolved_version_reaches_cluster_amis_os_sku_and_autoscaler(monkeypatch):
    from reclaunch.providers import preview_plan as preview

    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({KEY: "1.34"}))
    res = preview(make_plan("aws"))
    eks = next(r for r in res if r["type"] == "aws:eks/cluster:Cluster")["inputs"]
    assert eks["version"] == "1.34"
    ca = next(r for r in res if r["type"] == "kubernetes:helm.sh/v3:Release"
              and r["inputs"]["chart"] == "cluster-autoscaler")["inputs"]
    assert ca["values"]["image"]["tag"] == "v1.34.5"    # the CA minor of the control plane
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({KEY: "1.34"}))
    res = preview(make_plan("azure"))
    aks = next(r for r in res if r["type"] == "azure-native:containerservice:ManagedCluster")
    assert aks["inputs"]["kubernetesVersion"] == "1.34"
    assert aks["inputs"]["agentPoolProfiles"][0]["osSKU"] == "Ubuntu2204"


def test_os_sku_and_lustre_daemonsets_follow_the_minor():
    from stacks.azure.pools import os_release, os_sku

    assert (os_release("1.34"), os_release("1.35"), os_release("1.37")) == (
        "Ubuntu2204", "Ubuntu2404", "Ubuntu2404")
    # 24.04 is sent as Ubuntu: Ubuntu2404 is not in the installed SDK's API version's enum.
    assert (os_sku("1.34"), os_sku("1.35"), os_sku("1.37")) == ("Ubuntu2204", "Ubuntu", "Ubuntu")
    lustre = next(a for a in versions.c.load_addons() if a["name"] == "azurelustre-csi-driver")
    assert any(s.endswith("node-noble.yaml") for s in lustre["sources"])
    assert "Ubuntu2404" in lustre["node_selector_in"]["kubernetes.azure.com/os-sku-effective"]


def test_every_minor_an_addon_allows_has_its_image():
    for addon in versions.c.load_addons():
        rng = addon.get("kubernetes") or {}
        if addon.get("image_by_minor"):
            lo, hi = versions.minor_key(rng["min"]), versions.minor_key(rng["max"])
            want = {f"1.{m}" for m in range(lo[1], hi[1] + 1)}
            assert set(addon["image_by_minor"]) == want, addon["name"]


def test_preview_uses_the_table_as_of_its_date_not_today():
    assert versions.fallback_minors("aws") == ["1.34", "1.35"]
    assert versions.fallback(make_plan("aws")) == "1.35"
    assert versions.fallback(make_plan("gcp")) == "1.36"


def _recorded_eks(plan):
    return ["1.37", "1.36", "1.35"]


def test_up_hands_the_cloud_answer_to_the_program_as_stack_config():
    import dataclasses

    from reclaunch.providers.aws.provider import CLOUD
    from reclaunch.providers.kubecloud import KubeCloudProvider

    plan = make_plan("aws")
    spec = plan.spec.model_copy(update={"security": plan.spec.security.model_copy(
        update={"api_cidrs": ["203.0.113.7/32"]})})      # no public-address lookup
    cloud = dataclasses.replace(CLOUD, kube_versions=f"{__name__}:_recorded_eks")
    cfg = KubeCloudProvider(cloud)._config(dataclasses.replace(plan, spec=spec))
    assert cfg[KEY] == "1.36" and cfg["aws:region"] == plan.region
    assert CLOUD.kube_versions == "reclaunch.providers.aws.versions:offered"


def test_an_addon_holding_the_minor_back_is_said_with_its_end_of_support(caplog):
    """AKS offers 1.36 and 1.37, network-operator stops at 1.35 (issue 37 §3): `up --dry-run`
    and `up` list it with what a person must do, and `up` warns the same of the cloud's own
    answer."""
    import dataclasses

    from reclaunch.cli.dryrun import needs_a_person
    from reclaunch.providers import get

    def manual_prerequisites(plan):
        if plan.cloud == "azure":   # no question to Azure about encryption at host here
            plan = dataclasses.replace(plan, spec=plan.spec.model_copy(update={
                "security": plan.spec.security.model_copy(update={"encryption_at_host": False})}))
        dry, up = needs_a_person(plan, pins=True), get(plan.cloud)._prerequisites(plan)
        assert dry == up                          # `up --dry-run` shows what `up` shows
        assert needs_a_person(plan) == [ln for ln in dry if not ln.startswith("Kubernetes ")]
        return dry

    azure = make_plan("azure")
    (line,) = [ln for ln in manual_prerequisites(azure) if ln.startswith("Kubernetes ")]
    end = next(r["end"] for r in versions.table("azure")["minors"] if r["minor"] == "1.35")
    assert line.startswith("Kubernetes 1.35, not 1.37") and "network-operator 26.1.1 supports " \
        f"at most 1.35" in line and f"ends {end}" in line
    for cloud in ("aws", "gcp"):       # nothing holds them back in the table
        assert not [ln for ln in manual_prerequisites(make_plan(cloud)) if ln.startswith("Kubernetes ")]
    with caplog.at_level("WARNING", logger="reclaunch.versions"):
        assert resolve(azure, lambda p: ["1.37", "1.36", "1.35"], where="azure") == {KEY: "1.35"}
    assert any("Kubernetes 1.35, not 1.37" in r.getMessage() for r in caplog.records)
    assert versions.held_back(azure, "1.35", ["1.35", "1.34"]) == []
