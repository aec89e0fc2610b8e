"""AWS (EKS): every fact the pure layers need, as data (reclaunch/clouds.py reads this file
without importing the provider package; nothing here may import an SDK or the runtime)."""

from fractions import Fraction

from reclaunch.clouds import (BUCKET, CEPHFS, ETHERNET, NO_STORAGE, PVC, S3, CloudFacts, Existing,
                              FabricFacts, PreviewFacts, ReservationKind, StorageKind, Steps)

EFA = FabricFacts(
    "efa", addons=("aws-efa-k8s-device-plugin",),
    # One interface per network card: EFA on card 0 (carries the IP), EFA-only elsewhere, and
    # a security group open to itself (docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html).
    nic="efa",
    # The EKS GPU AMIs' EFA installer (efa-config) reserves 2 MiB pages at boot: 110 per vCPU
    # plus one, in every published EKS EFA node (21122Mi on 96-vCPU p3dn and p4de, 42242Mi on a
    # 192-vCPU p5: catalog/data/node_figures.csv); libfabric's EFA provider backs ~110 MB of
    # packet pools per endpoint and core with them (awslabs/libfabric-ci-scripts efa-check.sh).
    # They come off allocatable memory whether or not a pod uses them (FI_EFA_USE_HUGE_PAGE=0:
    # ours do not); the stack sets the same count itself (stacks/aws/pools.py), so a node image
    # whose installer reserves none (AL2023 runs `efa_installer.sh --minimal`) matches too.
    boot_hugepages={"resource": "hugepages-2Mi", "page_bytes": 2 * 2**20, "per_vcpu": 110,
                    "extra": 1})


# Static provisioning as each CSI driver documents it (render --with-storage):
# github.com/kubernetes-sigs/aws-fsx-csi-driver and aws-efs-csi-driver,
# examples/kubernetes/static_provisioning.
def _fsx_volume(plan, existing: str) -> dict:
    fs, mount = existing.split("/", 1)
    return {"csi": {"driver": "fsx.csi.aws.com", "volumeHandle": fs, "volumeAttributes": {
        "dnsname": f"{fs}.fsx.{plan.region}.amazonaws.com", "mountname": mount}}}


def _efs_volume(plan, existing: str) -> dict:
    return {"csi": {"driver": "efs.csi.aws.com", "volumeHandle": existing}}


# docs.aws.amazon.com/fsx/latest/LustreGuide/managing-storage-capacity.html (read 2026-12-01):
# SSD PERSISTENT_2 file systems are 1.2 TiB, 2.4 TiB, then increments of 2.4 TiB.
# Price: prices.md, FSx for Lustre SSD 125 MB/s/TiB ~0.145 per GiB-month.
FSX_LUSTRE = StorageKind(
    "fsx-lustre", sized=True, created_by_stack=True,
    resource_hints=("fsx", "file_system", "filesystem"),
    steps=Steps(((1200, 1200, 1200), (2400, 2400, None)), decimal_tib=True),
    usd_per_gb_month=0.145,
    existing=Existing("<file system id>/<mount name>", "fs-0123456789abcdef0/abcdef12", _fsx_volume),
    created_in=(600, "FSx for Lustre FAQ ('within minutes'); ~10 min for a PERSISTENT_2 file "
                     "system of a few TiB (assumption); AWS HPC blog 'Build and deploy a 1 TB/s "
                     "file system in under an hour' (1.1 PiB)"))
# aws.amazon.com/efs/pricing: elastic, billed per GiB stored; no provisioned size (the PV's
# 1 TiB request is a label), so priced as storage.size of data stored. Price: an assumption
# (not in prices.md): EFS Standard list price.
EFS = StorageKind(
    "efs", created_by_stack=True, resource_hints=("efs", "file_system", "filesystem"),
    steps=Steps(((1, 1, None),)), usd_per_gb_month=0.30,
    existing=Existing("<file system id>", "fs-0123456789abcdef0", _efs_volume),
    created_in=(90, "assumption: EFS file system + mount targets ~1-2 min"))


