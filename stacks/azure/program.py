"""AKS: private node subnet behind a NAT gateway, an AKS cluster with a system pool, and ND
GPU node pools (spot preferred, regular scaled from zero) in one proximity placement group.

InfiniBand: an ND VM scale set of <= 100 VMs is one placement group, so its nodes share one
IB fabric; the NicClusterPolicy (k8s/azure-nicclusterpolicy.yaml) exposes the HCAs to pods
as rdma/ib. The spot and the regular pool are two scale sets, so two fabrics: a job is pinned
to one of them through stacks.common.FABRIC_GROUP_LABEL (see stacks/azure/pools.py).

Access: the cluster is AAD-only with Azure RBAC, so the identity running `up` is given
"Azure Kubernetes Service RBAC Cluster Admin" on it (else every Kubernetes call is Forbidden),
and the kubeconfig logs in through the Azure CLI's token without a prompt (kubelogin).
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from reclaunch.errors import require
from stacks import common as c
from stacks import versions
from stacks.azure import bucket as blob
from stacks.azure.pools import node_pools, os_sku
from stacks.azure.host_encryption import settings
from stacks.azure.secrets import secrets_key
from stacks.azure.storage import storage

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

VNET_CIDR = "10.1.0.0/16"
NODE_SUBNET = "10.1.0.0/18"
LUSTRE_SUBNET = "10.1.64.0/24"   # Azure Managed Lustre wants a subnet of its own
IB_FABRIC_MAX_VMS = 100      # one VMSS placement group
OS_DISK_GIB = 256
# Built-in role ids (learn.microsoft.com/azure/role-based-access-control/built-in-roles).
AKS_RBAC_CLUSTER_ADMIN = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"
NETWORK_CONTRIBUTOR = "4d97b98b-1d4f-4787-a291-c67834d212e7"
# Labels AKS reserves (it rejects them in node_labels) or sets itself.
SET_BY_AKS = ("kubernetes.azure.com/", "kubernetes.io/", "node.kubernetes.io/")


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
    return vnet, subnet, nsg, ip


def _role_id(sub: str, role: str) -> str:
    return f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{role}"


def api_access(plan: "Plan", nat_ip=None) -> dict:
    """Authorized IP ranges for the API server: the spec's, or the address `up` runs from,
    plus the NAT gateway's public IP. Nodes reach the public API server through that NAT
    (outbound_type userAssignedNATGateway), and AKS adds only a Standard load balancer's
    outbound IPs to the ranges by itself, never a user NAT gateway's
    (learn.microsoft.com/azure/aks/api-server-authorized-ip-ranges): without it the system
    pool fails with "Unable to establish connection from agents to Kubernetes API server".
    None at all (a bare preview): a private cluster (authorized ranges do not apply there)."""
    cidrs = c.api_cidrs(plan)
    if not cidrs:
        return {"enable_private_cluster": True}
    if nat_ip is None:
        return {"authorized_ip_ranges": cidrs}
    return {"authorized_ip_ranges": nat_ip.apply(
        lambda ip: [*cidrs, *([f"{ip}/32"] if ip and f"{ip}/32" not in cidrs else [])])}


def non_interactive(kubeconfig: str) -> str:
    """`format=exec` kubeconfigs run kubelogin with device-code login (a prompt). Switch every
    kubelogin user to `--login azurecli`, as `kubelogin convert-kubeconfig -l azurecli` does
    (Azure/kubelogin README), so `up` and the watcher use the az CLI's token unattended."""
    import yaml

    doc = yaml.safe_load(kubeconfig) or {}
    for user in doc.get("users") or []:
        ex = (user.get("user") or {}).get("exec") or {}
        if ex.get("command") != "kubelogin":
            continue
        args = list(ex.get("args") or [])
        server = args[args.index("--server-id") + 1] if "--server-id" in args else None
        ex["args"] = ["get-token", "--login", "azurecli",
                      *(["--server-id", server] if server else [])]
        ex.pop("env", None)
    return yaml.safe_dump(doc, sort_keys=False)


TEMPLATE = "k8s.io_cluster-autoscaler_node-template"


def _tag_key(name: str) -> str:
    """A label, taint or resource name as the azure provider's template reads it back from a
    tag name (azure_template.go: "_" -> "/", then "~2" -> "_" for labels and taints; tags take
    no "/"). Resource names decode "~2" to "/" too, so one with "_" cannot be written: none of
    the fabric profiles' resources (rdma/ib, nvidia.com/gpu, hugepages-2Mi) has one."""
    return name.replace("_", "~2").replace("/", "_")


