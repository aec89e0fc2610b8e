"""cloud: local from this machine: the host calibration and how it corrects the model.

Pure. `reclaunch calibrate` (reclaunch.runtime.calibrate) runs the reference trainer on this
host at a few reference shapes (the same processes, gloo and kernels as `cloud: local`) and
hands the planner the measured step times. The planner fits two host constants by least
squares on those points:

    step(spec) = a + b x modelled_step(spec)

a = this host's fixed per-step cost the model does not see (Python, TorchRec's input dist,
gloo's per-collective latency on a loaded core), b = how much faster or slower this host runs
the modelled work than planner.yaml's `local:` constants assume. With the reference runs at
two batch sizes the two are told apart; the fit is re-done at plan time, so a changed model
(planner.yaml) is re-fitted to the same measurements, never mixed with an old fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable


@dataclass(frozen=True)
class Point:
    """One reference run of `reclaunch calibrate`: the job and its measured step."""

    spec_doc: dict[str, Any]        # the reference job, as a cluster.yaml document (cloud: local)
    step_s: float                   # measured median step seconds (RECLAUNCH_METRICS, warm-up dropped)
    samples_per_s: float | None = None


@dataclass(frozen=True)
class HostCalibration:
    """This host's calibration record: its identity, when, and the reference points."""

    host_id: str
    identity: dict[str, Any]
    measured_at: str
    points: tuple[Point, ...]
    first_step_s: float | None = None   # launch -> the trainer's first step, this host
    trainer: str = "examples/trainer/train.py"
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Fit:
    """measured = a + b x modelled, fitted over the calibration points."""

    a: float                        # seconds per step added
    b: float                        # multiplier on the modelled step
    residuals: tuple[float, ...]    # measured / fitted - 1, per point
    how: str


def reference_spec(doc: dict[str, Any]):
    import yaml

    from reclaunch.spec import parse_spec

    return parse_spec(yaml.safe_dump(doc, sort_keys=False), f"calibration:{doc.get('name', 'ref')}")


def fit(cal: HostCalibration, modelled: Callable[[Any], float]) -> Fit:
    """measured = a + b x modelled over the points (a >= 0, b > 0): the least-squares line when
    it is feasible, else whichever of (a, b = 1) and (a = 0, b) fits the points better (a
    loaded machine's points may not show the step growing with the batch); one point: a ratio."""
    xs = [modelled(reference_spec(p.spec_doc)) for p in cal.points]
    ys = [p.step_s for p in cal.points]
    n = len(xs)
    if n == 0:
        raise ValueError("a host calibration needs at least one point")
    # Candidates, best first when feasible: the line; the model's own scale plus the host's
    # fixed cost (b = 1: what a loaded machine's noisy points still show, when the step does
    # not visibly grow with the batch); a pure ratio (a = 0).
    cands = [(0.0, sum(ys) / max(sum(xs), 1e-12), "ratio")]
    offset = sum(y - x for x, y in zip(xs, ys)) / n
    if offset >= 0 and n >= 2:       # one point fits anything: keep it a plain ratio
        cands.append((offset, 1.0, "offset"))
    if n >= 2:
        mx, my = sum(xs) / n, sum(ys) / n
        sxx = sum((x - mx) ** 2 for x in xs)
        if sxx > 1e-18:
            slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
            icpt = my - slope * mx
            if slope > 0 and icpt >= 0:
                cands.append((icpt, slope, "line"))

    def err(c):
        return sum((y / (c[0] + c[1] * x) - 1.0) ** 2 for x, y in zip(xs, ys))
    a, b, how = min(reversed(cands), key=err)   # ties: the line, then the offset
    res = tuple(y / (a + b * x) - 1.0 for x, y in zip(xs, ys))
    return Fit(a=a, b=b, residuals=res, how=how)


def calibrated(step, f: Fit):
    """The modelled StepTime on this host: every part x b, the host's fixed cost a on top."""
    parts = {k: getattr(step, k) * f.b for k in ("embedding_seconds", "dense_compute_seconds",
                                                  "allreduce_seconds", "alltoall_seconds",
                                                  "exposed_comm_seconds")}
    return replace(step, **parts, total_seconds=f.a + f.b * step.total_seconds)


def describe(cal: HostCalibration, f: Fit) -> str:
    worst = max((abs(r) for r in f.residuals), default=0.0)
    ident = cal.identity
    return (f"calibrated on this host {cal.measured_at[:10]} ({ident.get('cpu_model', '?')}, "
            f"{ident.get('cores', '?')} cores, torch {ident.get('torch', '?')}): step = "
            f"{f.a * 1e3:.2f} ms + {f.b:.2f} x model, {len(cal.points)} reference batch sizes "
            f"(median of repeated runs), worst fit {worst:.0%}")
