"""cloud: kubernetes: preview's check on the real nodes, then up / status / down / gc against
the stand-in API (what `up` applies is recorded; `down` deletes only that)."""

from __future__ import annotations

import json

import pytest

TOLERATE = "tolerations: [{key: dedicated, value: ml-team, effect: NoSchedule}]"


def test_preview_names_the_tainted_node_until_the_spec_tolerates_it(standin, spec_file, cli):
    standin("onprem")
    code, out, err = cli("preview", spec_file(top="nodes: 4"), "--json")
    assert code == 1, err
    rows = json.loads(out)["schedule"]
    assert json.loads(out)["resources"] == []
    master = rows[0]
    assert master["pod"] == "byo-deepfm/master" and not master["fits"]
    assert master["reasons"][0] == ("needs 4 node(s) (the whole job), 3 can take a pod now "
                                    "(gpu-1, gpu-2, gpu-3); gpu-4: taint dedicated=ml-team:"
                                    "NoSchedule not tolerated")
    assert master["reasons"][1].startswith("cp-1: lacks label nvidia.com/gpu.product=NVIDIA-L40S")
    code, out, err = cli("preview", spec_file(top="nodes: 4", extra=TOLERATE), "--json")
    assert code == 0, err
    rows = json.loads(out)["schedule"]
    assert all(r["fits"] for r in rows) and rows[0]["pool"] == "gpu-1, gpu-2, gpu-3, gpu-4"
    assert {r["role"] for r in rows} == {"training", "preflight"}


def test_preview_names_the_missing_resource_on_a_busy_node(standin, spec_file, cli):
    srv = standin("onprem")
    busy = {"metadata": {"name": "someone-elses-job", "namespace": "ml-team"},
            "spec": {"nodeName": "gpu-2", "containers": [{"name": "c", "resources": {
                "requests": {"nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": "2"}}}]},
            "status": {"phase": "Running"}}
    route = next(r for r in srv._routes if r.path == "/api/v1/pods")
    route.responses[0]["body"] = {"items": [busy]}
    code, out, _ = cli("preview", spec_file(top="nodes: 4", extra=TOLERATE), "--json")
    assert code == 1
    reasons = json.loads(out)["schedule"][0]["reasons"]
    assert "gpu-2: nvidia.com/gpu: requests 4, the node has 2 allocatable" in reasons[0]


def _up(path: str, **kw):
    from reclaunch.planner import make_plan
    from reclaunch.providers import get, planning_catalog
    from reclaunch.catalog import load_catalog
    from reclaunch.spec import load_spec

    spec = load_spec(path)
    plan = make_plan(spec, planning_catalog(spec, load_catalog()))
    provider = get("kubernetes")
    from reclaunch.providers.options import UpOptions

    return provider, plan, provider.up(plan, UpOptions(yes=True, detach=True, spec_path=path, **kw))


