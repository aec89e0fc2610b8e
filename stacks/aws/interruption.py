"""Spot interruption handling for the self-managed GPU Auto Scaling groups: the AWS Node
Termination Handler in queue-processor mode, as kubernetes/autoscaler
cluster-autoscaler/cloudprovider/aws/README.md recommends for self-managed groups (managed
node groups drain on their own; ours are not managed node groups, see program.py).

Everything here follows aws/aws-node-termination-handler README.md "Queue Processor"
(commit 62a8761, 2026-07-21): an SQS queue EventBridge and Auto Scaling may write to, a
termination lifecycle hook on every GPU group, the five EventBridge rules (ASG terminate
lifecycle action, Spot Interruption Warning, Rebalance Recommendation, instance state
change, AWS Health scheduled change), the pod role with exactly the README's actions, and
the chart from Public ECR (the aws/eks-charts copy was removed in favour of it, #1155).
Without it a reclaimed node vanishes with its pods undrained: the job loses the 2-minute
warning in which torchrun could stop cleanly.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from stacks import common as c
from stacks.aws.pools import node_pools

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

CHART = "oci://public.ecr.aws/aws-ec2/helm/aws-node-termination-handler"
CHART_VERSION = "0.27.6"          # config/helm/aws-node-termination-handler/Chart.yaml, app 1.25.6
SERVICE_ACCOUNT = "aws-node-termination-handler"
NTH_ACTIONS = ["autoscaling:CompleteLifecycleAction", "autoscaling:DescribeAutoScalingInstances",
               "autoscaling:DescribeTags", "ec2:DescribeInstances", "sqs:DeleteMessage",
               "sqs:ReceiveMessage"]
EVENT_PATTERNS = {
    "asg-term": {"source": ["aws.autoscaling"],
                 "detail-type": ["EC2 Instance-terminate Lifecycle Action"]},
    "spot-term": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    "rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    "state-change": {"source": ["aws.ec2"],
                     "detail-type": ["EC2 Instance State-change Notification"]},
    "scheduled": {"source": ["aws.health"], "detail-type": ["AWS Health Event"],
                  "detail": {"service": ["EC2"], "eventTypeCategory": ["scheduledChange"]}},
}


def managed_tag(plan: "Plan") -> str:
    """The instance tag NTH acts on (its `managedTag`): one per cluster, so two clusters in an
    account never drain each other's nodes from their shared EventBridge events."""
    return f"aws-node-termination-handler/{c.name(plan)}"


def wanted(plan: "Plan") -> bool:
    return plan.spot


def queue_policy(queue_arn: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": ["events.amazonaws.com",
                                                     "sqs.amazonaws.com"]},
        "Action": "sqs:SendMessage", "Resource": [queue_arn]}]})


def handler_policy(queue_arn: str, group_arns: list[str]) -> str:
    """The README's actions: reads on "*" (they take no resource), CompleteLifecycleAction on
    our GPU groups only, the two queue actions on our queue only."""
    sqs = [a for a in NTH_ACTIONS if a.startswith("sqs:")]
    complete = ["autoscaling:CompleteLifecycleAction"]
    reads = [a for a in NTH_ACTIONS if a not in sqs + complete]
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": reads, "Resource": "*"},
        {"Effect": "Allow", "Action": complete, "Resource": group_arns},
        {"Effect": "Allow", "Action": sqs, "Resource": queue_arn}]})


def install(aws: Any, pulumi: Any, k8s: Any, plan: "Plan", *, tags: dict, cluster: Any,
            groups: dict, provider: Any, role: Any, depends_on: list, account: Any) -> Any:
    """The queue, rules, hooks, pod identity and chart; returns the Helm release."""
    queue = aws.sqs.Queue(c.name(plan, "nth", max_len=80, auto=True),
                          message_retention_seconds=300,
                          sqs_managed_sse_enabled=True, tags=tags)
    aws.sqs.QueuePolicy(c.name(plan, "nth-queue-policy"), queue_url=queue.id,
                        policy=queue.arn.apply(queue_policy))
    for key, pattern in EVENT_PATTERNS.items():
        rule = aws.cloudwatch.EventRule(c.name(plan, "nth", key, max_len=64, auto=True),
                                        event_pattern=json.dumps(pattern), tags=tags)
        aws.cloudwatch.EventTarget(c.name(plan, "nth", key, "target"), rule=rule.name,
                                   arn=queue.arn)
    for pool_name, group in groups.items():
        aws.autoscaling.LifecycleHook(
            c.name(plan, pool_name, "nth-hook"), autoscaling_group_name=group.name,
            lifecycle_transition="autoscaling:EC2_INSTANCE_TERMINATING",
            default_result="CONTINUE", heartbeat_timeout=300)
    arns = [f"arn:aws:autoscaling:{plan.region}:{account}:autoScalingGroup:*:"
            f"autoScalingGroupName/{p.cloud_name}" for p in node_pools(plan) if p.role == "gpu"]
    aws.iam.RolePolicy(c.name(plan, "nth-policy", max_len=128, auto=True), role=role.id,
                       policy=queue.arn.apply(lambda q: handler_policy(q, arns)))
    pia = aws.eks.PodIdentityAssociation(c.name(plan, "nth-pia"), cluster_name=cluster.name,
                                         namespace="kube-system",
                                         service_account=SERVICE_ACCOUNT, role_arn=role.arn,
                                         tags=tags)
    return k8s.helm.v3.Release(
        c.name(plan, "aws-node-termination-handler"), name="aws-node-termination-handler",
        chart=CHART, version=CHART_VERSION, namespace="kube-system",
        values={"enableSqsTerminationDraining": True, "queueURL": queue.url,
                "awsRegion": plan.region, "checkTagBeforeDraining": True,
                "managedTag": managed_tag(plan),
                "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}},
        atomic=True, cleanup_on_fail=True, timeout=600,
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[*depends_on, pia]))
