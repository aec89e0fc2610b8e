"""Spot reclaims (issue 22): the pod's grace period reaches the trainer's SIGTERM save.

- the rendered job tells torchrun to wait the grace period (minus 5 s) before SIGKILLing its
  workers (TORCH_ELASTIC_SHUTDOWN_TIMEOUT), and torchrun honours it: a save slower than the
  default 30 s would be cut off; here scaled down (1 s vs 40 s against a 4 s save);
- the TCPX pod's shell, PID 1 of its container, forwards SIGTERM to the launcher and still
  touches the sidecar's exit file.
"""
import os
import signal
import subprocess
import sys
import time

import pytest

import dcp_ckpt
from trainer_helpers import SMALL, clean_env, torchrun_cmd

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def rendered_training_container(stem: str, tcpx: bool = False):
    """(pod spec, training container) of the example's rendered PyTorchJob (Master replica)."""
    from reclaunch.manifests.job import render
    from reclaunch.planner import make_plan
    from reclaunch.spec import parse_spec

    text = open(os.path.join(EXAMPLES, f"{stem}.yaml")).read()
    if tcpx:   # the a3-high TCPX profile (the one with the sidecar's exit file)
        text = text.replace("instance_type: a3-megagpu-8g", "instance_type: a3-highgpu-8g", 1)
        text = text.replace("inter_node: tcpxo", "inter_node: tcpx", 1)
    job = next(o for o in render(make_plan(parse_spec(text, f"{stem}.yaml"))) if o["kind"] == "PyTorchJob")
    specs = job["spec"]["pytorchReplicaSpecs"]
    pod = (specs.get("Master") or specs["Worker"])["template"]["spec"]
    return pod, pod["containers"][0]


def _run_and_term(tmp_path, shutdown_timeout: int, slow_save: float):
    ckpt = tmp_path / f"ckpt-{shutdown_timeout}"
    cmd = torchrun_cmd(1, *SMALL, "--log-every", "2", "--steps", "100000", "--checkpoint-dir", str(ckpt),
                       "--checkpoint-every-minutes", "0", "--optimizer", "sgd")
    env = clean_env(TORCH_ELASTIC_SHUTDOWN_TIMEOUT=str(shutdown_timeout), RECLAUNCH_FAULT=f"slow_save:{slow_save}")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    out = []
    try:
        for line in proc.stdout:
            out.append(line)
            if "step=4 " in line:
                os.kill(proc.pid, signal.SIGTERM)      # the kubelet's SIGTERM to the pod's torchrun
                break
        rest, _ = proc.communicate(timeout=90)
        out.append(rest)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return "".join(out), [s for s, _ in dcp_ckpt.list_checkpoints(str(ckpt))]


@pytest.mark.timeout(240)
def test_torchrun_shutdown_timeout_decides_whether_the_sigterm_save_lands(tmp_path):
    out, saved = _run_and_term(tmp_path, shutdown_timeout=40, slow_save=4)
    assert "info sigterm step=" in out and len(saved) == 1, out[-2000:]
    out, saved = _run_and_term(tmp_path, shutdown_timeout=1, slow_save=4)
    assert "info sigterm step=" not in out and saved == [], out[-2000:]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stem,spot,notice", [("aws-deepfm-p4d", True, "120"), ("azure-din-nd96amsr", True, "30"),
                                              ("aws-deepfm-p4d", False, None), ("local-deepfm", True, None)])
def test_the_clouds_reclaim_notice_reaches_the_trainer(stem, spot, notice):
    """The notice is a fact of each cloud (providers/<cloud>/facts.py, vendor docs cited there);
    a spot job's trainer gets it and warns when a checkpoint takes longer (issue 37)."""
    pytest.importorskip("pydantic")
    from reclaunch.manifests.env import job_env
    from reclaunch.planner import make_plan
    from reclaunch.spec import parse_spec

    text = open(os.path.join(EXAMPLES, f"{stem}.yaml")).read()
    spec = parse_spec(text, f"{stem}.yaml")
    spec.spot.enabled = spot
    env = job_env(make_plan(spec))
    assert env.get("RECLAUNCH_RECLAIM_NOTICE_SECONDS") == notice


