"""S3 checkpoints: the bucket (storage.kind: bucket) and the job's EKS Pod Identity on its prefix.

Compared field by field with the vendor's own examples:
- Pod Identity role: trust `pods.eks.amazonaws.com` with sts:AssumeRole + sts:TagSession and an
  `aws_eks_pod_identity_association` on (namespace, service account), as in
  aws-ia/terraform-aws-eks-blueprints and terraform-aws-modules/terraform-aws-eks-pod-identity
  (main.tf), and docs.aws.amazon.com/eks/latest/userguide/pod-id-association.html. The
  eks-pod-identity-agent add-on is installed by program.py (EKS_ADDONS).
- The policy: s3:ListBucket on the bucket ARN with an `s3:prefix` condition, object actions on
  `arn:aws:s3:::BUCKET/PREFIX/*` only (docs.aws.amazon.com/AmazonS3/latest/userguide/
  example-policies-s3.html, "Allow ... to a folder"); no s3:* and no Resource "*".
- The bucket: Block Public Access all four on, BucketOwnerEnforced (ACLs off), SSE-KMS with the
  cluster's key and an S3 Bucket Key (docs.aws.amazon.com/AmazonS3/latest/userguide/
  bucket-key.html), a lifecycle rule expiring old checkpoints and aborting torn multipart
  uploads, force_destroy so `down` can delete it with its objects (`--keep-storage` keeps it:
  runtime.infra.storage_keep_set matches "bucket").
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from stacks import common as c
from stacks import identity

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

WRITE_ACTIONS = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload",
                 "s3:ListMultipartUploadParts"]
READ_ACTIONS = ["s3:GetObject"]


def policy(plan: "Plan", kms_arn: str | None = None) -> str:
    """The job role's inline policy: each granted prefix, nothing else."""
    statements = []
    for i, g in enumerate(identity.grants(plan)):
        u, prefix = g.url, g.url.prefix.rstrip("/")
        objects = f"arn:aws:s3:::{u.bucket}/{prefix}/*" if prefix else f"arn:aws:s3:::{u.bucket}/*"
        statements.append({"Sid": f"List{i}", "Effect": "Allow", "Action": ["s3:ListBucket"],
                           "Resource": [f"arn:aws:s3:::{u.bucket}"],
                           **({"Condition": {"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}}}
                              if prefix else {})})
        statements.append({"Sid": f"Objects{i}", "Effect": "Allow",
                           "Action": WRITE_ACTIONS if g.write else READ_ACTIONS,
                           "Resource": [objects]})
    if kms_arn:   # SSE-KMS: writing and reading objects uses the bucket's key
        statements.append({"Sid": "BucketKey", "Effect": "Allow",
                           "Action": ["kms:GenerateDataKey", "kms:Decrypt"], "Resource": [kms_arn]})
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def _bucket(aws: Any, pulumi: Any, plan: "Plan", tags: dict, kms: Any) -> Any:
    u = identity.created(plan)
    b = aws.s3.Bucket(c.name(plan, "ckpt"), bucket=u.bucket, force_destroy=True, tags=tags)
    aws.s3.BucketPublicAccessBlock(c.name(plan, "ckpt-private"), bucket=b.id,
                                   block_public_acls=True, block_public_policy=True,
                                   ignore_public_acls=True, restrict_public_buckets=True)
    aws.s3.BucketOwnershipControls(c.name(plan, "ckpt-owner"), bucket=b.id,
                                   rule={"object_ownership": "BucketOwnerEnforced"})
    aws.s3.BucketServerSideEncryptionConfiguration(
        c.name(plan, "ckpt-sse"), bucket=b.id, rules=[{
            "apply_server_side_encryption_by_default": {"sse_algorithm": "aws:kms",
                                                        "kms_master_key_id": kms.arn},
            "bucket_key_enabled": True}])
    prefix = (u.prefix.rstrip("/") + "/") if u.prefix else ""
    days = identity.expire_days(plan)
    # docs.aws.amazon.com/AmazonS3/latest/userguide/mpu-abort-incomplete-mpu-lifecycle-config.html
    aws.s3.BucketLifecycleConfiguration(c.name(plan, "ckpt-lifecycle"), bucket=b.id, rules=[{
        "id": "abort-torn-uploads", "status": "Enabled", "filter": {"prefix": prefix},
        "abort_incomplete_multipart_upload": {"days_after_initiation": identity.ABORT_UPLOADS_DAYS}},
        *([{"id": "expire-checkpoints", "status": "Enabled", "filter": {"prefix": prefix},
            "expiration": {"days": days}}] if days else [])])
    return b


def bucket_and_identity(aws: Any, pulumi: Any, k8s: Any, plan: "Plan", *, tags: dict, kms: Any,
                        cluster: Any, provider: Any, namespace: Any, role: Any,
                        depends_on: list) -> Any:
    """-> the bucket's id (a storage id `down --keep-storage` keeps), or None."""
    if not identity.grants(plan):
        return None
    b = _bucket(aws, pulumi, plan, tags, kms) if identity.created(plan) else None
    # Our key only encrypts the bucket we create; a named bucket's own key is the user's grant.
    doc = kms.arn.apply(lambda arn: policy(plan, arn)) if b is not None else policy(plan)
    aws.iam.RolePolicy(c.name(plan, "trainer-s3", max_len=128, auto=True), role=role.id, policy=doc)
    sa = identity.kube_service_account(k8s, pulumi, plan, provider, namespace,
                                     depends_on=depends_on)
    aws.eks.PodIdentityAssociation(c.name(plan, "trainer-pia"), cluster_name=cluster.name,
                                   namespace=plan.spec.namespace,
                                   service_account=identity.service_account(plan),
                                   role_arn=role.arn, tags=tags,
                                   opts=pulumi.ResourceOptions(depends_on=[sa]))
    return b.id if b is not None else None
