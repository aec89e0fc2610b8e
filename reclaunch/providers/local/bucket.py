"""cloud: local with checkpoints in an S3 bucket (job.checkpoint.path: s3://BUCKET/PREFIX).

The rehearsal of a cloud's bucket: boto3 at whatever AWS_ENDPOINT_URL names (MinIO, a moto
server in tests; botocore honours the variable, nothing here overrides it). Facts travel in
launch.json's "bucket" entry, so `down` needs no spec.

What the user owns stays theirs. `up` creates a bucket only for storage.kind: bucket and only
when no bucket of that name answers; it records the creation (bucket, endpoint, cluster, time)
in DIR/bucket.json the moment S3 says it is made, before tagging it. An existing bucket is
never adopted: S3 in us-east-1 answers 200 to re-creating a bucket you already own, so neither
that answer nor BucketAlreadyOwnedByYou says who made it; only our record does. Tags are merged
into the bucket's own. `down` deletes the job's prefix only, and the bucket itself only when
this cluster's record says it created it there and nothing else is left in it (another
cluster's checkpoints, a teammate's data). `--keep-storage` keeps both.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from reclaunch.errors import MissingExtraError, ProviderError
from reclaunch.tags import CLUSTER_TAG, MANAGED_TAG

RECORD = "bucket.json"   # DIR/bucket.json: what `up` created, kept until `down` deletes it
PREFIX_RECORD = "prefix.json"   # DIR/prefix.json: your bucket's prefix, empty when `up` took it


def _client():
    """S3 with the project's timeouts and retries, each call inside its total deadline (a
    trickling endpoint must not hang `up` or `down`)."""
    try:
        import boto3  # noqa: F401
    except ImportError:
        raise MissingExtraError("boto3", "s3") from None
    from reclaunch.providers.aws.sdk import client
    return client("s3")


def facts(spec: Any) -> dict | None:
    """What `down` needs to know about the job's bucket (None: checkpoints are on disk)."""
    from reclaunch.spec.buckets import is_url, parse

    if not is_url(spec.job.checkpoint.path):
        return None
    u = parse(spec.job.checkpoint.path)
    return {"bucket": u.bucket, "prefix": u.prefix, "create": spec.storage.kind == "bucket"}


def created_by(root: Path) -> dict | None:
    """DIR/bucket.json: {bucket, prefix, endpoint, cluster, created_at} when `up` created a
    bucket (`down` finds it there even when `up` stopped before writing launch.json)."""
    from reclaunch.providers.local import proc as lp

    rec = lp.read_json(root / RECORD)
    return rec if rec and isinstance(rec.get("bucket"), str) else None


def _code(exc: Exception) -> str:
    return str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))


def _exists(s3, bucket: str) -> bool:
    """A bucket of that name answers (ours, anyone's: 403 is someone else's)."""
    from botocore.exceptions import ClientError

    try:
        s3.head_bucket(Bucket=bucket)
        return True
    except ClientError as exc:
        if _code(exc) in ("404", "NoSuchBucket", "NotFound"):
            return False
        raise


def _merge_tags(s3, bucket: str, name: str) -> None:
    """Add ours to the bucket's tags (PutBucketTagging replaces the whole set)."""
    from botocore.exceptions import ClientError

    try:
        have = s3.get_bucket_tagging(Bucket=bucket).get("TagSet", [])
    except ClientError as exc:
        if _code(exc) != "NoSuchTagSet":
            raise
        have = []
    ours = {CLUSTER_TAG: name, MANAGED_TAG: "true"}
    keep = [t for t in have if t.get("Key") not in ours]
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": keep + [
        {"Key": k, "Value": v} for k, v in ours.items()]})


def ensure(name: str, info: dict, root: Path) -> str:
    """storage.kind bucket: create the bucket (or find the one this cluster created); a named
    bucket: check it exists. Never takes over a bucket `up` did not create. -> what was done."""
    from botocore.exceptions import BotoCoreError, ClientError

    from reclaunch.providers.local import proc as lp

    s3, bucket = _client(), info["bucket"]
    endpoint = s3.meta.endpoint_url
    info["endpoint"] = endpoint
    mine = created_by(root)
    if mine and (mine["bucket"], mine.get("endpoint")) != (bucket, endpoint):
        raise ProviderError(
            f"{name} created the bucket s3://{mine['bucket']} at {mine.get('endpoint')}; this "
            f"spec names s3://{bucket} at {endpoint}: nothing changed",
            hint=f"`reclaunch down {name}` first (it deletes what that bucket holds of {name})")
    try:
        if not info["create"]:
            s3.head_bucket(Bucket=bucket)
            _prefix_is_ours(s3, info, root, endpoint)
            return f"using your bucket s3://{bucket}/{info['prefix']} (`down` deletes that prefix only)"
        exists = _exists(s3, bucket)
        if exists and mine is None:
            raise ProviderError(
                f"storage.kind: bucket: s3://{bucket} already exists and `up` did not create "
                "it; reclaunch never takes over (or deletes) a bucket it did not make",
                hint="to use it, set storage.kind: none (then `down` deletes only the job's "
                     "prefix), or name a new bucket in job.checkpoint.path")
        if not exists:
            s3.create_bucket(Bucket=bucket)
            # Recorded before anything else can fail: `down` deletes exactly what this says.
            lp.write_json(root / RECORD, {"bucket": bucket, "prefix": info["prefix"], "endpoint": endpoint,
                                          "cluster": name, "created_at": time.time()})
        what = "reusing" if exists else "created"   # reusing: ours, kept by --keep-storage
        _merge_tags(s3, bucket, name)
        return (f"{what} bucket s3://{bucket} for {name} (`down` deletes it once "
                f"{info['prefix']}/ is its only content)")
    except (ClientError, BotoCoreError) as exc:
        raise ProviderError(f"checkpoint bucket s3://{bucket}: {str(exc).splitlines()[0][:200]}",
                            hint=_fix(info)) from None