@pytest.mark.timeout(60)
def test_rendered_job_gives_torchrun_the_grace_period():
    pytest.importorskip("pydantic")
    from reclaunch.manifests import job as jobmod

    pod, container = rendered_training_container("aws-deepfm-p4d")
    env = {e["name"]: e["value"] for e in container["env"]}
    assert pod["terminationGracePeriodSeconds"] == jobmod.GRACE_SECONDS
    assert int(env["TORCH_ELASTIC_SHUTDOWN_TIMEOUT"]) == jobmod.GRACE_SECONDS - 5


FAKE_LAUNCHER = """#!{python}
import signal, sys, time, pathlib
mark = pathlib.Path(sys.argv[-1])
def term(*_):
    mark.write_text("got SIGTERM")
    sys.exit(143)
signal.signal(signal.SIGTERM, term)
mark.write_text("ready")
time.sleep(60)
"""


@pytest.mark.timeout(60)
def test_tcpx_shell_forwards_sigterm_and_keeps_the_sidecar(tmp_path):
    pytest.importorskip("pydantic")
    _, container = rendered_training_container("gcp-dcnv2-a3mega", tcpx=True)
    assert container["command"][:2] == ["/bin/sh", "-c"]
    script = container["command"][2]
    exit_file = next(e["value"] for e in container["env"] if e["name"] == "RECLAUNCH_EXIT_FILE")
    mark = tmp_path / "mark"
    script = script.replace(exit_file, str(tmp_path / "terminated"))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "torchrun"
    fake.write_text(FAKE_LAUNCHER.format(python=sys.executable))
    fake.chmod(0o755)
    # the launcher line gets the marker path as its last argument
    script = script.replace(" &\n", f" {mark} &\n", 1)
    env = {"PATH": f"{bindir}:{os.environ['PATH']}"}
    proc = subprocess.Popen(["/bin/sh", "-c", script], env=env)
    deadline = time.monotonic() + 30
    while not (mark.exists() and mark.read_text() == "ready") and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)                  # the kubelet's SIGTERM to the container's PID 1
    assert proc.wait(timeout=30) == 143
    assert mark.read_text() == "got SIGTERM"
    # a failed container is restarted in place (OnFailure): the sidecar must still be there for
    # it, so only success touches the file (the pod's deletion stops the sidecar itself)
    assert not (tmp_path / "terminated").exists()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("rc,touched", [(0, True), (1, False)])
def test_tcpx_shell_stops_the_sidecar_only_when_the_launcher_succeeds(tmp_path, rc, touched):
    pytest.importorskip("pydantic")
    _, container = rendered_training_container("gcp-dcnv2-a3mega", tcpx=True)
    exit_file = next(e["value"] for e in container["env"] if e["name"] == "RECLAUNCH_EXIT_FILE")
    script = container["command"][2].replace(exit_file, str(tmp_path / "terminated"))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "torchrun").write_text(f"#!/bin/sh\nexit {rc}\n")
    (bindir / "torchrun").chmod(0o755)
    proc = subprocess.run(["/bin/sh", "-c", script], env={"PATH": f"{bindir}:{os.environ['PATH']}"},
                          timeout=30)
    assert proc.returncode == rc
    assert (tmp_path / "terminated").exists() is touched


@pytest.mark.timeout(30)
def test_one_launcher_rule_for_the_pod_and_local():
    pytest.importorskip("pydantic")
    from reclaunch.manifests.job import _launcher
    from reclaunch.providers.local.provider import entrypoint

    assert _launcher(["python", "-u", "/app/train.py"], ["--x"]) == (
        ["torchrun", "--no-python", "python", "-u", "/app/train.py"], ["--x"])
    assert entrypoint(["python", "-u", "/app/train.py"], ["--x"]) == ["--no-python", sys.executable, "-u",
                                                                      "/app/train.py", "--x"]
    assert _launcher(["python3", "-m", "pkg"], []) == (["torchrun", "--module", "pkg"], [])
    assert _launcher(["torchrun", "--nproc-per-node=8", "x.py"], []) == (["torchrun", "--nproc-per-node=8", "x.py"], [])
    assert _launcher(["bash", "run.sh"], []) == (["bash", "run.sh"], [])
