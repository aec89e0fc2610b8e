"""An unreachable Kubernetes API is not an idle cluster (issue 41 follow-up): the watcher never
tears a cluster down on a job state it did not observe; it says the API is lost and keeps the
rules that do not need the job's state (budget.max_usd)."""

from __future__ import annotations

import pytest

from reclaunch.errors import ProviderError
from reclaunch.runtime import lifecycle
from reclaunch.runtime.journal import Journal
from reclaunch.runtime.policy import IdleClock, decide

from .test_teardown import rec, teardown_plan
from .test_lifecycle import with_spec


@pytest.mark.parametrize("idle", [0.0, 1800.0, 99999.0])
def test_unknown_never_destroys(idle):
    now = 10_000.0
    assert decide("Unknown", rec(), now=now, idle_since=now - idle, spend=0.0)[0] == "wait"


def test_unknown_still_stops_at_the_budget():
    assert decide("Unknown", rec(max_usd=100), now=0.0, idle_since=0.0, spend=100.0)[0] == "stop"


def test_idle_clock_counts_only_observed_idle_time():
    c = IdleClock()
    assert c.since("Failed", 0.0) == 0.0
    assert c.since("Failed", 600.0) == 0.0              # 10 min observed idle
    for t in range(660, 3600 * 5, 60):                  # hours of an unreachable API
        assert c.since("Unknown", float(t)) is None
    t = 3600.0 * 5
    assert t - c.since("Failed", t) == pytest.approx(600.0)   # the gap did not count
    assert c.since("Running", t + 60) is None
    assert c.since("Created", t + 120) == t + 120       # a running job reset it


def _flaky(world, states):
    """FakeKube whose job() plays `states`; "lost" raises as an unreachable API does."""
    real = world.kube.job
    seq = iter(states)

    def job(*a, **kw):
        s = next(seq, states[-1])
        if s == "lost":
            raise ProviderError("kubernetes GET: connection refused")
        world.kube.states = [s]
        world.kube.polls = 0
        return real(*a, **kw)
    world.kube.job = job


def _watch(world, plan, states, polls):
    lifecycle.up(plan, world.env(), yes=True)
    _flaky(world, states)
    return lifecycle.watch_job(Journal(plan.name).record(), world.env(poll_seconds=60),
                               max_polls=polls)


def test_lost_api_leaves_the_cluster_up_and_says_so(world, plan):
    p = teardown_plan(plan, idle_minutes=30)
    st = _watch(world, p, ["Running", "lost"], polls=300)    # 5 h without an answer
    assert world.infra.destroys == 0 and world.cloud.tagged(p.name)
    assert st.state == "Unknown"
    lost = [e for e in Journal(p.name).run() if e["step"] == "api"]
    assert lost and "API lost; cluster left up, spend continues" in lost[0]["message"]
    assert len(lost) == 1          # said once, not every poll


def test_lost_api_with_a_budget_still_stops_at_the_cap(world, plan):
    p = with_spec(teardown_plan(plan, idle_minutes=30),
                  budget=plan.spec.budget.model_copy(update={"max_usd": 50.0}))
    _watch(world, p, ["Running", "lost"], polls=10_000)
    assert world.cloud.tagged(p.name) == []
    assert "budget.max_usd" in Journal(p.name).last("destroy")["message"]


def test_unreachable_gap_does_not_count_as_idle(world, plan):
    p = teardown_plan(plan, when="on_success", idle_minutes=30)
    t0 = world.clock.t
    _watch(world, p, ["Failed"] * 11 + ["lost"] * 120 + ["Failed"] * 100, polls=400)
    assert world.cloud.tagged(p.name) == []
    # 10 observed idle minutes, 2 h unreachable, then 20 more observed minutes
    assert world.clock.t - t0 >= (10 + 120 + 20) * 60
    assert "no running job for 30 min" in Journal(p.name).last("destroy")["message"]


def test_watch_stops_when_the_journal_is_gone(world, plan):
    """RECLAUNCH_HOME or the journal removed: nothing is left to record or to watch; the loop
    ends (bounded), destroys nothing and does not write the journal back."""
    lifecycle.up(plan, world.env(), yes=True)
    journal = Journal(plan.name)
    calls = []
    real = world.kube.job

    def job(*a, **kw):
        calls.append(1)
        if len(calls) == 3:
            journal.path.unlink()
        return real(*a, **kw)
    world.kube.job = job
    st = lifecycle.watch_job(journal.record(), world.env(poll_seconds=60), max_polls=1000)
    assert len(calls) <= 4 and world.infra.destroys == 0 and world.cloud.tagged(plan.name)
    assert "journal" in st.message and not journal.path.exists()


def test_watcher_process_leaves_a_removed_home_removed(monkeypatch, tmp_path):
    import shutil

    from reclaunch import providers
    from reclaunch.providers import watcher
    from reclaunch.runtime.journal import ClusterRecord
    from reclaunch.runtime.states import JobStatus
    from reclaunch.home import root

    Journal("gone").save_record(ClusterRecord(name="gone", cloud="kubernetes"))

    class Removed:
        def watch(self, name, backend=None):
            shutil.rmtree(root())    # `rm -rf ~/.reclaunch` while it watched
            return JobStatus(name=name, cloud="kubernetes", state="Unknown", message="journal gone")
    monkeypatch.setattr(providers, "get", lambda cloud: Removed())
    assert watcher.main(["watch", "gone"]) == 0
    assert not root().exists()
