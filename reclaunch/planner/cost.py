"""Whole-job cost: instances (on-demand, spot with expected reclaims and P50/P90),
managed Kubernetes control plane and storage. Per-cloud constants are data (planner.yaml)."""

from __future__ import annotations

import math

from reclaunch.planner.constants import constants
from reclaunch.planner.model import Cost
from reclaunch.spec.buckets import is_url

GIB = 1 << 30


def poisson_quantile(mean: float, q: float) -> int:
    """Smallest k with P(K <= k) >= q for K ~ Poisson(mean); deterministic, no RNG."""
    if mean <= 0:
        return 0
    k, p = 0, math.exp(-mean)
    cdf = p
    if p == 0.0:  # huge means: normal approximation is plenty for a cost band
        z = {0.5: 0.0, 0.9: 1.2816}.get(q, 1.2816)
        return max(0, int(math.ceil(mean + z * math.sqrt(mean) - 0.5)))
    while cdf < q and k < 100_000:
        k += 1
        p *= mean / k
        cdf += p
    return k


def reclaim_rate(spec, cloud: str | None = None, instance: str | None = None) -> tuple[float, str]:
    """(expected reclaims per node-hour, its source): the spec's, else the middle of the
    instance family's published bucket (the cloud's facts), else the cloud's one rate."""
    mid, _, src = reclaim_rates(spec, cloud, instance)
    return mid, src


def reclaim_rates(spec, cloud: str | None = None, instance: str | None = None) -> tuple[float, float, str]:
    """(middle, top) reclaims per node-hour of the instance's bucket, and the source: the P50
    and mean use the middle, the P90 the top, so a bucket's width shows in the spot band."""
    if spec.spot.reclaim_rate_per_node_hour is not None:
        r = float(spec.spot.reclaim_rate_per_node_hour)
        return r, r, "spec.spot.reclaim_rate_per_node_hour"
    c = constants()["spot"]
    cloud = cloud or spec.cloud
    band, by = c["reclaim_band"].get(cloud, (None, {}))
    band = by.get(instance or "", band)
    if band is None:
        r = float(c["reclaim_rate_per_node_hour"].get(cloud, 0.0))
        return r, r, c["source"]
    month = float(c["hours_per_month"])
    where = f"{instance}'s" if instance in by else f"{cloud}'s default"
    return ((band[0] + band[1]) / 2 / month, band[1] / month,
            f"{c['source']}: {where} bucket {band[0]:.0%}-{band[1]:.0%} interrupted per month")


def storage_rate(kind: str, cloud: str) -> float:
    """USD per GiB-month of a storage kind on a cloud: the cloud's own price for it (its facts'
    planner["<kind>_usd_per_gb_month"], as every cloud prices pvc), else the kind's record."""
    from reclaunch import clouds

    own = clouds.get(cloud).planner.get(f"{kind}_usd_per_gb_month") if clouds.known(cloud) else None
    return float(own if own is not None else clouds.storage_kind(kind).usd_per_gb_month)


def line_items(spec, hours: float, cloud: str | None = None) -> tuple[float, float]:
    """(control plane USD, storage USD) for a job of `hours` on `cloud` (default spec.cloud)."""
    c = constants()
    cloud = cloud or spec.cloud
    cp = float(c["control_plane_usd_per_hour"].get(cloud, 0.0)) * hours
    from reclaunch.planner.storage_size import billed_gib

    # What the service creates after its minimum and steps (FSx: 1.2 TiB, then 2.4 TiB steps).
    size_gib = billed_gib(spec.storage.kind, spec.storage.size)
    months = hours / float(c["spot"]["hours_per_month"])
    return cp, storage_rate(spec.storage.kind, cloud) * size_gib * months


def spot_hours(spec, nodes: int, hours: float, cloud: str | None = None,
               rate: float | None = None) -> tuple[float, float, float]:
    """(expected reclaims, hours lost per reclaim, mean total hours).

    Each reclaim stalls the whole cluster for the restart and redoes, on average, half a
    checkpoint interval. Lost time itself can be reclaimed, hence the geometric sum."""
    if rate is None:
        rate, _ = reclaim_rate(spec, cloud)
    loss_h = (spec.spot.restart_minutes + spec.job.checkpoint.every_minutes / 2.0) / 60.0
    lam = rate * nodes                      # reclaims per wall-clock hour of the cluster
    x = lam * loss_h
    total = hours / (1.0 - x) if x < 0.95 else hours * 20.0
    return lam * total, loss_h, total


def spot_band(spec, nodes: int, hours: float, cloud: str, sp_h: float,
              fixed: float, instance: str | None = None) -> tuple[float, float, float, float]:
    """(mean, P50, P90, expected reclaims) of the spot job's cost, all from one distribution:
    K ~ Poisson(lam) reclaims, each costing `loss_h` hours of the whole cluster (instances,
    control plane, storage). lam is the number of reclaims over the *expected* wall-clock time
    (the lost time can be reclaimed too: spot_hours' geometric sum), so the mean is E[cost]
    of the same K the band's quantiles come from and P90 can never sit far below the mean.
    The P90 takes K at the top of the instance family's bucket (reclaim_rates)."""
    mid, top, _ = reclaim_rates(spec, cloud, instance)
    reclaims, loss_h, mean_h = spot_hours(spec, nodes, hours, cloud, mid)
    extra_h = max(mean_h - hours, 0.0)
    extra_cp, extra_st = line_items(spec, extra_h, cloud)
    mean = sp_h * mean_h + fixed + extra_cp + extra_st
    # lam * loss_h == extra_h, unless spot_hours capped the mean (reclaims faster than the
    # cluster recovers): then the cap's lost hours define lam, so the band follows the mean.
    if not math.isclose(reclaims * loss_h, extra_h, rel_tol=1e-9, abs_tol=1e-12):
        reclaims = extra_h / loss_h if loss_h > 0 else 0.0
    per_h = sp_h + (extra_cp + extra_st) / extra_h if extra_h > 0 else sp_h   # one lost hour
    base = sp_h * hours + fixed
    q = constants()["spot"]
    p50 = base + poisson_quantile(reclaims, q["p50_quantile"]) * loss_h * per_h
    top_k = reclaims * (top / mid) if mid > 0 else reclaims
    p90 = base + poisson_quantile(top_k, q["p90_quantile"]) * loss_h * per_h
    return mean, p50, max(p90, p50), reclaims


