"""The EC2 vCPU quota a plan needs, read from Service Quotas (`reclaunch check FILE`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reclaunch.providers.kubecloud import Answer

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

# How to see the quota by hand where we cannot ask (or could not).
BY_HAND = ("Service Quotas console > Amazon EC2, or `aws service-quotas get-service-quota "
           "--service-code ec2 --quota-code {code} --region {region}`")


def quota(plan: "Plan", client: Any = None) -> Answer:
    """The EC2 vCPU quota for the plan's instance family in its region (Service Quotas)."""
    from stacks.aws.prerequisites import QUOTA_CODES

    family = (plan.instance_type or "?")[:1]
    codes = QUOTA_CODES.get(family)
    need = (plan.offer.vcpus if plan.offer else 0) * plan.max_nodes
    if codes is None:
        return Answer(None, f"no Service Quotas code known for {plan.instance_type}")
    code = codes[1] if plan.spot else codes[0]
    by_hand = BY_HAND.format(code=code, region=plan.region)
    try:
        if client is None:
            import boto3
            from botocore.config import Config

            client = boto3.client("service-quotas", region_name=plan.region, config=Config(
                connect_timeout=5, read_timeout=10, retries={"max_attempts": 1}))
        from reclaunch.runtime.deadline import within   # read_timeout is per read: a total one too
        answer = within(lambda: client.get_service_quota(ServiceCode="ec2", QuotaCode=code),
                        f"AWS service-quotas in {plan.region}", key=f"service-quotas.{plan.region}")
        value = float(answer["Quota"]["Value"])
    except Exception as exc:  # noqa: BLE001 - no credentials, no network, access denied: say so
        return Answer(None, f"cannot tell ({type(exc).__name__}: {str(exc)[:120]})",
                      f"check by hand: {by_hand}")
    what = f"{codes[2].split(' / ')[1 if plan.spot else 0]} ({code}) in {plan.region}"
    if value >= need:
        return Answer(True, f"{what}: {value:g} vCPUs, {need} needed")
    return Answer(False, f"{what}: {value:g} vCPUs, {need} needed for {plan.max_nodes} "
                  f"x {plan.instance_type}", f"request an increase in Service Quotas, code {code}")
