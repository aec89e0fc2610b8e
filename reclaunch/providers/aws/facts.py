"""AWS (EKS): every fact the pure layers need, as data (reclaunch/clouds.py reads this file
without importing the provider package; nothing here may import an SDK or the runtime)."""

from fractions import Fraction

from reclaunch.clouds import ETHERNET, CloudFacts, FabricFacts, PreviewFacts

EFA = FabricFacts(
    "efa", addons=("aws-efa-k8s-device-plugin",),
    # One interface per network card: EFA on card 0 (carries the IP), EFA-only elsewhere, and
    # a security group open to itself (docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html).
    nic="efa")


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


FACTS = CloudFacts(
    name="aws", kind="kube", provider="reclaunch.providers.aws", stack="stacks.aws",
    storage=("fsx-lustre", "efs", "cephfs", "pvc", "bucket", "none"),
    reservation_kinds=("odcr", "capacity-block"),
    fabrics=(EFA, ETHERNET),
    addons=("nvidia-device-plugin", "cluster-autoscaler", "aws-fsx-csi-driver"),
    # EKS managed spot node groups carry no taint; their nodes say what they are by label.
    capacity_labels={"eks.amazonaws.com/capacityType": {"SPOT": "spot", "ON_DEMAND": "on-demand"},
                     "karpenter.sh/capacity-type": {"spot": "spot", "on-demand": "on-demand"}},
    allocatable={
        "source": "awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go "
                  "(getCPUMillicoresToReserve; getMemoryMebibytesToReserve = 11*maxPods + 255 "
                  "MiB; evictionHard memory.available<100Mi); max pods <= 110 under 30 vCPUs, "
                  "<= 250 above (EKS managed node group default)",
        # (up to this many cores, fraction of a core reserved per core in the band)
        "cpu_tiers": ((1, Fraction(6, 100)), (2, Fraction(1, 100)), (4, Fraction(5, 1000)),
                      (None, Fraction(25, 10000))),
        "per_pod_mib": 11, "base_mib": 255, "max_pods": ((30, 110), (None, 250)),
        "eviction_mib": 100,
    },
    # EC2 m6i (aws.amazon.com/ec2/instance-types/m6i), read 2026-11.
    system_shapes={"m6i.large": (2, 8), "m6i.xlarge": (4, 16), "m6i.2xlarge": (8, 32)},
    planner={
        # AWS Spot Instance Advisor buckets (prices.md): the 5-10%/month bucket's top, 0.10/730 h.
        "reclaim_rate_per_node_hour": 0.000137,
        "control_plane_usd_per_hour": 0.10,    # prices.md: EKS 0.10/h
        "pvc_usd_per_gb_month": 0.08,          # prices.md: EBS gp3 0.08
        # The spot reclaim notice, the time the SIGTERM checkpoint has: "a two-minute warning"
        # (docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html).
        "reclaim_notice_seconds": 120,
    },
    preview=PreviewFacts(sdk_packages={"aws": "pulumi_aws"}, outputs=_outputs, calls=_calls),
)
