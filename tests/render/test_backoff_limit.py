"""backoffLimit counts container restarts over all pods (training-operator pkg/core/job.go
PastBackoffLimit), so it must scale with the nodes and the containers of each pod."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from reclaunch.manifests.job import render
from reclaunch.planner import make_plan
from reclaunch.spec import load_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _job(example: str, nodes: int) -> dict:
    plan = make_plan(load_spec(str(EXAMPLES / example)))
    plan = dataclasses.replace(plan, nodes=nodes, min_nodes=nodes, max_nodes=nodes)
    return next(o for o in render(plan) if o["kind"] == "PyTorchJob")


def _pod(job: dict) -> dict:
    return next(iter(job["spec"]["pytorchReplicaSpecs"].values()))["template"]["spec"]


@pytest.mark.parametrize("nodes", [1, 8, 64])
def test_rendered_backoff_limit_scales_with_nodes(nodes):
    job = _job("aws-deepfm-p4d.yaml", nodes)
    pod = _pod(job)
    per_pod = len(pod["containers"]) + len(pod.get("initContainers") or [])
    # 10 whole-job restarts (job.max_restarts) of every container of every pod.
    assert job["spec"]["runPolicy"]["backoffLimit"] == 10 * nodes * per_pod


def test_sidecar_restarts_are_budgeted_too():
    job = _job("gcp-dcnv2-a3mega.yaml", 8)        # TCPXO: the rxdm daemon beside training
    pod = _pod(job)
    per_pod = len(pod["containers"]) + len(pod.get("initContainers") or [])
    assert per_pod >= 2
    assert job["spec"]["runPolicy"]["backoffLimit"] == 10 * 8 * per_pod
