"""The up/down state machine against fake infra and a fake cluster: crashes at every step,
budget refusal, capacity fallback, and idempotent resumes."""

from __future__ import annotations

import dataclasses

import pytest

from reclaunch.runtime import lifecycle
from reclaunch.runtime.lifecycle import Pacing
from reclaunch.errors import PlanError, ProviderError, UsageError
from reclaunch.runtime.journal import Journal
from reclaunch.providers.aws import provider as aws

from .conftest import Crash

STEPS = ["provision", "apply", "start"]


def with_spec(plan, **updates):
    spec = plan.spec.model_copy(update=updates)
    return dataclasses.replace(plan, spec=spec, zones=list(spec.zones) or plan.zones)


def assert_all_created_once(world):
    assert world.cloud.created, "nothing was created"
    assert set(world.cloud.created.values()) == {1}, world.cloud.created
    assert world.kube.job_creations == 1


def test_up_happy_path_journals_every_step(world, plan):
    st = lifecycle.up(plan, world.env(), yes=True)
    assert st.state == "Running"
    assert sorted(world.cloud.tagged(plan.name)) == sorted(
        f"urn:{plan.name}::{k}" for k in world.infra.KINDS)
    assert_all_created_once(world)
    kinds = [k[0] for k in world.kube.objects]
    assert kinds.count("PyTorchJob") == 1 and "Namespace" in kinds
    steps = [(e["step"], e["outcome"]) for e in Journal(plan.name).entries()]
    for s in ("provision", "apply", "start"):
        assert (s, "start") in steps and (s, "ok") in steps
    assert st.details["capacity"] == {"spot": 1, "on-demand": 1}


def test_no_tty_without_yes_refuses_before_anything(world, plan):
    with pytest.raises(UsageError, match="pass --yes"):
        lifecycle.up(plan, world.env(), yes=False)
    assert not world.cloud.created and not world.infra.attempts
    assert not Journal(plan.name).exists()


def test_declined_confirmation_creates_nothing(world, plan):
    st = lifecycle.up(plan, world.env(confirm=lambda q: False))
    assert st.state == "Pending" and not world.cloud.created


def test_budget_refusal_and_force(world, plan):
    cheap = with_spec(plan, budget=plan.spec.budget.model_copy(update={"max_usd": 0.01}))
    with pytest.raises(PlanError, match="refusing to start.*budget"):
        lifecycle.up(cheap, world.env(), yes=True)
    assert not world.cloud.created
    assert lifecycle.up(cheap, world.env(), yes=True, force=True).state == "Running"


def test_unschedulable_pod_refused_before_anything(world, plan):
    """A pod no pool can take: exit 1 (PlanError) before any cloud resource or confirmation."""
    from reclaunch.manifests.placement import schedule
    from reclaunch.manifests.stackfacts import addon_facts, node_pools

    pools, facts = node_pools(plan), addon_facts(plan)
    assert pools and facts, "the aws stack declares no node pools or add-on facts"
    no_efa = [a for a in facts if "vpc.amazonaws.com/efa" not in a["advertises"]]
    asked = []
    env = world.env(schedule=lambda p: schedule(p, pools, no_efa),
                    confirm=lambda q: asked.append(q) or True)
    with pytest.raises(PlanError, match="refusing to start: not every pod can be scheduled: "
                       "criteo-deepfm/worker .training.: gpu-spot: vpc.amazonaws.com/efa: "
                       "no add-on advertises it") as exc:
        lifecycle.up(plan, env)
    assert exc.value.exit_code == 1 and "reclaunch preview" in exc.value.hint
    assert not world.cloud.created and not asked and not world.kube.objects
    # the stack's own pools and facts: every pod placed, the same up goes through
    assert lifecycle.up(plan, world.env(), yes=True).state == "Running"


@pytest.mark.parametrize("step", STEPS)
def test_crash_after_each_step_then_up_again(world, plan, step):
    def crash(name):
        if name == step:
            raise Crash(f"after {name}")
    with pytest.raises(Crash):
        lifecycle.up(plan, world.env(after_step=crash), yes=True)
    st = lifecycle.up(plan, world.env(), yes=True)
    assert st.state == "Running"
    assert_all_created_once(world)
    lifecycle.down(plan.name, world.env(), yes=True)
    assert world.cloud.tagged(plan.name) == []


@pytest.mark.parametrize("step", STEPS)
def test_crash_after_each_step_then_down(world, plan, step):
    def crash(name):
        if name == step:
            raise Crash(name)
    with pytest.raises(Crash):
        lifecycle.up(plan, world.env(after_step=crash), yes=True)
    lifecycle.down(plan.name, world.env(), yes=True)
    assert world.cloud.tagged(plan.name) == []
    assert Journal(plan.name).last("verify")["outcome"] == "ok"


