"""What `up` cannot do on Azure and a person must do first. Pure; `up` prints these lines
before it creates anything (the lead wires `manual_prerequisites` into the lifecycle)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan
    from stacks.azure.host_encryption import Probe


def manual_prerequisites(plan: "Plan", host: "Probe | None" = None) -> list[str]:
    """`host`: Azure's answer about encryption at host, given at `up` (None: plan, dry-run)."""
    from stacks.azure.host_encryption import person_lines
    from stacks.fabric_facts import fabric_facts

    vcpus = (plan.offer.vcpus if plan.offer else 0) * plan.max_nodes
    out = [f"vCPU quota: the {plan.instance_type} family must allow {vcpus} vCPUs in "
           f"{plan.region}" + (" and 'Total Regional Spot vCPUs' as many" if plan.spot else "")
           + " (Portal > Quotas > Compute; `az vm list-usage -l " + f"{plan.region}`)",
           "tools: `az` logged in and `kubelogin` on PATH (`az aks install-cli`): the "
           "kubeconfig logs in with `kubelogin get-token --login azurecli`",
           "RBAC: the identity running `up` must be able to create role assignments (Owner, "
           "User Access Administrator or Role Based Access Control Administrator on the "
           "subscription): it grants itself AKS RBAC Cluster Admin and the cluster identity "
           "Network Contributor"]
    out.extend(fabric_facts(plan).prerequisites)   # InfiniBand: the AKS feature flag
    out += person_lines(plan, host)
    if plan.spec.storage.kind == "azure-lustre":
        out.append("resource provider Microsoft.StorageCache registered (`az provider register "
                   "-n Microsoft.StorageCache`) for Azure Managed Lustre")
    cap = plan.spec.capacity
    if cap is not None:
        out.append(f"capacity reservation group {cap.reservation}: create it with "
                   f"{plan.nodes} x {plan.instance_type} reserved in {plan.region}, and let the "
                   "cluster's identity deploy into it (Contributor on the group)")
    return out
