"""Issue 24: a spot job whose pools are two fabrics (AKS: each scale set its own InfiniBand
fabric) can only wait for spot after a reclaim; the watcher recreates it on the on-demand pool."""

from __future__ import annotations

import dataclasses
import json

from reclaunch.planner import make_plan
from reclaunch.runtime import lifecycle
from reclaunch.runtime.journal import Journal
from reclaunch.runtime.spot_fallback import pools_split_the_fabric, wait_seconds
from reclaunch.spec import load_spec
from tests.conftest import EXAMPLES

AZURE = EXAMPLES / "azure-din-nd96amsr.yaml"
AWS = EXAMPLES / "aws-deepfm-p4d.yaml"


def _started(world, path):
    plan = make_plan(load_spec(str(path)))
    rec = lifecycle.record_for(plan, spec_path=str(path), spec_text=path.read_text())
    Journal(plan.name, clock=world.clock).save_record(rec)
    world.kube.apply({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                      "metadata": {"name": rec.job_name, "namespace": rec.namespace}})
    return plan, rec


def test_only_split_fabrics_arm_the_fallback():
    azure = make_plan(load_spec(str(AZURE)))
    assert azure.spot and pools_split_the_fabric(azure)
    assert not pools_split_the_fabric(make_plan(load_spec(str(AWS))))    # one EFA group
    assert not pools_split_the_fabric(dataclasses.replace(azure, spot=False))


def _pending(kube):
    def pods(namespace, job_name):
        return [{"name": f"{job_name}-worker-0", "rank": 0, "phase": "Running", "restarts": 1},
                {"name": f"{job_name}-worker-1", "rank": 1, "phase": "Pending", "restarts": 0}]
    kube.pods = pods


def test_a_job_waiting_past_the_limit_moves_to_the_on_demand_pool(world):
    plan, rec = _started(world, AZURE)
    _pending(world.kube)
    world.kube.states = ["Restarting"]
    polls = int(wait_seconds(plan) / 30) + 5
    lifecycle.watch_job(rec, world.env(), max_polls=polls)
    assert ("PyTorchJob", rec.namespace, rec.job_name) in world.kube.deleted
    job = world.kube.objects[("PyTorchJob", rec.namespace, rec.job_name)]
    assert "elasticPolicy" not in job["spec"]
    assert set(job["spec"]["pytorchReplicaSpecs"]) == {"Master", "Worker"}
    tolerations = json.dumps(job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"].get("tolerations", []))
    assert "scalesetpriority" not in tolerations          # spot nodes are out of reach
    new = Journal(plan.name).record()
    assert new.spot is False and new.usd_per_hour > rec.usd_per_hour
    events = [e for e in Journal(plan.name).entries() if e.get("step") == "spot-fallback"]
    assert [e["outcome"] for e in events] == ["start", "ok"]


def test_a_short_wait_or_a_one_fabric_cluster_keeps_waiting(world):
    plan, rec = _started(world, AZURE)
    _pending(world.kube)
    world.kube.states = ["Restarting"]
    lifecycle.watch_job(rec, world.env(), max_polls=int(wait_seconds(plan) / 30) - 2)
    assert not world.kube.deleted
    assert Journal(plan.name).record().spot is True
