"""How sure the plan is: a P10-P90 range from the calibration residuals.

bench/bench_calibration.py predicts every published result in data/calibration.yaml with the
constants fitted WITHOUT that result's source and stores the quantiles of predicted/published
in planner.yaml (perf.fit: ratio_p10, ratio_p90, with the fit date). A new job's true figure is
taken to be the point estimate divided by a ratio drawn from that spread:

    samples/s  [point / ratio_p90, point / ratio_p10]      (P10, P90)
    hours      [point x ratio_p10, point x ratio_p90]
    cost       the whole-job USD scale with the hours (instances, control plane and storage are
               all billed by the hour), so the same factors apply.

`budget.max_usd` is checked against the P90 cost. cloud: local has no range: the GPU
calibration says nothing about a CPU rehearsal.
"""

from __future__ import annotations

from reclaunch.planner.constants import constants


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


def scaled(point: float | None, measured: bool = False) -> list[float] | None:
    """[P10, P90] of a figure proportional to the job's hours (hours, USD)."""
    if point is None:
        return None
    lo, hi = ratios(measured)
    return [point * lo, point * hi]


def apply(plan) -> None:
    """Fill the plan's ranges (Plan.throughput_range, duration_hours_range, Cost *_range)."""
    if plan.instance_type is None:
        return
    measured = (plan.throughput_basis or {}).get("kind") == "measured"
    plan.throughput_range = throughput_range(plan.throughput_samples_per_second, measured)
    plan.duration_hours_range = scaled(plan.duration_hours, measured)
    plan.cost.on_demand_total_usd_range = scaled(plan.cost.on_demand_total_usd, measured)
    plan.cost.spot_total_usd_range = scaled(plan.cost.spot_total_usd, measured)


def budget_usd(cost, spot: bool) -> float | None:
    """The figure budget.max_usd is held to: the P90 of the headline (spot mean if spot)."""
    rng = cost.spot_total_usd_range if spot and cost.spot_total_usd is not None else cost.on_demand_total_usd_range
    if rng is not None:
        return rng[1]
    return cost.spot_total_usd if spot and cost.spot_total_usd is not None else cost.on_demand_total_usd
