"""Money guards: the pre-start budget check, spend so far, and the projection at the measured
rate once the job reports one (the teardown decision that uses them is runtime/policy.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reclaunch.runtime.policy import ACTIVE_STATES, decide  # noqa: F401  (re-exported)

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.runtime.journal import ClusterRecord, Journal
    from reclaunch.planner.model import Plan

# What the running cluster costs per hour: one figure for the budget guard, the journal and
# the job's activeDeadlineSeconds (manifests/job.py), defined with the plan's cost.
from reclaunch.planner.cost import cluster_usd_per_hour as usd_per_hour  # noqa: E402,F401


def budget_problem(plan: "Plan") -> str | None:
    """Why the plan breaks budget.max_usd, or None: the planner's own rule and estimate."""
    from reclaunch.planner import over_budget

    if not over_budget(plan):
        return None
    from reclaunch.planner.uncertainty import budget_usd

    from reclaunch.planner.cost import usd_apart

    shown, cap = usd_apart(budget_usd(plan.cost, plan.spot), plan.spec.budget.max_usd)
    return f"estimated ${shown} (P90) is over budget.max_usd ${cap}"


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


def plan_extra(plan: "Plan") -> dict[str, Any]:
    """What the running guard needs from the plan, saved in the journal record (no re-plan)."""
    from reclaunch.planner.cost import headline_usd

    job = plan.spec.job
    return {"total_samples": float(job.dataset.samples) * float(job.dataset.epochs),
            "global_batch": job.batch_size * job.grad_accumulation * plan.world_size,
            "planned_usd": headline_usd(plan.cost, plan.spot),
            "planned_samples_per_s": plan.throughput_samples_per_second,
            "planned_hours": plan.duration_hours}


def measured_projection(rec: "ClusterRecord", spend: float, samples_per_s: float | None,
                        step: int) -> float | None:
    """Whole-job spend if the rest runs at the measured rate: spend so far + the samples
    left / measured samples/s x the cluster's hourly price. None without a usable rate."""
    x = rec.extra or {}
    total, batch = x.get("total_samples"), x.get("global_batch")
    if not total or not batch or not samples_per_s or samples_per_s <= 0:
        return None
    left = max(0.0, float(total) - float(step) * float(batch))
    return spend + left / samples_per_s / 3600.0 * rec.usd_per_hour


def measured_guard(rec: "ClusterRecord", spend: float, projected: float | None) -> tuple[str, str] | None:
    """-> ("stop" | "warn", reason) when the measured rate says the job will break
    budget.max_usd, else None.

    The hard cap (policy.decide) stops the job at max_usd anyway, unfinished: once the measured
    rate says it cannot finish under the cap, stopping now loses the same job for less money.
    It stops only when the plan was within budget (an over-budget start was forced, knowingly)
    and the projection is past the cap by the rule table's margin; otherwise it warns."""
    if rec.max_usd is None or projected is None or projected <= rec.max_usd:
        return None
    from reclaunch.runtime.diagnose import load_rules

    margin = float(load_rules()["budget"]["stop_margin"])
    planned = (rec.extra or {}).get("planned_usd")
    msg = (f"at the measured rate the job needs ~${projected:,.2f} in all, over budget.max_usd "
           f"${rec.max_usd:,.2f}" + (f" (the plan said ${planned:,.2f})" if planned is not None else ""))
    if planned is not None and planned <= rec.max_usd and projected >= rec.max_usd * margin:
        return "stop", (msg + f"; stopping now spares the ~${max(0.0, rec.max_usd - spend):,.2f} "
                        "the cap would spend before stopping it unfinished (`reclaunch diagnose` "
                        "says why it is slow)")
    return "warn", msg

