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


def api_refusals(typ, name, inputs):
    """What the cloud's API refuses that preview's mocks accept (stacks/aws/api_rules.py)."""
    from stacks.aws.api_rules import refusals

    return refusals(typ, name, inputs)


def kubernetes_minors():
    """The dated table of EKS minors (stacks/versions.py: what `preview` shows and `up` falls
    back to when it cannot ask EKS); `end`: the end of standard support, 14 months per minor
    (endoflife.date/amazon-eks, from the EKS release calendar). Refresh when as_of is a quarter old."""
    import datetime as dt

    return {"as_of": dt.date(2026, 11, 30),
            "source": "https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html",
            "minors": [{"minor": "1.34", "end": dt.date(2026, 12, 2)},
                       {"minor": "1.35", "end": dt.date(2027, 3, 27)}]}
