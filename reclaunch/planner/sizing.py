"""Planning across instance sizes: 1-, 2-, 4- and 8-GPU machines for the same job.

A cluster.yaml that gives neither `instance_type` nor `gpus_per_node` leaves the GPU count per
node to the planner: every catalog instance of the spec's GPU (any count) is a candidate, each
sized to the fewest nodes the model fits on (unless the spec gives `nodes`), and the cheapest
whole job wins. Recsys jobs whose tables fit one GPU scale poorly past it, so a 1-GPU machine
is often an order of magnitude cheaper than the 8-GPU node the default would buy. `why` says
what decided the pick: price, scaling (duration) or memory. Pure, offline.
"""

from __future__ import annotations

import math

from reclaunch.errors import ReclaunchError
from reclaunch.planner.cost import headline_usd


def any_size(spec) -> bool:
    """The spec leaves the GPU count per node open (no instance_type, no gpus_per_node)."""
    return not spec.instance_type and "gpus_per_node" not in spec.model_fields_set


def candidates(spec, catalog, candidate_offers) -> list:
    """The offers the planner picks from: the spec's GPU count, or every count when the spec
    leaves it open (candidate_offers filters one count; its error for the spec's own count is
    raised when no size matches at all)."""
    if not any_size(spec):
        return candidate_offers(spec, catalog)
    counts = sorted({o.gpu_count for o in catalog.offers if o.cloud == spec.cloud})
    rows, first = [], None
    for n in [spec.gpus_per_node] + [c for c in counts if c != spec.gpus_per_node]:
        try:
            rows += candidate_offers(spec.model_copy(update={"gpus_per_node": n}), catalog)
        except ReclaunchError as exc:
            first = first or exc
    if not rows:
        raise first
    return rows


def fewest_nodes(plan) -> int:
    """The fewest nodes of this plan's instance the model fits on (at least 1)."""
    return max(1, math.ceil(plan.memory.gpus_needed / max(plan.gpus_per_node, 1)))


def sized(spec, catalog, plan, nodes: int | None, make_plan):
    """`plan` at the fewest nodes that fit, when the spec leaves sizes open and gives no nodes."""
    if nodes is not None or plan.offer is None or not any_size(spec) or "nodes" in spec.model_fields_set:
        return plan
    n = fewest_nodes(plan)
    return plan if n == plan.nodes else make_plan(spec, catalog, offer=plan.offer, nodes=n)


def _hourly(plan, spot: bool) -> float | None:
    c = plan.cost
    return c.spot_usd_per_hour if spot and c.spot_usd_per_hour is not None else c.on_demand_usd_per_hour


def why(best, plans: list, spot: bool, head: bool = True) -> str | None:
    """One line: why `best` beat the other candidates (price, scaling, memory). head=False
    leaves out the "N x type is the cheapest whole job" opening (a caller that said it)."""
    basis = "spot" if spot else "on-demand"
    usd = headline_usd(best.cost, spot)
    if usd is None:
        return None
    misfits = sum(1 for p in plans if not p.memory.fits)
    rivals = sorted((p for p in plans if p is not best and p.memory.fits
                     and headline_usd(p.cost, spot) is not None
                     and p.instance_type != best.instance_type),   # regions: planner.regions
                    key=lambda p: headline_usd(p.cost, spot))
    mem = (f"memory: the model needs {best.memory.gpus_needed} GPU(s), "
           f"{best.nodes} x {best.instance_type} has {best.world_size}")
    if misfits:
        mem += f"; {misfits} candidate(s) do not fit"
    lead = (f"{best.nodes} x {best.instance_type} is the cheapest whole job: "
            f"{usd:,.2f} USD {basis}; " if head else "")
    if not rivals:
        return f"{lead}the only priced candidate that fits ({mem})"
    r = rivals[0]
    r_usd = headline_usd(r.cost, spot)
    parts = [f"next: {r.nodes} x {r.instance_type} at {r_usd:,.2f} USD"]
    a, b = _hourly(best, spot), _hourly(r, spot)
    if a is not None and b is not None:
        parts.append(f"price: {a:,.2f} vs {b:,.2f} USD/h")
    if best.duration_hours <= r.duration_hours:
        parts.append(f"scaling: done in {best.duration_hours:.2f} h vs {r.duration_hours:.2f} h")
    else:
        parts.append(f"scaling: {r.world_size} GPUs finish in {r.duration_hours:.2f} h instead of "
                     f"{best.duration_hours:.2f} h but do not pay for themselves")
    parts.append(mem)
    return lead + "; ".join(parts)
