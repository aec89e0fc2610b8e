"""A watched cloud job that reports RECLAUNCH_METRICS leaves its measurement record (before the
teardown takes the pods' logs away), and the next plan of the spec is priced with it."""

from __future__ import annotations

import json

from reclaunch.runtime import lifecycle
from reclaunch.runtime.journal import Journal
from reclaunch.runtime.measurements import load_all, plan_context


def metrics(rank: int, world: int, rate: float) -> list[str]:
    return ["RECLAUNCH_METRICS " + json.dumps(
        {"v": 1, "rank": rank, "world_size": world, "step": 100 * k, "time": 10.0 * k,
         "interval_steps": 100, "samples_per_s": rate / world,
         "global_samples_per_s": rate if rank == 0 else None, "step_s": 0.002, "comm_s": 0.0005})
        for k in range(1, 6)]


def test_watched_job_leaves_a_record_that_the_next_plan_uses(world, plan, monkeypatch):
    world_size = plan.world_size

    def logs(namespace, pod, **kw):
        rank = 0 if "master" in pod else 1
        yield from metrics(rank, world_size, 3.3e7)
    monkeypatch.setattr(world.kube, "logs", logs)
    world.kube.states = ["Created", "Running", "Succeeded"]
    lifecycle.up(plan, world.env(), yes=True)
    world.kube.polls = 0
    rec = Journal(plan.name).record()
    assert rec.extra["measurement_key"]["instance"] == plan.instance_type
    st = lifecycle.watch_job(rec, world.env(poll_seconds=60), max_polls=50)
    assert st.state == "Succeeded"
    recs, bad = load_all()
    assert not bad and len(recs) == 1
    r = recs[0]
    assert (r.cloud, r.instance, r.nodes, r.samples_per_s) == ("aws", plan.instance_type, plan.nodes, 3.3e7)
    assert r.step["step_s"] == 0.002 and r.run == plan.name

    from reclaunch.planner import make_plan
    again = make_plan(plan.spec, context=plan_context(plan.spec))
    assert again.throughput_basis["kind"] == "measured"
    assert again.throughput_samples_per_second == 3.3e7
    assert again.throughput_model_samples_per_second == plan.throughput_samples_per_second


def test_a_job_without_metrics_leaves_no_record(world, plan):
    world.kube.states = ["Running", "Succeeded"]
    lifecycle.up(plan, world.env(), yes=True)
    world.kube.polls = 0
    lifecycle.watch_job(Journal(plan.name).record(), world.env(poll_seconds=60), max_polls=50)
    assert load_all() == ([], [])
