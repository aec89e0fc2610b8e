"""What runs measured, as the plan's evidence: measurement records and their matching.

Pure. A record says: this job shape (target, instance, GPUs per node, nodes, model signature,
batch, precision, per-table sharding) trained at this many samples/s, measured then, by that
run. The CLI/runtime layer loads records from $RECLAUNCH_HOME (reclaunch.runtime.measurements)
and passes them in (PlanContext); the planner never reads files. The record type and its
validation are planner/records.py, re-exported here.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.records import Measurement


def model_signature(spec) -> str:
    """Hash of what makes two jobs the same training work: the model (preset, tables, dims,
    MLP, interaction), the optimizer and gradient accumulation. Not the name, the dataset size,
    checkpoints or the cloud: those do not change samples/s."""
    import json   # a plan without measured runs never needs it: kept off the start-up path

    doc = {"model": spec.model.model_dump(mode="json"), "optimizer": spec.job.optimizer,
           "grad_accumulation": spec.job.grad_accumulation}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def sharding_of(sharding) -> dict[str, str]:
    """table -> sharding type of a plan's per-table Sharding (or {} without one)."""
    return {t.name: t.sharding_type for t in sharding.tables} if sharding is not None else {}


def key_for(spec, *, cloud: str, instance: str | None, gpus_per_node: int, nodes: int,
            sharding: dict[str, str], host_id: str | None = None) -> dict[str, Any]:
    """The key a plan (or a run of it) is known by. cloud: local has no instance type: the
    host's identity stands in (a laptop's figure says nothing of another's)."""
    return {"cloud": cloud, "instance": instance or (f"host:{host_id}" if host_id else "host:unknown"),
            "gpus_per_node": int(gpus_per_node), "nodes": int(nodes),
            "model_signature": model_signature(spec), "batch_size": int(spec.job.batch_size),
            "precision": spec.job.precision, "sharding": dict(sorted(sharding.items()))}


def match(records, key: dict[str, Any]) -> Measurement | None:
    """The newest record whose key equals `key`, else None."""
    hits = matches(records, key)
    return max(hits, key=lambda r: r.measured_at) if hits else None


# How far an imported record may move a plan from the model: the model's own error spans
# 0.68-1.58x of published runs (planner.yaml perf.fit, leave-one-source-out), and a local plan's
# is fitted to this host (`reclaunch calibrate`), so a teammate's record 4x or more off it is
# likelier another job, a unit slip or a forgery than a better figure. Beyond it the plan
# prices at the model and says so; this machine's own runs always count.
IMPORT_FACTOR = 4.0


def too_far(hit, model: float) -> str | None:
    """Why an imported record is not priced from (None: it may be)."""
    if not hit.source.startswith("import") or not model or model <= 0:
        return None
    ratio = hit.samples_per_s / model
    if 1 / IMPORT_FACTOR <= ratio <= IMPORT_FACTOR:
        return None
    return (f"{hit.source}: run {hit.run} measured {hit.samples_per_s:,.0f} samples/s, "
            f"{ratio:.3g}x the model's {model:,.0f}: more than the {IMPORT_FACTOR:g}x an imported "
            "record may move a plan, so it is priced at the model (a run of your own counts)")


def matches(records, key: dict[str, Any]) -> list[Measurement]:
    """Every record of this job shape, oldest first."""
    return sorted((r for r in records or () if r.key() == key), key=lambda r: r.measured_at)


# A run is clean when nothing but the job shaped its rate: no reclaim or restart during it, a
# steady rate (per-interval P90/P10 within STEADY), and a host not busier than its cores
# (cloud: local). Two back-to-back local demos on a loaded 2-core VM differed 1.34x
# (planner.yaml perf.measured_band): a spread past that is the run's conditions, not the job.
STEADY = 1.35
MAX_LOAD_PER_CORE = 1.5


def why_not_clean(r: Measurement) -> str | None:
    if r.reclaims:
        return f"{r.reclaims} reclaim(s) during the run"
    if r.rate_spread and r.rate_spread > STEADY:
        return f"unsteady rate (interval P90/P10 {r.rate_spread:.2f})"
    if r.load_per_core is not None and r.load_per_core > MAX_LOAD_PER_CORE:
        return f"host loaded ({r.load_per_core:.1f} per core)"
    return None


class Weighed(NamedTuple):
    """What the measured runs of one shape say, weighed by their conditions."""

    runs: tuple[Measurement, ...]        # every run of the shape, oldest first
    clean: tuple[Measurement, ...]       # those that may price the plan
    samples_per_s: float | None          # median of the clean runs, else None
    spread: tuple[float, float] | None   # (P10, P90) of clean runs / their median; None below 2
    excluded: tuple[str, ...]            # "run: why" for each run left out


def weigh(hits: list[Measurement]) -> Weighed:
    clean, out = [], []
    for r in hits:
        why = why_not_clean(r)
        (out.append(f"{r.run} ({r.measured_at[:10]}): {why}") if why else clean.append(r))
    rates = sorted(r.samples_per_s for r in clean)
    med = None
    spread = None
    if rates:
        n = len(rates)
        med = rates[n // 2] if n % 2 else (rates[n // 2 - 1] + rates[n // 2]) / 2
        if n >= 2:
            q = lambda f: rates[round(f * (n - 1))]  # noqa: E731
            spread = (q(0.1) / med, q(0.9) / med)
    return Weighed(tuple(hits), tuple(clean), med, spread, tuple(out))


# A NamedTuple, not a frozen dataclass: an immutable value that costs a quarter to create at
# import (issue 25), hashed and compared field by field just the same.
class PlanContext(NamedTuple):
    """What the planner is told about the world outside the spec (the CLI loads it).

    measurements: records of earlier runs; host: this machine's calibration (HostCalibration,
    planner.calibration) when valid for it, and host_note saying why not when absent; host_id: this
    machine's identity (keys cloud: local records); preflight: `up --preflight` will run;
    workdir: the packed job.workdir (planner/workdir.py WorkdirPack), None without one."""

    measurements: tuple[Measurement, ...] = ()
    host: Any = None
    host_id: str | None = None
    host_note: str | None = None
    preflight: bool = False
    workdir: Any = None


def __getattr__(name: str):
    # The record type and its strict validation (planner/records.py) load on first use: a
    # `plan` with no records on disk never builds one.
    if name in ("Measurement", "RecordError", "from_dict", "VERSION", "PARTS", "KEY_FIELDS"):
        from reclaunch.planner import records

        return getattr(records, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
