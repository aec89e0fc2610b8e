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


def api_refusals(typ, name, inputs):
    """What the cloud's API refuses that preview's mocks accept (stacks/azure/api_rules.py)."""
    from stacks.azure.api_rules import refusals

    return refusals(typ, name, inputs)


def kubernetes_minors():
    """The dated table of AKS minors (stacks/versions.py: what `preview` shows and `up` falls
    back to when it cannot ask AKS); Azure/AKS release 2026-10-25: 1.37 GA, 1.36 the default,
    1.34 out of community support by November 2026; a GA minor is supported 12 months.
    Refresh when as_of is a quarter old."""
    import datetime as dt

    return {"as_of": dt.date(2026, 11, 30),
            "source": "https://github.com/Azure/AKS/releases/tag/2026-10-25",
            "minors": [{"minor": "1.35", "end": dt.date(2027, 2, 28)},
                       {"minor": "1.36", "end": dt.date(2027, 6, 28)},
                       {"minor": "1.37", "end": dt.date(2027, 10, 31)}]}
