"""Azure (AKS): every fact the pure layers need, as data (reclaunch/clouds.py reads this file
without importing the provider package; nothing here may import an SDK or the runtime)."""

from fractions import Fraction

from reclaunch.clouds import (BUCKET, CEPHFS, ETHERNET, NO_STORAGE, PVC, CloudFacts, Existing,
                              FabricFacts, ObjectStore, PreviewFacts, ReservationKind, StorageKind,
                              Steps)

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


def _lustre_volume(plan, existing: str) -> dict:
    # github.com/kubernetes-sigs/azurelustre-csi-driver docs/static-provisioning.
    return {"csi": {"driver": "azurelustre.csi.azure.com", "volumeHandle": f"{plan.name}-lustre",
                    "volumeAttributes": {"mgs-ip-address": existing, "fs-name": "lustrefs"}}}


def _files_volume(plan, existing: str) -> dict:
    # An NFS share: the in-tree `nfs` volume (kubernetes.io/docs/concepts/storage/volumes/#nfs).
    account, share = existing.split("/", 1)
    return {"nfs": {"server": f"{account}.file.core.windows.net", "path": f"/{account}/{share}"}}


# Azure Managed Lustre sells capacity per SKU in fixed steps, from one step up to a maximum
# (learn.microsoft.com/azure/azure-managed-lustre/amlfs-overview, "Throughput configurations":
# Premium-40: 48 TiB steps up to 768 TiB; Premium-125: 16 TiB up to 128 TiB; Premium-250:
# 8 TiB up to 128 TiB; Premium-500: 4 TiB up to 128 TiB; larger by support request).
# Dated 2026-11-30. The stack creates AMLFS_SKU (stacks/azure/storage.py).
AMLFS_SKUS = {  # sku -> (step TiB, max TiB)
    "AMLFS-Durable-Premium-40": (48, 768),
    "AMLFS-Durable-Premium-125": (16, 128),
    "AMLFS-Durable-Premium-250": (8, 128),
    "AMLFS-Durable-Premium-500": (4, 128),
}
AMLFS_SKU = "AMLFS-Durable-Premium-250"
_AMLFS_STEP, _AMLFS_MAX = (1024 * tib for tib in AMLFS_SKUS[AMLFS_SKU])
# Price: an assumption (not in prices.md), as FSx for Lustre.
AZURE_LUSTRE = StorageKind(
    "azure-lustre", sized=True, created_by_stack=True, resource_hints=("lustre", "amlfilesystem"),
    steps=Steps(((_AMLFS_STEP, _AMLFS_STEP, _AMLFS_MAX),)), usd_per_gb_month=0.145,
    existing=Existing("<MGS IP address>", "10.0.4.5", _lustre_volume),
    created_in=(1200, "assumption: Azure Managed Lustre deployments take 10-20+ min (learn."
                      "microsoft.com azure-managed-lustre create-file-system-portal gives none)"))
# learn.microsoft.com/azure/storage/files/understanding-billing: premium (SSD, NFS) shares are
# provisioned from 100 GiB in 1 GiB steps and billed as provisioned. Price: an assumption (not
# in prices.md): Azure Files premium.
AZURE_FILES = StorageKind(
    "azure-files", sized=True, created_by_stack=True,
    resource_hints=("storageaccount", "fileshare", "share"),
    steps=Steps(((100, 1, None),)), usd_per_gb_month=0.16,
    existing=Existing("<storage account>/<share>", "mystorageacct/data", _files_volume),
    created_in=(60, "assumption: a storage account + premium file share ~1 min"))

