"""stacks/policy.py's policies over what the GKE stack creates: one function per policy,
named after it (stacks.policy.rules_of reads them for StackFacts.policy_rules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stacks.policy import WORLD, get, keeps_checkpoints, owns_only, world_open

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

BROAD_ROLES = ("roles/owner", "roles/editor", "roles/iam.securityAdmin",
               # image pull on every registry of the project: grant it on the repository
               "roles/artifactregistry.reader")
BUCKET = "gcp:storage/bucket:Bucket"
AUTHORITATIVE_IAM = ("gcp:storage/bucketIAMBinding:BucketIAMBinding",
                     "gcp:storage/bucketIAMPolicy:BucketIAMPolicy")


def control_plane_private(plan: "Plan", rs: list[dict]) -> list[str]:
    out = []
    for r in rs:
        if r["type"] == "gcp:container/cluster:Cluster":
            i = r["inputs"]
            private = get(i, "privateClusterConfig.enablePrivateEndpoint") is True
            blocks = [b.get("cidrBlock") for b in
                      get(i, "masterAuthorizedNetworksConfig.cidrBlocks") or []]
            if not private and (not blocks or world_open(blocks, plan)):
                out.append(f"{r['name']}: GKE control plane reachable from anywhere")
    return out


def _covers_22(port: str) -> bool:
    lo, _, hi = port.partition("-")
    return port == "22" or bool(hi) and int(lo) <= 22 <= int(hi)


def no_world_ssh(plan: "Plan", rs: list[dict]) -> list[str]:
    out = []
    for r in rs:
        i = r["inputs"]
        if r["type"] == "gcp:compute/firewall:Firewall":
            ports = [p for a in i.get("allows") or [] for p in a.get("ports") or ["0-65535"]]
            if set(i.get("sourceRanges") or []) & set(WORLD) and any(map(_covers_22, ports)):
                out.append(f"{r['name']}: SSH open to the world")
    return out


def volumes_encrypted(plan: "Plan", rs: list[dict]) -> list[str]:
    # Persistent disks, Filestore and Cloud Storage are encrypted at rest with Google-managed
    # keys and cannot be created unencrypted (cloud.google.com/docs/security/encryption/default-
    # encryption): no setting of the stack can turn it off.
    return []


def scoped_iam(plan: "Plan", rs: list[dict]) -> list[str]:
    return [f"{r['name']}: {r['inputs']['role']} on the project" for r in rs
            if r["type"] == "gcp:projects/iAMMember:IAMMember"
            and r["inputs"].get("role") in BROAD_ROLES]


def gpu_pools_pinned(plan: "Plan", rs: list[dict]) -> list[str]:
    """GPU nodes are never upgraded under a job by the cloud."""
    out = []
    for r in rs:
        i, t = r["inputs"], r["type"]
        if t == "gcp:container/nodePool:NodePool" and get(i, "nodeConfig.guestAccelerators"):
            if get(i, "management.autoUpgrade") is not False:
                out.append(f"{r['name']}: GPU node pool auto-upgrades")
        if t == "gcp:container/cluster:Cluster" and \
                get(i, "releaseChannel.channel") not in ("UNSPECIFIED", None):
            out.append(f"{r['name']}: a release channel forces node auto-upgrade")
    return out


def bucket_private(plan: "Plan", rs: list[dict]) -> list[str]:
    """A created bucket: public access prevention enforced, uniform access, a lifecycle rule
    that aborts torn multipart uploads."""
    out = []
    for r in rs:
        if r["type"] != BUCKET:
            continue
        i, n = r["inputs"], r["name"]
        if i.get("publicAccessPrevention") != "enforced" or i.get("uniformBucketLevelAccess") is not True:
            out.append(f"{n}: GCS bucket not private (public access prevention, uniform access)")
        if not any((x.get("action") or {}).get("type") == "AbortIncompleteMultipartUpload"
                   for x in i.get("lifecycleRules") or []):
            out.append(f"{n}: GCS bucket without a lifecycle rule for torn uploads")
    return out


def bucket_keeps_checkpoints(plan: "Plan", rs: list[dict]) -> list[str]:
    return keeps_checkpoints(plan, rs, lambda r: r["type"] == BUCKET and any(
        (x.get("action") or {}).get("type") == "Delete" for x in r["inputs"].get("lifecycleRules") or []))


def _authoritative(r: dict, named: set[str]) -> list[str]:
    """Only additive grants (BucketIAMMember): a binding or policy replaces the bucket's other
    members and removes them on destroy."""
    t = r["type"]
    return ([f"{r['name']}: {t.rsplit(':', 1)[-1]} replaces the bucket's other grants and "
             "removes them on destroy (use BucketIAMMember)"] if t in AUTHORITATIVE_IAM else [])


def owned_storage(plan: "Plan", rs: list[dict]) -> list[str]:
    return owns_only(plan, rs, (BUCKET,), _authoritative)


def bucket_scoped(plan: "Plan", rs: list[dict]) -> list[str]:
    """No storage role on the project (grant it on the bucket). Read-only too: objectViewer on
    the project reads every bucket in it (image pull is granted on the image's repository,
    stacks/gcp/registry.py)."""
    return [f"{r['name']}: {r['inputs']['role']} on the whole project (grant it on the bucket)"
            for r in rs if r["type"] == "gcp:projects/iAMMember:IAMMember"
            and str(r["inputs"].get("role", "")).startswith("roles/storage.")]
