"""`reclaunch preview`: run a cloud's Pulumi program in-process under `pulumi.runtime.set_mocks`.

No Pulumi CLI, no credentials, no network: every resource registration is answered by a
recorder that keeps what the program asked for. The result is a list of plain dicts (the
`--json` output) that users review and tests assert on:

    {"type", "name", "taggable": "tags"|"labels"|"resource_labels"|None, "tags",
     "key": {instance type, capacity, min/max, placement, ...}, "inputs"}
"""

from __future__ import annotations

import base64
import importlib
import inspect
import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable

from reclaunch.errors import UsageError, require

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

# Python package of each Pulumi provider whose resources carry tags/labels.
_SDK_PACKAGES = {"aws": "pulumi_aws", "azure-native": "pulumi_azure_native", "gcp": "pulumi_gcp"}
_TAG_FIELDS = ("tags", "labels", "resource_labels")
# Inputs worth a column: first match wins per heading.
_KEY_FIELDS = {
    "instance": ("instanceType", "instanceTypes", "vmSize", "machineType", "skuName",
                 "nodeConfig.machineType"),
    "capacity": ("capacityType", "scaleSetPriority", "instanceMarketOptions.marketType",
                 "nodeConfig.spot"),
    "count": ("desiredCapacity", "count", "initialNodeCount", "scalingConfig.desiredSize",
              "nodeCount"),
    "min": ("minSize", "minCount", "autoscaling.minNodeCount", "autoscaling.totalMinNodeCount",
            "scalingConfig.minSize"),
    "max": ("maxSize", "maxCount", "autoscaling.maxNodeCount", "autoscaling.totalMaxNodeCount",
            "scalingConfig.maxSize"),
    "placement": ("placement.groupName", "strategy", "placementPolicy.type",
                  "proximityPlacementGroupID", "groupPlacementPolicy.type"),
    "max_price": ("instanceMarketOptions.spotOptions.maxPrice", "spotMaxPrice"),
    "version": ("version", "kubernetesVersion", "minMasterVersion", "chart"),
    "zone": ("availabilityZone", "availabilityZoneId", "availabilityZones", "nodeLocations",
             "location"),
    "mtu": ("mtu",),
}