def _template_tags(plan: "Plan", pool: c.NodePool) -> dict[str, str]:
    """The cluster autoscaler's template of a scale set at zero, which is all it knows of a
    pool no node of which exists yet (the regular pool starts at zero; a spot pool drained to
    zero is the same): what a node will have allocatable (kubernetes/autoscaler cluster-
    autoscaler/cloudprovider/azure/README.md "Resources": VMSS tags override the instance
    type's nominal figures; AKS puts a node pool's tags on its scale set), the extended
    resources the job's pods request (rdma/ib from the IB device plugin, GPUs), and the labels
    and taints the pods select on and tolerate. azure_template.go reads them:
    extractAllocatableResourcesFromScaleSet, extractLabelsFromTags, extractTaintsFromTags.
    Without the resources no template fits a pod asking rdma/ib: 8, and the pool never grows."""
    from stacks.fabric_facts import fabric_profile

    resources = {**c.node_template(plan, pool), **pool.hugepages,
                 "nvidia.com/gpu": str(plan.gpus_per_node),
                 **{k: str(v) for k, v in fabric_profile(plan).resources.items()}}
    return {**{f"{TEMPLATE}_resources_{_tag_key(k)}": v for k, v in resources.items()},
            **{f"{TEMPLATE}_label_{_tag_key(k)}": v for k, v in pool.labels.items()},
            **{f"{TEMPLATE}_taint_{_tag_key(t['key'])}": f"{t['value']}:{t['effect']}"
               for t in pool.taints}}


