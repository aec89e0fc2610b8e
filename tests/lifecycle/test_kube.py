"""kube.py against recorded Kubernetes API responses on 127.0.0.1 (a real kubernetes client)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from reclaunch.errors import ProviderError
from reclaunch.runtime.kube import Kube, job_state, object_path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from recorded_server import RecordedServer  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "recorded" / "kube" / "cluster.json"


@pytest.fixture
def cluster():
    srv = RecordedServer()
    srv.load(FIXTURE)
    with srv:
        yield srv, Kube.from_host(srv.url, token="t0ken")
    assert not [r for r in srv.unmatched if "/gone" not in r.path]


def test_server_side_apply_of_rendered_manifests(cluster, plan):
    from reclaunch.manifests.job import render
    srv, kube = cluster
    applied = kube.apply_all(render(plan))
    assert applied[0] == "Namespace/reclaunch" and applied[-1] == "PyTorchJob/reclaunch/criteo-deepfm"
    patches = srv.calls("PATCH")
    assert [r.path for r in patches] == [
        "/api/v1/namespaces/reclaunch",
        "/api/v1/namespaces/reclaunch/configmaps/criteo-deepfm-plan",
        # the spot job's rendezvous store (manifests/rdzv.py), before the job that uses it
        "/api/v1/namespaces/reclaunch/services/criteo-deepfm-rdzv",
        "/apis/apps/v1/namespaces/reclaunch/deployments/criteo-deepfm-rdzv",
        "/apis/kubeflow.org/v1/namespaces/reclaunch/pytorchjobs/criteo-deepfm"]
    for r in patches:
        assert r.headers["Content-Type"] == "application/apply-patch+yaml"
        assert r.query == {"fieldManager": "reclaunch", "force": "true"}
        assert {k.lower(): v for k, v in r.headers.items()}["authorization"] == "Bearer t0ken"
    assert patches[-1].json()["spec"]["pytorchReplicaSpecs"]


def test_get_pytorchjob_and_state(cluster):
    _, kube = cluster
    job = kube.job("reclaunch", "criteo-deepfm")
    assert job["status"]["replicaStatuses"]["Worker"]["failed"] == 1
    assert job_state(job) == "Restarting"
    assert kube.job("reclaunch", "gone") is None


def test_list_pods_sorted_by_rank(cluster):
    srv, kube = cluster
    pods = kube.pods("reclaunch", "criteo-deepfm")
    assert [(p["name"], p["rank"]) for p in pods] == [
        ("criteo-deepfm-master-0", 0), ("criteo-deepfm-worker-0", 1), ("criteo-deepfm-worker-1", 2)]
    assert pods[1]["restarts"] == 1 and pods[0]["node"] == "ip-10-0-1-1"
    assert srv.calls("GET", "/api/v1/namespaces/reclaunch/pods")[0].query["labelSelector"] == \
        "training.kubeflow.org/job-name=criteo-deepfm"


def test_nodes_by_capacity_type(cluster):
    _, kube = cluster
    got = {n["name"]: n["capacity_type"] for n in kube.nodes()}
    assert got == {"ip-10-0-1-1": "spot", "ip-10-0-1-2": "on-demand", "gke-1": "spot",
                   "aks-1": "spot", "sys-1": "unknown"}


def test_logs_master_and_rank(cluster):
    srv, kube = cluster
    lines = list(kube.logs("reclaunch", "criteo-deepfm-master-0"))
    assert lines == ["step 100 loss 0.512", "step 200 loss 0.498",
                     "checkpoint saved /data/ckpt/step-200"]
    lines = list(kube.logs("reclaunch", "criteo-deepfm-worker-0", follow=True))
    assert lines == ["worker 0 ready"]
    assert srv.calls("GET", "/api/v1/namespaces/reclaunch/pods/criteo-deepfm-worker-0/log")[0] \
        .query == {"follow": "true"}


def test_errors_are_one_line_provider_errors(cluster):
    _, kube = cluster
    with pytest.raises(ProviderError, match=r"422 ConfigMap \"bad\" is invalid"):
        kube.apply({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "bad", "namespace": "reclaunch"}})


def test_delete_job(cluster):
    srv, kube = cluster
    assert kube.delete("kubeflow.org/v1", "PyTorchJob", "criteo-deepfm", "reclaunch")
    assert srv.calls("DELETE")[0].json() == {"propagationPolicy": "Foreground"}


def test_unreachable_cluster():
    kube = Kube.from_host("http://127.0.0.1:9")
    with pytest.raises(ProviderError, match="is the cluster up"):
        kube.job("reclaunch", "x")


def test_object_paths():
    assert object_path("v1", "Namespace", "a", "ignored") == "/api/v1/namespaces/a"
    assert object_path("batch/v1", "Job", "j", "ns") == "/apis/batch/v1/namespaces/ns/jobs/j"
    assert object_path("example.io/v1", "Widget", "w", "ns") == \
        "/apis/example.io/v1/namespaces/ns/widgets/w"


def test_lifecycle_status_through_recorded_api(cluster, plan, world):
    """The lifecycle's status path with the real Kube on recorded responses."""
    from reclaunch.runtime import lifecycle
    srv, kube = cluster
    world.kube.objects.clear()
    lifecycle.up(plan, world.env(), yes=True)
    st = lifecycle.status(plan.name, world.env(kube_for=lambda outputs: kube))
    assert st.state == "Restarting" and "restarting" in st.message
    assert st.details["capacity"] == {"spot": 3, "on-demand": 1, "unknown": 1}
    assert json.dumps(st.pods)
