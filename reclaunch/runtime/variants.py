"""A plan re-made for what was really provisioned or what the job moves to: another zone list,
or on-demand instead of spot (the capacity fallback in `up`, the spot fallback of the watch)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


def variant(plan: "Plan", v: dict[str, Any]) -> "Plan":
    """The plan re-made for what was really provisioned (other zones, or on-demand instead of
    spot): same instance and node count, every figure recomputed (cost, deadline, policy)."""
    from reclaunch.planner import make_plan
    zones = list(v.get("zones", plan.zones))
    spot = bool(v.get("spot", plan.spot))
    spec = plan.spec.model_copy(update={
        "zones": zones, "spot": plan.spec.spot.model_copy(update={"enabled": spot})})
    spec._source, spec._lines = plan.spec._source, plan.spec._lines
    new = make_plan(spec, offer=plan.offer, nodes=plan.nodes, context=plan.context) if plan.offer is not None else \
        dataclasses.replace(plan, spec=spec)
    return dataclasses.replace(new, zones=zones, spot=spot,
                               zones_as_planned=plan.zones_as_planned or list(plan.zones))