def job_cost(spec, offer, nodes: int, hours: float, warnings: list[str],
             startup: tuple[float, float] = (0.0, 0.0)) -> Cost:
    """`hours` of training; `startup` = (billed, wall) hours before the first step: the
    instances bill the billed part, the control plane and storage the whole of it."""
    cloud = offer.cloud if offer is not None else spec.cloud
    up_billed, up_wall = startup
    cp, storage = line_items(spec, hours + up_wall, cloud)
    if is_url(spec.job.checkpoint.path):   # checkpoints in a bucket (bucket_cost.py)
        from reclaunch.planner.bucket_cost import checkpoint_cost

        ck = checkpoint_cost(spec, cloud, nodes, nodes * spec.gpus_per_node, hours + up_wall)
        storage += ck.storage_usd + ck.requests_usd
    from reclaunch.planner.storage_size import rounding_note

    if (note := rounding_note(spec.storage.kind, spec.storage.size)) and note not in warnings:
        warnings.append(note)
    od_h = offer.on_demand_usd * nodes if offer and offer.on_demand_usd is not None else None
    sp_h = offer.spot_usd * nodes if offer and offer.spot_usd is not None else None
    if offer is None:             # cloud: local costs nothing
        od_h = sp_h = 0.0
    elif spec.capacity is not None:   # reserved capacity: its own price, never spot
        sp_h = None
        if spec.capacity.price_usd_per_hour is not None:
            od_h = spec.capacity.price_usd_per_hour * nodes
        else:
            warnings.append(f"capacity {spec.capacity.reservation}: no price given "
                            f"(capacity.price_usd_per_hour), priced at the on-demand rate")
    od_total = od_h * (hours + up_billed) + cp + storage if od_h is not None else None
    sp_total = p50 = p90 = None
    reclaims = 0.0
    if sp_h is not None:
        # The startup's billed instance hours are paid once, reclaims or not.
        sp_total, p50, p90, reclaims = spot_band(spec, nodes, hours, cloud, sp_h, cp + storage + sp_h * up_billed,
                                                 offer.instance_type if offer is not None else None)
    elif spec.spot.enabled and offer is not None:
        warnings.append(f"no spot price for {offer.instance_type} in {offer.region}: spot cost "
                        "unknown (run `reclaunch catalog refresh`)")
    if offer is not None:
        if od_h is None:
            warnings.append(f"no on-demand price for {offer.instance_type} in {offer.region}")
        if spec.spot.enabled and spec.spot.max_price is not None and offer.spot_usd is not None \
                and spec.spot.max_price < offer.spot_usd:
            warnings.append(f"spot.max_price {spec.spot.max_price:g} USD/h is below the spot price "
                            f"{offer.spot_usd:g} USD/h of {offer.instance_type}: nodes may never start")
        # An unpriced row's date is how old its availability listing is, not a price's age.
        if offer.priced and offer.is_stale():
            warnings.append(f"prices for {offer.instance_type} in {offer.region} are from "
                            f"{offer.price_as_of.isoformat()} ({offer.age_days()} days old): run "
                            "`reclaunch catalog refresh`")
    return Cost(
        on_demand_usd_per_hour=od_h, spot_usd_per_hour=sp_h, on_demand_total_usd=od_total,
        spot_total_usd=sp_total, spot_p50_usd=p50, spot_p90_usd=p90, control_plane_usd=cp,
        storage_usd=storage,
        price_as_of=offer.price_as_of.isoformat() if offer is not None and offer.priced else None,
        price_source=("spec.capacity.price_usd_per_hour" if spec.capacity is not None
                      and spec.capacity.price_usd_per_hour is not None
                      else offer.source if offer is not None else "cloud: local (no price)"),
        stale=bool(offer is not None and offer.priced and offer.is_stale()),
        expected_reclaims=reclaims)


def headline_usd(cost: Cost, spot: bool) -> float | None:
    """The whole-job figure a budget is checked against: spot mean if spot, else on-demand."""
    if spot and cost.spot_total_usd is not None:
        return cost.spot_total_usd
    return cost.on_demand_total_usd


def cluster_usd_per_hour(plan) -> float:
    """What the running cluster costs per hour: the instances at the planned basis (spot when
    the plan is spot) plus the control plane's share. The budget guard, the journal and the
    job's activeDeadlineSeconds all use this one figure."""
    c = plan.cost
    rate = float((c.spot_usd_per_hour if plan.spot else None) or c.on_demand_usd_per_hour or 0.0)
    if plan.duration_hours and plan.duration_hours > 0:
        rate += float(c.control_plane_usd or 0.0) / plan.duration_hours
    return rate


def usd_apart(amount: float, cap: float) -> tuple[str, str]:
    """Two amounts in USD with as many decimals as it takes to tell them apart (none, cents,
    then finer): a refusal never reads "estimated 5 USD exceeds 5" for a P90 of 5.43."""
    for places in (0, 2, 4, 6):
        a, b = f"{amount:,.{places}f}", f"{cap:,.{places}f}"
        if a != b:
            return a, b
    return a, b
