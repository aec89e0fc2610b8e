"""`reclaunch gc` end to end: a real CLI process against a moto server on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys

import boto3
import pytest

REGION = "us-east-1"


def _tags(cluster: str) -> list[dict]:
    return [{"Key": "reclaunch-managed", "Value": "true"}, {"Key": "reclaunch-cluster", "Value": cluster}]


def _plant_fleet(ec2, cluster: str) -> str:
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    return ec2.request_spot_fleet(SpotFleetRequestConfig={
        "IamFleetRole": "arn:aws:iam::123456789012:role/fleet", "TargetCapacity": 2,
        "AllocationStrategy": "lowestPrice",
        "LaunchSpecifications": [{"ImageId": "ami-0123456789abcdef0", "InstanceType": "p5.48xlarge",
                                  "SubnetId": subnet}],
        "TagSpecifications": [{"ResourceType": "spot-fleet-request", "Tags": _tags(cluster)}],
    })["SpotFleetRequestId"]


def _active(ec2, fleet: str) -> bool:
    cfg = ec2.describe_spot_fleet_requests(SpotFleetRequestIds=[fleet])["SpotFleetRequestConfigs"]
    return bool(cfg) and cfg[0]["SpotFleetRequestState"] in ("active", "submitted", "modifying")


@pytest.mark.timeout(180)
def test_gc_cli_removes_planted_spot_fleet_only(monkeypatch) -> None:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        env = {**os.environ, "AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "testing",
               "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION}
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        ec2 = boto3.client("ec2", region_name=REGION)
        mine, theirs = _plant_fleet(ec2, "cluster-a"), _plant_fleet(ec2, "cluster-b")

        listing = subprocess.run([sys.executable, "-m", "reclaunch", "gc", "--cloud", "aws", "--region", REGION,
                                  "--cluster", "cluster-a"], capture_output=True, text=True, env=env, timeout=120)
        assert mine in listing.stdout and theirs not in listing.stdout, listing.stdout + listing.stderr
        assert _active(ec2, mine), "listing alone must delete nothing"

        proc = subprocess.run([sys.executable, "-m", "reclaunch", "gc", "--cloud", "aws", "--region", REGION,
                               "--cluster", "cluster-a", "--yes"], capture_output=True, text=True, env=env,
                              timeout=120)
        # moto lacks placement groups: that kind is reported as not listed, and the exit
        # code says the sweep was incomplete; everything else was swept.
        assert "NOT LISTED placement_groups" in proc.stdout, proc.stdout + proc.stderr
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert not _active(ec2, mine)
        assert _active(ec2, theirs)
    finally:
        server.stop()
