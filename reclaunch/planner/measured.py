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
    hits = [r for r in records or () if r.key() == key]
    return max(hits, key=lambda r: r.measured_at) if hits else None


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