def _outputs(typ: str, name: str, inputs: dict) -> dict:
    """Outputs stacks/aws reads back from a resource (endpoints, CA data, versions)."""
    import base64

    ca = base64.b64encode(b"mock-ca").decode()
    return {
        "aws:eks/cluster:Cluster": {
            "endpoint": f"https://{name}.eks.mock", "certificateAuthority": {"data": ca},
            "vpcConfig": {**inputs.get("vpcConfig", {}), "clusterSecurityGroupId": "sg-cluster"},
            "kubernetesNetworkConfig": {"serviceIpv4Cidr": "172.20.0.0/16"}},
        "aws:ec2/launchTemplate:LaunchTemplate": {"latestVersion": 1},
        "aws:fsx/lustreFileSystem:LustreFileSystem": {"dnsName": f"{name}.fsx.mock",
                                                      "mountName": "mock"},
        "aws:eks/nodeGroup:NodeGroup": {"nodeGroupName": inputs.get("nodeGroupName", name)},
    }.get(typ, {})


def _calls(token: str, args: dict, region: str) -> dict:
    return {
        # Zone IDs differ from names (use1-az4 for one account's us-east-1a).
        "aws:index/getAvailabilityZones:getAvailabilityZones": {
            "names": [f"{region}{z}" for z in "abc"],
            "zoneIds": [f"{region}-az{i + 1}" for i in range(3)]},
        "aws:index/getCallerIdentity:getCallerIdentity": {
            "accountId": "123456789012", "arn": "arn:aws:iam::123456789012:user/mock",
            "id": "123456789012", "userId": "AIDAMOCK"},
        "aws:ssm/getParameter:getParameter": {"name": args.get("name"), "value": "ami-mock",
                                              "type": "String"},
    }.get(token, {})


# (ENIs on the default network card, IPv4 addresses per ENI) of every instance type our AWS
# stack may run, from awslabs/amazon-eks-ami@81fec2e nodeadm/internal/kubelet/instance-info.jsonl
# (read 2026-12): nodeadm's max pods, hence kube-reserved memory, follows from them (p4d 737,
# p5 100, p5en 198: the VPC CNI uses the primary network card only).
ENIS = {
    "g5.xlarge": (4, 15), "g5.2xlarge": (4, 15), "g5.4xlarge": (8, 30), "g5.8xlarge": (8, 30),
    "g5.12xlarge": (15, 50), "g5.16xlarge": (8, 30), "g5.24xlarge": (15, 50),
    "g5.48xlarge": (7, 50),
    "g6.xlarge": (4, 15), "g6.2xlarge": (4, 15), "g6.4xlarge": (8, 30), "g6.8xlarge": (8, 30),
    "g6.12xlarge": (8, 30), "g6.16xlarge": (15, 50), "g6.24xlarge": (15, 50),
    "g6.48xlarge": (15, 50),
    "g6e.xlarge": (4, 15), "g6e.2xlarge": (4, 15), "g6e.4xlarge": (8, 30), "g6e.8xlarge": (8, 30),
    "g6e.12xlarge": (10, 30), "g6e.16xlarge": (15, 50), "g6e.24xlarge": (10, 50),
    "g6e.48xlarge": (10, 50),
    "p4d.24xlarge": (15, 50), "p4de.24xlarge": (15, 50), "p5.4xlarge": (4, 30),
    "p5.48xlarge": (2, 50), "p5e.48xlarge": (2, 50), "p5en.48xlarge": (4, 50),
    "p6-b200.48xlarge": (4, 50),
    "m6i.large": (3, 10), "m6i.xlarge": (4, 15), "m6i.2xlarge": (4, 15),
}


