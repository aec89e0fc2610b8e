"""GCP sweep: the real google-cloud-compute REST clients against recorded responses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from recorded_server import RecordedServer

from reclaunch.errors import ProviderError
from reclaunch.providers.gcp.sweep import GcpSweeper
from reclaunch.runtime.sweep import sweep

FIXTURE = Path(__file__).parents[1] / "fixtures" / "recorded" / "gcp" / "compute_sweep.json"
PROJECT = json.loads(FIXTURE.read_text())["project"]
BASE = f"/compute/v1/projects/{PROJECT}"


def make_sweeper(url: str, sleep=lambda s: None) -> GcpSweeper:
    from google.auth.credentials import AnonymousCredentials

    return GcpSweeper("us-central1", project=PROJECT, credentials=AnonymousCredentials(),
                      api_endpoint=url, sleep=sleep)


@pytest.fixture
def gce():
    with RecordedServer() as srv:
        srv.load(FIXTURE)
        yield srv


def test_lists_all_pages_and_filters_by_label_and_region(gce):
    found = make_sweeper(gce.url).list()

    got = sorted((o.kind, o.name, o.cluster) for o in found)
    assert got == [
        ("disk", "rl-cluster-a-data", "cluster-a"),
        ("disk", "rl-cluster-a-head", "cluster-a"),          # page 2
        ("disk", "rl-cluster-b-data", "cluster-b"),
        ("instance", "rl-cluster-a-head", "cluster-a"),      # page 2
        ("instance", "rl-cluster-a-workers-x1y2", "cluster-a"),
        ("instance", "rl-cluster-b-workers-q9z8", "cluster-b"),
        ("instance-group-manager", "rl-cluster-a-workers", "cluster-a"),
        ("instance-group-manager", "rl-cluster-b-workers", "cluster-b"),
        ("instance-template", "rl-cluster-a-tmpl", "cluster-a"),
        ("instance-template", "rl-cluster-b-tmpl", "cluster-b"),
    ]  # never: unlabelled, reclaunch-managed=false, or europe-west4 resources
    tokens = {r.query.get("pageToken") for r in gce.calls("GET")}
    assert {"instances-page-2", "disks-page-2", "instanceGroupManagers-page-2"} <= tokens
    assert not gce.calls("DELETE") and not gce.unmatched


def test_hourly_cost(gce):
    from reclaunch.catalog import load_catalog, offers

    by = {(o.kind, o.name): o for o in make_sweeper(gce.url).list("cluster-a")}
    a3 = offers(load_catalog(), cloud="gcp", instance_type="a3-highgpu-8g",
                region="us-central1")[0]
    a2 = offers(load_catalog(), cloud="gcp", instance_type="a2-highgpu-8g",
                region="us-central1")[0]
    assert by["instance", "rl-cluster-a-workers-x1y2"].hourly_usd == pytest.approx(a3.spot_usd)
    assert by["instance", "rl-cluster-a-head"].hourly_usd == pytest.approx(a2.on_demand_usd)
    assert by["disk", "rl-cluster-a-data"].hourly_usd == pytest.approx(500 * 0.17 / 730)
    assert by["disk", "rl-cluster-a-head"].hourly_usd == pytest.approx(200 * 0.10 / 730)


def test_sweep_deletes_only_cluster_a_and_waits_for_operations(gce, no_sleep):
    report = sweep(make_sweeper(gce.url, sleep=no_sleep), "cluster-a", delete=True,
                   sleep=no_sleep)

    assert report.ok, report.render()
    z = f"{BASE}/zones"
    assert gce.paths("DELETE") == [  # dependency order
        f"{z}/us-central1-a/instanceGroupManagers/rl-cluster-a-workers",
        f"{z}/us-central1-b/instances/rl-cluster-a-head",
        f"{BASE}/global/instanceTemplates/rl-cluster-a-tmpl",
        f"{z}/us-central1-a/disks/rl-cluster-a-data",
    ]  # the MIG's instance and the head's boot disk went with their owners: no DELETE
    polls = gce.paths("GET", f"{z}/us-central1-a/operations/")
    assert polls.count(f"{z}/us-central1-a/operations/operation-igm-a") == 2  # RUNNING, DONE
    assert gce.paths("GET", f"{BASE}/global/operations/") == [
        f"{BASE}/global/operations/operation-tmpl-a"]
    assert len(report.deleted) == 6 and not gce.unmatched


def test_unreachable_endpoint_is_one_line_provider_error():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ProviderError) as exc:
        make_sweeper(f"http://127.0.0.1:{port}").list()
    assert "cannot reach the GCP" in str(exc.value) and "\n" not in str(exc.value)


def test_missing_credentials_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))  # no gcloud ADC file
    monkeypatch.setenv("NO_GCE_CHECK", "True")            # don't probe the metadata server
    with pytest.raises(ProviderError) as exc:
        GcpSweeper("us-central1", project="p")
    assert "gcloud auth application-default login" in str(exc.value)
