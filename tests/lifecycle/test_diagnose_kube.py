"""`diagnose` and the measured-rate budget guard on a Kubernetes cloud: every pod's log through
the logs API of the recorded-response server on 127.0.0.1 (a real Kube client), and the
watch loop with a fake API that serves RECLAUNCH_METRICS lines."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reclaunch.runtime.kube import Kube

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "diagnose"))
import synth  # noqa: E402
from recorded_server import RecordedServer  # noqa: E402

from .conftest import AWS_EXAMPLE, FakeKube  # noqa: E402

NS, JOB = "reclaunch", "criteo-deepfm"
LABEL = "training.kubeflow.org"


def _pod(name: str, rtype: str, index: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": {
                f"{LABEL}/job-name": JOB, f"{LABEL}/replica-type": rtype,
                f"{LABEL}/replica-index": str(index)}},
            "spec": {"nodeName": f"ip-10-0-1-{index}"},
            "status": {"phase": "Running", "containerStatuses": [{"name": "pytorch", "restartCount": 0}]}}


def _serve(srv: RecordedServer, lines: list[str], nccl: list[str] = ()) -> None:
    """4 pods (p4d: 8 ranks each): each pod's log holds its node's ranks' lines."""
    names = [f"{JOB}-master-0"] + [f"{JOB}-worker-{i}" for i in range(3)]
    pods = [_pod(names[0], "master", 0)] + [_pod(n, "worker", i) for i, n in enumerate(names[1:])]
    srv.add("GET", f"/api/v1/namespaces/{NS}/pods", query={"labelSelector": f"{LABEL}/job-name={JOB}"},
            body={"apiVersion": "v1", "kind": "PodList", "items": pods})
    for node, name in enumerate(names):
        mine = [ln for ln in lines if any(f'"rank":{r},' in ln for r in range(8 * node, 8 * node + 8))]
        srv.add("GET", f"/api/v1/namespaces/{NS}/pods/{name}/log",
                body="\n".join([*nccl, "step=20 loss=0.7 samples_per_s=1", *mine]) + "\n")


@pytest.fixture
def provider_on(world, plan):
    """A Kubernetes-cloud provider whose cluster was `up`'d (fake infra) and whose API is `kube`."""
    from reclaunch.providers.kubecloud import Answer, CloudSpec, KubeCloudProvider
    from reclaunch.runtime import lifecycle

    rec = lifecycle.record_for(plan, spec_text=AWS_EXAMPLE.read_text(), spec_path=str(AWS_EXAMPLE))
    world.kube.objects.clear()
    lifecycle.up(plan, world.env(), yes=True, record=rec)

    def make(kube):
        spec = CloudSpec(name="aws", program="", sweeper="", prices="",
                         credentials=lambda: Answer(True, "stubbed"), errors=[], quota_fix="",
                         capacity_fix="")
        return KubeCloudProvider(spec, env_overrides={"infra": world.infra, "kube_for": lambda o: kube,
                                                       "clock": world.clock, "sleep": world.clock.sleep})
    return make


def test_diagnose_reads_every_pod_through_the_logs_api(provider_on, plan):
    from reclaunch.runtime.observe import diagnose_cluster

    with RecordedServer() as srv:
        _serve(srv, synth.run(straggler=(13, 0.04)))
        d = diagnose_cluster(plan.name, provider_on(Kube.from_host(srv.url, token="t")))
        log_calls = [r.path for r in srv.calls("GET") if r.path.endswith("/log")]
    assert len(log_calls) == 4                     # every pod, not just the master
    assert d.measured.world_size == 32 and len(d.measured.ranks) == 32
    assert [f.rule for f in d.findings] == ["straggler"]
    assert d.findings[0].rank == 13 and d.findings[0].node == 1
    assert d.facts is not None and d.facts.transport == "NET/OFI"   # plan re-made from the journal


def test_socket_fallback_through_the_logs_api(provider_on, plan):
    from reclaunch.runtime.observe import diagnose_cluster

    nccl = (ROOT / "tests" / "fixtures" / "nccl_logs" / "p5_socket_fallback.log").read_text().splitlines()
    with RecordedServer() as srv:
        _serve(srv, synth.run(transport=None, gdr=None, comm_s=0.58, step_s=0.60), nccl[:15])
        d = diagnose_cluster(plan.name, provider_on(Kube.from_host(srv.url, token="t")))
    assert d.findings[0].rule == "transport_fallback" and "NET/Socket" in d.findings[0].what


