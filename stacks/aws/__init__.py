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
