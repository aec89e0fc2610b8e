"""What the GKE, Compute, KMS, Filestore and IAM APIs refuse in the inputs stacks/gcp gives,
for the fields listed here only (stacks/refusals.py says what such a check covers). The
installed pulumi_gcp types every one of them as a plain string and ships no schema with
enums, so the allowed values are the APIs' own as the SDK documents them (each value is in
the installed pulumi_gcp's docstring for its field: tests/stacks/test_gke_fixes.py reads them
there, so a table that drifts from the SDK fails), and the name limits are the APIs'."""

from __future__ import annotations

from typing import Any

from stacks.refusals import NameRule, enum_refusals, name_refusals

# cloud.google.com/compute/docs/naming-resources: 1-63, [a-z]([-a-z0-9]*[a-z0-9])?
RFC1035 = r"[a-z]([-a-z0-9]*[a-z0-9])?"
_COMPUTE = "cloud.google.com/compute/docs/naming-resources"
NAMES = {
    "gcp:compute/network:Network": NameRule("name", 63, RFC1035, _COMPUTE),
    "gcp:compute/subnetwork:Subnetwork": NameRule("name", 63, RFC1035, _COMPUTE),
    "gcp:compute/router:Router": NameRule("name", 63, RFC1035, _COMPUTE),
    "gcp:compute/routerNat:RouterNat": NameRule("name", 63, RFC1035, _COMPUTE),
    "gcp:compute/firewall:Firewall": NameRule("name", 63, RFC1035, _COMPUTE),
    # cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters
    # #Cluster.FIELDS.name: "at most 40 characters", lowercase letters, digits and hyphens,
    # starting with a letter and ending with a letter or digit; node pools the same.
    "gcp:container/cluster:Cluster": NameRule("name", 40, RFC1035, "GKE Cluster.name"),
    "gcp:container/nodePool:NodePool": NameRule("name", 40, RFC1035, "GKE NodePool.name"),
    # cloud.google.com/iam/docs/reference/rest/v1/projects.serviceAccounts/create: accountId
    # 6-30 characters, [a-z]([-a-z0-9]*[a-z0-9])
    "gcp:serviceaccount/account:Account": NameRule(
        "accountId", 30, RFC1035, "IAM serviceAccounts.create accountId", min_len=6, auto=False),
    # cloud.google.com/kms/docs/reference/rest/v1/projects.locations.keyRings/create:
    # keyRingId and cryptoKeyId match [a-zA-Z0-9_-]{1,63}
    "gcp:kms/keyRing:KeyRing": NameRule("name", 63, r"[a-zA-Z0-9_-]+", "KMS keyRings.create"),
    "gcp:kms/cryptoKey:CryptoKey": NameRule("name", 63, r"[a-zA-Z0-9_-]+", "KMS cryptoKeys.create"),
    # cloud.google.com/filestore/docs/reference/rest/v1/projects.locations.instances/create
    "gcp:filestore/instance:Instance": NameRule("name", 63, RFC1035, "Filestore instanceId"),
}

_TAINT = ("NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE")
ENUMS: dict[str, dict[str, tuple[str, ...]]] = {
    "gcp:container/nodePool:NodePool": {
        "nodeConfig.taints[].effect": _TAINT,
        "nodeConfig.workloadMetadataConfig.mode": ("GCE_METADATA", "GKE_METADATA",
                                                   "MODE_UNSPECIFIED"),
        "autoscaling.locationPolicy": ("BALANCED", "ANY"),
    },
    "gcp:container/cluster:Cluster": {
        "nodeConfig.taints[].effect": _TAINT,
        "maintenancePolicy.maintenanceExclusions[].exclusionOptions.scope": (
            "NO_UPGRADES", "NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"),
    },
    "gcp:compute/routerNat:RouterNat": {
        "natIpAllocateOption": ("MANUAL_ONLY", "AUTO_ONLY"),
        "sourceSubnetworkIpRangesToNat": ("ALL_SUBNETWORKS_ALL_IP_RANGES",
                                          "ALL_SUBNETWORKS_ALL_PRIMARY_IP_RANGES",
                                          "LIST_OF_SUBNETWORKS"),
    },
    "gcp:filestore/instance:Instance": {
        "networks[].modes[]": ("ADDRESS_MODE_UNSPECIFIED", "MODE_IPV4", "MODE_IPV6"),
    },
}
SOURCE = "the API's values, as the installed pulumi_gcp documents the field"


def refusals(typ: str, name: str, inputs: dict[str, Any]) -> list[str]:
    out = []
    rule = NAMES.get(typ)
    if rule is not None:
        out += name_refusals(rule, name, inputs)
    allowed = {path: (values, SOURCE) for path, values in ENUMS.get(typ, {}).items()}
    return out + enum_refusals(allowed, inputs)