def test_no_metrics_yet_is_exit_1(provider_on, plan):
    from reclaunch.runtime.observe import NoMetrics, diagnose_cluster

    with RecordedServer() as srv:
        _serve(srv, [])
        with pytest.raises(NoMetrics) as e:
            diagnose_cluster(plan.name, provider_on(Kube.from_host(srv.url, token="t")))
    assert e.value.exit_code == 1 and "no RECLAUNCH_METRICS" in str(e.value)


# ---- the budget guard at the measured rate ------------------------------------------------

class MetricsKube(FakeKube):
    def __init__(self, lines, **kw):
        super().__init__(**kw)
        self.lines = lines
        self.tails = []

    def logs(self, namespace, pod, *, follow=False, container=None, tail_lines=None):
        self.tails.append((pod, tail_lines))
        yield from (self.lines if pod.endswith("master-0") else ["worker log"])


def _record(plan, max_usd):
    import dataclasses

    from reclaunch.runtime import lifecycle
    rec = lifecycle.record_for(plan)
    return dataclasses.replace(rec, max_usd=max_usd)


def test_measured_projection_and_guard(plan):
    from reclaunch.runtime.budget import measured_guard, measured_projection

    planned = _record(plan, None).extra["planned_usd"]
    cap = 2 * planned                 # the plan fits twice over; a 5x slower run cannot
    rec = _record(plan, cap)
    assert 0 < planned < cap and rec.extra["global_batch"] == 4096 * 32
    sps = plan.throughput_samples_per_second
    # at the planned rate the projection is about the plan's cost: no action
    at_plan = measured_projection(rec, 0.0, sps, 0)
    train_h = plan.duration_hours - plan.startup.seconds / 3600   # the startup is spent already
    assert abs(at_plan / (train_h * rec.usd_per_hour) - 1) < 0.01
    assert measured_guard(rec, 0.0, at_plan) is None
    # slow enough that the training hours alone cost three caps (the plan's startup, already
    # spent when metrics arrive, is most of this small job's cost) -> stop
    k = 3 * cap / (train_h * rec.usd_per_hour)
    slow = measured_projection(rec, 1.0, sps / k, 0)
    action, why = measured_guard(rec, 1.0, slow)
    assert action == "stop" and f"budget.max_usd ${cap:,.2f}" in why and "the plan said" in why
    # a run forced over budget at start is only warned about
    forced = _record(plan, at_plan / 2)       # under the plan's cost and the projection
    assert measured_guard(forced, 0.0, at_plan)[0] == "warn"
    assert measured_projection(rec, 0.0, None, 0) is None


def test_watch_stops_a_job_the_measured_rate_cannot_finish_under_budget(world, plan):
    from reclaunch.runtime import lifecycle

    slow = synth.run(intervals=6, step_s=0.6, comm_s=0.59)     # 10x the planned step
    world.kube.__class__ = MetricsKube
    world.kube.lines, world.kube.tails = slow, []
    rec = _record(plan, 20.0)
    lifecycle.up(plan, world.env(), yes=True, record=rec)
    st = lifecycle.watch_job(rec, world.env(), max_polls=50)
    assert world.kube.tails and world.kube.tails[0][1] == 2000    # the master's tail, not all
    assert ("PyTorchJob", rec.namespace, rec.job_name) in world.kube.deleted
    from reclaunch.runtime.journal import Journal
    stops = [e for e in Journal(plan.name).entries() if e["step"] == "stop"]
    assert stops and "at the measured rate" in stops[-1]["message"]
    assert world.infra.destroys == 1 and st is not None


def test_watch_keeps_a_job_on_plan(world, plan):
    from reclaunch.runtime import lifecycle

    world.kube.__class__ = MetricsKube
    world.kube.lines, world.kube.tails = synth.run(intervals=6), []
    rec = _record(plan, 20.0)
    lifecycle.up(plan, world.env(), yes=True, record=rec)
    lifecycle.watch_job(rec, world.env(), max_polls=3)
    assert not world.kube.deleted and world.kube.tails
