"""The same job in another region: which catalog region would run it for less.

`plan` prices the spec's own region; GPU prices differ by region (p5.48xlarge: 55.04 USD/h in
us-east-1, 71.55 in eu-west-2) and spot prices by zone, so the plan names the cheapest other
region for the same job: the spec's instance type (or, for a spec that gives only `gpu`, any
instance of that GPU and GPU count) on the spec's cloud, at the plan's node count. Pure, offline.
"""

from __future__ import annotations

from reclaunch.planner import cost as costmod

# Below this saving a "cheaper region" is noise (rounding of per-AZ spot midpoints).
MIN_SAVING_FRACTION = 0.005


def _same_job_offers(spec, plan, catalog):
    gpu = plan.offer.gpu
    for o in catalog.offers:
        if o.cloud != plan.cloud or o.region == plan.region or o.gpu_count != plan.gpus_per_node:
            continue
        if spec.instance_type and o.instance_type != plan.instance_type:
            continue
        if not spec.instance_type and o.gpu != gpu:
            continue
        yield o


def region_costs(spec, plan, catalog) -> list[dict]:
    """Every other region's whole-job cost for this plan's job, cheapest first (priced only)."""
    from reclaunch.planner.core import make_plan

    if plan.offer is None:
        return []
    spot = spec.spot.enabled
    out = []
    for o in _same_job_offers(spec, plan, catalog):
        if o.instance_type == plan.instance_type:
            # Same hardware, same throughput: only the prices differ, so skip the full plan.
            up = plan.startup
            up_h = (up.billed_seconds / 3600.0, up.seconds / 3600.0) if up is not None else (0.0, 0.0)
            c = costmod.job_cost(spec, o, plan.nodes, plan.duration_hours - up_h[1], [], startup=up_h)
            hours = plan.duration_hours
        else:
            other = make_plan(spec, catalog, offer=o, nodes=plan.nodes, context=plan.context)
            if not other.memory.fits:
                continue
            c, hours = other.cost, other.duration_hours
        usd = costmod.headline_usd(c, spot)
        if usd is None:
            continue
        out.append({"region": o.region, "instance_type": o.instance_type, "zones": o.zones,
                    "usd": round(usd, 2), "basis": "spot" if spot else "on-demand",
                    "duration_hours": hours, "price_as_of": o.price_as_of.isoformat(),
                    "stale": o.is_stale()})
    return sorted(out, key=lambda r: (r["usd"], r["region"]))


def cheaper_region(spec, plan, catalog) -> dict | None:
    """The cheapest other region for the same job when it saves money, else None."""
    here = costmod.headline_usd(plan.cost, spec.spot.enabled)
    if here is None or plan.offer is None:
        return None
    rows = region_costs(spec, plan, catalog)
    if not rows or rows[0]["usd"] >= here * (1 - MIN_SAVING_FRACTION):
        return None
    best = dict(rows[0])
    best.update(current_region=plan.region, current_usd=round(here, 2), zones_to_change=bool(spec.zones),
                saving_usd=round(here - best["usd"], 2),
                saving_pct=round((here - best["usd"]) / here * 100, 1))
    return best


def _usd(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:,.2f}"


def cheaper_region_line(alt: dict | None) -> str | None:
    if alt is None:
        return None
    return (f"cheaper region: {alt['instance_type']} in {alt['region']} would cost "
            f"{_usd(alt['usd'])} USD {alt['basis']} instead of {_usd(alt['current_usd'])} in "
            f"{alt['current_region']} (-{alt['saving_pct']:g}%, prices as of {alt['price_as_of']}); "
            f"set `region: {alt['region']}`" + (" and its zones" if alt.get("zones_to_change") else "")
            + " to use it")
