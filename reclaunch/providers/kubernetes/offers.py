"""Nodes of a cluster you bring -> catalog offers the planner plans on (pure: values in and out).

One offer per node group (the managed offerings' pool label, else GPU product x count). The
GPU and the fabric come from the catalog row of the group's instance type where the catalog
knows it, else from the node labels (GPU feature discovery); `basis` says which, and the plan
shows it as the offer's source. The fabric is what the nodes advertise (nodes.fabric_signals):
a catalog p5 whose nodes show no EFA device is planned on ethernet, not on EFA.
Pricing: `kubernetes.price.usd_per_gpu_hour` when the spec gives it (0: already paid for),
else the catalog price of the instance type (the node's region where the catalog has it).
"""

from __future__ import annotations

import datetime as _dt
import difflib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reclaunch import clouds, host
from reclaunch.catalog import Catalog, Offer
from reclaunch.errors import PlanError, SpecError
from reclaunch.runtime.kube_nodes import (GKE_NIC_INFO, GKE_NORTH, GPU_MEMORY_MIB,
                                                  GPU_PRODUCT, GROUP_LABELS, INSTANCE_TYPE,
                                                  REGION, Node)

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.spec.models import Spec

CLOUD = "kubernetes"
# Fabrics a catalog row promises and the node signal that proves the device plugin runs.
_PROOF = {"efa": "efa", "infiniband": "infiniband", "tcpx": "gke-networks",
          "tcpxo": "gke-networks", "rdma": "gke-networks"}


@dataclass(frozen=True)
class NodeGroupOffer(Offer):
    """An Offer that is a group of existing nodes (the planner reads only Offer's fields)."""

    group: str = ""
    node_names: tuple[str, ...] = ()
    selector: tuple[tuple[str, str], ...] = ()   # labels every node of the group carries
    basis: str = ""                               # where GPU and fabric came from
    capacity: str = "unknown"                     # spot | on-demand | unknown (node labels)
    free_nodes: int = 0                           # ready, uncordoned, GPUs all free now
    gke_interfaces: tuple[tuple[str, str], ...] = ()   # (pod interface, GKE Network) on GKE

    def placement(self, plan) -> dict[str, Any]:
        """What a job pod adds to land on this group (manifests.stackfacts.job_placement)."""
        k = plan.spec.kubernetes
        sel = {**dict(self.selector), **(dict(k.node_selector) if k else {})}
        tols = [t.model_dump(exclude_none=True) for t in (k.tolerations if k else [])]
        return {"node_selector": sel, "tolerations": tols, "own_nodes": True}


def _gpu_name(product: str, memory_mib: str | None, known: dict[str, Any]) -> str | None:
    """GFD's product label ("NVIDIA-H100-80GB-HBM3", "NVIDIA-L40S") -> a catalog GPU name."""
    p = product.upper().replace("_", "-")
    mem = None
    if memory_mib and memory_mib.isdigit():
        mem = int(memory_mib) / 1024
    best = None
    for name, gpu in known.items():
        model = name.rsplit("-", 1)[0] if name.endswith("GB") else name   # "H100-80GB" -> "H100"
        if not re.search(rf"(^|-){re.escape(model)}($|-)", p):
            continue
        if "-NVL" in p and "NVL" not in name or "NVL" in name and "-NVL" not in p:
            continue
        size = re.search(r"(\d+)GB", p)
        if size and name.endswith("GB") and not name.endswith(f"-{size.group(1)}GB"):
            continue
        if mem is not None and abs(gpu.memory_gib - mem) > 0.15 * gpu.memory_gib:
            continue
        if best is None or len(name) > len(best):
            best = name
    return best


def _vendor_row(catalog: Catalog, instance_type: str, region: str | None) -> Offer | None:
    # The clouds' catalog rows describe the instance types a cluster you bring may run.
    vendors = clouds.kube_names()
    rows = [o for o in catalog.offers if o.instance_type == instance_type and o.cloud in vendors]
    here = [o for o in rows if o.region == region]
    return (here or rows or [None])[0]


