"""compare: every catalog offer that can run the job, at the node count it needs, by whole-job cost.

Rows are ranked by the P90 of their whole-job cost (planner/uncertainty.py), not the point
figure: a cheap row whose range is wide (a host-bound step, an unmeasured fabric) must not win on
a best case. The recommendation stays within what the spec pins (gpu, instance_type); cheaper
rows outside it are shown as alternatives. A row whose cost range overlaps the recommendation's,
or whose step is set by the host, says so (planner review 2026-12-03, defect 4)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from reclaunch.planner.cost import headline_usd
from reclaunch.planner.model import Plan
from reclaunch.planner.sizing import any_size
from reclaunch.planner.uncertainty import budget_usd


@dataclass
class Comparison:
    plan: Plan
    usd: float | None              # the point figure: spot mean if spec.spot.enabled, else on-demand
    basis: str                     # "spot" | "on-demand"
    sizing: str                    # "spec" (the spec's GPU count) | "fewest" (fewest nodes that fit)
    rank: int = 0
    recommended: bool = False
    pinned: bool = True            # within what the spec pins (gpu, instance_type)
    overlaps: bool = False         # its cost range overlaps the recommendation's

    @property
    def p90_usd(self) -> float | None:
        """The ranking figure: the P90 of the headline cost (what budget.max_usd is held to)."""
        return budget_usd(self.plan.cost, self.basis == "spot") if self.usd is not None else None

    @property
    def usd_range(self) -> list[float] | None:
        c = self.plan.cost
        return c.spot_total_usd_range if self.basis == "spot" else c.on_demand_total_usd_range

    @property
    def host_bound(self) -> bool:
        s = self.plan.step
        return s is not None and s.total_seconds > 0 and s.host_seconds >= 0.999 * s.total_seconds

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
                "usd": self.usd, "p90_usd": self.p90_usd, "usd_range": self.usd_range,
                "pinned": self.pinned, "host_bound": self.host_bound, "range_overlaps_recommended": self.overlaps,
                "basis": self.basis, "price_as_of": p.cost.price_as_of,
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
    keep = _pins(spec, cat)
    for r in rows:
        r.pinned = keep(r.plan.offer)
    # On a price tie (AWS charges the same in us-east-1/2 and us-west-2) the spec's region first.
    rows.sort(key=lambda r: (not r.plan.memory.fits, r.usd is None, r.p90_usd or 0.0, r.usd or 0.0,
                             r.plan.duration_hours, (r.plan.cloud, r.plan.region) != (spec.cloud, spec.region)))
    for i, r in enumerate(rows, 1):
        r.rank = i
    ok = [r for r in rows if r.plan.memory.fits and r.usd is not None]
    best = next((r for r in ok if r.pinned), ok[0] if ok else None)
    if best is not None:
        best.recommended = True
        mine = best.usd_range
        for r in ok:
            theirs = r.usd_range
            r.overlaps = (r is not best and mine is not None and theirs is not None
                          and theirs[0] <= mine[1] and mine[0] <= theirs[1])
    return rows


def _pins(spec, catalog):
    """Whether an offer is within what the spec pins: its gpu (aliases resolved as `plan` does)
    and instance_type. A spec that pins neither keeps every offer."""
    from reclaunch.spec import normalize_gpu

    gpu = None
    if spec.gpu:
        got = normalize_gpu(spec.gpu, sorted(catalog.gpus))
        gpu = (got if isinstance(got, str) else spec.gpu).lower()
    it = spec.instance_type
    return lambda o: o is not None and (gpu is None or o.gpu.lower() == gpu) and (it is None or o.instance_type == it)
