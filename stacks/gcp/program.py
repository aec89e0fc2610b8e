"""GKE: private VPC + Cloud NAT, the A3 fabric's extra VPCs (MTU 8244 GPU NICs for TCPX/
TCPXO, RoCE VPCs for a3-ultra), a private regional GKE cluster with multi-networking, and
GPU node pools with compact placement, local SSD as ephemeral storage and the GPU taint.

Network names come from `reclaunch.fabric.gke_networks` so the pods' interface annotations
(rendered elsewhere) name exactly the GKE Network objects created here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reclaunch.errors import require
from stacks import common as c
from stacks import versions
from stacks.gcp import bucket as gcs
from stacks.gcp import registry
from stacks.gcp.secrets import secrets_key
from stacks.gcp.pools import (COMPUTE_CLASS_LABEL, SYSTEM_MACHINE, accelerator, compute_class,
                              node_pools, spot_kubelet_config)

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

NODE_CIDR, POD_CIDR, SVC_CIDR, MASTER_CIDR = ("10.2.0.0/20", "10.4.0.0/14", "10.8.0.0/20",
                                              "172.16.0.0/28")
# Node service-account roles on the project: the logging and monitoring ones of
# GoogleCloudPlatform/cluster-toolkit examples/gke-a3-megagpu/gke-a3-megagpu.yaml. That example
# also grants roles/storage.objectViewer and roles/artifactregistry.reader on the whole
# project; here image pull is granted on the job image's repository only (stacks/gcp/
# registry.py), so a node cannot read the project's buckets or other registries.
NODE_SA_ROLES = ("roles/logging.logWriter", "roles/monitoring.metricWriter",
                 "roles/monitoring.viewer", "roles/stackdriver.resourceMetadata.writer")
IMAGE_PULL_ROLE = "roles/artifactregistry.reader"
# GKE sets these itself; they are not node_config labels.
SET_BY_GKE = ("cloud.google.com/", "kubernetes.io/", "node.kubernetes.io/")
GKE_EFFECT = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE",
              "NoExecute": "NO_EXECUTE"}
# A NO_UPGRADES maintenance exclusion may last at most 30 days (GKE maintenance windows
# and exclusions doc); it covers the planned job with a day of slack.
MAX_EXCLUSION_DAYS = 30
# The fabric networks' MTU is the fabric's facts (reclaunch/providers/gcp/facts.py); a VPC
# without one takes GCP's default.
DEFAULT_MTU = 1460


# GKE rejects an exclusion that starts in the past; the cluster takes longer than this
# to create, so nothing can be upgraded in the gap.
EXCLUSION_LEAD = 5   # minutes


def maintenance_policy(plan: "Plan", now=None) -> dict:
    """A weekend-night window for what must still happen, and a NO_UPGRADES exclusion over
    the planned job (control plane included), starting a few minutes from now (never in the
    past). Computed once: the cluster ignores later changes to it (see program), so a
    re-run neither diffs nor moves it."""
    import datetime as dt
    import math

    now = now or dt.datetime.now(dt.timezone.utc)
    now = (now + dt.timedelta(minutes=EXCLUSION_LEAD + 1)).replace(second=0, microsecond=0)
    days = min(MAX_EXCLUSION_DAYS, math.ceil(plan.duration_hours / 24) + 1)
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    return {"recurring_window": {"start_time": "2026-01-03T02:00:00Z",
                                 "end_time": "2026-01-03T08:00:00Z",
                                 "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"},
            "maintenance_exclusions": [{
                "exclusion_name": "reclaunch-training", "start_time": now.strftime(fmt),
                "end_time": (now + dt.timedelta(days=days)).strftime(fmt),
                "exclusion_options": {"scope": "NO_UPGRADES"}}]}


def master_access(plan: "Plan") -> tuple[dict, dict]:
    """(private_cluster_config extra, master_authorized_networks_config): public endpoint only
    for the spec's CIDRs or the address `up` runs from (Cluster Toolkit's `authorized_cidr`);
    with none, a private endpoint."""
    cidrs = c.api_cidrs(plan)
    if not cidrs:
        return {"enable_private_endpoint": True}, {"cidr_blocks": []}
    return {"enable_private_endpoint": False}, {
        "cidr_blocks": [{"cidr_block": x, "display_name": "reclaunch-api"} for x in cidrs],
        "gcp_public_cidrs_access_enabled": False}


def reservation_affinity(plan: "Plan") -> dict | None:
    """`capacity: {kind: gcp-reservation}` -> consume exactly that reservation (Cluster
    Toolkit modules/compute/gke-node-pool `reservation_affinity`)."""
    cap = plan.spec.capacity
    if cap is None:
        return None
    return {"consume_reservation_type": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name", "values": [cap.reservation]}


def _fabric_networks(gcp, plan: "Plan", zone: str, project: str):
    """(GKE network name, VPC, subnet, deviceMode) per extra NIC; none for plain Ethernet.

    A RoCE fabric's NICs share one zonal VPC with the zone's RoCE network profile, one subnet
    per NIC (cloud.google.com/vpc/docs/rdma-network-profiles). Field by field against Cluster
    Toolkit examples/gke-a3-ultragpu/gke-a3-ultragpu.yaml (modules/network/gpu-rdma-vpc):
    network_profile <zone>-vpc-roce, subnetworks_template count 8 (one per RDMA NIC) in the
    region, no firewall rules (RoCE VPCs take none); its -rdma-net / -rdma-sub names are ours
    as <cluster>-rdma and <cluster>-rdma-sub-<i>. Each subnet still gets a GKE Network of its
    own (named by reclaunch.fabric.gke_networks, which the pods' annotation lists). Only the
    RDMA NICs are RDMA devices; the gVNIC beside them is a NetDevice (GKE's A3 Ultra
    GKENetworkParamSet gvnic-1)."""
    from reclaunch.fabric import get_profile, gke_networks

    fab = c.fabric_facts(plan)
    out, roce_vpc, roce_subs = [], None, []
    entries = [n for n in gke_networks(get_profile(plan.fabric), plan.name)
               if n["network"] != "default"]
    for i, entry in enumerate(entries):
        gke_name = entry["network"]
        roce = fab.roce and "-rdma-" in gke_name
        if roce and roce_vpc is None:
            vpc_name = c.name(plan, "rdma")
            roce_vpc = gcp.compute.Network(
                vpc_name, name=vpc_name, auto_create_subnetworks=False,
                mtu=fab.mtu or DEFAULT_MTU, routing_mode="REGIONAL",
                network_profile=f"projects/{project}/global/networkProfiles/{zone}-vpc-roce")
        if roce:
            net, sub_name = roce_vpc, c.name(plan, "rdma-sub", str(len(roce_subs)))
            roce_subs.append(sub_name)
        else:
            net = gcp.compute.Network(
                gke_name, name=gke_name, auto_create_subnetworks=False,
                mtu=(fab.mtu or DEFAULT_MTU) if "gvnic" not in gke_name else 8896)
            sub_name = f"{gke_name}-sub"
            gcp.compute.Firewall(f"{gke_name}-internal", network=net.id,
                                 source_ranges=["192.168.0.0/16"],
                                 allows=[{"protocol": "tcp"}, {"protocol": "udp"},
                                         {"protocol": "icmp"}])
        sub = gcp.compute.Subnetwork(sub_name, name=sub_name, network=net.id,
                                     region=plan.region, ip_cidr_range=f"192.168.{i}.0/24",
                                     private_ip_google_access=True)
        out.append((gke_name, net, sub, fab.device_mode if roce or not fab.roce else "NetDevice"))
    return out


def program(plan: "Plan") -> None:
    pulumi = require("pulumi", "gcp")
    gcp = require("pulumi_gcp", "gcp")
    k8s = require("pulumi_kubernetes", "gcp")
    labels = c.labels(plan)
    project = gcp.organizations.get_client_config().project
    gcs.require_uniform_access(gcp, plan)   # before anything exists: a refusal leaves nothing
    zone = plan.zones[0] if plan.zones else f"{plan.region}-a"

    vpc = gcp.compute.Network(c.name(plan, "vpc"), auto_create_subnetworks=False)
    subnet = gcp.compute.Subnetwork(
        c.name(plan, "nodes"), network=vpc.id, region=plan.region, ip_cidr_range=NODE_CIDR,
        private_ip_google_access=True,
        secondary_ip_ranges=[{"range_name": "pods", "ip_cidr_range": POD_CIDR},
                             {"range_name": "services", "ip_cidr_range": SVC_CIDR}])
    router = gcp.compute.Router(c.name(plan, "router"), network=vpc.id, region=plan.region)
    gcp.compute.RouterNat(c.name(plan, "nat"), router=router.name, region=plan.region,
                          nat_ip_allocate_option="AUTO_ONLY",
                          source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES")
    # SSH only through IAP's range (GKE's own rules cover the control plane).
    gcp.compute.Firewall(c.name(plan, "iap-ssh"), network=vpc.id,
                         source_ranges=["35.235.240.0/20"],
                         allows=[{"protocol": "tcp", "ports": ["22"]}])
    extra_nets = _fabric_networks(gcp, plan, zone, project)

    sa = gcp.serviceaccount.Account(c.name(plan, "nodes", max_len=30),
                                    account_id=c.name(plan, "nodes", max_len=30),
                                    display_name=f"reclaunch {plan.name} nodes")
    node_member = sa.email.apply(lambda e: f"serviceAccount:{e}")
    for role in NODE_SA_ROLES:
        gcp.projects.IAMMember(c.name(plan, role.split("/")[1]), project=project, role=role,
                               member=node_member)
    repo = registry.repository(plan.spec.job.image)
    if repo is not None and repo.project == project:   # pull there, nowhere else
        gcp.artifactregistry.RepositoryIamMember(
            c.name(plan, "image-pull"), project=repo.project, location=repo.location,
            repository=repo.repository, role=IMAGE_PULL_ROLE, member=node_member)
    elif repo is not None:
        # Not ours to grant on: setIamPolicy on another project's repository is a 403 for
        # anyone but its owners (Google's public images need no grant at all).
        c.warn(f"{plan.spec.job.image}: its repository is in project {repo.project}, not "
               f"{project}: no image-pull grant; if it is private, grant "
               f"{IMAGE_PULL_ROLE} on it to {c.name(plan, 'nodes', max_len=30)}@{project}"
               ".iam.gserviceaccount.com")
    endpoint, authorized = master_access(plan)
    pools = node_pools(plan)
    system_pool = pools[0]
    # No release channel: on a channel GKE forces node auto-upgrade on, which reboots training
    # nodes (Cluster Toolkit modules/scheduler/gke-cluster: release_channel default UNSPECIFIED).
    kms_key, kms_grant = secrets_key(gcp, pulumi, plan, labels)
    cluster = gcp.container.Cluster(
        c.name(plan, "gke"), name=c.name(plan), location=plan.region,
        node_locations=[zone], min_master_version=versions.kubernetes_version(plan),
        release_channel={"channel": "UNSPECIFIED"}, remove_default_node_pool=True,
        maintenance_policy=maintenance_policy(plan),
        database_encryption={"state": "ENCRYPTED", "key_name": kms_key.id},
        master_authorized_networks_config=authorized,
        initial_node_count=1, network=vpc.id, subnetwork=subnet.id,
        networking_mode="VPC_NATIVE", datapath_provider="ADVANCED_DATAPATH",
        enable_multi_networking=bool(extra_nets), resource_labels=labels,
        deletion_protection=False, enable_shielded_nodes=True,
        ip_allocation_policy={"cluster_secondary_range_name": "pods",
                              "services_secondary_range_name": "services"},
        private_cluster_config={"enable_private_nodes": True, **endpoint,
                                "master_ipv4_cidr_block": MASTER_CIDR},
        workload_identity_config={"workload_pool": f"{project}.svc.id.goog"},
        addons_config={"gcp_filestore_csi_driver_config": {"enabled": True}},
        node_config={"service_account": sa.email, "resource_labels": labels,
                     "disk_type": "pd-balanced",
                     "shielded_instance_config": {"enable_secure_boot": True}},
        # The exclusion is fixed when the cluster is created: recomputing it on every run
        # would show a diff each time and move its start (issue 24).
        opts=pulumi.ResourceOptions(ignore_changes=["maintenancePolicy"],
                                    depends_on=[kms_grant]))
    node_common = {"service_account": sa.email, "oauth_scopes": [
        "https://www.googleapis.com/auth/cloud-platform"], "resource_labels": labels,
        "shielded_instance_config": {"enable_secure_boot": True,
                                     "enable_integrity_monitoring": True},
        "workload_metadata_config": {"mode": "GKE_METADATA"}, "gvnic": {"enabled": True}}
    system = gcp.container.NodePool(
        c.name(plan, "system"), name=system_pool.cloud_name, cluster=cluster.id,
        location=plan.region, node_locations=[zone], initial_node_count=system_pool.desired,
        autoscaling={"total_min_node_count": system_pool.min_nodes,
                     "total_max_node_count": system_pool.max_nodes},
        management={"auto_repair": True, "auto_upgrade": True},
        node_config={**node_common, "machine_type": SYSTEM_MACHINE, "disk_type": "pd-balanced",
                     "labels": _settable(system_pool.labels)})

    if c.spot_max_price(plan):
        c.warn("GCP Spot VMs have no maximum price: spot.max_price is ignored on GKE")
    ssds = c.local_ssd_count(plan)
    gpu_pools = {}
    for pool in (p for p in pools if p.role == "gpu"):
        gpu_pools[pool.name] = gcp.container.NodePool(
            c.name(plan, pool.name), name=pool.cloud_name, cluster=cluster.id,
            location=plan.region, node_locations=[zone], initial_node_count=pool.desired,
            autoscaling={"total_min_node_count": pool.min_nodes,
                         "total_max_node_count": pool.max_nodes, "location_policy": "ANY"},
            # A specific reservation brings its own placement; COMPACT only without one.
            placement_policy=None if plan.spec.capacity else {"type": "COMPACT"},
            # Upgrades would reboot training nodes mid-job (Cluster Toolkit
            # modules/compute/gke-node-pool: auto_upgrade default false); repairs still run.
            management={"auto_repair": True, "auto_upgrade": False},
            upgrade_settings={"max_surge": 0, "max_unavailable": 1},
            network_config={"enable_private_nodes": True, "additional_node_network_configs": [
                {"network": net.name, "subnetwork": sub.name} for _, net, sub, _ in extra_nets]},
            node_config={
                **node_common, "machine_type": pool.instance_type,
                "spot": pool.spot, "disk_type": "pd-ssd", "disk_size_gb": 200,
                "guest_accelerators": [{"type": accelerator(plan), "count": plan.gpus_per_node,
                                        "gpu_driver_installation_config": {
                                            "gpu_driver_version": "LATEST"}}],
                "ephemeral_storage_local_ssd_config": (
                    {"local_ssd_count": ssds} if ssds else None),
                "reservation_affinity": reservation_affinity(plan),
                "kubelet_config": spot_kubelet_config(plan, pool),
                "labels": _settable(pool.labels),
                "taints": [{"key": t["key"], "value": t["value"],
                            "effect": GKE_EFFECT[t["effect"]]} for t in pool.taints]},
            opts=pulumi.ResourceOptions(ignore_changes=["initialNodeCount"]))

    kubeconfig = pulumi.Output.all(cluster.endpoint, cluster.master_auth.cluster_ca_certificate,
                                   cluster.name).apply(lambda a: _kubeconfig(*a))
    provider = k8s.Provider(c.name(plan, "k8s"), kubeconfig=kubeconfig,
                            opts=pulumi.ResourceOptions(depends_on=[system]))
    kopts = pulumi.ResourceOptions(provider=provider)
    for name, net, sub, mode in extra_nets:  # the GKE side of multi-networking
        k8s.apiextensions.CustomResource(f"{name}-params", api_version="networking.gke.io/v1",
            kind="GKENetworkParamSet", metadata={"name": name},
            spec={"vpc": net.name, "vpcSubnet": sub.name, "deviceMode": mode},
            opts=kopts)
        k8s.apiextensions.CustomResource(f"{name}-network", api_version="networking.gke.io/v1",
            kind="Network", metadata={"name": name},
            spec={"type": "Device", "parametersRef": {
                "group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": name}},
            opts=kopts)
    cls = compute_class(plan)
    if cls:  # spot first, on-demand when spot has none: GKE's autoscaler follows this order
        gpu = [p for p in pools if p.role == "gpu"]
        k8s.apiextensions.CustomResource(
            c.name(plan, "compute-class"), api_version="cloud.google.com/v1",
            kind="ComputeClass", metadata={"name": cls, "labels": c.labels(plan)},
            spec={"priorities": [{"nodepools": [p.cloud_name]}
                                 for p in sorted(gpu, key=lambda p: -p.priority)],
                  "nodePoolAutoCreation": {"enabled": False},
                  "whenUnsatisfiable": "DoNotScaleUp"},
            opts=pulumi.ResourceOptions(provider=provider, depends_on=list(gpu_pools.values())))
    installed = c.install_addons(k8s, pulumi, plan, provider,
                                 depends_on=list(gpu_pools.values()))
    ns = c.JobNamespace(k8s, pulumi, plan, provider)
    storage_id = _storage(gcp, pulumi, k8s, plan, vpc, zone, labels, provider, ns)
    storage_id = gcs.bucket_and_identity(   # checkpoints in GCS: the job's Workload Identity
        gcp, pulumi, k8s, plan, project=project, labels=labels, location=plan.region,
        provider=provider, namespace=ns, cluster=cluster, depends_on=list(gpu_pools.values())) or storage_id

    pulumi.export("kubeconfig", pulumi.Output.secret(kubeconfig))
    pulumi.export("cluster_name", cluster.name)
    pulumi.export("node_pools", [p.cloud_name for p in pools if p.role == "gpu"])
    pulumi.export("gpu_networks", [n for n, *_ in extra_nets])
    pulumi.export("storage_id", storage_id)
    pulumi.export("addons", sorted(installed))


def _settable(labels: dict[str, str]) -> dict[str, str]:
    """Labels for node_config: ours, plus the ComputeClass label GKE wants set on manually
    created pools; the rest of cloud.google.com/* GKE sets itself."""
    return {k: v for k, v in labels.items()
            if k == COMPUTE_CLASS_LABEL or not k.startswith(SET_BY_GKE)}


def _kubeconfig(endpoint: str, ca: str, name: str) -> str:
    import json

    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": {"server": f"https://{endpoint}",
                                                "certificate-authority-data": ca}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "users": [{"name": name, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "gke-gcloud-auth-plugin", "provideClusterInfo": True}}}]})


def filestore_gib(plan: "Plan") -> int:
    """What to ask Filestore ZONAL for: `storage.size` rounded up to the next size it sells
    (the kind's steps, providers/gcp/facts.py; the plan prices the same)."""
    from reclaunch.planner.storage_size import billed_gib

    return int(billed_gib(plan.spec.storage.kind, plan.spec.storage.size))


def _storage(gcp, pulumi, k8s, plan, vpc, zone, labels, provider, ns):
    kind = plan.spec.storage.kind
    if kind == "cephfs":
        return c.cephfs_storage_class(k8s, pulumi, plan, provider).metadata["name"]
    if kind != "filestore":
        return None
    gib = filestore_gib(plan)
    fs = gcp.filestore.Instance(
        c.name(plan, "filestore"), name=c.name(plan, "data"), location=zone, tier="ZONAL",
        labels=labels, file_shares={"name": "data", "capacity_gb": gib},
        networks=[{"network": vpc.name, "modes": ["MODE_IPV4"]}])
    c.data_volume(k8s, pulumi, plan, provider, namespace=ns,
                  driver="filestore.csi.storage.gke.io",
                  handle=pulumi.Output.concat("modeInstance/", zone, "/", fs.name, "/data"),
                  capacity_gib=gib,
                  attributes={"ip": fs.networks[0].ip_addresses[0], "volume": "data"})
    return fs.id
