"""Policy checks over a preview (the resource dicts `reclaunch.runtime.preview.preview` returns), in
the spirit of Pulumi CrossGuard: each finding is a line a reviewer would block a deploy on.

    findings = check(plan, resources)      # [] when every policy holds

Pure: reads only the recorded inputs, so it runs under mocks: the tests run it over every
example on every cloud, and `reclaunch preview` runs it on the user's spec (its findings are
`policy` in `preview --json`, and any finding makes preview exit 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from reclaunch.tags import CLUSTER_TAG, MANAGED_TAG
from stacks import bucket_policy

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

WORLD = ("0.0.0.0/0", "::/0", "*", "Internet", "Any")
# Managed policies / roles that grant a whole service (or everything) over the whole account
# where a scoped statement does the job.
BROAD_AWS_POLICIES = ("AdministratorAccess", "PowerUserAccess", "AutoScalingFullAccess",
                      "AmazonEC2FullAccess", "IAMFullAccess")
BROAD_GCP_ROLES = ("roles/owner", "roles/editor", "roles/iam.securityAdmin",
                   # image pull on every registry of the project: grant it on the repository
                   "roles/artifactregistry.reader")
BROAD_AZURE_ROLES = ("8e3af657-a8ff-443c-a75c-2fe8c4bcb635",   # Owner
                     "b24988ac-6180-42a0-ab88-20f7382dd24c")   # Contributor
READ_ONLY_PREFIXES = ("Describe", "Get", "List")


def _get(d: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d


def tagged(plan: "Plan", rs: list[dict]) -> list[str]:
    out = []
    for r in rs:
        if r["taggable"] and (r["tags"].get(CLUSTER_TAG) != plan.name
                              or r["tags"].get(MANAGED_TAG) != "true"):
            out.append(f"{r['name']} ({r['type']}): missing {CLUSTER_TAG}/{MANAGED_TAG} tags")
    return out


def _open(cidrs: list[str], plan: "Plan") -> bool:
    """World-open and not asked for in `security.api_cidrs`."""
    asked = set(plan.spec.security.api_cidrs)
    return any(x in WORLD and x not in asked for x in cidrs)


def control_plane_private(plan: "Plan", rs: list[dict]) -> list[str]:
    out = []
    for r in rs:
        i, t = r["inputs"], r["type"]
        if t == "aws:eks/cluster:Cluster":
            vpc = i.get("vpcConfig") or {}
            # EKS's default publicAccessCidrs is 0.0.0.0/0 when the endpoint is public.
            cidrs = vpc.get("publicAccessCidrs") or ["0.0.0.0/0"]
            if vpc.get("endpointPublicAccess", True) and _open(cidrs, plan):
                out.append(f"{r['name']}: EKS API endpoint open to {cidrs}")
        elif t == "azure-native:containerservice:ManagedCluster":
            acc = i.get("apiServerAccessProfile") or {}
            ranges = acc.get("authorizedIPRanges") or []
            if not acc.get("enablePrivateCluster") and (not ranges or _open(ranges, plan)):
                out.append(f"{r['name']}: AKS API server reachable from anywhere")
        elif t == "gcp:container/cluster:Cluster":
            private = _get(i, "privateClusterConfig.enablePrivateEndpoint") is True
            blocks = [b.get("cidrBlock") for b in
                      _get(i, "masterAuthorizedNetworksConfig.cidrBlocks") or []]
            if not private and (not blocks or _open(blocks, plan)):
                out.append(f"{r['name']}: GKE control plane reachable from anywhere")
    return out


def _ssh_rule_open(rule: dict) -> bool:
    lo, hi = rule.get("fromPort", 0), rule.get("toPort", 65535)
    proto = str(rule.get("protocol", "-1"))
    covers_22 = proto in ("-1", "tcp", "6", "all") and (lo <= 22 <= hi or (lo, hi) == (0, 0))
    cidrs = (rule.get("cidrBlocks") or []) + (rule.get("ipv6CidrBlocks") or [])
    return covers_22 and any(c in WORLD for c in cidrs)


def no_world_ssh(plan: "Plan", rs: list[dict]) -> list[str]:
    out = []
    for r in rs:
        i, t = r["inputs"], r["type"]
        if t.startswith("aws:ec2/securityGroup"):
            out += [f"{r['name']}: SSH open to the world" for rule in i.get("ingress") or []
                    if _ssh_rule_open(rule)]
        if t == "gcp:compute/firewall:Firewall":
            ports = [p for a in i.get("allows") or [] for p in a.get("ports") or ["0-65535"]]
            if set(i.get("sourceRanges") or []) & set(WORLD) and any(
                    p == "22" or (p.partition("-")[2] and
                                  int(p.partition("-")[0]) <= 22 <= int(p.partition("-")[2]))
                    for p in ports):
                out.append(f"{r['name']}: SSH open to the world")
        for rule in i.get("securityRules") or []:
            if rule.get("direction") == "Inbound" and rule.get("access") == "Allow" and \
                    rule.get("sourceAddressPrefix") in WORLD and \
                    rule.get("destinationPortRange") in ("22", "*"):
                out.append(f"{r['name']}: SSH open to the world")
    return out


def _key_usable_by_asg(rs: list[dict], key_ref: str) -> bool:
    """A customer key in a launch template must let the Auto Scaling service-linked role use
    it (AWS doc: key-policy-requirements-EBS-encryption)."""
    for r in rs:
        if r["type"] == "aws:kms/key:Key" and r["name"] in key_ref:
            return "AWSServiceRoleForAutoScaling" in str(r["inputs"].get("policy") or "")
    return False


def volumes_encrypted(plan: "Plan", rs: list[dict]) -> list[str]:
    out = []
    for r in rs:
        i, t = r["inputs"], r["type"]
        if t == "aws:ec2/launchTemplate:LaunchTemplate":
            for bd in i.get("blockDeviceMappings") or []:
                ebs = bd.get("ebs") or {}
                if str(ebs.get("encrypted")).lower() != "true":
                    out.append(f"{r['name']}: EBS volume not encrypted")
                elif ebs.get("kmsKeyId") and not _key_usable_by_asg(rs, str(ebs["kmsKeyId"])):
                    out.append(f"{r['name']}: EBS key not usable by the Auto Scaling "
                               "service-linked role (launches would fail)")
        if t == "aws:efs/fileSystem:FileSystem" and i.get("encrypted") is not True:
            out.append(f"{r['name']}: EFS not encrypted")
        if t == "aws:fsx/lustreFileSystem:LustreFileSystem" and not i.get("kmsKeyId"):
            out.append(f"{r['name']}: FSx without a customer key")
        if t == "azure-native:containerservice:AgentPool":
            out += _host_encryption(plan, r["name"], i)
        if t == "azure-native:containerservice:ManagedCluster":
            for prof in i.get("agentPoolProfiles") or []:
                out += _host_encryption(plan, f"{r['name']}/{prof.get('name')}", prof)
        service = "file" if i.get("kind") == "FileStorage" else "blob"   # Files share / checkpoint blobs
        if t == "azure-native:storage:StorageAccount" and \
                _get(i, f"encryption.services.{service}.enabled") is not True:
            out.append(f"{r['name']}: {service} encryption off")
    return out


def _host_encryption(plan: "Plan", name: str, pool: dict) -> list[str]:
    """Each pool as the spec says (true/false), and by default as `up` resolved it
    (stacks/azure/host_encryption.py: on where the size and the subscription allow)."""
    from stacks.azure.host_encryption import settings

    on = bool(pool.get("enableEncryptionAtHost"))
    want = plan.spec.security.encryption_at_host
    expected = want if want is not None else settings(plan).get(str(pool.get("vmSize")), False)
    return [] if on == expected else [f"{name}: encryption at host {'on' if on else 'off'}, "
                                      f"expected {'on' if expected else 'off'}"]


_statements = bucket_policy.statements


def scoped_iam(plan: "Plan", rs: list[dict]) -> list[str]:
    out = []
    for r in rs:
        i, t = r["inputs"], r["type"]
        if t == "aws:iam/rolePolicyAttachment:RolePolicyAttachment" and \
                str(i.get("policyArn", "")).rsplit("/", 1)[-1] in BROAD_AWS_POLICIES:
            out.append(f"{r['name']}: {i['policyArn']} grants a whole service account-wide")
        if t in ("aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy"):
            for st in _statements(i.get("policy")):
                acts = st.get("Action") or []
                acts = [acts] if isinstance(acts, str) else acts
                res = st.get("Resource") or []
                res = [res] if isinstance(res, str) else res
                writes = [a for a in acts if not a.split(":")[-1].startswith(READ_ONLY_PREFIXES)]
                if st.get("Effect") == "Allow" and "*" in res and writes:
                    out.append(f"{r['name']}: {', '.join(writes)} on every resource")
        if t == "gcp:projects/iAMMember:IAMMember" and i.get("role") in BROAD_GCP_ROLES:
            out.append(f"{r['name']}: {i['role']} on the project")
        if t == "azure-native:authorization:RoleAssignment" and \
                str(i.get("roleDefinitionId", "")).rsplit("/", 1)[-1] in BROAD_AZURE_ROLES:
            out.append(f"{r['name']}: Owner/Contributor role assigned")
    return out


def gpu_pools_pinned(plan: "Plan", rs: list[dict]) -> list[str]:
    """GPU nodes are never upgraded or reimaged under a job by the cloud."""
    out = []
    for r in rs:
        i, t = r["inputs"], r["type"]
        if t == "gcp:container/nodePool:NodePool" and _get(i, "nodeConfig.guestAccelerators"):
            if _get(i, "management.autoUpgrade") is not False:
                out.append(f"{r['name']}: GPU node pool auto-upgrades")
        if t == "gcp:container/cluster:Cluster" and \
                _get(i, "releaseChannel.channel") not in ("UNSPECIFIED", None):
            out.append(f"{r['name']}: a release channel forces node auto-upgrade")
        if t == "azure-native:containerservice:ManagedCluster":
            prof = i.get("autoUpgradeProfile") or {}
            if prof.get("upgradeChannel", "none") != "none" or \
                    prof.get("nodeOSUpgradeChannel") not in ("None", "Unmanaged"):
                out.append(f"{r['name']}: AKS upgrades or reimages nodes automatically")
    return out


def engine_rules(plan: "Plan", rs: list[dict]) -> list[str]:
    """What preview's checks find the real engine or the cloud's API would refuse and the
    mocks accept (duplicate URNs, enum values the SDK's API version lacks, the names, values
    and field rules of stacks/<cloud>/api_rules.py): preview records them per resource
    (reclaunch/runtime/preview.py, `engine`, whose docstring says what is covered)."""
    return [f"{r['name']} ({r['type']}): {p}" for r in rs for p in r.get("engine") or ()]


POLICIES: dict[str, Callable[["Plan", list[dict]], list[str]]] = {
    "engine-rules": engine_rules, "tagged": tagged, "control-plane-private": control_plane_private,
    "no-world-ssh": no_world_ssh, "volumes-encrypted": volumes_encrypted,
    "scoped-iam": scoped_iam, "gpu-pools-pinned": gpu_pools_pinned,
    "bucket-private": bucket_policy.bucket_private, "bucket-scoped": bucket_policy.bucket_scoped,
    "bucket-keeps-checkpoints": bucket_policy.bucket_keeps_checkpoints,
    "owned-storage": bucket_policy.owned_storage,
}


def check(plan: "Plan", resources: list[dict]) -> list[str]:
    """Every finding, `policy: message`; [] when all hold."""
    return [f"{name}: {msg}" for name, fn in POLICIES.items() for msg in fn(plan, resources)]
