"""AWS sweep against moto: in-process, and once through a moto server via AWS_ENDPOINT_URL."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from reclaunch.errors import ProviderError
from reclaunch.providers.aws.sweep import EBS_USD_PER_GB_MONTH, AwsSweeper
from reclaunch.providers import gc
from reclaunch.runtime.sweep import sweep

REGION = "us-east-1"


pytestmark = pytest.mark.usefixtures("fake_placement_groups")   # conftest.py


def _tags(cluster: str | None, **extra) -> list[dict]:
    tags = [{"Key": k, "Value": v} for k, v in extra.items()]
    if cluster:
        tags += [{"Key": "reclaunch-managed", "Value": "true"},
                 {"Key": "reclaunch-cluster", "Value": cluster}]
    return tags


def _spec(kind: str, cluster: str | None) -> list[dict]:
    return [{"ResourceType": kind, "Tags": _tags(cluster)}] if cluster else []


def plant(cluster: str | None, *, prefix: str | None = None) -> dict[str, str]:
    """Create one of each kind; tagged for `cluster`, untagged when cluster is None."""
    prefix = prefix or (cluster or "untagged")
    ec2 = boto3.client("ec2", region_name=REGION)
    ami = "ami-0123456789abcdef0"  # moto accepts any id; describe_images costs seconds
    vpc = ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]

    sg = ec2.create_security_group(GroupName=f"{prefix}-sg", Description="x", VpcId=vpc,
                                   TagSpecifications=_spec("security-group", cluster))
    lt = ec2.create_launch_template(
        LaunchTemplateName=f"{prefix}-lt",
        LaunchTemplateData={"ImageId": ami, "InstanceType": "p4d.24xlarge"},
        TagSpecifications=_spec("launch-template", cluster))
    ec2.create_placement_group(GroupName=f"{prefix}-pg", Strategy="cluster",
                               TagSpecifications=_spec("placement-group", cluster))
    vol = ec2.create_volume(AvailabilityZone=f"{REGION}a", Size=100,
                            TagSpecifications=_spec("volume", cluster))
    inst = ec2.run_instances(ImageId=ami, InstanceType="p4d.24xlarge", MinCount=1, MaxCount=1,
                             SubnetId=subnet, SecurityGroupIds=[sg["GroupId"]],
                             TagSpecifications=_spec("instance", cluster))
    sfr = ec2.request_spot_fleet(SpotFleetRequestConfig={
        "IamFleetRole": "arn:aws:iam::123456789012:role/fleet",
        "TargetCapacity": 2, "AllocationStrategy": "lowestPrice",
        "LaunchSpecifications": [{"ImageId": ami, "InstanceType": "p4d.24xlarge",
                                  "SubnetId": subnet}],
        "TagSpecifications": _spec("spot-fleet-request", cluster),
    })
    return {
        "sg": sg["GroupId"], "lt": lt["LaunchTemplate"]["LaunchTemplateId"],
        "pg": f"{prefix}-pg", "vol": vol["VolumeId"],
        "instance": inst["Instances"][0]["InstanceId"], "sfr": sfr["SpotFleetRequestId"],
    }


def live(ids: dict[str, str]) -> dict[str, bool]:
    ec2 = boto3.client("ec2", region_name=REGION)
    inst = ec2.describe_instances(InstanceIds=[ids["instance"]])["Reservations"][0][
        "Instances"][0]["State"]["Name"]
    sfrs = ec2.describe_spot_fleet_requests(SpotFleetRequestIds=[ids["sfr"]])[
        "SpotFleetRequestConfigs"]  # moto drops a cancelled request; AWS marks it cancelled_*
    sfr = sfrs[0]["SpotFleetRequestState"] if sfrs else "cancelled_terminating"
    return {
        "instance": inst not in ("terminated", "shutting-down"),
        "sfr": sfr == "active",
        "sg": bool(ec2.describe_security_groups(
            Filters=[{"Name": "group-id", "Values": [ids["sg"]]}])["SecurityGroups"]),
        "lt": bool(ec2.describe_launch_templates(
            Filters=[{"Name": "launch-template-name", "Values": [f"{ids['pg'][:-3]}-lt"]}]
        )["LaunchTemplates"]),
        "pg": any(g["GroupName"] == ids["pg"]
                  for g in ec2.describe_placement_groups()["PlacementGroups"]),
        "vol": any(v["VolumeId"] == ids["vol"] for v in ec2.describe_volumes()["Volumes"]),
    }


@mock_aws
def test_sweep_deletes_only_cluster_a(no_sleep):
    a, b, untagged = plant("cluster-a"), plant("cluster-b"), plant(None)

    report = sweep(AwsSweeper(REGION), "cluster-a", delete=True, sleep=no_sleep)

    kinds = sorted(o.kind for o in report.found)
    assert "spot-fleet-request" in kinds and "security-group" in kinds
    assert {o.cluster for o in report.found} == {"cluster-a"}
    assert report.ok, report.render()
    assert not report.failed and not report.still_present
    # Dependency order: fleets before instances before templates ... before security groups.
    ranks = [o.rank for o in report.found]
    assert ranks == sorted(ranks)
    assert [o.kind for o in report.found][-1] == "security-group"

    assert not any(live(a).values()), live(a)
    assert all(live(b).values()), live(b)
    assert all(live(untagged).values()), live(untagged)


@mock_aws
def test_listing_without_cluster_never_includes_untagged():
    a, b, untagged = plant("cluster-a"), plant("cluster-b"), plant(None)

    report = sweep(AwsSweeper(REGION), None, delete=False)

    assert report.dry_run and not report.deleted
    assert {o.cluster for o in report.found} == {"cluster-a", "cluster-b"}
    ids = {o.id for o in report.found}
    assert a["instance"] in ids and b["sfr"] in ids
    assert not ids & set(untagged.values())
    assert all(live(a).values())  # a dry run deletes nothing


@mock_aws
def test_hourly_cost_from_catalog_and_storage_price():
    plant("cluster-a")
    found = {o.kind: o for o in AwsSweeper(REGION).list("cluster-a")}

    from reclaunch.catalog import load_catalog, offers
    offer = offers(load_catalog(), cloud="aws", instance_type="p4d.24xlarge", region=REGION)[0]
    assert found["instance"].hourly_usd == pytest.approx(offer.on_demand_usd)
    assert found["spot-fleet-request"].hourly_usd == pytest.approx(2 * offer.spot_usd)
    assert found["volume"].hourly_usd == pytest.approx(100 * EBS_USD_PER_GB_MONTH / 730)
    assert found["security-group"].hourly_usd == 0.0

    text = sweep(AwsSweeper(REGION), "cluster-a").render()
    assert "dry run" in text and "spot-fleet-request" in text and "/h" in text


@mock_aws
def test_tags_are_rechecked_right_before_delete(no_sleep):
    a = plant("cluster-a")
    sweeper = AwsSweeper(REGION)
    ec2 = boto3.client("ec2", region_name=REGION)
    real_list = sweeper.list

    def list_then_retag(cluster=None):
        found = real_list(cluster)
        # Someone hands the volume to another cluster between listing and deleting.
        ec2.create_tags(Resources=[a["vol"]],
                        Tags=[{"Key": "reclaunch-cluster", "Value": "cluster-b"}])
        return found

    sweeper.list = list_then_retag
    report = sweep(sweeper, "cluster-a", delete=True, sleep=no_sleep)

    assert [f.orphan.id for f in report.skipped] == [a["vol"]]
    assert live(a)["vol"] and not live(a)["instance"]


def test_endpoint_env_is_honoured_end_to_end(monkeypatch, no_sleep):
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{host}:{port}")
        a, b = plant("cluster-a"), plant("cluster-b")  # plain boto3: also via the env var

        report = gc("aws", REGION, "cluster-a", delete=True, sleep=no_sleep)

        assert a["sfr"] in {o.id for o in report.deleted}
        assert report.ok, report.render()
        assert not live(a)["sfr"] and not live(a)["instance"]
        assert all(live(b).values())
    finally:
        server.stop()


def test_unreachable_endpoint_is_one_line_provider_error(monkeypatch):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    with pytest.raises(ProviderError) as exc:
        gc("aws", REGION, "cluster-a")
    assert "cannot reach AWS" in str(exc.value) and "\n" not in str(exc.value)
    assert "AWS_ENDPOINT_URL" in str(exc.value)


def test_missing_credentials_is_provider_error_with_fix(monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    # Signing fails before any request is sent: no network needed.
    with pytest.raises(ProviderError) as exc:
        gc("aws", REGION, "cluster-a")
    assert "credentials not found" in str(exc.value) and "aws configure" in str(exc.value)


@mock_aws
def test_fleets_asgs_eks_and_enis(no_sleep):
    ec2 = boto3.client("ec2", region_name=REGION)
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    asg = boto3.client("autoscaling", region_name=REGION)
    eks = boto3.client("eks", region_name=REGION)
    for cluster in ("cluster-a", "cluster-b"):
        lt = ec2.create_launch_template(
            LaunchTemplateName=f"{cluster}-asg-lt",
            LaunchTemplateData={"ImageId": "ami-0123456789abcdef0",
                                "InstanceType": "p5.48xlarge"},
            TagSpecifications=_spec("launch-template", cluster))["LaunchTemplate"]
        asg.create_auto_scaling_group(
            AutoScalingGroupName=f"{cluster}-workers", MinSize=0, MaxSize=2, DesiredCapacity=0,
            LaunchTemplate={"LaunchTemplateId": lt["LaunchTemplateId"]},
            VPCZoneIdentifier=subnet,
            Tags=[dict(t, PropagateAtLaunch=True) for t in _tags(cluster)])
        ec2.create_network_interface(SubnetId=subnet,
                                     TagSpecifications=_spec("network-interface", cluster))
        ec2.create_fleet(
            LaunchTemplateConfigs=[{"LaunchTemplateSpecification": {
                "LaunchTemplateId": lt["LaunchTemplateId"], "Version": "$Latest"},
                "Overrides": [{"InstanceType": "p5.48xlarge"}]}],
            TargetCapacitySpecification={"TotalTargetCapacity": 1,
                                         "DefaultTargetCapacityType": "spot"},
            Type="maintain", TagSpecifications=_spec("fleet", cluster))
        eks.create_cluster(name=cluster, roleArn="arn:aws:iam::123456789012:role/eks",
                           resourcesVpcConfig={"subnetIds": [subnet]},
                           tags={t["Key"]: t["Value"] for t in _tags(cluster)})
        eks.create_nodegroup(clusterName=cluster, nodegroupName="gpu",
                             nodeRole="arn:aws:iam::123456789012:role/node", subnets=[subnet],
                             tags={t["Key"]: t["Value"] for t in _tags(cluster)})

    report = sweep(AwsSweeper(REGION), "cluster-a", delete=True, sleep=no_sleep)

    kinds = {o.kind for o in report.found}
    assert {"autoscaling-group", "ec2-fleet", "eks-cluster", "eks-nodegroup",
            "network-interface", "launch-template"} <= kinds, kinds
    assert report.ok, report.render()
    left = {o.kind for o in AwsSweeper(REGION).list("cluster-a")}
    assert not left, left
    assert {"autoscaling-group", "ec2-fleet", "eks-cluster", "eks-nodegroup",
            "network-interface"} <= {o.kind for o in AwsSweeper(REGION).list("cluster-b")}
