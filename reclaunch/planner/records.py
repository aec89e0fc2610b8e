"""A measurement record (reclaunch.planner.measured) and its strict validation.

Apart from measured.py so that a `plan` with no records on disk does not build the record
type; measured re-exports every name here but the private ones.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

VERSION = 1
PARTS = ("step_s", "data_wait_s", "fwd_bwd_s", "optimizer_s", "comm_s")
# What a key is made of: a record applies to a plan only when every one of these agrees.
KEY_FIELDS = ("cloud", "instance", "gpus_per_node", "nodes", "model_signature", "batch_size",
              "precision", "sharding")
_TEXT = re.compile(r"^[\w .,:;/@+()=\[\]#-]{1,200}$")
# Plausibility bounds (as the price overlay bounds its rows): a figure outside them is a unit
# slip, a broken writer or a forgery, never a run. The fastest published figure in recsys.md
# is 16.5M samples/s (DLRM, 8 x A100-80GB, DeepLearningExamples); 1e9 is 60x past it.
MAX_SAMPLES_PER_S = 1e9
MAX_STEP_S = 86_400.0            # one step longer than a day is no rate
MAX_STEPS, MAX_INTERVALS, MAX_TABLES = 10**12, 10**9, 4096
EARLIEST = datetime(2000, 1, 1, tzinfo=timezone.utc)
_PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
_SHARDINGS = ("data_parallel", "table_wise", "row_wise", "column_wise", "table_row_wise")


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
    # The run's conditions (planner/measured.py weighs a run by them): reclaims or restarts
    # during it (None: not known), the P90/P10 of its per-interval rates (1.0 = steady, 0 =
    # not known), the host's load per core at its end (cloud: local; None: not read).
    reclaims: int | None = None
    rate_spread: float = 0.0
    load_per_core: float | None = None
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


def from_dict(d: Any, *, not_after: datetime | None = None) -> Measurement:
    """Strict: every field present, typed and in range; unknown fields refused. not_after:
    the latest plausible measured_at (the caller's clock; None: not checked)."""
    if not isinstance(d, dict):
        raise RecordError("a record must be an object")
    known = {f for f in Measurement.__dataclass_fields__}
    extra = sorted(set(d) - known)
    if extra:
        raise RecordError(f"{extra[0]}: unknown field")
    if d.get("version", VERSION) != VERSION:
        raise RecordError(f"version: {d.get('version')!r} is not {VERSION}")
    text = lambda v: bool(_TEXT.match(v))  # noqa: E731
    rate = lambda v: math.isfinite(v) and 0 < v <= MAX_SAMPLES_PER_S  # noqa: E731
    when = lambda v: when_of(v) is not None and EARLIEST <= when_of(v) <= (not_after or when_of(v))  # noqa: E731
    out = dict(
        cloud=_need(d, "cloud", (str,), lambda v: bool(re.match(r"^[a-z][a-z0-9-]{0,31}$", v)), "not a target name"),
        instance=_need(d, "instance", (str,), text, "not a plain name"),
        gpus_per_node=_need(d, "gpus_per_node", (int,), lambda v: 1 <= v <= 64),
        nodes=_need(d, "nodes", (int,), lambda v: 1 <= v <= 10_000),
        model_signature=_need(d, "model_signature", (str,),
                              lambda v: bool(re.match(r"^sha256:[0-9a-f]{16}$", v)), "not sha256:<16 hex>"),
        batch_size=_need(d, "batch_size", (int,), lambda v: 1 <= v <= 1 << 24),
        precision=_need(d, "precision", (str,), lambda v: v in _PRECISIONS, "unknown precision"),
        sharding=_need(d, "sharding", (dict,), lambda v: len(v) <= MAX_TABLES),
        samples_per_s=float(_need(d, "samples_per_s", (int, float), rate,
                                  f"must be a number of samples/s above 0, at most {MAX_SAMPLES_PER_S:g}")),
        measured_at=_need(d, "measured_at", (str,), when, "not an ISO 8601 time from 2000 until now"),
        run=_need(d, "run", (str,), text, "not a plain name"),
        source=_need(d, "source", (str,), text, "not plain text") if "source" in d else "run",
        steps=_need(d, "steps", (int,), lambda v: 0 <= v <= MAX_STEPS) if "steps" in d else 0,
        intervals=_need(d, "intervals", (int,), lambda v: 0 <= v <= MAX_INTERVALS) if "intervals" in d else 0,
        step=_need(d, "step", (dict,), lambda v: len(v) <= len(PARTS)) if "step" in d else {},
        reclaims=(None if d.get("reclaims") is None else
                  _need(d, "reclaims", (int,), lambda v: 0 <= v <= 1_000_000)),
        rate_spread=(float(_need(d, "rate_spread", (int, float), lambda v: math.isfinite(v) and 0 <= v <= 1e6))
                     if "rate_spread" in d else 0.0),
        load_per_core=(None if d.get("load_per_core") is None else
                       float(_need(d, "load_per_core", (int, float), lambda v: math.isfinite(v) and 0 <= v <= 1e4))))
    for t, kind in out["sharding"].items():
        if not isinstance(t, str) or not text(t) or kind not in _SHARDINGS:
            raise RecordError(f"sharding.{t}: {kind!r} is not a sharding type")
    for k, v in out["step"].items():
        if k not in PARTS:
            raise RecordError(f"step.{k}: unknown part (one of {', '.join(PARTS)})")
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))
                              or not math.isfinite(v) or not 0 <= v <= MAX_STEP_S):
            raise RecordError(f"step.{k}: must be null or seconds from 0 to {MAX_STEP_S:g}")
    return Measurement(**out)


def when_of(v: str) -> datetime | None:
    """An ISO 8601 time as an aware datetime (no zone: UTC), or None."""
    try:
        t = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)
