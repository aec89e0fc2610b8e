"""Policy checks for checkpoint buckets and the job's workload identity (stacks/policy.py runs them).

- bucket-private: every bucket the stack creates blocks public access, encrypts, and aborts
  torn multipart uploads (S3: BucketPublicAccessBlock all four, SSE, lifecycle; GCS: public
  access prevention enforced, uniform bucket-level access; Azure: no public blob access, no
  shared keys).
- bucket-keeps-checkpoints: no lifecycle rule deletes checkpoints unless the spec asked for it
  (job.checkpoint.expire_days); a paused run must find its checkpoints when it resumes.
- owned-storage: whatever `up` did not create, `down` never deletes or rewrites. A bucket
  resource only for the bucket the spec asks the stack to create (storage.kind: bucket); on a
  bucket the user named, only additive grants (GCS BucketIAMMember, never the authoritative
  BucketIAMBinding / BucketIAMPolicy, which replace the bucket's other members and remove them
  on destroy) and no bucket-wide settings (an S3 bucket policy, lifecycle, encryption or
  public-access block is one per bucket: ours would replace the user's, and destroy would
  delete it); nothing imported unless retained on delete.
- bucket-scoped: no identity gets object-store rights beyond named buckets: no `s3:*` / `*`
  action, no S3 action on `*` or `arn:aws:s3:::*`, no storage role on a GCP project, no
  Storage Blob Data role above a container.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

# learn.microsoft.com/azure/role-based-access-control/built-in-roles/storage
BLOB_DATA_ROLES = ("ba92f5b4-2d11-453d-a403-e96b0029c9fe",   # Storage Blob Data Contributor
                   "b7e6dc6d-f1e8-4753-8033-0f276bb0955b",   # Storage Blob Data Owner
                   "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1")   # Storage Blob Data Reader


def statements(doc: Any) -> list[dict]:
    """An IAM policy document's statements (a JSON string or a dict); [] when unreadable."""
    import json

    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except ValueError:
            return []
    st = (doc or {}).get("Statement") or []
    return st if isinstance(st, list) else [st]


def _refs(rs: list[dict], type_: str, name: str) -> list[dict]:
    """Resources of type_ whose `bucket` input is the bucket `name` (by mock id or name)."""
    return [r for r in rs if r["type"] == type_ and str(r["inputs"].get("bucket", "")).startswith(name)]


LIFECYCLE_S3 = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"


def _list(v: Any) -> list:
    return [v] if isinstance(v, str) else list(v or [])


