"""What a storage kind really creates (and bills) for a `storage.size`, after the service's
minimum and steps. The plan prices this, not the number the user wrote; the stacks round the
same way (tests/render/test_storage_size.py checks both agree). Pure data + arithmetic.

Sources (read 2026-12-01):
- fsx-lustre: docs.aws.amazon.com/fsx/latest/LustreGuide/managing-storage-capacity.html —
  SSD PERSISTENT_2 file systems are 1.2 TiB, 2.4 TiB, then increments of 2.4 TiB.
- filestore: cloud.google.com/filestore/docs/service-tiers — zonal (1-9.75 TiB range) from
  1 TiB in 256 GiB steps, up to 100 TiB.
- azure-lustre: learn.microsoft.com/azure/azure-managed-lustre/amlfs-overview — the stack's
  AMLFS-Durable-Premium-250 sells 8 TiB steps up to 128 TiB (stacks/azure/storage.py).
- azure-files: learn.microsoft.com/azure/storage/files/understanding-billing — premium (SSD,
  NFS) shares are provisioned from 100 GiB in 1 GiB steps and billed as provisioned.
- efs: aws.amazon.com/efs/pricing — elastic, billed per GiB stored; no provisioned size (the
  PV's 1 TiB request is a label). Priced as storage.size of data stored.
- pvc: EBS gp3 / pd-balanced / Azure managed disk: provisioned in 1 GiB steps
  (docs.aws.amazon.com/ebs/latest/userguide/volume-types.html: gp3 1 GiB - 16 TiB).
"""

from __future__ import annotations

import math
from typing import NamedTuple

GIB = 1 << 30


class Steps(NamedTuple):
    minimum_gib: int
    step_gib: int
    maximum_gib: int | None = None
    first_step_gib: int | None = None   # FSx: one size (1200) below the regular steps


STEPS: dict[str, Steps] = {
    "fsx-lustre": Steps(2400, 2400, None, first_step_gib=1200),
    "filestore": Steps(1024, 256, 102400),
    "azure-lustre": Steps(8 * 1024, 8 * 1024, 128 * 1024),
    "azure-files": Steps(100, 1),
    "pvc": Steps(1, 1),
    "efs": Steps(1, 1),
}


def billed_gib(kind: str, size_bytes: int | None) -> float:
    """GiB the service creates and bills for `size_bytes` (0 for kinds reclaunch does not size)."""
    rule = STEPS.get(kind)
    if rule is None or not size_bytes and kind == "efs":
        return 0.0
    want = math.ceil((size_bytes or 0) / GIB - 1e-9)
    if rule.first_step_gib:
        # AWS calls 1200 GiB "1.2 TiB" and 2400 GiB "2.4 TiB" (TiB of 1000 GiB): a size written
        # that way means that step, not the next one (2.4TiB = 2457.6 GiB would buy 4800).
        aws_tib = (size_bytes or 0) / GIB / 1.024 / 1000     # in AWS's TiB
        if aws_tib <= rule.first_step_gib / 1000 + 1e-6:
            return float(rule.first_step_gib)
        steps = math.ceil(aws_tib * 1000 / rule.step_gib - 1e-6)
        return float(max(rule.minimum_gib, steps * rule.step_gib))
    gib = max(rule.minimum_gib, math.ceil(want / rule.step_gib - 1e-9) * rule.step_gib)
    return float(min(gib, rule.maximum_gib) if rule.maximum_gib else gib)


def rounding_note(kind: str, size_bytes: int | None) -> str | None:
    """One line when what is created differs from what was asked, for the plan's warnings."""
    got = billed_gib(kind, size_bytes)
    asked = (size_bytes or 0) / GIB
    # Within 2.4% is AWS's own naming (its "2.4 TiB" is 2400 GiB), not a surprise worth a line.
    if not got or abs(got - asked) < 0.5 or (kind == "fsx-lustre" and got <= asked <= got * 1.024 + 1e-6):
        return None
    return (f"storage.size {_gib(asked)} becomes {_gib(got)} of {kind} (what the service "
            f"creates and bills: its minimum and steps); the cost counts {_gib(got)}")


def _gib(v: float) -> str:
    return f"{v:,.0f} GiB" if v >= 10 else f"{v:.3g} GiB"
