"""Azure storage for the job: Azure Files (NFS premium) or Azure Managed Lustre."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from reclaunch.planner.storage_size import billed_gib
# The SKUs' steps and the one the stack creates are facts of the storage kind (its steps come
# from them). A size between steps is rounded up, with a warning.
from reclaunch.providers.azure.facts import AMLFS_SKU, AMLFS_SKUS
from stacks import common as c
from stacks.azure.identity import account_name

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


def amlfs_capacity_tib(size_bytes: int | None, sku: str = AMLFS_SKU) -> tuple[int, str | None]:
    """(TiB to buy, note when rounded). ValueError, one line, when over what the SKU sells."""
    step, most = AMLFS_SKUS[sku]
    want = (size_bytes or 0) / 2**40
    tib = max(step, math.ceil(want / step - 1e-9) * step)
    if tib > most:
        raise ValueError(f"storage.size {want:g} TiB is over the {most} TiB {sku} sells "
                         f"without a support request; use a smaller size or ask Azure support")
    note = (None if abs(tib - want) < 1e-9 else
            f"storage.size {want:g} TiB rounded up to {tib} TiB: {sku} sells {step} TiB steps")
    return tib, note


def storage(az, pulumi, k8s, plan: "Plan", rg, vnet, subnet, nsg, tags, provider, addons,
            ns, lustre_subnet: str):
    kind = plan.spec.storage.kind
    if kind == "cephfs":
        return c.cephfs_storage_class(k8s, pulumi, plan, provider).metadata["name"]
    if kind == "azure-files":
        # NFS premium share: encrypted at rest (always), reachable only from the node subnet
        # through its service endpoint.
        # Named, not auto-named: azure-native appends 8 characters to a logical name, past
        # the 24 a storage account may have for any cluster name over 11 letters
        # (pulumi/pulumi-azure-native#4294). A stack made before keeps its account: a new
        # name would replace it, and the share's data with it.
        account = az.storage.StorageAccount(
            c.name(plan, "files").replace("-", "")[:24], account_name=account_name(plan, "files"),
            resource_group_name=rg.name, opts=pulumi.ResourceOptions(ignore_changes=["accountName"]),
            kind="FileStorage", sku={"name": "Premium_LRS"}, tags=tags,
            enable_https_traffic_only=False,   # NFS 4.1 does not use HTTPS; network-restricted
            minimum_tls_version="TLS1_2", allow_blob_public_access=False,
            allow_shared_key_access=False,
            encryption={"key_source": "Microsoft.Storage", "require_infrastructure_encryption": True,
                        "services": {"file": {"enabled": True, "key_type": "Account"}}},
            network_rule_set={"default_action": "Deny", "virtual_network_rules": [
                {"virtual_network_resource_id": subnet.id}]})
        gib = int(billed_gib(kind, plan.spec.storage.size))   # the kind's steps (its facts)
        share = az.storage.FileShare(c.name(plan, "data"), resource_group_name=rg.name,
                                     account_name=account.name, share_name="data",
                                     enabled_protocols="NFS", root_squash="NoRootSquash",
                                     share_quota=gib)
        c.data_volume(k8s, pulumi, plan, provider, namespace=ns, driver="file.csi.azure.com",
                      handle=share.id, capacity_gib=gib,
                      attributes={"resourceGroup": rg.name, "storageAccount": account.name,
                                  "shareName": "data", "protocol": "nfs"})
        return share.id
    if kind == "azure-lustre":
        tib, note = amlfs_capacity_tib(plan.spec.storage.size)
        if note:
            c.warn(note)
        # Its own subnet in the cluster's VNet (amlfs network prerequisites); clients reach
        # it on the Lustre ports inside the VNet, which the NSG's default rules allow.
        sub = az.network.Subnet(c.name(plan, "lustre"), resource_group_name=rg.name,
                                virtual_network_name=vnet.name, address_prefix=lustre_subnet,
                                network_security_group={"id": nsg.id},
                                default_outbound_access=False)
        # Encrypted at rest with Microsoft-managed keys (always on for AMLFS).
        fs = az.storagecache.AmlFilesystem(
            c.name(plan, "amlfs"), resource_group_name=rg.name, tags=tags,
            sku={"name": AMLFS_SKU}, storage_capacity_ti_b=tib,
            filesystem_subnet=sub.id, zones=plan.zones[:1] or ["1"],
            maintenance_window={"day_of_week": "Sunday", "time_of_day_utc": "03:00"})
        c.data_volume(k8s, pulumi, plan, provider, namespace=ns,
                      driver="azurelustre.csi.azure.com",
                      handle=fs.id, capacity_gib=tib * 1024, depends_on=addons,
                      attributes={"mgs-ip-address": fs.client_info.mgs_address,
                                  "fs-name": "lustrefs"})
        return fs.id
    return None
