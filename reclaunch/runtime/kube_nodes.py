"""What a cluster's nodes have, read through its API: labels, taints, allocatable and what the
pods already on them request. Read for a cluster you bring (providers/kubernetes: offers.py and
fit.py stay pure on these plain values) and by `up`'s node check on the clusters the stacks make.

Label and resource names are the vendors' own (cited where they are used):
  node.kubernetes.io/instance-type, topology.kubernetes.io/{region,zone}  (kubernetes.io
      docs/reference/labels-annotations-taints; set by every cloud's node controller)
  nvidia.com/gpu (k8s-device-plugin), nvidia.com/gpu.product / .count / .memory (MiB)
      (NVIDIA/gpu-feature-discovery, now part of k8s-device-plugin: README "Generated Labels")
  vpc.amazonaws.com/efa (aws-efa-k8s-device-plugin), rdma/ib (Mellanox
      k8s-rdma-shared-dev-plugin / NVIDIA network-operator, the name Azure ND pools use)
  networking.gke.io/north-interfaces, networking.gke.io.networks/<network>  (GKE multi-network:
      kubernetes/ingress-gce pkg/apis/network/v1 NorthInterfacesAnnotationKey)
  capacity type: the same table runtime/kube.py reads for status (eks.amazonaws.com/capacityType,
      karpenter.sh/capacity-type, cloud.google.com/gke-spot, kubernetes.azure.com/scalesetpriority)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from reclaunch.manifests.apiserver import quantity
from reclaunch.runtime.kube import string_map, capacity_type, unique

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
REGION = "topology.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
GPU = "nvidia.com/gpu"
GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_MEMORY_MIB = "nvidia.com/gpu.memory"
EFA = "vpc.amazonaws.com/efa"
IB = "rdma/ib"
GKE_NORTH = "networking.gke.io/north-interfaces"
GKE_NIC_INFO = "networking.gke.io/nic-info"
GKE_NETWORK_PREFIX = "networking.gke.io.networks/"
# Labels that name a node group on the managed offerings (first present wins); on-prem nodes
# without any are grouped by GPU product and count.
GROUP_LABELS = ("eks.amazonaws.com/nodegroup", "karpenter.sh/nodepool",
                "cloud.google.com/gke-nodepool", "kubernetes.azure.com/agentpool",
                "agentpool")
# Phases whose pods no longer hold their requests (kube-scheduler counts the rest).
_DONE = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Node:
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    taints: list[dict[str, str]]
    allocatable: dict[str, Fraction]
    requested: dict[str, Fraction] = field(default_factory=dict)   # by pods already there
    ready: bool = True
    unschedulable: bool = False   # cordoned (spec.unschedulable)

    @property
    def free(self) -> dict[str, Fraction]:
        return {k: v - self.requested.get(k, Fraction(0)) for k, v in self.allocatable.items()}

    @property
    def gpus(self) -> int:
        return int(self.allocatable.get(GPU, 0))

    @property
    def capacity_type(self) -> str:
        return capacity_type(self.labels)

    @property
    def group(self) -> str:
        for key in GROUP_LABELS:
            if self.labels.get(key):
                return self.labels[key]
        product = self.labels.get(GPU_PRODUCT) or self.labels.get(INSTANCE_TYPE) or "nodes"
        return f"{product}-x{self.gpus}".lower()

    def fabric_signals(self) -> dict[str, int]:
        """Network devices the node advertises: {efa: n, infiniband: n, gke-networks: n}."""
        out = {}
        if self.allocatable.get(EFA, 0) > 0:
            out["efa"] = int(self.allocatable[EFA])
        if self.allocatable.get(IB, 0) > 0:
            out["infiniband"] = int(self.allocatable[IB])
        nets = [k for k in self.allocatable if k.startswith(GKE_NETWORK_PREFIX)
                and not k.endswith(".IP") and not k.endswith("/default")]
        if nets or self.annotations.get(GKE_NORTH):
            out["gke-networks"] = len(nets)
        return out


def node_of(obj: dict[str, Any]) -> Node:
    """A Node from the API's object. A value that is no quantity (NaN, 1e999999999) is left out
    and the node counts as not ready: what it has cannot be known, so nothing is planned on it."""
    md, spec, st = (v if isinstance(v, dict) else {} for v in
                    (obj.get("metadata"), obj.get("spec"), obj.get("status")))
    conds = st.get("conditions") if isinstance(st.get("conditions"), list) else []
    allocatable, damaged = {}, False
    for k, v in (st.get("allocatable") if isinstance(st.get("allocatable"), dict) else {}).items():
        try:
            allocatable[str(k)] = quantity(str(v))
        except ValueError:
            damaged = True
    return Node(
        name=str(md.get("name", "?"))[:253], labels=string_map(md.get("labels")),
        annotations=string_map(md.get("annotations")),
        taints=[dict(t) for t in spec.get("taints") or [] if isinstance(t, dict)]
        if isinstance(spec.get("taints"), list) else [],
        allocatable=allocatable,
        ready=not damaged and any(isinstance(c, dict) and c.get("type") == "Ready"
                                  and c.get("status") == "True" for c in conds),
        unschedulable=bool(spec.get("unschedulable")))


def requested_by_node(pods: list[dict[str, Any]]) -> tuple[dict[str, dict[str, Fraction]], set[str]]:
    """({node: {resource: requested}} of the pods bound to nodes that still hold resources,
    the nodes with a pod whose requests cannot be read: what is free there is unknown)."""
    from reclaunch.manifests.schedule import pod_requests

    out: dict[str, dict[str, Fraction]] = {}
    unknown: set[str] = set()
    for p in pods:
        spec, st = p.get("spec"), p.get("status")
        node = spec.get("nodeName") if isinstance(spec, dict) else None
        if not isinstance(node, str) or not node or isinstance(st, dict) and st.get("phase") in _DONE:
            continue
        try:
            asks = pod_requests(spec)
        except (ValueError, TypeError, AttributeError):
            unknown.add(node)
            continue
        into = out.setdefault(node, {})
        for k, v in asks.items():
            into[k] = into.get(k, Fraction(0)) + v
    return out, unknown


def read_nodes(kube: Any) -> list[Node]:
    """Every node (once, however often the API lists it) with what is already requested on it
    (paged list calls, no per-node calls)."""
    return with_requests(unique(kube.items("/api/v1/nodes")), unique(kube.items("/api/v1/pods")))


def with_requests(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> list[Node]:
    """Nodes from API objects with what the pods bound to them request; a node holding a pod
    whose requests cannot be read counts as not ready (what is free there is unknown)."""
    used, unknown = requested_by_node(pods)
    out = []
    for obj in nodes:
        n = node_of(obj)
        out.append(Node(n.name, n.labels, n.annotations, n.taints, n.allocatable,
                        used.get(n.name, {}), n.ready and n.name not in unknown, n.unschedulable))
    return out
