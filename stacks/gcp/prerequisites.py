"""What `up` cannot do on GCP and a person must do first. Pure; `up` prints these lines
before it creates anything (the lead wires `manual_prerequisites` into the lifecycle)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


def manual_prerequisites(plan: "Plan") -> list[str]:
    from stacks.gcp.accelerators import accelerator

    gpus = plan.max_nodes * plan.gpus_per_node
    kind = "preemptible (Spot) " if plan.spot else ""
    out = [f"GPU quota: {gpus} {kind}{accelerator(plan)} GPUs in {plan.region} and "
           f"GPUS_ALL_REGIONS >= {gpus} (IAM & Admin > Quotas)",
           "APIs enabled: container.googleapis.com, compute.googleapis.com"
           + (", file.googleapis.com" if plan.spec.storage.kind == "filestore" else ""),
           "IAM: the identity running `up` needs to create service accounts and grant project "
           "roles (roles/resourcemanager.projectIamAdmin, roles/iam.serviceAccountAdmin, "
           "roles/container.admin, roles/compute.networkAdmin)"]
    # The kubeconfig runs the exec plugin (stacks/gcp/program.py _kubeconfig); kubectl >= 1.26
    # needs it (cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl).
    out.append("tools: `gke-gcloud-auth-plugin` on PATH (`gcloud components install "
               "gke-gcloud-auth-plugin`) with `gcloud auth login` done: the kubeconfig logs in "
               "through it")
    cap = plan.spec.capacity
    if cap is not None:
        out.append(f"reservation {cap.reservation}: create it for {plan.nodes} x "
                   f"{plan.instance_type} in {plan.zones[0] if plan.zones else plan.region} "
                   "(a3-mega/ultra capacity is sold through Google sales); shared reservations "
                   "must be shared with this project")
    return out