def test_up_applies_the_launch_status_then_down_deletes_only_that(standin, spec_file, cli):
    srv = standin("onprem")
    path = spec_file(top="nodes: 3")
    provider, plan, st = _up(path)
    assert st.cloud == "kubernetes"
    ns = "/api/v1/namespaces/ml-training"
    assert srv.applied() == [ns, f"{ns}/configmaps/byo-deepfm-plan",
                             "/apis/kubeflow.org/v1/namespaces/ml-training/pytorchjobs/byo-deepfm"]
    # up: the operator first, then the check on the nodes as they are now, then the apply
    calls = [(r.method, r.path) for r in srv.requests][2:]   # after plan's node read
    assert calls[0] == ("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                        "pytorchjobs.kubeflow.org")
    assert calls.index(("GET", "/api/v1/nodes")) < calls.index(("PATCH", ns))
    job = srv.objects["/apis/kubeflow.org/v1/namespaces/ml-training/pytorchjobs/byo-deepfm"]
    pod = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    # Existing nodes are selected by their own labels, never by a label no one set on them.
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    assert job["metadata"]["labels"]["reclaunch-cluster"] == "byo-deepfm"
    # status through the same path as the clouds
    job["status"] = {"conditions": [{"type": "Running", "status": "True",
                                     "lastTransitionTime": "2026-12-01T00:00:00Z"}]}
    code, out, err = cli("status", "byo-deepfm", "--json")
    assert code == 0, err
    assert json.loads(out)["state"] == "Running" and json.loads(out)["cloud"] == "kubernetes"
    # gc finds our labelled objects (and nothing of the team's)
    code, out, err = cli("gc", "--cloud", "kubernetes", "--region", "ctx")
    assert "ml-training/byo-deepfm " in out and "found 3" in out and "ml-team" not in out, out + err
    srv.reset_requests()
    code, out, err = cli("down", "byo-deepfm", "--yes")
    assert code == 0, err
    deleted = [r.path for r in srv.calls("DELETE")]
    assert deleted == ["/apis/kubeflow.org/v1/namespaces/ml-training/pytorchjobs/byo-deepfm",
                       f"{ns}/configmaps/byo-deepfm-plan", ns]   # the namespace up created
    assert not [p for p in srv.objects if "ml-training" in p]
    assert "/api/v1/namespaces/ml-team" in srv.objects            # never the team's
    assert srv.calls("DELETE", "/api/v1/nodes") == []


def test_down_keeps_a_namespace_that_was_there_before(standin, spec_file, cli):
    srv = standin("onprem")
    _up(spec_file(namespace="ml-team"))
    assert "/api/v1/namespaces/ml-team" in srv.applied()   # our labels added by apply ...
    code, _, err = cli("down", "byo-deepfm", "--yes")
    assert code == 0, err
    assert "/api/v1/namespaces/ml-team" not in [r.path for r in srv.calls("DELETE")]  # ... kept


def test_up_without_the_training_operator_stops_before_applying(standin, spec_file):
    from reclaunch.errors import ProviderError

    srv = standin("onprem", operator=False)
    with pytest.raises(ProviderError) as exc:
        _up(spec_file())
    assert "no pytorchjobs.kubeflow.org CustomResourceDefinition" in str(exc.value)
    assert "training-operator" in exc.value.hint
    assert srv.calls("PATCH") == []


def test_up_refuses_before_applying_when_a_pod_fits_no_node(standin, spec_file):
    from reclaunch.errors import PlanError

    srv = standin("onprem")
    with pytest.raises(PlanError, match="gpu-4: taint dedicated=ml-team:NoSchedule not tolerated"):
        _up(spec_file(top="nodes: 4"))
    assert srv.calls("PATCH") == []


def test_up_dry_run_lists_the_objects(standin, spec_file, cli):
    standin("onprem")
    code, out, err = cli("up", spec_file(), "--dry-run")
    assert code == 0, err
    assert "PyTorchJob ml-training/byo-deepfm (applied last)" in out


def test_logs_of_the_master_through_the_shared_path(standin, spec_file, cli):
    srv = standin("onprem")
    _up(spec_file())
    pod = "/api/v1/namespaces/ml-training/pods/byo-deepfm-master-0"
    srv.objects[pod] = {"metadata": {"name": "byo-deepfm-master-0", "labels": {
        "training.kubeflow.org/job-name": "byo-deepfm",
        "training.kubeflow.org/replica-type": "master", "training.kubeflow.org/replica-index": "0"}},
        "spec": {"nodeName": "gpu-1"}, "status": {"phase": "Running"}}
    srv.objects[pod + "/log"] = "step 1 loss 0.69\nstep 2 loss 0.68\n"
    code, out, err = cli("logs", "byo-deepfm")
    assert code == 0, err
    assert out.splitlines() == ["step 1 loss 0.69", "step 2 loss 0.68"]
    code, out, err = cli("diagnose", "byo-deepfm")   # reads every pod's log the same way
    assert code == 1 and "no RECLAUNCH_METRICS lines in its logs yet" in err, out + err


def test_gke_pods_join_the_clusters_own_networks(standin, spec_file, cli):
    srv = standin("gke-a3mega")
    path = spec_file(top="nodes: 2", extra="price: {usd_per_gpu_hour: 3}")
    code, out, err = cli("up", path, "--dry-run", "-o", "yaml")
    assert code == 0, err
    assert '{"interfaceName":"eth1","network":"vpc1"}' in out and "-gpu-1" not in out
    code, out, err = cli("preview", path, "--json")
    assert code == 0 and all(r["fits"] for r in json.loads(out)["schedule"]), err
    # A node that lost one of its networks no longer takes the pods, and says which.
    nodes = next(r for r in srv._routes if r.path == "/api/v1/nodes").responses[0]["body"]["items"]
    del nodes[1]["status"]["allocatable"]["networking.gke.io.networks/vpc8"]
    code, out, _ = cli("preview", path, "--json")
    first = json.loads(out)["schedule"][0]
    assert code == 1 and not first["fits"]
    assert "not attached to GKE network(s) vpc8" in " ".join(first["reasons"])


@pytest.mark.parametrize("operator, code", [(True, 0), (False, 1)])
def test_check_names_the_operator(standin, spec_file, cli, operator, code):
    standin("onprem", operator=operator)
    got, out, err = cli("check", spec_file())
    assert got == code, out + err
    line = next(ln for ln in out.splitlines() if ln.startswith("training operator"))
    assert ("ok" in line) == operator and ("training-operator" in line) != operator


def test_cli_up_watches_to_the_end_and_tears_down_what_it_applied(standin, spec_file, cli):
    srv = standin("eks-p5", job_outcome="Succeeded")
    code, out, err = cli("up", spec_file(top="nodes: 2\ngpus_per_node: 8"), "--yes")
    assert code == 0, err
    assert "verified: nothing tagged for this cluster is left" in err
    assert [r.path for r in srv.calls("DELETE")] == [
        "/apis/kubeflow.org/v1/namespaces/ml-training/pytorchjobs/byo-deepfm",
        "/api/v1/namespaces/ml-training/configmaps/byo-deepfm-plan",
        "/api/v1/namespaces/ml-training"]
    job = json.loads(next(r.body for r in srv.calls("PATCH") if r.path.endswith("/byo-deepfm")))
    pod = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert pod["nodeSelector"] == {"eks.amazonaws.com/nodegroup": "p5-efa"}
    limits = pod["containers"][0]["resources"]["limits"]
    assert limits["vpc.amazonaws.com/efa"] == 32 and limits["nvidia.com/gpu"] == 8
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    code, out, _ = cli("status", "byo-deepfm", "--json")
    assert json.loads(out)["state"] == "Missing"


def test_node_selector_of_the_spec_is_required_and_named(standin, spec_file, cli):
    standin("eks-p5")
    path = spec_file(top="nodes: 2\ngpus_per_node: 8",
                     extra='node_selector: {"topology.kubernetes.io/zone": us-east-1b}')
    code, out, _ = cli("preview", path, "--json")
    first = json.loads(out)["schedule"][0]
    assert code == 1 and first["pod"] == "byo-deepfm/master"
    assert ("ip-10-0-64-20.ec2.internal: lacks label topology.kubernetes.io/zone=us-east-1b"
            in first["reasons"][0])


def test_gc_yes_deletes_only_our_labelled_objects(standin, spec_file, cli):
    srv = standin("onprem")
    _up(spec_file(namespace="ml-team"))      # the team's namespace, labelled by our apply
    srv.objects["/api/v1/namespaces/ml-team"]["metadata"]["labels"] = {}   # ... as it was
    srv.objects["/api/v1/namespaces/ml-team/configmaps/theirs"] = {
        "metadata": {"name": "theirs", "namespace": "ml-team", "labels": {"app": "x"}}}
    code, out, err = cli("gc", "--cloud", "kubernetes", "--region", "ctx", "--yes")
    assert code == 0, out + err
    deleted = [r.path for r in srv.calls("DELETE")]
    assert deleted == ["/apis/kubeflow.org/v1/namespaces/ml-team/pytorchjobs/byo-deepfm",
                       "/api/v1/namespaces/ml-team/configmaps/byo-deepfm-plan"]
    assert "/api/v1/namespaces/ml-team/configmaps/theirs" in srv.objects
