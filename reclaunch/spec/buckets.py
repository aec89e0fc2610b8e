"""Object-store URLs (s3://, gs://, az://, abfs://, ...) for checkpoints and datasets. Pure
parsing over the registry's object stores.

A checkpoint in a bucket survives a spot reclaim without any shared file system: the trainer
writes it through fsspec (examples/trainer/store.py) and the job's workload identity is scoped
to that bucket and prefix (stacks/*/bucket.py). Which store each target reaches, and what its
names look like, is each cloud's facts (`object_stores`, clouds.ObjectStore); a cluster you
bring (kind "own") reaches any store with the identity it gives pods.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from reclaunch import clouds

# Patterns, not compiled objects: `re` compiles (and caches) them on the first URL, so a spec
# without one never pays for it (issue 25: start-up time).
_URL = r"^([A-Za-z][A-Za-z0-9+.-]*)://([^/]*)(?:/(.*))?$"


class BucketURL(NamedTuple):
    scheme: str
    bucket: str                 # bucket, or container of an account
    prefix: str                 # no leading or trailing slash
    account: str | None = None  # the account a URL names (CONTAINER@ACCOUNT.<host>)

    @property
    def url(self) -> str:
        host = self.bucket
        if self.account:
            host = f"{self.bucket}@{self.account}.{clouds.object_stores()[self.scheme].account_host}"
        return f"{self.scheme}://{host}/{self.prefix}" if self.prefix else f"{self.scheme}://{host}"


def is_url(path: str | None) -> bool:
    return bool(path) and "://" in path


def reachable(cloud: str) -> dict[str, clouds.ObjectStore]:
    """{scheme: store} the cloud's workload identity reaches."""
    if clouds.known(cloud) and clouds.get(cloud).kind == "own":
        return clouds.object_stores()
    mine = clouds.get(cloud).object_stores if clouds.known(cloud) else ()
    return {s: o for o in mine for s in o.schemes}


def parse(path: str) -> BucketURL:
    """'s3://b/p/q/' -> BucketURL('s3', 'b', 'p/q'); ValueError with a one-line reason."""
    m = re.match(_URL, path.strip())
    if not m:
        raise ValueError(f"{path!r} is not a URL such as s3://BUCKET/PREFIX")
    scheme, host, rest = m.group(1).lower(), m.group(2), (m.group(3) or "").strip("/")
    stores = clouds.object_stores()
    if scheme not in stores:
        import difflib   # only for a typo's hint

        close = difflib.get_close_matches(scheme, list(stores), n=1, cutoff=0.3)
        raise ValueError(f"unknown object store {scheme}://"
                         + (f"; did you mean {close[0]}://?" if close else "")
                         + f" (one of {', '.join(s + '://' for s in stores)})")
    store = stores[scheme]
    account = None
    if "@" in host and store.account_rule:
        host, _, acct_host = host.partition("@")
        account = acct_host.split(".", 1)[0]
        pattern, what = store.account_rule
        if not re.fullmatch(pattern, account or ""):
            raise ValueError(f"{account!r} is not {what}")
    pattern, rule = store.name_rule
    if not re.fullmatch(pattern, host):
        raise ValueError(f"{host!r} is not a valid bucket name for {scheme}:// ({rule})")
    if "//" in rest or any(part in (".", "..") for part in rest.split("/")):
        raise ValueError(f"{path!r}: the prefix has an empty, '.' or '..' part")
    return BucketURL(scheme, host, rest, account)


def problems(path: str, cloud: str, *, created: bool, want_prefix: bool,
             existing: str | None = None, manual: bool = False) -> list[str]:
    """What is wrong with `path` as an object-store URL for `cloud` ([] = fine).
    created: storage.kind is bucket (the stack makes it, so the account is the stack's);
    existing: storage.existing; manual: security.bucket_grants is manual."""
    try:
        u = parse(path)
    except ValueError as exc:
        return [str(exc)]
    ours = reachable(cloud)
    if u.scheme not in ours:
        return [f"{u.scheme}:// is not reachable with {cloud}'s workload identity; use "
                + " or ".join(f"{s}://" for s in ours)]
    store = ours[u.scheme]
    out = []
    if want_prefix and not u.prefix:
        out.append(f"name a prefix: {u.scheme}://{u.bucket}/PREFIX (the job's identity gets "
                   "that prefix only, and keep-last-K pruning never touches the rest)")
    if store.account_form and not created and not u.account:
        out.append("name the storage account of an existing container: "
                   + store.account_form.format(bucket=u.bucket, prefix=u.prefix or "PREFIX"))
    if not created and not manual:
        out += _grant_scope(u, store, cloud, existing)
    return out


def grant_scope(url: BucketURL, existing: str | None) -> str | None:
    """The id a stack grants the job's identity on for `url`'s bucket, when its store needs one
    (ObjectStore.grant_scope) and storage.existing gives it; None otherwise."""
    scope = clouds.object_stores()[url.scheme].grant_scope
    m = re.fullmatch(scope[0], existing or "") if scope else None
    return m.group(0) if m else None


def _grant_scope(u: BucketURL, store: clouds.ObjectStore, cloud: str,
                 existing: str | None) -> list[str]:
    """A bucket the job needs but the stack cannot grant it on: refused before anything bills
    (the first checkpoint would be a 403 with the GPUs up)."""
    if store.grant_scope is None or not clouds.known(cloud) or clouds.get(cloud).kind != "kube":
        return []        # the name is enough, or the cluster is the team's (its identity)
    pattern, what = store.grant_scope
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