def _fabric(nodes: list[Node], row: Offer | None) -> tuple[str, str]:
    """(fabric, why) from what EVERY node of the group advertises."""
    signals = [n.fabric_signals() for n in nodes]
    common = set.intersection(*(set(s) for s in signals)) if signals else set()
    if row is not None and row.fabric in _PROOF:
        if _PROOF[row.fabric] in common:
            return row.fabric, f"{row.fabric}: the catalog's fabric for {row.instance_type}, advertised by the nodes"
        return "ethernet", (f"ethernet: {row.instance_type} has {row.fabric}, but the nodes "
                            f"advertise no {_PROOF[row.fabric]} devices")
    # Hardware the catalog does not know has no fabric profile (NCCL env, devices per pod):
    # what it advertises is named, and the job is planned on TCP rather than guessed at.
    seen = [f for f in ("efa", "infiniband", "gke-networks") if f in common]
    if seen:
        return "ethernet", (f"ethernet: the nodes advertise {', '.join(seen)}, but no fabric "
                            "profile knows this hardware (NCCL runs on TCP sockets)")
    return "ethernet", "ethernet: the nodes advertise no EFA, rdma/ib or GKE multi-network devices"


def _selector(nodes: list[Node], group: str) -> tuple[tuple[str, str], ...]:
    for key in GROUP_LABELS:
        if all(n.labels.get(key) == group for n in nodes):
            return ((key, group),)
    keys = (INSTANCE_TYPE, GPU_PRODUCT)
    return tuple((k, nodes[0].labels[k]) for k in keys
                 if k in nodes[0].labels and all(n.labels.get(k) == nodes[0].labels[k] for n in nodes))