def bucket_private(plan: "Plan", rs: list[dict]) -> list[str]:
    out = []
    for r in rs:
        i, t, n = r["inputs"], r["type"], r["name"]
        if t == "aws:s3/bucket:Bucket":
            pab = _refs(rs, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", n)
            if not pab or not all(pab[0]["inputs"].get(k) is True for k in (
                    "blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")):
                out.append(f"{n}: S3 bucket without a full public access block")
            if not _refs(rs, "aws:s3/bucketServerSideEncryptionConfiguration:"
                             "BucketServerSideEncryptionConfiguration", n):
                out.append(f"{n}: S3 bucket without default encryption")
            rules = [x for lc in _refs(rs, LIFECYCLE_S3, n) for x in lc["inputs"].get("rules") or []]
            if not any(x.get("abortIncompleteMultipartUpload") for x in rules):
                out.append(f"{n}: S3 bucket without a lifecycle rule for torn uploads")
        if t == "gcp:storage/bucket:Bucket":
            if i.get("publicAccessPrevention") != "enforced" or i.get("uniformBucketLevelAccess") is not True:
                out.append(f"{n}: GCS bucket not private (public access prevention, uniform access)")
            if not any((x.get("action") or {}).get("type") == "AbortIncompleteMultipartUpload"
                       for x in i.get("lifecycleRules") or []):
                out.append(f"{n}: GCS bucket without a lifecycle rule for torn uploads")
        if t == "azure-native:storage:StorageAccount" and i.get("kind") == "StorageV2" and \
                (i.get("allowBlobPublicAccess") is not False or i.get("allowSharedKeyAccess") is not False):
            out.append(f"{n}: storage account allows public blobs or shared keys")
    return out


def _expiring(r: dict) -> bool:
    """A lifecycle rule of this resource deletes objects by age."""
    i, t = r["inputs"], r["type"]
    if t == LIFECYCLE_S3:
        return any(x.get("expiration") for x in i.get("rules") or [])
    if t == "gcp:storage/bucket:Bucket":
        return any((x.get("action") or {}).get("type") == "Delete" for x in i.get("lifecycleRules") or [])
    if t == "azure-native:storage:ManagementPolicy":
        return any(((x.get("definition") or {}).get("actions") or {}).get("baseBlob", {}).get("delete")
                   for x in (i.get("policy") or {}).get("rules") or [])
    return False


def bucket_keeps_checkpoints(plan: "Plan", rs: list[dict]) -> list[str]:
    if plan.spec.job.checkpoint.expire_days:
        return []
    return [f"{r['name']}: a lifecycle rule deletes checkpoints job.checkpoint.expire_days "
            "did not ask to expire" for r in rs if _expiring(r)]


BUCKET_TYPES = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2", "gcp:storage/bucket:Bucket")
AUTHORITATIVE_IAM = ("gcp:storage/bucketIAMBinding:BucketIAMBinding",
                     "gcp:storage/bucketIAMPolicy:BucketIAMPolicy")


def owned_storage(plan: "Plan", rs: list[dict]) -> list[str]:
    from stacks import identity

    made = identity.created(plan)
    mine = {made.bucket} if made is not None else set()
    named = {g.url.bucket for g in identity.grants(plan)} - mine
    out = []
    for r in rs:
        i, t, n = r["inputs"], r["type"], r["name"]
        if r.get("import_id") and not r.get("retain_on_delete"):
            out.append(f"{n}: imported ({r['import_id']}) and not retained on delete: `down` "
                       "would delete what `up` did not create")
        if t in BUCKET_TYPES and str(i.get("bucket") or i.get("name")) not in mine:
            out.append(f"{n}: a bucket resource for {i.get('bucket') or i.get('name')}, which "
                       "the stack does not create (storage.kind: bucket only)")
        if t in AUTHORITATIVE_IAM:
            out.append(f"{n}: {t.rsplit(':', 1)[-1]} replaces the bucket's other grants and "
                       "removes them on destroy (use BucketIAMMember)")
        if t.startswith("aws:s3/") and t not in BUCKET_TYPES and str(i.get("bucket")) in named:
            out.append(f"{n}: a bucket-wide setting on s3://{i['bucket']}, the user's bucket")
    return out


def bucket_scoped(plan: "Plan", rs: list[dict]) -> list[str]:
    out = []
    for r in rs:
        i, t, n = r["inputs"], r["type"], r["name"]
        if t in ("aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy"):
            for st in statements(i.get("policy")):
                if st.get("Effect") != "Allow":
                    continue
                acts, res = _list(st.get("Action")), _list(st.get("Resource"))
                if any(a in ("*", "s3:*") for a in acts):
                    out.append(f"{n}: {'/'.join(a for a in acts if a in ('*', 's3:*'))} grants all of S3")
                s3 = [a for a in acts if a.startswith("s3:")]
                if s3 and any(x in ("*", "arn:aws:s3:::*", "arn:aws:s3:::*/*") for x in res):
                    out.append(f"{n}: {', '.join(s3)} on every bucket")
        # Read-only too: objectViewer on the project reads every bucket in it (image pull is
        # granted on the image's repository, stacks/gcp/registry.py).
        if t == "gcp:projects/iAMMember:IAMMember" and str(i.get("role", "")).startswith("roles/storage."):
            out.append(f"{n}: {i['role']} on the whole project (grant it on the bucket)")
        if t == "azure-native:authorization:RoleAssignment" and \
                str(i.get("roleDefinitionId", "")).rsplit("/", 1)[-1] in BLOB_DATA_ROLES and \
                "/blobServices/default/containers/" not in str(i.get("scope", "")):
            out.append(f"{n}: blob data role above a container ({i.get('scope')})")
    return out
