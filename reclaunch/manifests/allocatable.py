"""Allocatable cpu/memory of a node: what the scheduler can hand to pods, per cloud.

Allocatable = capacity - kube/system reserved - hard eviction threshold - pre-allocated
hugepages (the kubelet reports hugepages apart from memory; which pools pre-allocate them is
the stack's NodePool.hugepages). Each cloud's reserve is data in its facts
(reclaunch/providers/<cloud>/facts.py), with its source and the month it was read; the
evaluator is generic (tiers, points, per-pod) so no code branches on a cloud name. A managed node's reserve depends on its
max-pods setting, which the stacks do not pin: we take the largest the cloud allows by
default, which makes the reserve an upper bound and allocatable a floor (safe for a
"does it fit" check).

DAEMONSET_ALLOWANCE covers the add-on DaemonSets every GPU node runs (CNI, kube-proxy,
device plugins, log/metrics agents). Their requests are not in k8s/addons.yaml, so this is
our margin, not a measurement: a pod that fits only without it is reported as not fitting.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Mapping

from reclaunch import clouds

DATE = "2026-11"
MIB = 2**20
GIB = 2**30

# Each cloud's reserve (its facts' `allocatable`, with source) and the shapes of the system-pool
# machines its stack uses (`system_shapes`; GPU shapes come from the catalog).
RESERVES: Mapping[str, Mapping[str, Any] | None] = clouds.PerCloud(lambda f: f.allocatable)


class _Shapes(Mapping[str, tuple[int, float]]):
    def _all(self) -> dict[str, tuple[int, float]]:
        return {k: v for f in clouds.all_facts() for k, v in f.system_shapes.items()}

    def __getitem__(self, key: str) -> tuple[int, float]:
        return self._all()[key]

    def __iter__(self):
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


SYSTEM_SHAPES: Mapping[str, tuple[int, float]] = _Shapes()

DAEMONSET_ALLOWANCE = MappingProxyType({"cpu": Fraction(1), "memory": Fraction(2 * GIB)})


def _tiered(total: Fraction, tiers) -> Fraction:
    out, lo = Fraction(0), Fraction(0)
    for hi, frac in tiers:
        top = total if hi is None else min(total, Fraction(hi))
        if top > lo:
            out += (top - lo) * frac
        if hi is None or total <= hi:
            break
        lo = Fraction(hi)
    return out


def _points(cores: Fraction, points) -> Fraction:
    """Millicores from a table of (cores, millicores), linear between and past the last."""
    (x0, y0) = points[0]
    if cores <= x0:
        return Fraction(y0)
    for (xa, ya), (xb, yb) in zip(points, points[1:]):
        if cores <= xb:
            return Fraction(ya) + (cores - xa) * Fraction(yb - ya, xb - xa)
    (xa, ya), (xb, yb) = points[-2], points[-1]
    return Fraction(yb) + (cores - xb) * Fraction(yb - ya, xb - xa)


@dataclass(frozen=True)
class Allocatable:
    cpu: Fraction                 # cores
    memory: Fraction              # bytes
    hugepages: Mapping[str, int]  # resource name -> bytes
    source: str

    def resources(self) -> dict[str, Fraction]:
        """What the node advertises to pods, with the DaemonSet allowance taken off."""
        out = {"cpu": self.cpu - DAEMONSET_ALLOWANCE["cpu"],
               "memory": self.memory - DAEMONSET_ALLOWANCE["memory"]}
        out.update({k: Fraction(v) for k, v in self.hugepages.items()})
        return out


def allocatable(cloud: str, vcpus: int, ram_gib: float,
                hugepages: Mapping[str, int] | None = None) -> Allocatable:
    """Allocatable cpu/memory for a node of `vcpus` and `ram_gib` on `cloud`'s managed k8s,
    with `hugepages` ({resource: bytes}, the stack's NodePool.hugepages) set aside."""
    r = RESERVES[cloud]
    cores = Fraction(vcpus)
    ram = Fraction(ram_gib).limit_denominator(1024) * GIB
    if "cpu_tiers" in r:
        cpu_reserved = _tiered(cores, r["cpu_tiers"])
    else:
        cpu_reserved = _points(cores, r["cpu_points"]) / 1000
    if "memory_tiers" in r:
        mem_reserved = _tiered(ram / GIB, r["memory_tiers"]) * GIB
    else:
        pods = next(n for limit, n in r["max_pods"] if limit is None or vcpus < limit)
        mem_reserved = Fraction(r["base_mib"] + r["per_pod_mib"] * pods) * MIB
        if "memory_cap_fraction" in r:
            mem_reserved = min(mem_reserved, ram * r["memory_cap_fraction"])
    huge = dict(hugepages or {})
    memory = ram - mem_reserved - r["eviction_mib"] * MIB - sum(huge.values())
    return Allocatable(cpu=cores - cpu_reserved, memory=memory, hugepages=huge,
                       source=r["source"])
