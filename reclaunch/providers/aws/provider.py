"""AWS: EKS through stacks/aws. Credentials, capacity/quota error table, fallback policy."""

from __future__ import annotations

from reclaunch.providers.aws.quota import quota
from reclaunch.providers.kubecloud import (CAPACITY, QUOTA, SPOT_CAPACITY, SPOT_QUOTA, Answer,
                                           CloudSpec, KubeCloudProvider)

# (regex over the engine's error text, kind); first match wins, so specific before general.
ERRORS: list[tuple[str, str]] = [
    (r"MaxSpotInstanceCountExceeded|max spot instance count", SPOT_QUOTA),
    (r"SpotMaxPriceTooLow|capacity-not-available|UnfulfillableCapacity|no Spot capacity|"
     r"InsufficientSpotCapacity|capacity-oversubscribed", SPOT_CAPACITY),
    (r"InsufficientInstanceCapacity|InsufficientCapacity|"
     r"Unsupported.*(availability zone|instance type)|InsufficientHostCapacity", CAPACITY),
    (r"VcpuLimitExceeded|InstanceLimitExceeded|vCPU (capacity|limit)|"
     r"LimitExceeded.*(instances|vcpu)", QUOTA),
]

QUOTA_FIX = ("request more vCPUs for this instance family in Service Quotas: "
             "https://console.aws.amazon.com/servicequotas/home/services/ec2/quotas")
CAPACITY_FIX = ("add zones to `zones:`, enable `spot.fallback: on-demand`, or use a capacity "
                "reservation / another region")


def credentials() -> Answer:
    """What botocore's credential chain finds (environment, ~/.aws files, SSO, a role), as
    `up` and `reclaunch check` both see it."""
    try:
        import botocore.session
    except ImportError:
        return Answer(None, "cannot tell: botocore is not installed", "pip install 'reclaunch[aws]'")
    try:
        creds = botocore.session.get_session().get_credentials()
    except Exception as exc:  # noqa: BLE001 - a broken config file is an answer, not a crash
        return Answer(False, f"unreadable AWS config: {str(exc)[:200]}", "aws configure")
    if creds is None:
        return Answer(False, "no AWS credentials found (env, ~/.aws, SSO, role)",
                      "run `aws configure` or `aws sso login`, or set AWS_PROFILE / AWS_ACCESS_KEY_ID")
    return Answer(True, f"found ({getattr(creds, 'method', 'configured')})")


def stack_config(plan) -> dict[str, str]:
    return {"aws:region": plan.region} if plan.region else {}


def scaling_failures(plan, client=None, limit: int = 10) -> str:
    """The GPU groups' failed/cancelled scaling activities, one line each, newest first.

    A group that cannot launch (InsufficientInstanceCapacity, a spot or vCPU limit, a key it
    may not use) says so only here; the engine reports a capacity-wait timeout. These lines
    join the error text that ERRORS classifies, so the capacity fallback can act on them.
    """
    from stacks.aws import node_pools

    if client is None:
        import boto3
        client = boto3.client("autoscaling", region_name=plan.region)
    lines = []
    for pool in node_pools(plan):
        if pool.role != "gpu":
            continue
        try:
            acts = client.describe_scaling_activities(
                AutoScalingGroupName=pool.cloud_name, MaxRecords=limit).get("Activities", [])
        except Exception:  # noqa: BLE001 - the group may not exist yet
            continue
        lines += [f"{pool.cloud_name}: {a.get('StatusCode')}: {a.get('StatusMessage', '')}"
                  for a in acts if a.get("StatusCode") in ("Failed", "Cancelled")]
    return "\n".join(lines)


CLOUD = CloudSpec(name="aws", program="stacks.aws.program:program",
                  sweeper="reclaunch.providers.aws.sweep:AwsSweeper",
                  prices="reclaunch.providers.aws.pricing:fetch_prices",
                  credentials=credentials, quota=quota,
                  errors=ERRORS, quota_fix=QUOTA_FIX, capacity_fix=CAPACITY_FIX,
                  kube_versions="reclaunch.providers.aws.versions:offered",
                  stack_config=stack_config, diagnose=scaling_failures,
                  foreign_storage="reclaunch.providers.aws.buckets:foreign")


def provider(**overrides) -> KubeCloudProvider:
    return KubeCloudProvider(CLOUD, env_overrides=overrides)