def group_offer(group: str, nodes: list[Node], catalog: Catalog, *, context: str,
                usd_per_gpu_hour: float | None, gpus_wanted: int | None) -> tuple[NodeGroupOffer | None, str]:
    """The offer of one node group, or (None, why it cannot be planned on)."""
    first = nodes[0]
    gpus = min(n.gpus for n in nodes)
    it = first.labels.get(INSTANCE_TYPE, "")
    row = _vendor_row(catalog, it, first.labels.get(REGION)) if it and all(
        n.labels.get(INSTANCE_TYPE) == it for n in nodes) else None
    fabric, fabric_why = _fabric(nodes, row)
    if row is not None:
        gpu, mem, intra, nvlink, nvbw = (row.gpu, row.gpu_memory_gib, row.intra_node, row.nvlink,
                                         row.nvlink_gbs_per_gpu)
        basis = f"GPU from the catalog row {row.cloud} {it}; fabric {fabric_why}"
    else:
        product = first.labels.get(GPU_PRODUCT, "")
        gpu = _gpu_name(product, first.labels.get(GPU_MEMORY_MIB), catalog.gpus) if product else None
        if gpu is None:
            return None, (f"{group}: GPU {product or '(no nvidia.com/gpu.product label)'} is not "
                          "in the catalog, so it cannot be planned")
        mem = catalog.gpus[gpu].memory_gib
        intra, nvlink, nvbw = "pcie", "", 0.0   # NVLink is not labelled: assume the PCIe floor
        why_not = f"instance type {it} not in the catalog" if it else "no instance-type label"
        basis = (f"GPU from the node label {GPU_PRODUCT}={product} ({why_not}; NVLink not "
                 f"assumed); fabric {fabric_why}")
    if row is not None and fabric != row.fabric:
        it_name = group      # planned as its own kind: the family's fabric profile must not apply
    else:
        it_name = it or group
    count = gpus if gpus_wanted is None else gpus_wanted
    # What the pods already there leave (their DaemonSets included): the job pod asks for a
    # share of this (manifests/job.py REQUEST_SHARE), on every node.
    cpu = min(int(n.free.get("cpu", 0)) for n in nodes)
    ram = min(float(n.free.get("memory", 0)) for n in nodes) / 2**30
    if usd_per_gpu_hour is not None:
        od, sp, as_of = usd_per_gpu_hour * count, None, host.today()
        price = f"kubernetes.price.usd_per_gpu_hour {usd_per_gpu_hour:g}"
    elif row is not None and (row.on_demand_usd is not None or row.spot_usd is not None):
        share = count / row.gpu_count
        spot_nodes = {n.capacity_type for n in nodes} == {"spot"}
        od = None if row.on_demand_usd is None else row.on_demand_usd * share
        sp = None if row.spot_usd is None else row.spot_usd * share
        od = sp if spot_nodes and sp is not None else od
        sp, as_of = None, row.price_as_of
        price = f"catalog {'spot' if spot_nodes else 'on-demand'} {row.cloud} {it} in {row.region} ({row.source})"
    else:
        od = sp = None
        as_of = host.today()
        price = "no price: set kubernetes.price.usd_per_gpu_hour"
    free = sum(1 for n in nodes if n.ready and not n.unschedulable
               and n.free.get("nvidia.com/gpu", 0) >= count)
    kinds = sorted({n.capacity_type for n in nodes})
    kind = "/".join(kinds) if kinds != ["unknown"] else "capacity type not labelled"
    source = (f"cluster {context}, node group {group}: {len(nodes)} node(s) ({kind}), "
              f"{free} with {count} GPUs free now; "
              f"{basis}; price: {price}")
    offer = NodeGroupOffer(
        cloud=CLOUD, instance_type=it_name, region=context, gpu=gpu, gpu_count=count,
        gpu_memory_gib=float(mem), intra_node=intra, nvlink=nvlink, nvlink_gbs_per_gpu=nvbw,
        fabric=fabric, nics=row.nics if row and fabric == row.fabric else 0,
        network_gbps=row.network_gbps if row else 0.0,   # not read from a node: unknown
        gpudirect=bool(row and row.gpudirect and fabric == row.fabric), vcpus=cpu, ram_gib=ram,
        local_nvme_gb=0.0, on_demand_usd=od, spot_usd=sp, spot_low_usd=None, spot_high_usd=None,
        price_as_of=as_of if isinstance(as_of, _dt.date) else host.today(), source=source,
        origin="cluster", group=group, node_names=tuple(n.name for n in nodes),
        selector=_selector(nodes, group), basis=basis,
        capacity=kinds[0] if len(kinds) == 1 else "mixed",
        free_nodes=free, gke_interfaces=gke_interfaces(nodes) if fabric in ("tcpx", "tcpxo", "rdma") else ())
    return offer, ""


def gke_interfaces(nodes: list[Node]) -> tuple[tuple[str, str], ...]:
    """(ethN, Network) the group's nodes agree on: nic-info names each host NIC by its first
    IP, north-interfaces gives each Network's IP on the node (kubernetes/ingress-gce
    pkg/apis/network/v1 NICInfoAnnotationKey, NorthInterfacesAnnotationKey). () when they
    disagree or are absent: the pods then keep the profile's names and the check says so."""
    import json
    seen = set()
    for n in nodes:
        try:
            nic = {i["birthIP"]: i["birthName"] for i in json.loads(n.annotations.get(GKE_NIC_INFO, "[]"))}
            north = json.loads(n.annotations.get(GKE_NORTH, "[]"))
            pairs = tuple(sorted(((nic[i["ipAddress"]], i["network"]) for i in north
                                  if i.get("ipAddress") in nic), key=lambda p: (len(p[0]), p[0])))
        except (ValueError, TypeError, KeyError):
            return ()
        seen.add(pairs)
    if len(seen) != 1 or not next(iter(seen)):
        return ()
    return (("eth0", "default"),) + next(iter(seen))


def groups(nodes: list[Node]) -> dict[str, list[Node]]:
    out: dict[str, list[Node]] = {}
    for n in nodes:
        if n.gpus > 0:
            out.setdefault(n.group, []).append(n)
    return out


def _largest(nodes: list[Node]) -> Node:
    return min(nodes, key=lambda n: (-n.gpus, n.name))   # the first by name among the largest


