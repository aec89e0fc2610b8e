"""One node as its kubelet will report it, from the instance's nominal figures (pure).

    n = node_model("aws", "p5.48xlarge", vcpus=192, ram_gib=2048)
    n.capacity_memory       # what `kubectl describe node` shows as capacity (the kernel's MemTotal)
    n.allocatable()         # capacity less kube-reserved, the hard eviction threshold, hugepages
    n.for_pods(daemonsets)  # allocatable less the requests of the DaemonSets on the node

Every step is data in the cloud's facts (`allocatable` in reclaunch/providers/<cloud>/facts.py,
each with its source); this module only evaluates it, so no code names a cloud:
- nominal RAM -> capacity: the kernel never reports the RAM an instance is sold with (page
  structs are 1/64 of it; firmware, the crash kernel and the hypervisor take more). The facts'
  `capacity_overhead` (a fixed part plus a share of the nominal RAM) is set at or above every
  measured node figure of that cloud in catalog/data/node_figures.csv, which a test holds it
  to. A target that declares none gets Karpenter's default VM_MEMORY_OVERHEAD_PERCENT, 7.5%.
- capacity -> allocatable: the vendor's kube-reserved formula (tiers of cores, tiers of memory,
  or a per-pod memory reserve over the node's max pods) and the eviction threshold.
- hugepages the node pre-allocates come off allocatable memory (kubelet's node allocatable):
  the stacks pass the pool's pages: what the fabric's node image reserves at boot
  (`boot_hugepages`, from the fabric's facts), or more where the job's pods request more.
- DaemonSets: their requests come from k8s/addons.yaml; the caller decides which run on the node.
Every step errs low: when a figure is uncertain the node is modelled smaller, so a pod that the
check says fits a model also fits the real node ("may not fit" is the safe mistake).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping

from reclaunch import clouds

MIB = 2**20
GIB = 2**30
# aws/karpenter-provider-aws: VM_MEMORY_OVERHEAD_PERCENT defaults to 0.075 (the share of an
# instance's memory its kubelet is assumed not to report), for a target with no measured figure.
DEFAULT_CAPACITY_OVERHEAD = {"fixed_mib": 0, "fraction": Fraction(75, 1000)}


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
class NodeModel:
    cloud: str
    instance_type: str
    cpu: Fraction                   # cores the kubelet reports (the instance's vCPUs)
    nominal_memory: Fraction        # bytes the instance is sold with
    capacity_memory: Fraction       # bytes the kubelet reports (modelled MemTotal)
    reserved_cpu: Fraction          # kube-reserved cores
    reserved_memory: Fraction       # kube-reserved bytes
    eviction_memory: Fraction       # hard eviction threshold, bytes
    max_pods: int | None
    hugepages: Mapping[str, int] = field(default_factory=dict)   # resource -> bytes
    source: str = ""

    def allocatable(self) -> dict[str, Fraction]:
        """What the kubelet advertises as allocatable (what an autoscaler template must say)."""
        out = {"cpu": self.cpu - self.reserved_cpu,
               "memory": (self.capacity_memory - self.reserved_memory - self.eviction_memory
                          - sum(self.hugepages.values()))}
        out.update({k: Fraction(v) for k, v in self.hugepages.items()})
        return out

    def for_pods(self, daemonsets: Mapping[str, Fraction] | None = None) -> dict[str, Fraction]:
        """Allocatable less what the node's DaemonSets request: what our pods may request."""
        out = self.allocatable()
        for k, v in (daemonsets or {}).items():
            if k in out:
                out[k] -= Fraction(v)
        return out


def _max_pods(r: Mapping[str, Any], instance_type: str) -> int | None:
    return dict(r.get("max_pods_by_instance") or {}).get(instance_type, r.get("max_pods"))


def node_model(cloud: str, instance_type: str, vcpus: int, ram_gib: float,
               hugepages: Mapping[str, int] | None = None) -> NodeModel:
    """A node of `instance_type` (`vcpus`, `ram_gib` nominal) on `cloud`'s managed Kubernetes,
    with `hugepages` ({resource: bytes}) pre-allocated."""
    r = clouds.get(cloud).allocatable or {}
    cores = Fraction(vcpus)
    nominal = Fraction(ram_gib).limit_denominator(1024) * GIB
    over = r.get("capacity_overhead") or DEFAULT_CAPACITY_OVERHEAD
    capacity = nominal * (1 - Fraction(over["fraction"])) - Fraction(over["fixed_mib"]) * MIB
    if "cpu_tiers" in r:
        cpu_reserved = _tiered(cores, r["cpu_tiers"])
    elif "cpu_points" in r:
        cpu_reserved = _points(cores, r["cpu_points"]) / 1000
    else:
        cpu_reserved = Fraction(0)
    pods = _max_pods(r, instance_type)
    if "memory_tiers" in r:   # reserved by how much memory the node has (of its capacity)
        mem_reserved = _tiered(capacity / GIB, r["memory_tiers"]) * GIB
    elif "per_pod_mib" in r:  # reserved by how many pods it may run
        mem_reserved = Fraction(r["base_mib"] + r["per_pod_mib"] * pods) * MIB
        if "memory_cap_fraction" in r:
            mem_reserved = min(mem_reserved, capacity * Fraction(r["memory_cap_fraction"]))
    else:
        mem_reserved = Fraction(0)
    return NodeModel(cloud=cloud, instance_type=instance_type, cpu=cores, nominal_memory=nominal,
                     capacity_memory=capacity, reserved_cpu=cpu_reserved,
                     reserved_memory=mem_reserved,
                     eviction_memory=Fraction(r.get("eviction_mib", 0)) * MIB, max_pods=pods,
                     hugepages=dict(hugepages or {}), source=str(r.get("source", "")))


def boot_hugepages(rule: Mapping[str, Any], vcpus: int) -> dict[str, int]:
    """{resource: bytes} a node of `vcpus` reserves at boot under a fabric's `boot_hugepages`
    rule (reclaunch/clouds.py FabricFacts); {} for a fabric that reserves none."""
    if not rule:
        return {}
    pages = int(rule["per_vcpu"]) * int(vcpus) + int(rule.get("extra", 0))
    return {str(rule["resource"]): pages * int(rule["page_bytes"])}


def system_shape(instance_type: str) -> tuple[int, float] | None:
    """(vcpus, GiB) of a system-pool machine a stack uses (the facts' system_shapes)."""
    for f in clouds.all_facts():
        if instance_type in f.system_shapes:
            return f.system_shapes[instance_type]
    return None
