"""What runs measured, as the plan's evidence: measurement records and their matching.

Pure. A record says: this job shape (target, instance, GPUs per node, nodes, model signature,
batch, precision, per-table sharding) trained at this many samples/s, measured then, by that
run. The CLI/runtime layer loads records from $RECLAUNCH_HOME (reclaunch.runtime.measurements)
and passes them in (PlanContext); the planner never reads files.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

VERSION = 1
PARTS = ("step_s", "data_wait_s", "fwd_bwd_s", "optimizer_s", "comm_s")
# What a key is made of: a record applies to a plan only when every one of these agrees.
KEY_FIELDS = ("cloud", "instance", "gpus_per_node", "nodes", "model_signature", "batch_size",
              "precision", "sharding")
_TEXT = re.compile(r"^[\w .,:;/@+()=\[\]#-]{1,200}$")
_PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
_SHARDINGS = ("data_parallel", "table_wise", "row_wise", "column_wise", "table_row_wise")


def model_signature(spec) -> str:
    """Hash of what makes two jobs the same training work: the model (preset, tables, dims,
    MLP, interaction), the optimizer and gradient accumulation. Not the name, the dataset size,
    checkpoints or the cloud: those do not change samples/s."""
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


@dataclass(frozen=True)
class Measurement:
    """One measured run of a job shape (a record under $RECLAUNCH_HOME/measurements)."""

    cloud: str
    instance: str
    gpus_per_node: int
    nodes: int
    model_signature: str
    batch_size: int
    precision: str
    sharding: dict[str, str]
    samples_per_s: float
    measured_at: str                       # ISO 8601 UTC
    run: str                               # the cluster name that ran it
    source: str = "run"                    # "run" | "import FILE"
    steps: int = 0                         # optimizer steps the figure covers (last step seen)
    intervals: int = 0
    step: dict[str, float | None] = field(default_factory=dict)   # median per-step parts
    version: int = VERSION

    def key(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in KEY_FIELDS}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RecordError(ValueError):
    """A measurement record that does not validate: `field: problem`."""


def _need(d: dict, name: str, kinds, check=None, why: str = "") -> Any:
    if name not in d:
        raise RecordError(f"{name}: missing")
    v = d[name]
    if isinstance(v, bool) and bool not in kinds or not isinstance(v, kinds):
        raise RecordError(f"{name}: expected {'/'.join(k.__name__ for k in kinds)}, got {type(v).__name__}")
    if check is not None and not check(v):
        raise RecordError(f"{name}: {why or 'out of range'} ({v!r})")
    return v


def from_dict(d: Any) -> Measurement:
    """Strict: every field present, typed and in range; unknown fields refused."""
    if not isinstance(d, dict):
        raise RecordError("a record must be an object")
    known = {f for f in Measurement.__dataclass_fields__}
    extra = sorted(set(d) - known)
    if extra:
        raise RecordError(f"{extra[0]}: unknown field")
    if d.get("version", VERSION) != VERSION:
        raise RecordError(f"version: {d.get('version')!r} is not {VERSION}")
    text = lambda v: bool(_TEXT.match(v))  # noqa: E731
    pos = lambda v: math.isfinite(v) and v > 0  # noqa: E731
    out = dict(
        cloud=_need(d, "cloud", (str,), lambda v: bool(re.match(r"^[a-z][a-z0-9-]{0,31}$", v)), "not a target name"),
        instance=_need(d, "instance", (str,), text, "not a plain name"),
        gpus_per_node=_need(d, "gpus_per_node", (int,), lambda v: 1 <= v <= 64),
        nodes=_need(d, "nodes", (int,), lambda v: 1 <= v <= 10_000),
        model_signature=_need(d, "model_signature", (str,),
                              lambda v: bool(re.match(r"^sha256:[0-9a-f]{16}$", v)), "not sha256:<16 hex>"),
        batch_size=_need(d, "batch_size", (int,), lambda v: 1 <= v <= 1 << 24),
        precision=_need(d, "precision", (str,), lambda v: v in _PRECISIONS, "unknown precision"),
        sharding=_need(d, "sharding", (dict,)),
        samples_per_s=float(_need(d, "samples_per_s", (int, float), pos, "must be a positive number")),
        measured_at=_need(d, "measured_at", (str,), _iso, "not an ISO 8601 time"),
        run=_need(d, "run", (str,), text, "not a plain name"),
        source=_need(d, "source", (str,), text, "not plain text") if "source" in d else "run",
        steps=_need(d, "steps", (int,), lambda v: v >= 0) if "steps" in d else 0,
        intervals=_need(d, "intervals", (int,), lambda v: v >= 0) if "intervals" in d else 0,
        step=_need(d, "step", (dict,)) if "step" in d else {})
    for t, kind in out["sharding"].items():
        if not isinstance(t, str) or not text(t) or kind not in _SHARDINGS:
            raise RecordError(f"sharding.{t}: {kind!r} is not a sharding type")
    for k, v in out["step"].items():
        if k not in PARTS:
            raise RecordError(f"step.{k}: unknown part (one of {', '.join(PARTS)})")
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))
                              or not math.isfinite(v) or v < 0):
            raise RecordError(f"step.{k}: must be null or seconds >= 0")
    return Measurement(**out)


def _iso(v: str) -> bool:
    try:
        datetime.fromisoformat(v.replace("Z", "+00:00"))
        return True
    except ValueError:
        return False


def match(records, key: dict[str, Any]) -> Measurement | None:
    """The newest record whose key equals `key`, else None."""
    hits = [r for r in records or () if r.key() == key]
    return max(hits, key=lambda r: r.measured_at) if hits else None


@dataclass(frozen=True)
class PlanContext:
    """What the planner is told about the world outside the spec (the CLI loads it).

    measurements: records of earlier runs; host: this machine's calibration (HostCalibration,
    planner.calibration) when valid for it, and host_note saying why not when absent; host_id: this
    machine's identity (keys cloud: local records); preflight: `up --preflight` will run."""

    measurements: tuple[Measurement, ...] = ()
    host: Any = None
    host_id: str | None = None
    host_note: str | None = None
    preflight: bool = False
