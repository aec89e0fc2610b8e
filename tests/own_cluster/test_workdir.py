"""Issue 42: job.workdir on a cluster you bring, against the stand-in API: `up` applies the
archive's ConfigMap before the job, whose pods unpack it in an init container."""

from __future__ import annotations

import base64
import json


def test_up_applies_the_workdir_configmap_and_the_init_container(standin, spec_file, cli, tmp_path):
    srv = standin("onprem")
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('from the workdir')\n")
    (code / "notes.log").write_text("ignored\n")
    (code / ".gitignore").write_text("*.log\n")
    path = spec_file(top="nodes: 3")
    text = open(path).read().replace("  command: [python, train.py]",
                                     "  command: [python, train.py]\n  workdir: code")
    open(path, "w").write(text)
    code_, out, err = cli("up", path, "--yes", "--detach")
    assert code_ == 0, err
    ns = "/api/v1/namespaces/ml-training"
    applied = srv.applied()
    cm_path = f"{ns}/configmaps/byo-deepfm-workdir"
    job_path = "/apis/kubeflow.org/v1/namespaces/ml-training/pytorchjobs/byo-deepfm"
    assert applied.index(cm_path) < applied.index(job_path)     # the code is there first
    cm = srv.objects[cm_path]
    import io
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(cm["binaryData"]["workdir.tar.gz"]))) as tar:
        assert sorted(tar.getnames()) == [".gitignore", "train.py"]
    job = srv.objects[job_path]
    pod = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert pod["initContainers"][0]["name"] == "workdir"
    assert pod["containers"][0]["workingDir"] == "/workdir"
    digest = cm["metadata"]["annotations"]["reclaunch.io/workdir-sha256"]
    assert pod["initContainers"][0]["command"][-1] == digest
    code_, out, err = cli("plan", path, "--json")
    assert code_ == 0, err
    assert json.loads(out)["workdir"]["digest"] == digest
    code_, _, err = cli("down", "byo-deepfm", "--yes")
    assert code_ == 0, err
    assert cm_path in [r.path for r in srv.calls("DELETE")]