def _prefix_is_ours(s3, info: dict, root: Path, endpoint: str) -> None:
    """Your bucket (storage.kind: none): `down` deletes the job's prefix, so `up` takes only an
    empty one, and records it (DIR/prefix.json) so that a re-run of `up` finds it its own."""
    from reclaunch.providers.local import proc as lp

    bucket, prefix = info["bucket"], str(info["prefix"]).strip("/")
    rec = lp.read_json(root / PREFIX_RECORD)
    if rec and (rec.get("bucket"), rec.get("prefix"), rec.get("endpoint")) == (bucket, prefix, endpoint):
        return
    n = s3.list_objects_v2(Bucket=bucket, Prefix=prefix + "/", MaxKeys=1000).get("KeyCount", 0)
    if n:
        raise ProviderError(
            f"s3://{bucket}/{prefix}/ holds {n if n < 1000 else 'at least 1000'} object(s) that "
            "`up` did not write, and `down` deletes that prefix: nothing changed",
            hint="choose another (empty) prefix in job.checkpoint.path")
    lp.write_json(root / PREFIX_RECORD, {"bucket": bucket, "prefix": prefix, "endpoint": endpoint})


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
    if not info.get("create"):
        parts.append("or set storage.kind: bucket to have `up` create the bucket")
    return "; ".join(parts)


def describe(store: dict, root: Path) -> str:
    """What `down` would delete of the bucket, for its confirmation."""
    prefix = str(store.get("prefix", "")).strip("/")
    mine = created_by(root)
    text = f"the objects under s3://{store['bucket']}/{prefix}/"
    if mine and mine["bucket"] == store["bucket"]:
        text += f" and the bucket s3://{store['bucket']} (created by `up`) if nothing else is in it"
    return text


def delete(store: dict, root: Path) -> str:
    """Delete the job's prefix, then the bucket when `up` created it and it is empty -> what
    was done. Nothing at all when the endpoint is not the one the bucket was used at."""
    from botocore.exceptions import BotoCoreError, ClientError

    s3, bucket = _client(), store["bucket"]
    prefix = str(store.get("prefix", "")).strip("/")
    if not prefix:   # the spec requires one; without it "our objects" would be all of them
        return f"kept s3://{bucket}: no prefix of this job's to delete"
    endpoint, used = s3.meta.endpoint_url, store.get("endpoint")
    if used and used != endpoint:
        raise ProviderError(f"s3://{bucket} was used at {used}, but S3 is now {endpoint}: "
                            "nothing deleted there", hint=f"set AWS_ENDPOINT_URL={used} and "
                            "rerun `reclaunch down`")
    mine = created_by(root)
    mine = mine if mine and mine["bucket"] == bucket and mine.get("endpoint") == endpoint else None
    n = 0
    try:
        from reclaunch.providers.aws.pages import pages   # a repeated token ends, loudly
        for page in pages(s3.list_objects_v2, {"Bucket": bucket, "Prefix": prefix + "/"},
                          token_in="ContinuationToken", token_out="NextContinuationToken",
                          what=f"listing s3://{bucket}/{prefix}/"):
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if keys:    # DeleteObjects takes at most 1000 keys: one page
                s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
                n += len(keys)
        done = f"deleted {n} objects under s3://{bucket}/{prefix}/"
        (root / PREFIX_RECORD).unlink(missing_ok=True)
        if mine is None:
            return done + ("" if store.get("create") is False else "; the bucket is not one "
                           "`up` created: kept")
        if s3.list_objects_v2(Bucket=bucket, MaxKeys=1).get("KeyCount", 0):
            return done + (f"; kept bucket s3://{bucket}: it holds objects outside {prefix}/, "
                           "not this job's")
        s3.delete_bucket(Bucket=bucket)
        (root / RECORD).unlink(missing_ok=True)
        return done + f" and the bucket s3://{bucket} (`up` created it)"
    except ClientError as exc:
        if _code(exc) == "NoSuchBucket":
            if mine:
                (root / RECORD).unlink(missing_ok=True)
            return f"bucket s3://{bucket} was already gone"
        if _code(exc) == "BucketNotEmpty":   # versions or uploads outside our prefix
            return f"deleted {n} objects under s3://{bucket}/{prefix}/; kept bucket s3://{bucket}: not empty"
        raise ProviderError(f"could not empty s3://{bucket}/{prefix}/: {str(exc).splitlines()[0][:200]}",
                            hint="rerun `reclaunch down`, or delete the objects yourself") from None
    except BotoCoreError as exc:
        raise ProviderError(f"could not reach s3://{bucket}: {exc}") from None
