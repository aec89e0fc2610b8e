"""Teardown after training (watch loop, injected clock), the state table, status and logs."""

from __future__ import annotations

import dataclasses

import pytest

from reclaunch.runtime import lifecycle
from reclaunch.runtime.budget import decide
from reclaunch.runtime.journal import ClusterRecord, Journal
from reclaunch.runtime.kube import JOB_STATES, job_state

from .test_lifecycle import with_spec


def teardown_plan(plan, **td):
    return with_spec(plan, teardown=plan.spec.teardown.model_copy(update=td))


def run(world, plan, states, max_polls=200):
    world.kube.states = states
    lifecycle.up(plan, world.env(), yes=True)
    world.kube.polls = 0
    rec = Journal(plan.name).record()
    return lifecycle.watch_job(rec, world.env(poll_seconds=60), max_polls=max_polls)


def test_success_destroys_and_verifies(world, plan):
    st = run(world, plan, ["Created", "Running", "Running", "Succeeded"])
    assert st.state == "Succeeded"
    assert world.cloud.tagged(plan.name) == []
    j = Journal(plan.name)
    assert j.last("destroy")["message"] == "job succeeded"
    assert j.last("verify")["outcome"] == "ok"


def test_failure_on_success_is_kept_until_idle(world, plan):
    p = teardown_plan(plan, when="on_success", idle_minutes=30)
    t0 = world.clock.t
    run(world, p, ["Running", "Failed"])
    assert world.cloud.tagged(p.name) == []
    assert "no running job for 30 min" in Journal(p.name).last("destroy")["message"]
    assert world.clock.t - t0 >= 30 * 60


def test_failure_keep_on_failure_keeps(world, plan):
    p = teardown_plan(plan, keep_on_failure=True, when="on_completion")
    st = run(world, p, ["Running", "Failed"])
    assert st.state == "Failed" and world.infra.destroys == 0
    assert world.cloud.tagged(p.name)


def test_failure_on_completion_destroys(world, plan):
    p = teardown_plan(plan, when="on_completion")
    run(world, p, ["Running", "Failed"])
    assert world.cloud.tagged(p.name) == []
    assert "on_completion" in Journal(p.name).last("destroy")["message"]


def test_never_keeps_after_success(world, plan):
    p = teardown_plan(plan, when="never")
    run(world, p, ["Running", "Succeeded"])
    assert world.infra.destroys == 0 and world.cloud.tagged(p.name)


def test_idle_guard_destroys_a_cluster_whose_job_vanished(world, plan):
    p = teardown_plan(plan, idle_minutes=10)
    t0 = world.clock.t
    run(world, p, ["Running", "Missing"])
    assert world.cloud.tagged(p.name) == []
    assert 10 * 60 <= world.clock.t - t0 <= 12 * 60


def test_budget_stops_the_job_then_tears_down(world, plan):
    p = with_spec(plan, budget=plan.spec.budget.model_copy(update={"max_usd": 50.0}))
    run(world, p, ["Running"])    # runs forever; only the money can stop it
    assert ("PyTorchJob", "reclaunch", p.name) in world.kube.deleted
    assert world.cloud.tagged(p.name) == []
    j = Journal(p.name)
    assert "budget.max_usd" in j.last("stop")["message"]
    spent = lifecycle.status(p.name, world.env()).spend_usd
    assert 50.0 <= spent < 50.0 + j.record().usd_per_hour * 60 / 3600 + 1e-6


def rec(**kw):
    base = dict(name="x", cloud="aws", teardown_when="on_success", idle_minutes=30,
                keep_on_failure=False, max_usd=None, usd_per_hour=10.0)
    base.update(kw)
    return ClusterRecord(**base)


@pytest.mark.parametrize("state,r,idle,spend,action", [
    ("Running", rec(), None, 0, "wait"),
    ("Restarting", rec(), None, 0, "wait"),
    ("Succeeded", rec(), 0, 0, "destroy"),
    ("Succeeded", rec(teardown_when="on_completion"), 0, 0, "destroy"),
    ("Succeeded", rec(teardown_when="never"), 0, 0, "keep"),
    ("Failed", rec(), 0, 0, "wait"),                               # on_success: idle decides
    ("Failed", rec(), -1800, 0, "destroy"),
    ("Failed", rec(keep_on_failure=True), -1800, 0, "keep"),
    ("Failed", rec(teardown_when="on_completion"), 0, 0, "destroy"),
    ("Missing", rec(), -1799, 0, "wait"),
    ("Missing", rec(), -1800, 0, "destroy"),
    ("Created", rec(teardown_when="never"), -99999, 0, "wait"),
    ("Running", rec(max_usd=100), None, 100, "stop"),
    ("Running", rec(max_usd=100, teardown_when="never"), None, 100, "stop"),
])
def test_decide(state, r, idle, spend, action):
    now = 10_000.0
    got, reason = decide(state, r, now=now, idle_since=None if idle is None else now + idle,
                         spend=spend)
    assert got == action, reason


