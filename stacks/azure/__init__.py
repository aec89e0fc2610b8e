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
