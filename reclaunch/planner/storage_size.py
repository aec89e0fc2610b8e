"""What a storage kind really creates (and bills) for a `storage.size`, after the service's
minimum and steps. The plan prices this, not the number the user wrote; the stacks create
the same (they call billed_gib too). Pure arithmetic over each kind's record (its `steps`, in
its cloud's facts, with their sources)."""

from __future__ import annotations

import math

from reclaunch import clouds

GIB = 1 << 30
# A decimal-TiB service's "2.4 TiB" is 2400 GiB: within this factor of a step is its own
# naming, not a size the user asked beyond (1 TiB = 1.024 of them).
DECIMAL_TIB = 1.024


def billed_gib(kind: str, size_bytes: int | None) -> float:
    """GiB the service creates and bills for `size_bytes` (0 for kinds reclaunch does not size,
    and for an elastic kind given no size)."""
    rec = clouds.storage_kind(kind)
    steps = rec.steps
    if steps is None or not size_bytes and not rec.sized:
        return 0.0
    want = (size_bytes or 0) / GIB / (DECIMAL_TIB if steps.decimal_tib else 1)
    for i, (lo, step, hi) in enumerate(steps.tiers):
        gib = max(lo, math.ceil(want / step - 1e-9) * step)
        if hi is None:
            return float(gib)
        if gib <= hi or i + 1 == len(steps.tiers):
            return float(min(gib, hi))
    raise AssertionError("unreachable: the last tier returns")


def rounding_note(kind: str, size_bytes: int | None) -> str | None:
    """One line when what is created differs from what was asked, for the plan's warnings."""
    got = billed_gib(kind, size_bytes)
    asked = (size_bytes or 0) / GIB
    steps = clouds.storage_kind(kind).steps
    decimal = steps is not None and steps.decimal_tib
    if not got or abs(got - asked) < 0.5 or (decimal and got <= asked <= got * DECIMAL_TIB + 1e-6):
        return None
    return (f"storage.size {_gib(asked)} becomes {_gib(got)} of {kind} (what the service "
            f"creates and bills: its minimum and steps); the cost counts {_gib(got)}")


def _gib(v: float) -> str:
    return f"{v:,.0f} GiB" if v >= 10 else f"{v:.3g} GiB"