def _zone_names(region: str, zone_ids: tuple[str, ...]) -> tuple[str, ...]:
    """A zone is named by its region and a letter (us-east-1a), one per zone; the catalog's
    zone data is AZ IDs (use1-az1, from the SkyPilot snapshot), which number the same zones,
    retired ones included, so the highest ID bounds the letters. Which letter is which ID
    differs per account (docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html);
    stacks/aws/network.py maps the name at `up`."""
    numbers = [int(n) for z in zone_ids for _, _, n in [z.rpartition("-az")] if n.isdigit()]
    return tuple(f"{region}{chr(ord('a') + i)}" for i in range(min(max(numbers, default=0), 26)))


# Time to first step on this target (planner/startup.py): the steps before the file-system join,
# in order; `per_node` adds seconds per node beyond the first; `billed`: GPU instances exist
# and bill meanwhile. provision_timeout: the cluster autoscaler's --max-node-provision-time
# (stacks/aws/program.py sets it from this figure): how long a scale-up may take to give a
# Ready node before the autoscaler backs off that pool and its priority expander tries the
# next (spot -> on-demand).
STARTUP = {
    "provision_timeout": {"seconds": 600,
                          "source": ("kubernetes/autoscaler issue #2075 (a spot pool that cannot "
                                     "launch is left after max-node-provision-time, 15 min by "
                                     "default; AKS's autoscaler profile documents the same "
                                     "default); since kubernetes/autoscaler PR #4489 an ASG "
                                     "scaling activity that failed (no spot capacity) ends the "
                                     "wait at once, so this bounds a node that launched but never "
                                     "became Ready. 600 s is 2.5x this target's boot-to-Ready + "
                                     "driver steps (240 s); shorter risks abandoning slow healthy "
                                     "GPU nodes (issue #6810: 5 min left a launched GPU instance "
                                     "running unmanaged)")},
    "steps": [
        {"name": "EKS control plane", "seconds": 900, "billed": False,
         "source": ("aws/containers-roadmap#1227: 'EKS cluster control plane provisioning time "
                    "currently averages 15 minutes'")},
        {"name": "GPU node group boot to Ready", "seconds": 180, "per_node": 2, "billed": True,
         "source": ("tensorfuse.io lazy_loading_performance_degradation (2025): GPU instances take"
                    " 80-120 s to provision and boot; + ~60 s nodeadm join and CNI (assumption)")},
        {"name": "GPU driver + device plugins", "seconds": 60, "billed": True,
         "source": ("EKS accelerated AMI ships the NVIDIA driver; nvidia-device-plugin and "
                    "aws-efa-k8s-device-plugin DaemonSets start in ~1 min (assumption; "
                    "k8s/addons.yaml)")},
    ],
}


