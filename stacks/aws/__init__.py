"""EKS with EFA GPU node groups."""

from stacks.aws.prerequisites import manual_prerequisites  # noqa: F401  (printed by `up`)

# stacks.StackFacts (pure). The pools module loads on first use: `plan` imports this package
# only for manual_prerequisites, and pools brings stacks.common (its dataclasses).


def node_pools(plan):
    from stacks.aws.pools import node_pools

    return node_pools(plan)


def job_placement(plan):
    from stacks.aws.pools import job_placement

    return job_placement(plan)


def pod_identity(plan):
    """{labels, env} the job pods add for the bucket identity: none (EKS Pod Identity
    associates the role with the namespace and service account)."""
    return {"labels": {}, "env": {}}


def policy_rules():
    """The EKS stack's rule for each policy of stacks.policy.DECLARED."""
    from stacks import policy
    from stacks.aws import policy as mine

    return policy.rules_of(mine)
