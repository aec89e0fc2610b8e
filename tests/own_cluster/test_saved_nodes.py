"""Issue 42: cloud: kubernetes without a kubeconfig. `reclaunch nodes save` writes the nodes
where the cluster is reachable; `plan`, `render` and `check` then work from that file (named in
the spec, or found by context), `up` still reads the cluster; `check` without either says what
is missing as a row. And a bucket checkpoint on a cluster you bring says how the pods
authenticate and runs them as a named ServiceAccount."""

from __future__ import annotations

import json
import stat

import yaml

def test_nodes_save_then_plan_render_check_with_no_kubeconfig(standin, spec_file, cli, tmp_path, monkeypatch):
    standin("onprem")
    saved = tmp_path / "onprem-nodes.json"
    code, out, err = cli("nodes", "save", "--context", "ctx", "--out", str(saved))
    assert code == 0, err
    assert "saved 5 node(s)" in out and "nodes:" in out
    doc = json.loads(saved.read_text())
    assert doc["context"] == "ctx" and doc["saved_at"] == "2026-12-01"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert "image" not in saved.read_text() and "env" not in json.dumps(doc["pods"])  # requests only
    live_code, live, _ = cli("plan", spec_file(top="nodes: 3"), "--json")
    assert live_code == 0

    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    path = spec_file(top="nodes: 3")
    code, out, err = cli("plan", path)
    assert code == 1 and "no kubeconfig at" in err and "reclaunch nodes save --context ctx" in err
    text = open(path).read().replace("  context: ctx", f"  context: ctx\n  nodes: {saved.name}")
    open(path, "w").write(text)
    code, out, err = cli("plan", path, "--json")
    assert code == 0, err
    got, want = json.loads(out), json.loads(live)
    assert got["instance_type"] == want["instance_type"] and got["nodes"] == want["nodes"]
    assert got["throughput_samples_per_second"] == want["throughput_samples_per_second"]
    code, out, err = cli("render", path)
    assert code == 0, err
    assert [d["kind"] for d in yaml.safe_load_all(out)][-1] == "PyTorchJob"
    code, out, err = cli("check", path)
    assert code == 1                                # `up` needs the cluster: said as a row
    assert "training operator" in out and "MISSING" in out and "no kubeconfig" in out
    # found by context, with no file named in the spec: $RECLAUNCH_HOME/kubernetes/nodes/ctx.json
    code, out, err = cli("check", spec_file(top="nodes: 3"))
    assert code == 1 and "cluster" in out and "no kubeconfig at" in out
    from reclaunch.providers.kubernetes.saved import default_path
    default_path("ctx").write_text(saved.read_text())
    code, out, err = cli("plan", spec_file(top="nodes: 3"), "--json")
    assert code == 0, err


def test_up_reads_the_cluster_not_the_saved_file(standin, spec_file, cli, tmp_path):
    srv = standin("onprem")
    saved = tmp_path / "n.json"
    cli("nodes", "save", "--out", str(saved))
    doc = json.loads(saved.read_text())
    doc["nodes"] = []                                   # a stale file: no nodes at all
    saved.write_text(json.dumps(doc))
    path = spec_file(top="nodes: 3", extra=f"nodes: {saved}")
    code, _, err = cli("plan", path)
    assert code == 1 and "no node advertises nvidia.com/gpu" in err      # the file, as saved
    srv.reset_requests()
    code, _, err = cli("up", path, "--yes", "--detach")
    assert code == 0, err                                # the live nodes
    assert srv.calls("GET", "/api/v1/nodes")


def test_a_bucket_checkpoint_says_how_the_pods_authenticate(standin, spec_file, cli):
    standin("onprem")
    path = spec_file(top="nodes: 3")
    text = open(path).read().replace("  dataset: {samples: 1e8}",
                                     "  dataset: {samples: 1e8}\n  checkpoint: {path: s3://team-ckpt/run-1}")
    open(path, "w").write(text)
    code, out, err = cli("plan", path)
    assert code == 0, err
    assert "s3://team-ckpt/run-1: the pods run as the namespace's default ServiceAccount" in out
    assert "kubernetes.service_account" in out
    code, out, err = cli("render", path)
    assert "note: s3://team-ckpt/run-1" in err
    job = list(yaml.safe_load_all(out))[-1]
    pod = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert "serviceAccountName" not in pod
    open(path, "w").write(text.replace("  namespace: ml-training\n",
                                       "  namespace: ml-training\n  service_account: ml-trainer\n"))
    code, out, err = cli("render", path)
    assert code == 0, err
    job = list(yaml.safe_load_all(out))[-1]
    assert job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["serviceAccountName"] == "ml-trainer"
    assert "ServiceAccount ml-trainer (kubernetes.service_account)" in err