FACTS = CloudFacts(
    name="aws", kind="kube",
    aliases=("amazon", "ec2", "eks", "amazon-web-services"), zone_names=_zone_names,
    storage=(FSX_LUSTRE, EFS, CEPHFS, PVC, BUCKET, NO_STORAGE),
    object_stores=(S3,),   # through EKS Pod Identity (stacks/aws/bucket.py)
    # An On-Demand Capacity Reservation or a Capacity Block (both ids are cr-<17 hex>).
    reservation_kinds=(
        ReservationKind("odcr", r"cr-[0-9a-f]{17}", "cr-0123456789abcdef0"),
        ReservationKind("capacity-block", r"cr-[0-9a-f]{17}", "cr-0123456789abcdef0",
                        fixed_count="a Capacity Block holds a fixed number of instances")),
    fabrics=(EFA, ETHERNET),
    addons=("nvidia-device-plugin", "cluster-autoscaler", "aws-fsx-csi-driver",
            "eks-node-daemonsets"),
    # EKS managed spot node groups carry no taint; their nodes say what they are by label.
    capacity_labels={"eks.amazonaws.com/capacityType": {"SPOT": "spot", "ON_DEMAND": "on-demand"},
                     "karpenter.sh/capacity-type": {"spot": "spot", "on-demand": "on-demand"}},
    allocatable={
        "source": "awslabs/amazon-eks-ami@81fec2e (2026-07-23) nodeadm/internal/kubelet/config.go: "
                  "getCPUMillicoresToReserve, getMemoryMebibytesToReserve = 11*maxPods + 255 MiB, "
                  "evictionHard memory.available<100Mi; maxPods = CalcMaxPods (eni_max_pods.go: "
                  "default-card ENIs x (IPv4 per ENI - 1) + 2, instance-info.jsonl), which our "
                  "self-managed AL2023 nodes get (no maxPods override in their NodeConfig)",
        # nominal -> kubelet capacity: 512 MiB + 4% covers every AWS row of
        # catalog/data/node_figures.csv (measured: 2.3-3.7% on the large sizes, p5 and p3dn
        # included, up to 0.85 GiB on 16 GiB ones); Karpenter's flat 7.5% would take 150 GiB
        # off a p5.
        "capacity_overhead": {"fixed_mib": 512, "fraction": Fraction(4, 100)},
        # (up to this many cores, fraction of a core reserved per core in the band)
        "cpu_tiers": ((1, Fraction(6, 100)), (2, Fraction(1, 100)), (4, Fraction(5, 1000)),
                      (None, Fraction(25, 10000))),
        "per_pod_mib": 11, "base_mib": 255,
        "max_pods_by_instance": {it: enis * (ips - 1) + 2 for it, (enis, ips) in ENIS.items()},
        # an instance nodeadm's file does not list: the most any listed type gets (15 ENIs x 50)
        "max_pods": 737,
        "eviction_mib": 100,
    },
    # EC2 m6i (aws.amazon.com/ec2/instance-types/m6i), read 2026-11.
    system_shapes={"m6i.large": (2, 8), "m6i.xlarge": (4, 16), "m6i.2xlarge": (8, 32)},
    planner={
        "startup": STARTUP,
        # Checkpoints in a bucket (planner/bucket_cost.py): S3 Standard list prices, us-east-1.
        "bucket_prices": {"storage_usd_per_gb_month": 0.023,   # first 50 TB/month
                          "write_usd_per_1000": 0.005,         # PUT, COPY, POST, LIST
                          "read_usd_per_1000": 0.0004,         # GET, SELECT and all other requests
                          "as_of": "2026-12-01",
                          "source": ("aws.amazon.com/s3/pricing (Storage, Requests & data "
                                     "retrievals; us-east-1 S3 Standard), list prices as of "
                                     "2026-12-01; DELETE and lifecycle expiration are free")},
        # AWS Spot Instance Advisor buckets (prices.md): the 5-10%/month bucket's top, 0.10/730 h.
        "reclaim_rate_per_node_hour": 0.000137,
        # Interrupted share per month, by instance type where the Advisor published its bucket
        # (aws.amazon.com/ec2/spot/instance-advisor, us-east-1 Linux, read 2026-09-20; prices.md
        # for p5), else the 5-10% bucket: the plan's spot P50 uses the bucket's middle, its P90
        # the bucket's top (">20%" read as 20-30%, an assumption).
        "reclaim_band": (0.05, 0.10),
        "reclaim_by_instance": {"p5.48xlarge": (0.0, 0.05), "g5.2xlarge": (0.15, 0.20),
                                "g6.2xlarge": (0.10, 0.15), "g6e.2xlarge": (0.05, 0.10),
                                "g6e.4xlarge": (0.20, 0.30), "g6e.8xlarge": (0.15, 0.20)},
        "control_plane_usd_per_hour": 0.10,    # prices.md: EKS 0.10/h
        "pvc_usd_per_gb_month": 0.08,          # prices.md: EBS gp3 0.08
        # The spot reclaim notice, the time the SIGTERM checkpoint has: "a two-minute warning"
        # (docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html).
        "reclaim_notice_seconds": 120,
    },
    compute_types=("aws:eks/", "aws:autoscaling/", "aws:ec2/launchTemplate:",
                   "aws:ec2/placementGroup:"),
    preview=PreviewFacts(sdk_packages={"aws": "pulumi_aws"}, outputs=_outputs, calls=_calls),
    pip_extra="aws",
    sdk_modules=("boto3", "pulumi", "pulumi_aws", "pulumi_kubernetes", "kubernetes"),
)
