"""Azure sweep: the real azure-mgmt-compute client against recorded ARM responses."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from recorded_server import RecordedServer

from reclaunch.errors import ProviderError
from reclaunch.providers.azure.sweep import AzureSweeper
from reclaunch.runtime.sweep import sweep

FIXTURE = Path(__file__).parents[1] / "fixtures" / "recorded" / "azure" / "compute_sweep.json"
SUB = json.loads(FIXTURE.read_text())["subscription"]


class FakeCredential:
    """A TokenCredential that never talks to Entra ID."""

    def get_token(self, *scopes, **kwargs):
        from azure.core.credentials import AccessToken
        return AccessToken("fake-token", int(time.time()) + 3600)


def make_sweeper(url: str, region: str = "eastus") -> AzureSweeper:
    from azure.core.pipeline.policies import SansIOHTTPPolicy

    # Bearer-token policy insists on https; the recorded server is plain http on 127.0.0.1.
    return AzureSweeper(region, subscription_id=SUB, credential=FakeCredential(),
                        base_url=url, authentication_policy=SansIOHTTPPolicy(),
                        polling_interval=0, retry_total=0)


@pytest.fixture
def arm():
    with RecordedServer() as srv:
        srv.load(FIXTURE)
        yield srv


def test_lists_pages_and_filters_by_tag_and_region(arm):
    found = make_sweeper(arm.url).list()

    names = sorted(o.name for o in found)
    # Page 2 of scale sets and VMs were followed (nextLink); untagged, managed=false and
    # other-region resources were dropped.
    assert names == ["rl-cluster-a-data", "rl-cluster-a-head", "rl-cluster-a-node-1",
                     "rl-cluster-a-workers", "rl-cluster-b-data", "rl-cluster-b-head",
                     "rl-cluster-b-workers"]
    assert any(r.query.get("$skiptoken") == "vm-page-2" for r in arm.calls("GET"))
    assert any(r.query.get("$skiptoken") == "ss-page-2" for r in arm.calls("GET"))
    assert not arm.calls("DELETE")
    assert not arm.unmatched


def test_hourly_cost(arm):
    from reclaunch.catalog import load_catalog, offers

    by_name = {o.name: o for o in make_sweeper(arm.url).list("cluster-a")}
    h100 = offers(load_catalog(), cloud="azure", instance_type="Standard_ND96isr_H100_v5",
                  region="eastus")[0]
    a100 = offers(load_catalog(), cloud="azure", instance_type="Standard_ND96asr_v4",
                  region="eastus")[0]
    assert by_name["rl-cluster-a-workers"].hourly_usd == pytest.approx(
        2 * (h100.spot_usd or h100.on_demand_usd))
    assert by_name["rl-cluster-a-head"].hourly_usd == pytest.approx(a100.on_demand_usd)
    assert by_name["rl-cluster-a-node-1"].hourly_usd is None  # size not in the catalog
    assert by_name["rl-cluster-a-data"].hourly_usd is None    # no Azure disk price cited


def test_sweep_deletes_only_cluster_a_through_lros(arm, no_sleep):
    report = sweep(make_sweeper(arm.url), "cluster-a", delete=True, sleep=no_sleep)

    assert report.ok, report.render()
    deleted = arm.paths("DELETE")
    base = f"/subscriptions/{SUB}/resourceGroups/rl-cluster-a/providers/Microsoft.Compute"
    # Dependency order: scale set, then VMs, then the disk.
    assert deleted == [f"{base}/virtualMachineScaleSets/rl-cluster-a-workers",
                       f"{base}/virtualMachines/rl-cluster-a-head",
                       f"{base}/virtualMachines/rl-cluster-a-node-1",
                       f"{base}/disks/rl-cluster-a-data"]
    # Each LRO was polled through its Azure-AsyncOperation URL until Succeeded.
    assert len([p for p in arm.paths("GET") if p.startswith("/_lro/")]) == 2 * 4
    assert sorted(o.name for o in report.deleted) == [
        "rl-cluster-a-data", "rl-cluster-a-head", "rl-cluster-a-node-1", "rl-cluster-a-workers"]
    assert not arm.unmatched


def test_unreachable_arm_is_one_line_provider_error():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ProviderError) as exc:
        make_sweeper(f"http://127.0.0.1:{port}").list()
    assert "cannot reach Azure" in str(exc.value) and "\n" not in str(exc.value)


def test_missing_subscription_names_the_fix(monkeypatch):
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    with pytest.raises(ProviderError, match="AZURE_SUBSCRIPTION_ID"):
        AzureSweeper("eastus", credential=FakeCredential())
