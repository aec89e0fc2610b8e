"""AKS: private node subnet behind a NAT gateway, an AKS cluster with a system pool, and ND
GPU node pools (spot preferred, regular scaled from zero) in one proximity placement group.

InfiniBand: an ND VM scale set of <= 100 VMs is one placement group, so its nodes share one
IB fabric; the NVIDIA Network Operator exposes the HCAs to pods.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from reclaunch.errors import require
from stacks import common as c

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

VNET_CIDR = "10.1.0.0/16"
NODE_SUBNET = "10.1.0.0/18"
SYSTEM_VM_SIZE = "Standard_D4s_v5"
IB_FABRIC_MAX_VMS = 100      # one VMSS placement group
OS_DISK_GIB = 256


def _network(az, plan: "Plan", rg, tags):
    nsg = az.network.NetworkSecurityGroup(
        c.name(plan, "nsg"), resource_group_name=rg.name, tags=tags,
        security_rules=[{"name": "deny-ssh-internet", "priority": 100, "direction": "Inbound",
                         "access": "Deny", "protocol": "Tcp", "source_address_prefix": "Internet",
                         "source_port_range": "*", "destination_address_prefix": "*",
                         "destination_port_range": "22"}])
    ip = az.network.PublicIPAddress(c.name(plan, "nat-ip"), resource_group_name=rg.name,
                                    sku={"name": "Standard"}, public_ip_allocation_method="Static",
                                    tags=tags)
    nat = az.network.NatGateway(c.name(plan, "nat"), resource_group_name=rg.name,
                                sku={"name": "Standard"}, public_ip_addresses=[{"id": ip.id}],
                                tags=tags)
    vnet = az.network.VirtualNetwork(c.name(plan, "vnet"), resource_group_name=rg.name,
                                     address_space={"address_prefixes": [VNET_CIDR]}, tags=tags)
    subnet = az.network.Subnet(
        c.name(plan, "nodes"), resource_group_name=rg.name, virtual_network_name=vnet.name,
        address_prefix=NODE_SUBNET, nat_gateway={"id": nat.id},
        network_security_group={"id": nsg.id},
        service_endpoints=[{"service": "Microsoft.Storage"}],
        default_outbound_access=False)
    return vnet, subnet


def program(plan: "Plan") -> None:
    pulumi = require("pulumi", "azure")
    az = require("pulumi_azure_native", "azure")
    k8s = require("pulumi_kubernetes", "azure")
    tags = c.tags(plan)
    rg = az.resources.ResourceGroup(c.name(plan, "rg"), location=plan.region, tags=tags)
    vnet, subnet = _network(az, plan, rg, tags)
    identity = az.managedidentity.UserAssignedIdentity(c.name(plan, "id"),
                                                       resource_group_name=rg.name, tags=tags)
    aks = az.containerservice.ManagedCluster(
        c.name(plan, "aks"), resource_group_name=rg.name, resource_name_=c.name(plan),
        dns_prefix=c.name(plan), kubernetes_version=c.KUBERNETES_VERSION, tags=tags,
        identity={"type": "UserAssigned", "user_assigned_identities": [identity.id]},
        sku={"name": "Base", "tier": "Standard"},
        disable_local_accounts=True, enable_rbac=True,
        aad_profile={"managed": True, "enable_azure_rbac": True},
        oidc_issuer_profile={"enabled": True},
        security_profile={"workload_identity": {"enabled": True}},
        network_profile={"network_plugin": "azure", "network_plugin_mode": "overlay",
                         "outbound_type": "userAssignedNATGateway"},
        # Spot first: the priority expander reads the ConfigMap the program writes below.
        auto_scaler_profile={"expander": "priority", "skip_nodes_with_local_storage": "false"},
        agent_pool_profiles=[{
            "name": "system", "mode": "System", "vm_size": SYSTEM_VM_SIZE,
            "count": c.SYSTEM_POOL_SIZE[0], "min_count": c.SYSTEM_POOL_SIZE[0],
            "max_count": c.SYSTEM_POOL_SIZE[1], "enable_auto_scaling": True,
            "vnet_subnet_id": subnet.id, "enable_node_public_ip": False,
            "enable_encryption_at_host": True, "os_disk_type": "Managed",
            "type": "VirtualMachineScaleSets", "tags": tags,
            "node_labels": {c.CLUSTER_TAG: plan.name, c.POOL_LABEL: "system"}}])

    ppg = az.compute.ProximityPlacementGroup(
        c.name(plan, "ppg"), resource_group_name=rg.name, tags=tags,
        proximity_placement_group_type="Standard")
    if plan.max_nodes > IB_FABRIC_MAX_VMS:
        c.warn(f"{plan.max_nodes} nodes exceed one InfiniBand placement group "
               f"({IB_FABRIC_MAX_VMS} VMs): NCCL traffic between groups falls back to TCP")
    pools = {}
    for pool in c.gpu_pools(plan):
        spot = pool.capacity == "spot"
        max_price = c.spot_max_price(plan)
        taints = [f"{c.GPU_TAINT['key']}={c.GPU_TAINT['value']}:{c.GPU_TAINT['effect']}"]
        if spot:  # AKS requires spot pools to carry its own spot taint
            taints.append("kubernetes.azure.com/scalesetpriority=spot:NoSchedule")
        # Pool names: lowercase alphanumeric, <= 12 characters.
        pool_name = pool.key.replace("-", "")[:12]
        pools[pool.key] = az.containerservice.AgentPool(
            c.name(plan, pool.key), resource_group_name=rg.name, resource_name_=aks.name,
            agent_pool_name=pool_name, mode="User", vm_size=plan.instance_type,
            type="VirtualMachineScaleSets", count=pool.desired, min_count=pool.min_nodes,
            max_count=pool.max_nodes, enable_auto_scaling=True,
            scale_set_priority="Spot" if spot else "Regular",
            scale_set_eviction_policy="Delete" if spot else None,
            spot_max_price=(max_price or -1) if spot else None,   # -1: up to on-demand
            availability_zones=plan.zones or None, vnet_subnet_id=subnet.id,
            proximity_placement_group_id=ppg.id, enable_node_public_ip=False,
            enable_encryption_at_host=True, os_disk_type="Managed",
            os_disk_size_gb=OS_DISK_GIB, kubelet_disk_type="OS", os_sku="Ubuntu",
            node_taints=taints, node_labels=c.node_labels(plan, pool), tags=tags,
            opts=pulumi.ResourceOptions(ignore_changes=["count"]))

    creds = az.containerservice.list_managed_cluster_user_credentials_output(
        resource_group_name=rg.name, resource_name=aks.name, format="exec")
    kubeconfig = creds.kubeconfigs[0].value.apply(lambda v: base64.b64decode(v).decode())
    provider = k8s.Provider(c.name(plan, "k8s"), kubeconfig=kubeconfig,
                            opts=pulumi.ResourceOptions(depends_on=list(pools.values())))
    priorities = "\n".join(f"{p.priority}:\n  - .*{p.key.replace('-', '')[:12]}.*"
                           for p in c.gpu_pools(plan))
    k8s.core.v1.ConfigMap(c.name(plan, "expander"), metadata={
        "name": "cluster-autoscaler-priority-expander", "namespace": "kube-system",
        "labels": c.tags(plan)},
        data={"priorities": priorities}, opts=pulumi.ResourceOptions(provider=provider))
    installed = c.install_addons(k8s, pulumi, plan, provider)
    storage_id = _storage(az, pulumi, k8s, plan, rg, subnet, tags, provider)

    pulumi.export("kubeconfig", pulumi.Output.secret(kubeconfig))
    pulumi.export("cluster_name", aks.name)
    pulumi.export("resource_group", rg.name)
    pulumi.export("node_pools", [p.key.replace("-", "")[:12] for p in c.gpu_pools(plan)])
    pulumi.export("storage_id", storage_id)
    pulumi.export("addons", sorted(installed))


def _storage(az, pulumi, k8s, plan, rg, subnet, tags, provider):
    kind = plan.spec.storage.kind
    if kind == "cephfs":
        return c.cephfs_storage_class(k8s, pulumi, plan, provider).metadata["name"]
    if kind == "azure-files":
        # NFS premium share: encrypted at rest (always), HTTPS/TLS1.2, reachable only from
        # the node subnet through its service endpoint.
        account = az.storage.StorageAccount(
            c.name(plan, "files").replace("-", "")[:24], resource_group_name=rg.name,
            kind="FileStorage", sku={"name": "Premium_LRS"}, tags=tags,
            enable_https_traffic_only=False,   # NFS 4.1 does not use HTTPS; network-restricted
            minimum_tls_version="TLS1_2", allow_blob_public_access=False,
            allow_shared_key_access=False,
            encryption={"key_source": "Microsoft.Storage", "require_infrastructure_encryption": True,
                        "services": {"file": {"enabled": True, "key_type": "Account"}}},
            network_rule_set={"default_action": "Deny", "virtual_network_rules": [
                {"virtual_network_resource_id": subnet.id}]})
        gib = c.storage_gib(plan, 100)
        share = az.storage.FileShare(c.name(plan, "data"), resource_group_name=rg.name,
                                     account_name=account.name, share_name="data",
                                     enabled_protocols="NFS", root_squash="NoRootSquash",
                                     share_quota=gib)
        c.data_volume(k8s, pulumi, plan, provider, driver="file.csi.azure.com",
                      handle=share.id, capacity_gib=gib,
                      attributes={"resourceGroup": rg.name, "storageAccount": account.name,
                                  "shareName": "data", "protocol": "nfs"})
        return share.id
    if kind == "azure-lustre":
        tib = max(4, -(-c.storage_gib(plan, 4096) // 1024))   # AMLFS sells whole TiB, >= 4
        fs = az.storagecache.AmlFilesystem(
            c.name(plan, "amlfs"), resource_group_name=rg.name, tags=tags,
            sku={"name": "AMLFS-Durable-Premium-250"}, storage_capacity_tib=tib,
            filesystem_subnet=subnet.id, zones=plan.zones[:1] or ["1"],
            maintenance_window={"day_of_week": "Sunday", "time_of_day_utc": "03:00"})
        c.data_volume(k8s, pulumi, plan, provider, driver="azurelustre.csi.azure.com",
                      handle=fs.id, capacity_gib=tib * 1024,
                      attributes={"mgs-ip-address": fs.client_info.mgs_address,
                                  "fs-name": "lustrefs"})
        return fs.id
    return None
