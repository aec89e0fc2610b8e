"""Before `up`: the S3 bucket the stack would create (storage.kind: bucket) must not already
exist unless this cluster made it.

S3 answers 200 to CreateBucket for a bucket you already own in us-east-1 ("for legacy
compatibility ... Amazon S3 returns 200 OK and resets the bucket access control lists",
docs.aws.amazon.com/AmazonS3/latest/API/API_CreateBucket.html), and the Terraform-bridged
provider's create calls CreateBucket without looking first (hashicorp/terraform-provider-aws
internal/service/s3/bucket.go resourceBucketCreate, in the version read; a newer one may look,
this costs one HEAD either way). The stack would then adopt the bucket,
replace its tags, and `down` (force_destroy) would empty and delete it with everything in it.
So `up` reads the bucket first: absent, or held in this cluster's own Pulumi state (a re-run
of `up`), is fine; anything else stops `up` before it creates anything: a tag names a
cluster, not a stack, and two people may both call theirs "train". GCS refuses to create a bucket that exists (409) and the Azure account the stack
creates is named for the cluster and region, and azure-native checks existence before it
creates (pulumi/pulumi-azure-native#303), so only S3 needs this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reclaunch.tags import CLUSTER_TAG

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


def foreign(plan: "Plan", client: Any = None, held: Any = None) -> list[str]:
    """One line per bucket the stack would create that exists and is not this stack's.
    `held(bucket)`: whether this cluster's own Pulumi state holds that bucket; the only proof
    of ownership: the cluster tag names a cluster, and a teammate's cluster may share the name."""
    from botocore.exceptions import ClientError

    from stacks import identity

    u = identity.created(plan)
    if u is None:
        return []
    if client is None:
        from reclaunch.providers.aws.sdk import client as bounded
        client = bounded("s3", plan.region)   # timeouts, retries, a total deadline per call
    try:
        client.head_bucket(Bucket=u.bucket)
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in ("404", "NoSuchBucket", "NotFound"):
            return []
        if code in ("403", "Forbidden", "AccessDenied"):
            return [f"s3://{u.bucket} already exists in another account: the stack cannot create it"]
        raise
    try:
        tags = {t["Key"]: t["Value"] for t in client.get_bucket_tagging(Bucket=u.bucket)["TagSet"]}
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "NoSuchTagSet":
            raise
        tags = {}
    if tags.get(CLUSTER_TAG) == plan.name:
        if held is not None and held(u.bucket):
            return []   # a re-run of `up`: this stack made it
        return [f"s3://{u.bucket} already exists, tagged for a cluster named {plan.name!r}, but "
                "this cluster's stack state does not hold it (a teammate's cluster of the same "
                "name, or a stack whose state was lost): `up` would take it over and `down` "
                "would delete it with everything in it"]
    owner = f"cluster {tags[CLUSTER_TAG]!r}" if CLUSTER_TAG in tags else "no reclaunch cluster"
    return [f"s3://{u.bucket} already exists, made by {owner}: with storage.kind: bucket `up` "
            "would take it over and `down` would delete it with everything in it"]
