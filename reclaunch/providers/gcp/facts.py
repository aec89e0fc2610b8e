"""GCP (GKE): every fact the pure layers need, as data (reclaunch/clouds.py reads this file
without importing the provider package; nothing here may import an SDK or the runtime)."""

from fractions import Fraction

from reclaunch.clouds import (BUCKET, CEPHFS, ETHERNET, NO_STORAGE, PVC, S3, CloudFacts, Existing,
                              FabricFacts, ObjectStore, PreviewFacts, ReservationKind, StorageKind,
                              Steps)

# Jumbo frames on GPU NICs: what Google's A3 guides set for TCPX/TCPXO; RoCE VPCs use 8896
# (the stack's VPC default elsewhere is 1460).
# TCPX's daemon reaches the GPUs through the NRI device injector, as TCPXO's does (the pod's
# devices.gke.io annotation; container-engine-accelerators gpudirect-tcpx/nccl-test-latest.yaml).
TCPX = FabricFacts("tcpx", addons=("nccl-tcpx-installer", "nri-device-injector"), mtu=8244)
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


def _filestore_volume(plan, existing: str) -> dict:
    # An NFS share: the in-tree `nfs` volume (kubernetes.io/docs/concepts/storage/volumes/#nfs).
    ip, share = existing.split("/", 1)
    return {"nfs": {"server": ip, "path": f"/{share}"}}


# Filestore ZONAL (cloud.google.com/filestore/docs/service-tiers, "Zonal", read 2026-12-01):
# 1 TiB to 9.75 TiB in 256 GiB steps, then 10 TiB to 100 TiB in 2.5 TiB steps (11 TiB is
# rejected). Price: prices.md, Filestore Basic HDD ~0.20 per GiB-month.
FILESTORE = StorageKind(
    "filestore", sized=True, created_by_stack=True, resource_hints=("filestore",),
    steps=Steps(((1024, 256, 9984), (10240, 2560, 102400))), usd_per_gb_month=0.20,
    existing=Existing("<instance IP>/<share>", "10.0.0.2/data", _filestore_volume),
    created_in=(360, "assumption: Filestore Basic instances take ~5-6 min to create (cloud."
                     "google.com/filestore/docs/creating-instances: 'can take several minutes')"))

# Cloud Storage through GKE Workload Identity (stacks/gcp/bucket.py); bucket names:
# cloud.google.com/storage/docs/buckets#naming (the S3 shape for names without dots).
GCS = ObjectStore(("gs",), "gcs", "gcsfs", S3.name_rule)

# A GCP resource name (cloud.google.com/compute/docs/naming-resources).
_NAME = r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?"

# Time to first step on this target (planner/startup.py): the steps before the file-system
# join, in order; `per_node` adds seconds per node beyond the first; `billed`: GPU VMs exist
# and bill meanwhile.
STARTUP = {
    "steps": [
        {"name": "GKE control plane", "seconds": 240, "billed": False,
         "source": ("kubedex.com google-gke-vs-azure-aks (2019): GKE create + deploy + test "
                    "averaged 3 min 50 s (min 3 min 5 s, max 5 min 39 s)")},
        {"name": "GPU node pool boot to Ready", "seconds": 150, "per_node": 2, "billed": True,
         "source": ("tensorfuse.io 2025: GPU instances take 80-120 s to provision and boot; + "
                    "kubelet registration (assumption)")},
        {"name": "GPU driver + device plugins", "seconds": 180, "billed": True,
         "source": ("assumption: GKE's driver installer DaemonSet installs the NVIDIA driver on "
                    "COS at node start (~2-4 min) before the device plugin advertises GPUs "
                    "(GoogleCloudPlatform/container-engine-accelerators)")},
    ],
}


FACTS = CloudFacts(
    # Zones: the catalog's own (us-central1-a, from the SkyPilot snapshot), as they are named.
    name="gcp", aliases=("google", "gke", "google-cloud", "gce"), kind="kube",
    storage=(FILESTORE, CEPHFS, PVC, BUCKET, NO_STORAGE),
    object_stores=(GCS,),
    # A reservation by name, or by its path when another project shares it.
    reservation_kinds=(ReservationKind(
        "gcp-reservation",
        rf"{_NAME}|projects/[a-z][-a-z0-9]{{4,28}}[a-z0-9]/reservations/{_NAME}",
        "my-h100-reservation"),),
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
        "startup": STARTUP,
        # Checkpoints in a bucket (planner/bucket_cost.py): Cloud Storage Standard, us-central1.
        "bucket_prices": {"storage_usd_per_gb_month": 0.020,   # regional Standard storage
                          "write_usd_per_1000": 0.005,         # Class A operations (insert, list)
                          "read_usd_per_1000": 0.0004,         # Class B operations (get)
                          "as_of": "2026-12-01",
                          "source": ("cloud.google.com/storage/pricing (Standard storage us-"
                                     "central1; Class A $0.0050 / Class B $0.0004 per 1,000 for "
                                     "Standard), as of 2026-12-01; deletes free")},
        # GCP publishes per-zone rates only via its capacity API: the ">20%" bucket, 0.20/730 h.
        "reclaim_rate_per_node_hour": 0.000274,
        # No per-family rates published: the ">20%" bucket read as 20-30%/month (assumption).
        "reclaim_band": (0.20, 0.30),
        "control_plane_usd_per_hour": 0.10,    # prices.md: GKE 0.10/h
        "pvc_usd_per_gb_month": 0.10,          # prices.md: pd-balanced 0.10
        # The time a reclaimed Spot node's pods get from SIGTERM to SIGKILL: GKE's default is 15
        # of the VM's 30 s (cloud.google.com/kubernetes-engine/docs/concepts/spot-vms); the
        # stack's spot pools extend it to 120 s in all, 15 of them for system pods
        # (stacks/gcp/pools.py spot_kubelet_config, GKE >= 1.35.0-gke.1171000).
        "reclaim_notice_seconds": 105,
    },
    compute_types=("gcp:container/",),
    preview=PreviewFacts(sdk_packages={"gcp": "pulumi_gcp"},
                         nested_tags={"gcp:container/nodePool:NodePool":
                                      "node_config.resource_labels"},
                         outputs=_outputs, calls=_calls),
    pip_extra="gcp",
    sdk_modules=("google.cloud.compute_v1", "pulumi", "pulumi_gcp", "pulumi_kubernetes",
                 "kubernetes"),
)
