"""`up --preflight` accepts only a finished, complete, healthy run (issue 24)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

from reclaunch.errors import ProviderError
from reclaunch.runtime.preflight_run import run_preflight

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "nccl_logs"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "aws-auto-h100.yaml"


class Kube:
    def __init__(self, state: str | None, log: str):
        self.state, self.log, self.applied, self.deleted = state, log, [], []

    def apply(self, obj):
        self.applied.append(obj)

    def job(self, ns, name):
        conds = [{"type": self.state, "status": "True"}] if self.state else []
        return {"metadata": {"name": name}, "status": {"conditions": conds}}

    def pods(self, ns, name):
        return [{"name": f"{name}-master-0"}]

    def logs(self, ns, pod):
        return self.log.splitlines()

    def delete(self, *a):
        self.deleted.append(a)


class Clock:
    def __init__(self):
        self.t = 0.0

    def clock(self):
        return self.t

    def sleep(self, s):
        self.t += s


@pytest.fixture(scope="module")
def plan():
    from reclaunch.planner import make_plan
    from reclaunch.spec import load_spec

    p = make_plan(load_spec(str(EXAMPLE)))
    return dataclasses.replace(p, nodes=2, min_nodes=2, max_nodes=2)


def _run(plan, state, log, **kw):
    rec = SimpleNamespace(namespace=plan.spec.namespace)
    return run_preflight(plan, Kube(state, log), Clock(), rec, timeout_s=60, **kw)


def _healthy() -> str:
    return (LOGS / "p5_efa_healthy.log").read_text()


def test_a_succeeded_complete_healthy_run_passes(plan):
    out = _run(plan, "Succeeded", _healthy())
    assert out["ok"] is True and out["busbw"] > 300


def test_a_failed_job_does_not_pass_on_its_log(plan):
    with pytest.raises(ProviderError, match="the preflight job ended Failed"):
        _run(plan, "Failed", _healthy())


def test_a_job_that_never_finishes_does_not_pass(plan):
    with pytest.raises(ProviderError, match="did not finish in 60 s"):
        _run(plan, "Running", _healthy())


def test_a_partial_sweep_without_the_summary_does_not_pass(plan):
    lines = _healthy().splitlines()
    cut = next(i for i, ln in enumerate(lines) if ln.strip().startswith("1073741824"))
    partial = "\n".join(lines[:cut])      # a rank died before 1 GiB: no summary lines
    with pytest.raises(ProviderError, match="sweep stopped early.*Avg bus bandwidth"):
        _run(plan, "Succeeded", partial)
    forced = _run(plan, "Succeeded", partial, force=True)
    assert forced["ok"] is False and "ignored with --force" in forced["message"]


def test_tcpxo_preflight_runs_the_collective_its_floor_was_measured_with():
    from reclaunch.fabric import profile_for
    from reclaunch.manifests.preflight import nccl_tests_job

    tcpxo = profile_for("gcp", "a3-megagpu-8g")
    assert tcpxo.threshold_collective == "all_gather"
    cmd = nccl_tests_job("p", "ml", "img", 2, 8, tcpxo, rxdm_image="rxdm:v1")["spec"]["pytorchReplicaSpecs"][
        "Master"]["template"]["spec"]["containers"][0]["command"][-1]
    assert "-c all_gather" in cmd
    efa = profile_for("aws", "p5.48xlarge")
    cmd = nccl_tests_job("p", "ml", "img", 2, 8, efa)["spec"]["pytorchReplicaSpecs"][
        "Master"]["template"]["spec"]["containers"][0]["command"][-1]
    assert "-c all_reduce" in cmd
