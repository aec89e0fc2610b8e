"""EKS networking: a private VPC whose only public subnet holds the NAT gateway, private /18
subnets in three EKS-supported AZs (placed by AZ ID, the GPU zone first), and an S3 gateway
endpoint so datasets and checkpoints do not pay NAT per-GB charges."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stacks import common as c

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

VPC_CIDR = "10.0.0.0/16"
# AZ IDs EKS refuses for cluster subnets (docs.aws.amazon.com/eks/latest/userguide/
# network-reqs.html#network-requirements-subnets: UnsupportedAvailabilityZoneException).
# By ID: zone names map to different physical zones in every account.
EKS_UNSUPPORTED_ZONE_IDS = ("use1-az3", "usw1-az2", "cac1-az3")


def cluster_zone_ids(plan: "Plan", names: list[str], ids: list[str]) -> list[str]:
    """Three AZ IDs for the cluster subnets, the GPU zone first: the spec's zone (a name in
    this account) mapped to its ID, else the first the region offers. `names`/`ids` come
    from DescribeAvailabilityZones with EKS's unsupported IDs excluded."""
    from reclaunch.errors import ProviderError

    by_name = dict(zip(names, ids))
    if plan.zones and plan.zones[0] not in by_name:
        raise ProviderError(
            f"zone {plan.zones[0]} cannot hold an EKS cluster subnet in {plan.region} "
            f"(EKS does not support AZ IDs {', '.join(EKS_UNSUPPORTED_ZONE_IDS)})",
            hint="pick another zone in `zones:`, or leave it out")
    gpu = by_name[plan.zones[0]] if plan.zones else ids[0]
    return [gpu] + [z for z in ids if z != gpu][:2]


def network(aws, pulumi, plan: "Plan", tags: dict):
    """(vpc, private subnets, the GPU zone's subnet, egress): egress is the NAT gateway and the
    private route table associations, which nodes need before they boot (they pull images and
    reach the EKS API through them), so the node groups depend on them."""
    found = aws.get_availability_zones(
        state="available", exclude_zone_ids=list(EKS_UNSUPPORTED_ZONE_IDS),
        filters=[{"name": "zone-type", "values": ["availability-zone"]}])
    zones = cluster_zone_ids(plan, list(found.names), list(found.zone_ids))
    gpu_az = zones[0]
    vpc = aws.ec2.Vpc(c.name(plan, "vpc"), cidr_block=VPC_CIDR, enable_dns_hostnames=True,
                      enable_dns_support=True, tags={**tags, "Name": c.name(plan, "vpc")})
    igw = aws.ec2.InternetGateway(c.name(plan, "igw"), vpc_id=vpc.id, tags=tags)
    # The only public subnet holds the NAT gateway; nothing launched there gets a public IP.
    public = aws.ec2.Subnet(c.name(plan, "public"), vpc_id=vpc.id, cidr_block="10.0.240.0/24",
                            availability_zone_id=gpu_az, map_public_ip_on_launch=False,
                            tags={**tags, "kubernetes.io/role/elb": "1"})
    public_rt = aws.ec2.RouteTable(c.name(plan, "public-rt"), vpc_id=vpc.id, tags=tags,
                                   routes=[{"cidr_block": "0.0.0.0/0", "gateway_id": igw.id}])
    aws.ec2.RouteTableAssociation(c.name(plan, "public-rta"), subnet_id=public.id,
                                  route_table_id=public_rt.id)
    eip = aws.ec2.Eip(c.name(plan, "nat-eip"), domain="vpc", tags=tags)
    nat = aws.ec2.NatGateway(c.name(plan, "nat"), allocation_id=eip.id, subnet_id=public.id,
                             tags=tags, opts=pulumi.ResourceOptions(depends_on=[igw]))
    private_rt = aws.ec2.RouteTable(c.name(plan, "private-rt"), vpc_id=vpc.id, tags=tags,
                                    routes=[{"cidr_block": "0.0.0.0/0", "nat_gateway_id": nat.id}])
    private, egress = [], [nat]
    for i, zone in enumerate(zones):  # /18 each: room for many EFA-primary IPs per node
        sn = aws.ec2.Subnet(c.name(plan, f"private-{zone[-1]}"), vpc_id=vpc.id,
                            cidr_block=f"10.0.{i * 64}.0/18", availability_zone_id=zone,
                            map_public_ip_on_launch=False,
                            tags={**tags, "kubernetes.io/role/internal-elb": "1"})
        egress.append(aws.ec2.RouteTableAssociation(
            c.name(plan, f"private-rta-{zone[-1]}"), subnet_id=sn.id,
            route_table_id=private_rt.id))
        private.append(sn)
    # Datasets and checkpoints go to S3 without paying NAT per-GB charges.
    aws.ec2.VpcEndpoint(c.name(plan, "s3"), vpc_id=vpc.id, vpc_endpoint_type="Gateway",
                        service_name=f"com.amazonaws.{plan.region}.s3",
                        route_table_ids=[private_rt.id], tags=tags)
    return vpc, private, private[0], egress
