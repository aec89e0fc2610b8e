"""GCP (GKE): every fact the pure layers need, as data (reclaunch/clouds.py reads this file
without importing the provider package; nothing here may import an SDK or the runtime)."""

from fractions import Fraction

from reclaunch.clouds import ETHERNET, CloudFacts, FabricFacts, PreviewFacts

# Jumbo frames on GPU NICs: what Google's A3 guides set for TCPX/TCPXO; RoCE VPCs use 8896
# (the stack's VPC default elsewhere is 1460).
TCPX = FabricFacts("tcpx", addons=("nccl-tcpx-installer",), mtu=8244)
TCPXO = FabricFacts("tcpxo", addons=("nccl-tcpxo-installer", "nri-device-injector"), mtu=8244)
RDMA = FabricFacts("rdma", addons=("nccl-rdma-installer",), mtu=8896, device_mode="RDMA",
                   roce=True)


def _outputs(typ: str, name: str, inputs: dict) -> dict:
    import base64

    ca = base64.b64encode(b"mock-ca").decode()
    return {
        "gcp:filestore/instance:Instance": {"networks": [
            {**(inputs.get("networks") or [{}])[0], "ipAddresses": ["10.2.0.9"]}]},
        "gcp:container/cluster:Cluster": {"endpoint": "10.0.0.2",
                                          "masterAuth": {"clusterCaCertificate": ca}},
        # Workload identity (stacks/gcp/bucket.py) annotates the job's ServiceAccount with it.
        "gcp:serviceaccount/account:Account": {
            "email": f"{inputs.get('accountId', name)}@mock-project.iam.gserviceaccount.com"},
    }.get(typ, {})


def _calls(token: str, args: dict, region: str) -> dict:
    return {
        "gcp:organizations/getClientConfig:getClientConfig": {"project": "mock-project",
                                                              "region": region},
        "gcp:organizations/getProject:getProject": {"projectId": "mock-project",
                                                    "number": "123456789012"},
        # A bucket the user named (stacks/gcp/bucket.py reads its access mode before granting).
        "gcp:storage/getBucket:getBucket": {"name": args.get("name"), "location": region.upper(),
                                            "uniformBucketLevelAccess": True},
    }.get(token, {})


FACTS = CloudFacts(
    # Zones: the catalog's own (us-central1-a, from the SkyPilot snapshot), as they are named.
    name="gcp", aliases=("google", "gke", "google-cloud", "gce"), kind="kube", provider="reclaunch.providers.gcp", stack="stacks.gcp",
    storage=("filestore", "cephfs", "pvc", "bucket", "none"),
    reservation_kinds=("gcp-reservation",),
    fabrics=(TCPX, TCPXO, RDMA, ETHERNET),
    addons=("gke-nvidia-gpu-device-plugin", "gke-node-daemonsets"),
    # cloud.google.com/kubernetes-engine/docs/concepts/spot-vms: the taint GKE puts on Spot pools.
    spot_tolerations=({"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true",
                       "effect": "NoSchedule"},),
    capacity_labels={"cloud.google.com/gke-spot": {"true": "spot"},
                     "cloud.google.com/gke-preemptible": {"true": "spot"}},
    allocatable={
        "source": "cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes "
                  "(CPU 6/1/0.5/0.25%; memory 25% of the first 4 GiB, 20% of the next 4, 10% "
                  "of the next 8, 6% of the next 112, 2% above 128 GiB; eviction 100Mi)",
        # nominal -> kubelet capacity: 512 MiB + 3% covers every GCP row of
        # catalog/data/node_figures.csv (measured on GKE: 1.6-2.1%). The memory tiers apply to
        # that capacity: they reproduce the measured allocatable of those rows to the KiB.
        "capacity_overhead": {"fixed_mib": 512, "fraction": Fraction(3, 100)},
        "cpu_tiers": ((1, Fraction(6, 100)), (2, Fraction(1, 100)), (4, Fraction(5, 1000)),
                      (None, Fraction(25, 10000))),
        "memory_tiers": ((4, Fraction(25, 100)), (8, Fraction(20, 100)), (16, Fraction(10, 100)),
                         (128, Fraction(6, 100)), (None, Fraction(2, 100))),
        "eviction_mib": 100,
    },
    # GCP E2 machine types (cloud.google.com/compute/docs/general-purpose-machines), 2026-11.
    system_shapes={"e2-standard-2": (2, 8), "e2-standard-4": (4, 16), "e2-standard-8": (8, 32)},
    planner={
        # GCP publishes per-zone rates only via its capacity API: the ">20%" bucket, 0.20/730 h.
        "reclaim_rate_per_node_hour": 0.000274,
        # No per-family rates published: the ">20%" bucket read as 20-30%/month (assumption).
        "reclaim_band": (0.20, 0.30),
        "control_plane_usd_per_hour": 0.10,    # prices.md: GKE 0.10/h
        "pvc_usd_per_gb_month": 0.10,          # prices.md: pd-balanced 0.10
        # Spot VM preemption: "Compute Engine sends a preemption notice ... 30 seconds" to stop
        # (cloud.google.com/compute/docs/instances/spot#preemption).
        "reclaim_notice_seconds": 30,
    },
    preview=PreviewFacts(sdk_packages={"gcp": "pulumi_gcp"},
                         nested_tags={"gcp:container/nodePool:NodePool":
                                      "node_config.resource_labels"},
                         outputs=_outputs, calls=_calls),
)