@pytest.mark.parametrize("state", sorted(JOB_STATES))
def test_job_states_every_key(state):
    info = JOB_STATES[state]
    assert info.meaning
    if state == "Stopped":   # stopped on purpose: over, but neither success nor failure
        assert info.terminal and info.ok is None
        assert decide(state, rec(), now=0.0, idle_since=None, spend=0.0)[0] == "destroy"
        return
    assert (info.ok is not None) == info.terminal
    if state == "Missing":
        assert job_state(None) == "Missing"
    elif state in ("Pending", "Unknown"):
        assert not info.terminal
    else:
        job = {"metadata": {"name": "j"}, "status": {"conditions": [
            {"type": "Created", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"},
            {"type": state, "status": "True", "lastTransitionTime": "2025-01-01T00:05:00Z"}]}}
        assert job_state(job) == state
    assert state in ("Succeeded", "Failed") or not info.terminal


def test_job_state_ignores_false_conditions():
    job = {"metadata": {"name": "j"}, "status": {"conditions": [
        {"type": "Running", "status": "False", "lastTransitionTime": "2025-01-01T00:09:00Z"},
        {"type": "Restarting", "status": "True", "lastTransitionTime": "2025-01-01T00:08:00Z"}]}}
    assert job_state(job) == "Restarting"
    assert job_state({"metadata": {"name": "j"}}) == "Created"


def test_status_and_logs(world, plan):
    lifecycle.up(plan, world.env(), yes=True)
    world.clock.sleep(3600)
    st = lifecycle.status(plan.name, world.env())
    assert st.state == "Running" and st.elapsed_seconds == pytest.approx(3600)
    assert st.spend_usd == pytest.approx(Journal(plan.name).record().usd_per_hour)
    assert [p["rank"] for p in st.pods] == [0, 1]
    assert any("provision" in line for line in st.details["journal"])
    assert list(lifecycle.logs(plan.name, world.env())) == [f"log of {plan.name}-master-0"]
    assert list(lifecycle.logs(plan.name, world.env(), rank=1)) == [f"log of {plan.name}-worker-0"]
    with pytest.raises(Exception, match="no pod with rank 7"):
        lifecycle.logs(plan.name, world.env(), rank=7)


def test_status_when_the_cluster_is_unreachable(world, plan):
    from reclaunch.errors import ProviderError
    lifecycle.up(plan, world.env(), yes=True)

    def broken(outputs):
        raise ProviderError("kubernetes GET: connection refused")
    st = lifecycle.status(plan.name, world.env(kube_for=broken))
    assert st.state == "Unknown" and "connection refused" in st.message


def test_watcher_pid_file(tmp_path):
    import os
    import subprocess
    import sys

    from reclaunch.providers import watcher
    assert watcher.watcher_pid("c1") is None
    watcher.pid_file("c1").write_text("999999999")    # stale
    assert watcher.watcher_pid("c1") is None and not watcher.pid_file("c1").exists()
    # The detached entry point on an unknown cluster: a clear error, and the pid file is gone.
    r = subprocess.run([sys.executable, "-m", "reclaunch.providers.watcher", "watch", "c1"],
                       capture_output=True, text=True, env=os.environ.copy(), timeout=60)
    assert r.returncode == 2 and "no cluster named 'c1'" in r.stderr
    assert not watcher.pid_file("c1").exists()
    _ = dataclasses  # keep the import for with_spec users


def test_down_says_what_it_destroyed_and_what_the_sweep_found(world, plan):
    from reclaunch.runtime import lifecycle

    lifecycle.up(plan, world.env(), yes=True)
    destroy = world.infra.destroy

    def with_events(name, *, keep_storage=False, on_event=None):
        for urn in sorted(world.infra.state.get(name, set())):
            on_event({"kind": "resource", "status": "done", "op": "delete", "type": "aws:x", "urn": urn})
        destroy(name, keep_storage=keep_storage, on_event=on_event)

    world.infra.destroy = with_events
    env = world.env()
    n = len(world.infra.state[plan.name])
    lifecycle.down(plan.name, env, yes=True)
    text = env.console.file.getvalue()
    assert f"destroyed {n} resource(s) of {plan.name}" in text
    assert (f"verified: nothing tagged for this cluster is left (sweep of reclaunch-cluster="
            f"{plan.name} in aws us-east-1)") in text


def test_job_states_are_one_enum():
    """TorchX-style state enum: every state has its meaning, strings from outside are parsed,
    unknown text is Unknown (never a new state), and JSON still carries the plain name."""
    import json

    from reclaunch.runtime.states import JOB_STATES, JobStatus, State

    assert set(JOB_STATES) == set(State)
    st = JobStatus(name="c", cloud="aws", state="Running")
    assert st.state is State.RUNNING and st.state == "Running"
    assert JobStatus(name="c", cloud="aws", state="Exploded").state is State.UNKNOWN
    assert json.dumps({"state": st.state}) == '{"state": "Running"}'
