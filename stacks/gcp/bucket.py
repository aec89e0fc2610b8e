"""GCS checkpoints: the bucket (storage.kind: bucket) and the job's GKE Workload Identity on it.

Compared field by field with cloud.google.com/kubernetes-engine/docs/how-to/workload-identity
("Configure applications to use Workload Identity Federation for GKE", the IAM service account
route): a Google service account, roles/iam.workloadIdentityUser on it for the member
`serviceAccount:PROJECT.svc.id.goog[NAMESPACE/KSA]`, and the Kubernetes ServiceAccount annotated
`iam.gke.io/gcp-service-account: GSA_EMAIL`. The cluster has `workload_pool` and the node pools
`workload_metadata_config.mode: GKE_METADATA` already (program.py), so pods get no node
credentials for this. The bucket grant is on the bucket, never the project:
roles/storage.objectUser with an IAM condition on the prefix (cloud.google.com/storage/docs/
access-control/iam#conditions); GCS checks objects.list on the bucket, so the condition also
admits the bucket itself (list is bucket-wide: a GCS IAM limit). The bucket: uniform
bucket-level access (needed for conditions), public access prevention enforced, Google-managed
encryption at rest (always on), a lifecycle rule on the prefix, force_destroy for `down`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stacks import common as c
from stacks import identity

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

WRITE_ROLE = "roles/storage.objectUser"     # objects: create, get, list, delete, update
READ_ROLE = "roles/storage.objectViewer"


def condition(bucket: str, prefix: str) -> dict:
    base = f"projects/_/buckets/{bucket}"
    p = prefix.rstrip("/")
    expr = (f'resource.name == "{base}" || resource.name.startsWith("{base}/objects/{p}/")'
            if p else f'resource.name.startsWith("{base}")')
    return {"title": f"reclaunch-{p or 'bucket'}"[:100], "expression": expr}


def require_uniform_access(gcp: Any, plan: "Plan") -> None:
    """A conditioned IAM binding (ours: the prefix) is refused on a bucket with fine-grained
    ACLs (cloud.google.com/storage/docs/access-control/iam#conditions: conditions need uniform
    bucket-level access). The stack turns it on for the bucket it creates; a bucket the user
    named is read first, before anything is created, and refused with the fix."""
    from reclaunch.errors import ProviderError

    mine = identity.created(plan)
    for g in identity.grants(plan):
        if mine is not None and g.url.bucket == mine.bucket:
            continue
        if not gcp.storage.get_bucket(name=g.url.bucket).uniform_bucket_level_access:
            raise ProviderError(
                f"{g.url.url}: the bucket uses fine-grained ACLs, and the job's prefix-scoped "
                "grant needs uniform bucket-level access",
                hint=f"gcloud storage buckets update gs://{g.url.bucket} "
                     "--uniform-bucket-level-access (or use storage.kind: bucket)")


def bucket_and_identity(gcp: Any, pulumi: Any, k8s: Any, plan: "Plan", *, project: str,
                        labels: dict, location: str, provider: Any, namespace: Any,
                        cluster: Any, depends_on: list) -> Any:
    if not identity.grants(plan):
        return None
    u = identity.created(plan)
    bucket = None
    if u is not None:
        prefix = (u.prefix.rstrip("/") + "/") if u.prefix else ""
        bucket = gcp.storage.Bucket(
            c.name(plan, "ckpt"), name=u.bucket, location=location.upper(), labels=labels,
            uniform_bucket_level_access=True, public_access_prevention="enforced",
            force_destroy=True, lifecycle_rules=[
                {"action": {"type": "AbortIncompleteMultipartUpload"},
                 "condition": {"age": identity.ABORT_UPLOADS_DAYS}},
                *([{"action": {"type": "Delete"}, "condition": {
                    "age": days, **({"matches_prefixes": [prefix]} if prefix else {})}}]
                  if (days := identity.expire_days(plan)) else [])])
    gsa = gcp.serviceaccount.Account(c.name(plan, "trainer", max_len=30),
                                     account_id=c.name(plan, "trainer", max_len=30),
                                     display_name=f"reclaunch {plan.name} training job")
    member = gsa.email.apply(lambda e: f"serviceAccount:{e}")
    for i, g in enumerate(identity.grants(plan)):
        gcp.storage.BucketIAMMember(
            c.name(plan, "trainer-gcs", str(i)), bucket=bucket.name if bucket is not None and g.write
            else g.url.bucket, role=WRITE_ROLE if g.write else READ_ROLE, member=member,
            condition=condition(g.url.bucket, g.url.prefix))
    ns, ksa = plan.spec.namespace, identity.service_account(plan)
    # The workload identity pool PROJECT.svc.id.goog exists only once the project's first GKE
    # cluster with workload_pool does: before that the binding fails "Identity Pool does not
    # exist" (terraform-google-modules/terraform-google-kubernetes-engine issue #916).
    gcp.serviceaccount.IAMMember(c.name(plan, "trainer-wi"), service_account_id=gsa.name,
                                 role="roles/iam.workloadIdentityUser",
                                 member=f"serviceAccount:{project}.svc.id.goog[{ns}/{ksa}]",
                                 opts=pulumi.ResourceOptions(depends_on=[cluster]))
    identity.kube_service_account(k8s, pulumi, plan, provider, namespace, depends_on=depends_on,
                                  annotations={"iam.gke.io/gcp-service-account": gsa.email})
    return bucket.name if bucket is not None else None