def cluster_catalog(spec: "Spec", nodes: list[Node], catalog: Catalog, *, context: str,
                    read: str | None = None) -> Catalog:
    """The offers of this cluster for this spec. SpecError (exit 2) where the spec names what
    the cluster lacks (instance type, GPU, fabric); PlanError (exit 1) where no node is large
    enough, naming the largest."""
    k = spec.kubernetes
    price = k.price.usd_per_gpu_hour if k and k.price else None
    gpu_nodes = [n for n in nodes if n.gpus > 0]
    if not gpu_nodes:
        raise PlanError(f"cluster {context}: no node advertises nvidia.com/gpu "
                        f"({len(nodes)} node(s) read)", hint="is the NVIDIA device plugin running?")
    wanted = spec.gpus_per_node if "gpus_per_node" in spec.model_fields_set else None
    big = _largest(gpu_nodes)
    if wanted is not None and wanted > big.gpus:
        raise PlanError(f"{spec.where('gpus_per_node')}: gpus_per_node {wanted}: no node of "
                        f"cluster {context} has that many; the largest, {big.name}, has "
                        f"{big.gpus} nvidia.com/gpu allocatable")
    offers, why_not = [], []
    for name, members in sorted(groups(gpu_nodes).items()):
        fit = [n for n in members if wanted is None or n.gpus >= wanted]
        if not fit:
            continue
        o, why = group_offer(name, fit, catalog, context=context, usd_per_gpu_hour=price,
                             gpus_wanted=wanted)
        (offers.append(o) if o else why_not.append(why))
    if not offers:
        raise PlanError(f"cluster {context}: no node group can be planned on: {'; '.join(why_not)}")
    offers = _narrow(spec, offers, context)
    return Catalog(version=f"cluster {context} " + (read or f"read {host.today().isoformat()}"),
                   offers=tuple(offers), gpus=catalog.gpus)


def _narrow(spec: "Spec", offers: list[NodeGroupOffer], context: str) -> list[NodeGroupOffer]:
    """What spec.instance_type / gpu / interconnect.inter_node ask for, or a file:line error."""
    from reclaunch.spec import normalize_gpu

    if spec.instance_type:
        hit = [o for o in offers if spec.instance_type in (o.instance_type, o.group)]
        if not hit:
            names = sorted({o.instance_type for o in offers} | {o.group for o in offers})
            close = difflib.get_close_matches(spec.instance_type, names, n=1, cutoff=0.5)
            raise SpecError(f"{spec.where('instance_type')}: instance_type: no node group of cluster "
                            f"{context} is {spec.instance_type!r}"
                            + (f" — did you mean {close[0]}?" if close else "")
                            + f" (it has {', '.join(names)})")
        offers = hit
    if spec.gpu:
        got = normalize_gpu(spec.gpu, sorted({o.gpu for o in offers}))
        hit = [o for o in offers if o.gpu == got] if isinstance(got, str) else []
        if not hit:
            raise SpecError(f"{spec.where('gpu')}: gpu: no node of cluster {context} has "
                            f"{spec.gpu} (it has {', '.join(sorted({o.gpu for o in offers}))})")
        offers = hit
    fab = spec.interconnect.inter_node
    if fab not in ("auto", "ethernet"):
        hit = [o for o in offers if o.fabric == fab]
        if not hit:
            have = "; ".join(f"{o.group}: {o.basis.rsplit('fabric ', 1)[-1]}" for o in offers)
            raise SpecError(f"{spec.where('interconnect', 'inter_node')}: interconnect.inter_node: "
                            f"no node group of cluster {context} offers {fab} ({have})")
        offers = hit
    if spec.interconnect.intra_node == "nvlink":
        hit = [o for o in offers if o.intra_node == "nvlink"]
        if not hit:
            raise SpecError(f"{spec.where('interconnect', 'intra_node')}: interconnect.intra_node: "
                            f"no node group of cluster {context} is known to have NVLink "
                            "(only catalog instance types are; use pcie or leave it out)")
        offers = hit
    return offers