@pytest.mark.parametrize("kind", ["vpc", "eks", "nodepool", "storage"])
def test_crash_mid_provision_leaves_pending_ops_that_are_cleared(world, plan, kind):
    world.infra.crash_before_create = kind
    with pytest.raises(Crash):
        lifecycle.up(plan, world.env(), yes=True)
    j = Journal(plan.name)
    assert j.interrupted() == "provision"
    st = lifecycle.status(plan.name, world.env())
    assert st.state == "Pending" and "interrupted during provision" in st.message
    assert lifecycle.up(plan, world.env(), yes=True).state == "Running"
    assert j.last("recover")["outcome"] == "ok"
    assert world.infra.pending(plan.name) == []
    assert_all_created_once(world)


def test_crash_mid_create_orphan_is_caught_by_verify(world, plan):
    world.infra.crash_before_create = "nodepool"
    world.infra.orphan_on_crash = True   # the cloud made it, the state never heard
    with pytest.raises(Crash):
        lifecycle.up(plan, world.env(), yes=True)
    with pytest.raises(ProviderError, match="still there.*nodepool") as exc:
        lifecycle.down(plan.name, world.env(), yes=True)
    assert "reclaunch gc --cluster criteo-deepfm --yes" in str(exc.value)
    assert Journal(plan.name).last("verify")["outcome"] == "failed"


def test_crash_while_starting_job_does_not_start_it_twice(world, plan):
    world.kube.crash_on_apply_kind = "PyTorchJob"
    with pytest.raises(Crash):
        lifecycle.up(plan, world.env(), yes=True)
    lifecycle.up(plan, world.env(), yes=True)
    lifecycle.up(plan, world.env(), yes=True)   # a third run changes nothing either
    assert_all_created_once(world)


def test_ctrl_c_is_journaled_as_interrupted(world, plan):
    def interrupt(name):
        raise KeyboardInterrupt
    world.env()  # noqa
    world.infra.up = lambda plan, on_event=None: interrupt("provision")
    with pytest.raises(KeyboardInterrupt):
        lifecycle.up(plan, world.env(), yes=True)
    assert Journal(plan.name).last("provision")["error"] == "interrupted"


def test_up_after_down_is_a_new_lifetime(world, plan):
    lifecycle.up(plan, world.env(), yes=True)
    lifecycle.down(plan.name, world.env(), yes=True)
    assert lifecycle.status(plan.name, world.env()).state == "Missing"
    world.kube.objects.clear()
    lifecycle.up(plan, world.env(), yes=True)
    assert set(world.cloud.created.values()) == {2}   # created again, once, after a destroy


def test_down_keep_storage(world, plan):
    lifecycle.up(plan, world.env(), yes=True)
    lifecycle.down(plan.name, world.env(), yes=True, keep_storage=True)
    assert world.cloud.tagged(plan.name) == [f"urn:{plan.name}::storage"]
    lifecycle.down(plan.name, world.env(), yes=True)
    assert world.cloud.tagged(plan.name) == []


def test_down_unknown_cluster(world):
    with pytest.raises(UsageError, match="no cluster named 'nope'"):
        lifecycle.down("nope", world.env(), yes=True)


# ---- capacity policy (the real aws table and fallback through the provider's env) ------------

def aws_env(world, **kw):
    prov = aws.provider(infra=world.infra, kube_for=lambda o: world.kube, clock=world.clock,
                        sleep=world.clock.sleep, console=world.env().console,
                        is_tty=lambda: False, verify=world.env().verify,
                        pacing=Pacing(verify_attempts=1), **kw)
    return prov.env()


def two_zone(plan):
    return with_spec(plan, zones=["us-east-1a", "us-east-1b"])


def test_capacity_error_tries_next_zone(world, plan):
    p = two_zone(plan)
    world.infra.capacity[(("us-east-1a", "us-east-1b"), True)] = (
        "error: creating EC2 Fleet: InsufficientInstanceCapacity: We currently do not have "
        "sufficient p4d.24xlarge capacity in the Availability Zone you requested (us-east-1a)")
    st = lifecycle.up(p, aws_env(world), yes=True)
    assert st.state == "Running"
    assert world.infra.attempts == [(("us-east-1a", "us-east-1b"), True), (("us-east-1b",), True)]
    assert_all_created_once(world)


def test_spot_capacity_falls_back_to_on_demand(world, plan):
    p = two_zone(plan)
    err = "UnfulfillableCapacity: spot capacity not available"
    world.infra.capacity[(("us-east-1a", "us-east-1b"), True)] = err
    world.infra.capacity[(("us-east-1b",), True)] = err
    lifecycle.up(p, aws_env(world), yes=True)
    assert world.infra.attempts[-1] == (("us-east-1a", "us-east-1b"), False)
    rec = Journal(p.name).record()
    assert rec.spot is False and rec.usd_per_hour > 0
    assert Journal(p.name).last("provision")["variant"]["spot"] is False
    assert_all_created_once(world)


