"""What Azure Resource Manager refuses in the names stacks/azure gives (or lets azure-native
make: the logical name plus 8 characters, pulumi/pulumi-azure-native#4294). Enum values are
checked against the installed SDK's own enums (reclaunch/runtime/sdk_enums.py); the names are
checked here, for the types listed, with the limits of learn.microsoft.com/azure/
azure-resource-manager/management/resource-name-rules (table per resource provider; read
2026-12), which azure-native does not ship in its Python SDK."""

from __future__ import annotations

from typing import Any

from stacks.refusals import NameRule, name_refusals

RULES_PAGE = "learn.microsoft.com/azure/azure-resource-manager/management/resource-name-rules"
_NETWORK = r"[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9_])?"   # alphanumeric first, [\w.-], \w last
_LOWER_DASHED = r"[a-z0-9]+(-[a-z0-9]+)*"                 # no leading, trailing or double '-'


def _rule(field: str, lo: int, hi: int, pattern: str, entity: str) -> NameRule:
    return NameRule(field, hi, pattern, f"{RULES_PAGE}, {entity}", min_len=lo)


NAMES = {
    "azure-native:storage:StorageAccount":
        _rule("accountName", 3, 24, r"[a-z0-9]+", "Microsoft.Storage/storageAccounts"),
    "azure-native:storage:BlobContainer":
        _rule("containerName", 3, 63, _LOWER_DASHED, "storageAccounts/blobServices/containers"),
    "azure-native:storage:FileShare":
        _rule("shareName", 3, 63, _LOWER_DASHED, "storageAccounts/fileServices/shares"),
    "azure-native:keyvault:Vault":
        _rule("vaultName", 3, 24, r"[A-Za-z](?!.*--)[A-Za-z0-9-]*[A-Za-z0-9]",
              "Microsoft.KeyVault/vaults"),
    "azure-native:containerservice:ManagedCluster":
        _rule("resourceName", 1, 63, r"[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?",
              "Microsoft.ContainerService/managedClusters"),
    "azure-native:containerservice:AgentPool":
        _rule("agentPoolName", 1, 12, r"[a-z][a-z0-9]*", "managedClusters/agentPools (Linux)"),
    "azure-native:resources:ResourceGroup":
        _rule("resourceGroupName", 1, 90, r"[-\w.()]*[-\w()]", "resourceGroups"),
    "azure-native:network:VirtualNetwork":
        _rule("virtualNetworkName", 2, 64, _NETWORK, "Microsoft.Network/virtualNetworks"),
    "azure-native:network:Subnet":
        _rule("subnetName", 1, 80, _NETWORK, "virtualNetworks/subnets"),
    "azure-native:network:NetworkSecurityGroup":
        _rule("networkSecurityGroupName", 1, 80, _NETWORK, "networkSecurityGroups"),
    "azure-native:network:NatGateway":
        _rule("natGatewayName", 1, 80, _NETWORK, "natGateways"),
    "azure-native:network:PublicIPAddress":
        _rule("publicIpAddressName", 1, 80, _NETWORK, "publicIPAddresses"),
    "azure-native:managedidentity:UserAssignedIdentity":
        _rule("resourceName", 3, 128, r"[A-Za-z0-9][A-Za-z0-9_-]*",
              "Microsoft.ManagedIdentity/userAssignedIdentities"),
}


# learn.microsoft.com/azure/azure-resource-manager/management/tag-resources, "Limits".
MAX_TAGS, MAX_TAG_NAME, MAX_TAG_VALUE = 50, 512, 256
TAG_NAME_FORBIDS = set('<>%&\\?/')


def tag_refusals(tags: Any) -> list[str]:
    if not isinstance(tags, dict):
        return []
    out = [f"tags: {len(tags)} tags; a resource takes at most {MAX_TAGS}"] \
        if len(tags) > MAX_TAGS else []
    for k, v in tags.items():
        if len(k) > MAX_TAG_NAME or TAG_NAME_FORBIDS & set(k):
            out.append(f"tags: the name {k!r} is over {MAX_TAG_NAME} characters or holds one "
                       f"of {''.join(sorted(TAG_NAME_FORBIDS))}")
        if isinstance(v, str) and len(v) > MAX_TAG_VALUE:
            out.append(f"tags: the value of {k!r} is over {MAX_TAG_VALUE} characters")
    return out


def refusals(typ: str, name: str, inputs: dict[str, Any]) -> list[str]:
    rule = NAMES.get(typ)
    return [*(name_refusals(rule, name, inputs) if rule else []),
            *tag_refusals(inputs.get("tags"))]
