"""Launch review 5: the node model is checked against the real nodes. Once the GPU nodes are
Ready, `up` reads their status.allocatable, records it (journal "nodes" step), warns where
the model is above it and refuses to start the job, with the numbers, where the training pod
cannot fit beside the pods already on the node (--force starts it anyway)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from reclaunch.errors import ProviderError
from reclaunch.manifests.launch import build_launch
from reclaunch.providers import node_check
from reclaunch.providers.aws import provider as aws
from reclaunch.runtime import lifecycle
from reclaunch.runtime.journal import Journal
from tests.lifecycle.conftest import FakeKube

# A p4de.24xlarge node of the EKS GPU AMI as published (aws-samples/awsome-distributed-training
# @7217859 3.test_cases/megatron/nemo1.0/EKS/README.md): the same 96 vCPUs and 1152 GiB as the
# example's p4d.24xlarge.
PUBLISHED = {"cpu": "95690m", "memory": "1146004920Ki", "hugepages-2Mi": "21122Mi",
             "nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4", "pods": "250"}


def node_obj(name: str, pool: str = "gpu-spot", ready: bool = True, cluster="criteo-deepfm",
             **allocatable: str) -> dict:
    return {"metadata": {"name": name, "labels": {
                "reclaunch-cluster": cluster, "reclaunch.io/gpu": "true", "reclaunch.io/pool": pool,
                "node.kubernetes.io/instance-type": "p4d.24xlarge"}},
            "status": {"allocatable": {**PUBLISHED, **allocatable},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def daemonset_pod(node: str, cpu="170m", memory="250Mi") -> dict:
    return {"metadata": {"name": f"aws-node-{node}"}, "status": {"phase": "Running"},
            "spec": {"nodeName": node, "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}


class NodesKube(FakeKube):
    """FakeKube with the list calls node_check reads; `script` is one node list per read."""

    def __init__(self, script: list[list[dict]], pods: list[dict] | None = None):
        super().__init__()
        self.script, self.pods_there, self.reads = script, pods or [], 0

    def items(self, path, query=None, not_found_ok=False):
        if path.endswith("/nodes"):
            self.reads += 1
            return self.script[min(self.reads - 1, len(self.script) - 1)]
        return self.pods_there


def console():
    return Console(file=io.StringIO(), width=300)


def test_a_published_node_holds_the_pod_and_is_recorded(plan):
    kube = NodesKube([[node_obj("n1")]], [daemonset_pod("n1")])
    out = console()
    data = node_check.check(plan, kube, build_launch(plan), out=out)
    assert data["refusals"] == [] and data["warnings"] == []
    (rec,) = data["nodes"]
    assert rec["allocatable"] == {"cpu": "95690m", "hugepages-2Mi": str(21122 * 2**20),
                                  "memory": str(1146004920 * 1024)}
    assert int(rec["modelled"]["memory"]) <= 1146004920 * 1024   # the model is at or below
    assert rec["requested"] == {"cpu": "170m", "memory": str(250 * 2**20)}   # its DaemonSets
    assert "n1 p4d.24xlarge: allocatable cpu 95.69, hugepages-2Mi 20.6Gi" in out.file.getvalue()


def test_a_node_below_the_model_is_a_warning_with_the_numbers(plan):
    kube = NodesKube([[node_obj("n1", memory="1100000000Ki")]])   # 1049 GiB: under the model
    data = node_check.check(plan, kube, build_launch(plan), out=console())
    assert data["refusals"] == []
    assert any("node n1 (p4d.24xlarge): memory modelled" in w and "its kubelet reports 1049.0Gi"
               in w for w in data["warnings"]), data["warnings"]


def provider_env(world, kube) -> lifecycle.Env:
    """The Env a cloud provider builds for `up` (its check_nodes hook included), on fakes."""
    prov = aws.provider(infra=world.infra, kube_for=lambda outputs: kube, clock=world.clock,
                        sleep=world.clock.sleep, console=world.env().console,
                        is_tty=lambda: False, verify=world.env().verify)
    return prov.env()


def test_a_node_that_cannot_hold_the_pod_stops_up_before_the_job(world, plan):
    small = node_obj("n1", memory="800000000Ki")                    # 763 GiB
    kube = NodesKube([[small]], [daemonset_pod("n1")])
    env = provider_env(world, kube)
    with pytest.raises(ProviderError, match=r"refusing to start the job: node n1 \(p4d.24xlarge\): "
                       r"memory: the training pod requests [\d.]+Gi, the node has 762.9Gi "
                       r"allocatable of which pods already there request 0.2Gi") as exc:
        lifecycle.up(plan, env, yes=True)
    assert "--force" in exc.value.hint and f"reclaunch down {plan.name}" in exc.value.hint
    assert kube.job_creations == 0                                   # the job never started
    assert Journal(plan.name).last("nodes")["outcome"] == "failed"
    # --force starts it anyway, and the step records the node's figures
    assert lifecycle.up(plan, env, yes=True, force=True).state == "Running"
    assert kube.job_creations == 1
    assert Journal(plan.name).last("nodes")["nodes"][0]["node"] == "n1"


def test_a_job_already_started_is_not_judged_by_the_node_its_pods_fill(world, plan):
    """A cluster whose job started before the check ran (an `up` of an earlier reclaunch,
    resumed): the training pod's own requests fill the node, so the check would refuse a job
    that runs. It is skipped, and `up` goes on to the job."""
    kube = NodesKube([[node_obj("n1")]])
    assert lifecycle.up(plan, world.env(kube_for=lambda outputs: kube), yes=True).state == "Running"
    journal = Journal(plan.name)
    assert journal.done("start") and not journal.done("nodes")
    journal.write("up", "start")   # interrupted: rerun
    kube.pods_there = [daemonset_pod("n1", cpu="90", memory="1000Gi")]   # the training pod
    assert lifecycle.up(plan, provider_env(world, kube), yes=True).state == "Running"
    assert kube.job_creations == 1 and not Journal(plan.name).done("nodes")


def test_it_waits_for_a_ready_gpu_node_of_this_cluster_bounded(plan, world):
    script = [[], [node_obj("other", cluster="someone-else")], [node_obj("n1", ready=False)],
              [node_obj("n1")]]
    kube = NodesKube(script)
    data = node_check.check(plan, kube, build_launch(plan), out=console(), wait_s=600,
                            sleep=world.clock.sleep, clock=world.clock)
    assert kube.reads == 4 and [r["node"] for r in data["nodes"]] == ["n1"]
    # none ever: it gives up at the deadline, says so, and lets the job start unchecked
    never = NodesKube([[]])
    out = console()
    data = node_check.check(plan, never, build_launch(plan), out=out, wait_s=60,
                            sleep=world.clock.sleep, clock=world.clock)
    assert data["nodes"] == [] and never.reads == 60 // node_check.POLL_S + 1
    assert "not checked against a real node" in out.file.getvalue()


def test_node_names_are_shown_as_text(plan):
    kube = NodesKube([[node_obj("[red]x\x1b]0;t\x07")]])
    out = console()
    node_check.check(plan, kube, build_launch(plan), out=out)
    assert "[red]x\\x1b]0;t\\x07" in out.file.getvalue()
