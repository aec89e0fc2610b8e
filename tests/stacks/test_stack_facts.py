"""The stacks' pure facts are a declared interface (stacks.StackFacts), not probed for.

The schedulability check, the job placement and `up`'s prerequisites read them; a stack
package that loses one (a rename, a refactor) must fail loudly here and at run time, never
make the check quietly find no pools and pass.
"""

from __future__ import annotations

import pytest

import stacks
from reclaunch.providers import KUBE_CLOUDS, cloud_spec
from tests.stacks.conftest import make_plan


@pytest.mark.parametrize("cloud", KUBE_CLOUDS)
def test_every_kube_cloud_has_a_stack_implementing_the_facts(cloud):
    pkg = stacks.facts(cloud)
    assert pkg is not None, f"stacks.{cloud} is missing: {cloud} is a Kubernetes cloud in the registry"
    assert isinstance(pkg, stacks.StackFacts)
    program = cloud_spec(cloud).program.partition(":")[0]
    assert program.startswith(f"stacks.{cloud}."), program
    assert set(stacks.FACTS) == {"node_pools", "job_placement", "manual_prerequisites",
                                 "pod_identity", "policy_rules", "kubernetes_minors",
                                 "api_refusals"}


def test_a_target_without_a_stack_has_no_facts():
    assert stacks.facts("local") is None
    assert stacks.facts("../evil") is None


def test_a_renamed_stack_function_fails_loudly(monkeypatch):
    from reclaunch.manifests import placement, stackfacts

    plan = make_plan("aws")
    assert stackfacts.node_pools(plan)            # the real facts are there
    import stacks.aws as aws

    monkeypatch.delattr(aws, "node_pools")
    with pytest.raises(stacks.StackContractError, match="stacks.aws .*missing node_pools"):
        stackfacts.node_pools(plan)
    with pytest.raises(stacks.StackContractError):
        placement.for_plan(plan)                  # the check refuses; it does not return []
    with pytest.raises(stacks.StackContractError):
        stackfacts.job_placement(plan)


def test_a_renamed_common_fact_fails_loudly(monkeypatch):
    from reclaunch.manifests import stackfacts
    from stacks import common

    plan = make_plan("aws")
    assert stackfacts.addon_facts(plan)
    monkeypatch.delattr(common, "addon_facts")
    with pytest.raises(AttributeError):
        stackfacts.addon_facts(plan)


def test_a_stack_without_its_pod_identity_fails_loudly(monkeypatch):
    """A cloud whose stack does not say what a pod carries for the bucket identity cannot
    render a bucket job: it is an error, never pods without it (issue 40)."""
    from reclaunch.planner import make_plan as plan_of
    from reclaunch.spec import load_spec
    from stacks import identity

    plan = plan_of(load_spec("examples/aws-spot-bucket.yaml"))
    assert identity.pod_identity(plan)["service_account"] == f"{plan.name}-trainer"
    import stacks.aws as aws

    monkeypatch.delattr(aws, "pod_identity")
    with pytest.raises(stacks.StackContractError, match="missing pod_identity"):
        identity.pod_identity(plan)


def test_a_stack_that_leaves_a_policy_out_fails_loudly(monkeypatch):
    """A policy a stack declares no rule for is an error, never a pass (issue 40)."""
    from stacks import policy
    from stacks.aws import policy as aws_policy

    plan = make_plan("aws")
    assert policy.check(plan, []) == []
    monkeypatch.delattr(aws_policy, "no_world_ssh")
    with pytest.raises(stacks.StackContractError, match="stacks.aws declares no rule for policy no-world-ssh"):
        policy.check(plan, [])
