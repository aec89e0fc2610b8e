"""compare: every catalog offer that can run the job, at the node count it needs, by whole-job cost."""

from __future__ import annotations

import math
from dataclasses import dataclass

from reclaunch.planner.cost import headline_usd
from reclaunch.planner.model import Plan
from reclaunch.planner.sizing import any_size


@dataclass
class Comparison:
    plan: Plan
    usd: float | None              # the ranking figure: spot mean if spec.spot.enabled, else on-demand
    basis: str                     # "spot" | "on-demand"
    sizing: str                    # "spec" (the spec's GPU count) | "fewest" (fewest nodes that fit)
    rank: int = 0
    recommended: bool = False

    @property
    def offer(self):
        return self.plan.offer

    @property
    def nodes(self) -> int:
        return self.plan.nodes

    @property
    def priced(self) -> bool:
        return self.usd is not None

    def to_json(self) -> dict:
        p = self.plan
        return {"rank": self.rank, "recommended": self.recommended, "cloud": p.cloud,
                "instance_type": p.instance_type, "region": p.region,
                "zones": p.offer.zones if p.offer is not None else "", "nodes": p.nodes,
                "gpus": p.world_size, "gpu": p.gpu, "sizing": self.sizing, "fits": p.memory.fits,
                "gpus_needed": p.memory.gpus_needed, "parallelism": p.memory.parallelism,
                "throughput_samples_per_second": p.throughput_samples_per_second,
                "duration_hours": p.duration_hours,
                "on_demand_total_usd": p.cost.on_demand_total_usd,
                "spot_total_usd": p.cost.spot_total_usd, "spot_p90_usd": p.cost.spot_p90_usd,
                "usd": self.usd, "basis": self.basis, "price_as_of": p.cost.price_as_of,
                "throughput_basis": p.throughput_basis,
                "warnings": list(p.warnings)}


def compare(spec, catalog=None, same_cloud: bool = False,
            regions: list[str] | tuple[str, ...] | None = None, *, context=None) -> list[Comparison]:
    """Rows ranked by whole-job cost (fitting and priced first; unpriced last as "no price").

    Each offer is sized to at least the spec's GPU count (rounded up to whole nodes) or the
    GPUs the model needs; when the model fits on fewer nodes, that row is listed too, because
    recsys scaling is poor and fewer, bigger GPUs are often cheaper for the whole job.
    Every region of every offer is ranked; `regions` keeps only those regions. `context`
    (planner.measured.PlanContext) as for make_plan: a row whose job shape was measured is
    priced at the measured rate, as `plan` prices it."""
    from reclaunch.catalog import load_catalog
    from reclaunch.planner.core import make_plan

    cat = catalog if catalog is not None else load_catalog()
    spot = spec.spot.enabled
    basis = "spot" if spot else "on-demand"
    want_gpus = spec.nodes * spec.gpus_per_node
    rows: list[Comparison] = []
    for offer in cat.offers:
        if same_cloud and offer.cloud != spec.cloud:
            continue
        if regions and offer.region not in regions:
            continue
        # A spec without gpus_per_node asks for no GPU count: start every size at spec.nodes.
        n_spec = spec.nodes if any_size(spec) else max(1, math.ceil(want_gpus / offer.gpu_count))
        plan = make_plan(spec, cat, offer=offer, nodes=n_spec, context=context)
        need = plan.memory.gpus_needed
        if not plan.memory.fits and need:
            n_fit = max(n_spec, math.ceil(need / offer.gpu_count))
            if n_fit != n_spec:
                plan = make_plan(spec, cat, offer=offer, nodes=n_fit, context=context)
        rows.append(Comparison(plan, headline_usd(plan.cost, spot), basis, "spec"))
        n_min = max(1, math.ceil(need / offer.gpu_count)) if need else n_spec
        if n_min < plan.nodes:
            small = make_plan(spec, cat, offer=offer, nodes=n_min, context=context)
            if small.memory.fits:
                rows.append(Comparison(small, headline_usd(small.cost, spot), basis, "fewest"))
    # On a price tie (AWS charges the same in us-east-1/2 and us-west-2) the spec's region first.
    rows.sort(key=lambda r: (not r.plan.memory.fits, r.usd is None, r.usd or 0.0,
                             r.plan.duration_hours, (r.plan.cloud, r.plan.region) != (spec.cloud, spec.region)))
    for i, r in enumerate(rows, 1):
        r.rank = i
    best = next((r for r in rows if r.plan.memory.fits and r.usd is not None), None)
    if best is not None:
        best.recommended = True
    return rows
