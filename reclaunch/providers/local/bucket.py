"""cloud: local with checkpoints in an S3 bucket (job.checkpoint.path: s3://BUCKET/PREFIX).

The rehearsal of a cloud's bucket: boto3 at whatever AWS_ENDPOINT_URL names (MinIO, a moto
server in tests; botocore honours the variable, nothing here overrides it). With storage.kind
bucket, `up` creates the bucket (tagged like every resource reclaunch makes) and `down` deletes
it with its objects; with a bucket the user named (storage.kind none), `down` deletes only the
job's prefix. `--keep-storage` keeps both. Facts travel in launch.json's "bucket" entry, so
`down` needs no spec.
"""

from __future__ import annotations

from typing import Any

from reclaunch.errors import MissingExtraError, ProviderError
from reclaunch.tags import CLUSTER_TAG, MANAGED_TAG


def _client():
    try:
        import boto3
    except ImportError:
        raise MissingExtraError("boto3", "s3") from None
    return boto3.client("s3")


def facts(spec: Any) -> dict | None:
    """What `down` needs to know about the job's bucket (None: checkpoints are on disk)."""
    from reclaunch.spec.buckets import is_url, parse

    if not is_url(spec.job.checkpoint.path):
        return None
    u = parse(spec.job.checkpoint.path)
    return {"bucket": u.bucket, "prefix": u.prefix, "created": spec.storage.kind == "bucket"}


def ensure(name: str, info: dict) -> str:
    """Create the bucket when the spec asks for one (idempotent); check a named one exists."""
    from botocore.exceptions import BotoCoreError, ClientError

    s3, bucket = _client(), info["bucket"]
    try:
        if info["created"]:
            try:
                s3.create_bucket(Bucket=bucket)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "BucketAlreadyOwnedByYou":
                    raise
            s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [
                {"Key": CLUSTER_TAG, "Value": name}, {"Key": MANAGED_TAG, "Value": "true"}]})
            return f"created s3://{bucket}"
        s3.head_bucket(Bucket=bucket)
        return f"using s3://{bucket}"
    except (ClientError, BotoCoreError) as exc:
        raise ProviderError(f"checkpoint bucket s3://{bucket}: {str(exc).splitlines()[0][:200]}",
                            hint=_fix(info)) from None


def _fix(info: dict) -> str:
    """What to do, from what is missing: never to set what the spec already sets."""
    import os

    parts = []
    if not (os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")):
        parts.append("AWS_ENDPOINT_URL is not set, so this went to AWS itself: start an S3 "
                     "endpoint (`python -m moto.server -p 5000`, or MinIO) and `export "
                     "AWS_ENDPOINT_URL=http://127.0.0.1:5000` (moto takes any AWS_ACCESS_KEY_ID "
                     "and AWS_SECRET_ACCESS_KEY), or give AWS credentials for a real bucket")
    else:
        parts.append("check that AWS_ENDPOINT_URL answers and its credentials "
                     "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) are accepted")
    if not info.get("created"):
        parts.append("or set storage.kind: bucket to have `up` create the bucket")
    return "; ".join(parts)


def delete(info: dict) -> str:
    """Delete the job's objects (the whole bucket when reclaunch created it) -> what was done."""
    from botocore.exceptions import BotoCoreError, ClientError

    s3, bucket = _client(), info["bucket"]
    prefix = "" if info["created"] else info["prefix"].rstrip("/") + "/"
    n = 0
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if keys:    # DeleteObjects takes at most 1000 keys: one page
                s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
                n += len(keys)
        if info["created"]:
            s3.delete_bucket(Bucket=bucket)
            return f"deleted bucket s3://{bucket} ({n} objects)"
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "NoSuchBucket":
            return f"bucket s3://{bucket} was already gone"
        raise ProviderError(f"could not empty s3://{bucket}/{prefix}: {str(exc).splitlines()[0][:200]}",
                            hint="rerun `reclaunch down`, or delete the objects yourself") from None
    except BotoCoreError as exc:
        raise ProviderError(f"could not reach s3://{bucket}: {exc}") from None
    return f"deleted {n} objects under s3://{bucket}/{prefix}"
