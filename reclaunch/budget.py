"""Money guards: the pre-start budget check, spend so far, and the teardown decision.

`decide()` is the whole teardown policy as one pure function of (job state, settings, clock,
spend), so every branch is testable with an injected clock and no cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reclaunch.kube import JOB_STATES

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.journal import ClusterRecord, Journal
    from reclaunch.planner.model import Plan

ACTIVE_STATES = ("Running", "Restarting")   # a job is using the cluster; the idle clock stops


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


def decide(state: str, rec: "ClusterRecord", *, now: float, idle_since: float | None,
           spend: float) -> tuple[str, str]:
    """-> (action, reason); action is "wait", "keep" (stop watching, leave it up),
    "destroy", or "stop" (stop the job, then destroy).

    - spend past budget.max_usd: stop, whatever the teardown setting (it is a hard cap);
    - success: destroy unless teardown.when is never;
    - failure: on_completion destroys; keep_on_failure keeps; on_success leaves the cluster up
      for debugging until the idle guard fires;
    - no running job for idle_minutes: destroy (unless teardown.when is never).
    """
    if rec.max_usd is not None and spend >= rec.max_usd:
        return "stop", f"spend ${spend:,.2f} reached budget.max_usd ${rec.max_usd:,.2f}"
    info = JOB_STATES.get(state, JOB_STATES["Unknown"])
    if rec.teardown_when == "never":
        return ("keep", f"job {state}; teardown.when is never") if info.terminal else ("wait", "")
    if info.terminal and info.ok:
        return "destroy", "job succeeded"
    if info.terminal and not info.ok:
        if rec.keep_on_failure:
            return "keep", "job failed; kept for debugging (teardown.keep_on_failure)"
        if rec.teardown_when == "on_completion":
            return "destroy", "job failed; teardown.when is on_completion"
    if state not in ACTIVE_STATES and idle_since is not None \
            and now - idle_since >= rec.idle_minutes * 60:
        return "destroy", f"no running job for {rec.idle_minutes:g} min (teardown.idle_minutes)"
    return "wait", ""


def show_plan(plan: "Plan", env: Any, problem: str | None) -> None:
    """The cost table and the resources `up` is about to create."""
    from rich.table import Table
    c = plan.cost
    t = Table(title=f"{plan.name}: {plan.nodes} x {plan.instance_type} in {plan.region}"
                    f"{' (' + ', '.join(plan.zones) + ')' if plan.zones else ''}")
    for col in ("", "per hour", "whole job"):
        t.add_column(col, justify="right" if col else "left")
    money = lambda v: "-" if v is None else f"${v:,.2f}"  # noqa: E731
    t.add_row("on-demand", money(c.on_demand_usd_per_hour), money(c.on_demand_total_usd))
    t.add_row("spot", money(c.spot_usd_per_hour), money(c.spot_total_usd))
    t.add_row("budget.max_usd", "", money(plan.spec.budget.max_usd))
    out = env.out()
    out.print(t)
    st = plan.spec.storage
    out.print(f"resources: Kubernetes cluster + node pool of {plan.nodes} x {plan.instance_type} "
              f"({plan.gpus_per_node} x {plan.gpu}, {'spot' if plan.spot else 'on-demand'}), "
              f"storage {st.kind}{' ' + str(st.size) if st.size else ''}; "
              f"prices as of {c.price_as_of}; ~{plan.duration_hours:.1f} h")
    if problem:
        out.print(f"[yellow]budget: {problem}[/yellow]")
