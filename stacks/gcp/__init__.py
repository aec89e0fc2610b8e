"""GKE with A3 multi-network GPU node pools."""

from stacks.gcp.prerequisites import manual_prerequisites  # noqa: F401  (printed by `up`)

# stacks.StackFacts (pure). The pools module loads on first use: `plan` imports this package
# only for manual_prerequisites, and pools brings stacks.common (its dataclasses).


def node_pools(plan):
    from stacks.gcp.pools import node_pools

    return node_pools(plan)


def job_placement(plan):
    from stacks.gcp.pools import job_placement

    return job_placement(plan)


def pod_identity(plan):
    """{labels, env} the job pods add for the bucket identity: none (GKE Workload Identity
    binds the Google service account through the ServiceAccount's annotation)."""
    return {"labels": {}, "env": {}}


def policy_rules():
    """The GKE stack's rule for each policy of stacks.policy.DECLARED."""
    from stacks import policy
    from stacks.gcp import policy as mine

    return policy.rules_of(mine)


def api_refusals(typ, name, inputs):
    """What the cloud's API refuses that preview's mocks accept (stacks/gcp/api_rules.py)."""
    from stacks.gcp.api_rules import refusals

    return refusals(typ, name, inputs)


def kubernetes_minors():
    """The dated table of GKE minors (stacks/versions.py: what `preview` shows and `up` falls
    back to when it cannot ask GKE): the minors upstream still maintains (kubernetes.io/
    releases/1.35, /1.36: end of life 2027-02-28 and 2027-06-28), both offered without a
    release channel. Refresh when as_of is a quarter old."""
    import datetime as dt

    return {"as_of": dt.date(2026, 11, 30), "source": "https://kubernetes.io/releases/",
            "minors": [{"minor": "1.35", "end": dt.date(2027, 2, 28)},
                       {"minor": "1.36", "end": dt.date(2027, 6, 28)}]}
