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
    w = None
    if ctx.measurements:   # the key hashes the model's JSON dump (~5 M instructions cold): only
        key = meas.key_for(spec, cloud=cloud, instance=instance, gpus_per_node=gpus_per_node,
                           nodes=nodes, sharding=meas.sharding_of(sharding), host_id=ctx.host_id)
        hits = meas.matches(ctx.measurements, key)   # against records, when there are any
        # Against a model with a basis (published runs, this host's calibration); the
        # uncalibrated local model is assumptions, which any record of this host beats.
        if hits and not (local and ctx.host is None):
            far = [(h, why) for h in hits if (why := meas.too_far(h, throughput))]
            notes.extend(why for _, why in far[-1:])
            hits = [h for h in hits if all(h is not f for f, _ in far)]
        w = meas.weigh(hits) if hits else None
    basis = {"kind": "model", "source": cal_line or "step-time model (planner.yaml perf)",
             "measured_at": ctx.host.measured_at if local and ctx.host is not None else None}
    priced = throughput
    if w is not None and w.samples_per_s is not None:
        # Clean runs of this very shape price the plan: their median, their spread beside it.
        last = w.clean[-1]
        src = "run" if last.source == "run" else f"{last.source}: run"
        basis = {"kind": "measured", "source": f"{len(w.clean)} clean run(s) of {len(w.runs)}, "
                 f"median; newest {src} {last.run} ({last.steps} steps, {last.intervals} intervals)",
                 "measured_at": last.measured_at, "samples_per_s": w.samples_per_s,
                 "model_samples_per_s": throughput, "runs": len(w.runs), "clean_runs": len(w.clean),
                 "spread": list(w.spread) if w.spread else None, "excluded": list(w.excluded),
                 "ratio_measured_to_model": w.samples_per_s / throughput if throughput else None}
        priced = w.samples_per_s
    elif w is not None:
        # Runs with reclaims, an unsteady rate or a loaded host do not replace the model alone:
        # the model prices the plan, the runs stand beside it and widen its range.
        rates = sorted(r.samples_per_s for r in w.runs)
        seen = rates[len(rates) // 2]
        basis["measured_runs"] = {"runs": len(w.runs), "samples_per_s": seen,
                                  "excluded": list(w.excluded)}
        notes.append(f"{len(w.runs)} measured run(s) of this shape, none clean ({w.excluded[-1]}"
                     f"{'; ...' if len(w.excluded) > 1 else ''}): priced by the model, "
                     f"the runs' {seen:,.0f} samples/s widen its range")
    st = timeline(spec, cloud, nodes, preflight=ctx.preflight,
                  measured_first_step_s=ctx.host.first_step_s if local and ctx.host is not None else None,
                  measured_at=ctx.host.measured_at[:10] if local and ctx.host is not None else None,
                  workdir=ctx.workdir)
    return Evidence(step=step, throughput=priced, throughput_model=throughput, basis=basis,
                    startup=st, notes=notes, calibration=cal_line)
