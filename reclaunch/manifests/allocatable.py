"""Allocatable cpu/memory of a node: what the scheduler can hand to pods, per cloud.

Allocatable = capacity - kube/system reserved - hard eviction threshold - pre-allocated
hugepages (the kubelet reports hugepages apart from memory; which pools pre-allocate them is
the stack's NodePool.hugepages). Each cloud's reserve is data
below, with its source and the month it was read; the evaluator is generic (tiers, points,
per-pod) so no code branches on a cloud name. A managed node's reserve depends on its
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

DATE = "2026-11"
MIB = 2**20
GIB = 2**30

RESERVES: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "aws": MappingProxyType({
        "source": "awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go "
                  "(getCPUMillicoresToReserve; getMemoryMebibytesToReserve = 11*maxPods + 255 "
                  "MiB; evictionHard memory.available<100Mi); max pods <= 110 under 30 vCPUs, "
                  "<= 250 above (EKS managed node group default)",
        # (up to this many cores, fraction of a core reserved per core in the band)
        "cpu_tiers": ((1, Fraction(6, 100)), (2, Fraction(1, 100)), (4, Fraction(5, 1000)),
                      (None, Fraction(25, 10000))),
        "per_pod_mib": 11, "base_mib": 255, "max_pods": ((30, 110), (None, 250)),
        "eviction_mib": 100,
    }),
    "azure": MappingProxyType({
        "source": "learn.microsoft.com/azure/aks/node-resource-reservations (AKS >= 1.29: "
                  "kube-reserved CPU table; memory min(20 MB x max pods + 50 MB, 25%); "
                  "eviction memory.available<100Mi); max pods 250 (Azure CNI overlay default). "
                  "CPU above 64 cores extends the table's last slope (10m per core).",
        "cpu_points": ((1, 60), (2, 100), (4, 140), (8, 180), (16, 260), (32, 420), (64, 740)),
        "per_pod_mib": 20, "base_mib": 50, "max_pods": ((None, 250),),
        "memory_cap_fraction": Fraction(1, 4),
        "eviction_mib": 100,
    }),
    "gcp": MappingProxyType({
        "source": "cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes "
                  "(CPU 6/1/0.5/0.25%; memory 25% of the first 4 GiB, 20% of the next 4, 10% "
                  "of the next 8, 6% of the next 112, 2% above 128 GiB; eviction 100Mi)",
        "cpu_tiers": ((1, Fraction(6, 100)), (2, Fraction(1, 100)), (4, Fraction(5, 1000)),
                      (None, Fraction(25, 10000))),
        "memory_tiers": ((4, Fraction(25, 100)), (8, Fraction(20, 100)), (16, Fraction(10, 100)),
                         (128, Fraction(6, 100)), (None, Fraction(2, 100))),
        "eviction_mib": 100,
    }),
    # A cluster you bring: its offers carry the nodes' allocatable as read from the API
    # (providers/kubernetes/offers.py), from which the kubelet already took its reserves.
    "kubernetes": MappingProxyType({
        "source": "the node's status.allocatable, read from the cluster's API",
        "cpu_tiers": ((None, Fraction(0)),), "memory_tiers": ((None, Fraction(0)),),
        "eviction_mib": 0,
    }),
})

# Shapes of the system-pool machines the stacks use (GPU shapes come from the catalog).
# AWS EC2 instance types (m6i), Azure Dsv5 sizes, GCP E2 machine types; read 2026-11.
SYSTEM_SHAPES: Mapping[str, tuple[int, float]] = MappingProxyType({
    "m6i.large": (2, 8), "m6i.xlarge": (4, 16), "m6i.2xlarge": (8, 32),
    "Standard_D2s_v5": (2, 8), "Standard_D4s_v5": (4, 16), "Standard_D8s_v5": (8, 32),
    "e2-standard-2": (2, 8), "e2-standard-4": (4, 16), "e2-standard-8": (8, 32),
})

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
