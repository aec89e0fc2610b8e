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
    # Where a stack can grant its job identity rights on a bucket it did not create only with
    # the id of what holds it: (regex storage.existing must match, with an `account` group
    # when the URL names one too; what it is). None: the bucket's name is enough.
    grant_scope: tuple[str, str] | None = None


# S3: docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html (3-63, lowercase,
# digits, dots, hyphens, start/end alphanumeric). GCS: cloud.google.com/storage/docs/buckets
# #naming (same shape for names without dots). Azure containers: learn.microsoft.com/rest/api/
# storageservices/naming-and-referencing-containers--blobs--and-metadata (3-63, lowercase,
# digits, single hyphens). cloud: local talks S3 to whatever AWS_ENDPOINT_URL names (MinIO, moto);
# cloud: kubernetes (a cluster the team has) reaches any store with the identity it gives pods.
_S3 = (r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", "3-63 lowercase letters, digits, dots or hyphens")
_AZ = (r"[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]", "3-63 lowercase letters, digits or single hyphens")
# An Azure role assignment's scope is a resource id (learn.microsoft.com/azure/role-based-access-
# control/scope-overview): a container's is its storage account's id + /blobServices/default/
# containers/NAME, and the account's resource group is not in the URL.
_AZ_SCOPE = (r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Storage/"
             r"storageAccounts/(?P<account>[a-z0-9]{3,24})",
             "the storage account's resource id, /subscriptions/SUB/resourceGroups/RG/providers/"
             "Microsoft.Storage/storageAccounts/ACCOUNT")
OBJECT_STORES: dict[str, StoreFacts] = {
    "s3": StoreFacts(("aws", "local", "kubernetes"), "s3", "s3fs", _S3),
    "gs": StoreFacts(("gcp", "kubernetes"), "gcs", "gcsfs", _S3),
    "az": StoreFacts(("azure", "kubernetes"), "azblob", "adlfs", _AZ, _AZ_SCOPE),
    "abfs": StoreFacts(("azure", "kubernetes"), "azblob", "adlfs", _AZ, _AZ_SCOPE),
    "abfss": StoreFacts(("azure", "kubernetes"), "azblob", "adlfs", _AZ, _AZ_SCOPE),
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


def problems(path: str, cloud: str, *, created: bool, want_prefix: bool,
             existing: str | None = None, manual: bool = False) -> list[str]:
    """What is wrong with `path` as an object-store URL for `cloud` ([] = fine).
    created: storage.kind is bucket (the stack makes it, so an Azure account is the stack's);
    existing: storage.existing; manual: security.bucket_grants is manual."""
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
    if not created and not manual:
        out += _grant_scope(u, facts, cloud, existing)
    return out


def grant_scope(url: BucketURL, existing: str | None) -> str | None:
    """The id a stack grants the job's identity on for `url`'s bucket, when its store needs one
    (StoreFacts.grant_scope) and storage.existing gives it; None otherwise."""
    scope = OBJECT_STORES[url.scheme].grant_scope
    m = re.fullmatch(scope[0], existing or "") if scope else None
    return m.group(0) if m else None


def _grant_scope(u: BucketURL, facts: StoreFacts, cloud: str, existing: str | None) -> list[str]:
    """A bucket the job needs but the stack cannot grant it on: refused before anything bills
    (the first checkpoint would be a 403 with the GPUs up)."""
    from reclaunch import clouds

    if facts.grant_scope is None or not clouds.known(cloud) or clouds.get(cloud).kind != "kube":
        return []        # the name is enough, or the cluster is the team's (its identity)
    pattern, what = facts.grant_scope
    m = re.fullmatch(pattern, existing or "")
    if m is None:
        return [f"`up` can give the job's identity rights on {u.scheme}://{u.bucket} only with "
                f"storage.existing set to {what}; or set security.bucket_grants: manual and "
                "grant them yourself once `up` has made the identity"]
    if u.account and m.groupdict().get("account") not in (None, u.account):
        return [f"storage.existing names the storage account {m.group('account')}, the URL "
                f"{u.account}"]
    return []


def created_bucket(spec) -> str | None:
    """The URL of the bucket `up` creates for the checkpoints (storage.kind: bucket), which
    up's and down's confirmations name; None when `up` creates none (a bucket the user named
    is theirs)."""
    path = spec.job.checkpoint.path
    if spec.storage.kind != "bucket" or not is_url(path):
        return None
    u = parse(path)
    return BucketURL(u.scheme, u.bucket, "", u.account).url
