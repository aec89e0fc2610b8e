"""Object-store URLs (s3://, gs://, az://, abfs://) for checkpoints and datasets. Pure data + parsing.

A checkpoint in a bucket survives a spot reclaim without any shared file system: the trainer
writes it through fsspec (examples/trainer/store.py) and the job's workload identity is scoped
to that bucket and prefix (stacks/*/bucket.py). Which scheme each target reads is data here,
so nothing branches on a cloud name.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class StoreFacts(NamedTuple):
    clouds: tuple[str, ...]     # targets whose workload identity can reach this store
    extra: str                  # the pip extra with its fsspec implementation
    fsspec_package: str
    name_rule: tuple[str, str]  # (regex, what it means) for the bucket / container name


# S3: docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html (3-63, lowercase,
# digits, dots, hyphens, start/end alphanumeric). GCS: cloud.google.com/storage/docs/buckets
# #naming (same shape for names without dots). Azure containers: learn.microsoft.com/rest/api/
# storageservices/naming-and-referencing-containers--blobs--and-metadata (3-63, lowercase,
# digits, single hyphens). cloud: local talks S3 to whatever AWS_ENDPOINT_URL names (MinIO, moto);
# cloud: kubernetes (a cluster the team has) reaches any store with the identity it gives pods.
_S3 = (r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", "3-63 lowercase letters, digits, dots or hyphens")
_AZ = (r"[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]", "3-63 lowercase letters, digits or single hyphens")
OBJECT_STORES: dict[str, StoreFacts] = {
    "s3": StoreFacts(("aws", "local", "kubernetes"), "s3", "s3fs", _S3),
    "gs": StoreFacts(("gcp", "kubernetes"), "gcs", "gcsfs", _S3),
    "az": StoreFacts(("azure", "kubernetes"), "azblob", "adlfs", _AZ),
    "abfs": StoreFacts(("azure", "kubernetes"), "azblob", "adlfs", _AZ),
    "abfss": StoreFacts(("azure", "kubernetes"), "azblob", "adlfs", _AZ),
}
# Azure storage account names: 3-24 lowercase letters and digits (learn.microsoft.com/azure/
# storage/common/storage-account-overview#storage-account-name).
# Patterns, not compiled objects: `re` compiles (and caches) them on the first URL, so a spec
# without one never pays for it (issue 25: start-up time).
_ACCOUNT = r"[a-z0-9]{3,24}"
_URL = r"^([A-Za-z][A-Za-z0-9+.-]*)://([^/]*)(?:/(.*))?$"


class BucketURL(NamedTuple):
    scheme: str
    bucket: str                 # S3/GCS bucket, Azure container
    prefix: str                 # no leading or trailing slash
    account: str | None = None  # Azure storage account (abfs://container@account.dfs.core.windows.net)

    @property
    def url(self) -> str:
        host = f"{self.bucket}@{self.account}.dfs.core.windows.net" if self.account else self.bucket
        return f"{self.scheme}://{host}/{self.prefix}" if self.prefix else f"{self.scheme}://{host}"


def is_url(path: str | None) -> bool:
    return bool(path) and "://" in path


def parse(path: str) -> BucketURL:
    """'s3://b/p/q/' -> BucketURL('s3', 'b', 'p/q'); ValueError with a one-line reason."""
    m = re.match(_URL, path.strip())
    if not m:
        raise ValueError(f"{path!r} is not a URL such as s3://BUCKET/PREFIX")
    scheme, host, rest = m.group(1).lower(), m.group(2), (m.group(3) or "").strip("/")
    if scheme not in OBJECT_STORES:
        import difflib   # only for a typo's hint

        close = difflib.get_close_matches(scheme, list(OBJECT_STORES), n=1, cutoff=0.3)
        raise ValueError(f"unknown object store {scheme}://"
                         + (f"; did you mean {close[0]}://?" if close else "")
                         + f" (one of {', '.join(s + '://' for s in OBJECT_STORES)})")
    account = None
    if "@" in host:
        host, _, acct_host = host.partition("@")
        account = acct_host.split(".", 1)[0]
        if not re.fullmatch(_ACCOUNT, account or ""):
            raise ValueError(f"{account!r} is not an Azure storage account name (3-24 lowercase "
                             "letters and digits)")
    pattern, rule = OBJECT_STORES[scheme].name_rule
    if not re.fullmatch(pattern, host):
        raise ValueError(f"{host!r} is not a valid bucket name for {scheme}:// ({rule})")
    if "//" in rest or any(part in (".", "..") for part in rest.split("/")):
        raise ValueError(f"{path!r}: the prefix has an empty, '.' or '..' part")
    return BucketURL(scheme, host, rest, account)


def problems(path: str, cloud: str, *, created: bool, want_prefix: bool) -> list[str]:
    """What is wrong with `path` as an object-store URL for `cloud` ([] = fine).
    created: storage.kind is bucket (the stack makes it, so an Azure account is the stack's)."""
    try:
        u = parse(path)
    except ValueError as exc:
        return [str(exc)]
    facts = OBJECT_STORES[u.scheme]
    if cloud not in facts.clouds:
        ours = [s for s, f in OBJECT_STORES.items() if cloud in f.clouds]
        return [f"{u.scheme}:// is not reachable with {cloud}'s workload identity; use "
                + " or ".join(f"{s}://" for s in ours)]
    out = []
    if want_prefix and not u.prefix:
        out.append(f"name a prefix: {u.scheme}://{u.bucket}/PREFIX (the job's identity gets "
                   "that prefix only, and keep-last-K pruning never touches the rest)")
    if facts.fsspec_package == "adlfs" and not created and not u.account:
        out.append(f"name the storage account of an existing container: "
                   f"abfs://{u.bucket}@ACCOUNT.dfs.core.windows.net/{u.prefix or 'PREFIX'}")
    return out


def created_bucket(spec) -> str | None:
    """The URL of the bucket `up` creates for the checkpoints (storage.kind: bucket), which
    up's and down's confirmations name; None when `up` creates none (a bucket the user named
    is theirs)."""
    path = spec.job.checkpoint.path
    if spec.storage.kind != "bucket" or not is_url(path):
        return None
    u = parse(path)
    return BucketURL(u.scheme, u.bucket, "", u.account).url
