"""AKS node pools as data: the system pool and the ND GPU agent pools. Pure (no Pulumi);
`program.py` builds its agent pools from this list.

Labels AKS itself puts on every node (learn.microsoft.com/azure/aks/use-labels):
`kubernetes.azure.com/agentpool`, `kubernetes.azure.com/mode`,
`node.kubernetes.io/instance-type`; on spot pools `kubernetes.azure.com/scalesetpriority=spot`
plus the taint of the same name (AKS refuses a spot pool without it); on GPU VM sizes
`kubernetes.azure.com/accelerator=nvidia` (what Azure/aks-rdma-infiniband
configs/nvidia-peermem-reloader/ds.yaml selects on).

InfiniBand: each VM scale set is its own IB fabric, so the spot and the regular ND pools are
two fabrics that cannot talk RDMA to each other. `FABRIC_GROUP_LABEL` carries the pool name
here, and the job is pinned to one value of it (see stacks.common.FABRIC_GROUP_LABEL).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stacks import common as c

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

SYSTEM_VM_SIZE = "Standard_D4s_v5"
# The Ubuntu release is pinned (not plain "Ubuntu") so the node label the Azure Lustre CSI
# node DaemonSets select on is known before a node exists (kubernetes-sigs/azurelustre-csi-
# driver v0.4.0 deploy/csi-azurelustre-node-{jammy,noble}.yaml; AKS labels
# kubernetes.azure.com/os-sku-effective on every node). Which one follows the Kubernetes
# minor as AKS's own default does (learn.microsoft.com/azure/aks/upgrade-os-version:
# "Ubuntu 22.04 is the default for Kubernetes 1.25 to 1.34, Ubuntu 24.04 for 1.35+").
LAST_JAMMY_MINOR = (1, 34)


def os_release(version: str) -> str:
    """The Ubuntu a node of this minor runs: its `os-sku-effective` label."""
    from stacks.versions import minor_key

    return "Ubuntu2204" if minor_key(version) <= LAST_JAMMY_MINOR else "Ubuntu2404"


def os_sku(version: str) -> str:
    """The `osSKU` the stack sends for that release. The API version the installed azure-native
    speaks (2025-09-01) has no Ubuntu2404 in its OSSKU enum (Azure/azure-rest-api-specs#38610),
    and plain Ubuntu is 24.04 from 1.35 on (the page above), so 24.04 is asked for as Ubuntu."""
    release = os_release(version)
    return "Ubuntu" if release == "Ubuntu2404" else release


def os_labels(plan: "Plan") -> dict[str, str]:
    from stacks.versions import kubernetes_version

    return {"kubernetes.azure.com/os-sku-effective": os_release(kubernetes_version(plan))}
SPOT_TAINT = {"key": "kubernetes.azure.com/scalesetpriority", "value": "spot",
              "effect": "NoSchedule"}
GPU_PRESENT = "nvidia.com/gpu.present"


def agent_pool_name(key: str) -> str:
    """AKS agent pool names: lowercase alphanumeric, <= 12 characters."""
    return key.replace("-", "")[:12]


def node_pools(plan: "Plan") -> list[c.NodePool]:
    os_label = os_labels(plan)
    system = c.NodePool(
        name="system", role="system", instance_type=SYSTEM_VM_SIZE, spot=False,
        labels={**c.KUBELET_LABELS, c.CLUSTER_TAG: plan.name, c.POOL_LABEL: "system",
                **os_label, "kubernetes.azure.com/agentpool": "system",
                "kubernetes.azure.com/mode": "system",
                "node.kubernetes.io/instance-type": SYSTEM_VM_SIZE},
        taints=[], min_nodes=c.SYSTEM_POOL_SIZE[0], max_nodes=c.SYSTEM_POOL_SIZE[1],
        desired=c.SYSTEM_POOL_SIZE[0], cloud_name="system")
    out = [system]
    ib = c.fabric_facts(plan).node_group   # InfiniBand: one scale set is one fabric
    for pool in c.gpu_pools(plan):
        spot = pool.capacity == "spot"
        agent = agent_pool_name(pool.key)
        labels = {**c.KUBELET_LABELS, **c.node_labels(plan, pool), GPU_PRESENT: "true",
                  c.FABRIC_GROUP_LABEL: agent if ib else "none",
                  **os_label, "kubernetes.azure.com/agentpool": agent,
                  "kubernetes.azure.com/mode": "user",
                  "kubernetes.azure.com/accelerator": "nvidia",
                  "node.kubernetes.io/instance-type": plan.instance_type}
        taints = [dict(c.GPU_TAINT)]
        if spot:
            labels["kubernetes.azure.com/scalesetpriority"] = "spot"
            taints.append(dict(SPOT_TAINT))
        out.append(c.NodePool(
            name=pool.key, role="gpu", instance_type=plan.instance_type, spot=spot,
            labels=labels, taints=taints, min_nodes=pool.min_nodes, max_nodes=pool.max_nodes,
            desired=pool.desired, priority=pool.priority, cloud_name=agent))
    return out


def job_placement(plan: "Plan") -> dict:
    """What a training/preflight pod must add on this cloud to land on the GPU pools, beyond
    the cluster label, instance type, GPU taint and spot taints: {node_selector, tolerations}."""
    return {"node_selector": {}, "tolerations": []}