def program(plan: "Plan") -> None:
    pulumi = require("pulumi", "azure")
    az = require("pulumi_azure_native", "azure")
    k8s = require("pulumi_kubernetes", "azure")
    tags = c.tags(plan)
    k8s_version = versions.kubernetes_version(plan)
    pools = node_pools(plan)
    system_pool = pools[0]
    host_encryption = settings(plan)     # {vm_size: on}: stacks/azure/host_encryption.py
    client = az.authorization.get_client_config()
    rg = az.resources.ResourceGroup(c.name(plan, "rg"), location=plan.region, tags=tags)
    vnet, subnet, nsg, nat_ip = _network(az, plan, rg, tags)
    identity = az.managedidentity.UserAssignedIdentity(c.name(plan, "id"),
                                                       resource_group_name=rg.name, tags=tags)
    # AKS with a user-assigned identity on our own subnet needs Network Contributor there
    # (learn.microsoft.com/azure/aks/configure-azure-cni, "prerequisites").
    net_role = az.authorization.RoleAssignment(
        c.name(plan, "net-contributor"), scope=subnet.id, principal_id=identity.principal_id,
        principal_type="ServicePrincipal",
        role_definition_id=_role_id(client.subscription_id, NETWORK_CONTRIBUTOR))
    kms, kms_grant = secrets_key(az, plan, rg, identity, client, tags, _role_id)
    aks = az.containerservice.ManagedCluster(
        c.name(plan, "aks"), resource_group_name=rg.name, resource_name_=c.name(plan),
        dns_prefix=c.name(plan), kubernetes_version=k8s_version, tags=tags,
        identity={"type": "UserAssigned", "user_assigned_identities": [identity.id]},
        sku={"name": "Base", "tier": "Standard"},
        disable_local_accounts=True, enable_rbac=True,
        aad_profile={"managed": True, "enable_azure_rbac": True},
        api_server_access_profile=api_access(plan, nat_ip.ip_address),
        oidc_issuer_profile={"enabled": True},
        security_profile={"workload_identity": {"enabled": True}, "azure_key_vault_kms": kms},
        network_profile={"network_plugin": "azure", "network_plugin_mode": "overlay",
                         "outbound_type": "userAssignedNATGateway"},
        # Nodes are never upgraded or reimaged under a job (the default node OS channel,
        # NodeImage, reimages weekly); a new cluster per job gets current images.
        auto_upgrade_profile={"upgrade_channel": "none", "node_os_upgrade_channel": "None"},
        # Spot first: the priority expander reads the ConfigMap the program writes below.
        auto_scaler_profile={"expander": "priority", "skip_nodes_with_local_storage": "false"},
        agent_pool_profiles=[{
            "name": system_pool.cloud_name, "mode": "System", "vm_size": system_pool.instance_type,
            "count": system_pool.desired, "min_count": system_pool.min_nodes,
            "max_count": system_pool.max_nodes, "enable_auto_scaling": True,
            "vnet_subnet_id": subnet.id, "enable_node_public_ip": False,
            "enable_encryption_at_host": host_encryption[system_pool.instance_type], "os_disk_type": "Managed",
            "os_sku": os_sku(k8s_version), "type": "VirtualMachineScaleSets", "tags": tags,
            "node_labels": _settable(system_pool.labels)}],
        # Encryption at host is set when a pool is created, never after (Microsoft's
        # enable-host-encryption page); a later `up` whose answer changed keeps the pools.
        opts=pulumi.ResourceOptions(depends_on=[net_role, kms_grant], ignore_changes=[
            "agentPoolProfiles[0].enableEncryptionAtHost"]))
    # The identity running `up` administers the cluster through Azure RBAC.
    # principal_type: the SDK's default is User; `up` run as a service principal passes
    # reclaunch:principalType=ServicePrincipal (reclaunch.providers.azure.provider.stack_config).
    kind = pulumi.Config("reclaunch").get("principalType") or "User"
    admin = az.authorization.RoleAssignment(
        c.name(plan, "rbac-admin"), scope=aks.id, principal_id=client.object_id,
        principal_type=kind,
        role_definition_id=_role_id(client.subscription_id, AKS_RBAC_CLUSTER_ADMIN))

    # No proximity placement group: the InfiniBand fabric is the scale set's own (one VMSS
    # placement group), which is what Azure/aks-rdma-infiniband relies on (it creates none).
    # A PPG in our resource group would also need Microsoft.Compute/proximityPlacementGroups/
    # write for the cluster identity there, else the GPU pools fail LinkedAuthorizationFailed.
    if plan.max_nodes > IB_FABRIC_MAX_VMS:
        c.warn(f"{plan.max_nodes} nodes exceed one InfiniBand placement group "
               f"({IB_FABRIC_MAX_VMS} VMs): NCCL traffic between groups falls back to TCP")
    cap = plan.spec.capacity
    max_price = c.spot_max_price(plan)
    agent_pools = {}
    for pool in (p for p in pools if p.role == "gpu"):
        agent_pools[pool.name] = az.containerservice.AgentPool(
            c.name(plan, pool.name), resource_group_name=rg.name, resource_name_=aks.name,
            agent_pool_name=pool.cloud_name, mode="User", vm_size=pool.instance_type,
            type="VirtualMachineScaleSets", count=pool.desired, min_count=pool.min_nodes,
            max_count=pool.max_nodes, enable_auto_scaling=True,
            scale_set_priority="Spot" if pool.spot else "Regular",
            scale_set_eviction_policy="Delete" if pool.spot else None,
            spot_max_price=(max_price or -1) if pool.spot else None,   # -1: up to on-demand
            capacity_reservation_group_id=cap.reservation if cap else None,
            availability_zones=plan.zones or None, vnet_subnet_id=subnet.id,
            enable_node_public_ip=False,
            enable_encryption_at_host=host_encryption[pool.instance_type], os_disk_type="Managed",
            os_disk_size_gb=OS_DISK_GIB, kubelet_disk_type="OS", os_sku=os_sku(k8s_version),
            node_taints=[c.taint_str(t) for t in pool.taints],
            node_labels=_settable(pool.labels), tags={**tags, **_template_tags(plan, pool)},
            opts=pulumi.ResourceOptions(ignore_changes=["count", "enable_encryption_at_host"]))

    creds = az.containerservice.list_managed_cluster_user_credentials_output(
        resource_group_name=rg.name, resource_name=aks.name, format="exec")
    kubeconfig = creds.kubeconfigs[0].value.apply(
        lambda v: non_interactive(base64.b64decode(v).decode()))
    provider = k8s.Provider(c.name(plan, "k8s"), kubeconfig=kubeconfig,
                            opts=pulumi.ResourceOptions(
                                depends_on=[admin, *agent_pools.values()]))
    priorities = "\n".join(f"{p.priority}:\n  - .*{p.cloud_name}.*"
                           for p in pools if p.role == "gpu")
    k8s.core.v1.ConfigMap(c.name(plan, "expander"), metadata={
        "name": "cluster-autoscaler-priority-expander", "namespace": "kube-system",
        "labels": c.tags(plan)},
        data={"priorities": priorities}, opts=pulumi.ResourceOptions(provider=provider))
    installed = c.install_addons(k8s, pulumi, plan, provider)
    ns = c.JobNamespace(k8s, pulumi, plan, provider)
    storage_id = storage(az, pulumi, k8s, plan, rg, vnet, subnet, nsg, tags, provider,
                         list(installed.values()), ns, lustre_subnet=LUSTRE_SUBNET)
    storage_id = blob.bucket_and_identity(   # checkpoints in Blob: the job's workload identity
        az, pulumi, k8s, plan, rg=rg, aks=aks, tags=tags, client=client, role_id=_role_id,
        provider=provider, namespace=ns, depends_on=list(installed.values())) or storage_id

    pulumi.export("kubeconfig", pulumi.Output.secret(kubeconfig))
    pulumi.export("cluster_name", aks.name)
    pulumi.export("resource_group", rg.name)
    pulumi.export("node_pools", [p.cloud_name for p in pools if p.role == "gpu"])
    pulumi.export("storage_id", storage_id)
    pulumi.export("addons", sorted(installed))


def _settable(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if not k.startswith(SET_BY_AKS)}
