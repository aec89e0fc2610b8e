"""How sure the plan is: P10-P90 ranges, and what they account for (Plan.range_covers).

    model error   bench/bench_calibration.py predicts every fit row with the constants fitted
                  WITHOUT that row's source and stores the P10 / P90 of predicted/published
                  (planner.yaml perf.fit); a plan priced from measured runs of its own shape
                  uses the run-to-run band instead (perf.measured_band, widened by the runs'
                  own spread: planner/evidence.py)
    stack         when the spec does not say which training software runs (spec/stacks.py),
                  the range stretches to the other stack's figure (planner/stack_view.py)
    fabric        when the bandwidth the step leans on is derived, not measured (fabric
                  profiles without a measured figure, an NVLink row fabric/intra.py derives),
                  the communication share of the step is spread by FABRIC_SPREAD
    startup       startup.yaml `spread`: the startup at its P10 / P90 multiples
    reclaims      the spot cost's own P50 / P90 (planner/cost.py, per instance family)

    samples/s  [point / ratio_p90 / widen, point / ratio_p10 * widen]   (P10, P90)
    hours      startup x spread + training x [ratio_p10 * .., ratio_p90 * ..]
    cost       the job repriced at those hours (planner/cost.py job_cost)

`budget.max_usd` is checked against the P90 cost. cloud: local has no range: the GPU
calibration says nothing about a CPU rehearsal.
"""

from __future__ import annotations

from reclaunch.planner.constants import constants

# Derived inter-node figures have been off by 0.4-1.6x where a measurement came later
# (fabrics.md: TCPX 50 GB/s measured vs 125 GB/s of link rate; p4de 78.3 vs 50): the exposed
# communication of a plan on such a figure is taken as uncertain by this fraction either way.
FABRIC_SPREAD = 0.6


def ratios(measured: bool = False) -> tuple[float, float]:
    """(P10, P90) of predicted/true: the model's leave-one-source-out spread, or, for a plan
    priced from a measured run of the same shape, the much narrower run-to-run band."""
    f = constants()["perf"]["measured_band" if measured else "fit"]
    return float(f["ratio_p10"]), float(f["ratio_p90"])


def fit_date() -> str:
    return str(constants()["perf"]["fit"]["date"])


def throughput_range(point: float, measured: bool = False) -> list[float]:
    lo, hi = ratios(measured)
    return [point / hi, point / lo]


def _fabric_derived(plan) -> bool:
    """Does the step lean on a bandwidth nobody measured for this instance?"""
    from reclaunch import fabric as fab
    from reclaunch.fabric.intra import of_offer

    try:
        prof = fab.get_profile(plan.fabric)
    except Exception:  # noqa: BLE001 - an unknown profile is as good as unmeasured
        return True
    inter = plan.nodes > 1 and prof.measured_2node_busbw_gbs is None
    fact = of_offer(plan.offer)
    intra = plan.gpus_per_node > 1 and (fact is None or not fact.measured)
    return inter or intra


def _band(plan, measured: bool) -> tuple[float, float, list[str]]:
    """(P10, P90) samples/s and what they cover."""
    point = plan.throughput_samples_per_second
    lo_r, hi_r = ratios(measured)
    basis = plan.throughput_basis or {}
    if measured:
        spread = basis.get("spread")
        if spread:   # the clean runs' own P10-P90 around their median, when wider than the band
            lo_r, hi_r = min(lo_r, 1.0 / spread[1]), max(hi_r, 1.0 / spread[0])
        covers = [f"run-to-run spread ({basis.get('clean_runs', 1)} clean run(s) of this shape)"]
    else:
        covers = [f"model error on sources it was not fitted to (fit {fit_date()})"]
    lo, hi = point / hi_r, point / lo_r
    s = plan.step
    if not measured and s is not None and s.total_seconds > 0 and _fabric_derived(plan):
        # All of the communication, not only what the plan leaves exposed: a slower fabric
        # than assumed shows through any overlap.
        comm = s.alltoall_seconds + s.allreduce_seconds
        k = 1.0 + FABRIC_SPREAD * min(1.0, comm / s.total_seconds)
        lo, hi = lo / k, hi * k
        covers.append("a derived (unmeasured) interconnect figure")
    seen = (basis.get("measured_runs") or {}).get("samples_per_s")
    if not measured and seen:
        lo, hi = min(lo, seen), max(hi, seen)
        covers.append("measured runs of this shape that were not clean")
    st = plan.stack or {}
    if not measured and st.get("name"):
        # The range is the assumed stack's alone: the other stack is a separate scenario on the
        # stack line (stack_view.line), never folded in: a union of both spanned 24x and let a
        # budget pass on a figure the user's trainer cannot reach (planner review, 2026-12-03).
        covers.append(f"the {st['name']} stack only{'' if st.get('stated') else ' (assumed)'}")
    return lo, hi, covers


def apply(plan) -> None:
    """Fill the plan's ranges (throughput_range, duration_hours_range, Cost *_range) and
    range_covers."""
    from reclaunch.planner import cost as costmod

    if plan.instance_type is None:
        return
    measured = (plan.throughput_basis or {}).get("kind") == "measured"
    lo, hi, covers = _band(plan, measured)
    plan.throughput_range = [lo, hi]
    up = plan.startup
    up_wall = up.seconds / 3600.0 if up is not None else 0.0
    up_billed = up.billed_seconds / 3600.0 if up is not None else 0.0
    spread = constants_startup_spread(up)
    if up_wall > 0:
        covers.append(f"startup x{spread[0]:g}-{spread[1]:g}")
    if plan.spot:
        covers.append("spot reclaims (per instance family)")
    train_h = max(plan.duration_hours - up_wall, 0.0)
    point = plan.throughput_samples_per_second
    scale = (point / hi, point / lo)            # training hours at P10 and P90 throughput ends
    ends = [costmod.job_cost(plan.spec, plan.offer, plan.nodes, train_h * r, [],
                             startup=(up_billed * k, up_wall * k)) for r, k in zip(scale, spread)]
    plan.duration_hours_range = [up_wall * k + train_h * r for r, k in zip(scale, spread)]
    plan.range_covers = covers

    def pair(key: str) -> list[float] | None:
        vals = [getattr(e, key) for e in ends]
        return None if None in vals else vals

    plan.cost.on_demand_total_usd_range = pair("on_demand_total_usd")
    sp = [e.spot_total_usd for e in ends]
    p90 = [e.spot_p90_usd for e in ends]
    # The spot range runs from the P10 job's mean to the P90 job's reclaim P90.
    plan.cost.spot_total_usd_range = None if None in sp or None in p90 else [sp[0], max(p90[1], sp[1])]


def constants_startup_spread(up) -> tuple[float, float]:
    """(P10, P90) multiples of the startup: measured on this host, or the targets' figures."""
    from reclaunch.planner.startup import startup_data

    s = startup_data()["spread"]
    measured = up is not None and any(st.name.endswith("(measured on this host)") for st in up.steps)
    return ((float(s["measured_p10"]), float(s["measured_p90"])) if measured
            else (float(s["p10"]), float(s["p90"])))


def budget_usd(cost, spot: bool) -> float | None:
    """The figure budget.max_usd is held to: the P90 of the headline (spot mean if spot)."""
    rng = cost.spot_total_usd_range if spot and cost.spot_total_usd is not None else cost.on_demand_total_usd_range
    if rng is not None:
        return rng[1]
    return cost.spot_total_usd if spot and cost.spot_total_usd is not None else cost.on_demand_total_usd
