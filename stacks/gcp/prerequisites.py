"""What `up` cannot do on GCP and a person must do first. Pure; `up` prints these lines
before it creates anything, after asking Service Usage which of `required_services` the
project has enabled (reclaunch/providers/gcp/services.py: a missing one stops `up`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


def required_services(plan: "Plan") -> tuple[str, ...]:
    """The APIs the stack's resources call, each for what it creates: the cluster, its VPCs,
    the node and trainer service accounts, the secrets key ring (stacks/gcp/secrets.py, always:
    cloud.google.com/kubernetes-engine/docs/how-to/encrypting-secrets, "Before you begin"),
    Filestore, and Cloud Storage for a bucket the job uses."""
    from reclaunch.spec.buckets import is_url

    job = plan.spec.job
    return ("container.googleapis.com", "compute.googleapis.com", "iam.googleapis.com",
            "cloudkms.googleapis.com",
            *(["file.googleapis.com"] if plan.spec.storage.kind == "filestore" else []),
            *(["storage.googleapis.com"] if is_url(job.checkpoint.path) or is_url(job.dataset.path)
              else []))


def iam_roles(plan: "Plan") -> list[str]:
    """Roles the identity running `up` needs, one per kind of resource the stack creates."""
    from stacks.gcp.registry import repository
    from reclaunch.spec.buckets import is_url

    job = plan.spec.job
    roles = ["roles/container.admin", "roles/compute.networkAdmin",
             "roles/compute.securityAdmin (firewall rules)",
             "roles/iam.serviceAccountAdmin", "roles/iam.serviceAccountUser (node pools run as "
             "the nodes' service account)", "roles/resourcemanager.projectIamAdmin",
             "roles/cloudkms.admin (the secrets key ring, key and its grant)"]
    if plan.spec.storage.kind == "filestore":
        roles.append("roles/file.editor")
    if is_url(job.checkpoint.path) or is_url(job.dataset.path):
        roles.append("roles/storage.admin on the job's bucket (it is created or granted on)")
    repo = repository(job.image)
    if repo is not None:
        roles.append(f"roles/artifactregistry.admin on {repo.location}/{repo.repository} when "
                     f"it is in the project `up` deploys to (the nodes' image-pull grant)")
    return roles


def manual_prerequisites(plan: "Plan") -> list[str]:
    from stacks.gcp.accelerators import accelerator
    from stacks.gcp.registry import repository

    gpus = plan.max_nodes * plan.gpus_per_node
    kind = "preemptible (Spot) " if plan.spot else ""
    out = [f"GPU quota: {gpus} {kind}{accelerator(plan)} GPUs in {plan.region} and "
           f"GPUS_ALL_REGIONS >= {gpus} (IAM & Admin > Quotas)",
           "APIs enabled: " + ", ".join(required_services(plan)) + " (`up` checks and stops "
           "on a missing one: gcloud services enable NAME)",
           "IAM: the identity running `up` needs " + "; ".join(iam_roles(plan))]
    repo = repository(plan.spec.job.image)
    if repo is not None:
        out.append(f"job.image is in Artifact Registry project {repo.project}: outside the project "
                   "`up` deploys to, a private repository must grant roles/artifactregistry.reader "
                   "to the nodes' service account (`up` names it) itself")
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
