"""What the plan learns from outside the model: this host's calibration (cloud: local), the
measured runs of the same job shape, and the startup timeline. Pure: everything comes in
through a PlanContext (reclaunch.planner.measured) that the CLI/runtime layer loaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from reclaunch.planner import measured as meas
from reclaunch.planner.startup import Startup, timeline


# eq/repr off: none compares or prints these (issue 25: fewer methods to create at import)
@dataclass(eq=False, repr=False)
class Evidence:
    """What gather() found: the step and throughput to price, and where they come from."""

    step: Any                       # StepTime, calibrated on this host where that applies
    throughput: float               # what the job is priced with
    throughput_model: float         # the model's figure (calibrated for local)
    basis: dict[str, Any]           # throughput_basis: {kind, source, measured_at, ...}
    startup: Startup
    notes: list[str] = field(default_factory=list)   # what the plan says about its figures
    calibration: str | None = None


def gather(spec, *, cloud: str, instance: str | None, gpus_per_node: int, nodes: int,
           sharding, step, throughput: float, context: meas.PlanContext | None,
           modelled: Callable[[Any], float]) -> Evidence:
    """modelled(spec) -> the uncalibrated modelled step seconds of a reference spec (for the
    host fit); called only for cloud: local with a calibration."""
    ctx = context or meas.PlanContext()
    notes: list[str] = []
    cal_line = None
    local = instance is None
    world = nodes * gpus_per_node
    if local and ctx.host is not None:
        from reclaunch.planner import calibration as hostmod   # cloud: local only: not on every plan

        f = hostmod.fit(ctx.host, modelled)
        step = hostmod.calibrated(step, f)
        throughput = world * spec.job.batch_size / step.total_seconds
        cal_line = hostmod.describe(ctx.host, f)
    elif local:
        cal_line = (ctx.host_note or "uncalibrated: planner.yaml `local:` assumptions, not this "
                    "host") + "; run `reclaunch calibrate` to measure this host"
        notes.append(f"cloud: local throughput is {cal_line}")
    hit = None
    if ctx.measurements:   # the key hashes the model's JSON dump (imports json): only
        key = meas.key_for(spec, cloud=cloud, instance=instance, gpus_per_node=gpus_per_node,
                           nodes=nodes, sharding=meas.sharding_of(sharding), host_id=ctx.host_id)
        hit = meas.match(ctx.measurements, key)   # against records, when there are any
    if hit is not None:
        src = "run" if hit.source == "run" else f"{hit.source}: run"
        basis = {"kind": "measured", "source": f"{src} {hit.run} ({hit.steps} steps, "
                 f"{hit.intervals} intervals)", "measured_at": hit.measured_at,
                 "samples_per_s": hit.samples_per_s, "model_samples_per_s": throughput,
                 "ratio_measured_to_model": hit.samples_per_s / throughput if throughput else None}
        priced = hit.samples_per_s
    else:
        basis = {"kind": "model", "source": cal_line or "step-time model (planner.yaml perf)",
                 "measured_at": ctx.host.measured_at if local and ctx.host is not None else None}
        priced = throughput
    st = timeline(spec, cloud, nodes, preflight=ctx.preflight,
                  measured_first_step_s=ctx.host.first_step_s if local and ctx.host is not None else None,
                  measured_at=ctx.host.measured_at[:10] if local and ctx.host is not None else None,
                  workdir=ctx.workdir)
    return Evidence(step=step, throughput=priced, throughput_model=throughput, basis=basis,
                    startup=st, notes=notes, calibration=cal_line)
