"""Issue 42: `reclaunch exec` (one command, and the interactive form) and `reclaunch
port-forward` on a cluster you bring, through the Kubernetes exec and portforward
subresources (kubernetes.stream over WebSocket) of the stand-in API on 127.0.0.1."""

from __future__ import annotations

import io
import os
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from recorded_ws import exec_handler, portforward_handler, stdin_until  # noqa: E402

NS = "/api/v1/namespaces/ml-training"
POD = "byo-deepfm-master-0"


def _running(srv, up) -> None:
    """`up` the spec, then the operator's pods: the master Running (rank 0), a worker Pending."""
    code, _, err = up()
    assert code == 0, err
    for name, rtype, phase in ((POD, "master", "Running"), ("byo-deepfm-worker-0", "worker", "Pending")):
        srv.objects[f"{NS}/pods/{name}"] = {
            "metadata": {"name": name, "namespace": "ml-training", "labels": {
                "training.kubeflow.org/job-name": "byo-deepfm",
                "training.kubeflow.org/replica-type": rtype,
                "training.kubeflow.org/replica-index": "0"}},
            "spec": {"nodeName": "gpu-1"}, "status": {"phase": phase}}


@pytest.fixture
def running(standin, spec_file, cli):
    srv = standin("onprem")
    path = spec_file(top="nodes: 2")
    _running(srv, lambda: cli("up", path, "--yes", "--detach"))
    return srv


def test_exec_runs_the_command_in_rank_0s_pod_and_returns_its_exit_code(running, cli):
    seen = []

    def run(command, peer):
        seen.append(command)
        return b"GPU 0: NVIDIA L40S\n", b"a warning\n", 3

    running.add_ws(f"{NS}/pods/{POD}/exec", exec_handler(run))
    code, out, err = cli("exec", "byo-deepfm", "--", "nvidia-smi", "-L")
    assert code == 3                                   # the remote exit code, passed through
    assert out == "GPU 0: NVIDIA L40S\n" and err == "a warning\n"
    assert seen == [["nvidia-smi", "-L"]]
    req = running.calls("GET", f"{NS}/pods/{POD}/exec")[-1]
    assert req.query["container"] == "pytorch" and req.query["stdout"] == "true"
    assert req.query.get("stdin") == "false" and req.headers["authorization"] == "Bearer t0ken"
    # a pod that is not running, and a rank with no pod, are one line each
    code, _, err = cli("exec", "byo-deepfm", "--rank", "1", "--", "true")
    assert code == 1 and "byo-deepfm-worker-0 is Pending, not Running" in err
    code, _, err = cli("exec", "byo-deepfm", "--rank", "4", "--", "true")
    assert code == 2 and "no pod with rank 4 (ranks: 0, 1)" in err


def test_the_interactive_form_passes_stdin_through(running):
    from reclaunch.providers.kubernetes.connect import connect
    from reclaunch.runtime import kube_shell

    def run(command, peer):
        got = stdin_until(peer, b"exit\n")
        return b"you typed: " + got, b"", 0

    running.add_ws(f"{NS}/pods/{POD}/exec", exec_handler(run))
    r, w = os.pipe()
    os.write(w, b"echo hi\nexit\n")
    os.close(w)
    out = io.BytesIO()
    with os.fdopen(r, "rb") as stdin:
        code = kube_shell.run(connect("ctx"), "ml-training", POD, kube_shell.SHELL,
                              interactive=True, stdin=stdin, stdout=out, stderr=io.BytesIO())
    assert code == 0 and out.getvalue() == b"you typed: echo hi\nexit\n"
    req = running.calls("GET", f"{NS}/pods/{POD}/exec")[-1]
    assert req.query["stdin"] == "true" and req.query["tty"] == "false"   # a pipe is no tty


@pytest.mark.timeout(60)
def test_port_forward_relays_a_local_port_to_rank_0s_port(running):
    from reclaunch.providers import get

    running.add_ws(f"{NS}/pods/{POD}/portforward",
                   portforward_handler(lambda request: b"HTTP/1.0 200 OK\r\n\r\ndashboard on rank 0"
                                       if request.startswith(b"GET /") else b"?"))
    bound, stop = [], threading.Event()
    t = threading.Thread(target=get("kubernetes").port_forward, args=("byo-deepfm", 8265),
                         kwargs={"local_port": 0, "ready": bound.append, "stop": stop,
                                 "connections": 1}, daemon=True)
    t.start()
    for _ in range(100):
        if bound:
            break
        threading.Event().wait(0.1)
    with urllib.request.urlopen(f"http://127.0.0.1:{bound[0]}/", timeout=20) as resp:
        assert resp.read() == b"dashboard on rank 0"
    t.join(timeout=30)
    assert not t.is_alive()
    req = running.calls("GET", f"{NS}/pods/{POD}/portforward")[-1]
    assert req.query["ports"] == "8265"