def _get(d: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d


# Taggable through a nested input only (GKE node VMs are labelled via node_config).
_NESTED_TAGS = {"gcp:container/nodePool:NodePool": "node_config.resource_labels"}


@lru_cache(maxsize=512)
def tag_field(typ: str) -> str | None:
    """Which input of this resource type holds cloud tags/labels (None: not taggable)."""
    if typ in _NESTED_TAGS:
        return _NESTED_TAGS[typ]
    parts = typ.split(":")
    pkg = _SDK_PACKAGES.get(parts[0])
    if not pkg or len(parts) != 3:
        return None
    try:
        cls = getattr(importlib.import_module(f"{pkg}.{parts[1].split('/')[0]}"), parts[2])
        params = inspect.signature(cls._internal_init).parameters
    except (ImportError, AttributeError, ValueError, TypeError):
        return None
    return next((f for f in _TAG_FIELDS if f in params), None)


def _tags_of(inputs: dict) -> dict[str, str]:
    raw = (inputs.get("tags") or inputs.get("labels") or inputs.get("resourceLabels")
           or _get(inputs, "nodeConfig.resourceLabels") or {})
    if isinstance(raw, list):  # autoscaling.Group: [{key, value, propagateAtLaunch}]
        return {t.get("key"): t.get("value") for t in raw if isinstance(t, dict)}
    return dict(raw) if isinstance(raw, dict) else {}


def _computed(typ: str, name: str, inputs: dict, plan: "Plan") -> dict:
    """Outputs the programs read back (endpoints, CA data, ids); the rest echo the inputs."""
    ca = base64.b64encode(b"mock-ca").decode()
    extra = {
        "aws:eks/cluster:Cluster": {
            "endpoint": f"https://{name}.eks.mock", "certificateAuthority": {"data": ca},
            "vpcConfig": {**inputs.get("vpcConfig", {}), "clusterSecurityGroupId": "sg-cluster"},
            "kubernetesNetworkConfig": {"serviceIpv4Cidr": "172.20.0.0/16"}},
        "aws:ec2/launchTemplate:LaunchTemplate": {"latestVersion": 1},
        "aws:fsx/lustreFileSystem:LustreFileSystem": {"dnsName": f"{name}.fsx.mock",
                                                      "mountName": "mock"},
        "aws:eks/nodeGroup:NodeGroup": {"nodeGroupName": inputs.get("nodeGroupName", name)},
        # Inputs list identity ids; the output is a map keyed by id.
        "azure-native:containerservice:ManagedCluster": {
            "identity": {"type": "UserAssigned", "userAssignedIdentities": {}},
            "oidcIssuerProfile": {"issuerURL": f"https://eastus.oic.prod-aks.azure.com/mock/{name}/"}},
        # Workload identity (stacks/*/bucket.py) reads these back into the job's ServiceAccount.
        "azure-native:managedidentity:UserAssignedIdentity": {
            "clientId": "00000000-0000-0000-0000-0000000c1d00", "principalId": f"{name}-principal"},
        "gcp:serviceaccount/account:Account": {
            "email": f"{inputs.get('accountId', name)}@mock-project.iam.gserviceaccount.com"},
        # A documentation address (RFC 5737) for the NAT gateway's public IP.
        "azure-native:network:PublicIPAddress": {"ipAddress": "198.51.100.10"},
        "azure-native:keyvault:Key": {"keyUriWithVersion": "https://kv-mock.vault.azure.net/keys/etcd/0123456789abcdef"},
        "azure-native:storagecache:AmlFilesystem": {"clientInfo": {"mgsAddress": "10.1.0.4"}},
        "gcp:filestore/instance:Instance": {"networks": [
            {**(inputs.get("networks") or [{}])[0], "ipAddresses": ["10.2.0.9"]}]},
        "gcp:container/cluster:Cluster": {"endpoint": "10.0.0.2",
                                          "masterAuth": {"clusterCaCertificate": ca}},
    }.get(typ, {})
    return {"name": inputs.get("name", name), "arn": f"arn:mock:{typ}:{name}", **extra}


def _call(token: str, args: dict, plan: "Plan") -> dict:
    zones = [f"{plan.region}{z}" for z in "abc"]
    kubeconfig = base64.b64encode(b"apiVersion: v1\nkind: Config\n").decode()
    return {
        # Zone IDs differ from names (use1-az4 for one account's us-east-1a).
        "aws:index/getAvailabilityZones:getAvailabilityZones": {
            "names": zones, "zoneIds": [f"{plan.region}-az{i + 1}" for i in range(3)]},
        "gcp:organizations/getClientConfig:getClientConfig": {"project": "mock-project",
                                                              "region": plan.region},
        "gcp:organizations/getProject:getProject": {"projectId": "mock-project",
                                                    "number": "123456789012"},
        "aws:index/getCallerIdentity:getCallerIdentity": {
            "accountId": "123456789012", "arn": "arn:aws:iam::123456789012:user/mock",
            "id": "123456789012", "userId": "AIDAMOCK"},
        "azure-native:authorization:getClientConfig": {
            "clientId": "00000000-0000-0000-0000-00000000c11e", "objectId":
            "00000000-0000-0000-0000-0000000000b1", "subscriptionId":
            "00000000-0000-0000-0000-000000000500", "tenantId":
            "00000000-0000-0000-0000-000000000700"},
        "aws:ssm/getParameter:getParameter": {"name": args.get("name"), "value": "ami-mock",
                                              "type": "String"},
        "azure-native:containerservice:listManagedClusterUserCredentials": {
            "kubeconfigs": [{"name": "clusterUser", "value": kubeconfig}]},
        "azure-native:containerservice:listManagedClusterAdminCredentials": {
            "kubeconfigs": [{"name": "clusterAdmin", "value": kubeconfig}]},
    }.get(token, {})


def preview(plan: "Plan", *, program: Callable[["Plan"], None], extra: str) -> list[dict[str, Any]]:
    """Run the stack `program(plan)` under mocks; one dict per resource, in order.

    The caller names the program and its pip extra (providers.preview_plan: the cloud's CloudSpec).
    """
    pulumi = require("pulumi", extra)

    recorded: list[dict[str, Any]] = []

    class Recorder(pulumi.runtime.Mocks):
        def new_resource(self, args):
            if args.typ != "pulumi:pulumi:Stack":
                recorded.append({"type": args.typ, "name": args.name,
                                 "inputs": dict(args.inputs)})
            state = {**args.inputs, **_computed(args.typ, args.name, args.inputs, plan)}
            return f"{args.name}-id", state

        def call(self, args):
            return _call(args.token, args.args, plan)

    # Only Pulumi's documented unit-testing API: set_mocks, then @pulumi.runtime.test, which
    # clears the RPC state, runs the program and waits for every registration to settle.
    # (https://www.pulumi.com/docs/using-pulumi/testing/unit/)
    pulumi.runtime.set_mocks(Recorder(), project="reclaunch", stack=plan.name, preview=False)
    pulumi.runtime.test(lambda: program(plan))()
    return [_describe(r) for r in recorded]


def _describe(r: dict[str, Any]) -> dict[str, Any]:
    inputs = _ints(json.loads(json.dumps(r["inputs"], default=str)))
    key = {}
    for heading, fields in _KEY_FIELDS.items():
        for f in fields:
            v = _get(inputs, f)
            if v not in (None, "", [], {}):
                key[heading] = v
                break
    return {"type": r["type"], "name": r["name"], "taggable": tag_field(r["type"]),
            "tags": _tags_of(inputs), "key": key, "inputs": inputs}


def _ints(v: Any) -> Any:
    """The engine carries numbers as floats; show whole ones as ints (counts, sizes)."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, dict):
        return {k: _ints(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_ints(x) for x in v]
    return v
