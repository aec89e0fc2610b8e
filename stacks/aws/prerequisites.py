"""What `up` cannot do on AWS and a person must do first. Pure; `up` prints these lines
before it creates anything (the lead wires `manual_prerequisites` into the lifecycle)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

# Service Quotas codes (EC2 console > Service Quotas > Amazon EC2), by instance family letter.
QUOTA_CODES = {  # family -> (on-demand code, spot code, name)
    "p": ("L-417A185B", "L-7212CCBC", "Running On-Demand P instances / All P Spot Instance Requests"),
    "g": ("L-DB2E81BA", "L-3819A6DF", "Running On-Demand G and VT instances / All G and VT Spot Instance Requests"),
}


def manual_prerequisites(plan: "Plan") -> list[str]:
    out = []
    vcpus = (plan.offer.vcpus if plan.offer else 0) * plan.max_nodes
    family = (plan.instance_type or "?")[:1]
    od, spot, what = QUOTA_CODES.get(family, ("?", "?", f"{family.upper()} instances"))
    if plan.spec.capacity is None:
        code = f"{spot} (spot) and {od} (on-demand fallback)" if plan.spot else od
        out.append(f"EC2 vCPU quota: {what} must allow {vcpus} vCPUs in {plan.region} "
                   f"({plan.max_nodes} x {plan.instance_type}); request it in Service Quotas, "
                   f"code {code}")
    cap = plan.spec.capacity
    if cap is not None and cap.kind == "capacity-block":
        out.append(f"Capacity Block {cap.reservation}: buy it in the EC2 console (Capacity "
                   f"Reservations > Capacity Blocks) for {plan.nodes} x {plan.instance_type} "
                   f"in {plan.zones[0] if plan.zones else plan.region}, and run `up` while it "
                   "is active: `up` cannot buy or extend it")
    elif cap is not None:
        out.append(f"On-Demand Capacity Reservation {cap.reservation}: create it for "
                   f"{plan.nodes} x {plan.instance_type} in "
                   f"{plan.zones[0] if plan.zones else plan.region} (targeted or open)")
    out.append("IAM: the identity running `up` needs rights to create IAM roles and policies, "
               "an EKS cluster and its access entries (AdministratorAccess or an equivalent)")
    # The kubeconfig the stack writes logs in through `aws eks get-token` (stacks/aws/program.py
    # _kubeconfig), so every Kubernetes call of `up`, `status` and the watcher needs it.
    out.append("tools: the AWS CLI v2 (`aws`) on PATH with the same credentials: the "
               "kubeconfig logs in with `aws eks get-token`")
    return out
    return out
