"""AKS with InfiniBand ND node pools."""

from stacks.azure.prerequisites import manual_prerequisites  # noqa: F401  (printed by `up`)

# stacks.StackFacts (pure). The pools module loads on first use: `plan` imports this package
# only for manual_prerequisites, and pools brings stacks.common (its dataclasses).


def node_pools(plan):
    from stacks.azure.pools import node_pools

    return node_pools(plan)


def job_placement(plan):
    from stacks.azure.pools import job_placement

    return job_placement(plan)


def pod_identity(plan):
    """{labels, env} the job pods add for the bucket identity (AKS workload identity)."""
    from stacks.azure.identity import pod_identity

    return pod_identity(plan)


def policy_rules():
    """The AKS stack's rule for each policy of stacks.policy.DECLARED."""
    from stacks import policy
    from stacks.azure import policy as mine

    return policy.rules_of(mine)
