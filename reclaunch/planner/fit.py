"""Fit the few free perf constants to the published results (data/calibration.yaml).

Least squares on log(predicted / published) over FREE (6 constants, each bounded to its
physical range), Levenberg-Marquardt with a numeric Jacobian in log-parameter space; numpy
only, imported here and nowhere on the `plan` path. `leave_one_source_out` refits without each
source and predicts it: the out-of-sample error a reader should trust, and the residuals whose
quantiles `plan` turns into its P10-P90 range (planner/uncertainty.py). `bench/bench_calibration.py
--write` stores the fit in planner.yaml.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

from reclaunch.planner.constants import constants

# (path in planner.yaml perf, lower bound, upper bound): the physical range each may take.
FREE = (
    (("step_overhead_seconds",), 1e-5, 5e-3),
    # per kernel in eager mode; its upper bound also absorbs unfused per-table ops (TF lookups)
    (("kernel_launch_seconds", "eager"), 2e-6, 5e-5),
    (("gemm_efficiency",), 0.2, 0.95),
    (("gemm_half_precision_factor",), 0.4, 1.0),
    (("hbm_efficiency",), 0.3, 0.95),
    (("alltoall_efficiency_inter",), 0.1, 1.0),
)


def _get(path):
    d = constants()["perf"]
    for k in path[:-1]:
        d = d[k]
    return d, path[-1]


def current() -> list[float]:
    return [float(_get(p)[0][_get(p)[1]]) for p, _, _ in FREE]


@contextmanager
def using(values: list[float]):
    """Temporarily run the planner with `values` for FREE (the constants dict is shared)."""
    old = current()
    try:
        for (p, _, _), v in zip(FREE, values):
            d, k = _get(p)
            d[k] = float(v)
        yield
    finally:
        for (p, _, _), v in zip(FREE, old):
            d, k = _get(p)
            d[k] = v


def log_ratios(rows, values: list[float] | None = None, catalog=None) -> list[float]:
    from reclaunch.catalog import bundled_catalog
    from reclaunch.planner.published import predict

    cat = catalog or bundled_catalog()
    with using(values if values is not None else current()):
        return [math.log(predict(r, cat)[1]) for r in rows]


def fit(rows, start: list[float] | None = None, iterations: int = 12, catalog=None) -> list[float]:
    """Levenberg-Marquardt on log(predicted/published), in log-parameter space, within bounds."""
    import numpy as np

    lo = np.log([b[1] for b in FREE])
    hi = np.log([b[2] for b in FREE])
    x = np.clip(np.log(start or current()), lo, hi)
    lam = 1e-2

    def res(x):
        return np.array(log_ratios(rows, list(np.exp(x)), catalog))

    r = res(x)
    for _ in range(iterations):
        h = 1e-3
        J = np.stack([(res(x + h * e) - r) / h for e in np.eye(len(x))], axis=1)
        A = J.T @ J
        g = J.T @ r
        improved = False
        for _ in range(6):
            step = -np.linalg.solve(A + lam * np.diag(np.diag(A) + 1e-9), g)
            xn = np.clip(x + step, lo, hi)
            rn = res(xn)
            if rn @ rn < r @ r:
                x, r, lam, improved = xn, rn, lam / 3, True
                break
            lam *= 4
        if not improved or float(np.abs(step).max()) < 1e-4:
            break
    return [float(v) for v in np.exp(x)]


def leave_one_source_out(rows, start: list[float], iterations: int = 6, catalog=None) -> dict[str, list[float]]:
    """{source: out-of-sample log ratios of its rows} with the constants fitted on the others."""
    from reclaunch.planner.published import source_of

    out: dict[str, list[float]] = {}
    for src in sorted({source_of(r) for r in rows}):
        train = [r for r in rows if source_of(r) != src]
        test = [r for r in rows if source_of(r) == src]
        vals = fit(train, start, iterations, catalog)
        out[src] = log_ratios(test, vals, catalog)
    return out
