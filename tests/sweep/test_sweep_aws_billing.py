"""The AWS sweep finds (and removes) what the stack bills for besides compute: FSx for Lustre,
EFS, the NAT gateway and its Elastic IP, and the checkpoint bucket (issue 41)."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from reclaunch.providers.aws.sweep import RANK, AwsSweeper
from reclaunch.runtime.sweep import sweep

REGION = "us-east-1"
pytestmark = pytest.mark.usefixtures("fake_placement_groups")   # conftest.py


def _tags(cluster: str) -> list[dict]:
    return [{"Key": "reclaunch-managed", "Value": "true"},
            {"Key": "reclaunch-cluster", "Value": cluster}]


def plant(cluster: str, *, tagged: bool = True) -> dict[str, str]:
    """What stacks/aws creates that bills by the hour or by the byte, tagged as it tags."""
    tags = _tags(cluster) if tagged else [{"Key": "team", "Value": cluster}]
    ec2 = boto3.client("ec2", region_name=REGION)
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    fsx = boto3.client("fsx", region_name=REGION).create_file_system(
        FileSystemType="LUSTRE", StorageCapacity=1200, SubnetIds=[subnet], Tags=tags,
        LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 250})
    efs = boto3.client("efs", region_name=REGION)
    fs = efs.create_file_system(CreationToken=f"{cluster}-{tagged}", Tags=tags)
    efs.create_mount_target(FileSystemId=fs["FileSystemId"], SubnetId=subnet)
    eip = ec2.allocate_address(Domain="vpc", TagSpecifications=[
        {"ResourceType": "elastic-ip", "Tags": tags}])
    nat = ec2.create_nat_gateway(SubnetId=subnet, AllocationId=eip["AllocationId"],
                                 TagSpecifications=[{"ResourceType": "natgateway", "Tags": tags}])
    s3 = boto3.client("s3", region_name=REGION)
    bucket = f"ckpt-{cluster}-{'ours' if tagged else 'theirs'}"
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": tags})
    s3.put_object(Bucket=bucket, Key="job/step-1/meta.json", Body=b"{}")
    return {"fsx": fsx["FileSystem"]["FileSystemId"], "efs": fs["FileSystemId"],
            "eip": eip["AllocationId"], "nat": nat["NatGateway"]["NatGatewayId"],
            "bucket": bucket}


def live(ids: dict[str, str]) -> dict[str, bool]:
    ec2 = boto3.client("ec2", region_name=REGION)
    nats = ec2.describe_nat_gateways(NatGatewayIds=[ids["nat"]])["NatGateways"]
    buckets = [b["Name"] for b in boto3.client("s3", region_name=REGION).list_buckets()["Buckets"]]
    return {
        "fsx": any(f["FileSystemId"] == ids["fsx"] for f in boto3.client(
            "fsx", region_name=REGION).describe_file_systems()["FileSystems"]),
        "efs": any(f["FileSystemId"] == ids["efs"] for f in boto3.client(
            "efs", region_name=REGION).describe_file_systems()["FileSystems"]),
        "nat": bool(nats) and nats[0]["State"] not in ("deleting", "deleted"),
        "eip": any(a["AllocationId"] == ids["eip"] for a in ec2.describe_addresses()["Addresses"]),
        "bucket": ids["bucket"] in buckets,
    }


@mock_aws
def test_billing_kinds_are_listed_with_a_price():
    ours, theirs = plant("cluster-a"), plant("cluster-a", tagged=False)
    found = {o.kind: o for o in AwsSweeper(REGION).list("cluster-a")}

    assert {k: found[k].id for k in ("fsx-filesystem", "efs-filesystem", "nat-gateway",
                                     "elastic-ip", "s3-bucket")} == {
        "fsx-filesystem": ours["fsx"], "efs-filesystem": ours["efs"],
        "nat-gateway": ours["nat"], "elastic-ip": ours["eip"], "s3-bucket": ours["bucket"]}
    assert not {o.id for o in found.values()} & set(theirs.values())

    from reclaunch.planner.cost import storage_rate
    from reclaunch.providers.aws import sweep_billing as b
    assert found["fsx-filesystem"].hourly_usd == pytest.approx(
        1200 * storage_rate("fsx-lustre", "aws") / 730)
    assert found["nat-gateway"].hourly_usd == pytest.approx(b.NAT_USD_PER_HOUR)
    assert found["elastic-ip"].hourly_usd == pytest.approx(b.PUBLIC_IPV4_USD_PER_HOUR)
    assert found["efs-filesystem"].hourly_usd == pytest.approx(0.0)   # moto: 0 bytes stored
    # Ranked before what they use: the NAT before its address, file systems before groups.
    assert found["nat-gateway"].rank < found["elastic-ip"].rank
    assert found["fsx-filesystem"].rank < RANK["security-group"]


@mock_aws
def test_gc_deletes_the_clusters_billing_resources_and_nothing_else(no_sleep):
    ours, other, theirs = plant("cluster-a"), plant("cluster-b"), plant("cluster-a", tagged=False)

    report = sweep(AwsSweeper(REGION), "cluster-a", delete=True, sleep=no_sleep)

    assert report.ok, report.render()
    assert not any(live(ours).values()), live(ours)
    assert all(live(other).values()), live(other)
    assert all(live(theirs).values()), live(theirs)
    # The other buckets keep their objects.
    s3 = boto3.client("s3", region_name=REGION)
    assert s3.list_objects_v2(Bucket=theirs["bucket"])["KeyCount"] == 1


@mock_aws
def test_a_bucket_in_another_region_is_that_regions_sweep():
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="ckpt-elsewhere",
                     CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    s3.put_bucket_tagging(Bucket="ckpt-elsewhere", Tagging={"TagSet": _tags("cluster-a")})

    assert not [o for o in AwsSweeper(REGION).list("cluster-a") if o.kind == "s3-bucket"]
    assert [o.id for o in AwsSweeper("eu-west-1").list("cluster-a")
            if o.kind == "s3-bucket"] == ["ckpt-elsewhere"]