def test_after_fallback_the_applied_job_is_the_on_demand_launch(world, plan):
    """Issue 11: the launch is built after provisioning. A spot plan's job is elastic and its
    deadline is priced at the spot rate; after falling back to on-demand, the job that reaches
    the cluster has no elastic policy and a deadline priced at the on-demand rate."""
    from reclaunch.manifests.launch import build_launch
    p = two_zone(plan)
    assert p.spot and p.spec.budget.max_usd
    spot_job = build_launch(p).job
    assert "elasticPolicy" in spot_job["spec"]
    spot_deadline = spot_job["spec"]["runPolicy"]["activeDeadlineSeconds"]
    err = "UnfulfillableCapacity: spot capacity not available"
    world.infra.capacity[(("us-east-1a", "us-east-1b"), True)] = err
    world.infra.capacity[(("us-east-1b",), True)] = err
    lifecycle.up(p, aws_env(world), yes=True)
    jobs = [m for (kind, _, _), m in world.kube.objects.items() if kind == "PyTorchJob"]
    assert len(jobs) == 1 and world.kube.job_creations == 1
    job = jobs[0]
    assert "elasticPolicy" not in job["spec"]
    assert set(job["spec"]["pytorchReplicaSpecs"]) == {"Master", "Worker"}
    deadline = job["spec"]["runPolicy"]["activeDeadlineSeconds"]
    c = p.cost
    # the budget buys fewer seconds at the on-demand rate: the ratio of the two prices
    assert deadline < spot_deadline
    assert deadline == pytest.approx(spot_deadline * c.spot_usd_per_hour / c.on_demand_usd_per_hour,
                                     rel=0.02)
    # the plan ConfigMap describes what runs: on-demand
    cm = [m for (kind, _, _), m in world.kube.objects.items() if kind == "ConfigMap"
          and m["metadata"]["name"].endswith("-plan")][0]
    assert '"spot": false' in cm["data"]["plan.json"]


def test_quota_is_a_clear_stop_that_leaves_nothing(world, plan):
    world.infra.capacity[(tuple(plan.zones), True)] = (
        "VcpuLimitExceeded: You have requested more vCPU capacity than your current vCPU limit")
    with pytest.raises(ProviderError, match="no capacity.*quota") as exc:
        lifecycle.up(plan, aws_env(world), yes=True)
    assert "Service Quotas" in str(exc.value)
    assert world.cloud.tagged(plan.name) == []           # vpc/eks made before the failure: gone
    assert Journal(plan.name).last("verify")["outcome"] == "ok"


def test_no_fallback_allowed_stops(world, plan):
    p = with_spec(plan, spot=plan.spec.spot.model_copy(update={"fallback": "none"}))
    world.infra.capacity[(tuple(p.zones), True)] = "InsufficientInstanceCapacity"
    with pytest.raises(ProviderError, match="no capacity"):
        lifecycle.up(p, aws_env(world), yes=True)
    assert len(world.infra.attempts) == 1 and world.cloud.tagged(p.name) == []


def test_other_errors_keep_the_stack_and_say_how_to_clean_up(world, plan):
    world.infra.capacity[(tuple(plan.zones), True)] = "AccessDenied: not authorized"
    with pytest.raises(ProviderError, match="reclaunch down criteo-deepfm"):
        lifecycle.up(plan, aws_env(world), yes=True)
    assert world.cloud.tagged(plan.name)   # kept for the user to fix and resume
    lifecycle.down(plan.name, aws_env(world), yes=True)
    assert world.cloud.tagged(plan.name) == []


@pytest.mark.parametrize("text,kind", [
    ("InsufficientInstanceCapacity: ...", "capacity"),
    ("MaxSpotInstanceCountExceeded", "spot_quota"),
    ("VcpuLimitExceeded", "quota"),
    ("nothing to see", None),
])
def test_aws_error_table(text, kind):
    from reclaunch.providers.kubecloud import classify
    assert classify(aws.ERRORS, text) == kind


@pytest.mark.parametrize("mod,text,kind", [
    ("gcp", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", "capacity"),
    ("gcp", "Quota 'NVIDIA_A100_GPUS' exceeded. Limit: 0.0", "quota"),
    ("gcp", "Quota 'PREEMPTIBLE_NVIDIA_H100_GPUS' exceeded", "spot_quota"),
    ("azure", "Code=SkuNotAvailable Message=The requested size is not available", "capacity"),
    ("azure", "Code=QuotaExceeded Operation could not be completed as it results in "
              "exceeding approved standardNDAMSv4Family Cores quota", "quota"),
    ("azure", "exceeding approved LowPriorityCores quota", "spot_quota"),
])
def test_other_cloud_error_tables(mod, text, kind):
    import importlib

    from reclaunch.providers.kubecloud import classify
    m = importlib.import_module(f"reclaunch.providers.{mod}.provider")
    assert classify(m.ERRORS, text) == kind


def test_up_shows_what_needs_a_person_before_creating_anything(world, plan):
    """Quotas, registrations and reservations are listed with the plan; a declined
    confirmation then creates nothing."""
    import io

    from rich.console import Console
    out = io.StringIO()
    env = aws_env(world, confirm=lambda q: False)
    env.console = Console(file=out, width=200)
    st = lifecycle.up(plan, env)
    text = out.getvalue()
    assert "needs a person first" in text and "Service Quotas" in text and "vCPU" in text
    assert st.state == "Pending" and not world.cloud.created

