"""stacks/policy.py's policies over what the AKS stack creates: one function per policy,
named after it (stacks.policy.rules_of reads them for StackFacts.policy_rules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stacks.policy import WORLD, get, keeps_checkpoints, owns_only, world_open

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

BROAD_ROLES = ("8e3af657-a8ff-443c-a75c-2fe8c4bcb635",   # Owner
               "b24988ac-6180-42a0-ab88-20f7382dd24c")   # Contributor
# learn.microsoft.com/azure/role-based-access-control/built-in-roles/storage
BLOB_DATA_ROLES = ("ba92f5b4-2d11-453d-a403-e96b0029c9fe",   # Storage Blob Data Contributor
                   "b7e6dc6d-f1e8-4753-8033-0f276bb0955b",   # Storage Blob Data Owner
                   "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1")   # Storage Blob Data Reader
CLUSTER = "azure-native:containerservice:ManagedCluster"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"


def _role(r: dict) -> str:
    return str(r["inputs"].get("roleDefinitionId", "")).rsplit("/", 1)[-1]


def control_plane_private(plan: "Plan", rs: list[dict]) -> list[str]:
    out = []
    for r in rs:
        if r["type"] == CLUSTER:
            acc = r["inputs"].get("apiServerAccessProfile") or {}
            ranges = acc.get("authorizedIPRanges") or []
            if not acc.get("enablePrivateCluster") and (not ranges or world_open(ranges, plan)):
                out.append(f"{r['name']}: AKS API server reachable from anywhere")
    return out


def no_world_ssh(plan: "Plan", rs: list[dict]) -> list[str]:
    return [f"{r['name']}: SSH open to the world" for r in rs
            for rule in r["inputs"].get("securityRules") or []
            if rule.get("direction") == "Inbound" and rule.get("access") == "Allow"
            and rule.get("sourceAddressPrefix") in WORLD
            and rule.get("destinationPortRange") in ("22", "*")]


def _host_encryption(plan: "Plan", name: str, pool: dict) -> list[str]:
    """Each pool as the spec says (true/false), and by default as `up` resolved it
    (stacks/azure/host_encryption.py: on where the size and the subscription allow)."""
    from stacks.azure.host_encryption import settings

    on = bool(pool.get("enableEncryptionAtHost"))
    want = plan.spec.security.encryption_at_host
    expected = want if want is not None else settings(plan).get(str(pool.get("vmSize")), False)
    return [] if on == expected else [f"{name}: encryption at host {'on' if on else 'off'}, "
                                      f"expected {'on' if expected else 'off'}"]


def volumes_encrypted(plan: "Plan", rs: list[dict]) -> list[str]:
    out = []
    for r in rs:
        i, t = r["inputs"], r["type"]
        if t == "azure-native:containerservice:AgentPool":
            out += _host_encryption(plan, r["name"], i)
        if t == CLUSTER:
            for prof in i.get("agentPoolProfiles") or []:
                out += _host_encryption(plan, f"{r['name']}/{prof.get('name')}", prof)
        service = "file" if i.get("kind") == "FileStorage" else "blob"   # Files share / checkpoint blobs
        if t == "azure-native:storage:StorageAccount" and \
                get(i, f"encryption.services.{service}.enabled") is not True:
            out.append(f"{r['name']}: {service} encryption off")
    return out


def scoped_iam(plan: "Plan", rs: list[dict]) -> list[str]:
    return [f"{r['name']}: Owner/Contributor role assigned" for r in rs
            if r["type"] == ROLE_ASSIGNMENT and _role(r) in BROAD_ROLES]


def gpu_pools_pinned(plan: "Plan", rs: list[dict]) -> list[str]:
    """GPU nodes are never upgraded or reimaged under a job by the cloud."""
    out = []
    for r in rs:
        if r["type"] == CLUSTER:
            prof = r["inputs"].get("autoUpgradeProfile") or {}
            if prof.get("upgradeChannel", "none") != "none" or \
                    prof.get("nodeOSUpgradeChannel") not in ("None", "Unmanaged"):
                out.append(f"{r['name']}: AKS upgrades or reimages nodes automatically")
    return out


def bucket_private(plan: "Plan", rs: list[dict]) -> list[str]:
    """A created account: no public blob access, no shared keys."""
    return [f"{r['name']}: storage account allows public blobs or shared keys" for r in rs
            if r["type"] == "azure-native:storage:StorageAccount" and r["inputs"].get("kind") == "StorageV2"
            and (r["inputs"].get("allowBlobPublicAccess") is not False
                 or r["inputs"].get("allowSharedKeyAccess") is not False)]


def _deletes_blobs(r: dict) -> bool:
    """A lifecycle management policy rule that deletes base blobs by age."""
    return r["type"] == "azure-native:storage:ManagementPolicy" and any(
        ((x.get("definition") or {}).get("actions") or {}).get("baseBlob", {}).get("delete")
        for x in (r["inputs"].get("policy") or {}).get("rules") or [])


def bucket_keeps_checkpoints(plan: "Plan", rs: list[dict]) -> list[str]:
    return keeps_checkpoints(plan, rs, _deletes_blobs)


def owned_storage(plan: "Plan", rs: list[dict]) -> list[str]:
    # A container the user named gets a role assignment at its scope only (bucket-scoped): the
    # stack creates no account or container resource for it to own.
    return owns_only(plan, rs, ())


def bucket_scoped(plan: "Plan", rs: list[dict]) -> list[str]:
    """No Storage Blob Data role above a container."""
    return [f"{r['name']}: blob data role above a container ({r['inputs'].get('scope')})"
            for r in rs if r["type"] == ROLE_ASSIGNMENT and _role(r) in BLOB_DATA_ROLES
            and "/blobServices/default/containers/" not in str(r["inputs"].get("scope", ""))]
