"""GKE node pools as data: the system pool and the GPU pools. Pure (no Pulumi);
`program.py` builds its node pools from this list.

Labels GKE puts on every node (cloud.google.com/kubernetes-engine/docs/concepts/node-pools,
.../how-to/gpus): `cloud.google.com/gke-nodepool`, `node.kubernetes.io/instance-type`, on GPU
pools `cloud.google.com/gke-accelerator=<type>` (what GoogleCloudPlatform/
container-engine-accelerators gpudirect-tcpxo/nccl-tcpxo-installer.yaml selects on, and what
GKE's own device plugin needs, cmd/nvidia_gpu/device-plugin.yaml), on Spot pools
`cloud.google.com/gke-spot=true` (no taint unless one is asked for).

Spot preference: with a spot and an on-demand pool, a custom ComputeClass names them in
priority order (pool order alone means nothing to the GKE autoscaler). GKE's "manually
created node pools" page labels such pools `cloud.google.com/compute-class=<class>` and also
taints them with that key; we set the label and leave the taint out: the GPU taint already
keeps other pods off, and a pod that does not select the class (see `job_placement`) still
schedules on either pool instead of on none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stacks import common as c
from stacks.gcp.accelerators import ACCELERATOR, accelerator  # noqa: F401

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

SYSTEM_MACHINE = "e2-standard-8"
COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"


def pool_name(plan: "Plan", key: str) -> str:
    return c.name(plan, key, max_len=40)


def compute_class(plan: "Plan") -> str | None:
    """The ComputeClass that prefers spot over on-demand, when there are both pools."""
    return c.name(plan, "gpu", max_len=63) if len(c.gpu_pools(plan)) > 1 else None


def node_pools(plan: "Plan") -> list[c.NodePool]:
    system = c.NodePool(
        name="system", role="system", instance_type=SYSTEM_MACHINE, spot=False,
        labels={**c.KUBELET_LABELS, c.CLUSTER_TAG: plan.name, c.POOL_LABEL: "system",
                "cloud.google.com/gke-nodepool": pool_name(plan, "system"),
                "node.kubernetes.io/instance-type": SYSTEM_MACHINE},
        taints=[], min_nodes=c.SYSTEM_POOL_SIZE[0], max_nodes=c.SYSTEM_POOL_SIZE[1],
        desired=c.SYSTEM_POOL_SIZE[0], cloud_name=pool_name(plan, "system"))
    out = [system]
    cls = compute_class(plan)
    for pool in c.gpu_pools(plan):
        spot = pool.capacity == "spot"
        labels = {**c.KUBELET_LABELS, **c.node_labels(plan, pool), c.FABRIC_GROUP_LABEL: c.fabric_kind(plan),
                  "cloud.google.com/gke-nodepool": pool_name(plan, pool.key),
                  "cloud.google.com/gke-accelerator": accelerator(plan),
                  "node.kubernetes.io/instance-type": plan.instance_type}
        taints = [dict(c.GPU_TAINT)]
        if spot:
            labels["cloud.google.com/gke-spot"] = "true"
        if cls:
            labels[COMPUTE_CLASS_LABEL] = cls
        out.append(c.NodePool(
            name=pool.key, role="gpu", instance_type=plan.instance_type, spot=spot,
            labels=labels, taints=taints, min_nodes=pool.min_nodes, max_nodes=pool.max_nodes,
            desired=pool.desired, priority=pool.priority, cloud_name=pool_name(plan, pool.key)))
    return out


def job_placement(plan: "Plan") -> dict:
    """What a training/preflight pod must add on this cloud to land on the GPU pools, beyond
    the cluster label, instance type, GPU taint and spot taints: {node_selector, tolerations}."""
    cls = compute_class(plan)
    if not cls:
        return {"node_selector": {}, "tolerations": []}
    # Selecting the class is what makes GKE's autoscaler try the spot pool first.
    return {"node_selector": {COMPUTE_CLASS_LABEL: cls}, "tolerations": []}


# GKE gives a Spot node's pods 15 of the 30 s it gets (graceful node shutdown: 30 s in all, 15
# for system pods), unless the pool extends it, to 120 s in all, through its kubelet config
# (GKE >= 1.35.0-gke.1171000; cloud.google.com/kubernetes-engine/docs/concepts/spot-vms,
# "Termination and graceful shutdown of Spot VMs"; the total takes 0, 30 or 120 only:
# GoogleCloudPlatform/magic-modules#17556, pulumi-gcp's NodePool kubelet_config since the
# provider that pyproject's gcp extra requires). Our spot pools do: the pods get the cloud's
# reclaim notice (reclaunch/providers/gcp/facts.py), system pods keep their 15 s.
CRITICAL_PODS_SECONDS = 15


def spot_kubelet_config(plan: "Plan", pool: c.NodePool) -> dict | None:
    """node_config.kubelet_config of a GPU pool: the extended spot termination, spot only
    (GKE accepts the fields on Spot and preemptible pools alone)."""
    from reclaunch import clouds

    notice = clouds.get(plan.cloud).planner.get("reclaim_notice_seconds")
    if not pool.spot or not notice:
        return None
    return {"shutdown_grace_period_seconds": notice + CRITICAL_PODS_SECONDS,
            "shutdown_grace_period_critical_pods_seconds": CRITICAL_PODS_SECONDS}