# Blob storage through AKS workload identity (stacks/azure/bucket.py). Containers:
# learn.microsoft.com/rest/api/storageservices/naming-and-referencing-containers--blobs--and-
# metadata (3-63, lowercase, digits, single hyphens); accounts: learn.microsoft.com/azure/
# storage/common/storage-account-overview#storage-account-name (3-24 lowercase and digits).
BLOB = ObjectStore(
    ("az", "abfs", "abfss"), "azblob", "adlfs",
    (r"[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]", "3-63 lowercase letters, digits or single hyphens"),
    account_rule=(r"[a-z0-9]{3,24}", "an Azure storage account name (3-24 lowercase letters and digits)"),
    account_host="dfs.core.windows.net",
    account_form="abfs://{bucket}@ACCOUNT.dfs.core.windows.net/{prefix}",
    # A role assignment's scope is a resource id (learn.microsoft.com/azure/role-based-access-
    # control/scope-overview): a container's is its storage account's id + /blobServices/
    # default/containers/NAME, and the account's resource group is not in the URL.
    grant_scope=(r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Storage/"
                 r"storageAccounts/(?P<account>[a-z0-9]{3,24})",
                 "the storage account's resource id, /subscriptions/SUB/resourceGroups/RG/"
                 "providers/Microsoft.Storage/storageAccounts/ACCOUNT"))

# Time to first step on this target (planner/startup.py): the steps before the file-system
# join, in order; `per_node` adds seconds per node beyond the first; `billed`: GPU VMs exist
# and bill meanwhile.
STARTUP = {
    "steps": [
        {"name": "AKS control plane", "seconds": 600, "billed": False,
         "source": ("kubedex.com google-gke-vs-azure-aks (2019, updated): AKS create improved from"
                    " over 18 to ~10 min; 'Is Azure Kubernetes (AKS) any less terrible?' AKS "
                    "claims 5-6 min")},
        {"name": "GPU node pool boot to Ready", "seconds": 240, "per_node": 2, "billed": True,
         "source": ("assumption: ND-series VM scale set provisioning + AKS node bootstrap ~4 min "
                    "(tensorfuse.io 2025: GPU instances 80-120 s to boot)")},
        {"name": "GPU driver + device plugins", "seconds": 120, "billed": True,
         "source": ("assumption: AKS-managed GPU driver on the node image; nvidia-device-plugin, "
                    "Network Operator and nvidia-peermem DaemonSets ~2 min (k8s/addons.yaml)")},
    ],
}


FACTS = CloudFacts(
    name="azure", aliases=("microsoft", "aks", "microsoft-azure"), zone_names=_zone_names, kind="kube",
    storage=(AZURE_LUSTRE, AZURE_FILES, CEPHFS, PVC, BUCKET, NO_STORAGE),
    object_stores=(BLOB,),
    # A capacity reservation group, by its resource id.
    reservation_kinds=(ReservationKind(
        "azure-crg",
        r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/"
        r"Microsoft\.Compute/capacityReservationGroups/[^/]+",
        "/subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Compute/"
        "capacityReservationGroups/<name>"),),
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
        # catalog/data/node_figures.csv (measured: 1.6-4.2%; an ND40rs_v2 on AKS 1.29 1.6%).
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
        "startup": STARTUP,
        # Checkpoints in a bucket (planner/bucket_cost.py): Blob Storage Hot LRS, East US.
        "bucket_prices": {"storage_usd_per_gb_month": 0.0184,  # first 50 TB
                          "write_usd_per_1000": 0.0055,        # write operations, Hot tier
                          "read_usd_per_1000": 0.00044,        # read operations, Hot tier
                          "as_of": "2026-12-01",
                          "source": ("azure.microsoft.com/pricing/details/storage/blobs (Block blob,"
                                     " Hot, LRS, East US; write $0.055 / read $0.0044 per 10,000), "
                                     "as of 2026-12-01")},
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
    compute_types=("azure-native:containerservice:",),
    preview=PreviewFacts(sdk_packages={"azure-native": "pulumi_azure_native"},
                         outputs=_outputs, calls=_calls),
    pip_extra="azure",
    sdk_modules=("azure.identity", "azure.mgmt.compute", "pulumi", "pulumi_azure_native",
                 "pulumi_kubernetes", "kubernetes"),
)
