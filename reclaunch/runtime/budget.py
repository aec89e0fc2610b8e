"""Money guards: the pre-start budget check and spend so far (the teardown decision that uses
them is runtime/policy.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reclaunch.runtime.policy import ACTIVE_STATES, decide  # noqa: F401  (re-exported)

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.runtime.journal import ClusterRecord, Journal
    from reclaunch.planner.model import Plan

def usd_per_hour(plan: "Plan") -> float:
    """What the running cluster costs per hour (instances + control plane share)."""
    c = plan.cost
    rate = float((c.spot_usd_per_hour if plan.spot else None) or c.on_demand_usd_per_hour or 0.0)
    if plan.duration_hours and plan.duration_hours > 0:
        rate += float(c.control_plane_usd or 0.0) / plan.duration_hours
    return rate


def budget_problem(plan: "Plan") -> str | None:
    """Why the plan breaks budget.max_usd, or None: the planner's own rule and estimate."""
    from reclaunch.planner import over_budget
    from reclaunch.planner.cost import headline_usd

    if not over_budget(plan):
        return None
    est = headline_usd(plan.cost, plan.spot)
    return f"estimated ${est:,.0f} is over budget.max_usd ${plan.spec.budget.max_usd:,.0f}"


def spend_so_far(rec: "ClusterRecord", journal: "Journal", now: float) -> float:
    """Hourly price x time since provisioning began (until destroyed, if it was)."""
    start = journal.first_time("provision", "start")
    if start is None:
        return 0.0
    end = now
    for e in journal.run():
        if e["step"] == "destroy" and e["outcome"] == "ok" and e["t"] >= start:
            end = e["t"]
            break
    return max(0.0, end - start) / 3600.0 * rec.usd_per_hour
