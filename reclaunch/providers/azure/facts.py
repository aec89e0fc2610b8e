"""Azure (AKS): every fact the pure layers need, as data (reclaunch/clouds.py reads this file
without importing the provider package; nothing here may import an SDK or the runtime)."""

from fractions import Fraction

from reclaunch.clouds import ETHERNET, CloudFacts, FabricFacts, PreviewFacts

INFINIBAND = FabricFacts(
    "infiniband", addons=("network-operator", "nic-cluster-policy", "nvidia-peermem-reloader"),
    # One VM scale set is one InfiniBand fabric: a pool's nodes reach each other, not others'.
    node_group=True,
    # Azure/aks-rdma-infiniband tests/setup-infra/deploy-aks.sh registers this first.
    prerequisites=("feature AKSInfinibandSupport must be Registered: `az feature register "
                   "--namespace Microsoft.ContainerService --name AKSInfinibandSupport`, then "
                   "`az provider register -n Microsoft.ContainerService`",))


def _outputs(typ: str, name: str, inputs: dict) -> dict:
    return {
        # Inputs list identity ids; the output is a map keyed by id.
        "azure-native:containerservice:ManagedCluster": {
            "identity": {"type": "UserAssigned", "userAssignedIdentities": {}},
            "oidcIssuerProfile": {"issuerURL": f"https://eastus.oic.prod-aks.azure.com/mock/{name}/"}},
        # Workload identity (stacks/azure/bucket.py) reads these back into the job's ServiceAccount.
        "azure-native:managedidentity:UserAssignedIdentity": {
            "clientId": "00000000-0000-0000-0000-0000000c1d00", "principalId": f"{name}-principal"},
        # A documentation address (RFC 5737) for the NAT gateway's public IP.
        "azure-native:network:PublicIPAddress": {"ipAddress": "198.51.100.10"},
        "azure-native:keyvault:Key": {"keyUriWithVersion": "https://kv-mock.vault.azure.net/keys/etcd/0123456789abcdef"},
        "azure-native:storagecache:AmlFilesystem": {"clientInfo": {"mgsAddress": "10.1.0.4"}},
    }.get(typ, {})


def _calls(token: str, args: dict, region: str) -> dict:
    import base64

    kubeconfig = base64.b64encode(b"apiVersion: v1\nkind: Config\n").decode()
    return {
        "azure-native:authorization:getClientConfig": {
            "clientId": "00000000-0000-0000-0000-00000000c11e", "objectId":
            "00000000-0000-0000-0000-0000000000b1", "subscriptionId":
            "00000000-0000-0000-0000-000000000500", "tenantId":
            "00000000-0000-0000-0000-000000000700"},
        "azure-native:containerservice:listManagedClusterUserCredentials": {
            "kubeconfigs": [{"name": "clusterUser", "value": kubeconfig}]},
        "azure-native:containerservice:listManagedClusterAdminCredentials": {
            "kubeconfigs": [{"name": "clusterAdmin", "value": kubeconfig}]},
    }.get(token, {})


def _zone_names(region: str, zone_ids: tuple[str, ...]) -> tuple[str, ...]:
    # Logical zones 1, 2 and 3 in every zone-enabled region (learn.microsoft.com/azure/
    # reliability/availability-zones-overview); the catalog has no Azure zone data.
    return ("1", "2", "3")


FACTS = CloudFacts(
    name="azure", aliases=("microsoft", "aks", "microsoft-azure"), zone_names=_zone_names, kind="kube", provider="reclaunch.providers.azure", stack="stacks.azure",
    storage=("azure-lustre", "azure-files", "cephfs", "pvc", "bucket", "none"),
    reservation_kinds=("azure-crg",),
    encryption_at_host=True,   # the others always encrypt at the host
    fabrics=(INFINIBAND, ETHERNET),
    addons=("nvidia-device-plugin", "azurelustre-csi-driver", "aks-node-daemonsets"),
    # learn.microsoft.com/azure/aks/spot-node-pool: spot pools get this taint and label.
    spot_tolerations=({"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal",
                       "value": "spot", "effect": "NoSchedule"},),
    capacity_labels={"kubernetes.azure.com/scalesetpriority": {"spot": "spot",
                                                               "regular": "on-demand"}},
    allocatable={
        "source": "learn.microsoft.com/azure/aks/node-resource-reservations (AKS >= 1.29: "
                  "kube-reserved CPU table; memory min(20 MB x max pods + 50 MB, 25%); "
                  "eviction memory.available<100Mi); max pods 250 (Azure CNI overlay default). "
                  "CPU above 64 cores extends the table's last slope (10m per core).",
        # nominal -> kubelet capacity: 512 MiB + 4% covers the Azure rows of
        # catalog/data/node_figures.csv (measured: 1.7-4.2%); no ND-series node was found.
        "capacity_overhead": {"fixed_mib": 512, "fraction": Fraction(4, 100)},
        "cpu_points": ((1, 60), (2, 100), (4, 140), (8, 180), (16, 260), (32, 420), (64, 740)),
        "per_pod_mib": 20, "base_mib": 50, "max_pods": 250,
        "memory_cap_fraction": Fraction(1, 4),
        "eviction_mib": 100,
    },
    # Azure Dsv5 sizes (learn.microsoft.com/azure/virtual-machines/dv5-dsv5-series), 2026-11.
    system_shapes={"Standard_D2s_v5": (2, 8), "Standard_D4s_v5": (4, 16),
                   "Standard_D8s_v5": (8, 32)},
    planner={
        # Azure publishes no reclaim rates: the ">20%/month" bucket (0.20 / 730 h), conservatively.
        "reclaim_rate_per_node_hour": 0.000274,
        # No per-family rates published: the ">20%" bucket read as 20-30%/month (assumption).
        "reclaim_band": (0.20, 0.30),
        "control_plane_usd_per_hour": 0.0,     # prices.md: AKS Free tier 0
        "pvc_usd_per_gb_month": 0.10,          # assumption (prices.md has no Azure disk line)
        # Spot eviction: "at least 30 seconds" of notice through Scheduled Events (Preempt)
        # (learn.microsoft.com/azure/virtual-machines/spot-vms).
        "reclaim_notice_seconds": 30,
    },
    preview=PreviewFacts(sdk_packages={"azure-native": "pulumi_azure_native"},
                         outputs=_outputs, calls=_calls),
)
