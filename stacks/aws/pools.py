"""EKS node pools as data: the system managed node group and one self-managed ASG per GPU
capacity pool. Pure (no Pulumi); `program.py` builds its groups from this list.

Labels the GPU nodes register with (kubelet --node-labels through nodeadm):
- `vpc.amazonaws.com/efa.present=true` and `nvidia.com/gpu.present=true`: the labels the EFA
  device plugin and the NVIDIA device plugin select on (aws-ia/terraform-aws-eks-blueprints
  patterns/nvidia-gpu-efa/eks.tf sets exactly these two on its GPU node group; aws/eks-charts
  stable/aws-efa-k8s-device-plugin and NVIDIA/k8s-device-plugin
  deployments/helm/nvidia-device-plugin/values.yaml `affinity` select them). Set by the stack,
  not by NFD, so they are known before the first node exists: the cluster autoscaler reads
  them from the ASG's node-template tags when it scales a pool up from zero.
- `node.kubernetes.io/instance-type`: set by the kubelet itself from the EC2 metadata.
Self-managed ASGs get no `eks.amazonaws.com/*` labels; `reclaunch.io/capacity` says spot or not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stacks import common as c

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

SYSTEM_INSTANCE_TYPE = "m6i.xlarge"
EFA_PRESENT = "vpc.amazonaws.com/efa.present"
GPU_PRESENT = "nvidia.com/gpu.present"


def hugepages(plan: "Plan") -> dict[str, str]:
    """The huge pages a GPU node of the plan holds (NodePool.hugepages: the one figure the
    render, the fit check, the autoscaler template and the user data read): what the fabric's
    node image reserves at boot (its facts' boot_hugepages: every EFA node, whatever the job),
    or what the job's pods request (stacks.fabric_facts.fabric_profile) where that is more."""
    from reclaunch.catalog.node import MIB, boot_hugepages
    from reclaunch.spec.units import parse_size
    from stacks.fabric_facts import fabric_profile

    rule = c.fabric_facts(plan).boot_hugepages
    out = boot_hugepages(rule, plan.offer.vcpus) if plan.offer is not None else {}
    for k, v in fabric_profile(plan).hugepages.items():
        out[k] = max(out.get(k, 0), parse_size(v))
    return {k: f"{-(-b // MIB)}Mi" for k, b in out.items()}


def hugepage_count(quantity: str, page: str = "2Mi") -> int:
    """Pages of `page` size needed for a Kubernetes quantity such as "5120Mi" or "10Gi"."""
    from reclaunch.spec.units import parse_size

    return -(-parse_size(quantity) // parse_size(page))


def node_pools(plan: "Plan") -> list[c.NodePool]:
    system = c.NodePool(
        name="system", role="system", instance_type=SYSTEM_INSTANCE_TYPE, spot=False,
        labels={**c.KUBELET_LABELS, c.CLUSTER_TAG: plan.name, c.POOL_LABEL: "system",
                # EKS managed node groups label their nodes with these two.
                "eks.amazonaws.com/capacityType": "ON_DEMAND",
                "eks.amazonaws.com/nodegroup": c.name(plan, "system"),
                "node.kubernetes.io/instance-type": SYSTEM_INSTANCE_TYPE},
        taints=[], min_nodes=c.SYSTEM_POOL_SIZE[0], max_nodes=c.SYSTEM_POOL_SIZE[1],
        desired=c.SYSTEM_POOL_SIZE[0], priority=0, cloud_name=c.name(plan, "system"))
    nic = c.fabric_facts(plan).nic    # "efa": EFA interfaces, hugepages, the device plugin's label
    efa = nic is not None
    out = [system]
    for pool in c.gpu_pools(plan):
        labels = {**c.KUBELET_LABELS, **c.node_labels(plan, pool), GPU_PRESENT: "true",
                  c.FABRIC_GROUP_LABEL: nic or "none",
                  "node.kubernetes.io/instance-type": plan.instance_type}
        if efa:
            labels[EFA_PRESENT] = "true"
        out.append(c.NodePool(
            name=pool.key, role="gpu", instance_type=plan.instance_type,
            spot=pool.capacity == "spot", labels=labels, taints=[dict(c.GPU_TAINT)],
            min_nodes=pool.min_nodes, max_nodes=pool.max_nodes, desired=pool.desired,
            priority=pool.priority, hugepages=hugepages(plan),
            cloud_name=c.name(plan, pool.key)))
    return out


def job_placement(plan: "Plan") -> dict:
    """What a training/preflight pod must add on this cloud to land on the GPU pools, beyond
    the cluster label, instance type, GPU taint and spot taints: {node_selector, tolerations}."""
    return {"node_selector": {}, "tolerations": []}
