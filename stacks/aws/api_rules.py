"""What AWS refuses in the inputs of the resources stacks/aws creates (stacks/refusals.py says
what such a check covers). Limits, characters and allowed values are read from the installed
botocore's service models, AWS's own API definitions (the `aws` extra installs boto3), so
they follow the SDK the user has; the Pulumi AWS SDK types all of these as plain strings.
Only the fields listed below are checked."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from reclaunch.errors import require
from stacks.refusals import NameRule, enum_refusals, name_refusals

# type -> (input holding the physical name, botocore service, shape of that name)
NAMES = {
    "aws:iam/role:Role": ("name", "iam", "roleNameType"),
    "aws:iam/rolePolicy:RolePolicy": ("name", "iam", "policyNameType"),
    "aws:iam/instanceProfile:InstanceProfile": ("name", "iam", "instanceProfileNameType"),
    "aws:cloudwatch/eventRule:EventRule": ("name", "events", "RuleName"),
    "aws:cloudwatch/logGroup:LogGroup": ("name", "logs", "LogGroupName"),
    "aws:ec2/launchTemplate:LaunchTemplate": ("name", "ec2", "LaunchTemplateName"),
    "aws:eks/cluster:Cluster": ("name", "eks", "ClusterName"),
    "aws:autoscaling/group:Group": ("name", "autoscaling", "XmlStringMaxLen255"),
}
# botocore models SQS's QueueName as a bare string; the limit is the API reference's.
QUEUE = NameRule("name", 80, r"[A-Za-z0-9_-]+", "docs.aws.amazon.com/AWSSimpleQueueService/"
                 "latest/APIReference/API_CreateQueue.html, QueueName")
# type -> {input path: (botocore service, enum shape)}
ENUMS = {
    "aws:eks/nodeGroup:NodeGroup": {"capacityType": ("eks", "CapacityTypes"),
                                    "amiType": ("eks", "AMITypes"),
                                    "taints[].effect": ("eks", "TaintEffect")},
    "aws:eks/cluster:Cluster": {"enabledClusterLogTypes[]": ("eks", "LogType"),
                                "accessConfig.authenticationMode": ("eks", "AuthenticationMode")},
    "aws:ec2/launchTemplate:LaunchTemplate": {
        "instanceType": ("ec2", "InstanceType"),
        "metadataOptions.httpTokens": ("ec2", "LaunchTemplateHttpTokensState"),
        "metadataOptions.httpEndpoint": ("ec2", "LaunchTemplateInstanceMetadataEndpointState"),
        "blockDeviceMappings[].ebs.volumeType": ("ec2", "VolumeType"),
        "networkInterfaces[].interfaceType": ("ec2", "NetworkInterfaceType"),
        "instanceMarketOptions.marketType": ("ec2", "MarketType"),
        "instanceMarketOptions.spotOptions.spotInstanceType": ("ec2", "SpotInstanceType"),
        "instanceMarketOptions.spotOptions.instanceInterruptionBehavior":
            ("ec2", "InstanceInterruptionBehavior")},
    "aws:ec2/placementGroup:PlacementGroup": {"strategy": ("ec2", "PlacementStrategy")},
    "aws:ec2/eip:Eip": {"domain": ("ec2", "DomainType")},
    "aws:ec2/vpcEndpoint:VpcEndpoint": {"vpcEndpointType": ("ec2", "VpcEndpointType")},
    "aws:fsx/lustreFileSystem:LustreFileSystem": {
        "deploymentType": ("fsx", "LustreDeploymentType"),
        "dataCompressionType": ("fsx", "DataCompressionType")},
    "aws:efs/fileSystem:FileSystem": {"throughputMode": ("efs", "ThroughputMode"),
                                      "performanceMode": ("efs", "PerformanceMode")},
}


@lru_cache(maxsize=64)
def shape(service: str, name: str) -> tuple[tuple[str, ...], dict[str, Any], str]:
    """(enum values, {min, max, pattern}, source) of one shape of the installed botocore."""
    botocore = require("botocore.session", "aws")
    model = botocore.get_session().get_service_model(service)
    s = model.shape_for(name)
    version = require("botocore", "aws").__version__
    return (tuple(s.enum or ()), dict(s.metadata),
            f"botocore {version} {service} {model.api_version} {name}")


def name_rule(typ: str) -> NameRule | None:
    if typ == "aws:sqs/queue:Queue":
        return QUEUE
    if typ not in NAMES:
        return None
    field, service, name = NAMES[typ]
    _, meta, source = shape(service, name)
    pattern = meta.get("pattern")
    try:
        re.compile(pattern or "")
    except re.error:   # Java's surrogate-pair ranges (autoscaling's "any XML character")
        pattern = None
    return NameRule(field, int(meta.get("max", 255)), pattern, source,
                    min_len=int(meta.get("min", 1)))


def interfaces(inputs: dict[str, Any]) -> list[str]:
    """EC2's rules across a launch template's network interfaces."""
    nics = inputs.get("networkInterfaces") or []
    out = []
    if len(nics) > 1 and any("associatePublicIpAddress" in n for n in nics):
        # EC2 RunInstances: "InvalidParameterCombination: The associatePublicIPAddress
        # parameter cannot be specified when launching with multiple network interfaces",
        # even set to false (hashicorp/terraform-provider-aws#6777, erlcloud/erlcloud#284).
        out.append(f"networkInterfaces: associatePublicIpAddress set with {len(nics)} "
                   "interfaces; EC2 refuses the launch (InvalidParameterCombination)")
    for i, n in enumerate(nics):
        if n.get("interfaceType") == "efa-only" and not n.get("networkCardIndex") \
                and not n.get("deviceIndex"):
            out.append(f"networkInterfaces[{i}]: an EFA-only interface cannot be the primary "
                       "(card 0, device 0): docs.aws.amazon.com/AWSEC2/latest/UserGuide/"
                       "efa-acc-inst-types.html")
    return out


def refusals(typ: str, name: str, inputs: dict[str, Any]) -> list[str]:
    out = []
    rule = name_rule(typ)
    if rule is not None:
        out += name_refusals(rule, name, inputs)
    allowed = {path: shape(*where)[::2] for path, where in ENUMS.get(typ, {}).items()}
    out += enum_refusals(allowed, inputs)
    if typ == "aws:ec2/launchTemplate:LaunchTemplate":
        out += interfaces(inputs)
    return out
